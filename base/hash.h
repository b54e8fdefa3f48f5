/*
 * hash.h — non-cryptographic hashing for tables and fingerprints (never a
 * defence: the inputs are ours or merely bucketed).
 */
#ifndef BANDITD_BASE_HASH_H
#define BANDITD_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's 64-bit offset basis. */
#define HASH_FNV1A_BASIS 14695981039346656037ULL

/* FNV-1a (64 bits) of n bytes, continuing from h (HASH_FNV1A_BASIS to
 * start): chain calls to hash several pieces as one. */
uint64_t hash_fnv1a(uint64_t h, const void *data, size_t n);
/* The same over a NUL-terminated string. */
uint64_t hash_fnv1a_str(uint64_t h, const char *s);
/* A 64-bit mix of an integer (Fibonacci multiply, then fold): spreads
 * sequence numbers over a power-of-two table. */
uint64_t hash_mix64(uint64_t x);

#endif
