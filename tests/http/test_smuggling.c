/*
 * test_smuggling.c — the HTTP layer itself, over plain sockets (issue 13,
 * "HTTP-layer fuzzing and a smuggling suite"): requests no client library
 * would send. Every answer must be one well-formed HTTP/1.1 response, and
 * problem+json when it is an error, including the ones libmicrohttpd
 * produces by itself (a malformed request line, 505, 414, 431, a broken
 * chunk); a request whose body length is ambiguous (Content-Length with
 * Transfer-Encoding, Content-Length twice, "Content-Length :", a transfer
 * coding other than chunked) is refused with 400 before its body is read
 * and its connection closed, so nothing hidden in it reaches a handler;
 * pipelined requests are each answered once, in order; a control
 * character in the target, raw or percent-encoded, is a 400 naming the
 * field (DELETE /v1/experiments/e1%00zzz deleted e1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"
#include "tests/support/raw.h"

#define WAIT_S 20.0 /* generous: an answer comes in milliseconds */
#define MAX_BODY 65536

static int group_setup(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-body", "65536", NULL};
    return tgroup_start(extra);
}

static struct rawc *dial(void)
{
    struct rawc *c = rawc_dial(tdaemon_port(tgroup_d), NULL);
    assert_non_null(c);
    return c;
}

/* Whether experiment id exists (asked through the normal client). */
static int exists(const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    struct tresp *r = treq(tgroup_d, "GET", path, NULL, NULL);
    long s = r->status;
    tresp_free(r);
    if (s != 200 && s != 404)
        fail_msg("GET %s: %ld", path, s);
    return s == 200;
}

/* Send req on a fresh connection: one well-formed answer of status want
 * (problem+json when an error), nothing after it, and, when closes, the
 * connection closed after it. */
static void expect(const char *req, size_t len, int want, int closes)
{
    struct rawc *c = dial();
    assert_int_equal(rawc_send_n(c, req, len), 0);
    struct rawr *r = rawc_read(c, WAIT_S);
    if (r->status != want)
        fail_msg("%.60s…: answered %d (%s), expected %d: %s", req, r->status, r->error, want,
                 r->body ? r->body : "");
    assert_raw_ok(r);
    if (closes) {
        assert_true(r->closes);
        assert_true(rawc_closed_within(c, WAIT_S));
    }
    assert_int_equal(rawc_pending(c), 0);
    rawr_free(r);
    rawc_close(c);
}

#define EXPECT(req, want, closes) expect((req), sizeof(req) - 1, (want), (closes))

/* A create of experiment id, a request of its own (to hide in bodies),
 * appended to buf. */
static void add_create(char *buf, size_t len, const char *id)
{
    char body[128];
    int bn = snprintf(body, sizeof body, "{\"id\":\"%s\",\"arms\":[\"a\",\"b\"]}", id);
    size_t used = strlen(buf);
    int n = snprintf(buf + used, len - used,
                     "POST /v1/experiments HTTP/1.1\r\nHost: x\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     bn, body);
    assert_true(n > 0 && (size_t)n < len - used);
}

/* --- ambiguous framing --------------------------------------------------------- */

static void test_ambiguous_length_is_refused(void **state)
{
    (void)state;
    /* Each would let a front end and this server disagree on where the
     * body ends, so that what one takes for body the other takes for the
     * next request: here a create of "smuggled". Refused before the body,
     * connection closed: neither reading creates anything. */
    static const char *const heads[] = {
        /* Content-Length and chunked */
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        /* two different lengths, and the same twice */
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 0\r\nContent-Length: 5\r\n\r\n",
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
        /* whitespace before the colon: no Content-Length to a lax parser */
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length : 5\r\n\r\n",
        /* codings other than chunked alone, read to the end by libmicrohttpd */
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n",
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
        "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Transfer-Encoding: chunked\r\n\r\n",
        /* Transfer-Encoding means nothing in HTTP/1.0 */
        "POST /v1/experiments HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        char req[1024];
        snprintf(req, sizeof req, "%s0\r\n\r\n", heads[i]);
        add_create(req, sizeof req, "smuggled");
        expect(req, strlen(req), 400, 1);
        assert_false(exists("smuggled"));
    }
}

/* Pipelined after a refused request, a request is never read. */
static void test_nothing_after_a_refusal(void **state)
{
    (void)state;
    struct rawc *c = dial();
    char req[1024] = "POST /v1/experiments HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    add_create(req, sizeof req, "after-refusal");
    assert_int_equal(rawc_send(c, req), 0);
    struct rawr *r = rawc_read(c, WAIT_S);
    assert_raw_ok(r);
    assert_int_equal(r->status, 400);
    rawr_free(r);
    assert_true(rawc_closed_within(c, WAIT_S));
    rawc_close(c);
    assert_false(exists("after-refusal"));
}

/* --- what libmicrohttpd answers by itself, and malformed heads ------------------------ */

static void test_malformed_heads(void **state)
{
    (void)state;
    EXPECT("GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, 1);
    EXPECT("GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n", 505, 1);
    EXPECT("GET /healthz FOO/1.1\r\nHost: x\r\n\r\n", 400, 1);
    EXPECT("GET /healthz HTTP/1.1 x\r\nHost: x\r\n\r\n", 400, 1);
    EXPECT("GET /healthz\r\nHost: x\r\n\r\n", 400, 1);
    EXPECT("GET /healthz HTTP/1.1\r\n\r\n", 400, 1);                       /* no Host */
    EXPECT("GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, 1); /* two */
    EXPECT("GET /healthz HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, 1); /* no colon */
    EXPECT("GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400, 1);
    EXPECT("GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\x01z\r\n\r\n", 400, 1); /* control */
    EXPECT("GET /healthz HTTP/1.1\rHost: x\r\n\r\n", 400, 1);                /* bare CR */
    /* Content-Length values libmicrohttpd cannot take: it answers from its
     * header check, where version 0.9.75 writes its header block twice
     * unless we answer ourselves (http/mhderr.c) */
    static const char *const lengths[] = {"+5", "5 5", "0x10", "-1", "1e3", ""};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        char req[256];
        int n = snprintf(req, sizeof req,
                         "POST /v1/experiments HTTP/1.1\r\nHost: x\r\n"
                         "Content-Type: application/json\r\nContent-Length: %s\r\n\r\n{}",
                         lengths[i]);
        expect(req, (size_t)n, 400, 1);
    }
    EXPECT("POST /v1/experiments HTTP/1.1\r\nHost: x\r\n"
           "Content-Length: 99999999999999999999999\r\n\r\n",
           413, 1);
    /* beyond libmicrohttpd's buffer (32 KiB): the target, the fields */
    static char big[48 * 1024];
    int n = snprintf(big, sizeof big, "GET /");
    memset(big + n, 'a', (size_t)40 * 1024);
    n += 40 * 1024;
    n += snprintf(big + n, sizeof big - (size_t)n, " HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(big, (size_t)n, 414, 1);
    n = snprintf(big, sizeof big, "GET /healthz HTTP/1.1\r\nHost: x\r\nX: ");
    memset(big + n, 'a', (size_t)40 * 1024);
    n += 40 * 1024;
    n += snprintf(big + n, sizeof big - (size_t)n, "\r\n\r\n");
    expect(big, (size_t)n, 431, 1);
    /* still serving */
    EXPECT("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 200, 1);
}

/* A line with no space is no request line: libmicrohttpd closes without an
 * answer (no hook of ours runs before); never a half answer. */
static void test_not_http_is_closed(void **state)
{
    (void)state;
    struct rawc *c = dial();
    assert_int_equal(rawc_send(c, "GARBAGE\r\n\r\n"), 0);
    struct rawr *r = rawc_read(c, WAIT_S);
    assert_int_equal(r->status, 0);
    assert_string_equal(r->error, "closed");
    rawr_free(r);
    rawc_close(c);
}

/* --- chunked bodies ----------------------------------------------------------------- */

static void test_chunked_bodies(void **state)
{
    (void)state;
    /* well formed, with a chunk extension and a trailer: accepted */
    EXPECT("POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\n"
           "10;ext=1\r\n{\"id\":\"chunked\",\r\n"
           "11\r\n\"arms\":[\"a\",\"b\"]}\r\n"
           "0\r\nTrailer: t\r\n\r\n",
           201, 0);
    assert_true(exists("chunked"));
    static const char *const bad[][2] = {
        {"zz\r\n{}\r\n0\r\n\r\n", "400"},                   /* not hex */
        {"-2\r\n{}\r\n0\r\n\r\n", "400"},                   /* negative */
        {"2\r\n{}xx\r\n0\r\n\r\n", "400"},                  /* longer than said */
        {"FFFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n", "413"}, /* overflows 64 bits */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char req[512];
        int n = snprintf(req, sizeof req,
                         "POST /v1/experiments HTTP/1.1\r\nHost: x\r\n"
                         "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%s",
                         bad[i][0]);
        expect(req, (size_t)n, (int)strtol(bad[i][1], NULL, 10), 1);
    }
    /* over --max-body in chunks: 413, counted as it arrives */
    struct rawc *c = dial();
    assert_int_equal(rawc_send(c, "POST /v1/experiments HTTP/1.1\r\nHost: x\r\n"
                                  "Content-Type: application/json\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"),
                     0);
    static char chunk[8192 + 16];
    int n = snprintf(chunk, sizeof chunk, "2000\r\n");
    memset(chunk + n, ' ', 8192);
    chunk[n + 8192] = '\r';
    chunk[n + 8193] = '\n';
    for (int i = 0; i < MAX_BODY / 8192 + 2; i++)
        assert_int_equal(rawc_send_n(c, chunk, (size_t)n + 8192 + 2), 0);
    assert_int_equal(rawc_send(c, "0\r\n\r\n"), 0);
    struct rawr *r = rawc_read(c, WAIT_S);
    assert_raw_ok(r);
    assert_int_equal(r->status, 413);
    rawr_free(r);
    rawc_close(c);
}

/* --- pipelining ------------------------------------------------------------------------ */

/* Requests sent back to back in one write are each handled once, in order,
 * and the connection stays usable after an ordinary error. */
static void test_pipelined_once_each(void **state)
{
    (void)state;
    struct rawc *c = dial();
    char req[4096] = "";
    add_create(req, sizeof req, "piped");
    add_create(req, sizeof req, "piped");
    assert_int_equal(rawc_send(c, req), 0);
    assert_int_equal(rawc_send(c,
                               "GET /v1/experiments/piped HTTP/1.1\r\nHost: x\r\n\r\n"
                               "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                               "POST /v1/experiments/piped/assignments HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
                               "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /v1/experiments/piped/status HTTP/1.1\r\nHost: x\r\n"
                               "Connection: close\r\n\r\n"),
                     0);
    static const int want[] = {201, 409, 200, 404, 201, 200, 200};
    json_t *status = NULL;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct rawr *r = i == 5 ? rawc_read_head(c, WAIT_S) : rawc_read(c, WAIT_S);
        assert_raw_ok(r);
        if (r->status != want[i])
            fail_msg("answer %zu: %d, expected %d: %s", i, r->status, want[i], r->body);
        if (i == 6)
            status = json_incref(r->json);
        rawr_free(r);
    }
    assert_true(rawc_closed_within(c, WAIT_S));
    rawc_close(c);
    /* one assignment: the pipelined POST ran once */
    assert_non_null(status);
    assert_int_equal(tjson_int(status, "handed_out"), 1);
    json_decref(status);
}

/* --- control characters in the target ------------------------------------------------ */

static void test_control_characters_in_target(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"e1\",\"arms\":[\"a\",\"b\"]}"));
    /* through a real client: the bytes go out as written */
    static const char *const paths[] = {
        "/v1/experiments/e1%00zzz",       "/v1/experiments/e1%00", "/v1/experiments/e1%0a",
        "/v1/experiments/e1%0D%0AX:%20y", "/v1/experiments/e1%7f", "/v1/experiments/e1%1F",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct tresp *r = treq(tgroup_d, "DELETE", paths[i], NULL, NULL);
        if (r->status != 400 || !tproblem_has_field(r, "path"))
            fail_msg("DELETE %s: %ld %s", paths[i], r->status, r->body);
        assert_invalid(r, "path");
        tresp_free(r);
        assert_true(exists("e1"));
    }
    struct tresp *r = treq(tgroup_d, "GET", "/v1/experiments/e1/export?format=csv%00", NULL, NULL);
    assert_invalid(r, "query");
    tresp_free(r);
    /* raw, and a space inside the target */
    EXPECT("DELETE /v1/experiments/e1\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400, 0);
    EXPECT("DELETE /v1/experiments/e1 zzz HTTP/1.1\r\nHost: x\r\n\r\n", 400, 0);
    assert_true(exists("e1"));
    /* an encoded "%" is no control character: an id that does not exist */
    r = treq(tgroup_d, "DELETE", "/v1/experiments/e1%2500", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    r = treq(tgroup_d, "DELETE", "/v1/experiments/e1", NULL, NULL);
    assert_status(r, 204);
    tresp_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ambiguous_length_is_refused),
        cmocka_unit_test(test_nothing_after_a_refusal),
        cmocka_unit_test(test_malformed_heads),
        cmocka_unit_test(test_not_http_is_closed),
        cmocka_unit_test(test_chunked_bodies),
        cmocka_unit_test(test_pipelined_once_each),
        cmocka_unit_test(test_control_characters_in_target),
    };
    return cmocka_run_group_tests(tests, group_setup, tgroup_teardown);
}
