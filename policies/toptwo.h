/*
 * toptwo.h — what the top-two samplers (eb-tc, t3c) share: the first pulls
 * while some arm has no reward, and the transportation-cost challenger.
 *
 * A top-two sampler picks a leader and a challenger and pulls one of them
 * (Russo 2016; Shang et al. 2020; Jourdan, Degenne & Kaufmann 2022, 2023).
 * The challenger of T3C and EB-TC is the arm that is cheapest to move above
 * the leader: argmin over j ≠ leader of the GLR pair statistic Z_{leader,j}
 * (stats_glr_pair_z, the statistic the GLR stop compares with its
 * threshold), 0 for an arm whose mean is already ε above the leader's;
 * EB-TCI adds ln N_j, so that an arm stuck low is still challenged.
 *
 * Asynchrony (policy.h): pending pulls count as rewards at the arm's
 * current mean (n + pending in Z), as the index policies count them, so a
 * block of assignments spreads over the challengers instead of repeating
 * one; the means, hence the leader, move only with rewards.
 *
 * Neither function allocates; both are O(K).
 */
#ifndef BANDITD_POLICIES_TOPTWO_H
#define BANDITD_POLICIES_TOPTWO_H

#include <stddef.h>

#include <gsl/gsl_rng.h>

#include "policies/stats.h"

/* While some arm has no reward (its mean is unknown), the arm without reward
 * of fewest pending pulls (ties uniformly at random), the papers' "each arm
 * once" initialisation: a block of K assignments on a fresh experiment
 * covers the K arms. (size_t)-1 once every arm has a reward (no draw then). */
size_t toptwo_first_pull(gsl_rng *rng, const struct stats_arm *arms, size_t k);

/* argmin over j ≠ leader of W_j = Z_{leader,j}(ε) on n + pending pulls
 * (penalised: W_j + ln(n_j + pending_j), the TCI challenger of Jourdan et
 * al. 2022), the leader itself when k < 2; ties uniformly at random. Every arm needs a
 * reward. w is scratch of k entries, left holding the W_j (w[leader] = ∞). */
size_t toptwo_challenger(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t leader,
                         double eps, int penalised, double *w);

#endif
