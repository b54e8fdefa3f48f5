/*
 * tstore.h — a store (store/store.h) on a throwaway directory, for the unit
 * tests of the store and of what sits on it (experiments, keys, metrics);
 * the making, reading and removal of such directories' files.
 *
 *   struct tstore *t = tstore_new("e.db");   // $TMPDIR/banditd-unit.XXXXXX/e.db
 *   ... t->s, t->path, t->dir ...
 *   tstore_free(t);                          // closes the store, removes the directory
 *
 * tstore_new fails the running cmocka test (with the reason) when the
 * directory or the store cannot be made; it opens with STORE_SYNC_NORMAL.
 * A test may close and reopen t->s itself (t->path stays valid).
 */
#ifndef BANDITD_TESTS_SUPPORT_TSTORE_H
#define BANDITD_TESTS_SUPPORT_TSTORE_H

#include <pthread.h>
#include <stddef.h>

struct store;

struct tstore {
    char dir[64];
    char path[256];  /* the file, or a postgresql:// URI (tstore_new_pg) */
    struct store *s; /* NULL once closed by the test */
};

/* New fixture with the store `name` opened in a fresh directory. */
struct tstore *tstore_new(const char *name);
/* The same on a fresh database of the tests' PostgreSQL server (tpg.h):
 * t->path is its URI; t->dir is a fresh directory all the same. */
struct tstore *tstore_new_pg(void);
/* Whether t's store is on PostgreSQL. */
int tstore_is_pg(const struct tstore *t);
/* The first column of the first row of sql (a count) on the database at
 * target, a file or a postgresql:// URI, read on a connection of its own;
 * −1 when there is no row. Fails the test when sql fails. */
int64_t tcount(const char *target, const char *sql);
/* Close t->s if open, remove the directory, free. NULL is a no-op. Returns
 * 0, or −1 when something could not be removed. */
int tstore_free(struct tstore *t);

/* A store completion (store_done_fn) a test waits for: twait_init, pass
 * twait_done with w as its argument, then twait_wait returns the store
 * error the completion got and releases w. twait_cancel releases w when the
 * completion will never run (the submission was refused). */
struct twait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, err;
};
void twait_init(struct twait *w);
void twait_done(void *arg, int err);
int twait_wait(struct twait *w);
void twait_cancel(struct twait *w);

/* A fresh directory $TMPDIR/banditd-unit.XXXXXX into dir (/tmp when TMPDIR
 * is unset or too long for a struct tstore); fails the test when it
 * cannot. */
void ttmpdir(char *dir, size_t len);
/* Remove dir and everything below it (links are not followed). 0 or −1. */
int ttree_remove(const char *dir);

/* At most len − 1 bytes of the file at path into buf, NUL-terminated ("" when
 * it cannot be read). */
void tread_file(const char *path, char *buf, size_t len);

#endif
