/*
 * store_test.h — fault injection and scheduling hooks for tests (STYLE §15).
 *
 * Not for production code paths. The daemon's black-box tests reach the same
 * fault through the environment: BANDITD_STORE_FAIL_COMMITS=N makes the
 * first N commits after store_open fail as if the disk were full, and
 * BANDITD_STORE_FAIL_COMMITS=K+N lets K commits through first.
 */
#ifndef BANDITD_STORE_STORE_TEST_H
#define BANDITD_STORE_STORE_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The next n group commits fail as if the disk were full: the transaction is
 * rolled back and every submission of the batch completes with
 * STORE_ERR_FULL. n = 0 cancels a pending injection. */
void store_test_fail_commits(struct store *s, int n);

/* The next n submissions (store_submit, store_submit_keyed) are refused at
 * once with STORE_ERR_FULL, as when the queue is full; done is not called.
 * n = 0 cancels. (The daemon must treat a refused write like a failed one.) */
void store_test_fail_submits(struct store *s, int n);

/* paused != 0: the writer takes no new batch (the one it is committing, if
 * any, finishes) so that a test can queue several submissions and have them
 * committed as one group; paused = 0 resumes. store_close overrides a
 * pause (it always drains). */
void store_test_pause_writer(struct store *s, int paused);

/* paused != 0: the writer runs no purge step (a delete removes the
 * experiment's row at once and its events afterwards, in chunks, between
 * and after group commits); 0 resumes. Not kept across store_open. */
void store_test_pause_purge(struct store *s, int paused);

/* paused != 0: the store's heartbeat (PostgreSQL, store.h ownership)
 * stops, as in a frozen process; 0 resumes. No effect on SQLite. */
void store_test_pause_heartbeat(struct store *s, int paused);

/* --- the store's SQL, for the query-plan test ------------------------------ */

enum store_sql_role {
    STORE_SQL_WRITE = 1, /* the writer thread's, prepared at open */
    STORE_SQL_READ = 2,  /* the readers', prepared per thread on first use */
    STORE_SQL_ONCE = 3,  /* connection settings at open, the backup */
};

struct store_sql {
    const char *name; /* unique, e.g. "outcome" */
    enum store_sql_role role;
    const char *sql; /* parameters ?1, ?2…: the experiment's rowid first */
};

/* The i-th of the store's SQL statements (i = 0, 1, …: every statement
 * store.c runs), or NULL past the last. Static; not to be freed. */
const struct store_sql *store_test_sql(size_t i);

/* The same for the PostgreSQL backend (store/postgres.c; parameters $1,
 * $2…). */
const struct store_sql *store_test_pg_sql(size_t i);

#endif
