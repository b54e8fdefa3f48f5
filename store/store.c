/*
 * store.c — the engine-independent front of the store: the submission
 * queue, one writer thread with group commit, keyed poisoning, fault
 * injection and the writer's figures. The engine behind it (backend.h:
 * sqlite.c, the embedded default) runs the transactions and the reads.
 *
 * Writes: store_submit() appends a submission to a FIFO; the writer thread
 * takes up to STORE_BATCH_MAX of them, opens one transaction, runs them
 * all, commits once and then calls the completion callbacks in FIFO order.
 * If one submission fails on its own data (a constraint), the batch is
 * rolled back and run again with a savepoint per submission, so that only
 * that one fails. A failure of the transaction itself (full disk, I/O
 * error, a lost connection, injected fault) rolls everything back and
 * fails every submission of the batch. API keys are written through the
 * same queue, so the database has exactly one writing connection. An aside
 * submission (store_submit_aside: a snapshot) runs alone, after the group
 * before it has been answered.
 *
 * Deletes: an experiment's row goes in the request's batch; its log is
 * listed for the purge and removed by the writer afterwards, one chunk per
 * transaction (the backend's purge_step), when the queue is empty or every
 * PURGE_INTERVAL_US under load, so that no request waits for more than one
 * chunk of it.
 *
 * Threads: store_close must not run while another thread is inside a store
 * call, and must not be called from a completion callback (it joins the
 * writer). Callbacks run on the writer thread: they may call store_submit
 * and the read functions, but not store_write_sync or store_close, and they
 * should be short (the next batch waits for them).
 */
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/digest.h"
#include "base/log.h"
#include "store/backend.h"
#include "store/store_test.h"

#define STORE_BATCH_MAX 4096   /* submissions per group commit */
#define STORE_QUEUE_MAX 131072 /* submissions waiting: beyond, FULL (503) */
#define STORE_FAULT_ENV "BANDITD_STORE_FAIL_COMMITS"
/* "N": SIGKILL just before the Nth aside submission is written — a crash
 * between a batch's commit and its snapshot's (tests/http/test_snapshots.c). */
#define STORE_KILL_ASIDE_ENV "BANDITD_STORE_KILL_ASIDE"
#define PURGE_INTERVAL_US 100000u /* under load, one purge step per 100 ms */
#define PURGE_RETRY_US 1000000u   /* after a failed purge step */
#define GROUP_WAIT_MAX_US 2000u   /* group_wait's longest wait */

/* The backends store_open tries, in order (the last claims anything). */
static const struct store_backend_ops *const backends[] = {&store_postgres_ops, &store_sqlite_ops};

/* --- submissions ------------------------------------------------------------- */

struct sub {
    struct sub *next;
    const struct store_op *ops; /* borrowed until done */
    size_t n;
    int64_t pkey; /* store_submit_keyed: > 0 */
    int reset;
    int aside; /* store_submit_aside: alone in its transaction, poisons nothing */
    const struct store_key_op *key; /* instead of ops; borrowed */
    store_done_fn done;
    void *arg;
    int err;
};

struct store {
    const struct store_backend_ops *ops;
    struct store_backend *be; /* its writing side used by the writer thread only
                               * (by store_open before it starts and store_close
                               * after it ends) */
    pthread_t writer;
    int writer_started;

    /* queue, flags, fault counters and stats, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work arrived, closing or unpaused */
    struct sub *head, *tail;
    uint64_t depth;
    int closing;
    int paused;
    int fault_skip, fault_fail;   /* commits to let through, then to fail */
    int fault_submits;            /* submissions to refuse (store_test.h) */
    int kill_aside;               /* STORE_KILL_ASIDE_ENV: asides until the kill; 0: none */
    int purging;                  /* deleted experiments' logs wait for the purge */
    uint64_t purge_not_before_us; /* no purge step before (now_us) */
    int purge_paused;             /* store_test_pause_purge */
    struct store_stats stats;
    size_t last_group;       /* submissions in the last group commit (group_wait) */
    uint64_t last_commit_us; /* and its time */

    void (*outbox_hook)(void *arg); /* under mu: store_set_outbox_hook */
    void *outbox_hook_arg;

    /* keys whose last submission failed (writer thread only) */
    struct poisoned {
        int64_t key;
        int err;
    } * poison;
    size_t npoison, cappoison;

    int have_mu, have_cv;
};

/* The store whose writer runs on this thread (guards against deadlocks). */
static _Thread_local struct store *tl_writer_of;

/* --- errors ------------------------------------------------------------------ */

const char *store_strerror(int err)
{
    switch (err) {
    case STORE_OK:
        return "ok";
    case STORE_ERR_NOTFOUND:
        return "not found";
    case STORE_ERR_EXISTS:
        return "already exists";
    case STORE_ERR_FULL:
        return "storage full, read-only or locked";
    case STORE_ERR_IO:
        return "storage I/O error";
    case STORE_ERR_NOMEM:
        return "out of memory";
    case STORE_ERR_CLOSED:
        return "store closed";
    case STORE_ERR_NOTOWNER:
        return "owned by another daemon";
    default:
        return "unknown store error";
    }
}

/* The error reported to every submission of a batch whose transaction
 * failed: never "exists" or "not found", which would be about one row. */
static int batch_err(int err)
{
    if (err == STORE_OK || err == STORE_ERR_EXISTS || err == STORE_ERR_NOTFOUND)
        err = STORE_ERR_IO;
    return err;
}

static uint64_t now_us(void)
{
    return clock_mono_ns() / 1000u;
}

/* --- writer ------------------------------------------------------------------ */

/* Run one submission's ops; *own as in backend.h. flush: its deferred
 * rows too (a backend may send rows in bulk, backend.h), so that a failure
 * is the submission's. */
static int writer_sub(struct store *s, const struct sub *sub, int flush, int *own)
{
    int err = STORE_OK;

    *own = 0;
    if (sub->key)
        return s->ops->write_key(s->be, sub->key, own);
    for (size_t i = 0; i < sub->n && err == STORE_OK; i++)
        err = s->ops->write_op(s->be, &sub->ops[i], own);
    if (err == STORE_OK && flush && s->ops->flush != NULL)
        err = s->ops->flush(s->be, own);
    return err;
}

/* --- keyed submissions: a failure poisons the key until a reset ----------- */

static struct poisoned *poison_find(struct store *s, int64_t key)
{
    for (size_t i = 0; i < s->npoison; i++)
        if (s->poison[i].key == key)
            return &s->poison[i];
    return NULL;
}

static void poison_add(struct store *s, int64_t key, int err)
{
    if (key <= 0 || poison_find(s, key) != NULL)
        return;
    if (s->npoison == s->cappoison) {
        size_t ncap = s->cappoison ? s->cappoison * 2 : 8;
        struct poisoned *n = realloc(s->poison, ncap * sizeof *n);
        if (n == NULL)
            return; /* best effort: the daemon reloads on the failure anyway */
        s->poison = n;
        s->cappoison = ncap;
    }
    s->poison[s->npoison].key = key;
    s->poison[s->npoison].err = err;
    s->npoison++;
}

static void poison_clear(struct store *s, int64_t key)
{
    struct poisoned *p = poison_find(s, key);
    if (p != NULL)
        *p = s->poison[--s->npoison];
}

/* Run every submission of a batch inside the open transaction. careful = 0
 * (the common case): no savepoints, so the first submission error returns
 * -1 and the caller rolls everything back and runs the batch again with
 * careful = 1, where each submission has its own savepoint and a failing
 * one is rolled back alone (and poisons its key). A savepoint costs two
 * statements per submission, a fifth of an event insert's work; errors of
 * one submission are rare (a duplicate id), so they pay for the retry.
 * Returns STORE_OK, -1 (retry carefully) or the batch's fatal store error. */
static int writer_run(struct store *s, struct sub *batch, int careful)
{
    struct sub *sub;
    int err, own;

    for (sub = batch; sub; sub = sub->next) {
        sub->err = STORE_OK;
        if (sub->pkey > 0) {
            struct poisoned *p = sub->reset ? NULL : poison_find(s, sub->pkey);
            if (sub->reset)
                poison_clear(s, sub->pkey);
            if (p != NULL) {
                sub->err = p->err; /* depends on a write that failed */
                continue;
            }
        }
        if (careful && (err = s->ops->savepoint(s->be)) != STORE_OK)
            return batch_err(err);
        err = writer_sub(s, sub, careful, &own);
        if (err != STORE_OK && own) {
            if (!careful)
                return -1;
            sub->err = err;
            if (!sub->aside)
                poison_add(s, sub->pkey, sub->err);
            err = s->ops->rollback_to(s->be);
        } else if (err != STORE_OK) {
            return batch_err(err);
        }
        if (careful && err == STORE_OK)
            err = s->ops->release(s->be);
        if (err != STORE_OK)
            return batch_err(err);
    }
    /* rows the backend deferred: a failure of one submission's data there
     * cannot be told from the others' — run them again with savepoints
     * (with flush_commit they go with the commit: writer_batch) */
    if (!careful && s->ops->flush != NULL && s->ops->flush_commit == NULL &&
        (err = s->ops->flush(s->be, &own)) != STORE_OK)
        return own ? -1 : batch_err(err);
    return STORE_OK;
}

/* Whether a committed submission deleted an experiment, or queued a
 * webhook delivery. */
static int sub_has(const struct sub *sub, int kind)
{
    for (size_t i = 0; i < sub->n; i++)
        if (sub->ops[i].kind == kind)
            return 1;
    return 0;
}

/* Commit one batch (a NULL-terminated list) and complete its submissions.
 * Frees the list. */
static void writer_batch(struct store *s, struct sub *batch, int inject_fault)
{
    uint64_t t0 = now_us(), committed = 0;
    int fatal = STORE_OK, err, deleted = 0, outbox = 0;
    struct sub *sub, *next;

    for (int careful = 0; careful < 2; careful++) {
        int own = 0;
        err = s->ops->begin(s->be);
        if (err != STORE_OK) {
            fatal = batch_err(err);
            goto finish;
        }
        fatal = writer_run(s, batch, careful);
        if (fatal == STORE_OK && inject_fault)
            fatal = STORE_ERR_FULL;
        if (fatal != STORE_OK && fatal != -1)
            goto finish;
        if (fatal == STORE_OK) {
            if (!careful && s->ops->flush_commit != NULL)
                err = s->ops->flush_commit(s->be, &own);
            else
                err = s->ops->commit(s->be);
            if (err == STORE_OK || !own) {
                fatal = err == STORE_OK ? STORE_OK : batch_err(err);
                break;
            }
        }
        /* a submission failed on its own data: undo, and again with savepoints */
        fatal = STORE_OK;
        s->ops->rollback(s->be);
    }

finish:
    if (fatal != STORE_OK && !inject_fault) /* said once per failed group, with the engine's why */
        log_warn("store: a group commit failed (%s): %s; its writes answer 503",
                 store_strerror(fatal), s->ops->errmsg(s->be));
    if (fatal != STORE_OK)
        s->ops->rollback(s->be);
    for (sub = batch; sub; sub = sub->next) {
        if (fatal != STORE_OK) {
            sub->err = fatal;
            if (!sub->aside)
                poison_add(s, sub->pkey, fatal);
        } else if (sub->err == STORE_OK) {
            committed++;
            deleted |= sub_has(sub, STORE_OP_EXP_DELETE);
            /* new rows to deliver, or (a claim) others' become ours */
            outbox |= sub_has(sub, STORE_OP_OUTBOX) || sub_has(sub, STORE_OP_CLAIM);
        }
    }
    if (fatal != STORE_OK && !inject_fault && s->ops->commit_failed != NULL)
        s->ops->commit_failed(s->be, fatal);
    pthread_mutex_lock(&s->mu);
    /* An empty group commits even on a full disk: only one that wrote says
     * whether writes succeed. */
    for (sub = batch; sub != NULL; sub = sub->next)
        if (sub->n > 0 || sub->key != NULL) {
            s->stats.writes_failing = fatal != STORE_OK;
            break;
        }
    if (fatal == STORE_OK) {
        s->stats.commits++;
        if (deleted)
            s->purging = 1;
        if (outbox && s->outbox_hook != NULL)
            s->outbox_hook(s->outbox_hook_arg); /* a signal only (store.h) */
    } else {
        s->stats.failed_commits++;
    }
    s->stats.writes += committed;
    s->stats.commit_us_total += now_us() - t0;
    s->last_commit_us = now_us() - t0;
    s->last_group = 0;
    for (sub = batch; sub != NULL; sub = sub->next)
        s->last_group++;
    pthread_mutex_unlock(&s->mu);

    for (sub = batch; sub; sub = next) {
        next = sub->next;
        sub->done(sub->arg, sub->err);
        free(sub);
    }
}

/* Whether the writer should run a purge step now (under mu): there is one
 * to do, its pause is over (after a step as long as the step took, so the
 * purge takes at most half of a core from the request threads; after a
 * failure PURGE_RETRY_US), and either nothing is queued or the last step is
 * PURGE_INTERVAL_US old — so that a steady stream of requests neither
 * starves the purge nor waits behind more than one chunk at a time. */
static int purge_due(const struct store *s, uint64_t last_us)
{
    uint64_t now = now_us();
    return s->purging && !s->paused && !s->purge_paused && !s->closing &&
           now >= s->purge_not_before_us && (s->head == NULL || now - last_us >= PURGE_INTERVAL_US);
}

/* Under load, wait (under mu) for the writes of the group just answered
 * to come back before the next commit: clients that send their next
 * request once answered return within the time it takes to answer them,
 * and on an engine whose commit costs about the same for one write or a
 * thousand (backend.h, group_wait_share) one commit for both groups is
 * nearly twice the throughput of two. Waits for as many submissions as
 * are queued plus the last group's, at most 1/share of the last commit's
 * time (GROUP_WAIT_MAX_US at most), and never after a group of one (no
 * load: no write waits). A 2xx still waits for its own commit. */
static void group_wait(struct store *s)
{
    unsigned share = s->ops->group_wait_share;
    uint64_t want = s->depth + s->last_group, us;

    if (share == 0 || s->last_group < 2 || s->closing || s->paused)
        return;
    us = s->last_commit_us / share;
    if (us > GROUP_WAIT_MAX_US)
        us = GROUP_WAIT_MAX_US;
    struct timespec dl = clock_deadline(CLOCK_REALTIME, 0);
    dl.tv_nsec += (long)us * 1000;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    while (!s->closing && s->depth < want && pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0)
        ;
}

static void *writer_main(void *arg)
{
    struct store *s = arg;
    uint64_t last_purge_us = 0;

    tl_writer_of = s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->closing && (s->paused || s->head == NULL) && !purge_due(s, last_purge_us)) {
            if (s->purging && !s->paused && !s->purge_paused) {
                /* the purge's pause: until purge_not_before_us, or new work */
                uint64_t now = now_us(),
                         us = s->purge_not_before_us > now ? s->purge_not_before_us - now : 1;
                struct timespec dl;
                clock_gettime(CLOCK_REALTIME, &dl);
                dl.tv_sec += (time_t)(us / 1000000u);
                dl.tv_nsec += (long)(us % 1000000u) * 1000;
                if (dl.tv_nsec >= 1000000000L) {
                    dl.tv_sec++;
                    dl.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&s->cv, &s->mu, &dl);
            } else {
                pthread_cond_wait(&s->cv, &s->mu);
            }
        }
        if (purge_due(s, last_purge_us)) {
            uint64_t start = now_us();
            pthread_mutex_unlock(&s->mu);
            int more = s->ops->purge_step(s->be);
            last_purge_us = now_us();
            pthread_mutex_lock(&s->mu);
            if (more == 0)
                s->purging = 0;
            s->purge_not_before_us =
                last_purge_us + (more < 0 ? PURGE_RETRY_US : last_purge_us - start);
            continue;
        }
        if (s->head == NULL)
            break; /* closing and drained (a purge resumes at the next open) */
        group_wait(s);
        struct sub *batch = s->head, *last = s->head;
        s->depth--;
        /* An aside write (a snapshot: megabytes) goes alone, after the
         * group before it has committed and been answered. */
        for (int n = 1; n < STORE_BATCH_MAX && last->next && !batch->aside && !last->next->aside;
             n++) {
            last = last->next;
            s->depth--;
        }
        s->head = last->next;
        if (s->head == NULL)
            s->tail = NULL;
        last->next = NULL;
        int inject = 0;
        if (batch->aside && s->kill_aside > 0 && --s->kill_aside == 0)
            (void)raise(SIGKILL);
        if (s->fault_skip > 0) {
            s->fault_skip--;
        } else if (s->fault_fail > 0) {
            s->fault_fail--;
            inject = 1;
        }
        pthread_mutex_unlock(&s->mu);
        writer_batch(s, batch, inject);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Queue a submission. On STORE_OK, done will be called exactly once. */
static int submit(struct store *s, int64_t pkey, int reset, int aside, const struct store_op *ops,
                  size_t n, const struct store_key_op *key, store_done_fn done, void *arg)
{
    int err = STORE_OK;
    struct sub *sub = calloc(1, sizeof *sub);

    if (sub == NULL)
        return STORE_ERR_NOMEM;
    sub->pkey = pkey;
    sub->reset = reset;
    sub->aside = aside;
    sub->ops = ops;
    sub->n = n;
    sub->key = key;
    sub->done = done;
    sub->arg = arg;
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        err = STORE_ERR_CLOSED;
    } else if (s->depth >= STORE_QUEUE_MAX || s->fault_submits > 0) {
        if (s->fault_submits > 0)
            s->fault_submits--;
        err = STORE_ERR_FULL;
    } else {
        if (s->tail)
            s->tail->next = sub;
        else
            s->head = sub;
        s->tail = sub;
        s->depth++;
        sub = NULL; /* owned by the queue now */
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    free(sub);
    return err;
}

int store_submit(struct store *s, struct store_op *ops, size_t n, store_done_fn done, void *arg)
{
    return submit(s, 0, 0, 0, ops, n, NULL, done, arg);
}

int store_submit_keyed(struct store *s, int64_t key, int reset, struct store_op *ops, size_t n,
                       store_done_fn done, void *arg)
{
    return submit(s, key, reset, 0, ops, n, NULL, done, arg);
}

int store_submit_aside(struct store *s, int64_t key, struct store_op *ops, size_t n,
                       store_done_fn done, void *arg)
{
    return submit(s, key, 0, 1, ops, n, NULL, done, arg);
}

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int err;
};

static void waiter_done(void *arg, int err)
{
    struct waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    w->err = err;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Submit and wait for the callback. */
static int submit_wait(struct store *s, const struct store_op *ops, size_t n,
                       const struct store_key_op *key)
{
    struct waiter w = {.done = 0, .err = STORE_OK};
    int err;

    if (tl_writer_of == s)
        return STORE_ERR_IO; /* from a callback: would wait for itself */
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    err = submit(s, 0, 0, 0, ops, n, key, waiter_done, &w);
    if (err == STORE_OK) {
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        err = w.err;
        pthread_mutex_unlock(&w.mu);
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return err;
}

int store_write_sync(struct store *s, struct store_op *ops, size_t n)
{
    return submit_wait(s, ops, n, NULL);
}

void store_get_stats(struct store *s, struct store_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    out->queue_depth = s->depth;
    pthread_mutex_unlock(&s->mu);
    if (s->ops->stats != NULL)
        s->ops->stats(s->be, out);
}

void store_test_fail_commits(struct store *s, int n)
{
    pthread_mutex_lock(&s->mu);
    s->fault_skip = 0;
    s->fault_fail = n > 0 ? n : 0;
    pthread_mutex_unlock(&s->mu);
}

void store_test_fail_submits(struct store *s, int n)
{
    pthread_mutex_lock(&s->mu);
    s->fault_submits = n > 0 ? n : 0;
    pthread_mutex_unlock(&s->mu);
}

void store_test_pause_writer(struct store *s, int paused)
{
    pthread_mutex_lock(&s->mu);
    s->paused = paused != 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void store_test_pause_heartbeat(struct store *s, int paused)
{
    if (s->ops->pause_heartbeat != NULL)
        s->ops->pause_heartbeat(s->be, paused);
}

void store_test_pause_purge(struct store *s, int paused)
{
    pthread_mutex_lock(&s->mu);
    s->purge_paused = paused != 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* --- readers ----------------------------------------------------------------- */

void store_set_outbox_hook(struct store *s, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&s->mu);
    s->outbox_hook = fn;
    s->outbox_hook_arg = arg;
    pthread_mutex_unlock(&s->mu);
}

/* --- keys -------------------------------------------------------------------- */

int store_key_insert(struct store *s, const char *name, const char *scopes, const char *hash,
                     const char *experiments, int64_t created_ms, const char *actor,
                     const char *request_id, int64_t *rowid_out)
{
    struct store_key_op k = {.kind = STORE_KEY_OP_INSERT,
                             .name = name,
                             .scopes = scopes,
                             .hash = hash,
                             .experiments = experiments,
                             .created_ms = created_ms,
                             .actor = actor,
                             .request_id = request_id};
    k.rowid_out =
        rowid_out; /* the writer's; in the initializer clang-tidy 14 would want it const */
    return submit_wait(s, NULL, 0, &k);
}

int store_key_revoke(struct store *s, int64_t rowid, const char *actor, const char *request_id)
{
    struct store_key_op k = {.kind = STORE_KEY_OP_REVOKE,
                             .rowid = rowid,
                             .created_ms = clock_wall_ms(),
                             .actor = actor,
                             .request_id = request_id};
    return submit_wait(s, NULL, 0, &k);
}

/* --- the audit log ------------------------------------------------------------ */

/* Length of a string in the canonical forms; −1: none. */
static long slen(const char *s)
{
    return s != NULL ? (long)strlen(s) : -1L;
}

int store_audit_next(const char *prev, const struct store_audit_row *row, char out[65])
{
    char head[160];
    int n = snprintf(head, sizeof head, "\n%" PRId64 "|%d|%" PRId64 "|%ld|%ld|%ld|%ld|", row->seq,
                     row->kind, row->ts_ms, slen(row->subject), slen(row->detail), slen(row->actor),
                     slen(row->request_id));
    if (n < 0 || (size_t)n >= sizeof head)
        return -1;
    const char *const s[4] = {row->subject, row->detail, row->actor, row->request_id};
    return digest_chain_hex(prev, head, (size_t)n, s, 4, out);
}

int store_key_detail(const char *name, const char *scopes, const char *experiments,
                     const char *hash, char *buf, size_t len)
{
    return snprintf(buf, len, "name %ld:%s scopes %ld:%s experiments %ld:%s hash %ld:%s",
                    slen(name), name ? name : "", slen(scopes), scopes ? scopes : "",
                    slen(experiments), experiments ? experiments : "", slen(hash),
                    hash ? hash : "");
}

int store_audit_of_key(const struct store_key_op *k, int64_t key_id, struct store_audit_row *row,
                       char *buf, size_t len)
{
    int n = snprintf(buf, len, "key:%" PRId64, key_id);
    if (n < 0 || (size_t)n >= len)
        return -1;
    *row = (struct store_audit_row){
        .ts_ms = k->created_ms, .subject = buf, .actor = k->actor, .request_id = k->request_id};
    if (k->kind == STORE_KEY_OP_REVOKE) {
        row->kind = STORE_AUDIT_KEY_REVOKE;
        return 0;
    }
    row->kind = STORE_AUDIT_KEY_CREATE;
    char *d = buf + n + 1;
    size_t room = len - (size_t)n - 1;
    int m = store_key_detail(k->name, k->scopes, k->experiments, k->hash, d, room);
    if (m < 0 || (size_t)m >= room)
        return -1;
    row->detail = d;
    return 0;
}

int store_audit_of_create(const struct store_op *op, struct store_audit_row *row, char *buf,
                          size_t len)
{
    char hex[DIGEST_SHA256_HEX + 1];
    const void *p[1] = {op->config_json};
    size_t l[1] = {strlen(op->config_json)};
    if (digest_sha256_hex(p, l, 1, hex) != 0)
        return -1;
    int n = snprintf(buf, len, "config sha256:%s", hex);
    if (n < 0 || (size_t)n >= len)
        return -1;
    *row = (struct store_audit_row){.ts_ms = op->created_ms,
                                    .kind = STORE_AUDIT_EXP_CREATE,
                                    .subject = op->id,
                                    .detail = buf,
                                    .actor = op->ev.actor,
                                    .request_id = op->ev.request_id};
    return 0;
}

int store_audit_of_delete(const struct store_op *op, int64_t last_seq, const char *last_chain,
                          struct store_audit_row *row, char *buf, size_t len)
{
    int n = snprintf(buf, len, "design %s last %" PRId64 " chain %s",
                     op->design_hash != NULL ? op->design_hash : "none", last_seq,
                     last_chain != NULL && last_chain[0] != '\0' ? last_chain : "none");
    if (n < 0 || (size_t)n >= len)
        return -1;
    const char *subject = op->id;
    if (subject == NULL) { /* a caller that knows only the row: named by it */
        char *s = buf + n + 1;
        int m = snprintf(s, len - (size_t)n - 1, "rowid:%" PRId64, op->exp);
        if (m < 0 || (size_t)m >= len - (size_t)n - 1)
            return -1;
        subject = s;
    }
    *row = (struct store_audit_row){.ts_ms = op->ev.ts_ms,
                                    .kind = STORE_AUDIT_EXP_DELETE,
                                    .subject = subject,
                                    .detail = buf,
                                    .actor = op->ev.actor,
                                    .request_id = op->ev.request_id};
    return 0;
}

int store_load_audit(struct store *s, int (*cb)(void *arg, const struct store_audit_row *row),
                     void *arg)
{
    return s->ops->load_audit(s->be, cb, arg);
}

/* --- reads: the backend's, on the calling thread ----------------------------- */

int store_load_experiments(struct store *s,
                           int (*cb)(void *arg, const struct store_experiment_row *row), void *arg)
{
    return s->ops->load_experiments(s->be, cb, arg);
}

int store_load_events(struct store *s, int64_t exp, int64_t after_seq,
                      int (*cb)(void *arg, const struct store_event *ev), void *arg)
{
    return s->ops->load_events(s->be, exp, after_seq, cb, arg);
}

int store_find_assignment(struct store *s, int64_t exp, int64_t seq, struct store_event *out,
                          char *buf, size_t buflen)
{
    return s->ops->find_assignment(s->be, exp, seq, out, buf, buflen);
}

int store_find_outcome(struct store *s, int64_t exp, int64_t ref, struct store_event *out)
{
    return s->ops->find_outcome_kind(s->be, exp, ref, 0, out, NULL, 0);
}

int store_find_outcome_kind(struct store *s, int64_t exp, int64_t ref, int kind,
                            struct store_event *out)
{
    return s->ops->find_outcome_kind(s->be, exp, ref, kind, out, NULL, 0);
}

int store_find_bound_unit(struct store *s, int64_t exp, int64_t ref, char *buf, size_t buflen)
{
    struct store_event ev;
    return s->ops->find_outcome_kind(s->be, exp, ref, STORE_EV_UNIT, &ev, buf, buflen);
}

int store_find_unit(struct store *s, int64_t exp, const char *unit, struct store_event *out)
{
    return s->ops->find_unit_in(s->be, exp, unit, -1, out);
}

int store_find_unit_in(struct store *s, int64_t exp, const char *unit, int bandit,
                       struct store_event *out)
{
    return s->ops->find_unit_in(s->be, exp, unit, bandit, out);
}

int store_last_seq(struct store *s, int64_t exp, int64_t *out)
{
    return s->ops->last_seq(s->be, exp, out);
}

/* store_load_snapshots' walk: the caller's callback, and where it is. */
struct snap_walk {
    int (*cb)(void *arg, const struct store_snapshot *sn);
    void *arg;
    int64_t seq; /* the last row's */
    int ret;     /* the callback's result for it */
};

static int snap_step(void *arg, const struct store_snapshot *sn)
{
    struct snap_walk *w = arg;
    w->seq = sn->seq;
    w->ret = w->cb(w->arg, sn);
    return w->ret;
}

int store_load_snapshots(struct store *s, int64_t exp, int64_t before,
                         int (*cb)(void *arg, const struct store_snapshot *sn), void *arg)
{
    struct snap_walk w = {.cb = cb, .arg = arg, .seq = before};
    for (;;) {
        int64_t below = w.seq;
        w.ret = 0;
        int rc = s->ops->load_snapshot(s->be, exp, below, snap_step, &w);
        if (w.ret != 0)
            return w.ret; /* the callback stopped */
        if (rc == STORE_ERR_NOTFOUND)
            return STORE_OK; /* no older one */
        if (rc != STORE_OK)
            return rc;
        if (w.seq >= below)
            return STORE_ERR_IO; /* a row not below: never walk in place */
    }
}

static int seq_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

void store_snapshots_keep(int64_t *seq, size_t n, unsigned char *keep)
{
    int last_bucket = -1;
    qsort(seq, n, sizeof *seq, seq_desc);
    for (size_t i = 0; i < n; i++)
        keep[i] = i < STORE_SNAPSHOTS_KEEP;
    /* Walk from the oldest, so that the first met in each bucket (the
     * oldest) is the one that stays: as the latest moves on, each kept one
     * drifts into the next bucket, where it is older than a newcomer. */
    for (size_t k = n; k-- > STORE_SNAPSHOTS_KEEP;) {
        uint64_t dist = (uint64_t)(seq[0] - seq[k]);
        int bucket = 0;
        while (dist > 1) {
            dist >>= 1;
            bucket++;
        }
        keep[k] = bucket != last_bucket;
        last_bucket = bucket;
    }
    /* the cap: the oldest beyond it go */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i] && kept++ >= STORE_SNAPSHOTS_MAX)
            keep[i] = 0;
}

int store_outbox_pending(struct store *s, int64_t after_id, int limit,
                         int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    return s->ops->outbox_pending(s->be, after_id, limit, cb, arg);
}

int store_outbox_list(struct store *s, int64_t exp, int64_t before_id, int limit,
                      int (*cb)(void *arg, const struct store_delivery *d), void *arg)
{
    return s->ops->outbox_list(s->be, exp, before_id, limit, cb, arg);
}

int store_outbox_depth(struct store *s, int64_t *out)
{
    return s->ops->outbox_depth(s->be, out);
}

int store_load_keys(struct store *s, int (*cb)(void *arg, const struct store_key_row *row),
                    void *arg)
{
    return s->ops->load_keys(s->be, cb, arg);
}

int store_find_experiment(struct store *s, const char *id,
                          int (*cb)(void *arg, const struct store_experiment_row *row), void *arg)
{
    return s->ops->find_experiment(s->be, id, cb, arg);
}

/* --- ownership --------------------------------------------------------------- */

int store_shared(const struct store *s)
{
    return s->ops->shared;
}

void store_set_advertise(struct store *s, const char *url)
{
    if (s->ops->set_advertise != NULL)
        s->ops->set_advertise(s->be, url);
}

uint64_t store_keys_epoch(struct store *s)
{
    return s->ops->keys_epoch != NULL ? s->ops->keys_epoch(s->be) : 0;
}

int store_claim(struct store *s, int64_t exp, char *owner, size_t ownerlen)
{
    struct store_op op = {.kind = STORE_OP_CLAIM, .exp = exp};
    op.owner_out = owner; /* the writer's; in the initializer clang-tidy wants it const */
    op.owner_len = ownerlen;
    if (owner != NULL && ownerlen > 0)
        owner[0] = '\0';
    return submit_wait(s, &op, 1, NULL);
}

int store_backup(struct store *s, const char *path, char *err, size_t errlen)
{
    return s->ops->backup(s->be, path, err, errlen);
}

/* --- open and close ---------------------------------------------------------- */

/* The backend serving target. */
static const struct store_backend_ops *backend_for(const char *target)
{
    size_t i;
    for (i = 0; i + 1 < sizeof backends / sizeof backends[0] && !backends[i]->claims(target); i++)
        ;
    return backends[i];
}

int store_target_is_file(const char *target)
{
    return backend_for(target)->local;
}

const char *store_describe(const struct store *s)
{
    return s->ops->describe(s->be);
}

int store_serve_exclusive(struct store *s, char *err, size_t errlen)
{
    return s->ops->serve_exclusive != NULL ? s->ops->serve_exclusive(s->be, err, errlen) : STORE_OK;
}

const char *store_file(const struct store *s)
{
    return s->ops->file != NULL ? s->ops->file(s->be) : NULL;
}

/* A count of commits at *p, clamped to [0, INT_MAX]; -1 when there is no
 * number (strtol, not sscanf: CERT ERR34-C). */
static long fault_count(const char **p)
{
    char *end;
    errno = 0;
    long n = strtol(*p, &end, 10);
    if (end == *p)
        return -1;
    *p = end;
    if (n < 0)
        return 0;
    return errno == ERANGE || n > INT_MAX ? INT_MAX : n;
}

/* Parse BANDITD_STORE_FAIL_COMMITS ("N" or "K+N"); anything else injects
 * nothing. */
static void fault_from_env(struct store *s)
{
    const char *v = getenv(STORE_FAULT_ENV);
    if (v == NULL || *v == '\0')
        return;
    long skip = 0, fail = fault_count(&v);
    if (fail >= 0 && *v == '+') {
        v++;
        skip = fail;
        fail = fault_count(&v);
    }
    if (fail < 0)
        return;
    s->fault_skip = (int)skip;
    s->fault_fail = (int)fail;
}

static void kill_from_env(struct store *s)
{
    const char *v = getenv(STORE_KILL_ASIDE_ENV);
    long n = v != NULL && *v != '\0' ? fault_count(&v) : 0;
    s->kill_aside = n > 0 ? (int)n : 0;
}

/* Free whatever of s exists. The writer must not be running. */
static void store_free(struct store *s)
{
    free(s->poison);
    if (s->be != NULL)
        s->ops->close(s->be);
    if (s->have_cv)
        pthread_cond_destroy(&s->cv);
    if (s->have_mu)
        pthread_mutex_destroy(&s->mu);
    free(s);
}

struct store *store_open(const char *path, enum store_sync sync, char *err, size_t errlen)
{
    struct store *s = NULL;
    int prc = 0;

    s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    s->ops = backend_for(path);
    if ((prc = pthread_mutex_init(&s->mu, NULL)) != 0)
        goto fail_sys;
    s->have_mu = 1;
    if ((prc = pthread_cond_init(&s->cv, NULL)) != 0)
        goto fail_sys;
    s->have_cv = 1;
    s->be = s->ops->open(path, sync, &s->purging, err, errlen);
    if (s->be == NULL)
        goto fail;
    fault_from_env(s);
    kill_from_env(s);
    if ((prc = pthread_create(&s->writer, NULL, writer_main, s)) != 0)
        goto fail_sys;
    s->writer_started = 1;
    return s;

fail_sys:
    snprintf(err, errlen, "open %s: %s", path, strerror(prc)); /* pthread error */
fail:
    if (s != NULL)
        store_free(s);
    return NULL;
}

void store_close(struct store *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->closing = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->writer_started)
        pthread_join(s->writer, NULL);
    store_free(s);
}

void store_event_copy_strings(struct store_event *ev, char *buf, size_t buflen)
{
    const char *src[4] = {ev->unit, ev->actor, ev->request_id, ev->chain};
    const char **dst[4] = {&ev->unit, &ev->actor, &ev->request_id, &ev->chain};
    size_t used = 0;
    ev->text = NULL;
    for (int i = 0; i < 4; i++) {
        *dst[i] = NULL;
        if (src[i] == NULL || buf == NULL || used >= buflen)
            continue;
        size_t n = strlen(src[i]);
        if (i == 0 && n >= buflen) /* the unit: truncated, as always */
            n = buflen - 1;
        if (used + n + 1 > buflen)
            continue;
        /* the sources are the row's own memory, never buf */
        memcpy(buf + used, src[i], n);
        buf[used + n] = '\0';
        *dst[i] = buf + used;
        used += n + 1;
    }
}
