/*
 * direct.c — DIRECT (Kalyanakrishnan & Stone 2010, Algorithm 1): pull every
 * arm ⌈(2/ε²) ln(K/δ)⌉ times and return the m best empirical means. By
 * Hoeffding and a union over the K arms (their Theorem 1) the returned set
 * is (ε, m)-optimal with probability 1 − δ. It has no adaptivity at all; it
 * is the yardstick the other policies are measured against, and the
 * worst-case cap ADAPT can be run under.
 *
 * One phase (fc.h): the quota is handed out once; select answers
 * POLICY_DONE as soon as every quota pull is out, and the final set is
 * computed when the last quota reward arrives. The means are those of the
 * quota samples (plus observations that arrive before an arm has its
 * quota): exactly the paper's sample.
 */
#include "policies/fc.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct direct {
    size_t k;
    unsigned m;
    struct fc_phases ph;
    int finished;
    unsigned char *chosen; /* the returned set, once finished */
    uint32_t *rank;        /* recommend()'s tie-break */
    size_t *idx;
    double *val;
};

static void direct_fini(void *state)
{
    struct direct *s = state;
    if (s == NULL)
        return;
    fc_phases_free(&s->ph);
    free(s->chosen);
    free(s->rank);
    free(s->idx);
    free(s->val);
    free(s);
}

/* The per-arm count of Algorithm 1, line 2; 0 when it exceeds the cap. */
static uint64_t direct_quota(size_t k, double eps, double delta)
{
    uint64_t q = fc_count(2.0 / (eps * eps) * log((double)k / delta));
    if (q == 0 || (double)q * (double)k > FC_MAX_PULLS)
        return 0;
    return q;
}

static int direct_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct direct *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->k = ctx->n_arms[0];
    s->m = ctx->m;
    if (!(ctx->epsilon > 0)) {
        snprintf(err, errlen, "goal.epsilon: direct needs epsilon > 0");
        direct_fini(s);
        return -1;
    }
    uint64_t q = direct_quota(s->k, ctx->epsilon, ctx->delta);
    if (q == 0) {
        snprintf(err, errlen, "goal.epsilon: too small for direct (more than %g pulls)",
                 FC_MAX_PULLS);
        direct_fini(s);
        return -1;
    }
    if (fc_phases_init(&s->ph, s->k) != 0)
        goto nomem;
    s->chosen = calloc(s->k, 1);
    s->rank = fc_rank_new(ctx->rng, s->k);
    s->idx = calloc(s->k, sizeof *s->idx);
    s->val = calloc(s->k, sizeof *s->val);
    if (!s->chosen || !s->rank || !s->idx || !s->val)
        goto nomem;
    for (size_t i = 0; i < s->k; i++)
        fc_phases_activate(&s->ph, i);
    fc_phases_begin(&s->ph, ctx->rng, q, 1);
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    direct_fini(s);
    return -1;
}

static int direct_select(void *state, const struct policy_ctx *ctx, int bandit,
                         struct policy_pick *pick)
{
    struct direct *s = state;
    (void)bandit;
    pick->bandit = 0;
    if (s->finished)
        return POLICY_DONE;
    return fc_phases_select(&s->ph, ctx, &pick->arm);
}

/* Algorithm 1, line 4: the m best sample means, ties at random. */
static void direct_finish(struct direct *s, const struct policy_ctx *ctx)
{
    for (size_t i = 0; i < s->k; i++) {
        s->val[i] = fc_phases_mean(&s->ph, i);
        s->idx[i] = i;
    }
    fc_shuffle(ctx->rng, s->idx, s->k);
    fc_sort_desc(s->idx, s->k, s->val, NULL);
    for (size_t r = 0; r < s->k; r++)
        s->chosen[s->idx[r]] = r < s->m;
    s->finished = 1;
}

static void direct_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                          enum policy_event ev, double reward)
{
    struct direct *s = state;
    (void)bandit;
    if (ev == POLICY_EV_RELEASE || s->finished)
        return;
    if (fc_phases_reward(&s->ph, arm, reward))
        direct_finish(s, ctx);
}

static int direct_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    (void)ctx;
    (void)bandit;
    return ((struct direct *)state)->finished;
}

static void direct_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                             unsigned char *high)
{
    struct direct *s = state;
    (void)bandit;
    if (s->finished) {
        for (size_t i = 0; i < s->k; i++)
            high[i] = s->chosen[i];
        return;
    }
    fc_mark_interim(ctx, NULL, NULL, s->m, s->rank, s->idx, s->val, high);
}

const struct policy_ops policy_direct = {
    .name = "direct",
    .summary = "DIRECT (Kalyanakrishnan & Stone 2010, Alg. 1): every arm ⌈(2/ε²) ln(K/δ)⌉ times",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_NEEDS_EPSILON | POLICY_F_OWN_STOP,
    .params = NULL,
    .init = direct_init,
    .fini = direct_fini,
    .select = direct_select,
    .update = direct_update,
    .done = direct_done,
    .recommend = direct_recommend,
};
