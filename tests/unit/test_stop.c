/*
 * test_stop.c — unit tests for policies/stop.c: δᶜ with the split of δ fixed
 * in advance. The rule (stop_delta_c_met, K widths at δ/K) and its error
 * bound (stop_delta_c, a search over cutoffs) must agree: the rule holds at
 * δ exactly when the bound is at most δ, up to the search's precision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <math.h>

#include <gsl/gsl_rng.h>

#include "policies/order.h"
#include "policies/stop.h"

static struct stats_arm sampled_arm(gsl_rng *r, uint64_t n, double p)
{
    struct stats_arm a;
    stats_arm_init(&a, 1.0, 1.0);
    for (uint64_t i = 0; i < n; i++)
        stats_arm_add(&a, gsl_rng_uniform(r) < p);
    return a;
}

/* Two arms: the bound is K times the larger δᶜ_i at the cutoff where the
 * two are equal, and each arm's width at bound/K reaches that cutoff. */
static void test_two_arms_by_hand(void **state)
{
    (void)state;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    struct stats_arm arms[2] = {sampled_arm(r, 400, 0.6), sampled_arm(r, 300, 0.4)};
    unsigned char high[2] = {1, 0};
    double c;
    double b = stop_delta_c(arms, 2, high, STATS_BOUND_ANYTIME, 0.0, &c);
    assert_true(b > 0.0 && b < 1.0);
    assert_true(c > arms[1].mean && c < arms[0].mean);
    double dh = stats_conf(STATS_BOUND_ANYTIME, &arms[0], 0, arms[0].mean - c);
    double dl = stats_conf(STATS_BOUND_ANYTIME, &arms[1], 0, c - arms[1].mean);
    assert_true(fabs(dh - dl) <= 1e-9 * b);
    assert_true(fabs(2.0 * fmax(dh, dl) - b) <= 1e-15);
    /* No cutoff does better than the crossing. */
    for (int j = 1; j < 200; j++) {
        double x = arms[1].mean + (arms[0].mean - arms[1].mean) * j / 200.0;
        double f = fmax(stats_conf(STATS_BOUND_ANYTIME, &arms[0], 0, arms[0].mean - x),
                        stats_conf(STATS_BOUND_ANYTIME, &arms[1], 0, x - arms[1].mean));
        assert_true(2.0 * f >= b * (1 - 1e-12));
    }
    gsl_rng_free(r);
}

/* The rule at δ and the bound ≤ δ agree, over random instances and δ's,
 * except within a relative 1e-6 of the boundary (widths are Newton roots). */
static void test_rule_matches_bound(void **state)
{
    (void)state;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    int stops = 0, runs = 0;
    for (int it = 0; it < 400; it++) {
        size_t k = 2 + (size_t)gsl_rng_uniform_int(r, 6);
        struct stats_arm arms[8];
        unsigned char high[8] = {0};
        size_t best = 0;
        for (size_t i = 0; i < k; i++) {
            arms[i] = sampled_arm(r, 20 + gsl_rng_uniform_int(r, 2000), gsl_rng_uniform(r));
            if (arms[i].mean > arms[best].mean)
                best = i;
        }
        high[best] = 1;
        double eps = it % 3 == 0 ? 0.05 : 0.0;
        double b = stop_delta_c(arms, k, high, STATS_BOUND_ANYTIME, eps, NULL);
        const double ds[] = {0.3, 0.1, 0.01, 1e-4};
        for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++) {
            if (fabs(b - ds[j]) <= 1e-6 * ds[j])
                continue;
            int met = stop_delta_c_met(arms, k, high, STATS_BOUND_ANYTIME, eps, ds[j]);
            if (met != (b <= ds[j]))
                fail_msg("k %zu eps %g: bound %.17g, rule at %g says %d", k, eps, b, ds[j], met);
            stops += met;
            runs++;
        }
    }
    /* both outcomes were exercised */
    assert_true(stops > runs / 10 && stops < runs - runs / 10);
    gsl_rng_free(r);
}

/* Edges: an arm without data, High below Low, nothing to distinguish. */
static void test_edges(void **state)
{
    (void)state;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 3);
    struct stats_arm arms[3] = {sampled_arm(r, 5000, 0.9), sampled_arm(r, 5000, 0.1),
                                sampled_arm(r, 0, 0.5)};
    unsigned char high[3] = {1, 0, 0};
    assert_true(stop_delta_c(arms, 3, high, STATS_BOUND_ANYTIME, 0.0, NULL) == 1.0);
    assert_false(stop_delta_c_met(arms, 3, high, STATS_BOUND_ANYTIME, 0.0, 0.5));
    double b = stop_delta_c(arms, 2, high, STATS_BOUND_ANYTIME, 0.0, NULL);
    assert_true(b < 1e-100);
    assert_true(stop_delta_c_met(arms, 2, high, STATS_BOUND_ANYTIME, 0.0, 1e-9));
    unsigned char rev[2] = {0, 1};
    assert_true(stop_delta_c(arms, 2, rev, STATS_BOUND_ANYTIME, 0.0, NULL) == 1.0);
    assert_false(stop_delta_c_met(arms, 2, rev, STATS_BOUND_ANYTIME, 0.0, 0.5));
    unsigned char none[2] = {0, 0};
    assert_true(stop_delta_c(arms, 2, none, STATS_BOUND_ANYTIME, 0.0, NULL) == 0.0);
    assert_true(stop_delta_c(arms, 1, high, STATS_BOUND_ANYTIME, 0.0, NULL) == 0.0);
    /* ε lets a High arm just below a Low one pass once both are sharp */
    struct stats_arm close[2] = {sampled_arm(r, 100000, 0.50), sampled_arm(r, 100000, 0.51)};
    unsigned char h0[2] = {1, 0};
    assert_true(stop_delta_c(close, 2, h0, STATS_BOUND_ANYTIME, 0.0, NULL) == 1.0);
    assert_true(stop_delta_c(close, 2, h0, STATS_BOUND_ANYTIME, 0.05, NULL) < 0.01);
    gsl_rng_free(r);
}

/* The GLR rule with ε over a mask: the same verdict as track-and-stop's own
 * ε-GLR stop (m = 1) and as its evidence (stop_glr_evidence) against the
 * threshold; top-m with ε stops where ε = 0 cannot (tied top means). */
static void test_glr_epsilon(void **state)
{
    (void)state;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    int stops = 0;
    for (int it = 0; it < 300; it++) {
        size_t k = 2 + (size_t)gsl_rng_uniform_int(r, 5);
        struct stats_arm arms[8] = {0};
        unsigned char high[8] = {0};
        size_t best = 0;
        for (size_t i = 0; i < k; i++) {
            arms[i] = sampled_arm(r, 30 + gsl_rng_uniform_int(r, 3000), gsl_rng_uniform(r));
            if (arms[i].mean > arms[best].mean)
                best = i;
        }
        high[best] = 1;
        /* the leader led for most of its pulls (the leader product's data) */
        arms[best].lead_n = arms[best].n - arms[best].n / 4;
        arms[best].lead_sum = arms[best].mean * (double)arms[best].lead_n;
        double eps = (it % 3) * 0.05, delta = it % 2 ? 0.1 : 0.01;
        for (int kind = 0; kind < 2; kind++) {
            enum stats_glr_threshold kd = kind ? STATS_GLR_PROVEN : STATS_GLR_HEURISTIC;
            double t = 0;
            for (size_t i = 0; i < k; i++)
                t += (double)arms[i].n;
            double beta = stats_glr_threshold(kd, t, k, 1, eps, delta);
            int met = stats_glr_stop(arms, k, high, kd, 1, eps, delta);
            assert_int_equal(met, stats_glr_stop_best(arms, k, best, eps, kd, beta));
            double ev = stop_glr_evidence(arms, k, high, kd, eps);
            if (fabs(ev - beta) > 1e-9 * fmax(1.0, fabs(beta)))
                assert_int_equal(met, ev > beta);
            if (kd == STATS_GLR_PROVEN && met)
                assert_true(stop_glr_error_bound(kd, ev, k, 1, eps) <= delta);
            stops += met;
        }
    }
    assert_true(stops > 30 && stops < 570);
    /* Top 2 of four arms, the top two tied at 0.5 and the others far below:
     * with ε = 0.1 the set {0, 1} is ε-good and the rule stops; with ε = 0
     * it is too (the pairs are High against Low, never 0 against 1). Arm 1
     * against a Low arm at 0.45: within ε, so only ε stops. */
    struct stats_arm top[4] = {sampled_arm(r, 20000, 0.5), sampled_arm(r, 20000, 0.5),
                               sampled_arm(r, 20000, 0.45), sampled_arm(r, 20000, 0.1)};
    if (top[2].mean < fmin(top[0].mean, top[1].mean)) {
        unsigned char h2[4] = {1, 1, 0, 0};
        assert_true(stats_glr_stop(top, 4, h2, STATS_GLR_PROVEN, 2, 0.1, 0.05));
        assert_true(stop_glr_error_bound(STATS_GLR_PROVEN,
                                         stop_glr_evidence(top, 4, h2, STATS_GLR_PROVEN, 0.1), 4, 2,
                                         0.1) <= 0.05);
    }
    unsigned char h1[4] = {1, 0, 0, 0};
    assert_false(stats_glr_stop(top, 4, h1, STATS_GLR_PROVEN, 1, 0.0, 0.05));
    assert_true(stats_glr_stop(top, 4, h1, STATS_GLR_PROVEN, 1, 0.1, 0.05));
    gsl_rng_free(r);
}

/* The evidence's pruned search gives the minimum over all pairs exactly:
 * against the brute force over every pair, at K up to 40 and top m. */
static void test_glr_evidence_exact(void **state)
{
    (void)state;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 17);
    for (int it = 0; it < 60; it++) {
        size_t k = 2 + (size_t)gsl_rng_uniform_int(r, 39);
        unsigned m = 1 + (unsigned)gsl_rng_uniform_int(r, k > 4 ? 3 : 1);
        struct stats_arm arms[41];
        for (size_t i = 0; i < k; i++)
            arms[i] = sampled_arm(r, 5 + gsl_rng_uniform_int(r, 4000), gsl_rng_uniform(r));
        unsigned char high[41] = {0};
        order_top_m(arms, k, m, NULL, high);
        double eps = it % 2 ? 0.03 : 0.0;
        for (int kind = 0; kind < 2; kind++) {
            enum stats_glr_threshold kd = kind ? STATS_GLR_PROVEN : STATS_GLR_HEURISTIC;
            /* the leader product has no pruned search (test_stats checks
             * it against its own brute force) */
            if (m == 1 && stats_glr_uses_lead(kd, k, m, eps))
                continue;
            double brute = INFINITY;
            for (size_t i = 0; i < k; i++)
                for (size_t j = 0; j < k; j++) {
                    if (!high[i] || high[j])
                        continue;
                    int ahead =
                        eps > 0 ? arms[j].mean >= arms[i].mean + eps : arms[j].mean >= arms[i].mean;
                    double z = ahead ? 0.0 : stats_glr_pair_z(&arms[i], &arms[j], eps);
                    double e = stats_glr_pair_evidence(kd, &arms[i], &arms[j], z, eps);
                    brute = e < brute ? e : brute;
                }
            double got = stop_glr_evidence(arms, k, high, kd, eps);
            if (got != brute)
                fail_msg("k %zu m %u eps %g kind %d: %.17g, brute force %.17g", k, m, eps, kind,
                         got, brute);
        }
    }
    gsl_rng_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_arms_by_hand),
        cmocka_unit_test(test_rule_matches_bound),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_glr_epsilon),
        cmocka_unit_test(test_glr_evidence_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
