/*
 * phases.c — phase machinery of sr, sar and seq-halving (see phases.h):
 * round-robin hand-out of cumulative per-arm targets, phase completion on
 * rewarded samples, settling of bandits, and the recommendation.
 */
#include "policies/phases.h"
#include "base/ser.h"
#include "policies/order.h"
#include "policies/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int phases_init(struct phases *ph, const struct policy_ctx *ctx, size_t nphases,
                phases_decide_fn *decide, char *err, size_t errlen)
{
    memset(ph, 0, sizeof *ph);
    ph->nb = ctx->n_bandits;
    ph->nphases = nphases;
    ph->decide = decide;
    size_t kmax = 0;
    for (size_t b = 0; b < ph->nb; b++) {
        ph->total += ctx->n_arms[b];
        if (ctx->n_arms[b] > kmax)
            kmax = ctx->n_arms[b];
    }
    ph->off = calloc(ph->nb + 1, sizeof *ph->off);
    ph->bandit_of = calloc(ph->total, sizeof *ph->bandit_of);
    ph->status = calloc(ph->total, 1);
    ph->need = calloc(ph->nb, sizeof *ph->need);
    ph->n_active = calloc(ph->nb, sizeof *ph->n_active);
    ph->settled = calloc(ph->nb, 1);
    ph->target = calloc(nphases ? nphases : 1, sizeof *ph->target);
    ph->rank = calloc(ph->total, sizeof *ph->rank);
    ph->order = calloc(kmax, sizeof *ph->order);
    ph->gap = calloc(ph->total, sizeof *ph->gap);
    ph->cand = calloc(ph->total, sizeof *ph->cand);
    ph->mask = calloc(ph->total, 1);
    if (!ph->off || !ph->bandit_of || !ph->status || !ph->need || !ph->n_active || !ph->settled ||
        !ph->target || !ph->rank || !ph->order || !ph->gap || !ph->cand || !ph->mask) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t b = 0; b < ph->nb; b++) {
        ph->off[b + 1] = ph->off[b] + ctx->n_arms[b];
        ph->need[b] = ctx->m;
        ph->n_active[b] = ctx->n_arms[b];
        for (size_t f = ph->off[b]; f < ph->off[b + 1]; f++)
            ph->bandit_of[f] = b;
        /* The tie-break order recommend() uses without touching the rng. */
        order_rank_draw(ctx->rng, &ph->rank[ph->off[b]], ctx->n_arms[b]);
    }
    return 0;
}

void phases_snap(struct phases *ph, struct ser *s)
{
    ser_expect(s, ph->nb);
    ser_expect(s, ph->total);
    ser_expect(s, ph->nphases);
    ser_bytes(s, ph->status, ph->total);
    ser_uints(s, ph->need, ph->nb);
    ser_sizes(s, ph->n_active, ph->nb);
    ser_flags(s, ph->settled, ph->nb);
    ser_size(s, &ph->n_settled);
    ser_u64s(s, ph->target, ph->nphases ? ph->nphases : 1);
    ser_size(s, &ph->phase);
    ser_u32s(s, ph->rank, ph->total);
    if (ph->phase > ph->nphases || ph->n_settled > ph->nb)
        ser_fail(s);
    /* each bandit: its statuses known, its counts within its arms, its
     * ranks a permutation (bandit after bandit, as phases_init draws them) */
    for (size_t b = 0; s->reading && b < ph->nb && ser_ok(s); b++) {
        size_t k = ph->off[b + 1] - ph->off[b], active = 0;
        for (size_t i = ph->off[b]; i < ph->off[b + 1]; i++) {
            ser_check(s, ph->status[i] <= PHASES_REJECTED);
            active += ph->status[i] == PHASES_ACTIVE;
        }
        ser_check(s, ph->n_active[b] == active && ph->need[b] <= k);
        ser_check_perm(s, &ph->rank[ph->off[b]], k);
    }
}

void phases_state_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    (void)ctx;
    phases_snap(state, s);
}

void phases_fini(struct phases *ph)
{
    if (ph == NULL)
        return;
    free(ph->off);
    free(ph->bandit_of);
    free(ph->status);
    free(ph->need);
    free(ph->n_active);
    free(ph->settled);
    free(ph->target);
    free(ph->rank);
    free(ph->order);
    free(ph->gap);
    free(ph->cand);
    free(ph->mask);
    memset(ph, 0, sizeof *ph);
}

int phases_finished(const struct phases *ph)
{
    return ph->n_settled == ph->nb;
}

/* Settle bandit b when its top set is decided: with nothing left to accept
 * the remaining active arms are rejected, with as many to accept as are
 * active they are all accepted (SAR's edge cases, Bubeck et al. Fig. 1). */
static void settle(struct phases *ph, size_t b)
{
    if (ph->settled[b])
        return;
    if (ph->need[b] != 0 && ph->need[b] < ph->n_active[b])
        return;
    unsigned char to = ph->need[b] == 0 ? PHASES_REJECTED : PHASES_ACCEPTED;
    for (size_t f = ph->off[b]; f < ph->off[b + 1]; f++)
        if (ph->status[f] == PHASES_ACTIVE)
            ph->status[f] = to;
    ph->need[b] = 0;
    ph->n_active[b] = 0;
    ph->settled[b] = 1;
    ph->n_settled++;
}

void phases_accept(struct phases *ph, size_t flat)
{
    size_t b = ph->bandit_of[flat];
    if (ph->status[flat] != PHASES_ACTIVE || ph->need[b] == 0)
        return;
    ph->status[flat] = PHASES_ACCEPTED;
    ph->n_active[b]--;
    ph->need[b]--;
    settle(ph, b);
}

void phases_reject(struct phases *ph, size_t flat)
{
    size_t b = ph->bandit_of[flat];
    if (ph->status[flat] != PHASES_ACTIVE)
        return;
    ph->status[flat] = PHASES_REJECTED;
    ph->n_active[b]--;
    settle(ph, b);
}

uint64_t phases_plan_total(const uint64_t *target, const size_t *active, size_t nphases)
{
    uint64_t total = 0, prev = 0;
    for (size_t k = 0; k < nphases; k++) {
        total += (uint64_t)active[k] * (target[k] - prev);
        prev = target[k];
    }
    return total;
}

size_t phases_order_active(struct phases *ph, const struct policy_ctx *ctx, size_t b)
{
    size_t k = ctx->n_arms[b];
    order_by_mean(ctx->rng, ctx->arms[b], k, ph->order);
    size_t n = 0;
    for (size_t r = 0; r < k; r++)
        if (ph->status[ph->off[b] + ph->order[r]] == PHASES_ACTIVE)
            ph->order[n++] = ph->order[r];
    return n;
}

/* Has the current phase ended? Every active arm of an unsettled bandit has
 * its target of rewarded samples, or can get no more pulls (its bandit is
 * done in the engine) and has none pending. */
static int phase_complete(const struct phases *ph, const struct policy_ctx *ctx)
{
    uint64_t t = ph->target[ph->phase];
    for (size_t b = 0; b < ph->nb; b++) {
        if (ph->settled[b])
            continue;
        const struct stats_arm *a = ctx->arms[b];
        int closed = ctx->bandit_done[b] != 0;
        for (size_t i = 0; i < ctx->n_arms[b]; i++) {
            if (ph->status[ph->off[b] + i] != PHASES_ACTIVE)
                continue;
            if (a[i].n < t && !(closed && a[i].pending == 0))
                return 0;
        }
    }
    return 1;
}

/* The active arm of bandit b (not marked in skip, NULL = none) of largest
 * mean, ties by rank; (size_t)-1 when there is none. Never draws. */
static size_t best_active(const struct phases *ph, const struct policy_ctx *ctx, size_t b,
                          const unsigned char *skip)
{
    const size_t o = ph->off[b];
    const struct stats_arm *a = ctx->arms[b];
    size_t best = (size_t)-1;
    for (size_t i = 0; i < ctx->n_arms[b]; i++) {
        if (ph->status[o + i] != PHASES_ACTIVE || (skip != NULL && skip[i]))
            continue;
        if (best == (size_t)-1 || a[i].mean > a[best].mean ||
            (a[i].mean == a[best].mean && ph->rank[o + i] < ph->rank[o + best]))
            best = i;
    }
    return best;
}

/* After the last phase every bandit should be settled; if a plan ever left
 * one open, accept its best active arms (ties by rank) rather than stall. */
static void settle_leftovers(struct phases *ph, const struct policy_ctx *ctx)
{
    for (size_t b = 0; b < ph->nb; b++)
        while (!ph->settled[b])
            phases_accept(ph, ph->off[b] + best_active(ph, ctx, b, NULL));
}

/* End every phase whose samples are in. */
static void advance(struct phases *ph, const struct policy_ctx *ctx)
{
    while (!phases_finished(ph) && ph->phase < ph->nphases && phase_complete(ph, ctx)) {
        ph->decide(ph, ctx, ph->phase);
        ph->phase++;
    }
    if (ph->phase >= ph->nphases && !phases_finished(ph))
        settle_leftovers(ph, ctx);
}

/* One pass over the active arms of the unsettled bandits in scope (the one
 * asked for, else those the engine has not marked done). Without pick: the
 * least n + pending into *least, returning how many arms share it. With
 * pick: the arm number j (0-based) among those at *least into pick,
 * returning 1 (0 when there is none). */
static size_t scan(const struct phases *ph, const struct policy_ctx *ctx, int bandit,
                   uint64_t *least, size_t j, struct policy_pick *pick)
{
    size_t ties = 0;
    for (size_t b = 0; b < ph->nb; b++) {
        if (bandit >= 0 ? b != (size_t)bandit : ctx->bandit_done[b] != 0)
            continue;
        if (ph->settled[b])
            continue;
        const struct stats_arm *a = ctx->arms[b];
        for (size_t i = 0; i < ctx->n_arms[b]; i++) {
            if (ph->status[ph->off[b] + i] != PHASES_ACTIVE)
                continue;
            uint64_t h = a[i].n + a[i].pending;
            if (pick == NULL) {
                if (h < *least) {
                    *least = h;
                    ties = 1;
                } else if (h == *least) {
                    ties++;
                }
            } else if (h == *least && j-- == 0) {
                pick->bandit = b;
                pick->arm = i;
                return 1;
            }
        }
    }
    return ties;
}

int phases_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick)
{
    struct phases *ph = state;
    advance(ph, ctx);
    /* The active arm of least n + pending in scope, ties uniformly at random:
     * first pass finds the least value and counts its ties, one draw picks
     * the tie, the second pass finds it. */
    uint64_t least = UINT64_MAX;
    size_t ties = scan(ph, ctx, bandit, &least, 0, NULL);
    if (ties == 0)
        return POLICY_DONE;
    size_t j = rng_index(ctx->rng, ties);
    if (scan(ph, ctx, bandit, &least, j, pick) != 1)
        abort(); /* unreachable: the tie counted above */
    return POLICY_OK;
}

void phases_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                   enum policy_event ev, double reward)
{
    (void)bandit;
    (void)arm;
    (void)ev;
    (void)reward;
    advance(state, ctx);
}

int phases_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    (void)ctx;
    const struct phases *ph = state;
    return ph->settled[bandit];
}

void phases_recommend(void *state, const struct policy_ctx *ctx, size_t bandit, unsigned char *high)
{
    const struct phases *ph = state;
    size_t k = ctx->n_arms[bandit];
    for (size_t i = 0; i < k; i++)
        high[i] = ph->status[ph->off[bandit] + i] == PHASES_ACCEPTED;
    /* Not settled yet (a status call mid-run): fill the places still open
     * with the best active arms by mean, ties by the init-time rank. */
    for (unsigned r = 0; r < ph->need[bandit]; r++) {
        size_t best = best_active(ph, ctx, bandit, high);
        if (best == (size_t)-1)
            break;
        high[best] = 1;
    }
}
