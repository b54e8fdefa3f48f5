/*
 * http.c — libmicrohttpd glue (http.h): request contexts, routing, body
 * limits, content types, the admission hook, replies, and the
 * suspend/resume dance that lets a handler wait for a completion (the
 * store's group commit) without holding a pool thread.
 *
 * Request life: MHD calls access_handler once with the headers (we route and
 * check limits), once per body chunk (we buffer up to max_body), then once
 * with no data (we dispatch to the handler). A handler that wrote something
 * suspends the connection; the writer thread's completion callback resumes
 * it, MHD calls access_handler again, and we send the stashed reply. A
 * request context is shared by MHD and a pending completion, hence its
 * reference count.
 *
 * Before any of that, the request's framing is checked (check_framing:
 * no request smuggling) and its raw target (uri_logged: no control
 * character hidden by percent-encoding), and the guard (guard.h) may have
 * refused the connection; those answers go out at once, before the body,
 * and close the connection.
 */
#include "http/http.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <gnutls/gnutls.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/jsonv.h"
#include "base/log.h"
#include "http/cors.h"
#include "http/guard.h"
#include "http/mhderr.h"
#include "http/rate.h"

#define MAX_HEADERS 8
#define MAX_SEGMENTS 8

struct http_req {
    struct MHD_Connection *conn; /* NULL until access_handler's first call */
    const struct http_route *route;
    char method[16];
    char *path;
    char id[HTTP_ID_MAX + 1];
    unsigned pre_status;  /* an answer decided before dispatch (404, 405, 413…) */
    const char *pre_slug; /* its problem type when more precise than the status's */
    char pre_detail[256];
    int options;            /* OPTIONS on a known path: answered by the transport */
    const char *bad_target; /* "path" or "query" when it holds a control character or a space */
    char *allow;            /* 405: the methods the path accepts */
    char *body;
    size_t len, cap;
    int too_large;
    int oom; /* the body could not be stored: out of memory */
    json_t *json;
    int64_t now_ms;
    uint64_t start_ns;
    int64_t key_id;                          /* the key the caller used (its id), 0 when none */
    char key_name[HTTP_CALLER_NAME_MAX + 1]; /* its name, "" when none */
    char request_id[72];                     /* http_req_request_id; "" until asked */
    unsigned grant;                          /* http_req_set_grant */
    unsigned long jfail; /* jv_alloc_failures() when the request began (http_reply_json) */
    struct {
        char *name, *value;
    } hdrs[MAX_HEADERS];
    size_t nhdrs;
    int replied;
    int hdr_lost;   /* a header could not be kept or added: the reply is the prebuilt 503 */
    int dispatched; /* the whole request is in: counted in g_in_flight */
    unsigned status;
    /* waiting for a completion */
    pthread_mutex_t mu;
    int write_done, suspended, waiting;
    unsigned fail_status; /* the completion failed: answer this instead */
    const char *fail_detail;
    unsigned pend_status;
    json_t *pend_body;
    char *pend_text; /* or the body as text (api_req_wait_text) */
    size_t pend_len;
    atomic_int refs;
};

struct http_server {
    struct MHD_Daemon *d;
    struct http_config cfg;
    struct http_addr bound;
};

static size_t g_max_body = 1 << 20;
static int g_log_requests;
static const struct http_route *g_routes;
static int (*g_admit)(struct http_req *r, const struct http_route *route);
static void (*g_observe)(const struct http_route *route, unsigned status, double ms);
static atomic_uint g_in_flight;
static atomic_int g_ready;
static atomic_int g_stopping; /* http_stop began: new requests get 503 */
/* Requests inside a handler or suspended on a write: MHD_stop_daemon must
 * not run while one is suspended (it aborts), so http_stop waits for this to
 * reach 0 once g_closing is set, after which no handler starts. */
static atomic_uint g_busy;
static atomic_int g_closing;

unsigned http_in_flight(void)
{
    return atomic_load(&g_in_flight);
}

void http_set_ready(int ready)
{
    atomic_store(&g_ready, ready);
}

int http_ready(void)
{
    return atomic_load(&g_ready);
}

/* --- request contexts ----------------------------------------------------- */

static void req_unref(struct http_req *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    free(r->path);
    free(r->body);
    free(r->allow);
    json_decref(r->json);
    json_decref(r->pend_body);
    free(r->pend_text);
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    pthread_mutex_destroy(&r->mu);
    int dispatched = r->dispatched;
    free(r);
    if (dispatched)
        atomic_fetch_sub(&g_in_flight, 1);
}

/* --- accessors ------------------------------------------------------------- */

const char *http_req_id(const struct http_req *r)
{
    return r->id[0] ? r->id : NULL;
}

const char *http_req_query(const struct http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_req_header(const struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

int64_t http_req_now_ms(const struct http_req *r)
{
    return r->now_ms;
}

void http_req_set_caller(struct http_req *r, int64_t key_id, const char *name)
{
    r->key_id = key_id;
    snprintf(r->key_name, sizeof r->key_name, "%s", name != NULL ? name : "");
}

const char *http_req_caller_name(const struct http_req *r)
{
    return r->key_name;
}

int64_t http_req_caller(const struct http_req *r)
{
    return r->key_id;
}

void http_req_set_grant(struct http_req *r, unsigned bits)
{
    r->grant = bits;
}

unsigned http_req_grant(const struct http_req *r)
{
    return r->grant;
}

static int request_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

const char *http_req_request_id(struct http_req *r)
{
    static atomic_uint_fast64_t counter;
    static atomic_int_fast64_t started_ms;
    if (r->request_id[0] != '\0')
        return r->request_id;
    const char *h = http_req_header(r, "X-Request-Id");
    if (h != NULL && request_id_ok(h)) {
        snprintf(r->request_id, sizeof r->request_id, "%s", h);
    } else {
        int_fast64_t none = 0;
        atomic_compare_exchange_strong(&started_ms, &none, (int_fast64_t)clock_wall_ms());
        snprintf(r->request_id, sizeof r->request_id, "%" PRIx64 "-%" PRIu64,
                 (uint64_t)atomic_load(&started_ms), (uint64_t)atomic_fetch_add(&counter, 1) + 1);
    }
    return r->request_id;
}

json_t *http_req_json(struct http_req *r, int empty_ok)
{
    if (r->json != NULL)
        return r->json;
    size_t i = 0;
    while (i < r->len &&
           (r->body[i] == ' ' || r->body[i] == '\n' || r->body[i] == '\r' || r->body[i] == '\t'))
        i++;
    if (i == r->len) {
        if (empty_ok)
            return r->json = json_object();
        http_reply_problem(r, 400, "a JSON body is required", NULL);
        return NULL;
    }
    json_error_t err;
    int oom;
    r->json = jv_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &err, &oom);
    if (oom) {
        http_reply_oom(r); /* ours, not a malformed body */
    } else if (r->json == NULL) {
        char detail[256];
        snprintf(detail, sizeof detail, "malformed JSON at line %d, column %d: %s", err.line,
                 err.column, err.text);
        http_reply_problem(r, 400, detail, NULL);
    }
    return r->json;
}

/* --- replies ---------------------------------------------------------------- */

void http_reply_header(struct http_req *r, const char *name, const char *value)
{
    if (r->nhdrs == MAX_HEADERS)
        return;
    char *n = strdup(name), *v = strdup(value);
    if (n == NULL || v == NULL) {
        free(n);
        free(v);
        r->hdr_lost = 1;
        return;
    }
    r->hdrs[r->nhdrs].name = n;
    r->hdrs[r->nhdrs].value = v;
    r->nhdrs++;
}

int http_reply_has_header(const struct http_req *r, const char *name)
{
    for (size_t i = 0; i < r->nhdrs; i++)
        if (r->hdrs[i].name != NULL && strcasecmp(r->hdrs[i].name, name) == 0)
            return 1;
    return 0;
}

static void log_request(struct http_req *r)
{
    double ms = (double)(clock_mono_ns() - r->start_ns) / 1e6;
    if (g_observe != NULL)
        g_observe(r->route, r->status, ms);
    if (!g_log_requests)
        return;
    /* To the microsecond, printed as such: a double's 17 digits
     * ("0.057035000000000002") say nothing more. */
    double ms_us = round(ms * 1000.0) / 1000.0;
    json_t *j = json_pack("{s:s,s:s,s:s,s:i,s:f}", "msg", "request", "method", r->method, "path",
                          r->path ? r->path : "", "status", (json_int_t)r->status, "ms", ms_us);
    if (j == NULL)
        return;
    char ts[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(clock_wall_ms(), ts, sizeof ts);
    json_object_set_new(j, "time", json_string(ts));
    if (r->id[0])
        json_object_set_new(j, "experiment", json_string(r->id));
    if (r->key_id > 0)
        json_object_set_new(j, "key", json_integer((json_int_t)r->key_id));
    char *line = jv_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12));
    if (line != NULL)
        log_line(line);
    free(line);
    json_decref(j);
}

/* A 503 out-of-memory answer built once at start, for when no response
 * can be built at all (resp NULL): queueing it allocates nothing. Without
 * it the connection closed unanswered, and a client library sends the
 * request again on a fresh connection by itself: a DELETE that had
 * committed then answered 404 (test_allocfaults). */
static struct MHD_Response *g_oom_resp;

static struct MHD_Response *oom_response(void)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        sizeof HTTP_PROBLEM_OOM - 1, (char *)HTTP_PROBLEM_OOM, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return NULL;
    if (MHD_add_response_header(resp, "Content-Type", "application/problem+json") != MHD_YES ||
        MHD_add_response_header(resp, "Cache-Control", "no-store") != MHD_YES ||
        MHD_add_response_header(resp, "Retry-After", "1") != MHD_YES ||
        /* the reply's own headers are lost (one may have been this) */
        MHD_add_response_header(resp, "Connection", "close") != MHD_YES) {
        MHD_destroy_response(resp);
        return NULL;
    }
    return resp;
}

/* Add a header to resp. One that cannot be added (out of memory) is
 * remembered: a reply without its Location or Content-Type is not sent,
 * queue sends the prebuilt 503 instead. */
static void add_header(struct http_req *r, struct MHD_Response *resp, const char *name,
                       const char *value)
{
    if (MHD_add_response_header(resp, name, value) != MHD_YES)
        r->hdr_lost = 1;
}

/* The CORS headers of every answer (cors.h). */
static void add_cors(struct http_req *r, struct MHD_Response *resp)
{
    if (!cors_enabled())
        return;
    const char *origin = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");
    if (!cors_any()) {
        const char *vary = MHD_get_response_header(resp, "Vary");
        if (vary == NULL) {
            add_header(r, resp, "Vary", "Origin");
        } else {
            char both[256];
            snprintf(both, sizeof both, "%s, Origin", vary);
            MHD_del_response_header(resp, "Vary", vary);
            add_header(r, resp, "Vary", both);
        }
    }
    if (!cors_allowed(origin))
        return;
    add_header(r, resp, "Access-Control-Allow-Origin", cors_any() ? "*" : origin);
    add_header(r, resp, "Access-Control-Expose-Headers", CORS_EXPOSE);
}

static int queue(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
    if (resp != NULL) {
        for (size_t i = 0; i < r->nhdrs; i++)
            add_header(r, resp, r->hdrs[i].name, r->hdrs[i].value);
        add_cors(r, resp);
        if (MHD_get_response_header(resp, "Cache-Control") == NULL) /* the dashboard's own */
            add_header(r, resp, "Cache-Control", "no-store");
        if (atomic_load(&g_stopping))
            add_header(r, resp, "Connection", "close");
        if (r->hdr_lost) {
            MHD_destroy_response(resp);
            resp = NULL;
        }
    }
    if (resp == NULL && g_oom_resp == NULL) {
        log_error("cannot build a response");
        return HTTP_DONE;
    }
    if (resp == NULL) {
        status = 503;
        if (mhderr_queue(r->conn, status, g_oom_resp) != MHD_YES)
            log_warn("queueing a %u response failed", status);
    } else {
        if (mhderr_queue(r->conn, status, resp) != MHD_YES)
            log_warn("queueing a %u response failed", status);
        MHD_destroy_response(resp);
    }
    r->replied = 1;
    r->status = status;
    log_request(r);
    return HTTP_DONE;
}

int http_reply_raw(struct http_req *r, unsigned status, const char *content_type, char *body,
                   size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, body ? body : (char *)"", body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        free(body); /* MHD took nothing */
        return http_reply_oom(r);
    }
    if (content_type != NULL)
        add_header(r, resp, "Content-Type", content_type);
    return queue(r, status, resp);
}

int http_reply_static(struct http_req *r, unsigned status, const char *content_type,
                      const void *body, size_t len)
{
    /* PERSISTENT: MHD sends from the buffer as is, without a copy. */
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, MHD_RESPMEM_PERSISTENT);
    if (resp != NULL && content_type != NULL)
        add_header(r, resp, "Content-Type", content_type);
    return queue(r, status, resp);
}

int http_reply_empty(struct http_req *r, unsigned status)
{
    return queue(r, status, MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT));
}

int http_reply_json(struct http_req *r, unsigned status, json_t *body)
{
    /* A document built while jansson failed an allocation on this thread
     * may miss members (json_object_set_new's failures go unchecked):
     * never sent for whole. */
    if (jv_alloc_failures() != r->jfail) {
        json_decref(body);
        return http_reply_oom(r);
    }
    char *text = body != NULL ? jv_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    const char *ctype = json_object_get(body, "type") != NULL &&
                                json_object_get(body, "title") != NULL && status >= 400
                            ? "application/problem+json"
                            : "application/json";
    json_decref(body);
    if (text == NULL)
        return http_reply_oom(r);
    return http_reply_raw(r, status, ctype, text, strlen(text));
}

struct stream {
    long (*reader)(void *cls, uint64_t pos, char *buf, size_t max);
    void *cls;
    void (*free_cls)(void *cls);
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *s = cls;
    long n = s->reader(s->cls, pos, buf, max);
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *s = cls;
    if (s->free_cls != NULL)
        s->free_cls(s->cls);
    free(s);
}

int http_reply_stream(struct http_req *r, unsigned status, const char *content_type,
                      long (*reader)(void *cls, uint64_t pos, char *buf, size_t max), void *cls,
                      void (*free_cls)(void *cls))
{
    struct stream *s = malloc(sizeof *s);
    if (s == NULL) {
        if (free_cls)
            free_cls(cls);
        return http_reply_oom(r);
    }
    s->reader = reader;
    s->cls = cls;
    s->free_cls = free_cls;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, (size_t)64 * 1024, stream_read, s, stream_free);
    if (resp == NULL) {
        stream_free(s);
        return http_reply_oom(r);
    }
    add_header(r, resp, "Content-Type", content_type);
    /* libmicrohttpd 0.9.75 sends the chunked terminator "0\r\n\r\n" after
     * the headers of a HEAD answer with unknown size: on a kept-alive
     * connection the client would read it as the start of the next
     * response. Closing the connection after a HEAD of a stream keeps
     * those bytes from being misread. */
    if (strcmp(r->method, "HEAD") == 0)
        add_header(r, resp, "Connection", "close");
    return queue(r, status, resp);
}

/* --- waiting for writes -------------------------------------------------------- */

static int send_pending(struct http_req *r)
{
    if (r->fail_status != 0)
        return http_reply_problem(r, r->fail_status, r->fail_detail, NULL);
    if (r->pend_text != NULL) {
        char *t = r->pend_text;
        r->pend_text = NULL;
        return http_reply_raw(r, r->pend_status, "application/json", t, r->pend_len);
    }
    json_t *b = r->pend_body;
    r->pend_body = NULL;
    if (b == NULL)
        return http_reply_empty(r, r->pend_status);
    return http_reply_json(r, r->pend_status, b);
}

struct http_req *http_req_hold(struct http_req *r)
{
    atomic_fetch_add(&r->refs, 1);
    return r;
}

void http_req_release(struct http_req *r)
{
    req_unref(r);
}

void http_req_complete(struct http_req *r, unsigned fail_status, const char *fail_detail)
{
    pthread_mutex_lock(&r->mu);
    r->write_done = 1;
    r->fail_status = fail_status;
    r->fail_detail = fail_detail;
    if (r->suspended) {
        r->suspended = 0;
        MHD_resume_connection(r->conn);
        /* Resumed: MHD_stop_daemon handles it from here (the handler
         * thread left it counted when it suspended). */
        atomic_fetch_sub(&g_busy, 1);
    }
    pthread_mutex_unlock(&r->mu);
    req_unref(r); /* the completion's hold */
}

int http_req_wait_text(struct http_req *r, unsigned status, char *text, size_t len)
{
    if (text == NULL) {
        /* Out of memory: the write goes ahead (it is queued), the client
         * hears 503 and may retry; a reward retried is a duplicate. */
        return http_req_wait(r, 503, http_problem(503, "out of memory", NULL));
    }
    r->pend_text = text;
    r->pend_len = len;
    return http_req_wait(r, status, NULL);
}

int http_reply_text(struct http_req *r, unsigned status, char *text, size_t len)
{
    if (text == NULL)
        return http_reply_oom(r);
    return http_reply_raw(r, status, "application/json", text, len);
}

int http_req_wait(struct http_req *r, unsigned status, json_t *body)
{
    r->pend_status = status;
    r->pend_body = body;
    pthread_mutex_lock(&r->mu);
    if (r->write_done) {
        pthread_mutex_unlock(&r->mu);
        return send_pending(r);
    }
    r->waiting = 1;
    r->suspended = 1;
    MHD_suspend_connection(r->conn);
    pthread_mutex_unlock(&r->mu);
    return HTTP_SUSPENDED;
}

/* --- routing ------------------------------------------------------------------- */

static int match(const char *pattern, const char *path, char *id, size_t idlen)
{
    const char *p = pattern, *u = path;
    while (*p && *u) {
        if (*p == '{' && strncmp(p, "{id}", 4) == 0) {
            size_t n = strcspn(u, "/");
            if (n == 0 || n >= idlen)
                return 0;
            memcpy(id, u, n);
            id[n] = '\0';
            p += 4;
            u += n;
            continue;
        }
        if (*p != *u)
            return 0;
        p++;
        u++;
    }
    return *p == '\0' && *u == '\0';
}

static void route(struct http_req *r)
{
    char id[HTTP_ID_MAX + 1]; /* a longer segment matches no route: 404 */
    char allow[128] = "";
    int path_known = 0;
    for (const struct http_route *rt = g_routes; rt->method != NULL; rt++) {
        id[0] = '\0';
        if (!match(rt->pattern, r->path, id, sizeof id))
            continue;
        path_known = 1;
        if (strcmp(rt->method, r->method) == 0 ||
            (strcmp(r->method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0)) {
            r->route = rt;
            memcpy(r->id, id, sizeof r->id);
            return;
        }
        size_t l = strlen(allow);
        snprintf(allow + l, sizeof allow - l, "%s%s", l ? ", " : "", rt->method);
    }
    if (path_known && strcmp(r->method, "OPTIONS") == 0) {
        size_t l = strlen(allow);
        snprintf(allow + l, sizeof allow - l, "%s%s", strstr(allow, "GET") ? ", HEAD" : "",
                 ", OPTIONS");
        r->options = 1;
        r->pre_status = 204; /* answer_pre: preflight() */
        r->allow = strdup(allow);
    } else if (path_known) {
        r->pre_status = 405;
        r->allow = strdup(allow);
    } else {
        http_req_refuse(r, 404, "no such endpoint");
    }
}

static int is_json_type(const char *ct)
{
    if (ct == NULL)
        return 0;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ')
        n--;
    if (n == 16 && strncasecmp(ct, "application/json", 16) == 0)
        return 1;
    return n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0;
}

/* text/plain, any parameters: a beacon's body (HTTP_ROUTE_BEACON). */
static int is_text_type(const char *ct)
{
    if (ct == NULL)
        return 0;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ')
        n--;
    return n == 10 && strncasecmp(ct, "text/plain", 10) == 0;
}

void http_req_refuse(struct http_req *r, unsigned status, const char *detail)
{
    r->pre_status = status;
    r->pre_slug = NULL;
    snprintf(r->pre_detail, sizeof r->pre_detail, "%s", detail ? detail : "");
}

/* OPTIONS on a known path (http.h). */
static int preflight(struct http_req *r)
{
    const char *origin = http_req_header(r, "Origin");
    const char *method = http_req_header(r, "Access-Control-Request-Method");
    if (origin == NULL || method == NULL) {
        http_reply_header(r, "Allow", r->allow ? r->allow : "");
        return http_reply_empty(r, 204);
    }
    if (!cors_allowed(origin)) {
        char detail[CORS_ORIGIN_MAX + 96];
        snprintf(detail, sizeof detail,
                 "origin %.*s may not call this API from a browser (--cors-origins)",
                 CORS_ORIGIN_MAX, origin);
        return http_reply_problem_as(r, "origin-not-allowed", detail, NULL);
    }
    http_reply_header(r, "Access-Control-Allow-Methods", r->allow ? r->allow : "");
    http_reply_header(r, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
    http_reply_header(r, "Access-Control-Max-Age", CORS_MAX_AGE);
    return http_reply_empty(r, 204);
}

static int answer_pre(struct http_req *r)
{
    if (r->options && r->pre_status == 204)
        return preflight(r);
    if (r->pre_slug != NULL)
        return http_reply_problem_as(r, r->pre_slug, r->pre_detail, NULL);
    if (r->bad_target != NULL)
        return http_reply_invalid(r, r->bad_target,
                                  "contains a control character (raw or percent-encoded, e.g. "
                                  "%00) or a space");
    if (r->pre_status == 405) {
        http_reply_header(r, "Allow", r->allow ? r->allow : "");
        char detail[192];
        snprintf(detail, sizeof detail, "%s is not allowed here; allowed: %s", r->method,
                 r->allow ? r->allow : "");
        return http_reply_problem(r, 405, detail, NULL);
    }
    return http_reply_problem(r, r->pre_status, r->pre_detail, NULL);
}

/* --- checks before the body ------------------------------------------------------- */

/* "path" or "query" when the raw request target (as received, still
 * percent-encoded) holds a control character, raw or encoded (%00–%1F,
 * %7F), or a raw space; NULL when clean. Decoded, a NUL cuts the path short
 * (DELETE /v1/experiments/e1%00zzz named e1), and no control character
 * belongs in a name. A raw space ends the target (RFC 9112 3.2);
 * libmicrohttpd takes "GET /a b HTTP/1.1" for the target "/a b". */
static const char *target_control(const char *uri)
{
    const char *where = "path";
    for (const char *p = uri; *p != '\0'; p++) {
        unsigned c = (unsigned char)*p;
        if (c == '?')
            where = "query";
        if (c == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2]))
            c = (unsigned)strtoul((const char[]){p[1], p[2], '\0'}, NULL, 16);
        else if (c == ' ')
            return where;
        if (c < 0x20 || c == 0x7f)
            return where;
    }
    return NULL;
}

/* MHD_OPTION_URI_LOG_CALLBACK: called with the raw target once the request
 * line is in, before MHD decodes it; what it returns becomes the request's
 * context (access_handler's *con_cls, freed by completed()). */
static void *uri_logged(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    struct http_req *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    atomic_init(&r->refs, 1);
    pthread_mutex_init(&r->mu, NULL);
    r->start_ns = clock_mono_ns();
    r->jfail = jv_alloc_failures();
    r->bad_target = target_control(uri);
    return r;
}

struct framing {
    unsigned n_length, n_transfer, n_host;
    const char *transfer; /* the Transfer-Encoding value (borrowed) */
    char bad[192];        /* what is wrong; "" when nothing */
};

static int is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      size_t key_size, const char *value, size_t value_size)
{
    struct framing *f = cls;
    (void)kind;
    for (size_t i = 0; i < key_size; i++)
        if (!is_tchar((unsigned char)key[i])) {
            /* "Content-Length : 5" is no Content-Length to MHD: the body
             * would be read as the next request (RFC 9112 5.1: reject). */
            snprintf(f->bad, sizeof f->bad, "header field name \"%.*s\" is not a token",
                     (int)(key_size > 64 ? 64 : key_size), key);
            return MHD_NO;
        }
    if (key_size == 0) {
        snprintf(f->bad, sizeof f->bad, "a header field without a name");
        return MHD_NO;
    }
    for (size_t i = 0; i < value_size; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            snprintf(f->bad, sizeof f->bad, "header %.*s: a control character in its value",
                     (int)(key_size > 64 ? 64 : key_size), key);
            return MHD_NO;
        }
    }
    if (key_size == 14 && strncasecmp(key, "Content-Length", 14) == 0)
        f->n_length++;
    if (key_size == 4 && strncasecmp(key, "Host", 4) == 0)
        f->n_host++;
    if (key_size == 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0) {
        f->n_transfer++;
        f->transfer = value;
    }
    return MHD_YES;
}

/* Whatever could make two parsers disagree on where this request's body
 * ends (request smuggling, RFC 9112 6.1 and 6.3), into f->bad. */
static void check_framing(struct MHD_Connection *conn, const char *version, struct framing *f)
{
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, framing_header, f);
    if (f->bad[0] != '\0')
        return;
    /* RFC 9112 3.2; libmicrohttpd's check of it (its strict mode) answers
     * with its header block twice (mhderr.c) */
    if (f->n_host > 1 || (f->n_host == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0))
        snprintf(f->bad, sizeof f->bad, "an HTTP/1.1 request has one Host header (RFC 9112 3.2)");
    else if (f->n_length > 1)
        snprintf(f->bad, sizeof f->bad, "Content-Length is given more than once");
    else if (f->n_transfer > 0 && f->n_length > 0)
        snprintf(f->bad, sizeof f->bad,
                 "both Content-Length and Transfer-Encoding: the body's length is ambiguous");
    /* MHD takes exactly "chunked" as chunked and reads any other coding
     * until the connection closes */
    else if (f->n_transfer > 1 || (f->n_transfer == 1 && strcasecmp(f->transfer, "chunked") != 0))
        snprintf(f->bad, sizeof f->bad,
                 "Transfer-Encoding: only chunked is supported, given once and alone");
    else if (f->n_transfer == 1 && strcmp(version, MHD_HTTP_VERSION_1_1) != 0)
        snprintf(f->bad, sizeof f->bad, "Transfer-Encoding in an %s request", version);
}

/* Answer before reading the body, and close the connection: the body is
 * never read (its framing may be what is wrong) and nothing after it on
 * this connection is taken for a request. */
static void answer_now(struct http_req *r, unsigned status, const char *detail)
{
    http_reply_header(r, "Connection", "close");
    http_reply_problem(r, status, detail, NULL);
}

/* Over its caller's rate limit (rate.h): refused with 429. */
static void rate_check(struct http_req *r)
{
    if (!rate_enabled())
        return;
    uint8_t id[16] = {0};
    enum rate_kind kind = RATE_KEY;
    if (r->key_id > 0) {
        memcpy(id, &r->key_id, sizeof r->key_id);
    } else {
        kind = RATE_ADDR;
        guard_addr_key(r->conn, id);
        /* an IPv6 host by its /64 (IPv4 is mapped: ::ffff:a.b.c.d) */
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(id, mapped, sizeof mapped) != 0)
            memset(id + 8, 0, 8);
    }
    unsigned wait = rate_take(kind, id, clock_mono_ns());
    if (wait == 0)
        return;
    char secs[16];
    snprintf(secs, sizeof secs, "%u", wait);
    http_reply_header(r, "Retry-After", secs);
    http_req_refuse(r, 429,
                    kind == RATE_KEY
                        ? "this API key is over its rate limit (--rate-limit); retry after "
                          "Retry-After seconds"
                        : "your address is over its rate limit (--rate-limit); retry after "
                          "Retry-After seconds");
    r->pre_slug = "rate-limited";
}

/* The headers are in: refuse what must be refused at once, route, admit,
 * and note what will be answered once the body is in. */
static void begin(struct http_req *r, const char *version)
{
    enum guard_verdict v = guard_verdict(r->conn);
    if (v != GUARD_ADMITTED) {
        answer_now(r, (unsigned)v,
                   v == GUARD_FULL
                       ? "too many connections (max-connections); retry later"
                       : "too many connections from your address (max-connections-per-ip); "
                         "retry later, or reuse a connection");
        return;
    }
    struct framing f;
    memset(&f, 0, sizeof f);
    check_framing(r->conn, version, &f);
    if (f.bad[0] != '\0') {
        answer_now(r, 400, f.bad);
        return;
    }
    if (r->bad_target != NULL) {
        r->pre_status = 400; /* answer_pre names the field */
        return;
    }
    route(r);
    if (r->pre_status == 0 && g_admit != NULL)
        g_admit(r, r->route);
    if (r->pre_status == 0)
        rate_check(r);
    /* Shutting down: a request arriving on a kept-alive connection
     * after the in-flight ones drained must not start a write (it would
     * suspend its connection under MHD_stop_daemon, which aborts);
     * g_busy and g_closing below cover the ones already received. */
    if (r->pre_status == 0 && atomic_load(&g_stopping)) {
        http_req_refuse(r, 503, "the server is shutting down; retry later");
    }
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    if (r->pre_status == 0 && cl != NULL && strtoull(cl, NULL, 10) > g_max_body) {
        http_req_refuse(r, 413, "the request body exceeds the configured limit");
    }
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)cls;
    struct http_req *r = *con_cls;
    if (r == NULL) /* uri_logged ran out of memory */
        return MHD_NO;
    if (r->conn == NULL) {
        r->conn = conn;
        snprintf(r->method, sizeof r->method, "%s", method);
        r->path = strdup(url);
        if (r->path == NULL)
            return MHD_NO;
        begin(r, version);
        return MHD_YES;
    }
    if (r->replied)
        return MHD_YES;
    if (r->waiting) {
        /* Resumed after the write completed. */
        pthread_mutex_lock(&r->mu);
        int done = r->write_done;
        pthread_mutex_unlock(&r->mu);
        if (!done)
            return MHD_YES;
        r->waiting = 0;
        send_pending(r);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->too_large || r->oom || r->pre_status != 0)
            return MHD_YES;
        if (r->len + n > g_max_body) {
            r->too_large = 1;
            return MHD_YES;
        }
        /* Small first: glibc consolidates its fast bins before every
         * request of 1 KiB or more, which showed at 2% of a request. */
        if (buf_grow((void **)&r->body, &r->cap, r->len + n + 1, 1, 256) != 0) {
            r->oom = 1; /* ours, not the client's: a 503 once it is in */
            return MHD_YES;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        r->body[r->len] = '\0';
        return MHD_YES;
    }
    /* The whole request is in. From here it counts as in flight: the grace
     * period of http_stop waits for it. A request still uploading its body
     * does not count: a client that stalls or vanishes mid-body held
     * shutdown for the whole grace period (test_slowclients). */
    r->dispatched = 1;
    atomic_fetch_add(&g_in_flight, 1);
    guard_request_in(conn);
    r->now_ms = clock_wall_ms();
    if (r->pre_status != 0) {
        answer_pre(r);
        return MHD_YES;
    }
    if (r->too_large) {
        http_reply_problem(r, 413, "the request body exceeds the configured limit", NULL);
        return MHD_YES;
    }
    if (r->oom) {
        http_reply_oom(r);
        return MHD_YES;
    }
    if (r->len > 0 &&
        (strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0 ||
         strcmp(method, "PUT") == 0) &&
        !is_json_type(http_req_header(r, "Content-Type")) &&
        !((r->route->flags & HTTP_ROUTE_BEACON) &&
          is_text_type(http_req_header(r, "Content-Type")))) {
        http_reply_problem(r, 415, "send the body as Content-Type: application/json", NULL);
        return MHD_YES;
    }
    /* Counted before g_closing is read, and http_stop sets g_closing before
     * reading the count (both sequentially consistent): either this
     * request sees the flag, or http_stop sees the request. */
    atomic_fetch_add(&g_busy, 1);
    if (atomic_load(&g_closing)) {
        atomic_fetch_sub(&g_busy, 1);
        http_reply_problem(r, 503, "the server is shutting down; retry later", NULL);
        return MHD_YES;
    }
    int rc = r->route->handler(r);
    /* Suspended (api_req_wait set waiting): api_req_write_done uncounts it
     * when it resumes the connection, possibly already. */
    if (!r->waiting)
        atomic_fetch_sub(&g_busy, 1);
    if (!r->replied && rc != HTTP_SUSPENDED) {
        log_error("handler for %s %s returned without replying", r->method, r->path);
        http_reply_problem(r, 500, "the handler did not answer", NULL);
    }
    return MHD_YES;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    guard_request_done(conn);
    struct http_req *r = *con_cls;
    if (r == NULL)
        return;
    *con_cls = NULL;
    req_unref(r);
}

/* --- server ------------------------------------------------------------------ */

/* A listening socket on a, or −1 with a message in err. Ours rather than
 * MHD's: its errors say what failed, and MHD takes any address family. */
static int listen_on(const struct http_addr *a, char *err, size_t errlen)
{
    char text[HTTP_ADDR_TEXT];
    http_addr_format(a, text, sizeof text);
    int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on %s: socket: %s", text, strerror(errno));
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->ss.ss_family == AF_INET6) {
        /* "::" means every address, IPv4 ones included (as the operator
         * expects of a wildcard); any other IPv6 address, that one only. */
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
        int v6only = !IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    if (bind(fd, (const struct sockaddr *)&a->ss, a->len) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", text, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Refused at once by the guard: MHD must still take them in to refuse
 * them, so it accepts this many more than max_connections (each leaves
 * within HTTP_REFUSE_GRACE_MS). Only past the sum does a burst wait in the
 * listen backlog: refusals then keep up with max_connections + 64 new
 * connections a second. */
static unsigned refuse_reserve(unsigned max_connections)
{
    return max_connections + 64;
}

static void mhd_answered(unsigned status)
{
    if (g_observe != NULL)
        g_observe(NULL, status, 0.0);
}

struct http_server *http_start(const struct http_config *c, char *err, size_t errlen)
{
    struct http_server *s = calloc(1, sizeof *s);
    int fd = -1;
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *c;
    const char *prio = c->tls_priorities != NULL ? c->tls_priorities : HTTP_TLS_PRIORITIES;
    if (c->tls_cert_pem != NULL) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, errlen, "this libmicrohttpd was built without TLS support");
            goto fail;
        }
        /* Checked here for a message that points at the error (MHD's
         * start only fails). */
        gnutls_priority_t pc;
        const char *at = NULL;
        int rc = gnutls_priority_init(&pc, prio, &at);
        if (rc != GNUTLS_E_SUCCESS) {
            snprintf(err, errlen, "--tls-priorities: %s at \"%.40s\"", gnutls_strerror(rc),
                     at != NULL ? at : prio);
            goto fail;
        }
        gnutls_priority_deinit(pc);
    }
    if (g_oom_resp == NULL && (g_oom_resp = oom_response()) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    g_max_body = c->max_body;
    g_log_requests = c->log_requests;
    g_routes = c->routes;
    g_admit = c->admit;
    g_observe = c->observe;
    if (cors_configure(c->cors_origins, err, errlen) != 0)
        goto fail;
    rate_configure(c->rate_per_s, c->rate_burst);
    fd = listen_on(c->addr, err, errlen);
    if (fd < 0)
        goto fail;
    unsigned threads = c->threads;
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 2;
    }
    unsigned flags = HTTP_MHD_FLAGS;
    if (c->tls_cert_pem != NULL)
        flags |= MHD_USE_TLS;
    if (c->addr->ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct guard_config gc = {
        .max_connections = c->max_connections,
        .max_per_ip = c->max_connections_per_ip,
        .request_timeout_s = c->request_timeout_s,
    };
    if (guard_start(&gc) != 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        goto fail;
    }
    /* MHD gets a copy: whether it closes the socket when it fails to start
     * depends on where it fails; ours is closed in every case. */
    int mhd_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (mhd_fd < 0) {
        snprintf(err, errlen, "cannot listen: %s", strerror(errno));
        guard_stop();
        goto fail;
    }
    struct MHD_OptionItem opts[20];
    size_t n = 0;
    if (threads > 1) /* 1: MHD's single internal thread (a pool of 1 draws a warning) */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, mhd_fd, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)guard_notify, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_logged, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhderr_log, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, c->connection_timeout_s, NULL};
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_LIMIT, c->max_connections + refuse_reserve(c->max_connections), NULL};
    if (c->tls_cert_pem != NULL) {
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
                                            (void *)(uintptr_t)c->tls_cert_pem};
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)(uintptr_t)c->tls_key_pem};
        opts[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)prio};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    mhderr_arm(mhd_answered);
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, access_handler, NULL, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (s->d == NULL) {
        mhderr_disarm();
        guard_stop();
        snprintf(err, errlen, "cannot start libmicrohttpd%s (see the line above)",
                 c->tls_cert_pem != NULL ? " with TLS: is the key the certificate's?" : "");
        goto fail;
    }
    s->bound = *c->addr;
    socklen_t len = sizeof s->bound.ss;
    if (getsockname(fd, (struct sockaddr *)&s->bound.ss, &len) == 0)
        s->bound.len = len;
    close(fd);
    return s;
fail:
    if (fd >= 0)
        close(fd);
    if (g_oom_resp != NULL)
        MHD_destroy_response(g_oom_resp);
    g_oom_resp = NULL;
    free(s);
    return NULL;
}

void http_bound(const struct http_server *s, char *buf, size_t len)
{
    http_addr_format(&s->bound, buf, len);
}

void http_stop(struct http_server *s, unsigned timeout_ms)
{
    if (s == NULL)
        return;
    /* From here every request is refused with 503, on a new connection as
     * on a kept-alive one. The listen socket stays with MHD until
     * MHD_stop_daemon closes it: MHD_quiesce_daemon on an epoll daemon
     * with a thread pool races its workers for the listen socket's removal
     * from their epoll sets, and the loser aborts the process
     * (libmicrohttpd 0.9.75, "Failed to remove listen FD from epoll set";
     * seen once in seven clean `make test` runs, test_export's teardown). */
    atomic_store(&g_stopping, 1);
    /* Let in-flight requests (and the writes they wait for) finish. */
    for (unsigned waited = 0; http_in_flight() > 0 && waited < timeout_ms; waited += 10)
        usleep(10000);
    /* Past the grace period, requests still receiving their body or
     * streaming a reply are cut; but one waiting on a write cannot be:
     * MHD_stop_daemon aborts the process on a suspended connection. The
     * store completes every write (commit or failure, its busy timeout
     * bounds the wait), so wait for those, and start no new handler. */
    atomic_store(&g_closing, 1);
    unsigned waited = 0;
    for (; atomic_load(&g_busy) > 0; waited += 10) {
        if (waited % 5000 == 0)
            log_warn("shutdown: %u requests still waiting for the store", atomic_load(&g_busy));
        usleep(10000);
    }
    /* Those just resumed: give their replies a moment to go out. */
    for (unsigned extra = 0; waited > 0 && http_in_flight() > 0 && extra < 1000; extra += 10)
        usleep(10000);
    MHD_stop_daemon(s->d);
    mhderr_disarm();
    guard_stop();
    if (g_oom_resp != NULL)
        MHD_destroy_response(g_oom_resp);
    g_oom_resp = NULL;
    free(s);
}
