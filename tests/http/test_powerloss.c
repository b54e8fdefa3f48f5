/*
 * test_powerloss.c — power loss, SQLite's way (issue 13): the daemon runs
 * under tests/shim/faultfs.so, whose page cache keeps a write only once it
 * is synced; a power cut kills the daemon and puts back on "disk" what was
 * synced, nothing more. Real HTTP load runs meanwhile: assignments and
 * rewards from several clients, PATCHes that pause and resume one
 * experiment, and per round a new experiment created and stopped.
 *
 * --sync full: nothing acknowledged (2xx) is lost and nothing is doubled —
 *   every acknowledged reward is on disk exactly once with its value, the
 *   status matches, every acknowledged create and stop holds, the paused
 *   experiment is in the last acknowledged state (or the one of a PATCH
 *   whose answer the cut swallowed).
 * --sync normal: WAL + synchronous=NORMAL syncs the WAL only at
 *   checkpoints, so what was committed since the last one may be lost —
 *   but only that: the log on disk is a prefix of what was acknowledged
 *   (no gap, no reward without its assignment, none doubled or invented, a
 *   lost acknowledged reward is never followed by a kept one sent after it
 *   was acknowledged), the daemon comes back, and the database passes
 *   integrity_check.
 *
 * POWERLOSS_CUTS (default 2 per mode: `make test`; `make test-crash` runs
 * 20) sets the number of cuts, POWERLOSS_SEED the moments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tests/support/faults.h"
#include "tests/support/harness.h"

#define NWORKERS 3
#define MAX_RECORDS 100000
#define ARMS 3
#define MAX_ROUNDS 64

enum { REC_ACKED = 1, REC_UNKNOWN = 2 };

/* One reward the test sent: its assignment, value, and when (a logical
 * clock shared by every thread: sent < acknowledged). */
struct record {
    char id[48];
    int64_t seq;
    int arm, value, exploit, state;
    int64_t sent, acked;
};

struct round_exp {
    int created; /* acknowledged */
    int stopped; /* acknowledged */
};

struct shared {
    struct tdaemon *d;
    int full;
    pthread_mutex_t mu;
    struct record *recs;
    size_t nrecs;
    int64_t clock;
    int stop; /* workers: end of round (the daemon is gone) */
    /* the state experiment "st": last acknowledged state, in-flight target */
    char st_acked[16], st_inflight[16];
    struct round_exp rounds[MAX_ROUNDS];
    long bad_status; /* answers that are neither 2xx nor 503 */
    char bad[256];
    char lost_id[48]; /* an acknowledged assignment the last cut lost ("" none) */
    long reused;      /* lost assignment ids handed out again */
    char reused_id[48];
};

static int64_t tick(struct shared *sh)
{
    return __atomic_add_fetch(&sh->clock, 1, __ATOMIC_ACQ_REL);
}

static void note_bad(struct shared *sh, const char *what, const struct tresp *r)
{
    pthread_mutex_lock(&sh->mu);
    sh->bad_status++;
    if (sh->bad[0] == '\0')
        snprintf(sh->bad, sizeof sh->bad, "%s: HTTP %ld %.120s", what, r->status,
                 r->body ? r->body : "");
    pthread_mutex_unlock(&sh->mu);
}

struct worker {
    struct shared *sh;
    struct trng rng;
};

/* Assign, then reward that assignment, until the daemon is gone. */
static void *reward_worker(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    struct tclient *c = tclient_new(sh->d);
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        struct tresp *a = tclient_req(c, "POST", "/v1/experiments/pl/assignments", "{}", NULL);
        if (a->status == 0) {
            tresp_free(a);
            break;
        }
        if (a->status != 201) {
            if (a->status != 503)
                note_bad(sh, "assign", a);
            tresp_free(a);
            continue;
        }
        struct record rec = {0};
        snprintf(rec.id, sizeof rec.id, "%s", tjson_str(a->json, "assignments[0].id"));
        rec.seq = tassignment_seq(rec.id, NULL, 0);
        rec.arm = (int)tjson_int(a->json, "assignments[0].arm_index");
        rec.exploit = json_is_true(tjson_get(a->json, "assignments[0].exploit"));
        tresp_free(a);
        rec.value = trng_bernoulli(&w->rng, 0.5);
        char body[128];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", rec.id, rec.value);
        rec.sent = tick(sh);
        struct tresp *r = tclient_req(c, "POST", "/v1/experiments/pl/rewards", body, NULL);
        const char *st = tjson_str(r->json, "results[0].status");
        if (r->status == 0) {
            rec.state = REC_UNKNOWN;
        } else if (r->status == 200 && st != NULL && strcmp(st, "accepted") == 0) {
            rec.state = REC_ACKED;
            rec.acked = tick(sh);
        } else if (r->status != 503) {
            note_bad(sh, "reward", r);
        }
        tresp_free(r);
        if (rec.state != 0) {
            pthread_mutex_lock(&sh->mu);
            if (sh->nrecs < MAX_RECORDS)
                sh->recs[sh->nrecs++] = rec;
            pthread_mutex_unlock(&sh->mu);
        }
        if (rec.state == REC_UNKNOWN)
            break;
    }
    tclient_free(c);
    return NULL;
}

struct state_worker {
    struct shared *sh;
    int round;
};

/* PATCH "st" paused ↔ running; create "stop-R" and stop it. */
static void *state_worker(void *arg)
{
    struct state_worker *w = arg;
    struct shared *sh = w->sh;
    struct tclient *c = tclient_new(sh->d);
    char body[160];
    struct round_exp *re = &sh->rounds[w->round];
    snprintf(body, sizeof body, "{\"id\":\"stop-%d\",\"arms\":[\"a\",\"b\"]}", w->round);
    struct tresp *r = tclient_req(c, "POST", "/v1/experiments", body, NULL);
    if (r->status == 201)
        re->created = 1;
    else if (r->status != 0 && r->status != 503)
        note_bad(sh, "create", r);
    int gone = r->status == 0;
    tresp_free(r);
    if (re->created && !gone) {
        char path[64];
        snprintf(path, sizeof path, "/v1/experiments/stop-%d", w->round);
        r = tclient_req(c, "PATCH", path, "{\"state\":\"stopped\"}", NULL);
        if (r->status == 200)
            re->stopped = 1;
        else if (r->status != 0 && r->status != 503)
            note_bad(sh, "stop", r);
        gone = r->status == 0;
        tresp_free(r);
    }
    for (int i = 0; !gone && !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); i++) {
        const char *want = i % 2 == 0 ? "paused" : "running";
        snprintf(sh->st_inflight, sizeof sh->st_inflight, "%s", want);
        snprintf(body, sizeof body, "{\"state\":\"%s\"}", want);
        r = tclient_req(c, "PATCH", "/v1/experiments/st", body, NULL);
        if (r->status == 200) {
            snprintf(sh->st_acked, sizeof sh->st_acked, "%s", want);
            sh->st_inflight[0] = '\0';
        } else if (r->status != 0 && r->status != 503) {
            note_bad(sh, "patch", r);
        }
        gone = r->status == 0;
        tresp_free(r);
        tsleep_ms(5);
    }
    tclient_free(c);
    return NULL;
}

/* --- what the disk holds ----------------------------------------------------- */

struct disk_reward {
    int64_t ref;
    double value;
};

struct disk {
    int64_t last_seq;
    int gap;
    struct disk_reward *rw;
    size_t nrw;
    long orphan; /* rewards referring to no assignment */
};

static void read_disk(const char *path, struct disk *out)
{
    memset(out, 0, sizeof *out);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT e.seq, e.kind, e.ref, e.value, e.arm, e.flags,"
                                        " (SELECT count(*) FROM events a WHERE a.exp = e.exp"
                                        "  AND a.seq = e.ref AND a.kind = 1)"
                                        " FROM events e JOIN experiments x ON x.rowid = e.exp"
                                        " WHERE x.id = 'pl' ORDER BY e.seq",
                                        -1, &q, NULL),
                     SQLITE_OK);
    size_t cap = 1024;
    out->rw = calloc(cap, sizeof *out->rw);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(q, 0);
        int kind = sqlite3_column_int(q, 1);
        if (seq != out->last_seq + 1)
            out->gap = 1;
        out->last_seq = seq;
        if (kind != 2)
            continue;
        if (sqlite3_column_int(q, 6) != 1)
            out->orphan++;
        if (out->nrw == cap) {
            cap *= 2;
            out->rw = realloc(out->rw, cap * sizeof *out->rw);
            assert_non_null(out->rw);
        }
        out->rw[out->nrw].ref = sqlite3_column_int64(q, 2);
        out->rw[out->nrw].value = sqlite3_column_double(q, 3);
        out->nrw++;
    }
    assert_int_equal(rc, SQLITE_DONE);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static int cmp_ref(const void *a, const void *b)
{
    const struct disk_reward *x = a, *y = b;
    return x->ref < y->ref ? -1 : x->ref > y->ref;
}

static const struct disk_reward *disk_find(const struct disk *dk, int64_t ref)
{
    struct disk_reward key = {.ref = ref};
    return bsearch(&key, dk->rw, dk->nrw, sizeof *dk->rw, cmp_ref);
}

static int cmp_rec(const void *a, const void *b)
{
    const struct record *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The record of assignment seq (sh->recs sorted by seq), or NULL. */
static const struct record *rec_find(const struct shared *sh, int64_t seq)
{
    struct record key = {.seq = seq};
    return bsearch(&key, sh->recs, sh->nrecs, sizeof *sh->recs, cmp_rec);
}

/* After a restart: check the disk and the status against what was
 * acknowledged; keep only the records that survived (--sync normal may
 * lose some; --sync full none). Returns how many acknowledged were lost. */
static size_t verify(struct shared *sh, int cut)
{
    char msg[256];
    if (tdb_integrity(tdaemon_db_path(sh->d), msg, sizeof msg) != 0)
        fail_msg("cut %d: integrity_check: %s", cut, msg);
    struct disk dk;
    read_disk(tdaemon_db_path(sh->d), &dk);
    if (dk.gap)
        fail_msg("cut %d: the event log has a gap (last seq %lld)", cut, (long long)dk.last_seq);
    if (dk.orphan > 0)
        fail_msg("cut %d: %ld rewards refer to no assignment on disk", cut, dk.orphan);
    qsort(dk.rw, dk.nrw, sizeof *dk.rw, cmp_ref);
    qsort(sh->recs, sh->nrecs, sizeof *sh->recs, cmp_rec);
    for (size_t i = 1; i < dk.nrw; i++)
        if (dk.rw[i].ref == dk.rw[i - 1].ref)
            fail_msg("cut %d: assignment seq %lld rewarded twice on disk", cut,
                     (long long)dk.rw[i].ref);
    for (size_t i = 0; i < dk.nrw; i++) {
        const struct record *r = rec_find(sh, dk.rw[i].ref);
        if (r == NULL)
            fail_msg("cut %d: a reward for assignment seq %lld is on disk that was never sent", cut,
                     (long long)dk.rw[i].ref);
        else if (dk.rw[i].value != (double)r->value)
            fail_msg("cut %d: assignment seq %lld: %g on disk, %d sent", cut,
                     (long long)dk.rw[i].ref, dk.rw[i].value, r->value);
    }
    /* Lost acknowledged rewards; the prefix rule. */
    size_t lost = 0, kept = 0;
    int64_t min_ack_lost = INT64_MAX, max_sent_kept = 0;
    long pulls[ARMS] = {0};
    for (size_t i = 0; i < sh->nrecs; i++) {
        struct record *r = &sh->recs[i];
        int present = disk_find(&dk, r->seq) != NULL;
        if (present) {
            if (r->sent > max_sent_kept)
                max_sent_kept = r->sent;
            r->state = REC_ACKED; /* an unknown one that committed */
            if (!r->exploit)
                pulls[r->arm]++;
            sh->recs[kept++] = *r;
            continue;
        }
        if (r->state == REC_ACKED) {
            if (sh->full)
                fail_msg("cut %d: acknowledged reward %s (seq %lld) lost with --sync full", cut,
                         r->id, (long long)r->seq);
            lost++;
            if (sh->lost_id[0] == '\0')
                snprintf(sh->lost_id, sizeof sh->lost_id, "%s", r->id);
            if (r->acked < min_ack_lost)
                min_ack_lost = r->acked;
        }
    }
    if (max_sent_kept > min_ack_lost)
        fail_msg("cut %d: a reward sent after a lost one was acknowledged survived: the log on "
                 "disk is not a prefix",
                 cut);
    sh->nrecs = kept;
    /* Memory equals the disk. */
    json_t *st = texp_status(sh->d, "pl");
    for (int a = 0; a < ARMS; a++) {
        char p[64];
        snprintf(p, sizeof p, "bandits[0].arms[%d].pulls", a);
        if (tjson_int(st, p) != pulls[a])
            fail_msg("cut %d: arm %d: status %lld pulls, %ld rewards on disk", cut, a,
                     tjson_int(st, p), pulls[a]);
    }
    json_decref(st);
    free(dk.rw);
    return lost;
}

/* The state experiments after a cut (--sync full). */
static void verify_states(struct shared *sh, int rounds, int cut)
{
    json_t *j = tcall(sh->d, "GET", "/v1/experiments/st", NULL, 200);
    const char *got = tjson_str(j, "state");
    if (sh->full && sh->st_acked[0] != '\0' && strcmp(got, sh->st_acked) != 0 &&
        strcmp(got, sh->st_inflight) != 0)
        fail_msg("cut %d: \"st\" is %s; acknowledged %s (in flight: %s)", cut, got, sh->st_acked,
                 sh->st_inflight[0] ? sh->st_inflight : "none");
    snprintf(sh->st_acked, sizeof sh->st_acked, "%s", got);
    sh->st_inflight[0] = '\0';
    json_decref(j);
    for (int k = 0; k < rounds && sh->full; k++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/experiments/stop-%d", k);
        struct tresp *r = treq(sh->d, "GET", path, NULL, NULL);
        if (sh->rounds[k].created && r->status != 200)
            fail_msg("cut %d: acknowledged experiment stop-%d is gone (HTTP %ld)", cut, k,
                     r->status);
        if (sh->rounds[k].stopped &&
            strcmp(tjson_str(r->json, "state") ? tjson_str(r->json, "state") : "", "stopped") != 0)
            fail_msg("cut %d: acknowledged stop of stop-%d lost", cut, k);
        tresp_free(r);
    }
}

/* An assignment acknowledged before the cut and lost with it: assignments
 * made now must not be handed out under its id, or a late reward for the
 * lost one is credited to another unit's assignment (and maybe arm). Ids
 * are "<token>-<seq>" and the seqs after a loss are the lost ones again. */
static void check_id_reuse(struct shared *sh)
{
    int64_t want = tassignment_seq(sh->lost_id, NULL, 0);
    for (int i = 0; i < 4000; i++) {
        json_t *a = texp_assign(sh->d, "pl", "{}");
        const char *id = tjson_str(a, "[0].id");
        int64_t seq = tassignment_seq(id, NULL, 0);
        int same = id != NULL && strcmp(id, sh->lost_id) == 0;
        json_decref(a);
        if (seq == want && !same) {
            /* The seq is handed out again, under another id: a late
             * reward of the lost assignment must not be credited to it. */
            char body[128];
            snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}", sh->lost_id);
            struct tresp *r = treq(sh->d, "POST", "/v1/experiments/pl/rewards", body, NULL);
            if (r->status != 404 && sh->reused++ == 0) /* 404: unknown, credited to nobody */
                snprintf(sh->reused_id, sizeof sh->reused_id, "%s", sh->lost_id);
            tresp_free(r);
            break;
        }
        if (same) {
            if (sh->reused++ == 0)
                snprintf(sh->reused_id, sizeof sh->reused_id, "%s", sh->lost_id);
            break;
        }
        if (seq >= want)
            break;
    }
    sh->lost_id[0] = '\0';
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v != NULL && *v ? strtol(v, NULL, 10) : def;
}

static void run(int full)
{
    long cuts = env_long("POWERLOSS_CUTS", 2);
    if (cuts > MAX_ROUNDS)
        cuts = MAX_ROUNDS;
    struct trng rng;
    trng_seed(&rng, (uint64_t)env_long("POWERLOSS_SEED", 20261124) + (uint64_t)full);
    struct shared *sh = calloc(1, sizeof *sh);
    assert_non_null(sh);
    sh->recs = calloc(MAX_RECORDS, sizeof *sh->recs);
    assert_non_null(sh->recs);
    pthread_mutex_init(&sh->mu, NULL);
    sh->full = full;
    sh->d = tdaemon_new();
    assert_non_null(sh->d);
    struct tfault *f = tfault_attach(sh->d, TFAULT_FS, TFAULT_PAGECACHE);
    const char *extra[] = {"--sync", full ? "full" : "normal", NULL};
    tdaemon_up(sh->d, extra, 0);
    json_decref(texp_create(sh->d, "{\"id\":\"pl\",\"policy\":{\"name\":\"adapt\"},"
                                   "\"goal\":{\"delta\":0.001},\"arms\":[\"a\",\"b\",\"c\"],"
                                   "\"seed\":7}"));
    json_decref(texp_create(sh->d, "{\"id\":\"st\",\"arms\":[\"a\",\"b\"]}"));
    /* A clean stop checkpoints: the experiments are durable in both modes. */
    assert_int_equal(tdaemon_stop(sh->d), 0);
    tdaemon_up(sh->d, extra, 0);
    snprintf(sh->st_acked, sizeof sh->st_acked, "running");
    size_t lost_total = 0;
    for (int k = 0; k < cuts; k++) {
        __atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);
        pthread_t t[NWORKERS + 1];
        struct worker w[NWORKERS];
        for (int i = 0; i < NWORKERS; i++) {
            w[i].sh = sh;
            trng_seed(&w[i].rng, trng_next(&rng));
            assert_int_equal(pthread_create(&t[i], NULL, reward_worker, &w[i]), 0);
        }
        struct state_worker sw = {.sh = sh, .round = k};
        assert_int_equal(pthread_create(&t[NWORKERS], NULL, state_worker, &sw), 0);
        unsigned ms = 100 + (unsigned)(trng_uniform(&rng) * 700);
        tsleep_ms(ms);
        int64_t syncs = tfault_ctl(f)->syncs;
        tfault_powercut(f, sh->d);
        __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
        for (int i = 0; i <= NWORKERS; i++)
            pthread_join(t[i], NULL);
        if (sh->bad_status > 0)
            fail_msg("cut %d: %ld unexpected answers; first: %s", k, sh->bad_status, sh->bad);
        tdaemon_up(sh->d, extra, 0);
        size_t acked = sh->nrecs;
        size_t lost = verify(sh, k);
        verify_states(sh, k + 1, k);
        if (!full && sh->lost_id[0] != '\0')
            check_id_reuse(sh);
        lost_total += lost;
        printf("# --sync %s, cut %d after %u ms (%lld syncs so far): %zu rewards sent, %zu "
               "acknowledged lost\n",
               extra[1], k + 1, ms, (long long)syncs, acked, lost);
    }
    printf("# --sync %s: %zu acknowledged rewards lost over %ld cuts%s\n", extra[1], lost_total,
           cuts, full ? "" : " (allowed: committed since the last checkpoint)");
    assert_int_equal(tdaemon_stop(sh->d), 0);
    tfault_detach(f);
    tdaemon_free(sh->d);
    long reused = sh->reused;
    char reused_id[48];
    snprintf(reused_id, sizeof reused_id, "%s", sh->reused_id);
    pthread_mutex_destroy(&sh->mu);
    free(sh->recs);
    free(sh);
    if (reused > 0)
        fail_msg("(issue 13): --sync normal: after a power cut, %ld assignment ids acknowledged "
                 "before it were handed out again (first: %s): a late reward for the lost "
                 "assignment is credited to the new one",
                 reused, reused_id);
}

static void test_powerloss_sync_full(void **state)
{
    (void)state;
    run(1);
}

static void test_powerloss_sync_normal(void **state)
{
    (void)state;
    run(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_powerloss_sync_full),
        cmocka_unit_test(test_powerloss_sync_normal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
