/*
 * uniform.c — the A/B baseline: spread pulls evenly over every arm of every
 * unfinished bandit (round-robin in the synchronous case). Counting pending
 * pulls keeps the spread even when rewards come back late; ties go at random
 * so no arm is favoured by its position in the list.
 */
#include "policies/policy.h"
#include "policies/rng.h"

#include <stdlib.h>

// NOLINTNEXTLINE(readability-non-const-parameter): policy_ops.init's signature
static int uniform_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    (void)ctx;
    (void)err;
    (void)errlen;
    *state = NULL;
    return 0;
}

static int uniform_select(void *state, const struct policy_ctx *ctx, int bandit,
                          struct policy_pick *pick)
{
    (void)state;
    uint64_t best = 0;
    size_t ties = 0;
    for (size_t b = 0; b < ctx->n_bandits; b++) {
        if ((bandit >= 0 && b != (size_t)bandit) || (bandit < 0 && ctx->bandit_done[b]))
            continue;
        const struct stats_arm *a = ctx->arms[b];
        for (size_t i = 0; i < ctx->n_arms[b]; i++) {
            uint64_t h = a[i].n + a[i].pending;
            if (ties == 0 || h < best) {
                best = h;
                ties = 1;
                pick->bandit = b;
                pick->arm = i;
            } else if (h == best && rng_index(ctx->rng, ++ties) == 0) {
                pick->bandit = b;
                pick->arm = i;
            }
        }
    }
    return ties > 0 ? POLICY_OK : POLICY_DONE;
}

const struct policy_ops policy_uniform = {
    .name = "uniform",
    .summary = "Uniform allocation (round-robin over arms and bandits): the A/B baseline",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_FIXED_CONFIDENCE | POLICY_F_MULTI | POLICY_F_TOPM,
    .params = NULL,
    .init = uniform_init,
    .fini = NULL,
    .select = uniform_select,
    .rebudget = policy_rebudget_any, /* round-robin plans nothing from it */
    .snap = policy_snap_stateless,
};
