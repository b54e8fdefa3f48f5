/*
 * thompson.c — regret-minimising Thompson sampling (Thompson 1933; Agrawal &
 * Goyal 2012 for Bernoulli rewards and the Bernoulli trick the engine applies
 * to rewards in (0, 1)). For users who want to earn while they learn: each
 * pull goes to the arm with the largest draw from its Beta posterior, so the
 * pulls concentrate on the best arm and the others are starved — not a pure-
 * exploration policy. It has no PAC stop of its own (POLICY_F_REGRET: the
 * engine's default rule is none; a budget, a manual stop or an explicit
 * stop_rule ends it), and the status still reports δᶜ and ρ̄ for what they
 * are worth on such skewed counts.
 *
 * Pending pulls are ignored on purpose: a fantasised outcome drawn from the
 * posterior predictive leaves the law of the next posterior sample unchanged
 * (gcp.h), and Thompson sampling's own randomness already spreads a batch of
 * pulls over the arms in proportion to their probability of being best —
 * which is the point of using it under delayed feedback (Chapelle & Li 2011).
 * One instance per bandit (the engine picks the bandit when the request names
 * none); ties at random; the prior is the engine's.
 */
#include "policies/policy.h"
#include "base/ser.h"
#include "policies/order.h"

#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

struct thompson {
    double *theta; /* K sampled means, sized once: select never allocates */
};

static void thompson_fini(void *state)
{
    struct thompson *s = state;
    if (s == NULL)
        return;
    free(s->theta);
    free(s);
}

static int thompson_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    size_t kmax = 0;
    for (size_t b = 0; b < ctx->n_bandits; b++)
        if (ctx->n_arms[b] > kmax)
            kmax = ctx->n_arms[b];
    struct thompson *s = calloc(1, sizeof *s);
    if (s == NULL || (s->theta = calloc(kmax, sizeof *s->theta)) == NULL) {
        snprintf(err, errlen, "out of memory");
        thompson_fini(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int thompson_select(void *state, const struct policy_ctx *ctx, int bandit,
                           struct policy_pick *pick)
{
    struct thompson *s = state;
    size_t b = bandit >= 0 ? (size_t)bandit : 0;
    const struct stats_arm *a = ctx->arms[b];
    size_t k = ctx->n_arms[b];
    for (size_t j = 0; j < k; j++)
        s->theta[j] = gsl_ran_beta(ctx->rng, a[j].alpha, a[j].beta);
    pick->bandit = b;
    pick->arm = policy_first_pulls(ctx->rng, a, k, order_argmax(ctx->rng, s->theta, NULL, k));
    return POLICY_OK;
}

static void thompson_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct thompson *t = state;
    size_t kmax = 0;
    for (size_t b = 0; b < ctx->n_bandits; b++)
        if (ctx->n_arms[b] > kmax)
            kmax = ctx->n_arms[b];
    ser_f64s(s, t->theta, kmax);
}

const struct policy_ops policy_thompson = {
    .name = "thompson",
    .summary = "Thompson sampling (Beta posteriors): regret-minimising, earns while it learns; "
               "no PAC stop",
    .flags = POLICY_F_REGRET | POLICY_F_BAYES | POLICY_F_TOPM,
    .params = NULL,
    .init = thompson_init,
    .fini = thompson_fini,
    .select = thompson_select,
    .snap = thompson_snap,
};
