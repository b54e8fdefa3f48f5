/*
 * bare.c — the ceiling of the HTTP stack for bench/load: a bare
 * libmicrohttpd + jansson server that buffers the request body, parses it
 * with jansson when there is one, and answers a fixed JSON document
 * serialised per request — the work every banditd request does at least,
 * with none of banditd's own. Same MHD flags (HTTP_MHD_FLAGS) and the same
 * thread pool size as the daemon, so the ratio daemon / bare measures
 * banditd's code, not the machine.
 *
 *   bare [--listen 127.0.0.1:PORT] [--threads N]
 *
 * Prints "listening on HOST:PORT" (port 0 picks a free one) and serves until
 * SIGTERM/SIGINT.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "http/http.h"

#define BARE_MAX_BODY (1u << 20)

static json_t *g_doc; /* the fixed answer */

struct bare_req {
    char *body;
    size_t len, cap;
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    struct bare_req *r = *con_cls;
    if (r == NULL) {
        r = calloc(1, sizeof *r);
        *con_cls = r;
        return r != NULL ? MHD_YES : MHD_NO;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->len + n + 1 > BARE_MAX_BODY)
            return MHD_NO;
        if (r->len + n + 1 > r->cap) {
            size_t ncap = r->cap ? r->cap * 2 : 1024;
            while (ncap < r->len + n + 1)
                ncap *= 2;
            char *nb = realloc(r->body, ncap);
            if (nb == NULL)
                return MHD_NO;
            r->body = nb;
            r->cap = ncap;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        return MHD_YES;
    }
    unsigned status = 200;
    if (r->len > 0) {
        json_error_t err;
        json_t *in = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &err);
        if (in == NULL)
            status = 400;
        json_decref(in);
    }
    char *text = json_dumps(g_doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (text == NULL)
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct bare_req *r = *con_cls;
    if (r != NULL) {
        free(r->body);
        free(r);
    }
    *con_cls = NULL;
}

int main(int argc, char **argv)
{
    char host[64] = "127.0.0.1";
    unsigned port = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            const char *colon = strrchr(v, ':');
            if (colon == NULL || (size_t)(colon - v) >= sizeof host) {
                fprintf(stderr, "bare: --listen HOST:PORT\n");
                return 2;
            }
            memcpy(host, v, (size_t)(colon - v));
            host[colon - v] = '\0';
            port = (unsigned)strtoul(colon + 1, NULL, 10);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = (unsigned)strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: bare [--listen HOST:PORT] [--threads N]\n");
            return 2;
        }
    }
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 2;
    }
    /* An assignment answer, the commonest banditd reply. */
    g_doc = json_pack("{s:[{s:s,s:s,s:s,s:i,s:s,s:b}]}", "assignments", "id", "1a2b3c4d-123456",
                      "bandit", "default", "arm", "green", "arm_index", 1, "expires_at",
                      "2026-01-01T00:00:00.000Z", "exploit", 0);
    if (g_doc == NULL)
        return 1;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    (void)signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "bare: %s is not an IPv4 address\n", host);
        return 2;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        HTTP_MHD_FLAGS, (uint16_t)port, NULL, NULL, handler, NULL, MHD_OPTION_THREAD_POOL_SIZE,
        threads, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_CONNECTION_LIMIT, 1024u,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "bare: cannot listen on %s:%u\n", host, port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("listening on %s:%u\n", host, info != NULL ? (unsigned)info->port : port);
    (void)fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    json_decref(g_doc);
    return 0;
}
