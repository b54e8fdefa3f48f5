/*
 * auth.h — API keys and scopes (docs/contract.md, Access).
 *
 * A key is "bd_" followed by 43 base64url characters (32 random bytes from
 * getrandom). Only its SHA-256 (hex) is stored, in the store's api_keys
 * table; the daemon keeps an in-memory table of the hashes of unrevoked keys
 * and compares hashes in constant time.
 *
 * Open or closed: while the key table has no row at all the API is open
 * (docs/contract.md). Once any key was ever created the API stays closed, even
 * when every key is later revoked: revoking the last key must never open a
 * daemon to whoever can reach it.
 *
 * Refresh: `banditd keys create|revoke` write to the same database while the
 * daemon runs. With auth_watch, every request that needs a key first checks
 * whether the key table changed (cheaply: auth.c) and reloads it if so, so
 * a revoked key fails from the next request on. Measured (wrk -t2 -c32, an
 * authenticated GET of one experiment, 2 worker threads, on a shared
 * 2-core machine, medians of 5): 28,000 req/s without the check; 24,200
 * with PRAGMA data_version per request; 30,000 with the WAL-index filter
 * (within the noise of no check). Under 3,500 commits/s of assignments the
 * check runs its table scan once per commit per thread: GETs −12%. The daemon also re-reads
 * the table on SIGHUP and every --key-refresh seconds (default 2; main.c
 * drives both through auth_reload): that catches edits the watch does not
 * compare (a scope changed in place by hand). On PostgreSQL, where there is
 * no file to watch, the same check before each keyed request compares
 * store_keys_epoch (a count of the notifications every key write sends)
 * with the one the table was loaded at.
 *
 * Threads: auth_scopes, auth_enabled, auth_admit and auth_reload may be
 * called from any thread at any time (reloads are serialised); auth_init,
 * auth_watch and auth_free before and after serving.
 */
#ifndef BANDITD_API_AUTH_H
#define BANDITD_API_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "store/store.h"

/* Most keys the daemon loads (rows beyond are ignored with a warning). */
#define AUTH_MAX_KEYS 65536
/* Longest key accepted in a header (ours are 46 bytes). */
#define AUTH_MAX_KEY_LEN 256
/* Length of a new key: "bd_" + 43 base64url characters (no NUL). */
#define AUTH_KEY_LEN 46
#define AUTH_HASH_HEX_LEN 64

/* Load the keys of st (borrowed until auth_free). Returns STORE_OK or a
 * store error (the table is then empty and the API closed: a daemon that
 * cannot read its keys must not serve an open API). */
int auth_init(struct store *st);
/* Re-read the keys. Returns 1 when the table changed, 0 when not, or a
 * negative store error (the previous table stays in force). */
int auth_reload(void);
/* Watch the key table of the database file db_path (st's, read through a
 * read-only connection per HTTP thread, closed when the thread ends) so
 * that a change made by another process takes effect for the next
 * request. NULL stops watching. STORE_OK or STORE_ERR_NOMEM. */
int auth_watch(const char *db_path);
/* Drop the table (shutdown). */
void auth_free(void);

/* 1 when the API is closed (a key row exists, revoked or not). */
int auth_enabled(void);
/* Number of usable (unrevoked) keys loaded. */
size_t auth_active_keys(void);
/* Scopes (enum api_scope bits) of the key in an Authorization header value
 * ("Bearer KEY", scheme case-insensitive); *known = 0 and 0 returned when the
 * header is missing, malformed, or the key is unknown or revoked. key_id (may
 * be NULL) receives the key's id (as `keys list` shows it), 0 if unknown. */
unsigned auth_scopes(const char *authorization, int *known, int64_t *key_id);

/* The transport's admit hook: lets a request through when its route needs
 * no key or the caller's key grants the route's scope (admin grants all),
 * recording the key's id on the request; otherwise
 * refuses it with 401 (no or unknown key) or 403 (scope missing) and the
 * RFC 6750 challenge. A key limited to experiments (keys create
 * --experiments) passes only routes about one of them ({id}), and may come
 * as the query parameter access_token (for navigator.sendBeacon, which
 * sets no header); any other key there is refused (401). Returns 0 or −1
 * (refused). */
int auth_admit(struct http_req *r, const struct http_route *route);
/* Set r's RFC 6750 challenge for a key that lacks scope need (one enum
 * api_scope bit, named in it): auth_admit's and the blinded routes'. */
void auth_challenge_scope(struct http_req *r, unsigned need);
/* --metrics-need-key: /metrics (API_SCOPE_IF_CONFIGURED) needs its scope. */
void auth_set_metrics_need_key(int on);

/* --- helpers shared with the keys CLI ------------------------------------- */

/* Most experiments one key may be limited to. */
#define AUTH_MAX_EXPERIMENTS 64
/* Whether list ("a,b,c": experiment ids, no spaces) is a valid limit for
 * a key: 1 to AUTH_MAX_EXPERIMENTS valid ids. 0, or −1 with the first bad
 * id (or "too many") copied to bad. */
int auth_check_experiments(const char *list, char *bad, size_t badlen);
/* 1 when id is one of list's comma-separated ids. */
int auth_list_has(const char *list, const char *id);

/* Parse "read,assign" into enum api_scope bits. Returns 0, or −1 when empty
 * or a name is unknown (the offending name copied to bad). */
int auth_parse_scopes(const char *list, unsigned *out, char *bad, size_t badlen);
/* Canonical comma-separated list (admin,assign,report,read order). */
void auth_format_scopes(unsigned scopes, char *buf, size_t len);
/* A fresh key, NUL-terminated, into key (≥ AUTH_KEY_LEN + 1 bytes). 0, or −1 when the kernel's
 * random source fails. */
int auth_new_key(char *key, size_t len);
/* Lower-case hex SHA-256 of key into hex (≥ AUTH_HASH_HEX_LEN + 1 bytes).
 * 0 or −1. */
int auth_hash_hex(const char *key, size_t keylen, char *hex, size_t hexlen);

#endif
