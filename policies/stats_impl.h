/*
 * stats_impl.h — internal to the stats_*.c files, not for policies: the
 * pieces of the time-uniform bounds (Howard et al.'s stitching, the
 * one-sided normal mixture, counting pending pulls) that the δᶜ search
 * (stats_dc.c) caches per arm and the GLR's mixture e-value (stats_glr.c)
 * and the leader product (stats_lead.c) reuse. They are `static inline` here, defined once, so that
 * the cached δᶜ and the GLR compute with the very operations stats_bounds.c uses, bit for bit, and
 * stay inlined on the hot paths they were written for.
 */
#ifndef BANDITD_POLICIES_STATS_IMPL_H
#define BANDITD_POLICIES_STATS_IMPL_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "policies/stats.h"

/* Polynomial stitching parameters (Howard, Ramdas, McAuliffe & Sekhon 2021,
 * Theorem 1 and eq. (10); the confseq library's defaults). */
#define STITCH_S 1.4
#define STITCH_ETA 2.0

/* Smallest value a confidence function returns: the header promises d in
 * (0, 1], and callers divide by sums of δᶜ_i (π3 samples ∝ δᶜ_i). */
#define CONF_MIN DBL_MIN

/* d clamped into [CONF_MIN, 1]; NaN gives 1. */
static inline double clamp_conf(double d)
{
    if (!(d < 1.0)) /* also catches NaN, which only a degenerate input makes */
        return 1.0;
    return d < CONF_MIN ? CONF_MIN : d;
}

/* The constants k1 and k2 of the stitched boundary (stats.h). */
static inline double stitch_k1(void)
{
    return (pow(STITCH_ETA, 0.25) + pow(STITCH_ETA, -0.25)) / sqrt(2.0);
}

static inline double stitch_k2(void)
{
    return (sqrt(STITCH_ETA) + 1.0) / 2.0;
}

/* ζ(s) for s = STITCH_S = 1.4, as gsl_sf_zeta(1.4) returns it. A literal
 * because the call cost two thirds of a δᶜ search over 4096 arms (27 ms
 * against 9 ms); the unit tests check it against gsl_sf_zeta. */
#define STITCH_ZETA_S 3.1055472779775792

/* The part of ℓ that does not depend on d:
 * s ln ln(η v / v_min) + ln(ζ(s) / ln(η)^s), with v already >= v_min. */
static inline double stitch_ell0(double v, double v_min)
{
    double a = log(STITCH_ZETA_S) - STITCH_S * log(log(STITCH_ETA));
    return STITCH_S * log(log(STITCH_ETA * v / v_min)) + a;
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
static inline double log_phi(double z)
{
    if (z >= 8.5)
        return 0.0;
    double q = 0.5 * erfc(z / M_SQRT2); /* 1 − Φ(z) */
    return z >= 0.0 ? log1p(-q) : log(0.5 * erfc(-z / M_SQRT2));
}

/* ln M(u) for the deviation u = wn, with vr = V + ρ, sq = sqrt(vr) and
 * c0 = ln 2 + ln(ρ/vr)/2 (constant along a cutoff search: cached by δᶜ).
 * One function so that the cached and uncached δᶜ agree bit for bit. */
static inline double mix_logm(double u, double vr, double sq, double c0)
{
    return c0 + u * u / (2.0 * vr) + log_phi(u / sq);
}

static inline double mix_c0(double vr)
{
    return M_LN2 + 0.5 * log(MIX_RHO / vr);
}

/* ln M(u), any sign of u, from below: exact (log_phi) down to z = −30 (Φ is
 * 1e-198 there, far from underflow, and u²/(2vr) + ln Φ(z) loses under
 * 1e-13 to cancellation); beyond, Gordon's inequality
 * Φ(z) ≥ φ(z)|z|/(z² + 1) (0.1% low at most), in which u²/(2vr) = z²/2
 * cancels exactly. With n = 0 (vr = ρ, u = 0) it is exactly 0: M = 1. */
static inline double mix_logm_lower(double u, double vr, double sq, double c0)
{
    double z = u / sq;
    if (z >= -30.0)
        return mix_logm(u, vr, sq, c0);
    return c0 + log(-z / (z * z + 1.0)) - 0.5 * log(2.0 * M_PI);
}

/* The returned (High) arm's prior: confseq's best_rho at v_opt = 250
 * (n = 1000) instead of the arm bounds' 125, the same α = 0.025, so twice
 * MIX_RHO (the formula is linear in v_opt). Why a second ρ: in a pair
 * (i ∈ High, j ∈ Low) the High arm is the sampling rules' leader, pulled
 * about as often as all its challengers together, so at a stop its deviation
 * per sample λ* = 4(μ̂_i − c) is small and its V large, where a narrower
 * half-normal prior (larger ρ) puts more mass: its regret ½ ln(1 + V/ρ) +
 * ρλ*²/2 falls. The Low arm keeps MIX_RHO: fewer samples, a larger λ*.
 * Why 2 and not 4: 4·MIX_RHO saved 2–3% more on long stops but cost 14% on
 * a 500-pull stop (adapt, (0.7, 0.5, 0.4, 0.3), δ = 0.05); 2·MIX_RHO is
 * within 4.3% of the best of ρ_H ∈ {1, 2, 4}·MIX_RHO on every instance of
 * docs/stop-rules.md's paired table, 1 within 8.9%, 4 within 13.7%. The proof
 * needs only that ρ is fixed before any data, per role: the e-value of the
 * ordered pair (i, j) is one fixed construction (docs/stop-rules.md). */
#define PAIR_RHO_HIGH (2.0 * MIX_RHO)

/* Bernoulli kl(p, q) for p, q ∈ [0, 1], +∞ where it is (q = 0 < p or
 * q = 1 > p): no clamp, so that N kl stays convex in q up to the ends. By
 * log1p of the ratios' distance from 1: ln((1 − p)/(1 − q)) computed as a
 * log of a rounded ratio errs by 1e-16 absolute, which N(1 − p) would make
 * 1e-4 nats at N = 10^12. */
static inline double kl_exact(double p, double q)
{
    double d = 0.0;
    if (p > 0.0)
        d += p * log1p((p - q) / q);
    if (p < 1.0)
        d += (1.0 - p) * log1p((q - p) / (1.0 - q));
    return d;
}

/* x clamped to [0, 1] (a NaN to 0): a mean or a reward read as the rules
 * read them. */
static inline double unit_clamp(double x)
{
    return x > 0.0 ? (x < 1.0 ? x : 1.0) : 0.0;
}

/* A GLR memo's entry for an arm's own rewards (stats_glr_stop_memo's
 * regrets, the leader product's constants): one refresh for both users of
 * a memo, so that neither finds the other's half-updated entry. */
static inline void memo_arm_own(struct stats_glr_memo_arm *x, const struct stats_arm *a)
{
    x->n = a->n;
    x->mean = a->mean;
    x->regret = stats_kt_regret((double)a->n, a->mean);
    x->vr = (double)a->n / 4.0 + MIX_RHO;
    x->sq = sqrt(x->vr);
    x->c0 = mix_c0(x->vr);
}

/* Pending pulls count as returned at the current mean: n grows, the mean and
 * the variance stay; the anytime variance process grows in proportion. */
static inline double eff_n(const struct stats_arm *a, uint64_t extra)
{
    return (double)a->n + (double)extra;
}

static inline double eff_ebv(const struct stats_arm *a, double ne)
{
    return a->ebv * ne / (double)a->n;
}

/* Golden-section search for the minimum of a unimodal f on [*a, *b]: at most
 * max_it steps, stopping once b − a ≤ tol (tol < 0: always max_it steps).
 * f is evaluated at the two interior points first (x1 then x2), then once
 * per step; the final bracket is left in *a, *b. Before each step, stop
 * (when not NULL) sees the step's number, the bracket and the two interior
 * values, and a nonzero answer ends the search and is returned (0 when it
 * ran to its end). Shared by the δᶜ cutoff search (which records the best
 * point in f's context), the GLR pair mixture's lower bound (which reads
 * the bracket) and the leader product (which ends early, stats_lead.c). */
static inline int golden_section_until(double (*f)(void *ctx, double x),
                                       int (*stop)(void *ctx, int it, double lo, double hi,
                                                   double f1, double f2),
                                       void *ctx, double *a, double *b, int max_it, double tol)
{
    const double g = (sqrt(5.0) - 1.0) / 2.0;
    double lo = *a, hi = *b;
    double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
    double f1 = f(ctx, x1), f2 = f(ctx, x2);
    int r = 0;
    for (int it = 0; it < max_it && (tol < 0.0 || hi - lo > tol); it++) {
        if (stop != NULL && (r = stop(ctx, it, lo, hi, f1, f2)) != 0)
            break;
        if (f1 <= f2) {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = f(ctx, x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = f(ctx, x2);
        }
    }
    *a = lo;
    *b = hi;
    return r;
}

static inline void golden_section(double (*f)(void *ctx, double x), void *ctx, double *a, double *b,
                                  int max_it, double tol)
{
    (void)golden_section_until(f, NULL, ctx, a, b, max_it, tol);
}

#endif
