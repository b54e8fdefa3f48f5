/*
 * test_limits.c — every configurable limit is enforced by the real daemon,
 * set through a config file (which checks the file reaches the daemon too):
 * body size (with and without Content-Length), arms per bandit, bandits per
 * experiment, reward and observation batch sizes, assignments per request,
 * outstanding assignments, experiments, connections, and the per-connection
 * timeout that keeps a stalled client from holding a connection.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/support/harness.h"

/* Start with a config file holding text (plus any extra flags). */
static void start_with_config(struct tdaemon *d, const char *text, const char *const *extra)
{
    char conf[600];
    snprintf(conf, sizeof conf, "%s/limits.conf", tdaemon_dir(d));
    FILE *c = fopen(conf, "w");
    assert_non_null(c);
    fputs(text, c);
    assert_int_equal(fclose(c), 0);
    const char *args[16] = {"--config", conf};
    size_t n = 2;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 15; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    tdaemon_up(d, args, 0);
}

/* A 400 whose errors[] names field (exactly). */
static void expect_field_error(struct tdaemon *d, const char *path, const char *body,
                               const char *field)
{
    json_t *j = tcall(d, "POST", path, body, 400);
    json_t *errors = json_object_get(j, "errors");
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(errors, i, e) found |=
        strcmp(json_string_value(json_object_get(e, "field")), field) == 0;
    if (!found) {
        char *s = json_dumps(j, 0);
        fail_msg("POST %s: no error for field %s in %s", path, field, s);
    }
    json_decref(j);
}

/* --- raw sockets, for what a client library hides -------------------------------- */

static int tcp_connect(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        assert_true(w > 0);
        s += w;
        n -= (size_t)w;
    }
}

/* Read what arrives within ms into buf (NUL-terminated). Returns bytes read
 * (> 0), 0 when the peer closed with nothing sent, −1 on timeout with nothing,
 * −2 on reset. Stops after the first chunk of data. */
static int recv_some(int fd, char *buf, size_t len, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    buf[0] = '\0';
    int r = poll(&p, 1, ms);
    if (r <= 0)
        return -1;
    ssize_t n = recv(fd, buf, len - 1, 0);
    if (n < 0)
        return errno == ECONNRESET ? -2 : -1;
    buf[n] = '\0';
    return (int)n;
}

static const char get_healthz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

/* --- tests ------------------------------------------------------------------------ */

static const char limits_conf[] = "# small limits for the test\n"
                                  "max-body = 4096\n"
                                  "max-arms = 3\n"
                                  "max-bandits = 2\n"
                                  "max-batch = 2\n"
                                  "max-count = 2\n"
                                  "max-pending = 3\n"
                                  "max-experiments = 2\n";

static void test_body_size(void **state)
{
    struct tdaemon *d = *state;
    start_with_config(d, limits_conf, NULL);
    /* Just under the limit is fine (a valid create padded with a long name
     * would be refused for the name, so pad with whitespace). */
    char *body = malloc(8192);
    assert_non_null(body);
    const char *exp = "{\"id\":\"a\",\"arms\":[\"x\",\"y\"]}";
    size_t n = strlen(exp);
    memset(body, ' ', 4096);
    memcpy(body, exp, n);
    body[4096] = '\0';
    json_decref(tcall(d, "POST", "/v1/experiments", body, 201));
    /* One byte over: 413, as problem+json. */
    memset(body, ' ', 4097);
    memcpy(body, "{\"id\":\"b\",\"arms\":[\"x\",\"y\"]}", n);
    body[4097] = '\0';
    json_t *p = tcall(d, "POST", "/v1/experiments", body, 413);
    assert_string_equal(json_string_value(json_object_get(p, "type")),
                        "urn:banditd:problem:too-large");
    json_decref(p);
    json_decref(tcall(d, "GET", "/v1/experiments/b", NULL, 404));
    /* Chunked (no Content-Length): counted as it arrives. */
    int fd = tcp_connect(tdaemon_port(d));
    char head[256];
    snprintf(head, sizeof head,
             "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    send_all(fd, head, strlen(head));
    for (int i = 0; i < 5; i++) {
        char chunk[1100];
        int l = snprintf(chunk, sizeof chunk, "400\r\n");
        memset(chunk + l, ' ', 1024);
        // NOLINTNEXTLINE(bugprone-not-null-terminated-result): bytes for send_all, not a string
        memcpy(chunk + l + 1024, "\r\n", 2);
        send_all(fd, chunk, (size_t)l + 1026);
    }
    send_all(fd, "0\r\n\r\n", 5);
    char resp[2048];
    assert_true(recv_some(fd, resp, sizeof resp, 10000) > 0);
    assert_memory_equal(resp, "HTTP/1.1 413", 12);
    close(fd);
    free(body);
    assert_int_equal(tdaemon_stop(d), 0);
}

static void test_arms_bandits_batches_count(void **state)
{
    struct tdaemon *d = *state;
    start_with_config(d, limits_conf, NULL);
    expect_field_error(d, "/v1/experiments", "{\"arms\":[\"a\",\"b\",\"c\",\"d\"]}", "arms");
    expect_field_error(d, "/v1/experiments",
                       "{\"bandits\":[{\"id\":\"p\",\"arms\":[\"a\",\"b\",\"c\",\"d\"]}]}",
                       "bandits[0].arms");
    expect_field_error(
        d, "/v1/experiments",
        "{\"bandits\":[{\"id\":\"p\",\"arms\":[\"a\",\"b\"]},"
        "{\"id\":\"q\",\"arms\":[\"a\",\"b\"]},{\"id\":\"r\",\"arms\":[\"a\",\"b\"]}]}",
        "bandits");
    /* At the limits: accepted. */
    json_decref(tcall(d, "POST", "/v1/experiments",
                      "{\"id\":\"e\",\"bandits\":[{\"id\":\"p\",\"arms\":[\"a\",\"b\",\"c\"]},"
                      "{\"id\":\"q\",\"arms\":[\"a\",\"b\",\"c\"]}]}",
                      201));
    /* Assignments per request. */
    expect_field_error(d, "/v1/experiments/e/assignments", "{\"bandit\":\"p\",\"count\":3}",
                       "count");
    json_t *as =
        tcall(d, "POST", "/v1/experiments/e/assignments", "{\"bandit\":\"p\",\"count\":2}", 201);
    json_t *list = json_object_get(as, "assignments");
    assert_int_equal(json_array_size(list), 2);
    /* Batches: 3 items refused whole, 2 accepted. */
    const char *id0 = json_string_value(json_object_get(json_array_get(list, 0), "id"));
    const char *id1 = json_string_value(json_object_get(json_array_get(list, 1), "id"));
    char body[512];
    snprintf(body, sizeof body,
             "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1},{\"assignment_id\":\"%s\","
             "\"reward\":1},{\"assignment_id\":\"%s\",\"reward\":1}]}",
             id0, id1, id0);
    expect_field_error(d, "/v1/experiments/e/rewards", body, "rewards");
    snprintf(body, sizeof body,
             "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1},{\"assignment_id\":\"%s\","
             "\"reward\":0}]}",
             id0, id1);
    json_t *rr = tcall(d, "POST", "/v1/experiments/e/rewards", body, 200);
    assert_int_equal(json_integer_value(json_object_get(rr, "accepted")), 2);
    json_decref(rr);
    json_decref(as);
    expect_field_error(d, "/v1/experiments/e/observations",
                       "{\"observations\":[{\"bandit\":\"p\",\"arm\":\"a\",\"reward\":1},"
                       "{\"bandit\":\"p\",\"arm\":\"a\",\"reward\":1},"
                       "{\"bandit\":\"p\",\"arm\":\"a\",\"reward\":1}]}",
                       "observations");
    json_decref(tcall(d, "POST", "/v1/experiments/e/observations",
                      "{\"observations\":[{\"bandit\":\"p\",\"arm\":\"a\",\"reward\":1},"
                      "{\"bandit\":\"q\",\"arm\":\"b\",\"reward\":0}]}",
                      200));
    assert_int_equal(tdaemon_stop(d), 0);
}

static void test_pending_and_experiments(void **state)
{
    struct tdaemon *d = *state;
    start_with_config(d, limits_conf, NULL);
    json_decref(
        tcall(d, "POST", "/v1/experiments", "{\"id\":\"one\",\"arms\":[\"a\",\"b\"]}", 201));
    json_decref(
        tcall(d, "POST", "/v1/experiments", "{\"id\":\"two\",\"arms\":[\"a\",\"b\"]}", 201));
    json_t *p =
        tcall(d, "POST", "/v1/experiments", "{\"id\":\"three\",\"arms\":[\"a\",\"b\"]}", 429);
    assert_string_equal(json_string_value(json_object_get(p, "type")),
                        "urn:banditd:problem:too-many");
    json_decref(p);
    json_decref(tcall(d, "DELETE", "/v1/experiments/two", NULL, 204));
    json_decref(
        tcall(d, "POST", "/v1/experiments", "{\"id\":\"three\",\"arms\":[\"a\",\"b\"]}", 201));
    /* Outstanding assignments: 3 allowed, the 4th waits for a reward. */
    json_t *as = tcall(d, "POST", "/v1/experiments/one/assignments", "{\"count\":2}", 201);
    json_decref(tcall(d, "POST", "/v1/experiments/one/assignments", "{}", 201));
    json_decref(tcall(d, "POST", "/v1/experiments/one/assignments", "{}", 429));
    /* Another experiment has its own allowance. */
    json_decref(tcall(d, "POST", "/v1/experiments/three/assignments", "{}", 201));
    char body[256];
    snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}",
             json_string_value(
                 json_object_get(json_array_get(json_object_get(as, "assignments"), 0), "id")));
    json_decref(tcall(d, "POST", "/v1/experiments/one/rewards", body, 200));
    json_decref(tcall(d, "POST", "/v1/experiments/one/assignments", "{}", 201));
    json_decref(as);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* A client that stalls mid-request loses its connection after --timeout. */
static void test_connection_timeout(void **state)
{
    struct tdaemon *d = *state;
    start_with_config(d, "timeout = 1\n", NULL);
    int fd = tcp_connect(tdaemon_port(d));
    const char partial[] = "POST /v1/experiments HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n";
    send_all(fd, partial, strlen(partial));
    char buf[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = recv_some(fd, buf, sizeof buf, 15000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Closed (EOF or reset), with no HTTP answer, well before our 15 s. */
    if (r != 0 && r != -2)
        fail_msg("stalled connection: recv %d (%s)", r, buf);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(waited < 15);
    close(fd);
    /* An idle keep-alive connection too. */
    fd = tcp_connect(tdaemon_port(d));
    send_all(fd, get_healthz, strlen(get_healthz));
    assert_true(recv_some(fd, buf, sizeof buf, 10000) > 0);
    assert_memory_equal(buf, "HTTP/1.1 200", 12);
    r = recv_some(fd, buf, sizeof buf, 15000);
    assert_true(r == 0 || r == -2);
    close(fd);
    /* The daemon still serves. */
    json_decref(tcall(d, "GET", "/healthz", NULL, 200));
    assert_int_equal(tdaemon_stop(d), 0);
}

/* --max-connections: with the limit held by two clients a third is refused
 * at once, 503 problem+json with Retry-After and its connection closed (it
 * used to wait unanswered in the listen backlog), and served again once a
 * slot is free. One worker thread, so that the limit is not split between
 * workers. */
static void test_connection_limit(void **state)
{
    struct tdaemon *d = *state;
    static const char *const extra[] = {"--threads", "1", NULL};
    start_with_config(d, "max-connections = 2\n", extra);
    char buf[1024];
    int held[2];
    for (int i = 0; i < 2; i++) {
        held[i] = tcp_connect(tdaemon_port(d));
        send_all(held[i], get_healthz, strlen(get_healthz));
        assert_true(recv_some(held[i], buf, sizeof buf, 10000) > 0);
        assert_memory_equal(buf, "HTTP/1.1 200", 12);
    }
    int third = tcp_connect(tdaemon_port(d));
    send_all(third, get_healthz, strlen(get_healthz));
    int r = recv_some(third, buf, sizeof buf, 10000);
    assert_true(r > 0);
    assert_memory_equal(buf, "HTTP/1.1 503", 12);
    assert_non_null(strstr(buf, "application/problem+json"));
    assert_non_null(strstr(buf, "Retry-After: 1"));
    for (int i = 0; i < 100 && r > 0; i++) /* then closed */
        r = recv_some(third, buf, sizeof buf, 10000);
    assert_true(r == 0 || r == -2);
    close(third);
    close(held[0]);
    int served = 0;
    for (int i = 0; i < 100 && !served; i++) {
        struct tresp *rep = treq(d, "GET", "/healthz", NULL, NULL);
        served = rep->status == 200;
        tresp_free(rep);
        if (!served)
            usleep(100000);
    }
    assert_true(served);
    close(held[1]);
    assert_int_equal(tdaemon_stop(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_body_size, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_arms_bandits_batches_count, tfresh_setup,
                                        tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_pending_and_experiments, tfresh_setup,
                                        tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_connection_timeout, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_connection_limit, tfresh_setup, tfresh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
