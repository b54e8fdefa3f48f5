/*
 * digest.c — SHA-256 through GnuTLS (digest.h).
 */
#include "base/digest.h"

#include <stdio.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

int digest_sha256(const void *data, size_t n, uint8_t out[DIGEST_SHA256_LEN])
{
    return gnutls_hash_fast(GNUTLS_DIG_SHA256, data, n, out) == 0 ? 0 : -1;
}

int digest_sha256_hex(const void *const *p, const size_t *len, size_t np,
                      char hex[DIGEST_SHA256_HEX + 1])
{
    int rc = -1;
    uint8_t d[DIGEST_SHA256_LEN];
    gnutls_hash_hd_t h = NULL;
    hex[0] = '\0';
    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) != 0) {
        h = NULL;
        goto out;
    }
    for (size_t i = 0; i < np; i++)
        if (len[i] > 0 && gnutls_hash(h, p[i], len[i]) != 0)
            goto out;
    gnutls_hash_output(h, d);
    for (size_t i = 0; i < DIGEST_SHA256_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    rc = 0;
out:
    if (h != NULL)
        gnutls_hash_deinit(h, NULL);
    return rc;
}
