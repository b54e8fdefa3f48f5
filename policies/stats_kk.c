/*
 * stats_kk.c — the literature's proven GLR threshold (stats.h, "Literature
 * thresholds"): Kaufmann & Koolen (2021)'s calibration function 𝒞_exp, the
 * pair threshold built on it, and the lower branch of the Lambert W function
 * that 𝒞_exp needs. No stop rule uses it: it is what our proven threshold
 * is compared with (scripts/thresholds.c, docs/stop-rules.md), and the unit
 * tests check it against values computed in arbitrary precision.
 *
 * No allocation, no state.
 */
#include "policies/stats.h"

#include <math.h>

/* W_{−1}(x) for x ∈ [−1/e, 0): the root w ≤ −1 of w e^w = x. A first guess
 * from the branch-point series (x near −1/e) or the asymptotic expansion
 * (x near 0), then Halley's iteration, which converges cubically on this
 * branch; at the branch point itself (w = −1) Halley's step divides by
 * w + 1, so the series' value is returned there. */
double stats_lambert_wm1(double x)
{
    const double e = exp(1.0);
    if (!(x < 0.0) || x < -1.0 / e - 1e-15)
        return NAN;
    double q = 1.0 + e * x; /* 0 at the branch point */
    double w;
    if (q < 0.25) {
        double p = -sqrt(2.0 * (q > 0.0 ? q : 0.0));
        w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p;
        if (q < 1e-14)
            return w;
    } else {
        double l1 = log(-x), l2 = log(-l1);
        w = l1 - l2 + l2 / l1;
    }
    for (int it = 0; it < 20; it++) {
        double ew = exp(w), f = w * ew - x;
        double step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if (fabs(step) <= 4e-16 * fabs(w))
            break;
    }
    return w;
}

/* h⁻¹(y), y ≥ 1: the root u ≥ 1 of h(u) = u − ln u = y, which is
 * −W_{−1}(−e^{−y}). Beyond y = 700 e^{−y} nears the end of the doubles, and
 * Newton's method on u − ln u = y from u = y + ln y (where h' = 1 − 1/u is
 * near 1) is exact to rounding in a few steps. */
static double h_inv(double y)
{
    if (y <= 1.0)
        return 1.0;
    if (y < 700.0)
        return -stats_lambert_wm1(-exp(-y));
    double u = y + log(y);
    for (int it = 0; it < 8; it++)
        u -= (u - log(u) - y) / (1.0 - 1.0 / u);
    return u;
}

/* h̃_z(x) = e^{1/h⁻¹(x)} h⁻¹(x) when x ≥ h⁻¹(1/ln z), z(x − ln ln z)
 * otherwise (Kaufmann & Koolen 2021: the function their bound for
 * exponential families, Theorem 14 of arXiv 1811.11419v1, is made of). */
static double h_tilde(double x, double z)
{
    if (x >= h_inv(1.0 / log(z))) {
        double u = h_inv(x);
        return exp(1.0 / u) * u;
    }
    return z * (x - log(log(z)));
}

double stats_kk_cexp(double x)
{
    if (!(x >= 0.0))
        return NAN;
    /* ln(2ζ(2)) = ln(π²/3) */
    return 2.0 * h_tilde((h_inv(1.0 + x) + log(M_PI * M_PI / 3.0)) / 2.0, 1.5);
}

double stats_kk_pair_threshold(double ni, double nj, size_t k, unsigned m, double delta)
{
    if (!(delta > 0.0))
        return INFINITY;
    double pairs = 1.0;
    if (m > 0 && (size_t)m < k)
        pairs = (double)m * (double)(k - m);
    double li = ni > 1.0 ? log(ni) : 0.0, lj = nj > 1.0 ? log(nj) : 0.0;
    return 2.0 * stats_kk_cexp(log(pairs / delta) / 2.0) + 3.0 * log1p(li) + 3.0 * log1p(lj);
}
