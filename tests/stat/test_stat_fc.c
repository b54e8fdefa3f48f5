/*
 * test_stat_fc.c — the fixed-confidence policies of docs/policy-formulas.md (direct,
 * incremental, halving, adaptive-topk, lucb1, kl-lucb, ttts,
 * track-and-stop, eb-tc, t3c) keep their promise, measured by simulation (sim/sim.h):
 * on Bernoulli instances, with rewards back at once and 100 pulls late, the
 * error rate is not significantly above δ. "Error" is what each paper
 * promises against: a returned arm not (ε, m)-optimal (K&S, LUCB, and the
 * exact best arm for the GLR-stopped samplers at ε = 0), aggregate regret
 * above ε for adaptive-topk (Chen et al. 2017).
 *
 * Each case is a one-sided exact binomial test of "error rate ≤ δ" at level
 * 0.01, with the fewest runs that make a true rate of 2δ fail it with
 * probability 0.9 (stattest_binom_runs). Instances are chosen so that
 * stopping early shows: an arm just outside the ε-band for the ε-policies,
 * a gap of 0.1 for the best-arm policies (a Track-and-Stop whose GLR
 * threshold is 20 times too small errs in ~20% of runs there at δ = 0.1 and
 * fails this test). Costly cases use δ = 0.2, which needs fewer and shorter
 * runs for the same power. Every run must stop by its rule.
 *
 * Seeds are fixed; results do not depend on the thread count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/support/stattest.h"

#define ALPHA 0.01

enum verdict { PAC, REGRET };

struct fc_case {
    const char *policy;
    const char *name; /* for the log */
    const char *json; /* the problem: arms, m, ε, δ */
    enum verdict v;
    uint64_t seed;
};

/* ε = 0.2: for m = 1 the arm at 0.49 is just outside [0.5, 0.7]; for m = 2
 * (μ_(2) = 0.6) the arm at 0.38 is just outside [0.4, ...]. */
#define BAND5 "[0.49, 0.7, 0.38, 0.6, 0.55]"
/* ε = 0.3: for m = 1 the arm at 0.39 is just outside [0.4, 0.7]; for m = 2,
 * 0.2 is outside [0.3, ...]. */
#define WIDE5 "[0.39, 0.7, 0.2, 0.6, 0.55]"
/* Best arm 0.7 against 0.6, among four. */
#define GAP4 "[0.6, 0.7, 0.5, 0.4]"
/* Top 2 of five, boundary gap 0.1. */
#define TOP5 "[0.5, 0.8, 0.4, 0.7, 0.6]"

static const struct fc_case CASES[] = {
    {"direct", "band m=1 e=.2 d=.1", "{\"epsilon\": 0.2, \"delta\": 0.1, \"arms\": " BAND5 "}", PAC,
     301},
    {"direct", "band m=2 e=.2 d=.1",
     "{\"m\": 2, \"epsilon\": 0.2, \"delta\": 0.1, \"arms\": " BAND5 "}", PAC, 302},
    {"halving", "wide m=1 e=.3 d=.2", "{\"epsilon\": 0.3, \"delta\": 0.2, \"arms\": " WIDE5 "}",
     PAC, 303},
    {"halving", "wide m=2 e=.3 d=.2",
     "{\"m\": 2, \"epsilon\": 0.3, \"delta\": 0.2, \"arms\": " WIDE5 "}", PAC, 304},
    {"incremental", "wide m=1 e=.3 d=.2", "{\"epsilon\": 0.3, \"delta\": 0.2, \"arms\": " WIDE5 "}",
     PAC, 305},
    {"incremental", "wide m=2 e=.3 d=.2",
     "{\"m\": 2, \"epsilon\": 0.3, \"delta\": 0.2, \"arms\": " WIDE5 "}", PAC, 306},
    {"adaptive-topk", "band m=1 e=.1 d=.1",
     "{\"epsilon\": 0.1, \"delta\": 0.1, \"arms\": " BAND5 "}", REGRET, 307},
    {"adaptive-topk", "top5 m=2 e=.05 d=.1",
     "{\"m\": 2, \"epsilon\": 0.05, \"delta\": 0.1, \"arms\": " TOP5 "}", REGRET, 308},
    {"lucb1", "gap4 d=.1", "{\"delta\": 0.1, \"arms\": " GAP4 "}", PAC, 309},
    {"lucb1", "top5 m=2 e=.05 d=.2",
     "{\"m\": 2, \"epsilon\": 0.05, \"delta\": 0.2, \"arms\": " TOP5 "}", PAC, 310},
    {"kl-lucb", "gap4 d=.1", "{\"delta\": 0.1, \"arms\": " GAP4 "}", PAC, 311},
    {"kl-lucb", "top5 m=2 e=.05 d=.2",
     "{\"m\": 2, \"epsilon\": 0.05, \"delta\": 0.2, \"arms\": " TOP5 "}", PAC, 312},
    {"ttts", "gap4 d=.1", "{\"delta\": 0.1, \"arms\": " GAP4 "}", PAC, 313},
    {"track-and-stop", "gap4 d=.1", "{\"delta\": 0.1, \"arms\": " GAP4 "}", PAC, 314},
    {"eb-tc", "gap4 d=.1", "{\"delta\": 0.1, \"arms\": " GAP4 "}", PAC, 315},
    {"t3c", "gap4 d=.1", "{\"delta\": 0.1, \"arms\": " GAP4 "}", PAC, 316},
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static void run_case(const struct fc_case *c)
{
    struct sim_problem p;
    stattest_problem(c->json, &p);
    uint64_t runs = stattest_binom_runs(p.delta, 2 * p.delta, ALPHA, 0.9);
    assert_true(runs > 0);
    const uint64_t delays[] = {0, 100};
    for (size_t d = 0; d < LEN(delays); d++) {
        struct sim_options o = stattest_options(c->policy, runs, c->seed);
        o.delay = delays[d];
        struct sim_result r;
        char label[160];
        snprintf(label, sizeof label, "%s %s, delay %llu", c->policy, c->name,
                 (unsigned long long)delays[d]);
        stattest_run(label, &p, &o, &r);
        stattest_assert_rate_at_most(label, c->v == PAC ? r.pac_errors : r.regret_errors, r.runs,
                                     p.delta, ALPHA);
        assert_int_equal(r.capped, 0);
        assert_int_equal(r.stopped, r.runs);
    }
    sim_problem_free(&p);
}

static void run_policy(const char *policy)
{
    for (size_t i = 0; i < LEN(CASES); i++)
        if (strcmp(CASES[i].policy, policy) == 0)
            run_case(&CASES[i]);
}

static void test_policy(void **state)
{
    run_policy(*state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_policy, (void *)"direct"),
        cmocka_unit_test_prestate(test_policy, (void *)"halving"),
        cmocka_unit_test_prestate(test_policy, (void *)"incremental"),
        cmocka_unit_test_prestate(test_policy, (void *)"adaptive-topk"),
        cmocka_unit_test_prestate(test_policy, (void *)"lucb1"),
        cmocka_unit_test_prestate(test_policy, (void *)"kl-lucb"),
        cmocka_unit_test_prestate(test_policy, (void *)"ttts"),
        cmocka_unit_test_prestate(test_policy, (void *)"track-and-stop"),
        cmocka_unit_test_prestate(test_policy, (void *)"eb-tc"),
        cmocka_unit_test_prestate(test_policy, (void *)"t3c"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
