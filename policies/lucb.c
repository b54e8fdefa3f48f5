/*
 * lucb.c — the LUCB skeleton (see lucb.h): High/Low split, h* and l*, the
 * stop criterion, the queued second pull and the certified set.
 */
#include "policies/lucb.h"

#include <math.h>
#include <stdlib.h>

#include "policies/fc.h"

struct lucb *lucb_new(const struct lucb_bounds *b, double c1, double c2,
                      const struct policy_ctx *ctx)
{
    struct lucb *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
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
    l->rank = fc_rank_new(ctx->rng, l->n);
    if (!l->high || !l->certified || !l->order || !l->val || !l->rank) {
        lucb_free(l);
        return NULL;
    }
    return l;
}

void lucb_free(struct lucb *l)
{
    if (l == NULL)
        return;
    free(l->high);
    free(l->certified);
    free(l->order);
    free(l->val);
    free(l->rank);
    free(l);
}

/* Count used for arm i: n (+ pending when choosing pulls). */
static double count_of(const struct stats_arm *a, int with_pending)
{
    return (double)a->n + (with_pending ? (double)a->pending : 0.0);
}

/* The arm of want_high's side (High or Low) with the smallest lower bound
 * (High) or largest upper bound (Low), ties at random; its bound in *out.
 * Exact bounds are computed only where the cheap relaxation cannot rule
 * the arm out: an arm whose relaxation is strictly worse than the best
 * exact value so far can be neither the extreme nor tied with it. */
static size_t extreme(struct lucb *l, const struct policy_ctx *ctx, int want_high,
                      int with_pending, double t, double *out)
{
    const struct stats_arm *a = ctx->arms[0];
    double (*exact)(const struct lucb *, double, double, double) =
        want_high ? l->b->lower : l->b->upper;
    double (*cheap)(const struct lucb *, double, double, double) =
        want_high ? l->b->lower_cheap : l->b->upper_cheap;
    double sign = want_high ? 1.0 : -1.0; /* minimise sign·bound */
    double bv = INFINITY;
    size_t best = (size_t)-1, ties = 0;
    /* Seed the pruning threshold with the arm of best relaxation. */
    if (cheap != NULL) {
        size_t seed = (size_t)-1;
        double sv = INFINITY;
        for (size_t i = 0; i < l->n; i++) {
            if (!l->high[i] != !want_high)
                continue;
            double u = count_of(&a[i], with_pending);
            double v = a[i].n == 0 ? (want_high ? 0.0 : -1.0)
                                   : sign * cheap(l, a[i].mean, u, t);
            l->val[i] = v;
            if (v < sv) {
                sv = v;
                seed = i;
            }
        }
        if (seed != (size_t)-1) {
            double u = count_of(&a[seed], with_pending);
            bv = a[seed].n == 0 ? (want_high ? 0.0 : -1.0)
                                : sign * exact(l, a[seed].mean, u, t);
        }
    }
    double run = bv;
    for (size_t i = 0; i < l->n; i++) {
        if (!l->high[i] != !want_high)
            continue;
        if (cheap != NULL && l->val[i] > run)
            continue;
        double u = count_of(&a[i], with_pending);
        /* No reward yet: the trivial bounds [0, 1]. */
        double v = a[i].n == 0 ? (want_high ? 0.0 : -1.0) : sign * exact(l, a[i].mean, u, t);
        if (best == (size_t)-1 || v < run) {
            best = i;
            run = v;
            ties = 1;
        } else if (v == run && policy_rand_index(ctx->rng, ++ties) == 0) {
            best = i;
        }
    }
    *out = sign * run;
    return best;
}

/* High = the empirical top m, ties at random. */
static void split(struct lucb *l, const struct policy_ctx *ctx)
{
    policy_order_by_mean(ctx->rng, ctx->arms[0], l->n, l->order);
    for (size_t r = 0; r < l->n; r++)
        l->high[l->order[r]] = r < l->m;
}

int lucb_select(struct lucb *l, const struct policy_ctx *ctx, struct policy_pick *pick)
{
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
        if (u == 0 && policy_rand_index(ctx->rng, ++ties) == 0)
            fresh = i;
    }
    if (fresh != (size_t)-1) {
        pick->arm = fresh;
        return POLICY_OK;
    }
    split(l, ctx);
    double lh, ul;
    size_t h = extreme(l, ctx, 1, 1, t, &lh);
    size_t lo = extreme(l, ctx, 0, 1, t, &ul);
    pick->arm = h;
    l->queued = (long)lo;
    return POLICY_OK;
}

double lucb_gap(struct lucb *l, const struct policy_ctx *ctx)
{
    const struct stats_arm *a = ctx->arms[0];
    double t = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (a[i].n == 0)
            return INFINITY;
        t += (double)a[i].n;
    }
    split(l, ctx);
    double lh, ul;
    extreme(l, ctx, 1, 0, t, &lh);
    extreme(l, ctx, 0, 0, t, &ul);
    return ul - lh;
}

int lucb_done(struct lucb *l, const struct policy_ctx *ctx)
{
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

void lucb_recommend(struct lucb *l, const struct policy_ctx *ctx, unsigned char *high)
{
    if (l->stopped) {
        for (size_t i = 0; i < l->n; i++)
            high[i] = l->certified[i];
        return;
    }
    fc_mark_interim(ctx, NULL, NULL, l->m, l->rank, l->order, l->val, high);
}
