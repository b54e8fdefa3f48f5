/*
 * guard.c — admission and deadlines of connections (guard.h): a list of
 * open connections and a count per client address under one lock, updated
 * by MHD's connection notifications, and a thread that closes the
 * connections past their deadline.
 */
#include "http/guard.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "http/http.h"

/* How often the reaper looks: the resolution of every deadline. */
#define REAP_EVERY_MS 100
/* At most one log line per this many seconds about what the guard did. */
#define REPORT_EVERY_S 10
#define IP_BUCKETS 1024

/* Connections admitted from one client address (IPv4 as v4-mapped IPv6). */
struct ipcount {
    struct ipcount *next; /* the bucket's chain */
    uint8_t addr[16];
    unsigned n;
};

struct gconn {
    struct gconn *prev, *next; /* the open connections, under g.mu */
    struct ipcount *ip;        /* NULL when refused: not counted */
    MHD_socket fd;
    enum guard_verdict verdict;
    atomic_uint_fast64_t deadline_ns; /* monotonic; 0: none */
    int cut;                          /* shut down by the reaper (under g.mu) */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the reaper to stop */
    pthread_t thread;
    int running, stopping;
    struct guard_config cfg;
    struct gconn *head;
    unsigned admitted;
    unsigned refusing; /* refused connections still open */
    struct ipcount *buckets[IP_BUCKETS];
    /* since the last report */
    unsigned long long cut, refused_full, refused_ip;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

void guard_addr_key(struct MHD_Connection *conn, uint8_t key[16])
{
    memset(key, 0, 16);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &s4->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
        memcpy(key, &s6->sin6_addr, 16);
    }
}

/* The count of addr, created at 0 when missing (NULL: out of memory).
 * Under g.mu. */
static struct ipcount *ip_find(const uint8_t addr[16])
{
    size_t b = (size_t)(hash_fnv1a(HASH_FNV1A_BASIS, addr, 16) % IP_BUCKETS);
    for (struct ipcount *c = g.buckets[b]; c != NULL; c = c->next)
        if (memcmp(c->addr, addr, 16) == 0)
            return c;
    struct ipcount *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    memcpy(c->addr, addr, 16);
    c->next = g.buckets[b];
    g.buckets[b] = c;
    return c;
}

/* Unlink and free c (its count is 0). Under g.mu. */
static void ip_free(struct ipcount *c)
{
    size_t b = (size_t)(hash_fnv1a(HASH_FNV1A_BASIS, c->addr, 16) % IP_BUCKETS);
    for (struct ipcount **p = &g.buckets[b]; *p != NULL; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    free(c);
}

/* One connection fewer from c's address. Under g.mu. */
static void ip_release(struct ipcount *c)
{
    if (--c->n == 0)
        ip_free(c);
}

static uint64_t after_ms(uint64_t ms)
{
    return clock_mono_ns() + ms * 1000000u;
}

/* Refused connections given HTTP_REFUSE_GRACE_MS to hear why, at most:
 * half the room libmicrohttpd keeps for refusals (http.c refuse_reserve). */
static unsigned refuse_answered_max(void)
{
    return g.cfg.max_connections / 2 + 32;
}

/* A new connection: admit it or mark it refused. Under g.mu. */
static void admit(struct gconn *gc, struct MHD_Connection *conn)
{
    uint8_t key[16];
    guard_addr_key(conn, key);
    struct ipcount *ip = g.cfg.max_per_ip > 0 ? ip_find(key) : NULL;
    if (g.admitted >= g.cfg.max_connections) {
        gc->verdict = GUARD_FULL;
        g.refused_full++;
    } else if (g.cfg.max_per_ip > 0 && (ip == NULL || ip->n >= g.cfg.max_per_ip)) {
        gc->verdict = GUARD_PER_IP;
        g.refused_ip++;
    } else {
        gc->verdict = GUARD_ADMITTED;
        g.admitted++;
        if (ip != NULL)
            ip->n++;
        gc->ip = ip;
    }
    if (ip != NULL && ip->n == 0) /* made by ip_find for a refused connection */
        ip_free(ip);
    if (gc->verdict != GUARD_ADMITTED && g.refusing >= refuse_answered_max()) {
        /* Refused in a burst (an attack, most likely): no grace to send a
         * request and hear why, the connection goes at once, so that the
         * burst never fills libmicrohttpd's own limit and the backlog. */
        if (gc->fd != MHD_INVALID_SOCKET)
            (void)shutdown(gc->fd, SHUT_RDWR);
        gc->cut = 1;
        g.refusing++;
    } else if (gc->verdict != GUARD_ADMITTED) {
        atomic_store(&gc->deadline_ns, after_ms(HTTP_REFUSE_GRACE_MS));
        g.refusing++;
    } else if (g.cfg.request_timeout_s > 0)
        atomic_store(&gc->deadline_ns, after_ms((uint64_t)g.cfg.request_timeout_s * 1000u));
}

void guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* Out of memory: the connection goes untracked, admitted without
         * a deadline (MHD's inactivity timeout still holds). */
        struct gconn *gc = calloc(1, sizeof *gc);
        *socket_context = gc;
        if (gc == NULL)
            return;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        gc->fd = ci != NULL ? ci->connect_fd : MHD_INVALID_SOCKET;
        atomic_init(&gc->deadline_ns, 0);
        pthread_mutex_lock(&g.mu);
        admit(gc, conn);
        gc->next = g.head;
        if (g.head != NULL)
            g.head->prev = gc;
        g.head = gc;
        pthread_mutex_unlock(&g.mu);
        return;
    }
    struct gconn *gc = *socket_context;
    if (gc == NULL)
        return;
    *socket_context = NULL;
    pthread_mutex_lock(&g.mu);
    if (gc->prev != NULL)
        gc->prev->next = gc->next;
    else
        g.head = gc->next;
    if (gc->next != NULL)
        gc->next->prev = gc->prev;
    if (gc->verdict == GUARD_ADMITTED) {
        g.admitted--;
        if (gc->ip != NULL)
            ip_release(gc->ip);
    } else {
        g.refusing--;
    }
    pthread_mutex_unlock(&g.mu);
    free(gc);
}

static struct gconn *of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

enum guard_verdict guard_verdict(struct MHD_Connection *conn)
{
    const struct gconn *gc = of(conn);
    return gc != NULL ? gc->verdict : GUARD_ADMITTED;
}

void guard_request_in(struct MHD_Connection *conn)
{
    struct gconn *gc = of(conn);
    if (gc != NULL && gc->verdict == GUARD_ADMITTED)
        atomic_store(&gc->deadline_ns, 0);
}

void guard_request_done(struct MHD_Connection *conn)
{
    struct gconn *gc = of(conn);
    if (gc != NULL && gc->verdict == GUARD_ADMITTED && g.cfg.request_timeout_s > 0)
        atomic_store(&gc->deadline_ns, after_ms((uint64_t)g.cfg.request_timeout_s * 1000u));
}

/* Shut down the connections past their deadline; say so now and then. */
static void *reaper(void *arg)
{
    (void)arg;
    uint64_t next_report = clock_mono_ns() + (uint64_t)REPORT_EVERY_S * 1000000000u;
    pthread_mutex_lock(&g.mu);
    while (!g.stopping) {
        struct timespec until = clock_deadline(CLOCK_MONOTONIC, REAP_EVERY_MS);
        pthread_cond_timedwait(&g.cv, &g.mu, &until);
        uint64_t now = clock_mono_ns();
        for (struct gconn *gc = g.head; gc != NULL; gc = gc->next) {
            uint64_t d = atomic_load(&gc->deadline_ns);
            if (d == 0 || now < d || gc->cut || gc->fd == MHD_INVALID_SOCKET)
                continue;
            /* MHD reads the end of the stream and closes the connection;
             * the descriptor stays ours to touch until its "closed"
             * notification, which waits for this lock. */
            (void)shutdown(gc->fd, SHUT_RDWR);
            gc->cut = 1;
            if (gc->verdict == GUARD_ADMITTED)
                g.cut++;
        }
        if (now >= next_report) {
            next_report = now + (uint64_t)REPORT_EVERY_S * 1000000000u;
            if (g.cut + g.refused_full + g.refused_ip > 0)
                log_warn("connections in the last %d s: %llu closed past --request-timeout, "
                         "%llu refused over --max-connections, %llu over "
                         "--max-connections-per-ip",
                         REPORT_EVERY_S, g.cut, g.refused_full, g.refused_ip);
            g.cut = g.refused_full = g.refused_ip = 0;
        }
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

int guard_start(const struct guard_config *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&g.mu);
    g.cfg = *c;
    g.stopping = 0;
    pthread_mutex_unlock(&g.mu);
    if (pthread_create(&g.thread, NULL, reaper, NULL) != 0) {
        pthread_cond_destroy(&g.cv);
        return -1;
    }
    g.running = 1;
    return 0;
}

void guard_stop(void)
{
    if (!g.running)
        return;
    pthread_mutex_lock(&g.mu);
    g.stopping = 1;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(g.thread, NULL);
    pthread_cond_destroy(&g.cv);
    g.running = 0;
}
