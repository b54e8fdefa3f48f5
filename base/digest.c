/*
 * digest.c — SHA-256 through GnuTLS (digest.h).
 */
#include "base/digest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

int digest_sha256(const void *data, size_t n, uint8_t out[DIGEST_SHA256_LEN])
{
    return gnutls_hash_fast(GNUTLS_DIG_SHA256, data, n, out) == 0 ? 0 : -1;
}

int digest_sha256_hex(const void *const *p, const size_t *len, size_t np,
                      char hex[DIGEST_SHA256_HEX + 1])
{
    /* One buffer and the one-shot hash: GnuTLS's incremental handle can
     * leak what it allocated when its setup fails part way (an allocation
     * failure, test_allocfaults). Most inputs fit the stack. */
    int rc = -1;
    char stack[2048];
    uint8_t d[DIGEST_SHA256_LEN];
    size_t total = 0;
    hex[0] = '\0';
    for (size_t i = 0; i < np; i++)
        total += len[i];
    char *buf = total > sizeof stack ? malloc(total) : stack;
    if (buf == NULL)
        return -1;
    size_t off = 0;
    for (size_t i = 0; i < np; i++) {
        if (len[i] > 0)
            memcpy(buf + off, p[i], len[i]);
        off += len[i];
    }
    if (digest_sha256(total > 0 ? buf : "", total, d) != 0)
        goto out;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < DIGEST_SHA256_LEN; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[DIGEST_SHA256_HEX] = '\0';
    rc = 0;
out:
    if (buf != stack)
        free(buf);
    return rc;
}

int digest_chain_hex(const char *prev, const char *head, size_t hlen, const char *const *s,
                     size_t ns, char hex[DIGEST_SHA256_HEX + 1])
{
    const void *p[2 + DIGEST_CHAIN_MAX_STRINGS] = {prev, head};
    size_t len[2 + DIGEST_CHAIN_MAX_STRINGS] = {strlen(prev), hlen};
    if (ns > DIGEST_CHAIN_MAX_STRINGS) {
        hex[0] = '\0';
        return -1;
    }
    for (size_t i = 0; i < ns; i++) {
        p[2 + i] = s[i] != NULL ? s[i] : "";
        len[2 + i] = s[i] != NULL ? strlen(s[i]) : 0;
    }
    return digest_sha256_hex(p, len, 2 + ns, hex);
}
