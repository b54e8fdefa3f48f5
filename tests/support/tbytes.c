/*
 * tbytes.c — little-endian byte access for the tests (tbytes.h).
 */
#include "tests/support/tbytes.h"

uint64_t tbytes_get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void tbytes_put_le(unsigned char *p, int n, uint64_t v)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
