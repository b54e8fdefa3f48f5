/*
 * tas.c — optimal weights, T*(μ) and the ε-GLR statistic (see tas.h).
 *
 * Root finding is hand-written rather than GSL's: select() may not allocate
 * and gsl_root_fsolver is heap state, and both equations have cheap exact
 * derivatives (below), so safeguarded Newton converges in a few steps from a
 * warm start where Brent would need a dozen evaluations of F, each of which
 * solves K − 1 inner equations.
 *
 * Inner equation g_a(x) = y. For Bernoulli d, ∂d(p, m)/∂m = (m − p)/(m(1 − m)),
 * and (m − μ₁) + x(m − μ_a) = 0 by the definition of m, so g_a'(x) = d(μ_a, m):
 * g_a is increasing and concave from g_a(0) = 0 to d(μ₁, μ_a). Newton from
 * below on an increasing concave function climbs monotonically onto the
 * root; from above, one step lands below it (the tangent lies above g). So
 * plain Newton clipped at 0 converges from any start.
 *
 * Outer equation F(y) = Σ_a r_a(y) − 1 = 0, r_a = d(μ₁, m_a)/d(μ_a, m_a),
 * increasing from −1 at y = 0 to +∞ at y = d(μ₁, μ₂). Newton with the exact
 * derivative dr_a/dy = (dr_a/dm)(dm/dx)(dx/dy), dm/dx = (μ_a − μ₁)/(1 + x)²,
 * dx/dy = 1/d(μ_a, m), kept inside a bisection bracket.
 */
#include "policies/tas.h"

#include <math.h>

static double clamp_mu(double p)
{
    if (!(p > TAS_MU_CLAMP)) /* NaN too */
        return TAS_MU_CLAMP;
    return p < 1.0 - TAS_MU_CLAMP ? p : 1.0 - TAS_MU_CLAMP;
}

static double kl(double p, double q)
{
    return stats_kl_bern(p, q);
}

/* x_a(y) by Newton from x0 (see above) to relative precision tol; *m_out =
 * m at the root. */
static double solve_x(double m1, double ma, double y, double x0, double tol, double *m_out)
{
    double x = x0 >= 0 && isfinite(x0) ? x0 : 0.0;
    double m = (m1 + x * ma) / (1.0 + x);
    double prev = INFINITY;
    for (int it = 0; it < 200; it++) {
        double da = kl(ma, m);
        if (!(da > 0))
            break; /* m has reached μ_a in floating point: x is astronomical */
        double g = kl(m1, m) + x * da;
        double xn = x + (y - g) / da;
        if (xn < 0)
            xn = 0;
        /* Converged, or the steps stopped shrinking near the root: that is
         * rounding noise in g (Newton's steps shrink quadratically). */
        double step = fabs(xn - x);
        int stop = step <= tol * (1.0 + x) || (step <= 1e-9 * (1.0 + x) && step > 0.5 * prev);
        prev = step;
        x = xn;
        m = (m1 + x * ma) / (1.0 + x);
        if (stop)
            break;
    }
    *m_out = m;
    return x;
}

/* F(y) and F'(y); x[a] is the warm start in, x_a(y) out (x[best] untouched).
 * Means are read through clamp_mu. */
static double outer(const double *mu, size_t k, size_t best, double y, double *x, double tol,
                    double *fp)
{
    double m1 = clamp_mu(mu[best]);
    double f = -1.0, d = 0.0;
    for (size_t a = 0; a < k; a++) {
        if (a == best)
            continue;
        double ma = clamp_mu(mu[a]), m;
        x[a] = solve_x(m1, ma, y, x[a], tol, &m);
        double d1 = kl(m1, m), da = kl(ma, m);
        if (!(da > 0)) {
            f = INFINITY;
            continue;
        }
        f += d1 / da;
        double v = m * (1.0 - m);
        double d1p = (m - m1) / v, dap = (m - ma) / v;
        double drdm = (d1p * da - d1 * dap) / (da * da);
        double dmdx = (ma - m1) / ((1.0 + x[a]) * (1.0 + x[a]));
        d += drdm * dmdx / da;
    }
    *fp = d;
    return f;
}

double tas_optimal_weights_warm(const double *mu, size_t k, double *w, struct tas_warm *warm)
{
    if (k == 0)
        return 0.0;
    if (k == 1) {
        w[0] = 1.0;
        return 0.0;
    }
    /* Best and second-best clamped means; ties at the top. */
    size_t best = 0, ties = 0;
    double m1 = -1.0, m2 = -1.0;
    for (size_t a = 0; a < k; a++) {
        double v = clamp_mu(mu[a]);
        if (v > m1) {
            m2 = m1;
            m1 = v;
            best = a;
            ties = 1;
        } else if (v == m1) {
            ties++;
            m2 = v;
        } else if (v > m2) {
            m2 = v;
        }
    }
    if (ties > 1) {
        /* The warm start is kept: the next untied means are likely close
         * to the last untied ones. */
        for (size_t a = 0; a < k; a++)
            w[a] = clamp_mu(mu[a]) == m1 ? 1.0 / (double)ties : 0.0;
        return INFINITY;
    }
    /* x_a lives in the warm start, or (cold) in w itself: w[best] is not an
     * x and the final normalisation works in place. */
    double *x = warm != NULL ? warm->x : w;
    int hot = warm != NULL && warm->valid;
    if (!hot)
        for (size_t a = 0; a < k; a++)
            x[a] = 0.0;
    /* Relative precision on y*: the caller's, or 1e-11 (T* to ~1e-11). The
     * inner solves go 1000 times finer (not below 1e-13: rounding), so F is
     * known well enough for the outer test. */
    double tol = warm != NULL && warm->tol > 0 ? warm->tol : 1e-11;
    double itol = tol * 1e-3 > 1e-13 ? tol * 1e-3 : 1e-13;
    double ymax = kl(m1, m2);
    double lo = 0.0, hi = ymax;
    double y = hot && warm->y > 0 && warm->y < ymax ? warm->y : ymax / 2;
    for (int it = 0; it < 200; it++) {
        double fp;
        double f = outer(mu, k, best, y, x, itol, &fp);
        if (f == 0)
            break;
        if (f < 0)
            lo = y;
        else
            hi = y;
        double yn = y - f / fp;
        if (!(yn > lo && yn < hi)) /* NaN, ∞ and leaving the bracket: bisect */
            yn = 0.5 * (lo + hi);
        /* Newton's step is the error at y (quadratic convergence): once it
         * is below tol, y and the x_a(y) just computed are the answer, with
         * no further pass. Also stop on a bracket narrower than that. */
        if (fabs(yn - y) <= tol * y || hi - lo <= tol * y)
            break;
        y = yn;
    }
    double sum = 1.0;
    for (size_t a = 0; a < k; a++)
        if (a != best)
            sum += x[a];
    if (warm != NULL) {
        warm->y = y;
        warm->valid = isfinite(sum) && y > 0;
    }
    for (size_t a = 0; a < k; a++)
        w[a] = a == best ? 1.0 / sum : x[a] / sum;
    return sum / y;
}

double tas_optimal_weights(const double *mu, size_t k, double *w)
{
    return tas_optimal_weights_warm(mu, k, w, NULL);
}

double tas_lower_bound(const double *mu, size_t k, double delta, double *w)
{
    double t = tas_optimal_weights(mu, k, w);
    return t * stats_kl_bern(delta, 1.0 - delta);
}

/* inf over x of nb d(mb, x) + nj d(mj, x + ε): convex in x, so bisect on the
 * sign of the derivative nb (x − mb)/V(x) + nj (x + ε − mj)/V(x + ε) over
 * [max(mj − ε, 0), min(mb, 1 − ε)], where it goes from ≤ 0 to ≥ 0. */
static double pair_eps(double nb, double mb, double nj, double mj, double eps)
{
    double lo = mj - eps > 0 ? mj - eps : 0.0;
    double hi = mb < 1.0 - eps ? mb : 1.0 - eps;
    for (int it = 0; it < 64 && hi - lo > 1e-15; it++) {
        double x = 0.5 * (lo + hi);
        double u = clamp_mu(x), v = clamp_mu(x + eps);
        double h = nb * (u - mb) / (u * (1 - u)) + nj * (v - mj) / (v * (1 - v));
        if (h > 0)
            hi = x;
        else
            lo = x;
    }
    double x = 0.5 * (lo + hi);
    return nb * kl(mb, x) + nj * kl(mj, x + eps);
}

/* The exact pair statistic of (best, j), ε-version when eps > 0. */
static double pair_glr(double nb, double mb, double nj, double mj, double eps)
{
    if (eps > 0)
        return pair_eps(nb, mb, nj, mj, eps);
    double mij = (nb * mb + nj * mj) / (nb + nj);
    return nb * kl(mb, mij) + nj * kl(mj, mij);
}

/* Pinsker (d(p, q) ≥ 2(p − q)²) bounds a pair's statistic from below by
 * the quadratic problem's value 2 (n_b n_j/(n_b + n_j)) (μ̂_b + ε − μ̂_j)²:
 * pairs whose bound already exceeds the smallest exact value so far are
 * skipped. Only the minimum's value matters, so skipping is exact. At
 * K = 1000 this leaves a handful of logarithms instead of 4000. */
double tas_glr(const struct stats_arm *arms, size_t k, size_t best, double eps)
{
    if (k < 2 || arms[best].n == 0)
        return 0.0;
    double nb = (double)arms[best].n, mb = arms[best].mean;
    if (eps < 0)
        eps = 0;
    /* First pass: no data or a challenger at or above μ̂_b + ε means Z = 0;
     * find the pair of smallest lower bound to seed the minimum. */
    size_t seed = k;
    double seed_lb = INFINITY;
    for (size_t j = 0; j < k; j++) {
        if (j == best)
            continue;
        if (arms[j].n == 0)
            return 0.0;
        double nj = (double)arms[j].n, mj = arms[j].mean;
        if (eps > 0 ? mj >= mb + eps : mj >= mb)
            return 0.0;
        double g = mb + eps - mj;
        double lb = 2.0 * nb * nj / (nb + nj) * g * g;
        if (lb < seed_lb) {
            seed_lb = lb;
            seed = j;
        }
    }
    double z = pair_glr(nb, mb, (double)arms[seed].n, arms[seed].mean, eps);
    for (size_t j = 0; j < k; j++) {
        if (j == best || j == seed)
            continue;
        double nj = (double)arms[j].n, mj = arms[j].mean;
        double g = mb + eps - mj;
        if (2.0 * nb * nj / (nb + nj) * g * g >= z)
            continue;
        double zj = pair_glr(nb, mb, nj, mj, eps);
        if (zj < z)
            z = zj;
    }
    return z;
}

/* Pairs are checked in index order and the first that fails ends the
 * check (most checks, before the stop). A pair whose KT part alone, from
 * the Pinsker bound on Z_j, clears beta + ln 2 passes without its exact
 * statistic or the mixture's search: far challengers cost two regrets;
 * the rest go to stats_glr_pair_passes. */
int tas_glr_stop(const struct stats_arm *arms, size_t k, size_t best, double eps,
                 enum stats_glr_threshold kind, double beta)
{
    if (kind != STATS_GLR_PROVEN)
        return tas_glr(arms, k, best, eps) > beta;
    if (k < 2 || arms[best].n == 0)
        return 0;
    double nb = (double)arms[best].n, mb = arms[best].mean;
    if (eps < 0)
        eps = 0;
    for (size_t j = 0; j < k; j++) {
        if (j == best)
            continue;
        if (arms[j].n == 0)
            return 0;
        if (eps > 0 ? arms[j].mean >= mb + eps : arms[j].mean >= mb)
            return 0;
    }
    double rb = stats_kt_regret(nb, mb);
    for (size_t j = 0; j < k; j++) {
        if (j == best)
            continue;
        double nj = (double)arms[j].n, mj = arms[j].mean;
        double g = mb + eps - mj;
        double rj = stats_kt_regret(nj, mj);
        if (2.0 * nb * nj / (nb + nj) * g * g - rb - rj - M_LN2 > beta)
            continue;
        double z = pair_glr(nb, mb, nj, mj, eps);
        if (!stats_glr_pair_passes(kind, &arms[best], &arms[j], z, eps, beta))
            return 0;
    }
    return 1;
}
