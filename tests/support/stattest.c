/*
 * stattest.c — exact binomial tests, Wilson intervals and simulation
 * wrappers for the statistical tests (see stattest.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "tests/support/stattest.h"

double stattest_binom_sf(uint64_t k, uint64_t n, double p)
{
    if (k == 0)
        return 1.0;
    if (k > n)
        return 0.0;
    /* gsl_cdf_binomial_Q(k, p, n) = P(X > k). */
    return gsl_cdf_binomial_Q((unsigned)(k - 1), p, (unsigned)n);
}

uint64_t stattest_binom_critical(uint64_t n, double p, double alpha)
{
    /* P(X ≥ k) decreases in k: the first k at or under alpha. The binomial
     * median is ⌊np⌋ or ⌈np⌉, so P(X ≥ ⌊np⌋) ≥ 1/2 and, for alpha < 1/2, the
     * search can start there. */
    uint64_t k0 = alpha < 0.5 ? (uint64_t)floor((double)n * p) : 0;
    for (uint64_t k = k0; k <= n; k++)
        if (stattest_binom_sf(k, n, p) <= alpha)
            return k;
    return n + 1;
}

uint64_t stattest_binom_runs(double p0, double p1, double alpha, double power)
{
    if (!(p1 > p0))
        return 0;
    for (uint64_t n = 1; n <= 1000000; n++) {
        uint64_t k = stattest_binom_critical(n, p0, alpha);
        if (k <= n && stattest_binom_sf(k, n, p1) >= power)
            return n;
    }
    return 0;
}

void stattest_wilson(uint64_t k, uint64_t n, double conf, double *lo, double *hi)
{
    sim_wilson(k, n, gsl_cdf_ugaussian_Pinv(0.5 + conf / 2.0), lo, hi);
}

double stattest_mean_less_p(double mean_a, double sd_a, uint64_t n_a, double mean_b, double sd_b,
                            uint64_t n_b)
{
    double se = sqrt(sd_a * sd_a / (double)n_a + sd_b * sd_b / (double)n_b);
    if (!(se > 0.0))
        return mean_a < mean_b ? 0.0 : 1.0;
    return gsl_cdf_ugaussian_Q((mean_b - mean_a) / se);
}

double stattest_prop_less_p(uint64_t k_a, uint64_t n_a, uint64_t k_b, uint64_t n_b)
{
    double pa = (double)k_a / (double)n_a, pb = (double)k_b / (double)n_b;
    double pool = (double)(k_a + k_b) / (double)(n_a + n_b);
    double se = sqrt(pool * (1.0 - pool) * (1.0 / (double)n_a + 1.0 / (double)n_b));
    if (!(se > 0.0))
        return pa < pb ? 0.0 : 1.0;
    return gsl_cdf_ugaussian_Q((pb - pa) / se);
}

void stattest_assert_fewer(const char *label, uint64_t k_a, uint64_t n_a, uint64_t k_b,
                           uint64_t n_b, double alpha)
{
    double pv = stattest_prop_less_p(k_a, n_a, k_b, n_b);
    print_message("# %s: %.4f (%llu/%llu) vs %.4f (%llu/%llu), p = %.3g (need < %.3g)\n", label,
                  (double)k_a / (double)n_a, (unsigned long long)k_a, (unsigned long long)n_a,
                  (double)k_b / (double)n_b, (unsigned long long)k_b, (unsigned long long)n_b, pv,
                  alpha);
    if (!(pv < alpha))
        fail_msg("%s: not significantly fewer (p = %.3g)", label, pv);
}

void stattest_assert_rate_at_most(const char *label, uint64_t k, uint64_t n, double p, double alpha)
{
    double lo, hi, pv = stattest_binom_sf(k, n, p);
    stattest_wilson(k, n, 0.95, &lo, &hi);
    print_message("# %s: %llu/%llu = %.4f [95%% %.4f, %.4f], P(X >= %llu | rate %.3g) = %.3g\n",
                  label, (unsigned long long)k, (unsigned long long)n, (double)k / (double)n, lo,
                  hi, (unsigned long long)k, p, pv);
    if (pv < alpha)
        fail_msg("%s: %llu of %llu runs (%.4f) is significantly above %.3g (p = %.3g < %.3g)",
                 label, (unsigned long long)k, (unsigned long long)n, (double)k / (double)n, p, pv,
                 alpha);
}

void stattest_problem(const char *json_text, struct sim_problem *p)
{
    json_error_t je;
    json_t *j = json_loads(json_text, 0, &je);
    if (j == NULL)
        fail_msg("problem JSON: %s (line %d)", je.text, je.line);
    char err[256];
    int rc = sim_problem_parse(j, p, err, sizeof err);
    json_decref(j);
    if (rc != 0)
        fail_msg("problem: %s", err);
}

struct sim_options stattest_options(const char *policy, uint64_t runs, uint64_t seed)
{
    struct sim_options o;
    memset(&o, 0, sizeof o);
    o.policy = policy_find(policy);
    if (o.policy == NULL)
        fail_msg("no policy named %s", policy);
    policy_params_defaults(o.policy, &o.params);
    o.runs = runs;
    o.seed = seed;
    o.stop = ENGINE_RULE_DEFAULT;
    const char *t = getenv("STATTEST_THREADS");
    o.threads = t != NULL ? (unsigned)strtoul(t, NULL, 10) : 2;
    return o;
}

void stattest_param(struct sim_options *o, const char *name, const char *value)
{
    int i = policy_param_index(o->policy, name);
    if (i < 0)
        fail_msg("policy %s has no parameter %s", o->policy->name, name);
    char err[256];
    if (policy_param_parse(&o->policy->params[i], value, &o->params.values[i], err, sizeof err) !=
        0)
        fail_msg("--param %s=%s: %s", name, value, err);
}

void stattest_run(const char *label, const struct sim_problem *p, const struct sim_options *o,
                  struct sim_result *r)
{
    char err[256];
    if (sim_run(p, o, r, err, sizeof err) != 0)
        fail_msg("%s: sim_run: %s", label, err);
    double lo, hi;
    stattest_wilson(r->errors, r->runs, 0.95, &lo, &hi);
    print_message("# %s: %s, %llu runs, delay %llu, %s bound: error %.4f [%.4f, %.4f], pac %.4f, "
                  "pulls mean %.1f (se %.1f) median %.1f p90 %.1f, stopped %.3f, %.2f s\n",
                  label, o->policy->name, (unsigned long long)r->runs, (unsigned long long)o->delay,
                  p->bound == STATS_BOUND_FIXED ? "fixed" : "anytime", r->error_rate, lo, hi,
                  r->pac_error_rate, r->mean_pulls, r->sd_pulls / sqrt((double)r->runs),
                  r->median_pulls, r->p90_pulls, r->stopped_rate, r->wall_s);
}

void stattest_check_delta(const char *name, const char *json, const char *policy,
                          enum engine_stop_rule stop, uint64_t seed, double alpha)
{
    struct sim_problem p;
    stattest_problem(json, &p);
    uint64_t runs = stattest_binom_runs(p.delta, 2 * p.delta, alpha, 0.9);
    assert_true(runs > 0);
    const enum stats_bound bounds[] = {STATS_BOUND_ANYTIME, STATS_BOUND_FIXED};
    const uint64_t delays[] = {0, 100};
    for (size_t b = 0; b < 2; b++) {
        for (size_t d = 0; d < 2; d++) {
            p.bound = bounds[b];
            struct sim_options o = stattest_options(policy, runs, seed);
            o.stop = stop;
            o.delay = delays[d];
            struct sim_result r;
            char label[160];
            snprintf(label, sizeof label, "%s, %s bound, delay %llu", name, b ? "fixed" : "anytime",
                     (unsigned long long)delays[d]);
            stattest_run(label, &p, &o, &r);
            stattest_assert_rate_at_most(label, r.errors, r.runs, p.delta, alpha);
            assert_int_equal(r.capped, 0);
            assert_int_equal(r.stopped, r.runs);
        }
    }
    sim_problem_free(&p);
}

void stattest_assert_result_keys(const json_t *j, const char *what)
{
    static const char *const keys[] = {"runs",
                                       "policy",
                                       "params",
                                       "error_rate",
                                       "mean_bandit_error_rate",
                                       "pac_error_rate",
                                       "regret_error_rate",
                                       "mean_pulls",
                                       "median_pulls",
                                       "p90_pulls",
                                       "mean_completed",
                                       "wall_s",
                                       NULL};
    for (size_t i = 0; keys[i] != NULL; i++)
        if (json_object_get(j, keys[i]) == NULL)
            fail_msg("no key %s in %s", keys[i], what);
}
