/*
 * test_crash.c — kill -9 at random moments loses no acknowledged reward and
 * records none twice (issue 5, "Crash safety").
 *
 * Rounds: CRASH_THREADS client threads (own connections) each loop
 * "assign, then reward that assignment" against one experiment; after a
 * random delay (seeded: CRASH_SEED) the daemon is killed with SIGKILL, the
 * threads notice and stop, and the daemon restarts on the same database.
 * Every reward answered 200 "accepted" is acknowledged. A reward whose
 * answer was lost in the kill is unknown: after the restart it is sent
 * again, and must come back "accepted" (it had not committed) or
 * "duplicate" (it had, with the same value) — never "conflict" or unknown —
 * after which it is acknowledged too. Then, with zero tolerance:
 *
 *   - status: pulls per arm = acknowledged rewards per arm, and each arm's
 *     mean = the mean of the values acknowledged for it (rewards of
 *     "exploit" assignments, served once the experiment stopped, are kept
 *     in the log but are no pulls; equal arms and a small δ keep that rare);
 *   - the events table (read directly with SQLite, or PostgreSQL): exactly
 *     one REWARD per acknowledged assignment, with its value, and no other
 *     REWARD.
 *
 * The rounds run twice: on the harness's SQLite file, and on a database of
 * a real PostgreSQL server the test starts (tests/support/tpg.h).
 *
 * CRASH_KILLS (default 3: `make test`, well under 30 s) sets the number of
 * kills; `make test-crash` runs 25. The daemon is the harness's, with
 * --sync normal: a kill -9 loses nothing it acknowledged even without an
 * fsync per commit (the WAL is written before the answer); CRASH_SYNC=full
 * runs the same with an fsync per commit.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "tests/support/harness.h"
#include "tests/support/tpg.h"

#define MAX_THREADS 16
#define MAX_RECORDS 200000
#define ARMS 3

/* One reward the test sent. */
struct record {
    char id[48];
    int64_t seq;
    int arm;
    int value;
    int exploit; /* served after the stop: recorded, but not a pull */
    int state;   /* REC_ACKED, REC_UNKNOWN */
};
enum { REC_ACKED = 1, REC_UNKNOWN = 2 };

struct shared {
    struct tdaemon *d;
    char pg[256]; /* the PostgreSQL database's URI; "" for SQLite */
    pthread_mutex_t mu;
    struct record *recs;
    size_t nrecs;
    long other_status; /* non-2xx answers other than 503 */
};

struct worker {
    struct shared *sh;
    struct trng rng;
};

static void add_record(struct shared *sh, const char *id, int arm, int exploit, int value,
                       int state)
{
    pthread_mutex_lock(&sh->mu);
    if (sh->nrecs < MAX_RECORDS) {
        struct record *r = &sh->recs[sh->nrecs++];
        snprintf(r->id, sizeof r->id, "%s", id);
        r->seq = tassignment_seq(id, NULL, 0);
        r->arm = arm;
        r->value = value;
        r->exploit = exploit;
        r->state = state;
    }
    pthread_mutex_unlock(&sh->mu);
}

/* Assign then reward until the daemon stops answering. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    struct tclient *c = tclient_new(sh->d);
    for (;;) {
        struct tresp *a = tclient_req(c, "POST", "/v1/experiments/crash/assignments", "{}", NULL);
        if (a->status == 0) {
            tresp_free(a);
            break; /* killed */
        }
        if (a->status != 201) {
            pthread_mutex_lock(&sh->mu);
            sh->other_status += a->status != 503;
            pthread_mutex_unlock(&sh->mu);
            tresp_free(a);
            continue;
        }
        char id[48];
        snprintf(id, sizeof id, "%s", tjson_str(a->json, "assignments[0].id"));
        int arm = (int)tjson_int(a->json, "assignments[0].arm_index");
        int exploit = json_is_true(tjson_get(a->json, "assignments[0].exploit"));
        tresp_free(a);
        int value = trng_bernoulli(&w->rng, 0.5);
        char body[128];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", id, value);
        struct tresp *r = tclient_req(c, "POST", "/v1/experiments/crash/rewards", body, NULL);
        if (r->status == 0) {
            add_record(sh, id, arm, exploit, value, REC_UNKNOWN);
            tresp_free(r);
            break;
        }
        if (r->status == 200 &&
            strcmp(tjson_str(r->json, "results[0].status") ? tjson_str(r->json, "results[0].status")
                                                           : "",
                   "accepted") == 0) {
            add_record(sh, id, arm, exploit, value, REC_ACKED);
        } else {
            pthread_mutex_lock(&sh->mu);
            sh->other_status += r->status != 503;
            pthread_mutex_unlock(&sh->mu);
        }
        tresp_free(r);
    }
    tclient_free(c);
    return NULL;
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v != NULL && *v ? strtol(v, NULL, 10) : def;
}

/* Resolve the rewards whose answer the kill swallowed: send them again. */
static void resolve_unknown(struct shared *sh)
{
    for (size_t i = 0; i < sh->nrecs; i++) {
        struct record *rec = &sh->recs[i];
        if (rec->state != REC_UNKNOWN)
            continue;
        char body[128];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", rec->id,
                 rec->value);
        struct tresp *r = treq(sh->d, "POST", "/v1/experiments/crash/rewards", body, NULL);
        assert_status(r, 200);
        const char *st = tjson_str(r->json, "results[0].status");
        assert_non_null(st);
        if (strcmp(st, "accepted") != 0 && strcmp(st, "duplicate") != 0)
            fail_msg("reward for %s after restart: %s (want accepted or duplicate)", rec->id, st);
        rec->state = REC_ACKED;
        tresp_free(r);
    }
}

static int cmp_seq(const void *a, const void *b)
{
    const struct record *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The REWARD events of experiment "crash", by assignment seq, read on a
 * connection of the test's own: from the SQLite file, or from PostgreSQL. */
struct disk_reward {
    int64_t ref;
    double value;
};

#define DISK_SQL                                                                                   \
    "SELECT e.ref, e.value FROM events e JOIN experiments x ON x.rowid = e.exp"                    \
    " WHERE x.id = 'crash' AND e.kind = 2 ORDER BY e.ref, e.seq"

static struct disk_reward *disk_rewards(const struct shared *sh, size_t *n)
{
    struct disk_reward *out = calloc(MAX_RECORDS + 1, sizeof *out);
    assert_non_null(out);
    *n = 0;
    if (sh->pg[0] != '\0') {
        PGconn *c = PQconnectdb(sh->pg);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PGresult *r = PQexec(c, DISK_SQL);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        for (int i = 0; i < PQntuples(r) && *n <= MAX_RECORDS; i++) {
            out[*n].ref = strtoll(PQgetvalue(r, i, 0), NULL, 10);
            out[*n].value = strtod(PQgetvalue(r, i, 1), NULL);
            (*n)++;
        }
        PQclear(r);
        PQfinish(c);
        return out;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int rc;
    assert_int_equal(sqlite3_open_v2(tdaemon_db_path(sh->d), &db, SQLITE_OPEN_READONLY, NULL),
                     SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    assert_int_equal(sqlite3_prepare_v2(db, DISK_SQL, -1, &q, NULL), SQLITE_OK);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && *n <= MAX_RECORDS) {
        out[*n].ref = sqlite3_column_int64(q, 0);
        out[*n].value = sqlite3_column_double(q, 1);
        (*n)++;
    }
    assert_true(rc == SQLITE_DONE || rc == SQLITE_ROW);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

/* Every acknowledged reward exactly once: through the API and on disk. */
static void verify(struct shared *sh)
{
    long pulls[ARMS] = {0}, sum[ARMS] = {0};
    for (size_t i = 0; i < sh->nrecs; i++) {
        assert_int_equal(sh->recs[i].state, REC_ACKED);
        assert_in_range(sh->recs[i].arm, 0, ARMS - 1);
        if (sh->recs[i].exploit)
            continue; /* the log keeps it; the statistics do not count it */
        pulls[sh->recs[i].arm]++;
        sum[sh->recs[i].arm] += sh->recs[i].value;
    }
    json_t *st = texp_status(sh->d, "crash");
    texp_assert_acknowledged(st, ARMS, pulls, sum);
    long total = 0;
    for (int a = 0; a < ARMS; a++)
        total += pulls[a];
    assert_int_equal(tjson_int(st, "pulls"), total);
    json_decref(st);

    /* The log itself: REWARD events (kind 2) by assignment seq. */
    qsort(sh->recs, sh->nrecs, sizeof *sh->recs, cmp_seq);
    size_t n = 0;
    struct disk_reward *disk = disk_rewards(sh, &n);
    size_t i;
    for (i = 0; i < n; i++) {
        if (i >= sh->nrecs || sh->recs[i].seq != disk[i].ref)
            fail_msg("a REWARD for assignment seq %lld is on disk that was never "
                     "acknowledged (or twice)",
                     (long long)disk[i].ref);
        if (disk[i].value != (double)sh->recs[i].value)
            fail_msg("assignment seq %lld: %g on disk, %d acknowledged", (long long)disk[i].ref,
                     disk[i].value, sh->recs[i].value);
    }
    free(disk);
    if (i != sh->nrecs)
        fail_msg("%zu acknowledged rewards, %zu on disk (first missing: %s)", sh->nrecs, i,
                 sh->recs[i].id);
}

static int setup(void **state)
{
    struct shared *sh = calloc(1, sizeof *sh);
    if (sh == NULL || (sh->recs = calloc(MAX_RECORDS, sizeof(struct record))) == NULL) {
        free(sh);
        return -1;
    }
    pthread_mutex_init(&sh->mu, NULL);
    *state = sh;
    return 0;
}

/* Also after a failed assertion: no daemon is left running. */
static int teardown(void **state)
{
    struct shared *sh = *state;
    tdaemon_free(sh->d);
    pthread_mutex_destroy(&sh->mu);
    free(sh->recs);
    free(sh);
    return 0;
}

/* The rounds, on the store sh->pg names (SQLite when empty). */
static void kill9_rounds(struct shared *sh)
{
    long kills = env_long("CRASH_KILLS", 3);
    long nthreads = env_long("CRASH_THREADS", 4);
    uint64_t seed = (uint64_t)env_long("CRASH_SEED", 20261122);
    const char *sync = getenv("CRASH_SYNC");
    const char *extra[] = {"--sync", sync != NULL && *sync ? sync : "normal", "--db", sh->pg, NULL};
    if (nthreads < 1 || nthreads > MAX_THREADS)
        nthreads = 4;
    if (sh->pg[0] == '\0')
        extra[2] = NULL; /* the harness's SQLite file */

    sh->d = tdaemon_start(extra);
    assert_non_null(sh->d);
    json_decref(texp_create(sh->d, "{\"id\":\"crash\",\"policy\":{\"name\":\"adapt\"},"
                                   "\"goal\":{\"delta\":0.001},\"arms\":[\"a\",\"b\",\"c\"],"
                                   "\"seed\":7}"));
    struct trng rng;
    trng_seed(&rng, seed);
    printf("# %ld kills, %ld threads, seed %llu, --sync %s, %s\n", kills, nthreads,
           (unsigned long long)seed, extra[1], sh->pg[0] ? "PostgreSQL" : "SQLite");

    for (long k = 0; k < kills; k++) {
        pthread_t t[MAX_THREADS];
        struct worker w[MAX_THREADS];
        for (long i = 0; i < nthreads; i++) {
            w[i].sh = sh;
            trng_seed(&w[i].rng, trng_next(&rng));
            assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
        }
        /* a random moment: 20 to 600 ms into the round */
        unsigned ms = 20 + (unsigned)(trng_uniform(&rng) * 580);
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        assert_int_equal(tdaemon_kill(sh->d), 0);
        for (long i = 0; i < nthreads; i++)
            pthread_join(t[i], NULL);
        assert_int_equal(tdaemon_restart(sh->d), 0);
        resolve_unknown(sh);
        verify(sh);
        printf("# kill %ld after %u ms: %zu rewards acknowledged so far, all present once\n", k + 1,
               ms, sh->nrecs);
    }
    assert_int_equal(sh->other_status, 0);
    assert_true(sh->nrecs > 0);
    assert_int_equal(tdaemon_stop(sh->d), 0);
}

static void test_kill9_loses_nothing_acknowledged(void **state)
{
    kill9_rounds(*state);
}

/* The same on PostgreSQL: a daemon killed with SIGKILL in the middle of
 * group commits, on a real server the test starts (tpg.h). */
static void test_kill9_postgresql(void **state)
{
    struct shared *sh = *state;
    tpg_new_db(sh->pg, sizeof sh->pg);
    kill9_rounds(sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_loses_nothing_acknowledged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_postgresql, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
