/*
 * ttts.c — Top-Two Thompson Sampling (Russo 2016), best arm (m = 1): draw θ
 * from the Beta posteriors, leader I = argmax θ; with probability β pull I,
 * else redraw until the argmax J differs from I and pull J. β = 1/2 is
 * Russo's default and is within a factor 2 of the optimal allocation's
 * rate for every instance. The redraws are capped (`max_tries`, Russo's
 * implementation note); when the cap is hit, J is drawn from the Laplace
 * approximation of the same distribution (laplace_challenger).
 *
 * Stop rule (decision): the GLR (Chernoff) rule of track-and-stop — Z(t) >
 * β(t, δ) with Z the ε-GLR of the empirical best (tas.h) and the proven
 * threshold of stats_glr_threshold by default (param `threshold`). TTTS is
 * a sampling rule only; its fixed-confidence guarantees in the literature
 * (Qin, Klabjan & Russo 2017; Shang et al. 2020; Jourdan et al. 2022) are
 * for TTTS + GLR, and the δᶜ rule's per-arm union of bounds would throw
 * away most of what an asymptotically β-optimal allocation gains. Any other
 * rule can still be chosen with stop_rule.
 *
 * Posteriors are the engine's Beta(α, β) (prior from the experiment;
 * rewards in (0, 1) enter by the Bernoulli trick). Asynchrony: pending
 * pulls do not move a posterior; the draws spread pulls while rewards are
 * in flight, which is how Thompson sampling is served with delays.
 */
#include "policies/fc.h"
#include "base/ser.h"
#include "policies/policy.h"
#include "policies/tas.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { TTTS_BETA, TTTS_MAX_TRIES, TTTS_THRESHOLD, TTTS_NPARAMS };

static const struct policy_param_spec ttts_params[] = {
    [TTTS_BETA] = {.name = "beta",
                   .type = POLICY_PARAM_NUM,
                   .def = 0.5,
                   .min = 0,
                   .max = 1,
                   .doc = "probability of pulling the leader; 1/2 is Russo 2016's default (TTTS is "
                          "β-optimal; β = 1/2 is within a factor 2 of optimal)"},
    [TTTS_MAX_TRIES] =
        {.name = "max_tries",
         .type = POLICY_PARAM_INT,
         .def = 10,
         .min = 1,
         .max = 100000,
         .doc =
             "redraws to find a challenger J ≠ I (Russo 2016) before drawing J ∝ e^(−W_J), "
             "the large-deviation approximation of the same law; each redraw costs K Beta draws"},
    [TTTS_THRESHOLD] = FC_GLR_PARAM_THRESHOLD,
    [TTTS_NPARAMS] = {.name = NULL},
};

struct ttts {
    struct fc_glr glr; /* first: fc_glr_state_done/recommend read the state as this */
    size_t k;
    double beta;
    unsigned long max_tries;
    double *theta;
};

static void ttts_fini(void *state)
{
    struct ttts *s = state;
    if (s == NULL)
        return;
    free(s->theta);
    fc_glr_fini(&s->glr);
    free(s);
}

static int ttts_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct ttts *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->k = ctx->n_arms[0];
    s->beta = policy_param(ctx, TTTS_BETA);
    s->max_tries = (unsigned long)policy_param(ctx, TTTS_MAX_TRIES);
    s->theta = calloc(s->k, sizeof *s->theta);
    if (s->theta == NULL || fc_glr_init(&s->glr, ctx, TTTS_THRESHOLD) != 0)
        goto nomem;
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    ttts_fini(s);
    return -1;
}

/* One posterior draw into theta; returns its argmax. */
static size_t draw(struct ttts *s, const struct policy_ctx *ctx)
{
    const struct stats_arm *a = ctx->arms[0];
    for (size_t i = 0; i < s->k; i++)
        s->theta[i] = gsl_ran_beta(ctx->rng, a[i].alpha, a[i].beta);
    return order_argmax(ctx->rng, s->theta, NULL, s->k);
}

/* The challenger when the redraws run out: J with probability ∝ e^(−W_J),
 * W_J = n_I d(μ̂_I, μ̂_IJ) + n_J d(μ̂_J, μ̂_IJ) (0 when μ̂_J ≥ μ̂_I), the
 * Laplace (large-deviation) approximation of the posterior probability that
 * J beats I, which is the law TTTS's redraws sample from (Russo 2016;
 * Shang et al. 2020's T3C takes its argmin). Taking the best other arm of
 * the last draw instead would starve clearly bad arms: they then get almost
 * no samples, far below their optimal share, and the GLR stop waits on them. */
static size_t laplace_challenger(struct ttts *s, const struct policy_ctx *ctx, size_t leader)
{
    const struct stats_arm *a = ctx->arms[0];
    double *w = s->theta; /* the last draw is not needed any more */
    double ni = (double)a[leader].n, mi = a[leader].mean, wmin = INFINITY;
    for (size_t j = 0; j < s->k; j++) {
        if (j == leader)
            continue;
        double nj = (double)a[j].n, mj = a[j].mean;
        if (a[j].n == 0 || a[leader].n == 0 || mj >= mi) {
            w[j] = 0;
        } else {
            double mij = (ni * mi + nj * mj) / (ni + nj);
            w[j] = ni * stats_kl_bern(mi, mij) + nj * stats_kl_bern(mj, mij);
        }
        if (w[j] < wmin)
            wmin = w[j];
    }
    double total = 0;
    for (size_t j = 0; j < s->k; j++) {
        w[j] = j == leader ? 0.0 : exp(-(w[j] - wmin));
        total += w[j];
    }
    double u = gsl_rng_uniform(ctx->rng) * total;
    size_t last = leader;
    for (size_t j = 0; j < s->k; j++) {
        if (w[j] <= 0)
            continue;
        last = j;
        if (u < w[j])
            return j;
        u -= w[j];
    }
    return last; /* rounding */
}

static int ttts_select(void *state, const struct policy_ctx *ctx, int bandit,
                       struct policy_pick *pick)
{
    struct ttts *s = state;
    (void)bandit;
    pick->bandit = 0;
    const struct stats_arm *a = ctx->arms[0];
    size_t k = ctx->n_arms[0];
    size_t leader = draw(s, ctx);
    if (gsl_rng_uniform(ctx->rng) < s->beta) {
        pick->arm = policy_first_pulls(ctx->rng, a, k, leader);
        return POLICY_OK;
    }
    for (unsigned long i = 0; i < s->max_tries; i++) {
        size_t j = draw(s, ctx);
        if (j != leader) {
            pick->arm = policy_first_pulls(ctx->rng, a, k, j);
            return POLICY_OK;
        }
    }
    pick->arm = policy_first_pulls(ctx->rng, a, k, laplace_challenger(s, ctx, leader));
    return POLICY_OK;
}

/* Proven with the proven GLR threshold; the heuristic one has no proof. */
static int ttts_stop_proven(const struct policy_params *p)
{
    return p->values[TTTS_THRESHOLD] == 0;
}

static void ttts_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct ttts *t = state;
    (void)ctx;
    fc_glr_snap(&t->glr, s);
    ser_expect(s, t->k);
    ser_f64s(s, t->theta, t->k);
}

const struct policy_ops policy_ttts = {
    .name = "ttts",
    .summary = "Top-Two Thompson Sampling (Russo 2016), stopped by the GLR rule",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_OWN_STOP | POLICY_F_GLR_STOP | POLICY_F_BAYES,
    .params = ttts_params,
    .init = ttts_init,
    .fini = ttts_fini,
    .select = ttts_select,
    .update = NULL,
    .done = fc_glr_state_done,
    .recommend = fc_glr_state_recommend,
    .stop_proven = ttts_stop_proven,
    .snap = ttts_snap,
};
