/*
 * sr.c — Successive Rejects (Audibert, Bubeck & Munos 2010; docs/policy-formulas.md).
 *
 * K − 1 phases; with loḡ(K) = 1/2 + Σ_{i=2..K} 1/i and n_0 = 0,
 *   n_k = ⌈(N − K) / (loḡ(K) (K + 1 − k))⌉,
 * phase k brings every active arm to n_k samples, then rejects the empirical
 * worst (ties at random). The last arm standing is the answer. These phases
 * hand out n_1 + … + n_{K−1} + n_{K−1} ≤ N pulls; as in the paper the
 * rounding leftover (fewer than K pulls) is not spent: once the last phase
 * is decided select() answers POLICY_DONE and the engine stops with
 * stop_reason "policy". (With late rewards the waits of the phases spend it
 * round-robin, and the engine caps the pulls at N: phases.h.)
 *
 * Top m (m > 1): Bubeck et al. (2013, §5) run SR with fewer phases "while
 * still using the full budget": K − m phases, rejecting until m arms remain.
 * We keep the shape of SR's schedule and rescale it so the K − m phases
 * spend the budget: n_k = ⌈(N − K) / (L_m (K + 1 − k))⌉ with
 *   L_m = 1 + Σ_{j=m+2..K} 1/j,
 * because the phases hand out (m + 1) n_{K−m} + Σ_{k<K−m} n_k
 * ≤ (N − K)/L_m · (1 + Σ_{j=m+2..K} 1/j) + K = N. For m = 1, L_1 = loḡ(K):
 * exactly Audibert et al.'s SR. (Bubeck et al. show SR is a poor top-m
 * policy; use sar for m > 1.)
 *
 * One bandit per instance (the engine splits the budget between bandits).
 */
#include "policies/phases.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Reject the empirical worst active arm, ties at random. */
static void sr_decide(struct phases *ph, const struct policy_ctx *ctx, size_t phase)
{
    (void)phase;
    size_t k = ctx->n_arms[0];
    for (size_t i = 0; i < k; i++) {
        ph->gap[i] = ctx->arms[0][i].mean;
        ph->mask[i] = ph->status[i] == PHASES_ACTIVE;
    }
    phases_reject(ph, order_argmin(ctx->rng, ph->gap, ph->mask, k));
}

/* SR's (rescaled for m > 1) schedule; returns the number of phases. */
static size_t sr_plan(uint64_t budget, size_t k, unsigned m, uint64_t *target)
{
    size_t phases = k - m;
    double l = 1.0;
    for (size_t j = m + 2; j <= k; j++)
        l += 1.0 / (double)j;
    for (size_t p = 1; p <= phases; p++) {
        double x = (double)(budget - k) / (l * (double)(k + 1 - p));
        /* The 1e-12 guards an exact integer against rounding up by an ulp. */
        target[p - 1] = (uint64_t)ceil(x * (1 - 1e-12));
    }
    return phases;
}

/* The budget (the instance's share) must give every arm more than a pull. */
static int sr_budget_check(const struct policy_ctx *ctx, char *err, size_t errlen)
{
    size_t k = ctx->n_arms[0];
    if (ctx->budget > k)
        return 0;
    snprintf(err, errlen, "goal.budget: sr needs more than one pull per arm (%zu arms)%s", k,
             ctx->n_bandits == 1 ? "" : " in each bandit's share");
    return -1;
}

static void sr_fini(void *state)
{
    phases_fini(state);
    free(state);
}

static int sr_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    size_t k = ctx->n_arms[0];
    if (sr_budget_check(ctx, err, errlen) != 0)
        return -1;
    struct phases *ph = calloc(1, sizeof *ph);
    if (ph == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (phases_init(ph, ctx, k - ctx->m, sr_decide, err, errlen) != 0) {
        sr_fini(ph);
        return -1;
    }
    sr_plan(ctx->budget, k, ctx->m, ph->target);
    *state = ph;
    return 0;
}

/* A budget edit: the schedule again from the new share (phases.h: the
 * phases already run keep the samples they had). */
static int sr_rebudget(void *state, const struct policy_ctx *ctx, int check, char *err,
                       size_t errlen)
{
    if (sr_budget_check(ctx, err, errlen) != 0)
        return -1;
    if (!check)
        sr_plan(ctx->budget, ctx->n_arms[0], ctx->m, ((struct phases *)state)->target);
    return 0;
}

const struct policy_ops policy_sr = {
    .name = "sr",
    .summary = "Successive Rejects (Audibert, Bubeck & Munos 2010): K−1 phases, reject the worst",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_OWN_STOP | POLICY_F_PHASES,
    .params = NULL,
    .init = sr_init,
    .fini = sr_fini,
    .select = phases_select,
    .update = phases_update,
    .done = phases_done,
    .recommend = phases_recommend,
    .rebudget = sr_rebudget,
    .snap = phases_state_snap,
};
