/*
 * fc.c — phase bookkeeping and orderings shared by the fixed-confidence
 * policies (see fc.h for the asynchrony rules they implement).
 */
#include "policies/fc.h"

#include <math.h>
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
    fc_shuffle(rng, p->perm, p->n_perm);
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

/* --- orderings -------------------------------------------------------------- */

/* a before b? NaN sorts last. */
static int before(const double *val, const uint32_t *rank, size_t a, size_t b)
{
    double va = val[a], vb = val[b];
    if (isnan(va) || isnan(vb)) {
        if (isnan(va) != isnan(vb))
            return !isnan(va);
    } else if (va != vb) {
        return va > vb;
    }
    return rank != NULL && rank[a] < rank[b];
}

void fc_sort_desc(size_t *idx, size_t n, const double *val, const uint32_t *rank)
{
    /* Ciura's gaps; the last pass (gap 1) is an insertion sort. */
    static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        size_t gap = gaps[g];
        for (size_t i = gap; i < n; i++) {
            size_t t = idx[i];
            size_t j = i;
            while (j >= gap && before(val, rank, t, idx[j - gap])) {
                idx[j] = idx[j - gap];
                j -= gap;
            }
            idx[j] = t;
        }
    }
}

void fc_shuffle(gsl_rng *rng, size_t *idx, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = policy_rand_index(rng, i);
        size_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

uint32_t *fc_rank_new(gsl_rng *rng, size_t k)
{
    uint32_t *rank = malloc((k ? k : 1) * sizeof *rank);
    if (rank == NULL)
        return NULL;
    for (size_t i = 0; i < k; i++)
        rank[i] = (uint32_t)i;
    for (size_t i = k; i > 1; i--) {
        size_t j = policy_rand_index(rng, i);
        uint32_t t = rank[i - 1];
        rank[i - 1] = rank[j];
        rank[j] = t;
    }
    return rank;
}

size_t fc_mark_top(const double *val, const unsigned char *mask, size_t k, size_t want,
                   const uint32_t *rank, size_t *idx, unsigned char *high)
{
    size_t n = 0;
    for (size_t i = 0; i < k; i++)
        if (mask == NULL || mask[i])
            idx[n++] = i;
    fc_sort_desc(idx, n, val, rank);
    size_t got = want < n ? want : n;
    for (size_t r = 0; r < got; r++)
        high[idx[r]] = 1;
    return got;
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
    fc_sort_desc(idx, n, val, rank);
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
