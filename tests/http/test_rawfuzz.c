/*
 * test_rawfuzz.c — malformed requests over a raw socket (issue 13, "HTTP-
 * layer fuzzing"): valid requests of every route, mutated at random from a
 * fixed seed (bytes flipped, inserted, deleted, duplicated; CRLF turned
 * into LF; truncated; two requests spliced into one pipelined stream; a
 * header repeated or made huge; Content-Length and chunk sizes replaced by
 * odd numbers; control characters and stray percent signs in the path) and
 * sent as they are. After sending, the client half-closes its side: the
 * daemon must then answer or close within a few seconds — never hang —
 * and never crash (it answers /healthz every few requests, and shuts down
 * cleanly at the end: the ASan build turns any memory error into a
 * non-zero exit). Anything it answers starts with a valid status line.
 *
 * Generic on purpose: the request-smuggling regressions (Content-Length
 * against Transfer-Encoding, duplicate lengths) are the transport suite's;
 * this one only mutates. RAWFUZZ_N requests (300; `make test-crash`:
 * 5000), RAWFUZZ_SEED; a failure prints the seed and the request's index,
 * and RAWFUZZ_DUMP=1 prints every request sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"

#define MAX_REQ 65536
#define TIMEOUT_S 1   /* the daemon's --timeout */
#define GRACE_MS 4000 /* beyond it, before a silent connection is a hang */
#define FIRST_MS 300  /* wait for a first byte before setting a request aside */
#define QUIET_MS 20   /* an answer is over after this much silence */
#define MAX_PENDING 8 /* requests set aside at once (a per-client cap may be low) */

/* Valid requests of the API; ID is replaced by an assignment id. */
static const char *const g_seeds[] = {
    "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /v1/experiments?limit=5 HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n",
    "GET /v1/experiments/f/status HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /v1/experiments/f/export HTTP/1.1\r\nHost: x\r\n\r\n",
    "POST /v1/experiments/f/assignments HTTP/1.1\r\nHost: x\r\nContent-Type: "
    "application/json\r\nContent-Length: 17\r\n\r\n{\"unit\":\"u-1234\"}",
    "POST /v1/experiments/f/rewards HTTP/1.1\r\nHost: x\r\nContent-Type: "
    "application/json\r\nContent-Length: 41\r\n\r\n{\"assignment_id\":\"zz-1\",\"reward\":0.5}   ",
    "PATCH /v1/experiments/f HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Content-Length: 19\r\n\r\n{\"state\":\"running\"}",
    "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n\r\n10\r\n{\"id\":\"g\",\"arms\"\r\n"
    "d\r\n:[\"a\",\"b\"]}  \r\n0\r\n\r\n",
    "DELETE /v1/experiments/nope HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "GET /v1/experiments/f/history?since=0 HTTP/1.1\r\nHost: x\r\n\r\n",
    "OPTIONS /v1/experiments HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /openapi.json HTTP/1.0\r\n\r\n",
};
#define NSEEDS (sizeof g_seeds / sizeof g_seeds[0])

struct req {
    char b[MAX_REQ];
    size_t n;
};

static size_t pick(struct trng *g, size_t n)
{
    return n == 0 ? 0 : (size_t)(trng_next(g) % n);
}

static void put(struct req *r, const char *s)
{
    size_t len = strlen(s);
    if (len > MAX_REQ - r->n)
        len = MAX_REQ - r->n;
    memcpy(r->b + r->n, s, len);
    r->n += len;
}

/* Insert len bytes at position at. */
static void insert(struct req *r, size_t at, const char *s, size_t len)
{
    if (at > r->n)
        at = r->n;
    if (len > MAX_REQ - r->n)
        len = MAX_REQ - r->n;
    memmove(r->b + at + len, r->b + at, r->n - at);
    memcpy(r->b + at, s, len);
    r->n += len;
}

static void erase(struct req *r, size_t at, size_t len)
{
    if (at + len > r->n)
        len = r->n - at;
    memmove(r->b + at, r->b + at + len, r->n - at - len);
    r->n -= len;
}

/* Where the second line starts (after the request line), or the end. */
static size_t after_first_line(const struct req *r)
{
    for (size_t i = 0; i + 1 < r->n; i++)
        if (r->b[i] == '\r' && r->b[i + 1] == '\n')
            return i + 2;
    return r->n;
}

/* Replace the first occurrence of what by with. */
static void replace(struct req *r, const char *what, const char *with)
{
    size_t wl = strlen(what);
    for (size_t i = 0; i + wl <= r->n; i++)
        if (memcmp(r->b + i, what, wl) == 0) {
            erase(r, i, wl);
            insert(r, i, with, strlen(with));
            return;
        }
}

static const char *const g_numbers[] = {"0",
                                        "-1",
                                        "1",
                                        "99999999999999999999",
                                        "18446744073709551616",
                                        "0x10",
                                        " 5",
                                        "5 ",
                                        "4294967296",
                                        "+3",
                                        "1e3",
                                        "007",
                                        "ffffffffffffffff",
                                        "",
                                        "\t7"};

/* One mutation of r. */
static void mutate(struct req *r, struct trng *g)
{
    static const char junk[] = "\0\r\n\t %:;/?#[]@!$&'()*+,=\"\\\x7f\x80\xff{}<>";
    switch (pick(g, 14)) {
    case 0: /* flip bits */
        for (int i = 0, k = 1 + (int)pick(g, 4); i < k && r->n; i++) {
            uint8_t *u = (uint8_t *)&r->b[pick(g, r->n)];
            *u ^= (uint8_t)(1u << pick(g, 8));
        }
        break;
    case 1: { /* insert junk bytes */
        char s[8];
        size_t k = 1 + pick(g, sizeof s);
        for (size_t i = 0; i < k; i++)
            s[i] = junk[pick(g, sizeof junk - 1)];
        insert(r, pick(g, r->n + 1), s, k);
        break;
    }
    case 2: /* delete a range */
        if (r->n)
            erase(r, pick(g, r->n), 1 + pick(g, 16));
        break;
    case 3: { /* duplicate a range */
        if (r->n == 0)
            break;
        size_t at = pick(g, r->n), len = 1 + pick(g, 64);
        if (at + len > r->n)
            len = r->n - at;
        char tmp[64];
        memcpy(tmp, r->b + at, len);
        insert(r, at, tmp, len);
        break;
    }
    case 4: /* CRLF → LF or CR */
        replace(r, "\r\n", pick(g, 2) ? "\n" : "\r");
        break;
    case 5: /* truncate */
        r->n = pick(g, r->n + 1);
        break;
    case 6: { /* splice another request after it (pipelining) */
        const char *o = g_seeds[pick(g, NSEEDS)];
        put(r, o);
        break;
    }
    case 7: { /* a header repeated */
        const char *h = pick(g, 2) ? "Content-Type: application/json\r\n" : "Host: y\r\n";
        size_t at = after_first_line(r);
        for (int i = 0, k = 1 + (int)pick(g, 50); i < k; i++)
            insert(r, at, h, strlen(h));
        break;
    }
    case 8: { /* a huge header value */
        size_t len = 1 + pick(g, 20000);
        char *v = malloc(len);
        if (v == NULL)
            break;
        memset(v, 'a' + (int)pick(g, 26), len);
        size_t at = after_first_line(r);
        insert(r, at, "\r\n", 2);
        insert(r, at, v, len);
        insert(r, at, "X-Big: ", 7);
        free(v);
        break;
    }
    case 9: { /* Content-Length: odd numbers */
        char h[64];
        snprintf(h, sizeof h, "Content-Length: %s", g_numbers[pick(g, 15)]);
        for (size_t i = 0; i + 16 <= r->n; i++)
            if (strncasecmp(r->b + i, "Content-Length: ", 16) == 0) {
                size_t e = i;
                while (e < r->n && r->b[e] != '\r')
                    e++;
                erase(r, i, e - i);
                insert(r, i, h, strlen(h));
                break;
            }
        break;
    }
    case 10: /* chunk sizes */
        replace(r, "\r\n10\r\n", pick(g, 2) ? "\r\nfffffffffffffffff\r\n" : "\r\n-1\r\n");
        replace(r, "\r\nd\r\n", pick(g, 2) ? "\r\nd;ext=\"\r\n" : "\r\n 0x1\r\n");
        break;
    case 11: { /* the path: control characters, stray percent signs */
        static const char *const bits[] = {"%00", "%",      "%zz",  "%0",     "\x01", "/..",
                                           "//",  "%2e%2e", "\x7f", "%ff%fe", "?&&=", "#"};
        for (size_t i = 0; i < r->n; i++)
            if (r->b[i] == '/') {
                const char *b = bits[pick(g, 12)];
                insert(r, i + 1 + pick(g, 8), b, strlen(b));
                break;
            }
        break;
    }
    case 12: { /* the method or the version */
        static const char *const m[] = {"GET", "G\x01T",          "",         "PUT",
                                        "get", "PATCHPATCHPATCH", "HTTP/1.1", "CONNECT"};
        size_t sp = 0;
        while (sp < r->n && r->b[sp] != ' ')
            sp++;
        erase(r, 0, sp);
        const char *method = m[pick(g, 8)];
        insert(r, 0, method, strlen(method));
        if (pick(g, 2))
            replace(r, "HTTP/1.1", pick(g, 2) ? "HTTP/9.9" : "HTTP/1.1 extra");
        break;
    }
    default: /* a header line without a colon, or a folded one */
        replace(r, "\r\nHost: x\r\n",
                pick(g, 2) ? "\r\nHost x\r\n" : "\r\nHost: x\r\n  folded\r\n");
        break;
    }
}

/* A request whose answer (or close) has not come yet. */
struct pending {
    int fd;
    long index;
    struct timespec sent;
};

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Read from fd until the answer has come and stopped (QUIET_MS of
 * silence), the daemon closes, or wait_ms passed with nothing. Returns 1
 * answered (*status from the status line, −1 if none valid), 0 closed
 * without an answer, 2 nothing yet. */
static int await(int fd, long wait_ms, long *status)
{
    char buf[4096], head[32] = "";
    size_t got = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = 2;
    for (;;) {
        long left = (got > 0 ? QUIET_MS : wait_ms) - ms_since(&t0);
        if (left <= 0) {
            rc = got > 0 ? 1 : 2;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = got > 0 ? 1 : 0;
            break;
        }
        if (got < sizeof head - 1) {
            size_t k = (size_t)n < sizeof head - 1 - got ? (size_t)n : sizeof head - 1 - got;
            memcpy(head + got, buf, k);
            head[got + k] = '\0';
        }
        got += (size_t)n;
        clock_gettime(CLOCK_MONOTONIC, &t0); /* quiet time counts from the last byte */
    }
    *status = 0;
    if (rc == 1) {
        char *end = NULL;
        long v = strncmp(head, "HTTP/1.", 7) == 0 ? strtol(head + 9, &end, 10) : 0;
        *status = end != NULL && end == head + 12 ? v : -1;
    }
    return rc;
}

/* Connect, send r, half-close. The socket, or −1. */
static int send_req(uint16_t port, const struct req *r)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    /* the daemon may close before reading it all: EPIPE is an answer too */
    for (size_t off = 0; off < r->n;) {
        ssize_t w = send(fd, r->b + off, r->n - off, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    return fd;
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v != NULL && *v ? strtol(v, NULL, 10) : def;
}

static void test_mutated_requests(void **state)
{
    (void)state;
    long n = env_long("RAWFUZZ_N", 300);
    uint64_t seed = (uint64_t)env_long("RAWFUZZ_SEED", 20261124);
    int dump = env_long("RAWFUZZ_DUMP", 0) != 0;
    char tmo[16];
    snprintf(tmo, sizeof tmo, "%d", TIMEOUT_S);
    const char *extra[] = {"--timeout", tmo, NULL};
    struct tdaemon *d = tdaemon_start(extra);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"f\",\"arms\":[\"a\",\"b\"]}"));
    struct trng g;
    trng_seed(&g, seed);
    struct req *r = malloc(sizeof *r);
    assert_non_null(r);
    long answered = 0, closed = 0, late = 0, by_class[6] = {0};
    struct pending pend[MAX_PENDING];
    size_t npend = 0;
    for (long i = 0; i <= n; i++) {
        /* Requests still waiting for more input must be closed by the
         * daemon's --timeout: the oldest is waited for when the list is
         * full, all of them at the end. */
        while (npend > 0 && (npend == MAX_PENDING || i == n)) {
            long status = 0, wait = TIMEOUT_S * 1000 + GRACE_MS - ms_since(&pend[0].sent);
            int rc = await(pend[0].fd, wait > 0 ? wait : 1, &status);
            if (rc == 2)
                fail_msg("seed %llu, request %ld: neither answered nor closed %d s after it was "
                         "sent (--timeout %d): a hang",
                         (unsigned long long)seed, pend[0].index, TIMEOUT_S + GRACE_MS / 1000,
                         TIMEOUT_S);
            if (rc == 1 && (status < 100 || status > 599))
                fail_msg("seed %llu, request %ld: the answer has no valid status line",
                         (unsigned long long)seed, pend[0].index);
            late++;
            close(pend[0].fd);
            memmove(pend, pend + 1, --npend * sizeof *pend);
        }
        if (i == n)
            break;
        r->n = 0;
        put(r, g_seeds[pick(&g, NSEEDS)]);
        for (int k = 0, m = 1 + (int)pick(&g, 4); k < m; k++)
            mutate(r, &g);
        if (dump)
            printf("# %ld: %.*s\n", i, (int)(r->n > 300 ? 300 : r->n), r->b);
        struct timespec sent;
        clock_gettime(CLOCK_MONOTONIC, &sent);
        int fd = send_req(tdaemon_port(d), r);
        if (fd < 0)
            fail_msg("seed %llu, request %ld: cannot connect: the daemon died?",
                     (unsigned long long)seed, i);
        long status = 0;
        int rc = await(fd, FIRST_MS, &status);
        if (rc == 2) {
            pend[npend].fd = fd;
            pend[npend].index = i;
            pend[npend].sent = sent;
            npend++;
            continue;
        }
        close(fd);
        if (rc == 1 && (status < 100 || status > 599))
            fail_msg("seed %llu, request %ld: the answer has no valid status line",
                     (unsigned long long)seed, i);
        answered += rc == 1;
        closed += rc == 0;
        if (rc == 1)
            by_class[status / 100]++;
        if (rc == 1 && status >= 500)
            printf("# request %ld answered %ld: %.*s\n", i, status,
                   (int)strcspn(r->b, "\r\n") < 120 ? (int)strcspn(r->b, "\r\n") : 120, r->b);
        if (i % 25 == 24) {
            struct tresp *h = treq(d, "GET", "/healthz", NULL, NULL);
            if (h->status != 200)
                fail_msg("seed %llu, after request %ld: /healthz %ld", (unsigned long long)seed, i,
                         h->status);
            tresp_free(h);
        }
    }
    free(r);
    printf("# %ld mutated requests (seed %llu): %ld answered at once (%ld 2xx, %ld 3xx, %ld 4xx, "
           "%ld 5xx), %ld closed without an answer, %ld waited for more input until --timeout\n",
           n, (unsigned long long)seed, answered, by_class[2], by_class[3], by_class[4],
           by_class[5], closed, late);
    assert_true(answered > 0);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutated_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
