/*
 * fc.c — phase bookkeeping, the GLR stop and the interim recommendation
 * shared by the fixed-confidence policies (see fc.h for the asynchrony rules
 * they implement).
 */
#include "policies/fc.h"
#include "base/ser.h"
#include "policies/tas.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fc_phases_init(struct fc_phases *p, size_t k)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    p->active = calloc(k, 1);
    p->cnt = calloc(k, sizeof *p->cnt);
    p->sum = calloc(k, sizeof *p->sum);
    p->ccnt = calloc(k, sizeof *p->ccnt);
    p->csum = calloc(k, sizeof *p->csum);
    p->perm = calloc(k, sizeof *p->perm);
    if (!p->active || !p->cnt || !p->sum || !p->ccnt || !p->csum || !p->perm)
        return -1;
    return 0;
}

void fc_phases_free(struct fc_phases *p)
{
    free(p->active);
    free(p->cnt);
    free(p->sum);
    free(p->ccnt);
    free(p->csum);
    free(p->perm);
    memset(p, 0, sizeof *p);
}

void fc_phases_snap(struct fc_phases *p, struct ser *s)
{
    ser_expect(s, p->k);
    ser_u64(s, &p->quota);
    ser_int(s, &p->last);
    ser_size(s, &p->n_active);
    ser_size(s, &p->n_full);
    ser_flags(s, p->active, p->k);
    ser_u64s(s, p->cnt, p->k);
    ser_f64s(s, p->sum, p->k);
    ser_u64s(s, p->ccnt, p->k);
    ser_f64s(s, p->csum, p->k);
    ser_sizes(s, p->perm, p->k);
    ser_size(s, &p->n_perm);
    ser_size(s, &p->cursor);
    ser_u64(s, &p->qlvl);
    ser_u64(s, &p->xlvl);
    /* the cursor indexes perm (select's turn starts there): < n_perm, or 0 */
    if (p->n_perm > p->k || p->n_active > p->k || p->n_full > p->n_active ||
        (p->cursor != 0 && p->cursor >= p->n_perm))
        ser_fail(s);
    for (size_t i = 0; i < p->n_perm && ser_ok(s); i++)
        if (p->perm[i] >= p->k)
            ser_fail(s);
}

void fc_phases_activate(struct fc_phases *p, size_t i)
{
    if (p->active[i])
        return;
    p->active[i] = 1;
    p->n_active++;
    p->cnt[i] = p->ccnt[i] = 0;
    p->sum[i] = p->csum[i] = 0;
    if (p->quota == 0)
        p->n_full++;
}

void fc_phases_deactivate(struct fc_phases *p, size_t i)
{
    if (!p->active[i])
        return;
    if (p->cnt[i] >= p->quota)
        p->n_full--;
    p->active[i] = 0;
    p->n_active--;
    p->cnt[i] = p->ccnt[i] = 0;
    p->sum[i] = p->csum[i] = 0;
}

int fc_phases_complete(const struct fc_phases *p)
{
    return p->n_full == p->n_active;
}

int fc_phases_begin(struct fc_phases *p, gsl_rng *rng, uint64_t quota, int last)
{
    p->quota = quota;
    p->last = last;
    p->n_full = 0;
    p->n_perm = 0;
    p->cursor = 0;
    p->qlvl = p->xlvl = 0;
    for (size_t i = 0; i < p->k; i++) {
        if (!p->active[i])
            continue;
        p->perm[p->n_perm++] = i;
        p->cnt[i] = p->ccnt[i];
        p->sum[i] = p->csum[i];
        p->ccnt[i] = 0;
        p->csum[i] = 0;
        p->n_full += p->cnt[i] >= quota;
    }
    order_shuffle(rng, p->perm, p->n_perm);
    return fc_phases_complete(p);
}

int fc_phases_reward(struct fc_phases *p, size_t i, double r)
{
    if (i >= p->k || !p->active[i])
        return 0;
    if (p->cnt[i] < p->quota) {
        p->cnt[i]++;
        p->sum[i] += r;
        if (p->cnt[i] == p->quota) {
            p->n_full++;
            return fc_phases_complete(p);
        }
        return 0;
    }
    p->ccnt[i]++;
    p->csum[i] += r;
    return 0;
}

/* Load of arm i: what select() evens out. Quota mode counts the phase's
 * samples and the pulls in flight; the waiting mode adds the carry. */
static uint64_t load(const struct fc_phases *p, const struct stats_arm *a, size_t i, int extra)
{
    return p->cnt[i] + a[i].pending + (extra ? p->ccnt[i] : 0);
}

/* Serve the arms whose load is at most *lvl in perm order from the
 * cursor; when a full turn finds none, raise *lvl to the least load and
 * turn again. In quota mode only arms below the quota qualify. Each turn
 * that finds nothing costs O(K), but it raises the level, so in the
 * synchronous case a pull costs O(1) amortised. */
static int serve(struct fc_phases *p, const struct stats_arm *a, int extra, uint64_t *lvl,
                 size_t *arm)
{
    for (int turn = 0; turn < 2; turn++) {
        uint64_t least = UINT64_MAX;
        for (size_t j = 0; j < p->n_perm; j++) {
            size_t pos = p->cursor + j < p->n_perm ? p->cursor + j : p->cursor + j - p->n_perm;
            size_t i = p->perm[pos];
            if (!p->active[i])
                continue;
            uint64_t h = load(p, a, i, extra);
            if (!extra && h >= p->quota)
                continue;
            if (h <= *lvl) {
                p->cursor = pos + 1 < p->n_perm ? pos + 1 : 0;
                *arm = i;
                return 1;
            }
            if (h < least)
                least = h;
        }
        if (least == UINT64_MAX)
            return 0; /* no arm qualifies */
        *lvl = least;
    }
    return 0; /* not reached: the second turn finds the least-loaded arm */
}

int fc_phases_select(struct fc_phases *p, const struct policy_ctx *ctx, size_t *arm)
{
    const struct stats_arm *a = ctx->arms[0];
    /* Quota pulls first, to the least-served arms. */
    if (serve(p, a, 0, &p->qlvl, arm))
        return POLICY_OK;
    if (p->last || p->n_active == 0)
        return POLICY_DONE;
    /* Waiting for the phase's last rewards: round-robin over the active
     * arms; these samples land in the carry, i.e. in the next phase. */
    if (serve(p, a, 1, &p->xlvl, arm))
        return POLICY_OK;
    return POLICY_DONE; /* not reached: an active arm always qualifies */
}

double fc_phases_mean(const struct fc_phases *p, size_t i)
{
    return p->cnt[i] > 0 ? p->sum[i] / (double)p->cnt[i] : NAN;
}

/* --- elimination policies ------------------------------------------------- */

int fc_elim_init(struct fc_elim *e, const struct policy_ctx *ctx, fc_elim_end_fn *end, char *err,
                 size_t errlen)
{
    e->k = ctx->n_arms[0];
    e->m = ctx->m;
    e->end = end;
    if (fc_phases_init(&e->ph, e->k) != 0)
        goto nomem;
    e->chosen = calloc(e->k, 1);
    e->rank = order_rank_new(ctx->rng, e->k);
    e->idx = calloc(e->k, sizeof *e->idx);
    e->val = calloc(e->k, sizeof *e->val);
    if (!e->chosen || !e->rank || !e->idx || !e->val)
        goto nomem;
    for (size_t i = 0; i < e->k; i++)
        fc_phases_activate(&e->ph, i);
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

void fc_elim_snap(struct fc_elim *e, struct ser *s)
{
    ser_expect(s, e->k);
    fc_phases_snap(&e->ph, s);
    ser_int(s, &e->finished);
    ser_check(s, e->finished == 0 || e->finished == 1);
    ser_flags(s, e->chosen, e->k);
    ser_u32s(s, e->rank, e->k);
    ser_check_perm(s, e->rank, e->k);
    ser_indices(s, e->idx, e->k, e->k);
    ser_f64s(s, e->val, e->k);
}

void fc_elim_fini(struct fc_elim *e)
{
    fc_phases_free(&e->ph);
    free(e->chosen);
    free(e->rank);
    free(e->idx);
    free(e->val);
}

int fc_elim_need_epsilon(const struct policy_ctx *ctx, const char *name, char *err, size_t errlen)
{
    if (ctx->epsilon > 0)
        return 0;
    snprintf(err, errlen, "goal.epsilon: %s needs epsilon > 0", name);
    return -1;
}

void fc_elim_too_long(const char *name, char *err, size_t errlen)
{
    snprintf(err, errlen, "goal.epsilon: too small for %s (more than %g pulls)", name,
             FC_MAX_PULLS);
}

size_t fc_elim_order_active(struct fc_elim *e, gsl_rng *rng)
{
    size_t n = 0;
    for (size_t i = 0; i < e->k; i++) {
        if (!e->ph.active[i])
            continue;
        e->val[i] = fc_phases_mean(&e->ph, i);
        e->idx[n++] = i;
    }
    order_shuffle(rng, e->idx, n);
    order_sort_desc(e->idx, n, e->val, NULL);
    return n;
}

int fc_elim_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick)
{
    struct fc_elim *e = state;
    (void)bandit;
    pick->bandit = 0;
    if (e->finished)
        return POLICY_DONE;
    return fc_phases_select(&e->ph, ctx, &pick->arm);
}

void fc_elim_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                    enum policy_event ev, double reward)
{
    struct fc_elim *e = state;
    (void)bandit;
    if (ev == POLICY_EV_RELEASE || e->finished)
        return;
    if (fc_phases_reward(&e->ph, arm, reward))
        e->end(e, ctx);
}

int fc_elim_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    (void)ctx;
    (void)bandit;
    return ((struct fc_elim *)state)->finished;
}

void fc_elim_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                       unsigned char *high)
{
    struct fc_elim *e = state;
    (void)bandit;
    if (e->finished) {
        for (size_t i = 0; i < e->k; i++)
            high[i] = e->chosen[i];
        return;
    }
    fc_mark_interim(ctx, e->interim_accepted, e->interim_active ? e->ph.active : NULL, e->m,
                    e->rank, e->idx, e->val, high);
}

/* --- the GLR stop of best-arm sampling rules --------------------------------- */

const char *const fc_glr_thresholds[] = {"proven", "heuristic", NULL};

int fc_glr_init(struct fc_glr *g, const struct policy_ctx *ctx, int threshold)
{
    size_t k = ctx->n_arms[0];
    memset(g, 0, sizeof *g);
    g->k = k;
    g->thr = policy_param(ctx, threshold) == 0 ? ctx->glr_proven : STATS_GLR_HEURISTIC;
    g->rank = order_rank_new(ctx->rng, k);
    g->idx = calloc(k, sizeof *g->idx);
    g->val = calloc(k, sizeof *g->val);
    g->memo_arm = calloc(k, sizeof *g->memo_arm);
    if (!g->rank || !g->idx || !g->val || !g->memo_arm)
        return -1;
    stats_glr_memo_init(&g->memo, g->memo_arm, k);
    return 0;
}

void fc_glr_fini(struct fc_glr *g)
{
    free(g->rank);
    free(g->idx);
    free(g->val);
    free(g->memo_arm);
}

void fc_glr_snap(struct fc_glr *g, struct ser *s)
{
    ser_expect(s, g->k);
    ser_expect(s, (uint64_t)g->thr);
    ser_int(s, &g->stopped);
    ser_check(s, g->stopped == 0 || g->stopped == 1);
    ser_size(s, &g->certified);
    ser_u32s(s, g->rank, g->k);
    ser_check_perm(s, g->rank, g->k);
    ser_indices(s, g->idx, g->k, g->k);
    ser_f64s(s, g->val, g->k);
    if (g->certified >= g->k)
        ser_fail(s);
}

int fc_glr_done(struct fc_glr *g, const struct policy_ctx *ctx)
{
    const struct stats_arm *a = ctx->arms[0];
    if (g->stopped)
        return 1;
    double t = 0;
    for (size_t i = 0; i < g->k; i++) {
        if (a[i].n == 0)
            return 0;
        t += (double)a[i].n;
        g->val[i] = a[i].mean;
    }
    size_t best = order_argmax(ctx->rng, g->val, NULL, g->k);
    double beta = stats_glr_threshold(g->thr, t, g->k, 1, ctx->epsilon, ctx->delta);
    if (!stats_glr_stop_best_memo(a, g->k, best, ctx->epsilon, g->thr, beta, &g->memo))
        return 0;
    g->stopped = 1;
    g->certified = best;
    return 1;
}

void fc_glr_recommend(struct fc_glr *g, const struct policy_ctx *ctx, unsigned char *high)
{
    if (g->stopped) {
        for (size_t i = 0; i < g->k; i++)
            high[i] = i == g->certified;
        return;
    }
    fc_mark_interim(ctx, NULL, NULL, 1, g->rank, g->idx, g->val, high);
}

void fc_mark_interim(const struct policy_ctx *ctx, const unsigned char *accepted,
                     const unsigned char *cand, unsigned m, const uint32_t *rank, size_t *idx,
                     double *val, unsigned char *high)
{
    const struct stats_arm *a = ctx->arms[0];
    size_t k = ctx->n_arms[0];
    size_t got = 0;
    for (size_t i = 0; i < k; i++) {
        high[i] = accepted != NULL && accepted[i];
        got += high[i];
    }
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        if (high[i] || (cand != NULL && !cand[i]))
            continue;
        val[i] = a[i].n > 0 ? a[i].mean : NAN;
        idx[n++] = i;
    }
    order_sort_desc(idx, n, val, rank);
    for (size_t r = 0; r < n && got < m; r++, got++)
        high[idx[r]] = 1;
}

uint64_t fc_count(double x)
{
    if (!(x <= FC_MAX_PULLS))
        return 0;
    double c = ceil(x);
    return c < 1 ? 1 : (uint64_t)c;
}

int fc_glr_state_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    (void)bandit;
    return fc_glr_done(state, ctx);
}

void fc_glr_state_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                            unsigned char *high)
{
    (void)bandit;
    fc_glr_recommend(state, ctx, high);
}
