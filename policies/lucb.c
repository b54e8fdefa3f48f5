/*
 * lucb.c — the LUCB skeleton (see lucb.h): High/Low split, h* and l*, the
 * stop criterion, the queued second pull and the certified set.
 */
#include "policies/lucb.h"
#include "base/ser.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "policies/fc.h"
#include "policies/rng.h"

int lucb_init(void **state, const struct lucb_bounds *b, double c1, double c2,
              const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct lucb *l = calloc(1, sizeof *l);
    if (l == NULL)
        goto nomem;
    l->b = b;
    l->c1 = c1;
    l->c2 = c2;
    l->n = ctx->n_arms[0];
    l->k = (double)l->n;
    l->m = ctx->m;
    l->delta = ctx->delta;
    l->queued = -1;
    l->high = calloc(l->n, 1);
    l->certified = calloc(l->n, 1);
    l->order = calloc(l->n, sizeof *l->order);
    l->val = calloc(l->n, sizeof *l->val);
    l->rank = order_rank_new(ctx->rng, l->n);
    for (int c = 0; c < 2; c++) {
        l->cache[c] = calloc(l->n, sizeof *l->cache[c]);
        if (l->cache[c] != NULL)
            for (size_t i = 0; i < l->n; i++)
                l->cache[c][i].u = -1; /* never a count: empty */
    }
    if (!l->high || !l->certified || !l->order || !l->val || !l->rank || !l->cache[0] ||
        !l->cache[1])
        goto nomem;
    *state = l;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    lucb_fini(l);
    return -1;
}

void lucb_fini(void *state)
{
    struct lucb *l = state;
    if (l == NULL)
        return;
    free(l->high);
    free(l->certified);
    free(l->order);
    free(l->val);
    free(l->rank);
    free(l->cache[0]);
    free(l->cache[1]);
    free(l);
}

void lucb_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct lucb *l = state;
    (void)ctx;
    ser_expect(s, l->n);
    long q = l->queued;
    int64_t q64 = q;
    ser_i64(s, &q64);
    if (s->reading && ser_ok(s)) {
        if (q64 < -1 || q64 >= (int64_t)l->n)
            ser_fail(s);
        else
            l->queued = (long)q64;
    }
    ser_int(s, &l->stopped);
    ser_check(s, l->stopped == 0 || l->stopped == 1);
    ser_flags(s, l->high, l->n);
    ser_flags(s, l->certified, l->n);
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < l->n; i++) {
            struct lucb_cache *x = &l->cache[c][i];
            ser_f64(s, &x->u);
            ser_f64(s, &x->mean);
            ser_f64(s, &x->x);
            ser_f64(s, &x->lo);
            ser_f64(s, &x->hi);
        }
    ser_indices(s, l->order, l->n, l->n);
    ser_f64s(s, l->val, l->n);
    ser_u32s(s, l->rank, l->n);
    ser_check_perm(s, l->rank, l->n);
}

/* Count used for arm i: n (+ pending when choosing pulls). */
static double count_of(const struct stats_arm *a, int with_pending)
{
    return (double)a->n + (with_pending ? (double)a->pending : 0.0);
}

/* The exploration level at time t, rounded up to the grid if any. */
static double level_at(const struct lucb *l, double t)
{
    double x = l->b->level(l, t);
    if (l->b->grid > 0 && x > 0)
        x = exp(l->b->grid * ceil(log(x) / l->b->grid));
    return x;
}

/* Bounds of arm i (cache c: 0 rewarded counts, 1 with pending) at level x.
 * No reward yet: the trivial bounds [0, 1]. */
static const struct lucb_cache *bounds_of(struct lucb *l, const struct stats_arm *a, size_t i,
                                          int c, double x)
{
    struct lucb_cache *e = &l->cache[c][i];
    double u = count_of(&a[i], c);
    if (e->u == u && e->mean == a[i].mean && e->x == x)
        return e;
    e->u = u;
    e->mean = a[i].mean;
    e->x = x;
    if (a[i].n == 0) {
        e->lo = 0.0;
        e->hi = 1.0;
    } else {
        e->lo = l->b->lower(a[i].mean, u, x);
        e->hi = l->b->upper(a[i].mean, u, x);
    }
    return e;
}

/* h* (want_high: the High arm of smallest lower bound) or l* (the Low arm
 * of largest upper bound), ties at random; its bound in *out. */
static size_t extreme(struct lucb *l, const struct policy_ctx *ctx, int want_high, int with_pending,
                      double x, double *out)
{
    const struct stats_arm *a = ctx->arms[0];
    double bv = 0;
    size_t best = (size_t)-1, ties = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (!l->high[i] != !want_high)
            continue;
        const struct lucb_cache *e = bounds_of(l, a, i, with_pending, x);
        double v = want_high ? -e->lo : e->hi; /* maximise */
        if (best == (size_t)-1 || v > bv) {
            best = i;
            bv = v;
            ties = 1;
        } else if (v == bv && rng_index(ctx->rng, ++ties) == 0) {
            best = i;
        }
    }
    *out = want_high ? -bv : bv;
    return best;
}

/* High = the empirical top m, ties at random. For small m, m passes of a
 * random-tie argmax (O(mK), a draw only on ties); otherwise shuffle and
 * sort. */
static void split(struct lucb *l, const struct policy_ctx *ctx)
{
    const struct stats_arm *a = ctx->arms[0];
    if (l->m <= 8) {
        for (size_t i = 0; i < l->n; i++)
            l->high[i] = 0;
        for (unsigned r = 0; r < l->m; r++) {
            size_t best = (size_t)-1, ties = 0;
            for (size_t i = 0; i < l->n; i++) {
                if (l->high[i])
                    continue;
                if (best == (size_t)-1 || a[i].mean > a[best].mean) {
                    best = i;
                    ties = 1;
                } else if (a[i].mean == a[best].mean && rng_index(ctx->rng, ++ties) == 0) {
                    best = i;
                }
            }
            l->high[best] = 1;
        }
        return;
    }
    order_by_mean(ctx->rng, a, l->n, l->order);
    for (size_t r = 0; r < l->n; r++)
        l->high[l->order[r]] = r < l->m;
}

int lucb_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick)
{
    struct lucb *l = state;
    (void)bandit;
    const struct stats_arm *a = ctx->arms[0];
    pick->bandit = 0;
    if (l->queued >= 0) {
        pick->arm = (size_t)l->queued;
        l->queued = -1;
        return POLICY_OK;
    }
    /* Every arm once first (the paper's initialisation). */
    size_t fresh = (size_t)-1, ties = 0;
    double t = 0;
    for (size_t i = 0; i < l->n; i++) {
        double u = count_of(&a[i], 1);
        t += u;
        if (u == 0 && rng_index(ctx->rng, ++ties) == 0)
            fresh = i;
    }
    if (fresh != (size_t)-1) {
        pick->arm = fresh;
        return POLICY_OK;
    }
    split(l, ctx);
    double lh, ul, x = level_at(l, t);
    size_t h = extreme(l, ctx, 1, 1, x, &lh);
    size_t lo = extreme(l, ctx, 0, 1, x, &ul);
    pick->arm = h;
    l->queued = (long)lo;
    return POLICY_OK;
}

/* The stop statistic U(l*) − L(h*) on rewarded pulls (+INFINITY while some
 * arm has none). Draws from ctx->rng for High's ties. */
static double lucb_gap(struct lucb *l, const struct policy_ctx *ctx)
{
    const struct stats_arm *a = ctx->arms[0];
    double t = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (a[i].n == 0)
            return INFINITY;
        t += (double)a[i].n;
    }
    split(l, ctx);
    double lh, ul, x = level_at(l, t);
    extreme(l, ctx, 1, 0, x, &lh);
    extreme(l, ctx, 0, 0, x, &ul);
    return ul - lh;
}

int lucb_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    struct lucb *l = state;
    (void)bandit;
    if (l->stopped)
        return 1;
    double eps = ctx->epsilon;
    if (!(lucb_gap(l, ctx) < eps))
        return 0;
    for (size_t i = 0; i < l->n; i++)
        l->certified[i] = l->high[i];
    l->stopped = 1;
    return 1;
}

void lucb_recommend(void *state, const struct policy_ctx *ctx, size_t bandit, unsigned char *high)
{
    struct lucb *l = state;
    (void)bandit;
    if (l->stopped) {
        for (size_t i = 0; i < l->n; i++)
            high[i] = l->certified[i];
        return;
    }
    fc_mark_interim(ctx, NULL, NULL, l->m, l->rank, l->order, l->val, high);
}
