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
#include <unistd.h>

#include <sqlite3.h>

#include "base/clock.h"
#include "base/log.h"
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
    Q_PURGE_ADD,
    Q_PURGE_NEXT,
    Q_PURGE_CHUNK,
    Q_PURGE_DONE,
    Q_EVENT_INSERT,
    Q_KEY_INSERT,
    Q_KEY_REVOKE,
    Q_OUTBOX_INSERT,
    Q_OUTBOX_UPDATE,
    Q_OUTBOX_PRUNE,
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
    Q_OUTBOX_PENDING,
    Q_OUTBOX_LIST,
    Q_OUTBOX_DEPTH,
    /* run once: connection settings at open, the backup */
    Q_WAL,
    Q_NO_FK,
    Q_NO_AUTOCKPT,
    Q_BACKUP,
    Q_COUNT
};

#define EVENT_COLS                                                                                 \
    "exp, seq, kind, bandit, arm, flags, value, ref, ts_ms, expires_ms, unit, text, actor,"        \
    " request_id, chain"
#define PURGE_CHUNK "256" /* events removed per purge transaction */
#define OUTBOX_COLS                                                                                \
    "id, exp, exp_id, event_id, type, url, secret, body, created_ms, state, attempts, next_ms,"    \
    " last_ms, last_status, last_error"

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
    [Q_OUTBOX_INSERT] = {"outbox_insert", STORE_SQL_WRITE,
                         "INSERT INTO outbox(exp, exp_id, event_id, type, url, secret, body,"
                         " created_ms, next_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
    [Q_OUTBOX_UPDATE] = {"outbox_update", STORE_SQL_WRITE,
                         "UPDATE outbox SET state = ?2, attempts = ?3, next_ms = ?4, last_ms = ?5,"
                         " last_status = ?6, last_error = ?7 WHERE id = ?1"},
    [Q_OUTBOX_PRUNE] = {"outbox_prune", STORE_SQL_WRITE,
                        "DELETE FROM outbox INDEXED BY outbox_finished"
                        " WHERE state != 0 AND last_ms < ?1"},
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
    struct store_backend *s;
    sqlite3 *db;
    sqlite3_stmt *st[Q_COUNT];   /* prepared on first use (STORE_SQL_READ) */
    unsigned char busy[Q_COUNT]; /* st[q] is in an unfinished read */
    struct reader *prev, *next;  /* s->readers, under s->rmu */
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

    /* readers */
    pthread_mutex_t rmu;
    struct reader *readers;
    pthread_key_t rkey;

    int have_mu, have_ckpt_cv, have_rmu, have_rkey;
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

static int bind_opt_int64(sqlite3_stmt *st, int i, int64_t v)
{
    return v == 0 ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}

static int bind_opt_text(sqlite3_stmt *st, int i, const char *v)
{
    return v == NULL ? sqlite3_bind_null(st, i) : sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
}

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

static int writer_event(struct store_backend *s, const struct store_event *ev)
{
    sqlite3_stmt *st = s->wst[Q_EVENT_INSERT];
    int rc = sqlite3_bind_int64(st, 1, ev->exp);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, ev->seq);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 3, ev->kind);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 4, ev->bandit);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 5, ev->arm);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 6, (int64_t)ev->flags);
    if (rc == SQLITE_OK)
        rc = isnan(ev->value) ? sqlite3_bind_null(st, 7) : sqlite3_bind_double(st, 7, ev->value);
    if (rc == SQLITE_OK)
        rc = bind_opt_int64(st, 8, ev->ref);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 9, ev->ts_ms);
    if (rc == SQLITE_OK)
        rc = bind_opt_int64(st, 10, ev->expires_ms);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 11, ev->unit);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 12, ev->text);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 13, ev->actor);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 14, ev->request_id);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 15, ev->chain);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return rc;
    }
    return wexec(s, Q_EVENT_INSERT);
}

static int writer_exp_create(struct store_backend *s, const struct store_op *op)
{
    sqlite3_stmt *st = s->wst[Q_EXP_INSERT];
    int rc = bind_opt_text(st, 1, op->id);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 2, op->config_json);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, op->created_ms);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return rc;
    }
    rc = wexec(s, Q_EXP_INSERT);
    if (rc == SQLITE_OK && op->rowid_out)
        *op->rowid_out = sqlite3_last_insert_rowid(s->wdb);
    return rc;
}

/* The experiment's row goes now; its log is queued for the purge
 * (writer_purge_step), which the front starts after the commit. */
static int writer_exp_delete(struct store_backend *s, int64_t exp)
{
    int rc = sqlite3_bind_int64(s->wst[Q_EXP_DELETE], 1, exp);
    if (rc == SQLITE_OK)
        rc = wexec(s, Q_EXP_DELETE);
    if (rc == SQLITE_OK && sqlite3_changes(s->wdb) == 0)
        rc = SQLITE_NOTFOUND;
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s->wst[Q_PURGE_ADD], 1, exp);
    if (rc == SQLITE_OK)
        rc = wexec(s, Q_PURGE_ADD);
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
        rc = sqlite3_bind_int64(s->wst[Q_PURGE_CHUNK], 1, exp);
        if (rc == SQLITE_OK)
            rc = wexec(s, Q_PURGE_CHUNK);
        if (rc == SQLITE_OK && sqlite3_changes(s->wdb) == 0) {
            rc = sqlite3_bind_int64(s->wst[Q_PURGE_DONE], 1, exp);
            if (rc == SQLITE_OK)
                rc = wexec(s, Q_PURGE_DONE);
        }
    }
    if (rc == SQLITE_OK)
        rc = wexec(s, Q_COMMIT);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(s->wdb))
        wexec(s, Q_ROLLBACK);
    return rc != SQLITE_OK ? -1 : exp != 0;
}

static int writer_key(struct store_backend *s, const struct store_key_op *k)
{
    sqlite3_stmt *st;
    int rc;

    if (k->kind == STORE_KEY_OP_REVOKE) {
        rc = sqlite3_bind_int64(s->wst[Q_KEY_REVOKE], 1, k->rowid);
        if (rc == SQLITE_OK)
            rc = wexec(s, Q_KEY_REVOKE);
        if (rc == SQLITE_OK && sqlite3_changes(s->wdb) == 0)
            rc = SQLITE_NOTFOUND;
        return rc;
    }
    st = s->wst[Q_KEY_INSERT];
    rc = bind_opt_text(st, 1, k->name);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 2, k->scopes);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 3, k->hash);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, k->created_ms);
    if (rc == SQLITE_OK)
        rc = bind_opt_text(st, 5, k->experiments);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return rc;
    }
    rc = wexec(s, Q_KEY_INSERT);
    if (rc == SQLITE_OK && k->rowid_out)
        *k->rowid_out = sqlite3_last_insert_rowid(s->wdb);
    return rc;
}

static int writer_outbox(struct store_backend *s, const struct store_op *op)
{
    const struct store_delivery *d = op->dl;
    sqlite3_stmt *st;
    int rc = SQLITE_OK;

    if (d == NULL)
        return SQLITE_MISUSE;
    switch (op->kind) {
    case STORE_OP_OUTBOX:
        st = s->wst[Q_OUTBOX_INSERT];
        rc = sqlite3_bind_int64(st, 1, d->exp);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 2, d->exp_id);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 3, d->event_id);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 4, d->type);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 5, d->url);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 6, d->secret);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 7, d->body);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 8, d->created_ms);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 9, d->next_ms);
        if (rc != SQLITE_OK) {
            sqlite3_clear_bindings(st);
            return rc;
        }
        rc = wexec(s, Q_OUTBOX_INSERT);
        return rc;
    case STORE_OP_OUTBOX_UPDATE:
        st = s->wst[Q_OUTBOX_UPDATE];
        rc = sqlite3_bind_int64(st, 1, d->id);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 2, d->state);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int(st, 3, d->attempts);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 4, d->next_ms);
        if (rc == SQLITE_OK)
            rc = bind_opt_int64(st, 5, d->last_ms);
        if (rc == SQLITE_OK)
            rc = bind_opt_int64(st, 6, d->last_status);
        if (rc == SQLITE_OK)
            rc = bind_opt_text(st, 7, d->last_error);
        if (rc != SQLITE_OK) {
            sqlite3_clear_bindings(st);
            return rc;
        }
        rc = wexec(s, Q_OUTBOX_UPDATE);
        /* a row pruned meanwhile is no error: there is nothing left to record */
        return rc;
    case STORE_OP_OUTBOX_PRUNE:
        rc = sqlite3_bind_int64(s->wst[Q_OUTBOX_PRUNE], 1, d->last_ms);
        return rc == SQLITE_OK ? wexec(s, Q_OUTBOX_PRUNE) : rc;
    default:
        return SQLITE_MISUSE;
    }
}

/* A write that leaves nothing behind, but goes to disk at commit like any
 * other (the purge list's row 0, never an experiment's: rowids start at 1). */
static int writer_probe(struct store_backend *s)
{
    int rc = sqlite3_bind_int64(s->wst[Q_PURGE_ADD], 1, 0);
    if (rc == SQLITE_OK)
        rc = wexec(s, Q_PURGE_ADD);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(s->wst[Q_PURGE_DONE], 1, 0);
    if (rc == SQLITE_OK)
        rc = wexec(s, Q_PURGE_DONE);
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
        return writer_exp_delete(s, op->exp);
    case STORE_OP_EVENT:
        return writer_event(s, &op->ev);
    case STORE_OP_PROBE:
        return writer_probe(s);
    case STORE_OP_CLAIM:
        return SQLITE_OK; /* one daemon per file: it owns everything */
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
static void reader_free(struct reader *r)
{
    for (int q = 0; q < Q_COUNT; q++)
        sqlite3_finalize(r->st[q]);
    sqlite3_close_v2(r->db);
    free(r);
}

/* pthread key destructor: the thread is exiting. */
static void reader_thread_exit(void *p)
{
    struct reader *r = p;
    struct store_backend *s = r->s;

    pthread_mutex_lock(&s->rmu);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->readers = r->next;
    if (r->next)
        r->next->prev = r->prev;
    pthread_mutex_unlock(&s->rmu);
    reader_free(r);
}

/* This thread's reader, opened on first use. The result is borrowed: the
 * store owns it until the thread exits or the store closes. */
static int reader_get(struct store_backend *s, struct reader **out)
{
    struct reader *r = pthread_getspecific(s->rkey);
    int rc;

    if (r) {
        *out = r;
        return STORE_OK;
    }
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return STORE_ERR_NOMEM;
    r->s = s;
    rc = sqlite3_open_v2(s->path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = conn_setup(r->db);
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(r->db);
        free(r);
        return batch_err_from_sqlite(rc); /* never STORE_OK */
    }
    pthread_mutex_lock(&s->rmu);
    r->next = s->readers;
    if (r->next)
        r->next->prev = r;
    s->readers = r;
    pthread_mutex_unlock(&s->rmu);
    if (pthread_setspecific(s->rkey, r) != 0) {
        reader_thread_exit(r); /* unlinks and frees */
        return STORE_ERR_NOMEM;
    }
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

/* Begin a read of query q: *st is ready to bind. */
static int read_begin(struct store_backend *s, enum q q, struct reader **r, sqlite3_stmt **st)
{
    int err = reader_get(s, r);
    if (err != STORE_OK)
        return err;
    return store_err_from_sqlite(reader_stmt(*r, q, st));
}

/* The experiments' rows of query q (bound to id when not NULL) to cb. */
static int experiment_rows(struct store_backend *s, enum q q, const char *id,
                           int (*cb)(void *arg, const struct store_experiment_row *row), void *arg)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    struct store_experiment_row row;
    int ret, rc, found = 0;

    ret = read_begin(s, q, &r, &st);
    if (ret != STORE_OK)
        goto out;
    if (id != NULL && (rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC)) != SQLITE_OK) {
        ret = store_err_from_sqlite(rc);
        goto out;
    }
    for (rc = step_retry(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        row.rowid = sqlite3_column_int64(st, 0);
        row.id = (const char *)sqlite3_column_text(st, 1);
        row.config_json = (const char *)sqlite3_column_text(st, 2);
        row.created_ms = sqlite3_column_int64(st, 3);
        found = 1;
        ret = cb != NULL ? cb(arg, &row) : 0;
        if (ret != 0)
            goto out;
    }
    ret = store_err_from_sqlite(rc);
    if (ret == STORE_OK && id != NULL && !found)
        ret = STORE_ERR_NOTFOUND;
out:
    if (r)
        reader_put(r, q, st);
    return ret;
}

static int sq_load_experiments(struct store_backend *s,
                               int (*cb)(void *arg, const struct store_experiment_row *row),
                               void *arg)
{
    return experiment_rows(s, Q_EXPERIMENTS, NULL, cb, arg);
}

static int sq_find_experiment(struct store_backend *s, const char *id,
                              int (*cb)(void *arg, const struct store_experiment_row *row),
                              void *arg)
{
    return experiment_rows(s, Q_EXPERIMENT_BY_ID, id, cb, arg);
}

static int sq_load_events(struct store_backend *s, int64_t exp, int64_t after_seq,
                          int (*cb)(void *arg, const struct store_event *ev), void *arg)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    struct store_event ev;
    int ret, rc;

    ret = read_begin(s, Q_EVENTS, &r, &st);
    if (ret != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, exp);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, after_seq);
    if (rc != SQLITE_OK) {
        ret = store_err_from_sqlite(rc);
        goto out;
    }
    for (rc = step_retry(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        event_from_row(st, &ev);
        ret = cb(arg, &ev);
        if (ret != 0)
            goto out;
    }
    ret = store_err_from_sqlite(rc);
out:
    if (r)
        reader_put(r, Q_EVENTS, st);
    return ret;
}

/* Run a single-row event query (bound by the caller) into out, leaving the
 * strings borrowed from st. */
static int read_event_row(sqlite3_stmt *st, struct store_event *out)
{
    int rc = step_retry(st);
    if (rc == SQLITE_ROW) {
        event_from_row(st, out);
        return STORE_OK;
    }
    if (rc == SQLITE_DONE)
        return STORE_ERR_NOTFOUND;
    return store_err_from_sqlite(rc);
}

static int sq_find_assignment(struct store_backend *s, int64_t exp, int64_t seq,
                              struct store_event *out, char *buf, size_t buflen)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int err, rc;

    err = read_begin(s, Q_ASSIGNMENT, &r, &st);
    if (err != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, exp);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, seq);
    err = store_err_from_sqlite(rc);
    if (err == STORE_OK)
        err = read_event_row(st, out);
    if (err != STORE_OK)
        goto out;
    /* the row's strings die with the reset: copy them out */
    store_event_copy_strings(out, buf, buflen);
out:
    if (r)
        reader_put(r, Q_ASSIGNMENT, st);
    return err;
}

static int sq_find_outcome_kind(struct store_backend *s, int64_t exp, int64_t ref, int kind,
                                struct store_event *out, char *buf, size_t buflen)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int err, rc;

    err = read_begin(s, Q_OUTCOME, &r, &st);
    if (err != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, exp);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, ref);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 3, kind);
    err = store_err_from_sqlite(rc);
    if (err == STORE_OK)
        err = read_event_row(st, out);
    if (err == STORE_OK) {
        /* the row's strings die with the reset: the unit copied out (a
         * UNIT event's), or dropped */
        if (buf != NULL)
            snprintf(buf, buflen, "%s", out->unit != NULL ? out->unit : "");
        out->unit = buf;
        out->text = NULL;
        out->actor = out->request_id = out->chain = NULL;
    }
out:
    if (r)
        reader_put(r, Q_OUTCOME, st);
    return err;
}

static int sq_find_unit_in(struct store_backend *s, int64_t exp, const char *unit, int bandit,
                           struct store_event *out)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int err, rc;

    err = read_begin(s, Q_UNIT, &r, &st);
    if (err != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, exp);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, unit, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 3, bandit);
    err = store_err_from_sqlite(rc);
    if (err == STORE_OK)
        err = read_event_row(st, out);
    if (err == STORE_OK) {
        out->unit = unit; /* the caller's string, equal to the stored one */
        out->text = NULL;
        out->actor = out->request_id = out->chain = NULL;
    }
out:
    if (r)
        reader_put(r, Q_UNIT, st);
    return err;
}

static int sq_last_seq(struct store_backend *s, int64_t exp, int64_t *out)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int err, rc;

    err = read_begin(s, Q_LAST_SEQ, &r, &st);
    if (err != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, exp);
    if (rc == SQLITE_OK)
        rc = step_retry(st);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0; /* no event: 0 */
        err = STORE_OK;
    } else {
        err = store_err_from_sqlite(rc);
    }
out:
    if (r)
        reader_put(r, Q_LAST_SEQ, st);
    return err;
}

/* --- outbox ------------------------------------------------------------------ */

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

/* Run an outbox read bound by the caller, calling cb per row. */
static int outbox_rows(sqlite3_stmt *st, int (*cb)(void *arg, const struct store_delivery *d),
                       void *arg)
{
    struct store_delivery d;
    int rc;
    for (rc = step_retry(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        delivery_from_row(st, &d);
        int ret = cb(arg, &d);
        if (ret != 0)
            return ret;
    }
    return store_err_from_sqlite(rc);
}

static int sq_outbox_pending(struct store_backend *s, int64_t after_id, int limit,
                             int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int ret, rc;

    ret = read_begin(s, Q_OUTBOX_PENDING, &r, &st);
    if (ret != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, after_id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, limit);
    ret = rc == SQLITE_OK ? outbox_rows(st, cb, arg) : store_err_from_sqlite(rc);
out:
    if (r)
        reader_put(r, Q_OUTBOX_PENDING, st);
    return ret;
}

static int sq_outbox_list(struct store_backend *s, int64_t exp, int64_t before_id, int limit,
                          int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int ret, rc;

    ret = read_begin(s, Q_OUTBOX_LIST, &r, &st);
    if (ret != STORE_OK)
        goto out;
    rc = sqlite3_bind_int64(st, 1, exp);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, before_id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 3, limit);
    ret = rc == SQLITE_OK ? outbox_rows(st, cb, arg) : store_err_from_sqlite(rc);
out:
    if (r)
        reader_put(r, Q_OUTBOX_LIST, st);
    return ret;
}

static int sq_outbox_depth(struct store_backend *s, int64_t *out)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    int err, rc;

    err = read_begin(s, Q_OUTBOX_DEPTH, &r, &st);
    if (err != STORE_OK)
        goto out;
    rc = step_retry(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        err = STORE_OK;
    } else {
        err = rc == SQLITE_DONE ? STORE_ERR_IO : store_err_from_sqlite(rc);
    }
out:
    if (r)
        reader_put(r, Q_OUTBOX_DEPTH, st);
    return err;
}

/* --- keys -------------------------------------------------------------------- */
static int sq_load_keys(struct store_backend *s,
                        int (*cb)(void *arg, const struct store_key_row *row), void *arg)
{
    struct reader *r = NULL;
    sqlite3_stmt *st = NULL;
    struct store_key_row row;
    int ret, rc;

    ret = read_begin(s, Q_KEYS, &r, &st);
    if (ret != STORE_OK)
        goto out;
    for (rc = step_retry(st); rc == SQLITE_ROW; rc = sqlite3_step(st)) {
        row.rowid = sqlite3_column_int64(st, 0);
        row.name = (const char *)sqlite3_column_text(st, 1);
        row.scopes = (const char *)sqlite3_column_text(st, 2);
        row.hash = (const char *)sqlite3_column_text(st, 3);
        row.created_ms = sqlite3_column_int64(st, 4);
        row.revoked = sqlite3_column_int(st, 5);
        row.experiments = (const char *)sqlite3_column_text(st, 6);
        ret = cb(arg, &row);
        if (ret != 0)
            goto out;
    }
    ret = store_err_from_sqlite(rc);
out:
    if (r)
        reader_put(r, Q_KEYS, st);
    return ret;
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
    struct reader *r;

    if (s->have_rkey)
        pthread_key_delete(s->rkey); /* no destructor runs after this */
    if (s->have_rmu) {
        pthread_mutex_lock(&s->rmu);
        while ((r = s->readers) != NULL) {
            s->readers = r->next;
            reader_free(r);
        }
        pthread_mutex_unlock(&s->rmu);
        pthread_mutex_destroy(&s->rmu);
    }
    for (int q = 0; q < Q_COUNT; q++)
        sqlite3_finalize(s->wst[q]);
    sqlite3_close_v2(s->cdb);
    if (s->have_ckpt_cv)
        pthread_cond_destroy(&s->ckpt_cv);
    /* last connection: checkpoints and removes the WAL */
    sqlite3_close_v2(s->wdb);
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
    if ((prc = pthread_mutex_init(&s->mu, NULL)) != 0)
        goto fail_sys;
    s->have_mu = 1;
    if ((prc = pthread_cond_init(&s->ckpt_cv, NULL)) != 0)
        goto fail_sys;
    s->have_ckpt_cv = 1;
    if ((prc = pthread_mutex_init(&s->rmu, NULL)) != 0)
        goto fail_sys;
    s->have_rmu = 1;
    if ((prc = pthread_key_create(&s->rkey, reader_thread_exit)) != 0)
        goto fail_sys;
    s->have_rkey = 1;

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
    .backup = sq_backup,
};
