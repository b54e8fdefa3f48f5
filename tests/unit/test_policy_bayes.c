/*
 * test_policy_bayes.c — unit tests of the Bayesian policies: gcp (Bachman &
 * Precup 2013 Alg. 2 and 3), gcp-targeted (Alg. 4) and thompson.
 *
 * The order statistics and the completion cost against hand values and a
 * sort; Alg. 2's use of pending pulls and its allocation shape (eq. 6: pulls
 * ∝ 1/γ², so the arms at the top-m boundary get the most); the MAP
 * recommendation and its random tie-break; multi-bandit selection never
 * touching a done bandit, with bandits of different sizes; Alg. 4's fallback;
 * Thompson sampling's concentration on the best arm; parameter checks.
 * Statistical comparisons with the paper live in tests/stat/test_stat_bayes.c.
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

#include <gsl/gsl_rng.h>

#include "policies/engine.h"
#include "policies/gcp.h"
#include "tests/support/drive.h"

static const struct policy_ops *pol(const char *name)
{
    const struct policy_ops *p = policy_find(name);
    if (p == NULL)
        fail_msg("policy %s is not registered", name);
    return p;
}

static struct engine_config cfg_of(const char *name, size_t nb, const size_t *k, unsigned m)
{
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = nb;
    c.n_arms = k;
    c.m = m;
    c.delta = 0.05;
    c.tau = NAN;
    c.target_arm = -1;
    c.seed = 3;
    c.policy = pol(name);
    policy_params_defaults(c.policy, &c.params);
    return c;
}

static void set_param(struct engine_config *c, const char *name, const char *value)
{
    int i = policy_param_index(c->policy, name);
    assert_true(i >= 0);
    char err[128];
    if (policy_param_parse(&c->policy->params[i], value, &c->params.values[i], err, sizeof err))
        fail_msg("%s=%s: %s", name, value, err);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* ---- order statistics and eq. 12 ----------------------------------------------- */

static void test_gap_location(void **state)
{
    (void)state;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 1);
    static const size_t ks[] = {2, 3, 5, 10, 33, 100, 1000};
    double w[1000], s[1000];
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        size_t k = ks[t];
        for (int rep = 0; rep < 20; rep++) {
            unsigned m = 1 + (unsigned)gsl_rng_uniform_int(g, k - 1);
            int ties = rep % 2; /* coarse grid: many equal values */
            for (size_t i = 0; i < k; i++) {
                double x = gsl_rng_uniform(g);
                w[i] = s[i] = ties ? floor(x * 4) / 4 : x;
            }
            qsort(s, k, sizeof *s, cmp_desc);
            double want = (s[m - 1] + s[m]) / 2;
            double got = gcp_gap_location(w, k, m);
            if (got != want)
                fail_msg("k=%zu m=%u ties=%d: %.17g, want %.17g", k, m, ties, got, want);
            /* w is a permutation of the input */
            qsort(w, k, sizeof *w, cmp_desc);
            assert_memory_equal(w, s, k * sizeof *w);
        }
    }
    gsl_rng_free(g);
}

/* A gcp state for a hand-made context. */
static struct gcp *state_for(size_t k, unsigned m, gsl_rng *rng, struct stats_arm *arms,
                             struct policy_ctx *ctx, size_t *na, struct stats_arm **rows,
                             unsigned char *done)
{
    for (size_t i = 0; i < k; i++)
        stats_arm_init(&arms[i], 1, 1);
    *na = k;
    rows[0] = arms;
    done[0] = 0;
    memset(ctx, 0, sizeof *ctx);
    ctx->n_bandits = 1;
    ctx->n_arms = na;
    ctx->arms = rows;
    ctx->bandit_done = done;
    ctx->m = m;
    ctx->delta = 0.05;
    ctx->tau = 0.95;
    ctx->target_arm = -1;
    ctx->rng = rng;
    struct gcp *s = NULL;
    char err[64];
    assert_int_equal(gcp_new(&s, ctx, GCP_BANDITS_COST, 0, err, sizeof err), 0);
    return s;
}

static void test_cost_hand(void **state)
{
    (void)state;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    struct stats_arm arms[3];
    struct stats_arm *rows[1];
    struct policy_ctx ctx;
    size_t na;
    unsigned char done[1];
    struct gcp *s = state_for(3, 1, g, arms, &ctx, &na, rows, done);
    /* θ̂ = (0.6, 0.4), γ̂ = 0.5: per arm σ² = .24, σ = .48989795, γ = .1,
     * sqrt(.24 + 16/3 · .1) = sqrt(.77333333) = .87939373,
     * (.48989795 + .87939373)² / .01 = 1.8749597 / .01 = 187.49597; two arms. */
    s->theta[0] = 0.6;
    s->theta[1] = 0.4;
    double c = gcp_cost(s, 2, 0.5);
    assert_true(fabs(c - 374.99194049497095) < 1e-9);
    /* θ̂ = (0.9, 0.6, 0.3), m = 2: γ̂ = .45, gaps .45, .15, .15. */
    s->theta[2] = 0.3;
    s->theta[0] = 0.9;
    s->theta[1] = 0.6;
    assert_true(fabs(gcp_cost(s, 3, 0.45) - 213.87337276315685) < 1e-9);
    /* A sampled gap of 0 makes the bandit infinitely costly. */
    assert_true(isinf(gcp_cost(s, 3, 0.6)));
    /* Costlier when the gaps shrink. */
    s->theta[0] = 0.55;
    s->theta[1] = 0.45;
    assert_true(gcp_cost(s, 2, 0.5) > c);
    gcp_fini(s);
    gsl_rng_free(g);
}

/* ---- Alg. 2 ---------------------------------------------------------------------- */

/* Pending pulls count in T_j: with no reward back yet, the first K
 * assignments cover the K arms once each (an arm with T_j = 0 scores 0).
 * Were pending pulls ignored, every arm would score 0 every time and the
 * first 8 picks would be a permutation with probability 8!/8^8 = 0.0024. */
static void test_pending_counted(void **state)
{
    (void)state;
    size_t k[] = {8};
    const char *const names[] = {"gcp", "gcp-targeted"};
    for (size_t n = 0; n < 2; n++)
        for (unsigned m = 1; m <= 3; m += 2)
            for (uint64_t seed = 1; seed <= 20; seed++) {
                struct engine_config c = cfg_of(names[n], 1, k, m);
                c.seed = seed;
                c.target_arm = n == 1 ? 0 : -1;
                struct engine *e = tengine_create(&c);
                unsigned seen = 0;
                for (int i = 0; i < 8; i++) {
                    struct engine_pull p;
                    engine_assign(e, -1, &p);
                    assert_false(p.exploit);
                    seen |= 1u << p.arm;
                }
                assert_int_equal(seen, 0xff);
                engine_free(e);
            }
}

/* Eq. 6: the static allocation gives arm j pulls ∝ 1/γ_j²; posterior
 * sampling on eq. 7 tracks it, so the arms next to the top-m boundary get
 * the most pulls and the far ones the fewest. */
static void test_allocation_shape(void **state)
{
    (void)state;
    size_t k[] = {6};
    const double p[] = {0.9, 0.6, 0.55, 0.45, 0.4, 0.1}; /* γ = .4 .1 .05 .05 .1 .4 */
    struct engine_config c = cfg_of("gcp", 1, k, 3);
    c.stop_rule = ENGINE_RULE_NONE;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 2);
    for (int i = 0; i < 6000; i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        engine_reward(e, 0, pl.arm, gsl_rng_uniform(env) < p[pl.arm]);
    }
    const struct stats_arm *a = engine_arms(e, 0);
    print_message("# gcp pulls at m=3: %llu %llu %llu %llu %llu %llu\n", (unsigned long long)a[0].n,
                  (unsigned long long)a[1].n, (unsigned long long)a[2].n,
                  (unsigned long long)a[3].n, (unsigned long long)a[4].n,
                  (unsigned long long)a[5].n);
    assert_true(a[2].n > a[1].n && a[1].n > a[0].n);
    assert_true(a[3].n > a[4].n && a[4].n > a[5].n);
    /* and the recommendation is the true top 3 */
    unsigned char high[6];
    struct engine_bandit_status st;
    engine_bandit_status(e, 0, high, &st);
    assert_true(high[0] && high[1] && high[2] && !high[3] && !high[4] && !high[5]);
    gsl_rng_free(env);
    engine_free(e);
}

/* ---- recommendation --------------------------------------------------------------- */

static void test_recommend_map(void **state)
{
    (void)state;
    size_t k[] = {3};
    struct engine_config c = cfg_of("gcp", 1, k, 1);
    struct engine *e = tengine_create(&c);
    /* arm 0: 1 of 1 (mean 1, posterior mean 2/3); arm 1: 9 of 10 (mean .9,
     * posterior 10/12); arm 2: 0 of 5. ρ̄ speaks of the MAP set {1}. */
    engine_observe(e, 0, 0, 1);
    for (int i = 0; i < 10; i++)
        engine_observe(e, 0, 1, i < 9);
    for (int i = 0; i < 5; i++)
        engine_observe(e, 0, 2, 0);
    unsigned char high[3];
    struct engine_bandit_status st;
    engine_bandit_status(e, 0, high, &st);
    assert_true(!high[0] && high[1] && !high[2]);
    engine_free(e);

    /* Ties (no data): exactly m arms, each arm chosen under some seed. */
    size_t k4[] = {4};
    unsigned chosen = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        c = cfg_of("gcp", 1, k4, 2);
        c.seed = seed;
        e = tengine_create(&c);
        unsigned char h[4];
        engine_bandit_status(e, 0, h, &st);
        assert_int_equal(h[0] + h[1] + h[2] + h[3], 2);
        /* stable between calls */
        unsigned char h2[4];
        engine_bandit_status(e, 0, h2, &st);
        assert_memory_equal(h, h2, 4);
        for (int i = 0; i < 4; i++)
            chosen |= (unsigned)h[i] << i;
        engine_free(e);
    }
    assert_int_equal(chosen, 0xf);
}

/* ---- many bandits ------------------------------------------------------------------ */

/* Bandits of 2, 5 and 3 arms; bandit 0 is settled quickly (deterministic
 * rewards), after which no pull goes there; the others keep being served
 * (the engine aborts on a pick out of scope or in a done bandit). */
static void test_multi_bandits(void **state)
{
    (void)state;
    size_t k[] = {2, 5, 3};
    const char *const names[] = {"gcp", "gcp-targeted"};
    for (size_t n = 0; n < 2; n++) {
        struct engine_config c = cfg_of(names[n], 3, k, 1);
        c.target_arm = n == 1 ? 1 : -1;
        struct engine *e = tengine_create(&c);
        gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(env, 8);
        uint64_t per[3] = {0, 0, 0}, after = 0;
        for (int i = 0; i < 3000; i++) {
            struct engine_pull p;
            engine_assign(e, -1, &p);
            assert_false(p.exploit);
            per[p.bandit]++;
            if (engine_bandit_done(e, 0))
                after += p.bandit == 0;
            double r = p.bandit == 0 ? (p.arm == 1) : gsl_rng_uniform(env) < 0.5;
            engine_reward(e, p.bandit, p.arm, r);
        }
        assert_true(engine_bandit_done(e, 0));
        assert_true(after == 0);
        /* (gcp-targeted leans to bandit 2: 3 arms, so the target is best
         * in more of its samples and its sampled cost is lower) */
        assert_true(per[1] > 100 && per[2] > 100);
        gsl_rng_free(env);
        engine_free(e);
    }
}

/* Under another stop rule the engine's verdict decides which bandits are
 * pursued: a bandit past ρ̄ ≥ τ but not yet at δᶜ ≤ δ keeps being served
 * (were it dropped as Alg. 3 line 5 drops ρ̄ ≥ τ, it would starve behind a
 * bandit that never reaches τ). */
static void test_other_rule_pursues_engine_verdict(void **state)
{
    (void)state;
    size_t k[] = {2, 2};
    struct engine_config c = cfg_of("gcp", 2, k, 1);
    c.stop_rule = ENGINE_RULE_DELTA_C;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 10);
    const double p[2][2] = {{0.2, 0.8}, {0.5, 0.5}}; /* bandit 1 can never finish */
    int rho_first = 0;
    for (int i = 0; i < 20000 && !engine_bandit_done(e, 0); i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        engine_reward(e, pl.bandit, pl.arm, gsl_rng_uniform(env) < p[pl.bandit][pl.arm]);
        unsigned char high[2];
        struct engine_bandit_status st;
        engine_bandit_status(e, 0, high, &st);
        rho_first |= st.rho >= 0.95 && !engine_bandit_done(e, 0);
    }
    assert_true(rho_first); /* the case arose */
    assert_true(engine_bandit_done(e, 0));
    gsl_rng_free(env);
    engine_free(e);
}

/* With bandits=uniform the unfinished bandits are served evenly. */
static void test_uniform_bandit_mode(void **state)
{
    (void)state;
    size_t k[] = {3, 3, 3};
    struct engine_config c = cfg_of("gcp", 3, k, 1);
    set_param(&c, "bandits", "uniform");
    struct engine *e = tengine_create(&c);
    uint64_t per[3] = {0, 0, 0};
    for (int i = 0; i < 300; i++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        per[p.bandit]++;
        engine_reward(e, p.bandit, p.arm, 0.5);
    }
    assert_true(per[0] == 100 && per[1] == 100 && per[2] == 100);
    engine_free(e);
}

/* Alg. 4 with a target that is best nowhere: the resampling loop gives up
 * after `resample` tries and Alg. 3 decides, so every bandit is still served
 * until it is settled (ρ̄ ≥ τ, here with the answer "not the target"). */
static void test_targeted_fallback(void **state)
{
    (void)state;
    size_t k[] = {2, 2};
    struct engine_config c = cfg_of("gcp-targeted", 2, k, 1);
    c.target_arm = 0;
    set_param(&c, "resample", "1");
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 5);
    uint64_t per[2] = {0, 0};
    for (int i = 0; i < 20000 && !engine_stopped(e); i++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        assert_false(p.exploit);
        per[p.bandit]++;
        engine_reward(e, p.bandit, p.arm, gsl_rng_uniform(env) < (p.arm == 0 ? 0.3 : 0.7));
    }
    assert_true(engine_stopped(e));
    assert_true(engine_bandits_done(e) == 2);
    assert_true(per[0] > 20 && per[1] > 20);
    for (size_t b = 0; b < 2; b++) {
        unsigned char high[2];
        struct engine_bandit_status st;
        engine_bandit_status(e, b, high, &st);
        assert_true(high[1] && !high[0] && st.rho >= 0.95);
    }
    gsl_rng_free(env);
    engine_free(e);
}

/* Where the target is best in one bandit and worst in an equally easy
 * other, the targeted policy spends most pulls on the first. */
static void test_targeted_prefers_target(void **state)
{
    (void)state;
    size_t k[] = {3, 3};
    struct engine_config c = cfg_of("gcp-targeted", 2, k, 1);
    c.target_arm = 0;
    c.stop_rule = ENGINE_RULE_NONE;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 4);
    const double p[2][3] = {{0.7, 0.4, 0.3}, {0.3, 0.7, 0.4}};
    uint64_t per[2] = {0, 0};
    for (int i = 0; i < 2000; i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        per[pl.bandit]++;
        engine_reward(e, pl.bandit, pl.arm, gsl_rng_uniform(env) < p[pl.bandit][pl.arm]);
    }
    assert_true(per[0] > 3 * per[1]);
    gsl_rng_free(env);
    engine_free(e);
}

/* ---- thompson ---------------------------------------------------------------------- */

static void test_thompson(void **state)
{
    (void)state;
    size_t k[] = {3};
    struct engine_config c = cfg_of("thompson", 1, k, 1);
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 12);
    const double p[] = {0.3, 0.7, 0.5};
    uint64_t best = 0;
    for (int i = 0; i < 3000; i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        assert_false(pl.exploit);
        best += pl.arm == 1;
        engine_reward(e, 0, pl.arm, gsl_rng_uniform(env) < p[pl.arm]);
    }
    /* Regret minimisation: most pulls on the best arm, and no stop. */
    print_message("# thompson: %llu of 3000 pulls on the best arm\n", (unsigned long long)best);
    assert_true(best > 2400);
    assert_false(engine_stopped(e));
    assert_true(pol("thompson")->flags & POLICY_F_REGRET);
    gsl_rng_free(env);
    engine_free(e);
}

/* ---- parameters ---------------------------------------------------------------------- */

static void test_params(void **state)
{
    (void)state;
    const struct policy_ops *g = pol("gcp"), *t = pol("gcp-targeted");
    char err[128] = "";
    double v;
    int i = policy_param_index(g, "bandits");
    assert_true(i >= 0);
    assert_int_equal(policy_param_parse(&g->params[i], "uniform", &v, err, sizeof err), 0);
    assert_true(v == GCP_BANDITS_UNIFORM);
    assert_int_not_equal(policy_param_parse(&g->params[i], "greedy", &v, err, sizeof err), 0);
    assert_non_null(strstr(err, "cost|uniform"));
    i = policy_param_index(t, "resample");
    assert_true(i >= 0);
    assert_int_not_equal(policy_param_parse(&t->params[i], "0", &v, err, sizeof err), 0);
    assert_int_not_equal(policy_param_parse(&t->params[i], "2.5", &v, err, sizeof err), 0);
    assert_int_equal(policy_param_parse(&t->params[i], "100", &v, err, sizeof err), 0);
    assert_true(policy_param_index(pol("thompson"), "bandits") < 0);
    /* every declared parameter documents itself */
    const struct policy_ops *const all[] = {g, t};
    for (size_t n = 0; n < 2; n++)
        for (const struct policy_param_spec *s = all[n]->params; s->name != NULL; s++)
            assert_true(s->doc != NULL && strlen(s->doc) > 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gap_location),
        cmocka_unit_test(test_cost_hand),
        cmocka_unit_test(test_pending_counted),
        cmocka_unit_test(test_allocation_shape),
        cmocka_unit_test(test_recommend_map),
        cmocka_unit_test(test_multi_bandits),
        cmocka_unit_test(test_other_rule_pursues_engine_verdict),
        cmocka_unit_test(test_uniform_bandit_mode),
        cmocka_unit_test(test_targeted_fallback),
        cmocka_unit_test(test_targeted_prefers_target),
        cmocka_unit_test(test_thompson),
        cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
