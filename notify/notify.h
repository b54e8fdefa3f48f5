/*
 * notify.h — webhook delivery: one thread that reads the store's outbox
 * (store.h, "webhook outbox") and POSTs each pending delivery to its URL,
 * signed, retried with exponential backoff and jitter, until a 2xx or the
 * last attempt. It knows nothing of experiments: the runtime (exp/) writes
 * the outbox rows in the transactions of the events that caused them, this
 * module only delivers them, and the daemon (server/main.c) wires the two
 * through the store.
 *
 * Semantics: at least once. A delivery is marked delivered only after its
 * 2xx, through the store's writer; a crash in between sends it again after
 * the restart, with the same body and event id (receivers deduplicate on
 * the event id). Pending deliveries are resumed at start, their attempts
 * and backoff where the disk has them. No order is promised between
 * deliveries (a retried one arrives after later ones).
 *
 * Never in the way: the thread runs every attempt concurrently on one
 * curl multi handle (at most `concurrency` at once), each bounded by
 * `timeout_ms`; request threads and the writer only ever signal it (the
 * store's outbox hook), so a receiver that never answers costs one
 * connection slot, nothing else.
 *
 * Targets: http and https only, no redirects followed, no proxy from the
 * environment. Each connection's address is checked after the name is
 * resolved: link-local (169.254.0.0/16: cloud metadata, fe80::/10),
 * unspecified, multicast and broadcast addresses are always refused,
 * loopback ones unless allow_loopback (tests, a local relay).
 *
 * Signature: header `Banditd-Signature: t=<unix seconds>,v1=<hex>` where
 * hex is HMAC-SHA256(secret, "<t>.<body>") (docs/contract.md says how to
 * verify it).
 */
#ifndef BANDITD_NOTIFY_NOTIFY_H
#define BANDITD_NOTIFY_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct notify_config {
    unsigned attempts;       /* per delivery, the first included (≥ 1) */
    unsigned backoff_ms;     /* the wait before the first retry; doubled at each */
    unsigned backoff_max_ms; /* the longest wait (before jitter) */
    unsigned timeout_ms;     /* one attempt, from connecting to the answer */
    unsigned concurrency;    /* attempts in flight at once */
    int allow_loopback;      /* loopback targets allowed (refused by default) */
};

/* The defaults: 12 attempts, 10 s doubling to at most 1 h (about 9 hours
 * from the first attempt to the last), 10 s per attempt, 16 at once,
 * loopback refused. */
void notify_defaults(struct notify_config *c);

/* Start delivering the outbox of st (borrowed until notify_stop): pending
 * rows are loaded at once, new ones as the store's hook signals them.
 * Returns 0, or −1 with a message in err. Once per process. */
int notify_start(struct store *st, const struct notify_config *c, char *err, size_t errlen);
/* Stop: attempts in flight are abandoned (their rows stay pending: sent
 * again at the next start). Call before store_close. A no-op when not
 * started. */
void notify_stop(void);

struct notify_stats {
    uint64_t attempts;  /* HTTP attempts made */
    uint64_t delivered; /* deliveries answered 2xx */
    uint64_t failed;    /* deliveries given up after their last attempt */
    uint64_t retried;   /* attempts that failed and were scheduled again */
    uint64_t refused;   /* attempts refused by the target policy (a refused address) */
    uint64_t in_flight; /* attempts running now */
    int64_t depth;      /* pending deliveries in the outbox; −1 when unknown */
};
/* Counters since start, and the outbox's depth (a store read). */
void notify_get_stats(struct notify_stats *out);

/* Whether url may be a webhook's target under the policy above, for a
 * check at creation: 0, or 1 with the reason in why ("a loopback address
 * (start the daemon with --webhook-allow-loopback to allow it)"). Only the
 * URL's text is checked — a host name is resolved at each delivery, and
 * checked then. Uses the started configuration (the defaults before). */
int notify_url_check(const char *url, char *why, size_t len);

/* The Banditd-Signature header's value for body sent at unix time t:
 * "t=<t>,v1=<64 hex digits>". 0, or −1 (out needs 96 bytes). */
int notify_sign(const char *secret, long long t, const char *body, size_t len, char *out,
                size_t outlen);

/* "pending" | "delivered" | "failed" (enum store_outbox_state), or "unknown". */
const char *notify_state_name(int state);

#endif
