/*
 * gcp.h — the pieces of Bayesian greedy confidence pursuit (Bachman & Precup
 * 2013) that `gcp` (gcp.c) and `gcp-targeted` (gcp_targeted.c) share: the
 * posterior sample of a bandit's returns and gaps, Alg. 2 (arm selection),
 * the completion cost of eq. 12, Alg. 3 (bandit selection), the cached ρ̄
 * per bandit, the ρ̄ ≥ τ stop rule and the MAP recommendation.
 *
 * Internal to policies/: callers outside go through the policy vtable.
 *
 * Posterior: Beta(α_j, β_j) per arm, read from the engine's stats_arm (the
 * engine owns the prior and applies the Bernoulli trick to rewards in (0, 1)).
 * Every draw comes from ctx->rng; nothing here allocates after gcp_new().
 *
 * Pending pulls (docs/policy-formulas.md: GCP treats a pending pull "as a posterior
 * sample"). Fantasising each pending outcome from the posterior predictive
 * and then sampling θ̂ from the fantasised posterior gives θ̂ exactly the law
 * of the current posterior Beta(α, β) (draw θ, then outcomes given θ: the
 * fantasy integrates out). So the fantasy costs random draws and changes
 * nothing in law; we draw θ̂ from the current posterior and count the pending
 * pulls in T_j, the "trials allocated" H(a_ij) of eq. 7 — which is what stops
 * an arm whose rewards are in flight from absorbing every pull. ρ̄ (the stop
 * rule) counts rewarded pulls only.
 */
#ifndef BANDITD_POLICIES_GCP_H
#define BANDITD_POLICIES_GCP_H

#include <stddef.h>
#include <stdint.h>

#include "policies/policy.h"

/* How `gcp` chooses the bandit when the request names none. */
enum gcp_bandit_mode {
    GCP_BANDITS_COST = 0,    /* Alg. 3: argmin of a posterior sample of eq. 12 */
    GCP_BANDITS_UNIFORM = 1, /* the paper's Uni-* baseline (§6): fewest pulls first */
};

struct gcp {
    size_t nb;           /* bandits */
    size_t kmax;         /* largest arm count */
    unsigned m;          /* top-m */
    int mode;            /* enum gcp_bandit_mode */
    unsigned resample;   /* gcp-targeted: Alg. 4 resampling tries; 0 otherwise */
    double *theta;       /* kmax: one bandit's sampled returns θ̂_j */
    double *work;        /* kmax: scratch for the order statistics */
    double *index;       /* kmax: Alg. 2's √T_j γ̂_j */
    double *cost;        /* nb: sampled completion costs ĉ_i */
    double *rho;         /* nb: ρ̄_i, refreshed on every reward/observation */
    unsigned char *cand; /* nb: bandits Alg. 3 may choose */
    uint32_t *rank;      /* Σ K: random tie-break ranks for the recommendation */
    size_t *rank_off;    /* nb: offset of bandit b in rank */
};

/* Allocate the state for ctx (every buffer select() needs, and a random
 * tie-break rank per arm drawn from ctx->rng). mode and resample as above.
 * Returns 0, or −1 with a message in err (state freed). *out is new. */
int gcp_new(struct gcp **out, const struct policy_ctx *ctx, int mode, unsigned resample, char *err,
            size_t errlen);
void gcp_fini(void *state);
/* ops->snap of gcp and gcp-targeted. */
void gcp_snap(void *state, const struct policy_ctx *ctx, struct ser *s);

/* The gap location of a sample: (w_(m) + w_(m+1)) / 2, the mean of the m-th
 * and (m+1)-th largest of w[0..k), 1 ≤ m < k. Reorders w (quickselect, O(k),
 * no allocation). Exposed for the unit tests. */
double gcp_gap_location(double *w, size_t k, unsigned m);

/* Sample θ̂_j ~ Beta(α_j, β_j) for every arm of bandit b into s->theta and
 * return the sampled gap location γ̂ (the first step of Alg. 2, 3 and 4). */
double gcp_sample(struct gcp *s, const struct policy_ctx *ctx, size_t b);

/* Completion cost of eq. 12 for the sample in s->theta (k arms, gap location
 * gamma): Σ_j (σ_j + sqrt(σ_j² + (16/3) γ_j))² / γ_j², σ_j = sqrt(θ̂_j(1 − θ̂_j)),
 * γ_j = |θ̂_j − γ̂|. +INFINITY when some sampled gap is 0. */
double gcp_cost(const struct gcp *s, size_t k, double gamma);

/* Alg. 2 in bandit b: a fresh posterior sample, then the arm minimising
 * √T_j |θ̂_j − γ̂| with T_j = rewarded + pending pulls; ties at random.
 * (An arm with T_j = 0 scores 0: every arm is tried once first, the paper's
 * footnote 4.) */
size_t gcp_select_arm(struct gcp *s, const struct policy_ctx *ctx, size_t b);

/* How a policy chooses among two or more candidate bandits (marked in
 * s->cand: the bandits the engine has not marked done). */
typedef size_t gcp_choose_fn(struct gcp *s, const struct policy_ctx *ctx);

/* The select() of both policies: the bandit the request names, else
 * POLICY_DONE when every bandit is done, the only open one, or `choose`'s
 * among the open ones; then Alg. 2 in it. */
int gcp_select_with(struct gcp *s, const struct policy_ctx *ctx, int bandit,
                    struct policy_pick *pick, gcp_choose_fn *choose);

/* Alg. 3 over the candidates: one posterior sample of ĉ_i per candidate,
 * argmin (ties at random). A gcp_choose_fn. */
size_t gcp_pick_bandit_cost(struct gcp *s, const struct policy_ctx *ctx);

/* The vtable entries both policies share. */
void gcp_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                enum policy_event ev, double reward);
int gcp_done(void *state, const struct policy_ctx *ctx, size_t bandit);
/* ops->stop_proven of both: 0 (ρ̄ ≥ τ has no proof). */
int gcp_stop_proven(const struct policy_params *params);
void gcp_recommend(void *state, const struct policy_ctx *ctx, size_t bandit, unsigned char *high);

#endif
