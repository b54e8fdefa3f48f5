/*
 * test_engine.c — unit tests of policies/engine.c, the state machine every
 * policy is served and simulated through: configuration checks, budgets
 * (global and split per bandit), stop rules and their finality, exploit
 * assignments, clinical constraints (burn-in, control share, minimum
 * allocation probability), bit-for-bit determinism (the daemon's replay),
 * engine_record_pull, and status calls that never touch the generator.
 *
 * Rates are checked against binomial bounds at two-sided level 0.001
 * (z = 3.29) derived from the number of pulls; every seed is fixed.
 * Test-only policies below (a policy that starves every arm but one, a
 * fixed-budget-only policy, ...) isolate the engine from real policies.
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
#include "tests/support/drive.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define Z_001 3.2905 /* two-sided normal quantile at level 0.001 */

/* ---- test-only policies ---------------------------------------------------- */

// NOLINTNEXTLINE(readability-non-const-parameter): the vtable fixes the signature
static int nop_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    (void)ctx;
    (void)err;
    (void)errlen;
    *state = NULL;
    return 0;
}

/* Always arm 0 of the bandit it is asked about: the policy a floor must
 * protect the other arms from. */
static int starve_select(void *state, const struct policy_ctx *ctx, int bandit,
                         struct policy_pick *pick)
{
    (void)state;
    (void)ctx;
    pick->bandit = bandit >= 0 ? (size_t)bandit : 0;
    pick->arm = 0;
    return POLICY_OK;
}

static const struct policy_ops starve = {
    .name = "test-starve",
    .summary = "always arm 0",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM,
    .init = nop_init,
    .select = starve_select,
};

static const struct policy_ops budget_only = {
    .name = "test-budget-only",
    .summary = "a fixed-budget policy",
    .flags = POLICY_F_FIXED_BUDGET,
    .init = nop_init,
    .select = starve_select,
};

static const struct policy_ops needs_eps = {
    .name = "test-needs-eps",
    .summary = "a policy that needs epsilon > 0",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_NEEDS_EPSILON,
    .init = nop_init,
    .select = starve_select,
};

static const struct policy_ops best_only = {
    .name = "test-best-only",
    .summary = "a best-arm policy (no TOPM flag)",
    .flags = POLICY_F_FIXED_CONFIDENCE,
    .init = nop_init,
    .select = starve_select,
};

/* ---- helpers ------------------------------------------------------------- */

static const struct policy_ops *pol(const char *name)
{
    const struct policy_ops *p = policy_find(name);
    if (p == NULL)
        fail_msg("policy %s is not registered", name);
    return p;
}

static struct engine_config cfg_of(const struct policy_ops *p, size_t nb, const size_t *k)
{
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = nb;
    c.n_arms = k;
    c.m = 1;
    c.epsilon = 0;
    c.delta = 0.05;
    c.tau = NAN;
    c.target_arm = -1;
    c.seed = 1;
    c.policy = p;
    policy_params_defaults(p, &c.params);
    return c;
}

/* c must be refused by engine_validate and engine_create, naming `field`
 * (the API puts it in the problem+json as is). */
static void expect_invalid(const struct engine_config *c, const char *field, int line)
{
    struct policy_error err = {0}, err2 = {0};
    if (engine_validate(c, &err) == 0)
        fail_msg("line %d: accepted, want an error on %s", line, field);
    if (err.code != POLICY_ERR_INVALID || strcmp(err.field, field) != 0)
        fail_msg("line %d: error on \"%s\" (%s), want %s", line, err.field, err.message, field);
    struct engine *e = engine_create(c, &err2);
    if (e != NULL) {
        engine_free(e);
        fail_msg("line %d: engine_create accepted what engine_validate refused", line);
    }
    assert_string_equal(err.field, err2.field);
    assert_string_equal(err.message, err2.message);
}
#define INVALID(c, field) expect_invalid(&(c), (field), __LINE__)

/* |x − n p| within the binomial bound at level 0.001. */
static void check_binomial(uint64_t x, uint64_t n, double p, const char *what)
{
    double sd = sqrt((double)n * p * (1 - p));
    double dev = fabs((double)x - (double)n * p);
    if (dev > Z_001 * sd + 1e-9)
        fail_msg("%s: %llu of %llu, expected %.1f ± %.1f", what, (unsigned long long)x,
                 (unsigned long long)n, (double)n * p, Z_001 * sd);
}

/* x/n at least p minus the one-sided bound at level 0.001 (z = 3.09). */
static void check_at_least(uint64_t x, uint64_t n, double p, const char *what)
{
    double tol = 3.0902 * sqrt(p * (1 - p) / (double)n);
    if ((double)x / (double)n < p - tol)
        fail_msg("%s: share %.4f, floor %.4f (tolerance %.4f)", what, (double)x / (double)n, p,
                 tol);
}

/* Everything observable about an engine's counts, to compare before/after. */
struct snap {
    uint64_t pulls, pending, handed;
    size_t done;
    enum engine_stop_reason reason;
    struct stats_arm arms[3][8];
};

static void take(const struct engine *e, struct snap *s)
{
    memset(s, 0, sizeof *s);
    s->pulls = engine_pulls(e);
    s->pending = engine_pending(e);
    s->handed = engine_handed_out(e);
    s->done = engine_bandits_done(e);
    s->reason = engine_stop_reason(e);
    for (size_t b = 0; b < engine_n_bandits(e) && b < 3; b++)
        memcpy(s->arms[b], engine_arms(e, b), engine_n_arms(e, b) * sizeof(struct stats_arm));
}

static void same_snap(const struct snap *a, const struct snap *b)
{
    assert_true(a->pulls == b->pulls);
    assert_true(a->pending == b->pending);
    assert_true(a->handed == b->handed);
    assert_true(a->done == b->done);
    assert_int_equal(a->reason, b->reason);
    assert_memory_equal(a->arms, b->arms, sizeof a->arms);
}

/* ---- configuration -------------------------------------------------------- */

static void test_validate_fields(void **state)
{
    (void)state;
    size_t k3[] = {3}, k33[] = {3, 3}, k25[] = {2, 5};
    struct engine_config c = cfg_of(pol("uniform"), 1, k3);
    struct policy_error err;
    assert_int_equal(engine_validate(&c, &err), 0);

    c.m = 3; /* m ≥ K */
    INVALID(c, "goal.m");
    c.m = 0;
    INVALID(c, "goal.m");
    c = cfg_of(&best_only, 1, k3);
    c.m = 2; /* top-m on a best-arm policy */
    INVALID(c, "goal.m");

    c = cfg_of(&budget_only, 1, k3); /* fixed budget, no budget */
    INVALID(c, "goal.budget");
    c.budget = 2; /* fewer pulls than arms */
    INVALID(c, "goal.budget");
    c.budget = 30;
    assert_int_equal(engine_validate(&c, &err), 0);

    c = cfg_of(&needs_eps, 1, k3);
    INVALID(c, "goal.epsilon");
    c.epsilon = 0.1;
    assert_int_equal(engine_validate(&c, &err), 0);
    c.epsilon = 1.5;
    INVALID(c, "goal.epsilon");

    c = cfg_of(pol("uniform"), 1, k3);
    c.delta = 0;
    INVALID(c, "goal.delta");
    c.delta = 1;
    INVALID(c, "goal.delta");

    c = cfg_of(pol("gcp-targeted"), 1, k3); /* no target arm */
    INVALID(c, "target_arm");
    c.target_arm = 3;
    INVALID(c, "target_arm");
    c.target_arm = 2;
    assert_int_equal(engine_validate(&c, &err), 0);
    c = cfg_of(pol("gcp-targeted"), 2, k25);
    c.target_arm = 3; /* exists in bandit 1 only */
    INVALID(c, "target_arm");

    c = cfg_of(pol("uniform"), 2, k33);
    int ctl[] = {0, 3};
    c.control_arm = ctl; /* no arm 3 in bandit 1 */
    c.control_share = 0.2;
    INVALID(c, "constraints.control.arm");
    c.control_arm = NULL; /* a share without an arm */
    INVALID(c, "constraints.control.arm");
    ctl[1] = 1;
    c.control_arm = ctl;
    c.control_share = 1.0;
    INVALID(c, "constraints.control.share");
    c.control_share = 0.2;
    assert_int_equal(engine_validate(&c, &err), 0);

    c = cfg_of(pol("uniform"), 2, k25);
    c.min_prob = 0.2; /* 0.2 · 5 = 1 */
    INVALID(c, "constraints.min_prob");
    c.min_prob = 0.19;
    assert_int_equal(engine_validate(&c, &err), 0);
    c.min_prob = -0.1;
    INVALID(c, "constraints.min_prob");

    c = cfg_of(pol("uniform"), 1, k3);
    c.stop_rule = ENGINE_RULE_POLICY; /* uniform has no rule of its own */
    INVALID(c, "stop_rule");
    c = cfg_of(pol("gcp"), 1, k3);
    c.stop_rule = ENGINE_RULE_POLICY;
    assert_int_equal(engine_validate(&c, &err), 0);

    c = cfg_of(pol("gcp"), 1, k3);
    c.tau = 1.0;
    INVALID(c, "tau");
    c.tau = 0.9;
    assert_int_equal(engine_validate(&c, &err), 0);

    size_t k1[] = {1};
    c = cfg_of(pol("uniform"), 1, k1);
    INVALID(c, "bandits[0].arms");
    c = cfg_of(pol("uniform"), 0, k3);
    INVALID(c, "bandits");
}

/* Constraints together: a control share and a floor must leave the policy
 * something, and a Beta prior must be a finite non-negative number. */
static void test_validate_constraints_and_prior(void **state)
{
    (void)state;
    size_t k4[] = {4};
    int ctl[] = {3};
    struct engine_config c = cfg_of(pol("uniform"), 1, k4);
    c.control_arm = ctl;
    c.control_share = 0.5;
    c.min_prob = 0.125; /* 0.5 + 4 · 0.125 = 1: nothing left for the policy */
    INVALID(c, "constraints.min_prob");
    c.min_prob = 0.1;
    struct policy_error err;
    assert_int_equal(engine_validate(&c, &err), 0);

    c = cfg_of(pol("gcp"), 1, k4);
    c.prior_alpha = NAN;
    INVALID(c, "prior");
    c.prior_alpha = INFINITY;
    INVALID(c, "prior");
    c.prior_alpha = -1;
    INVALID(c, "prior");
    c.prior_alpha = 0.5;
    c.prior_beta = 2;
    assert_int_equal(engine_validate(&c, &err), 0);
    struct engine *e = tengine_create(&c);
    assert_true(engine_arms(e, 0)[2].alpha == 0.5 && engine_arms(e, 0)[2].beta == 2);
    engine_free(e);
}

/* A budget split per bandit must give every bandit at least one pull per
 * arm, or phase policies compute phases from N − K < 0. */
static void test_validate_split_budget(void **state)
{
    (void)state;
    size_t k[] = {2, 10};
    struct engine_config c = cfg_of(pol("adapt"), 2, k); /* one instance per bandit */
    c.budget = 12;                                       /* 6 + 6: bandit 1 has 10 arms */
    INVALID(c, "goal.budget");
    c.budget = 20;
    struct policy_error err;
    assert_int_equal(engine_validate(&c, &err), 0);
    c = cfg_of(pol("uniform"), 2, k); /* one instance for all: 12 ≥ 12 arms */
    c.budget = 12;
    assert_int_equal(engine_validate(&c, &err), 0);
}

/* A policy's own refusal (its init) reaches the caller as a field and a
 * message: ADAPT's cap needs ε > 0; engine_validate cannot see it. */
static void test_policy_init_error(void **state)
{
    (void)state;
    size_t k[] = {3};
    struct engine_config c = cfg_of(pol("adapt"), 1, k);
    int i = policy_param_index(c.policy, "cap");
    assert_true(i >= 0);
    c.params.values[i] = 1;
    struct policy_error err = {0};
    assert_int_equal(engine_validate(&c, &err), 0);
    assert_null(engine_create(&c, &err));
    assert_int_equal(err.code, POLICY_ERR_INVALID);
    assert_string_equal(err.field, "policy.params.cap");
    assert_non_null(strstr(err.message, "epsilon"));
    assert_null(strchr(err.message, ':'));
    /* Text without a field stays a message; "out of memory" is ours. */
    policy_error_from_text(&err, "phases ended: no arm left");
    assert_string_equal(err.field, "");
    assert_string_equal(err.message, "phases ended: no arm left");
    policy_error_from_text(&err, "out of memory");
    assert_int_equal(err.code, POLICY_ERR_NOMEM);
}

/* ---- budget ----------------------------------------------------------------- */

/* Assign until an exploit comes back, rewarding nothing; returns the pulls. */
static uint64_t drain(struct engine *e, int bandit, uint64_t cap)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < cap; i++) {
        struct engine_pull p;
        assert_int_equal(engine_assign(e, bandit, &p), 0);
        if (p.exploit)
            break;
        n++;
    }
    return n;
}

static void test_budget_exact(void **state)
{
    (void)state;
    size_t k[] = {3};
    struct engine_config c = cfg_of(pol("uniform"), 1, k);
    c.budget = 30;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 5);
    uint64_t pulls = 0;
    for (int i = 0; i < 100; i++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        if (p.exploit)
            break;
        pulls++;
        engine_reward(e, p.bandit, p.arm, gsl_rng_uniform(env) < 0.5);
    }
    assert_true(pulls == 30);
    assert_true(engine_handed_out(e) == 30 && engine_pulls(e) == 30);
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_BUDGET);
    struct snap before, after;
    take(e, &before);
    assert_true(drain(e, -1, 20) == 0); /* exploit from now on */
    take(e, &after);
    same_snap(&before, &after);
    gsl_rng_free(env);
    engine_free(e);
}

/* The lead rewards the engine counts with its leader kept between rewards
 * (learn_lead) are those of the stateless stats_arm_lead fed the same
 * rewards in the same order: ties (rewards 0, ½, 1 on few pulls), the
 * leader's own mean falling, the pool filling up and several bandits. */
static void test_lead_rewards(void **state)
{
    (void)state;
    size_t k[] = {4, 6};
    struct engine_config c = cfg_of(pol("uniform"), 2, k);
    c.stop_rule = ENGINE_RULE_NONE;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 21);
    struct stats_arm mirror[2][6];
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < k[b]; i++)
            stats_arm_init(&mirror[b][i], 1, 1);
    uint64_t pooled = 0, own = 0;
    for (int t = 0; t < 3000; t++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        double r = (double)gsl_rng_uniform_int(env, 3) / 2.0;
        if (gsl_rng_uniform(env) < 0.1 * (double)p.arm)
            r = 1.0; /* higher arms ahead, so that the lead settles and moves */
        engine_reward(e, p.bandit, p.arm, r);
        stats_arm_lead(mirror[p.bandit], k[p.bandit], p.arm, r);
        stats_arm_add(&mirror[p.bandit][p.arm], r);
    }
    for (size_t b = 0; b < 2; b++) {
        const struct stats_arm *a = engine_arms(e, b);
        for (size_t i = 0; i < k[b]; i++) {
            assert_int_equal(a[i].lead_n, mirror[b][i].lead_n);
            assert_int_equal(a[i].pool_n, mirror[b][i].pool_n);
            assert_true(a[i].lead_sum == mirror[b][i].lead_sum);
            assert_true(a[i].pool_sum == mirror[b][i].pool_sum);
            assert_true(a[i].pool_n <= STATS_LEAD_POOLED);
            pooled += a[i].pool_n;
            own += a[i].lead_n;
        }
    }
    assert_true(pooled > (uint64_t)2 * STATS_LEAD_POOLED && own > 300);
    gsl_rng_free(env);
    engine_free(e);
}

/* Pending pulls hold their place in the budget; released ones give it back
 * until the budget is spent, and a spent budget stays spent. */
static void test_budget_pending_and_release(void **state)
{
    (void)state;
    size_t k[] = {3};
    struct engine_config c = cfg_of(pol("uniform"), 1, k);
    c.budget = 12;
    struct engine *e = tengine_create(&c);
    assert_true(drain(e, -1, 100) == 12);
    assert_true(engine_pending(e) == 12 && engine_pulls(e) == 0);
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_BUDGET);
    engine_free(e);

    e = tengine_create(&c);
    struct engine_pull p[10];
    for (int i = 0; i < 10; i++) {
        engine_assign(e, -1, &p[i]);
        assert_false(p[i].exploit);
    }
    engine_release(e, p[0].bandit, p[0].arm);
    engine_release(e, p[1].bandit, p[1].arm);
    engine_reward(e, p[2].bandit, p[2].arm, 1); /* a reward keeps its place */
    engine_release(e, p[3].bandit, p[3].arm);
    assert_true(engine_pending(e) == 6 && engine_pulls(e) == 1);
    assert_false(engine_stopped(e));
    assert_true(drain(e, -1, 100) == 5); /* 12 − (6 pending + 1 rewarded) */
    assert_true(engine_handed_out(e) == 15);
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_BUDGET);
    /* Final: releasing after the stop frees nothing. */
    for (int i = 4; i < 10; i++)
        engine_release(e, p[i].bandit, p[i].arm);
    assert_true(drain(e, -1, 10) == 0);
    assert_true(engine_handed_out(e) == 15);
    assert_true(engine_stopped(e));
    engine_free(e);
}

/* A policy with one instance per bandit gets budget / M each (the first
 * budget % M bandits one more); a multi-bandit policy shares one budget. */
static void test_budget_split(void **state)
{
    (void)state;
    size_t k[] = {2, 3, 4};
    struct engine_config c = cfg_of(pol("adapt"), 3, k);
    c.budget = 14;
    c.stop_rule = ENGINE_RULE_NONE;
    struct engine *e = tengine_create(&c);
    assert_true(drain(e, -1, 100) == 14);
    static const uint64_t want[] = {5, 5, 4};
    for (size_t b = 0; b < 3; b++) {
        uint64_t n = 0;
        for (size_t i = 0; i < k[b]; i++)
            n += engine_arms(e, b)[i].pending;
        assert_true(n == want[b]);
        assert_true(engine_bandit_done(e, b));
    }
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_BUDGET);
    engine_free(e);

    /* Explicit bandits: bandit 2 spends its 4 and stops alone. */
    e = tengine_create(&c);
    assert_true(drain(e, 2, 100) == 4);
    assert_true(engine_bandit_done(e, 2) && !engine_bandit_done(e, 0));
    assert_false(engine_stopped(e));
    assert_true(drain(e, 0, 100) == 5);
    assert_true(drain(e, -1, 100) == 5); /* only bandit 1 is left */
    assert_true(engine_stopped(e));
    engine_free(e);

    /* One instance over all bandits: 14 in total, wherever they go. */
    c = cfg_of(pol("uniform"), 3, k);
    c.budget = 14;
    e = tengine_create(&c);
    assert_true(drain(e, 2, 100) == 14);
    assert_true(engine_handed_out(e) == 14);
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_BUDGET);
    assert_true(engine_bandits_done(e) == 3);
    engine_free(e);
}

/* ---- stop rules ------------------------------------------------------------- */

/* Does bandit b meet `rule` now, recomputed from the status figures? */
// NOLINTNEXTLINE(misc-no-recursion): one level, for DEFAULT: engine_rule() is never DEFAULT
static int rule_holds(const struct engine *e, enum engine_stop_rule rule, size_t b)
{
    unsigned char high[8];
    struct engine_bandit_status st;
    engine_bandit_status(e, b, high, &st);
    const struct engine_config *c = engine_config(e);
    const struct stats_arm *a = engine_arms(e, b);
    uint64_t t = 0;
    for (size_t i = 0; i < engine_n_arms(e, b); i++)
        if (a[i].n == 0)
            return 0;
        else
            t += a[i].n;
    switch (rule) {
    case ENGINE_RULE_DELTA_C:
        return st.delta_c <= c->delta;
    case ENGINE_RULE_GLR: {
        /* One returned arm of K ≥ 3 with ε = 0: every challenger's leader
         * product > ln(1/δ). Otherwise per pair: the pair's evidence >
         * ln(m(K−m)/δ). */
        size_t k = engine_n_arms(e, b);
        if (stats_glr_uses_lead(STATS_GLR_PROVEN, k, c->m, c->epsilon)) {
            size_t best = k;
            for (size_t i = 0; i < k; i++)
                if (high[i])
                    best = i;
            for (size_t j = 0; j < k; j++)
                if (!high[j] && a[j].mean > a[best].mean)
                    return 0;
            return stats_glr_lead_evidence(a, k, best) > log(1.0 / c->delta);
        }
        double base = log((double)c->m * (double)(k - c->m) / c->delta);
        for (size_t i = 0; i < k; i++)
            for (size_t j = 0; j < k; j++) {
                if (!high[i] || high[j])
                    continue;
                if (a[i].mean < a[j].mean)
                    return 0;
                double ni = (double)a[i].n, nj = (double)a[j].n;
                double mij = (ni * a[i].mean + nj * a[j].mean) / (ni + nj);
                double z = ni * stats_kl_bern(a[i].mean, mij) + nj * stats_kl_bern(a[j].mean, mij);
                if (!(stats_glr_pair_evidence(STATS_GLR_PROVEN, &a[i], &a[j], z, 0.0) > base))
                    return 0;
            }
        return 1;
    }
    case ENGINE_RULE_GLR_HEURISTIC:
        return st.glr > stats_glr_threshold(STATS_GLR_HEURISTIC, (double)t, engine_n_arms(e, b),
                                            c->m, 0.0, c->delta);
    case ENGINE_RULE_RHO:
    case ENGINE_RULE_POLICY: /* only used with gcp: ρ̄ ≥ τ */
        return st.rho >= c->tau;
    case ENGINE_RULE_DEFAULT: /* the rule the engine resolved it to (never DEFAULT) */
        return rule_holds(e, engine_rule(e), b);
    default:
        return 0;
    }
}

static void run_rule(const char *policy, enum engine_stop_rule rule, enum engine_stop_reason want)
{
    size_t k[] = {3};
    const double p[] = {0.8, 0.3, 0.2};
    struct engine_config c = cfg_of(pol(policy), 1, k);
    c.stop_rule = rule;
    c.seed = 11;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 3);
    uint64_t t = 0;
    while (!engine_stopped(e) && t < 20000) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        assert_false(pl.exploit);
        t++;
        engine_reward(e, pl.bandit, pl.arm, gsl_rng_uniform(env) < p[pl.arm]);
        /* It fires exactly when its statistic says so. */
        if (rule_holds(e, rule, 0) != engine_stopped(e))
            fail_msg("rule %d after %llu pulls: statistic %d, stopped %d", (int)rule,
                     (unsigned long long)t, rule_holds(e, rule, 0), engine_stopped(e));
    }
    assert_true(engine_stopped(e));
    assert_int_equal(engine_stop_reason(e), want);
    assert_true(engine_bandit_done(e, 0));
    /* The stop shows the rule that fired, its figures of that moment, and
     * for a proven rule an error bound within δ. */
    struct engine_stop_eval se, later;
    engine_bandit_stop(e, 0, &se);
    assert_true(se.fired);
    assert_int_equal(se.rule, engine_rule(e));
    assert_int_equal(se.proven, engine_rule_proven(engine_config(e), se.rule));
    if (se.proven)
        assert_true(se.error_bound <= c.delta);
    else
        assert_true(isnan(se.error_bound));
    /* Adverse outcomes until the statistic no longer holds: still stopped. */
    int flipped = 0;
    for (int i = 0; i < 200000 && !flipped; i++) {
        engine_observe(e, 0, 0, 0);
        engine_observe(e, 0, 2, 1);
        flipped = !rule_holds(e, rule, 0);
    }
    assert_true(flipped);
    assert_true(engine_stopped(e));
    assert_int_equal(engine_stop_reason(e), want);
    engine_bandit_stop(e, 0, &later);
    assert_true(later.fired);
    assert_memory_equal(&later.evidence, &se.evidence, sizeof se.evidence);
    assert_memory_equal(&later.threshold, &se.threshold, sizeof se.threshold);
    assert_true(engine_bandit_done(e, 0));
    assert_true(drain(e, -1, 10) == 0);
    gsl_rng_free(env);
    engine_free(e);
}

static void test_stop_delta_c(void **state)
{
    (void)state;
    run_rule("uniform", ENGINE_RULE_DELTA_C, ENGINE_STOPPED_CONFIDENCE);
}

static void test_stop_glr(void **state)
{
    (void)state;
    run_rule("uniform", ENGINE_RULE_GLR, ENGINE_STOPPED_CONFIDENCE);
    run_rule("uniform", ENGINE_RULE_GLR_HEURISTIC, ENGINE_STOPPED_CONFIDENCE);
}

static void test_stop_rho(void **state)
{
    (void)state;
    run_rule("uniform", ENGINE_RULE_RHO, ENGINE_STOPPED_CONFIDENCE);
}

static void test_stop_policy(void **state)
{
    (void)state;
    run_rule("gcp", ENGINE_RULE_POLICY, ENGINE_STOPPED_POLICY);
    /* gcp's own rule (ρ̄) has no proof: its default is the proven GLR rule */
    run_rule("gcp", ENGINE_RULE_DEFAULT, ENGINE_STOPPED_CONFIDENCE);
}

static void test_stop_none(void **state)
{
    (void)state;
    size_t k[] = {3};
    struct engine_config c = cfg_of(pol("uniform"), 1, k);
    c.stop_rule = ENGINE_RULE_NONE;
    struct engine *e = tengine_create(&c);
    for (int i = 0; i < 3000; i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        assert_false(pl.exploit);
        engine_reward(e, 0, pl.arm, pl.arm == 0);
    }
    /* Every confidence rule would have fired long ago. */
    assert_true(rule_holds(e, ENGINE_RULE_DELTA_C, 0));
    assert_false(engine_stopped(e));
    engine_free(e);

    /* thompson (regret) defaults to no rule at all. */
    c = cfg_of(pol("thompson"), 1, k);
    e = tengine_create(&c);
    for (int i = 0; i < 3000; i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        assert_false(pl.exploit);
        engine_reward(e, 0, pl.arm, pl.arm == 0);
    }
    assert_false(engine_stopped(e));
    engine_free(e);
}

/* In a multi-bandit experiment each bandit stops on its own; the experiment
 * stops when the last one does. */
static void test_stop_per_bandit(void **state)
{
    (void)state;
    size_t k[] = {2, 2};
    struct engine_config c = cfg_of(pol("uniform"), 2, k);
    c.stop_rule = ENGINE_RULE_DELTA_C;
    struct engine *e = tengine_create(&c);
    int i;
    for (i = 0; i < 5000 && !engine_bandit_done(e, 0); i++) {
        struct engine_pull pl;
        engine_assign(e, 0, &pl);
        engine_reward(e, 0, pl.arm, pl.arm == 0);
    }
    assert_true(engine_bandit_done(e, 0));
    assert_false(engine_bandit_done(e, 1));
    assert_false(engine_stopped(e));
    for (i = 0; i < 5000 && !engine_stopped(e); i++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        assert_false(pl.exploit);
        assert_true(pl.bandit == 1); /* done bandits get no pulls */
        engine_reward(e, 1, pl.arm, pl.arm == 1);
    }
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_CONFIDENCE);
    engine_free(e);
}

/* ---- exploit assignments ----------------------------------------------------- */

static void expect_exploits(struct engine *e, int bandit, int n)
{
    struct snap before, after;
    take(e, &before);
    for (int i = 0; i < n; i++) {
        struct engine_pull p;
        assert_int_equal(engine_assign(e, bandit, &p), 0);
        assert_true(p.exploit);
        if (bandit >= 0)
            assert_true(p.bandit == (size_t)bandit);
        unsigned char high[8];
        struct engine_bandit_status st;
        engine_bandit_status(e, p.bandit, high, &st);
        assert_true(high[p.arm]); /* the recommendation */
    }
    take(e, &after);
    same_snap(&before, &after);
}

static void test_exploit_counts_nowhere(void **state)
{
    (void)state;
    size_t k[] = {3, 3};
    struct engine_config c = cfg_of(pol("gcp"), 2, k);
    struct engine *e = tengine_create(&c);
    /* Bandit 0 is easy: pursue it explicitly until it is done. */
    for (int i = 0; i < 20000 && !engine_bandit_done(e, 0); i++) {
        struct engine_pull p;
        engine_assign(e, 0, &p);
        engine_reward(e, 0, p.arm, p.arm == 1);
    }
    assert_true(engine_bandit_done(e, 0));
    assert_false(engine_stopped(e));
    expect_exploits(e, 0, 20); /* a done bandit given explicitly */
    struct engine_pull p;
    engine_assign(e, -1, &p); /* the policy goes on in bandit 1 */
    assert_false(p.exploit);
    assert_true(p.bandit == 1);
    engine_release(e, p.bandit, p.arm);

    engine_set_paused(e, 1); /* paused */
    expect_exploits(e, 1, 20);
    expect_exploits(e, -1, 20);
    engine_observe(e, 1, 0, 1); /* data still counts while paused */
    assert_true(engine_arms(e, 1)[0].n == 1);
    engine_set_paused(e, 0);
    engine_assign(e, 1, &p);
    assert_false(p.exploit);

    engine_stop(e); /* stopped */
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_MANUAL);
    expect_exploits(e, -1, 20);
    expect_exploits(e, 1, 20);
    /* The outstanding pull's reward is still taken. */
    engine_reward(e, p.bandit, p.arm, 1);
    assert_true(engine_pending(e) == 0);
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_MANUAL);
    engine_free(e);
}

/* ---- clinical constraints ------------------------------------------------------ */

static void test_burn_in(void **state)
{
    (void)state;
    size_t k[] = {4, 3};
    struct engine_config c = cfg_of(&starve, 2, k);
    c.burn_in = 5;
    struct engine *e = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 9);
    /* 35 pulls = 5 per arm of both bandits before the policy says a word;
     * half of bandit 0's answered at once, bandit 1's all left pending. */
    for (int i = 0; i < 35; i++) {
        struct engine_pull p;
        engine_assign(e, i % 7 < 4 ? 0 : 1, &p);
        assert_false(p.exploit);
        if (p.bandit == 0 && gsl_rng_uniform(env) < 0.5)
            engine_reward(e, p.bandit, p.arm, 1);
    }
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < k[b]; i++) {
            const struct stats_arm *a = &engine_arms(e, b)[i];
            assert_true(a->n + a->pending == 5);
        }
    /* Then the policy: arm 0 only. */
    for (int i = 0; i < 20; i++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        assert_true(p.arm == 0);
    }
    /* A released burn-in pull is made up for before the policy resumes. */
    engine_release(e, 1, 2);
    struct engine_pull p;
    engine_assign(e, 1, &p);
    assert_true(p.arm == 2);
    gsl_rng_free(env);
    engine_free(e);
}

/* Count the arms of n assignments in `bandit`. */
static void tally(struct engine *e, int bandit, uint64_t n, uint64_t *count, size_t k)
{
    memset(count, 0, k * sizeof *count);
    for (uint64_t i = 0; i < n; i++) {
        struct engine_pull p;
        engine_assign(e, bandit, &p);
        assert_false(p.exploit);
        assert_true(p.arm < k);
        count[p.arm]++;
        engine_reward(e, p.bandit, p.arm, 0.5);
    }
}

static void test_control_share(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t cnt[4];
    size_t k[] = {4};
    int ctl[] = {2};
    struct engine_config c = cfg_of(&starve, 1, k);
    c.control_arm = ctl;
    c.control_share = 0.3;
    struct engine *e = tengine_create(&c);
    tally(e, -1, N, cnt, 4);
    check_binomial(cnt[2], N, 0.3, "control arm");
    assert_true(cnt[0] + cnt[2] == N);
    engine_free(e);
}

static void test_min_prob_floor(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t cnt[5];
    size_t k[] = {5};
    struct engine_config c = cfg_of(&starve, 1, k);
    c.min_prob = 0.04;
    struct engine *e = tengine_create(&c);
    tally(e, -1, N, cnt, 5);
    for (size_t i = 1; i < 5; i++) {
        check_at_least(cnt[i], N, 0.04, "floor");
        check_binomial(cnt[i], N, 0.04, "floored arm"); /* f exactly: the policy gives none */
    }
    engine_free(e);

    /* Bandits of different sizes: f per arm in each. */
    size_t k2[] = {2, 5};
    c = cfg_of(&starve, 2, k2);
    c.min_prob = 0.1;
    e = tengine_create(&c);
    tally(e, 0, N, cnt, 2);
    check_binomial(cnt[1], N, 0.1, "floored arm, 2-arm bandit");
    tally(e, 1, N, cnt, 5);
    for (size_t i = 1; i < 5; i++)
        check_binomial(cnt[i], N, 0.1, "floored arm, 5-arm bandit");
    engine_free(e);
}

/* A control share and a floor together: the control arm keeps its share and
 * every arm its floor — also in a bandit without a control arm. */
static void test_floor_with_control(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t cnt[5];
    size_t k[] = {5, 5};
    int ctl[] = {4, -1};
    struct engine_config c = cfg_of(&starve, 2, k);
    c.min_prob = 0.04;
    c.control_arm = ctl;
    c.control_share = 0.2;
    struct engine *e = tengine_create(&c);
    tally(e, 0, N, cnt, 5);
    for (size_t i = 1; i < 4; i++)
        check_at_least(cnt[i], N, 0.04, "floor beside a control arm");
    check_at_least(cnt[4], N, 0.2, "control share beside a floor");
    tally(e, 1, N, cnt, 5);
    for (size_t i = 1; i < 5; i++)
        check_at_least(cnt[i], N, 0.04, "floor in a bandit without control");
    engine_free(e);
}

/* ---- determinism ---------------------------------------------------------------- */

struct pend {
    size_t bandit, arm;
};

/* Drive engines a and b (same config) through the same pseudo-random script
 * of assigns, rewards (0/1 and fractional), releases, observations, pauses
 * and a final stop; every answer must match. Returns the assign count. */
static uint64_t lockstep(struct engine *a, struct engine *b, uint64_t script_seed, int steps,
                         int expect_equal, int *differed)
{
    gsl_rng *s = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(s, script_seed);
    struct pend *pend = calloc((size_t)steps, sizeof *pend);
    assert_non_null(pend);
    size_t np = 0;
    uint64_t assigns = 0;
    size_t nb = engine_n_bandits(a);
    for (int i = 0; i < steps; i++) {
        double u = gsl_rng_uniform(s);
        if (i == steps * 3 / 4) {
            engine_stop(a);
            engine_stop(b);
        } else if (u < 0.45) {
            int bandit = gsl_rng_uniform(s) < 0.3 ? (int)gsl_rng_uniform_int(s, nb) : -1;
            struct engine_pull pa, pb;
            engine_assign(a, bandit, &pa);
            engine_assign(b, bandit, &pb);
            assigns++;
            if (pa.bandit != pb.bandit || pa.arm != pb.arm || pa.exploit != pb.exploit) {
                if (expect_equal)
                    fail_msg("step %d: (%zu, %zu, %d) vs (%zu, %zu, %d)", i, pa.bandit, pa.arm,
                             pa.exploit, pb.bandit, pb.arm, pb.exploit);
                *differed = 1;
                break;
            }
            if (!pa.exploit)
                pend[np++] = (struct pend){pa.bandit, pa.arm};
        } else if (u < 0.8 && np > 0) {
            size_t j = gsl_rng_uniform_int(s, np);
            struct pend q = pend[j];
            pend[j] = pend[--np];
            double r = gsl_rng_uniform(s);
            if (r < 0.3)
                r = 0;
            else if (r < 0.6)
                r = 1; /* else fractional: the Bernoulli trick draws */
            double bias = (double)q.arm / (double)engine_n_arms(a, q.bandit);
            r = r * 0.5 + 0.5 * bias;
            engine_reward(a, q.bandit, q.arm, r);
            engine_reward(b, q.bandit, q.arm, r);
        } else if (u < 0.85 && np > 0) {
            size_t j = gsl_rng_uniform_int(s, np);
            struct pend q = pend[j];
            pend[j] = pend[--np];
            engine_release(a, q.bandit, q.arm);
            engine_release(b, q.bandit, q.arm);
        } else if (u < 0.95) {
            size_t bb = gsl_rng_uniform_int(s, nb);
            size_t arm = gsl_rng_uniform_int(s, engine_n_arms(a, bb));
            double r = gsl_rng_uniform(s);
            engine_observe(a, bb, arm, r);
            engine_observe(b, bb, arm, r);
        } else {
            int pause = gsl_rng_uniform(s) < 0.5;
            engine_set_paused(a, pause);
            engine_set_paused(b, pause);
        }
    }
    free(pend);
    gsl_rng_free(s);
    return assigns;
}

static void same_engines(const struct engine *a, const struct engine *b)
{
    assert_true(engine_pulls(a) == engine_pulls(b));
    assert_true(engine_pending(a) == engine_pending(b));
    assert_true(engine_handed_out(a) == engine_handed_out(b));
    assert_int_equal(engine_stop_reason(a), engine_stop_reason(b));
    for (size_t bb = 0; bb < engine_n_bandits(a); bb++) {
        assert_int_equal(engine_bandit_done(a, bb), engine_bandit_done(b, bb));
        /* bit for bit, doubles included */
        assert_memory_equal(engine_arms(a, bb), engine_arms(b, bb),
                            engine_n_arms(a, bb) * sizeof(struct stats_arm));
    }
}

static void determinism_case(const char *name, size_t nb, const size_t *k, uint64_t budget,
                             int constraints)
{
    struct engine_config c = cfg_of(pol(name), nb, k);
    c.seed = 77;
    c.budget = budget;
    if (strcmp(name, "gcp-targeted") == 0)
        c.target_arm = 0;
    int ctl[3] = {1, -1, 0};
    if (constraints) {
        c.burn_in = 2;
        c.min_prob = 0.05;
        c.control_arm = ctl;
        c.control_share = 0.1;
    }
    struct engine *a = tengine_create(&c), *b = tengine_create(&c);
    int differed = 0;
    uint64_t n = lockstep(a, b, 1234, 3000, 1, &differed);
    assert_true(n > 1000);
    same_engines(a, b);
    engine_free(a);
    engine_free(b);
    /* The check can fail: another seed gives another sequence. */
    c.seed = 78;
    struct engine *d = tengine_create(&c);
    c.seed = 77;
    a = tengine_create(&c);
    lockstep(a, d, 1234, 3000, 0, &differed);
    if (!differed)
        fail_msg("%s: seeds 77 and 78 gave the same %d-step sequence", name, 3000);
    engine_free(a);
    engine_free(d);
}

static void test_determinism(void **state)
{
    (void)state;
    size_t k1[] = {4}, k3[] = {3, 4, 5};
    const char *const names[] = {"uniform", "adapt", "gcp", "gcp-targeted", "thompson"};
    for (size_t i = 0; i < LEN(names); i++) {
        determinism_case(names[i], 1, k1, 0, 0);
        determinism_case(names[i], 3, k3, 0, 1);
        determinism_case(names[i], 3, k3, 900, 0);
    }
    /* Fixed-budget policies (phases, gap indices). */
    const char *const fb[] = {"sr",   "sar",    "seq-halving", "ucb-e",
                              "gape", "gape-v", "a-gape",      "a-gape-v"};
    for (size_t i = 0; i < LEN(fb); i++) {
        determinism_case(fb[i], 1, k1, 900, 0);
        determinism_case(fb[i], 3, k3, 900, 1);
    }
}

/* ---- engine_record_pull ------------------------------------------------------------ */

static void test_record_pull(void **state)
{
    (void)state;
    size_t k[] = {3, 3};
    struct engine_config c = cfg_of(pol("uniform"), 2, k);
    c.budget = 8;
    struct engine *e = tengine_create(&c);
    engine_record_pull(e, 1, 2);
    assert_true(engine_arms(e, 1)[2].pending == 1);
    assert_true(engine_pending(e) == 1 && engine_handed_out(e) == 1 && engine_pulls(e) == 0);
    engine_reward(e, 1, 2, 1);
    assert_true(engine_arms(e, 1)[2].pending == 0 && engine_arms(e, 1)[2].n == 1);
    assert_true(engine_pulls(e) == 1 && engine_pending(e) == 0);
    /* Recorded pulls spend the budget like chosen ones. */
    for (int i = 0; i < 6; i++)
        engine_record_pull(e, 0, (size_t)i % 3);
    assert_false(engine_stopped(e));
    engine_record_pull(e, 0, 0);
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_BUDGET);
    assert_true(engine_handed_out(e) == 8);
    engine_free(e);
    /* Recording draws nothing: record then release, and the engine goes on
     * exactly as one that never heard of the pull. */
    c.budget = 0;
    struct engine *a = tengine_create(&c), *b = tengine_create(&c);
    engine_record_pull(a, 0, 1);
    engine_release(a, 0, 1);
    for (int i = 0; i < 50; i++) {
        struct engine_pull pa, pb;
        engine_assign(a, -1, &pa);
        engine_assign(b, -1, &pb);
        assert_true(pa.bandit == pb.bandit && pa.arm == pb.arm);
    }
    engine_free(a);
    engine_free(b);
}

/* ---- status draws nothing ------------------------------------------------------------ */

static void status_case(const char *name, size_t nb, const size_t *k)
{
    struct engine_config c = cfg_of(pol(name), nb, k);
    c.seed = 5;
    if (strcmp(name, "gcp-targeted") == 0)
        c.target_arm = 1;
    struct engine *a = tengine_create(&c), *b = tengine_create(&c);
    gsl_rng *env = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(env, 6);
    for (int i = 0; i < 600; i++) {
        /* b is asked everything a status page asks, between every call */
        for (size_t bb = 0; bb < nb; bb++) {
            unsigned char high[8];
            struct engine_bandit_status st;
            engine_bandit_status(b, bb, high, &st);
            for (size_t j = 0; j < k[bb]; j++) {
                double lo, hi;
                engine_arm_interval(b, bb, j, 0.05, &lo, &hi);
            }
            (void)engine_bandit_done(b, bb);
        }
        (void)engine_bandits_done(b);
        struct engine_pull pa, pb;
        engine_assign(a, -1, &pa);
        engine_assign(b, -1, &pb);
        if (pa.bandit != pb.bandit || pa.arm != pb.arm || pa.exploit != pb.exploit)
            fail_msg("%s: status calls changed pull %d", name, i);
        double r = gsl_rng_uniform(env);
        engine_reward(a, pa.bandit, pa.arm, r);
        engine_reward(b, pb.bandit, pb.arm, r);
    }
    same_engines(a, b);
    gsl_rng_free(env);
    engine_free(a);
    engine_free(b);
}

static void test_status_draws_nothing(void **state)
{
    (void)state;
    size_t k1[] = {4}, k3[] = {3, 4, 2};
    const char *const names[] = {"uniform", "adapt", "gcp", "gcp-targeted", "thompson"};
    for (size_t i = 0; i < LEN(names); i++) {
        status_case(names[i], 1, k1);
        status_case(names[i], 3, k3);
    }
}

/* ---- malformed input ------------------------------------------------------------------- */

/* A NaN reward carries no information: the pull is released, and the
 * statistics stay consistent (n, pulls and the posterior agree). */
static void test_nan_reward(void **state)
{
    (void)state;
    size_t k[] = {2};
    struct engine_config c = cfg_of(pol("uniform"), 1, k);
    struct engine *e = tengine_create(&c);
    struct engine_pull p;
    engine_assign(e, -1, &p);
    engine_reward(e, 0, p.arm, NAN);
    engine_observe(e, 0, p.arm, NAN);
    const struct stats_arm *a = &engine_arms(e, 0)[p.arm];
    assert_true(a->n == 0 && a->pending == 0);
    assert_true(engine_pulls(e) == 0 && engine_pending(e) == 0);
    assert_true(a->alpha == 1 && a->beta == 1);
    engine_free(e);
}

/* ---- goal control (docs/stop-rules.md, `control`) --------------------------- */

static struct engine_config control_cfg(const size_t *k, const int *ctl, double margin)
{
    struct engine_config c = cfg_of(pol("vs-control"), 1, k);
    c.goal = ENGINE_GOAL_CONTROL;
    c.control_arm = ctl;
    c.margin = margin;
    return c;
}

/* What goes with the goal, each refusal naming its field. */
static void test_control_validate(void **state)
{
    (void)state;
    size_t k[] = {4};
    int ctl[] = {1}, none[] = {-1};
    struct engine_config c = control_cfg(k, ctl, 0.1);
    struct policy_error err;
    assert_int_equal(engine_validate(&c, &err), 0);
    assert_int_equal(engine_resolve_rule(&c), ENGINE_RULE_CONTROL);
    assert_true(engine_rule_proven(&c, ENGINE_RULE_CONTROL));
    c.control_arm = NULL;
    INVALID(c, "goal.control");
    c.control_arm = none;
    INVALID(c, "goal.control");
    c = control_cfg(k, ctl, 1.0); /* Δ must be below the range */
    INVALID(c, "goal.margin");
    c = control_cfg(k, ctl, -0.1);
    INVALID(c, "goal.margin");
    c = control_cfg(k, ctl, 0.1);
    c.m = 2;
    INVALID(c, "goal.m");
    c = control_cfg(k, ctl, 0.1);
    c.epsilon = 0.05;
    INVALID(c, "goal.epsilon");
    c = control_cfg(k, ctl, 0.1);
    c.policy = pol("uniform"); /* a best-arm sampler */
    INVALID(c, "policy.name");
    c = control_cfg(k, ctl, 0.1);
    c.stop_rule = ENGINE_RULE_GLR;
    INVALID(c, "stop_rule");
    c = control_cfg(k, ctl, 0.1);
    c.bound = STATS_BOUND_FIXED;
    INVALID(c, "bound");
    c = cfg_of(pol("vs-control"), 1, k); /* the sampler without its goal */
    INVALID(c, "policy.name");
    c = cfg_of(pol("uniform"), 1, k);
    c.stop_rule = ENGINE_RULE_CONTROL;
    INVALID(c, "stop_rule");
}

/* vs-control keeps the control near √k times each open arm's pulls (k = 3
 * open comparisons: √3), and spreads the rest evenly; a reward of 0.5
 * everywhere decides nothing while the intervals are wide. Deterministic
 * counts, so exact bounds. */
static void test_control_allocation(void **state)
{
    (void)state;
    enum { N = 400 };
    uint64_t cnt[4];
    size_t k[] = {4};
    int ctl[] = {0};
    struct engine_config c = control_cfg(k, ctl, 0.1);
    struct engine *e = tengine_create(&c);
    tally(e, -1, N, cnt, 4);
    double each = (double)(N - cnt[0]) / 3.0;
    for (size_t i = 1; i < 4; i++)
        assert_true(fabs((double)cnt[i] - each) <= 1.0);
    assert_true(fabs((double)cnt[0] / each - sqrt(3.0)) < 0.02);
    assert_false(engine_stopped(e));
    struct engine_vs_control v;
    assert_int_equal(engine_vs_control(e, 0, 0, &v), -1); /* the control itself */
    assert_int_equal(engine_vs_control(e, 0, 1, &v), 0);
    assert_int_equal(v.verdict, POLICY_OPEN);
    assert_true(v.lower < 0 && v.upper > 0.1 && fabs(v.diff) < 1e-12);
    engine_free(e);
    /* equal: the control gets what each arm gets */
    c.params.values[0] = 1; /* allocation=equal */
    e = tengine_create(&c);
    tally(e, -1, N, cnt, 4);
    for (size_t i = 1; i < 4; i++)
        assert_true(cnt[i] >= N / 4 - 1 && cnt[i] <= N / 4 + 1);
    engine_free(e);
}

/* Rewards by hand: arm 1 always 1, arm 2 always 0, the control 0.5. Arm 1
 * is declared superior and arm 2 futile once their intervals clear Δ;
 * decided arms get no more pulls; the stop is "superiority", the
 * recommendation arm 1, the control cannot be retired, and a verdict once
 * made stays. */
static void test_control_decisions(void **state)
{
    (void)state;
    size_t k[] = {3};
    int ctl[] = {0};
    struct engine_config c = control_cfg(k, ctl, 0.1);
    struct engine *e = tengine_create(&c);
    static const double reward[] = {0.5, 1.0, 0.0};
    struct policy_error err;
    assert_int_equal(engine_retire_arm(e, 0, 0, &err), -1);
    assert_string_equal(err.field, "retire");
    uint64_t after_decided = 0;
    for (int n = 0; n < 100000 && !engine_stopped(e); n++) {
        struct engine_pull p;
        engine_assign(e, 0, &p);
        assert_false(p.exploit);
        struct engine_vs_control v;
        if (p.arm != 0 && engine_vs_control(e, 0, p.arm, &v) == 0 && v.verdict != POLICY_OPEN)
            after_decided++;
        engine_reward(e, 0, p.arm, reward[p.arm]);
    }
    assert_true(engine_stopped(e));
    assert_int_equal(engine_stop_reason(e), ENGINE_STOPPED_SUPERIORITY);
    assert_int_equal(after_decided, 0);
    struct engine_vs_control v1, v2;
    assert_int_equal(engine_vs_control(e, 0, 1, &v1), 0);
    assert_int_equal(engine_vs_control(e, 0, 2, &v2), 0);
    assert_int_equal(v1.verdict, POLICY_SUPERIOR);
    assert_int_equal(v2.verdict, POLICY_FUTILE);
    assert_true(v1.at > 0 && v2.at > 0 && v1.lower > 0.1 && v2.upper < 0.1);
    unsigned char high[3];
    struct engine_bandit_status st;
    engine_bandit_status(e, 0, high, &st);
    assert_true(high[1] && !high[0] && !high[2]);
    struct engine_stop_eval ev;
    engine_bandit_stop(e, 0, &ev);
    assert_int_equal(ev.rule, ENGINE_RULE_CONTROL);
    assert_true(ev.fired && ev.proven && ev.evidence == 0 && ev.error_bound == c.delta);
    engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_fields),
        cmocka_unit_test(test_validate_constraints_and_prior),
        cmocka_unit_test(test_validate_split_budget),
        cmocka_unit_test(test_policy_init_error),
        cmocka_unit_test(test_budget_exact),
        cmocka_unit_test(test_lead_rewards),
        cmocka_unit_test(test_budget_pending_and_release),
        cmocka_unit_test(test_budget_split),
        cmocka_unit_test(test_stop_delta_c),
        cmocka_unit_test(test_stop_glr),
        cmocka_unit_test(test_stop_rho),
        cmocka_unit_test(test_stop_policy),
        cmocka_unit_test(test_stop_none),
        cmocka_unit_test(test_stop_per_bandit),
        cmocka_unit_test(test_exploit_counts_nowhere),
        cmocka_unit_test(test_burn_in),
        cmocka_unit_test(test_control_share),
        cmocka_unit_test(test_min_prob_floor),
        cmocka_unit_test(test_floor_with_control),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_record_pull),
        cmocka_unit_test(test_status_draws_nothing),
        cmocka_unit_test(test_nan_reward),
        cmocka_unit_test(test_control_validate),
        cmocka_unit_test(test_control_allocation),
        cmocka_unit_test(test_control_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
