/*
 * schema.c — the store's tables and the ordered list of migrations.
 *
 * A new schema version is one new entry at the end of migrations[] (its SQL
 * turns version N-1 into N); nothing else changes. Existing entries are
 * never edited: a database in the field went through them as they were.
 */
#include "store/schema.h"

#include <stdio.h>

#include "store/store.h"

struct migration {
    int version;     /* user_version after this step */
    const char *sql; /* one or more statements */
};

static const struct migration migrations[] = {
    {1,
     /* Experiments: the configuration as sent (JSON), by a stable rowid that
      * events refer to. */
     "CREATE TABLE experiments ("
     " rowid INTEGER PRIMARY KEY,"
     " id TEXT NOT NULL UNIQUE,"
     " config TEXT NOT NULL,"
     " created_ms INTEGER NOT NULL);"
     /* The append-only log, clustered by (exp, seq) so that replay and
      * export are one range scan. */
     "CREATE TABLE events ("
     " exp INTEGER NOT NULL,"
     " seq INTEGER NOT NULL,"
     " kind INTEGER NOT NULL,"
     " bandit INTEGER,"
     " arm INTEGER,"
     " flags INTEGER NOT NULL DEFAULT 0,"
     " value REAL,"
     " ref INTEGER,"
     " ts_ms INTEGER NOT NULL,"
     " expires_ms INTEGER,"
     " unit TEXT,"
     " text TEXT,"
     " PRIMARY KEY (exp, seq)) WITHOUT ROWID;"
     "CREATE INDEX events_ref ON events(exp, ref) WHERE ref IS NOT NULL;"
     "CREATE UNIQUE INDEX events_unit ON events(exp, unit) WHERE unit IS NOT NULL;"
     "CREATE TABLE api_keys ("
     " rowid INTEGER PRIMARY KEY,"
     " name TEXT,"
     " scopes TEXT NOT NULL,"
     " hash TEXT NOT NULL UNIQUE,"
     " created_ms INTEGER NOT NULL,"
     " revoked INTEGER NOT NULL DEFAULT 0);"},
    {2,
     /* A delete removes the experiment's row at once and its log in
      * bounded chunks afterwards (store.c, writer_purge_step), so that no
      * request waits for a long log to go: purges lists the experiments
      * whose events are still there. Rowids become AUTOINCREMENT so that a
      * new experiment can never get the rowid, and so the leftover events,
      * of one being purged. The table is rebuilt (SQLite cannot add
      * AUTOINCREMENT in place), keeping every rowid. */
     "CREATE TABLE experiments_v2 ("
     " rowid INTEGER PRIMARY KEY AUTOINCREMENT,"
     " id TEXT NOT NULL UNIQUE,"
     " config TEXT NOT NULL,"
     " created_ms INTEGER NOT NULL);"
     "INSERT INTO experiments_v2(rowid, id, config, created_ms)"
     " SELECT rowid, id, config, created_ms FROM experiments ORDER BY rowid;"
     "DROP TABLE experiments;"
     "ALTER TABLE experiments_v2 RENAME TO experiments;"
     "CREATE TABLE purges (exp INTEGER PRIMARY KEY);"},
    {3,
     /* A unit may hold several assignments: a new one after its assignment
      * expired, one per bandit (exp.h, sticky units); the latest is the
      * one it gets back. The index keeps them in seq order per unit. */
     "DROP INDEX events_unit;"
     "CREATE INDEX events_unit ON events(exp, unit, seq) WHERE unit IS NOT NULL;"},
    {4,
     /* The webhook outbox (store.h): one row per delivery, inserted in the
      * transaction of the events that caused it. AUTOINCREMENT so that ids
      * only grow (the delivery thread reads new rows by id > last seen, and
      * a delivery's id, sent as a header, is never reused). The partial
      * indexes keep the delivery thread's reads O(pending) and the prune
      * O(pruned), however many finished rows are kept; outbox_exp serves
      * an experiment's listing. No foreign key: a delivery outlives the
      * delete of its experiment. */
     "CREATE TABLE outbox ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " exp INTEGER NOT NULL,"
     " exp_id TEXT NOT NULL,"
     " event_id TEXT NOT NULL,"
     " type TEXT NOT NULL,"
     " url TEXT NOT NULL,"
     " secret TEXT NOT NULL,"
     " body TEXT NOT NULL,"
     " created_ms INTEGER NOT NULL,"
     " state INTEGER NOT NULL DEFAULT 0,"
     " attempts INTEGER NOT NULL DEFAULT 0,"
     " next_ms INTEGER NOT NULL,"
     " last_ms INTEGER,"
     " last_status INTEGER,"
     " last_error TEXT);"
     "CREATE INDEX outbox_pending ON outbox(id) WHERE state = 0;"
     "CREATE INDEX outbox_finished ON outbox(last_ms) WHERE state != 0;"
     "CREATE INDEX outbox_exp ON outbox(exp, id);"},
    {5,
     /* Daemons sharing one database (PostgreSQL, store.h ownership): each
      * one's advertised address, its writer's server process and its
      * heartbeat, by which an owner is found live or orphaned. SQLite has
      * one daemon and keeps the table empty: both engines have one schema,
      * one version. */
     "CREATE TABLE nodes ("
     " node TEXT PRIMARY KEY,"
     " url TEXT NOT NULL,"
     " writer_pid INTEGER NOT NULL,"
     " beat_ms INTEGER NOT NULL);"},
    {6,
     /* A key may be limited to named experiments (issue 16: a key shipped
      * in a web page): their ids, comma-separated; NULL for every one. A
      * build older than this refuses the database (newer schema) rather
      * than read such a key as one for every experiment. */
     "ALTER TABLE api_keys ADD COLUMN experiments TEXT;"},
    {7,
     /* The audit trail (exp/audit.c): each event's caller and request id,
      * and the hash chain over the log (NULL on older rows). */
     "ALTER TABLE events ADD COLUMN actor TEXT;"
     "ALTER TABLE events ADD COLUMN request_id TEXT;"
     "ALTER TABLE events ADD COLUMN chain TEXT;"},
    {8,
     /* The audit log of what no experiment's log holds (store.h): keys
      * created and revoked, experiments created; chained like the events.
      * Keys made before it have no record (audit verify says so). */
     "CREATE TABLE audit_log ("
     " seq INTEGER PRIMARY KEY,"
     " ts_ms INTEGER NOT NULL,"
     " kind INTEGER NOT NULL,"
     " subject TEXT NOT NULL,"
     " detail TEXT,"
     " actor TEXT,"
     " request_id TEXT,"
     " chain TEXT NOT NULL);"},
    {9,
     /* Snapshots (store.h): an experiment's serialized state as of event
      * seq, so that a load replays only the events after it. A few rows
      * per experiment (the writer thins them: store_snapshots_keep), large
      * ones: a rowid table, keyed (exp, seq). */
     "CREATE TABLE snapshots ("
     " exp INTEGER NOT NULL,"
     " seq INTEGER NOT NULL,"
     " format INTEGER NOT NULL,"
     " software TEXT NOT NULL,"
     " design TEXT NOT NULL,"
     " checksum TEXT NOT NULL,"
     " created_ms INTEGER NOT NULL,"
     " state BLOB NOT NULL,"
     " PRIMARY KEY (exp, seq));"},
};

#define N_MIGRATIONS (sizeof migrations / sizeof migrations[0])

/* Schema version this build writes: the last migration's. */
int store_schema_version(void)
{
    return migrations[N_MIGRATIONS - 1].version;
}

int store_schema_read_version(sqlite3 *db, int *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto out;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_ERROR; /* a pragma that returns nothing: not SQLite */
    }
out:
    sqlite3_finalize(st);
    return rc;
}

int store_schema_migrate(sqlite3 *db, char *err, size_t errlen)
{
    int rc, version = 0, in_tx = 0;
    char pragma[64];

    /* IMMEDIATE: two processes opening the same new file at once must not
     * both run migration 1. */
    rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "begin migration: %s", sqlite3_errmsg(db));
        goto out;
    }
    in_tx = 1;
    rc = store_schema_read_version(db, &version);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "read schema version: %s", sqlite3_errmsg(db));
        goto out;
    }
    if (version > store_schema_version()) {
        snprintf(err, errlen,
                 "database schema version %d is newer than this build's (%d): "
                 "refusing to open it; use a newer banditd",
                 version, store_schema_version());
        rc = SQLITE_ERROR;
        goto out;
    }
    for (size_t i = 0; i < N_MIGRATIONS; i++) {
        if (migrations[i].version <= version)
            continue;
        rc = sqlite3_exec(db, migrations[i].sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "migration %d: %s", migrations[i].version, sqlite3_errmsg(db));
            goto out;
        }
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", migrations[i].version);
        rc = sqlite3_exec(db, pragma, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "migration %d: %s", migrations[i].version, sqlite3_errmsg(db));
            goto out;
        }
    }
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "commit migration: %s", sqlite3_errmsg(db));
        goto out;
    }
    in_tx = 0;
out:
    if (in_tx && !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}
