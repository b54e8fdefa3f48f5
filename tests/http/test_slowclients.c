/*
 * test_slowclients.c — slow or idle clients cannot pin the daemon (issue 5,
 * "Limits"): libmicrohttpd's event loop serves other clients while many
 * connections trickle in half a request, --timeout closes connections that
 * stay idle, and --max-connections caps how many are open at once, without
 * stopping the daemon from serving once they go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/harness.h"

#define SLOW 60

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A raw TCP connection to the daemon, or −1. */
static int dial(struct tdaemon *d)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(tdaemon_port(d));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_str(int fd, const char *s)
{
    ssize_t n = send(fd, s, strlen(s), MSG_NOSIGNAL);
    (void)n; /* a closed connection is what some tests expect */
}

/* Wait up to secs for the peer to close fd (EOF or reset). 1 if it did. */
static int closed_within(int fd, double secs)
{
    double end = now_s() + secs;
    char buf[512];
    while (now_s() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)((end - now_s()) * 1000) + 1;
        if (poll(&p, 1, left) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
    }
    return 0;
}

/* The daemon of a test lives in *state, so that a failed assertion does not
 * leave it running (teardown frees it). */
static int teardown(void **state)
{
    tdaemon_free(*state);
    *state = NULL;
    return 0;
}

static void test_slow_clients_do_not_pin_threads(void **state)
{
    struct tdaemon *d = *state = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"lim\",\"arms\":[\"a\",\"b\"]}"));
    /* Far more half-sent requests than there are worker threads. */
    int fds[SLOW];
    for (int i = 0; i < SLOW; i++) {
        fds[i] = dial(d);
        assert_true(fds[i] >= 0);
        send_str(fds[i], "POST /v1/experiments/lim/assignments HTTP/1.1\r\nHost: x\r\n"
                         "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
    }
    /* … while a normal client is served at once, repeatedly. */
    double t0 = now_s();
    for (int i = 0; i < 20; i++) {
        json_t *a = texp_assign(d, "lim", "{}");
        json_decref(a);
        for (int k = 0; k < SLOW; k += 7)
            send_str(fds[k], " "); /* the slow ones trickle on */
    }
    double took = now_s() - t0;
    printf("# 20 assignments beside %d stalled uploads in %.3f s\n", SLOW, took);
    assert_true(took < 10.0); /* generous: it is milliseconds when nothing waits */
    for (int i = 0; i < SLOW; i++)
        close(fds[i]);
    /* Uploads a client abandoned are not in flight: shutdown does not wait
     * for them (it used to wait out its 10 s limit here). */
    t0 = now_s();
    assert_int_equal(tdaemon_stop(d), 0);
    double stop = now_s() - t0;
    printf("# stopped in %.3f s after the stalled clients left\n", stop);
    assert_true(stop < 5.0);
}

static void test_idle_connections_time_out(void **state)
{
    const char *extra[] = {"--timeout", "1", NULL};
    struct tdaemon *d = *state = tdaemon_start(extra);
    assert_non_null(d);
    int idle = dial(d), partial = dial(d);
    assert_true(idle >= 0 && partial >= 0);
    send_str(partial, "GET /healthz HTTP/1.1\r\nHo");
    /* closed after about a second of silence; allow for a loaded machine */
    assert_true(closed_within(idle, 15.0));
    assert_true(closed_within(partial, 15.0));
    close(idle);
    close(partial);
    struct tresp *r = treq(d, "GET", "/healthz", NULL, NULL);
    assert_status(r, 200);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* 1 if a response arrives on fd within secs. */
static int answered_within(int fd, double secs)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)(secs * 1000)) <= 0)
        return 0;
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

static void test_connection_cap(void **state)
{
    const char *extra[] = {"--max-connections", "8", NULL};
    struct tdaemon *d = *state = tdaemon_start(extra);
    assert_non_null(d);
    /* 16 keep-alive clients at once: at most 8 are taken in (the rest wait
     * in the listen backlog), and they are all served once slots free up. */
    int fds[16], served[16] = {0}, first = 0;
    for (int i = 0; i < 16; i++) {
        fds[i] = dial(d);
        assert_true(fds[i] >= 0);
        send_str(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    for (int i = 0; i < 16; i++)
        first += served[i] = answered_within(fds[i], i == 0 ? 2.0 : 0.3);
    printf("# %d of 16 simultaneous clients served while the cap is 8\n", first);
    assert_true(first >= 1);
    assert_true(first <= 8);
    for (int i = 0; i < 16; i++)
        if (served[i]) {
            close(fds[i]);
            fds[i] = -1;
        }
    int later = 0;
    for (int round = 0; round < 4 && first + later < 16; round++)
        for (int i = 0; i < 16; i++)
            if (fds[i] >= 0 && answered_within(fds[i], 1.0)) {
                later++;
                close(fds[i]);
                fds[i] = -1;
            }
    printf("# the other %d served once slots were free\n", later);
    assert_int_equal(first + later, 16);
    assert_int_equal(tdaemon_stop(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_slow_clients_do_not_pin_threads, teardown),
        cmocka_unit_test_teardown(test_idle_connections_time_out, teardown),
        cmocka_unit_test_teardown(test_connection_cap, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
