/*
 * test_sim_trace.c — the simulator's trace (sim.h, struct sim_trace; bandit-sim
 * --trace): log-spaced checkpoints, values that agree with separate runs cut
 * at each checkpoint, final answers carried past a run's stop, independence
 * from the thread count, and the quantities' definitions (NSS, completed and
 * completed_target) on problems whose answers are known.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/support/stattest.h"

static struct sim_options opts(const char *policy, uint64_t runs, uint64_t seed, unsigned threads,
                               unsigned trace)
{
    struct sim_options o = stattest_options(policy, runs, seed);
    o.threads = threads;
    o.trace_per_decade = trace;
    return o;
}

static void run_ok(const struct sim_problem *p, const struct sim_options *o, struct sim_result *r)
{
    char err[256];
    if (sim_run(p, o, r, err, sizeof err) != 0)
        fail_msg("sim_run: %s", err);
}

/* Index of checkpoint t in the trace, or fail. */
static size_t point(const struct sim_trace *t, uint64_t pulls)
{
    for (size_t k = 0; k < t->n; k++)
        if (t->pulls[k] == pulls)
            return k;
    fail_msg("no checkpoint at %llu pulls", (unsigned long long)pulls);
    return 0;
}

/* round(10^(k/N)), deduplicated, then the limit. */
static void test_points(void **state)
{
    (void)state;
    uint64_t pts[64];
    const uint64_t want4[] = {1, 2, 3, 6, 10, 18, 32, 56, 100, 178, 316, 562, 700};
    size_t n = sim_trace_points(4, 700, pts, 64);
    assert_int_equal(n, sizeof want4 / sizeof want4[0]);
    assert_memory_equal(pts, want4, sizeof want4);

    const uint64_t want1[] = {1, 10, 100, 1000};
    n = sim_trace_points(1, 1000, pts, 64);
    assert_int_equal(n, 4);
    assert_memory_equal(pts, want1, sizeof want1);

    /* Dense: 100 per decade between 1 and 10 rounds to each integer once. */
    n = sim_trace_points(100, 10, pts, 64);
    assert_int_equal(n, 10);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pts[i], i + 1);

    assert_int_equal(sim_trace_points(3, 1, pts, 64), 1);
    assert_int_equal(pts[0], 1);
    assert_int_equal(sim_trace_points(0, 1000, pts, 64), 0);
    assert_int_equal(sim_trace_points(10, 1000, pts, 5), 5); /* the cap holds */
    /* Up to the default cap of 10^8: k = 0..79 and the limit, less the three
     * repeats of the first decade (1.26 → 1, 2.00 → 2 after 1.58, 3.16 → 3
     * after 2.51). */
    uint64_t big[1000];
    n = sim_trace_points(10, SIM_SAFETY_PULLS, big, 1000);
    assert_int_equal(n, 78);
    assert_int_equal(big[n - 1], SIM_SAFETY_PULLS);
    for (size_t i = 1; i < n; i++)
        assert_true(big[i] > big[i - 1]);
}

/* Uniform allocation does not depend on the budget and run i's draws depend
 * only on (seed, i): the trace at t pulls is exactly the result of the same
 * runs with budget t, for every figure the trace reports. */
static void test_matches_runs_cut_at_each_checkpoint(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"budget\": 700, \"bandits\": [{\"arms\": [0.5, 0.45, 0.4, 0.3]},"
                     " {\"arms\": [0.5, 0.3, 0.2, 0.1]}]}",
                     &p);
    struct sim_options o = opts("uniform", 300, 11, 2, 4);
    struct sim_result r;
    run_ok(&p, &o, &r);
    assert_int_equal(r.trace.n, 13);
    assert_int_equal(r.trace.pulls[r.trace.n - 1], 700);
    assert_null(r.trace.completed_target);
    const uint64_t cuts[] = {10, 56, 178, 316, 700};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        size_t k = point(&r.trace, cuts[c]);
        struct sim_options oc = opts("uniform", 300, 11, 3, 0);
        oc.budget = cuts[c];
        struct sim_result rc;
        run_ok(&p, &oc, &rc);
        assert_int_equal(rc.trace.n, 0);
        assert_true(r.trace.error_rate[k] == rc.error_rate);
        assert_true(r.trace.pac_error_rate[k] == rc.pac_error_rate);
        assert_true(r.trace.regret_error_rate[k] == rc.regret_error_rate);
        assert_true(r.trace.completed[k] == rc.mean_completed);
        /* Runs end at the budget: only the last checkpoint sees them ended. */
        assert_true(r.trace.running[k] == (cuts[c] == 700 ? 0.0 : 1.0));
        sim_result_free(&rc);
    }
    /* Error rates fall as pulls come in (300 runs: from near 1 − 1/4² to
     * the final rate); NSS rises. */
    assert_true(r.trace.error_rate[0] > r.trace.error_rate[r.trace.n - 1] + 0.3);
    assert_true(r.trace.nss[r.trace.n - 1] > r.trace.nss[0]);
    for (size_t k = 0; k < r.trace.n; k++) {
        assert_true(r.trace.delta_c[k] >= 0.0 && r.trace.delta_c[k] <= 1.0);
        assert_true(r.trace.rho[k] >= 0.0 && r.trace.rho[k] <= 1.0);
        assert_true(r.trace.nss[k] >= 0.0 && r.trace.nss[k] <= 1.0);
    }
    sim_result_free(&r);
    assert_int_equal(r.trace.n, 0);
    assert_null(r.trace.pulls);
    sim_problem_free(&p);
}

/* Fixed confidence with a delay: runs stop at different times; the trace is
 * the same for any thread count, runs end monotonically, and the last
 * checkpoint (past the longest run) shows the final answers. */
static void test_stops_carry_and_threads(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"delta\": 0.1, \"arms\": [0.2, 0.5, 0.8]}", &p);
    struct sim_options o1 = opts("adapt", 40, 5, 1, 10), o3 = opts("adapt", 40, 5, 3, 10);
    o1.stop = o3.stop = ENGINE_RULE_DELTA_C; /* the trace's δᶜ is then the rule's figure */
    o1.delay = o3.delay = 7;
    struct sim_result r1, r3;
    run_ok(&p, &o1, &r1);
    run_ok(&p, &o3, &r3);
    const struct sim_trace *a = &r1.trace, *b = &r3.trace;
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->pulls, b->pulls, a->n * sizeof *a->pulls);
    double *const fa[] = {
        a->delta_c,           a->rho,       a->nss,    a->error_rate, a->pac_error_rate,
        a->regret_error_rate, a->completed, a->running};
    double *const fb[] = {
        b->delta_c,           b->rho,       b->nss,    b->error_rate, b->pac_error_rate,
        b->regret_error_rate, b->completed, b->running};
    for (size_t q = 0; q < sizeof fa / sizeof fa[0]; q++)
        assert_memory_equal(fa[q], fb[q], a->n * sizeof(double));

    size_t last = a->n - 1;
    assert_true(a->running[0] == 1.0);
    assert_true(a->running[last] == 0.0);
    for (size_t k = 1; k < a->n; k++)
        assert_true(a->running[k] <= a->running[k - 1]);
    /* Only the last checkpoint lies at or past the longest run. */
    assert_true((double)a->pulls[last] >= r1.p90_pulls);
    assert_true(last == 0 || a->running[last - 1] > 0.0);
    assert_true(a->error_rate[last] == r1.error_rate);
    assert_true(a->completed[last] == r1.mean_completed);
    /* Every run stopped at δᶜ ≤ δ: the mean δᶜ at the end is at most δ. */
    assert_int_equal(r1.stopped, 40);
    assert_true(a->delta_c[last] <= 0.1);
    sim_result_free(&r1);
    sim_result_free(&r3);
    sim_problem_free(&p);
}

/* Known answers: on [0.9, 0.1] with a long budget the recommended arm is the
 * best in every run (NSS 1, no error, ρ̄ past τ in every run); with a target
 * arm, completed_target counts completed bandits whose target is truly in the
 * top m, here bandit 0 only. */
static void test_definitions(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"budget\": 2000, \"tau\": 0.9, \"target_arm\": 0, \"bandits\": ["
                     " {\"arms\": [0.9, 0.1]}, {\"arms\": [0.1, 0.9]}]}",
                     &p);
    struct sim_options o = opts("uniform", 50, 2, 2, 5);
    struct sim_result r;
    run_ok(&p, &o, &r);
    size_t last = r.trace.n - 1;
    assert_int_equal(r.trace.pulls[last], 2000);
    assert_true(r.trace.nss[last] == 1.0);
    assert_true(r.trace.error_rate[last] == 0.0);
    assert_true(r.trace.completed[last] == 2.0);
    assert_non_null(r.trace.completed_target);
    assert_true(r.trace.completed_target[last] == 1.0);
    for (size_t k = 0; k < r.trace.n; k++)
        assert_true(r.trace.completed_target[k] <= r.trace.completed[k]);
    /* ρ̄ is the weaker bandit's: below τ while neither has data. */
    assert_true(r.trace.rho[0] == 0.0);
    assert_true(r.trace.rho[last] >= 0.9);
    sim_result_free(&r);

    /* Too many points per decade is refused before anything runs. */
    o.trace_per_decade = SIM_TRACE_MAX_PER_DECADE + 1;
    char err[256];
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "trace"));
    sim_problem_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points),
        cmocka_unit_test(test_matches_runs_cut_at_each_checkpoint),
        cmocka_unit_test(test_stops_carry_and_threads),
        cmocka_unit_test(test_definitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
