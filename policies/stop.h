/*
 * stop.h — the evidence of the confidence stop rules against their own
 * thresholds, and the anytime-valid error bound each proven rule gives.
 *
 * A stop rule compares an evidence figure with a threshold; for a rule with
 * a proof (docs/stop-rules.md) the same figure also gives an error bound b:
 * P(∃t: the answer at t is wrong and b(t) ≤ x) ≤ x for every x ∈ (0, 1), so
 * "stop when b ≤ δ" is δ-correct and b, read at any moment (a dashboard, a
 * stop), is the level at which the current answer is proven. This module
 * computes those figures from the arms' statistics; which rule an
 * experiment uses, and the rule names, are the engine's (engine.h).
 *
 * Pure functions: no allocation, no global state, thread-safe.
 */
#ifndef BANDITD_POLICIES_STOP_H
#define BANDITD_POLICIES_STOP_H

#include <stddef.h>

#include "policies/stats.h"

/* --- δᶜ with the split of δ fixed in advance ---------------------------------
 * The δᶜ rule gives every arm the same share δ/K and stops when the K
 * one-sided anytime bounds at δ/K separate High from Low:
 *   max_{l ∈ Low} (μ̂_l + w_l(δ/K)) ≤ min_{h ∈ High} (μ̂_h + ε − w_h(δ/K)),
 * w the family's width (stats_width). stop_delta_c is the smallest δ at
 * which that holds, K · min_c max_i δᶜ_i(c) (δᶜ_i as in stats_delta_c_at),
 * capped at 1: the rule's error bound. c_out (may be NULL) receives the
 * cutoff that attains it. 0 with k < 2 or an empty High or Low set (nothing
 * to distinguish); 1 while some arm has no reward. Valid (a proof) with
 * STATS_BOUND_ANYTIME only. O(K · 50) bound inversions. */
double stop_delta_c(const struct stats_arm *arms, size_t k, const unsigned char *high,
                    enum stats_bound bound, double eps, double *c_out);

/* The rule itself: the separation above at level δ/K (K widths, no search).
 * 0 while some arm has no reward; 1 with an empty High or Low set. */
int stop_delta_c_met(const struct stats_arm *arms, size_t k, const unsigned char *high,
                     enum stats_bound bound, double eps, double delta);

/* --- the GLR rule (stats_glr_stop) ---------------------------------------- */

/* The smallest pair evidence over (i ∈ High, j ∈ Low) at ε (for
 * STATS_GLR_PROVEN the log of the pair's e-value, for the heuristic the
 * statistic Z itself), or with one High arm, ε = 0 and K ≥ 3 the proven
 * rule's least leader product (stats_glr_lead_evidence): what
 * stats_glr_stop compares with its threshold. 0 while some arm has no
 * reward; +INFINITY with nothing to distinguish. */
double stop_glr_evidence(const struct stats_arm *arms, size_t k, const unsigned char *high,
                         enum stats_glr_threshold kind, double eps);

/* The proven GLR rule's error bound from its evidence: min(1, P e^{−ev}),
 * P = stats_glr_union(kind, ...) (m(K − m) pairs, 1 for the leader
 * product): the smallest δ at which the rule holds. */
double stop_glr_error_bound(enum stats_glr_threshold kind, double evidence, size_t k, unsigned m,
                            double eps);

#endif
