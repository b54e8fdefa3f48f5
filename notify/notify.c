/*
 * notify.c — the webhook delivery thread (notify.h).
 *
 * One thread, one curl multi handle. The thread keeps up to QUEUE_MAX
 * pending deliveries in memory, loaded from the outbox by id (rows beyond
 * wait on disk, in id order); a due one starts when a slot is free, and its
 * result is recorded through the store's writer (an update op, never
 * waited for). The store's outbox hook, called by the writer after a
 * commit that inserted outbox rows, sets a flag and wakes the thread out of
 * curl_multi_poll: request threads and the writer never wait for it.
 *
 * Several daemons on one database (store_shared): each delivers the rows
 * the store gives it (store_outbox_pending: its own experiments', and
 * the orphaned ones' on one daemon only), so that a delivery is made by
 * one daemon, not by each. Which rows those are changes with ownership,
 * so every load then reads the pending rows from the first (skipping those
 * queued, and those finished in the last RECENT_MS whose record may not be
 * committed yet), at a wake, after a claim (the hook again) and every
 * RESCAN_MS; a queued delivery the store no longer gives (its experiment
 * went to another daemon) is dropped unless its attempt runs.
 */
#include "notify/notify.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"

#define QUEUE_MAX 1024                   /* deliveries in memory */
#define POLL_MAX_MS 10000                /* the longest sleep */
#define KEEP_MS (7LL * 24 * 3600 * 1000) /* finished rows are kept this long */
#define PRUNE_EVERY_MS (3600LL * 1000)   /* and pruned this often */
#define USER_AGENT "banditd-webhooks/1"
#define RESCAN_MS 2000  /* shared store: the pending rows read again this often */
#define RECENT_MAX 1024 /* finished deliveries remembered (shared store) */
#define RECENT_MS 60000 /* and for how long at most */

/* One pending delivery, a copy of its row plus what its attempt needs. */
struct delivery {
    int64_t id;
    int64_t exp;
    char *event_id, *type, *url, *secret, *body;
    size_t body_len;
    int attempts;
    int64_t next_ms;
    /* while an attempt runs */
    int seen; /* given by the store's last read (load) */
    CURL *easy;
    struct curl_slist *headers;
    char refused[128];            /* set when the target's address was refused */
    char errbuf[CURL_ERROR_SIZE]; /* curl's message */
};

/* One recorded attempt on its way to the writer (freed by its completion),
 * with the prune of old finished rows when one is due. */
struct update {
    struct store_op op[2];
    struct store_delivery dl, prune;
    char error[256];
};

static const struct notify_config defaults = {.attempts = 12,
                                              .backoff_ms = 10000,
                                              .backoff_max_ms = 3600000,
                                              .timeout_ms = 10000,
                                              .concurrency = 16,
                                              .allow_loopback = 0};

static struct {
    struct store *st;
    struct notify_config cfg;
    pthread_t thread;
    int running;
    CURLM *multi;
    atomic_int stop;
    atomic_int wake; /* new outbox rows committed */
    struct delivery **q;
    size_t n, cap;
    int64_t last_id; /* the highest id loaded */
    int more;        /* rows may wait on disk beyond those loaded */
    int shared;      /* several daemons share the store: every load from the first row */
    int returned;    /* rows the last read gave (load) */
    int64_t next_scan_ms;
    struct recent {
        int64_t id, ms;
    } recent[RECENT_MAX]; /* finished here lately (shared), a ring */
    size_t nrecent;
    size_t in_flight;
    uint64_t rng;
    int64_t next_prune_ms;
    atomic_uint_fast64_t attempts, delivered, failed, retried, refused, n_in_flight;
} g; /* g.cfg is the defaults until notify_start (notify_url_check reads it) */

void notify_defaults(struct notify_config *c)
{
    *c = defaults;
}

/* The policy in force: the started configuration's, else the defaults'. */
static int allow_loopback(void)
{
    return g.running ? g.cfg.allow_loopback : defaults.allow_loopback;
}

const char *notify_state_name(int state)
{
    switch (state) {
    case STORE_OUTBOX_PENDING:
        return "pending";
    case STORE_OUTBOX_DELIVERED:
        return "delivered";
    case STORE_OUTBOX_FAILED:
        return "failed";
    default:
        return "unknown";
    }
}

static void count(atomic_uint_fast64_t *c, int64_t d)
{
    if (d >= 0)
        atomic_fetch_add_explicit(c, (uint_fast64_t)d, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(c, (uint_fast64_t)-d, memory_order_relaxed);
}

/* --- the target policy ---------------------------------------------------------- */

/* What kind of address a is, when it is one a webhook may never reach
 * ("link-local", ...) or may reach only when allowed ("loopback"); NULL
 * for an ordinary address. */
static const char *addr_kind4(const unsigned char *b)
{
    if (b[0] == 127)
        return "loopback";
    if (b[0] == 169 && b[1] == 254)
        return "link-local";
    if (b[0] == 0)
        return "unspecified";
    if (b[0] >= 224 && b[0] <= 239)
        return "multicast";
    if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255)
        return "broadcast";
    return NULL;
}

static const char *addr_kind6(const unsigned char *b)
{
    static const unsigned char zero[16], v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(b, zero, 15) == 0 && b[15] == 1)
        return "loopback";
    if (memcmp(b, zero, 16) == 0)
        return "unspecified";
    if (memcmp(b, v4mapped, 12) == 0)
        return addr_kind4(b + 12);
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return "link-local";
    if (b[0] == 0xff)
        return "multicast";
    return NULL;
}

/* The reason a target of this kind is refused, or NULL when it is not. */
static const char *refusal(const char *kind)
{
    if (kind == NULL)
        return NULL;
    if (strcmp(kind, "loopback") == 0)
        return allow_loopback() ? NULL
                                : "a loopback address (start the daemon with "
                                  "--webhook-allow-loopback to allow it)";
    if (strcmp(kind, "link-local") == 0)
        return "a link-local address (never a webhook's target: cloud metadata lives there)";
    if (strcmp(kind, "unspecified") == 0)
        return "an unspecified address";
    if (strcmp(kind, "multicast") == 0)
        return "a multicast address";
    return "a broadcast address";
}

int notify_url_check(const char *url, char *why, size_t len)
{
    CURLU *u = curl_url();
    char *host = NULL;
    int rc = 1;
    if (u == NULL) {
        snprintf(why, len, "out of memory");
        return 1;
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host == NULL || *host == '\0') {
        snprintf(why, len, "is not a URL with a host");
        goto out;
    }
    /* an IPv6 literal comes bracketed; a zone id ("%25eth0") after it */
    char lit[64];
    size_t hl = strlen(host);
    if (host[0] == '[' && hl > 2 && hl - 2 < sizeof lit) {
        memcpy(lit, host + 1, hl - 2);
        lit[hl - 2] = '\0';
        lit[strcspn(lit, "%")] = '\0';
    } else {
        snprintf(lit, sizeof lit, "%s", host);
    }
    unsigned char a[16];
    const char *kind = NULL;
    if (inet_pton(AF_INET, lit, a) == 1)
        kind = addr_kind4(a);
    else if (inet_pton(AF_INET6, lit, a) == 1)
        kind = addr_kind6(a);
    else if (strcasecmp(host, "localhost") == 0 ||
             (hl > 10 && strcasecmp(host + hl - 10, ".localhost") == 0))
        kind = "loopback"; /* RFC 6761: always resolves to loopback */
    const char *r = refusal(kind);
    if (r != NULL) {
        snprintf(why, len, "points to %s", r);
        goto out;
    }
    rc = 0;
out:
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/* curl's socket: refused when the resolved address may not be a target
 * (the check that counts: a host name may resolve anywhere). */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *sa)
{
    struct delivery *d = arg;
    const char *kind = NULL;
    if (purpose == CURLSOCKTYPE_IPCXN && sa->family == AF_INET)
        kind =
            addr_kind4((const unsigned char *)&((const struct sockaddr_in *)(const void *)&sa->addr)
                           ->sin_addr);
    else if (purpose == CURLSOCKTYPE_IPCXN && sa->family == AF_INET6)
        kind =
            addr_kind6(((const struct sockaddr_in6 *)(const void *)&sa->addr)->sin6_addr.s6_addr);
    const char *r = refusal(kind);
    if (r != NULL) {
        snprintf(d->refused, sizeof d->refused, "refused: the host resolves to %s", r);
        return CURL_SOCKET_BAD;
    }
    return socket(sa->family, sa->socktype | SOCK_CLOEXEC, sa->protocol);
}

/* --- signature -------------------------------------------------------------------- */

int notify_sign(const char *secret, long long t, const char *body, size_t len, char *out,
                size_t outlen)
{
    char ts[24];
    unsigned char mac[32];
    gnutls_hmac_hd_t h;
    int n = snprintf(ts, sizeof ts, "%lld", t);
    if (outlen < 96 || gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, secret, strlen(secret)) != 0)
        return -1;
    int rc = gnutls_hmac(h, ts, (size_t)n);
    if (rc == 0)
        rc = gnutls_hmac(h, ".", 1);
    if (rc == 0)
        rc = gnutls_hmac(h, body, len);
    gnutls_hmac_deinit(h, mac);
    if (rc != 0)
        return -1;
    size_t o = (size_t)snprintf(out, outlen, "t=%s,v1=", ts);
    for (size_t i = 0; i < sizeof mac; i++, o += 2)
        snprintf(out + o, outlen - o, "%02x", mac[i]);
    return 0;
}

/* --- the queue ---------------------------------------------------------------------- */

static void delivery_free(struct delivery *d)
{
    if (d == NULL)
        return;
    free(d->event_id);
    free(d->type);
    free(d->url);
    if (d->secret != NULL) {
        explicit_bzero(d->secret, strlen(d->secret));
        free(d->secret);
    }
    free(d->body);
    free(d);
}

/* Remember a delivery finished here (shared store). */
static void recent_add(int64_t id, int64_t now)
{
    if (g.shared) {
        g.recent[g.nrecent % RECENT_MAX] = (struct recent){id, now};
        g.nrecent++;
    }
}

/* Whether a row read now is one queued here, or finished here lately (its
 * record may not be committed yet): not a new delivery. Marks a queued
 * one as still given by the store. */
static int known(int64_t id, int64_t now)
{
    for (size_t i = 0; i < g.n; i++)
        if (g.q[i]->id == id) {
            g.q[i]->seen = 1;
            return 1;
        }
    for (size_t i = 0; i < RECENT_MAX && i < g.nrecent; i++)
        if (g.recent[i].id == id && now - g.recent[i].ms < RECENT_MS)
            return 1;
    return 0;
}

/* Loader callback: a copy of the row joins the queue. */
static int load_row(void *arg, const struct store_delivery *row)
{
    int *loaded = arg;
    g.returned++;
    if (g.shared && known(row->id, clock_wall_ms()))
        return 0;
    struct delivery *d = calloc(1, sizeof *d);
    if (d == NULL)
        return STORE_ERR_NOMEM;
    d->id = row->id;
    d->exp = row->exp;
    d->event_id = strdup(row->event_id ? row->event_id : "");
    d->type = strdup(row->type ? row->type : "");
    d->url = strdup(row->url ? row->url : "");
    d->secret = strdup(row->secret ? row->secret : "");
    d->body = strdup(row->body ? row->body : "");
    d->attempts = row->attempts;
    d->next_ms = row->next_ms;
    if (d->event_id == NULL || d->type == NULL || d->url == NULL || d->secret == NULL ||
        d->body == NULL ||
        // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
        buf_grow((void **)&g.q, &g.cap, g.n + 1, sizeof *g.q, 16) != 0) {
        delivery_free(d);
        return STORE_ERR_NOMEM;
    }
    d->body_len = strlen(d->body);
    d->seen = 1;
    g.q[g.n++] = d;
    g.last_id = row->id;
    (*loaded)++;
    return 0;
}

/* Remove q[i] (order is not kept: due times decide). */
static void queue_remove(size_t i)
{
    g.q[i] = g.q[--g.n];
}

/* Load rows past the last one loaded (shared store: from the first, the
 * queued ones skipped), as many as there is room for. */
static void load(void)
{
    if (g.n >= QUEUE_MAX) {
        g.more = 1; /* rows wait on disk: loaded as deliveries finish */
        return;
    }
    int room = (int)(QUEUE_MAX - g.n), loaded = 0, limit = room + (g.shared ? (int)g.n : 0);
    size_t queued = g.n;
    for (size_t i = 0; i < g.n; i++)
        g.q[i]->seen = 0;
    g.next_scan_ms = clock_wall_ms() + RESCAN_MS;
    g.returned = 0;
    int rc = store_outbox_pending(g.st, g.shared ? 0 : g.last_id, limit, load_row, &loaded);
    if (rc != STORE_OK) {
        log_warn("webhooks: cannot read the outbox (%s); trying again",
                 rc == STORE_ERR_NOMEM ? "out of memory" : store_strerror(rc));
        g.more = 1;
        return;
    }
    /* a full page: there may be more */
    g.more = g.shared ? g.returned == limit && loaded > 0 : loaded == room;
    /* every pending row of ours was read: a queued one not among them is
     * another daemon's now (or finished there) */
    for (size_t i = queued; g.shared && !g.more && i-- > 0;)
        if (!g.q[i]->seen && g.q[i]->easy == NULL) {
            struct delivery *d = g.q[i];
            queue_remove(i);
            delivery_free(d);
        }
}

/* --- attempts ----------------------------------------------------------------------- */

// cppcheck-suppress constParameter ; libcurl's write callback signature
// NOLINTNEXTLINE(readability-non-const-parameter): libcurl's write callback signature
static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

static uint64_t next_rand(void)
{
    g.rng = hash_mix64(g.rng + 0x9e3779b97f4a7c15ULL);
    return g.rng;
}

/* The wait after `failed` failed attempts: backoff·2^(failed−1), at most
 * backoff_max, then "equal jitter": a uniform draw in [w/2, w], so that
 * deliveries failed together do not retry together. */
static int64_t backoff(int failed)
{
    uint64_t w = g.cfg.backoff_ms;
    for (int i = 1; i < failed && w < g.cfg.backoff_max_ms; i++)
        w *= 2;
    if (w > g.cfg.backoff_max_ms)
        w = g.cfg.backoff_max_ms;
    uint64_t half = w / 2;
    return (int64_t)(w - half + (half > 0 ? next_rand() % (half + 1) : 0));
}

/* Append the header "name: value" to d's list. */
static int add_header(struct delivery *d, const char *name, const char *value)
{
    char line[512];
    snprintf(line, sizeof line, "%s:%s%s", name, *value ? " " : "", value);
    struct curl_slist *n = curl_slist_append(d->headers, line);
    if (n == NULL)
        return -1;
    d->headers = n;
    return 0;
}

/* Start an attempt of d. 0, or −1 (it stays queued; tried again later). */
static int start(struct delivery *d)
{
    char sig[128], num[32], att[32];
    long long t = (long long)(clock_wall_ms() / 1000);
    d->refused[0] = d->errbuf[0] = '\0';
    snprintf(num, sizeof num, "%lld", (long long)d->id);
    snprintf(att, sizeof att, "%d", d->attempts + 1);
    if (notify_sign(d->secret, t, d->body, d->body_len, sig, sizeof sig) != 0)
        return -1;
    if (add_header(d, "Content-Type", "application/json") != 0 ||
        add_header(d, "Banditd-Event-Id", d->event_id) != 0 ||
        add_header(d, "Banditd-Event-Type", d->type) != 0 ||
        add_header(d, "Banditd-Delivery", num) != 0 || add_header(d, "Banditd-Attempt", att) != 0 ||
        add_header(d, "Banditd-Signature", sig) != 0 ||
        add_header(d, "Expect", "") != 0) /* no 100-continue round trip */
        goto fail;
    d->easy = curl_easy_init();
    if (d->easy == NULL)
        goto fail;
    CURL *e = d->easy;
    curl_easy_setopt(e, CURLOPT_URL, d->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never the environment's: the address check
                                             * would see the proxy, not the target */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)g.cfg.timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)g.cfg.timeout_ms);
    curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, d->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, d->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->body_len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, d);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, d->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, d);
    if (curl_multi_add_handle(g.multi, e) != CURLM_OK)
        goto fail;
    g.in_flight++;
    count(&g.n_in_flight, 1);
    count(&g.attempts, 1);
    return 0;
fail:
    curl_easy_cleanup(d->easy);
    d->easy = NULL;
    curl_slist_free_all(d->headers);
    d->headers = NULL;
    return -1;
}

/* End d's attempt (in flight) without recording it. */
static void abandon(struct delivery *d)
{
    curl_multi_remove_handle(g.multi, d->easy);
    curl_easy_cleanup(d->easy);
    d->easy = NULL;
    curl_slist_free_all(d->headers);
    d->headers = NULL;
    g.in_flight--;
    count(&g.n_in_flight, -1);
}

static void update_done(void *arg, int err)
{
    (void)err; /* lost: the row stays as it was, and is sent again after a restart */
    free(arg);
}

/* Record d's state through the writer, without waiting. */
static void record(const struct delivery *d, int state, int64_t now, long status, const char *error)
{
    struct update *u = calloc(1, sizeof *u);
    if (u == NULL)
        return; /* the same as a lost update */
    u->dl.id = d->id;
    u->dl.state = state;
    u->dl.attempts = d->attempts;
    u->dl.next_ms = d->next_ms;
    u->dl.last_ms = now;
    u->dl.last_status = (int)status;
    if (error != NULL) {
        snprintf(u->error, sizeof u->error, "%s", error);
        u->dl.last_error = u->error;
    }
    u->op[0].kind = STORE_OP_OUTBOX_UPDATE;
    u->op[0].dl = &u->dl;
    size_t n = 1;
    /* The prune rides on a finished delivery's write: a daemon whose
     * webhooks are quiet writes nothing of its own. */
    if (state != STORE_OUTBOX_PENDING && now >= g.next_prune_ms) {
        u->prune.last_ms = now - KEEP_MS;
        u->op[1].kind = STORE_OP_OUTBOX_PRUNE;
        u->op[1].dl = &u->prune;
        n = 2;
        g.next_prune_ms = now + PRUNE_EVERY_MS;
    }
    if (store_submit(g.st, u->op, n, update_done, u) != STORE_OK)
        free(u);
}

/* The host of a URL for a log line: the path may carry a token. */
static void url_host(const char *url, char *out, size_t len)
{
    const char *p = strstr(url, "://");
    p = p != NULL ? p + 3 : url;
    size_t n = strcspn(p, "/?#");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

/* An attempt of q[i] finished with result rc. */
static void finish(size_t i, CURLcode rc)
{
    struct delivery *d = g.q[i];
    long status = 0;
    char error[256] = "";
    curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &status);
    int ok = rc == CURLE_OK && status >= 200 && status <= 299;
    if (d->refused[0] != '\0') {
        snprintf(error, sizeof error, "%s", d->refused);
        count(&g.refused, 1);
    } else if (rc != CURLE_OK) {
        snprintf(error, sizeof error, "%s", d->errbuf[0] ? d->errbuf : curl_easy_strerror(rc));
    } else if (!ok) {
        snprintf(error, sizeof error, "HTTP %ld", status);
    }
    abandon(d);
    d->attempts++;
    int64_t now = clock_wall_ms();
    if (ok || (unsigned)d->attempts >= g.cfg.attempts)
        recent_add(d->id, now);
    if (ok) {
        count(&g.delivered, 1);
        record(d, STORE_OUTBOX_DELIVERED, now, status, NULL);
    } else if ((unsigned)d->attempts >= g.cfg.attempts) {
        char host[128];
        url_host(d->url, host, sizeof host);
        log_warn("webhook delivery %lld (%s) to %s failed after %d attempts: %s", (long long)d->id,
                 d->event_id, host, d->attempts, error);
        count(&g.failed, 1);
        record(d, STORE_OUTBOX_FAILED, now, status, error);
    } else {
        d->next_ms = now + backoff(d->attempts);
        count(&g.retried, 1);
        record(d, STORE_OUTBOX_PENDING, now, status, error);
        return;
    }
    queue_remove(i);
    delivery_free(d);
    if (g.more)
        load(); /* room again for rows waiting on disk */
}

/* --- the thread --------------------------------------------------------------------- */

static void *notify_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&g.stop)) {
        if (atomic_exchange(&g.wake, 0) || g.more ||
            (g.shared && clock_wall_ms() >= g.next_scan_ms))
            load();
        int64_t now = clock_wall_ms();
        int64_t wait = g.shared ? RESCAN_MS : POLL_MAX_MS;
        for (size_t i = 0; i < g.n; i++) {
            struct delivery *d = g.q[i];
            if (d->easy != NULL)
                continue;
            if (d->next_ms <= now) {
                if (g.in_flight >= g.cfg.concurrency)
                    continue; /* due: starts when an attempt ends (which wakes the poll) */
                if (start(d) == 0)
                    continue;
                d->next_ms = now + 1000; /* out of memory: later */
            }
            int64_t w = d->next_ms - now;
            if (w < wait)
                wait = w < 0 ? 0 : w;
        }
        int still = 0;
        curl_multi_perform(g.multi, &still);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(g.multi, &left)) != NULL) {
            if (m->msg != CURLMSG_DONE)
                continue;
            char *priv = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
            const struct delivery *d = (const struct delivery *)(void *)priv;
            CURLcode rc = m->data.result;
            for (size_t i = 0; i < g.n; i++)
                if (g.q[i] == d) {
                    finish(i, rc);
                    break;
                }
            wait = 0; /* a retry or a new slot may be due at once */
        }
        long ct = -1; /* curl's own timers (timeouts, connection attempts) */
        if (curl_multi_timeout(g.multi, &ct) == CURLM_OK && ct >= 0 && ct < wait)
            wait = ct;
        if (wait > 0)
            curl_multi_poll(g.multi, NULL, 0, (int)wait, NULL);
    }
    for (size_t i = 0; i < g.n; i++) {
        if (g.q[i]->easy != NULL)
            abandon(g.q[i]);
        delivery_free(g.q[i]);
    }
    free(g.q);
    g.q = NULL;
    g.n = g.cap = 0;
    return NULL;
}

/* The store's outbox hook (writer thread, store lock held): a signal. */
static void on_outbox(void *arg)
{
    (void)arg;
    atomic_store(&g.wake, 1);
    curl_multi_wakeup(g.multi);
}

int notify_start(struct store *st, const struct notify_config *c, char *err, size_t errlen)
{
    if (g.running) {
        snprintf(err, errlen, "webhooks: started twice");
        return -1;
    }
    if (c->attempts < 1 || c->concurrency < 1 || c->timeout_ms < 1) {
        snprintf(err, errlen, "webhooks: attempts, concurrency and timeout must be at least 1");
        return -1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "webhooks: cannot initialise libcurl");
        return -1;
    }
    g.st = st;
    g.cfg = *c;
    g.multi = curl_multi_init();
    if (g.multi == NULL) {
        snprintf(err, errlen, "webhooks: out of memory");
        curl_global_cleanup();
        return -1;
    }
    if (getrandom(&g.rng, sizeof g.rng, 0) != (ssize_t)sizeof g.rng)
        g.rng = (uint64_t)clock_mono_ns();
    atomic_store(&g.stop, 0);
    atomic_store(&g.wake, 1); /* the rows left pending by the last run */
    g.last_id = 0;
    g.more = 0;
    g.next_prune_ms = 0;
    g.shared = store_shared(st);
    g.nrecent = 0;
    store_set_outbox_hook(st, on_outbox, NULL);
    g.running = 1; /* before the thread reads it (allow_loopback) */
    int prc = pthread_create(&g.thread, NULL, notify_main, NULL);
    if (prc != 0) {
        g.running = 0;
        store_set_outbox_hook(st, NULL, NULL);
        curl_multi_cleanup(g.multi);
        g.multi = NULL;
        curl_global_cleanup();
        snprintf(err, errlen, "webhooks: %s", strerror(prc));
        return -1;
    }
    return 0;
}

void notify_stop(void)
{
    if (!g.running)
        return;
    store_set_outbox_hook(g.st, NULL, NULL); /* no wakeup after this */
    atomic_store(&g.stop, 1);
    curl_multi_wakeup(g.multi);
    pthread_join(g.thread, NULL);
    curl_multi_cleanup(g.multi);
    g.multi = NULL;
    curl_global_cleanup();
    g.running = 0;
    g.st = NULL; /* the store closes next: the depth is unknown from now */
}

void notify_get_stats(struct notify_stats *out)
{
    out->attempts = atomic_load(&g.attempts);
    out->delivered = atomic_load(&g.delivered);
    out->failed = atomic_load(&g.failed);
    out->retried = atomic_load(&g.retried);
    out->refused = atomic_load(&g.refused);
    out->in_flight = atomic_load(&g.n_in_flight);
    out->depth = -1;
    int64_t depth;
    if (g.st != NULL && store_outbox_depth(g.st, &depth) == STORE_OK)
        out->depth = depth;
}
