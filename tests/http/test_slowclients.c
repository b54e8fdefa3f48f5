/*
 * test_slowclients.c — slow or idle clients cannot pin the daemon (issue 5,
 * "Limits"; issue 13, slowloris): libmicrohttpd's event loop serves other
 * clients while many connections trickle in half a request, --timeout
 * closes connections that stay idle, --request-timeout closes those that
 * keep trickling, --max-connections-per-ip keeps one address from taking
 * every slot, and past --max-connections a client is refused at once (503)
 * instead of waiting in the listen backlog.
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
#include "tests/support/raw.h"

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

static void test_connection_cap(void **state)
{
    const char *extra[] = {"--max-connections", "8", NULL};
    struct tdaemon *d = *state = tdaemon_start(extra);
    assert_non_null(d);
    /* 16 keep-alive clients at once: 8 are taken in and served; the other
     * 8 are refused at once with 503 (problem+json, Retry-After) and
     * closed, rather than left waiting in the listen backlog. */
    struct rawc *c[16];
    int ok = 0, refused = 0;
    for (int i = 0; i < 16; i++) {
        c[i] = rawc_dial(tdaemon_port(d), NULL);
        assert_non_null(c[i]);
        assert_int_equal(rawc_send(c[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    }
    for (int i = 0; i < 16; i++) {
        struct rawr *r = rawc_read(c[i], 30.0);
        assert_raw_ok(r);
        if (r->status == 200) {
            ok++;
        } else {
            assert_int_equal(r->status, 503);
            char *ra = rawr_header(r, "Retry-After");
            assert_non_null(ra);
            free(ra);
            assert_true(r->closes);
            assert_true(rawc_closed_within(c[i], 30.0));
            refused++;
        }
        rawr_free(r);
    }
    printf("# %d of 16 simultaneous clients served while the cap is 8, %d refused\n", ok, refused);
    assert_int_equal(ok, 8);
    assert_int_equal(refused, 8);
    /* once slots are free, newcomers are served */
    for (int i = 0; i < 16; i++)
        rawc_close(c[i]);
    int served = 0;
    for (int i = 0; i < 100 && !served; i++) {
        struct tresp *r = treq(d, "GET", "/healthz", NULL, NULL);
        served = r->status == 200;
        tresp_free(r);
        if (!served)
            tsleep_ms(100);
    }
    assert_true(served);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* --- slowloris ------------------------------------------------------------------------- */

#define ATTACK 300
#define REQUEST_TIMEOUT "8"

/* Connections that have not been closed by the daemon (a check, no wait). */
static int still_open(struct rawc **c, int n)
{
    int open = 0;
    for (int i = 0; i < n; i++)
        if (c[i] != NULL && !rawc_closed_within(c[i], 0)) {
            open++;
        } else if (c[i] != NULL) {
            rawc_close(c[i]);
            c[i] = NULL;
        }
    return open;
}

/* Each open connection sends one more byte of its endless header block,
 * so that no inactivity timeout ever fires. */
static void trickle(struct rawc **c, int n)
{
    for (int i = 0; i < n; i++)
        if (c[i] != NULL)
            (void)rawc_send(c[i], "x");
}

/* ATTACK connections from srcs (round robin), each sending half a request
 * and then a byte now and then, never finishing it. */
static void open_attack(struct tdaemon *d, struct rawc **c, const char *const *srcs, int nsrc)
{
    for (int i = 0; i < ATTACK; i++) {
        c[i] = rawc_dial(tdaemon_port(d), srcs[i % nsrc]);
        assert_non_null(c[i]);
        (void)rawc_send(c[i], "POST /v1/experiments/lim/assignments HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nX-Slow: ");
    }
}

/* Wait (trickling) until every attacking connection was closed by the
 * daemon; the seconds it took. Fails past limit_s. */
static double wait_all_closed(struct rawc **c, double t0, double limit_s)
{
    while (still_open(c, ATTACK) > 0) {
        if (now_s() - t0 > limit_s)
            fail_msg("%d slow connections still open after %.0f s", still_open(c, ATTACK), limit_s);
        trickle(c, ATTACK);
        tsleep_ms(250);
    }
    return now_s() - t0;
}

/* One address opens ATTACK slow connections: it gets max-connections-per-ip
 * of them, the rest are closed at once, a normal client from another
 * address is served while the slow ones still hang on, and those are cut
 * at --request-timeout however they trickle. (On main: the slow
 * connections took every slot of --max-connections and the normal client
 * waited in the backlog for as long as they trickled.) */
static void test_slowloris_one_address(void **state)
{
    const char *extra[] = {
        "--max-connections", "128", "--max-connections-per-ip", "64", "--request-timeout",
        REQUEST_TIMEOUT,     NULL};
    struct tdaemon *d = *state = tdaemon_start(extra);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"lim\",\"arms\":[\"a\",\"b\"]}"));
    static struct rawc *c[ATTACK];
    static const char *const attacker[] = {"127.0.0.2"};
    double t0 = now_s();
    open_attack(d, c, attacker, 1);
    /* a normal client, from 127.0.0.1, on a connection of its own */
    struct tclient *normal = tclient_new(d);
    for (int i = 0; i < 20; i++) {
        struct tresp *r =
            tclient_req(normal, "POST", "/v1/experiments/lim/assignments", "{}", NULL);
        assert_status(r, 201);
        tresp_free(r);
    }
    tclient_free(normal);
    double served = now_s() - t0;
    int open_then = still_open(c, ATTACK);
    printf("# %d slow connections from one address; 20 assignments of a normal client "
           "done %.3f s after they began, while %d of them were still open\n",
           ATTACK, served, open_then);
    assert_true(open_then > 0); /* served before the slow ones were done */
    /* the ones over the address's share go at once (1 s grace), the 64
     * admitted at the deadline */
    for (int i = 0; i < 12 && still_open(c, ATTACK) > 64; i++) {
        trickle(c, ATTACK);
        tsleep_ms(250);
    }
    int over = still_open(c, ATTACK);
    printf("# %.1f s in: %d still open (the address's share is 64)\n", now_s() - t0, over);
    assert_true(over <= 64);
    double all = wait_all_closed(c, t0, 60.0);
    printf("# all %d closed %.1f s after they began (--request-timeout %s)\n", ATTACK, all,
           REQUEST_TIMEOUT);
    json_decref(texp_assign(d, "lim", "{}"));
    assert_int_equal(tdaemon_stop(d), 0);
}

/* Many addresses: the slow connections fill --max-connections; the burst
 * beyond it is closed at once. A newcomer is then refused at once (503,
 * Retry-After), never left waiting for a slot, and served again once the
 * deadline has cut the slow ones. */
static void test_slowloris_many_addresses(void **state)
{
    const char *extra[] = {
        "--max-connections", "100", "--max-connections-per-ip", "64", "--request-timeout",
        REQUEST_TIMEOUT,     NULL};
    struct tdaemon *d = *state = tdaemon_start(extra);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"lim\",\"arms\":[\"a\",\"b\"]}"));
    static struct rawc *c[ATTACK];
    static const char *const attackers[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4",
                                            "127.0.0.5", "127.0.0.6", "127.0.0.7"};
    double t0 = now_s();
    open_attack(d, c, attackers, 6);
    /* the 200 over the limit go within their grace (at once past half the
     * room for refusals); the harness's own connection holds a slot */
    for (int i = 0; i < 12 && still_open(c, ATTACK) > 99; i++) {
        trickle(c, ATTACK);
        tsleep_ms(250);
    }
    int open_then = still_open(c, ATTACK);
    double t1 = now_s();
    struct tclient *newcomer = tclient_new(d);
    struct tresp *r = tclient_req(newcomer, "GET", "/healthz", NULL, NULL);
    tclient_free(newcomer);
    double answered = now_s() - t1;
    printf("# %d slow connections from 6 addresses, %d still open %.1f s in; a newcomer "
           "answered %ld in %.3f s\n",
           ATTACK, open_then, t1 - t0, r->status, answered);
    assert_true(open_then <= 99);
    assert_problem(r, 503);
    assert_non_null(tresp_header(r, "Retry-After"));
    tresp_free(r);
    /* refused before the slow ones were done, not after */
    assert_true(still_open(c, ATTACK) > 0);
    wait_all_closed(c, t0, 60.0);
    r = treq(d, "GET", "/healthz", NULL, NULL);
    assert_status(r, 200);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_slow_clients_do_not_pin_threads, teardown),
        cmocka_unit_test_teardown(test_idle_connections_time_out, teardown),
        cmocka_unit_test_teardown(test_connection_cap, teardown),
        cmocka_unit_test_teardown(test_slowloris_one_address, teardown),
        cmocka_unit_test_teardown(test_slowloris_many_addresses, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
