/*
 * mhderr.c — libmicrohttpd's own error answers made problem+json
 * (mhderr.h says how and why).
 */
#include "http/mhderr.h"

#include <dlfcn.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/jsonv.h"
#include "base/log.h"
#include "http/http.h"

typedef enum MHD_Result (*queue_fn)(struct MHD_Connection *, unsigned int, struct MHD_Response *);

static queue_fn g_real;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_armed;
static void (*_Atomic g_observe)(unsigned status);

static void resolve(void)
{
    /* The next definition after the executable's: libmicrohttpd's. */
    void *f = dlsym(RTLD_NEXT, "MHD_queue_response");
    // NOLINTNEXTLINE(bugprone-casting-through-void): dlsym's documented use (POSIX)
    memcpy(&g_real, &f, sizeof g_real);
    if (g_real == NULL) {
        log_error("libmicrohttpd's MHD_queue_response not found: %s", dlerror());
        abort();
    }
}

enum MHD_Result mhderr_queue(struct MHD_Connection *conn, unsigned int status,
                             struct MHD_Response *resp)
{
    pthread_once(&g_once, resolve);
    return g_real(conn, status, resp);
}

void mhderr_arm(void (*observe)(unsigned status))
{
    pthread_once(&g_once, resolve);
    atomic_store(&g_observe, observe);
    atomic_store(&g_armed, 1);
}

void mhderr_disarm(void)
{
    atomic_store(&g_armed, 0);
}

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_log_window; /* start of the current 10 s, monotonic ns */
static unsigned g_log_lines, g_log_dropped;

void mhderr_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\r\n")] = '\0';
    uint64_t now = clock_mono_ns();
    unsigned dropped = 0;
    int say;
    pthread_mutex_lock(&g_log_mu);
    if (now - g_log_window >= 10000000000u) {
        dropped = g_log_dropped;
        g_log_window = now;
        g_log_lines = g_log_dropped = 0;
    }
    say = g_log_lines < MHDERR_LOG_BURST;
    if (say)
        g_log_lines++;
    else
        g_log_dropped++;
    pthread_mutex_unlock(&g_log_mu);
    if (dropped > 0)
        log_warn("libmicrohttpd: %u more messages in the last 10 s not shown", dropped);
    if (say)
        log_warn("libmicrohttpd: %s", line);
}

/* What each status libmicrohttpd answers by itself means here. */
static const char *detail_of(unsigned status)
{
    switch (status) {
    case 400:
        return "malformed request: the request line, a header field, Content-Length or the "
               "chunked body is not valid HTTP/1.1, or Host is missing";
    case 413:
        return "Content-Length or a chunk size is too large";
    case 414:
        return "the request line is too long";
    case 431:
        return "the request header fields are too large";
    case 505:
        return "HTTP version not supported: use HTTP/1.1 or HTTP/1.0";
    default:
        return "the request could not be buffered";
    }
}

/* Whether a Content-Length value is what libmicrohttpd takes for one:
 * digits only, at most 2^64 − 1. */
static int length_ok(const char *v)
{
    size_t n = strspn(v, "0123456789");
    if (n == 0 || v[n] != '\0')
        return 0;
    while (n > 1 && *v == '0') {
        v++;
        n--;
    }
    return n < 20 || (n == 20 && strcmp(v, "18446744073709551615") <= 0);
}

/* Whether libmicrohttpd answers from its check of the header fields
 * (connection.c, parse_connection_headers): in 0.9.75 its state machine
 * then carries on as if nothing had been queued and writes the header
 * block a second time, so the client reads one header block and a body
 * that starts with another. Recognised by what that check refuses: a
 * Content-Length that is no number or too large (400, 413), a Cookie it
 * could not store (431). Taking another answer for one of these costs
 * nothing: it is then sent by send_direct, just as well formed. */
static int header_check_path(struct MHD_Connection *c, unsigned status)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    if ((status == 400 || status == 413) && cl != NULL && te == NULL && !length_ok(cl))
        return 1;
    return status == 431 && MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Cookie") != NULL;
}

/* Write the whole answer on the connection ourselves (TLS through its
 * session); libmicrohttpd has written nothing of this request yet, and
 * closes the connection once we return MHD_NO. 0, or −1 when it did not go
 * out in one piece (the connection is closed unanswered). */
static int send_direct(struct MHD_Connection *c, unsigned status, const char *json)
{
    char head[256];
    size_t jlen = strlen(json);
    const char *reason = MHD_get_reason_phrase_for(status);
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 %u %s\r\nContent-Type: application/problem+json\r\n"
                      "Cache-Control: no-store\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                      status, reason != NULL ? reason : "Error", jlen);
    if (hn < 0 || (size_t)hn >= sizeof head)
        return -1;
    size_t n = (size_t)hn + jlen;
    char *msg = malloc(n + 1);
    if (msg == NULL)
        return -1;
    snprintf(msg, n + 1, "%s%s", head, json);
    long sent = -1;
    const union MHD_ConnectionInfo *tls =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (tls != NULL && tls->tls_session != NULL) {
        sent = (long)gnutls_record_send((gnutls_session_t)tls->tls_session, msg, n);
    } else {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (fd != NULL)
            sent = (long)send(fd->connect_fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    free(msg);
    return sent == (long)n ? 0 : -1;
}

/* libmicrohttpd's error answers land here (mhderr.h). */
enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
    pthread_once(&g_once, resolve);
    if (!atomic_load(&g_armed))
        return g_real(connection, status_code, response);
    void (*observe)(unsigned) = atomic_load(&g_observe);
    if (observe != NULL)
        observe(status_code);
    json_t *p = http_problem(status_code, detail_of(status_code), NULL);
    char *text = p != NULL ? jv_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (text == NULL) /* out of memory: its own answer, better than none */
        return g_real(connection, status_code, response);
    if (header_check_path(connection, status_code)) {
        (void)send_direct(connection, status_code, text);
        free(text);
        return MHD_NO; /* libmicrohttpd closes the connection */
    }
    struct MHD_Response *mine =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (mine == NULL) {
        free(text);
        return g_real(connection, status_code, response);
    }
    MHD_add_response_header(mine, "Content-Type", "application/problem+json");
    MHD_add_response_header(mine, "Cache-Control", "no-store");
    /* libmicrohttpd closes the connection after these anyway; say so */
    MHD_add_response_header(mine, "Connection", "close");
    enum MHD_Result rc = g_real(connection, status_code, mine);
    MHD_destroy_response(mine);
    return rc;
}
