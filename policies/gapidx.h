/*
 * gapidx.h — the gap-based index shared by ucb-e (Bubeck et al. 2013, Fig. 3)
 * and the GapE family (Gabillon et al. 2011: gape, gape-v, a-gape, a-gape-v).
 * Internal to policies/.
 *
 * Over every (bandit, arm) pair in scope, with top-m gaps Δ̂ (docs/policy-formulas.md;
 * m = 1 is Gabillon's |max_{j≠k} μ̂_j − μ̂_k|) computed within each bandit and
 * T = n + pending (a pending pull counts as returned at the arm's mean):
 *   Hoeffding (ucb-e, gape):   B = −Δ̂ + sqrt(a / T)
 *   Bernstein (the -V ones):   B = −Δ̂ + sqrt(2 a σ̂² / T) + 7 a / (3 (T − 1))
 * and the pull goes to argmax B, ties uniformly at random. The exploration
 * parameter is a = a_fixed when given, else scale / H with H the known
 * complexity when given (H, or Hσ for the -V index), else the adaptive
 * lower-confidence estimate of Gabillon et al. §3.3 (docs/policy-formulas.md):
 *   Ĥ  = Σ 1 / UCB_Δ²,
 *   Ĥσ = Σ (LCB_σ + sqrt(LCB_σ² + (16/3) UCB_Δ))² / UCB_Δ²,
 *   UCB_Δ = Δ̂ + sqrt(1 / (2T)),  LCB_σ = max(0, σ̂ − sqrt(2 / (T − 1))),
 * recomputed at every select over the bandits not done whose arms all have
 * their initial samples (a bandit without them adds nothing yet: a smaller
 * Ĥ means more exploration, the safe side).
 *
 * Initial samples: every arm once (twice for the Bernstein index, which needs
 * σ̂) before the index is used. Under late rewards this stage behaves like a
 * phase: hand the initial pulls out once, then answer round-robin (least
 * n + pending) until they are all rewarded.
 *
 * Scope: a request naming a bandit gets that bandit's best index (or its
 * initial pulls); otherwise the pool is every bandit the engine has not
 * marked done. select() never answers POLICY_DONE while some bandit in scope
 * is open: the engine stops at the budget.
 */
#ifndef BANDITD_POLICIES_GAPIDX_H
#define BANDITD_POLICIES_GAPIDX_H

#include <stddef.h>

#include "policy.h"

struct gapidx {
    int bernstein;  /* the -V index (needs 2 samples per arm) */
    double scale;   /* a = scale / H */
    double a_fixed; /* > 0: a itself */
    double h_fixed; /* > 0: the known complexity H (Hσ for the -V index) */
    size_t nb, total;
    size_t *off;          /* off[b] = flat index of bandit b's first arm */
    size_t *bandit_of;    /* flat → bandit */
    double *gap;          /* flat: Δ̂ */
    double *idx;          /* flat: B */
    unsigned char *mask;  /* flat: in scope */
    double *sel;          /* kmax: order-statistics scratch */
    unsigned char *ready; /* per bandit: every arm has its initial samples */
    double *rt;           /* flat: 1/sqrt(n + pending) */
    double *sd;           /* flat: σ̂ (Bernstein index only) */
};

/* The parameters "a" (the exploration parameter itself) and "h" (the known
 * complexity) of ucb-e and the GapE family: one entry each of a
 * policy_param_spec table, with the policy's own doc string. */
#define GAPIDX_PARAM_A(DOC)                                                                        \
    {                                                                                              \
        .name = "a", .type = POLICY_PARAM_NUM, .def = 0, .min = 0, .max = 1e12, .doc = (DOC)       \
    }
#define GAPIDX_PARAM_H(DOC)                                                                        \
    {                                                                                              \
        .name = "h", .type = POLICY_PARAM_NUM, .def = 0, .min = 0, .max = 1e15, .doc = (DOC)       \
    }

/* Build the state of an index policy over ctx's bandits in *state (new;
 * free with gapidx_free). The Bernstein index needs two samples per
 * arm, so it refuses a budget below 2 P (P arms in scope), naming
 * goal.budget and `name` in err. Returns 0, or −1 with a message. */
int gapidx_new(void **state, const struct policy_ctx *ctx, const char *name, int bernstein,
               double scale, double a_fixed, double h_fixed, char *err, size_t errlen);
void gapidx_free(void *state);
/* ops->snap of every index policy (the state is the struct). */
void gapidx_snap(void *state, const struct policy_ctx *ctx, struct ser *s);
/* A budget edit (policy_ops.rebudget): the same check on ctx->budget as
 * gapidx_new, then (check == 0) `scale`, the policy's formula on the new
 * budget, in place of the old one. */
int gapidx_rebudget(void *state, const struct policy_ctx *ctx, const char *name, double scale,
                    int check, char *err, size_t errlen);

/* The vtable's select (state is the struct). Must not allocate. */
int gapidx_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick);

/* The exploration parameter a the index would use now (NaN while no bandit
 * in scope has its initial samples). For tests and the status endpoint;
 * draws nothing. */
double gapidx_a(struct gapidx *g, const struct policy_ctx *ctx);

/* The m-th and (m+1)-th largest of k means (1 ≤ m < k); scratch holds k
 * doubles. Expected O(k). Exposed for tests. */
void gapidx_order_stats(const struct stats_arm *arms, size_t k, unsigned m, double *scratch,
                        double *mu_m, double *mu_m1);

#endif
