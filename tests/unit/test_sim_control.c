/*
 * test_sim_control.c — the simulator's side of the goal "control"
 * (sim/sim.h): problem files of that type (the control by index or arm id,
 * each wrong member named), the per-run records (--per-run) agreeing with
 * the totals, and results that do not depend on the thread count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <string.h>

#include "sim/sim.h"

static int parse(const char *text, struct sim_problem *p, char *err, size_t len)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    int rc = sim_problem_parse(j, p, err, len);
    json_decref(j);
    return rc;
}

/* A control problem is read; each wrong one names its member. */
static void test_problem(void **state)
{
    (void)state;
    struct sim_problem p;
    char err[256];
    assert_int_equal(parse("{\"type\":\"control\",\"control\":\"pbo\",\"margin\":0.1,"
                           "\"arms\":[0.5,{\"dist\":\"bernoulli\",\"p\":0.4,\"id\":\"pbo\"}]}",
                           &p, err, sizeof err),
                     0);
    assert_int_equal(p.goal, ENGINE_GOAL_CONTROL);
    assert_int_equal(p.control, 1);
    assert_true(p.margin == 0.1);
    sim_problem_free(&p);
    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"type\":\"control\",\"arms\":[0.5,0.4]}", "control"},
        {"{\"type\":\"control\",\"control\":\"x\",\"arms\":[0.5,0.4]}", "control"},
        {"{\"type\":\"control\",\"control\":2,\"arms\":[0.5,0.4]}", "control"},
        {"{\"type\":\"control\",\"control\":0,\"margin\":1,\"arms\":[0.5,0.4]}", "margin"},
        {"{\"type\":\"control\",\"control\":0,\"m\":2,\"arms\":[0.5,0.4,0.3]}", "m"},
        {"{\"type\":\"best\",\"arms\":[0.5,0.4]}", "type"},
        {"{\"margin\":0.1,\"arms\":[0.5,0.4]}", "margin"},
        {"{\"control\":0,\"arms\":[0.5,0.4]}", "control"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (parse(bad[i].text, &p, err, sizeof err) == 0)
            fail_msg("%s: accepted", bad[i].text);
        size_t n = strlen(bad[i].field);
        if (strncmp(err, bad[i].field, n) != 0 || err[n] != ':')
            fail_msg("%s: \"%s\", want an error on %s", bad[i].text, err, bad[i].field);
    }
}

/* The per-run records add up to the totals, and 1 or 3 threads give the
 * same result. */
static void test_runs_kept(void **state)
{
    (void)state;
    struct sim_problem p;
    char err[256];
    assert_int_equal(parse("{\"type\":\"control\",\"control\":0,\"margin\":0.1,\"delta\":0.2,"
                           "\"arms\":[0.3,0.3,0.6]}",
                           &p, err, sizeof err),
                     0);
    struct sim_result r[2];
    for (int t = 0; t < 2; t++) {
        struct sim_options o;
        memset(&o, 0, sizeof o);
        o.policy = policy_find("vs-control");
        assert_non_null(o.policy);
        policy_params_defaults(o.policy, &o.params);
        o.runs = 24;
        o.seed = 5;
        o.threads = t == 0 ? 1 : 3;
        o.stop = ENGINE_RULE_DEFAULT;
        o.keep_runs = 1;
        if (sim_run(&p, &o, &r[t], err, sizeof err) != 0)
            fail_msg("%s", err);
    }
    assert_int_equal(r[0].n_verdicts, 3);
    uint64_t sup[3] = {0}, fut[3] = {0}, stops = 0;
    for (uint64_t i = 0; i < r[0].runs; i++) {
        for (size_t a = 0; a < 3; a++) {
            sup[a] += r[0].run_verdicts[i * 3 + a] == POLICY_SUPERIOR;
            fut[a] += r[0].run_verdicts[i * 3 + a] == POLICY_FUTILE;
        }
        stops += r[0].run_reason[i] == ENGINE_STOPPED_SUPERIORITY;
        assert_true(r[0].run_pulls[i] > 0);
    }
    for (size_t a = 0; a < 3; a++) {
        assert_int_equal(sup[a], r[0].arm_superior[a]);
        assert_int_equal(fut[a], r[0].arm_futile[a]);
        assert_int_equal(r[1].arm_superior[a], r[0].arm_superior[a]);
        assert_int_equal(r[1].arm_futile[a], r[0].arm_futile[a]);
    }
    assert_int_equal(stops, r[0].superiority_stops);
    assert_int_equal(r[0].arm_superior[2], r[0].runs); /* 0.6 against 0.3: every run */
    assert_int_equal(r[0].false_superior, 0);
    assert_int_equal(r[1].total_pulls, r[0].total_pulls);
    assert_memory_equal(r[1].run_verdicts, r[0].run_verdicts, r[0].runs * 3);
    assert_memory_equal(r[1].run_pulls, r[0].run_pulls, r[0].runs * sizeof *r[0].run_pulls);
    sim_result_free(&r[0]);
    sim_result_free(&r[1]);
    sim_problem_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem),
        cmocka_unit_test(test_runs_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
