/*
 * test_concurrency.c — several clients at once doing everything to the
 * same few experiments: create, delete and re-create, assign (with and
 * without units), reward (right and stale ids), observe, pause and resume,
 * read status, history and export. Every answer must be one the contract
 * allows for that request (never a 5xx, never a dropped connection except
 * an export cut by a delete); then the daemon must shut down cleanly (no
 * sanitizer report) and, restarted, report exactly what it reported before.
 * Bounded by a fixed number of operations per client, seeded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

#define NCLIENTS 4
#define OPS 600 /* per client and round */
#define NEXP 3

static const char *const g_ids[NEXP] = {"c0", "c1", "c2"};

struct client {
    struct tdaemon *d;
    struct tclient *c;
    struct trng g;
    char known[64][48]; /* assignment ids seen, per client (ring) */
    int known_exp[64];
    size_t nknown;
    char bad[1024];
    int count[16];
};

enum op {
    OP_CREATE,
    OP_DELETE,
    OP_ASSIGN,
    OP_UNIT,
    OP_REWARD,
    OP_OBSERVE,
    OP_PATCH,
    OP_STATUS,
    OP_HISTORY,
    OP_EXPORT,
    OP_N
};

static int allowed(enum op op, long status)
{
    switch (op) {
    case OP_CREATE:
        return status == 201 || status == 409;
    case OP_DELETE:
        return status == 204 || status == 404;
    case OP_ASSIGN:
    case OP_UNIT:
        return status == 201 || status == 200 || status == 404;
    case OP_REWARD:
    case OP_OBSERVE:
        return status == 200 || status == 404;
    case OP_PATCH:
        return status == 200 || status == 404 || status == 409;
    default:
        return status == 200 || status == 404;
    }
}

static void *run(void *arg)
{
    struct client *cl = arg;
    for (int i = 0; i < OPS && cl->bad[0] == '\0'; i++) {
        enum op op = (enum op)(trng_next(&cl->g) % OP_N);
        /* Deletes are rarer than the rest, so experiments live a while. */
        if (op == OP_DELETE && trng_next(&cl->g) % 4 != 0)
            op = OP_ASSIGN;
        int e = (int)(trng_next(&cl->g) % NEXP);
        const char *id = g_ids[e];
        char path[128], body[256];
        const char *method = "POST";
        body[0] = '\0';
        switch (op) {
        case OP_CREATE:
            snprintf(path, sizeof path, "/v1/experiments");
            snprintf(body, sizeof body,
                     "{\"id\":\"%s\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":%d,"
                     "\"policy\":{\"name\":\"%s\"},\"fallback\":\"recommendation\"}",
                     id, i, i % 2 ? "adapt" : "uniform");
            break;
        case OP_DELETE:
            method = "DELETE";
            snprintf(path, sizeof path, "/v1/experiments/%s", id);
            break;
        case OP_ASSIGN:
            snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
            snprintf(body, sizeof body, "{\"count\":%d}", 1 + (int)(trng_next(&cl->g) % 3));
            break;
        case OP_UNIT:
            snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
            snprintf(body, sizeof body, "{\"unit\":\"u%d\"}", (int)(trng_next(&cl->g) % 10));
            break;
        case OP_REWARD:
            if (cl->nknown == 0)
                continue;
            {
                size_t k = trng_next(&cl->g) % (cl->nknown < 64 ? cl->nknown : 64);
                id = g_ids[cl->known_exp[k]];
                snprintf(path, sizeof path, "/v1/experiments/%s/rewards", id);
                snprintf(body, sizeof body,
                         "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":%d}]}", cl->known[k],
                         trng_bernoulli(&cl->g, 0.5));
            }
            break;
        case OP_OBSERVE:
            snprintf(path, sizeof path, "/v1/experiments/%s/observations", id);
            snprintf(body, sizeof body, "{\"arm\":\"b\",\"reward\":%d}", i % 2);
            break;
        case OP_PATCH:
            method = "PATCH";
            snprintf(path, sizeof path, "/v1/experiments/%s", id);
            snprintf(body, sizeof body, "{\"state\":\"%s\"}",
                     (const char *[]){"paused", "running", "running", "stopped"}[i % 4]);
            if (trng_next(&cl->g) % 3 != 0)
                snprintf(body, sizeof body, "{\"state\":\"running\"}");
            break;
        case OP_STATUS:
            method = "GET";
            snprintf(path, sizeof path, "/v1/experiments/%s/status", id);
            break;
        case OP_HISTORY:
            method = "GET";
            snprintf(path, sizeof path, "/v1/experiments/%s/history", id);
            break;
        default:
            method = "GET";
            snprintf(path, sizeof path, "/v1/experiments/%s/export%s", id,
                     i % 2 ? "?format=csv" : "");
            break;
        }
        struct tresp *r = tclient_req(cl->c, method, path, body[0] ? body : NULL, NULL);
        cl->count[op]++;
        int ok = allowed(op, r->status);
        /* An export cut short by a concurrent delete is the one transport
         * error the contract allows (the stream ends with an error). */
        if (op == OP_EXPORT && r->status == 0 && strstr(r->error, "partial") != NULL)
            ok = 1;
        if (!ok)
            snprintf(cl->bad, sizeof cl->bad, "%s %s %s -> %ld %s %.200s", method, path, body,
                     r->status, r->error, r->body);
        if ((op == OP_ASSIGN || op == OP_UNIT) && (r->status == 201 || r->status == 200)) {
            size_t k;
            json_t *a;
            json_array_foreach(json_object_get(r->json, "assignments"), k, a)
            {
                size_t slot = cl->nknown++ % 64;
                snprintf(cl->known[slot], sizeof cl->known[slot], "%s", tjson_str(a, "id"));
                cl->known_exp[slot] = e;
            }
        }
        tresp_free(r);
    }
    return NULL;
}

/* One round: the clients at once, then the surviving experiments'
 * statuses (a new reference per id, NULL where deleted). */
static void round_of(struct tdaemon *d, uint64_t seed, json_t *out[NEXP])
{
    struct client *cl = calloc(NCLIENTS, sizeof *cl);
    assert_non_null(cl);
    pthread_t th[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        cl[i].d = d;
        cl[i].c = tclient_new(d);
        trng_seed(&cl[i].g, seed + (uint64_t)i);
        assert_int_equal(pthread_create(&th[i], NULL, run, &cl[i]), 0);
    }
    int total[OP_N] = {0};
    for (int i = 0; i < NCLIENTS; i++) {
        pthread_join(th[i], NULL);
        tclient_free(cl[i].c);
        if (cl[i].bad[0] != '\0')
            fail_msg("client %d: %s", i, cl[i].bad);
        for (int k = 0; k < OP_N; k++)
            total[k] += cl[i].count[k];
    }
    free(cl);
    printf("# ops: create %d, delete %d, assign %d, unit %d, reward %d, observe %d, patch %d, "
           "status %d, history %d, export %d\n",
           total[0], total[1], total[2], total[3], total[4], total[5], total[6], total[7], total[8],
           total[9]);
    for (int e = 0; e < NEXP; e++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/experiments/%s/status", g_ids[e]);
        struct tresp *r = treq(d, "GET", path, NULL, NULL);
        assert_true(r->status == 200 || r->status == 404);
        out[e] = r->status == 200 ? json_incref(r->json) : NULL;
        tresp_free(r);
    }
}

static void assert_same_after_restart(struct tdaemon *d, json_t *before[NEXP])
{
    for (int e = 0; e < NEXP; e++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/experiments/%s/status", g_ids[e]);
        struct tresp *r = treq(d, "GET", path, NULL, NULL);
        if (before[e] == NULL) {
            assert_problem(r, 404);
        } else {
            assert_status(r, 200);
            if (!json_equal(before[e], r->json)) {
                char *t = json_dumps(before[e], JSON_COMPACT);
                fail_msg("%s changed across the restart:\nbefore %s\nafter  %s", g_ids[e], t,
                         r->body);
            }
            json_decref(before[e]);
        }
        tresp_free(r);
    }
}

/* Round 1, kill -9, same state; round 2 on top, SIGTERM (exit 0), same
 * state. */
static void test_everything_at_once(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_t *st[NEXP];
    round_of(d, 1000, st);
    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    assert_same_after_restart(d, st);
    round_of(d, 2000, st);
    assert_int_equal(tdaemon_stop(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    assert_same_after_restart(d, st);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_everything_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
