/*
 * test_exp_snapshot.c — snapshots through the runtime and the store
 * (exp/snapshot.c, exp/replay.c) for every policy of the registry: an
 * experiment per policy runs through exp_ev_* with a snapshot every 7
 * events (so they fall at every kind of point: rewards outstanding, phases
 * half done), then three copies of the database are loaded as a start does:
 *
 *   - the witness, with --no-snapshots: the whole log replayed;
 *   - one whose events up to each experiment's latest snapshot are deleted:
 *     only the snapshot and the tail can load it (a full replay would find a
 *     gap and refuse it), so it proves snapshot + tail = full replay;
 *   - one whose snapshots are damaged (a bad checksum for half the
 *     policies, another build's version for the others): it falls back to
 *     the whole log.
 *
 * Each must equal the witness bit for bit: the engine's serialized state
 * (statistics, generator, policy state, stop state), the last seq, the
 * pending assignments, the history, and the next assignments made after the
 * load. Fixed seeds.
 *
 * Corrections (on SQLite and on the tests' PostgreSQL server): each
 * policy's experiment gets a correction of a reward some 20 events back,
 * more traffic, and a correction of a recent reward. Each rebuild must
 * start from a snapshot before the earliest corrected reward (the second
 * one's before the first's), and the state the daemon ends in must equal
 * the whole log replayed and the latest snapshot with its tail, as above.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/ser.h"
#include "exp/exp.h"
#include "policies/engine.h"
#include "tests/support/harness.h"
#include "tests/support/tpg.h"
#include "tests/support/trun.h"
#include "tests/support/tstore.h"

#define MAX_POLICIES 64
#define DELAY 5

static struct exp_limits limits(int no_snapshots)
{
    struct exp_limits l = {.max_experiments = 100,
                           .max_bandits = 16,
                           .max_arms = 16,
                           .max_batch = 1000,
                           .max_count = 100,
                           .max_pending = 100000,
                           .history_points = 8, /* thinned several times over a run */
                           .snapshot_every = 7,
                           .no_snapshots = no_snapshots};
    return l;
}

static void create(const struct policy_ops *p, int i)
{
    char body[512], goal[128] = "";
    if ((p->flags & POLICY_F_FIXED_BUDGET) && !(p->flags & POLICY_F_FIXED_CONFIDENCE))
        snprintf(goal, sizeof goal, ",\"goal\":{\"budget\":%d}", 300 + 40 * i);
    else if (p->flags & POLICY_F_NEEDS_EPSILON)
        snprintf(goal, sizeof goal, ",\"goal\":{\"epsilon\":0.2}");
    else if (p->flags & POLICY_F_CONTROL)
        snprintf(goal, sizeof goal,
                 ",\"goal\":{\"type\":\"control\",\"control\":\"a\",\"margin\":0.05}");
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"bandits\":[{\"id\":\"p\",\"arms\":[\"a\",\"b\",\"c\",\"d\"]},"
             "{\"id\":\"q\",\"arms\":[\"a\",\"b\",\"c\"]}],\"policy\":{\"name\":\"%s\"},"
             "\"seed\":%d%s%s}",
             p->name, p->name, 100 + i, goal,
             (p->flags & POLICY_F_NEEDS_TARGET) ? ",\"target_arm\":\"b\"" : "");
    exp_put(trun_create(body));
}

/* Run experiment id for `steps` requests: assignments (the policy's or a
 * named bandit's), each rewarded DELAY requests later, an observation now
 * and then. Exploit answers get no reward. */
static void drive_from(const char *id, int steps, struct trng *g, int64_t now)
{
    struct exp *x = exp_get(id);
    assert_non_null(x);
    int64_t pend[4096];
    size_t head = 0, tail = 0;
    for (int t = 0; t < steps; t++, now += 10) {
        struct exp_batch b;
        struct twait w;
        exp_batch_init(&b);
        exp_lock(x);
        assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
        const struct exp_assignment *a = NULL;
        int bandit = trng_uniform(g) < 0.2 ? (int)(trng_next(g) % 2) : -1;
        int rc = exp_ev_assign(x, &b, bandit, NULL, now, &a);
        if (rc == EXP_OK && a->status == EXP_A_PENDING && tail < 4096)
            pend[tail++] = a->seq;
        if (tail - head > DELAY) {
            int64_t seq = pend[head++];
            double v = trng_bernoulli(g, 0.3 + 0.1 * (double)(seq % 5));
            assert_int_equal(exp_ev_reward(x, &b, seq, v, now), EXP_R_ACCEPTED);
        }
        if (t % 17 == 16)
            assert_int_equal(exp_ev_observe(x, &b, 1, (size_t)(t % 3), trng_uniform(g), now),
                             EXP_OK);
        twait_init(&w);
        if (b.n > 0) {
            assert_int_equal(exp_submit_locked(x, &b, twait_done, &w), STORE_OK);
            exp_unlock(x);
            assert_int_equal(twait_wait(&w), STORE_OK);
        } else {
            twait_cancel(&w);
            exp_unlock(x);
        }
        exp_batch_free(&b);
    }
    exp_put(x);
}

/* The time the runs start from: the wall clock's at the first call. Once a
 * copy is loaded, the registry's sweeper expires by the wall clock every
 * second, and assignments of a fixed past date (their TTL long over) would
 * expire in whichever copy it reached before observe() did. */
static int64_t t0(void)
{
    static int64_t at;
    if (at == 0)
        at = clock_wall_ms();
    return at;
}

static void drive(const char *id, int steps, struct trng *g)
{
    drive_from(id, steps, g, t0());
}

/* What must match, of experiment id: its engine's bytes, seq, pending
 * assignments, history, then the next 12 assignments (on the engine only:
 * nothing is written). */
struct seen {
    struct buf state;
    int64_t seq;
    size_t pending, hist;
    uint64_t hist_pulls;
    char next[12 * 16];
};

static void observe(const char *id, struct seen *out)
{
    struct exp *x = exp_get(id);
    if (x == NULL)
        fail_msg("%s: not loaded", id);
    if (exp_corrupt(x) != NULL && exp_corrupt(x)[0] != '\0')
        fail_msg("%s: refused as corrupt: %s", id, exp_corrupt(x));
    exp_lock(x);
    struct engine *e = exp_engine(x);
    buf_init(&out->state, 0);
    struct ser s;
    ser_writer(&s, &out->state);
    engine_snap(e, &s);
    assert_true(ser_ok(&s));
    out->seq = exp_last_seq(x);
    out->pending = exp_pending_count(x);
    out->hist = exp_history_len(x);
    out->hist_pulls = out->hist > 0 ? exp_history_at(x, out->hist - 1)->pulls : 0;
    size_t len = 0;
    out->next[0] = '\0';
    for (int i = 0; i < 12; i++) {
        struct engine_pull p;
        assert_int_equal(engine_assign(e, i % 4 == 3 ? 1 : -1, &p), 0);
        len += (size_t)snprintf(out->next + len, sizeof out->next - len, "%zu%zu%d,", p.bandit,
                                p.arm, p.exploit);
    }
    exp_unlock(x);
    exp_put(x);
}

static void same(const char *id, const char *what, struct seen *a, struct seen *b)
{
    if (a->seq != b->seq || a->pending != b->pending || a->hist != b->hist ||
        a->hist_pulls != b->hist_pulls)
        fail_msg("%s, %s: seq %lld/%lld, pending %zu/%zu, history %zu/%zu", id, what,
                 (long long)a->seq, (long long)b->seq, a->pending, b->pending, a->hist, b->hist);
    if (a->state.len != b->state.len || memcmp(a->state.p, b->state.p, a->state.len) != 0)
        fail_msg("%s, %s: the engine's state differs", id, what);
    if (strcmp(a->next, b->next) != 0)
        fail_msg("%s, %s: next assignments %s, the whole log's %s", id, what, a->next, b->next);
}

/* Load the database at path (a copy) in a fresh registry; observe each. */
static void load_all(const char *path, int no_snapshots, const char *const *ids, size_t n,
                     struct seen *out)
{
    char err[256];
    struct store *st = store_open(path, STORE_SYNC_NORMAL, err, sizeof err);
    if (st == NULL)
        fail_msg("%s: %s", path, err);
    struct exp_limits l = limits(no_snapshots);
    assert_int_equal(exp_registry_init(st, &l), 0);
    if (exp_registry_load(err, sizeof err) != 0)
        fail_msg("load: %s", err);
    for (size_t i = 0; i < n; i++)
        observe(ids[i], &out[i]);
    exp_registry_free();
    store_close(st);
}

static void sql(const char *path, const char *stmt)
{
    sqlite3 *db = NULL;
    char *err = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, stmt, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", stmt, err);
    sqlite3_close(db);
}

static void test_every_policy(void **state)
{
    (void)state;
    struct tstore *f = tstore_new("s.db");
    struct exp_limits l = limits(0);
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    const char *ids[MAX_POLICIES];
    size_t n = 0;
    struct trng g;
    trng_seed(&g, 2026);
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++, n++) {
        assert_true(n < MAX_POLICIES);
        ids[n] = (*pp)->name;
        create(*pp, (int)n);
        drive(ids[n], 40 + (int)(trng_next(&g) % 160), &g);
    }
    /* three copies of what is on disk */
    char witness[300], tail[300], damaged[300], err[256];
    snprintf(witness, sizeof witness, "%s/witness.db", f->dir);
    snprintf(tail, sizeof tail, "%s/tail.db", f->dir);
    snprintf(damaged, sizeof damaged, "%s/damaged.db", f->dir);
    assert_int_equal(store_backup(f->s, witness, err, sizeof err), STORE_OK);
    assert_int_equal(store_backup(f->s, tail, err, sizeof err), STORE_OK);
    assert_int_equal(store_backup(f->s, damaged, err, sizeof err), STORE_OK);
    exp_registry_free();
    store_close(f->s);
    f->s = NULL;
    assert_true(tcount(tail, "SELECT count(DISTINCT exp) FROM snapshots") == (int64_t)n);
    /* only a snapshot and its tail can load these */
    sql(tail, "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM snapshots s"
              " WHERE s.exp = events.exp)");
    sql(damaged, "UPDATE snapshots SET state = zeroblob(length(state)) WHERE exp % 2 = 0;"
                 "UPDATE snapshots SET software = '0.0.1' WHERE exp % 2 = 1");

    struct seen *w = calloc(n, sizeof *w), *t = calloc(n, sizeof *t), *d = calloc(n, sizeof *d);
    assert_non_null(w);
    assert_non_null(t);
    assert_non_null(d);
    load_all(witness, 1, ids, n, w);
    load_all(tail, 0, ids, n, t);
    load_all(damaged, 0, ids, n, d);
    for (size_t i = 0; i < n; i++) {
        assert_true(w[i].seq > 20);
        same(ids[i], "snapshot + tail", &t[i], &w[i]);
        same(ids[i], "a damaged snapshot", &d[i], &w[i]);
        buf_free(&w[i].state);
        buf_free(&t[i].state);
        buf_free(&d[i].state);
    }
    free(w);
    free(t);
    free(d);
    tstore_free(f);
}

/* The rewarded pull of experiment x whose reward is the latest at or
 * before event `upto`, its reward's seq in *at and value in *v; 0 when none. */
static int64_t rewarded_before(struct store *st, struct exp *x, int64_t upto, int64_t *at,
                               double *v)
{
    for (int64_t seq = upto; seq > 0; seq--) {
        struct store_event a, o;
        char unit[8];
        if (store_find_assignment(st, exp_rowid(x), seq, &a, unit, sizeof unit) != STORE_OK ||
            (a.flags & STORE_AF_EXPLOIT) ||
            store_find_outcome(st, exp_rowid(x), seq, &o) != STORE_OK ||
            o.kind != STORE_EV_REWARD || o.seq > upto)
            continue;
        *at = o.seq;
        *v = o.value;
        return seq;
    }
    return 0;
}

/* Correct the reward of the latest rewarded pull whose reward came at or
 * before `upto` (or an earlier one, when a correction of it is refused):
 * the seq of the reward corrected, 0 when every one was refused. */
static int64_t correct_one(struct store *st, const char *id, int64_t upto, int64_t now)
{
    struct exp *x = exp_get(id);
    assert_non_null(x);
    int64_t at = 0, done = 0;
    double v = 0;
    for (int tries = 0; tries < 8 && done == 0 && upto > 0; tries++, upto = at - 1) {
        int64_t seq = rewarded_before(st, x, upto, &at, &v);
        if (seq == 0)
            break;
        struct exp_correction_item it = {
            .id = {.seq = seq}, .value = v > 0.5 ? 0.25 : 0.75, .reason = "test"};
        struct exp_batch b;
        struct twait w;
        size_t bad = 0;
        struct exp_refusal why = {{0}, {0}};
        exp_batch_init(&b);
        exp_lock(x);
        int rc = exp_prepare_locked(x, now);
        if (rc == EXP_OK)
            rc = exp_ev_correct(x, &b, &it, 1, now, &bad, &why);
        if (rc == EXP_OK) {
            twait_init(&w);
            assert_int_equal(exp_submit_locked(x, &b, twait_done, &w), STORE_OK);
            exp_unlock(x);
            assert_int_equal(twait_wait(&w), STORE_OK);
            done = at;
        } else {
            if (rc != EXP_ERR_REFUSED)
                fail_msg("%s: correction of %lld: %d", id, (long long)seq, rc);
            exp_unlock(x);
        }
        exp_batch_free(&b);
    }
    exp_put(x);
    return done;
}

static int64_t loaded_from(const char *id)
{
    struct exp *x = exp_get(id);
    assert_non_null(x);
    exp_lock(x);
    int64_t from = exp_loaded_from(x);
    exp_unlock(x);
    exp_put(x);
    return from;
}

/* A correction rebuilds from a snapshot taken before the corrected reward
 * (and before every reward corrected earlier), and ends, bit for bit, where
 * a restart does: the whole log replayed (--no-snapshots), and the latest
 * snapshot (the one riding the correction's batch) with its tail. For every
 * policy: a correction of a reward some 20 events back, more traffic, then
 * a correction of a recent reward, which must start before the first. */
/* Whether policy p is one of only[] (NULL: every policy is). */
static int among(const struct policy_ops *p, const char *const *only)
{
    for (size_t i = 0; only != NULL && only[i] != NULL; i++)
        if (strcmp(only[i], p->name) == 0)
            return 1;
    return only == NULL;
}

/* The test on f's store, for the policies of only[] (NULL: all). */
static void correction_from_snapshot(struct tstore *f, const char *const *only)
{
    struct exp_limits l = limits(0);
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    const char *ids[MAX_POLICIES];
    size_t n = 0, corrected = 0;
    struct trng g;
    trng_seed(&g, 2027);
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++) {
        if (!among(*pp, only))
            continue;
        assert_true(n < MAX_POLICIES);
        const char *id = ids[n] = (*pp)->name;
        create(*pp, (int)n++);
        drive(id, 70 + (int)(trng_next(&g) % 40), &g);
        struct exp *x = exp_get(id);
        int64_t last = exp_last_seq(x);
        exp_put(x);
        int64_t first = correct_one(f->s, id, last - 20, t0() + 100000);
        if (first == 0)
            continue; /* every candidate refused (a concluded bandit, a stop) */
        int64_t from = loaded_from(id);
        if (from == 0 || from >= first)
            fail_msg("%s: the correction of the reward at %lld rebuilt from %lld", id,
                     (long long)first, (long long)from);
        drive_from(id, 25, &g, t0() + 101000);
        x = exp_get(id);
        last = exp_last_seq(x);
        exp_put(x);
        int64_t second = correct_one(f->s, id, last - 3, t0() + 200000);
        if (second > 0) {
            from = loaded_from(id);
            if (from == 0 || from >= first)
                fail_msg("%s: the second correction (reward at %lld) rebuilt from %lld, after "
                         "the first corrected reward (%lld)",
                         id, (long long)second, (long long)from, (long long)first);
        }
        corrected++;
    }
    assert_true(corrected >= n * 3 / 4);
    struct seen *live = calloc(n, sizeof *live), *w = calloc(n, sizeof *w),
                *t = calloc(n, sizeof *t);
    assert_non_null(live);
    assert_non_null(w);
    assert_non_null(t);
    char witness[300], tail[300];
    const char *del = "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM snapshots s"
                      " WHERE s.exp = events.exp)";
    int pg = tstore_is_pg(f);
    snprintf(witness, sizeof witness, "%s/witness.db", f->dir);
    snprintf(tail, sizeof tail, "%s/tail.db", f->dir);
    if (!pg) {
        char err[256];
        assert_int_equal(store_backup(f->s, witness, err, sizeof err), STORE_OK);
        assert_int_equal(store_backup(f->s, tail, err, sizeof err), STORE_OK);
    }
    for (size_t i = 0; i < n; i++)
        observe(ids[i], &live[i]); /* last: it moves the engines on */
    exp_registry_free();
    store_close(f->s);
    f->s = NULL;
    if (pg) {
        /* one database: the whole log first, then the tail alone */
        load_all(f->path, 1, ids, n, w);
        assert_int_equal(tpg_exec(f->path, del), 0);
        load_all(f->path, 0, ids, n, t);
    } else {
        sql(tail, del);
        load_all(witness, 1, ids, n, w);
        load_all(tail, 0, ids, n, t);
    }
    for (size_t i = 0; i < n; i++) {
        same(ids[i], "the corrected state against the whole log", &live[i], &w[i]);
        same(ids[i], "the corrected state against snapshot + tail", &live[i], &t[i]);
        buf_free(&live[i].state);
        buf_free(&w[i].state);
        buf_free(&t[i].state);
    }
    free(live);
    free(w);
    free(t);
}

static void test_correction_from_snapshot(void **state)
{
    (void)state;
    struct tstore *f = tstore_new("c.db");
    correction_from_snapshot(f, NULL);
    tstore_free(f);
}

static void test_pg_correction_from_snapshot(void **state)
{
    (void)state;
    /* the store's part (the snapshot below a seq, the retention) on
     * PostgreSQL; one policy of each kind of state (every commit waits for
     * the server's fsync here) */
    static const char *const kinds[] = {"ttts", "lucb1", "sr", "gcp", "adapt", "halving", NULL};
    struct tstore *f = tstore_new_pg();
    correction_from_snapshot(f, kinds);
    tstore_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_policy),
        cmocka_unit_test(test_correction_from_snapshot),
        cmocka_unit_test(test_pg_correction_from_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
