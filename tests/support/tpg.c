/*
 * tpg.c — a throwaway PostgreSQL server for the tests (tpg.h): pgserver.c's,
 * failing the running cmocka test where that returns an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "tests/support/pgserver.h"
#include "tests/support/tpg.h"

int tpg_start(char *err, size_t errlen)
{
    return pgserver_start(err, errlen);
}

void tpg_new_db(char *uri, size_t len)
{
    char err[1024];
    if (pgserver_new_db(uri, len, err, sizeof err) != 0)
        fail_msg("PostgreSQL: %s", err);
}

int tpg_exec(const char *uri, const char *sql)
{
    return pgserver_exec(uri, sql);
}

int64_t tpg_count(const char *uri, const char *sql)
{
    PGconn *c = PQconnectdb(uri);
    int64_t n = -1;
    if (PQstatus(c) != CONNECTION_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
        PQfinish(c);
        fail_msg("tpg: %s", msg);
    }
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        fail_msg("tpg: %s", msg);
    }
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return n;
}
