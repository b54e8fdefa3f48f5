/*
 * stattest.h — helpers for statistical tests (tests/stat/): exact binomial
 * tests, Wilson intervals, a two-sample comparison of means, and thin
 * wrappers that run bandit-sim's library (sim/sim.h) from a cmocka test.
 *
 * How to write a statistical test with it (tests/stat/test_stat_adapt.c is a
 * full example):
 *
 *   1. Pick the claim and its level. "Error rate ≤ δ" is tested one-sided at
 *      α = 0.01: the test fails when P(X ≥ errors | runs, δ) < α, i.e. when
 *      the observed errors are too many to be explained by a rate of δ.
 *   2. Derive the number of runs from the power you want, not by hand:
 *      stattest_binom_runs(δ, 2δ, 0.01, 0.9) is the fewest runs for which a
 *      true error rate of 2δ fails the test with probability ≥ 0.9.
 *   3. Fix the seed (results do not depend on the thread count), so the test
 *      is reproducible; never retry with another seed until it passes.
 *   4. Compare costs with stattest_mean_less_p (Welch's z on the mean pulls)
 *      and error rates with stattest_prop_less_p (two-proportion z), rather
 *      than with hand-tuned margins.
 *
 * Every helper that runs a simulation prints one TAP comment line ("# ...")
 * with the figures, so the logs under tests/out/ record what was measured.
 */
#ifndef BANDITD_TESTS_SUPPORT_STATTEST_H
#define BANDITD_TESTS_SUPPORT_STATTEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/sim.h"

/* --- binomial and normal tests ------------------------------------------- */

/* P(X ≥ k) for X ~ Binomial(n, p): the exact one-sided p-value of k
 * successes against "the rate is at most p". 1 when k = 0. */
double stattest_binom_sf(uint64_t k, uint64_t n, double p);

/* The smallest count k with P(X ≥ k | n, p) ≤ alpha: the test of "rate ≤ p"
 * at level alpha rejects from k successes on. n + 1 when no count rejects. */
uint64_t stattest_binom_critical(uint64_t n, double p, double alpha);

/* The fewest runs n such that the level-alpha test of "rate ≤ p0" rejects
 * with probability ≥ power when the true rate is p1 > p0 (exact binomial,
 * searched upward; the exact power is not monotone in n, so the answer is
 * the first n that reaches it). 0 if p1 ≤ p0 or nothing up to 10^6 works. */
uint64_t stattest_binom_runs(double p0, double p1, double alpha, double power);

/* Wilson score interval for k successes in n at confidence conf (0.95). */
void stattest_wilson(uint64_t k, uint64_t n, double conf, double *lo, double *hi);

/* One-sided p-value of "mean a < mean b" from two independent samples
 * (Welch's z: (b − a) / sqrt(sd_a²/n_a + sd_b²/n_b), normal tail). Fine for
 * the hundreds of runs a simulation gives; small p means a is smaller. */
double stattest_mean_less_p(double mean_a, double sd_a, uint64_t n_a, double mean_b, double sd_b,
                            uint64_t n_b);

/* One-sided p-value of "rate a < rate b" from k_a of n_a and k_b of n_b
 * (two-proportion z-test with pooled variance, normal tail). Use it to show
 * a policy errs less than a baseline; small p means a is smaller. */
double stattest_prop_less_p(uint64_t k_a, uint64_t n_a, uint64_t k_b, uint64_t n_b);

/* Fail the current cmocka test unless k successes in n runs are consistent
 * with a rate ≤ p at level alpha; print the count, the rate, its 95% Wilson
 * interval and the p-value as a TAP comment either way. */
void stattest_assert_rate_at_most(const char *label, uint64_t k, uint64_t n, double p,
                                  double alpha);

/* Fail the current cmocka test unless k_a of n_a is significantly below
 * k_b of n_b (stattest_prop_less_p < alpha); print both rates and the
 * p-value as a TAP comment either way. */
void stattest_assert_fewer(const char *label, uint64_t k_a, uint64_t n_a, uint64_t k_b,
                           uint64_t n_b, double alpha);

/* --- running simulations from a test --------------------------------------- */

/* Parse a problem given as JSON text; fails the test with the parser's
 * message on error. Free with sim_problem_free. */
void stattest_problem(const char *json_text, struct sim_problem *p);

/* Options for `runs` runs of the named policy with its default parameters,
 * seed `seed`, the policy's own stop rule, no delay, no budget, and
 * STATTEST_THREADS threads (environment; default 2). Fails the test if the
 * policy does not exist. */
struct sim_options stattest_options(const char *policy, uint64_t runs, uint64_t seed);

/* Set one parameter from text, validated as bandit-sim --param does; fails
 * the test on an unknown name or bad value. */
void stattest_param(struct sim_options *o, const char *name, const char *value);

/* sim_run, failing the test with its message on error, then one TAP comment
 * with the label, the error rate and interval, and the pulls. */
void stattest_run(const char *label, const struct sim_problem *p, const struct sim_options *o,
                  struct sim_result *r);

/* "Error rate ≤ δ" for one policy and stop rule on the problem `json` (δ
 * included), under the anytime and the fixed-n bound, with rewards back at
 * once and 100 pulls late: four one-sided exact binomial tests at level
 * alpha, each on stattest_binom_runs(δ, 2δ, alpha, 0.9) runs from `seed`
 * (a policy twice as wrong as promised fails nine times in ten). Every run
 * must also stop by its rule (none capped). name labels the instance. */
void stattest_check_delta(const char *name, const char *json, const char *policy,
                          enum engine_stop_rule stop, uint64_t seed, double alpha);

/* Fail the test unless the bandit-sim result object j has every key of the
 * contract (docs/contract.md, simulator output: runs, policy, params, the error
 * rates, the pulls, mean_completed, wall_s); what names j in the message. */
void stattest_assert_result_keys(const json_t *j, const char *what);

#endif
