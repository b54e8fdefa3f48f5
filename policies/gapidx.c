/*
 * gapidx.c — the gap-based index of ucb-e and the GapE family (gapidx.h):
 * order statistics for top-m gaps in O(K), the adaptive complexity
 * estimates, initial pulls under late rewards, argmax with random ties.
 */
#include "policies/gapidx.h"
#include "base/ser.h"
#include "policies/order.h"
#include "policies/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gapidx_init(struct gapidx *g, const struct policy_ctx *ctx, int bernstein, double scale,
                       double a_fixed, double h_fixed, char *err, size_t errlen)
{
    g->bernstein = bernstein;
    g->scale = scale;
    g->a_fixed = a_fixed;
    g->h_fixed = h_fixed;
    g->nb = ctx->n_bandits;
    size_t kmax = 0;
    for (size_t b = 0; b < g->nb; b++) {
        g->total += ctx->n_arms[b];
        if (ctx->n_arms[b] > kmax)
            kmax = ctx->n_arms[b];
    }
    g->off = calloc(g->nb + 1, sizeof *g->off);
    g->bandit_of = calloc(g->total, sizeof *g->bandit_of);
    g->gap = calloc(g->total, sizeof *g->gap);
    g->idx = calloc(g->total, sizeof *g->idx);
    g->mask = calloc(g->total, 1);
    g->sel = calloc(kmax, sizeof *g->sel);
    g->rt = calloc(g->total, sizeof *g->rt);
    g->sd = calloc(g->total, sizeof *g->sd);
    g->ready = calloc(g->nb, 1);
    if (!g->off || !g->bandit_of || !g->gap || !g->idx || !g->mask || !g->sel || !g->ready ||
        !g->rt || !g->sd) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t b = 0; b < g->nb; b++) {
        g->off[b + 1] = g->off[b] + ctx->n_arms[b];
        for (size_t f = g->off[b]; f < g->off[b + 1]; f++)
            g->bandit_of[f] = b;
    }
    return 0;
}

void gapidx_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct gapidx *g = state;
    (void)ctx;
    ser_expect(s, g->nb);
    ser_expect(s, g->total);
    ser_f64(s, &g->scale);
    ser_f64(s, &g->a_fixed);
    ser_f64(s, &g->h_fixed);
    ser_f64s(s, g->gap, g->total);
    ser_f64s(s, g->idx, g->total);
    ser_flags(s, g->mask, g->total);
    ser_flags(s, g->ready, g->nb);
    ser_f64s(s, g->rt, g->total);
    ser_f64s(s, g->sd, g->total);
}

void gapidx_free(void *state)
{
    struct gapidx *g = state;
    if (g == NULL)
        return;
    free(g->off);
    free(g->bandit_of);
    free(g->gap);
    free(g->idx);
    free(g->mask);
    free(g->sel);
    free(g->ready);
    free(g->rt);
    free(g->sd);
    free(g);
}

/* The Bernstein index needs two samples of every arm in scope. */
static int budget_check(const struct policy_ctx *ctx, const char *name, int bernstein, char *err,
                        size_t errlen)
{
    size_t arms = 0;
    for (size_t b = 0; b < ctx->n_bandits; b++)
        arms += ctx->n_arms[b];
    if (!bernstein || ctx->budget >= 2 * (uint64_t)arms)
        return 0;
    snprintf(err, errlen,
             "goal.budget: %s needs at least two pulls per arm (%zu pulls for %zu arms)", name,
             2 * arms, arms);
    return -1;
}

int gapidx_rebudget(void *state, const struct policy_ctx *ctx, const char *name, double scale,
                    int check, char *err, size_t errlen)
{
    struct gapidx *g = state;
    if (budget_check(ctx, name, g->bernstein, err, errlen) != 0)
        return -1;
    if (!check)
        g->scale = scale;
    return 0;
}

int gapidx_new(void **state, const struct policy_ctx *ctx, const char *name, int bernstein,
               double scale, double a_fixed, double h_fixed, char *err, size_t errlen)
{
    if (budget_check(ctx, name, bernstein, err, errlen) != 0)
        return -1;
    struct gapidx *g = calloc(1, sizeof *g);
    if (g == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (gapidx_init(g, ctx, bernstein, scale, a_fixed, h_fixed, err, errlen) != 0) {
        gapidx_free(g);
        return -1;
    }
    *state = g;
    return 0;
}

static void swap_d(double *v, size_t i, size_t j)
{
    double t = v[i];
    v[i] = v[j];
    v[j] = t;
}

/* The kth largest (0-based) of v[0..n), leaving v[0..kth) ≥ it: quickselect
 * with a median-of-three pivot and a three-way partition (Bernoulli means
 * repeat a lot; equal keys must not degrade it). */
static double select_desc(double *v, size_t n, size_t kth)
{
    size_t lo = 0, hi = n;
    for (;;) {
        if (hi - lo <= 1)
            return v[kth];
        double x = v[lo], y = v[lo + (hi - lo) / 2], z = v[hi - 1];
        double pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            if (v[i] > pivot)
                swap_d(v, lt++, i++);
            else if (v[i] < pivot)
                swap_d(v, i, --gt);
            else
                i++;
        }
        if (kth < lt)
            hi = lt;
        else if (kth >= gt)
            lo = gt;
        else
            return pivot;
    }
}

void gapidx_order_stats(const struct stats_arm *arms, size_t k, unsigned m, double *scratch,
                        double *mu_m, double *mu_m1)
{
    if (m == 1) {
        double first = -INFINITY, second = -INFINITY;
        for (size_t i = 0; i < k; i++) {
            double x = arms[i].mean;
            if (x > first) {
                second = first;
                first = x;
            } else if (x > second) {
                second = x;
            }
        }
        *mu_m = first;
        *mu_m1 = second;
        return;
    }
    for (size_t i = 0; i < k; i++)
        scratch[i] = arms[i].mean;
    *mu_m1 = select_desc(scratch, k, m);
    double lo = INFINITY;
    for (size_t i = 0; i < m; i++)
        if (scratch[i] < lo)
            lo = scratch[i];
    *mu_m = lo;
}

/* Per arm of bandit b: the top-m gap into g->gap (values only: which of two
 * tied arms is "High" changes no gap, so no random draw is needed), and the
 * pieces every later formula reuses, so each select takes one sqrt and one
 * division per arm (two more for the Bernstein index): rt = 1/sqrt(T) and,
 * for the Bernstein index, σ̂. */
static void bandit_gaps(struct gapidx *g, const struct policy_ctx *ctx, size_t b)
{
    const struct stats_arm *a = ctx->arms[b];
    size_t k = ctx->n_arms[b];
    double mu_m, mu_m1;
    gapidx_order_stats(a, k, ctx->m, g->sel, &mu_m, &mu_m1);
    size_t o = g->off[b];
    for (size_t i = 0; i < k; i++) {
        g->gap[o + i] = a[i].mean > mu_m1 ? a[i].mean - mu_m1 : mu_m - a[i].mean;
        g->rt[o + i] = 1.0 / sqrt((double)(a[i].n + a[i].pending));
        if (g->bernstein)
            g->sd[o + i] = sqrt(stats_arm_var(&a[i]));
    }
}

static unsigned initial_samples(const struct gapidx *g)
{
    return g->bernstein ? 2 : 1;
}

static int bandit_ready(const struct gapidx *g, const struct policy_ctx *ctx, size_t b)
{
    const struct stats_arm *a = ctx->arms[b];
    for (size_t i = 0; i < ctx->n_arms[b]; i++)
        if (a[i].n < initial_samples(g))
            return 0;
    return 1;
}

/* Gabillon et al.'s lower-confidence complexity estimate over ready bandits
 * (gaps must be computed for them). */
static double h_hat(const struct gapidx *g, const struct policy_ctx *ctx)
{
    double h = 0;
    for (size_t b = 0; b < g->nb; b++) {
        if (!g->ready[b])
            continue;
        const struct stats_arm *a = ctx->arms[b];
        for (size_t i = 0, f = g->off[b]; i < ctx->n_arms[b]; i++, f++) {
            double ucb = g->gap[f] + M_SQRT1_2 * g->rt[f]; /* Δ̂ + sqrt(1/(2T)) */
            if (!g->bernstein) {
                h += 1.0 / (ucb * ucb);
                continue;
            }
            double t = (double)(a[i].n + a[i].pending);
            double lcb = g->sd[f] - sqrt(2.0 / (t - 1.0));
            if (lcb < 0)
                lcb = 0;
            double num = lcb + sqrt(lcb * lcb + (16.0 / 3.0) * ucb);
            h += num * num / (ucb * ucb);
        }
    }
    return h;
}

/* Mark ready bandits (those the index may use: the named one, or every
 * bandit not done) and compute their gaps; the estimate Ĥ needs all of
 * them, a known H only the scope. Returns the exploration parameter a, or
 * NaN when it cannot be formed yet. */
static double prepare(struct gapidx *g, const struct policy_ctx *ctx, int bandit)
{
    int adaptive = !(g->a_fixed > 0) && !(g->h_fixed > 0);
    for (size_t b = 0; b < g->nb; b++) {
        int wanted = (size_t)bandit == b || (ctx->bandit_done[b] == 0 && (bandit < 0 || adaptive));
        g->ready[b] = wanted && bandit_ready(g, ctx, b);
        if (g->ready[b])
            bandit_gaps(g, ctx, b);
    }
    if (g->a_fixed > 0)
        return g->a_fixed;
    double h = g->h_fixed > 0 ? g->h_fixed : h_hat(g, ctx);
    return h > 0 ? g->scale / h : NAN;
}

double gapidx_a(struct gapidx *g, const struct policy_ctx *ctx)
{
    return prepare(g, ctx, -1);
}

/* Least n + pending among the arms in scope, ties uniformly at random (one
 * draw). Returns 0 if the scope is empty. */
static int least_served(const struct gapidx *g, const struct policy_ctx *ctx, int bandit,
                        struct policy_pick *pick)
{
    uint64_t least = UINT64_MAX;
    size_t ties = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t j = pass ? rng_index(ctx->rng, ties) : 0;
        for (size_t b = 0; b < g->nb; b++) {
            if (bandit >= 0 ? b != (size_t)bandit : ctx->bandit_done[b] != 0)
                continue;
            const struct stats_arm *a = ctx->arms[b];
            for (size_t i = 0; i < ctx->n_arms[b]; i++) {
                uint64_t h = a[i].n + a[i].pending;
                if (pass == 0) {
                    if (h < least) {
                        least = h;
                        ties = 1;
                    } else if (h == least) {
                        ties++;
                    }
                } else if (h == least && j-- == 0) {
                    pick->bandit = b;
                    pick->arm = i;
                    return 1;
                }
            }
        }
        if (ties == 0)
            return 0;
    }
    return 0; /* unreachable */
}

int gapidx_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick)
{
    struct gapidx *g = state;
    /* Initial samples first (and round-robin while they come back). */
    int open = 0;
    for (size_t b = 0; b < g->nb; b++) {
        if (bandit >= 0 ? b != (size_t)bandit : ctx->bandit_done[b] != 0)
            continue;
        open = 1;
        if (!bandit_ready(g, ctx, b))
            return least_served(g, ctx, bandit, pick) ? POLICY_OK : POLICY_DONE;
    }
    if (!open)
        return POLICY_DONE;
    double a = prepare(g, ctx, bandit);
    if (!(a >= 0 && isfinite(a)))
        return least_served(g, ctx, bandit, pick) ? POLICY_OK : POLICY_DONE;
    size_t lo = bandit >= 0 ? g->off[bandit] : 0;
    size_t hi = bandit >= 0 ? g->off[bandit + 1] : g->total;
    double sqrt_a = sqrt(a), sqrt_2a = sqrt(2.0 * a);
    for (size_t f = lo; f < hi; f++) {
        size_t b = g->bandit_of[f];
        g->mask[f] = g->ready[b];
        if (!g->ready[b])
            continue;
        double explore;
        if (g->bernstein) {
            /* sqrt(2 a σ̂² / T) + 7a / (3 (T − 1)) */
            const struct stats_arm *x = &ctx->arms[b][f - g->off[b]];
            double t = (double)(x->n + x->pending);
            explore = sqrt_2a * g->sd[f] * g->rt[f] + 7.0 * a / (3.0 * (t - 1.0));
        } else {
            explore = sqrt_a * g->rt[f]; /* sqrt(a / T) */
        }
        g->idx[f] = -g->gap[f] + explore;
    }
    size_t f = order_argmax(ctx->rng, &g->idx[lo], &g->mask[lo], hi - lo);
    if (f == (size_t)-1)
        return POLICY_DONE;
    f += lo;
    pick->bandit = g->bandit_of[f];
    pick->arm = f - g->off[pick->bandit];
    return POLICY_OK;
}
