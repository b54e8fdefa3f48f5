/*
 * tas.c — optimal weights and T*(μ) (see tas.h); the ε-GLR statistic that
 * stops track-and-stop is stats_glr_best (stats_glr.c).
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

/* Means closer than STATS_KL_MU_CLAMP to 0 or 1 are moved to it: the
 * Bernoulli KL is infinite at the edges and the weights are continuous
 * there. */
static double clamp_mu(double p)
{
    return stats_kl_clamp(p, STATS_KL_MU_CLAMP);
}

/* x_a(y) by Newton from x0 (see above) to relative precision tol; *m_out =
 * m at the root. */
static double solve_x(double m1, double ma, double y, double x0, double tol, double *m_out)
{
    double x = x0 >= 0 && isfinite(x0) ? x0 : 0.0;
    double m = (m1 + x * ma) / (1.0 + x);
    double prev = INFINITY;
    for (int it = 0; it < 200; it++) {
        double da = stats_kl_bern(ma, m);
        if (!(da > 0))
            break; /* m has reached μ_a in floating point: x is astronomical */
        double g = stats_kl_bern(m1, m) + x * da;
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
        double d1 = stats_kl_bern(m1, m), da = stats_kl_bern(ma, m);
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
    double ymax = stats_kl_bern(m1, m2);
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
