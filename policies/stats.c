/*
 * stats.c — the shared statistics behind every policy and the status endpoint.
 *
 * Confidence bounds for means of rewards in [0, 1] (fixed-n and time-uniform),
 * their inverses, Kalyanakrishnan & Stone's δᶜ at an optimised cutoff,
 * Bachman & Precup's ρ̄, Bernoulli KL bounds, and the GLR (Chernoff) stopping
 * statistic with its thresholds. Formulas follow ../shared/POLICIES.md; where
 * a choice had to be made the comment says which source was followed.
 *
 * Nothing here allocates or keeps state: the policies call these functions
 * on every request, from several threads, and K may be in the thousands.
 */
#include "policies/stats.h"

#include <float.h>
#include <math.h>

#include <gsl/gsl_cdf.h>

/* Polynomial stitching parameters (Howard, Ramdas, McAuliffe & Sekhon 2021,
 * Theorem 1 and eq. (10); the confseq library's defaults). */
#define STITCH_S 1.4
#define STITCH_ETA 2.0

/* Smallest value a confidence function returns: the header promises d in
 * (0, 1], and callers divide by sums of δᶜ_i (π3 samples ∝ δᶜ_i). */
#define CONF_MIN DBL_MIN

/* Clamp for the Bernoulli KL so that means of exactly 0 or 1 stay finite. */
#define KL_EPS 1e-15

static double clamp_conf(double d)
{
    if (!(d < 1.0)) /* also catches NaN, which only a degenerate input makes */
        return 1.0;
    return d < CONF_MIN ? CONF_MIN : d;
}

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
/* Time-uniform bounds (Howard et al. 2021, polynomial stitching)           */
/* ------------------------------------------------------------------------ */

static double stitch_k1(void)
{
    return (pow(STITCH_ETA, 0.25) + pow(STITCH_ETA, -0.25)) / sqrt(2.0);
}

static double stitch_k2(void)
{
    return (sqrt(STITCH_ETA) + 1.0) / 2.0;
}

/* ζ(s) for s = STITCH_S = 1.4, as gsl_sf_zeta(1.4) returns it. A literal
 * because the call cost two thirds of a δᶜ search over 4096 arms (27 ms
 * against 9 ms); the unit tests check it against gsl_sf_zeta. */
#define STITCH_ZETA_S 3.1055472779775792

/* The part of ℓ that does not depend on d:
 * s ln ln(η v / v_min) + ln(ζ(s) / ln(η)^s), with v already >= v_min. */
static double stitch_ell0(double v, double v_min)
{
    double a = log(STITCH_ZETA_S) - STITCH_S * log(log(STITCH_ETA));
    return STITCH_S * log(log(STITCH_ETA * v / v_min)) + a;
}

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

/* Intrinsic time where the Bernstein stitching starts (v_min = 1, the
 * variance of four samples at p = 1/2). Below it every bound on a [0, 1]
 * mean is close to vacuous at the d we use; a larger v_min would flatten the
 * bound (u constant in v) over n where decisions already happen, a smaller
 * one pays s ln ln(ηv/v_min) more at every later n. */
#define ANYTIME_V_MIN 1.0

/* --- Time-uniform Hoeffding: the one-sided normal mixture -----------------
 * For X_i ∈ [0, 1] with conditional mean μ, Hoeffding's lemma gives
 * E[exp(λ(X_i − μ)) | past] ≤ exp(λ²/8) for every real λ, so with
 * S_n = Σ(X_i − μ) and V_n = n/4, exp(λS_n − λ²V_n/2) is a nonnegative
 * supermartingale for each λ (pulls are chosen on the past: predictable).
 * Mixing λ ≥ 0 over the half-normal density 2·N(0, 1/ρ)(λ) (Robbins 1970;
 * Howard, Ramdas, McAuliffe & Sekhon 2021, §3.2, "one-sided normal mixture")
 * gives, by completing the square, the supermartingale
 *   M_n = 2 sqrt(ρ/(V_n+ρ)) exp(S_n²/(2(V_n+ρ))) Φ(S_n/sqrt(V_n+ρ)),
 * M_0 = 1, increasing in S_n. Ville's inequality: P(∃n: M_n ≥ 1/d) ≤ d, so
 * the upper deviation S_n stays below the root u_n of M_n(u) = 1/d for all n
 * at once. The same with λ ≤ 0 bounds the lower deviation. This is
 * confseq's OneSidedNormalMixture (log_superMG checked against it); the
 * two-sided formula sqrt((V+ρ) ln((V+ρ)/(ρd²))) of their
 * TwoSidedNormalMixture::bound is the root with Φ replaced by 1/2, an upper
 * bound on u_n that we use as Newton's start.
 *
 * The inverse is closed form: the error probability at width w is
 * d = 1/M_n(wn). The width needs a root: ln M is convex and increasing in u
 * (u²/(2c²) + ln Φ(u/c) with (ln Φ)'' > −1), so Newton from the two-sided
 * bound, which lies beyond the root, falls monotonically onto it and every
 * iterate errs wide.
 *
 * ρ is a constant fixed before any data: confseq's best_rho for the one-
 * sided mixture at v_opt = 125 (n = 500 samples) and α_opt = 0.025,
 *   ρ = v / (2 ln(1/(2α)) + ln(1 + 2 ln(1/(2α)))),
 * chosen from the width table in docs/policies.md ("Stop rules and
 * time-uniform bounds"): against the stitched boundary it replaced
 * (s = 1.4, η = 2, v_min = 1) it is 12–24% narrower for n from 300 to
 * 30,000 at d from 0.025 to 0.001 (where experiments stop), 6–8% narrower
 * at 10⁶, 13% narrower to 1% wider at n = 100, and wider below that (20–40% at n = 30, where both
 * widths exceed 0.34: only gaps of that size stop there). A larger ρ would gain a few % more near
 * 10⁴ and lose more at small n. The unit tests recompute ρ from the
 * formula. */
#define MIX_RHO 15.750701224070426

/* ln Φ(z) for z ≥ 0 (Φ ≥ 1/2 there: no underflow), and the general case for
 * the derivative's ratio below. Beyond z = 8.5, ln Φ(z) = −(1 − Φ(z)) is
 * above −1e-17, and its one caller (mix_logm) adds it to c0 + z²/2 ≥ 14
 * (c0 ≥ −22 for any n below 2^64), whose half ulp is 9e-16: 0 gives the
 * same sum, bit for bit, without the erfc and the log (most arms of a δᶜ
 * cutoff search are that far from the cutoff). */
static double log_phi(double z)
{
    if (z >= 8.5)
        return 0.0;
    double q = 0.5 * erfc(z / M_SQRT2); /* 1 − Φ(z) */
    return z >= 0.0 ? log1p(-q) : log(0.5 * erfc(-z / M_SQRT2));
}

/* ln M(u) for the deviation u = wn, with vr = V + ρ, sq = sqrt(vr) and
 * c0 = ln 2 + ln(ρ/vr)/2 (constant along a cutoff search: cached by δᶜ).
 * One function so that the cached and uncached δᶜ agree bit for bit. */
static double mix_logm(double u, double vr, double sq, double c0)
{
    return c0 + u * u / (2.0 * vr) + log_phi(u / sq);
}

static double mix_c0(double vr)
{
    return M_LN2 + 0.5 * log(MIX_RHO / vr);
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

/* Pending pulls count as returned at the current mean: n grows, the mean and
 * the variance stay; the anytime variance process grows in proportion. */
static double eff_n(const struct stats_arm *a, uint64_t extra)
{
    return (double)a->n + (double)extra;
}

static double eff_ebv(const struct stats_arm *a, double ne)
{
    return a->ebv * ne / (double)a->n;
}

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
/* δᶜ                                                                       */
/* ------------------------------------------------------------------------ */

static double arm_dc(const struct stats_arm *a, int is_high, const struct stats_dc_opts *o,
                     double c)
{
    double w = is_high ? a->mean + o->epsilon - c : c - a->mean;
    uint64_t extra = o->count_pending ? a->pending : 0;
    if (!(w > 0.0))
        return 1.0;
    return o->hoeffding_only ? stats_conf_hoeffding(o->bound, a, extra, w)
                             : stats_conf(o->bound, a, extra, w);
}

/* 1 − Π(1 − δᶜ_i) as −expm1(Σ log1p(−δᶜ_i)): with many arms and tiny δᶜ_i
 * the product form would round to exactly 0. */
double stats_delta_c_at(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        const struct stats_dc_opts *o, double c, double *per_arm)
{
    double s = 0.0;
    for (size_t i = 0; i < k; i++) {
        double d = arm_dc(&arms[i], high[i] != 0, o, c);
        if (per_arm)
            per_arm[i] = d;
        s += log1p(-d); /* d = 1 gives −inf, and the result 1 */
    }
    return -expm1(s);
}

/* Finds (m), the lowest-mean High arm, and (m+1), the highest-mean Low arm.
 * Returns 0 when either set is empty. */
static int boundary_arms(const struct stats_arm *arms, size_t k, const unsigned char *high,
                         size_t *im, size_t *im1)
{
    int got_h = 0, got_l = 0;
    for (size_t i = 0; i < k; i++) {
        if (high[i]) {
            if (!got_h || arms[i].mean < arms[*im].mean)
                *im = i;
            got_h = 1;
        } else {
            if (!got_l || arms[i].mean > arms[*im1].mean)
                *im1 = i;
            got_l = 1;
        }
    }
    return got_h && got_l;
}

static double std_err(const struct stats_arm *a)
{
    return a->n == 0 ? INFINITY : sqrt(stats_arm_var(a) / (double)a->n);
}

/* With an empty High or Low set there is no boundary: 1/2, the centre of
 * the reward range, stands in (stats_delta_c reports 0 there anyway). */
double stats_cutoff_hat(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        double epsilon)
{
    size_t im = 0, im1 = 0;
    if (k < 2 || !boundary_arms(arms, k, high, &im, &im1))
        return 0.5;
    double lo = arms[im1].mean, hi = arms[im].mean + epsilon;
    double se_m = std_err(&arms[im]), se_m1 = std_err(&arms[im1]);
    double frac;
    if ((se_m == 0.0 && se_m1 == 0.0) || (isinf(se_m) && isinf(se_m1)))
        frac = 0.5;
    else if (isinf(se_m1))
        frac = 1.0;
    else if (isinf(se_m))
        frac = 0.0;
    else
        frac = se_m1 / (se_m + se_m1);
    return lo + (hi - lo) * frac;
}

#define DC_GRID 16       /* coarse scan intervals before golden section */
#define DC_GOLDEN_MAX 48 /* 0.618^48 < 1e-9 on an interval of length 1 */
#define DC_TOL 1e-9

/* The part of an arm's anytime δᶜ_i(c) that does not depend on c, hoisted
 * out of the cutoff search (stats_delta_c_ws): the effective n and, for the
 * Hoeffding normal mixture and the Bernstein stitched bound, the constants
 * of their exponents (logs that were most of the search's time). */
struct dc_arm {
    double ne;            /* n + counted pending; 0: no data (δᶜ_i = 1) */
    double hvr, hsq, hc0; /* Hoeffding mixture: V + ρ, its sqrt, c0 */
    double bv, bl0;       /* Bernstein: max(ebv, v_min), ℓ₀ there; bv < 0: not usable */
};

size_t stats_dc_ws_size(size_t k)
{
    return k * sizeof(struct dc_arm);
}

static void dc_cache_fill(const struct stats_arm *arms, size_t k, const struct stats_dc_opts *o,
                          struct dc_arm *ws)
{
    for (size_t i = 0; i < k; i++) {
        const struct stats_arm *a = &arms[i];
        struct dc_arm *x = &ws[i];
        x->ne = 0.0;
        x->bv = -1.0;
        if (a->n == 0)
            continue;
        double ne = eff_n(a, o->count_pending ? a->pending : 0);
        x->ne = ne;
        x->hvr = ne / 4.0 + MIX_RHO;
        x->hsq = sqrt(x->hvr);
        x->hc0 = mix_c0(x->hvr);
        if (o->hoeffding_only || !(ne >= 2.0))
            continue;
        double v = eff_ebv(a, ne);
        if (isnan(v))
            continue;
        x->bv = v > ANYTIME_V_MIN ? v : ANYTIME_V_MIN;
        x->bl0 = stitch_ell0(x->bv, ANYTIME_V_MIN);
    }
}

/* arm_dc() for the anytime family from the cached constants: the same
 * operations as stats_anytime_hoeffding_conf and stats_stitched_conf, in the
 * same order, so the value is the same bit for bit; min(exp(−x_H), exp(−x_B))
 * is taken as exp(−max(x_H, x_B)) (one exp instead of two, equal because exp
 * is monotone). */
static double arm_dc_cached(const struct stats_arm *a, const struct dc_arm *x, int is_high,
                            const struct stats_dc_opts *o, double c)
{
    double w = is_high ? a->mean + o->epsilon - c : c - a->mean;
    if (!(w > 0.0) || x->ne == 0.0)
        return 1.0;
    double u = w * x->ne;
    double k1 = stitch_k1();
    double xh = mix_logm(u, x->hvr, x->hsq, x->hc0);
    if (o->hoeffding_only)
        return clamp_conf(exp(-xh));
    double xm = xh;
    if (x->bv >= 0.0) {
        double xb = u * u / (k1 * k1 * x->bv + 2.0 * u * stitch_k2() * 1.0) - x->bl0;
        xm = fmax(xh, xb);
    }
    return clamp_conf(2.0 * clamp_conf(exp(-xm)));
}

static double dc_at_cached(const struct stats_arm *arms, size_t k, const unsigned char *high,
                           const struct stats_dc_opts *o, const struct dc_arm *ws, double c,
                           double *per_arm)
{
    double s = 0.0;
    for (size_t i = 0; i < k; i++) {
        double d = arm_dc_cached(&arms[i], &ws[i], high[i] != 0, o, c);
        if (per_arm)
            per_arm[i] = d;
        s += log1p(-d);
    }
    return -expm1(s);
}

struct dc_search {
    const struct stats_arm *arms;
    size_t k;
    const unsigned char *high;
    const struct stats_dc_opts *o;
    double best_c, best_f;
    const struct dc_arm *ws; /* NULL: no cache */
};

static double dc_eval(struct dc_search *s, double c)
{
    double f = s->ws != NULL ? dc_at_cached(s->arms, s->k, s->high, s->o, s->ws, c, NULL)
                             : stats_delta_c_at(s->arms, s->k, s->high, s->o, c, NULL);
    if (f < s->best_f) {
        s->best_f = f;
        s->best_c = c;
    }
    return f;
}

/* c* = argmin δᶜ(c) over I. δᶜ is exactly 1 near both ends of I (some arm's
 * width there is too small for its bound), so golden section alone, started
 * on flat ground, cannot tell which way to go: a coarse scan brackets the
 * minimum first. ĉ is evaluated too and the best point seen is kept, so the
 * answer is never worse than the paper's cutoff. O(K · (DC_GRID + 48)). */
double stats_delta_c(const struct stats_arm *arms, size_t k, const unsigned char *high,
                     const struct stats_dc_opts *o, double *c_out, double *per_arm)
{
    return stats_delta_c_ws(arms, k, high, o, c_out, per_arm, NULL);
}

double stats_delta_c_ws(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        const struct stats_dc_opts *o, double *c_out, double *per_arm, void *ws)
{
    size_t im = 0, im1 = 0;
    if (k < 2 || !boundary_arms(arms, k, high, &im, &im1)) {
        if (c_out)
            *c_out = 0.5;
        if (per_arm)
            for (size_t i = 0; i < k; i++)
                per_arm[i] = 0.0;
        return 0.0;
    }
    double lo = arms[im1].mean, hi = arms[im].mean + o->epsilon;
    if (lo > hi) { /* High is not the empirical top: search the reversed I */
        double t = lo;
        lo = hi;
        hi = t;
    }
    struct dc_search s = {arms, k, high, o, 0.0, INFINITY, NULL};
    if (ws != NULL && o->bound == STATS_BOUND_ANYTIME) {
        dc_cache_fill(arms, k, o, ws);
        s.ws = ws;
    }
    dc_eval(&s, stats_cutoff_hat(arms, k, high, o->epsilon));

    /* Coarse scan; remember the first grid point with the least value. */
    int jbest = 0;
    double fbest = INFINITY;
    for (int j = 0; j <= DC_GRID; j++) {
        double f = dc_eval(&s, lo + (hi - lo) * j / DC_GRID);
        if (f < fbest) {
            fbest = f;
            jbest = j;
        }
    }
    double a = lo + (hi - lo) * (jbest > 0 ? jbest - 1 : 0) / DC_GRID;
    double b = lo + (hi - lo) * (jbest < DC_GRID ? jbest + 1 : DC_GRID) / DC_GRID;

    const double g = (sqrt(5.0) - 1.0) / 2.0;
    double x1 = b - g * (b - a), x2 = a + g * (b - a);
    double f1 = dc_eval(&s, x1), f2 = dc_eval(&s, x2);
    for (int it = 0; it < DC_GOLDEN_MAX && b - a > DC_TOL; it++) {
        if (f1 <= f2) {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            f1 = dc_eval(&s, x1);
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            f2 = dc_eval(&s, x2);
        }
    }
    if (c_out)
        *c_out = s.best_c;
    if (per_arm) {
        if (s.ws != NULL)
            dc_at_cached(arms, k, high, o, s.ws, s.best_c, per_arm);
        else
            stats_delta_c_at(arms, k, high, o, s.best_c, per_arm);
    }
    return s.best_f;
}

/* ------------------------------------------------------------------------ */
/* Bayesian confidence ρ̄                                                    */
/* ------------------------------------------------------------------------ */

static double post_mean(const struct stats_arm *a)
{
    double t = a->alpha + a->beta;
    return t > 0.0 ? a->alpha / t : 0.5;
}

/* The r-th largest posterior mean (r counted from 1, ties counted with
 * multiplicity), by walking down the distinct values: O(r K), no buffer. */
static double nth_largest_post(const struct stats_arm *arms, size_t k, size_t r)
{
    double above = INFINITY; /* every value >= above is already counted */
    size_t counted = 0;
    double v = -INFINITY;
    while (counted < r) {
        v = -INFINITY;
        for (size_t i = 0; i < k; i++) {
            double p = post_mean(&arms[i]);
            if (p < above && p > v)
                v = p;
        }
        for (size_t i = 0; i < k; i++)
            if (post_mean(&arms[i]) == v)
                counted++;
        above = v;
    }
    return v;
}

/* Bachman & Precup (2013) eq. 3, with t_j = n_j (rewarded pulls). m = 0 asks
 * for nothing and returns 1, as k <= m does. */
double stats_rho(const struct stats_arm *arms, size_t k, unsigned m)
{
    if (m == 0 || k <= m)
        return 1.0;
    for (size_t i = 0; i < k; i++)
        if (arms[i].n == 0)
            return 0.0;
    double gamma = (nth_largest_post(arms, k, m) + nth_largest_post(arms, k, (size_t)m + 1)) / 2.0;
    double sum = 0.0;
    for (size_t j = 0; j < k; j++) {
        double r = post_mean(&arms[j]);
        double sd = sqrt(r * (1.0 - r));
        double gap = fabs(r - gamma);
        if (sd > 0.0)
            sum += gsl_cdf_ugaussian_Q(sqrt((double)arms[j].n) * gap / sd);
        else
            sum += gap > 0.0 ? 0.0 : 1.0; /* a point mass: sure, or on γ̄ */
    }
    double rho = 1.0 - sum;
    return rho > 0.0 ? rho : 0.0;
}

/* ------------------------------------------------------------------------ */
/* Bernoulli KL                                                             */
/* ------------------------------------------------------------------------ */

static double clamp_kl(double p)
{
    if (!(p > KL_EPS)) /* NaN too */
        return KL_EPS;
    return p < 1.0 - KL_EPS ? p : 1.0 - KL_EPS;
}

double stats_kl_bern(double p, double q)
{
    p = clamp_kl(p);
    q = clamp_kl(q);
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
    double pc = clamp_kl(p);
    double q, out; /* out: the last iterate known beyond the root */
    if (upper) {
        q = p + sqrt(level / 2.0);
        if (q > 1.0 - KL_EPS)
            q = 1.0 - KL_EPS; /* kl(p, ·) there is kl(p, 1) > level: still beyond */
        out = 1.0 - KL_EPS;   /* beyond the root (checked by the caller) */
    } else {
        q = p - sqrt(level / 2.0);
        if (q < KL_EPS)
            q = KL_EPS;
        out = KL_EPS;
    }
    for (int i = 0; i < KL_NEWTON; i++) {
        double f = stats_kl_bern(p, q) - level;
        if (!(f > 0.0))
            return kl_polish(p, level, q, out);
        if (f <= 1e-10 * level)
            return q; /* beyond the root by 1e-10 relative in kl: done */
        out = q;
        double qc = clamp_kl(q);
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

/* ------------------------------------------------------------------------ */
/* GLR                                                                      */
/* ------------------------------------------------------------------------ */

/* What stats_glr and stats_glr_stop check before weighing pairs: −1 when
 * there is nothing to distinguish (k < 2, empty High or Low), 0 when there
 * is no evidence yet (a High arm below a Low one, or an arm without data),
 * 1 when every pair can be weighed. */
static int glr_pairs_ready(const struct stats_arm *arms, size_t k, const unsigned char *high)
{
    size_t im = 0, im1 = 0;
    if (k < 2 || !boundary_arms(arms, k, high, &im, &im1))
        return -1;
    if (arms[im].mean < arms[im1].mean)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (arms[i].n == 0)
            return 0;
    return 1;
}

/* Z_ij of one pair (both arms with data): n_i kl(μ̂_i, μ̂_ij) +
 * n_j kl(μ̂_j, μ̂_ij), μ̂_ij the pooled mean. */
static double glr_pair_z(const struct stats_arm *ai, const struct stats_arm *aj)
{
    double ni = (double)ai->n, mi = ai->mean;
    double nj = (double)aj->n, mj = aj->mean;
    double mij = (ni * mi + nj * mj) / (ni + nj);
    return ni * stats_kl_bern(mi, mij) + nj * stats_kl_bern(mj, mij);
}

/* Bernoulli KL: for rewards in [0, 1] the Bernoulli log-MGF dominates every
 * distribution with the same mean (convexity of e^{λx}), so the Bernoulli
 * GLR and its thresholds are valid for any [0, 1] rewards.
 * Cost O(|High| · |Low|): K for best-arm identification. */
double stats_glr(const struct stats_arm *arms, size_t k, const unsigned char *high)
{
    int ready = glr_pairs_ready(arms, k, high);
    if (ready <= 0)
        return ready < 0 ? INFINITY : 0.0;
    double z = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (!high[i])
            continue;
        for (size_t j = 0; j < k; j++) {
            if (high[j])
                continue;
            double zij = glr_pair_z(&arms[i], &arms[j]);
            if (zij < z)
                z = zij;
        }
    }
    return z;
}

/* --- the proven threshold: Jeffreys (Krichevsky–Trofimov) mixtures --------
 *
 * For one arm with N rewards summing to S, write L(θ) = θ^S (1 − θ)^(N−S)
 * and KT = ∫ L(θ) Beta(1/2, 1/2)(dθ) = B(S + 1/2, N − S + 1/2) / π.
 * (a) Under the arm's true mean μ, KT/L(μ) is a nonnegative supermartingale
 *     with initial value 1: each reward x ∈ [0, 1] multiplies L(θ)/L(μ) by
 *     (θ/μ)^x ((1−θ)/(1−μ))^(1−x), a convex function of x, whose mean is at
 *     most its Bernoulli(μ) mean, 1 (so Bernoulli KL applies to any [0, 1]
 *     rewards); a fixed mixture over θ keeps the property, and pulls chosen
 *     on the past (or rewards returned late) do not break it.
 * (b) ln L(μ̂) − ln L(λ) = N kl(μ̂, λ) exactly, for every λ.
 * So N kl(μ̂, μ) = ln(KT/L(μ)) + r with r = ln L(μ̂) − ln KT ≥ 0, the
 * mixture's regret, computable from (N, S) alone.
 * If a returned set is wrong, some pair (i ∈ High, j ∈ Low) is truly ordered
 * the other way (μ_i ≤ μ_j; with ε > 0 too, see tas_glr), the truth is in the
 * set Z_ij minimises over, and
 *   Z_ij ≤ N_i kl(μ̂_i, μ_i) + N_j kl(μ̂_j, μ_j) = ln(M_i M_j) + r_i + r_j,
 * M_a = KT_a/L_a(μ_a). The product of independent arms' supermartingales is
 * one (only one arm moves per reward), so by Ville's inequality
 * P(∃t: M_i M_j ≥ P/δ) ≤ δ/P; a union over the P = m(K − m) pairs (truly
 * Low, truly High) that can be wrong gives: stopping when every pair has
 *   Z_ij > ln(P/δ) + r_i + r_j
 * errs with probability at most δ, for any sampling rule.
 * This is the proof of Garivier & Kaufmann (2016, COLT, §3, Chernoff's
 * stopping rule: for Bernoulli bandits β(t, δ) = ln(2t(K − 1)/δ) is δ-PAC,
 * by the KT mixture and its regret bound r ≤ ½ ln N + ln 2) with the
 * regret computed exactly instead of bounded: since r_i + r_j ≤
 * ½ ln(N_i N_j) + 2 ln 2 ≤ ln(2(N_i + N_j)), this is never above their
 * threshold (m = 1), and about 0.47 nats per arm below it in the interior
 * (r → ½ ln(πN/2)). Kaufmann & Koolen (2021)'s 2𝒯(ln(P/δ)/2) +
 * 6 ln(1 + ln(t/2)), the threshold before, is 2.5–3 times larger at the
 * sample sizes we serve: its ln ln N terms only win beyond N ≈ 10¹⁶ per
 * arm, so a minimum of the two (each at δ/2) would never pay.
 *
 * The proven rule (stats_glr_stop, tas_glr_stop) then averages this e-value,
 * E_KT = e^{Z_ij − r_i − r_j}, with a second one for the same pair, the
 * product of the two arms' one-sided normal mixtures at the worst cutoff
 * (stats_pair_mixture, below): the mean of two e-processes is an e-process
 * (Vovk & Wang 2021, "E-values: calibration, combination and
 * applications"), so stopping when ln((E_KT + E_N)/2) > ln(P/δ) for every
 * pair keeps P(error) ≤ δ. The mixture's regret is ½ ln(1 + V/ρ) per arm
 * instead of ½ ln(πN/2) (its prior sits on the null instead of spreading
 * over [0, 1]), which on means near 1/2 needs about 40% fewer samples;
 * far from 1/2 the KT term carries the evidence at a cost of ln 2. */

/* ln Γ(x + 1/2) − (x ln x − x + ½ ln 2π), x ≥ 0: Stirling's remainder,
 * by its asymptotic series beyond x = 100 (the next term is below 1e-13
 * there) because the difference of two numbers near x ln x loses every
 * digit at large x. */
static double stirling_half(double x)
{
    if (x < 100.0)
        return lgamma(x + 0.5) - (x > 0.0 ? x * log(x) : 0.0) + x - 0.5 * log(2.0 * M_PI);
    double x2 = x * x;
    return -1.0 / (24.0 * x) + 7.0 / (2880.0 * x * x2);
}

/* ln Γ(N + 1) − (N ln N − N + ½ ln 2πN), N ≥ 1, likewise. */
static double stirling_one(double n)
{
    if (n < 100.0)
        return lgamma(n + 1.0) - n * log(n) + n - 0.5 * log(2.0 * M_PI * n);
    double n2 = n * n;
    return 1.0 / (12.0 * n) - 1.0 / (360.0 * n * n2);
}

/* r = S ln μ̂ + F ln(1 − μ̂) − ln B(S + ½, F + ½) + ln π with F = N − S,
 * μ̂ = S/N; Stirling's formula cancels the large terms exactly:
 * r = ½ ln(πN/2) − ρ(S) − ρ(F) + ρ₁(N), ρ and ρ₁ the remainders above. */
double stats_kt_regret(double n, double mean)
{
    if (!(n > 0.0))
        return 0.0;
    if (!(mean > 0.0))
        mean = 0.0;
    else if (mean > 1.0)
        mean = 1.0;
    double s = n * mean, f = n - s;
    if (f < 0.0)
        f = 0.0;
    return 0.5 * log(M_PI * n / 2.0) - stirling_half(s) - stirling_half(f) + stirling_one(n);
}

/* --- the second e-value of the proven rule: per-arm normal mixtures --------
 * The pair's null (recommending i over j is wrong) is μ_j ≥ μ_i + ε, ε ≥ 0.
 * For a cutoff c ∈ [0, 1 − ε], arm i's one-sided normal mixture M_i(c)
 * (λ ≥ 0 on the deviation S = Σ(x − c), as in stats_anytime_hoeffding_conf)
 * is a nonnegative supermartingale whenever μ_i ≤ c (by Hoeffding's lemma
 * each λ-factor has conditional mean e^{λ(μ_i − c)} ≤ 1), and arm j's
 * lower mixture M_j(c + ε) (λ ≥ 0 on Σ(c + ε − x)) whenever μ_j ≥ c + ε.
 * Under the null c* = μ_i lies in [0, 1 − ε] (μ_i + ε ≤ μ_j ≤ 1) and both
 * hold, so
 *   inf_{c ∈ [0, 1−ε]} M_i(c) M_j(c + ε) ≤ M_i(c*) M_j(c* + ε),
 * and the right side is a test supermartingale on the filtration of all
 * rewards: each reward moves one factor only, its arm chosen on the past
 * (with delays, the reward is independent of what arrived in between), and
 * mixing the two λ's over a product prior keeps the property (Fubini).
 * The KT e-value is bounded by a test martingale on the same filtration
 * (stats_kt_regret's mixture over the likelihood at the true means), so
 * their mean is one too (Vovk & Wang 2021), and Ville's inequality applies
 * to it. (Robbins 1970; Howard et al. 2021 §3.2 for the mixture; the
 * infimum over the null as in Kaufmann & Koolen 2021's GLR with mixtures.)
 *
 * The infimum: ln M is convex and increasing in the deviation (a log of a
 * mixture of exponentials of it, λ ≥ 0), so A(c) = ln M_i(c) falls,
 * B(c) = ln M_j(c + ε) rises, and A + B is convex in c. Golden section
 * keeps the minimiser in its bracket [a, b] (in exact arithmetic), and on
 * [a, b] A ≥ A(b), B ≥ B(a): A(b) + B(a) is a lower bound on the infimum,
 * the bracket's width only making it lower. Rounding can misorder two
 * points only when their values agree to rounding, and convexity bounds
 * what such a misstep can hide (1.62 times that difference: the slope
 * beyond the points is at least their secant's), so a margin of 1e-11
 * relative (against errors of 1e-13 at most) makes the value a lower bound
 * whatever rounding did. Sub-Gaussian (variance 1/4): as sharp as Bernoulli
 * KL near p = 1/2, loose far from it, where the KT part of the evidence
 * carries it. */

/* ln M(u), any sign of u, from below: exact (log_phi) down to z = −30 (Φ is
 * 1e-198 there, far from underflow, and u²/(2vr) + ln Φ(z) loses under
 * 1e-13 to cancellation); beyond, Gordon's inequality
 * Φ(z) ≥ φ(z)|z|/(z² + 1) (0.1% low at most), in which u²/(2vr) = z²/2
 * cancels exactly. With n = 0 (vr = ρ, u = 0) it is exactly 0: M = 1. */
static double mix_logm_lower(double u, double vr, double sq, double c0)
{
    double z = u / sq;
    if (z >= -30.0)
        return mix_logm(u, vr, sq, c0);
    return c0 + log(-z / (z * z + 1.0)) - 0.5 * log(2.0 * M_PI);
}

/* One pair's mixture problem: A(c) + B(c) above. */
struct pair_mix {
    double ni, mi, vi, si, ci;
    double nj, mj, vj, sj, cj;
    double eps;
};

static void pair_mix_init(struct pair_mix *p, double ni, double mi, double nj, double mj,
                          double eps)
{
    p->ni = ni > 0.0 ? ni : 0.0;
    p->nj = nj > 0.0 ? nj : 0.0;
    p->mi = mi;
    p->mj = mj;
    p->eps = eps > 0.0 ? eps : 0.0;
    p->vi = p->ni / 4.0 + MIX_RHO;
    p->si = sqrt(p->vi);
    p->ci = mix_c0(p->vi);
    p->vj = p->nj / 4.0 + MIX_RHO;
    p->sj = sqrt(p->vj);
    p->cj = mix_c0(p->vj);
}

static double pair_a(const struct pair_mix *p, double c)
{
    return mix_logm_lower(p->ni * (p->mi - c), p->vi, p->si, p->ci);
}

static double pair_b(const struct pair_mix *p, double c)
{
    return mix_logm_lower(p->nj * (c + p->eps - p->mj), p->vj, p->sj, p->cj);
}

/* An upper bound on the infimum, from one cutoff: where the Gaussian
 * approximation of A + B (2n_i(μ̂_i − c)² + 2n_j(c + ε − μ̂_j)²) is least. */
static double pair_mix_upper(const struct pair_mix *p)
{
    double hi = 1.0 - p->eps > 0.0 ? 1.0 - p->eps : 0.0;
    double n = p->ni + p->nj;
    double c = n > 0.0 ? (p->ni * p->mi + p->nj * (p->mj - p->eps)) / n : 0.0;
    c = c < 0.0 ? 0.0 : c > hi ? hi : c;
    return pair_a(p, c) + pair_b(p, c);
}

#define PAIR_GOLDEN 64 /* 0.618^64 < 1e-13 on [0, 1] */

static double pair_mix_lower(const struct pair_mix *p)
{
    double a = 0.0, b = 1.0 - p->eps;
    if (!(b > a)) /* ε ≥ 1: at most the point c = 0 is in the null */
        return pair_a(p, 0.0) + pair_b(p, 0.0);
    const double g = (sqrt(5.0) - 1.0) / 2.0;
    double x1 = b - g * (b - a), x2 = a + g * (b - a);
    double f1 = pair_a(p, x1) + pair_b(p, x1), f2 = pair_a(p, x2) + pair_b(p, x2);
    for (int it = 0; it < PAIR_GOLDEN; it++) {
        if (f1 <= f2) {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            f1 = pair_a(p, x1) + pair_b(p, x1);
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            f2 = pair_a(p, x2) + pair_b(p, x2);
        }
    }
    double v = pair_a(p, b) + pair_b(p, a);
    return v - 1e-11 * (1.0 + fabs(v));
}

double stats_pair_mixture(double ni, double mi, double nj, double mj, double eps)
{
    struct pair_mix p;
    pair_mix_init(&p, ni, mi, nj, mj, eps);
    return pair_mix_lower(&p);
}

/* ln((e^x + e^y)/2) without overflow. */
static double log_mean_exp(double x, double y)
{
    double hi = x > y ? x : y, lo = x > y ? y : x;
    if (hi == -INFINITY)
        return -INFINITY;
    return hi - M_LN2 + log1p(exp(lo - hi));
}

/* ln of the mean of the two e-values, e^{z − r_i − r_j} (KT) and the pair
 * mixture: the mean of two e-processes is one (Vovk & Wang 2021), and it is
 * never below the better of the two less ln 2. */
double stats_glr_pair_evidence(enum stats_glr_threshold kind, const struct stats_arm *ai,
                               const struct stats_arm *aj, double z, double eps)
{
    if (kind != STATS_GLR_PROVEN)
        return z;
    double ni = (double)ai->n, nj = (double)aj->n;
    double kt = z - stats_kt_regret(ni, ai->mean) - stats_kt_regret(nj, aj->mean);
    return log_mean_exp(kt, stats_pair_mixture(ni, ai->mean, nj, aj->mean, eps));
}

/* Two shortcuts decide most calls without the 130 evaluations of the
 * search: the KT part alone clearing beta + ln 2, and the mixture at one
 * cutoff (an upper bound on its infimum) failing to lift the mean above
 * beta. Both are implied by the exact comparison, so the answer is that of
 * stats_glr_pair_evidence(...) > beta. */
int stats_glr_pair_passes(enum stats_glr_threshold kind, const struct stats_arm *ai,
                          const struct stats_arm *aj, double z, double eps, double beta)
{
    if (kind != STATS_GLR_PROVEN)
        return z > beta;
    double ni = (double)ai->n, nj = (double)aj->n;
    double kt = z - stats_kt_regret(ni, ai->mean) - stats_kt_regret(nj, aj->mean);
    if (kt - M_LN2 > beta)
        return 1;
    struct pair_mix p;
    pair_mix_init(&p, ni, ai->mean, nj, aj->mean, eps);
    if (!(log_mean_exp(kt, pair_mix_upper(&p)) > beta))
        return 0;
    return log_mean_exp(kt, pair_mix_lower(&p)) > beta;
}

/* HEURISTIC: Garivier & Kaufmann's experiments (and tensorzero's
 * Track-and-Stop) use ln((ln t + 1)/δ); it has no proof.
 * PROVEN: the part of the pair threshold shared by all pairs, ln(P/δ),
 * P = m(K − m) (K − 1 when m = 1); see the proof above. */
double stats_glr_threshold(enum stats_glr_threshold kind, double t, size_t k, unsigned m,
                           double delta)
{
    if (!(delta > 0.0))
        return INFINITY;
    if (kind == STATS_GLR_HEURISTIC) {
        double lt = t > 1.0 ? log(t) : 0.0;
        return log((lt + 1.0) / delta);
    }
    double pairs = 1.0;
    if (m > 0 && (size_t)m < k)
        pairs = (double)m * (double)(k - m);
    return log(pairs / delta);
}

/* The heuristic takes stats_glr itself, so its stops are unchanged; the
 * proven rule weighs each pair (stats_glr_pair_passes). */
int stats_glr_stop(const struct stats_arm *arms, size_t k, const unsigned char *high,
                   enum stats_glr_threshold kind, unsigned m, double delta)
{
    double t = 0.0;
    for (size_t i = 0; i < k; i++)
        t += (double)arms[i].n;
    double beta = stats_glr_threshold(kind, t, k, m, delta);
    if (kind != STATS_GLR_PROVEN)
        return stats_glr(arms, k, high) > beta;
    int ready = glr_pairs_ready(arms, k, high);
    if (ready <= 0) /* nothing to distinguish: stop as stats_glr's +∞ would */
        return ready < 0 ? beta < INFINITY : 0;
    for (size_t i = 0; i < k; i++) {
        if (!high[i])
            continue;
        for (size_t j = 0; j < k; j++) {
            if (high[j])
                continue;
            double zij = glr_pair_z(&arms[i], &arms[j]);
            if (!stats_glr_pair_passes(kind, &arms[i], &arms[j], zij, 0.0, beta))
                return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Ordering                                                                 */
/* ------------------------------------------------------------------------ */

/* Total order: larger mean first, then smaller rank (index without rank). */
static int better(const struct stats_arm *arms, const uint32_t *rank, size_t i, size_t j)
{
    if (arms[i].mean != arms[j].mean)
        return arms[i].mean > arms[j].mean;
    uint64_t ri = rank ? rank[i] : i, rj = rank ? rank[j] : j;
    return ri < rj;
}

/* Repeated selection, O(min(m, K − m) · K) and no buffer: picks the best m
 * when m is small, or marks all and drops the worst K − m when m is large. */
void stats_top_m(const struct stats_arm *arms, size_t k, unsigned m, const uint32_t *rank,
                 unsigned char *high)
{
    size_t want = m < k ? m : k;
    int pick_best = want <= k - want;
    for (size_t i = 0; i < k; i++)
        high[i] = pick_best ? 0 : 1;
    size_t rounds = pick_best ? want : k - want;
    for (size_t r = 0; r < rounds; r++) {
        size_t sel = k;
        for (size_t i = 0; i < k; i++) {
            if (high[i] != (pick_best ? 0 : 1))
                continue;
            if (sel == k || (pick_best ? better(arms, rank, i, sel) : better(arms, rank, sel, i)))
                sel = i;
        }
        high[sel] = pick_best ? 1 : 0;
    }
}

double stats_normal_sf(double x)
{
    return gsl_cdf_ugaussian_Q(x);
}
