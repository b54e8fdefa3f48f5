/*
 * http.h — the HTTP transport: libmicrohttpd with its internal thread pool,
 * routing by a table of (method, pattern, handler), body limits and
 * content-type checks, per-request logging, the reply functions, and
 * problem+json (RFC 9457), the one shape every error reply takes.
 *
 * It knows nothing of experiments: the API layer (api/) gives it the route
 * table, an admission hook (authentication) and an observer (metrics), and
 * its handlers use the functions below.
 *
 * A handler parses and validates its request, applies it, and either
 * queues a reply (HTTP_DONE), or, when its answer must wait for work done
 * elsewhere (a store commit), takes a hold on the request
 * (http_req_hold), hands the work a completion that ends with
 * http_req_complete, stashes its reply with http_req_wait and returns
 * HTTP_SUSPENDED: the connection is suspended (no pool thread waits) and the
 * stashed reply goes out once the completion ran, or the completion's
 * failure goes out instead. That is how a 2xx always means "on disk".
 */
#ifndef BANDITD_HTTP_HTTP_H
#define BANDITD_HTTP_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>

/* The libmicrohttpd flags of the daemon (TLS added when configured). Shared
 * with bench/bare.c, the stack's ceiling, so both run the same event loop. */
#define HTTP_MHD_FLAGS                                                                             \
    (MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |                 \
     MHD_USE_ITC /* suspended connections resumed from other threads */)

/* The longest {id} path segment a route matches (a longer one: 404). */
#define HTTP_ID_MAX 64

/* TLS by default (--tls-priorities): TLS 1.3 and 1.2 only, key exchanges
 * with forward secrecy only (ECDHE, DHE: no static RSA), AEAD ciphers only
 * (no CBC, no SHA-1 MAC), the server's order. GnuTLS priority syntax. */
#define HTTP_TLS_PRIORITIES                                                                        \
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-RSA:-DHE-DSS:-AES-128-CBC:-AES-256-CBC:"       \
    "-SHA1:%SERVER_PRECEDENCE"

/* A refused connection (over --max-connections or the per-address cap)
 * gets this long to send its request and hear 503/429, then is closed. */
#define HTTP_REFUSE_GRACE_MS 1000

struct http_req;

enum http_rc {
    HTTP_DONE = 0,      /* a reply is queued */
    HTTP_SUSPENDED = 1, /* waiting for a completion; the reply is stashed */
};

typedef int (*http_handler_fn)(struct http_req *r);

struct http_route {
    const char *method;  /* "GET", "POST", ... (a GET route answers HEAD too) */
    const char *pattern; /* "/v1/experiments/{id}/status"; {id} matches one segment */
    http_handler_fn handler;
    unsigned need;    /* what the caller needs (opaque here: the admit hook's) */
    const char *name; /* metrics label */
    unsigned flags;   /* HTTP_ROUTE_* */
};

/* The body may come as text/plain (JSON all the same): what
 * navigator.sendBeacon sends from a page without a preflight. */
#define HTTP_ROUTE_BEACON 1u

/* A listening address: what --listen names, resolved. */
struct http_addr {
    struct sockaddr_storage ss;
    socklen_t len;
};

/* Resolve host — an IPv4 address, an IPv6 address (brackets optional) or a
 * host name — and port into out: the first address getaddrinfo gives.
 * Returns 0, or −1 with a message in err. */
int http_addr_resolve(const char *host, uint16_t port, struct http_addr *out, char *err,
                      size_t errlen);
/* 1 when a is a loopback address (127.0.0.0/8, ::1, or 127.0.0.0/8 mapped
 * into IPv6), 0 otherwise (the wildcard addresses included). */
int http_addr_is_loopback(const struct http_addr *a);
/* "127.0.0.1:8080", "[::1]:8080" into buf. */
void http_addr_format(const struct http_addr *a, char *buf, size_t len);
/* http_addr_format's longest text, NUL included. */
#define HTTP_ADDR_TEXT 64

struct http_config {
    const struct http_addr *addr; /* borrowed; its port 0: any free port */
    unsigned threads;             /* pool size; 0: number of cores */
    size_t max_body;
    /* Connections admitted at once, and from one client address (0: no
     * cap per address). Past either, a connection is refused quickly: its
     * first request hears 503 (over the total) or 429 (over its address's
     * share), with Retry-After, and it is closed; it never waits in the
     * listen backlog for a slot. */
    unsigned max_connections;
    unsigned max_connections_per_ip;
    /* Inactivity: a connection silent this long is closed. */
    unsigned connection_timeout_s;
    /* The most seconds from a connection being ready for a request
     * (accepted, or its previous answer sent) to that request having
     * arrived in full, line, headers and body (0: no limit); past it the
     * connection is closed. Bounds a client trickling its request, which
     * the inactivity timeout alone never does. */
    unsigned request_timeout_s;
    int log_requests;
    const char *tls_cert_pem; /* contents, not paths; NULL: plain HTTP */
    const char *tls_key_pem;
    const char *tls_priorities;      /* GnuTLS priority string; NULL: HTTP_TLS_PRIORITIES */
    const struct http_route *routes; /* terminated by a NULL method; borrowed */
    /* Browsers (http/cors.h): the origins whose pages may call the API,
     * comma-separated, "*" for any; NULL or "": none. */
    const char *cors_origins;
    /* Requests a second per caller (its key, else its address) and the
     * burst above that rate (http/rate.h); rate_per_s 0: no limit. */
    unsigned rate_per_s, rate_burst;
    /* Called once a request is routed, before its body is read: 0 lets it
     * through; otherwise it answered (http_req_refuse) and the handler will
     * not run. May be NULL. */
    int (*admit)(struct http_req *r, const struct http_route *route);
    /* Called once per answered request, with its route (NULL when none
     * matched), its status and its latency in ms. May be NULL. */
    void (*observe)(const struct http_route *route, unsigned status, double ms);
};

struct http_server;

/* Start serving. Returns NULL with a message in err. */
struct http_server *http_start(const struct http_config *c, char *err, size_t errlen);
/* The address actually bound (the port filled in), as http_addr_format
 * writes it. */
void http_bound(const struct http_server *s, char *buf, size_t len);
/* Stop accepting, let in-flight requests finish (up to timeout_ms), stop.
 * Requests waiting on a completion are always let finish (MHD cannot stop
 * with a suspended connection; every completion comes), and after
 * timeout_ms no new handler starts (503). */
void http_stop(struct http_server *s, unsigned timeout_ms);

/* Requests being served now: received in full and not yet completed (a
 * request still uploading its body is not counted). */
unsigned http_in_flight(void);

/* Readiness (set by main once the experiments are loaded). */
void http_set_ready(int ready);
int http_ready(void);

/* --- the request (borrowed strings, valid for the request) ----------------------- */

/* The {id} of the route, or NULL. */
const char *http_req_id(const struct http_req *r);
const char *http_req_query(const struct http_req *r, const char *key);
const char *http_req_header(const struct http_req *r, const char *name);
/* When the whole request was in (wall clock, ms since the epoch). */
int64_t http_req_now_ms(const struct http_req *r);
/* The body as JSON (a borrowed reference, owned by the request). An empty
 * body reads as {} when empty_ok. On malformed JSON replies 400 itself and
 * returns NULL (the handler returns HTTP_DONE). */
json_t *http_req_json(struct http_req *r, int empty_ok);

/* Longest key name http_req_set_caller keeps (longer: truncated). */
#define HTTP_CALLER_NAME_MAX 128
/* What the admit hook learnt of the caller: the id of the key it used (0:
 * none) and its name (NULL: none; copied), for the request log and the
 * audit trail. */
void http_req_set_caller(struct http_req *r, int64_t key_id, const char *name);
/* The id of the key the caller used (0: none), for the audit trail. */
int64_t http_req_caller(const struct http_req *r);
/* Its name ("" when none). Borrowed from r. */
const char *http_req_caller_name(const struct http_req *r);
/* What the admit hook granted the caller (its scope bits, opaque here;
 * 0 until set). */
void http_req_set_grant(struct http_req *r, unsigned bits);
unsigned http_req_grant(const struct http_req *r);
/* The request's id for the audit trail: the client's X-Request-Id when it
 * is 1 to 64 characters of [A-Za-z0-9._:-], else one made by the daemon
 * (unique in its run: its start time and a counter). Borrowed from r. */
const char *http_req_request_id(struct http_req *r);

/* --- replies ----------------------------------------------------------------------- */

/* Add a header to the reply about to be sent (copied). */
void http_reply_header(struct http_req *r, const char *name, const char *value);
/* JSON reply; body is stolen (NULL: out of memory, a 503). */
int http_reply_json(struct http_req *r, unsigned status, json_t *body);
/* JSON text reply (base/jsonw.h; malloc'd, stolen; NULL: out of memory, 503). */
int http_reply_text(struct http_req *r, unsigned status, char *text, size_t len);
/* Raw reply; body (malloc'd) is stolen. */
int http_reply_raw(struct http_req *r, unsigned status, const char *content_type, char *body,
                   size_t len);
/* Reply from a buffer that outlives the server (embedded assets): sent
 * without a copy, never freed. */
int http_reply_static(struct http_req *r, unsigned status, const char *content_type,
                      const void *body, size_t len);
/* Empty reply (204, 304). */
int http_reply_empty(struct http_req *r, unsigned status);
/* Streamed reply: reader(cls, pos, buf, max) returns the bytes written, 0
 * at the end, −1 on failure (the connection is then closed before the end
 * of the stream, so a client never takes it for complete); free_cls(cls) is
 * called at the end, also when this call fails. */
int http_reply_stream(struct http_req *r, unsigned status, const char *content_type,
                      long (*reader)(void *cls, uint64_t pos, char *buf, size_t max), void *cls,
                      void (*free_cls)(void *cls));

/* problem+json: type and title from the status (problem.c's table),
 * detail, and when errors is given (stolen), the list of {"field",
 * "message"}. A 503 or a 429 carries Retry-After (1 s, unless the handler
 * set its own with http_reply_header). */
int http_reply_problem(struct http_req *r, unsigned status, const char *detail, json_t *errors);
/* A problem of a more precise type than its status's (problem.c's table:
 * "corrupt-log", …); status, type and title from the table. */
int http_reply_problem_as(struct http_req *r, const char *slug, const char *detail, json_t *errors);
/* One offending field: 400 with detail "field: message". */
int http_reply_invalid(struct http_req *r, const char *field, const char *message);
/* 503 "out of memory" (nothing was recorded; the client may retry). */
int http_reply_oom(struct http_req *r);
/* The problem document itself (new reference; errors stolen). */
json_t *http_problem(unsigned status, const char *detail, json_t *errors);
/* The out-of-memory problem as text, for when building a document (or
 * any reply) cannot allocate: a 503 the client may retry. */
#define HTTP_PROBLEM_OOM                                                                           \
    "{\"type\":\"urn:banditd:problem:unavailable\",\"title\":\"Service unavailable\","             \
    "\"status\":503,\"detail\":\"out of memory\"}"
/* Whether a header of that name was added to r's reply (case-insensitive). */
int http_reply_has_header(const struct http_req *r, const char *name);
/* Refuse the request from the admit hook (answered before the handler). */
void http_req_refuse(struct http_req *r, unsigned status, const char *detail);

/* OPTIONS on any known path is answered by the transport: a CORS
 * preflight (an Origin and Access-Control-Request-Method) gets 204 with
 * the Access-Control-* headers when its origin is allowed, 403 otherwise;
 * a plain OPTIONS gets 204 with Allow. Neither reaches the admit hook: a
 * browser sends no key with a preflight. */

/* Whether an If-None-Match value names etag: a list of entity tags,
 * compared weakly (RFC 9110 13.1.2), or "*". */
int http_etag_matches(const char *if_none_match, const char *etag);

/* --- waiting for a completion ----------------------------------------------------- */

/* A hold on r for a completion: r stays alive until http_req_complete (or
 * http_req_release, when the work was never started). Returns r. */
struct http_req *http_req_hold(struct http_req *r);
void http_req_release(struct http_req *r);
/* The work r waited for is done (any thread): status 0 lets the stashed
 * reply go out; otherwise a problem with that status and detail replaces
 * it (detail: a string that outlives the request, e.g. a literal). Drops
 * the hold. */
void http_req_complete(struct http_req *r, unsigned fail_status, const char *fail_detail);
/* Stash the reply (body stolen; NULL: an empty reply) for when the
 * completion comes, and suspend. Returns HTTP_SUSPENDED (or HTTP_DONE when
 * the completion already came and the reply went out). */
int http_req_wait(struct http_req *r, unsigned status, json_t *body);
/* The same with the body already serialised (JSON text from base/jsonw.h,
 * malloc'd, stolen; NULL: out of memory, a 503 once the completion came). */
int http_req_wait_text(struct http_req *r, unsigned status, char *text, size_t len);

#endif
