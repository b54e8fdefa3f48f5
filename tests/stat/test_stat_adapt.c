/*
 * test_stat_adapt.c — ADAPT (Kalyanakrishnan & Stone 2010, §4) keeps its
 * fixed-confidence promise and earns its keep, measured by simulation.
 *
 * 1. Error rate ≤ δ on ADAPT's default stop (the proven GLR since issue 11;
 *    the bound moves ADAPT's sampling, not this stop): on three instances
 *    (best arm of three, top 2 of 5, a close pair beside a bad arm), under
 *    the anytime and the fixed-n bound,
 *    with rewards back at once and 100 pulls late. Each case is a one-sided
 *    exact binomial test at level 0.01 of "error rate ≤ δ"; the number of
 *    runs is the fewest that make a true rate of 2δ fail it with probability
 *    0.9 (stattest_binom_runs), so a policy twice as wrong as promised is
 *    caught nine times in ten.
 * 2. Sample cost: on an instance with one clearly bad arm, ADAPT needs fewer
 *    pulls than uniform allocation with the same stop (δᶜ ≤ δ): Welch's z on
 *    the mean pulls, one-sided at level 0.01.
 *
 * Every run also has to stop by its rule (no cap is set, the safety cap
 * must not be hit). Seeds are fixed; results do not depend on the threads.
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

struct instance {
    const char *name;
    const char *json; /* the problem, δ included */
    uint64_t seed;
};

static struct instance best3 = {"bernoulli(0.2,0.5,0.8) d=0.05",
                                "{\"delta\": 0.05, \"arms\": [0.2, 0.5, 0.8]}", 101};
static struct instance top2of5 = {"top-2 of bernoulli(0.1,0.3,0.5,0.7,0.9) d=0.1",
                                  "{\"m\": 2, \"delta\": 0.1, \"arms\": [0.1, 0.3, 0.5, 0.7, 0.9]}",
                                  102};
static struct instance close3 = {"close bernoulli(0.1,0.4,0.5) d=0.2",
                                 "{\"delta\": 0.2, \"arms\": [0.1, 0.4, 0.5]}", 103};

static void test_adapt_delta(void **state)
{
    const struct instance *in = *state;
    stattest_check_delta(in->name, in->json, "adapt", ENGINE_RULE_DEFAULT, in->seed, ALPHA);
}

/* One clearly bad arm (0.1) beside a close pair: uniform allocation spends a
 * third of its pulls on it, ADAPT stops sampling it once its δᶜ_i is small. */
static void test_adapt_cheaper_than_uniform(void **state)
{
    (void)state;
    struct sim_problem p;
    stattest_problem("{\"delta\": 0.1, \"bound\": \"fixed\", \"arms\": [0.1, 0.5, 0.6]}", &p);
    const uint64_t delays[] = {0, 100};
    for (size_t d = 0; d < 2; d++) {
        struct sim_options oa = stattest_options("adapt", 100, 201);
        struct sim_options ou = stattest_options("uniform", 100, 201);
        oa.stop = ou.stop = ENGINE_RULE_DELTA_C;
        oa.delay = ou.delay = delays[d];
        struct sim_result ra, ru;
        char label[96];
        snprintf(label, sizeof label, "bad arm (0.1,0.5,0.6), delay %llu",
                 (unsigned long long)delays[d]);
        stattest_run(label, &p, &oa, &ra);
        stattest_run(label, &p, &ou, &ru);
        double pv = stattest_mean_less_p(ra.mean_pulls, ra.sd_pulls, ra.runs, ru.mean_pulls,
                                         ru.sd_pulls, ru.runs);
        print_message("# %s: adapt %.1f vs uniform %.1f mean pulls, p = %.3g\n", label,
                      ra.mean_pulls, ru.mean_pulls, pv);
        if (!(pv < ALPHA))
            fail_msg("%s: adapt (%.1f pulls) is not significantly cheaper than uniform (%.1f), "
                     "p = %.3g",
                     label, ra.mean_pulls, ru.mean_pulls, pv);
    }
    sim_problem_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_adapt_delta, &best3),
        cmocka_unit_test_prestate(test_adapt_delta, &top2of5),
        cmocka_unit_test_prestate(test_adapt_delta, &close3),
        cmocka_unit_test(test_adapt_cheaper_than_uniform),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
