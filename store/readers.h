/*
 * readers.h — each thread's read connection of a backend (internal to
 * store/): made by the backend on first use, adopted here, and freed when
 * its thread exits or when the backend closes, whichever comes first.
 *
 * A backend's reader embeds struct store_reader as its first member and
 * gives a function that closes and frees one (already unlinked).
 */
#ifndef BANDITD_STORE_READERS_H
#define BANDITD_STORE_READERS_H

#include <pthread.h>

struct store_readers;

struct store_reader {
    struct store_readers *owner;
    struct store_reader *prev, *next; /* owner->head, under owner->mu */
};

struct store_readers {
    pthread_mutex_t mu;
    pthread_key_t key;
    struct store_reader *head;
    void (*free_fn)(struct store_reader *r);
    int have_mu, have_key;
};

/* 0, or a pthread error number (whatever was made is undone by destroy). */
int store_readers_init(struct store_readers *rs, void (*free_fn)(struct store_reader *r));
/* This thread's reader, or NULL. Borrowed. */
struct store_reader *store_readers_mine(struct store_readers *rs);
/* Make r (new, owned by rs from now on) this thread's reader. STORE_OK,
 * or STORE_ERR_NOMEM with r freed. */
int store_readers_adopt(struct store_readers *rs, struct store_reader *r);
/* Free every reader; no thread's exit frees one after this. Call once no
 * other thread reads. */
void store_readers_destroy(struct store_readers *rs);

#endif
