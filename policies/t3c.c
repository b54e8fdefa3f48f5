/*
 * t3c.c — T3C, Top-Two Transportation Cost (Shang, de Heide, Ménard,
 * Kaufmann & Valko 2020, "Fixed-Confidence Guarantees for Bayesian Best-Arm
 * Identification"), best arm (m = 1). TTTS with a cheap challenger:
 *
 *   leader     I = argmax_i θ_i, θ one draw from the Beta posteriors (as ttts);
 *   challenger J = argmin_{j ≠ I} W_j, W_j = Z_{I,j}(ε) the transportation
 *              cost, 0 when μ̂_j ≥ μ̂_I + ε (toptwo.h; their W_n(I, j) at ε = 0);
 *   choice     I with probability β (a coin), else J.
 *
 * Where TTTS redraws θ until the argmax changes (K Beta draws a try, many
 * tries once the posterior concentrates), T3C costs one draw and one pass
 * of Z: O(K). ε is the goal's (0: the paper's rule); with ε > 0 the
 * challenger is the one the ε-GLR stop finds cheapest. Before every arm has
 * a reward, each arm is pulled once (toptwo_first_pull).
 *
 * Stop rule: the GLR rule of ttts and track-and-stop (fc.h), proven
 * threshold by default (param `threshold`); Shang et al. prove T3C + GLR
 * δ-correct and asymptotically β-optimal.
 *
 * Asynchrony: pending pulls move neither the posteriors nor the means; Z
 * counts them at the arm's mean (toptwo.h) and the draws spread a block.
 */
#include "policies/fc.h"
#include "base/ser.h"
#include "policies/order.h"
#include "policies/policy.h"
#include "policies/toptwo.h"

#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { T3C_BETA, T3C_THRESHOLD, T3C_NPARAMS };

static const struct policy_param_spec t3c_params[] = {
    [T3C_BETA] = {.name = "beta",
                  .type = POLICY_PARAM_NUM,
                  .def = 0.5,
                  .min = 0,
                  .max = 1,
                  .doc = "probability of pulling the leader; 1/2 is Shang et al. 2020's default "
                         "(within a factor 2 of optimal)"},
    [T3C_THRESHOLD] = FC_GLR_PARAM_THRESHOLD,
    [T3C_NPARAMS] = {.name = NULL},
};

struct t3c {
    struct fc_glr glr; /* first: fc_glr_state_done/recommend read the state as this */
    size_t k;
    double beta;
    double *val; /* scratch: the draw θ, then the W_j */
};

static void t3c_fini(void *state)
{
    struct t3c *s = state;
    if (s == NULL)
        return;
    free(s->val);
    fc_glr_fini(&s->glr);
    free(s);
}

static int t3c_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct t3c *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->k = ctx->n_arms[0];
    s->beta = policy_param(ctx, T3C_BETA);
    s->val = calloc(s->k, sizeof *s->val);
    if (s->val == NULL || fc_glr_init(&s->glr, ctx, T3C_THRESHOLD) != 0)
        goto nomem;
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    t3c_fini(s);
    return -1;
}

static int t3c_select(void *state, const struct policy_ctx *ctx, int bandit,
                      struct policy_pick *pick)
{
    struct t3c *s = state;
    const struct stats_arm *a = ctx->arms[0];
    (void)bandit;
    pick->bandit = 0;
    size_t first = toptwo_first_pull(ctx->rng, a, s->k);
    if (first != (size_t)-1) {
        pick->arm = first;
        return POLICY_OK;
    }
    for (size_t i = 0; i < s->k; i++)
        s->val[i] = gsl_ran_beta(ctx->rng, a[i].alpha, a[i].beta);
    size_t leader = order_argmax(ctx->rng, s->val, NULL, s->k);
    if (gsl_rng_uniform(ctx->rng) < s->beta) {
        pick->arm = leader;
        return POLICY_OK;
    }
    pick->arm = toptwo_challenger(ctx->rng, a, s->k, leader, ctx->epsilon, 0, s->val);
    return POLICY_OK;
}

/* Proven with the proven GLR threshold; the heuristic one has no proof. */
static int t3c_stop_proven(const struct policy_params *p)
{
    return p->values[T3C_THRESHOLD] == 0;
}

static void t3c_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct t3c *t = state;
    (void)ctx;
    fc_glr_snap(&t->glr, s);
    ser_expect(s, t->k);
    ser_f64s(s, t->val, t->k);
}

const struct policy_ops policy_t3c = {
    .name = "t3c",
    .summary = "T3C top two: Thompson leader, transportation-cost challenger, β coin (Shang et "
               "al. 2020), stopped by the GLR rule",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_OWN_STOP | POLICY_F_GLR_STOP | POLICY_F_BAYES,
    .params = t3c_params,
    .init = t3c_init,
    .fini = t3c_fini,
    .select = t3c_select,
    .update = NULL,
    .done = fc_glr_state_done,
    .recommend = fc_glr_state_recommend,
    .stop_proven = t3c_stop_proven,
    .snap = t3c_snap,
};
