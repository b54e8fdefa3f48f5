/*
 * tpg.h — a real PostgreSQL server for the tests, started by the test
 * itself: initdb and pg_ctl (Debian's postgresql package, found under
 * /usr/lib/postgresql/<version>/bin) in a fresh directory
 * $TMPDIR/banditd-pg.XXXXXX, listening on a Unix socket in that directory
 * only (no TCP port to collide with anything), trust authentication for
 * the superuser "banditd". As root the server runs as the `postgres` user
 * (initdb refuses root), through runuser.
 *
 * One server per test process, started on first use. It stops, and its
 * directory goes, when the test process ends however it ends (even by
 * SIGKILL): a watchdog process waits for the end of a pipe only the test
 * process holds, then runs pg_ctl stop -m immediate and removes the
 * directory.
 *
 *   char uri[256];
 *   tpg_new_db(uri, sizeof uri);   // a fresh, empty database: postgresql://…
 *   ... store_open(uri, …) or a daemon with --db uri ...
 *   tpg_count(uri, "SELECT count(*) FROM events");
 */
#ifndef BANDITD_TESTS_SUPPORT_TPG_H
#define BANDITD_TESTS_SUPPORT_TPG_H

#include <stddef.h>
#include <stdint.h>

/* Start the server if it is not running. 0, or −1 with the reason in err
 * (PostgreSQL not installed, initdb or the start failed: the log's tail). */
int tpg_start(char *err, size_t errlen);

/* A fresh empty database on the server (started if needed) and its URI
 * into uri. Fails the running cmocka test when it cannot. */
void tpg_new_db(char *uri, size_t len);

/* The first column of the first row of sql on uri as an integer (−1: no
 * row). Fails the running cmocka test on an error. */
int64_t tpg_count(const char *uri, const char *sql);

/* Run sql on uri; 0, or −1 (the error is printed). */
int tpg_exec(const char *uri, const char *sql);

#endif
