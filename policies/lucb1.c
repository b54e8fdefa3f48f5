/*
 * lucb1.c — LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone 2012; Bachman &
 * Precup 2013, eq. 10): the LUCB skeleton (lucb.h) with Hoeffding bounds
 * μ̂_i ± β(n_i, t), β(u, t) = sqrt(ln(k1 K t^p / δ) / (2u)), k1 = 5/4, p = 4.
 * Stops when U(l*) − L(h*) < ε; the returned set is (ε, m)-optimal with
 * probability 1 − δ (their Theorem 1: the bounds fail somewhere with
 * probability at most Σ_t t · K · δ/(k1 K t^p) = δ ζ(p − 1)/k1, which is
 * 0.96 δ at the defaults; any k1 ≥ ζ(p − 1) with p > 2 keeps the proof).
 * t counts samples (the paper counts rounds of two samples; a larger t only
 * widens the bounds).
 */
#include "policies/lucb.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { LUCB1_K1, LUCB1_POWER, LUCB1_NPARAMS };

static const struct policy_param_spec lucb1_params[] = {
    [LUCB1_K1] =
        {.name = "k1",
         .type = POLICY_PARAM_NUM,
         .def = 1.25,
         .min = 1e-6,
         .max = 1e6,
         .doc = "k1 in β(u,t) = sqrt(ln(k1 K t^p/δ)/(2u)); 5/4 in Kalyanakrishnan et al. 2012, "
                "LUCB1 (eq. 10 of Bachman & Precup); the proof needs k1 ≥ ζ(p−1)"},
    [LUCB1_POWER] =
        {.name = "power",
         .type = POLICY_PARAM_NUM,
         .def = 4,
         .min = 1,
         .max = 16,
         .doc = "p, the power of t in β(u,t); 4 in Kalyanakrishnan et al. 2012 (LUCB1); the "
                "proof needs p > 2"},
    [LUCB1_NPARAMS] = {.name = NULL},
};

/* The level ln(k1 K t^p / δ) (c1 = k1, c2 = p); β(u, t) = sqrt(level/(2u)). */
static double lucb1_level(const struct lucb *l, double t)
{
    double lt = t > 1 ? log(t) : 0.0;
    return log(l->c1 * l->k / l->delta) + l->c2 * lt;
}

static double lucb1_lower(double mean, double u, double x)
{
    return mean - sqrt(x / (2.0 * u));
}

static double lucb1_upper(double mean, double u, double x)
{
    return mean + sqrt(x / (2.0 * u));
}

/* Closed-form bounds: no cache (grid 0). */
static const struct lucb_bounds lucb1_bounds = {
    .level = lucb1_level,
    .lower = lucb1_lower,
    .upper = lucb1_upper,
    .grid = 0,
};

static int lucb1_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    return lucb_init(state, &lucb1_bounds, policy_param(ctx, LUCB1_K1),
                     policy_param(ctx, LUCB1_POWER), ctx, err, errlen);
}

const struct policy_ops policy_lucb1 = {
    .name = "lucb1",
    .summary = "LUCB1 (Kalyanakrishnan et al. 2012): pull the two most ambiguous arms, Hoeffding",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_OWN_STOP,
    .params = lucb1_params,
    .init = lucb1_init,
    .fini = lucb_fini,
    .select = lucb_select,
    .update = NULL,
    .done = lucb_done,
    .recommend = lucb_recommend,
    .snap = lucb_snap,
};
