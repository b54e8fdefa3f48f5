/*
 * schema.h — the store's SQL schema and its migrations (internal to store/).
 *
 * The schema version lives in PRAGMA user_version. Migration N turns a
 * version N-1 database into a version N one; store_schema_migrate runs the
 * missing steps in one transaction, so a database is always at one version.
 */
#ifndef BANDITD_STORE_SCHEMA_H
#define BANDITD_STORE_SCHEMA_H

#include <stddef.h>

#include <sqlite3.h>

/* Bring db (a read-write connection, no transaction open) to the latest
 * version. Returns an SQLite result code; on failure err holds a message
 * and the database is left at its previous version. A database newer than
 * this build is refused with SQLITE_ERROR and says so in err. */
int store_schema_migrate(sqlite3 *db, char *err, size_t errlen);

/* Read PRAGMA user_version into *out. Returns an SQLite result code. */
int store_schema_read_version(sqlite3 *db, int *out);

#endif
