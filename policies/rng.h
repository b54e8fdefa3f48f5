/*
 * rng.h — the random number generator every engine and simulation uses:
 * xoshiro256** (Blackman & Vigna 2018) wrapped as a GSL generator type, so
 * GSL's variates (gsl_ran_beta, gsl_ran_gaussian, ...) draw from it. GSL's
 * own fast generators take 32-bit seeds; with a million simulated runs a
 * 32-bit seed space would give some pairs of runs the same stream, so this
 * one is seeded with 256 bits expanded from a 64-bit key by splitmix64.
 */
#ifndef BANDITD_POLICIES_RNG_H
#define BANDITD_POLICIES_RNG_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

/* The generator type, for gsl_rng_alloc. get() yields 32 bits (GSL's integer
 * helpers read max − min to know how many bits they get); get_double 53. */
extern const gsl_rng_type *const rng_xoshiro256ss;

struct ser; /* base/ser.h */

/* Save or load r's state (r allocated with rng_xoshiro256ss): a snapshot
 * (engine_snapshot_save). A loaded generator continues the saved stream. */
void rng_snap(gsl_rng *r, struct ser *s);

/* Seed r (allocated with rng_xoshiro256ss) from a 64-bit key. */
void rng_seed64(gsl_rng *r, uint64_t key);

/* Uniform integer in [0, n) (0 when n <= 1, without a draw): every random
 * index and Fisher–Yates step of the policies. */
size_t rng_index(gsl_rng *rng, size_t n);

/* splitmix64's finaliser: a bijection of 64-bit words that mixes well. */
uint64_t rng_mix64(uint64_t z);
/* splitmix64: advance *x and return the next word. */
uint64_t rng_splitmix64(uint64_t *x);

#endif
