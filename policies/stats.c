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

/* Intrinsic time where the stitching starts. v_min = 1 is n = 4 samples for
 * Hoeffding (v = n/4). Below four samples every bound on a [0, 1] mean is
 * close to vacuous at the d we use (Hoeffding's fixed width at d = 0.05 is
 * 0.71 at n = 3), so no stitching epoch is spent there; a larger v_min would
 * flatten the bound (u constant in v) over n where decisions already happen,
 * a smaller one pays s ln ln(ηv/v_min) more at every later n. */
#define ANYTIME_V_MIN 1.0

double stats_anytime_hoeffding_width(double n, double d)
{
    if (!(n >= 1.0) || !(d > 0.0))
        return INFINITY;
    if (d >= 1.0)
        return 0.0;
    /* S_n = Σ(x_i − μ) is sub-Gaussian with variance process n/4 (range 1). */
    return stats_stitched_boundary(n / 4.0, ANYTIME_V_MIN, 0.0, d) / n;
}

double stats_anytime_hoeffding_conf(double n, double w)
{
    if (!(n >= 1.0) || !(w > 0.0))
        return 1.0;
    return stats_stitched_conf(n / 4.0, ANYTIME_V_MIN, 0.0, w * n);
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
 * Hoeffding and Bernstein stitched bounds, the intrinsic time and ℓ₀ there
 * (two logs each, which were two thirds of the search's time). */
struct dc_arm {
    double ne;      /* n + counted pending; 0: no data (δᶜ_i = 1) */
    double hv, hl0; /* Hoeffding: max(ne/4, v_min), ℓ₀ there */
    double bv, bl0; /* Bernstein: max(ebv, v_min), ℓ₀ there; bv < 0: not usable */
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
        double v = ne / 4.0;
        x->hv = v > ANYTIME_V_MIN ? v : ANYTIME_V_MIN;
        x->hl0 = stitch_ell0(x->hv, ANYTIME_V_MIN);
        if (o->hoeffding_only || !(ne >= 2.0))
            continue;
        v = eff_ebv(a, ne);
        if (isnan(v))
            continue;
        x->bv = v > ANYTIME_V_MIN ? v : ANYTIME_V_MIN;
        x->bl0 = stitch_ell0(x->bv, ANYTIME_V_MIN);
    }
}

/* arm_dc() for the anytime family from the cached constants: the same
 * operations as stats_stitched_conf, in the same order, so the value is the
 * same bit for bit; min(exp(−x_H), exp(−x_B)) is taken as exp(−max(x_H, x_B))
 * (one exp instead of two, equal because exp is monotone). */
static double arm_dc_cached(const struct stats_arm *a, const struct dc_arm *x, int is_high,
                            const struct stats_dc_opts *o, double c)
{
    double w = is_high ? a->mean + o->epsilon - c : c - a->mean;
    if (!(w > 0.0) || x->ne == 0.0)
        return 1.0;
    double u = w * x->ne;
    double k1 = stitch_k1();
    double xh = u * u / (k1 * k1 * x->hv + 2.0 * u * stitch_k2() * 0.0) - x->hl0;
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
    for (double f = 0x1p-30; f < 1.0; f *= 0x1p10) {
        double c = p + (in - p) * (1.0 + f);
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

/* Bernoulli KL: for rewards in [0, 1] the Bernoulli log-MGF dominates every
 * distribution with the same mean (convexity of e^{λx}), so the Bernoulli
 * GLR and its thresholds are valid for any [0, 1] rewards.
 * Cost O(|High| · |Low|): K for best-arm identification. */
double stats_glr(const struct stats_arm *arms, size_t k, const unsigned char *high)
{
    size_t im = 0, im1 = 0;
    if (k < 2 || !boundary_arms(arms, k, high, &im, &im1))
        return INFINITY;
    if (arms[im].mean < arms[im1].mean)
        return 0.0; /* a High arm below a Low arm: no evidence for this set */
    for (size_t i = 0; i < k; i++)
        if (arms[i].n == 0)
            return 0.0;
    double z = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (!high[i])
            continue;
        double ni = (double)arms[i].n, mi = arms[i].mean;
        for (size_t j = 0; j < k; j++) {
            if (high[j])
                continue;
            double nj = (double)arms[j].n, mj = arms[j].mean;
            double mij = (ni * mi + nj * mj) / (ni + nj);
            double zij = ni * stats_kl_bern(mi, mij) + nj * stats_kl_bern(mj, mij);
            if (zij < z)
                z = zij;
        }
    }
    return z;
}

/* h(u) = u − ln u on u >= 1, inverted by Newton from the right: h is convex
 * and increasing there, so the iterates fall monotonically onto the root
 * (2y is to its right because ln u <= u/2). Near y = 1 the root is double-
 * like and convergence is linear for a while, hence the generous cap. */
static double h_inv(double y)
{
    if (!(y > 1.0))
        return 1.0;
    double u = 2.0 * y;
    for (int i = 0; i < 200; i++) {
        double step = (u - log(u) - y) / (1.0 - 1.0 / u);
        u -= step;
        if (u <= 1.0) {
            u = 1.0 + 1e-300;
            break;
        }
        if (fabs(step) <= 1e-15 * u)
            break;
    }
    return u;
}

/* h̃_z(x) = min over λ in (0, ln z] of e^λ (x − ln λ). The stationary point
 * is λ = 1/h⁻¹(x), value e^{1/h⁻¹(x)} h⁻¹(x); past ln z the minimum sits on
 * the boundary, z (x − ln ln z). The switch is at x = h(1/ln z), where the
 * two branches meet. */
static double h_tilde(double z, double x)
{
    double u = h_inv(x);
    if (1.0 / u <= log(z))
        return exp(1.0 / u) * u;
    return z * (x - log(log(z)));
}

/* Kaufmann & Koolen's calibration function,
 *   𝒯(x) = 2 h̃_{3/2}((h⁻¹(1 + x) + ln(2ζ(2))) / 2),
 * for which P(∃t: Σ_{a∈S} [N_a d(μ̂_a, μ_a) − 3 ln(1 + ln N_a)] >= |S| 𝒯(x/|S|))
 * <= e^{−x} (mixture martingales over a hierarchical prior, one per arm,
 * multiplied). Computed exactly: it is about x + 4 ln(1 + x + √(2x)), their
 * approximation, but that is not an upper bound everywhere. */
static double kk_calibration(double x)
{
    const double ln_2zeta2 = log(M_PI * M_PI / 3.0); /* 2ζ(2) = π²/3 */
    return 2.0 * h_tilde(1.5, (h_inv(1.0 + x) + ln_2zeta2) / 2.0);
}

/* HEURISTIC: Garivier & Kaufmann's experiments (and tensorzero's
 * Track-and-Stop) use ln((ln t + 1)/δ); it has no proof.
 * PROVEN: Kaufmann & Koolen (2021, JMLR 22(246)), the deviation inequality
 * above with S = {i, j}. If the returned set is wrong, some pair (i ∈ High,
 * j ∈ Low) is truly ordered the other way (with ε > 0 the error event only
 * shrinks), and its GLR Z_ij is at most N_i d(μ̂_i, μ_i) + N_j d(μ̂_j, μ_j). A
 * union over the m(K − m) pairs (truly-Low, truly-High) gives
 * x = ln(m(K−m)/δ); and 3 ln(1 + ln N_i) + 3 ln(1 + ln N_j)
 * <= 6 ln(1 + ln((N_i + N_j)/2)) <= 6 ln(1 + ln(t/2)) by concavity. So
 *   β(t, δ) = 2 𝒯(ln(m(K−m)/δ)/2) + 6 ln(1 + ln(t/2)),
 * which for m = 1 is their best-arm threshold with K − 1 pairs. */
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
    double half_t = t / 2.0 > 1.0 ? t / 2.0 : 1.0; /* Z = 0 before t = 2 */
    return 2.0 * kk_calibration(log(pairs / delta) / 2.0) + 6.0 * log(1.0 + log(half_t));
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
