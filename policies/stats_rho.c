/*
 * stats_rho.c — Bachman & Precup's (2013, eq. 3) Bayesian confidence ρ̄ that
 * the top m arms by posterior mean are the true top m (stats.h, "Bayesian
 * confidence"). Reads the arms' Beta posteriors; no allocation, no state.
 */
#include "policies/stats.h"

#include <math.h>

#include <gsl/gsl_cdf.h>

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
