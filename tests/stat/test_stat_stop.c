/*
 * test_stat_stop.c — the two proven stop rules keep "error rate ≤ δ" at
 * δ = 0.01, 0.05 and 0.1: the GLR rule (the four products of the KT and
 * normal-mixture e-values, mixed per null point, stats_glr_stop) and δᶜ with the
 * anytime bounds (the one-sided normal mixture for Hoeffding), each with
 * rewards back at once and 100 pulls late. test_stat_fc.c and
 * test_stat_uniform.c cover the policies' own rules at δ ≥ 0.05; this one
 * isolates the engine's rules (uniform sampling: the stop is the only
 * adaptive part) down to δ = 0.01, on instances where the rules are least
 * conservative:
 *   - two Bernoulli arms 0.2 apart at 1/2, where the mixture e-value
 *     (sub-Gaussian, variance 1/4: exact for p = 1/2) carries the evidence;
 *   - two close arms far from 1/2 (0.15 against 0.05), where the KT one does;
 *   - two non-Bernoulli arms (uniform on [0.2, 1] and [0, 0.8]): the KT
 *     e-value is a supermartingale for any [0, 1] rewards, not only 0/1;
 *   - three arms (0.6, 0.45, 0.45): the GLR rule's leader product, which
 *     applies to one best arm of K ≥ 3 with ε = 0.
 * Each case is a one-sided exact binomial test at level 0.01 on the runs
 * that make a true rate of 2δ fail it with probability 0.9
 * (stattest_binom_runs); every run must stop by the rule. Seeds fixed.
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
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

struct instance {
    const char *name;
    const char *arms; /* JSON array */
    uint64_t seed;
    int glr_only; /* δᶜ skipped: see INSTANCES */
};

static const struct instance INSTANCES[] = {
    {"bernoulli(0.6,0.4)", "[0.6, 0.4]", 401, 0},
    /* δᶜ's anytime Hoeffding bound does not depend on where the means
     * are, so this instance would test nothing new for it, at 60% of the
     * test's time (2200 pulls a run at δ = 0.01) */
    {"bernoulli(0.15,0.05)", "[0.15, 0.05]", 402, 1},
    {"uniform[0.2,1] vs uniform[0,0.8]",
     "[{\"dist\": \"uniform\", \"low\": 0.2, \"high\": 1.0},"
     " {\"dist\": \"uniform\", \"low\": 0.0, \"high\": 0.8}]",
     403, 0},
    /* three arms, one best: the GLR rule's leader product (ε = 0, K ≥ 3),
     * no union over the challengers; two equal challengers, so either can
     * be the one whose evidence is short */
    {"bernoulli(0.6,0.45,0.45)", "[0.6, 0.45, 0.45]", 404, 1},
};

static void check(const struct instance *in, enum engine_stop_rule rule, double delta)
{
    char json[512], label[200];
    snprintf(json, sizeof json, "{\"delta\": %g, \"arms\": %s}", delta, in->arms);
    struct sim_problem p;
    stattest_problem(json, &p);
    uint64_t runs = stattest_binom_runs(delta, 2 * delta, ALPHA, 0.9);
    assert_true(runs > 0);
    const uint64_t delays[] = {0, 100};
    for (size_t d = 0; d < LEN(delays); d++) {
        struct sim_options o = stattest_options("uniform", runs, in->seed + 10 * d);
        o.stop = rule;
        o.delay = delays[d];
        struct sim_result r;
        snprintf(label, sizeof label, "%s %s d=%g, delay %llu",
                 rule == ENGINE_RULE_GLR ? "glr" : "delta_c", in->name, delta,
                 (unsigned long long)delays[d]);
        stattest_run(label, &p, &o, &r);
        stattest_assert_rate_at_most(label, r.errors, r.runs, delta, ALPHA);
        assert_int_equal(r.capped, 0);
        assert_int_equal(r.stopped, r.runs);
    }
    sim_problem_free(&p);
}

static void test_rule(void **state)
{
    enum engine_stop_rule rule = *(enum engine_stop_rule *)*state;
    const double deltas[] = {0.1, 0.05, 0.01};
    for (size_t i = 0; i < LEN(INSTANCES); i++)
        for (size_t j = 0; j < LEN(deltas); j++)
            if (rule == ENGINE_RULE_GLR || !INSTANCES[i].glr_only)
                check(&INSTANCES[i], rule, deltas[j]);
}

int main(void)
{
    static enum engine_stop_rule glr = ENGINE_RULE_GLR, dc = ENGINE_RULE_DELTA_C;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_rule, &glr),
        cmocka_unit_test_prestate(test_rule, &dc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
