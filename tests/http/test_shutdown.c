/*
 * test_shutdown.c — SIGTERM under load. The contract: in-flight requests
 * finish, the writer is flushed, the daemon exits 0 with no sanitizer
 * report, and everything it acknowledged with a 2xx is on disk after a
 * restart.
 *
 * - Several clients assign, reward, observe, create and delete at once
 *   while the expiry sweeper queues its own writes (one-second TTL), and
 *   SIGTERM lands in the middle; twice, at different points.
 * - The store is slower than the shutdown's grace period: another process
 *   holds the database's write lock, so a request waits on its commit past
 *   the 10 s banditd grants in-flight requests. libmicrohttpd aborts the
 *   process if it is stopped with a connection still suspended, so the
 *   daemon must wait for the store (which always answers: its busy timeout
 *   bounds the wait) rather than stop under it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "tests/support/harness.h"

#define GRACE_S 10 /* main.c: http_stop(srv, 10000) */

/* The daemon's stderr must hold no sanitizer report. */
static void assert_no_sanitizer_report(struct tdaemon *d)
{
    char *err = tdaemon_stderr(d);
    assert_non_null(err);
    const char *marks[] = {"Sanitizer", "runtime error:", "MHD_PANIC", "called while we have"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(err, marks[i]) != NULL)
            fail_msg("the daemon reported \"%s\":\n%s", marks[i], err);
    free(err);
}

/* --- concurrent clients, then SIGTERM ----------------------------------------- */

#define NCLIENTS 4
#define MAX_IDS 4096

struct ack {
    char id[48];
    int exp;      /* index in g_exps */
    int rewarded; /* 1: reward accepted (value reward) */
    int reward;
    int unsure; /* a reward was sent and the connection dropped: either way */
};

static const char *const g_exps[] = {"L0", "L1"};

struct load {
    pthread_mutex_t mu;
    struct ack acks[MAX_IDS]; /* assignments acknowledged with 201 */
    size_t nacks;
    size_t rewards_acked;
    int unexpected; /* a status outside what the contract allows */
    char unexpected_msg[256];
};

struct client {
    struct load *L;
    struct tdaemon *d;
    int idx;
    struct trng g;
};

static void note_unexpected(struct load *L, const char *what, long status, const char *body)
{
    pthread_mutex_lock(&L->mu);
    if (!L->unexpected)
        snprintf(L->unexpected_msg, sizeof L->unexpected_msg, "%s: HTTP %ld %.150s", what, status,
                 body ? body : "");
    L->unexpected = 1;
    pthread_mutex_unlock(&L->mu);
}

/* 503 is what a request meets while the daemon shuts down; 0 a refused
 * connection once it is gone. Both end the client. */
static int ended(long status)
{
    return status == 0 || status == 503;
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    struct load *L = c->L;
    struct tclient *tc = tclient_new(c->d);
    char path[128], body[256];
    for (int round = 0;; round++) {
        int e = (int)(trng_next(&c->g) % 2);
        unsigned kind = (unsigned)(trng_next(&c->g) % 10);
        if (c->idx == 0 && kind == 0) {
            /* create / delete churn on a third experiment */
            struct tresp *r = tclient_req(tc, "DELETE", "/v1/experiments/churn", NULL, NULL);
            long st = r->status;
            if (!ended(st) && st != 204 && st != 404)
                note_unexpected(L, "DELETE churn", st, r->body);
            tresp_free(r);
            if (ended(st))
                break;
            r = tclient_req(tc, "POST", "/v1/experiments",
                            "{\"id\":\"churn\",\"arms\":[\"a\",\"b\"]}", NULL);
            st = r->status;
            if (!ended(st) && st != 201 && st != 409)
                note_unexpected(L, "POST churn", st, r->body);
            tresp_free(r);
            if (ended(st))
                break;
            continue;
        }
        if (kind == 1) {
            snprintf(path, sizeof path, "/v1/experiments/%s/observations", g_exps[e]);
            snprintf(body, sizeof body, "{\"arm\":\"b\",\"reward\":%d}",
                     (int)(trng_next(&c->g) % 2));
            struct tresp *r = tclient_req(tc, "POST", path, body, NULL);
            long st = r->status;
            if (!ended(st) && st != 200)
                note_unexpected(L, "observation", st, r->body);
            tresp_free(r);
            if (ended(st))
                break;
            continue;
        }
        snprintf(path, sizeof path, "/v1/experiments/%s/assignments", g_exps[e]);
        snprintf(body, sizeof body, "{\"count\":%d}", 1 + (int)(trng_next(&c->g) % 3));
        struct tresp *r = tclient_req(tc, "POST", path, body, NULL);
        long st = r->status;
        if (ended(st)) {
            tresp_free(r);
            break;
        }
        if (st != 201) {
            note_unexpected(L, "assignments", st, r->body);
            tresp_free(r);
            continue;
        }
        json_t *list = json_object_get(r->json, "assignments");
        size_t i;
        json_t *a;
        size_t first = 0, n = 0;
        pthread_mutex_lock(&L->mu);
        first = L->nacks;
        json_array_foreach(list, i, a)
        {
            if (L->nacks == MAX_IDS)
                break;
            struct ack *k = &L->acks[L->nacks++];
            snprintf(k->id, sizeof k->id, "%s", json_string_value(json_object_get(a, "id")));
            k->exp = e;
            n++;
        }
        pthread_mutex_unlock(&L->mu);
        tresp_free(r);
        /* Reward most of them (some are left to expire). */
        int stop = 0;
        for (size_t j = first; j < first + n && !stop; j++) {
            if (trng_next(&c->g) % 5 == 0)
                continue;
            int v = (int)(trng_next(&c->g) % 2);
            snprintf(path, sizeof path, "/v1/experiments/%s/rewards", g_exps[e]);
            snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", L->acks[j].id,
                     v);
            r = tclient_req(tc, "POST", path, body, NULL);
            st = r->status;
            const char *res = tjson_str(r->json, "results[0].status");
            if (ended(st)) {
                stop = 1;
                if (st == 0) {
                    pthread_mutex_lock(&L->mu);
                    L->acks[j].unsure = 1;
                    pthread_mutex_unlock(&L->mu);
                }
            } else if (st != 200 || res == NULL ||
                       (strcmp(res, "accepted") != 0 && strcmp(res, "expired") != 0)) {
                note_unexpected(L, "reward", st, r->body);
            } else if (strcmp(res, "accepted") == 0) {
                pthread_mutex_lock(&L->mu);
                L->acks[j].rewarded = 1;
                L->acks[j].reward = v;
                L->rewards_acked++;
                pthread_mutex_unlock(&L->mu);
            }
            tresp_free(r);
        }
        if (stop)
            break;
    }
    tclient_free(tc);
    return NULL;
}

/* Run the clients, SIGTERM once `after` rewards are acknowledged, check the
 * exit, restart and check every acknowledgement against the disk. */
static void load_round(struct tdaemon *d, size_t after, uint64_t seed)
{
    struct load *L = calloc(1, sizeof *L);
    assert_non_null(L);
    pthread_mutex_init(&L->mu, NULL);
    struct client cl[NCLIENTS];
    pthread_t th[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        cl[i] = (struct client){.L = L, .d = d, .idx = i};
        trng_seed(&cl[i].g, seed * 100 + (uint64_t)i);
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &cl[i]), 0);
    }
    for (int waited = 0; waited < 120000; waited += 5) {
        pthread_mutex_lock(&L->mu);
        size_t n = L->rewards_acked;
        pthread_mutex_unlock(&L->mu);
        if (n >= after)
            break;
        tsleep_ms(5);
    }
    assert_int_equal(tdaemon_signal(d, SIGTERM), 0);
    int rc = tdaemon_wait(d);
    for (int i = 0; i < NCLIENTS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(rc, 0);
    assert_no_sanitizer_report(d);
    if (L->unexpected)
        fail_msg("unexpected answer under load: %s", L->unexpected_msg);
    printf("# SIGTERM after %zu rewards acknowledged (%zu assignments)\n", L->rewards_acked,
           L->nacks);
    assert_true(L->rewards_acked >= after);

    /* Every acknowledgement is on disk: an accepted reward reads back as a
     * duplicate, an acknowledged assignment is known (its reward is
     * accepted, or it expired meanwhile). */
    assert_int_equal(tdaemon_restart(d), 0);
    for (size_t i = 0; i < L->nacks; i++) {
        struct ack *k = &L->acks[i];
        char path[128];
        snprintf(path, sizeof path, "/v1/experiments/%s/rewards", g_exps[k->exp]);
        struct tresp *r = treqf(d, "POST", path, "{\"assignment_id\":\"%s\",\"reward\":%d}", k->id,
                                k->rewarded ? k->reward : 1);
        assert_status(r, 200);
        const char *res = tjson_str(r->json, "results[0].status");
        assert_non_null(res);
        if (k->rewarded && strcmp(res, "duplicate") != 0)
            fail_msg("acknowledged reward for %s reads back as %s", k->id, res);
        /* Not acknowledged (skipped, refused with 503: nothing recorded): a
         * first reward now, unless the connection dropped mid-request. */
        if (!k->rewarded && !k->unsure && strcmp(res, "accepted") != 0 &&
            strcmp(res, "expired") != 0)
            fail_msg("acknowledged assignment %s reads back as %s", k->id, res);
        tresp_free(r);
    }
    pthread_mutex_destroy(&L->mu);
    free(L);
}

static void test_sigterm_under_concurrent_load(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    for (size_t e = 0; e < 2; e++)
        json_decref(texp_create(d,
                                "{\"id\":\"%s\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":%zu,"
                                "\"policy\":{\"name\":\"uniform\"},\"assignment_ttl_s\":1}",
                                g_exps[e], e + 1));
    load_round(d, 40, 1);  /* early */
    load_round(d, 400, 2); /* on top of the first, later */
    assert_int_equal(tdaemon_stop(d), 0);
    assert_no_sanitizer_report(d);
    tdaemon_free(d);
}

/* --- a store slower than the grace period ---------------------------------------- */

struct one {
    struct tdaemon *d;
    const char *path, *body;
    long status;
    char text[512];
};

static void *one_request(void *arg)
{
    struct one *o = arg;
    struct tclient *c = tclient_new(o->d);
    struct tresp *r = tclient_req(c, "POST", o->path, o->body, NULL);
    o->status = r->status;
    snprintf(o->text, sizeof o->text, "%s", r->body ? r->body : r->error);
    tresp_free(r);
    tclient_free(c);
    return NULL;
}

/* Another connection takes the write lock (BEGIN IMMEDIATE) and keeps it. */
static sqlite3 *lock_db(struct tdaemon *d)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(tdaemon_db_path(d), &db, SQLITE_OPEN_READWRITE, NULL),
                     SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void unlock_db(sqlite3 *db)
{
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Wait until the daemon has handed out n assignments (the request was
 * applied and is waiting for its commit; a status read would wait too). */
static void wait_handed_out(struct tdaemon *d, long long n)
{
    for (int waited = 0; waited < 30000; waited += 10) {
        if (tmetric(d, "banditd_assignments_total", "kind=\"explore\"") >= (double)n)
            return;
        tsleep_ms(10);
    }
    fail_msg("the assignment request never reached the daemon");
}

static void test_sigterm_while_store_is_locked(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"slow\",\"arms\":[\"a\",\"b\"],\"seed\":3}"));
    sqlite3 *db = lock_db(d);
    struct one o = {.d = d, .path = "/v1/experiments/slow/assignments", .body = "{}"};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, one_request, &o), 0);
    wait_handed_out(d, 1);
    assert_int_equal(tdaemon_signal(d, SIGTERM), 0);
    /* Past the grace period, with the request still waiting on its commit. */
    tsleep_ms((GRACE_S + 2) * 1000);
    unlock_db(db);
    pthread_join(th, NULL);
    int rc = tdaemon_wait(d);
    if (rc != 0) {
        char *err = tdaemon_stderr(d);
        fail_msg("exit status %d after a shutdown slower than the grace period:\n%s", rc, err);
    }
    assert_no_sanitizer_report(d);
    /* The commit went through once the lock was released: acknowledged
     * and on disk. */
    if (o.status != 201)
        fail_msg("the waiting request got HTTP %ld: %s", o.status, o.text);
    assert_int_equal(tdaemon_restart(d), 0);
    json_t *st = texp_status(d, "slow");
    assert_int_equal(tjson_int(st, "handed_out"), 1);
    json_decref(st);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm_under_concurrent_load),
        cmocka_unit_test(test_sigterm_while_store_is_locked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
