/*
 * sqlite.c — the SQLite backend (backend.h), the embedded default: one
 * writing connection (the front's writer thread), per-thread read-only
 * connections, WAL, and a checkpointer thread of its own.
 *
 * Transactions are IMMEDIATE; a submission's savepoint is SAVEPOINT s. A
 * delete removes the experiment's row and lists its log in purges; each
 * purge step then removes PURGE_CHUNK events in its own transaction.
 *
 * Cost: every statement is in one table (queries[]) and, on the request
 * path, costs O(log n) in the size of the experiment's log (the plans are
 * checked by tests/unit/test_store_plans.c).
 *
 * Reads: each thread gets its own read-only connection on first use (a
 * pthread key per store; the connection is closed when the thread exits or at
 * close, whichever comes first) with its statements prepared once. A
 * statement busy in an outer read (a callback of store_load_events calling
 * store_find_unit, or even store_load_events again) is never reused: the
 * nested call prepares a private one, so reads are re-entrant.
 */
#include "store/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/clock.h"
#include "base/digest.h"
#include "base/log.h"
#include "store/readers.h"
#include "store/schema.h"
#include "store/store_test.h"

#define STORE_BUSY_TIMEOUT_MS 5000
#define STORE_BUSY_RETRIES 5  /* on top of the busy handler's wait */
#define STORE_CKPT_PAGES 1000 /* WAL pages that wake the checkpointer (SQLite's default) */
/* --- statements -------------------------------------------------------------- */

/* Every SQL statement this file runs, in one table (store_test_sql lists it
 * for the query-plan test, tests/unit/test_store_plans.c, which fails on a
 * statement it has no expectation for). On the request path every
 * statement on events is an index lookup bounded by the experiment and a
 * seq, ref or unit, or one end of an experiment's seq range: its cost is
 * O(log n) in the size of the log, whatever the experiment's age. The two
 * secondary-index lookups name their index (INDEXED BY): without
 * statistics the planner prefers the primary key's (exp=?) range, a scan
 * of the experiment's whole log (issue 12), and INDEXED BY turns "the
 * planner happens to choose the index" into "prepare fails otherwise". */
enum q {
    /* the writer's: prepared once at open on s->wdb */
    Q_BEGIN,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_SAVEPOINT,
    Q_RELEASE,
    Q_ROLLBACK_TO,
    Q_EXP_INSERT,
    Q_EXP_DELETE,
    Q_LAST_EVENT,
    Q_PURGE_ADD,
    Q_PURGE_NEXT,
    Q_PURGE_CHUNK,
    Q_PURGE_DONE,
    Q_EVENT_INSERT,
    Q_KEY_INSERT,
    Q_KEY_REVOKE,
    Q_AUDIT_LAST,
    Q_AUDIT_INSERT,
    Q_OUTBOX_INSERT,
    Q_OUTBOX_UPDATE,
    Q_OUTBOX_PRUNE,
    Q_SNAP_INSERT,
    Q_SNAP_SEQS,
    Q_SNAP_DROP,
    Q_SNAP_DELETE,
    Q_SYNC_FULL,
    Q_SYNC_NORMAL,
    /* the readers': prepared on first use, per thread */
    Q_EXPERIMENTS,
    Q_EXPERIMENT_BY_ID,
    Q_EVENTS,
    Q_ASSIGNMENT,
    Q_OUTCOME,
    Q_UNIT,
    Q_LAST_SEQ,
    Q_KEYS,
    Q_AUDIT,
    Q_OUTBOX_PENDING,
    Q_OUTBOX_LIST,
    Q_OUTBOX_DEPTH,
    Q_SNAPSHOTS,
    /* run once: connection settings at open, the backup */
    Q_WAL,
    Q_NO_FK,
    Q_NO_AUTOCKPT,
    Q_BACKUP,
    Q_COUNT
};

#define PURGE_CHUNK "256" /* events removed per purge transaction */

static const struct store_sql queries[Q_COUNT] = {
    [Q_BEGIN] = {"begin", STORE_SQL_WRITE, "BEGIN IMMEDIATE"},
    [Q_COMMIT] = {"commit", STORE_SQL_WRITE, "COMMIT"},
    [Q_ROLLBACK] = {"rollback", STORE_SQL_WRITE, "ROLLBACK"},
    [Q_SAVEPOINT] = {"savepoint", STORE_SQL_WRITE, "SAVEPOINT s"},
    [Q_RELEASE] = {"release", STORE_SQL_WRITE, "RELEASE s"},
    [Q_ROLLBACK_TO] = {"rollback_to", STORE_SQL_WRITE, "ROLLBACK TO s"},
    [Q_EXP_INSERT] = {"exp_insert", STORE_SQL_WRITE,
                      "INSERT INTO experiments(id, config, created_ms) VALUES (?1, ?2, ?3)"},
    /* A delete removes the row and queues the log for the purge (below):
     * deleting a long log at once would hold the writer, and every other
     * experiment's writes, for seconds. */
    [Q_EXP_DELETE] = {"exp_delete", STORE_SQL_WRITE, "DELETE FROM experiments WHERE rowid = ?1"},
    /* the deleted log's last row, for the audit log's record of the delete */
    [Q_LAST_EVENT] = {"last_event", STORE_SQL_WRITE,
                      "SELECT seq, chain FROM events WHERE exp = ?1 ORDER BY seq DESC LIMIT 1"},
    [Q_PURGE_ADD] = {"purge_add", STORE_SQL_WRITE, "INSERT OR IGNORE INTO purges(exp) VALUES (?1)"},
    [Q_PURGE_NEXT] = {"purge_next", STORE_SQL_WRITE, "SELECT exp FROM purges ORDER BY exp LIMIT 1"},
    [Q_PURGE_CHUNK] = {"purge_chunk", STORE_SQL_WRITE,
                       "DELETE FROM events WHERE exp = ?1 AND seq IN (SELECT seq FROM events"
                       " WHERE exp = ?1 ORDER BY seq LIMIT " PURGE_CHUNK ")"},
    [Q_PURGE_DONE] = {"purge_done", STORE_SQL_WRITE, "DELETE FROM purges WHERE exp = ?1"},
    [Q_EVENT_INSERT] = {"event_insert", STORE_SQL_WRITE,
                        "INSERT INTO events(" EVENT_COLS ")"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
                        " ?15)"},
    [Q_KEY_INSERT] = {"key_insert", STORE_SQL_WRITE,
                      "INSERT INTO api_keys(name, scopes, hash, created_ms, experiments)"
                      " VALUES (?1, ?2, ?3, ?4, ?5)"},
    [Q_KEY_REVOKE] = {"key_revoke", STORE_SQL_WRITE,
                      "UPDATE api_keys SET revoked = 1 WHERE rowid = ?1"},
    [Q_AUDIT_LAST] = {"audit_last", STORE_SQL_WRITE,
                      "SELECT seq, chain FROM audit_log ORDER BY seq DESC LIMIT 1"},
    [Q_AUDIT_INSERT] = {"audit_insert", STORE_SQL_WRITE,
                        "INSERT INTO audit_log(seq, ts_ms, kind, subject, detail, actor,"
                        " request_id, chain) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
    [Q_OUTBOX_INSERT] = {"outbox_insert", STORE_SQL_WRITE,
                         "INSERT INTO outbox(exp, exp_id, event_id, type, url, secret, body,"
                         " created_ms, next_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
    [Q_OUTBOX_UPDATE] = {"outbox_update", STORE_SQL_WRITE,
                         "UPDATE outbox SET state = ?2, attempts = ?3, next_ms = ?4, last_ms = ?5,"
                         " last_status = ?6, last_error = ?7 WHERE id = ?1"},
    [Q_OUTBOX_PRUNE] = {"outbox_prune", STORE_SQL_WRITE,
                        "DELETE FROM outbox INDEXED BY outbox_finished"
                        " WHERE state != 0 AND last_ms < ?1"},
    /* Snapshots (store.h): one replaces another of the same seq; then the
     * experiment's seqs (the primary key's index alone; a dozen rows, sorted
     * by store_snapshots_keep) say which go, each by its key. */
    [Q_SNAP_INSERT] = {"snap_insert", STORE_SQL_WRITE,
                       "INSERT OR REPLACE INTO snapshots(exp, seq, format, software, design,"
                       " checksum, created_ms, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
    [Q_SNAP_SEQS] = {"snap_seqs", STORE_SQL_WRITE, "SELECT seq FROM snapshots WHERE exp = ?1"},
    [Q_SNAP_DROP] = {"snap_drop", STORE_SQL_WRITE,
                     "DELETE FROM snapshots WHERE exp = ?1 AND seq = ?2"},
    [Q_SNAP_DELETE] = {"snap_delete", STORE_SQL_WRITE, "DELETE FROM snapshots WHERE exp = ?1"},
    /* The connections' sync mode, set once at open. Never prepared and
     * stepped again: SQLite applies PRAGMA synchronous when it compiles the
     * statement, not when it runs it (a prepared "=NORMAL" once lowered the
     * writer for good: test_powerloss). */
    [Q_SYNC_FULL] = {"sync_full", STORE_SQL_ONCE, "PRAGMA synchronous=FULL"},
    [Q_SYNC_NORMAL] = {"sync_normal", STORE_SQL_ONCE, "PRAGMA synchronous=NORMAL"},

    [Q_EXPERIMENTS] = {"experiments", STORE_SQL_READ,
                       "SELECT rowid, id, config, created_ms FROM experiments ORDER BY rowid"},
    [Q_EXPERIMENT_BY_ID] = {"experiment_by_id", STORE_SQL_READ,
                            "SELECT rowid, id, config, created_ms FROM experiments WHERE id = ?1"},
    [Q_EVENTS] = {"events", STORE_SQL_READ,
                  "SELECT " EVENT_COLS " FROM events WHERE exp = ?1 AND seq > ?2 ORDER BY seq"},
    [Q_ASSIGNMENT] = {"assignment", STORE_SQL_READ,
                      "SELECT " EVENT_COLS " FROM events WHERE exp = ?1 AND seq = ?2 AND kind = 1"},
    /* events_ref holds (exp, ref, seq): the first outcome in seq order is
     * its first entry for (exp, ref), no sort */
    [Q_OUTCOME] = {"outcome", STORE_SQL_READ,
                   "SELECT " EVENT_COLS " FROM events INDEXED BY events_ref"
                   " WHERE exp = ?1 AND ref = ?2"
                   " AND (kind = ?3 OR (?3 = 0 AND kind IN (2, 4, 5))) ORDER BY seq LIMIT 1"},
    [Q_UNIT] = {"unit", STORE_SQL_READ,
                "SELECT " EVENT_COLS " FROM events INDEXED BY events_unit"
                " WHERE exp = ?1 AND unit = ?2 AND kind IN (1, 9) AND (?3 < 0 OR bandit = ?3)"
                " ORDER BY seq DESC LIMIT 1"},
    [Q_LAST_SEQ] = {"last_seq", STORE_SQL_READ,
                    "SELECT seq FROM events WHERE exp = ?1 ORDER BY seq DESC LIMIT 1"},
    [Q_KEYS] = {"keys", STORE_SQL_READ,
                "SELECT rowid, name, scopes, hash, created_ms, revoked, experiments FROM api_keys"
                " ORDER BY rowid"},
    [Q_AUDIT] = {"audit", STORE_SQL_READ,
                 "SELECT seq, ts_ms, kind, subject, detail, actor, request_id, chain"
                 " FROM audit_log ORDER BY seq"},
    /* the outbox's reads go through its partial indexes: their cost is in
     * the pending rows (or one experiment's), never in the rows kept */
    [Q_OUTBOX_PENDING] = {"outbox_pending", STORE_SQL_READ,
                          "SELECT " OUTBOX_COLS " FROM outbox INDEXED BY outbox_pending"
                          " WHERE state = 0 AND id > ?1 ORDER BY id LIMIT ?2"},
    [Q_OUTBOX_LIST] = {"outbox_list", STORE_SQL_READ,
                       "SELECT " OUTBOX_COLS " FROM outbox INDEXED BY outbox_exp"
                       " WHERE exp = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"},
    [Q_OUTBOX_DEPTH] = {"outbox_depth", STORE_SQL_READ,
                        "SELECT count(*) FROM outbox INDEXED BY outbox_pending WHERE state = 0"},

    /* the latest below ?2, by the primary key's index: one row */
    [Q_SNAPSHOTS] = {"snapshots", STORE_SQL_READ,
                     "SELECT exp, seq, format, software, design, checksum, created_ms, state"
                     " FROM snapshots WHERE exp = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT 1"},

    [Q_WAL] = {"wal", STORE_SQL_ONCE, "PRAGMA journal_mode=WAL"},

    [Q_NO_FK] = {"no_foreign_keys", STORE_SQL_ONCE, "PRAGMA foreign_keys=OFF"},
    [Q_NO_AUTOCKPT] = {"no_autocheckpoint", STORE_SQL_ONCE, "PRAGMA wal_autocheckpoint=0"},
    [Q_BACKUP] = {"backup", STORE_SQL_ONCE, "VACUUM INTO ?1"},
};

const struct store_sql *store_test_sql(size_t i)
{
    return i < Q_COUNT ? &queries[i] : NULL;
}

/* One thread's read-only connection. */
struct reader {
    struct store_reader link; /* first: readers.h */
    sqlite3 *db;
    sqlite3_stmt *st[Q_COUNT];   /* prepared on first use (STORE_SQL_READ) */
    unsigned char busy[Q_COUNT]; /* st[q] is in an unfinished read */
};

struct store_backend {
    char *path;
    enum store_sync sync;

    /* writer: connection and statements used by the front's writer thread
     * only (by open before it starts and close after it ends) */
    sqlite3 *wdb;
    sqlite3_stmt *wst[Q_COUNT]; /* STORE_SQL_WRITE ones */

    /* checkpointer: its own connection and thread, so that copying the WAL
     * back into the database (and that fsync) never runs inside a commit */
    sqlite3 *cdb;
    pthread_t ckpt;
    int ckpt_started;
    pthread_mutex_t mu; /* the checkpointer's flags and count */
    pthread_cond_t ckpt_cv;
    int ckpt_wanted; /* under mu: the WAL passed STORE_CKPT_PAGES */
    int closing;     /* under mu */
    uint64_t checkpoints;

    struct store_readers readers;

    int have_mu, have_ckpt_cv;
    int lock_fd; /* PATH.lock, flock'ed while a daemon serves the file; −1: none */
};

/* --- errors ------------------------------------------------------------------ */

/* The one place SQLite result codes become store errors. SQLITE_NOTFOUND,
 * which statements never return, is used inside this file for "no such
 * row". */
static int store_err_from_sqlite(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return STORE_OK;
    case SQLITE_NOTFOUND:
        return STORE_ERR_NOTFOUND;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY ||
            rc == SQLITE_CONSTRAINT_ROWID)
            return STORE_ERR_EXISTS;
        return STORE_ERR_IO;
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_BUSY:   /* still locked after the busy timeout and retries: */
    case SQLITE_LOCKED: /* another process holds it; retry later too */
        return STORE_ERR_FULL;
    case SQLITE_NOMEM:
        return STORE_ERR_NOMEM;
    default:
        return STORE_ERR_IO;
    }
}

/* Errors caused by one submission's data: roll back that submission only.
 * Anything else (disk full, I/O, corruption…) dooms the whole batch. */
static int rc_is_submission_error(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_MISUSE:
    case SQLITE_NOTFOUND:
        return 1;
    default:
        return 0;
    }
}

/* The error reported to every submission of a batch whose transaction
 * failed: never "exists" or "not found", which would be about one row. */
static int batch_err_from_sqlite(int rc)
{
    int err = store_err_from_sqlite(rc);
    if (err == STORE_OK || err == STORE_ERR_EXISTS || err == STORE_ERR_NOTFOUND)
        err = STORE_ERR_IO;
    return err;
}

/* sqlite3_step, retried when the database stays busy or locked beyond the
 * busy handler (cases where SQLite does not call it). Only for statements
 * that have produced no row yet, where a reset and retry is safe. */
static int step_retry(sqlite3_stmt *st)
{
    for (int tries = 0;; tries++) {
        int rc = sqlite3_step(st);
        if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) ||
            tries >= STORE_BUSY_RETRIES)
            return rc;
        sqlite3_reset(st);
        clock_sleep_ms(1u << tries);
    }
}

/* Settings every connection gets. */
static int conn_setup(sqlite3 *db)
{
    sqlite3_extended_result_codes(db, 1);
    return sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
}

/* A statement parameter, for binding a whole list at once (bind_args):
 * reads and writes list theirs in ?1, ?2… order. */
struct sql_arg {
    enum { ARG_NULL, ARG_INT, ARG_REAL, ARG_TEXT, ARG_BLOB } t;
    int64_t i;
    double d;
    const char *text; /* borrowed until the statement is reset */
    const void *blob; /* ARG_BLOB: i bytes, borrowed the same */
};

static const struct sql_arg arg_null = {.t = ARG_NULL};

static struct sql_arg arg_int(int64_t v)
{
    struct sql_arg a = {.t = ARG_INT, .i = v};
    return a;
}

/* 0 is stored as NULL (no reference, no expiry…) */
static struct sql_arg arg_opt_int(int64_t v)
{
    if (v == 0)
        return arg_null;
    return arg_int(v);
}

/* NaN is stored as NULL (no value) */
static struct sql_arg arg_real(double v)
{
    struct sql_arg a = {.t = ARG_REAL, .d = v};
    if (isnan(v))
        return arg_null;
    return a;
}

static struct sql_arg arg_text(const char *v)
{
    struct sql_arg a = {.t = ARG_TEXT, .text = v};
    if (v == NULL)
        return arg_null;
    return a;
}

/* Bind a[0..n) to ?1..?n of st: an SQLite code. */
static int bind_args(sqlite3_stmt *st, const struct sql_arg *a, size_t n)
{
    int rc = SQLITE_OK;
    for (size_t k = 0; k < n && rc == SQLITE_OK; k++) {
        int i = (int)k + 1;
        switch (a[k].t) {
        case ARG_INT:
            rc = sqlite3_bind_int64(st, i, a[k].i);
            break;
        case ARG_REAL:
            rc = sqlite3_bind_double(st, i, a[k].d);
            break;
        case ARG_TEXT:
            rc = sqlite3_bind_text(st, i, a[k].text, -1, SQLITE_STATIC);
            break;
        case ARG_BLOB:
            rc = a[k].i > INT_MAX ? SQLITE_TOOBIG
                                  : sqlite3_bind_blob(st, i, a[k].blob, (int)a[k].i, SQLITE_STATIC);
            break;
        default:
            rc = sqlite3_bind_null(st, i);
            break;
        }
    }
    return rc;
}

#define NARGS(a) (sizeof(a) / sizeof((a)[0]))

/* Fill ev from a row of EVENT_COLS. Strings are borrowed from st until its
 * next step or reset. */
static void event_from_row(sqlite3_stmt *st, struct store_event *ev)
{
    ev->exp = sqlite3_column_int64(st, 0);
    ev->seq = sqlite3_column_int64(st, 1);
    ev->kind = sqlite3_column_int(st, 2);
    ev->bandit = (int32_t)sqlite3_column_int64(st, 3);
    ev->arm = (int32_t)sqlite3_column_int64(st, 4);
    ev->flags = (uint32_t)sqlite3_column_int64(st, 5);
    ev->value = sqlite3_column_type(st, 6) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 6);
    ev->ref = sqlite3_column_int64(st, 7);
    ev->ts_ms = sqlite3_column_int64(st, 8);
    ev->expires_ms = sqlite3_column_int64(st, 9);
    ev->unit = (const char *)sqlite3_column_text(st, 10);
    ev->text = (const char *)sqlite3_column_text(st, 11);
    ev->actor = (const char *)sqlite3_column_text(st, 12);
    ev->request_id = (const char *)sqlite3_column_text(st, 13);
    ev->chain = (const char *)sqlite3_column_text(st, 14);
}

/* --- writer ------------------------------------------------------------------ */

/* Run a writer statement to completion and reset it. */
static int wexec(struct store_backend *s, enum q q)
{
    sqlite3_stmt *st = s->wst[q];
    int rc = step_retry(st);
    while (rc == SQLITE_ROW)
        rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Bind a[0..n) to writer statement q and run it: an SQLite code. */
static int wrun(struct store_backend *s, enum q q, const struct sql_arg *a, size_t n)
{
    int rc = bind_args(s->wst[q], a, n);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(s->wst[q]);
        return rc;
    }
    return wexec(s, q);
}

static int writer_event(struct store_backend *s, const struct store_event *ev)
{
    const struct sql_arg a[] = {arg_int(ev->exp),    arg_int(ev->seq),
                                arg_int(ev->kind),   arg_int(ev->bandit),
                                arg_int(ev->arm),    arg_int((int64_t)ev->flags),
                                arg_real(ev->value), arg_opt_int(ev->ref),
                                arg_int(ev->ts_ms),  arg_opt_int(ev->expires_ms),
                                arg_text(ev->unit),  arg_text(ev->text),
                                arg_text(ev->actor), arg_text(ev->request_id),
                                arg_text(ev->chain)};
    return wrun(s, Q_EVENT_INSERT, a, NARGS(a));
}

/* Append row to the audit log (store.h), its seq and chain value after
 * the last record's: the writer's transaction (BEGIN IMMEDIATE) holds the
 * database's one write lock, so no other process appends between the read
 * and the insert. */
static int writer_audit(struct store_backend *s, struct store_audit_row *row)
{
    sqlite3_stmt *st = s->wst[Q_AUDIT_LAST];
    char prev[DIGEST_SHA256_HEX + 1] = STORE_AUDIT_GENESIS, chain[DIGEST_SHA256_HEX + 1];
    int rc = step_retry(st);
    row->seq = 1;
    if (rc == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 1);
        row->seq = sqlite3_column_int64(st, 0) + 1;
        snprintf(prev, sizeof prev, "%s", c != NULL ? c : "");
    }
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    sqlite3_reset(st);
    if (rc != SQLITE_OK)
        return rc;
    if (store_audit_next(prev, row, chain) != 0)
        return SQLITE_TOOBIG;
    const struct sql_arg a[] = {arg_int(row->seq),         arg_int(row->ts_ms),
                                arg_int(row->kind),        arg_text(row->subject),
                                arg_text(row->detail),     arg_text(row->actor),
                                arg_text(row->request_id), arg_text(chain)};
    return wrun(s, Q_AUDIT_INSERT, a, NARGS(a));
}

static int writer_exp_create(struct store_backend *s, const struct store_op *op)
{
    const struct sql_arg a[] = {arg_text(op->id), arg_text(op->config_json),
                                arg_int(op->created_ms)};
    int rc = wrun(s, Q_EXP_INSERT, a, NARGS(a));
    if (rc == SQLITE_OK && op->rowid_out)
        *op->rowid_out = sqlite3_last_insert_rowid(s->wdb);
    if (rc == SQLITE_OK) {
        char buf[STORE_AUDIT_BUF];
        struct store_audit_row row;
        rc = store_audit_of_create(op, &row, buf, sizeof buf) == 0 ? writer_audit(s, &row)
                                                                   : SQLITE_TOOBIG;
    }
    return rc;
}

/* The experiment's row goes now; its log is queued for the purge
 * (writer_purge_step), which the front starts after the commit. */
static int writer_exp_delete(struct store_backend *s, const struct store_op *op)
{
    const struct sql_arg a[] = {arg_int(op->exp)};
    int rc = wrun(s, Q_EXP_DELETE, a, 1);
    if (rc == SQLITE_OK && sqlite3_changes(s->wdb) == 0)
        rc = SQLITE_NOTFOUND;
    if (rc == SQLITE_OK)
        rc = wrun(s, Q_PURGE_ADD, a, 1);
    if (rc == SQLITE_OK)
        rc = wrun(s, Q_SNAP_DELETE, a, 1);
    if (rc != SQLITE_OK)
        return rc;
    /* The audit log's record: the log's last row as this transaction sees
     * it (its events are still there: the purge comes later). */
    sqlite3_stmt *st = s->wst[Q_LAST_EVENT];
    char chain[DIGEST_SHA256_HEX + 1] = "";
    int64_t last = 0;
    rc = bind_args(st, a, 1);
    if (rc == SQLITE_OK)
        rc = step_retry(st);
    if (rc == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 1);
        last = sqlite3_column_int64(st, 0);
        snprintf(chain, sizeof chain, "%s", c != NULL ? c : "");
    }
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_OK)
        return rc;
    char buf[STORE_AUDIT_BUF];
    struct store_audit_row row;
    return store_audit_of_delete(op, last, chain, &row, buf, sizeof buf) == 0
               ? writer_audit(s, &row)
               : SQLITE_TOOBIG;
}

static int writer_snapshot(struct store_backend *s, const struct store_snapshot *sn)
{
    if (sn == NULL)
        return SQLITE_MISUSE;
    struct sql_arg blob = {.t = ARG_BLOB, .blob = sn->state, .i = (int64_t)sn->len};
    const struct sql_arg a[] = {arg_int(sn->exp),        arg_int(sn->seq),
                                arg_int(sn->format),     arg_text(sn->software),
                                arg_text(sn->design),    arg_text(sn->checksum),
                                arg_int(sn->created_ms), blob};
    int rc = wrun(s, Q_SNAP_INSERT, a, NARGS(a));
    if (rc != SQLITE_OK)
        return rc;
    /* Thin the older ones (store_snapshots_keep). The rule leaves at most
     * STORE_SNAPSHOTS_MAX, so with this one there are at most one more:
     * seq[] has room to spare. */
    int64_t seq[2 * STORE_SNAPSHOTS_MAX];
    unsigned char keep[2 * STORE_SNAPSHOTS_MAX];
    size_t n = 0;
    const struct sql_arg e[] = {arg_int(sn->exp)};
    sqlite3_stmt *st = s->wst[Q_SNAP_SEQS];
    rc = bind_args(st, e, 1);
    if (rc == SQLITE_OK)
        rc = step_retry(st);
    for (; rc == SQLITE_ROW && n < sizeof seq / sizeof seq[0]; rc = sqlite3_step(st))
        seq[n++] = sqlite3_column_int64(st, 0);
    rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    store_snapshots_keep(seq, n, keep);
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++)
        if (!keep[i]) {
            const struct sql_arg d[] = {arg_int(sn->exp), arg_int(seq[i])};
            rc = wrun(s, Q_SNAP_DROP, d, NARGS(d));
        }
    return rc;
}

/* One step of the purge of deleted experiments' logs, in its own
 * transaction: the first PURGE_CHUNK events of the lowest experiment in
 * purges, or its purges row once none is left. Rowids are never reused
 * (AUTOINCREMENT, schema version 2), so a log waiting here can never be
 * taken for a new experiment's. Returns 1 when more may remain, 0 when the
 * purge is complete, −1 on failure (the transaction rolled back; retried
 * later). Writer thread only. */
static int writer_purge_step(struct store_backend *s)
{
    sqlite3_stmt *st = s->wst[Q_PURGE_NEXT];
    int64_t exp = 0;
    /* Its commit is synced like any other. Without its own fsync (tried:
     * synchronous NORMAL around the step) an fsync failing later, then a
     * power cut, took back an acknowledged delete (test_iofaults): the
     * half-millisecond a step saves is not worth a guarantee. */
    int rc = wexec(s, Q_BEGIN);

    if (rc == SQLITE_OK) {
        rc = step_retry(st);
        if (rc == SQLITE_ROW)
            exp = sqlite3_column_int64(st, 0);
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(st);
    }
    if (rc == SQLITE_OK && exp != 0) {
        const struct sql_arg a[] = {arg_int(exp)};
        rc = wrun(s, Q_PURGE_CHUNK, a, 1);
        if (rc == SQLITE_OK && sqlite3_changes(s->wdb) == 0)
            rc = wrun(s, Q_PURGE_DONE, a, 1);
    }
    if (rc == SQLITE_OK)
        rc = wexec(s, Q_COMMIT);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(s->wdb))
        wexec(s, Q_ROLLBACK);
    return rc != SQLITE_OK ? -1 : exp != 0;
}

static int writer_key(struct store_backend *s, const struct store_key_op *k)
{
    int rc;
    int64_t id = k->rowid;

    if (k->kind == STORE_KEY_OP_REVOKE) {
        const struct sql_arg a[] = {arg_int(k->rowid)};
        rc = wrun(s, Q_KEY_REVOKE, a, 1);
        if (rc == SQLITE_OK && sqlite3_changes(s->wdb) == 0)
            rc = SQLITE_NOTFOUND;
    } else {
        const struct sql_arg a[] = {arg_text(k->name), arg_text(k->scopes), arg_text(k->hash),
                                    arg_int(k->created_ms), arg_text(k->experiments)};
        rc = wrun(s, Q_KEY_INSERT, a, NARGS(a));
        id = sqlite3_last_insert_rowid(s->wdb);
        if (rc == SQLITE_OK && k->rowid_out)
            *k->rowid_out = id;
    }
    if (rc == SQLITE_OK) {
        char buf[STORE_AUDIT_BUF];
        struct store_audit_row row;
        rc = store_audit_of_key(k, id, &row, buf, sizeof buf) == 0 ? writer_audit(s, &row)
                                                                   : SQLITE_TOOBIG;
    }
    return rc;
}

static int writer_outbox(struct store_backend *s, const struct store_op *op)
{
    const struct store_delivery *d = op->dl;

    if (d == NULL)
        return SQLITE_MISUSE;
    switch (op->kind) {
    case STORE_OP_OUTBOX: {
        const struct sql_arg a[] = {
            arg_int(d->exp),   arg_text(d->exp_id),    arg_text(d->event_id),
            arg_text(d->type), arg_text(d->url),       arg_text(d->secret),
            arg_text(d->body), arg_int(d->created_ms), arg_int(d->next_ms)};
        return wrun(s, Q_OUTBOX_INSERT, a, NARGS(a));
    }
    case STORE_OP_OUTBOX_UPDATE: {
        const struct sql_arg a[] = {arg_int(d->id),          arg_int(d->state),
                                    arg_int(d->attempts),    arg_int(d->next_ms),
                                    arg_opt_int(d->last_ms), arg_opt_int(d->last_status),
                                    arg_text(d->last_error)};
        /* a row pruned meanwhile is no error: there is nothing left to record */
        return wrun(s, Q_OUTBOX_UPDATE, a, NARGS(a));
    }
    case STORE_OP_OUTBOX_PRUNE: {
        const struct sql_arg a[] = {arg_int(d->last_ms)};
        return wrun(s, Q_OUTBOX_PRUNE, a, 1);
    }
    default:
        return SQLITE_MISUSE;
    }
}

/* A write that leaves nothing behind, but goes to disk at commit like any
 * other (the purge list's row 0, never an experiment's: rowids start at 1). */
static int writer_probe(struct store_backend *s)
{
    const struct sql_arg a[] = {arg_int(0)};
    int rc = wrun(s, Q_PURGE_ADD, a, 1);
    if (rc == SQLITE_OK)
        rc = wrun(s, Q_PURGE_DONE, a, 1);
    return rc;
}

/* One op; an SQLite code (SQLITE_NOTFOUND: no such row, SQLITE_MISUSE:
 * unknown op kind). */
static int writer_op(struct store_backend *s, const struct store_op *op)
{
    switch (op->kind) {
    case STORE_OP_EXP_CREATE:
        return writer_exp_create(s, op);
    case STORE_OP_EXP_DELETE:
        return writer_exp_delete(s, op);
    case STORE_OP_EVENT:
        return writer_event(s, &op->ev);
    case STORE_OP_PROBE:
        return writer_probe(s);
    case STORE_OP_SNAPSHOT:
        return writer_snapshot(s, op->snap);
    case STORE_OP_CLAIM:
        return SQLITE_OK; /* one daemon per file: it owns everything */
    case STORE_OP_AUDIT: {
        if (op->audit == NULL)
            return SQLITE_MISUSE;
        struct store_audit_row row = *op->audit;
        return writer_audit(s, &row);
    }
    case STORE_OP_OUTBOX:
    case STORE_OP_OUTBOX_UPDATE:
    case STORE_OP_OUTBOX_PRUNE:
        return writer_outbox(s, op);
    default:
        return SQLITE_MISUSE;
    }
}

/* An SQLite code of a write as backend.h wants it: a store error, and
 * whether only the submission failed (its data, with the transaction
 * still open: SQLite rolls a whole transaction back on some errors). */
static int write_result(struct store_backend *s, int rc, int *own)
{
    *own = rc != SQLITE_OK && rc_is_submission_error(rc) && !sqlite3_get_autocommit(s->wdb);
    if (rc == SQLITE_OK)
        return STORE_OK;
    int err = store_err_from_sqlite(rc);
    return err == STORE_OK ? STORE_ERR_IO : err;
}

static int sq_write_op(struct store_backend *s, const struct store_op *op, int *own)
{
    return write_result(s, writer_op(s, op), own);
}

static int sq_write_key(struct store_backend *s, const struct store_key_op *k, int *own)
{
    return write_result(s, writer_key(s, k), own);
}

static int sq_tx(struct store_backend *s, enum q q)
{
    return store_err_from_sqlite(wexec(s, q));
}

static int sq_begin(struct store_backend *s)
{
    return sq_tx(s, Q_BEGIN);
}

static int sq_commit(struct store_backend *s)
{
    return sq_tx(s, Q_COMMIT);
}

static int sq_savepoint(struct store_backend *s)
{
    return sq_tx(s, Q_SAVEPOINT);
}

static int sq_release(struct store_backend *s)
{
    return sq_tx(s, Q_RELEASE);
}

static int sq_rollback_to(struct store_backend *s)
{
    return sq_tx(s, Q_ROLLBACK_TO);
}

static void sq_rollback(struct store_backend *s)
{
    if (!sqlite3_get_autocommit(s->wdb))
        wexec(s, Q_ROLLBACK);
}

static int sq_purge_step(struct store_backend *s)
{
    return writer_purge_step(s);
}

static const char *sq_errmsg(struct store_backend *s)
{
    return sqlite3_errmsg(s->wdb);
}

static const char *sq_describe(struct store_backend *s)
{
    return s->path;
}

/* A full disk: a checkpoint may let the WAL start over and reuse its own
 * space (it needs room only where the database grows). */
static void sq_commit_failed(struct store_backend *s, int err)
{
    if (err != STORE_ERR_FULL)
        return;
    pthread_mutex_lock(&s->mu);
    if (!s->ckpt_wanted) {
        s->ckpt_wanted = 1;
        pthread_cond_signal(&s->ckpt_cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static void sq_stats(struct store_backend *s, struct store_stats *out)
{
    pthread_mutex_lock(&s->mu);
    out->checkpoints = s->checkpoints;
    pthread_mutex_unlock(&s->mu);
}

/* --- checkpoints ------------------------------------------------------------ */

/* SQLite calls this on the writer thread after each commit with the WAL's
 * size in pages. The writer's own automatic checkpoint is off (it would
 * run inside that commit, adding a database fsync to the latency of every
 * request of the batch); past the threshold the checkpointer is woken. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct store_backend *s = arg;
    (void)db;
    (void)name;
    if (pages >= STORE_CKPT_PAGES) {
        pthread_mutex_lock(&s->mu);
        if (!s->ckpt_wanted) {
            s->ckpt_wanted = 1;
            pthread_cond_signal(&s->ckpt_cv);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return SQLITE_OK;
}

/* PASSIVE checkpoints on request: they copy what no reader still needs and
 * never block the writer (a later commit restarts the WAL from its start
 * once everything was copied). A failure (disk full) is retried at the
 * next request; commits keep going meanwhile, into a longer WAL. */
/* A checkpoint failed on I/O (a failed fsync above all): stop at once,
 * PostgreSQL's lesson. After a failed fsync Linux may have dropped the
 * pages it wrote, and a retried checkpoint would copy only the frames past
 * its partial progress, then restart the WAL over pages that never reached
 * the disk: a power cut then corrupts the database (test_iofaults). Exiting
 * without closing SQLite leaves every frame in the WAL; the supervisor
 * (systemd's Restart=) starts the daemon again and WAL recovery copies them
 * all. Exit status 70 (EX_SOFTWARE). */
static void checkpoint_failed(struct store_backend *s, int rc)
{
    log_error("store: a checkpoint of the database failed (%s: %s); stopping now without "
              "closing it, so that WAL recovery redoes it at the next start",
              sqlite3_errstr(rc), sqlite3_errmsg(s->cdb));
    _exit(70);
}

static void *ckpt_main(void *arg)
{
    struct store_backend *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->closing && !s->ckpt_wanted)
            pthread_cond_wait(&s->ckpt_cv, &s->mu);
        if (s->closing)
            break;
        s->ckpt_wanted = 0;
        pthread_mutex_unlock(&s->mu);
        int log_pages = 0, done_pages = 0;
        int rc = sqlite3_wal_checkpoint_v2(s->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_pages,
                                           &done_pages);
        if ((rc & 0xff) == SQLITE_IOERR)
            checkpoint_failed(s, rc);
        pthread_mutex_lock(&s->mu);
        if (rc == SQLITE_OK)
            s->checkpoints++;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Finalize and close one reader (already unlinked). */
static void reader_free(struct store_reader *link)
{
    struct reader *r = (struct reader *)link;
    for (int q = 0; q < Q_COUNT; q++)
        sqlite3_finalize(r->st[q]);
    sqlite3_close_v2(r->db);
    free(r);
}

/* This thread's reader, opened on first use. The result is borrowed: the
 * store owns it until the thread exits or the store closes. */
static int reader_get(struct store_backend *s, struct reader **out)
{
    struct reader *r = (struct reader *)store_readers_mine(&s->readers);
    int rc;

    if (r) {
        *out = r;
        return STORE_OK;
    }
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return STORE_ERR_NOMEM;
    rc = sqlite3_open_v2(s->path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = conn_setup(r->db);
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(r->db);
        free(r);
        return batch_err_from_sqlite(rc); /* never STORE_OK */
    }
    if (store_readers_adopt(&s->readers, &r->link) != STORE_OK)
        return STORE_ERR_NOMEM; /* r freed */
    *out = r;
    return STORE_OK;
}

/* A statement for query q on r: the cached one, or, when that one is in use
 * by an enclosing read on this thread, a private one (released by
 * reader_put). */
static int reader_stmt(struct reader *r, enum q q, sqlite3_stmt **out)
{
    if (!r->busy[q]) {
        if (r->st[q] == NULL) {
            int rc = sqlite3_prepare_v3(r->db, queries[q].sql, -1, SQLITE_PREPARE_PERSISTENT,
                                        &r->st[q], NULL);
            if (rc != SQLITE_OK)
                return rc;
        }
        r->busy[q] = 1;
        *out = r->st[q];
        return SQLITE_OK;
    }
    return sqlite3_prepare_v2(r->db, queries[q].sql, -1, out, NULL);
}

static void reader_put(struct reader *r, enum q q, sqlite3_stmt *st)
{
    if (st == NULL)
        return;
    if (st == r->st[q]) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        r->busy[q] = 0;
    } else {
        sqlite3_finalize(st);
    }
}

/* One read: this thread's reader and query q's statement, bound. */
struct rd {
    struct reader *r; /* NULL until begun */
    sqlite3_stmt *st;
    enum q q;
};

/* Begin a read of q with a[0..n) bound to ?1..?n. STORE_OK or the error;
 * rd_end in either case. */
static int rd_begin(struct store_backend *s, struct rd *rd, enum q q, const struct sql_arg *a,
                    size_t n)
{
    rd->r = NULL;
    rd->st = NULL;
    rd->q = q;
    int err = reader_get(s, &rd->r);
    if (err != STORE_OK)
        return err;
    int rc = reader_stmt(rd->r, q, &rd->st);
    if (rc == SQLITE_OK)
        rc = bind_args(rd->st, a, n);
    return store_err_from_sqlite(rc);
}

static void rd_end(struct rd *rd)
{
    if (rd->r != NULL)
        reader_put(rd->r, rd->q, rd->st);
}

static void experiment_from_row(sqlite3_stmt *st, struct store_experiment_row *row)
{
    row->rowid = sqlite3_column_int64(st, 0);
    row->id = (const char *)sqlite3_column_text(st, 1);
    row->config_json = (const char *)sqlite3_column_text(st, 2);
    row->created_ms = sqlite3_column_int64(st, 3);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

static void delivery_from_row(sqlite3_stmt *st, struct store_delivery *d)
{
    d->id = sqlite3_column_int64(st, 0);
    d->exp = sqlite3_column_int64(st, 1);
    d->exp_id = col_text(st, 2);
    d->event_id = col_text(st, 3);
    d->type = col_text(st, 4);
    d->url = col_text(st, 5);
    d->secret = col_text(st, 6);
    d->body = col_text(st, 7);
    d->created_ms = sqlite3_column_int64(st, 8);
    d->state = sqlite3_column_int(st, 9);
    d->attempts = sqlite3_column_int(st, 10);
    d->next_ms = sqlite3_column_int64(st, 11);
    d->last_ms = sqlite3_column_int64(st, 12);
    d->last_status = sqlite3_column_int(st, 13);
    d->last_error = col_text(st, 14);
}

static void key_from_row(sqlite3_stmt *st, struct store_key_row *row)
{
    row->rowid = sqlite3_column_int64(st, 0);
    row->name = col_text(st, 1);
    row->scopes = col_text(st, 2);
    row->hash = col_text(st, 3);
    row->created_ms = sqlite3_column_int64(st, 4);
    row->revoked = sqlite3_column_int(st, 5);
    row->experiments = col_text(st, 6);
}

/* What a read of many rows hands each row to: the caller's callback of
 * the row's type (an experiments' callback may be NULL: rows only
 * counted). */
/* A snapshot row (Q_SNAPSHOTS' columns); borrowed from st like the others. */
static void snapshot_from_row(sqlite3_stmt *st, struct store_snapshot *sn)
{
    sn->exp = sqlite3_column_int64(st, 0);
    sn->seq = sqlite3_column_int64(st, 1);
    sn->format = sqlite3_column_int(st, 2);
    sn->software = col_text(st, 3);
    sn->design = col_text(st, 4);
    sn->checksum = col_text(st, 5);
    sn->created_ms = sqlite3_column_int64(st, 6);
    sn->state = sqlite3_column_blob(st, 7);
    sn->len = (size_t)sqlite3_column_bytes(st, 7);
}

struct rd_each {
    enum { EACH_EXPERIMENT, EACH_EVENT, EACH_DELIVERY, EACH_KEY, EACH_AUDIT, EACH_SNAPSHOT } kind;
    union {
        int (*experiment)(void *arg, const struct store_experiment_row *row);
        int (*event)(void *arg, const struct store_event *ev);
        int (*delivery)(void *arg, const struct store_delivery *d);
        int (*key)(void *arg, const struct store_key_row *row);
        int (*audit)(void *arg, const struct store_audit_row *row);
        int (*snapshot)(void *arg, const struct store_snapshot *sn);
    } cb;
    void *arg;
};

/* Read q (a[0..n) bound) row by row into e's callback, until it returns
 * non-zero (returned as is) or the rows end (STORE_OK; STORE_ERR_NOTFOUND
 * when there was none and none_is_error). The row's strings live until
 * the callback returns. */
static int rd_each(struct store_backend *s, enum q q, const struct sql_arg *a, size_t n,
                   const struct rd_each *e, int none_is_error)
{
    struct rd rd;
    int ret = rd_begin(s, &rd, q, a, n);
    int rc = SQLITE_DONE, found = 0;
    if (ret == STORE_OK)
        rc = step_retry(rd.st);
    for (; ret == STORE_OK && rc == SQLITE_ROW; rc = sqlite3_step(rd.st)) {
        union {
            struct store_experiment_row x;
            struct store_event ev;
            struct store_delivery d;
            struct store_key_row k;
            struct store_audit_row a;
            struct store_snapshot sn;
        } row;
        found = 1;
        switch (e->kind) {
        case EACH_EXPERIMENT:
            experiment_from_row(rd.st, &row.x);
            ret = e->cb.experiment != NULL ? e->cb.experiment(e->arg, &row.x) : 0;
            break;
        case EACH_EVENT:
            event_from_row(rd.st, &row.ev);
            ret = e->cb.event(e->arg, &row.ev);
            break;
        case EACH_DELIVERY:
            delivery_from_row(rd.st, &row.d);
            ret = e->cb.delivery(e->arg, &row.d);
            break;
        case EACH_KEY:
            key_from_row(rd.st, &row.k);
            ret = e->cb.key(e->arg, &row.k);
            break;
        case EACH_AUDIT:
            row.a = (struct store_audit_row){.seq = sqlite3_column_int64(rd.st, 0),
                                             .ts_ms = sqlite3_column_int64(rd.st, 1),
                                             .kind = sqlite3_column_int(rd.st, 2),
                                             .subject = col_text(rd.st, 3),
                                             .detail = col_text(rd.st, 4),
                                             .actor = col_text(rd.st, 5),
                                             .request_id = col_text(rd.st, 6),
                                             .chain = col_text(rd.st, 7)};
            ret = e->cb.audit(e->arg, &row.a);
            break;
        case EACH_SNAPSHOT:
            snapshot_from_row(rd.st, &row.sn);
            ret = e->cb.snapshot(e->arg, &row.sn);
            break;
        }
    }
    if (ret == STORE_OK)
        ret = store_err_from_sqlite(rc);
    if (ret == STORE_OK && none_is_error && !found)
        ret = STORE_ERR_NOTFOUND;
    rd_end(&rd);
    return ret;
}

/* What rd_event keeps of a row's strings, which die with the read. */
enum rd_strings {
    RD_UNIT,       /* the unit, copied into buf when the row has one */
    RD_UNIT_EMPTY, /* the same, "" when it has none */
    RD_ALL,        /* unit, actor, request_id and chain (store_event_copy_strings) */
};

/* Read the one event row of q (a[0..n) bound) into out, its strings kept
 * in buf as `keep` says (out->text NULL, what is not kept NULL).
 * STORE_ERR_NOTFOUND when there is no row. */
static int rd_event(struct store_backend *s, enum q q, const struct sql_arg *a, size_t n,
                    struct store_event *out, char *buf, size_t buflen, enum rd_strings keep)
{
    struct rd rd;
    int err = rd_begin(s, &rd, q, a, n);
    int rc = err == STORE_OK ? step_retry(rd.st) : SQLITE_OK;
    if (err == STORE_OK && rc == SQLITE_ROW) {
        event_from_row(rd.st, out);
        if (keep == RD_ALL) {
            store_event_copy_strings(out, buf, buflen);
        } else {
            const char *unit = out->unit;
            out->unit = NULL;
            if (buf != NULL && buflen > 0 && (unit != NULL || keep == RD_UNIT_EMPTY)) {
                snprintf(buf, buflen, "%s", unit != NULL ? unit : "");
                out->unit = buf;
            }
            out->text = NULL;
            out->actor = out->request_id = out->chain = NULL;
        }
    } else if (err == STORE_OK) {
        err = rc == SQLITE_DONE ? STORE_ERR_NOTFOUND : store_err_from_sqlite(rc);
    }
    rd_end(&rd);
    return err;
}

/* Read the integer in the first column of q's one row (a[0..n) bound) into
 * *out; no row reads as 0 when none_ok, else fails (I/O). */
static int rd_int(struct store_backend *s, enum q q, const struct sql_arg *a, size_t n, int none_ok,
                  int64_t *out)
{
    struct rd rd;
    int err = rd_begin(s, &rd, q, a, n);
    int rc = err == STORE_OK ? step_retry(rd.st) : SQLITE_OK;
    if (err == STORE_OK && rc == SQLITE_ROW)
        *out = sqlite3_column_int64(rd.st, 0);
    else if (err == STORE_OK && rc == SQLITE_DONE && none_ok)
        *out = 0;
    else if (err == STORE_OK)
        err = rc == SQLITE_DONE ? STORE_ERR_IO : store_err_from_sqlite(rc);
    rd_end(&rd);
    return err;
}

static int sq_load_snapshot(struct store_backend *s, int64_t exp, int64_t before,
                            int (*cb)(void *arg, const struct store_snapshot *sn), void *arg)
{
    const struct sql_arg a[] = {arg_int(exp), arg_int(before)};
    const struct rd_each e = {.kind = EACH_SNAPSHOT, .cb.snapshot = cb, .arg = arg};
    return rd_each(s, Q_SNAPSHOTS, a, NARGS(a), &e, 1);
}

static int sq_load_experiments(struct store_backend *s,
                               int (*cb)(void *arg, const struct store_experiment_row *row),
                               void *arg)
{
    const struct rd_each e = {.kind = EACH_EXPERIMENT, .cb.experiment = cb, .arg = arg};
    return rd_each(s, Q_EXPERIMENTS, NULL, 0, &e, 0);
}

static int sq_find_experiment(struct store_backend *s, const char *id,
                              int (*cb)(void *arg, const struct store_experiment_row *row),
                              void *arg)
{
    const struct sql_arg a[] = {arg_text(id)};
    const struct rd_each e = {.kind = EACH_EXPERIMENT, .cb.experiment = cb, .arg = arg};
    return rd_each(s, Q_EXPERIMENT_BY_ID, a, 1, &e, 1);
}

static int sq_load_events(struct store_backend *s, int64_t exp, int64_t after_seq,
                          int (*cb)(void *arg, const struct store_event *ev), void *arg)
{
    const struct sql_arg a[] = {arg_int(exp), arg_int(after_seq)};
    const struct rd_each e = {.kind = EACH_EVENT, .cb.event = cb, .arg = arg};
    return rd_each(s, Q_EVENTS, a, NARGS(a), &e, 0);
}

static int sq_find_assignment(struct store_backend *s, int64_t exp, int64_t seq,
                              struct store_event *out, char *buf, size_t buflen)
{
    const struct sql_arg a[] = {arg_int(exp), arg_int(seq)};
    return rd_event(s, Q_ASSIGNMENT, a, NARGS(a), out, buf, buflen, RD_ALL);
}

static int sq_find_outcome_kind(struct store_backend *s, int64_t exp, int64_t ref, int kind,
                                struct store_event *out, char *buf, size_t buflen)
{
    /* a UNIT event's unit, copied out; "" for the others */
    const struct sql_arg a[] = {arg_int(exp), arg_int(ref), arg_int(kind)};
    return rd_event(s, Q_OUTCOME, a, NARGS(a), out, buf, buflen, RD_UNIT_EMPTY);
}

static int sq_find_unit_in(struct store_backend *s, int64_t exp, const char *unit, int bandit,
                           struct store_event *out)
{
    const struct sql_arg a[] = {arg_int(exp), arg_text(unit), arg_int(bandit)};
    int err = rd_event(s, Q_UNIT, a, NARGS(a), out, NULL, 0, RD_UNIT);
    if (err == STORE_OK)
        out->unit = unit; /* the caller's string, equal to the stored one */
    return err;
}

static int sq_last_seq(struct store_backend *s, int64_t exp, int64_t *out)
{
    const struct sql_arg a[] = {arg_int(exp)};
    return rd_int(s, Q_LAST_SEQ, a, 1, 1, out); /* no event: 0 */
}

/* --- outbox ------------------------------------------------------------------ */

static int sq_outbox_pending(struct store_backend *s, int64_t after_id, int limit,
                             int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    const struct sql_arg a[] = {arg_int(after_id), arg_int(limit)};
    const struct rd_each e = {.kind = EACH_DELIVERY, .cb.delivery = cb, .arg = arg};
    return rd_each(s, Q_OUTBOX_PENDING, a, NARGS(a), &e, 0);
}

static int sq_outbox_list(struct store_backend *s, int64_t exp, int64_t before_id, int limit,
                          int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    const struct sql_arg a[] = {arg_int(exp), arg_int(before_id), arg_int(limit)};
    const struct rd_each e = {.kind = EACH_DELIVERY, .cb.delivery = cb, .arg = arg};
    return rd_each(s, Q_OUTBOX_LIST, a, NARGS(a), &e, 0);
}

static int sq_outbox_depth(struct store_backend *s, int64_t *out)
{
    return rd_int(s, Q_OUTBOX_DEPTH, NULL, 0, 0, out); /* count(*): always a row */
}

/* --- keys -------------------------------------------------------------------- */

static int sq_load_keys(struct store_backend *s,
                        int (*cb)(void *arg, const struct store_key_row *row), void *arg)
{
    const struct rd_each e = {.kind = EACH_KEY, .cb.key = cb, .arg = arg};
    return rd_each(s, Q_KEYS, NULL, 0, &e, 0);
}

static int sq_load_audit(struct store_backend *s,
                         int (*cb)(void *arg, const struct store_audit_row *row), void *arg)
{
    const struct rd_each e = {.kind = EACH_AUDIT, .cb.audit = cb, .arg = arg};
    return rd_each(s, Q_AUDIT, NULL, 0, &e, 0);
}

/* --- backup ------------------------------------------------------------------ */

/* Create path empty with mode 0600 (the umask can only remove bits), or
 * with excl = 0 accept it if it exists. 0, or −1 with errno (EEXIST: it
 * exists). SQLite would create a database 0644 and its -wal and -shm with
 * the database's mode: this file holds the audit trail of every unit, so
 * it and the files that follow its mode are readable by the owner alone
 * (issue 13). An existing file keeps the mode its owner gave it. */
static int create_private(const char *path, int excl)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return excl || errno != EEXIST ? -1 : 0;
    return close(fd);
}

/* VACUUM INTO on a fresh read-only connection (a consistent snapshot; the
 * writer keeps running), then fsync the copy. A fresh connection rather than
 * this thread's reader: VACUUM cannot run inside the read transaction an
 * enclosing store_load_* holds. */
static int sq_backup(struct store_backend *s, const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int ret = STORE_OK, rc, fd, created = 0;

    /* VACUUM INTO accepts an empty file: made here, 0600 and exclusively
     * (never overwriting anything, even an empty file) */
    if (create_private(path, 1) != 0) {
        snprintf(err, errlen, "backup to %s: %s", path, strerror(errno));
        ret = errno == ENOSPC || errno == EROFS ? STORE_ERR_FULL
              : errno == EEXIST                 ? STORE_ERR_EXISTS
                                                : STORE_ERR_IO;
        goto out;
    }
    created = 1;
    rc = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = conn_setup(db);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, queries[Q_BACKUP].sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = step_retry(st);
    if (rc != SQLITE_DONE && rc != SQLITE_OK) {
        snprintf(err, errlen, "backup to %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        ret = store_err_from_sqlite(rc);
        if (ret == STORE_OK)
            ret = STORE_ERR_IO;
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "backup to %s: fsync: %s", path, strerror(errno));
        ret = errno == ENOSPC || errno == EROFS ? STORE_ERR_FULL : STORE_ERR_IO;
    }
    if (fd >= 0)
        close(fd);
out:
    sqlite3_finalize(st);
    sqlite3_close_v2(db);
    if (ret != STORE_OK && created)
        (void)unlink(path); /* no half-made backup left to be mistaken for one */
    return ret;
}

static void sq_free(struct store_backend *s);

/* Stop the checkpointer and free everything. */
static void sq_close(struct store_backend *s)
{
    if (s == NULL)
        return;
    if (s->ckpt_started) {
        pthread_mutex_lock(&s->mu);
        s->closing = 1;
        pthread_cond_broadcast(&s->ckpt_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->ckpt, NULL);
    }
    sq_free(s);
}

/* --- open and close ---------------------------------------------------------- */

/* Free whatever of s exists. The checkpointer must not be running. */
static void sq_free(struct store_backend *s)
{
    store_readers_destroy(&s->readers);
    for (int q = 0; q < Q_COUNT; q++)
        sqlite3_finalize(s->wst[q]);
    sqlite3_close_v2(s->cdb);
    if (s->have_ckpt_cv)
        pthread_cond_destroy(&s->ckpt_cv);
    /* last connection: checkpoints and removes the WAL */
    sqlite3_close_v2(s->wdb);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* the daemon's claim on the file ends last */
    if (s->have_mu)
        pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s);
}

/* Run a pragma and return its first column as text into buf (may be
 * empty). */
static int pragma(sqlite3 *db, const char *sql, char *buf, size_t buflen)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (buflen)
        buf[0] = '\0';
    if (rc != SQLITE_OK)
        goto out;
    rc = step_retry(st);
    if (rc == SQLITE_ROW && buflen) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(buf, buflen, "%s", t ? (const char *)t : "");
    }
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        rc = SQLITE_OK;
out:
    sqlite3_finalize(st);
    return rc;
}

/* One daemon per file: an exclusive flock(2) on PATH.lock (a file of its
 * own: a second descriptor of the database would drop SQLite's POSIX
 * locks when closed), held until the store closes, with the holder's pid
 * written in it for the message. Two daemons on one file would each keep
 * its experiments in memory and append to their logs under the same seqs.
 * The CLI (keys, backup) does not ask, and runs beside the daemon. */
static int sq_serve_exclusive(struct store_backend *s, char *err, size_t errlen)
{
    char lock[PATH_MAX], pid[32] = "";
    int n = snprintf(lock, sizeof lock, "%s.lock", s->path);
    if (n < 0 || (size_t)n >= sizeof lock) {
        snprintf(err, errlen, "%s: path too long", s->path);
        return STORE_ERR_IO;
    }
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", lock, strerror(errno));
        return errno == ENOSPC || errno == EROFS ? STORE_ERR_FULL : STORE_ERR_IO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        ssize_t got = read(fd, pid, sizeof pid - 1);
        pid[got > 0 ? got : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e != EWOULDBLOCK) {
            snprintf(err, errlen, "%s: %s", lock, strerror(e));
            return STORE_ERR_IO;
        }
        snprintf(err, errlen,
                 "%s is served by another banditd (pid %s, %s): two daemons on one SQLite file "
                 "would overwrite each other's experiments; stop it first (several daemons need "
                 "PostgreSQL: --db postgresql://...)",
                 s->path, pid[0] ? pid : "?", lock);
        return STORE_ERR_EXISTS;
    }
    snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, strlen(pid), 0) < 0) {
        /* the lock holds all the same; only the message would lack the pid */
    }
    s->lock_fd = fd;
    return STORE_OK;
}

/* Whatever is not a postgresql:// URI is an SQLite file. */
static int sq_claims(const char *target)
{
    (void)target;
    return 1;
}

static struct store_backend *sq_open(const char *path, enum store_sync sync, int *purging,
                                     char *err, size_t errlen)
{
    struct store_backend *s = NULL;
    char mode[32];
    int rc, version, prc = 0;

    if (!sqlite3_threadsafe()) {
        snprintf(err, errlen, "SQLite was built without thread support");
        goto fail;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL || (s->path = strdup(path)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    s->sync = sync;
    s->lock_fd = -1;
    if ((prc = pthread_mutex_init(&s->mu, NULL)) != 0)
        goto fail_sys;
    s->have_mu = 1;
    if ((prc = pthread_cond_init(&s->ckpt_cv, NULL)) != 0)
        goto fail_sys;
    s->have_ckpt_cv = 1;
    if ((prc = store_readers_init(&s->readers, reader_free)) != 0)
        goto fail_sys;

    if (create_private(path, 0) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        goto fail;
    }
    rc = sqlite3_open_v2(path, &s->wdb,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = conn_setup(s->wdb);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "open %s: %s", path,
                 s->wdb ? sqlite3_errmsg(s->wdb) : sqlite3_errstr(rc));
        goto fail;
    }
    /* refuse a newer database before touching it (even its journal mode) */
    rc = store_schema_read_version(s->wdb, &version);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "open %s: %s", path, sqlite3_errmsg(s->wdb));
        goto fail;
    }
    if (version > store_schema_version()) {
        snprintf(err, errlen,
                 "open %s: database schema version %d is newer than this build's (%d): "
                 "refusing to open it; use a newer banditd",
                 path, version, store_schema_version());
        goto fail;
    }
    rc = pragma(s->wdb, queries[Q_WAL].sql, mode, sizeof mode);
    if (rc != SQLITE_OK || strcmp(mode, "wal") != 0) {
        snprintf(err, errlen, "open %s: cannot use WAL (journal mode %s): %s", path,
                 mode[0] ? mode : "?", sqlite3_errmsg(s->wdb));
        goto fail;
    }
    rc = pragma(s->wdb, queries[sync == STORE_SYNC_NORMAL ? Q_SYNC_NORMAL : Q_SYNC_FULL].sql, mode,
                sizeof mode);
    if (rc == SQLITE_OK)
        rc = pragma(s->wdb, queries[Q_NO_FK].sql, mode, sizeof mode);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "open %s: %s", path, sqlite3_errmsg(s->wdb));
        goto fail;
    }
    {
        char merr[256];
        rc = store_schema_migrate(s->wdb, merr, sizeof merr);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "open %s: %s", path, merr);
            goto fail;
        }
    }
    for (int q = 0; q < Q_COUNT; q++) {
        if (queries[q].role != STORE_SQL_WRITE)
            continue;
        rc = sqlite3_prepare_v3(s->wdb, queries[q].sql, -1, SQLITE_PREPARE_PERSISTENT, &s->wst[q],
                                NULL);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "open %s: prepare: %s", path, sqlite3_errmsg(s->wdb));
            goto fail;
        }
    }
    /* a purge interrupted by the last close resumes */
    rc = step_retry(s->wst[Q_PURGE_NEXT]);
    *purging = rc == SQLITE_ROW;
    sqlite3_reset(s->wst[Q_PURGE_NEXT]);
    /* Checkpoints move off the commit path (wal_hook, ckpt_main). */
    rc = pragma(s->wdb, queries[Q_NO_AUTOCKPT].sql, mode, sizeof mode);
    if (rc == SQLITE_OK)
        rc = sqlite3_open_v2(path, &s->cdb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = conn_setup(s->cdb);
    if (rc == SQLITE_OK)
        rc = pragma(s->cdb, queries[sync == STORE_SYNC_NORMAL ? Q_SYNC_NORMAL : Q_SYNC_FULL].sql,
                    mode, sizeof mode);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "open %s: checkpointer: %s", path,
                 s->cdb ? sqlite3_errmsg(s->cdb) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_wal_hook(s->wdb, wal_hook, s);
    if ((prc = pthread_create(&s->ckpt, NULL, ckpt_main, s)) != 0)
        goto fail_sys;
    s->ckpt_started = 1;
    return s;

fail_sys:
    snprintf(err, errlen, "open %s: %s", path, strerror(prc)); /* pthread error */
fail:
    if (s != NULL)
        sq_close(s); /* joins what runs, then frees */
    return NULL;
}

const struct store_backend_ops store_sqlite_ops = {
    .name = "sqlite",
    .local = 1,
    .claims = sq_claims,
    .open = sq_open,
    .close = sq_close,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .savepoint = sq_savepoint,
    .release = sq_release,
    .rollback_to = sq_rollback_to,
    .write_op = sq_write_op,
    .write_key = sq_write_key,
    .purge_step = sq_purge_step,
    .errmsg = sq_errmsg,
    .describe = sq_describe,
    .serve_exclusive = sq_serve_exclusive,
    .file = sq_describe,
    .commit_failed = sq_commit_failed,
    .stats = sq_stats,
    .load_experiments = sq_load_experiments,
    .load_events = sq_load_events,
    .find_assignment = sq_find_assignment,
    .find_outcome_kind = sq_find_outcome_kind,
    .find_unit_in = sq_find_unit_in,
    .last_seq = sq_last_seq,
    .find_experiment = sq_find_experiment,
    .outbox_pending = sq_outbox_pending,
    .outbox_list = sq_outbox_list,
    .outbox_depth = sq_outbox_depth,
    .load_keys = sq_load_keys,
    .load_audit = sq_load_audit,
    .backup = sq_backup,
    .load_snapshot = sq_load_snapshot,
};
