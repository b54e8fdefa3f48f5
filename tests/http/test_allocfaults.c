/*
 * test_allocfaults.c — allocation failure injection along each request's
 * path (issue 13; SQLite's malloc tests, curl's `runtests -t`). The daemon
 * (the ASan build: tests/shim/faultmem.so composes with ASan's allocator,
 * loaded before it) fails the Nth malloc/calloc/realloc counted from the
 * moment the test opens the window, for N = 1, 2, 3… until a request
 * completes without reaching the Nth allocation. Every allocation in the
 * process counts while the window is open (MHD's threads, the writer, the
 * sweeper); the sweeper wakes once a second, so N is reproducible up to
 * that.
 *
 * Each time: the daemon is alive (/healthz), the same request sent again
 * succeeds, and the request itself got an answer that is either its
 * success or a problem+json 5xx — a 4xx would blame the client for the
 * server's memory (clients do not retry a 400). Two such 404s were found
 * here: jansson cutting a string short when its buffer could not grow
 * (base/jsonv.c jv_loadb), and a committed DELETE whose 204 could not be
 * built, closed unanswered and resent by the client library (http.c's
 * prebuilt 503). At the end a clean stop, a kill -9 and restart: every
 * acknowledged reward is counted, once (memory equals the disk, the store
 * is not corrupt: integrity_check), and no daemon leaked.
 *
 * Known limits, reported rather than failed: an allocation that fails
 * inside libmicrohttpd itself makes it close the connection without an
 * answer ("Error allocating memory"): the transport cannot answer what it
 * could not read; the count of such cases is printed. An export whose read
 * fails past its first chunk is cut after its head, as the contract says
 * (no client takes it for complete); counted, not failed.
 *
 * `make test` runs every N for each request kind (ALLOCFAULTS_ALL=1 also
 * adds the read-only endpoints and the batch forms), once against the
 * sanitizer daemon and once against the plain one (BANDITD_PLAIN_BIN):
 * ASan's own strdup never reaches the shim.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/faults.h"
#include "tests/support/harness.h"

#define MAX_N 3000

enum kind {
    K_ASSIGN,
    K_REWARD,
    K_PAUSE,
    K_RESUME,
    K_CREATE,
    K_DELETE,
    K_STATUS,
    K_BATCH_REWARD,
    K_EDIT,
    K_CORRECT,
    K_LIST,
    K_OBSERVE,
    K_EXPORT,
    K_METRICS,
    K_PLAN,
    K_N
};
static const char *const kind_name[K_N] = {
    "assign", "reward",  "pause", "resume",  "create", "delete",  "status", "batch reward",
    "edit",   "correct", "list",  "observe", "export", "metrics", "plan"};
#define K_FAST K_LIST /* make test: the kinds before this one */

/* Findings of one kind of request. */
struct tally {
    long crashes, no_answer, client_errors, not_problem, mhd, cut;
};

struct fx {
    struct tally t;
    struct tdaemon *d;
    struct tfault *f;
    long acked_rewards;
    char *saved_bin; /* BANDITD_BIN to put back (the plain daemon's test) */
    int created;     /* experiments c-1…c-created were acknowledged (201, or 409 retried) */
    long no_answer_mhd;
    long client_errors;  /* 4xx under an allocation failure: blamed the client */
    char first_4xx[256]; /* the first of them */
    long not_problem;    /* a 5xx that is not problem+json */
    char first_np[256];
    long crashes; /* the daemon died (restarted to go on) */
    char first_crash[512];
    long no_answer; /* connection closed outside libmicrohttpd's own allocations */
    char first_na[256];
};

/* Distinct wrong answers (status, where, detail), for the log. */
#define MAX_DISTINCT 16
static char g_distinct[MAX_DISTINCT][200];
static int g_ndistinct;

static void note_distinct(long status, const char *where, const struct tresp *r)
{
    char line[200];
    const char *detail = r->json != NULL ? tjson_str(r->json, "detail") : NULL;
    snprintf(line, sizeof line, "HTTP %ld, allocation in %s: %.100s", status, where,
             detail != NULL ? detail : (r->body != NULL && r->body[0] ? r->body : "(empty body)"));
    for (int i = 0; i < g_ndistinct; i++)
        if (strcmp(g_distinct[i], line) == 0)
            return;
    if (g_ndistinct < MAX_DISTINCT)
        snprintf(g_distinct[g_ndistinct++], sizeof g_distinct[0], "%s", line);
}

/* The daemon still answers /healthz. */
static int alive(struct fx *x)
{
    struct tresp *h = treq(x->d, "GET", "/healthz", NULL, NULL);
    int ok = h->status == 200;
    tresp_free(h);
    return ok;
}

/* A problem+json document whose status member is the HTTP status. */
static int is_problem(const struct tresp *r)
{
    const char *ct = tresp_content_type(r);
    return ct != NULL && strncmp(ct, "application/problem+json", 24) == 0 && r->json != NULL &&
           json_integer_value(json_object_get(r->json, "status")) == r->status &&
           json_is_string(json_object_get(r->json, "detail"));
}

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof *x);
    if (x == NULL || (x->d = tdaemon_new()) == NULL) {
        free(x);
        return -1;
    }
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    tfault_detach(x->f);
    tdaemon_free(x->d);
    if (x->saved_bin != NULL) {
        if (x->saved_bin[0] != '\0')
            setenv("BANDITD_BIN", x->saved_bin, 1);
        else
            unsetenv("BANDITD_BIN");
        free(x->saved_bin);
    }
    free(x);
    return 0;
}

/* A fresh assignment id of "m" (no fault armed). */
static void fresh_assignment(struct fx *x, char *id, size_t len)
{
    json_t *a = texp_assign(x->d, "m", "{}");
    snprintf(id, len, "%s", tjson_str(a, "[0].id"));
    json_decref(a);
}

/* Bring the state a kind needs (no fault armed). */
static void prepare(struct fx *x, enum kind k, int n, char *id, size_t idlen)
{
    char body[96];
    switch (k) {
    case K_REWARD:
        fresh_assignment(x, id, idlen);
        break;
    case K_BATCH_REWARD: {
        char a[64], b[64];
        fresh_assignment(x, a, sizeof a);
        fresh_assignment(x, b, sizeof b);
        snprintf(id, idlen, "%s\",\"reward\":1},{\"assignment_id\":\"%s", a, b);
        break;
    }
    case K_PAUSE:
    case K_RESUME: {
        snprintf(body, sizeof body, "{\"state\":\"%s\"}", k == K_PAUSE ? "running" : "paused");
        json_decref(tcall(x->d, "PATCH", "/v1/experiments/m2", body, 200));
        break;
    }
    case K_DELETE:
        snprintf(body, sizeof body, "{\"id\":\"d-%d\",\"arms\":[\"a\",\"b\"]}", n);
        json_decref(tcall(x->d, "POST", "/v1/experiments", body, 201));
        break;
    case K_CORRECT: { /* a rewarded pull of "k", to correct from 1 to 0 */
        json_t *a = texp_assign(x->d, "k", "{}");
        snprintf(id, idlen, "%s", tjson_str(a, "[0].id"));
        json_decref(a);
        texp_reward(x->d, "k", id, 1);
        break;
    }
    default:
        break;
    }
}

static struct tresp *send_one(struct fx *x, enum kind k, int n, const char *id)
{
    char path[96], body[320];
    switch (k) {
    case K_ASSIGN:
        return treq(x->d, "POST", "/v1/experiments/m/assignments", "{}", NULL);
    case K_REWARD:
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}", id);
        return treq(x->d, "POST", "/v1/experiments/m/rewards", body, NULL);
    case K_BATCH_REWARD:
        snprintf(body, sizeof body, "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1}]}", id);
        return treq(x->d, "POST", "/v1/experiments/m/rewards", body, NULL);
    case K_PAUSE:
        return treq(x->d, "PATCH", "/v1/experiments/m2", "{\"state\":\"paused\"}", NULL);
    case K_RESUME:
        return treq(x->d, "PATCH", "/v1/experiments/m2", "{\"state\":\"running\"}", NULL);
    case K_CREATE:
        snprintf(body, sizeof body, "{\"id\":\"c-%d\",\"arms\":[\"a\",\"b\",\"c\"]}", n);
        return treq(x->d, "POST", "/v1/experiments", body, NULL);
    case K_DELETE:
        snprintf(path, sizeof path, "/v1/experiments/d-%d", n);
        return treq(x->d, "DELETE", path, NULL, NULL);
    case K_STATUS:
        return treq(x->d, "GET", "/v1/experiments/m/status", NULL, NULL);
    case K_LIST:
        return treq(x->d, "GET", "/v1/experiments", NULL, NULL);
    case K_OBSERVE:
        return treq(x->d, "POST", "/v1/experiments/o/observations", "{\"arm\":\"a\",\"reward\":1}",
                    NULL);
    case K_EXPORT:
        return treq(x->d, "GET", "/v1/experiments/m/export", NULL, NULL);
    case K_METRICS:
        return treq(x->d, "GET", "/metrics", NULL, NULL);
    case K_EDIT:
        snprintf(body, sizeof body,
                 "{\"name\":\"n-%d\",\"assignment_ttl_s\":%d,\"reason\":\"allocfaults\"}", n,
                 3600 + n);
        return treq(x->d, "PATCH", "/v1/experiments/m2", body, NULL);
    case K_CORRECT:
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":0,\"reason\":\"r\"}", id);
        return treq(x->d, "POST", "/v1/experiments/k/corrections", body, NULL);
    case K_PLAN:
        return treq(x->d, "POST", "/v1/plan",
                    "{\"experiment\":{\"arms\":[\"a\",\"b\"],\"policy\":{\"name\":\"sr\"},"
                    "\"goal\":{\"budget\":40}},\"means\":[0.6,0.4],\"runs\":1}",
                    NULL);
    default:
        fail();
        return NULL;
    }
}

/* Success of a kind; a retry of a create or delete that committed says
 * 409 / 404. */
static int success(enum kind k, long s, int retry)
{
    if (retry && k == K_CREATE && s == 409)
        return 1;
    if (retry && k == K_DELETE && s == 404)
        return 1;
    if (retry && k == K_CORRECT && s == 409) /* it committed: corrected already */
        return 1;
    return s >= 200 && s < 300;
}

static void count_reward(struct fx *x, enum kind k, const struct tresp *r)
{
    if ((k != K_REWARD && k != K_BATCH_REWARD) || r->status != 200)
        return;
    const char *st = tjson_str(r->json, "results[0].status");
    if (st != NULL && strcmp(st, "accepted") == 0)
        x->acked_rewards++;
}

static int enumerate(struct fx *x, enum kind k)
{
    int faults = 0;
    for (int n = 1; n <= MAX_N; n++) {
        char id[200] = "";
        prepare(x, k, n, id, sizeof id);
        tfault_marm(x->f, n);
        struct tresp *r = send_one(x, k, n, id);
        int64_t hit = tfault_mdisarm(x->f);
        char where[64];
        snprintf(where, sizeof where, "%s", tfault_mwhere(x->f));
        count_reward(x, k, r);
        if (r->status == 0 && k == K_EXPORT && tresp_header(r, "Banditd-Next-After") != NULL) {
            /* a read failing past the first chunk: the stream is cut after
             * its head, before the chunked terminator, so that no client
             * takes it for complete (api/export.c) */
            x->t.cut++;
        } else if (r->status == 0) {
            if (!hit)
                fail_msg("%s: no answer without any fault: %s", kind_name[k], r->error);
            if (!alive(x)) {
                /* a crash: note it, start again, go on with the next N */
                x->t.crashes++;
                if (x->crashes++ == 0) {
                    char *err = tdaemon_stderr(x->d);
                    const char *tail =
                        err != NULL && strlen(err) > 200 ? err + strlen(err) - 200 : err;
                    snprintf(x->first_crash, sizeof x->first_crash,
                             "%s, allocation %d failed in %s: %s", kind_name[k], n, where,
                             tail != NULL ? tail : "");
                    free(err);
                }
                tdaemon_kill(x->d);
                tdaemon_up(x->d, NULL, 0);
            } else if (strncmp(where, "libmicrohttpd", 13) == 0) {
                x->no_answer_mhd++;
                x->t.mhd++;
            } else if (x->t.no_answer++, x->no_answer++ == 0) {
                snprintf(x->first_na, sizeof x->first_na,
                         "%s, allocation %d failed in %s: connection closed", kind_name[k], n,
                         where);
            }
        } else if (!success(k, r->status, 0)) {
            if (!hit)
                fail_msg("%s: HTTP %ld without any fault: %s", kind_name[k], r->status, r->body);
            if (r->status >= 400 && r->status < 500) {
                note_distinct(r->status, where, r);
                x->t.client_errors++;
                if (x->client_errors++ == 0)
                    snprintf(x->first_4xx, sizeof x->first_4xx,
                             "%s, allocation %d failed in %s: HTTP %ld %.120s", kind_name[k], n,
                             where, r->status, r->body);
            } else if (!is_problem(r)) {
                note_distinct(r->status, where, r);
                x->t.not_problem++;
                if (x->not_problem++ == 0)
                    snprintf(x->first_np, sizeof x->first_np,
                             "%s, allocation %d failed in %s: HTTP %ld, %s: %.120s", kind_name[k],
                             n, where, r->status,
                             tresp_content_type(r) ? tresp_content_type(r) : "no Content-Type",
                             r->body);
            }
        }
        tresp_free(r);
        if (!alive(x)) {
            x->t.crashes++;
            if (x->crashes++ == 0)
                snprintf(x->first_crash, sizeof x->first_crash,
                         "%s, allocation %d failed in %s: dead after answering", kind_name[k], n,
                         where);
            tdaemon_kill(x->d);
            tdaemon_up(x->d, NULL, 0);
        }
        if (!hit)
            break;
        faults++;
        int ok = 0;
        for (int tries = 0; tries < 40 && !ok; tries++) {
            r = send_one(x, k, n, id);
            ok = success(k, r->status, 1);
            count_reward(x, k, r);
            tresp_free(r);
            if (!ok)
                tsleep_ms(25);
        }
        if (!ok)
            fail_msg("%s, allocation %d (%s): still failing after 40 retries", kind_name[k], n,
                     where);
    }
    return faults;
}

static void every_allocation(struct fx *x)
{
    g_ndistinct = 0;
    x->f = tfault_attach(x->d, TFAULT_MEM, 0);
    /* the daemon's sanitizer reports go to files this test reads: the
     * daemons killed to restart them are checked too, and a leak is named
     * with its stack before the test fails */
    tfault_asan_to_files(x->f);
    tdaemon_up(x->d, NULL, 0);
    json_decref(texp_create(x->d, "{\"id\":\"m\",\"policy\":{\"name\":\"uniform\"},"
                                  "\"arms\":[\"a\",\"b\",\"c\"],\"seed\":3}"));
    json_decref(texp_create(x->d, "{\"id\":\"m2\",\"arms\":[\"a\",\"b\"]}"));
    json_decref(texp_create(x->d, "{\"id\":\"k\",\"arms\":[\"a\",\"b\"],\"seed\":4}"));
    json_decref(texp_create(x->d, "{\"id\":\"o\",\"arms\":[\"a\",\"b\"],\"reward\":{\"min\":0,"
                                  "\"max\":1}}"));
    const char *all = getenv("ALLOCFAULTS_ALL");
    int nkinds = all != NULL && strcmp(all, "1") == 0 ? K_N : K_FAST;
    for (int k = 0; k < nkinds; k++) {
        memset(&x->t, 0, sizeof x->t);
        int faults = enumerate(x, (enum kind)k);
        if (k == K_CREATE)
            x->created = faults + 1; /* the last one needed no fault */
        printf("# %s: %d allocations along the request, each failed once: %ld crashes, %ld "
               "closed without an answer (+%ld by libmicrohttpd, %ld streams cut after their "
               "head), %ld 4xx, %ld 5xx not problem+json\n",
               kind_name[k], faults, x->t.crashes, x->t.no_answer, x->t.mhd, x->t.cut,
               x->t.client_errors, x->t.not_problem);
        if (faults == 0)
            fail_msg("%s: no allocation counted: the shim is not loaded?", kind_name[k]);
    }
    printf("# connections closed by libmicrohttpd on its own allocation failure: %ld\n",
           x->no_answer_mhd);
    /* Memory equals the disk: every acknowledged reward, once. */
    json_t *st = texp_status(x->d, "m");
    long pulls = (long)tjson_int(st, "pulls");
    json_decref(st);
    /* A clean stop (its exit status proves no leak and no sanitizer
     * report; it also writes the coverage counts of `make coverage`),
     * then a kill -9, each followed by a restart that must find it all. */
    assert_int_equal(tdaemon_stop(x->d), 0);
    tdaemon_up(x->d, NULL, 0);
    st = texp_status(x->d, "m");
    if (tjson_int(st, "pulls") != pulls)
        fail_msg("%lld pulls after a restart, %ld before", tjson_int(st, "pulls"), pulls);
    json_decref(st);
    assert_int_equal(tdaemon_kill(x->d), 0);
    tdaemon_up(x->d, NULL, 0);
    char msg[256];
    if (tdb_integrity(tdaemon_db_path(x->d), msg, sizeof msg) != 0)
        fail_msg("integrity_check: %s", msg);
    st = texp_status(x->d, "m");
    if (tjson_int(st, "pulls") != pulls || pulls < x->acked_rewards)
        fail_msg("%lld pulls after kill -9, %ld before, %ld rewards acknowledged",
                 tjson_int(st, "pulls"), pulls, x->acked_rewards);
    json_decref(st);
    /* Every acknowledged experiment came back, whole: a configuration
     * stored while jansson failed an allocation lacked members or was no
     * JSON, and the restart skipped it ("stored configuration no longer
     * valid"). */
    for (int n = 1; n <= x->created; n++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/experiments/c-%d", n);
        struct tresp *g = treq(x->d, "GET", path, NULL, NULL);
        if (g->status != 200 || json_array_size(tjson_get(g->json, "bandits[0].arms")) != 3)
            fail_msg("experiment c-%d, acknowledged, after a restart: %ld %.200s", n, g->status,
                     g->body);
        tresp_free(g);
    }
    assert_int_equal(tdaemon_stop(x->d), 0);
    /* Memory errors fail at once; leaks with the findings below. */
    char *rep = tfault_asan_reports(x->f);
    assert_non_null(rep);
    if (strstr(rep, "ERROR: AddressSanitizer") != NULL || strstr(rep, "runtime error") != NULL)
        fail_msg("a memory error under allocation failures:\n%.3000s", rep);
    long leaks = 0;
    for (const char *p = rep; (p = strstr(p, "ERROR: LeakSanitizer")) != NULL; p++)
        leaks++;
    if (leaks > 0) {
        /* the first leak's stack, for the log */
        printf("# %ld daemon runs leaked memory; the first leak:\n", leaks);
        const char *p = strstr(rep, "leak of");
        for (int lines = 0; p != NULL && lines < 12; lines++) {
            const char *nl = strchr(p, '\n');
            int len = nl != NULL ? (int)(nl - p) : (int)strlen(p);
            printf("#   %.*s\n", len, p);
            p = nl != NULL ? nl + 1 : NULL;
        }
    }
    free(rep);
    if (x->not_problem > 0)
        printf("# %ld answers under an allocation failure were not problem+json; first: %s\n",
               x->not_problem, x->first_np);
    if (x->client_errors > 0)
        printf("# %ld answers under an allocation failure were 4xx; first: %s\n", x->client_errors,
               x->first_4xx);
    for (int i = 0; i < g_ndistinct; i++)
        printf("# wrong answer: %s\n", g_distinct[i]);
    if (x->crashes > 0)
        printf("# the daemon died %ld times under an allocation failure; first: %s\n", x->crashes,
               x->first_crash);
    if (x->no_answer > 0)
        printf("# %ld connections closed without an answer; first: %s\n", x->no_answer,
               x->first_na);
    if (x->client_errors > 0 || x->not_problem > 0 || x->crashes > 0 || x->no_answer > 0 ||
        leaks > 0)
        fail_msg("under allocation failures: %ld crashes, %ld closed without an answer, %ld "
                 "4xx, %ld 5xx not problem+json, %ld runs leaking: see the lines above",
                 x->crashes, x->no_answer, x->client_errors, x->not_problem, leaks);
}

static void test_every_allocation_of_every_request(void **state)
{
    every_allocation(*state);
}

/* The same against the daemon built without sanitizers
 * (BANDITD_PLAIN_BIN; make test sets it): ASan serves strdup and the like
 * from its own allocator, so the shim never fails those under the
 * sanitizer build — an unchecked strdup (a reply header's, which crashed
 * libmicrohttpd) shows only here. */
static void test_every_allocation_without_sanitizers(void **state)
{
    struct fx *x = *state;
    const char *plain = getenv("BANDITD_PLAIN_BIN");
    if (plain == NULL || plain[0] == '\0') {
        printf("# BANDITD_PLAIN_BIN is not set: not run\n");
        skip();
        return;
    }
    const char *bin = getenv("BANDITD_BIN");
    x->saved_bin = strdup(bin != NULL ? bin : "");
    setenv("BANDITD_BIN", plain, 1);
    every_allocation(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_allocation_of_every_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_allocation_without_sanitizers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
