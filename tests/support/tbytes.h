/*
 * tbytes.h — little-endian integers read from and written into a byte
 * buffer, for the tests that damage a stored snapshot's fixed-width fields
 * in place (base/ser.c's layout) and must find and change them exactly.
 */
#ifndef BANDITD_TESTS_SUPPORT_TBYTES_H
#define BANDITD_TESTS_SUPPORT_TBYTES_H

#include <stdint.h>

/* The n-byte (1 to 8) little-endian unsigned integer at p. */
uint64_t tbytes_get_le(const unsigned char *p, int n);
/* Write v's low n bytes (1 to 8) at p, little-endian. */
void tbytes_put_le(unsigned char *p, int n, uint64_t v);

#endif
