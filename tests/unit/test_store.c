/*
 * test_store.c — the store on a real SQLite file in a temporary directory and
 * on a real PostgreSQL server (tests/support/tpg.h), the same tests on both:
 * schema and migrations, group commit and per-submission failure, the event
 * log round trip, lookups, deletion and the purge of deleted logs,
 * migration from version 1, concurrent submitters, draining on close,
 * injected and real disk-full failures, API keys, backups and the files'
 * modes. Query plans and their cost: test_store_plans.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_test.h"
#include "tests/support/tpg.h"
#include "tests/support/tstore.h"

/* --- fixture ------------------------------------------------------------------ */

static int setup(void **state)
{
    *state = tstore_new("b.db");
    return 0;
}

/* The same tests on a fresh database of a real PostgreSQL server (tpg.h). */
static int setup_pg(void **state)
{
    *state = tstore_new_pg();
    return 0;
}

static int teardown(void **state)
{
    struct tstore *f = *state;
    char mnt[400];
    snprintf(mnt, sizeof mnt, "%s/mnt", f->dir);
    umount2(mnt, MNT_DETACH); /* left mounted by a failed test_real_disk_full */
    tstore_free(f);
    return 0;
}

/* Close and reopen the fixture's store. */
static void reopen(struct tstore *f)
{
    char err[256];
    store_close(f->s);
    f->s = store_open(f->path, STORE_SYNC_FULL, err, sizeof err);
    if (f->s == NULL)
        fail_msg("reopen: %s", err);
}

/* Collects completions from the writer thread. */
struct collector {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;         /* callbacks so far */
    int order[64]; /* slot of the n-th callback */
    int err[64];   /* by slot */
};

struct slot {
    struct collector *c;
    int idx;
};

static void collector_init(struct collector *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    for (int i = 0; i < 64; i++)
        c->err[i] = -1;
}

static void collector_destroy(struct collector *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

static void collect(void *arg, int err)
{
    struct slot *sl = arg;
    struct collector *c = sl->c;
    pthread_mutex_lock(&c->mu);
    c->err[sl->idx] = err;
    c->order[c->n++] = sl->idx;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void collector_wait(struct collector *c, int n)
{
    pthread_mutex_lock(&c->mu);
    while (c->n < n)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

static int64_t create_exp(struct store *s, const char *id)
{
    int64_t rowid = 0;
    struct store_op op = {.kind = STORE_OP_EXP_CREATE,
                          .id = id,
                          .config_json = "{\"arms\":[\"a\",\"b\"]}",
                          .created_ms = 1700000000000,
                          .rowid_out = &rowid};
    assert_int_equal(store_write_sync(s, &op, 1), STORE_OK);
    assert_true(rowid > 0);
    return rowid;
}

static struct store_op ev_op(int64_t exp, int64_t seq, int kind)
{
    struct store_op op = {.kind = STORE_OP_EVENT};
    op.ev.exp = exp;
    op.ev.seq = seq;
    op.ev.kind = kind;
    op.ev.value = NAN;
    op.ev.ts_ms = 1700000000000 + seq;
    return op;
}

/* A count on the fixture's database (or another file), on a connection of
 * its own. */
static int64_t count_rows(const char *target, const char *sql)
{
    return tcount(target, sql);
}

/* Events collected by store_load_events, strings copied. */
struct evlist {
    int n;
    struct store_event ev[32];
    char unit[32][32];
    char text[32][32];
};

static int collect_ev(void *arg, const struct store_event *ev)
{
    struct evlist *l = arg;
    assert_true(l->n < 32);
    l->ev[l->n] = *ev;
    if (ev->unit) {
        snprintf(l->unit[l->n], 32, "%s", ev->unit);
        l->ev[l->n].unit = l->unit[l->n];
    }
    if (ev->text) {
        snprintf(l->text[l->n], 32, "%s", ev->text);
        l->ev[l->n].text = l->text[l->n];
    }
    l->n++;
    return 0;
}

static void assert_str_eq_or_null(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

static void assert_event_eq(const struct store_event *a, const struct store_event *b)
{
    assert_int_equal(a->exp, b->exp);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->bandit, b->bandit);
    assert_int_equal(a->arm, b->arm);
    assert_int_equal(a->flags, b->flags);
    if (isnan(a->value))
        assert_true(isnan(b->value));
    else
        assert_true(a->value == b->value);
    assert_int_equal(a->ref, b->ref);
    assert_int_equal(a->ts_ms, b->ts_ms);
    assert_int_equal(a->expires_ms, b->expires_ms);
    assert_str_eq_or_null(a->unit, b->unit);
    assert_str_eq_or_null(a->text, b->text);
}

/* --- schema ------------------------------------------------------------------- */

static void test_open_migrate_reopen(void **state)
{
    struct tstore *f = *state;
    char sql[64];

    snprintf(sql, sizeof sql, "PRAGMA user_version");
    assert_int_equal(count_rows(f->path, sql), store_schema_version());
    assert_int_equal(store_schema_version(), 9);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                         "('experiments','events','api_keys','events_ref',"
                                         "'events_unit','purges','sqlite_sequence','outbox',"
                                         "'outbox_pending','outbox_finished','outbox_exp',"
                                         "'nodes','audit_log','snapshots')"),
                     14);
    create_exp(f->s, "kept");
    reopen(f);
    assert_int_equal(count_rows(f->path, "PRAGMA user_version"), store_schema_version());
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM experiments"), 1);
    {
        /* journal mode is persistent in the file */
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
}

static void test_refuse_newer_version(void **state)
{
    struct tstore *f = *state;
    char path[160], err[256], sql[64];
    sqlite3 *db;

    snprintf(path, sizeof path, "%s/newer.db", f->dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", store_schema_version() + 1);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    err[0] = '\0';
    assert_null(store_open(path, STORE_SYNC_FULL, err, sizeof err));
    assert_non_null(strstr(err, "newer than this build"));
    /* and it was not touched */
    assert_int_equal(count_rows(path, "PRAGMA user_version"), store_schema_version() + 1);
    assert_int_equal(count_rows(path, "SELECT count(*) FROM sqlite_master"), 0);

    /* not a database at all */
    snprintf(path, sizeof path, "%s/junk.db", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("this is not an SQLite database, not even close......................", fp);
    assert_int_equal(fclose(fp), 0);
    err[0] = '\0';
    assert_null(store_open(path, STORE_SYNC_FULL, err, sizeof err));
    assert_true(err[0] != '\0');
}

/* --- experiments -------------------------------------------------------------- */

static void test_exp_duplicate_in_batch(void **state)
{
    struct tstore *f = *state;
    struct collector c;
    struct slot sl[3];
    int64_t rowid[3] = {0, 0, 0};
    const char *ids[3] = {"alpha", "alpha", "beta"};
    struct store_op op[3];
    struct store_stats before, after;

    collector_init(&c);
    store_get_stats(f->s, &before);
    store_test_pause_writer(f->s, 1);
    for (int i = 0; i < 3; i++) {
        op[i] = (struct store_op){.kind = STORE_OP_EXP_CREATE,
                                  .id = ids[i],
                                  .config_json = "{}",
                                  .created_ms = 42 + i,
                                  .rowid_out = &rowid[i]};
        sl[i] = (struct slot){&c, i};
        assert_int_equal(store_submit(f->s, &op[i], 1, collect, &sl[i]), STORE_OK);
    }
    store_get_stats(f->s, &after);
    assert_int_equal(after.queue_depth, 3);
    store_test_pause_writer(f->s, 0);
    collector_wait(&c, 3);
    assert_int_equal(c.err[0], STORE_OK);
    assert_int_equal(c.err[1], STORE_ERR_EXISTS);
    assert_int_equal(c.err[2], STORE_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(c.order[i], i);
    assert_true(rowid[0] > 0 && rowid[2] > 0 && rowid[0] != rowid[2]);

    store_get_stats(f->s, &after);
    assert_int_equal(after.commits - before.commits, 1); /* one group */
    assert_int_equal(after.writes - before.writes, 2);
    assert_int_equal(after.failed_commits, before.failed_commits);
    assert_int_equal(after.queue_depth, 0);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM experiments"), 2);
    collector_destroy(&c);
}

struct explist {
    int n;
    int64_t rowid[8];
    char id[8][16];
    int64_t created[8];
};

static int collect_exp(void *arg, const struct store_experiment_row *row)
{
    struct explist *l = arg;
    assert_true(l->n < 8);
    l->rowid[l->n] = row->rowid;
    snprintf(l->id[l->n], 16, "%s", row->id);
    assert_string_equal(row->config_json, "{\"arms\":[\"a\",\"b\"]}");
    l->created[l->n] = row->created_ms;
    l->n++;
    return 0;
}

static int stop_at_first(void *arg, const struct store_experiment_row *row)
{
    (void)arg;
    (void)row;
    return 77;
}

static void test_load_experiments(void **state)
{
    struct tstore *f = *state;
    struct explist l = {0};
    int64_t a = create_exp(f->s, "one"), b = create_exp(f->s, "two");

    assert_int_equal(store_load_experiments(f->s, collect_exp, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.rowid[0], a);
    assert_int_equal(l.rowid[1], b);
    assert_string_equal(l.id[0], "one");
    assert_string_equal(l.id[1], "two");
    assert_int_equal(l.created[0], 1700000000000);
    assert_int_equal(store_load_experiments(f->s, stop_at_first, NULL), 77);
}

/* --- events ------------------------------------------------------------------- */

static void test_events_roundtrip(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "ev"), other = create_exp(f->s, "other"), last = -1;
    struct store_op op[6];
    struct evlist l = {0};

    op[0] = ev_op(exp, 1, STORE_EV_ASSIGN);
    op[0].ev.bandit = 2;
    op[0].ev.arm = 5;
    op[0].ev.flags = STORE_AF_EXPLOIT | STORE_AF_BANDIT_GIVEN;
    op[0].ev.expires_ms = 1700000086400;
    op[0].ev.unit = "user-123";
    op[1] = ev_op(exp, 2, STORE_EV_REWARD);
    op[1].ev.ref = 1;
    op[1].ev.value = 0.25;
    op[2] = ev_op(exp, 3, STORE_EV_OBSERVE);
    op[2].ev.bandit = 1;
    op[2].ev.arm = 0;
    op[2].ev.value = -3.5e10;
    op[3] = ev_op(exp, 4, STORE_EV_EXPIRE);
    op[3].ev.ref = 1;
    op[3].ev.value = NAN; /* no default reward */
    op[4] = ev_op(exp, 5, STORE_EV_LATE);
    op[4].ev.ref = 1;
    op[4].ev.value = 1.0;
    op[5] = ev_op(exp, 6, STORE_EV_STATE);
    op[5].ev.text = "paused";
    /* queued out of order across submissions, committed in queue order */
    assert_int_equal(store_write_sync(f->s, &op[3], 3), STORE_OK);
    assert_int_equal(store_write_sync(f->s, &op[0], 3), STORE_OK);
    {
        struct store_op o = ev_op(other, 1, STORE_EV_OBSERVE);
        assert_int_equal(store_write_sync(f->s, &o, 1), STORE_OK);
    }

    assert_int_equal(store_load_events(f->s, exp, 0, collect_ev, &l), 0);
    assert_int_equal(l.n, 6);
    for (int i = 0; i < 6; i++)
        assert_event_eq(&op[i].ev, &l.ev[i]);
    /* NaN is stored as NULL */
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM events WHERE value IS NULL"),
                     3 + 1 /* the other experiment's observation */);

    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_events(f->s, exp, 4, collect_ev, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.ev[0].seq, 5);
    assert_int_equal(l.ev[1].seq, 6);
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_events(f->s, exp, 6, collect_ev, &l), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(store_load_events(f->s, 9999, 0, collect_ev, &l), 0);
    assert_int_equal(l.n, 0);

    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 6);
    assert_int_equal(store_last_seq(f->s, other, &last), STORE_OK);
    assert_int_equal(last, 1);
    assert_int_equal(store_last_seq(f->s, 9999, &last), STORE_OK);
    assert_int_equal(last, 0);
}

static void test_find(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "find");
    struct store_op op[6];
    struct store_event ev;
    char buf[64], small[5];

    op[0] = ev_op(exp, 1, STORE_EV_ASSIGN);
    op[0].ev.arm = 1;
    op[0].ev.unit = "visitor-9";
    op[0].ev.expires_ms = 99;
    op[1] = ev_op(exp, 2, STORE_EV_ASSIGN);
    op[1].ev.arm = 2;
    op[2] = ev_op(exp, 3, STORE_EV_OBSERVE); /* not an outcome */
    op[2].ev.ref = 2;
    op[3] = ev_op(exp, 4, STORE_EV_EXPIRE);
    op[3].ev.ref = 2;
    op[4] = ev_op(exp, 5, STORE_EV_LATE);
    op[4].ev.ref = 2;
    op[4].ev.value = 1;
    op[5] = ev_op(exp, 6, STORE_EV_REWARD);
    op[5].ev.ref = 1;
    op[5].ev.value = 0.5;
    assert_int_equal(store_write_sync(f->s, op, 6), STORE_OK);

    assert_int_equal(store_find_assignment(f->s, exp, 1, &ev, buf, sizeof buf), STORE_OK);
    assert_int_equal(ev.seq, 1);
    assert_int_equal(ev.arm, 1);
    assert_int_equal(ev.expires_ms, 99);
    assert_ptr_equal(ev.unit, buf);
    assert_string_equal(buf, "visitor-9");
    assert_null(ev.text);
    assert_int_equal(store_find_assignment(f->s, exp, 1, &ev, small, sizeof small), STORE_OK);
    assert_string_equal(small, "visi"); /* truncated */
    assert_int_equal(store_find_assignment(f->s, exp, 2, &ev, buf, sizeof buf), STORE_OK);
    assert_null(ev.unit);
    assert_int_equal(store_find_assignment(f->s, exp, 3, &ev, buf, sizeof buf),
                     STORE_ERR_NOTFOUND); /* an event, but not an assignment */
    assert_int_equal(store_find_assignment(f->s, exp, 7, &ev, buf, sizeof buf), STORE_ERR_NOTFOUND);

    assert_int_equal(store_find_outcome(f->s, exp, 2, &ev), STORE_OK);
    assert_int_equal(ev.seq, 4); /* the first outcome, skipping the observation */
    assert_int_equal(ev.kind, STORE_EV_EXPIRE);
    assert_true(isnan(ev.value));
    assert_int_equal(store_find_outcome(f->s, exp, 1, &ev), STORE_OK);
    assert_int_equal(ev.kind, STORE_EV_REWARD);
    assert_true(ev.value == 0.5);
    assert_int_equal(store_find_outcome(f->s, exp, 6, &ev), STORE_ERR_NOTFOUND);

    assert_int_equal(store_find_unit(f->s, exp, "visitor-9", &ev), STORE_OK);
    assert_int_equal(ev.seq, 1);
    assert_string_equal(ev.unit, "visitor-9");
    assert_int_equal(store_find_unit(f->s, exp, "visitor-10", &ev), STORE_ERR_NOTFOUND);
    assert_int_equal(store_find_unit(f->s, exp + 1, "visitor-9", &ev), STORE_ERR_NOTFOUND);
    /* A unit's later assignments: the latest is found, or the latest in a
     * bandit. */
    struct store_op more[2] = {ev_op(exp, 8, STORE_EV_ASSIGN), ev_op(exp, 9, STORE_EV_ASSIGN)};
    more[0].ev.unit = more[1].ev.unit = "visitor-9";
    more[0].ev.bandit = 1;
    more[1].ev.bandit = 0;
    assert_int_equal(store_write_sync(f->s, more, 2), STORE_OK);
    assert_int_equal(store_find_unit(f->s, exp, "visitor-9", &ev), STORE_OK);
    assert_int_equal(ev.seq, 9);
    assert_int_equal(store_find_unit_in(f->s, exp, "visitor-9", 1, &ev), STORE_OK);
    assert_int_equal(ev.seq, 8);
    assert_int_equal(store_find_unit_in(f->s, exp, "visitor-9", 0, &ev), STORE_OK);
    assert_int_equal(ev.seq, 9);
    assert_int_equal(store_find_unit_in(f->s, exp, "visitor-9", 2, &ev), STORE_ERR_NOTFOUND);
}

static void test_duplicates_and_atomicity(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "dup"), exp2 = create_exp(f->s, "dup2"), last;
    struct store_op a = ev_op(exp, 1, STORE_EV_ASSIGN), b[2];
    struct store_event ev;

    a.ev.unit = "u1";
    assert_int_equal(store_write_sync(f->s, &a, 1), STORE_OK);
    /* same unit, other experiment: fine (and in the same one too, since
     * schema 3: a unit may hold several assignments, the latest counts) */
    b[0] = ev_op(exp2, 1, STORE_EV_ASSIGN);
    b[0].ev.unit = "u1";
    assert_int_equal(store_write_sync(f->s, b, 1), STORE_OK);
    /* duplicate seq */
    b[0] = ev_op(exp, 1, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(f->s, b, 1), STORE_ERR_EXISTS);
    /* a submission is atomic: the good first op goes with the bad second */
    b[0] = ev_op(exp, 2, STORE_EV_OBSERVE);
    b[1] = ev_op(exp, 1, STORE_EV_ASSIGN);
    b[1].ev.unit = "u1";
    assert_int_equal(store_write_sync(f->s, b, 2), STORE_ERR_EXISTS);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 1);
    assert_int_equal(store_find_unit(f->s, exp, "u1", &ev), STORE_OK);
    assert_int_equal(ev.seq, 1);
    /* unknown op kind fails its submission only */
    b[0] = ev_op(exp, 2, STORE_EV_OBSERVE);
    b[0].kind = 99;
    assert_int_equal(store_write_sync(f->s, b, 1), STORE_ERR_IO);
    /* an empty submission is a no-op that succeeds */
    assert_int_equal(store_write_sync(f->s, NULL, 0), STORE_OK);
}

/* Events of experiment exp still in the file. */
static int64_t count_events(const char *path, int64_t exp)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE exp = %lld", (long long)exp);
    return count_rows(path, sql);
}

/* Wait (up to 20 s) for the writer's purge to remove exp's events. */
static void wait_purged(const char *path, int64_t exp)
{
    for (int i = 0; i < 2000 && (count_events(path, exp) != 0 ||
                                 count_rows(path, "SELECT count(*) FROM purges") != 0);
         i++)
        usleep(10000);
    assert_int_equal(count_events(path, exp), 0);
    assert_int_equal(count_rows(path, "SELECT count(*) FROM purges"), 0);
}

static void test_delete(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "gone"), keep = create_exp(f->s, "kept"), last, again;
    struct store_op op[3];
    struct explist l = {0};
    struct store_event ev;

    op[0] = ev_op(exp, 1, STORE_EV_ASSIGN);
    op[0].ev.unit = "u";
    op[1] = ev_op(exp, 2, STORE_EV_REWARD);
    op[1].ev.ref = 1;
    op[2] = ev_op(keep, 1, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(f->s, op, 3), STORE_OK);

    /* the row goes with the commit; the log waits for the purge */
    store_test_pause_purge(f->s, 1);
    op[0] = (struct store_op){.kind = STORE_OP_EXP_DELETE, .exp = exp};
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_OK);
    assert_int_equal(store_load_experiments(f->s, collect_exp, &l), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.id[0], "kept");
    assert_int_equal(count_events(f->path, exp), 2);
    /* deleting what is not there */
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_ERR_NOTFOUND);
    /* the id is free again, under a new rowid: the old log is never the
     * new experiment's, even while it waits */
    again = create_exp(f->s, "gone");
    assert_true(again > keep);
    assert_int_equal(store_last_seq(f->s, again, &last), STORE_OK);
    assert_int_equal(last, 0);
    assert_int_equal(store_find_unit(f->s, again, "u", &ev), STORE_ERR_NOTFOUND);

    store_test_pause_purge(f->s, 0);
    wait_purged(f->path, exp);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 0);
    assert_int_equal(store_last_seq(f->s, keep, &last), STORE_OK);
    assert_int_equal(last, 1);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM events"), 1);
}

/* A long log is purged in chunks, between commits, and a purge cut short by
 * a close resumes at the next open. */
static void test_delete_long_log(void **state)
{
    struct tstore *f = *state;
    enum { N = 5000 };
    int64_t exp = create_exp(f->s, "long"), keep = create_exp(f->s, "kept"), last;
    struct store_op *ops = calloc(N, sizeof *ops), op;

    assert_non_null(ops);
    for (int i = 0; i < N; i++)
        ops[i] = ev_op(exp, i + 1, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(f->s, ops, N), STORE_OK);
    store_test_pause_purge(f->s, 1);
    op = (struct store_op){.kind = STORE_OP_EXP_DELETE, .exp = exp};
    assert_int_equal(store_write_sync(f->s, &op, 1), STORE_OK);
    reopen(f); /* the pause is not kept: the purge resumes */
    /* a new store owns nothing it did not create or claim (PostgreSQL) */
    assert_int_equal(store_claim(f->s, keep, NULL, 0), STORE_OK);
    /* writes go on meanwhile */
    for (int i = 0; i < 20; i++) {
        op = ev_op(keep, i + 1, STORE_EV_OBSERVE);
        assert_int_equal(store_write_sync(f->s, &op, 1), STORE_OK);
    }
    wait_purged(f->path, exp);
    assert_int_equal(store_last_seq(f->s, keep, &last), STORE_OK);
    assert_int_equal(last, 20);
    free(ops);
}

/* A database of schema version 1 (as main wrote it before the purge)
 * migrates to the current version and keeps every row, and its rowids are
 * never reused afterwards. */
static void test_migrate_from_v1(void **state)
{
    struct tstore *f = *state;
    char path[160], err[256], unit[16];
    sqlite3 *db;
    struct store *s;
    struct explist l = {0};
    struct evlist el = {0};
    struct store_event ev;
    int64_t rowid = 0;

    snprintf(path, sizeof path, "%s/v1.db", f->dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    /* version 1's schema, verbatim */
    assert_int_equal(
        sqlite3_exec(
            db,
            "PRAGMA journal_mode=WAL;"
            "CREATE TABLE experiments ( rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
            " config TEXT NOT NULL, created_ms INTEGER NOT NULL);"
            "CREATE TABLE events ( exp INTEGER NOT NULL, seq INTEGER NOT NULL,"
            " kind INTEGER NOT NULL, bandit INTEGER, arm INTEGER,"
            " flags INTEGER NOT NULL DEFAULT 0, value REAL, ref INTEGER,"
            " ts_ms INTEGER NOT NULL, expires_ms INTEGER, unit TEXT, text TEXT,"
            " PRIMARY KEY (exp, seq)) WITHOUT ROWID;"
            "CREATE INDEX events_ref ON events(exp, ref) WHERE ref IS NOT NULL;"
            "CREATE UNIQUE INDEX events_unit ON events(exp, unit) WHERE unit IS NOT NULL;"
            "CREATE TABLE api_keys ( rowid INTEGER PRIMARY KEY, name TEXT,"
            " scopes TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
            " created_ms INTEGER NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);"
            /* rowid 2 was deleted, 3 is the highest */
            "INSERT INTO experiments VALUES (1, 'one', '{\"arms\":[\"a\",\"b\"]}', 11),"
            " (3, 'three', '{\"arms\":[\"a\",\"b\"]}', 33);"
            "INSERT INTO events(exp, seq, kind, bandit, arm, flags, value, ref, ts_ms,"
            " expires_ms, unit, text) VALUES"
            " (1, 1, 1, 0, 1, 0, NULL, NULL, 100, 200, 'u1', NULL),"
            " (1, 2, 2, 0, 1, 0, 0.75, 1, 101, NULL, NULL, NULL),"
            " (3, 1, 6, 0, 0, 0, NULL, NULL, 102, NULL, NULL, 'paused');"
            "INSERT INTO api_keys VALUES (1, 'k', 'read', 'abc', 5, 0);"
            "PRAGMA user_version = 1;",
            NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);

    s = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    if (s == NULL)
        fail_msg("open version 1: %s", err);
    assert_int_equal(count_rows(path, "PRAGMA user_version"), store_schema_version());
    assert_int_equal(store_load_experiments(s, collect_exp, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.rowid[0], 1);
    assert_string_equal(l.id[0], "one");
    assert_int_equal(l.created[0], 11);
    assert_int_equal(l.rowid[1], 3);
    assert_string_equal(l.id[1], "three");
    assert_int_equal(store_load_events(s, 1, 0, collect_ev, &el), 0);
    assert_int_equal(el.n, 2);
    assert_string_equal(el.ev[0].unit, "u1");
    assert_int_equal(el.ev[0].expires_ms, 200);
    assert_true(el.ev[1].value == 0.75);
    assert_int_equal(store_find_outcome(s, 1, 1, &ev), STORE_OK);
    assert_int_equal(ev.seq, 2);
    assert_int_equal(store_find_unit(s, 1, "u1", &ev), STORE_OK);
    assert_int_equal(store_find_assignment(s, 1, 1, &ev, unit, sizeof unit), STORE_OK);
    el.n = 0;
    assert_int_equal(store_load_events(s, 3, 0, collect_ev, &el), 0);
    assert_int_equal(el.n, 1);
    assert_string_equal(el.ev[0].text, "paused");
    assert_int_equal(count_rows(path, "SELECT count(*) FROM api_keys WHERE hash = 'abc'"), 1);
    /* the id stays unique */
    {
        struct store_op op = {
            .kind = STORE_OP_EXP_CREATE, .id = "three", .config_json = "{}", .rowid_out = &rowid};
        assert_int_equal(store_write_sync(s, &op, 1), STORE_ERR_EXISTS);
    }
    /* rowids go on from the highest and are never reused */
    rowid = create_exp(s, "four");
    assert_int_equal(rowid, 4);
    {
        struct store_op op = {.kind = STORE_OP_EXP_DELETE, .exp = 4};
        assert_int_equal(store_write_sync(s, &op, 1), STORE_OK);
    }
    assert_int_equal(create_exp(s, "five"), 5);
    store_close(s);
    /* and a second open has nothing left to migrate */
    s = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(create_exp(s, "six"), 6);
    store_close(s);
}

/* A database of schema version 2 (main before the sticky units and the
 * webhooks) migrates to the current version: every row kept, the outbox
 * usable, nothing left to migrate at the next open. */
static void test_migrate_from_v2(void **state)
{
    struct tstore *f = *state;
    char path[160], err[256];
    sqlite3 *db;
    struct store *s;
    struct explist l = {0};
    struct evlist el = {0};
    int64_t depth = -1;

    snprintf(path, sizeof path, "%s/v2.db", f->dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    /* version 2's schema, verbatim (version 1, then migration 2) */
    assert_int_equal(
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL;"
                     "CREATE TABLE events ( exp INTEGER NOT NULL, seq INTEGER NOT NULL,"
                     " kind INTEGER NOT NULL, bandit INTEGER, arm INTEGER,"
                     " flags INTEGER NOT NULL DEFAULT 0, value REAL, ref INTEGER,"
                     " ts_ms INTEGER NOT NULL, expires_ms INTEGER, unit TEXT, text TEXT,"
                     " PRIMARY KEY (exp, seq)) WITHOUT ROWID;"
                     "CREATE INDEX events_ref ON events(exp, ref) WHERE ref IS NOT NULL;"
                     "CREATE UNIQUE INDEX events_unit ON events(exp, unit) WHERE unit IS NOT NULL;"
                     "CREATE TABLE api_keys ( rowid INTEGER PRIMARY KEY, name TEXT,"
                     " scopes TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
                     " created_ms INTEGER NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);"
                     "CREATE TABLE experiments ( rowid INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " id TEXT NOT NULL UNIQUE, config TEXT NOT NULL, created_ms INTEGER NOT NULL);"
                     "CREATE TABLE purges (exp INTEGER PRIMARY KEY);"
                     "INSERT INTO experiments VALUES (1, 'one', '{\"arms\":[\"a\",\"b\"]}', 11),"
                     " (4, 'four', '{\"arms\":[\"a\",\"b\"]}', 44);"
                     "INSERT INTO events(exp, seq, kind, bandit, arm, flags, value, ref, ts_ms,"
                     " expires_ms, unit, text) VALUES"
                     " (1, 1, 1, 0, 1, 0, NULL, NULL, 100, 200, 'u1', NULL),"
                     " (1, 2, 2, 0, 1, 0, 0.75, 1, 101, NULL, NULL, NULL),"
                     " (3, 1, 6, 0, 0, 0, NULL, NULL, 102, NULL, NULL, 'paused');"
                     "INSERT INTO purges VALUES (3);"
                     "INSERT INTO api_keys VALUES (1, 'k', 'read', 'abc', 5, 0);"
                     "PRAGMA user_version = 2;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);

    s = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    if (s == NULL)
        fail_msg("open version 2: %s", err);
    assert_int_equal(count_rows(path, "PRAGMA user_version"), store_schema_version());
    assert_int_equal(store_load_experiments(s, collect_exp, &l), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.id[1], "four");
    assert_int_equal(store_load_events(s, 1, 0, collect_ev, &el), 0);
    assert_int_equal(el.n, 2);
    assert_true(el.ev[1].value == 0.75);
    assert_int_equal(count_rows(path, "SELECT count(*) FROM api_keys"), 1);
    assert_int_equal(store_outbox_depth(s, &depth), STORE_OK);
    assert_int_equal(depth, 0);
    /* rowids still never come back */
    assert_int_equal(create_exp(s, "five"), 5);
    store_close(s);
    s = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(count_rows(path, "PRAGMA user_version"), store_schema_version());
    store_close(s);
}

/* --- the webhook outbox ---------------------------------------------------------- */

struct dlist {
    int n;
    int64_t id[16];
    int state[16], attempts[16];
    char event[16][64], body[16][64], secret[16][32], error[16][64];
};

static int collect_dl(void *arg, const struct store_delivery *d)
{
    struct dlist *l = arg;
    assert_true(l->n < 16);
    l->id[l->n] = d->id;
    l->state[l->n] = d->state;
    l->attempts[l->n] = d->attempts;
    snprintf(l->event[l->n], sizeof l->event[0], "%s", d->event_id);
    snprintf(l->body[l->n], sizeof l->body[0], "%s", d->body);
    snprintf(l->secret[l->n], sizeof l->secret[0], "%s", d->secret);
    snprintf(l->error[l->n], sizeof l->error[0], "%s", d->last_error ? d->last_error : "");
    l->n++;
    return 0;
}

static struct store_delivery delivery(int64_t exp, const char *event_id)
{
    return (struct store_delivery){.exp = exp,
                                   .exp_id = "e",
                                   .event_id = event_id,
                                   .type = "experiment.stopped",
                                   .url = "https://hooks.example.com/x",
                                   .secret = "0123456789abcdef",
                                   .body = event_id,
                                   .created_ms = 1000,
                                   .next_ms = 1000};
}

static void count_hook(void *arg)
{
    atomic_int *n = arg;
    atomic_fetch_add(n, 1);
}

/* Outbox rows commit with the events of their submission, or not at all;
 * updates, the listing, the depth and the prune; the writer's hook fires
 * after a commit that inserted rows, and only then. */
static void test_outbox(void **state)
{
    struct tstore *f = *state;
    struct store *s = f->s;
    struct dlist l = {0};
    int64_t exp = create_exp(s, "e"), depth = -1;
    atomic_int hooks = 0;

    store_set_outbox_hook(s, count_hook, &hooks);
    struct store_delivery d1 = delivery(exp, "e/1/experiment.stopped"),
                          d2 = delivery(exp, "e/2/experiment.paused");
    struct store_op ops[2] = {ev_op(exp, 1, STORE_EV_OBSERVE),
                              {.kind = STORE_OP_OUTBOX, .dl = &d1}};
    assert_int_equal(store_write_sync(s, ops, 2), STORE_OK);
    assert_int_equal(atomic_load(&hooks), 1);
    /* a submission that fails (seq 1 again) takes its outbox row with it */
    ops[1].dl = &d2;
    assert_int_equal(store_write_sync(s, ops, 2), STORE_ERR_EXISTS);
    assert_int_equal(store_outbox_pending(s, 0, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.event[0], "e/1/experiment.stopped");
    assert_string_equal(l.secret[0], "0123456789abcdef");
    assert_int_equal(l.state[0], STORE_OUTBOX_PENDING);
    /* a write without outbox rows calls no hook */
    struct store_op ev = ev_op(exp, 2, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(s, &ev, 1), STORE_OK);
    int before = atomic_load(&hooks);
    ops[0] = ev_op(exp, 3, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(s, ops, 2), STORE_OK);
    assert_int_equal(atomic_load(&hooks), before + 1);
    store_set_outbox_hook(s, NULL, NULL);
    assert_int_equal(store_outbox_depth(s, &depth), STORE_OK);
    assert_int_equal(depth, 2);

    /* the first is delivered, the second fails once */
    struct store_delivery u = {.id = l.id[0],
                               .state = STORE_OUTBOX_DELIVERED,
                               .attempts = 1,
                               .next_ms = 1000,
                               .last_ms = 2000,
                               .last_status = 200};
    struct store_op up = {.kind = STORE_OP_OUTBOX_UPDATE, .dl = &u};
    assert_int_equal(store_write_sync(s, &up, 1), STORE_OK);
    l.n = 0;
    assert_int_equal(store_outbox_pending(s, 0, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.event[0], "e/2/experiment.paused");
    int64_t second = l.id[0];
    struct store_delivery u2 = {.id = second,
                                .state = STORE_OUTBOX_PENDING,
                                .attempts = 1,
                                .next_ms = 5000,
                                .last_ms = 3000,
                                .last_error = "HTTP 500"};
    up.dl = &u2;
    assert_int_equal(store_write_sync(s, &up, 1), STORE_OK);
    /* pending reads go on after the last id seen */
    l.n = 0;
    assert_int_equal(store_outbox_pending(s, second, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    /* the listing: newest first, both states, paged with before */
    assert_int_equal(store_outbox_list(s, exp, INT64_MAX, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.id[0], second);
    assert_int_equal(l.attempts[0], 1);
    assert_string_equal(l.error[0], "HTTP 500");
    assert_int_equal(l.state[1], STORE_OUTBOX_DELIVERED);
    l.n = 0;
    assert_int_equal(store_outbox_list(s, exp, second, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 1);
    l.n = 0;
    assert_int_equal(store_outbox_list(s, exp + 1, INT64_MAX, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    /* the delete of the experiment leaves its deliveries */
    struct store_op del = {.kind = STORE_OP_EXP_DELETE, .exp = exp};
    assert_int_equal(store_write_sync(s, &del, 1), STORE_OK);
    /* the prune takes finished rows older than its bound, never pending ones */
    struct store_delivery pr = {.last_ms = 2000};
    struct store_op prune = {.kind = STORE_OP_OUTBOX_PRUNE, .dl = &pr};
    assert_int_equal(store_write_sync(s, &prune, 1), STORE_OK);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM outbox"), 2);
    pr.last_ms = 1000000;
    assert_int_equal(store_write_sync(s, &prune, 1), STORE_OK);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM outbox"), 1);
    assert_int_equal(store_outbox_depth(s, &depth), STORE_OK);
    assert_int_equal(depth, 1);
    /* rows survive a reopen */
    reopen(f);
    l.n = 0;
    assert_int_equal(store_outbox_pending(f->s, 0, 10, collect_dl, &l), STORE_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.id[0], second);
    assert_string_equal(l.body[0], "e/2/experiment.paused");
}

/* Reads inside a read's callback: nested statements, same query included. */
struct nest {
    struct store *s;
    int64_t exp;
    int outer, inner;
};

static int nest_inner(void *arg, const struct store_event *ev)
{
    struct nest *n = arg;
    (void)ev;
    n->inner++;
    return 0;
}

static int nest_outer(void *arg, const struct store_event *ev)
{
    struct nest *n = arg;
    struct store_event e2;
    int64_t last;

    n->outer++;
    if (ev->unit) {
        assert_int_equal(store_find_unit(n->s, n->exp, ev->unit, &e2), STORE_OK);
        assert_int_equal(e2.seq, ev->seq);
    }
    assert_int_equal(store_last_seq(n->s, n->exp, &last), STORE_OK);
    assert_int_equal(last, 3);
    assert_int_equal(store_load_events(n->s, n->exp, ev->seq, nest_inner, n), 0);
    /* the outer row's strings are still valid */
    if (ev->seq == 1)
        assert_string_equal(ev->unit, "first");
    return 0;
}

static void test_reentrant_reads(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "nest");
    struct store_op op[3];
    struct nest n = {.s = f->s, .exp = exp};

    op[0] = ev_op(exp, 1, STORE_EV_ASSIGN);
    op[0].ev.unit = "first";
    op[1] = ev_op(exp, 2, STORE_EV_ASSIGN);
    op[1].ev.unit = "second";
    op[2] = ev_op(exp, 3, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(f->s, op, 3), STORE_OK);
    assert_int_equal(store_load_events(f->s, exp, 0, nest_outer, &n), 0);
    assert_int_equal(n.outer, 3);
    assert_int_equal(n.inner, 2 + 1 + 0);
}

/* --- concurrency and shutdown --------------------------------------------------- */

#define CT_THREADS 4
#define CT_SUBS 2000

struct ct_thread {
    struct store *s;
    int64_t exp;
    struct store_op ops[CT_SUBS];
    struct ct_sub {
        struct ct_thread *t;
        int i;
    } subs[CT_SUBS];
    /* written by the writer thread only (callbacks) */
    int next, calls, bad_order, failed;
    /* written by the submitting thread (no cmocka asserts off the main thread) */
    int submit_errors, read_errors;
    int64_t last_seen;
};

static void ct_done(void *arg, int err)
{
    struct ct_sub *cs = arg;
    struct ct_thread *t = cs->t;
    t->calls++;
    if (cs->i != t->next)
        t->bad_order++;
    t->next = cs->i + 1;
    if (err != STORE_OK)
        t->failed++;
}

static void *ct_main(void *arg)
{
    struct ct_thread *t = arg;
    for (int i = 0; i < CT_SUBS; i++) {
        t->ops[i] = ev_op(t->exp, i + 1, STORE_EV_OBSERVE);
        t->ops[i].ev.value = i;
        t->subs[i] = (struct ct_sub){t, i};
        if (store_submit(t->s, &t->ops[i], 1, ct_done, &t->subs[i]) != STORE_OK)
            t->submit_errors++;
        /* reads from this thread's own connection, closed when it exits */
        if (i % 500 == 0 && store_last_seq(t->s, t->exp, &t->last_seen) != STORE_OK)
            t->read_errors++;
    }
    return NULL;
}

static void test_concurrent_submitters(void **state)
{
    struct tstore *f = *state;
    struct ct_thread *t = calloc(CT_THREADS, sizeof *t);
    pthread_t tid[CT_THREADS];
    struct store_stats st;
    char name[16];
    int64_t last;

    assert_non_null(t);
    for (int k = 0; k < CT_THREADS; k++) {
        snprintf(name, sizeof name, "ct%d", k);
        t[k].s = f->s;
        t[k].exp = create_exp(f->s, name);
    }
    for (int k = 0; k < CT_THREADS; k++)
        assert_int_equal(pthread_create(&tid[k], NULL, ct_main, &t[k]), 0);
    for (int k = 0; k < CT_THREADS; k++)
        pthread_join(tid[k], NULL);
    /* FIFO: once this completes, every earlier submission has too */
    assert_int_equal(store_write_sync(f->s, NULL, 0), STORE_OK);
    for (int k = 0; k < CT_THREADS; k++) {
        assert_int_equal(t[k].submit_errors, 0);
        assert_int_equal(t[k].read_errors, 0);
        assert_int_equal(t[k].calls, CT_SUBS);
        assert_int_equal(t[k].bad_order, 0);
        assert_int_equal(t[k].failed, 0);
        assert_int_equal(store_last_seq(f->s, t[k].exp, &last), STORE_OK);
        assert_int_equal(last, CT_SUBS);
    }
    store_get_stats(f->s, &st);
    assert_int_equal(st.queue_depth, 0);
    assert_true(st.writes >= (uint64_t)CT_THREADS * CT_SUBS);
    assert_true(st.commits <= st.writes);
    reopen(f);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM events"), CT_THREADS * CT_SUBS);
    assert_int_equal(count_rows(f->path, "SELECT count(DISTINCT exp || '/' || seq) FROM events"),
                     CT_THREADS * CT_SUBS);
    free(t);
}

struct drain {
    struct store *s;
    int calls, ok, closed_on_resubmit;
    struct store_op again;
};

static void drain_done(void *arg, int err)
{
    struct drain *d = arg;
    d->calls++;
    if (err == STORE_OK)
        d->ok++;
    /* the store is closing: no new work is accepted, even from callbacks */
    if (store_submit(d->s, &d->again, 1, drain_done, d) == STORE_ERR_CLOSED)
        d->closed_on_resubmit++;
}

static void test_close_drains(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "drain");
    struct store_op op[50];
    struct drain d = {.s = f->s};
    char err[256];

    d.again = ev_op(exp, 1000, STORE_EV_OBSERVE);
    store_test_pause_writer(f->s, 1);
    for (int i = 0; i < 50; i++) {
        op[i] = ev_op(exp, i + 1, STORE_EV_OBSERVE);
        assert_int_equal(store_submit(f->s, &op[i], 1, drain_done, &d), STORE_OK);
    }
    store_close(f->s); /* still paused: close overrides and drains */
    f->s = NULL;
    assert_int_equal(d.calls, 50);
    assert_int_equal(d.ok, 50);
    assert_int_equal(d.closed_on_resubmit, 50);
    /* WAL checkpointed and removed on a clean close (checked before any
     * other connection opens the file and recreates it) */
    if (!tstore_is_pg(f)) {
        char wal[300];
        snprintf(wal, sizeof wal, "%s-wal", f->path);
        assert_int_equal(access(wal, F_OK), -1);
    }
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM events"), 50);
    f->s = store_open(f->path, STORE_SYNC_FULL, err, sizeof err);
    assert_non_null(f->s);
}

/* --- failures ----------------------------------------------------------------- */

static void test_injected_commit_failure(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "fault"), last = -1;
    struct collector c;
    struct slot sl[4];
    struct store_op op[4];
    int64_t rowid = 0;
    struct store_stats before, after;

    collector_init(&c);
    store_get_stats(f->s, &before);
    store_test_fail_commits(f->s, 1);
    store_test_pause_writer(f->s, 1);
    op[0] = (struct store_op){
        .kind = STORE_OP_EXP_CREATE, .id = "doomed", .config_json = "{}", .rowid_out = &rowid};
    op[1] = ev_op(exp, 1, STORE_EV_ASSIGN);
    op[1].ev.unit = "u";
    op[2] = ev_op(exp, 2, STORE_EV_OBSERVE);
    op[3] = (struct store_op){.kind = STORE_OP_EXP_CREATE, .id = "fault", .config_json = "{}"};
    for (int i = 0; i < 4; i++) {
        sl[i] = (struct slot){&c, i};
        assert_int_equal(store_submit(f->s, &op[i], 1, collect, &sl[i]), STORE_OK);
    }
    store_test_pause_writer(f->s, 0);
    collector_wait(&c, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c.order[i], i);
        assert_int_equal(c.err[i], STORE_ERR_FULL); /* even the duplicate id */
    }
    store_get_stats(f->s, &after);
    assert_int_equal(after.failed_commits - before.failed_commits, 1);
    assert_int_equal(after.commits, before.commits);
    assert_int_equal(after.writes, before.writes);
    /* nothing of the batch is on disk */
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 0);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM experiments"), 1);
    /* and the store recovers */
    assert_int_equal(store_write_sync(f->s, &op[1], 2), STORE_OK);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 2);
    assert_int_equal(store_write_sync(f->s, &op[0], 1), STORE_OK);
    assert_true(rowid > exp);
    collector_destroy(&c);
}

static void test_env_fault(void **state)
{
    struct tstore *f = *state;
    char err[256];
    struct store_op op[3];

    store_close(f->s);
    setenv("BANDITD_STORE_FAIL_COMMITS", "1+1", 1);
    f->s = store_open(f->path, STORE_SYNC_FULL, err, sizeof err);
    unsetenv("BANDITD_STORE_FAIL_COMMITS");
    assert_non_null(f->s);
    for (int i = 0; i < 3; i++)
        op[i] = (struct store_op){.kind = STORE_OP_EXP_CREATE,
                                  .id = i == 0   ? "e0"
                                        : i == 1 ? "e1"
                                                 : "e2",
                                  .config_json = "{}"};
    assert_int_equal(store_write_sync(f->s, &op[0], 1), STORE_OK);
    assert_int_equal(store_write_sync(f->s, &op[1], 1), STORE_ERR_FULL);
    assert_int_equal(store_write_sync(f->s, &op[2], 1), STORE_OK);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM experiments"), 2);
}

/* Callbacks may not wait for the writer they run on. */
struct cbsync {
    struct store *s;
    int inner;
};

static void cbsync_done(void *arg, int err)
{
    struct cbsync *c = arg;
    assert_int_equal(err, STORE_OK);
    c->inner = store_write_sync(c->s, NULL, 0);
}

static void test_sync_from_callback_refused(void **state)
{
    struct tstore *f = *state;
    struct cbsync c = {.s = f->s, .inner = -1};
    assert_int_equal(store_submit(f->s, NULL, 0, cbsync_done, &c), STORE_OK);
    assert_int_equal(store_write_sync(f->s, NULL, 0), STORE_OK);
    assert_int_equal(c.inner, STORE_ERR_IO);
}

/* Another process holding the write lock for a while: the writer waits
 * (busy timeout) instead of failing, and readers are not blocked (WAL). */
static void *release_later(void *arg)
{
    sqlite3 *db = arg;
    usleep(300 * 1000);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    return NULL;
}

static void test_busy_retried(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "busy"), last = -1;
    struct store_op op = ev_op(exp, 1, STORE_EV_OBSERVE);
    sqlite3 *other;
    pthread_t tid;

    assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(pthread_create(&tid, NULL, release_later, other), 0);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK); /* not blocked */
    assert_int_equal(last, 0);
    assert_int_equal(store_write_sync(f->s, &op, 1), STORE_OK);
    pthread_join(tid, NULL);
    sqlite3_close(other);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 1);
}

/* A real full disk: a small tmpfs (needs root; skipped otherwise). Fill it,
 * check the failure is STORE_ERR_FULL and leaves the committed data intact,
 * then free space and check the store writes again. */
static void test_real_disk_full(void **state)
{
    struct tstore *f = *state;
    char mnt[160], path[200], ballast[200], err[256], text[8192];
    struct store *s;
    struct store_op op;
    int64_t exp, last;
    int rc = STORE_OK, i, ok = 0;
    FILE *fp;

    snprintf(mnt, sizeof mnt, "%s/mnt", f->dir);
    assert_int_equal(mkdir(mnt, 0700), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=384k") != 0) {
        /* not root (or no mount namespace): nothing to test here. Not
         * skip(): cmocka's TAP prints a skip as "not ok … # SKIP", which
         * tests/run.sh counts as a failure. */
        fprintf(stderr, "# tmpfs mount failed (%s): real disk-full test not run\n",
                strerror(errno));
        return;
    }
    snprintf(path, sizeof path, "%s/full.db", mnt);
    snprintf(ballast, sizeof ballast, "%s/ballast", mnt);
    s = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    if (s == NULL) {
        umount(mnt);
        fail_msg("open on tmpfs: %s", err);
    }
    exp = create_exp(s, "full");
    fp = fopen(ballast, "w");
    assert_non_null(fp);
    memset(text, 'x', sizeof text);
    /* Fills the tmpfs: the last writes and the close may fail for want of
     * room, which is the point. */
    for (i = 0; i < 16; i++)
        (void)fwrite(text, 1, sizeof text, fp);
    (void)fclose(fp);
    text[sizeof text - 1] = '\0';
    for (i = 1; i <= 200; i++) {
        op = ev_op(exp, i, STORE_EV_STATE);
        op.ev.text = text;
        rc = store_write_sync(s, &op, 1);
        if (rc != STORE_OK)
            break;
        ok++;
    }
    assert_int_equal(rc, STORE_ERR_FULL);
    assert_true(ok > 0);
    assert_int_equal(store_last_seq(s, exp, &last), STORE_OK);
    assert_int_equal(last, ok);
    /* free space: the store writes again */
    assert_int_equal(unlink(ballast), 0);
    op = ev_op(exp, ok + 1, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(s, &op, 1), STORE_OK);
    assert_int_equal(store_last_seq(s, exp, &last), STORE_OK);
    assert_int_equal(last, ok + 1);
    store_close(s);
    assert_int_equal(umount(mnt), 0);
}

/* --- keys and backup ------------------------------------------------------------ */

struct keylist {
    int n;
    int64_t rowid[4];
    char name[4][16], scopes[4][32], hash[4][70], experiments[4][64];
    int revoked[4];
    int64_t created[4];
};

static int collect_key(void *arg, const struct store_key_row *row)
{
    struct keylist *l = arg;
    assert_true(l->n < 4);
    l->rowid[l->n] = row->rowid;
    snprintf(l->name[l->n], 16, "%s", row->name ? row->name : "(null)");
    snprintf(l->scopes[l->n], 32, "%s", row->scopes);
    snprintf(l->hash[l->n], 70, "%s", row->hash);
    snprintf(l->experiments[l->n], 64, "%s", row->experiments ? row->experiments : "(null)");
    l->revoked[l->n] = row->revoked;
    l->created[l->n] = row->created_ms;
    l->n++;
    return 0;
}

static void test_keys(void **state)
{
    struct tstore *f = *state;
    int64_t k1 = 0, k2 = 0;
    struct keylist l = {0};
    const char *h1 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const char *h2 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752";

    assert_int_equal(store_key_insert(f->s, "ops", "admin", h1, NULL, 111, NULL, NULL, &k1),
                     STORE_OK);
    assert_int_equal(
        store_key_insert(f->s, NULL, "assign,report", h2, "checkout,promo", 222, NULL, NULL, &k2),
        STORE_OK);
    assert_true(k1 > 0 && k2 > k1);
    assert_int_equal(store_key_insert(f->s, "again", "read", h1, NULL, 333, NULL, NULL, NULL),
                     STORE_ERR_EXISTS);
    assert_int_equal(store_key_revoke(f->s, k1, NULL, NULL), STORE_OK);
    assert_int_equal(store_key_revoke(f->s, k2 + 100, NULL, NULL), STORE_ERR_NOTFOUND);
    assert_int_equal(store_load_keys(f->s, collect_key, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.rowid[0], k1);
    assert_string_equal(l.name[0], "ops");
    assert_string_equal(l.scopes[0], "admin");
    assert_string_equal(l.hash[0], h1);
    assert_int_equal(l.revoked[0], 1);
    assert_int_equal(l.created[0], 111);
    assert_string_equal(l.name[1], "(null)");
    assert_string_equal(l.scopes[1], "assign,report");
    assert_string_equal(l.experiments[0], "(null)");
    assert_string_equal(l.experiments[1], "checkout,promo");
    assert_int_equal(l.revoked[1], 0);
}

static void test_backup(void **state)
{
    struct tstore *f = *state;
    char bpath[160], err[256];
    int64_t exp = create_exp(f->s, "saved"), last;
    struct store_op op[2];
    struct store *b;
    struct explist l = {0};
    struct evlist el = {0};

    op[0] = ev_op(exp, 1, STORE_EV_ASSIGN);
    op[0].ev.unit = "u";
    op[1] = ev_op(exp, 2, STORE_EV_REWARD);
    op[1].ev.ref = 1;
    op[1].ev.value = 1;
    assert_int_equal(store_write_sync(f->s, op, 2), STORE_OK);
    assert_int_equal(store_key_insert(f->s, "k", "read", "abc", NULL, 1, NULL, NULL, NULL),
                     STORE_OK);

    snprintf(bpath, sizeof bpath, "%s/backup.db", f->dir);
    err[0] = '\0';
    assert_int_equal(store_backup(f->s, bpath, err, sizeof err), STORE_OK);
    /* existing target: refused with a message */
    err[0] = '\0';
    assert_int_equal(store_backup(f->s, bpath, err, sizeof err), STORE_ERR_EXISTS);
    assert_true(err[0] != '\0');
    {
        /* even an empty one (VACUUM INTO would write into it), and it stays */
        char epath[176];
        snprintf(epath, sizeof epath, "%s/empty.db", f->dir);
        FILE *fp = fopen(epath, "w");
        assert_non_null(fp);
        assert_int_equal(fclose(fp), 0);
        assert_int_equal(store_backup(f->s, epath, err, sizeof err), STORE_ERR_EXISTS);
        assert_int_equal(access(epath, F_OK), 0);
        /* a failed backup leaves no file behind */
        snprintf(epath, sizeof epath, "%s/no-such-dir/b.db", f->dir);
        assert_int_not_equal(store_backup(f->s, epath, err, sizeof err), STORE_OK);
    }
    /* the writer keeps going; the backup is a snapshot */
    op[0] = ev_op(exp, 3, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_OK);

    b = store_open(bpath, STORE_SYNC_FULL, err, sizeof err);
    if (b == NULL)
        fail_msg("open backup: %s", err);
    assert_int_equal(store_load_experiments(b, collect_exp, &l), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.id[0], "saved");
    assert_int_equal(store_load_events(b, l.rowid[0], 0, collect_ev, &el), 0);
    assert_int_equal(el.n, 2);
    assert_string_equal(el.ev[0].unit, "u");
    assert_true(el.ev[1].value == 1.0);
    assert_int_equal(store_last_seq(b, exp, &last), STORE_OK);
    assert_int_equal(last, 2);
    assert_int_equal(count_rows(bpath, "SELECT count(*) FROM api_keys"), 1);
    store_close(b);
}

/* --- files ------------------------------------------------------------------- */

static unsigned mode_of(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        fail_msg("stat %s: %s", path, strerror(errno));
    return (unsigned)(sb.st_mode & 07777);
}

/* The database, its -wal and -shm, and a backup are the owner's alone,
 * whatever the umask lets through (issue 13: they were 0644). */
static void test_file_modes(void **state)
{
    struct tstore *f = *state;
    char path[160], side[176], bpath[160], err[256];
    mode_t old = umask(022);
    struct store *s;
    struct store_op op;
    int64_t exp;

    snprintf(path, sizeof path, "%s/private.db", f->dir);
    s = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    umask(old);
    if (s == NULL)
        fail_msg("open: %s", err);
    exp = create_exp(s, "secret");
    op = ev_op(exp, 1, STORE_EV_ASSIGN);
    op.ev.unit = "patient-17";
    assert_int_equal(store_write_sync(s, &op, 1), STORE_OK);
    assert_int_equal(mode_of(path), 0600);
    snprintf(side, sizeof side, "%s-wal", path);
    assert_int_equal(mode_of(side), 0600);
    snprintf(side, sizeof side, "%s-shm", path);
    assert_int_equal(mode_of(side), 0600);

    old = umask(022);
    snprintf(bpath, sizeof bpath, "%s/backup.db", f->dir);
    int rc = store_backup(s, bpath, err, sizeof err);
    umask(old);
    assert_int_equal(rc, STORE_OK);
    assert_int_equal(mode_of(bpath), 0600);
    snprintf(side, sizeof side, "%s-journal", bpath);
    assert_int_not_equal(access(side, F_OK), 0); /* nothing else left beside it */
    store_close(s);
}

/* Strings and numbers the engines could mangle come back as written, also
 * when a group's events travel together (PostgreSQL sends them as arrays:
 * quoting, NULL, the shortest round-tripping doubles). */
static void test_values_exact(void **state)
{
    struct tstore *f = *state;
    static const char *const units[] = {"a\"b", "back\\slash", "com,ma",      "{brace}", "NULL",
                                        "",     "sp ace",      "ünï\u00e7ødé"};
    static const double values[] = {0.1, 1e-300, -2.0, 2.5e307, 1.0 / 3.0, -7.0, 4.9e-324, 0.5};
    enum { N = sizeof units / sizeof units[0] };
    int64_t exp = create_exp(f->s, "exact");
    struct store_op op[N];
    struct evlist l = {0};

    for (int i = 0; i < N; i++) {
        op[i] = ev_op(exp, i + 1, i % 2 ? STORE_EV_OBSERVE : STORE_EV_STATE);
        op[i].ev.value = values[i];
        op[i].ev.text = units[i];
        op[i].ev.unit = i % 2 ? units[N - 1 - i] : NULL;
    }
    assert_int_equal(store_write_sync(f->s, op, N), STORE_OK);
    assert_int_equal(store_load_events(f->s, exp, 0, collect_ev, &l), 0);
    assert_int_equal(l.n, N);
    for (int i = 0; i < N; i++) {
        assert_event_eq(&op[i].ev, &l.ev[i]);
        assert_memory_equal(&op[i].ev.value, &l.ev[i].value, sizeof(double));
    }
}

/* --- PostgreSQL ---------------------------------------------------------------- */

/* The schema at this build's version, in PostgreSQL's catalog; a reopen
 * keeps the data and runs no migration again. */
static void test_pg_open_migrate_reopen(void **state)
{
    struct tstore *f = *state;

    assert_int_equal(count_rows(f->path, "SELECT max(version) FROM banditd_schema"),
                     store_schema_version());
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM pg_tables WHERE schemaname ="
                                         " current_schema() AND tablename IN ('experiments',"
                                         "'events','api_keys','purges','outbox','nodes')"),
                     6);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM pg_indexes WHERE indexname IN"
                                         " ('events_ref','events_unit','outbox_pending',"
                                         "'outbox_finished','outbox_exp')"),
                     5);
    create_exp(f->s, "kept");
    reopen(f);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM banditd_schema"), 1);
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM experiments"), 1);
}

/* A database written by a newer build is refused, untouched. */
static void test_pg_refuse_newer_version(void **state)
{
    struct tstore *f = *state;
    char err[512], sql[96];

    store_close(f->s);
    f->s = NULL;
    snprintf(sql, sizeof sql, "UPDATE banditd_schema SET version = %d", store_schema_version() + 1);
    assert_int_equal(tpg_exec(f->path, sql), 0);
    err[0] = '\0';
    assert_null(store_open(f->path, STORE_SYNC_FULL, err, sizeof err));
    assert_non_null(strstr(err, "newer than this build"));
    assert_int_equal(count_rows(f->path, "SELECT max(version) FROM banditd_schema"),
                     store_schema_version() + 1);
}

/* Nothing listening, or no such database: a clear error, no store, and no
 * password in the message. */
static void test_pg_unreachable(void **state)
{
    struct tstore *f = *state;
    char err[512], uri[300];

    snprintf(uri, sizeof uri, "postgresql://banditd:sesame@/postgres?host=%s/nowhere", f->dir);
    err[0] = '\0';
    assert_null(store_open(uri, STORE_SYNC_FULL, err, sizeof err));
    assert_non_null(strstr(err, "postgresql://banditd:***@"));
    assert_null(strstr(err, "sesame"));
    snprintf(uri, sizeof uri, "%.*s_missing", (int)(strcspn(f->path, "?")), f->path);
    snprintf(uri + strlen(uri), sizeof uri - strlen(uri), "%s", f->path + strcspn(f->path, "?"));
    err[0] = '\0';
    assert_null(store_open(uri, STORE_SYNC_FULL, err, sizeof err));
    assert_non_null(strstr(err, "does not exist"));
}

/* The server drops the writer's connection (a restart, a failover): the
 * write in flight fails as "unavailable" (FULL: 503, never committed), or,
 * when the writer found the connection gone before it and made a new one,
 * as NOTOWNER: the experiment's lock went with the old session, so nothing
 * is written until it is claimed again (and, in the daemon, reloaded). */
static void test_pg_connection_lost(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "lost"), last = -1;
    struct store_op op = ev_op(exp, 1, STORE_EV_OBSERVE);
    int err;

    assert_int_equal(tpg_exec(f->path, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                       " WHERE application_name = 'banditd'"
                                       " AND pid <> pg_backend_pid()"),
                     0);
    err = store_write_sync(f->s, &op, 1);
    if (err != STORE_ERR_FULL && err != STORE_ERR_NOTOWNER)
        fail_msg("a write on a lost connection: %s", store_strerror(err));
    assert_int_equal(count_rows(f->path, "SELECT count(*) FROM events"), 0);
    assert_int_equal(store_write_sync(f->s, &op, 1), STORE_ERR_NOTOWNER); /* fenced */
    assert_int_equal(store_claim(f->s, exp, NULL, 0), STORE_OK);
    assert_int_equal(store_write_sync(f->s, &op, 1), STORE_OK);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK); /* readers reconnect too */
    assert_int_equal(last, 1);
}

/* Snapshots: written like events, read latest first (all, or those below a
 * seq) with their labels and bytes exact (NUL bytes and all), older ones
 * thinned, one of the same seq replaced, all gone with their experiment; on
 * PostgreSQL only the owner writes one (fencing). */
struct snaps {
    int n;
    int64_t seq[4];
    size_t len[4];
    unsigned char first[64];
    char software[32], design[80], checksum[80];
    int format;
};

static int collect_snap(void *arg, const struct store_snapshot *sn)
{
    struct snaps *l = arg;
    if (l->n == 0) {
        memcpy(l->first, sn->state, sn->len < sizeof l->first ? sn->len : sizeof l->first);
        snprintf(l->software, sizeof l->software, "%s", sn->software);
        snprintf(l->design, sizeof l->design, "%s", sn->design);
        snprintf(l->checksum, sizeof l->checksum, "%s", sn->checksum);
        l->format = sn->format;
    }
    if (l->n < 4) {
        l->seq[l->n] = sn->seq;
        l->len[l->n] = sn->len;
    }
    l->n++;
    return 0;
}

static struct store_op snap_op(struct store_snapshot *sn, int64_t exp, int64_t seq,
                               const unsigned char *bytes, size_t len)
{
    *sn = (struct store_snapshot){.exp = exp,
                                  .seq = seq,
                                  .format = 3,
                                  .software = "1.2.3",
                                  .design = "d35",
                                  .checksum = "c0ffee",
                                  .created_ms = 42,
                                  .state = bytes,
                                  .len = len};
    return (struct store_op){.kind = STORE_OP_SNAPSHOT, .snap = sn};
}

static void test_snapshots(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "snapped"), other = create_exp(f->s, "other");
    unsigned char bytes[3000];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)(i * 7); /* zeros among them */
    struct store_snapshot sn[2];
    struct store_op op[2];
    struct snaps l = {0};

    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    op[0] = ev_op(exp, 1, STORE_EV_OBSERVE);
    op[1] = snap_op(&sn[0], exp, 1, bytes, sizeof bytes);
    assert_int_equal(store_write_sync(f->s, op, 2), STORE_OK);
    /* in the transaction of its submission: a failed event takes it back
     * (seq 1 is taken), even first in the group */
    op[0] = snap_op(&sn[0], exp, 99, bytes, 10);
    op[1] = ev_op(exp, 1, STORE_EV_OBSERVE);
    assert_int_not_equal(store_write_sync(f->s, op, 2), STORE_OK);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_true(l.n == 1 && l.seq[0] == 1);
    memset(&l, 0, sizeof l);
    op[0] = snap_op(&sn[0], exp, 10, bytes, 100);
    op[1] = snap_op(&sn[1], other, 5, bytes, 10);
    assert_int_equal(store_write_sync(f->s, op, 2), STORE_OK);
    op[0] = snap_op(&sn[0], exp, 20, bytes + 1, 200);
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_OK);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 3); /* the first stays: 19 events back, the oldest of its span */
    assert_true(l.seq[0] == 20 && l.seq[1] == 10 && l.seq[2] == 1);
    assert_true(l.len[0] == 200 && l.len[1] == 100);
    /* below a seq: the latest under it first */
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_snapshots(f->s, exp, 20, collect_snap, &l), STORE_OK);
    assert_true(l.n == 2 && l.seq[0] == 10 && l.seq[1] == 1);
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_snapshots(f->s, exp, 1, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_memory_equal(l.first, bytes + 1, sizeof l.first);
    assert_string_equal(l.software, "1.2.3");
    assert_string_equal(l.design, "d35");
    assert_string_equal(l.checksum, "c0ffee");
    assert_int_equal(l.format, 3);
    /* the same seq again: replaced */
    op[0] = snap_op(&sn[0], exp, 20, bytes, sizeof bytes);
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_OK);
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_true(l.n == 3 && l.seq[0] == 20 && l.len[0] == sizeof bytes);
    assert_memory_equal(l.first, bytes, sizeof l.first);
    /* a delete takes them */
    op[0] = (struct store_op){.kind = STORE_OP_EXP_DELETE, .exp = exp};
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_OK);
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    assert_int_equal(store_load_snapshots(f->s, other, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 1);
    if (tstore_is_pg(f)) {
        /* a daemon that does not own the experiment writes no snapshot */
        char err[256];
        struct store *b = store_open(f->path, STORE_SYNC_FULL, err, sizeof err);
        if (b == NULL)
            fail_msg("second store: %s", err);
        op[0] = snap_op(&sn[0], other, 9, bytes, 10);
        assert_int_equal(store_write_sync(b, op, 1), STORE_ERR_NOTOWNER);
        store_close(b);
        memset(&l, 0, sizeof l);
        assert_int_equal(store_load_snapshots(f->s, other, INT64_MAX, collect_snap, &l), STORE_OK);
        assert_true(l.n == 1 && l.seq[0] == 5);
    }
}

/* store_submit_aside: refused while a failure of its key's writes queued
 * before it stands; its own failure (here its transaction's, injected: it
 * has one of its own) poisons nothing, so the key's next write commits. */
static void test_aside(void **state)
{
    struct tstore *f = *state;
    int64_t exp = create_exp(f->s, "aside"), last = -1;
    unsigned char bytes[64] = {1, 2, 3};
    struct store_snapshot sn[2];
    struct store_op op[5];
    struct collector c;
    struct slot sl[5];
    struct snaps l = {0};
    collector_init(&c);
    for (int i = 0; i < 5; i++)
        sl[i] = (struct slot){&c, i};
    op[0] = ev_op(exp, 1, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(f->s, op, 1), STORE_OK);
    /* seq 1 again fails on its own data and poisons the key: the aside
     * behind it is refused with its error, unwritten */
    store_test_pause_writer(f->s, 1);
    op[1] = ev_op(exp, 1, STORE_EV_OBSERVE);
    op[2] = snap_op(&sn[0], exp, 1, bytes, sizeof bytes);
    assert_int_equal(store_submit_keyed(f->s, exp, 0, &op[1], 1, collect, &sl[1]), STORE_OK);
    assert_int_equal(store_submit_aside(f->s, exp, &op[2], 1, collect, &sl[2]), STORE_OK);
    store_test_pause_writer(f->s, 0);
    collector_wait(&c, 2);
    assert_int_not_equal(c.err[1], STORE_OK);
    assert_int_equal(c.err[2], c.err[1]);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    /* after the reset, the aside's own transaction fails: the key's write
     * queued behind it commits all the same */
    op[0] = ev_op(exp, 2, STORE_EV_OBSERVE);
    assert_int_equal(store_submit_keyed(f->s, exp, 1, &op[0], 1, collect, &sl[0]), STORE_OK);
    collector_wait(&c, 3);
    assert_int_equal(c.err[0], STORE_OK);
    store_test_pause_writer(f->s, 1);
    store_test_fail_commits(f->s, 1);
    op[3] = snap_op(&sn[1], exp, 2, bytes, sizeof bytes);
    op[4] = ev_op(exp, 3, STORE_EV_OBSERVE);
    assert_int_equal(store_submit_aside(f->s, exp, &op[3], 1, collect, &sl[3]), STORE_OK);
    assert_int_equal(store_submit_keyed(f->s, exp, 0, &op[4], 1, collect, &sl[4]), STORE_OK);
    store_test_pause_writer(f->s, 0);
    collector_wait(&c, 5);
    assert_int_equal(c.err[3], STORE_ERR_FULL);
    assert_int_equal(c.err[4], STORE_OK);
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 3);
    memset(&l, 0, sizeof l);
    assert_int_equal(store_load_snapshots(f->s, exp, INT64_MAX, collect_snap, &l), STORE_OK);
    assert_int_equal(l.n, 0);
    collector_destroy(&c);
}

/* The retention rule (store_snapshots_keep) over a long life, a snapshot
 * every E events: never more than STORE_SNAPSHOTS_MAX, the latest two and
 * the first always there, and for any seq X after the first, the latest
 * kept below X is at most 5 (L - X + E) events behind the latest L (what
 * a correction of a reward at X replays), up to 1,000 E events. */
static void test_snapshots_keep(void **state)
{
    (void)state;
    static const int64_t every[] = {7, 10, 100};
    for (size_t e = 0; e < sizeof every / sizeof every[0]; e++) {
        int64_t E = every[e], seq[STORE_SNAPSHOTS_MAX + 1];
        unsigned char keep[STORE_SNAPSHOTS_MAX + 1];
        size_t n = 0;
        for (int64_t L = E; L <= 1000 * E; L += E) {
            memmove(seq + 1, seq, n * sizeof *seq);
            seq[0] = L;
            n++;
            store_snapshots_keep(seq, n, keep);
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i])
                    seq[k++] = seq[i];
            assert_true(keep[0] && (n < 2 || keep[1]));
            n = k;
            assert_true(n <= STORE_SNAPSHOTS_MAX);
            for (int64_t X = E + 1; X <= L; X += L / 97 + 1) {
                size_t i = 0;
                while (seq[i] >= X)
                    i++;
                if (L - seq[i] > 5 * (L - X + E))
                    fail_msg("every %lld, latest %lld: below %lld the latest kept is %lld",
                             (long long)E, (long long)L, (long long)X, (long long)seq[i]);
            }
        }
        assert_int_equal(seq[n - 1], E); /* the first */
    }
}

/* Two daemons' stores on one database: the creator owns an experiment; the
 * other cannot claim it while the owner lives (it is named), nor write its
 * events; once the owner's session ends (a kill -9 closes it) the other
 * claims it; and a frozen owner whose heartbeat went stale is taken over
 * too, its session ended, so that it commits nothing when it wakes. */
static void test_pg_ownership(void **state)
{
    struct tstore *f = *state;
    char err[256], owner[128];
    struct store *b = store_open(f->path, STORE_SYNC_FULL, err, sizeof err);
    int64_t exp = create_exp(f->s, "owned"), last = -1;
    struct store_op op = ev_op(exp, 1, STORE_EV_OBSERVE);

    if (b == NULL)
        fail_msg("second store: %s", err);
    assert_true(store_shared(f->s));
    store_set_advertise(f->s, "http://a.example:8080");
    store_set_advertise(b, "http://b.example:8080");
    /* the next heartbeats carry the addresses (one a second) */
    for (int i = 0; i < 1000 && count_rows(f->path, "SELECT count(*) FROM nodes WHERE url IN"
                                                    " ('http://a.example:8080',"
                                                    " 'http://b.example:8080')") < 2;
         i++)
        usleep(10000);
    assert_int_equal(store_claim(b, exp, owner, sizeof owner), STORE_ERR_NOTOWNER);
    assert_string_equal(owner, "http://a.example:8080");
    assert_int_equal(store_write_sync(b, &op, 1), STORE_ERR_NOTOWNER);
    assert_int_equal(store_write_sync(f->s, &op, 1), STORE_OK);
    assert_int_equal(store_claim(f->s, exp, NULL, 0), STORE_OK); /* already its own */
    assert_int_equal(store_claim(b, 999999, owner, sizeof owner), STORE_ERR_NOTFOUND);

    /* the owner goes (its sessions close): the other takes over at once */
    store_close(f->s);
    f->s = NULL;
    assert_int_equal(store_claim(b, exp, owner, sizeof owner), STORE_OK);
    op = ev_op(exp, 2, STORE_EV_OBSERVE);
    assert_int_equal(store_write_sync(b, &op, 1), STORE_OK);

    /* a frozen owner: b stops beating (its heartbeat row made old, as a
     * SIGSTOP would leave it) while its session holds the lock */
    f->s = store_open(f->path, STORE_SYNC_FULL, err, sizeof err);
    assert_non_null(f->s);
    assert_int_equal(store_claim(f->s, exp, owner, sizeof owner), STORE_ERR_NOTOWNER);
    assert_string_equal(owner, "http://b.example:8080");
    assert_int_equal(tpg_exec(f->path, "UPDATE nodes SET beat_ms = beat_ms - 3600000"
                                       " WHERE url = 'http://b.example:8080'"),
                     0);
    store_test_pause_heartbeat(b, 1);
    store_test_pause_writer(b, 1); /* frozen, a write of its own waiting */
    struct twait w;
    twait_init(&w);
    op = ev_op(exp, 3, STORE_EV_OBSERVE);
    assert_int_equal(store_submit(b, &op, 1, twait_done, &w), STORE_OK);
    assert_int_equal(store_claim(f->s, exp, owner, sizeof owner), STORE_OK);
    store_test_pause_writer(b, 0); /* wakes up: its write must not commit */
    store_test_pause_heartbeat(b, 0);
    int werr = twait_wait(&w);
    if (werr != STORE_ERR_FULL && werr != STORE_ERR_NOTOWNER)
        fail_msg("the frozen owner's write: %s", store_strerror(werr));
    assert_int_equal(store_last_seq(f->s, exp, &last), STORE_OK);
    assert_int_equal(last, 2);
    assert_int_equal(store_write_sync(f->s, &op, 1), STORE_OK); /* the new owner's seq 3 */
    store_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_migrate_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuse_newer_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exp_duplicate_in_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_experiments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_values_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_and_atomicity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_long_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_submitters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_drains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_injected_commit_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_fault, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_from_callback_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aside, setup, teardown),
        cmocka_unit_test(test_snapshots_keep),
        cmocka_unit_test_setup_teardown(test_backup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
    };
    /* every test that is not about SQLite's files, on PostgreSQL */
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test_setup_teardown(test_pg_open_migrate_reopen, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_pg_refuse_newer_version, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_pg_unreachable, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_pg_connection_lost, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_pg_ownership, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_exp_duplicate_in_batch, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_load_experiments, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_events_roundtrip, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_values_exact, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_find, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_and_atomicity, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_delete_long_log, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_outbox, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_reads, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_submitters, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_close_drains, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_injected_commit_failure, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_env_fault, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_sync_from_callback_refused, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_keys, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_snapshots, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_aside, setup_pg, teardown),
    };
    int failed = cmocka_run_group_tests_name("store", tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("store-postgresql", pg_tests, NULL, NULL);
}
