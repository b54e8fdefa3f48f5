/*
 * test_webhooks.c — webhooks end to end (issue 12, docs/contract.md
 * "Webhooks"): the real daemon delivers to a real HTTP receiver on
 * loopback (a thread of this test: a socket server that records every
 * request and answers 500 to the first N, or never answers at all).
 *
 * - creation refuses what cannot be delivered (scheme, loopback without
 *   the flag, link-local always, secrets, events) naming the field, and
 *   GET never shows a secret;
 * - a stop is delivered once, signed (HMAC-SHA256 over "t.body"), with the
 *   status figures that justify it; retries after 500s keep the event id
 *   and the body, with backoff; the last attempt marks it failed;
 * - kill -9 right after the 2xx of the assignment that stopped the
 *   experiment: after the restart the webhook still arrives, with the
 *   event id the stop's log position names, and only one delivery exists;
 * - bandits done and a burn-in complete in a multi-bandit experiment; a
 *   manual stop announces the stop alone;
 * - pause and resume across a clean restart: announced once each;
 * - a receiver that never answers holds its attempts, not the requests:
 *   hundreds of assignments are served while every attempt hangs, and the
 *   daemon still stops cleanly;
 * - two daemons on one PostgreSQL (issue 14): each event is delivered
 *   once, by the experiment's owner, not by both (the second daemon starts
 *   while the deliveries are pending and failing); once the owner is
 *   killed, the other delivers what it left pending, once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "base/clock.h"
#include "tests/support/harness.h"
#include "tests/support/tpg.h"

#define SECRET "whsec-test-0123456789abcdef"

/* --- the receiver ------------------------------------------------------------------ */

#define RECV_MAX 256 /* requests recorded */
#define RECV_CONNS 64

struct hook_req {
    char event_id[256], type[64], signature[160], delivery[32], attempt[16];
    char *body;
    int status; /* what it was answered; 0: nothing (hang) */
};

struct conn {
    int fd;
    char *buf;
    size_t len, cap;
    int done; /* its request is recorded (hang: kept open) */
};

struct receiver {
    int lfd, wake[2];
    uint16_t port;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int fail_first; /* answer 500 to this many requests first */
    int hang;       /* record requests, never answer */
    int n, answered_ok;
    struct hook_req req[RECV_MAX];
    struct conn c[RECV_CONNS];
};

/* The value of header name in the header block h (case-insensitive). */
static void header_value(const char *h, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    out[0] = '\0';
    for (const char *p = h; p != NULL && *p; p = strstr(p, "\r\n")) {
        while (*p == '\r' || *p == '\n')
            p++;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), v);
            return;
        }
    }
}

/* Whether c holds a whole request; records and answers it if so. */
static void conn_request(struct receiver *r, struct conn *c)
{
    char *end = c->len > 0 ? strstr(c->buf, "\r\n\r\n") : NULL;
    if (end == NULL)
        return;
    char cl[32];
    *end = '\0';
    header_value(c->buf, "Content-Length", cl, sizeof cl);
    size_t hlen = (size_t)(end - c->buf) + 4, blen = (size_t)strtoul(cl, NULL, 10);
    if (c->len < hlen + blen) {
        *end = '\r';
        return;
    }
    pthread_mutex_lock(&r->mu);
    int status = 0;
    if (!r->hang) {
        status = r->fail_first > 0 ? 500 : 200;
        if (r->fail_first > 0)
            r->fail_first--;
        else
            r->answered_ok++;
    }
    if (r->n < RECV_MAX) { /* the first ones are kept; every one is counted */
        struct hook_req *q = &r->req[r->n];
        header_value(c->buf, "Banditd-Event-Id", q->event_id, sizeof q->event_id);
        header_value(c->buf, "Banditd-Event-Type", q->type, sizeof q->type);
        header_value(c->buf, "Banditd-Signature", q->signature, sizeof q->signature);
        header_value(c->buf, "Banditd-Delivery", q->delivery, sizeof q->delivery);
        header_value(c->buf, "Banditd-Attempt", q->attempt, sizeof q->attempt);
        q->body = strndup(c->buf + hlen, blen);
        q->status = status;
    }
    r->n++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    c->done = 1;
    if (status == 0)
        return; /* hang: the connection stays open, unanswered */
    char reply[128];
    int n = snprintf(reply, sizeof reply,
                     "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
    (void)!write(c->fd, reply, (size_t)n);
    close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

static void *receiver_main(void *arg)
{
    struct receiver *r = arg;
    for (;;) {
        struct pollfd p[RECV_CONNS + 2];
        int idx[RECV_CONNS + 2], np = 0;
        p[np].fd = r->lfd;
        p[np++].events = POLLIN;
        p[np].fd = r->wake[0];
        p[np++].events = POLLIN;
        for (int i = 0; i < RECV_CONNS; i++)
            if (r->c[i].fd >= 0) { /* hung ones too: to see the client give up */
                idx[np] = i;
                p[np].fd = r->c[i].fd;
                p[np++].events = POLLIN;
            }
        if (poll(p, (nfds_t)np, 1000) < 0 && errno != EINTR)
            break;
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        if (p[0].revents & POLLIN) {
            int fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
            int slot = -1;
            for (int i = 0; fd >= 0 && i < RECV_CONNS && slot < 0; i++)
                if (r->c[i].fd < 0)
                    slot = i;
            if (slot < 0 && fd >= 0)
                close(fd);
            else if (fd >= 0)
                r->c[slot].fd = fd;
        }
        for (int k = 2; k < np; k++) {
            if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            struct conn *c = &r->c[idx[k]];
            if (c->len + 4096 + 1 > c->cap) {
                c->cap = (c->len + 4096 + 1) * 2;
                c->buf = realloc(c->buf, c->cap);
            }
            ssize_t got = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
            if (got > 0 && c->done)
                continue; /* a hung request's connection: nothing more is read */
            if (got <= 0) {
                close(c->fd);
                free(c->buf);
                memset(c, 0, sizeof *c);
                c->fd = -1;
                continue;
            }
            c->len += (size_t)got;
            c->buf[c->len] = '\0';
            conn_request(r, c);
        }
    }
    return NULL;
}

static struct receiver *receiver_start(int fail_first, int hang)
{
    struct receiver *r = calloc(1, sizeof *r);
    assert_non_null(r);
    for (int i = 0; i < RECV_CONNS; i++)
        r->c[i].fd = -1;
    r->fail_first = fail_first;
    r->hang = hang;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    assert_int_equal(pipe2(r->wake, O_CLOEXEC), 0);
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(r->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    assert_int_equal(bind(r->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(r->lfd, 64), 0);
    assert_int_equal(getsockname(r->lfd, (struct sockaddr *)&a, &al), 0);
    r->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&r->th, NULL, receiver_main, r), 0);
    return r;
}

static void receiver_stop(struct receiver *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_mutex_unlock(&r->mu);
    (void)!write(r->wake[1], "x", 1);
    pthread_join(r->th, NULL);
    for (int i = 0; i < RECV_CONNS; i++)
        if (r->c[i].fd >= 0) {
            close(r->c[i].fd);
            free(r->c[i].buf);
        }
    for (int i = 0; i < r->n && i < RECV_MAX; i++)
        free(r->req[i].body);
    close(r->lfd);
    close(r->wake[0]);
    close(r->wake[1]);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* Wait until n requests were recorded (60 s at most); returns how many. */
static int receiver_wait(struct receiver *r, int n)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&r->mu);
    while (r->n < n && pthread_cond_timedwait(&r->cv, &r->mu, &dl) == 0)
        ;
    int got = r->n;
    pthread_mutex_unlock(&r->mu);
    return got;
}

/* Wait until n requests were answered 200. */
static int receiver_wait_ok(struct receiver *r, int n)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&r->mu);
    while (r->answered_ok < n && pthread_cond_timedwait(&r->cv, &r->mu, &dl) == 0)
        ;
    int got = r->answered_ok;
    pthread_mutex_unlock(&r->mu);
    return got;
}

static int receiver_count(struct receiver *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void receiver_set_fail(struct receiver *r, int fail_first)
{
    pthread_mutex_lock(&r->mu);
    r->fail_first = fail_first;
    pthread_mutex_unlock(&r->mu);
}

static void receiver_set_hang(struct receiver *r, int hang)
{
    pthread_mutex_lock(&r->mu);
    r->hang = hang;
    pthread_mutex_unlock(&r->mu);
}

/* --- helpers ---------------------------------------------------------------------- */

/* The header's signature checks out with SECRET over "t.body", and t is now. */
static void assert_signed(const struct hook_req *q)
{
    char hex[80] = "", want[65], msg[32], *end = NULL;
    unsigned char mac[32];
    if (strncmp(q->signature, "t=", 2) != 0)
        fail_msg("bad Banditd-Signature: \"%s\"", q->signature);
    long long t = strtoll(q->signature + 2, &end, 10);
    if (end == NULL || strncmp(end, ",v1=", 4) != 0 || strlen(end + 4) != 64)
        fail_msg("bad Banditd-Signature: \"%s\"", q->signature);
    snprintf(hex, sizeof hex, "%s", end + 4);
    size_t ml = (size_t)snprintf(msg, sizeof msg, "%lld.", t), bl = strlen(q->body);
    char *signed_text = malloc(ml + bl + 1);
    assert_non_null(signed_text);
    memcpy(signed_text, msg, ml);
    memcpy(signed_text + ml, q->body, bl + 1);
    assert_int_equal(
        gnutls_hmac_fast(GNUTLS_MAC_SHA256, SECRET, strlen(SECRET), signed_text, ml + bl, mac), 0);
    free(signed_text);
    for (size_t i = 0; i < 32; i++)
        snprintf(want + 2 * i, 3, "%02x", mac[i]);
    assert_string_equal(hex, want);
    long long now = (long long)(clock_wall_ms() / 1000);
    assert_true(t > now - 300 && t <= now + 1);
}

static const char *const g_flags[] = {
    "--webhook-allow-loopback", "--webhook-backoff", "20", "--webhook-backoff-max", "100", NULL};

static struct tdaemon *start(const char *const *extra)
{
    struct tdaemon *d = tdaemon_start(extra != NULL ? extra : g_flags);
    assert_non_null(d);
    return d;
}

/* A webhook endpoint object for r, subscribed to events (a JSON array text,
 * NULL: all). */
static void hook_json(char *buf, size_t len, const struct receiver *r, const char *events)
{
    snprintf(buf, len,
             "{\"url\":\"http://127.0.0.1:%u/hooks/banditd\",\"secret\":\"" SECRET "\"%s%s}",
             (unsigned)r->port, events ? ",\"events\":" : "", events ? events : "");
}

static void patch_state(struct tdaemon *d, const char *id, const char *state)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    json_decref(tcall(d, "PATCH", path, state, 200));
}

/* GET webhooks of id (asserts 200; new reference). */
static json_t *deliveries(struct tdaemon *d, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/webhooks", id);
    json_t *j = tcall(d, "GET", path, NULL, 200);
    assert_non_null(j);
    return j;
}

/* Poll the listing until its newest delivery has state want (30 s). */
static json_t *wait_state(struct tdaemon *d, const char *id, const char *want)
{
    for (int i = 0; i < 3000; i++) {
        json_t *j = deliveries(d, id);
        const char *st = tjson_str(j, "deliveries[0].state");
        if (st != NULL && strcmp(st, want) == 0)
            return j;
        json_decref(j);
        tsleep_ms(10);
    }
    fail_msg("delivery of %s never became %s", id, want);
    return NULL;
}

/* --- creation ----------------------------------------------------------------------- */

static void invalid(struct tdaemon *d, const char *webhooks, const char *field)
{
    struct tresp *r =
        treqf(d, "POST", "/v1/experiments", "{\"arms\":[\"a\",\"b\"],\"webhooks\":%s}", webhooks);
    assert_invalid(r, field);
    tresp_free(r);
}

static void test_create_validation(void **state)
{
    (void)state;
    struct tdaemon *d = start((const char *const[]){NULL});
    invalid(d, "[{\"url\":\"ftp://example.com/x\",\"secret\":\"" SECRET "\"}]", "webhooks[0].url");
    invalid(d, "[{\"url\":\"https:///x\",\"secret\":\"" SECRET "\"}]", "webhooks[0].url");
    invalid(d, "[{\"url\":\"https://exa mple.com/\",\"secret\":\"" SECRET "\"}]",
            "webhooks[0].url");
    /* loopback needs the flag; link-local never */
    invalid(d, "[{\"url\":\"http://127.0.0.1:9/x\",\"secret\":\"" SECRET "\"}]", "webhooks[0].url");
    invalid(d, "[{\"url\":\"http://[::1]:9/x\",\"secret\":\"" SECRET "\"}]", "webhooks[0].url");
    invalid(d, "[{\"url\":\"http://localhost:9/x\",\"secret\":\"" SECRET "\"}]", "webhooks[0].url");
    invalid(d, "[{\"url\":\"http://169.254.169.254/latest/meta-data\",\"secret\":\"" SECRET "\"}]",
            "webhooks[0].url");
    invalid(d, "[{\"url\":\"https://example.com/x\"}]", "webhooks[0].secret");
    invalid(d, "[{\"url\":\"https://example.com/x\",\"secret\":\"short\"}]", "webhooks[0].secret");
    invalid(d,
            "[{\"url\":\"https://example.com/x\",\"secret\":\"" SECRET
            "\",\"events\":[\"experiment.exploded\"]}]",
            "webhooks[0].events");
    invalid(d, "[{\"url\":\"https://example.com/x\",\"secret\":\"" SECRET "\",\"extra\":1}]",
            "webhooks[0].extra");
    invalid(d,
            "[{\"url\":\"https://example.com/x\",\"secret\":\"" SECRET
            "\"},{\"url\":\"https://example.com/x\",\"secret\":\"" SECRET "\"}]",
            "webhooks[1].url");
    char many[4096];
    size_t n = (size_t)snprintf(many, sizeof many, "[");
    for (int i = 0; i < 9; i++)
        n += (size_t)snprintf(many + n, sizeof many - n,
                              "%s{\"url\":\"https://example.com/%d\",\"secret\":\"" SECRET "\"}",
                              i ? "," : "", i);
    snprintf(many + n, sizeof many - n, "]");
    invalid(d, many, "webhooks");

    /* a valid one: GET shows a fingerprint, never the secret */
    json_t *x = texp_create(d, "{\"id\":\"ok\",\"arms\":[\"a\",\"b\"],\"webhooks\":[{\"url\":"
                               "\"https://hooks.example.com/banditd\",\"secret\":\"" SECRET
                               "\",\"events\":[\"experiment.stopped\"]}]}");
    assert_true(json_is_true(tjson_get(x, "webhooks[0].secret_set")));
    assert_int_equal(strncmp(tjson_str(x, "webhooks[0].secret_fingerprint"), "sha256:", 7), 0);
    assert_null(tjson_get(x, "webhooks[0].secret"));
    assert_string_equal(tjson_str(x, "webhooks[0].events[0]"), "experiment.stopped");
    json_decref(x);
    struct tresp *r = treq(d, "GET", "/v1/experiments/ok", NULL, NULL);
    assert_status(r, 200);
    assert_null(strstr(r->body, SECRET));
    tresp_free(r);
    r = treq(d, "GET", "/v1/experiments", NULL, NULL);
    assert_null(strstr(r->body, SECRET));
    tresp_free(r);
    json_t *l = deliveries(d, "ok");
    assert_int_equal(json_array_size(json_object_get(l, "deliveries")), 0);
    assert_true(json_is_null(json_object_get(l, "next_before")));
    json_decref(l);
    /* the configuration, secret included, survives a restart */
    assert_int_equal(tdaemon_stop(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    x = tcall(d, "GET", "/v1/experiments/ok", NULL, 200);
    assert_true(json_is_true(tjson_get(x, "webhooks[0].secret_set")));
    json_decref(x);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);

    /* with the flag, loopback is allowed; link-local still is not */
    d = start(g_flags);
    json_decref(texp_create(d, "{\"arms\":[\"a\",\"b\"],\"webhooks\":[{\"url\":"
                               "\"http://127.0.0.1:9/x\",\"secret\":\"" SECRET "\"}]}"));
    invalid(d, "[{\"url\":\"http://[fe80::1]/x\",\"secret\":\"" SECRET "\"}]", "webhooks[0].url");
    invalid(d, "[{\"url\":\"http://169.254.169.254/\",\"secret\":\"" SECRET "\"}]",
            "webhooks[0].url");
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* --- a stop, signed; retries; failure ---------------------------------------------- */

/* Reward arm a with 1 and b with 0 until the experiment stops on its own. */
static void drive_to_stop(struct tdaemon *d, const char *id)
{
    for (int i = 0; i < 4000; i++) {
        json_t *a = texp_assign(d, id, NULL);
        json_t *one = json_array_get(a, 0);
        int exploit = json_is_true(json_object_get(one, "exploit"));
        if (!exploit)
            assert_string_equal(texp_reward(d, id, tjson_str(one, "id"),
                                            strcmp(tjson_str(one, "arm"), "a") == 0 ? 1 : 0),
                                "accepted");
        json_decref(a);
        if (exploit)
            return;
    }
    fail_msg("%s never stopped", id);
}

static void test_stop_signed(void **state)
{
    (void)state;
    struct receiver *rc = receiver_start(0, 0);
    struct tdaemon *d = start(NULL);
    char hook[512];
    hook_json(hook, sizeof hook, rc, NULL);
    json_decref(texp_create(d,
                            "{\"id\":\"sig\",\"name\":\"Signed\",\"arms\":[\"a\",\"b\"],"
                            "\"policy\":{\"name\":\"adapt\"},\"seed\":3,\"webhooks\":[%s]}",
                            hook));
    drive_to_stop(d, "sig");
    assert_int_equal(receiver_wait(rc, 1), 1);
    const struct hook_req *q = &rc->req[0];
    assert_string_equal(q->type, "experiment.stopped");
    assert_string_equal(q->attempt, "1");
    assert_signed(q);
    json_t *p = json_loads(q->body, 0, NULL);
    assert_non_null(p);
    assert_string_equal(tjson_str(p, "id"), q->event_id);
    assert_string_equal(tjson_str(p, "type"), "experiment.stopped");
    assert_string_equal(tjson_str(p, "experiment.id"), "sig");
    assert_string_equal(tjson_str(p, "experiment.name"), "Signed");
    assert_string_equal(tjson_str(p, "experiment.state"), "stopped");
    assert_string_equal(tjson_str(p, "data.stop_reason"), "glr");
    assert_string_equal(tjson_str(p, "data.bandits[0].recommended[0]"), "a");
    assert_true(json_is_true(tjson_get(p, "data.bandits[0].done")));
    assert_true(tjson_int(p, "data.bandits[0].arms[0].pulls") > 0);
    json_t *s = texp_status(d, "sig");
    /* the stop the event announces: adapt's default, the proven GLR, the
     * same "stop" object as status's (after the stop, neither changes) */
    assert_true(tjson_num(s, "bandits[0].stop.error_bound") <= 0.05);
    json_t *stop = tjson_get(p, "data.bandits[0].stop");
    assert_non_null(stop);
    assert_string_equal(tjson_str(stop, "rule"), "glr");
    assert_true(json_is_true(json_object_get(stop, "fired")));
    assert_true(json_is_true(json_object_get(stop, "proven")));
    /* status prints its numbers shorter (15 digits): equal to that */
    const char *k;
    json_t *v, *sv = tjson_get(s, "bandits[0].stop");
    assert_int_equal(json_object_size(stop), json_object_size(sv));
    json_object_foreach(stop, k, v)
    {
        json_t *w = json_object_get(sv, k);
        int same = json_is_number(v) && json_is_number(w)
                       ? fabs(json_number_value(v) - json_number_value(w)) <=
                             1e-13 * fabs(json_number_value(w))
                       : json_equal(v, w);
        if (!same)
            fail_msg("stop.%s differs between the webhook and status", k);
    }
    assert_int_equal(tjson_int(p, "experiment.pulls"), tjson_int(s, "pulls"));
    json_decref(s);
    /* the event id names the log position: "<id>/<token>-<seq>-<check>/<type>" */
    char pos[64];
    assert_int_equal(strncmp(q->event_id, "sig/", 4), 0);
    const char *slash = strchr(q->event_id + 4, '/');
    assert_non_null(slash);
    snprintf(pos, sizeof pos, "%.*s", (int)(slash - q->event_id - 4), q->event_id + 4);
    assert_int_equal(tassignment_seq(pos, NULL, 0), tjson_int(p, "seq"));
    assert_int_equal(strlen(pos), 8 + 1 + strlen(strchr(pos, '-') + 1));
    assert_string_equal(slash, "/experiment.stopped");
    json_decref(p);
    /* listed as delivered; counted */
    json_t *l = wait_state(d, "sig", "delivered");
    assert_int_equal(json_array_size(json_object_get(l, "deliveries")), 1);
    assert_int_equal(tjson_int(l, "deliveries[0].attempts"), 1);
    assert_int_equal(tjson_int(l, "deliveries[0].last_status"), 200);
    assert_string_equal(tjson_str(l, "deliveries[0].event_id"), rc->req[0].event_id);
    assert_string_equal(tjson_str(l, "deliveries[0].payload.id"), rc->req[0].event_id);
    json_decref(l);
    assert_true(tmetric(d, "banditd_webhook_deliveries_total", "result=\"delivered\"") >= 1);
    /* nothing more: exploit assignments announce nothing */
    json_decref(texp_assign(d, "sig", NULL));
    tsleep_ms(200);
    assert_int_equal(receiver_count(rc), 1);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

static void test_retries_keep_the_event(void **state)
{
    (void)state;
    struct receiver *rc = receiver_start(3, 0);
    struct tdaemon *d = start(NULL);
    char hook[512];
    hook_json(hook, sizeof hook, rc, "[\"experiment.stopped\"]");
    json_decref(
        texp_create(d, "{\"id\":\"retry\",\"arms\":[\"a\",\"b\"],\"webhooks\":[%s]}", hook));
    patch_state(d, "retry", "{\"state\":\"stopped\"}");
    assert_int_equal(receiver_wait_ok(rc, 1), 1);
    assert_int_equal(receiver_count(rc), 4);
    for (int i = 0; i < 4; i++) {
        const struct hook_req *q = &rc->req[i];
        char att[16];
        snprintf(att, sizeof att, "%d", i + 1);
        assert_string_equal(q->attempt, att);
        assert_int_equal(q->status, i < 3 ? 500 : 200);
        assert_string_equal(q->event_id, rc->req[0].event_id);
        assert_string_equal(q->delivery, rc->req[0].delivery);
        assert_string_equal(q->body, rc->req[0].body); /* byte for byte */
        assert_signed(q);
    }
    json_t *p = json_loads(rc->req[0].body, 0, NULL);
    assert_string_equal(tjson_str(p, "data.stop_reason"), "manual");
    json_decref(p);
    json_t *l = wait_state(d, "retry", "delivered");
    assert_int_equal(tjson_int(l, "deliveries[0].attempts"), 4);
    json_decref(l);
    assert_true(tmetric(d, "banditd_webhook_retries_total", NULL) >= 3);
    assert_true(tmetric(d, "banditd_webhook_attempts_total", NULL) >= 4);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

static void test_gives_up_after_attempts(void **state)
{
    (void)state;
    struct receiver *rc = receiver_start(1000, 0);
    static const char *const flags[] = {
        "--webhook-allow-loopback", "--webhook-backoff", "10", "--webhook-attempts", "3", NULL};
    struct tdaemon *d = start(flags);
    char hook[512];
    hook_json(hook, sizeof hook, rc, NULL);
    json_decref(texp_create(d, "{\"id\":\"dead\",\"arms\":[\"a\",\"b\"],\"webhooks\":[%s]}", hook));
    patch_state(d, "dead", "{\"state\":\"paused\"}");
    json_t *l = wait_state(d, "dead", "failed");
    assert_int_equal(tjson_int(l, "deliveries[0].attempts"), 3);
    assert_int_equal(tjson_int(l, "deliveries[0].last_status"), 500);
    assert_string_equal(tjson_str(l, "deliveries[0].last_error"), "HTTP 500");
    assert_true(json_is_null(tjson_get(l, "deliveries[0].next_attempt_at")));
    json_decref(l);
    assert_int_equal(receiver_count(rc), 3);
    assert_int_equal((long long)tmetric(d, "banditd_webhook_deliveries_total", "result=\"failed\""),
                     1);
    assert_int_equal((long long)tmetric(d, "banditd_webhook_outbox_pending", NULL), 0);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

/* --- kill -9 right after the stop's 2xx ------------------------------------------- */

static void test_kill9_after_stop(void **state)
{
    (void)state;
    struct receiver *rc = receiver_start(1000000, 0); /* 500 until the restart */
    struct tdaemon *d = start(NULL);
    char hook[512];
    hook_json(hook, sizeof hook, rc, "[\"experiment.stopped\"]");
    json_decref(texp_create(d,
                            "{\"id\":\"crash\",\"arms\":[\"a\",\"b\"],\"policy\":{\"name\":"
                            "\"uniform\"},\"goal\":{\"budget\":4},\"webhooks\":[%s]}",
                            hook));
    /* the assignment that spends the budget (the 4th) stops the experiment:
     * its 201 means the stop, and its announcement, are on disk */
    char stop_id[64] = "";
    for (int i = 0; i < 4; i++) {
        json_t *a = texp_assign(d, "crash", NULL);
        json_t *one = json_array_get(a, 0);
        assert_false(json_is_true(json_object_get(one, "exploit")));
        snprintf(stop_id, sizeof stop_id, "%s", tjson_str(one, "id"));
        json_decref(a);
    }
    assert_int_equal(tdaemon_kill(d), 0);
    receiver_set_fail(rc, 0);
    assert_int_equal(tdaemon_restart(d), 0);
    assert_int_equal(receiver_wait_ok(rc, 1), 1);
    char want[160];
    snprintf(want, sizeof want, "crash/%s/experiment.stopped", stop_id);
    int n = receiver_count(rc); /* entries below n are final */
    for (int i = 0; i < n; i++) {
        assert_string_equal(rc->req[i].event_id, want);
        assert_string_equal(rc->req[i].body, rc->req[0].body);
        assert_signed(&rc->req[i]);
    }
    printf("# %d attempt(s) before the kill and after the restart; event %s\n", n, want);
    json_t *p = json_loads(rc->req[0].body, 0, NULL);
    assert_string_equal(tjson_str(p, "data.stop_reason"), "budget");
    json_decref(p);
    json_t *l = wait_state(d, "crash", "delivered");
    assert_int_equal(json_array_size(json_object_get(l, "deliveries")), 1);
    json_decref(l);
    json_t *st = texp_status(d, "crash");
    assert_string_equal(tjson_str(st, "stop_reason"), "budget");
    json_decref(st);
    tsleep_ms(200);
    assert_int_equal(receiver_count(rc), n); /* nothing announced twice */
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

/* --- bandits, burn-in, pause and resume --------------------------------------------- */

static void observe(struct tdaemon *d, const char *id, const char *bandit, int n_a, int n_b)
{
    char *body = malloc(64 * (size_t)(n_a + n_b) + 64);
    assert_non_null(body);
    size_t len = (size_t)sprintf(body, "{\"observations\":[");
    for (int i = 0; i < n_a + n_b; i++)
        len += (size_t)sprintf(body + len, "%s{\"bandit\":\"%s\",\"arm\":\"%s\",\"reward\":%d}",
                               i ? "," : "", bandit, i < n_a ? "a" : "b", i < n_a ? 1 : 0);
    memcpy(body + len, "]}", 3);
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/observations", id);
    json_decref(tcall(d, "POST", path, body, 200));
    free(body);
}

static void test_bandits_and_burn_in(void **state)
{
    (void)state;
    struct receiver *rc = receiver_start(0, 0);
    struct tdaemon *d = start(NULL);
    char hook[512];
    hook_json(hook, sizeof hook, rc,
              "[\"bandit.done\",\"constraint.fired\",\"experiment.stopped\"]");
    json_decref(texp_create(
        d,
        "{\"id\":\"mb\",\"bandits\":[{\"id\":\"x\",\"arms\":[\"a\",\"b\"]},{\"id\":\"y\","
        "\"arms\":[\"a\",\"b\"]}],\"policy\":{\"name\":\"uniform\"},\"constraints\":{\"burn_in\":2}"
        ","
        "\"webhooks\":[%s]}",
        hook));
    observe(d, "mb", "x", 2, 1);
    observe(d, "mb", "y", 1, 1);
    tsleep_ms(100);
    assert_int_equal(receiver_count(rc), 0); /* b of x has 1 of 2 */
    observe(d, "mb", "x", 0, 1);
    assert_int_equal(receiver_wait(rc, 1), 1);
    json_t *p = json_loads(rc->req[0].body, 0, NULL);
    assert_string_equal(tjson_str(p, "type"), "constraint.fired");
    assert_string_equal(tjson_str(p, "data.constraint"), "burn_in");
    assert_int_equal(tjson_int(p, "data.burn_in"), 2);
    assert_string_equal(tjson_str(p, "data.bandit.id"), "x");
    assert_int_equal(tjson_int(p, "data.bandit.arms[1].pulls"), 2);
    json_decref(p);
    /* x settles: a bandit done, the experiment goes on */
    observe(d, "mb", "x", 150, 150);
    json_t *s = texp_status(d, "mb");
    assert_int_equal(tjson_int(s, "bandits_done"), 1);
    assert_false(json_is_true(json_object_get(s, "stopped")));
    json_decref(s);
    assert_int_equal(receiver_wait(rc, 2), 2);
    p = json_loads(rc->req[1].body, 0, NULL);
    assert_string_equal(tjson_str(p, "type"), "bandit.done");
    assert_string_equal(tjson_str(p, "data.bandit.id"), "x");
    assert_string_equal(tjson_str(p, "data.bandit.recommended[0]"), "a");
    assert_true(json_is_true(tjson_get(p, "data.bandit.stop.fired")));
    assert_non_null(tjson_str(p, "data.bandit.stop.rule"));
    assert_int_equal(tjson_int(p, "experiment.bandits_done"), 1);
    char suffix[] = "/bandit.done/x";
    assert_string_equal(rc->req[1].event_id + strlen(rc->req[1].event_id) - strlen(suffix), suffix);
    json_decref(p);
    /* a manual stop: the stop alone, no bandit.done for y */
    patch_state(d, "mb", "{\"state\":\"stopped\"}");
    assert_int_equal(receiver_wait(rc, 3), 3);
    p = json_loads(rc->req[2].body, 0, NULL);
    assert_string_equal(tjson_str(p, "type"), "experiment.stopped");
    assert_string_equal(tjson_str(p, "data.stop_reason"), "manual");
    assert_int_equal(json_array_size(tjson_get(p, "data.bandits")), 2);
    json_decref(p);
    /* y's burn-in completes after the stop: no news */
    observe(d, "mb", "y", 1, 1);
    tsleep_ms(200);
    assert_int_equal(receiver_count(rc), 3);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

static void test_pause_resume_across_restart(void **state)
{
    (void)state;
    struct receiver *rc = receiver_start(0, 0);
    struct tdaemon *d = start(NULL);
    char hook[512];
    hook_json(hook, sizeof hook, rc, NULL);
    json_decref(texp_create(
        d,
        "{\"id\":\"pr\",\"arms\":[\"a\",\"b\"],\"fallback\":\"recommendation\",\"webhooks\":[%s]}",
        hook));
    patch_state(d, "pr", "{\"state\":\"paused\"}");
    patch_state(d, "pr", "{\"state\":\"paused\"}"); /* no change: no event */
    assert_int_equal(receiver_wait(rc, 1), 1);
    assert_int_equal(tdaemon_stop(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    json_decref(texp_assign(d, "pr", NULL)); /* paused: exploit, nothing to announce */
    patch_state(d, "pr", "{\"state\":\"running\"}");
    assert_int_equal(receiver_wait(rc, 2), 2);
    tsleep_ms(200);
    assert_int_equal(receiver_count(rc), 2);
    assert_string_equal(rc->req[0].type, "experiment.paused");
    assert_string_equal(rc->req[1].type, "experiment.resumed");
    assert_string_not_equal(rc->req[0].event_id, rc->req[1].event_id);
    json_t *l = wait_state(d, "pr", "delivered");
    assert_int_equal(json_array_size(json_object_get(l, "deliveries")), 2);
    json_decref(l);
    /* paging: one at a time, newest first */
    json_t *pg = tcall(d, "GET", "/v1/experiments/pr/webhooks?limit=1", NULL, 200);
    assert_string_equal(tjson_str(pg, "deliveries[0].type"), "experiment.resumed");
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/pr/webhooks?limit=1&before=%lld",
             tjson_int(pg, "next_before"));
    json_decref(pg);
    pg = tcall(d, "GET", path, NULL, 200);
    assert_string_equal(tjson_str(pg, "deliveries[0].type"), "experiment.paused");
    json_decref(pg);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

/* --- a receiver that never answers ------------------------------------------------- */

static void test_dead_receiver_blocks_nothing(void **state)
{
    (void)state;
    enum { CONC = 4, TOGGLES = 10, ASSIGN = 300 };
    struct receiver *rc = receiver_start(0, 1);
    static const char *const flags[] = {"--webhook-allow-loopback",
                                        "--webhook-timeout",
                                        "60000",
                                        "--webhook-concurrency",
                                        "4",
                                        NULL};
    struct tdaemon *d = start(flags);
    char hook[512];
    hook_json(hook, sizeof hook, rc, NULL);
    json_decref(texp_create(d, "{\"id\":\"slow\",\"arms\":[\"a\",\"b\"],\"webhooks\":[%s]}", hook));
    json_decref(texp_create(d, "{\"id\":\"fast\",\"arms\":[\"a\",\"b\"]}"));
    for (int i = 0; i < TOGGLES; i++) {
        patch_state(d, "slow", "{\"state\":\"paused\"}");
        patch_state(d, "slow", "{\"state\":\"running\"}");
    }
    /* every slot holds an attempt the receiver read and never answers */
    assert_int_equal(receiver_wait(rc, CONC), CONC);
    uint64_t t0 = clock_mono_ns();
    for (int i = 0; i < ASSIGN; i++) {
        json_t *a = texp_assign(d, i % 2 ? "fast" : "slow", NULL);
        assert_false(json_is_true(json_object_get(json_array_get(a, 0), "exploit")));
        json_decref(a);
    }
    double s = (double)(clock_mono_ns() - t0) / 1e9;
    /* all of it while no attempt has ended (each waits for its 60 s timeout) */
    assert_int_equal((long long)tmetric(d, "banditd_webhook_attempts_in_flight", NULL), CONC);
    assert_int_equal((long long)tmetric(d, "banditd_webhook_attempts_total", NULL), CONC);
    assert_int_equal((long long)tmetric(d, "banditd_webhook_outbox_pending", NULL), 2 * TOGGLES);
    assert_int_equal(receiver_count(rc), CONC);
    printf("# %d assignments in %.2f s (%.0f/s) while %d webhook attempts hung\n", ASSIGN, s,
           ASSIGN / s, CONC);
    /* and the daemon stops cleanly, abandoning them (pending: sent after a restart) */
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

/* More pending deliveries than the delivery thread keeps in memory (1024):
 * the rest wait on disk and go out, each once, as the first ones finish. */
static void test_backlog_beyond_memory(void **state)
{
    (void)state;
    enum { TOGGLES = 560, N = 2 * TOGGLES };
    struct receiver *rc = receiver_start(0, 1);
    static const char *const flags[] = {
        "--webhook-allow-loopback", "--webhook-timeout", "1000", "--webhook-backoff", "20", NULL};
    struct tdaemon *d = start(flags);
    char hook[512];
    hook_json(hook, sizeof hook, rc, NULL);
    json_decref(texp_create(d, "{\"id\":\"many\",\"arms\":[\"a\",\"b\"],\"webhooks\":[%s]}", hook));
    for (int i = 0; i < TOGGLES; i++) {
        patch_state(d, "many", "{\"state\":\"paused\"}");
        patch_state(d, "many", "{\"state\":\"running\"}");
    }
    assert_true(tmetric(d, "banditd_webhook_outbox_pending", NULL) > 1024);
    receiver_set_hang(rc, 0); /* the hung attempts time out and are retried */
    assert_int_equal(receiver_wait_ok(rc, N), N);
    for (int i = 0; i < 3000 && tmetric(d, "banditd_webhook_outbox_pending", NULL) > 0; i++)
        tsleep_ms(10);
    assert_int_equal((long long)tmetric(d, "banditd_webhook_outbox_pending", NULL), 0);
    assert_int_equal(
        (long long)tmetric(d, "banditd_webhook_deliveries_total", "result=\"delivered\""), N);
    tsleep_ms(200);
    pthread_mutex_lock(&rc->mu);
    int ok = rc->answered_ok;
    pthread_mutex_unlock(&rc->mu);
    assert_int_equal(ok, N); /* each delivered once */
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    receiver_stop(rc);
}

/* --- several daemons on one PostgreSQL ---------------------------------------------- */

/* Each of the n distinct event ids answered 2xx exactly once, nothing else
 * answered 2xx. */
static void assert_once_each(struct receiver *r, int n)
{
    int ok = 0, distinct = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        if (r->req[i].status != 200)
            continue;
        ok++;
        int first = 1;
        for (int j = 0; j < i; j++)
            if (r->req[j].status == 200 && strcmp(r->req[j].event_id, r->req[i].event_id) == 0)
                first = 0;
        distinct += first;
    }
    pthread_mutex_unlock(&r->mu);
    if (ok != n || distinct != n)
        fail_msg("%d deliveries answered 2xx for %d distinct events (want %d of each)", ok,
                 distinct, n);
}

static void test_two_daemons_deliver_once(void **state)
{
    (void)state;
    char uri[256], hook[512];
    struct receiver *rc = receiver_start(1000000, 0); /* 500 for now */
    tpg_new_db(uri, sizeof uri);
    const char *flags[] = {"--webhook-allow-loopback",
                           "--webhook-backoff",
                           "200",
                           "--webhook-backoff-max",
                           "400",
                           "--webhook-attempts",
                           "100",
                           "--db",
                           uri,
                           NULL};
    struct tdaemon *a = start(flags);
    hook_json(hook, sizeof hook, rc, NULL);
    json_decref(texp_create(
        a,
        "{\"id\":\"tw\",\"arms\":[\"a\",\"b\"],\"fallback\":\"recommendation\",\"webhooks\":[%s]}",
        hook));
    for (int i = 0; i < 2; i++) {
        patch_state(a, "tw", "{\"state\":\"paused\"}");
        patch_state(a, "tw", "{\"state\":\"running\"}");
    }
    assert_int_equal(receiver_wait(rc, 4) >= 4, 1); /* attempted, refused */
    /* B starts while they are pending: they are A's to deliver, not B's */
    struct tdaemon *b = start(flags);
    receiver_set_fail(rc, 0);
    assert_int_equal(receiver_wait_ok(rc, 4), 4);
    tsleep_ms(2500); /* B read the pending rows again meanwhile (every 2 s) */
    assert_once_each(rc, 4);

    /* A leaves two pending and dies: B delivers them, once */
    receiver_set_fail(rc, 1000000);
    int before = receiver_count(rc);
    patch_state(a, "tw", "{\"state\":\"paused\"}");
    patch_state(a, "tw", "{\"state\":\"running\"}");
    assert_int_equal(receiver_wait(rc, before + 2) >= before + 2, 1);
    assert_int_equal(tdaemon_kill(a), 0);
    receiver_set_fail(rc, 0);
    assert_int_equal(receiver_wait_ok(rc, 6), 6);
    tsleep_ms(2500);
    assert_once_each(rc, 6);
    assert_int_equal(tpg_count(uri, "SELECT count(*) FROM outbox WHERE state = 1"), 6);
    assert_int_equal(tdaemon_stop(b), 0);
    tdaemon_free(b);
    tdaemon_free(a);
    receiver_stop(rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_validation),
        cmocka_unit_test(test_stop_signed),
        cmocka_unit_test(test_retries_keep_the_event),
        cmocka_unit_test(test_gives_up_after_attempts),
        cmocka_unit_test(test_kill9_after_stop),
        cmocka_unit_test(test_bandits_and_burn_in),
        cmocka_unit_test(test_pause_resume_across_restart),
        cmocka_unit_test(test_dead_receiver_blocks_nothing),
        cmocka_unit_test(test_backlog_beyond_memory),
        cmocka_unit_test(test_two_daemons_deliver_once),
    };
    return cmocka_run_group_tests_name("webhooks", tests, NULL, NULL);
}
