/*
 * stop.c — the stop rules' evidence and error bounds (see stop.h).
 *
 * The proofs are in docs/stop-rules.md; the comments here say what each
 * computation must keep for them to apply.
 */
#include "policies/stop.h"

#include <math.h>

/* The lowest-mean High arm's and highest-mean Low arm's positions of the
 * separation: lo = max_Low μ̂, hi = min_High μ̂ + ε. 0 when either set is
 * empty. */
static int gap_interval(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        double eps, double *lo, double *hi)
{
    int got_h = 0, got_l = 0;
    *lo = -INFINITY;
    *hi = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (high[i]) {
            got_h = 1;
            *hi = fmin(*hi, arms[i].mean + eps);
        } else {
            got_l = 1;
            *lo = fmax(*lo, arms[i].mean);
        }
    }
    return got_h && got_l;
}

static int any_empty(const struct stats_arm *arms, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (arms[i].n == 0)
            return 1;
    return 0;
}

/* max over High of δᶜ_h(c) (nondecreasing in c) and over Low of δᶜ_l(c)
 * (nonincreasing): the cutoff that minimises the larger is where they
 * cross. */
static void side_max(const struct stats_arm *arms, size_t k, const unsigned char *high,
                     enum stats_bound bound, double eps, double c, double *fh, double *fl)
{
    *fh = 0.0;
    *fl = 0.0;
    for (size_t i = 0; i < k; i++) {
        double w = high[i] ? arms[i].mean + eps - c : c - arms[i].mean;
        double d = stats_conf(bound, &arms[i], 0, w);
        if (high[i])
            *fh = fmax(*fh, d);
        else
            *fl = fmax(*fl, d);
    }
}

#define DC_BISECT 60 /* 2^-60 of an interval of length ≤ 1 */

/* Bisection on c for the crossing of the two monotone sides; the value
 * returned is max(fh, fl) at a point evaluated, so never below the
 * minimum: rounding in the search can only make the bound larger. */
double stop_delta_c(const struct stats_arm *arms, size_t k, const unsigned char *high,
                    enum stats_bound bound, double eps, double *c_out)
{
    double lo, hi;
    if (k < 2 || !gap_interval(arms, k, high, eps, &lo, &hi)) {
        if (c_out)
            *c_out = 0.5;
        return 0.0;
    }
    if (c_out)
        *c_out = 0.5 * (lo + hi);
    if (any_empty(arms, k) || !(lo < hi))
        return 1.0; /* some arm's distance to every cutoff is ≤ 0 */
    double best = 1.0, best_c = 0.5 * (lo + hi);
    for (int it = 0; it < DC_BISECT && hi - lo > 1e-15; it++) {
        double c = 0.5 * (lo + hi), fh, fl;
        side_max(arms, k, high, bound, eps, c, &fh, &fl);
        double f = fmax(fh, fl);
        if (f < best) {
            best = f;
            best_c = c;
        }
        if (fh < fl)
            lo = c; /* the Low side is the worse: move the cutoff up */
        else
            hi = c;
    }
    if (c_out)
        *c_out = best_c;
    double b = (double)k * best;
    return b < 1.0 ? b : 1.0;
}

int stop_delta_c_met(const struct stats_arm *arms, size_t k, const unsigned char *high,
                     enum stats_bound bound, double eps, double delta)
{
    double lo, hi;
    if (k < 2 || !gap_interval(arms, k, high, eps, &lo, &hi))
        return delta > 0.0;
    if (any_empty(arms, k) || !(lo < hi))
        return 0;
    double d = delta / (double)k;
    /* High arms first, then the Low arm of highest mean: it is the likeliest
     * to cross, which ends the check after K_High + 1 widths on most
     * rewards (a width is a Newton solve); the rest run only near a stop. */
    double c_max = INFINITY;
    size_t top = k;
    for (size_t i = 0; i < k; i++) {
        if (!high[i]) {
            if (top == k || arms[i].mean > arms[top].mean)
                top = i;
            continue;
        }
        double w = stats_width(bound, &arms[i], 0, d);
        if (!(w < INFINITY))
            return 0;
        c_max = fmin(c_max, arms[i].mean + eps - w);
    }
    for (size_t j = 0; j <= k; j++) {
        size_t i = j == 0 ? top : j - 1;
        if (high[i] || (j > 0 && i == top))
            continue;
        double w = stats_width(bound, &arms[i], 0, d);
        if (!(w < INFINITY) || arms[i].mean + w > c_max)
            return 0;
    }
    return 1;
}

/* A pair's evidence, exactly. A pair whose Low arm is ahead has statistic
 * 0; its evidence (the e-values' regrets, the mixture) is still defined. */
static double pair_evidence(enum stats_glr_threshold kind, const struct stats_arm *ai,
                            const struct stats_arm *aj, double eps)
{
    int ahead = eps > 0.0 ? aj->mean >= ai->mean + eps : aj->mean >= ai->mean;
    double z = ahead ? 0.0 : stats_glr_pair_z(ai, aj, eps);
    return stats_glr_pair_evidence(kind, ai, aj, z, eps);
}

/* A lower bound on pair_evidence without the exact statistic or the
 * search (stats_glr_pair_evidence_lower). */
static double pair_evidence_lower(enum stats_glr_threshold kind, const struct stats_arm *ai,
                                  const struct stats_arm *aj, double eps)
{
    return stats_glr_pair_evidence_lower(kind, ai, aj, eps);
}

/* The pair of least lower bound first, then only the pairs whose lower
 * bound is below the least exact evidence so far: the minimum is exact,
 * and at large K a handful of pairs pay for the mixture's search (the
 * status and the history compute this for every bandit). */
double stop_glr_evidence(const struct stats_arm *arms, size_t k, const unsigned char *high,
                         enum stats_glr_threshold kind, double eps)
{
    double lo, hi;
    if (k < 2 || !gap_interval(arms, k, high, eps, &lo, &hi))
        return INFINITY;
    if (any_empty(arms, k))
        return 0.0;
    size_t one = k, nhigh = 0;
    for (size_t i = 0; i < k; i++)
        if (high[i]) {
            one = i;
            nhigh++;
        }
    if (nhigh == 1 && stats_glr_uses_lead(kind, k, 1, eps))
        return stats_glr_lead_evidence(arms, k, one);
    size_t si = k, sj = k;
    double least = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (!high[i])
            continue;
        for (size_t j = 0; j < k; j++) {
            if (high[j])
                continue;
            double lb = pair_evidence_lower(kind, &arms[i], &arms[j], eps);
            if (si == k || lb < least) {
                least = lb;
                si = i;
                sj = j;
            }
        }
    }
    double ev = pair_evidence(kind, &arms[si], &arms[sj], eps);
    for (size_t i = 0; i < k; i++) {
        if (!high[i])
            continue;
        for (size_t j = 0; j < k; j++) {
            if (high[j] || (i == si && j == sj))
                continue;
            if (pair_evidence_lower(kind, &arms[i], &arms[j], eps) >= ev)
                continue;
            double e = pair_evidence(kind, &arms[i], &arms[j], eps);
            if (e < ev)
                ev = e;
        }
    }
    return ev;
}

double stop_glr_error_bound(enum stats_glr_threshold kind, double evidence, size_t k, unsigned m,
                            double eps)
{
    double b = stats_glr_union(kind, k, m, eps) * exp(-evidence);
    return b < 1.0 ? b : 1.0;
}
