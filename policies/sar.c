/*
 * sar.c — Successive Accepts and Rejects (Bubeck, Wang & Viswanathan 2013),
 * for top m in one bandit (their Fig. 1) and for M bandits pooled (Fig. 2).
 *
 * Phases as SR's, over the P = Σ_b K_b arms of the pool:
 *   n_k = ⌈(N − P) / (loḡ(P) (P + 1 − k))⌉, k = 1..P−1, loḡ(P) = 1/2 + Σ_{i=2..P} 1/i,
 * with N the experiment's whole budget. After each phase, in every bandit b
 * not settled yet, with m_b arms still to accept among its active arms
 * sorted by μ̂ (σ(1) ≥ σ(2) ≥ …), the top-m_b gaps are
 *   High (the m_b best):  Δ̂_i = μ̂_i − μ̂_σ(m_b+1),
 *   Low (the others):     Δ̂_i = μ̂_σ(m_b) − μ̂_i,
 * and the arm with the largest gap over all bandits is deactivated: accepted
 * if it is in its bandit's High set, else rejected. Ties go to rejection
 * (Fig. 1 accepts only when Δ̂_best > Δ̂_worst), then uniformly at random.
 * A bandit is settled when m_b = 0 (its other arms are rejected) or m_b
 * equals its active arms (they are accepted); its arms leave the pool.
 *
 * One bandit: this is exactly Fig. 1 (the largest High gap is σ(1)'s, the
 * largest Low gap σ(K+1−k)'s). M bandits, m = 1: exactly Fig. 2 as
 * docs/policy-formulas.md states it — the best arm's gap (best − second) never exceeds
 * its bandit's worst arm's gap (best − worst), so ties-to-rejection means a
 * bandit's empirical best is never deactivated, and a bandit whose last
 * rival is rejected accepts its survivor. M bandits with m > 1 (our
 * decision; the paper treats m = 1 only): the same pooled rule with each
 * bandit's own m_b and top-m_b gaps, which is Fig. 1 inside each bandit and
 * Fig. 2 across them.
 *
 * Budget: phases cover the pool; the phases run hand out at most N (SR's
 * bound). A settlement takes every arm of its bandit out of the pool at
 * once (M > 1: a bandit whose last rival is rejected accepts its survivor;
 * m > 1: the rest of a bandit whose top set is accepted is rejected), so
 * the pool runs out of arms before the phases run out, and as in the paper
 * part of N was left over (1/3 of it with 3 bandits of 3 arms: issue 12).
 * Our decision: when a phase ends with fewer active arms than the
 * schedule planned for, the remaining phases are planned again as SAR over
 * the A arms left with what is left of the budget, their samples counted
 * (N' = N − used + A·n_k; n'_j = ⌈(N' − A) / (loḡ(A)(A + 1 − j))⌉), so
 * the run spends N as a single SR run would. Every later phase gets at
 * least the samples the first plan gave it, so the paper's bound still
 * holds. One bandit with m = 1 removes exactly one arm per phase and is
 * never planned again (Fig. 1 exactly). With late rewards the phases'
 * waits spend some of N round-robin (phases.h).
 *
 * With a request naming a bandit, the pull is that bandit's active arm of
 * least n + pending (its share of the phase, then round-robin extras); a
 * settled bandit answers POLICY_DONE and the engine serves its accepted set.
 */
#include "policies/phases.h"
#include "policies/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void sar_replan(struct phases *ph, const struct policy_ctx *ctx, size_t next);

static void sar_decide(struct phases *ph, const struct policy_ctx *ctx, size_t phase)
{
    /* Gaps of every active arm in unsettled bandits; the largest gap wins,
     * Low arms (rejections) before High (acceptances). */
    double best = -INFINITY;
    int best_low = 0;
    size_t ncand = 0;
    for (size_t b = 0; b < ph->nb; b++) {
        if (ph->settled[b])
            continue;
        size_t na = phases_order_active(ph, ctx, b);
        unsigned mb = ph->need[b];
        const struct stats_arm *a = ctx->arms[b];
        double mu_m = a[ph->order[mb - 1]].mean, mu_m1 = a[ph->order[mb]].mean;
        for (size_t r = 0; r < na; r++) {
            size_t i = ph->order[r];
            int low = r >= mb;
            /* An arm tied with the boundary has gap 0 in either set; call it
             * Low so that an all-tied pool rejects rather than accepts. */
            if (!low && a[i].mean == mu_m1)
                low = 1;
            double g = low ? mu_m - a[i].mean : a[i].mean - mu_m1;
            if (g > best || (g == best && low && !best_low)) {
                best = g;
                best_low = low;
                ncand = 0;
            }
            if (g == best && low == best_low)
                ph->cand[ncand++] = ph->off[b] + i;
        }
    }
    if (ncand == 0)
        return; /* every bandit settled */
    size_t f = ph->cand[rng_index(ctx->rng, ncand)];
    if (best_low)
        phases_reject(ph, f);
    else
        phases_accept(ph, f);
    sar_replan(ph, ctx, phase + 1);
}

/* Active arms of the unsettled bandits. */
static size_t active_arms(const struct phases *ph)
{
    size_t a = 0;
    for (size_t b = 0; b < ph->nb; b++)
        if (!ph->settled[b])
            a += ph->n_active[b];
    return a;
}

/* Phases `next`.. planned again when the pool holds fewer arms than the
 * schedule planned for them (see the top of the file). */
static void sar_replan(struct phases *ph, const struct policy_ctx *ctx, size_t next)
{
    size_t a = active_arms(ph);
    if (next == 0 || next >= ph->nphases || a < 2 || a >= ph->total - next)
        return;
    uint64_t used = 0;
    for (size_t b = 0; b < ph->nb; b++)
        for (size_t i = 0; i < ctx->n_arms[b]; i++)
            used += ctx->arms[b][i].n + ctx->arms[b][i].pending;
    uint64_t t0 = ph->target[next - 1];
    double left = ctx->budget > used ? (double)(ctx->budget - used) : 0.0;
    double lbar = 0.5;
    for (size_t i = 2; i <= a; i++)
        lbar += 1.0 / (double)i;
    double spread = left + (double)a * (double)t0 - (double)a;
    uint64_t prev = t0;
    for (size_t j = 1; next + j - 1 < ph->nphases; j++) {
        uint64_t t = prev;
        if (j < a && spread > 0) {
            double x = spread / (lbar * (double)(a + 1 - j));
            t = (uint64_t)ceil(x * (1 - 1e-12));
        }
        if (t < prev)
            t = prev; /* cumulative targets never fall */
        if (t > ph->target[next + j - 1] || j >= a)
            ph->target[next + j - 1] = t;
        prev = ph->target[next + j - 1];
    }
}

/* The phases' cumulative per-arm targets for budget N over the pool. */
static void sar_plan(struct phases *ph, uint64_t budget, size_t pool)
{
    double lbar = 0.5;
    for (size_t i = 2; i <= pool; i++)
        lbar += 1.0 / (double)i;
    for (size_t k = 1; k < pool; k++) {
        double x = (double)(budget - pool) / (lbar * (double)(pool + 1 - k));
        ph->target[k - 1] = (uint64_t)ceil(x * (1 - 1e-12)); /* an exact integer stays put */
    }
}

static void sar_fini(void *state)
{
    phases_fini(state);
    free(state);
}

/* The budget must give every arm of the pool more than a pull. */
static int sar_budget_check(uint64_t budget, size_t pool, char *err, size_t errlen)
{
    if (budget > pool)
        return 0;
    snprintf(err, errlen, "goal.budget: sar needs more than one pull per arm (%zu arms)", pool);
    return -1;
}

static int sar_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    size_t pool = 0;
    for (size_t b = 0; b < ctx->n_bandits; b++)
        pool += ctx->n_arms[b];
    if (sar_budget_check(ctx->budget, pool, err, errlen) != 0)
        return -1;
    struct phases *ph = calloc(1, sizeof *ph);
    if (ph == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (phases_init(ph, ctx, pool - 1, sar_decide, err, errlen) != 0) {
        sar_fini(ph);
        return -1;
    }
    sar_plan(ph, ctx->budget, pool);
    *state = ph;
    return 0;
}

/* A budget edit: the schedule again from the new budget, and again over
 * the arms left if settlements took some out (sar_replan). */
static int sar_rebudget(void *state, const struct policy_ctx *ctx, int check, char *err,
                        size_t errlen)
{
    struct phases *ph = state;
    if (sar_budget_check(ctx->budget, ph->total, err, errlen) != 0)
        return -1;
    if (!check) {
        sar_plan(ph, ctx->budget, ph->total);
        sar_replan(ph, ctx, ph->phase);
    }
    return 0;
}

const struct policy_ops policy_sar = {
    .name = "sar",
    .summary =
        "Successive Accepts and Rejects (Bubeck et al. 2013): top m, one or M bandits pooled",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_MULTI | POLICY_F_OWN_STOP |
             POLICY_F_PHASES,
    .params = NULL,
    .init = sar_init,
    .fini = sar_fini,
    .select = phases_select,
    .update = phases_update,
    .done = phases_done,
    .recommend = phases_recommend,
    .rebudget = sar_rebudget,
    .snap = phases_state_snap,
};
