/*
 * arms.c — the arms' reward distributions (sim.h, internal.h): one draw in reward
 * units, and the mean after clipping to the reward range in closed form.
 */
#include "sim/internal.h"

#include <math.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

/* E[clip(X, lo, hi)] in closed form:
 *  bernoulli, rademacher: the two atoms, clipped;
 *  uniform U(a, b):  lo P(X < lo) + hi P(X > hi) + ∫_{max(a,lo)}^{min(b,hi)} x dx/(b − a);
 *  gaussian N(μ, σ): lo Φ(α) + hi Q(β) + μ (Φ(β) − Φ(α)) + σ (φ(α) − φ(β)),
 *                    α = (lo − μ)/σ, β = (hi − μ)/σ (the truncated-normal mean);
 *  beta B(a, b):     lo F(l) + hi (1 − F(h)) + a/(a+b) (F⁺(h) − F⁺(l)), l, h the
 *                    range clamped to [0, 1], F⁺ the Beta(a+1, b) CDF (since
 *                    x f_{a,b}(x) = a/(a+b) f_{a+1,b}(x)). */
double sim_arm_clipped_mean(const struct sim_arm *a, double lo, double hi)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return (1.0 - a->p1) * sim_clip(0.0, lo, hi) + a->p1 * sim_clip(1.0, lo, hi);
    case SIM_RADEMACHER:
        return 0.5 * sim_clip(a->p1, lo, hi) + 0.5 * sim_clip(a->p2, lo, hi);
    case SIM_UNIFORM: {
        double u0 = a->p1, u1 = a->p2, w = u1 - u0;
        double below = sim_clip((lo - u0) / w, 0.0, 1.0);
        double above = sim_clip((u1 - hi) / w, 0.0, 1.0);
        double s = u0 > lo ? u0 : lo, t = u1 < hi ? u1 : hi;
        double mid = t > s ? (t - s) * (t + s) / (2.0 * w) : 0.0;
        return lo * below + hi * above + mid;
    }
    case SIM_GAUSSIAN: {
        double mu = a->p1, sd = a->p2;
        double al = (lo - mu) / sd, be = (hi - mu) / sd;
        /* Φ(β) − Φ(α) from whichever tail keeps its digits. */
        double inside = al > 0.0 ? gsl_cdf_ugaussian_Q(al) - gsl_cdf_ugaussian_Q(be)
                                 : gsl_cdf_ugaussian_P(be) - gsl_cdf_ugaussian_P(al);
        return lo * gsl_cdf_ugaussian_P(al) + hi * gsl_cdf_ugaussian_Q(be) + mu * inside +
               sd * (gsl_ran_ugaussian_pdf(al) - gsl_ran_ugaussian_pdf(be));
    }
    case SIM_BETA: {
        double A = a->p1, B = a->p2;
        double l = sim_clip(lo, 0.0, 1.0), h = sim_clip(hi, 0.0, 1.0);
        return lo * gsl_cdf_beta_P(l, A, B) + hi * gsl_cdf_beta_Q(h, A, B) +
               A / (A + B) * (gsl_cdf_beta_P(h, A + 1.0, B) - gsl_cdf_beta_P(l, A + 1.0, B));
    }
    }
    return NAN;
}

int sim_arm_can_clip(const struct sim_arm *a, double lo, double hi)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return (a->p1 < 1.0 && (0.0 < lo || 0.0 > hi)) || (a->p1 > 0.0 && (1.0 < lo || 1.0 > hi));
    case SIM_RADEMACHER:
        return a->p1 < lo || a->p1 > hi || a->p2 < lo || a->p2 > hi;
    case SIM_UNIFORM:
        return a->p1 < lo || a->p2 > hi;
    case SIM_GAUSSIAN:
        return 1; /* unbounded */
    case SIM_BETA:
        return lo > 0.0 || hi < 1.0;
    }
    return 1;
}

double sim_arm_draw(const struct sim_arm *a, const gsl_rng *r)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return (double)gsl_ran_bernoulli(r, a->p1);
    case SIM_RADEMACHER:
        return gsl_ran_bernoulli(r, 0.5) ? a->p2 : a->p1;
    case SIM_UNIFORM:
        return gsl_ran_flat(r, a->p1, a->p2);
    case SIM_GAUSSIAN:
        return a->p1 + gsl_ran_gaussian_ziggurat(r, a->p2);
    case SIM_BETA:
        return gsl_ran_beta(r, a->p1, a->p2);
    }
    return 0.0;
}
