/*
 * postgres.c — the PostgreSQL backend (backend.h), through libpq, for a
 * database several machines can reach and an operator already replicates.
 * Chosen by a target of the form postgresql://… (or postgres://…).
 *
 * The same model as SQLite's: experiments, their append-only event log
 * keyed (exp, seq), API keys, the purge list and the webhook outbox, at the
 * same schema version (banditd_schema holds it; migrations below run in
 * one transaction under an advisory lock, so that daemons starting
 * together do not race). The writer's connection commits one transaction
 * per group with synchronous_commit on: a commit returns once the WAL is
 * flushed (and, with synchronous standbys configured, replicated), so a
 * 2xx is never given for a write PostgreSQL could lose.
 *
 * Failures: a lost connection, a server shutting down, a standby that
 * became read-only, lock or serialization trouble, a full disk — all
 * become STORE_ERR_FULL (503 with Retry-After): the write was not
 * acknowledged, and the connection is re-established at the next
 * transaction (or read). A COMMIT whose outcome is unknown (the connection
 * died during it) is reported as failed; the daemon then reloads the
 * experiment from the database (store.h, keyed submissions), which is the
 * truth either way.
 *
 * Reads: each thread has its own connection, opened on first use. A
 * streaming read (store_load_events, store_load_experiments) runs a
 * cursor inside a REPEATABLE READ transaction, fetching PG_FETCH rows at a
 * time (constant memory); reads nested in its callback run in the same
 * transaction, so they see the same snapshot, as with SQLite.
 */
#include "store/backend.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <sys/random.h>

#include <libpq-fe.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/digest.h"
#include "base/log.h"
#include "store/readers.h"
#include "store/store_test.h"

#define PG_FETCH "1024"          /* rows per FETCH of a streaming read */
#define PG_PURGE_CHUNK "256"     /* events removed per purge transaction */
#define PG_CONNECT_TIMEOUT "5"   /* seconds; the target may say otherwise */
#define PG_MIGRATION_LOCK "7019" /* advisory lock key of the migrations */
#define PG_MAX_PARAMS 16
#define PG_LOCK_CLASS 0x42440000       /* "BD": the experiments' advisory locks */
#define PG_BEAT_MS 1000                /* heartbeat period (store.h, STORE_LEASE_MS) */
#define PG_TAKEOVER_TRIES 40           /* 50 ms apart: a terminated session lets go */
#define PG_KEYS_CHANNEL "banditd_keys" /* NOTIFY at every key write (store_keys_epoch) */

/* --- statements -------------------------------------------------------------- */

/* Every statement this file runs (store_test_pg_sql lists them for the
 * query-plan test). Parameters are $1, $2…: the experiment's rowid first. */
enum pq {
    PQ_BEGIN,
    PQ_COMMIT,
    PQ_ROLLBACK,
    PQ_SAVEPOINT,
    PQ_RELEASE,
    PQ_ROLLBACK_TO,
    PQ_EXP_INSERT,
    PQ_EXP_DELETE,
    PQ_LAST_EVENT,
    PQ_PURGE_ADD,
    PQ_PURGE_NEXT,
    PQ_PURGE_CHUNK,
    PQ_PURGE_DONE,
    PQ_EVENT_INSERT,
    PQ_EVENT_INSERT_MANY,
    PQ_KEY_INSERT,
    PQ_KEY_REVOKE,
    PQ_AUDIT_LOCK,
    PQ_AUDIT_LAST,
    PQ_AUDIT_INSERT,
    PQ_KEY_NOTIFY,
    PQ_OUTBOX_INSERT,
    PQ_OUTBOX_UPDATE,
    PQ_OUTBOX_PRUNE,
    PQ_EXISTS,
    PQ_LOCK_TRY,
    PQ_LOCK,
    PQ_LOCK_HOLDER,
    PQ_TERMINATE,
    PQ_BEAT,
    PQ_NODE_GONE,
    PQ_EXPERIMENTS,
    PQ_EXPERIMENT_BY_ID,
    PQ_EVENTS,
    PQ_ASSIGNMENT,
    PQ_OUTCOME,
    PQ_UNIT,
    PQ_LAST_SEQ,
    PQ_KEYS,
    PQ_AUDIT,
    PQ_OUTBOX_PENDING,
    PQ_OUTBOX_LIST,
    PQ_OUTBOX_DEPTH,
    PQ_SNAP_INSERT,
    PQ_SNAP_SEQS,
    PQ_SNAP_DROP,
    PQ_SNAP_DELETE,
    PQ_SNAPSHOTS,
    PQ_COUNT
};

static const struct store_sql pg_queries[PQ_COUNT] = {
    [PQ_BEGIN] = {"begin", STORE_SQL_WRITE, "BEGIN"},
    [PQ_COMMIT] = {"commit", STORE_SQL_WRITE, "COMMIT"},
    [PQ_ROLLBACK] = {"rollback", STORE_SQL_WRITE, "ROLLBACK"},
    [PQ_SAVEPOINT] = {"savepoint", STORE_SQL_WRITE, "SAVEPOINT s"},
    [PQ_RELEASE] = {"release", STORE_SQL_WRITE, "RELEASE SAVEPOINT s"},
    [PQ_ROLLBACK_TO] = {"rollback_to", STORE_SQL_WRITE, "ROLLBACK TO SAVEPOINT s"},
    [PQ_EXP_INSERT] = {"exp_insert", STORE_SQL_WRITE,
                       "INSERT INTO experiments(id, config, created_ms) VALUES ($1, $2, $3)"
                       " RETURNING rowid"},
    [PQ_EXP_DELETE] = {"exp_delete", STORE_SQL_WRITE, "DELETE FROM experiments WHERE rowid = $1"},
    /* the deleted log's last row, for the audit log's record of the delete */
    [PQ_LAST_EVENT] = {"last_event", STORE_SQL_WRITE,
                       "SELECT seq, chain FROM events WHERE exp = $1 ORDER BY seq DESC LIMIT 1"},
    [PQ_PURGE_ADD] = {"purge_add", STORE_SQL_WRITE,
                      "INSERT INTO purges(exp) VALUES ($1) ON CONFLICT DO NOTHING"},
    [PQ_PURGE_NEXT] = {"purge_next", STORE_SQL_WRITE,
                       "SELECT exp FROM purges ORDER BY exp LIMIT 1"},
    /* The log's first PG_PURGE_CHUNK seqs (an experiment's seqs are dense):
     * a range of the primary key after one min() lookup. "seq IN (SELECT …
     * ORDER BY seq LIMIT n)" had PostgreSQL hash or sort the whole log of
     * the experiment (test_store_plans). */
    [PQ_PURGE_CHUNK] = {"purge_chunk", STORE_SQL_WRITE,
                        "DELETE FROM events WHERE exp = $1 AND seq < (SELECT min(seq) FROM events"
                        " WHERE exp = $1) + " PG_PURGE_CHUNK},
    [PQ_PURGE_DONE] = {"purge_done", STORE_SQL_WRITE, "DELETE FROM purges WHERE exp = $1"},
    [PQ_EVENT_INSERT] = {"event_insert", STORE_SQL_WRITE,
                         "INSERT INTO events(" EVENT_COLS ")"
                         " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
                         " $15)"},
    /* a group's events in one statement (pg_flush): one round trip and
     * one plan instead of one per event */
    [PQ_EVENT_INSERT_MANY] = {"event_insert_many", STORE_SQL_WRITE,
                              "INSERT INTO events(" EVENT_COLS ") SELECT * FROM unnest("
                              "$1::bigint[], $2::bigint[], $3::integer[], $4::integer[],"
                              " $5::integer[], $6::bigint[], $7::double precision[],"
                              " $8::bigint[], $9::bigint[], $10::bigint[], $11::text[],"
                              " $12::text[], $13::text[], $14::text[], $15::text[])"},
    [PQ_KEY_INSERT] = {"key_insert", STORE_SQL_WRITE,
                       "INSERT INTO api_keys(name, scopes, hash, created_ms, experiments)"
                       " VALUES ($1, $2, $3, $4, $5) RETURNING rowid"},
    [PQ_KEY_REVOKE] = {"key_revoke", STORE_SQL_WRITE,
                       "UPDATE api_keys SET revoked = 1 WHERE rowid = $1"},
    /* the audit log's appends, one at a time across daemons and the keys
     * CLI (store.h): the lock lasts until the transaction ends */
    [PQ_AUDIT_LOCK] = {"audit_lock", STORE_SQL_WRITE, "LOCK TABLE audit_log IN EXCLUSIVE MODE"},
    [PQ_AUDIT_LAST] = {"audit_last", STORE_SQL_WRITE,
                       "SELECT seq, chain FROM audit_log ORDER BY seq DESC LIMIT 1"},
    [PQ_AUDIT_INSERT] = {"audit_insert", STORE_SQL_WRITE,
                         "INSERT INTO audit_log(seq, ts_ms, kind, subject, detail, actor,"
                         " request_id, chain) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"},
    /* every daemon listening hears it when the transaction commits */
    [PQ_KEY_NOTIFY] = {"key_notify", STORE_SQL_WRITE,
                       "SELECT pg_notify('" PG_KEYS_CHANNEL "', '')"},
    [PQ_OUTBOX_INSERT] = {"outbox_insert", STORE_SQL_WRITE,
                          "INSERT INTO outbox(exp, exp_id, event_id, type, url, secret, body,"
                          " created_ms, next_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"},
    [PQ_OUTBOX_UPDATE] = {"outbox_update", STORE_SQL_WRITE,
                          "UPDATE outbox SET state = $2, attempts = $3, next_ms = $4,"
                          " last_ms = $5, last_status = $6, last_error = $7 WHERE id = $1"
                          /* not over the attempts of a daemon that took the
                           * experiment over meanwhile ($8: PG_LOCK_CLASS) */
                          " AND NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
                          " AND objsubid = 2 AND granted AND pid <> pg_backend_pid()"
                          " AND classid::bigint = $8 + (outbox.exp >> 31)"
                          " AND objid::bigint = (outbox.exp & 2147483647))"},
    [PQ_OUTBOX_PRUNE] = {"outbox_prune", STORE_SQL_WRITE,
                         "DELETE FROM outbox WHERE state <> 0 AND last_ms < $1"},

    /* ownership (store.h): an experiment's advisory lock is (PG_LOCK_CLASS
     * + its rowid's high bits, its low 31 bits), in the two-integer key
     * space, apart from the migrations' one-bigint key */
    [PQ_EXISTS] = {"exists", STORE_SQL_WRITE, "SELECT 1 FROM experiments WHERE rowid = $1"},
    [PQ_LOCK_TRY] = {"lock_try", STORE_SQL_WRITE,
                     "SELECT pg_try_advisory_lock($1::integer, $2::integer)"},
    [PQ_LOCK] = {"lock", STORE_SQL_WRITE, "SELECT pg_advisory_lock($1::integer, $2::integer)"},
    /* who holds it: the server process, and the daemon whose writer that
     * is with its heartbeat's age (server clock), -1 when none says so */
    [PQ_LOCK_HOLDER] = {"lock_holder", STORE_SQL_WRITE,
                        "SELECT l.pid, n.url, coalesce((extract(epoch FROM clock_timestamp())"
                        " * 1000)::bigint - n.beat_ms, -1) FROM pg_locks l"
                        " LEFT JOIN nodes n ON n.writer_pid = l.pid"
                        " WHERE l.locktype = 'advisory' AND l.classid::bigint = $1"
                        " AND l.objid::bigint = $2 AND l.objsubid = 2 AND l.granted"
                        " ORDER BY n.beat_ms DESC NULLS LAST LIMIT 1"},
    [PQ_TERMINATE] = {"terminate", STORE_SQL_WRITE, "SELECT pg_terminate_backend($1::integer)"},
    /* the heartbeat's, on a connection of its own */
    [PQ_BEAT] = {"beat", STORE_SQL_ONCE,
                 "INSERT INTO nodes(node, url, writer_pid, beat_ms) VALUES ($1, $2, $3,"
                 " (extract(epoch FROM clock_timestamp()) * 1000)::bigint)"
                 " ON CONFLICT (node) DO UPDATE SET url = excluded.url,"
                 " writer_pid = excluded.writer_pid, beat_ms = excluded.beat_ms"},
    [PQ_NODE_GONE] = {"node_gone", STORE_SQL_ONCE, "DELETE FROM nodes WHERE node = $1"},

    [PQ_EXPERIMENTS] = {"experiments", STORE_SQL_READ,
                        "SELECT rowid, id, config, created_ms FROM experiments ORDER BY rowid"},
    [PQ_EXPERIMENT_BY_ID] = {"experiment_by_id", STORE_SQL_READ,
                             "SELECT rowid, id, config, created_ms FROM experiments WHERE id = $1"},
    [PQ_EVENTS] = {"events", STORE_SQL_READ,
                   "SELECT " EVENT_COLS " FROM events WHERE exp = $1 AND seq > $2 ORDER BY seq"},
    [PQ_ASSIGNMENT] = {"assignment", STORE_SQL_READ,
                       "SELECT " EVENT_COLS
                       " FROM events WHERE exp = $1 AND seq = $2 AND kind = 1"},
    /* events_ref holds (exp, ref, seq): the first outcome is its first
     * entry for (exp, ref) */
    [PQ_OUTCOME] = {"outcome", STORE_SQL_READ,
                    "SELECT " EVENT_COLS " FROM events WHERE exp = $1 AND ref = $2"
                    " AND (kind = $3::integer OR ($3::integer = 0 AND kind IN (2, 4, 5)))"
                    " ORDER BY seq LIMIT 1"},
    [PQ_UNIT] = {"unit", STORE_SQL_READ,
                 "SELECT " EVENT_COLS " FROM events WHERE exp = $1 AND unit = $2"
                 " AND kind IN (1, 9)"
                 " AND ($3::integer < 0 OR bandit = $3::integer) ORDER BY seq DESC LIMIT 1"},
    [PQ_LAST_SEQ] = {"last_seq", STORE_SQL_READ,
                     "SELECT seq FROM events WHERE exp = $1 ORDER BY seq DESC LIMIT 1"},
    [PQ_KEYS] = {"keys", STORE_SQL_READ,
                 "SELECT rowid, name, scopes, hash, created_ms, revoked, experiments"
                 " FROM api_keys ORDER BY rowid"},
    [PQ_AUDIT] = {"audit", STORE_SQL_READ,
                  "SELECT seq, ts_ms, kind, subject, detail, actor, request_id, chain"
                  " FROM audit_log ORDER BY seq"},
    /* the deliveries this daemon makes (one daemon per delivery, not
     * each): those of the experiments its writer's session owns ($3: that
     * session's server process, $4: PG_LOCK_CLASS), and those of
     * experiments nobody owns (orphaned, or deleted since) when it is the
     * live daemon with the smallest node id ($5, $6: STORE_LEASE_MS) */
    [PQ_OUTBOX_PENDING] = {"outbox_pending", STORE_SQL_READ,
                           "SELECT " OUTBOX_COLS " FROM outbox LEFT JOIN (SELECT"
                           " ((classid::bigint - $4) << 31) | objid::bigint AS lexp, pid"
                           " FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2"
                           " AND granted AND classid::bigint >= $4) l ON l.lexp = exp"
                           " WHERE state = 0 AND id > $1 AND (l.pid = $3 OR (l.pid IS NULL"
                           " AND $5 = (SELECT min(node) FROM nodes WHERE beat_ms >"
                           " (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $6)))"
                           " ORDER BY id LIMIT $2"},
    [PQ_OUTBOX_LIST] = {"outbox_list", STORE_SQL_READ,
                        "SELECT " OUTBOX_COLS " FROM outbox WHERE exp = $1 AND id < $2"
                        " ORDER BY id DESC LIMIT $3"},
    [PQ_OUTBOX_DEPTH] = {"outbox_depth", STORE_SQL_READ,
                         "SELECT count(*) FROM outbox WHERE state = 0"},

    /* Snapshots (store.h). The insert runs unprepared (PQexecParams: the
     * state a binary bytea parameter; one every many thousand events);
     * after it the experiment's seqs (the primary key; a dozen rows, sorted
     * by store_snapshots_keep) say which go, each by its key. A load reads
     * one row at a time, the latest below $2, by the primary key. */
    [PQ_SNAP_INSERT] = {"snap_insert", STORE_SQL_ONCE,
                        "INSERT INTO snapshots(exp, seq, format, software, design, checksum,"
                        " created_ms, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                        " ON CONFLICT (exp, seq) DO UPDATE SET format = excluded.format,"
                        " software = excluded.software, design = excluded.design,"
                        " checksum = excluded.checksum, created_ms = excluded.created_ms,"
                        " state = excluded.state"},
    [PQ_SNAP_SEQS] = {"snap_seqs", STORE_SQL_WRITE, "SELECT seq FROM snapshots WHERE exp = $1"},
    [PQ_SNAP_DROP] = {"snap_drop", STORE_SQL_WRITE,
                      "DELETE FROM snapshots WHERE exp = $1 AND seq = $2"},
    [PQ_SNAP_DELETE] = {"snap_delete", STORE_SQL_WRITE, "DELETE FROM snapshots WHERE exp = $1"},
    [PQ_SNAPSHOTS] = {"snapshots", STORE_SQL_READ,
                      "SELECT exp, seq, format, software, design, checksum, created_ms, state"
                      " FROM snapshots WHERE exp = $1 AND seq < $2 ORDER BY seq DESC LIMIT 1"},
};

const struct store_sql *store_test_pg_sql(size_t i)
{
    return i < PQ_COUNT ? &pg_queries[i] : NULL;
}

/* --- schema ------------------------------------------------------------------ */

/* Migrations in PostgreSQL's dialect. The backend arrived at schema version
 * 4, so its first step makes that version at once: both engines carry the
 * same numbers (store_schema_version), and a new version is one new entry
 * here and one in schema.c. The tables mirror schema.c's; rowids come from
 * identity columns, which never hand out a number twice (a new experiment
 * never inherits a deleted one's log, schema.c version 2). */
static const struct {
    int version;
    const char *sql;
} pg_migrations[] = {
    {4, "CREATE TABLE experiments ("
        " rowid bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
        " id text NOT NULL UNIQUE,"
        " config text NOT NULL,"
        " created_ms bigint NOT NULL);"
        "CREATE TABLE events ("
        " exp bigint NOT NULL,"
        " seq bigint NOT NULL,"
        " kind integer NOT NULL,"
        " bandit integer,"
        " arm integer,"
        " flags bigint NOT NULL DEFAULT 0,"
        " value double precision,"
        " ref bigint,"
        " ts_ms bigint NOT NULL,"
        " expires_ms bigint,"
        " unit text,"
        " text text,"
        " PRIMARY KEY (exp, seq));"
        "CREATE INDEX events_ref ON events(exp, ref, seq) WHERE ref IS NOT NULL;"
        "CREATE INDEX events_unit ON events(exp, unit, seq) WHERE unit IS NOT NULL;"
        "CREATE TABLE api_keys ("
        " rowid bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
        " name text,"
        " scopes text NOT NULL,"
        " hash text NOT NULL UNIQUE,"
        " created_ms bigint NOT NULL,"
        " revoked integer NOT NULL DEFAULT 0);"
        "CREATE TABLE purges (exp bigint PRIMARY KEY);"
        "CREATE TABLE outbox ("
        " id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
        " exp bigint NOT NULL,"
        " exp_id text NOT NULL,"
        " event_id text NOT NULL,"
        " type text NOT NULL,"
        " url text NOT NULL,"
        " secret text NOT NULL,"
        " body text NOT NULL,"
        " created_ms bigint NOT NULL,"
        " state integer NOT NULL DEFAULT 0,"
        " attempts integer NOT NULL DEFAULT 0,"
        " next_ms bigint NOT NULL,"
        " last_ms bigint,"
        " last_status integer,"
        " last_error text);"
        "CREATE INDEX outbox_pending ON outbox(id) WHERE state = 0;"
        "CREATE INDEX outbox_finished ON outbox(last_ms) WHERE state <> 0;"
        "CREATE INDEX outbox_exp ON outbox(exp, id);"},
    {5, "CREATE TABLE nodes ("
        " node text PRIMARY KEY,"
        " url text NOT NULL,"
        " writer_pid integer NOT NULL,"
        " beat_ms bigint NOT NULL);"},
    /* schema.c's version 6: a key limited to named experiments */
    {6, "ALTER TABLE api_keys ADD COLUMN experiments text;"},
    /* schema.c's version 7: the audit trail's columns */
    {7, "ALTER TABLE events ADD COLUMN actor text;"
        "ALTER TABLE events ADD COLUMN request_id text;"
        "ALTER TABLE events ADD COLUMN chain text;"},
    /* schema.c's version 8: the audit log of keys and creations */
    {8, "CREATE TABLE audit_log ("
        " seq bigint PRIMARY KEY,"
        " ts_ms bigint NOT NULL,"
        " kind integer NOT NULL,"
        " subject text NOT NULL,"
        " detail text,"
        " actor text,"
        " request_id text,"
        " chain text NOT NULL);"},
    /* schema.c's version 9: snapshots (store.h) */
    {9, "CREATE TABLE snapshots ("
        " exp bigint NOT NULL,"
        " seq bigint NOT NULL,"
        " format integer NOT NULL,"
        " software text NOT NULL,"
        " design text NOT NULL,"
        " checksum text NOT NULL,"
        " created_ms bigint NOT NULL,"
        " state bytea NOT NULL,"
        " PRIMARY KEY (exp, seq));"},
};

#define N_PG_MIGRATIONS (sizeof pg_migrations / sizeof pg_migrations[0])

/* --- state ------------------------------------------------------------------- */

/* One thread's connection for reads. */
struct reader {
    struct store_reader link; /* first: readers.h */
    PGconn *c;
    unsigned char prepared[PQ_COUNT];
    int depth; /* streaming reads open (their transaction) */
};

struct store_backend {
    char *target; /* the URI as given (secret: never logged) */
    char shown[256];

    /* the writer's connection: the front's writer thread only */
    PGconn *w;
    /* the experiments whose advisory lock w's session holds (ownership,
     * store.h): emptied whenever w is made again, since the locks went
     * with the old session. Open addressing, 0 = empty (rowids are > 0). */
    int64_t *owned;
    size_t nowned, capowned;
    int w_prepared; /* its statements are (PQprepare, after each connect) */
    /* events written but not sent yet (pg_flush), borrowed from their
     * submissions (valid until the callbacks, after the commit) */
    const struct store_event **pend;
    size_t npend, cappend;
    int in_tx;        /* a transaction is open (pg_begin) */
    int begun;        /* and its BEGIN was sent: it goes with the first statement */
    char errbuf[512]; /* the last failure, for the log */

    struct store_readers readers;

    /* the heartbeat: its own thread and connection */
    char node[40];       /* this daemon's id in nodes: random, per open */
    char url[256];       /* under hmu: store_set_advertise */
    atomic_int w_pid;    /* the writer session's server process */
    pthread_mutex_t hmu; /* url, hstop */
    int hwake[2];        /* a byte written here wakes the heartbeat (hnow, hstop) */
    int hstop;
    int hpaused; /* store_test_pause_heartbeat */
    int hnow;    /* beat now: the address changed */
    pthread_t hb;
    int have_hmu, have_hwake, hb_started;
    /* API keys written elsewhere: bumped by each notification on
     * PG_KEYS_CHANNEL, and when the listening connection was made again
     * (what it may have missed meanwhile): store_keys_epoch */
    atomic_uint_fast64_t keys_epoch;
};

/* --- errors and parameters --------------------------------------------------- */

/* The one place PostgreSQL's outcomes become store errors. *own (when not
 * NULL): the failure is the statement's data (a constraint, a bad value),
 * not the transaction's or the connection's. */
static int store_err_from_pg(PGconn *c, const PGresult *res, int *own)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (own)
        *own = 0;
    if (PQstatus(c) != CONNECTION_OK || state == NULL)
        return res == NULL && PQstatus(c) == CONNECTION_OK ? STORE_ERR_NOMEM : STORE_ERR_FULL;
    if (strncmp(state, "23", 2) == 0 || strncmp(state, "22", 2) == 0) {
        if (own)
            *own = 1;
        return strcmp(state, "23505") == 0 ? STORE_ERR_EXISTS : STORE_ERR_IO;
    }
    /* connection exceptions (08), rollbacks such as serialization and
     * deadlock (40), insufficient resources such as a full disk (53),
     * lock not available (55), operator intervention such as a shutdown
     * (57), a read-only transaction on a standby after a failover (25006):
     * the database cannot take the write now; later it may */
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "40", 2) == 0 ||
        strncmp(state, "53", 2) == 0 || strncmp(state, "55", 2) == 0 ||
        strncmp(state, "57", 2) == 0 || strcmp(state, "25006") == 0)
        return STORE_ERR_FULL;
    return STORE_ERR_IO;
}

/* Text parameters of one statement. */
struct params {
    const char *v[PG_MAX_PARAMS];
    char buf[PG_MAX_PARAMS][32];
    int n;
};

static void p_i64(struct params *p, int64_t v)
{
    snprintf(p->buf[p->n], sizeof p->buf[p->n], "%lld", (long long)v);
    p->v[p->n] = p->buf[p->n];
    p->n++;
}

/* 0 is NULL (no ref, no expiry: as SQLite's bind_opt_int64) */
static void p_opt_i64(struct params *p, int64_t v)
{
    if (v == 0)
        p->v[p->n++] = NULL;
    else
        p_i64(p, v);
}

/* NaN is NULL; 17 significant digits give the double back bit for bit */
static void p_dbl(struct params *p, double v)
{
    if (isnan(v)) {
        p->v[p->n++] = NULL;
        return;
    }
    snprintf(p->buf[p->n], sizeof p->buf[p->n], "%.17g", v);
    p->v[p->n] = p->buf[p->n];
    p->n++;
}

static void p_text(struct params *p, const char *v)
{
    p->v[p->n++] = v;
}

static int64_t col_i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static const char *col_text(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* Fill ev from a row of EVENT_COLS; strings borrowed from r. */
static void event_from_row(const PGresult *r, int i, struct store_event *ev)
{
    ev->exp = col_i64(r, i, 0);
    ev->seq = col_i64(r, i, 1);
    ev->kind = (int)col_i64(r, i, 2);
    ev->bandit = (int32_t)col_i64(r, i, 3);
    ev->arm = (int32_t)col_i64(r, i, 4);
    ev->flags = (uint32_t)col_i64(r, i, 5);
    ev->value = PQgetisnull(r, i, 6) ? NAN : strtod(PQgetvalue(r, i, 6), NULL);
    ev->ref = col_i64(r, i, 7);
    ev->ts_ms = col_i64(r, i, 8);
    ev->expires_ms = col_i64(r, i, 9);
    ev->unit = col_text(r, i, 10);
    ev->text = col_text(r, i, 11);
    ev->actor = col_text(r, i, 12);
    ev->request_id = col_text(r, i, 13);
    ev->chain = col_text(r, i, 14);
}

static void delivery_from_row(const PGresult *r, int i, struct store_delivery *d)
{
    d->id = col_i64(r, i, 0);
    d->exp = col_i64(r, i, 1);
    d->exp_id = col_text(r, i, 2);
    d->event_id = col_text(r, i, 3);
    d->type = col_text(r, i, 4);
    d->url = col_text(r, i, 5);
    d->secret = col_text(r, i, 6);
    d->body = col_text(r, i, 7);
    d->created_ms = col_i64(r, i, 8);
    d->state = (int)col_i64(r, i, 9);
    d->attempts = (int)col_i64(r, i, 10);
    d->next_ms = col_i64(r, i, 11);
    d->last_ms = col_i64(r, i, 12);
    d->last_status = (int)col_i64(r, i, 13);
    d->last_error = col_text(r, i, 14);
}

/* --- ownership: the locks this writer session holds ---------------------------- */

static size_t owned_slot(const struct store_backend *b, int64_t exp)
{
    uint64_t h = (uint64_t)exp * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (b->capowned - 1);
    while (b->owned[i] != 0 && b->owned[i] != exp)
        i = (i + 1) & (b->capowned - 1);
    return i;
}

static int owned_has(const struct store_backend *b, int64_t exp)
{
    return b->capowned > 0 && b->owned[owned_slot(b, exp)] == exp;
}

/* Remember exp as owned; −1 when out of memory (the lock is held all the
 * same: the experiment is only refused until claimed again). */
static int owned_add(struct store_backend *b, int64_t exp)
{
    if ((b->nowned + 1) * 2 > b->capowned) {
        size_t ncap = b->capowned ? b->capowned * 2 : 64;
        int64_t *n = calloc(ncap, sizeof *n), *old = b->owned;
        size_t oldcap = b->capowned;
        if (n == NULL)
            return -1;
        b->owned = n;
        b->capowned = ncap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i] != 0)
                b->owned[owned_slot(b, old[i])] = old[i];
        free(old);
    }
    size_t i = owned_slot(b, exp);
    if (b->owned[i] == 0) {
        b->owned[i] = exp;
        b->nowned++;
    }
    return 0;
}

static void owned_clear(struct store_backend *b)
{
    if (b->capowned > 0)
        memset(b->owned, 0, b->capowned * sizeof *b->owned);
    b->nowned = 0;
}

/* The advisory lock key of experiment exp. */
static void lock_params(struct params *p, int64_t exp)
{
    p_i64(p, PG_LOCK_CLASS + (exp >> 31));
    p_i64(p, exp & 0x7fffffff);
}

/* Fencing: a write of exp's rows only on the session holding its lock. */
static int fence(const struct store_backend *b, int64_t exp, int *own)
{
    if (owned_has(b, exp))
        return STORE_OK;
    *own = 1;
    return STORE_ERR_NOTOWNER;
}

/* --- connections ------------------------------------------------------------- */

/* The target without its password, for messages and logs. */
static void redact(const char *uri, char *out, size_t len)
{
    const char *scheme = strstr(uri, "://");
    const char *start = scheme ? scheme + 3 : uri;
    const char *at = strchr(start, '@');
    const char *slash = strchr(start, '/');
    const char *colon = strchr(start, ':');
    if (at != NULL && (slash == NULL || at < slash) && colon != NULL && colon < at)
        snprintf(out, len, "%.*s:***%s", (int)(colon - uri), uri, at);
    else
        snprintf(out, len, "%s", uri);
    char *pw = strstr(out, "password=");
    if (pw != NULL)
        snprintf(pw, len - (size_t)(pw - out), "password=***");
}

static void notice_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* "relation already exists, skipping" and the like */
}

/* Run one statement without parameters; a store error. */
static int run(PGconn *c, const char *sql, int *own)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int err =
        st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? STORE_OK : store_err_from_pg(c, r, own);
    PQclear(r);
    return err;
}

/* A new connection to the target with this backend's settings, or NULL
 * with libpq's reason in err. The target's own keywords override the
 * defaults (dbname is expanded last). */
static PGconn *pg_connect(const struct store_backend *b, char *err, size_t errlen)
{
    static const char *const keys[] = {"connect_timeout",
                                       "application_name",
                                       "keepalives_idle",
                                       "keepalives_interval",
                                       "keepalives_count",
                                       "dbname",
                                       NULL};
    const char *vals[] = {PG_CONNECT_TIMEOUT, "banditd", "10", "5", "3", b->target, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (c == NULL) {
        snprintf(err, errlen, "%s: out of memory", b->shown);
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "%s: %s", b->shown, PQerrorMessage(c));
        err[strcspn(err, "\n")] = '\0';
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, notice_quiet, NULL);
    /* on whatever the server's default: a commit returns once durable */
    if (run(c, "SET synchronous_commit = on", NULL) != STORE_OK) {
        snprintf(err, errlen, "%s: %s", b->shown, PQerrorMessage(c));
        err[strcspn(err, "\n")] = '\0';
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* Prepare q on c. */
static int prepare(PGconn *c, enum pq q)
{
    PGresult *r = PQprepare(c, pg_queries[q].name, pg_queries[q].sql, 0, NULL);
    int err = PQresultStatus(r) == PGRES_COMMAND_OK ? STORE_OK : store_err_from_pg(c, r, NULL);
    PQclear(r);
    return err;
}

/* The writer's connection, re-established if it broke; its statements
 * prepared. Writer thread only, outside a transaction. */
static int w_ready(struct store_backend *b)
{
    if (b->w != NULL && PQstatus(b->w) == CONNECTION_OK && b->w_prepared)
        return STORE_OK;
    if (b->w == NULL || PQstatus(b->w) != CONNECTION_OK) {
        PQfinish(b->w);
        b->w_prepared = 0;
        owned_clear(b); /* the old session's locks are gone with it */
        b->w = pg_connect(b, b->errbuf, sizeof b->errbuf);
        if (b->w == NULL)
            return STORE_ERR_FULL;
        atomic_store(&b->w_pid, PQbackendPID(b->w));
    }
    for (int q = 0; q < PQ_COUNT; q++) {
        if (pg_queries[q].role != STORE_SQL_WRITE)
            continue;
        int err = prepare(b->w, (enum pq)q);
        if (err != STORE_OK) {
            snprintf(b->errbuf, sizeof b->errbuf, "prepare %s: %s", pg_queries[q].name,
                     PQerrorMessage(b->w));
            return err;
        }
    }
    b->w_prepared = 1;
    return STORE_OK;
}

/* A writer statement's result r (taken): STORE_OK with *res (when not
 * NULL) receiving it (new: PQclear it), or the error, its text in errbuf. */
static int w_result(struct store_backend *b, PGresult *r, PGresult **res, int *own)
{
    ExecStatusType st = PQresultStatus(r);
    int err = STORE_OK;
    if (own)
        *own = 0;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        err = store_err_from_pg(b->w, r, own);
        snprintf(b->errbuf, sizeof b->errbuf, "%s", PQerrorMessage(b->w));
        b->errbuf[strcspn(b->errbuf, "\n")] = '\0';
        PQclear(r);
        return err;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return err;
}

/* Run a writer statement as it is; *res as w_result's. */
static int w_run(struct store_backend *b, enum pq q, const struct params *p, PGresult **res,
                 int *own)
{
    PGresult *r =
        PQexecPrepared(b->w, pg_queries[q].name, p ? p->n : 0, p ? p->v : NULL, NULL, NULL, 0);
    return w_result(b, r, res, own);
}

/* Run a writer statement, after the transaction's BEGIN when it is the
 * first statement of one (pg_begin); *res as w_run's. */
static int w_exec(struct store_backend *b, enum pq q, const struct params *p, PGresult **res,
                  int *own)
{
    if (b->in_tx && !b->begun && q != PQ_BEGIN) {
        b->begun = 1;
        int err = w_run(b, PQ_BEGIN, NULL, NULL, own);
        if (err != STORE_OK)
            return err;
    }
    return w_run(b, q, p, res, own);
}

/* Rows a writer statement changed. */
static int changed(PGresult *r)
{
    return (int)strtol(PQcmdTuples(r), NULL, 10); /* "" for no count: 0 */
}

/* --- writer ------------------------------------------------------------------ */

/* The BEGIN waits for the transaction's first statement (w_exec), or goes
 * with the rows and the COMMIT in one pipeline (pg_flush_commit): a group
 * of events is one round trip. A connection that broke while idle (a
 * server restart, a failover) has the server's goodbye waiting in its
 * socket: read now, without a round trip, it is found and made again, so
 * that the first group after a restart is not refused. */
static int pg_begin(struct store_backend *b)
{
    int err = w_ready(b);
    b->npend = 0;
    b->begun = 0;
    if (err == STORE_OK && (!PQconsumeInput(b->w) || PQstatus(b->w) != CONNECTION_OK))
        err = w_ready(b);
    b->in_tx = err == STORE_OK;
    return err;
}

static int pg_flush(struct store_backend *b, int *own);

/* COMMIT answers "ROLLBACK" for a transaction that had failed: that is no
 * commit, whatever its status says. */
static int pg_commit(struct store_backend *b)
{
    PGresult *r = NULL;
    int own, err = pg_flush(b, &own);
    if (err != STORE_OK) {
        b->in_tx = 0;
        return err;
    }
    if (!b->begun) { /* nothing was sent: nothing to commit */
        b->in_tx = 0;
        return STORE_OK;
    }
    err = w_exec(b, PQ_COMMIT, NULL, &r, NULL);
    if (err == STORE_OK && strcmp(PQcmdStatus(r), "COMMIT") != 0) {
        snprintf(b->errbuf, sizeof b->errbuf, "COMMIT answered %s", PQcmdStatus(r));
        err = STORE_ERR_IO;
    }
    PQclear(r);
    b->in_tx = 0;
    return err;
}

static void pg_rollback(struct store_backend *b)
{
    b->npend = 0;
    if (b->in_tx && b->begun && PQstatus(b->w) == CONNECTION_OK &&
        PQtransactionStatus(b->w) != PQTRANS_IDLE)
        (void)w_exec(b, PQ_ROLLBACK, NULL, NULL, NULL);
    b->in_tx = b->begun = 0;
}

static int pg_savepoint(struct store_backend *b)
{
    return w_exec(b, PQ_SAVEPOINT, NULL, NULL, NULL);
}

static int pg_release(struct store_backend *b)
{
    return w_exec(b, PQ_RELEASE, NULL, NULL, NULL);
}

static int pg_rollback_to(struct store_backend *b)
{
    b->npend = 0;
    return w_exec(b, PQ_ROLLBACK_TO, NULL, NULL, NULL);
}

/* Defer ev to the next flush (checked for its owner now). */
static int writer_event(struct store_backend *b, const struct store_event *ev, int *own)
{
    if (fence(b, ev->exp, own) != STORE_OK)
        return STORE_ERR_NOTOWNER;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    if (buf_grow((void **)&b->pend, &b->cappend, b->npend + 1, sizeof *b->pend, 64) != 0)
        return STORE_ERR_NOMEM;
    b->pend[b->npend++] = ev;
    return STORE_OK;
}

/* One event's parameters (PQ_EVENT_INSERT). */
static void event_params(struct params *p, const struct store_event *ev)
{
    p_i64(p, ev->exp);
    p_i64(p, ev->seq);
    p_i64(p, ev->kind);
    p_i64(p, ev->bandit);
    p_i64(p, ev->arm);
    p_i64(p, (int64_t)ev->flags);
    p_dbl(p, ev->value);
    p_opt_i64(p, ev->ref);
    p_i64(p, ev->ts_ms);
    p_opt_i64(p, ev->expires_ms);
    p_text(p, ev->unit);
    p_text(p, ev->text);
    p_text(p, ev->actor);
    p_text(p, ev->request_id);
    p_text(p, ev->chain);
}

/* An element of a text array literal: NULL, or the string quoted. */
static void array_text(struct buf *a, const char *v)
{
    if (v == NULL) {
        buf_puts(a, "NULL");
        return;
    }
    buf_put(a, "\"", 1);
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            buf_put(a, "\\", 1);
        buf_put(a, c, 1);
    }
    buf_put(a, "\"", 1);
}

/* The deferred events (npend > 0) as one statement: *q and p, one event's
 * row as it is, several as one INSERT … SELECT FROM unnest(arrays) whose
 * array literals are built in col (buf_free each when npend > 1). */
static int pend_statement(const struct store_backend *b, enum pq *q, struct params *p,
                          struct buf col[EVENT_NCOLS])
{
    int err = STORE_OK;

    if (b->npend == 1) {
        *q = PQ_EVENT_INSERT;
        event_params(p, b->pend[0]);
        return STORE_OK;
    }
    *q = PQ_EVENT_INSERT_MANY;
    for (int c = 0; c < EVENT_NCOLS; c++) {
        buf_init(&col[c], 0);
        buf_put(&col[c], "{", 1);
    }
    for (size_t i = 0; i < b->npend; i++) {
        const struct store_event *ev = b->pend[i];
        const char *sep = i ? "," : "";
        buf_printf(&col[0], "%s%lld", sep, (long long)ev->exp);
        buf_printf(&col[1], "%s%lld", sep, (long long)ev->seq);
        buf_printf(&col[2], "%s%d", sep, ev->kind);
        buf_printf(&col[3], "%s%d", sep, (int)ev->bandit);
        buf_printf(&col[4], "%s%d", sep, (int)ev->arm);
        buf_printf(&col[5], "%s%lld", sep, (long long)ev->flags);
        if (isnan(ev->value))
            buf_printf(&col[6], "%sNULL", sep);
        else
            buf_printf(&col[6], "%s%.17g", sep, ev->value);
        if (ev->ref == 0)
            buf_printf(&col[7], "%sNULL", sep);
        else
            buf_printf(&col[7], "%s%lld", sep, (long long)ev->ref);
        buf_printf(&col[8], "%s%lld", sep, (long long)ev->ts_ms);
        if (ev->expires_ms == 0)
            buf_printf(&col[9], "%sNULL", sep);
        else
            buf_printf(&col[9], "%s%lld", sep, (long long)ev->expires_ms);
        buf_puts(&col[10], sep);
        array_text(&col[10], ev->unit);
        buf_puts(&col[11], sep);
        array_text(&col[11], ev->text);
        buf_puts(&col[12], sep);
        array_text(&col[12], ev->actor);
        buf_puts(&col[13], sep);
        array_text(&col[13], ev->request_id);
        buf_puts(&col[14], sep);
        array_text(&col[14], ev->chain);
    }
    for (int c = 0; c < EVENT_NCOLS; c++) {
        buf_put(&col[c], "}", 1);
        if (col[c].failed)
            err = STORE_ERR_NOMEM;
        p->v[p->n++] = col[c].p;
    }
    return err;
}

static void pend_done(struct store_backend *b, enum pq q, struct buf col[EVENT_NCOLS])
{
    if (q == PQ_EVENT_INSERT_MANY)
        for (int c = 0; c < EVENT_NCOLS; c++)
            buf_free(&col[c]);
    b->npend = 0;
}

/* Send the deferred events now. */
static int pg_flush(struct store_backend *b, int *own)
{
    struct buf col[EVENT_NCOLS];
    struct params p = {.n = 0};
    enum pq q = PQ_EVENT_INSERT;
    int err;

    *own = 0;
    if (b->npend == 0)
        return STORE_OK;
    err = pend_statement(b, &q, &p, col);
    if (err == STORE_OK)
        err = w_exec(b, q, &p, NULL, own);
    pend_done(b, q, col);
    return err;
}

/* The writer's connection after a pipeline that did not end as it should:
 * dropped, so that the next transaction starts on a new session (which
 * owns nothing until it claims again: fencing as after any lost
 * connection). */
static void w_drop(struct store_backend *b)
{
    PQfinish(b->w);
    b->w = NULL;
    b->w_prepared = 0;
    owned_clear(b);
}

/* The deferred events and the COMMIT (with the BEGIN, when no statement
 * sent it yet) in one pipeline: one round trip for the whole group. The
 * results are read up to the pipeline's sync: the first failure decides
 * (*own: the rows' data, as pg_flush's), the rest answer "aborted"; the
 * commit counts only when the last statement answered COMMIT (a failed
 * transaction answers ROLLBACK). A connection lost meanwhile is a failure
 * whose outcome is unknown, like a lost COMMIT's (commit_failed reloads). */
static int pg_flush_commit(struct store_backend *b, int *own)
{
    struct buf col[EVENT_NCOLS];
    struct params p = {.n = 0};
    enum pq q = PQ_EVENT_INSERT;
    int err, committed = 0, synced = 0;

    *own = 0;
    if (b->npend == 0)
        return pg_commit(b);
    err = pend_statement(b, &q, &p, col);
    if (err != STORE_OK) {
        pend_done(b, q, col);
        return err;
    }
    if (!PQenterPipelineMode(b->w)) {
        snprintf(b->errbuf, sizeof b->errbuf, "pipeline: %s", PQerrorMessage(b->w));
        pend_done(b, q, col);
        return STORE_ERR_FULL;
    }
    int sent = (b->begun ||
                PQsendQueryPrepared(b->w, pg_queries[PQ_BEGIN].name, 0, NULL, NULL, NULL, 0)) &&
               PQsendQueryPrepared(b->w, pg_queries[q].name, p.n, p.v, NULL, NULL, 0) &&
               PQsendQueryPrepared(b->w, pg_queries[PQ_COMMIT].name, 0, NULL, NULL, NULL, 0) &&
               PQpipelineSync(b->w);
    b->begun = 1;
    pend_done(b, q, col);
    if (!sent) {
        err = STORE_ERR_FULL;
        snprintf(b->errbuf, sizeof b->errbuf, "%s", PQerrorMessage(b->w));
    }
    /* each statement's results end with a NULL; the sync's is the last */
    while (sent && !synced) {
        PGresult *r = PQgetResult(b->w);
        if (r == NULL) {
            if (PQstatus(b->w) != CONNECTION_OK)
                break;
            continue;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            synced = 1;
        } else if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            committed = strcmp(PQcmdStatus(r), "COMMIT") == 0;
        } else if (st != PGRES_PIPELINE_ABORTED && err == STORE_OK) {
            err = store_err_from_pg(b->w, r, own);
            snprintf(b->errbuf, sizeof b->errbuf, "%s", PQresultErrorMessage(r));
            b->errbuf[strcspn(b->errbuf, "\n")] = '\0';
        }
        PQclear(r);
    }
    if (!synced || !PQexitPipelineMode(b->w)) {
        if (err == STORE_OK)
            snprintf(b->errbuf, sizeof b->errbuf, "pipeline: %s", PQerrorMessage(b->w));
        err = err == STORE_OK ? STORE_ERR_FULL : err;
        *own = 0;
        w_drop(b);
        b->in_tx = 0;
        return err;
    }
    if (err == STORE_OK && !committed) {
        snprintf(b->errbuf, sizeof b->errbuf, "COMMIT did not commit");
        err = STORE_ERR_IO;
    }
    if (err == STORE_OK)
        b->in_tx = 0;
    return err;
}

/* Append row to the audit log (store.h) after its last record, under
 * the table's lock. */
static int writer_audit(struct store_backend *b, struct store_audit_row *row, int *own)
{
    struct params p = {.n = 0};
    PGresult *r = NULL;
    char prev[DIGEST_SHA256_HEX + 1] = STORE_AUDIT_GENESIS, chain[DIGEST_SHA256_HEX + 1];
    int err = w_exec(b, PQ_AUDIT_LOCK, NULL, NULL, own);
    if (err == STORE_OK)
        err = w_exec(b, PQ_AUDIT_LAST, NULL, &r, own);
    if (err != STORE_OK)
        return err;
    row->seq = 1;
    if (PQntuples(r) == 1) {
        row->seq = col_i64(r, 0, 0) + 1;
        snprintf(prev, sizeof prev, "%s", col_text(r, 0, 1) ? col_text(r, 0, 1) : "");
    }
    PQclear(r);
    if (store_audit_next(prev, row, chain) != 0) {
        *own = 1;
        return STORE_ERR_IO;
    }
    p_i64(&p, row->seq);
    p_i64(&p, row->ts_ms);
    p_i64(&p, row->kind);
    p_text(&p, row->subject);
    p_text(&p, row->detail);
    p_text(&p, row->actor);
    p_text(&p, row->request_id);
    p_text(&p, chain);
    return w_exec(b, PQ_AUDIT_INSERT, &p, NULL, own);
}

static int writer_exp_create(struct store_backend *b, const struct store_op *op, int *own)
{
    struct params p = {.n = 0};
    PGresult *r = NULL;
    p_text(&p, op->id);
    p_text(&p, op->config_json);
    p_i64(&p, op->created_ms);
    int err = w_exec(b, PQ_EXP_INSERT, &p, &r, own);
    int64_t rowid = err == STORE_OK && PQntuples(r) == 1 ? col_i64(r, 0, 0) : 0;
    PQclear(r);
    if (err == STORE_OK && op->rowid_out)
        *op->rowid_out = rowid;
    /* its creator owns it: a new rowid, whose lock nobody can hold */
    if (err == STORE_OK) {
        struct params lp = {.n = 0};
        lock_params(&lp, rowid);
        err = w_exec(b, PQ_LOCK, &lp, NULL, own);
        if (err == STORE_OK && owned_add(b, rowid) != 0)
            err = STORE_ERR_NOMEM;
    }
    if (err == STORE_OK) {
        char buf[STORE_AUDIT_BUF];
        struct store_audit_row row;
        err = store_audit_of_create(op, &row, buf, sizeof buf) == 0 ? writer_audit(b, &row, own)
                                                                    : STORE_ERR_IO;
    }
    return err;
}

/* --- snapshots (store.h): the statements are pg_queries' PQ_SNAP_* ---------- */

/* Run sql with p (lengths and formats: NULL for text parameters) on the
 * writer's connection, in the group's transaction (its BEGIN first when no
 * statement sent it yet, as w_exec does). */
static int w_exec_sql(struct store_backend *b, const char *sql, const struct params *p,
                      const int *lengths, const int *formats, int *own)
{
    if (b->in_tx && !b->begun) {
        b->begun = 1;
        int err = w_exec(b, PQ_BEGIN, NULL, NULL, own);
        if (err != STORE_OK)
            return err;
    }
    PGresult *r = PQexecParams(b->w, sql, p->n, NULL, p->v, lengths, formats, 0);
    return w_result(b, r, NULL, own);
}

static int snapshots_delete(struct store_backend *b, int64_t exp, int *own)
{
    struct params p = {.n = 0};
    p_i64(&p, exp);
    return w_exec(b, PQ_SNAP_DELETE, &p, NULL, own);
}

static int writer_snapshot(struct store_backend *b, const struct store_snapshot *sn, int *own)
{
    struct params p = {.n = 0};
    int lengths[8] = {0}, formats[8] = {0};
    if (sn == NULL || sn->len > INT_MAX) {
        *own = 1;
        return STORE_ERR_IO;
    }
    if (fence(b, sn->exp, own) != STORE_OK)
        return STORE_ERR_NOTOWNER;
    p_i64(&p, sn->exp);
    p_i64(&p, sn->seq);
    p_i64(&p, sn->format);
    p_text(&p, sn->software);
    p_text(&p, sn->design);
    p_text(&p, sn->checksum);
    p_i64(&p, sn->created_ms);
    p_text(&p, sn->state); /* binary: the bytes as they are */
    lengths[7] = (int)sn->len;
    formats[7] = 1;
    int err = w_exec_sql(b, pg_queries[PQ_SNAP_INSERT].sql, &p, lengths, formats, own);
    if (err != STORE_OK)
        return err;
    /* Thin the older ones (store_snapshots_keep; at most one more than it
     * leaves: seq[] has room to spare). */
    int64_t seq[2 * STORE_SNAPSHOTS_MAX];
    unsigned char keep[2 * STORE_SNAPSHOTS_MAX];
    size_t n = 0;
    PGresult *r = NULL;
    struct params e = {.n = 0};
    p_i64(&e, sn->exp);
    err = w_exec(b, PQ_SNAP_SEQS, &e, &r, own);
    if (err != STORE_OK)
        return err;
    for (int i = 0; i < PQntuples(r) && n < sizeof seq / sizeof seq[0]; i++)
        seq[n++] = col_i64(r, i, 0);
    PQclear(r);
    store_snapshots_keep(seq, n, keep);
    for (size_t i = 0; i < n && err == STORE_OK; i++)
        if (!keep[i]) {
            struct params d = {.n = 0};
            p_i64(&d, sn->exp);
            p_i64(&d, seq[i]);
            err = w_exec(b, PQ_SNAP_DROP, &d, NULL, own);
        }
    return err;
}

/* The row goes now; its log is listed for the purge (as in sqlite.c). */
static int writer_exp_delete(struct store_backend *b, const struct store_op *op, int *own)
{
    struct params p = {.n = 0};
    PGresult *r = NULL;
    int64_t exp = op->exp;
    if (fence(b, exp, own) != STORE_OK)
        return STORE_ERR_NOTOWNER;
    p_i64(&p, exp);
    /* The audit log's record: the log's last row as this transaction sees
     * it (pg_write_op flushed the deferred events before this op). */
    char chain[DIGEST_SHA256_HEX + 1] = "";
    int64_t last = 0;
    int err = w_exec(b, PQ_LAST_EVENT, &p, &r, own);
    if (err != STORE_OK)
        return err;
    if (PQntuples(r) == 1) {
        last = col_i64(r, 0, 0);
        snprintf(chain, sizeof chain, "%s", col_text(r, 0, 1) ? col_text(r, 0, 1) : "");
    }
    PQclear(r);
    r = NULL;
    err = w_exec(b, PQ_EXP_DELETE, &p, &r, own);
    if (err == STORE_OK && changed(r) == 0) {
        err = STORE_ERR_NOTFOUND;
        *own = 1;
    }
    PQclear(r);
    if (err == STORE_OK)
        err = w_exec(b, PQ_PURGE_ADD, &p, NULL, own);
    if (err == STORE_OK)
        err = snapshots_delete(b, exp, own);
    if (err != STORE_OK)
        return err;
    char buf[STORE_AUDIT_BUF];
    struct store_audit_row row;
    if (store_audit_of_delete(op, last, chain, &row, buf, sizeof buf) != 0) {
        *own = 1;
        return STORE_ERR_IO;
    }
    return writer_audit(b, &row, own);
}

/* A write that leaves nothing behind but commits like any other. */
static int writer_probe(struct store_backend *b, int *own)
{
    struct params p = {.n = 0};
    p_i64(&p, 0);
    int err = w_exec(b, PQ_PURGE_ADD, &p, NULL, own);
    if (err == STORE_OK)
        err = w_exec(b, PQ_PURGE_DONE, &p, NULL, own);
    return err;
}

static int writer_outbox(struct store_backend *b, const struct store_op *op, int *own)
{
    const struct store_delivery *d = op->dl;
    struct params p = {.n = 0};

    if (d == NULL) {
        *own = 1;
        return STORE_ERR_IO;
    }
    switch (op->kind) {
    case STORE_OP_OUTBOX:
        if (fence(b, d->exp, own) != STORE_OK)
            return STORE_ERR_NOTOWNER;
        p_i64(&p, d->exp);
        p_text(&p, d->exp_id);
        p_text(&p, d->event_id);
        p_text(&p, d->type);
        p_text(&p, d->url);
        p_text(&p, d->secret);
        p_text(&p, d->body);
        p_i64(&p, d->created_ms);
        p_i64(&p, d->next_ms);
        return w_exec(b, PQ_OUTBOX_INSERT, &p, NULL, own);
    case STORE_OP_OUTBOX_UPDATE:
        p_i64(&p, d->id);
        p_i64(&p, d->state);
        p_i64(&p, d->attempts);
        p_i64(&p, d->next_ms);
        p_opt_i64(&p, d->last_ms);
        p_opt_i64(&p, d->last_status);
        p_text(&p, d->last_error);
        p_i64(&p, PG_LOCK_CLASS);
        /* a row pruned meanwhile is no error: nothing left to record; nor
         * one whose experiment another daemon took over meanwhile */
        return w_exec(b, PQ_OUTBOX_UPDATE, &p, NULL, own);
    default: /* STORE_OP_OUTBOX_PRUNE */
        p_i64(&p, d->last_ms);
        return w_exec(b, PQ_OUTBOX_PRUNE, &p, NULL, own);
    }
}

/* Take exp's lock on this session (store_claim): free, or held by a
 * session whose daemon's heartbeat is older than STORE_LEASE_MS (or by
 * no daemon's writer at all), which is then terminated. */
static int writer_claim(struct store_backend *b, const struct store_op *op, int *own)
{
    struct params p = {.n = 0}, lp = {.n = 0};
    PGresult *r = NULL;
    int err;

    if (owned_has(b, op->exp))
        return STORE_OK;
    p_i64(&p, op->exp);
    err = w_exec(b, PQ_EXISTS, &p, &r, own);
    if (err == STORE_OK && PQntuples(r) == 0) {
        *own = 1;
        err = STORE_ERR_NOTFOUND;
    }
    PQclear(r);
    lock_params(&lp, op->exp);
    for (int tries = 0; err == STORE_OK; tries++) {
        err = w_exec(b, PQ_LOCK_TRY, &lp, &r, own);
        int got = err == STORE_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        if (err != STORE_OK)
            break;
        if (got)
            return owned_add(b, op->exp) == 0 ? STORE_OK : STORE_ERR_NOMEM;
        err = w_exec(b, PQ_LOCK_HOLDER, &lp, &r, own);
        if (err != STORE_OK)
            break;
        int holder = PQntuples(r) == 1 ? (int)col_i64(r, 0, 0) : 0;
        int64_t age = PQntuples(r) == 1 ? col_i64(r, 0, 2) : -1;
        if (PQntuples(r) == 1 && op->owner_out != NULL && op->owner_len > 0) {
            snprintf(op->owner_out, op->owner_len, "%s",
                     PQgetisnull(r, 0, 1) ? "" : PQgetvalue(r, 0, 1));
            /* it goes into a response header: nothing but printable ASCII */
            for (char *c = op->owner_out; *c; c++)
                if (*c < 0x21 || *c > 0x7e)
                    *c = '?';
        }
        PQclear(r);
        r = NULL;
        if ((age >= 0 && age < STORE_LEASE_MS) || tries >= PG_TAKEOVER_TRIES) {
            *own = 1;
            return STORE_ERR_NOTOWNER; /* a live owner (or one that will not let go) */
        }
        if (holder > 0 && tries == 0) {
            /* orphaned: its session goes, and its locks with it; a daemon
             * frozen past this point finds its connection gone when it
             * wakes, and commits nothing more */
            struct params tp = {.n = 0};
            p_i64(&tp, holder);
            log_warn("store: taking over experiment %lld from %s (heartbeat %s): ending its "
                     "session (server process %d)",
                     (long long)op->exp, op->owner_out && op->owner_out[0] ? op->owner_out : "?",
                     age < 0 ? "none" : "stale", holder);
            err = w_exec(b, PQ_TERMINATE, &tp, NULL, own);
        }
        clock_sleep_ms(50);
    }
    return err;
}

static int pg_write_op(struct store_backend *b, const struct store_op *op, int *own)
{
    *own = 0;
    /* the rows keep their order: what was deferred goes first */
    if (op->kind != STORE_OP_EVENT && b->npend > 0) {
        int err = pg_flush(b, own);
        if (err != STORE_OK)
            return err;
    }
    switch (op->kind) {
    case STORE_OP_EXP_CREATE:
        return writer_exp_create(b, op, own);
    case STORE_OP_EXP_DELETE:
        return writer_exp_delete(b, op, own);
    case STORE_OP_EVENT:
        return writer_event(b, &op->ev, own);
    case STORE_OP_PROBE:
        return writer_probe(b, own);
    case STORE_OP_CLAIM:
        return writer_claim(b, op, own);
    case STORE_OP_AUDIT: {
        if (op->audit == NULL) {
            *own = 1;
            return STORE_ERR_IO;
        }
        struct store_audit_row row = *op->audit;
        return writer_audit(b, &row, own);
    }
    case STORE_OP_SNAPSHOT:
        return writer_snapshot(b, op->snap, own);
    case STORE_OP_OUTBOX:
    case STORE_OP_OUTBOX_UPDATE:
    case STORE_OP_OUTBOX_PRUNE:
        return writer_outbox(b, op, own);
    default:
        *own = 1;
        return STORE_ERR_IO;
    }
}

static int pg_write_key(struct store_backend *b, const struct store_key_op *k, int *own)
{
    struct params p = {.n = 0};
    PGresult *r = NULL;
    int64_t id = k->rowid;
    int err = pg_flush(b, own);

    if (err == STORE_OK)
        err = w_exec(b, PQ_KEY_NOTIFY, NULL, NULL, own);
    if (err != STORE_OK)
        return err;
    if (k->kind == STORE_KEY_OP_REVOKE) {
        p_i64(&p, k->rowid);
        err = w_exec(b, PQ_KEY_REVOKE, &p, &r, own);
        if (err == STORE_OK && changed(r) == 0) {
            err = STORE_ERR_NOTFOUND;
            *own = 1;
        }
    } else {
        p_text(&p, k->name);
        p_text(&p, k->scopes);
        p_text(&p, k->hash);
        p_i64(&p, k->created_ms);
        p_text(&p, k->experiments);
        err = w_exec(b, PQ_KEY_INSERT, &p, &r, own);
        if (err == STORE_OK && PQntuples(r) == 1)
            id = col_i64(r, 0, 0);
        if (err == STORE_OK && k->rowid_out)
            *k->rowid_out = id;
    }
    PQclear(r);
    if (err == STORE_OK) {
        char buf[STORE_AUDIT_BUF];
        struct store_audit_row row;
        err = store_audit_of_key(k, id, &row, buf, sizeof buf) == 0 ? writer_audit(b, &row, own)
                                                                    : STORE_ERR_IO;
    }
    return err;
}

/* One purge step in its own transaction (backend.h). */
static int pg_purge_step(struct store_backend *b)
{
    struct params p = {.n = 0};
    PGresult *r = NULL;
    int64_t exp = 0;
    int err = pg_begin(b);

    if (err == STORE_OK)
        err = w_exec(b, PQ_PURGE_NEXT, NULL, &r, NULL);
    if (err == STORE_OK && PQntuples(r) == 1)
        exp = col_i64(r, 0, 0);
    PQclear(r);
    r = NULL;
    if (err == STORE_OK && exp != 0) {
        p_i64(&p, exp);
        err = w_exec(b, PQ_PURGE_CHUNK, &p, &r, NULL);
        if (err == STORE_OK && changed(r) == 0)
            err = w_exec(b, PQ_PURGE_DONE, &p, NULL, NULL);
        PQclear(r);
    }
    if (err == STORE_OK)
        err = pg_commit(b);
    if (err != STORE_OK)
        pg_rollback(b);
    return err != STORE_OK ? -1 : exp != 0;
}

static const char *pg_errmsg(struct store_backend *b)
{
    return b->errbuf;
}

static const char *pg_describe(struct store_backend *b)
{
    return b->shown;
}

/* --- readers ----------------------------------------------------------------- */

static void reader_free(struct store_reader *link)
{
    struct reader *r = (struct reader *)link;
    PQfinish(r->c);
    free(r);
}

/* This thread's reader, connected (again, if its connection broke outside
 * a streaming read). The result is borrowed. */
static int reader_get(struct store_backend *b, struct reader **out)
{
    struct reader *r = (struct reader *)store_readers_mine(&b->readers);

    if (r == NULL) {
        r = calloc(1, sizeof *r);
        if (r == NULL)
            return STORE_ERR_NOMEM;
        if (store_readers_adopt(&b->readers, &r->link) != STORE_OK)
            return STORE_ERR_NOMEM; /* r freed */
    }
    if (r->c == NULL || (r->depth == 0 && PQstatus(r->c) != CONNECTION_OK)) {
        char err[256];
        PQfinish(r->c);
        memset(r->prepared, 0, sizeof r->prepared);
        r->c = pg_connect(b, err, sizeof err);
        if (r->c == NULL) {
            log_warn("store: %s", err);
            return STORE_ERR_FULL;
        }
    }
    *out = r;
    return STORE_OK;
}

/* Run read q (prepared on first use), or with q NULL the unprepared
 * statement sql, with p on this thread's connection; *res is new on
 * success. A connection found broken (a server restart, a failover) is
 * made again and the read retried once: a read changes nothing. */
static int r_exec(struct store_backend *b, const enum pq *q, const char *sql,
                  const struct params *p, PGresult **res)
{
    for (int attempt = 0;; attempt++) {
        struct reader *r;
        int err = reader_get(b, &r);
        if (err != STORE_OK)
            return err;
        if (q != NULL && !r->prepared[*q]) {
            err = prepare(r->c, *q);
            if (err == STORE_OK)
                r->prepared[*q] = 1;
        }
        if (err == STORE_OK) {
            int n = p ? p->n : 0;
            const char *const *v = p ? p->v : NULL;
            PGresult *x = q != NULL ? PQexecPrepared(r->c, pg_queries[*q].name, n, v, NULL, NULL, 0)
                                    : PQexecParams(r->c, sql, n, NULL, v, NULL, NULL, 0);
            if (PQresultStatus(x) == PGRES_TUPLES_OK) {
                *res = x;
                return STORE_OK;
            }
            err = store_err_from_pg(r->c, x, NULL);
            PQclear(x);
        }
        if (attempt > 0 || r->depth > 0 || PQstatus(r->c) == CONNECTION_OK)
            return err;
    }
}

static int r_query(struct store_backend *b, enum pq q, const struct params *p, PGresult **res)
{
    return r_exec(b, &q, NULL, p, res);
}

/* A streaming read: q's rows through a cursor, PG_FETCH at a time, each
 * given to row(ctx, res, i); a non-zero return stops and is returned. The
 * outermost one opens the snapshot (REPEATABLE READ) that nested reads
 * share. */
static int r_stream(struct store_backend *b, enum pq q, const struct params *p,
                    int (*row)(void *ctx, const PGresult *res, int i), void *ctx)
{
    struct reader *r;
    char sql[1024], fetch[64], cursor[16];
    int err = reader_get(b, &r), ret = STORE_OK, top;

    if (err != STORE_OK)
        return err;
    top = r->depth == 0;
    if (top &&
        (err = run(r->c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", NULL)) != STORE_OK)
        return err;
    r->depth++;
    snprintf(cursor, sizeof cursor, "c%d", r->depth);
    snprintf(sql, sizeof sql, "DECLARE %s NO SCROLL CURSOR FOR %s", cursor, pg_queries[q].sql);
    snprintf(fetch, sizeof fetch, "FETCH " PG_FETCH " FROM %s", cursor);
    PGresult *x = PQexecParams(r->c, sql, p ? p->n : 0, NULL, p ? p->v : NULL, NULL, NULL, 0);
    if (PQresultStatus(x) != PGRES_COMMAND_OK)
        err = store_err_from_pg(r->c, x, NULL);
    PQclear(x);
    while (err == STORE_OK && ret == 0) {
        x = PQexec(r->c, fetch);
        if (PQresultStatus(x) != PGRES_TUPLES_OK) {
            err = store_err_from_pg(r->c, x, NULL);
            PQclear(x);
            break;
        }
        int n = PQntuples(x);
        for (int i = 0; i < n && ret == 0; i++)
            ret = row(ctx, x, i);
        PQclear(x);
        if (n == 0)
            break;
    }
    if (err == STORE_OK) {
        char close[32];
        snprintf(close, sizeof close, "CLOSE %s", cursor);
        err = run(r->c, close, NULL);
    }
    r->depth--;
    if (top) {
        int end = run(r->c, err == STORE_OK ? "COMMIT" : "ROLLBACK", NULL);
        if (err == STORE_OK)
            err = end;
    }
    return err != STORE_OK ? err : ret;
}

struct exp_ctx {
    int (*cb)(void *arg, const struct store_experiment_row *row);
    void *arg;
};

static int exp_row(void *ctx, const PGresult *res, int i)
{
    const struct exp_ctx *c = ctx;
    struct store_experiment_row row = {.rowid = col_i64(res, i, 0),
                                       .id = col_text(res, i, 1),
                                       .config_json = col_text(res, i, 2),
                                       .created_ms = col_i64(res, i, 3)};
    return c->cb(c->arg, &row);
}

static int pg_find_experiment(struct store_backend *b, const char *id,
                              int (*cb)(void *arg, const struct store_experiment_row *row),
                              void *arg)
{
    struct params p = {.n = 0};
    PGresult *res = NULL;
    p_text(&p, id);
    int ret = r_query(b, PQ_EXPERIMENT_BY_ID, &p, &res);
    if (ret == STORE_OK && PQntuples(res) == 0)
        ret = STORE_ERR_NOTFOUND;
    if (ret == STORE_OK && cb != NULL)
        ret = exp_row(&(struct exp_ctx){cb, arg}, res, 0);
    PQclear(res);
    return ret;
}

static int pg_load_experiments(struct store_backend *b,
                               int (*cb)(void *arg, const struct store_experiment_row *row),
                               void *arg)
{
    struct exp_ctx c = {cb, arg};
    return r_stream(b, PQ_EXPERIMENTS, NULL, exp_row, &c);
}

struct ev_ctx {
    int (*cb)(void *arg, const struct store_event *ev);
    void *arg;
};

static int ev_row(void *ctx, const PGresult *res, int i)
{
    const struct ev_ctx *c = ctx;
    struct store_event ev;
    event_from_row(res, i, &ev);
    return c->cb(c->arg, &ev);
}

static int pg_load_events(struct store_backend *b, int64_t exp, int64_t after_seq,
                          int (*cb)(void *arg, const struct store_event *ev), void *arg)
{
    struct params p = {.n = 0};
    struct ev_ctx c = {cb, arg};
    p_i64(&p, exp);
    p_i64(&p, after_seq);
    return r_stream(b, PQ_EVENTS, &p, ev_row, &c);
}

/* A single-row event read into out; strings borrowed from *res (new: the
 * caller clears it). */
static int read_event(struct store_backend *b, enum pq q, const struct params *p,
                      struct store_event *out, PGresult **res)
{
    int err = r_query(b, q, p, res);
    if (err != STORE_OK)
        return err;
    if (PQntuples(*res) == 0)
        return STORE_ERR_NOTFOUND;
    event_from_row(*res, 0, out);
    return STORE_OK;
}

static int pg_find_assignment(struct store_backend *b, int64_t exp, int64_t seq,
                              struct store_event *out, char *buf, size_t buflen)
{
    struct params p = {.n = 0};
    PGresult *res = NULL;
    p_i64(&p, exp);
    p_i64(&p, seq);
    int err = read_event(b, PQ_ASSIGNMENT, &p, out, &res);
    if (err == STORE_OK) {
        /* the row's strings die with the result: copy them out */
        store_event_copy_strings(out, buf, buflen);
    }
    PQclear(res);
    return err;
}

static int pg_find_outcome_kind(struct store_backend *b, int64_t exp, int64_t ref, int kind,
                                struct store_event *out, char *buf, size_t buflen)
{
    struct params p = {.n = 0};
    PGresult *res = NULL;
    p_i64(&p, exp);
    p_i64(&p, ref);
    p_i64(&p, kind);
    int err = read_event(b, PQ_OUTCOME, &p, out, &res);
    if (err == STORE_OK) {
        /* the result's strings die with it: the unit copied out (a UNIT
         * event's), or dropped */
        if (buf != NULL)
            snprintf(buf, buflen, "%s", out->unit != NULL ? out->unit : "");
        out->unit = buf;
        out->text = NULL;
        out->actor = out->request_id = out->chain = NULL;
    }
    PQclear(res);
    return err;
}

static int pg_find_unit_in(struct store_backend *b, int64_t exp, const char *unit, int bandit,
                           struct store_event *out)
{
    struct params p = {.n = 0};
    PGresult *res = NULL;
    p_i64(&p, exp);
    p_text(&p, unit);
    p_i64(&p, bandit);
    int err = read_event(b, PQ_UNIT, &p, out, &res);
    if (err == STORE_OK) {
        out->unit = unit; /* the caller's string, equal to the stored one */
        out->text = NULL;
        out->actor = out->request_id = out->chain = NULL;
    }
    PQclear(res);
    return err;
}

static int pg_last_seq(struct store_backend *b, int64_t exp, int64_t *out)
{
    struct params p = {.n = 0};
    PGresult *res = NULL;
    p_i64(&p, exp);
    int err = r_query(b, PQ_LAST_SEQ, &p, &res);
    if (err == STORE_OK)
        *out = PQntuples(res) == 1 ? col_i64(res, 0, 0) : 0; /* no event: 0 */
    PQclear(res);
    return err;
}

/* The latest snapshot of exp below `before` (PQ_SNAPSHOTS: the primary key
 * finds it) to cb. */
static int pg_load_snapshot(struct store_backend *b, int64_t exp, int64_t before,
                            int (*cb)(void *arg, const struct store_snapshot *sn), void *arg)
{
    struct params p = {.n = 0};
    PGresult *res = NULL;
    p_i64(&p, exp);
    p_i64(&p, before);
    int ret = r_query(b, PQ_SNAPSHOTS, &p, &res);
    if (ret != STORE_OK)
        return ret;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return STORE_ERR_NOTFOUND;
    }
    size_t len = 0;
    unsigned char *bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 7), &len);
    if (bytes == NULL) {
        PQclear(res);
        return STORE_ERR_NOMEM;
    }
    struct store_snapshot sn = {.exp = col_i64(res, 0, 0),
                                .seq = col_i64(res, 0, 1),
                                .format = (int)col_i64(res, 0, 2),
                                .software = col_text(res, 0, 3),
                                .design = col_text(res, 0, 4),
                                .checksum = col_text(res, 0, 5),
                                .created_ms = col_i64(res, 0, 6),
                                .state = bytes,
                                .len = len};
    ret = cb(arg, &sn);
    PQfreemem(bytes);
    PQclear(res);
    return ret;
}

/* Deliveries of a bounded read, each to cb. */
static int outbox_rows(struct store_backend *b, enum pq q, const struct params *p,
                       int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    PGresult *res = NULL;
    struct store_delivery d;
    int ret = r_query(b, q, p, &res);
    for (int i = 0; ret == STORE_OK && i < PQntuples(res); i++) {
        delivery_from_row(res, i, &d);
        ret = cb(arg, &d);
    }
    PQclear(res);
    return ret;
}

static int pg_outbox_pending(struct store_backend *b, int64_t after_id, int limit,
                             int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    struct params p = {.n = 0};
    p_i64(&p, after_id);
    p_i64(&p, limit);
    p_i64(&p, atomic_load(&b->w_pid));
    p_i64(&p, PG_LOCK_CLASS);
    p_text(&p, b->node);
    p_i64(&p, STORE_LEASE_MS);
    return outbox_rows(b, PQ_OUTBOX_PENDING, &p, cb, arg);
}

static int pg_outbox_list(struct store_backend *b, int64_t exp, int64_t before_id, int limit,
                          int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    struct params p = {.n = 0};
    p_i64(&p, exp);
    p_i64(&p, before_id);
    p_i64(&p, limit);
    return outbox_rows(b, PQ_OUTBOX_LIST, &p, cb, arg);
}

static int pg_outbox_depth(struct store_backend *b, int64_t *out)
{
    PGresult *res = NULL;
    int err = r_query(b, PQ_OUTBOX_DEPTH, NULL, &res);
    if (err == STORE_OK)
        *out = PQntuples(res) == 1 ? col_i64(res, 0, 0) : 0;
    PQclear(res);
    return err;
}

static int pg_load_keys(struct store_backend *b,
                        int (*cb)(void *arg, const struct store_key_row *row), void *arg)
{
    PGresult *res = NULL;
    int ret = r_query(b, PQ_KEYS, NULL, &res);
    for (int i = 0; ret == STORE_OK && i < PQntuples(res); i++) {
        struct store_key_row row = {.rowid = col_i64(res, i, 0),
                                    .name = col_text(res, i, 1),
                                    .scopes = col_text(res, i, 2),
                                    .hash = col_text(res, i, 3),
                                    .created_ms = col_i64(res, i, 4),
                                    .revoked = (int)col_i64(res, i, 5),
                                    .experiments = col_text(res, i, 6)};
        ret = cb(arg, &row);
    }
    PQclear(res);
    return ret;
}

static int pg_load_audit(struct store_backend *b,
                         int (*cb)(void *arg, const struct store_audit_row *row), void *arg)
{
    PGresult *res = NULL;
    int ret = r_query(b, PQ_AUDIT, NULL, &res);
    for (int i = 0; ret == STORE_OK && i < PQntuples(res); i++) {
        struct store_audit_row row = {.seq = col_i64(res, i, 0),
                                      .ts_ms = col_i64(res, i, 1),
                                      .kind = (int)col_i64(res, i, 2),
                                      .subject = col_text(res, i, 3),
                                      .detail = col_text(res, i, 4),
                                      .actor = col_text(res, i, 5),
                                      .request_id = col_text(res, i, 6),
                                      .chain = col_text(res, i, 7)};
        ret = cb(arg, &row);
    }
    PQclear(res);
    return ret;
}

/* PostgreSQL has its own tools for this (pg_dump, pg_basebackup); a file
 * copy from here would be neither consistent with them nor restorable. */
static int pg_backup(struct store_backend *b, const char *path, char *err, size_t errlen)
{
    (void)path;
    snprintf(err, errlen,
             "backup: %s is a PostgreSQL database: use pg_dump or pg_basebackup "
             "(docs/operations.md)",
             b->shown);
    return STORE_ERR_IO;
}

/* --- the heartbeat --------------------------------------------------------------- */

/* Wake the heartbeat out of its wait (hnow or hstop just set). */
static void heartbeat_wake(struct store_backend *b)
{
    char c = 1;
    if (write(b->hwake[1], &c, 1) < 0 && errno != EAGAIN)
        log_warn("store: waking the heartbeat: %s", strerror(errno));
}

static void pg_set_advertise(struct store_backend *b, const char *url)
{
    pthread_mutex_lock(&b->hmu);
    snprintf(b->url, sizeof b->url, "%s", url);
    b->hnow = 1; /* others may name it at once */
    pthread_mutex_unlock(&b->hmu);
    heartbeat_wake(b);
}

static uint64_t pg_keys_epoch(struct store_backend *b)
{
    return atomic_load(&b->keys_epoch);
}

/* The heartbeat's connection, made again if it broke, listening on
 * PG_KEYS_CHANNEL; NULL when the server cannot be reached. */
static PGconn *listener(struct store_backend *b, PGconn *c)
{
    char err[256];
    if (c != NULL && PQstatus(c) == CONNECTION_OK)
        return c;
    PQfinish(c);
    c = pg_connect(b, err, sizeof err);
    if (c != NULL && run(c, "LISTEN " PG_KEYS_CHANNEL, NULL) != STORE_OK) {
        PQfinish(c);
        c = NULL;
    }
    /* a key written while nobody listened is heard of this way */
    atomic_fetch_add(&b->keys_epoch, 1);
    return c;
}

/* Count the notifications c received. */
static void heard(struct store_backend *b, PGconn *c)
{
    PGnotify *n;
    while ((n = PQnotifies(c)) != NULL) {
        atomic_fetch_add(&b->keys_epoch, 1);
        PQfreemem(n);
    }
}

/* Until deadline (CLOCK_MONOTONIC ms), a wake (hnow, hstop) or a broken
 * connection, whichever first, counting the notifications that arrive.
 * Returns 1 when c broke (the caller makes it again). */
static int heartbeat_wait(struct store_backend *b, PGconn *c, uint64_t deadline_ms)
{
    for (;;) {
        uint64_t now = clock_mono_ns() / 1000000u;
        if (now >= deadline_ms)
            return 0;
        struct pollfd fds[2] = {{.fd = b->hwake[0], .events = POLLIN},
                                {.fd = c != NULL ? PQsocket(c) : -1, .events = POLLIN}};
        int n = poll(fds, 2, (int)(deadline_ms - now));
        if (n < 0 && errno != EINTR)
            return 0;
        if (n > 0 && (fds[0].revents & POLLIN)) {
            char buf[64];
            while (read(b->hwake[0], buf, sizeof buf) > 0)
                ;
            return 0; /* the caller looks at hnow and hstop */
        }
        if (n > 0 && fds[1].revents != 0) {
            if (!PQconsumeInput(c))
                return 1;
            heard(b, c);
        }
    }
}

static void pg_pause_heartbeat(struct store_backend *b, int paused)
{
    pthread_mutex_lock(&b->hmu);
    b->hpaused = paused != 0;
    pthread_mutex_unlock(&b->hmu);
}

/* Every PG_BEAT_MS: this daemon's row in nodes (address, writer's server
 * process, the server's clock), on a connection of its own, so that a busy
 * or broken writer does not stop it: it says the process runs. A frozen
 * daemon (SIGSTOP, a machine that stalls) stops beating, and after
 * STORE_LEASE_MS other daemons may take its experiments over. */
static void *heartbeat_main(void *arg)
{
    struct store_backend *b = arg;
    PGconn *c = NULL;
    char url[256], pid[16];
    uint64_t next_ms = 0; /* the next beat (CLOCK_MONOTONIC) */

    pthread_mutex_lock(&b->hmu);
    while (!b->hstop) {
        int paused = b->hpaused, now = b->hnow;
        b->hnow = 0;
        snprintf(url, sizeof url, "%s", b->url);
        pthread_mutex_unlock(&b->hmu);
        c = listener(b, c);
        if (c != NULL && !paused && (now || clock_mono_ns() / 1000000u >= next_ms)) {
            snprintf(pid, sizeof pid, "%d", atomic_load(&b->w_pid));
            const char *v[] = {b->node, url, pid};
            PGresult *r = PQexecParams(c, pg_queries[PQ_BEAT].sql, 3, NULL, v, NULL, NULL, 0);
            PQclear(r);
            next_ms = clock_mono_ns() / 1000000u + PG_BEAT_MS;
        }
        if (c != NULL)
            heard(b, c);
        /* no server: try again in a beat's time */
        if (heartbeat_wait(b, c, c != NULL ? next_ms : clock_mono_ns() / 1000000u + PG_BEAT_MS)) {
            PQfinish(c);
            c = NULL;
        }
        pthread_mutex_lock(&b->hmu);
    }
    pthread_mutex_unlock(&b->hmu);
    if (c != NULL && PQstatus(c) == CONNECTION_OK) {
        const char *v[] = {b->node};
        PQclear(PQexecParams(c, pg_queries[PQ_NODE_GONE].sql, 1, NULL, v, NULL, NULL, 0));
    }
    PQfinish(c);
    return NULL;
}

/* --- open and close ---------------------------------------------------------- */

static int pg_claims(const char *target)
{
    return strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0;
}

/* Bring the database to this build's schema, in one transaction under an
 * advisory lock; a newer database is refused untouched. */
static int migrate(struct store_backend *b, char *err, size_t errlen)
{
    PGconn *c = b->w;
    PGresult *r = NULL;
    int version = 0, ret = -1;

    if (pg_migrations[N_PG_MIGRATIONS - 1].version != store_schema_version()) {
        snprintf(err, errlen, "%s: this build's PostgreSQL schema (%d) lags its SQLite one (%d)",
                 b->shown, pg_migrations[N_PG_MIGRATIONS - 1].version, store_schema_version());
        return -1;
    }
    if (run(c, "BEGIN", NULL) != STORE_OK ||
        run(c, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK ")", NULL) != STORE_OK ||
        run(c, "CREATE TABLE IF NOT EXISTS banditd_schema (version integer NOT NULL)", NULL) !=
            STORE_OK)
        goto fail;
    r = PQexec(c, "SELECT max(version) FROM banditd_schema");
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        goto fail;
    version = (int)col_i64(r, 0, 0);
    PQclear(r);
    r = NULL;
    if (version > store_schema_version()) {
        snprintf(err, errlen,
                 "%s: database schema version %d is newer than this build's (%d): "
                 "refusing to open it; use a newer banditd",
                 b->shown, version, store_schema_version());
        run(c, "ROLLBACK", NULL);
        return -1;
    }
    for (size_t i = 0; i < N_PG_MIGRATIONS; i++) {
        char sql[96];
        if (pg_migrations[i].version <= version)
            continue;
        snprintf(sql, sizeof sql,
                 "DELETE FROM banditd_schema; INSERT INTO banditd_schema VALUES (%d)",
                 pg_migrations[i].version);
        if (run(c, pg_migrations[i].sql, NULL) != STORE_OK || run(c, sql, NULL) != STORE_OK)
            goto fail;
    }
    if (run(c, "COMMIT", NULL) != STORE_OK)
        goto fail;
    return 0;
fail:
    snprintf(err, errlen, "%s: migration: %s", b->shown, PQerrorMessage(c));
    err[strcspn(err, "\n")] = '\0';
    PQclear(r);
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
        run(c, "ROLLBACK", NULL);
    return ret;
}

static void pg_close(struct store_backend *b)
{
    if (b == NULL)
        return;
    if (b->hb_started) {
        pthread_mutex_lock(&b->hmu);
        b->hstop = 1;
        pthread_mutex_unlock(&b->hmu);
        heartbeat_wake(b);
        pthread_join(b->hb, NULL);
    }
    if (b->have_hwake) {
        close(b->hwake[0]);
        close(b->hwake[1]);
    }
    if (b->have_hmu)
        pthread_mutex_destroy(&b->hmu);
    free(b->owned);
    free(b->pend);
    store_readers_destroy(&b->readers);
    PQfinish(b->w);
    free(b->target);
    free(b);
}

static struct store_backend *pg_open(const char *target, enum store_sync sync, int *purging,
                                     char *err, size_t errlen)
{
    struct store_backend *b = calloc(1, sizeof *b);
    PGresult *r = NULL;
    int prc;

    (void)sync; /* synchronous_commit stays on: see the top of this file */
    if (b == NULL || (b->target = strdup(target)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    redact(target, b->shown, sizeof b->shown);
    if ((prc = store_readers_init(&b->readers, reader_free)) != 0) {
        snprintf(err, errlen, "%s: %s", b->shown, strerror(prc));
        goto fail;
    }
    if ((prc = pthread_mutex_init(&b->hmu, NULL)) != 0) {
        snprintf(err, errlen, "%s: %s", b->shown, strerror(prc));
        goto fail;
    }
    b->have_hmu = 1;
    if (pipe2(b->hwake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", b->shown, strerror(errno));
        goto fail;
    }
    b->have_hwake = 1;
    {
        unsigned char raw[8];
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
            snprintf(err, errlen, "%s: getrandom: %s", b->shown, strerror(errno));
            goto fail;
        }
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(b->node + 2 * i, sizeof b->node - 2 * i, "%02x", raw[i]);
    }
    if (!PQisthreadsafe()) {
        snprintf(err, errlen, "libpq was built without thread support");
        goto fail;
    }
    b->w = pg_connect(b, err, errlen);
    if (b->w == NULL || migrate(b, err, errlen) != 0)
        goto fail;
    if (w_ready(b) != STORE_OK) {
        snprintf(err, errlen, "%s: %s", b->shown, b->errbuf);
        goto fail;
    }
    /* a purge interrupted by the last close resumes */
    if (w_exec(b, PQ_PURGE_NEXT, NULL, &r, NULL) != STORE_OK) {
        snprintf(err, errlen, "%s: %s", b->shown, b->errbuf);
        goto fail;
    }
    *purging = PQntuples(r) > 0;
    PQclear(r);
    atomic_store(&b->w_pid, PQbackendPID(b->w));
    /* live from the start: the first heartbeat before any read that asks
     * which daemons live (store_outbox_pending) */
    {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", PQbackendPID(b->w));
        const char *v[] = {b->node, "", pid};
        r = PQexecParams(b->w, pg_queries[PQ_BEAT].sql, 3, NULL, v, NULL, NULL, 0);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        r = NULL;
        if (!ok) {
            snprintf(err, errlen, "%s: heartbeat: %s", b->shown, PQerrorMessage(b->w));
            err[strcspn(err, "\n")] = '\0';
            goto fail;
        }
    }
    if ((prc = pthread_create(&b->hb, NULL, heartbeat_main, b)) != 0) {
        snprintf(err, errlen, "%s: %s", b->shown, strerror(prc));
        goto fail;
    }
    b->hb_started = 1;
    return b;
fail:
    pg_close(b);
    return NULL;
}

const struct store_backend_ops store_postgres_ops = {
    .name = "postgresql",
    .shared = 1,
    .set_advertise = pg_set_advertise,
    .pause_heartbeat = pg_pause_heartbeat,
    .keys_epoch = pg_keys_epoch,
    .claims = pg_claims,
    .open = pg_open,
    .close = pg_close,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .savepoint = pg_savepoint,
    .release = pg_release,
    .rollback_to = pg_rollback_to,
    .write_op = pg_write_op,
    .write_key = pg_write_key,
    .flush = pg_flush,
    .flush_commit = pg_flush_commit,
    .group_wait_share = 4,
    .purge_step = pg_purge_step,
    .errmsg = pg_errmsg,
    .describe = pg_describe,
    .load_experiments = pg_load_experiments,
    .load_events = pg_load_events,
    .find_assignment = pg_find_assignment,
    .find_outcome_kind = pg_find_outcome_kind,
    .find_unit_in = pg_find_unit_in,
    .last_seq = pg_last_seq,
    .find_experiment = pg_find_experiment,
    .outbox_pending = pg_outbox_pending,
    .outbox_list = pg_outbox_list,
    .outbox_depth = pg_outbox_depth,
    .load_keys = pg_load_keys,
    .load_audit = pg_load_audit,
    .backup = pg_backup,
    .load_snapshot = pg_load_snapshot,
};
