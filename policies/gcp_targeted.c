/*
 * gcp_targeted.c — targeted greedy confidence pursuit (Bachman & Precup
 * 2013, §5.1, Alg. 4): only bandits where a given target arm is best count
 * (a sponsor's new drug, tried in many sub-populations).
 *
 * Bandit selection: sample every unfinished bandit's returns from the Beta
 * posteriors; a bandit whose sample does not have the target arm best gets
 * ĉ = ∞, the others their eq. 12 completion cost; resample until some bandit
 * has a finite cost, then take the argmin (ties at random). The paper bounds
 * the resampling loop without giving the bound: param `resample` (default
 * 32), after which Alg. 3 (`gcp`'s bandit selection) decides. Arm selection
 * inside the bandit is Alg. 2, and a bandit is done when ρ̄ ≥ τ — also when
 * the confident answer is that the target arm is *not* best there: that
 * bandit is settled and gets no more pulls.
 *
 * Top-m (m > 1) generalises "the target arm is best" to "the target arm is
 * in the sampled top m": fewer than m arms strictly above it (a tie counts
 * for the target, as the paper's line 06 rejects only r̂_i1 < max_j r̂_ij).
 * Pending pulls are treated as in gcp.h.
 */
#include "policies/gcp.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>

#include <gsl/gsl_randist.h>

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { GCP_TARGETED_RESAMPLE, GCP_TARGETED_NPARAMS };

static const struct policy_param_spec targeted_params[] = {
    [GCP_TARGETED_RESAMPLE] =
        {.name = "resample",
         .type = POLICY_PARAM_INT,
         .def = 32,
         .min = 1,
         .max = 1000,
         .doc = "posterior resamples until some bandit's sample has the target arm best (Bachman & "
                "Precup 2013 Alg. 4, lines 02-09); then Alg. 3 decides"},
    [GCP_TARGETED_NPARAMS] = {.name = NULL},
};

static int targeted_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    if (ctx->target_arm < 0) {
        /* The engine validates this; a direct caller may not have. */
        snprintf(err, errlen, "target_arm: policy gcp-targeted needs a target arm");
        return -1;
    }
    for (size_t b = 0; b < ctx->n_bandits; b++)
        if ((size_t)ctx->target_arm >= ctx->n_arms[b]) {
            snprintf(err, errlen, "target_arm: no such arm in bandit %zu", b);
            return -1;
        }
    unsigned tries = (unsigned)policy_param(ctx, GCP_TARGETED_RESAMPLE);
    struct gcp *s = NULL;
    if (gcp_new(&s, ctx, GCP_BANDITS_COST, tries, err, errlen) != 0)
        return -1;
    *state = s;
    return 0;
}

/* Sample bandit b's returns, the target arm first; stop drawing as soon as m
 * arms are strictly above the target (the sample is rejected: ĉ = ∞, line
 * 06), which keeps the loop cheap where the target is rarely best. Returns
 * 1 with the full sample in s->theta and its gap location in *gamma, or 0. */
static int sample_if_target_top(struct gcp *s, const struct policy_ctx *ctx, size_t b,
                                size_t target, double *gamma)
{
    const struct stats_arm *a = ctx->arms[b];
    size_t k = ctx->n_arms[b];
    double t = gsl_ran_beta(ctx->rng, a[target].alpha, a[target].beta);
    s->theta[target] = t;
    unsigned above = 0;
    for (size_t j = 0; j < k; j++) {
        if (j == target)
            continue;
        s->theta[j] = gsl_ran_beta(ctx->rng, a[j].alpha, a[j].beta);
        if (s->theta[j] > t && ++above >= s->m)
            return 0;
    }
    for (size_t j = 0; j < k; j++)
        s->work[j] = s->theta[j];
    *gamma = gcp_gap_location(s->work, k, s->m);
    return 1;
}

/* Alg. 4's loop; (size_t)-1 when the tries run out. */
static size_t pick_bandit_targeted(struct gcp *s, const struct policy_ctx *ctx)
{
    size_t target = (size_t)ctx->target_arm;
    for (unsigned t = 0; t < s->resample; t++) {
        int found = 0;
        for (size_t b = 0; b < s->nb; b++) {
            s->cost[b] = INFINITY;
            double gamma;
            if (!s->cand[b] || !sample_if_target_top(s, ctx, b, target, &gamma))
                continue;
            s->cost[b] = gcp_cost(s, ctx->n_arms[b], gamma);
            found |= isfinite(s->cost[b]);
        }
        if (found)
            return order_argmin(ctx->rng, s->cost, s->cand, s->nb);
    }
    return (size_t)-1;
}

/* Alg. 4, with the paper's fallback to Alg. 3. */
static size_t choose_bandit(struct gcp *s, const struct policy_ctx *ctx)
{
    size_t b = pick_bandit_targeted(s, ctx);
    return b != (size_t)-1 ? b : gcp_pick_bandit_cost(s, ctx);
}

static int targeted_select(void *state, const struct policy_ctx *ctx, int bandit,
                           struct policy_pick *pick)
{
    return gcp_select_with(state, ctx, bandit, pick, choose_bandit);
}

const struct policy_ops policy_gcp_targeted = {
    .name = "gcp-targeted",
    .summary = "Targeted greedy confidence pursuit (Bachman & Precup 2013, Alg. 4): pursue the "
               "bandits where the target arm is best",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_FIXED_BUDGET | POLICY_F_MULTI | POLICY_F_TOPM |
             POLICY_F_OWN_STOP | POLICY_F_RHO_STOP | POLICY_F_BAYES | POLICY_F_NEEDS_TARGET,
    .params = targeted_params,
    .init = targeted_init,
    .fini = gcp_fini,
    .select = targeted_select,
    .update = gcp_update,
    .done = gcp_done,
    .recommend = gcp_recommend,
    .rebudget = policy_rebudget_any, /* the budget is the engine's cap */
    .stop_proven = gcp_stop_proven,
    .snap = gcp_snap,
};
