/*
 * tpg.h — a real PostgreSQL server for the tests, started by the test
 * itself (pgserver.h says how: a temporary directory, a Unix socket and a
 * TCP port of 127.0.0.1, gone when the test process ends however it ends).
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
