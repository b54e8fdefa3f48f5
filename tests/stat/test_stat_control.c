/*
 * test_stat_control.c — the goal "control" (docs/stop-rules.md, `control`)
 * by simulation, with the daemon's engine and fixed seeds, at δ = 0.2:
 *   - a superiority trial (control 0.3; arms 0.3, 0.6, 0.3; Δ = 0.1)
 *     stops for superiority on arm 2, the others futile, in every run;
 *   - a null trial (every arm 0.5, Δ = 0.1) stops for futility in every
 *     run, rewards back at once and 50 pulls late;
 *   - the boundary (control 0.4; arms 0.5 = control + Δ, 0.4; Δ = 0.1),
 *     where declaring arm 1 superior is a type I error and declaring it
 *     futile is an error too: neither side of its interval can ever clear
 *     Δ for good, so its runs end at the budget (4,000 pulls), with their
 *     decisions counted.
 * Each error rate (a false superiority: the type I error; any wrong
 * decision, superior or futile) is a one-sided exact binomial test of
 * "rate ≤ δ" at α = 0.01 on stattest_binom_runs(δ, 2δ, α, 0.9) = 67 runs:
 * a correct rule fails it at most 1% of the time, one erring at 2δ fails it
 * with probability ≥ 0.9. About 3 s of CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <stdio.h>

#include "sim/sim.h"
#include "tests/support/stattest.h"

#define ALPHA 0.01
#define DELTA 0.2

static uint64_t runs_for_delta(void)
{
    uint64_t n = stattest_binom_runs(DELTA, 2 * DELTA, ALPHA, 0.9);
    assert_true(n > 0);
    return n;
}

/* Both error rates of r at most δ (the binomial test above). */
static void assert_errors(const char *label, const struct sim_result *r)
{
    char l[160];
    snprintf(l, sizeof l, "%s: type I error (false superiority)", label);
    stattest_assert_rate_at_most(l, r->false_superior, r->runs, DELTA, ALPHA);
    snprintf(l, sizeof l, "%s: some wrong decision", label);
    stattest_assert_rate_at_most(l, r->errors, r->runs, DELTA, ALPHA);
}

static void test_superiority(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"type\": \"control\", \"control\": \"placebo\", \"margin\": 0.1, "
                     "\"delta\": 0.2, \"arms\": [{\"dist\": \"bernoulli\", \"p\": 0.3, \"id\": "
                     "\"placebo\"}, 0.3, 0.6, 0.3]}",
                     &p);
    assert_int_equal(p.control, 0);
    struct sim_options o = stattest_options("vs-control", runs_for_delta(), 2101);
    struct sim_result r;
    stattest_run("superiority", &p, &o, &r);
    assert_int_equal(r.capped, 0);
    assert_int_equal(r.superiority_stops, r.runs);
    assert_int_equal(r.arm_superior[2], r.runs); /* the right arm, every time */
    assert_int_equal(r.arm_superior[0], 0);      /* the control is never compared */
    assert_int_equal(r.arm_futile[0], 0);
    assert_errors("superiority", &r);
    sim_result_free(&r);
    sim_problem_free(&p);
}

static void test_null(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"type\": \"control\", \"control\": 0, \"margin\": 0.1, \"delta\": 0.2, "
                     "\"arms\": [0.5, 0.5, 0.5, 0.5]}",
                     &p);
    static const uint64_t delays[] = {0, 50};
    for (size_t d = 0; d < 2; d++) {
        struct sim_options o = stattest_options("vs-control", runs_for_delta(), 2201 + d);
        o.delay = delays[d];
        struct sim_result r;
        char label[64];
        snprintf(label, sizeof label, "null, delay %llu", (unsigned long long)delays[d]);
        stattest_run(label, &p, &o, &r);
        assert_int_equal(r.capped, 0);
        assert_int_equal(r.futility_stops, r.runs);
        assert_errors(label, &r);
        sim_result_free(&r);
    }
    sim_problem_free(&p);
}

static void test_boundary(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"type\": \"control\", \"control\": 0, \"margin\": 0.1, \"delta\": 0.2, "
                     "\"budget\": 4000, \"arms\": [0.4, 0.5, 0.4]}",
                     &p);
    struct sim_options o = stattest_options("vs-control", runs_for_delta(), 2301);
    struct sim_result r;
    stattest_run("boundary", &p, &o, &r);
    assert_int_equal(r.capped, 0);
    assert_errors("boundary", &r);
    /* Arm 2 (equal to the control) is decided futile in most runs: the
     * test would not see a rule that never decides anything. */
    assert_true(r.arm_futile[2] > r.runs / 2);
    sim_result_free(&r);
    sim_problem_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_superiority),
        cmocka_unit_test(test_null),
        cmocka_unit_test(test_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
