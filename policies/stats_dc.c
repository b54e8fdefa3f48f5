/*
 * stats_dc.c — δᶜ, Kalyanakrishnan & Stone's (2010, §4) aggregate error
 * probability of a returned set at an optimised cutoff (stats.h, "δᶜ"):
 * the paper's cutoff ĉ, δᶜ at a given cutoff, and the cutoff search, with a
 * per-arm cache of the anytime bounds' constants for hot callers.
 *
 * No allocation (the cache is the caller's workspace), no state.
 */
#include "policies/stats.h"

#include <float.h>
#include <math.h>

#include "policies/stats_impl.h"

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
 * of their exponents (logs that were most of the search's time). They are
 * a function of (n, effective n, ebv, Hoeffding only) alone, kept with that
 * key from one search to the next: between two select() calls one or two
 * arms change, and the others' logarithms are not recomputed. */
struct dc_arm {
    uint64_t kn;          /* key: n (UINT64_MAX: empty), */
    double kne, kebv;     /* effective n and ebv, */
    int khoeff;           /* and hoeffding_only */
    double ne;            /* n + counted pending; 0: no data (δᶜ_i = 1) */
    double hvr, hsq, hc0; /* Hoeffding mixture: V + ρ, its sqrt, c0 */
    double bv, bl0;       /* Bernstein: max(ebv, v_min), ℓ₀ there; bv < 0: not usable */
    double d;             /* scratch: δᶜ_i at the point being evaluated (dc_at_search) */
    double wv;            /* width up to which δᶜ_i = 1 (stats_delta_c_track); NaN: not yet */
    double hec0;          /* e^{−c0} of the mixture (stats_delta_c_track) */
};

size_t stats_dc_ws_size(size_t k)
{
    return k * sizeof(struct dc_arm);
}

void stats_dc_ws_init(void *ws, size_t k)
{
    struct dc_arm *x = ws;
    for (size_t i = 0; i < k; i++)
        x[i].kn = UINT64_MAX;
}

static void dc_cache_fill(const struct stats_arm *arms, size_t k, const struct stats_dc_opts *o,
                          struct dc_arm *ws)
{
    for (size_t i = 0; i < k; i++) {
        const struct stats_arm *a = &arms[i];
        struct dc_arm *x = &ws[i];
        double ne = eff_n(a, o->count_pending ? a->pending : 0);
        if (x->kn == a->n && x->kne == ne && x->kebv == a->ebv && x->khoeff == o->hoeffding_only)
            continue;
        x->kn = a->n;
        x->kne = ne;
        x->kebv = a->ebv;
        x->khoeff = o->hoeffding_only;
        x->ne = 0.0;
        x->bv = -1.0;
        x->wv = NAN;
        if (a->n == 0)
            continue;
        x->ne = ne;
        x->hvr = ne / 4.0 + MIX_RHO;
        x->hsq = sqrt(x->hvr);
        x->hc0 = mix_c0(x->hvr);
        x->hec0 = exp(-x->hc0);
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

/* δᶜ_i at c, cached or not. */
static double arm_dc_any(const struct stats_arm *arms, const unsigned char *high,
                         const struct stats_dc_opts *o, const struct dc_arm *ws, size_t i, double c)
{
    return ws != NULL ? arm_dc_cached(&arms[i], &ws[i], high[i] != 0, o, c)
                      : arm_dc(&arms[i], high[i] != 0, o, c);
}

/* δᶜ(c) for the search, which needs no per-arm values: the sum of
 * log1p(−δᶜ_i) in index order, as stats_delta_c_at forms it, except where
 * some δᶜ_i is 1. There the sum is −∞ whatever the other terms (each in
 * [−∞, 0], none NaN) and δᶜ exactly 1, so an arm found at 1 ends the
 * evaluation; *witness remembers it and is tried first next time, and with
 * the cache every δᶜ_i is computed (into ws) before any logarithm. Most
 * points of a search are there (an arm near c with few rewards has a
 * vacuous bound: 60–80% of the points in bandit-sim runs of adapt, all of
 * them early on) and cost one arm instead of K logarithms; the value is the
 * same, bit for bit. */
static double dc_at_search(const struct stats_arm *arms, size_t k, const unsigned char *high,
                           const struct stats_dc_opts *o, struct dc_arm *ws, double c,
                           size_t *witness)
{
    if (*witness < k && arm_dc_any(arms, high, o, ws, *witness, c) >= 1.0)
        return 1.0;
    double s = 0.0;
    if (ws != NULL) {
        for (size_t i = 0; i < k; i++) {
            double d = arm_dc_cached(&arms[i], &ws[i], high[i] != 0, o, c);
            if (d >= 1.0) {
                *witness = i;
                return 1.0;
            }
            ws[i].d = d;
        }
        for (size_t i = 0; i < k; i++)
            s += log1p(-ws[i].d);
        return -expm1(s);
    }
    for (size_t i = 0; i < k; i++) {
        double d = arm_dc(&arms[i], high[i] != 0, o, c);
        if (d >= 1.0) {
            *witness = i;
            return 1.0;
        }
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
    struct dc_arm *ws; /* NULL: no cache */
    size_t witness;    /* an arm at δᶜ_i = 1 at the last such point; k: none */
};

/* δᶜ at c, remembering the least value seen (golden_section's f). */
static double dc_eval(void *ctx, double c)
{
    struct dc_search *s = ctx;
    double f = dc_at_search(s->arms, s->k, s->high, s->o, s->ws, c, &s->witness);
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
    struct dc_search s = {arms, k, high, o, 0.0, INFINITY, NULL, k};
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

    golden_section(dc_eval, &s, &a, &b, DC_GOLDEN_MAX, DC_TOL);
    if (c_out)
        *c_out = s.best_c;
    if (per_arm) {
        if (s.ws != NULL) /* the values of stats_delta_c_at's per_arm */
            for (size_t i = 0; i < k; i++)
                per_arm[i] = arm_dc_cached(&arms[i], &s.ws[i], high[i] != 0, o, s.best_c);
        else
            stats_delta_c_at(arms, k, high, o, s.best_c, per_arm);
    }
    return s.best_f;
}

/* --- the tracked cutoff (ADAPT's select) -----------------------------------
 * The full search above evaluates δᶜ at about 53 cutoffs of K arms each.
 * Between two select() calls of ADAPT one or two arms change (a reward, a
 * pending pull), so the minimiser moves little: each call evaluates the
 * δᶜ_i at the cutoff the last one left, with G(c) = Σ_i ln(1 − δᶜ_i(c))
 * (ln(1 − δᶜ), maximised where δᶜ is least) differentiated twice in closed
 * form on the way, and leaves the next call one Newton step further: one
 * pass over the arms, without a logarithm. Near the minimum, where every
 * δᶜ_i is below e^{−1/2}, each ln(1 − δᶜ_i) is concave in c and G is too;
 * wherever the step cannot be trusted (no last cutoff, a vacuous arm,
 * G″ ≥ 0, a step leaving the part of I where δᶜ < 1 or longer than an
 * eighth of I) the full search answers instead. The fixed-n bounds
 * (`bound: "fixed"`, the papers') are tracked the same way, from their
 * closed forms (arm_dc_fixed): no cache, and no vacuous width but an
 * arm's with no reward (the Hoeffding term is below 1 at any positive
 * distance); and where δᶜ is within rounding of 1 at the cutoff tried, a
 * call without a usable last cutoff starts from ĉ and a step too long is
 * damped, rather than the full search answering (see there why). */

/* δᶜ_i at c with the first two derivatives of ln(1 − δᶜ_i) in c, from the
 * cache. With z = u/√vr (u = wn the deviation), the mixture's exponent is
 * x = c0 + z²/2 + ln Φ(z), so e^{−x} = e^{−c0} e^{−z²/2} / Φ(z), and
 * x′ = u/vr + r/√vr, x″ = (1 − r(z + r))/vr with r = φ(z)/Φ(z): the one
 * exponential serves both. Bernstein's x = u²/(A + Bu) − ℓ₀ has
 * x′ = u(2A + Bu)/(A + Bu)², x″ = 2A²/(A + Bu)³. δᶜ_i is arm_dc_cached's
 * value up to rounding (not bit for bit: no logarithm); 1 when the bound is
 * vacuous at c (then *g1 and *g2 are not set). g1 NULL: δᶜ_i only. */
static double arm_dc_newton(const struct stats_arm *a, const struct dc_arm *x, int is_high,
                            const struct stats_dc_opts *o, double c, double *g1, double *g2)
{
    double w = is_high ? a->mean + o->epsilon - c : c - a->mean;
    if (!(w > 0.0) || x->ne == 0.0)
        return 1.0;
    double u = w * x->ne;
    double z = u / x->hsq;
    double e = exp(-0.5 * z * z);
    double phi = 1.0, r = 0.0; /* Φ(z), φ(z)/Φ(z): 1 and 0 beyond 8.5, as in log_phi */
    if (z < 8.5) {
        phi = 1.0 - 0.5 * erfc(z / M_SQRT2);
        r = e / (sqrt(2.0 * M_PI) * phi);
    }
    double ex = x->hec0 * e / phi; /* e^{−x} */
    double x1 = u / x->hvr + r / x->hsq;
    double x2 = (1.0 - r * (z + r)) / x->hvr;
    if (!o->hoeffding_only && x->bv >= 0.0) {
        double k1 = stitch_k1();
        double aa = k1 * k1 * x->bv, bb = 2.0 * stitch_k2(), dd = aa + bb * u;
        double eb = exp(-(u * u / dd - x->bl0));
        if (eb < ex) {
            ex = eb;
            x1 = u * (2.0 * aa + bb * u) / (dd * dd);
            x2 = 2.0 * aa * aa / (dd * dd * dd);
        }
    }
    double d = o->hoeffding_only ? clamp_conf(ex) : clamp_conf(2.0 * clamp_conf(ex));
    if (d >= 1.0 || g1 == NULL)
        return d;
    double s = is_high ? -x->ne : x->ne; /* du/dc */
    double d1 = -x1 * d * s, d2 = (x1 * x1 - x2) * d * s * s;
    double q = 1.0 - d;
    *g1 = -d1 / q;
    *g2 = -d2 / q - d1 * d1 / (q * q);
    return d;
}

/* arm_dc_newton for the fixed-n bounds: δᶜ_i is arm_dc's value bit for bit
 * (the same calls), with G_i′ and G_i″ from whichever bound gave it. With
 * δᶜ_i = e^{−x(w)}, w the arm's distance to c: Hoeffding x = 2nw²,
 * x′ = 4nw, x″ = 4n; Bernstein (Maurer & Pontil) 2e^{−σ²} with
 * w = aσ + bσ², so x = σ² − ln 2, σ′ = 1/(a + 2bσ), x′ = 2σσ′,
 * x″ = 2σ′² − 4bσσ′³. Where the two cross, G has a kink: the steps may
 * then overshoot, which the caller's limits catch. */
static double arm_dc_fixed(const struct stats_arm *a, int is_high, const struct stats_dc_opts *o,
                           double c, double *g1, double *g2)
{
    double w = is_high ? a->mean + o->epsilon - c : c - a->mean;
    if (a->n == 0 || !(w > 0.0))
        return 1.0;
    double ne = eff_n(a, o->count_pending ? a->pending : 0);
    double dh = stats_hoeffding_conf(ne, w);
    double x1 = 4.0 * ne * w, x2 = 4.0 * ne;
    double d = dh;
    if (!o->hoeffding_only) {
        double var = stats_arm_var(a);
        double db = stats_bernstein_conf(ne, var, w);
        d = fmin(dh, db);
        if (db < dh) {
            double aa = sqrt(2.0 * var / ne), bb = 7.0 / (3.0 * (ne - 1.0));
            double sg = 2.0 * w / (aa + sqrt(aa * aa + 4.0 * bb * w));
            double sp = 1.0 / (aa + 2.0 * bb * sg);
            x1 = 2.0 * sg * sp;
            x2 = 2.0 * sp * sp - 4.0 * bb * sg * sp * sp * sp;
        }
    }
    if (d >= 1.0)
        return d;
    double s = is_high ? -1.0 : 1.0; /* dw/dc */
    double d1 = -x1 * d * s, d2 = (x1 * x1 - x2) * d;
    double q = 1.0 - d;
    *g1 = -d1 / q;
    *g2 = -d2 / q - d1 * d1 / (q * q);
    return d;
}

/* One pass at c: δᶜ_i into per_arm, G′ and G″ summed, Π(1 − δᶜ_i) into
 * *prod (1 − δᶜ, or 0 once it underflows); 0 when some arm is
 * vacuous at c (per_arm then partly written). Arms with δᶜ_i above e^{−1/2}
 * may make G locally convex (G″ ≥ 0: the full search) or slow the steps
 * down; a limit there (0.5) sent a third of the calls of a K = 100 run to
 * the full search, 6× the cost, for no gain where δᶜ is below 1/2. */
static int dc_newton_pass(const struct stats_arm *arms, size_t k, const unsigned char *high,
                          const struct stats_dc_opts *o, const struct dc_arm *ws, double c,
                          double *per_arm, double *gp, double *gpp, double *prod)
{
    double s1 = 0.0, s2 = 0.0, p = 1.0;
    for (size_t i = 0; i < k; i++) {
        double g1 = 0.0, g2 = 0.0; /* written unless the arm is vacuous (d ≥ 1: returned) */
        double d = o->bound == STATS_BOUND_FIXED
                       ? arm_dc_fixed(&arms[i], high[i] != 0, o, c, &g1, &g2)
                       : arm_dc_newton(&arms[i], &ws[i], high[i] != 0, o, c, &g1, &g2);
        if (d >= 1.0)
            return 0;
        per_arm[i] = d;
        s1 += g1;
        s2 += g2;
        p *= 1.0 - d;
    }
    *gp = s1;
    *gpp = s2;
    *prod = p;
    return 1;
}

/* The width w_v up to which arm i's δᶜ_i is 1 (δᶜ_i < 1 exactly when its
 * distance to the cutoff exceeds it): arm_dc_cached's exp(−x) reaches 1/2
 * (1 for π3's Hoeffding alone) there, that is the widths of the two bounds
 * at that level, the smaller one. Computed once per cache entry. */
static double arm_vacuous_width(const struct stats_arm *a, struct dc_arm *x,
                                const struct stats_dc_opts *o)
{
    if (x->ne == 0.0)
        return INFINITY;
    if (isnan(x->wv)) {
        if (o->hoeffding_only)
            x->wv = stats_anytime_hoeffding_width(x->ne, nextafter(1.0, 0.0));
        else
            x->wv = fmin(stats_anytime_hoeffding_width(x->ne, 0.5),
                         x->bv >= 0.0 ? stats_anytime_bernstein_width(x->ne, eff_ebv(a, x->ne), 0.5)
                                      : INFINITY);
    }
    return x->wv;
}

int stats_delta_c_track(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        const struct stats_dc_opts *o, double *cut, double *per_arm, void *ws)
{
    size_t im = 0, im1 = 0;
    double c0 = *cut;
    int fixed = o->bound == STATS_BOUND_FIXED;
    if (k < 2 || !boundary_arms(arms, k, high, &im, &im1))
        goto full;
    double lo = arms[im1].mean, hi = arms[im].mean + o->epsilon;
    if (!(lo < hi))
        goto full;
    struct dc_arm *x = ws;
    if (!fixed)
        dc_cache_fill(arms, k, o, x);
    /* In I, δᶜ(c) < 1 on (vl, vh) only: below vl some Low arm is vacuous,
     * above vh some High arm. */
    double vl = lo, vh = hi;
    for (size_t i = 0; i < k; i++) {
        double wv =
            fixed ? (arms[i].n == 0 ? INFINITY : 0.0) : arm_vacuous_width(&arms[i], &x[i], o);
        if (high[i])
            vh = fmin(vh, arms[i].mean + o->epsilon - wv);
        else
            vl = fmax(vl, arms[i].mean + wv);
    }
    if (!(vl < vh)) {
        /* δᶜ is 1 at every cutoff of I: the full search's answer is its
         * first point, ĉ (no later point is below 1), here in one pass. */
        double c = stats_cutoff_hat(arms, k, high, o->epsilon);
        *cut = c;
        for (size_t i = 0; i < k; i++) {
            if (fixed) { /* the full search's values there, bit for bit */
                per_arm[i] = arm_dc(&arms[i], high[i] != 0, o, c);
                continue;
            }
            /* Well inside its vacuous width (whose solve errs wide by
             * 1e-12 relative at most) an arm's δᶜ_i is 1 without its
             * exponential: most arms of a young experiment. */
            double w = high[i] ? arms[i].mean + o->epsilon - c : c - arms[i].mean;
            per_arm[i] = w < x[i].wv * (1.0 - 1e-9)
                             ? 1.0
                             : arm_dc_newton(&arms[i], &x[i], high[i] != 0, o, c, NULL, NULL);
        }
        return 2;
    }
    double gp, gpp, prod;
    int restart = 0;
    if (!(c0 > vl && c0 < vh)) { /* NaN too */
        if (!fixed)
            goto full;
        c0 = stats_cutoff_hat(arms, k, high, o->epsilon); /* the paper's, to start from */
        if (!(c0 > vl && c0 < vh))
            goto full;
        restart = 1;
    }
    if (!dc_newton_pass(arms, k, high, o, x, c0, per_arm, &gp, &gpp, &prod) || !(gpp < 0.0))
        goto full;
    /* (fixed-n bounds:) from ĉ only where δᶜ is within rounding of 1 there */
    if (restart && !(prod < DBL_EPSILON))
        goto full;
    double c1 = c0 - gp / gpp;
    if (!(c1 > vl && c1 < vh) || !(fabs(c1 - c0) <= (hi - lo) / 8.0)) {
        if (!fixed || isnan(c1) || !(prod < DBL_EPSILON))
            goto full;
        /* A damped step: at most an eighth of I, at most halfway to the
         * edge. Where δᶜ is within rounding of 1 (with the fixed-n bounds:
         * many arms with few rewards near the cutoff) the full search sees
         * a flat 1 and answers ĉ, while G, and so the cutoff of least δᶜ,
         * is still well defined: the steps walk there instead (G → −∞ at
         * both edges, its maximum is inside). */
        double lim = (hi - lo) / 8.0;
        double step = c1 - c0 > lim ? lim : c1 - c0 < -lim ? -lim : c1 - c0;
        c1 = c0 + step;
        if (!(c1 > vl && c1 < vh))
            c1 = 0.5 * (c0 + (step > 0.0 ? vh : vl));
    }
    *cut = c1;
    return 1;
full:
    stats_delta_c_ws(arms, k, high, o, cut, per_arm, ws);
    return 0;
}
