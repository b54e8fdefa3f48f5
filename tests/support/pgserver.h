/*
 * pgserver.h — a throwaway PostgreSQL server, started by a test or a
 * benchmark itself: initdb and pg_ctl (Debian's postgresql package, found
 * under /usr/lib/postgresql/<version>/bin) in a fresh directory
 * $TMPDIR/banditd-pg.XXXXXX, listening on a Unix socket in that directory
 * and on a free TCP port of 127.0.0.1, trust authentication for the
 * superuser "banditd" except on TCP for the role PGSERVER_PW_ROLE, which
 * must give its password (scram-sha-256). As root the server runs as the
 * `postgres` user (initdb refuses root), through runuser.
 *
 * One server per process, started on first use. It stops, and its
 * directory goes, when the process ends however it ends (even by SIGKILL):
 * a watchdog process waits for the end of a pipe only the process holds,
 * then runs pg_ctl stop -m immediate and removes the directory.
 *
 * No cmocka here: bench/load links it too. The tests use tpg.h, which
 * fails the running test where this returns −1.
 */
#ifndef BANDITD_TESTS_SUPPORT_PGSERVER_H
#define BANDITD_TESTS_SUPPORT_PGSERVER_H

#include <stddef.h>

/* The role that must authenticate with a password over TCP (created by
 * pgserver_password_role). */
#define PGSERVER_PW_ROLE "banditd_pw"

/* Start the server if it is not running. 0, or −1 with the reason in err
 * (PostgreSQL not installed, initdb or the start failed: the log's tail). */
int pgserver_start(char *err, size_t errlen);

/* A fresh empty database (the server started if needed) and its URI, over
 * the Unix socket as the superuser, into uri. 0, or −1 with err. */
int pgserver_new_db(char *uri, size_t len, char *err, size_t errlen);

/* The TCP port on 127.0.0.1 (0 before the start). */
unsigned pgserver_tcp_port(void);

/* Create PGSERVER_PW_ROLE with password pw, allowed to connect to every
 * database and to create tables in db's public schema. 0, or −1. */
int pgserver_password_role(const char *db_uri, const char *pw);

/* Run sql on uri; 0, or −1 (the error is printed on stderr). */
int pgserver_exec(const char *uri, const char *sql);

#endif
