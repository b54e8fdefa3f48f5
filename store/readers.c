/*
 * readers.c — the per-thread read connections of a backend (readers.h).
 */
#include "store/readers.h"

#include "store/store.h"

/* pthread key destructor: the thread is exiting. */
static void thread_exit(void *arg)
{
    struct store_reader *r = arg;
    struct store_readers *rs = r->owner;

    pthread_mutex_lock(&rs->mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        rs->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    pthread_mutex_unlock(&rs->mu);
    rs->free_fn(r);
}

int store_readers_init(struct store_readers *rs, void (*free_fn)(struct store_reader *r))
{
    int rc;
    rs->head = NULL;
    rs->free_fn = free_fn;
    rs->have_mu = rs->have_key = 0;
    if ((rc = pthread_mutex_init(&rs->mu, NULL)) != 0)
        return rc;
    rs->have_mu = 1;
    if ((rc = pthread_key_create(&rs->key, thread_exit)) != 0)
        return rc;
    rs->have_key = 1;
    return 0;
}

struct store_reader *store_readers_mine(struct store_readers *rs)
{
    return pthread_getspecific(rs->key);
}

int store_readers_adopt(struct store_readers *rs, struct store_reader *r)
{
    r->owner = rs;
    r->prev = NULL;
    pthread_mutex_lock(&rs->mu);
    r->next = rs->head;
    if (r->next)
        r->next->prev = r;
    rs->head = r;
    pthread_mutex_unlock(&rs->mu);
    if (pthread_setspecific(rs->key, r) != 0) {
        thread_exit(r); /* unlinks and frees */
        return STORE_ERR_NOMEM;
    }
    return STORE_OK;
}

void store_readers_destroy(struct store_readers *rs)
{
    struct store_reader *r;

    if (rs->have_key)
        pthread_key_delete(rs->key); /* no destructor runs after this */
    rs->have_key = 0;
    if (!rs->have_mu)
        return;
    pthread_mutex_lock(&rs->mu);
    while ((r = rs->head) != NULL) {
        rs->head = r->next;
        rs->free_fn(r);
    }
    pthread_mutex_unlock(&rs->mu);
    pthread_mutex_destroy(&rs->mu);
    rs->have_mu = 0;
}
