/*
 * test_sim.c — unit tests for the simulator library (sim/).
 *
 * Problem files (the contract's example, defaults and shorthands, and every
 * error path, each naming its field), exact means of clipped distributions
 * (by hand and against draws), the evaluation of returned sets (ties, ε,
 * regret), and the run loop: determinism for a seed, independence from the
 * thread count, the delay FIFO, budgets and caps, and the rescaling of
 * rewards and ε to [0, 1].
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
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "base/jsonv.h"
#include "exp/config.h"
#include "policies/describe.h"
#include "sim/sim.h"
#include "tests/support/stattest.h"

#define CLOSE(got, want, tol)                                                                      \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        if (!(fabs(g_ - w_) <= (tol)))                                                             \
            fail_msg("line %d: %s = %.17g, want %.17g (tol %g)", __LINE__, #got, g_, w_,           \
                     (double)(tol));                                                               \
    } while (0)

static const char contract_example[] =
    "{\"m\": 1, \"epsilon\": 0.0, \"delta\": 0.05, \"budget\": 700,"
    " \"bandits\": [{\"arms\": [{\"dist\": \"bernoulli\", \"p\": 0.5},"
    "  {\"dist\": \"rademacher\", \"x\": 0.45, \"y\": 0.45},"
    "  {\"dist\": \"uniform\", \"low\": -1.2, \"high\": 2.2},"
    "  {\"dist\": \"gaussian\", \"mean\": 0.3, \"sd\": 1.0},"
    "  {\"dist\": \"beta\", \"a\": 2, \"b\": 5}]}],"
    " \"reward\": {\"min\": 0, \"max\": 1}, \"target_arm\": null, \"tau\": null,"
    " \"bound\": \"anytime\"}";

/* Parse text; returns the parser's status and leaves its message in err. */
static int parse_text(const char *text, struct sim_problem *p, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (j == NULL)
        fail_msg("test JSON does not parse: %s: %s", text, je.text);
    int rc = sim_problem_parse(j, p, err, errlen);
    json_decref(j);
    return rc;
}

static void test_parse_contract_example(void **state)
{
    (void)state;
    struct sim_problem p;
    char err[256] = "";
    assert_int_equal(parse_text(contract_example, &p, err, sizeof err), 0);
    assert_int_equal(p.m, 1);
    assert_int_equal(p.n_bandits, 1);
    assert_int_equal(p.n_arms[0], 5);
    assert_int_equal(p.budget, 700);
    assert_int_equal(p.target_arm, -1);
    assert_true(isnan(p.tau));
    assert_int_equal(p.bound, STATS_BOUND_ANYTIME);
    CLOSE(p.delta, 0.05, 0);
    CLOSE(p.reward_min, 0, 0);
    CLOSE(p.reward_max, 1, 0);
    assert_int_equal(p.arms[0][0].dist, SIM_BERNOULLI);
    assert_int_equal(p.arms[0][1].dist, SIM_RADEMACHER);
    assert_int_equal(p.arms[0][2].dist, SIM_UNIFORM);
    assert_int_equal(p.arms[0][3].dist, SIM_GAUSSIAN);
    assert_int_equal(p.arms[0][4].dist, SIM_BETA);
    CLOSE(p.arms[0][0].mean, 0.5, 1e-15);
    CLOSE(p.arms[0][1].mean, 0.45, 1e-15);
    /* U(−1.2, 2.2) on [0, 1]: P(X<0) = P(X>1) = 1.2/3.4, ∫₀¹ x dx / 3.4 =
     * 0.5/3.4, so the mean is (1.2 + 0.5)/3.4 = 0.5. */
    CLOSE(p.arms[0][2].mean, 0.5, 1e-15);
    /* N(0.3, 1) on [0, 1]: α = −0.3, β = 0.7:
     * Q(0.7) + 0.3 (Φ(0.7) − Φ(−0.3)) + φ(−0.3) − φ(0.7). */
    double want = gsl_cdf_ugaussian_Q(0.7) +
                  0.3 * (gsl_cdf_ugaussian_P(0.7) - gsl_cdf_ugaussian_P(-0.3)) +
                  gsl_ran_ugaussian_pdf(-0.3) - gsl_ran_ugaussian_pdf(0.7);
    CLOSE(p.arms[0][3].mean, want, 1e-14);
    CLOSE(p.arms[0][4].mean, 2.0 / 7.0, 1e-14); /* Beta(2,5) inside [0, 1]: a/(a+b) */
    assert_true(p.clipped);                     /* the gaussian and the uniform leave [0, 1] */
    sim_problem_free(&p);
}

static void test_parse_defaults_and_shorthands(void **state)
{
    (void)state;
    struct sim_problem p;
    char err[256] = "";
    assert_int_equal(parse_text("{\"arms\": [0.2, 0.5, {\"dist\": \"bernoulli\", \"p\": 0.8, "
                                "\"id\": \"c\"}]}",
                                &p, err, sizeof err),
                     0);
    assert_int_equal(p.m, 1);
    CLOSE(p.epsilon, 0, 0);
    CLOSE(p.delta, 0.05, 0);
    assert_int_equal(p.budget, 0);
    CLOSE(p.reward_min, 0, 0);
    CLOSE(p.reward_max, 1, 0);
    assert_int_equal(p.target_arm, -1);
    assert_true(isnan(p.tau));
    assert_int_equal(p.bound, STATS_BOUND_ANYTIME);
    assert_int_equal(p.n_bandits, 1);
    assert_int_equal(p.n_arms[0], 3);
    CLOSE(p.arms[0][0].mean, 0.2, 0);
    CLOSE(p.arms[0][2].mean, 0.8, 0);
    assert_false(p.clipped);
    sim_problem_free(&p);

    assert_int_equal(parse_text("{\"m\": 2, \"epsilon\": 0.5, \"delta\": 0.1, \"budget\": 1e3,"
                                " \"reward\": {\"min\": -1, \"max\": 3}, \"target_arm\": 1,"
                                " \"tau\": 0.9, \"bound\": \"fixed\","
                                " \"bandits\": [{\"id\": \"a\", \"arms\": [0, 1, 0.5]},"
                                "               {\"arms\": [0.1, 0.2, 0.3, 0.4]}]}",
                                &p, err, sizeof err),
                     0);
    assert_int_equal(p.m, 2);
    CLOSE(p.epsilon, 0.5, 0);
    assert_int_equal(p.budget, 1000);
    assert_int_equal(p.target_arm, 1);
    CLOSE(p.tau, 0.9, 0);
    assert_int_equal(p.bound, STATS_BOUND_FIXED);
    assert_int_equal(p.n_bandits, 2);
    assert_int_equal(p.n_arms[1], 4);
    assert_false(p.clipped); /* Bernoulli atoms 0 and 1 lie in [−1, 3] */
    sim_problem_free(&p);
}

struct bad_case {
    const char *json;
    const char *want; /* the message starts with this (the field's name) */
};

static const struct bad_case bad_cases[] = {
    {"[1, 2]", "problem: must be a JSON object"},
    {"{\"arms\": [0.1, 0.2], \"colour\": 1}", "colour: unknown field"},
    {"{\"arms\": [0.1, 0.2], \"reward\": 1}", "reward: must be an object"},
    {"{\"arms\": [0.1, 0.2], \"reward\": {\"min\": 0, \"max\": 1, \"mid\": 0}}",
     "reward.mid: unknown field"},
    {"{\"arms\": [0.1, 0.2], \"reward\": {\"max\": 1}}", "reward.min: required"},
    {"{\"arms\": [0.1, 0.2], \"reward\": {\"min\": \"0\", \"max\": 1}}", "reward.min: required"},
    {"{\"arms\": [0.1, 0.2], \"reward\": {\"min\": 0}}", "reward.max: required"},
    {"{\"arms\": [0.1, 0.2], \"reward\": {\"min\": 1, \"max\": 1}}", "reward.max: must be greater"},
    {"{\"arms\": [0.1, 0.2], \"m\": 0}", "m: must be an integer >= 1"},
    {"{\"arms\": [0.1, 0.2], \"m\": 1.5}", "m: must be an integer >= 1"},
    {"{\"arms\": [0.1, 0.2], \"m\": \"1\"}", "m: must be an integer >= 1"},
    {"{\"arms\": [0.1, 0.2], \"m\": 2}", "m: must be less than the number of arms"},
    {"{\"arms\": [0.1, 0.2], \"epsilon\": -0.1}", "epsilon: must be in [0, reward range"},
    {"{\"arms\": [0.1, 0.2], \"epsilon\": 1}", "epsilon: must be in [0, reward range"},
    {"{\"arms\": [0.1, 0.2], \"delta\": 0}", "delta: must be in (0, 1)"},
    {"{\"arms\": [0.1, 0.2], \"delta\": 1}", "delta: must be in (0, 1)"},
    {"{\"arms\": [0.1, 0.2], \"delta\": null}", "delta: must be in (0, 1)"},
    {"{\"arms\": [0.1, 0.2], \"budget\": 0}", "budget: must be null or a positive integer"},
    {"{\"arms\": [0.1, 0.2], \"budget\": -5}", "budget: must be null or a positive integer"},
    {"{\"arms\": [0.1, 0.2], \"budget\": 10.5}", "budget: must be null or a positive integer"},
    {"{\"arms\": [0.1, 0.2], \"tau\": 1}", "tau: must be null or in (0, 1)"},
    {"{\"arms\": [0.1, 0.2], \"tau\": \"high\"}", "tau: must be null or in (0, 1)"},
    {"{\"arms\": [0.1, 0.2], \"bound\": \"loose\"}", "bound: must be \"anytime\" or \"fixed\""},
    {"{\"arms\": [0.1, 0.2], \"bound\": 1}", "bound: must be \"anytime\" or \"fixed\""},
    {"{\"arms\": [0.1, 0.2], \"target_arm\": -1}", "target_arm: must be null or an arm index"},
    {"{\"arms\": [0.1, 0.2], \"target_arm\": 2}", "target_arm: no arm 2 in bandits[0]"},
    {"{\"arms\": [0.1, 0.2], \"bandits\": [{\"arms\": [0.1, 0.2]}]}",
     "arms: give either bandits or arms"},
    {"{\"m\": 1}", "bandits: required"},
    {"{\"bandits\": {}}", "bandits: must be an array of 1 to"},
    {"{\"bandits\": []}", "bandits: must be an array of 1 to"},
    {"{\"bandits\": [[0.1, 0.2]]}", "bandits[0]: must be an object"},
    {"{\"bandits\": [{\"arms\": [0.1, 0.2], \"size\": 2}]}", "bandits[0].size: unknown field"},
    {"{\"bandits\": [{\"arms\": [0.1, 0.2], \"id\": 7}]}", "bandits[0].id: must be a string"},
    {"{\"bandits\": [{\"arms\": [0.1, 0.2]}, {\"id\": \"b\"}]}", "bandits[1].arms: required"},
    {"{\"bandits\": [{\"arms\": 0.5}]}", "bandits[0].arms: must be an array of arms"},
    {"{\"bandits\": [{\"arms\": [0.5]}]}", "bandits[0].arms: need 2 to"},
    {"{\"arms\": [0.1, \"x\"]}", "arms[1]: must be an object"},
    {"{\"arms\": [0.1, 1.5]}", "arms[1]: a bare number is a Bernoulli p"},
    {"{\"arms\": [0.1, {\"p\": 0.5}]}", "arms[1].dist: required"},
    {"{\"arms\": [0.1, {\"dist\": \"poisson\", \"lambda\": 1}]}",
     "arms[1].dist: unknown distribution \"poisson\""},
    {"{\"arms\": [0.1, {\"dist\": \"bernoulli\", \"p\": 0.5, \"q\": 1}]}",
     "arms[1].q: unknown field"},
    {"{\"arms\": [0.1, {\"dist\": \"bernoulli\", \"p\": 0.5, \"id\": []}]}",
     "arms[1].id: must be a string"},
    {"{\"arms\": [0.1, {\"dist\": \"bernoulli\"}]}", "arms[1].p: required"},
    {"{\"arms\": [0.1, {\"dist\": \"bernoulli\", \"p\": \"half\"}]}", "arms[1].p: required"},
    {"{\"arms\": [0.1, {\"dist\": \"bernoulli\", \"p\": 1.01}]}", "arms[1].p: must be in [0, 1]"},
    {"{\"arms\": [0.1, {\"dist\": \"rademacher\", \"x\": 0}]}", "arms[1].y: required"},
    {"{\"arms\": [0.1, {\"dist\": \"uniform\", \"low\": 0.5, \"high\": 0.5}]}",
     "arms[1].high: must be greater than low"},
    {"{\"arms\": [0.1, {\"dist\": \"gaussian\", \"mean\": 0.5, \"sd\": 0}]}",
     "arms[1].sd: must be positive"},
    {"{\"arms\": [0.1, {\"dist\": \"beta\", \"a\": 0, \"b\": 1}]}", "arms[1].a: must be positive"},
    {"{\"arms\": [0.1, {\"dist\": \"beta\", \"a\": 1, \"b\": -2}]}", "arms[1].b: must be positive"},
    {"{\"bandits\": [{\"arms\": [0.1, 0.2, {\"dist\": \"beta\", \"a\": 1}]}]}",
     "bandits[0].arms[2].b: required"},
    {"{\"m\": 2, \"bandits\": [{\"arms\": [0.1, 0.2, 0.3]}, {\"arms\": [0.1, 0.2]}]}",
     "m: must be less than the number of arms (2 in bandits[1])"},
};

static void test_parse_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        struct sim_problem p;
        char err[256] = "";
        if (parse_text(bad_cases[i].json, &p, err, sizeof err) == 0) {
            sim_problem_free(&p);
            fail_msg("accepted %s", bad_cases[i].json);
        }
        if (strncmp(err, bad_cases[i].want, strlen(bad_cases[i].want)) != 0)
            fail_msg("%s\n  said: %s\n  want: %s...", bad_cases[i].json, err, bad_cases[i].want);
        assert_null(p.arms); /* nothing left to free after a failure */
    }
}

static void test_problem_load(void **state)
{
    (void)state;
    char path[] = "/tmp/test_sim_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("{\"arms\": [0.1, 0.2],\n \"delta\": 0.1,\n}", f); /* trailing comma */
    assert_int_equal(fclose(f), 0);
    struct sim_problem p;
    char err[256] = "";
    assert_int_equal(sim_problem_load(path, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, path)); /* names the file, with line and column */
    assert_non_null(strstr(err, ":3:"));

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"arms\": [0.1, 0.2], \"delta\": 0.1, \"delta\": 0.2}", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(sim_problem_load(path, &p, err, sizeof err), -1); /* duplicate key */

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"arms\": [0.1, 0.2], \"delta\": 0.1}", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(sim_problem_load(path, &p, err, sizeof err), 0);
    CLOSE(p.delta, 0.1, 0);
    sim_problem_free(&p);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(sim_problem_load(path, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
}

/* Clipped means: hand values, then the exact formula against draws. */
static void test_clipped_means_hand(void **state)
{
    (void)state;
    struct sim_arm b = {.dist = SIM_BERNOULLI, .p1 = 0.3};
    CLOSE(sim_arm_clipped_mean(&b, 0.2, 0.8), 0.7 * 0.2 + 0.3 * 0.8, 1e-15);
    CLOSE(sim_arm_clipped_mean(&b, 0, 1), 0.3, 1e-15);
    assert_true(sim_arm_can_clip(&b, 0.2, 0.8));
    assert_false(sim_arm_can_clip(&b, 0, 1));
    struct sim_arm b1 = {.dist = SIM_BERNOULLI, .p1 = 1.0}; /* only the atom 1 occurs */
    assert_false(sim_arm_can_clip(&b1, 0.5, 1));
    CLOSE(sim_arm_clipped_mean(&b1, 0.5, 1), 1.0, 0);

    struct sim_arm r = {.dist = SIM_RADEMACHER, .p1 = -2, .p2 = 3};
    CLOSE(sim_arm_clipped_mean(&r, -1, 1), 0.0, 1e-15);
    CLOSE(sim_arm_clipped_mean(&r, -5, 5), 0.5, 1e-15);
    assert_true(sim_arm_can_clip(&r, -1, 1));
    assert_false(sim_arm_can_clip(&r, -2, 3));

    struct sim_arm u = {.dist = SIM_UNIFORM, .p1 = 0.2, .p2 = 0.6};
    CLOSE(sim_arm_clipped_mean(&u, 0, 1), 0.4, 1e-15);
    assert_false(sim_arm_can_clip(&u, 0, 1));
    /* U(0, 2) on [0, 1]: half the mass at 1, the rest mean 1/2: 0.75. */
    struct sim_arm u2 = {.dist = SIM_UNIFORM, .p1 = 0, .p2 = 2};
    CLOSE(sim_arm_clipped_mean(&u2, 0, 1), 0.75, 1e-15);
    struct sim_arm u3 = {.dist = SIM_UNIFORM, .p1 = 3, .p2 = 4}; /* all above */
    CLOSE(sim_arm_clipped_mean(&u3, 0, 1), 1.0, 1e-15);

    /* N(0.5, σ) on [0, 1] is symmetric about 0.5. */
    struct sim_arm g = {.dist = SIM_GAUSSIAN, .p1 = 0.5, .p2 = 2.0};
    CLOSE(sim_arm_clipped_mean(&g, 0, 1), 0.5, 1e-14);
    assert_true(sim_arm_can_clip(&g, -1e9, 1e9));
    /* Far from the range: everything clipped to one end. */
    struct sim_arm g2 = {.dist = SIM_GAUSSIAN, .p1 = 50, .p2 = 1};
    CLOSE(sim_arm_clipped_mean(&g2, 0, 1), 1.0, 1e-14);
    struct sim_arm g3 = {.dist = SIM_GAUSSIAN, .p1 = -50, .p2 = 1};
    CLOSE(sim_arm_clipped_mean(&g3, 0, 1), 0.0, 1e-14);

    /* Beta(1, 1) is U(0, 1): on [0.25, 0.5] the mean is
     * 0.25·0.25 + 0.5·0.5 + ∫_{0.25}^{0.5} x dx = 0.0625 + 0.25 + 0.09375. */
    struct sim_arm be = {.dist = SIM_BETA, .p1 = 1, .p2 = 1};
    CLOSE(sim_arm_clipped_mean(&be, 0.25, 0.5), 0.40625, 1e-14);
    assert_true(sim_arm_can_clip(&be, 0.25, 0.5));
    assert_false(sim_arm_can_clip(&be, 0, 1));
}

static double draw_ref(const struct sim_arm *a, gsl_rng *r)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return gsl_ran_bernoulli(r, a->p1);
    case SIM_RADEMACHER:
        return gsl_rng_uniform(r) < 0.5 ? a->p1 : a->p2;
    case SIM_UNIFORM:
        return gsl_ran_flat(r, a->p1, a->p2);
    case SIM_GAUSSIAN:
        return gsl_ran_gaussian(r, a->p2) + a->p1;
    case SIM_BETA:
        return gsl_ran_beta(r, a->p1, a->p2);
    }
    return NAN;
}

/* The exact clipped mean must sit within 5 standard errors of the average
 * of n clipped draws (a false alarm once in ~3.5 million runs; the seed is
 * fixed). */
static void test_clipped_means_draws(void **state)
{
    (void)state;
    const struct sim_arm arms[] = {
        {.dist = SIM_GAUSSIAN, .p1 = 0.3, .p2 = 1.0},  {.dist = SIM_GAUSSIAN, .p1 = 1.7, .p2 = 0.4},
        {.dist = SIM_UNIFORM, .p1 = -0.5, .p2 = 0.7},  {.dist = SIM_BETA, .p1 = 2, .p2 = 5},
        {.dist = SIM_BETA, .p1 = 0.5, .p2 = 0.5},      {.dist = SIM_BERNOULLI, .p1 = 0.35},
        {.dist = SIM_RADEMACHER, .p1 = -1, .p2 = 0.6},
    };
    const double ranges[][2] = {{0, 1}, {0.1, 0.3}, {-0.2, 2}};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 20240601);
    const int n = 100000;
    for (size_t a = 0; a < sizeof arms / sizeof arms[0]; a++) {
        for (size_t q = 0; q < sizeof ranges / sizeof ranges[0]; q++) {
            double lo = ranges[q][0], hi = ranges[q][1], s = 0, s2 = 0;
            for (int i = 0; i < n; i++) {
                double x = draw_ref(&arms[a], r);
                x = x < lo ? lo : x > hi ? hi : x;
                s += x;
                s2 += x * x;
            }
            double mean = s / n, var = (s2 - n * mean * mean) / (n - 1);
            double se = sqrt(var / n);
            double exact = sim_arm_clipped_mean(&arms[a], lo, hi);
            if (!(fabs(mean - exact) <= 5 * se + 1e-12))
                fail_msg("arm %zu on [%g, %g]: exact %.6f, draws %.6f (se %.2g)", a, lo, hi, exact,
                         mean, se);
        }
    }
    gsl_rng_free(r);
}

/* A set's verdicts: exact top m (ties), (ε, m), regret. */
static void test_evaluate_sets(void **state)
{
    (void)state;
    struct sim_problem p;
    char err[256];
    int w, pw, rw;
    /* Ties: (0.8, 0.5, 0.5, 0.1), m = 2: {0, 1} and {0, 2} are both right. */
    assert_int_equal(parse_text("{\"m\": 2, \"arms\": [0.8, 0.5, 0.5, 0.1]}", &p, err, sizeof err),
                     0);
    const unsigned char s01[] = {1, 1, 0, 0}, s02[] = {1, 0, 1, 0}, s12[] = {0, 1, 1, 0},
                        s03[] = {1, 0, 0, 1}, s0[] = {1, 0, 0, 0}, s012[] = {1, 1, 1, 0};
    sim_evaluate_set(&p, 0, s01, &w, &pw, &rw);
    assert_int_equal(w + pw + rw, 0);
    sim_evaluate_set(&p, 0, s02, &w, &pw, &rw);
    assert_int_equal(w + pw + rw, 0);
    sim_evaluate_set(&p, 0, s12, &w, &pw, &rw); /* same count, misses the 0.8 arm */
    assert_int_equal(w, 1);
    assert_int_equal(pw, 0); /* 0.5 ≥ μ_(2) − 0 */
    assert_int_equal(rw, 1);
    sim_evaluate_set(&p, 0, s03, &w, &pw, &rw);
    assert_int_equal(w && pw && rw, 1);
    sim_evaluate_set(&p, 0, s0, &w, &pw, &rw); /* wrong size */
    assert_int_equal(w && pw && rw, 1);
    sim_evaluate_set(&p, 0, s012, &w, &pw, &rw);
    assert_int_equal(w && pw && rw, 1);
    sim_problem_free(&p);

    /* ε = 0.05, (0.9, 0.8, 0.75, 0.1), m = 2: {0, 2} is not the top 2, but
     * 0.75 = μ_(2) − ε exactly (PAC-correct) and the regret is
     * (1.7 − 1.65)/2 = 0.025 ≤ ε. {1, 2}: regret (1.7 − 1.55)/2 = 0.075 > ε
     * though both arms are (ε, m)-optimal. */
    assert_int_equal(parse_text("{\"m\": 2, \"epsilon\": 0.05, \"arms\": [0.9, 0.8, 0.75, 0.1]}",
                                &p, err, sizeof err),
                     0);
    const unsigned char t02[] = {1, 0, 1, 0}, t12[] = {0, 1, 1, 0}, t03[] = {1, 0, 0, 1};
    sim_evaluate_set(&p, 0, t02, &w, &pw, &rw);
    assert_int_equal(w, 1);
    assert_int_equal(pw, 0);
    assert_int_equal(rw, 0);
    sim_evaluate_set(&p, 0, t12, &w, &pw, &rw);
    assert_int_equal(w, 1);
    assert_int_equal(pw, 0);
    assert_int_equal(rw, 1);
    sim_evaluate_set(&p, 0, t03, &w, &pw, &rw);
    assert_int_equal(pw, 1);
    sim_problem_free(&p);

    /* Means in reward units, with clipping: on [0, 10] a Bernoulli has mean
     * p and ε = 0.5 is in those units. */
    assert_int_equal(parse_text("{\"epsilon\": 0.5, \"reward\": {\"min\": 0, \"max\": 10},"
                                " \"arms\": [{\"dist\": \"uniform\", \"low\": 0, \"high\": 4},"
                                "            {\"dist\": \"uniform\", \"low\": 0, \"high\": 3}]}",
                                &p, err, sizeof err),
                     0);
    const unsigned char u1[] = {0, 1};
    sim_evaluate_set(&p, 0, u1, &w, &pw, &rw); /* 1.5 ≥ 2 − 0.5 */
    assert_int_equal(w, 1);
    assert_int_equal(pw, 0);
    sim_problem_free(&p);
}

static struct sim_options opts(const char *policy, uint64_t runs, uint64_t seed, unsigned threads)
{
    struct sim_options o = stattest_options(policy, runs, seed);
    o.threads = threads;
    return o;
}

static void run_ok(const struct sim_problem *p, const struct sim_options *o, struct sim_result *r)
{
    char err[256];
    if (sim_run(p, o, r, err, sizeof err) != 0)
        fail_msg("sim_run: %s", err);
}

/* Everything but the wall time. */
static void assert_same_result(const struct sim_result *a, const struct sim_result *b)
{
    assert_int_equal(a->runs, b->runs);
    assert_int_equal(a->errors, b->errors);
    assert_int_equal(a->pac_errors, b->pac_errors);
    assert_int_equal(a->regret_errors, b->regret_errors);
    assert_int_equal(a->stopped, b->stopped);
    assert_int_equal(a->capped, b->capped);
    assert_int_equal(a->total_pulls, b->total_pulls);
    assert_memory_equal(&a->mean_bandit_error_rate, &b->mean_bandit_error_rate, sizeof(double));
    assert_memory_equal(&a->mean_pulls, &b->mean_pulls, sizeof(double));
    assert_memory_equal(&a->median_pulls, &b->median_pulls, sizeof(double));
    assert_memory_equal(&a->p90_pulls, &b->p90_pulls, sizeof(double));
    assert_memory_equal(&a->sd_pulls, &b->sd_pulls, sizeof(double));
    assert_memory_equal(&a->mean_completed, &b->mean_completed, sizeof(double));
}

static const char small_problem[] = "{\"delta\": 0.1, \"arms\": [0.2, 0.5, 0.8]}";

/* A seed fixes the results; the thread count does not change them; run i
 * of sim_run is sim_run_one(i). */
static void test_deterministic_and_thread_independent(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem(small_problem, &p);
    struct sim_options o1 = opts("adapt", 24, 7, 1), o2 = opts("adapt", 24, 7, 2),
                       o3 = opts("adapt", 24, 7, 3);
    struct sim_result r1, r1b, r2, r3;
    run_ok(&p, &o1, &r1);
    run_ok(&p, &o1, &r1b);
    run_ok(&p, &o2, &r2);
    run_ok(&p, &o3, &r3);
    assert_same_result(&r1, &r1b);
    assert_same_result(&r1, &r2);
    assert_same_result(&r1, &r3);

    uint64_t pulls = 0, errors = 0;
    for (uint64_t i = 0; i < o1.runs; i++) {
        struct sim_run_result rr;
        char err[256];
        assert_int_equal(sim_run_one(&p, &o1, i, &rr, err, sizeof err), 0);
        pulls += rr.pulls;
        errors += (uint64_t)rr.error;
        assert_int_equal(rr.rewarded, rr.pulls);
    }
    assert_int_equal(pulls, r1.total_pulls);
    assert_int_equal(errors, r1.errors);

    /* Another seed gives other runs (24 runs with identical pull counts
     * under another seed would be a seeding bug). */
    struct sim_options o4 = opts("adapt", 24, 8, 2);
    struct sim_result r4;
    run_ok(&p, &o4, &r4);
    assert_int_not_equal(r4.total_pulls, r1.total_pulls);
    sim_problem_free(&p);
}

/* With delay D every reward still reaches the engine, and none before D
 * further pulls: adapt cannot stop (its default, the proven GLR, needs data
 * on every arm, as δᶜ did) before the first rewards arrive, so every run
 * hands out more than D pulls. */
static void test_delay_fifo(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem(small_problem, &p);
    const uint64_t delays[] = {0, 1, 7, 300};
    for (size_t d = 0; d < sizeof delays / sizeof delays[0]; d++) {
        struct sim_options o = opts("adapt", 6, 3, 1);
        o.delay = delays[d];
        for (uint64_t i = 0; i < o.runs; i++) {
            struct sim_run_result rr;
            char err[256];
            assert_int_equal(sim_run_one(&p, &o, i, &rr, err, sizeof err), 0);
            assert_int_equal(rr.rewarded, rr.pulls);
            assert_true(rr.stopped);
            assert_true(rr.pulls > delays[d]);
        }
    }
    /* Uniform with a budget below the delay: no reward arrives during the
     * run, all of them in the final flush. */
    struct sim_options o = opts("uniform", 3, 3, 1);
    o.budget = 30;
    o.delay = 100;
    struct sim_run_result rr;
    char err[256];
    assert_int_equal(sim_run_one(&p, &o, 0, &rr, err, sizeof err), 0);
    assert_int_equal(rr.pulls, 30);
    assert_int_equal(rr.rewarded, 30);
    sim_problem_free(&p);
}

/* Assignment blocks (--block B): the policy leases B pulls at once, every
 * one of them is served (the last block whole, past the stop), so a run
 * that stops on its rule hands out a multiple of B, all rewarded; a block
 * of 1 is no block at all (the same runs, pull for pull); a fixed budget is
 * still spent exactly (the last lease is cut at it). */
static void test_blocks(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem(small_problem, &p);
    const uint64_t blocks[] = {2, 10, 100};
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
        struct sim_options o = opts("adapt", 6, 3, 1);
        o.block = blocks[k];
        for (uint64_t i = 0; i < o.runs; i++) {
            struct sim_run_result rr;
            char err[256];
            assert_int_equal(sim_run_one(&p, &o, i, &rr, err, sizeof err), 0);
            assert_true(rr.stopped);
            assert_int_equal(rr.pulls % blocks[k], 0);
            assert_int_equal(rr.rewarded, rr.pulls);
        }
    }
    for (uint64_t i = 0; i < 6; i++) {
        struct sim_options o = opts("adapt", 6, 3, 1);
        struct sim_run_result a, b;
        char err[256];
        assert_int_equal(sim_run_one(&p, &o, i, &a, err, sizeof err), 0);
        o.block = 1;
        assert_int_equal(sim_run_one(&p, &o, i, &b, err, sizeof err), 0);
        assert_int_equal(a.pulls, b.pulls);
        assert_int_equal(a.error, b.error);
        assert_int_equal(a.rewarded, b.rewarded);
    }
    struct sim_options o = opts("uniform", 3, 3, 1);
    o.budget = 30;
    o.block = 7;
    struct sim_run_result rr;
    char err[256];
    assert_int_equal(sim_run_one(&p, &o, 0, &rr, err, sizeof err), 0);
    assert_int_equal(rr.pulls, 30);
    assert_int_equal(rr.rewarded, 30);
    o = opts("adapt", 2, 1, 1);
    o.block = SIM_MAX_BLOCK + 1;
    struct sim_result r;
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "block"));
    sim_problem_free(&p);
}

/* A fixed-budget run hands out exactly its budget (the problem's, or the
 * option's, which wins); for a fixed-confidence policy the budget is a cap
 * and a run that reaches it is not "stopped". */
static void test_budget(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"budget\": 700, \"arms\": [0.2, 0.5, 0.8, 0.4]}", &p);
    struct sim_options o = opts("uniform", 5, 1, 2);
    struct sim_result r;
    run_ok(&p, &o, &r);
    CLOSE(r.mean_pulls, 700, 0);
    CLOSE(r.p90_pulls, 700, 0);
    assert_int_equal(r.total_pulls, 5 * 700);
    assert_int_equal(r.stopped, 0);
    o.budget = 37;
    o.delay = 5;
    run_ok(&p, &o, &r);
    assert_int_equal(r.total_pulls, 5 * 37);
    sim_problem_free(&p);

    /* adapt capped at 40 pulls on a problem that needs hundreds. */
    stattest_problem("{\"budget\": 40, \"delta\": 0.01, \"arms\": [0.4, 0.5, 0.6]}", &p);
    o = opts("adapt", 4, 1, 1);
    run_ok(&p, &o, &r);
    assert_int_equal(r.total_pulls, 4 * 40);
    assert_int_equal(r.stopped, 0);
    CLOSE(r.stopped_rate, 0, 0);
    sim_problem_free(&p);
}

/* The safety cap ends runs that never stop (two equal arms, ε = 0). */
static void test_safety_cap(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"arms\": [0.5, 0.5]}", &p);
    struct sim_options o = opts("adapt", 3, 1, 1);
    o.max_pulls = 60;
    struct sim_result r;
    run_ok(&p, &o, &r);
    assert_int_equal(r.capped, 3);
    assert_int_equal(r.stopped, 0);
    assert_int_equal(r.total_pulls, 3 * 60);
    assert_int_equal(r.errors, 0); /* either arm is the (tied) best */
    sim_problem_free(&p);
}

/* Rewards and ε reach the engine in [0, 1] units: a problem on [−10, 10]
 * with two-point arms at 0 and 10 (rescaled: 0.5 and 1) and ε = 1 (0.05
 * rescaled) runs exactly like the same problem written in [0, 1]. Without
 * the rescaling the engine would clip 10 to 1 and 0 to 0 and see other
 * means; without ε's, another stop. */
static void test_rescaling(void **state)
{
    (void)state;
    struct sim_problem a, b;
    stattest_problem("{\"epsilon\": 1, \"reward\": {\"min\": -10, \"max\": 10}, \"arms\": ["
                     "{\"dist\": \"rademacher\", \"x\": 0, \"y\": 10},"
                     "{\"dist\": \"rademacher\", \"x\": 0, \"y\": 0},"
                     "{\"dist\": \"rademacher\", \"x\": -10, \"y\": 10}]}",
                     &a);
    stattest_problem("{\"epsilon\": 0.05, \"arms\": ["
                     "{\"dist\": \"rademacher\", \"x\": 0.5, \"y\": 1},"
                     "{\"dist\": \"rademacher\", \"x\": 0.5, \"y\": 0.5},"
                     "{\"dist\": \"rademacher\", \"x\": 0, \"y\": 1}]}",
                     &b);
    CLOSE(a.arms[0][0].mean, 5.0, 0); /* true means stay in reward units */
    struct sim_options o = opts("adapt", 8, 11, 2);
    struct sim_result ra, rb;
    run_ok(&a, &o, &ra);
    run_ok(&b, &o, &rb);
    assert_same_result(&ra, &rb);
    /* and ε matters: ε = 0.5 on [−10, 10] is 0.025 rescaled, another stop */
    b.epsilon = 0.025;
    run_ok(&b, &o, &rb);
    assert_int_not_equal(ra.total_pulls, rb.total_pulls);
    sim_problem_free(&a);
    sim_problem_free(&b);
}

/* Ties in true means are not errors; the completed count follows ρ̄. */
static void test_ties_and_completed(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"m\": 2, \"budget\": 1200, \"arms\": [0.8, 0.5, 0.5, 0.1]}", &p);
    struct sim_options o = opts("uniform", 20, 5, 2);
    struct sim_result r;
    run_ok(&p, &o, &r);
    /* 300 pulls per arm: the 0.1 arm beats a 0.5 arm with probability far
     * below 1e-20; the choice between the tied arms is never an error. */
    assert_int_equal(r.errors, 0);
    /* With two arms tied on the boundary ρ̄ reaches τ = 0.95 only when their
     * empirical means happen to lie 2.8 standard deviations apart (about
     * 0.5% of runs): far fewer than a quarter of the runs complete. */
    assert_true(r.mean_completed <= 0.25);
    sim_problem_free(&p);

    stattest_problem("{\"budget\": 1200, \"arms\": [0.9, 0.1, 0.1]}", &p);
    run_ok(&p, &o, &r);
    CLOSE(r.mean_completed, 1, 0); /* 400 pulls per arm: ρ̄ ≈ 1 */
    CLOSE(r.mean_bandit_error_rate, 0, 0);
    sim_problem_free(&p);
}

/* Several bandits: bandit_error is the fraction of wrong bandits. */
static void test_multi_bandit(void **state)
{
    (void)state;
    struct sim_problem p;
    /* 50 pulls per arm: bandit 1 (0.5 vs 0.45) is wrong in about a third of
     * the runs, bandit 0 (0.9 vs 0.1) practically never; so the mean bandit
     * error is half the error rate. */
    stattest_problem("{\"budget\": 200, \"bandits\": [{\"arms\": [0.9, 0.1]},"
                     "{\"arms\": [0.5, 0.45]}]}",
                     &p);
    struct sim_options o = opts("uniform", 40, 2, 2);
    struct sim_result r;
    run_ok(&p, &o, &r);
    assert_true(r.errors > 0);
    CLOSE(r.mean_bandit_error_rate, r.error_rate / 2, 1e-15);
    sim_problem_free(&p);
}

static void test_run_errors(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem(small_problem, &p);
    struct sim_result r;
    char err[256];
    struct sim_options o = opts("adapt", 0, 1, 1);
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "runs"));
    o = opts("adapt", 2, 1, SIM_MAX_THREADS + 1);
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "threads"));
    o = opts("adapt", 2, 1, 1);
    o.delay = SIM_MAX_DELAY + 1;
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "delay"));
    o = opts("adapt", 2, 1, 1);
    o.stop = ENGINE_RULE_POLICY; /* adapt has no rule of its own */
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "stop_rule"));
    /* An error from the policy's init, raised inside the worker threads. */
    o = opts("adapt", 5, 1, 2);
    stattest_param(&o, "cap", "1"); /* needs ε > 0 */
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "cap"));
    o = opts("uniform", 2, 1, 1);
    o.budget = 2; /* below the number of arms */
    assert_int_equal(sim_run(&p, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "budget"));
    sim_problem_free(&p);
}

static void test_result_json(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem(small_problem, &p);
    struct sim_options o = opts("adapt", 10, 1, 2);
    o.delay = 3;
    struct sim_result r;
    run_ok(&p, &o, &r);
    json_t *j = sim_result_json(&p, &o, &r);
    assert_non_null(j);
    stattest_assert_result_keys(j, "sim_result_json");
    assert_int_equal(json_integer_value(json_object_get(j, "runs")), 10);
    assert_string_equal(json_string_value(json_object_get(j, "policy")), "adapt");
    json_t *params = json_object_get(j, "params");
    assert_string_equal(json_string_value(json_object_get(params, "variant")), "adapt");
    assert_int_equal(json_integer_value(json_object_get(params, "cap")), 0);
    CLOSE(json_real_value(json_object_get(j, "mean_pulls")), r.mean_pulls, 0);
    assert_int_equal(json_integer_value(json_object_get(j, "delay")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "stop")), "default");
    assert_string_equal(json_string_value(json_object_get(j, "bound")), "anytime");
    assert_true(json_is_null(json_object_get(j, "budget")));
    json_t *ci = json_object_get(j, "error_rate_ci");
    assert_int_equal(json_array_size(ci), 2);
    double lo = json_real_value(json_array_get(ci, 0)), hi = json_real_value(json_array_get(ci, 1));
    assert_true(lo <= r.error_rate && r.error_rate <= hi);
    assert_true(json_is_boolean(json_object_get(j, "clipped")));
    json_decref(j);
    sim_problem_free(&p);
}

static void test_policies_json(void **state)
{
    (void)state;
    json_t *j = describe_policies();
    json_t *list = json_object_get(j, "policies");
    size_t n = 0;
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++)
        n++;
    assert_int_equal(json_array_size(list), n);
    size_t i;
    json_t *pol;
    int seen_adapt = 0;
    json_array_foreach(list, i, pol)
    {
        const char *name = json_string_value(json_object_get(pol, "name"));
        assert_non_null(name);
        assert_non_null(policy_find(name));
        assert_true(json_is_array(json_object_get(pol, "flags")));
        json_t *params = json_object_get(pol, "params");
        size_t k;
        json_t *spec;
        json_array_foreach(params, k, spec)
        {
            assert_non_null(json_string_value(json_object_get(spec, "name")));
            assert_non_null(json_string_value(json_object_get(spec, "type")));
            assert_non_null(json_object_get(spec, "default"));
            assert_non_null(json_string_value(json_object_get(spec, "doc")));
        }
        if (strcmp(name, "adapt") == 0) {
            seen_adapt = 1;
            json_t *v = json_array_get(params, 0);
            assert_string_equal(json_string_value(json_object_get(v, "name")), "variant");
            assert_string_equal(json_string_value(json_object_get(v, "default")), "adapt");
            assert_int_equal(json_array_size(json_object_get(v, "choices")), 4);
        }
    }
    assert_true(seen_adapt);
    json_t *stops = json_object_get(j, "stop_rules");
    assert_true(json_array_size(stops) >= 6);
    /* every rule says whether it has a proof: ρ̄ and the heuristic GLR do not */
    size_t ri;
    json_t *r;
    int seen = 0;
    json_array_foreach(stops, ri, r)
    {
        const char *rn = json_string_value(json_object_get(r, "name"));
        json_t *proven = json_object_get(r, "proven");
        if (strcmp(rn, "rho") == 0 || strcmp(rn, "glr-heuristic") == 0) {
            assert_true(json_is_false(proven));
            seen++;
        } else if (strcmp(rn, "glr") == 0 || strcmp(rn, "delta_c") == 0) {
            assert_true(json_is_true(proven));
            seen++;
        }
    }
    assert_int_equal(seen, 4);
    json_decref(j);
}

/* The one table of stop rules: each name finds its entry and each rule its
 * name; "default" and "policy" are two rules; --list-policies lists them all. */
static void test_stop_rule_names(void **state)
{
    (void)state;
    size_t n;
    const struct stop_rule_info *all = stop_rule_all(&n);
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(stop_rule_find(all[i].name), &all[i]);
        assert_string_equal(stop_rule_name(all[i].rule), all[i].name);
        assert_string_not_equal(stop_rule_proof_name(all[i].proof), "unknown");
    }
    assert_int_equal(stop_rule_find("default")->rule, ENGINE_RULE_DEFAULT);
    assert_int_equal(stop_rule_find("policy")->rule, ENGINE_RULE_POLICY);
    assert_null(stop_rule_find("deltac"));
    assert_null(stop_rule_find(NULL));
    char names[256];
    stop_rule_names(names, sizeof names);
    assert_string_equal(names,
                        "default, policy, delta_c, glr, glr-heuristic, rho, control or none");
    json_t *j = describe_policies();
    json_t *stops = json_object_get(j, "stop_rules");
    assert_int_equal(json_array_size(stops), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(stops, i), "name")),
                            all[i].name);
    json_decref(j);
}

/* One goal rule (policies/goal.h) for the daemon's create body and the
 * simulator's problem file: the same members refused with the same message
 * (the field is goal.X in one, X in the other), the same accepted; the
 * reward range and tau likewise. */
static void test_goal_same_rules(void **state)
{
    (void)state;
    static const char *const goals[] = {
        "\"m\": 0", "\"m\": 1.5", "\"m\": \"1\"", "\"m\": 5000", "\"epsilon\": -0.1",
        "\"epsilon\": 1", "\"epsilon\": null", "\"delta\": 0", "\"delta\": 1",
        "\"delta\": \"0.05\"", "\"budget\": 0", "\"budget\": 10.5", "\"budget\": -5",
        "\"budget\": 9007199254740993",
        /* accepted by both */
        "\"m\": 1.0", "\"budget\": 1e3", "\"budget\": null", "\"epsilon\": 0.5", "\"delta\": 0.2"};
    struct exp_limits lim = {.max_experiments = 1,
                             .max_bandits = 4,
                             .max_arms = 8,
                             .max_batch = 1,
                             .max_count = 1,
                             .max_pending = 1,
                             .history_points = 1};
    for (size_t i = 0; i < sizeof goals / sizeof goals[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"arms\": [\"a\", \"b\", \"c\"], \"policy\": {\"name\": \"uniform\"}, "
                 "\"goal\": {%s}}",
                 goals[i]);
        json_t *body = json_loads(text, 0, NULL);
        assert_non_null(body);
        json_t *errors = json_array();
        struct exp_config cfg;
        memset(&cfg, 0, sizeof cfg);
        int rc = exp_config_parse(body, &lim, &cfg, errors);
        exp_config_free(&cfg);
        char api[256] = "";
        if (rc != 0)
            jv_first_error(errors, NULL, api, sizeof api);
        json_decref(errors);
        json_decref(body);

        snprintf(text, sizeof text, "{\"arms\": [0.1, 0.2, 0.3], %s}", goals[i]);
        json_t *prob = json_loads(text, 0, NULL);
        assert_non_null(prob);
        struct sim_problem p;
        char sim[256] = "";
        int src = sim_problem_parse(prob, &p, sim, sizeof sim);
        if (src == 0)
            sim_problem_free(&p);
        json_decref(prob);

        if ((rc == 0) != (src == 0))
            fail_msg("goal {%s}: the daemon says \"%s\", the simulator \"%s\"", goals[i], api, sim);
        if (rc != 0) {
            assert_int_equal(strncmp(api, "goal.", 5), 0);
            assert_string_equal(api + 5, sim);
        }
    }
    /* The reward range and tau: the same member at top level in both. */
    static const char *const others[] = {
        "\"tau\": 1.5",
        "\"tau\": 0",
        "\"tau\": \"x\"",
        "\"reward\": {\"min\": 1, \"max\": 1}",
        "\"reward\": {\"min\": -1e308, \"max\": 1e308}", /* a range of infinity */
        "\"tau\": 0.9",
        "\"tau\": null",
        "\"reward\": {\"min\": -2, \"max\": 3}"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"arms\": [\"a\", \"b\", \"c\"], \"policy\": {\"name\": \"uniform\"}, %s}",
                 others[i]);
        json_t *body = json_loads(text, 0, NULL);
        json_t *errors = json_array();
        struct exp_config cfg;
        memset(&cfg, 0, sizeof cfg);
        int rc = exp_config_parse(body, &lim, &cfg, errors);
        exp_config_free(&cfg);
        char api[256] = "";
        if (rc != 0)
            jv_first_error(errors, NULL, api, sizeof api);
        json_decref(errors);
        json_decref(body);
        snprintf(text, sizeof text, "{\"arms\": [0.1, 0.2, 0.3], %s}", others[i]);
        json_t *prob = json_loads(text, 0, NULL);
        struct sim_problem p;
        char sim[256] = "";
        int src = sim_problem_parse(prob, &p, sim, sizeof sim);
        if (src == 0)
            sim_problem_free(&p);
        json_decref(prob);
        if ((rc == 0) != (src == 0) || strcmp(api, sim) != 0)
            fail_msg("{%s}: the daemon says \"%s\", the simulator \"%s\"", others[i], api, sim);
    }
}

/* Wilson intervals against values computed by hand (z = 1.96):
 * k = 0, n = 10: [0, z²/(n + z²)] = [0, 0.27753];
 * k = 5, n = 10: 0.5 ± 0.26340 → [0.23659, 0.76341]. */
static void test_wilson_and_binomial(void **state)
{
    (void)state;
    double lo, hi;
    sim_wilson(0, 10, 1.959963984540054, &lo, &hi);
    CLOSE(lo, 0, 0);
    CLOSE(hi, 0.2775328, 1e-6);
    sim_wilson(5, 10, 1.959963984540054, &lo, &hi);
    CLOSE(lo, 0.2365931, 1e-6);
    CLOSE(hi, 0.7634069, 1e-6);
    stattest_wilson(5, 10, 0.95, &lo, &hi);
    CLOSE(lo, 0.2365931, 1e-6);
    /* P(X ≥ 1 | n = 10, p = 0.1) = 1 − 0.9^10. */
    CLOSE(stattest_binom_sf(1, 10, 0.1), 1 - pow(0.9, 10), 1e-12);
    CLOSE(stattest_binom_sf(0, 10, 0.1), 1, 0);
    CLOSE(stattest_binom_sf(11, 10, 0.1), 0, 0);
    /* Critical count: P(X ≥ k) ≤ α first at k, not at k − 1. */
    uint64_t k = stattest_binom_critical(300, 0.05, 0.01);
    assert_true(stattest_binom_sf(k, 300, 0.05) <= 0.01);
    assert_true(stattest_binom_sf(k - 1, 300, 0.05) > 0.01);
    /* Runs for power 0.9 against twice the rate. */
    uint64_t n = stattest_binom_runs(0.05, 0.1, 0.01, 0.9);
    uint64_t kc = stattest_binom_critical(n, 0.05, 0.01);
    assert_true(stattest_binom_sf(kc, n, 0.1) >= 0.9);
    assert_true(n > 200 && n < 600);
    assert_true(stattest_mean_less_p(100, 10, 50, 120, 10, 50) < 1e-6);
    assert_true(stattest_mean_less_p(120, 10, 50, 100, 10, 50) > 0.99);
    /* 10/100 vs 30/100: pooled p = 0.2, se = sqrt(0.16 · 0.02) = 0.05657,
     * z = 3.536, one-sided p = 2.03e-4. */
    CLOSE(stattest_prop_less_p(10, 100, 30, 100), 2.03e-4, 0.01e-4);
    assert_true(stattest_prop_less_p(30, 100, 10, 100) > 0.99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_contract_example),
        cmocka_unit_test(test_parse_defaults_and_shorthands),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_goal_same_rules),
        cmocka_unit_test(test_problem_load),
        cmocka_unit_test(test_clipped_means_hand),
        cmocka_unit_test(test_clipped_means_draws),
        cmocka_unit_test(test_evaluate_sets),
        cmocka_unit_test(test_deterministic_and_thread_independent),
        cmocka_unit_test(test_delay_fifo),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_safety_cap),
        cmocka_unit_test(test_rescaling),
        cmocka_unit_test(test_ties_and_completed),
        cmocka_unit_test(test_multi_bandit),
        cmocka_unit_test(test_run_errors),
        cmocka_unit_test(test_result_json),
        cmocka_unit_test(test_policies_json),
        cmocka_unit_test(test_stop_rule_names),
        cmocka_unit_test(test_wilson_and_binomial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
