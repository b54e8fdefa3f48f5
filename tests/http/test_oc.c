/*
 * test_oc.c — operating characteristics of a stored experiment over HTTP
 * (POST /v1/experiments/{id}/oc): the design in force (its hash as status
 * shows it, the budget an amendment set), the same report for the same
 * seed, the Markdown on request, nothing stored, and bad input refused
 * naming the field.
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

static const char scenarios[] =
    "\"scenarios\":[{\"name\":\"null\",\"arms\":[0.3,0.3,0.3]},"
    "{\"name\":\"one better\",\"arms\":[0.3,0.3,0.6]}]";

static void test_report(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"oc1\",\"arms\":[\"ctl\",\"a\",\"b\"],"
                                      "\"goal\":{\"budget\":300},\"seed\":7,"
                                      "\"design\":{\"frozen\":true}}"));
    char body[512];
    snprintf(body, sizeof body, "{%s,\"runs\":40,\"seed\":3}", scenarios);
    json_t *r = tcall(tgroup_d, "POST", "/v1/experiments/oc1/oc", body, 200);
    json_t *st = texp_status(tgroup_d, "oc1");
    assert_string_equal(tjson_str(r, "design_hash"), tjson_str(st, "design_hash"));
    assert_string_equal(tjson_str(r, "experiment"), "oc1");
    assert_int_equal(tjson_int(r, "runs"), 40);
    assert_int_equal(tjson_int(r, "seed"), 3);
    assert_int_equal(tjson_int(r, "design.budget"), 300);
    assert_true(json_is_true(tjson_get(r, "scenarios[0].null")));
    assert_true(tjson_num(r, "scenarios[0].type_i_error.estimate") >= 0);
    assert_true(json_is_null(tjson_get(r, "scenarios[0].power")));
    assert_true(tjson_num(r, "scenarios[1].power.estimate") > 0.5);
    assert_true(tjson_num(r, "scenarios[1].sample_size.quantiles[4].value") <= 300);
    assert_string_equal(tjson_str(r, "scenarios[1].arms[2].arm"), "b");
    assert_non_null(tjson_str(r, "software.version"));
    /* Nothing was randomised. */
    assert_int_equal(tjson_int(st, "pulls"), 0);
    assert_int_equal(tjson_int(st, "handed_out"), 0);
    json_decref(st);
    /* The same seed: the same report. */
    json_t *again = tcall(tgroup_d, "POST", "/v1/experiments/oc1/oc", body, 200);
    tjson_must_equal(r, again, "the same report twice");
    json_decref(again);
    json_decref(r);

    /* After an amendment of the budget: the new budget, the new hash. */
    json_decref(texp_assign(tgroup_d, "oc1", NULL));
    json_decref(tcall(tgroup_d, "POST", "/v1/experiments/oc1/amendments",
                      "{\"change\":{\"goal\":{\"budget\":200}},\"reason\":\"fewer patients\"}",
                      201));
    snprintf(body, sizeof body, "{%s,\"runs\":10,\"markdown\":true}", scenarios);
    r = tcall(tgroup_d, "POST", "/v1/experiments/oc1/oc", body, 200);
    st = texp_status(tgroup_d, "oc1");
    assert_string_equal(tjson_str(r, "design_hash"), tjson_str(st, "design_hash"));
    assert_int_equal(tjson_int(r, "design.budget"), 200);
    assert_int_equal(tjson_int(r, "seed"), 1);
    const char *md = tjson_str(r, "markdown");
    assert_non_null(md);
    assert_non_null(strstr(md, "# Operating characteristics of `oc1`"));
    assert_non_null(strstr(md, tjson_str(st, "design_hash")));
    json_decref(st);
    json_decref(r);
}

static void test_invalid(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"oc2\",\"arms\":[\"ctl\",\"a\"]}"));
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{}", "scenarios"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2,0.3]}]}", "scenarios"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"runs\":0}", "runs"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"runs\":1001}", "runs"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"max_pulls\":0}", "max_pulls"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"markdown\":1}", "markdown"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"threads\":4}", "threads"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments/oc2/oc", bad[i].body, NULL);
        assert_invalid(r, bad[i].field);
        tresp_free(r);
    }
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments/nope/oc",
                           "{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}]}", NULL);
    assert_status(r, 404);
    tresp_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
