/*
 * order.h — orderings of arms shared by the policies and the engine: uniform
 * random permutations (one Fisher–Yates), the tie-break ranks a recommend()
 * uses without touching the generator, one descending sort of arm indices
 * (Shell sort), random-tie argmax/argmin, and the marking of a top set.
 *
 * Determinism: every function that takes a gsl_rng draws from it in a fixed
 * order that depends only on its arguments, so policies replay exactly (see
 * policy.h). None allocates except order_rank_new.
 */
#ifndef BANDITD_POLICIES_ORDER_H
#define BANDITD_POLICIES_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "policies/stats.h"

/* Uniform random permutation of idx[0..n) in place (Fisher–Yates: n − 1
 * draws of rng_index, for i = n … 2). */
void order_shuffle(gsl_rng *rng, size_t *idx, size_t n);

/* A uniformly random permutation of 0..k−1 into rank[0..k) (the identity,
 * shuffled by order_shuffle's draws): the tie-break order a recommend() or
 * the status endpoint uses, drawn once. */
void order_rank_draw(gsl_rng *rng, uint32_t *rank, size_t k);

/* The same into a new array (the caller frees it), or NULL when out of
 * memory (nothing drawn then). */
uint32_t *order_rank_new(gsl_rng *rng, size_t k);

/* Sort idx[0..n) by val[idx] descending, NaN last. rank == NULL: ties in
 * whatever order the input had, not preserved (shuffle first for random
 * ties: order_shuffle); otherwise ties by rank ascending. Shell sort
 * (Ciura's gaps): no allocation, deterministic. */
void order_sort_desc(size_t *idx, size_t n, const double *val, const uint32_t *rank);

/* Arm indices 0..k−1 into idx, by mean descending, ties at random: a
 * shuffle, then the sort of order_sort_desc (insertion sort, its last pass,
 * alone up to 64 arms: stable, so the shuffle alone orders ties). */
void order_by_mean(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t *idx);

/* high[i] = 1 for the first m arms of order_by_mean's order, 0 for the
 * others; idx is scratch of k entries (left in no particular order). O(mK)
 * without the shuffle and the sort, and without a draw, when the m-th and
 * (m+1)-th largest means differ (m ≤ 8), where the set does not depend on
 * the order of ties; otherwise order_by_mean's draws. */
void order_top_by_mean(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t m, size_t *idx,
                       unsigned char *high);

/* Index of the max / min of v[0..n) over mask (NULL = all), ties broken
 * uniformly at random (a draw per tie met); (size_t)-1 when the mask is
 * empty. */
size_t order_argmax(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n);
size_t order_argmin(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n);

/* Mark in high[] the `want` arms among mask (NULL = all) with the largest
 * val, ties by rank; idx is scratch of k entries (order_sort_desc). Returns
 * how many were marked (fewer when the mask holds fewer). */
size_t order_mark_top(const double *val, const unsigned char *mask, size_t k, size_t want,
                      const uint32_t *rank, size_t *idx, unsigned char *high);

/* Mark in high[] the m arms of largest mean, without scratch memory: ties
 * broken by rank[] (a random permutation drawn once per bandit, so ties never
 * favour arms by their index, and the answer does not flicker between
 * calls), by index when rank is NULL (tests only). O(min(m, K − m) · K). */
void order_top_m(const struct stats_arm *arms, size_t k, unsigned m, const uint32_t *rank,
                 unsigned char *high);

#endif
