/*
 * kl_lucb.c — KL-LUCB (Kaufmann & Kalyanakrishnan 2013): the LUCB skeleton
 * (lucb.h) with Bernoulli-KL bounds
 *   U_i = max{q : n_i kl(μ̂_i, q) ≤ β(t, δ)},  L_i = min{q : n_i kl(μ̂_i, q) ≤ β(t, δ)},
 * β(t, δ) = ln(k1 K t^α / δ) + ln ln(k1 K t^α / δ), α = 1.1, k1 = 405.5 (their
 * Theorem 3 needs α > 1 and k1 > 2e + 1 + e/(α−1) + (e+1)/(α−1)², which is
 * 405.4 at α = 1.1). The Bernoulli KL bounds hold for any rewards in [0, 1]
 * (the Bernoulli law has the largest log-MGF at a given mean), so the
 * guarantee is not limited to 0/1 rewards.
 *
 * `rate = heuristic` uses β(t, δ) = ln((ln t + 1)/δ), the exploration rate of
 * Garivier & Kaufmann's experiments: much cheaper, with no proof; the
 * simulator's δ-check says whether it keeps its promise.
 *
 * Cost: the KL bounds are iterative (stats_kl_upper/lower), so they are
 * cached per arm and β is rounded up to a 0.5% grid (lucb.h): a select
 * recomputes only the arms whose count or mean moved, plus every arm when
 * β crosses a grid step (every ~10% growth of t).
 */
#include "policies/lucb.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>

enum { RATE_THEORY = 0, RATE_HEURISTIC = 1 };
static const char *const rates[] = {"theory", "heuristic", NULL};

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { KL_LUCB_RATE, KL_LUCB_ALPHA, KL_LUCB_K1, KL_LUCB_NPARAMS };

static const struct policy_param_spec kl_lucb_params[] = {
    [KL_LUCB_RATE] =
        {.name = "rate",
         .type = POLICY_PARAM_ENUM,
         .def = RATE_THEORY,
         .choices = rates,
         .doc = "exploration rate β(t,δ): theory = ln(k1 K t^α/δ) + ln ln(k1 K t^α/δ) (Kaufmann & "
                "Kalyanakrishnan 2013, Theorem 3); heuristic = ln((ln t + 1)/δ) (Garivier & "
                "Kaufmann 2016 experiments, no proof)"},
    [KL_LUCB_ALPHA] =
        {.name = "alpha",
         .type = POLICY_PARAM_NUM,
         .def = 1.1,
         .min = 1,
         .max = 4,
         .doc =
             "α > 1, the power of t in the theory rate (Kaufmann & Kalyanakrishnan 2013, Thm 3)"},
    [KL_LUCB_K1] =
        {.name = "k1",
         .type = POLICY_PARAM_NUM,
         .def = 405.5,
         .min = 1,
         .max = 1e9,
         .doc = "k1 in the theory rate; 405.5 is their constant for α = 1.1 (the proof needs k1 > "
                "2e + 1 + e/(α−1) + (e+1)/(α−1)²)"},
    [KL_LUCB_NPARAMS] = {.name = NULL},
};

/* β(t, δ); c1 = k1, c2 = α, or c2 < 0 for the heuristic rate. */
static double kl_beta(const struct lucb *l, double t)
{
    double lt = t > 1 ? log(t) : 0.0;
    if (l->c2 < 0)
        return log((lt + 1.0) / l->delta);
    double x = log(l->c1 * l->k / l->delta) + l->c2 * lt;
    return x + log(x);
}

static double kl_lower(double mean, double u, double x)
{
    return stats_kl_lower(mean, x / u);
}

static double kl_upper(double mean, double u, double x)
{
    return stats_kl_upper(mean, x / u);
}

/* Bisection-free but still iterative bounds: cached, β on a 0.5% grid. */
static const struct lucb_bounds kl_bounds = {
    .level = kl_beta,
    .lower = kl_lower,
    .upper = kl_upper,
    .grid = 0.005,
};

static int kl_lucb_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    int rate = (int)policy_param(ctx, KL_LUCB_RATE);
    double alpha = policy_param(ctx, KL_LUCB_ALPHA);
    double k1 = policy_param(ctx, KL_LUCB_K1);
    if (rate == RATE_THEORY && !(alpha > 1)) {
        snprintf(err, errlen,
                 "policy.params.alpha: must be > 1 (Kaufmann & Kalyanakrishnan "
                 "2013, Theorem 3)");
        return -1;
    }
    return lucb_init(state, &kl_bounds, k1, rate == RATE_HEURISTIC ? -1.0 : alpha, ctx, err,
                     errlen);
}

/* Proven with the theory rate; the heuristic one has no proof. */
static int kl_lucb_stop_proven(const struct policy_params *p)
{
    return p->values[KL_LUCB_RATE] == RATE_THEORY;
}

const struct policy_ops policy_kl_lucb = {
    .name = "kl-lucb",
    .summary = "KL-LUCB (Kaufmann & Kalyanakrishnan 2013): LUCB with Bernoulli-KL bounds",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_OWN_STOP,
    .params = kl_lucb_params,
    .init = kl_lucb_init,
    .fini = lucb_fini,
    .select = lucb_select,
    .update = NULL,
    .done = lucb_done,
    .recommend = lucb_recommend,
    .stop_proven = kl_lucb_stop_proven,
    .snap = lucb_snap,
};
