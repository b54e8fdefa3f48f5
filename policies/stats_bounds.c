/*
 * stats_bounds.c — the arm summary and the confidence bounds (stats.h,
 * "Arms", "one-sided bounds", "Bernoulli KL"): Hoeffding and empirical
 * Bernstein at a fixed n and time-uniform, their inverses, the family's
 * tightest bound with pending pulls, the Bernoulli KL with its one clamp and
 * its confidence bounds, and the normal tail. Formulas
 * follow docs/policy-formulas.md; where a choice had to be made the comment
 * says which source was followed.
 *
 * Nothing here allocates or keeps state: the policies call these functions
 * on every request, from several threads, and K may be in the thousands.
 */
#include "policies/stats.h"

#include <math.h>

#include <gsl/gsl_cdf.h>

#include "policies/stats_impl.h"

/* ------------------------------------------------------------------------ */
/* Arms                                                                     */
/* ------------------------------------------------------------------------ */

void stats_arm_init(struct stats_arm *a, double prior_alpha, double prior_beta)
{
    a->n = 0;
    a->pending = 0;
    a->mean = 0.0;
    a->m2 = 0.0;
    a->ebv = 0.0;
    a->alpha = prior_alpha;
    a->beta = prior_beta;
    a->lead_n = 0;
    a->lead_sum = 0.0;
    a->pool_n = 0;
    a->pool_sum = 0.0;
}

/* Welford's update, plus Howard et al.'s predictable variance process. */
void stats_arm_add(struct stats_arm *a, double x)
{
    /* A NaN would poison mean and m2 for good; the caller has a bug, but one
     * bad reward must not take the arm down with it. */
    if (isnan(x))
        return;
    /* Rescaling [lo, hi] to [0, 1] can overshoot by an ulp. */
    if (x < 0.0)
        x = 0.0;
    else if (x > 1.0)
        x = 1.0;
    /* The prediction of x_i must not depend on x_i: the mean before it, and
     * 1/2 (the centre of the range) before any data. */
    double pred = a->n == 0 ? 0.5 : a->mean;
    a->ebv += (x - pred) * (x - pred);
    a->n++;
    double delta = x - a->mean;
    a->mean += delta / (double)a->n;
    a->m2 += delta * (x - a->mean);
}

void stats_arm_add_bayes(struct stats_arm *a, int s)
{
    if (s)
        a->alpha += 1.0;
    else
        a->beta += 1.0;
}

double stats_arm_var(const struct stats_arm *a)
{
    if (a->n < 2)
        return 0.0;
    double v = a->m2 / (double)(a->n - 1);
    return v > 0.0 ? v : 0.0; /* rounding can leave m2 a hair below 0 */
}

/* ------------------------------------------------------------------------ */
/* Fixed-n bounds                                                           */
/* ------------------------------------------------------------------------ */

double stats_hoeffding_width(double n, double d)
{
    if (!(n > 0.0) || !(d > 0.0))
        return INFINITY;
    /* At d >= 1 any width, however small, has conf <= d: the inverse is 0. */
    if (d >= 1.0)
        return 0.0;
    return sqrt(log(1.0 / d) / (2.0 * n));
}

double stats_hoeffding_conf(double n, double w)
{
    if (!(n > 0.0) || !(w > 0.0))
        return 1.0;
    return clamp_conf(exp(-2.0 * n * w * w));
}

double stats_bernstein_width(double n, double var, double d)
{
    if (!(n >= 2.0) || !(d > 0.0))
        return INFINITY;
    if (d >= 1.0)
        return 0.0;
    if (!(var > 0.0))
        var = 0.0;
    double x = log(2.0 / d);
    return sqrt(2.0 * var * x / n) + 7.0 * x / (3.0 * (n - 1.0));
}

/* w = a s + b s² with s = sqrt(ln(2/d)): the positive root, written as
 * 2w / (a + sqrt(a² + 4bw)) so that a >> b loses no digits. */
double stats_bernstein_conf(double n, double var, double w)
{
    if (!(n >= 2.0) || !(w > 0.0))
        return 1.0;
    if (!(var > 0.0))
        var = 0.0;
    double a = sqrt(2.0 * var / n);
    double b = 7.0 / (3.0 * (n - 1.0));
    double s = 2.0 * w / (a + sqrt(a * a + 4.0 * b * w));
    return clamp_conf(2.0 * exp(-s * s));
}

/* ------------------------------------------------------------------------ */
/* Time-uniform bounds (Howard et al. 2021; the stitching's and the normal */
/* mixture's pieces, and why ρ is what it is, are in stats_impl.h)          */
/* ------------------------------------------------------------------------ */

double stats_stitched_boundary(double v, double v_min, double c, double d)
{
    if (!(v_min > 0.0) || !(d > 0.0) || isnan(v))
        return INFINITY;
    if (d >= 1.0)
        return 0.0;
    /* Below v_min the first epoch's linear boundary still holds for all
     * times, and it lies under u(v_min): using v' = max(v, v_min) is valid. */
    double vv = v > v_min ? v : v_min;
    double ell = stitch_ell0(vv, v_min) + log(1.0 / d);
    double k1 = stitch_k1();
    double t2 = stitch_k2() * c * ell;
    return sqrt(k1 * k1 * vv * ell + t2 * t2) + t2;
}

/* u − k2cℓ = sqrt(k1²vℓ + (k2cℓ)²) squares to u² − 2uk2cℓ = k1²vℓ, linear
 * in ℓ; c = 0 is the same formula. Then d = exp(−(ℓ − ℓ₀)). */
double stats_stitched_conf(double v, double v_min, double c, double u)
{
    if (!(v_min > 0.0) || !(u > 0.0) || isnan(v))
        return 1.0;
    double vv = v > v_min ? v : v_min;
    double k1 = stitch_k1();
    double ell = u * u / (k1 * k1 * vv + 2.0 * u * stitch_k2() * c);
    return clamp_conf(exp(-(ell - stitch_ell0(vv, v_min))));
}
double stats_anytime_hoeffding_width(double n, double d)
{
    if (!(n >= 1.0) || !(d > 0.0))
        return INFINITY;
    if (d >= 1.0)
        return 0.0;
    double vr = n / 4.0 + MIX_RHO, sq = sqrt(vr), c0 = mix_c0(vr);
    double target = -log(d);
    /* Two-sided bound: M(u) there is (1/d)·2Φ(z) ≥ 1/d, beyond the root. */
    double u = sqrt(vr * (log(vr / MIX_RHO) + 2.0 * target));
    for (int i = 0; i < 60; i++) {
        double g = mix_logm(u, vr, sq, c0) - target;
        if (!(g > 1e-12 * (target > 1.0 ? target : 1.0)))
            break; /* within 1e-12 of the root (or a hair inside: see below) */
        double z = u / sq;
        /* φ(z)/Φ(z), written with erfc so that it stays finite for z < 0 */
        double mills = exp(-0.5 * z * z) / (sqrt(2.0 * M_PI) * 0.5 * erfc(-z / M_SQRT2));
        double un = u - g / (u / vr + mills / sq);
        if (!(un < u) || un <= 0.0)
            break;
        u = un;
    }
    /* Newton from the convex side never undershoots in exact arithmetic;
     * rounding in the last step could put u a few ulps inside the root, so
     * the width is nudged out by 1e-12 relative: it errs wide. */
    return u * (1.0 + 1e-12) / n;
}

double stats_anytime_hoeffding_conf(double n, double w)
{
    if (!(n >= 1.0) || !(w > 0.0))
        return 1.0;
    double vr = n / 4.0 + MIX_RHO;
    return clamp_conf(exp(-mix_logm(w * n, vr, sqrt(vr), mix_c0(vr))));
}

/* Howard et al. 2021, Theorem 4: with x̂ predictable in [0, 1], S_n is
 * sub-exponential with variance process ebv and scale c = 1 (the range), and
 * ψ_E ≤ ψ_G lets the sub-gamma stitched boundary apply. n < 2 gives +inf as
 * for the fixed-n Bernstein bound; at n = 1 it would be wider than 2 anyway. */
double stats_anytime_bernstein_width(double n, double ebv, double d)
{
    if (!(n >= 2.0) || !(d > 0.0))
        return INFINITY;
    if (d >= 1.0)
        return 0.0;
    return stats_stitched_boundary(ebv, ANYTIME_V_MIN, 1.0, d) / n;
}

double stats_anytime_bernstein_conf(double n, double ebv, double w)
{
    if (!(n >= 2.0) || !(w > 0.0))
        return 1.0;
    return stats_stitched_conf(ebv, ANYTIME_V_MIN, 1.0, w * n);
}

/* ------------------------------------------------------------------------ */
/* The family's tightest bound, with pending pulls                          */
/* ------------------------------------------------------------------------ */

double stats_width(enum stats_bound b, const struct stats_arm *a, uint64_t extra, double d)
{
    if (a->n == 0 || !(d > 0.0))
        return INFINITY;
    if (d >= 1.0)
        return 0.0;
    double ne = eff_n(a, extra);
    if (b == STATS_BOUND_FIXED)
        return fmin(stats_hoeffding_width(ne, d), stats_bernstein_width(ne, stats_arm_var(a), d));
    /* Both bounds at d/2: their union holds with probability 1 − d. */
    return fmin(stats_anytime_hoeffding_width(ne, d / 2.0),
                stats_anytime_bernstein_width(ne, eff_ebv(a, ne), d / 2.0));
}

double stats_conf(enum stats_bound b, const struct stats_arm *a, uint64_t extra, double w)
{
    if (a->n == 0 || !(w > 0.0))
        return 1.0;
    double ne = eff_n(a, extra);
    if (b == STATS_BOUND_FIXED)
        return fmin(stats_hoeffding_conf(ne, w), stats_bernstein_conf(ne, stats_arm_var(a), w));
    double d = 2.0 * fmin(stats_anytime_hoeffding_conf(ne, w),
                          stats_anytime_bernstein_conf(ne, eff_ebv(a, ne), w));
    return clamp_conf(d);
}

double stats_width_hoeffding(enum stats_bound b, const struct stats_arm *a, uint64_t extra,
                             double d)
{
    if (a->n == 0)
        return INFINITY;
    double ne = eff_n(a, extra);
    return b == STATS_BOUND_FIXED ? stats_hoeffding_width(ne, d)
                                  : stats_anytime_hoeffding_width(ne, d);
}

double stats_conf_hoeffding(enum stats_bound b, const struct stats_arm *a, uint64_t extra, double w)
{
    if (a->n == 0)
        return 1.0;
    double ne = eff_n(a, extra);
    return b == STATS_BOUND_FIXED ? stats_hoeffding_conf(ne, w)
                                  : stats_anytime_hoeffding_conf(ne, w);
}

/* ------------------------------------------------------------------------ */
/* Bernoulli KL                                                             */
/* ------------------------------------------------------------------------ */

/* The one clamp of the Bernoulli KL: p moved into [margin, 1 − margin]. */
double stats_kl_clamp(double p, double margin)
{
    if (!(p > margin)) /* NaN too */
        return margin;
    return p < 1.0 - margin ? p : 1.0 - margin;
}

double stats_kl_bern(double p, double q)
{
    p = stats_kl_clamp(p, STATS_KL_EPS);
    q = stats_kl_clamp(q, STATS_KL_EPS);
    return p * log(p / q) + (1.0 - p) * log((1.0 - p) / (1.0 - q));
}

#define KL_NEWTON 100 /* cap; a handful of steps is the rule */

/* Rounding put an iterate a hair inside the root (computed kl <= level at
 * `in`, > level at `out`: the previous iterate, or the end of [0, 1] when
 * the start itself came out inside, which happens at p = 1/2 where Pinsker
 * is nearly exact and kl is computed to ~1e-9 relative at tiny levels).
 * Bisect that gap, keeping the outer end, until kl there is within 1e-10
 * (relative) of the level, like a converged Newton step: the result is
 * beyond the root as computed. A point just outside `in` usually does it
 * at once. */
static double kl_polish(double p, double level, double in, double out)
{
    /* A nearer outer end first: widen |in − p| by 1 + 2^-30, 2^-20, ... */
    for (int e = -30; e < 0; e += 10) {
        double f = ldexp(1.0, e), c = p + (in - p) * (1.0 + f);
        if ((c - out) * (c - in) >= 0.0) /* not strictly between */
            break;
        if (stats_kl_bern(p, c) > level) {
            out = c;
            break;
        }
    }
    for (int i = 0; i < 64 && stats_kl_bern(p, out) - level > 1e-10 * level; i++) {
        double mid = 0.5 * (in + out);
        if (mid == in || mid == out)
            break;
        if (stats_kl_bern(p, mid) > level)
            out = mid;
        else
            in = mid;
    }
    return out;
}

/* Newton from the outside. kl(p, ·) is convex on each side of p (increasing
 * on [p, 1], decreasing on [0, p]), so Newton started beyond the root stays
 * beyond it and moves monotonically onto it: every iterate errs wide, never
 * narrow, as a confidence bound must. Pinsker's kl(p, q) ≥ 2(q − p)² gives
 * such a start, p ± sqrt(level/2). Convergence is quadratic near the root
 * (5–8 steps where bisection took 60, each with two logarithms: this is
 * KL-LUCB's inner loop); it stops once kl is within 1e-10 (relative) of
 * the level, or hands over to kl_polish when rounding crosses the root.
 * d/dq kl(p, q) = (q − p)/(q(1 − q)). The same iteration serves both sides
 * (upper: from above p, lower: from below). */
static double kl_newton(double p, double level, int upper)
{
    double pc = stats_kl_clamp(p, STATS_KL_EPS);
    double q, out; /* out: the last iterate known beyond the root */
    if (upper) {
        q = p + sqrt(level / 2.0);
        if (q > 1.0 - STATS_KL_EPS)
            q = 1.0 - STATS_KL_EPS; /* kl(p, ·) there is kl(p, 1) > level: still beyond */
        out = 1.0 - STATS_KL_EPS;   /* beyond the root (checked by the caller) */
    } else {
        q = p - sqrt(level / 2.0);
        if (q < STATS_KL_EPS)
            q = STATS_KL_EPS;
        out = STATS_KL_EPS;
    }
    for (int i = 0; i < KL_NEWTON; i++) {
        double f = stats_kl_bern(p, q) - level;
        if (!(f > 0.0))
            return kl_polish(p, level, q, out);
        if (f <= 1e-10 * level)
            return q; /* beyond the root by 1e-10 relative in kl: done */
        out = q;
        double qc = stats_kl_clamp(q, STATS_KL_EPS);
        double qn = q - f * qc * (1.0 - qc) / (qc - pc);
        /* Stop unless Newton moved strictly toward p without reaching it. */
        if (upper ? !(qn < q) || qn <= p : !(qn > q) || qn >= p)
            break;
        q = qn;
    }
    return out;
}

double stats_kl_upper(double p, double level)
{
    if (!(p > 0.0))
        p = 0.0;
    if (p >= 1.0)
        return 1.0;
    if (!(level > 0.0))
        return p;
    if (stats_kl_bern(p, 1.0) <= level)
        return 1.0;
    return kl_newton(p, level, 1);
}

double stats_kl_lower(double p, double level)
{
    if (!(p < 1.0))
        p = 1.0;
    if (p <= 0.0)
        return 0.0;
    if (!(level > 0.0))
        return p;
    if (stats_kl_bern(p, 0.0) <= level)
        return 0.0;
    return kl_newton(p, level, 0);
}

double stats_normal_sf(double x)
{
    return gsl_cdf_ugaussian_Q(x);
}
