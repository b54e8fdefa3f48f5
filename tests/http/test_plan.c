/*
 * test_plan.c — sample-size planning over HTTP (POST /v1/plan): the lower
 * bound T*(μ)·kl(δ, 1 − δ) on Garivier & Kaufmann's instance, a simulation
 * with a fixed seed that answers the same twice, a budget's runs ending at
 * the budget, no bound where it is not defined, nothing stored, and bad
 * input refused naming the field.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

static json_t *plan(const char *body)
{
    return tcall(tgroup_d, "POST", "/v1/plan", body, 200);
}

/* T* of (0.5, 0.45, 0.43, 0.4) is 989.79 (scripts/tstar, Garivier & Kaufmann
 * 2016); kl(0.05, 0.95) = 0.9 ln 19. */
static void test_bound_and_simulation(void **state)
{
    (void)state;
    const char *body = "{\"experiment\":{\"arms\":[\"a\",\"b\",\"c\",\"d\"],\"policy\":{\"name\":"
                       "\"track-and-stop\"},\"seed\":7},\"means\":[0.5,0.45,0.43,0.4],\"runs\":2}";
    json_t *p = plan(body);
    double ts = tjson_num(p, "lower_bound.bandits[0].tstar");
    assert_true(fabs(ts - 989.79) < 0.01);
    double lb = tjson_num(p, "lower_bound.pulls");
    assert_true(fabs(lb - ts * 0.9 * log(19.0)) < 1e-6 * lb);
    assert_int_equal(tjson_int(p, "simulation.runs"), 2);
    assert_int_equal(tjson_int(p, "simulation.seed"), 7);
    double mean = tjson_num(p, "simulation.mean_pulls");
    assert_true(mean > 0 && mean <= tjson_num(p, "simulation.max_pulls"));
    assert_true(tjson_num(p, "simulation.error_rate") >= 0);
    assert_string_equal(tjson_str(p, "policy"), "track-and-stop");
    /* A fixed seed: the same figures again. */
    json_t *q = plan(body);
    tjson_must_equal(json_object_get(p, "simulation"), json_object_get(q, "simulation"),
                     "the same plan twice");
    json_decref(q);
    json_decref(p);
    /* Nothing was stored. */
    json_t *l = tcall(tgroup_d, "GET", "/v1/experiments", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(l, "experiments")), 0);
    json_decref(l);
}

static void test_budget_and_no_bound(void **state)
{
    (void)state;
    /* A fixed budget: every run spends what SR plans of it (1998 of 2000). */
    json_t *p = plan("{\"experiment\":{\"arms\":[\"a\",\"b\",\"c\"],\"policy\":{\"name\":\"sr\"},"
                     "\"goal\":{\"budget\":2000}},\"means\":[0.5,0.4,0.3],\"runs\":20}");
    assert_int_equal(tjson_int(p, "budget"), 2000);
    assert_int_equal(tjson_int(p, "simulation.runs"), 20);
    assert_true(tjson_num(p, "simulation.mean_pulls") <= 2000);
    assert_true(tjson_num(p, "simulation.mean_pulls") > 1900);
    json_decref(p);
    /* Top 2: no bound, the simulation still answers. */
    p = plan("{\"experiment\":{\"arms\":[\"a\",\"b\",\"c\"],\"goal\":{\"m\":2}},"
             "\"means\":[[0.5,0.4,0.3]],\"runs\":2}");
    assert_true(json_is_null(tjson_get(p, "lower_bound.pulls")));
    assert_non_null(tjson_str(p, "lower_bound.note"));
    assert_int_equal(tjson_int(p, "simulation.runs"), 2);
    json_decref(p);
    /* A tie for the best: no finite bound, the runs end at the cap. */
    p = plan("{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.5,0.5],\"runs\":1}");
    assert_true(json_is_null(tjson_get(p, "lower_bound.pulls")));
    assert_int_equal(tjson_int(p, "simulation.capped"), 1);
    json_decref(p);
}

static void test_plan_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"means\":[0.5,0.4]}", "experiment"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"]}}", "means"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.5]}", "means"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.5,1.5]}", "means"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[[0.5,0.4],[0.1,0.2]]}", "means"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"],\"goal\":{\"delta\":2}},\"means\":[0.5,0.4]}",
         "experiment.goal.delta"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.5,0.4],\"runs\":0}", "runs"},
        {"{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.5,0.4],\"seed\":1}", "seed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tresp *r = treq(tgroup_d, "POST", "/v1/plan", bad[i].body, NULL);
        assert_invalid(r, bad[i].field);
        tresp_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_and_simulation),
        cmocka_unit_test(test_budget_and_no_bound),
        cmocka_unit_test(test_plan_invalid),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
