/*
 * tas.h — the mathematics of Track-and-Stop (Garivier & Kaufmann 2016) that
 * other code needs too: the optimal allocation w*(μ) and the characteristic
 * time T*(μ) for Bernoulli arms (the simulator's lower bound
 * E[τ] ≥ T*(μ) kl(δ, 1 − δ)). The GLR statistic for an ε-best arm (the
 * stop rule of track-and-stop and ttts) is stats_glr_best (stats.h).
 *
 * Pure functions: no allocation, no global state, thread-safe.
 */
#ifndef BANDITD_POLICIES_TAS_H
#define BANDITD_POLICIES_TAS_H

#include <stddef.h>

#include "policies/stats.h"

/* w*(μ) and T*(μ) for Bernoulli means mu[0..k) (Garivier & Kaufmann 2016,
 * Theorem 5; their BAIalgos.jl `OptimalWeights`). With μ₁ the largest mean,
 * g_a(x) = d(μ₁, m) + x d(μ_a, m), m = (μ₁ + x μ_a)/(1 + x), x_a(y) = g_a⁻¹(y);
 * y* ∈ (0, d(μ₁, μ₂)) solves Σ_{a≠1} d(μ₁, m_a(y)) / d(μ_a, m_a(y)) = 1;
 * w₁ = 1/(1 + Σ x_a(y*)), w_a = x_a(y*) w₁, T* = (1 + Σ x_a(y*)) / y*.
 * Fills w[0..k) (sums to 1) and returns T*. Several arms sharing the
 * largest mean: w is uniform on them and T* = +INFINITY (no finite
 * sample size identifies the best arm). k == 1: w = {1}, T* = 0. */
double tas_optimal_weights(const double *mu, size_t k, double *w);

/* The same with a warm start for repeated calls on slowly changing means:
 * `x` (k entries, owned by the caller) keeps the last x_a(y*), `y` the last
 * y*; both are updated. Set valid = 0 before the first call. `tol` is the
 * relative precision wanted on y* (0: 1e-11, what tas_optimal_weights
 * uses; a sampling rule needs far less). */
struct tas_warm {
    double y;
    double *x;
    int valid;
    double tol;
};
double tas_optimal_weights_warm(const double *mu, size_t k, double *w, struct tas_warm *warm);

/* T*(μ) kl(δ, 1 − δ): the expected sample size no δ-correct policy beats
 * (Garivier & Kaufmann 2016, Theorem 1). `w` is scratch of k entries. */
double tas_lower_bound(const double *mu, size_t k, double delta, double *w);

#endif
