/*
 * rate.h — rate limits per caller, inside the transport (http.c uses it;
 * nothing outside http/ does): a token bucket per caller, refilled at
 * per_s tokens a second up to burst, one token per request. A caller is
 * its API key when the admit hook named one (http_req_set_caller), else
 * its client address (an IPv6 address by its /64, what one host is
 * usually given). Over its limit a request hears 429 problem+json
 * (urn:banditd:problem:rate-limited) with Retry-After: the whole seconds
 * until it has a token again.
 *
 * Memory is bounded: RATE_SLOTS buckets in an open-addressed table probed
 * RATE_PROBES deep. A new caller takes a free slot of its window, else the
 * slot of the caller seen least recently there; that caller, if it comes
 * back, starts with a full bucket (with more callers active at once than
 * slots, a limit is approximate, never a refusal of a caller within it).
 *
 * Threads: rate_take from any thread (one mutex); rate_configure before
 * serving.
 */
#ifndef BANDITD_HTTP_RATE_H
#define BANDITD_HTTP_RATE_H

#include <stdint.h>

#define RATE_SLOTS 16384
#define RATE_PROBES 8

enum rate_kind { RATE_KEY = 1, RATE_ADDR = 2 };

/* per_s 0: no limit. burst 0: per_s (at least 1). Drops every bucket. */
void rate_configure(unsigned per_s, unsigned burst);
/* Whether a limit is configured. */
int rate_enabled(void);
/* Take a token of the caller (kind, id: a key's id in its first 8 bytes,
 * or an address as guard_addr_key gives it) at now_ns (monotonic). 0 when
 * allowed; otherwise the seconds until a token is there (≥ 1). */
unsigned rate_take(enum rate_kind kind, const uint8_t id[16], uint64_t now_ns);

#endif
