/*
 * http.h — the HTTP server: libmicrohttpd with its internal thread pool,
 * suspend/resume for requests that wait on the store, the routing table, body
 * limits, content-type checks and per-request logging.
 */
#ifndef BANDITD_SERVER_HTTP_H
#define BANDITD_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

/* The libmicrohttpd flags of the daemon (TLS added when configured). Shared
 * with bench/bare.c, the stack's ceiling, so both run the same event loop. */
#define HTTP_MHD_FLAGS                                                                         \
    (MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |             \
     MHD_USE_ITC /* MHD_quiesce_daemon needs it with a thread pool */)

struct route {
    const char *method;  /* "GET", "POST", ... */
    const char *pattern; /* "/v1/experiments/{id}/status"; {id} matches one segment */
    api_handler_fn handler;
    unsigned scope;      /* enum api_scope required; API_SCOPE_NONE = open */
    const char *name;    /* metrics label */
};

/* The table (routes.c), terminated by a NULL method. */
extern const struct route http_routes[];

struct http_config {
    const char *host; /* "127.0.0.1" */
    uint16_t port;    /* 0: any free port */
    unsigned threads; /* pool size; 0: number of cores */
    size_t max_body;
    unsigned max_connections;
    unsigned connection_timeout_s;
    int log_requests;
    int metrics_need_key; /* routes with API_SCOPE_IF_CONFIGURED need their scope */
    const char *tls_cert_pem; /* contents, not paths; NULL: plain HTTP */
    const char *tls_key_pem;
};

struct http_server;

/* Start serving. Returns NULL with a message in err. */
struct http_server *http_start(const struct http_config *c, char *err, size_t errlen);
/* The port actually bound. */
uint16_t http_port(const struct http_server *s);
/* Stop accepting, let in-flight requests finish (up to timeout_ms), stop.
 * Requests waiting on a store write are always let finish (MHD cannot stop
 * with a suspended connection; the store completes every write), and after
 * timeout_ms no new handler starts (503). */
void http_stop(struct http_server *s, unsigned timeout_ms);

/* Requests being served now: received in full and not yet completed (a
 * request still uploading its body is not counted). */
unsigned http_in_flight(void);

/* Readiness (set by main once the experiments are loaded). */
void http_set_ready(int ready);
int http_ready(void);

#endif
