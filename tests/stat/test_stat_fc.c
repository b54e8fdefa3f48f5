/*
 * test_stat_fc.c — the fixed-confidence policies keep their promise: on
 * Bernoulli instances, with rewards returned at once and 100 pulls late, the
 * error rate (returned set not (ε, m)-optimal; aggregate regret > ε for
 * adaptive-topk) is not significantly above δ.
 *
 * Test: one-sided exact binomial, H0 "error rate ≤ δ", rejected when
 * P(X ≥ errors | runs, δ) < 0.01. Each case's run count is checked to give
 * that test power ≥ 0.9 against an error rate of 2δ (computed, not assumed),
 * so a policy that errs twice as often as allowed fails with probability
 * ≥ 0.9. Instances put an arm just outside the ε-band (ε-policies) or use
 * small gaps, so that stopping early or returning the wrong set shows.
 * Seeds are fixed: the test is deterministic.
 *
 * The runs drive the engine directly (tests/support/fcdrive.h) rather than
 * bandit-sim, which is written on another branch. Budget: ~60 s at -O2.
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

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "policies/engine.h"
#include "tests/support/fcdrive.h"

#define LEVEL 0.01

struct fc_case {
    const char *policy;
    const double *mu;
    size_t k;
    unsigned m;
    double eps, delta;
    int kind; /* 0: (ε, m)-optimal set; 1: aggregate regret ≤ ε */
    unsigned runs;
};

/* P(X ≥ x) for X ~ Binomial(n, p). */
static double binom_sf(unsigned x, double p, unsigned n)
{
    if (x == 0)
        return 1.0;
    return gsl_cdf_binomial_Q(x - 1, p, n);
}

/* Smallest error count the test rejects at LEVEL. */
static unsigned critical(double delta, unsigned n)
{
    unsigned c = 0;
    while (c <= n && binom_sf(c, delta, n) >= LEVEL)
        c++;
    return c;
}

static void run_case(const struct fc_case *c, uint64_t delay)
{
    unsigned crit = critical(c->delta, c->runs);
    double power = binom_sf(crit, 2 * c->delta, c->runs);
    if (power < 0.9)
        fail_msg("%s: %u runs give power %.3f < 0.9 against 2δ", c->policy, c->runs, power);
    gsl_rng *env_rng = gsl_rng_alloc(gsl_rng_taus2);
    assert_non_null(env_rng);
    unsigned errors = 0, stopped = 0;
    double pulls = 0;
    for (unsigned r = 0; r < c->runs; r++) {
        char err[256];
        uint64_t seed = 1000003ULL * (delay + 1) + r;
        struct engine *e = fcdrive_engine(c->policy, c->k, c->m, c->eps, c->delta, seed, NULL,
                                          NULL, err, sizeof err);
        if (e == NULL)
            fail_msg("%s: %s", c->policy, err);
        gsl_rng_set(env_rng, seed ^ 0x5bd1e995ULL);
        struct fcdrive_env env = {
            .mu = c->mu, .k = c->k, .delay = delay, .fixed = 0, .rng = env_rng};
        struct fcdrive_result res;
        assert_int_equal(fcdrive_run(e, &env, 20000000, NULL, NULL, &res), 0);
        stopped += res.stopped;
        pulls += (double)res.pulls;
        errors += !fcdrive_correct(c->mu, c->k, c->m, c->eps, res.high, c->kind);
        engine_free(e);
    }
    gsl_rng_free(env_rng);
    double p = binom_sf(errors, c->delta, c->runs);
    print_message("# %-15s K=%zu m=%u eps=%.2f delta=%.2f delay=%3llu: %u/%u errors "
                  "(p = %.3g, reject at >= %u), mean pulls %.0f\n",
                  c->policy, c->k, c->m, c->eps, c->delta, (unsigned long long)delay, errors,
                  c->runs, p, crit, pulls / c->runs);
    assert_int_equal(stopped, c->runs);
    if (p < LEVEL)
        fail_msg("%s: %u errors in %u runs, significantly above delta = %g (p = %g)", c->policy,
                 errors, c->runs, c->delta, p);
}

/* Best arm 0.7 against 0.6: gap 0.1 among four arms. */
static const double GAP4[] = {0.6, 0.7, 0.5, 0.4};
/* Top 2 of five, boundary gap 0.1. */
static const double TOP5[] = {0.5, 0.8, 0.4, 0.7, 0.6};
/* ε-bands. BAND5 with ε = 0.2: for m = 1 the arm at 0.49 is just outside
 * [0.5, 0.7]; for m = 2 (μ_(2) = 0.6) the arm at 0.38 is just outside.
 * WIDE5 with ε = 0.3: for m = 1 the arm at 0.39 is just outside [0.4, 0.7];
 * for m = 2, 0.2 is outside [0.3, …]. */
static const double BAND5[] = {0.49, 0.7, 0.38, 0.6, 0.55};
static const double WIDE5[] = {0.39, 0.7, 0.2, 0.6, 0.55};

/* δ = 0.1 with 200 runs where runs are cheap, δ = 0.2 with 80 runs where
 * they are not: both give power > 0.9 against 2δ (checked in run_case). */
static const struct fc_case CASES[] = {
    {"direct", BAND5, 5, 1, 0.2, 0.1, 0, 200},
    {"direct", BAND5, 5, 2, 0.2, 0.1, 0, 200},
    {"halving", WIDE5, 5, 1, 0.3, 0.2, 0, 80},
    {"halving", WIDE5, 5, 2, 0.3, 0.2, 0, 80},
    {"incremental", WIDE5, 5, 1, 0.3, 0.2, 0, 80},
    {"incremental", WIDE5, 5, 2, 0.3, 0.2, 0, 80},
    {"adaptive-topk", BAND5, 5, 1, 0.1, 0.1, 1, 200},
    {"adaptive-topk", TOP5, 5, 2, 0.05, 0.1, 1, 200},
    {"lucb1", GAP4, 4, 1, 0.0, 0.1, 0, 200},
    {"lucb1", TOP5, 5, 2, 0.05, 0.2, 0, 80},
    {"kl-lucb", GAP4, 4, 1, 0.0, 0.1, 0, 200},
    {"kl-lucb", TOP5, 5, 2, 0.05, 0.2, 0, 80},
    {"ttts", GAP4, 4, 1, 0.0, 0.1, 0, 200},
    {"track-and-stop", GAP4, 4, 1, 0.0, 0.1, 0, 200},
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static void test_policy(const char *name)
{
    for (size_t i = 0; i < LEN(CASES); i++)
        if (strcmp(CASES[i].policy, name) == 0) {
            run_case(&CASES[i], 0);
            run_case(&CASES[i], 100);
        }
}

static void test_direct(void **state)
{
    (void)state;
    test_policy("direct");
}

static void test_halving(void **state)
{
    (void)state;
    test_policy("halving");
}

static void test_incremental(void **state)
{
    (void)state;
    test_policy("incremental");
}

static void test_adaptive_topk(void **state)
{
    (void)state;
    test_policy("adaptive-topk");
}

static void test_lucb1(void **state)
{
    (void)state;
    test_policy("lucb1");
}

static void test_kl_lucb(void **state)
{
    (void)state;
    test_policy("kl-lucb");
}

static void test_ttts(void **state)
{
    (void)state;
    test_policy("ttts");
}

static void test_track_and_stop(void **state)
{
    (void)state;
    test_policy("track-and-stop");
}

/* The binomial machinery itself: the critical count and the test's power
 * for 200 runs at δ = 0.1, by hand from the binomial tail. */
static void test_binomial_design(void **state)
{
    (void)state;
    /* X ~ Bin(200, 0.1) (exact sums, Python): P(X ≥ 30) = 0.01633,
     * P(X ≥ 31) = 0.009508; under 2δ, P(X ≥ 31 | 0.2) = 0.9570. */
    assert_int_equal(critical(0.1, 200), 31);
    assert_true(fabs(binom_sf(31, 0.1, 200) - 0.009508) < 1e-5);
    assert_true(binom_sf(0, 0.1, 200) == 1.0);
    assert_true(fabs(binom_sf(31, 0.2, 200) - 0.9570) < 1e-4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binomial_design), cmocka_unit_test(test_direct),
        cmocka_unit_test(test_halving),         cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_adaptive_topk),   cmocka_unit_test(test_lucb1),
        cmocka_unit_test(test_kl_lucb),         cmocka_unit_test(test_ttts),
        cmocka_unit_test(test_track_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
