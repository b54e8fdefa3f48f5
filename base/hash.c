/*
 * hash.c — FNV-1a and an integer mix (hash.h).
 */
#include "base/hash.h"

uint64_t hash_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

uint64_t hash_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

uint64_t hash_mix64(uint64_t x)
{
    uint64_t z = x * 0x9e3779b97f4a7c15ULL;
    return z ^ (z >> 29);
}
