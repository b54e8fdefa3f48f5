/*
 * test_exp_pending.c — the pending assignments of an experiment whose
 * answers come out of order (exp/table.c's expiry FIFO, exp/snapshot.c's
 * spacing), through the runtime and a real store:
 *
 *   - one old assignment stays pending while thousands after it are
 *     answered, some left pending: the pending count is right at every
 *     step, each pending one expires at its own expiry and not a
 *     millisecond before, in creation order, and the log holds exactly
 *     those expiries;
 *   - snapshots of a growing pending set come every --snapshot-every
 *     events, or every half as many events as are pending when that is
 *     more, and never stop coming;
 *   - answers behind an old pending assignment are let go of without a
 *     later assignment (the snapshots' spacing shrinks back at once);
 *   - the same out-of-order experiment restarted from its latest snapshot
 *     and the tail (the events before the snapshot deleted: only the
 *     snapshot can load it) and from the whole log: both hold the same
 *     pending assignments, each expiring at its own time.
 *
 * Times are the wall clock's (the registry's sweeper expires by it) plus
 * simulated offsets, with a TTL no run comes near.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "base/clock.h"
#include "exp/exp.h"
#include "store/store.h"
#include "tests/support/trun.h"
#include "tests/support/tstore.h"

#define TTL_MS ((int64_t)3600 * 1000)
#define STEPS 3000 /* assignments after the old one */
#define KEEP 97    /* every KEEP-th of them stays pending */
#define MAX_KEPT (STEPS / KEEP + 1)

static struct exp_limits limits(size_t snapshot_every, int no_snapshots)
{
    struct exp_limits l = {.max_experiments = 10,
                           .max_bandits = 4,
                           .max_arms = 8,
                           .max_batch = 1000,
                           .max_count = 100,
                           .max_pending = 100000,
                           .history_points = 16,
                           .snapshot_every = snapshot_every,
                           .no_snapshots = no_snapshots};
    return l;
}

/* Create experiment id (three arms, never stopping, TTL_MS) and wait. */
static void create(const char *id)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"arms\":[\"a\",\"b\",\"c\"],\"policy\":{\"name\":\"uniform\"},"
             "\"stop_rule\":\"none\",\"seed\":7,\"assignment_ttl_s\":%d}",
             id, (int)(TTL_MS / 1000));
    exp_put(trun_create(body));
}

/* Submit b (x locked) and wait for its commit; unlocks x. */
static void commit(struct exp *x, struct exp_batch *b)
{
    struct twait w;
    twait_init(&w);
    if (b->n == 0) {
        twait_cancel(&w);
        exp_unlock(x);
    } else {
        assert_int_equal(exp_submit_locked(x, b, twait_done, &w), STORE_OK);
        exp_unlock(x);
        assert_int_equal(twait_wait(&w), STORE_OK);
    }
    exp_batch_free(b);
}

/* One pending assignment of x made at now: its seq. */
static int64_t assign(struct exp *x, struct exp_batch *b, int64_t now)
{
    const struct exp_assignment *a = NULL;
    assert_int_equal(exp_ev_assign(x, b, -1, NULL, now, &a), EXP_OK);
    assert_int_equal(a->status, EXP_A_PENDING);
    assert_int_equal(a->expires_ms, now + TTL_MS);
    return a->seq;
}

/* What stays pending: seqs and expiries, in creation order. */
struct kept {
    int64_t seq[MAX_KEPT + 1], expires[MAX_KEPT + 1];
    size_t n;
};

/* Experiment id: one assignment at t0 left pending, then STEPS more 10 ms
 * apart, each answered at once but every KEEP-th. The pending count is
 * checked at every step. */
static void drive(const char *id, int64_t t0, struct kept *k)
{
    struct exp *x = exp_get(id);
    assert_non_null(x);
    k->n = 0;
    for (int i = 0; i <= STEPS; i++) {
        int64_t now = t0 + 10 * (int64_t)i;
        struct exp_batch b;
        exp_batch_init(&b);
        exp_lock(x);
        assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
        int64_t seq = assign(x, &b, now);
        if (i == 0 || i % KEEP == 0) {
            k->seq[k->n] = seq;
            k->expires[k->n++] = now + TTL_MS;
        } else {
            assert_int_equal(exp_ev_reward(x, &b, seq, (double)(i % 2), now), EXP_R_ACCEPTED);
        }
        assert_int_equal(exp_pending_count(x), k->n);
        commit(x, &b);
    }
    exp_put(x);
}

/* Step the clock to each kept assignment's expiry: nothing expires a
 * millisecond before it, exactly that one at it. */
static void expire_one_by_one(const char *id, const struct kept *k)
{
    struct exp *x = exp_get(id);
    assert_non_null(x);
    assert_int_equal(exp_pending_count(x), k->n);
    for (size_t i = 0; i < k->n; i++) {
        exp_lock(x);
        assert_int_equal(exp_prepare_locked(x, k->expires[i] - 1), EXP_OK);
        size_t before = exp_pending_count(x);
        assert_int_equal(exp_prepare_locked(x, k->expires[i]), EXP_OK);
        size_t after = exp_pending_count(x);
        exp_unlock(x);
        if (before != k->n - i || after != k->n - i - 1)
            fail_msg("%s: expiry %zu (seq %lld): pending %zu before it, %zu at it; expected %zu",
                     id, i, (long long)k->seq[i], before, after, k->n - i);
    }
    exp_put(x);
}

/* The log's expiries of experiment rowid: exactly the kept ones, in order,
 * each at its expiry. */
static void check_logged_expiries(const char *path, int64_t rowid, const struct kept *k)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT ref, ts_ms FROM events WHERE exp = ?1 AND kind = ?2"
                                        " ORDER BY seq",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, rowid);
    sqlite3_bind_int(st, 2, STORE_EV_EXPIRE);
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n >= k->n)
            fail_msg("more expiries in the log than pending assignments (%zu)", k->n);
        assert_int_equal(sqlite3_column_int64(st, 0), k->seq[n]);
        assert_int_equal(sqlite3_column_int64(st, 1), k->expires[n]);
        n++;
    }
    assert_int_equal(n, k->n);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void close_registry(struct tstore *f)
{
    exp_registry_free();
    store_close(f->s); /* drains: every write committed */
    f->s = NULL;
}

static void test_answered_behind_a_pending_one(void **state)
{
    (void)state;
    struct tstore *f = tstore_new("p.db");
    struct exp_limits l = limits(0, 0);
    struct kept k;
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    create("mid");
    struct exp *x = exp_get("mid");
    int64_t rowid = exp_rowid(x);
    exp_put(x);
    drive("mid", clock_wall_ms(), &k);
    assert_int_equal(k.n, STEPS / KEEP + 1);
    expire_one_by_one("mid", &k);
    close_registry(f);
    check_logged_expiries(f->path, rowid, &k);
    tstore_free(f);
}

static void test_snapshot_spacing(void **state)
{
    (void)state;
    enum { EVERY = 10, N = 600 };
    struct tstore *f = tstore_new("s.db");
    struct exp_limits l = limits(EVERY, 0);
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    create("grow");
    struct exp *x = exp_get("grow");
    int64_t t0 = clock_wall_ms(), last = 0, seq = 0;
    size_t snapshots = 0;
    for (int i = 0; i < N; i++) {
        struct exp_batch b;
        exp_batch_init(&b);
        exp_lock(x);
        seq = assign(x, &b, t0 + i);
        size_t pending = exp_pending_count(x);
        commit(x, &b);
        /* the event's snapshot commits aside, after the batch was answered:
         * wait it out (an empty submission behind it) before the count */
        assert_int_equal(store_write_sync(f->s, NULL, 0), STORE_OK);
        int64_t s = tcount(f->path, "SELECT max(seq) FROM snapshots");
        if (s <= last)
            continue;
        /* a new one, at this event: no sooner than both spacings */
        assert_int_equal(s, seq);
        int64_t gap = (int64_t)pending / 2 > EVERY ? (int64_t)pending / 2 : EVERY;
        if (s - last < gap)
            fail_msg("a snapshot at seq %lld, %lld after the previous, with %zu pending",
                     (long long)s, (long long)(s - last), pending);
        last = s;
        snapshots++;
    }
    /* they keep coming: the latest is within one spacing of the end */
    assert_true(snapshots >= 5);
    assert_true(seq - last < (N / 2 > EVERY ? N / 2 : EVERY));
    exp_put(x);
    close_registry(f);
    tstore_free(f);
}

/* A burst of assignments answered but the first, then no assignment: the
 * FIFO lets go of the answered ones all the same (at the next request or
 * sweep, exp_prepare_locked), not a TTL later when the first expires. Seen
 * in the snapshots' spacing, which is half the FIFO's length when that is
 * more than --snapshot-every: with the answered ones let go, the next
 * snapshot comes --snapshot-every events after the previous one (or at the
 * next event), not half the burst after it. */
static void test_answered_let_go_without_assignments(void **state)
{
    (void)state;
    enum { EVERY = 10, BURST = 400 };
    struct tstore *f = tstore_new("t.db");
    struct exp_limits l = limits(EVERY, 0);
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    create("burst");
    struct exp *x = exp_get("burst");
    int64_t t0 = clock_wall_ms(), seqs[BURST];
    for (int i = 0; i < BURST; i++) {
        struct exp_batch b;
        exp_batch_init(&b);
        exp_lock(x);
        seqs[i] = assign(x, &b, t0 + i);
        commit(x, &b);
    }
    for (int i = 1; i < BURST; i++) {
        struct exp_batch b;
        exp_batch_init(&b);
        exp_lock(x);
        assert_int_equal(exp_ev_reward(x, &b, seqs[i], 1.0, t0 + BURST + i), EXP_R_ACCEPTED);
        commit(x, &b);
    }
    assert_int_equal(exp_pending_count(x), 1);
    /* a snapshot commits aside, after its batch was answered: an empty
     * submission queued behind it waits it out before the count */
    assert_int_equal(store_write_sync(f->s, NULL, 0), STORE_OK);
    int64_t last = tcount(f->path, "SELECT max(seq) FROM snapshots");
    int64_t seq = exp_last_seq(x);
    /* the burst's spacing held until here: nothing forces one now */
    assert_true(seq - last < BURST / 2);
    int64_t due = last + EVERY > seq + 1 ? last + EVERY : seq + 1;
    for (int64_t now = t0 + 2 * (int64_t)BURST; seq < due; now++) {
        struct exp_batch b;
        exp_batch_init(&b);
        exp_lock(x);
        assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
        assert_int_equal(exp_ev_observe(x, &b, 0, 1, 0.5, now), EXP_OK);
        seq = exp_last_seq(x);
        commit(x, &b);
    }
    assert_int_equal(store_write_sync(f->s, NULL, 0), STORE_OK);
    int64_t s = tcount(f->path, "SELECT max(seq) FROM snapshots");
    if (s != due)
        fail_msg("latest snapshot at seq %lld, expected one at %lld (the previous at %lld)",
                 (long long)s, (long long)due, (long long)last);
    exp_put(x);
    close_registry(f);
    tstore_free(f);
}

/* Load the database at path (a copy) in a fresh registry and check that
 * experiment id's pending assignments are k's, expiring one by one. */
static void load_and_expire(const char *path, int no_snapshots, const char *id,
                            const struct kept *k)
{
    char err[256];
    struct store *st = store_open(path, STORE_SYNC_NORMAL, err, sizeof err);
    if (st == NULL)
        fail_msg("%s: %s", path, err);
    struct exp_limits l = limits(16, no_snapshots);
    assert_int_equal(exp_registry_init(st, &l), 0);
    if (exp_registry_load(err, sizeof err) != 0)
        fail_msg("load: %s", err);
    struct exp *x = exp_get(id);
    assert_non_null(x);
    /* the log without its head would be refused as corrupt by a replay */
    if (exp_corrupt(x) != NULL && exp_corrupt(x)[0] != '\0')
        fail_msg("%s: refused: %s", path, exp_corrupt(x));
    exp_put(x);
    expire_one_by_one(id, k);
    exp_registry_free();
    store_close(st);
}

static void test_restart_keeps_pending(void **state)
{
    (void)state;
    struct tstore *f = tstore_new("r.db");
    struct exp_limits l = limits(16, 0);
    struct kept k;
    char witness[300], tail[300], err[256];
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    create("mid");
    drive("mid", clock_wall_ms(), &k);
    snprintf(witness, sizeof witness, "%s/witness.db", f->dir);
    snprintf(tail, sizeof tail, "%s/tail.db", f->dir);
    assert_int_equal(store_backup(f->s, witness, err, sizeof err), STORE_OK);
    assert_int_equal(store_backup(f->s, tail, err, sizeof err), STORE_OK);
    close_registry(f);
    /* a snapshot with answered seqs behind pending ones, and a tail after it */
    int64_t snap = tcount(tail, "SELECT max(seq) FROM snapshots");
    assert_true(snap > STEPS);
    assert_true(tcount(tail, "SELECT max(seq) FROM events") > snap);
    /* only the snapshot and its tail can load this one */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(tail, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM "
                                  "snapshots s WHERE s.exp = events.exp)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    load_and_expire(witness, 1, "mid", &k);
    load_and_expire(tail, 0, "mid", &k);
    tstore_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answered_behind_a_pending_one),
        cmocka_unit_test(test_snapshot_spacing),
        cmocka_unit_test(test_answered_let_go_without_assignments),
        cmocka_unit_test(test_restart_keeps_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
