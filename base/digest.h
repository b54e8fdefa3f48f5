/*
 * digest.h — SHA-256, the one cryptographic hash of the daemon: API key
 * hashes (api/auth.c), design hashes (exp/design.c) and the event log's
 * hash chain (exp/audit.c) all go through it. GnuTLS computes it (already
 * linked for the key hashes; no second implementation).
 */
#ifndef BANDITD_BASE_DIGEST_H
#define BANDITD_BASE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define DIGEST_SHA256_LEN 32
/* Lower-case hex of a SHA-256, without its NUL. */
#define DIGEST_SHA256_HEX 64

/* SHA-256 of n bytes into out. 0, or −1 (the library failed). */
int digest_sha256(const void *data, size_t n, uint8_t out[DIGEST_SHA256_LEN]);

/* SHA-256 of the pieces p[0..np) (lengths len[0..np)) taken as one
 * string, as lower-case hex into hex (DIGEST_SHA256_HEX + 1 bytes,
 * NUL-terminated). 0, or −1 (hex then ""). */
int digest_sha256_hex(const void *const *p, const size_t *len, size_t np,
                      char hex[DIGEST_SHA256_HEX + 1]);

/* Most strings digest_chain_hex takes after the head. */
#define DIGEST_CHAIN_MAX_STRINGS 8

/* The next value of a hash chain (the event log's and the audit log's):
 * digest_sha256_hex of prev, then head (hlen bytes), then s[0..ns) (NULL
 * as empty; ns ≤ DIGEST_CHAIN_MAX_STRINGS). 0, or −1. */
int digest_chain_hex(const char *prev, const char *head, size_t hlen, const char *const *s,
                     size_t ns, char hex[DIGEST_SHA256_HEX + 1]);

#endif
