/*
 * tstore.c — throwaway directories and stores for unit tests (tstore.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "store/store.h"
#include "tests/support/tpg.h"
#include "tests/support/tstore.h"

void ttmpdir(char *dir, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 32)
        tmp = "/tmp";
    snprintf(dir, len, "%s/banditd-unit.XXXXXX", tmp);
    if (mkdtemp(dir) == NULL)
        fail_msg("mkdtemp %s failed", dir);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

int ttree_remove(const char *dir)
{
    return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

struct tstore *tstore_new(const char *name)
{
    char err[256];
    struct tstore *t = calloc(1, sizeof *t);
    assert_non_null(t);
    ttmpdir(t->dir, sizeof t->dir);
    snprintf(t->path, sizeof t->path, "%s/%s", t->dir, name);
    t->s = store_open(t->path, STORE_SYNC_NORMAL, err, sizeof err);
    if (t->s == NULL)
        fail_msg("store_open %s: %s", t->path, err);
    return t;
}

struct tstore *tstore_new_pg(void)
{
    char err[256];
    struct tstore *t = calloc(1, sizeof *t);
    assert_non_null(t);
    ttmpdir(t->dir, sizeof t->dir);
    tpg_new_db(t->path, sizeof t->path);
    t->s = store_open(t->path, STORE_SYNC_NORMAL, err, sizeof err);
    if (t->s == NULL)
        fail_msg("store_open %s: %s", t->path, err);
    return t;
}

int tstore_is_pg(const struct tstore *t)
{
    return strncmp(t->path, "postgresql://", 13) == 0;
}

int64_t tcount(const char *target, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (strncmp(target, "postgresql://", 13) == 0)
        return tpg_count(target, sql);
    assert_int_equal(sqlite3_open_v2(target, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

int tstore_free(struct tstore *t)
{
    if (t == NULL)
        return 0;
    store_close(t->s);
    int rc = ttree_remove(t->dir);
    free(t);
    return rc;
}

void tread_file(const char *path, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return;
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    (void)fclose(f);
}

void twait_init(struct twait *w)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->done = 0;
    w->err = -1;
}

void twait_done(void *arg, int err)
{
    struct twait *w = arg;
    pthread_mutex_lock(&w->mu);
    w->err = err;
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void twait_cancel(struct twait *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

int twait_wait(struct twait *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    int err = w->err;
    pthread_mutex_unlock(&w->mu);
    twait_cancel(w);
    return err;
}
