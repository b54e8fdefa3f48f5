/*
 * test_stat_uniform.c — uniform allocation with the δᶜ stop (the A/B
 * baseline every other policy is compared with) keeps the fixed-confidence
 * promise: error rate ≤ δ on the instances of test_stat_adapt.c, under the
 * anytime and the fixed-n bound, with rewards back at once and 100 pulls
 * late. One-sided exact binomial test at level 0.01; runs chosen so that a
 * true error rate of 2δ fails with probability 0.9 (stattest_binom_runs).
 *
 * With uniform allocation the stop is the only adaptive part, so this test
 * isolates the stop rule (δᶜ at the optimised cutoff, checked after every
 * reward) from any policy's sampling.
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
    const char *json;
    uint64_t seed;
};

static struct instance best3 = {"bernoulli(0.2,0.5,0.8) d=0.05",
                                "{\"delta\": 0.05, \"arms\": [0.2, 0.5, 0.8]}", 301};
static struct instance top2of5 = {"top-2 of bernoulli(0.1,0.3,0.5,0.7,0.9) d=0.1",
                                  "{\"m\": 2, \"delta\": 0.1, \"arms\": [0.1, 0.3, 0.5, 0.7, 0.9]}",
                                  302};
static struct instance close3 = {"close bernoulli(0.1,0.4,0.5) d=0.2",
                                 "{\"delta\": 0.2, \"arms\": [0.1, 0.4, 0.5]}", 303};
/* Gaussian arms clipped to [0, 1] (the true means are the clipped ones). */
static struct instance gauss3 = {
    "clipped gaussian(0.3,0.5,0.7; sd 0.5) d=0.1",
    "{\"delta\": 0.1, \"arms\": [{\"dist\": \"gaussian\", \"mean\": 0.3, \"sd\": 0.5},"
    " {\"dist\": \"gaussian\", \"mean\": 0.5, \"sd\": 0.5},"
    " {\"dist\": \"gaussian\", \"mean\": 0.7, \"sd\": 0.5}]}",
    304};

static void test_uniform_delta(void **state)
{
    const struct instance *in = *state;
    stattest_check_delta(in->name, in->json, "uniform", ENGINE_RULE_DELTA_C, in->seed, ALPHA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_uniform_delta, &best3),
        cmocka_unit_test_prestate(test_uniform_delta, &top2of5),
        cmocka_unit_test_prestate(test_uniform_delta, &close3),
        cmocka_unit_test_prestate(test_uniform_delta, &gauss3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
