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
#include "base/ser.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct direct {
    struct fc_elim e; /* first: the fc_elim_* entries take the state as is */
};

static void direct_fini(void *state)
{
    struct direct *s = state;
    if (s == NULL)
        return;
    fc_elim_fini(&s->e);
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

/* Algorithm 1, line 4 (the one phase is in): the m best sample means, ties
 * at random. */
static void direct_finish(struct fc_elim *e, const struct policy_ctx *ctx)
{
    size_t n = fc_elim_order_active(e, ctx->rng);
    for (size_t r = 0; r < n; r++)
        e->chosen[e->idx[r]] = r < e->m;
    e->finished = 1;
}

static int direct_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct direct *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (fc_elim_need_epsilon(ctx, "direct", err, errlen) != 0)
        goto fail;
    uint64_t q = direct_quota(ctx->n_arms[0], ctx->epsilon, ctx->delta);
    if (q == 0) {
        fc_elim_too_long("direct", err, errlen);
        goto fail;
    }
    if (fc_elim_init(&s->e, ctx, direct_finish, err, errlen) != 0)
        goto fail;
    fc_phases_begin(&s->e.ph, ctx->rng, q, 1);
    *state = s;
    return 0;
fail:
    direct_fini(s);
    return -1;
}

static void direct_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct direct *d = state;
    (void)ctx;
    fc_elim_snap(&d->e, s);
}

const struct policy_ops policy_direct = {
    .name = "direct",
    .summary = "DIRECT (Kalyanakrishnan & Stone 2010, Alg. 1): every arm ⌈(2/ε²) ln(K/δ)⌉ times",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_NEEDS_EPSILON |
             POLICY_F_OWN_STOP | POLICY_F_PHASES,
    .params = NULL,
    .init = direct_init,
    .fini = direct_fini,
    .select = fc_elim_select,
    .update = fc_elim_update,
    .done = fc_elim_done,
    .recommend = fc_elim_recommend,
    .snap = direct_snap,
};
