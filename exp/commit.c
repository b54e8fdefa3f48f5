/*
 * commit.c — the runtime's half of durability (exp.h, "Durability"):
 * batches queued for the store's writer under the experiment's lock, the
 * bookkeeping when they commit (assignments become final, uncommitted
 * units leave the unit table), and the reload from disk after a write
 * failed or was refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "exp/internal.h"

/* One queued batch, until its commit callback. */
struct sub {
    struct exp *x;
    unsigned gen;
    struct exp_batch *batch;
    store_done_fn done;
    void *arg;
    int owns_batch;
    int is_delete;
};

static void on_commit(void *arg, int err)
{
    struct sub *s = arg;
    struct exp *x = s->x;
    int forget = 0;
    exp_lock(x);
    if (--x->inflight == 0)
        pthread_cond_broadcast(&x->idle);
    if (s->is_delete) {
        /* Gone from memory only once gone from disk: a failed delete
         * leaves the experiment as the disk has it (reloaded, which also
         * clears the store's failure mark on its key), and since the id
         * stays registered meanwhile no create can take it (409). */
        x->deleting = 0;
        if (err == STORE_OK) {
            x->deleted = 1;
            forget = 1;
        } else {
            atomic_store(&x->stale, 1);
        }
    } else if (s->gen == atomic_load(&x->gen) && !x->deleted) {
        struct exp_data *d = x->d;
        if (err == STORE_OK) {
            for (size_t i = 0; i < s->batch->nassign; i++) {
                struct exp_assignment *a = exp_tab_find(d, s->batch->assign_seqs[i]);
                if (a == NULL)
                    continue;
                a->committed = 1;
                if (a->unit != NULL)
                    exp_utab_remove(d, a->unit, a->seq);
                exp_drop_if_final(d, a);
            }
            for (size_t i = 0; i < s->batch->noutcome; i++) {
                struct exp_assignment *a = exp_tab_find(d, s->batch->outcome_seqs[i]);
                if (a == NULL)
                    continue;
                a->outcome_committed = 1;
                exp_drop_if_final(d, a);
            }
        } else {
            /* Memory holds events the disk lost: reload before the next
             * request (the store fails this experiment's later writes until
             * then, so nothing after the gap commits). */
            atomic_store(&x->stale, 1);
            if (err == STORE_ERR_NOTOWNER) /* claim again (and reload) first */
                atomic_store(&x->owned, 0);
        }
    }
    exp_unlock(x);
    if (forget)
        exp_registry_remove(x); /* before the 204: the id is free when the client hears */
    if (s->done != NULL)
        s->done(s->arg, err);
    if (s->owns_batch) {
        exp_batch_free(s->batch);
        free(s->batch);
    }
    exp_put(x);
    free(s);
}

/* Queue b for the writer. is_delete: the batch deletes the experiment; it
 * depends on no earlier write (whatever they left, the row and its log
 * go), so it resets the key: a write that failed before it must not fail
 * the delete too (and the poison of a deleted rowid must not outlive it:
 * SQLite hands the largest rowid out again after its row is deleted). */
int exp_submit(struct exp *x, struct exp_batch *b, int owns, int is_delete, store_done_fn done,
               void *arg)
{
    /* Memory holds events the disk does not (a write failed, or was never
     * queued): nothing after them may reach the disk until the reload. The
     * store refuses later writes of a key whose write failed; this covers
     * a write that never reached its queue (queue full, out of memory). */
    if (atomic_load(&x->stale) && !is_delete)
        return STORE_ERR_FULL;
    /* Webhooks: the outbox rows of what this batch's events caused go in
     * the same submission, so in the same transaction (webhooks.c). */
    struct sub *s = calloc(1, sizeof *s);
    if (s == NULL || (!is_delete && (exp_watch_emit(x, b) != 0 || exp_audit_seal(x, b) != 0))) {
        free(s);
        atomic_store(&x->stale, 1);
        return STORE_ERR_NOMEM;
    }
    s->x = x;
    s->gen = atomic_load(&x->gen);
    s->batch = b;
    s->done = done;
    s->arg = arg;
    s->owns_batch = owns;
    s->is_delete = is_delete;
    atomic_fetch_add(&x->refs, 1);
    int rc = store_submit_keyed(exp_rt.store, x->rowid, x->d->need_reset || is_delete, b->ops, b->n,
                                on_commit, s);
    if (rc != STORE_OK) {
        /* Refused at once (queue full, no memory): unlike a failed
         * commit, this poisons nothing in the store, so the stale mark
         * alone keeps later events from being queued after the gap. */
        atomic_fetch_sub(&x->refs, 1);
        free(s);
        atomic_store(&x->stale, 1);
        return rc;
    }
    x->d->need_reset = 0;
    x->inflight++;
    /* A checkpoint now and then: captured here, sealed and queued behind
     * this batch once x's lock is let go (exp_unlock). */
    if (!is_delete)
        exp_snapshot_capture(x);
    return STORE_OK;
}

int exp_submit_locked(struct exp *x, struct exp_batch *b, store_done_fn done, void *arg)
{
    return exp_submit(x, b, 0, 0, done, arg);
}

/* Wait (x locked, released meanwhile) until none of x's writes is queued or
 * another thread did the reload, at most timeout_ms. Returns 1 when so. */
static int wait_idle(struct exp *x, int timeout_ms)
{
    struct timespec dl = clock_deadline(CLOCK_MONOTONIC, (unsigned)timeout_ms);
    while (x->inflight > 0 && atomic_load(&x->stale))
        if (pthread_cond_timedwait(&x->idle, &x->mu, &dl) == ETIMEDOUT)
            break;
    return x->inflight == 0 || !atomic_load(&x->stale);
}

/* Wait (x locked, released meanwhile) until none of x's writes is queued,
 * at most timeout_ms: a claim waits for the writer, whose callbacks for x
 * would wait for x's lock. 1 when none is. */
static int wait_no_inflight(struct exp *x, int timeout_ms)
{
    struct timespec dl = clock_deadline(CLOCK_MONOTONIC, (unsigned)timeout_ms);
    while (x->inflight > 0)
        if (pthread_cond_timedwait(&x->idle, &x->mu, &dl) == ETIMEDOUT)
            break;
    return x->inflight == 0;
}

/* Make this daemon x's owner (exp.h): EXP_OK with x marked stale, so that
 * it is reloaded from the database — the truth, whatever its previous
 * owner wrote — before it is served. */
static int claim_locked(struct exp *x)
{
    if (!wait_no_inflight(x, EXP_RELOAD_WAIT_MS))
        return EXP_ERR_STORE;
    int rc = store_claim(exp_rt.store, x->rowid, x->owner, sizeof x->owner);
    if (rc == STORE_ERR_NOTOWNER)
        return EXP_ERR_NOTOWNER;
    if (rc == STORE_ERR_NOTFOUND) {
        x->deleted = 1; /* by another daemon */
        return EXP_ERR_GONE;
    }
    if (rc != STORE_OK)
        return EXP_ERR_STORE;
    log_info("experiment %s: owned by this daemon now", x->id);
    atomic_store(&x->owned, 1);
    atomic_store(&x->stale, 1);
    return EXP_OK;
}

int exp_refresh_locked(struct exp *x)
{
    int64_t last = 0;
    char err[256];
    int is_corrupt;

    if (x->deleted || x->deleting)
        return EXP_ERR_GONE;
    if (atomic_load(&x->owned))
        return EXP_OK; /* its memory is the truth */
    int rc = store_find_experiment(exp_rt.store, x->id, NULL, NULL);
    if (rc == STORE_ERR_NOTFOUND) {
        x->deleted = 1;
        return EXP_ERR_GONE;
    }
    if (rc != STORE_OK || store_last_seq(exp_rt.store, x->rowid, &last) != STORE_OK)
        return EXP_ERR_STORE;
    if (!atomic_load(&x->stale) && last == x->d->seq)
        return EXP_OK;
    struct exp_data *d = exp_replay_all(x, err, sizeof err, &is_corrupt);
    if (d == NULL)
        return is_corrupt ? EXP_ERR_CORRUPT : EXP_ERR_STORE;
    exp_data_free(x->d);
    x->d = d;
    atomic_fetch_add(&x->gen, 1);
    atomic_store(&x->stale, 0);
    return EXP_OK;
}

int exp_prepare_locked(struct exp *x, int64_t now)
{
    if (x->deleted || x->deleting)
        return EXP_ERR_GONE;
    if (x->corrupt[0] != '\0')
        return EXP_ERR_CORRUPT;
    if (x->draining) {
        /* A correction is rebuilding x from its log (corrections.c):
         * nothing may be queued meanwhile. */
        struct timespec dl = clock_deadline(CLOCK_MONOTONIC, EXP_RELOAD_WAIT_MS);
        while (x->draining)
            if (pthread_cond_timedwait(&x->idle, &x->mu, &dl) == ETIMEDOUT)
                return EXP_ERR_STORE;
        if (x->deleted || x->deleting)
            return EXP_ERR_GONE;
    }
    if (!atomic_load(&x->owned)) {
        int rc = claim_locked(x);
        if (rc != EXP_OK)
            return rc;
    }
    if (atomic_load(&x->stale)) {
        /* The disk is final for this experiment only once every write
         * queued before the failure has completed: a write refused at
         * queue time poisons nothing, so older ones may still commit (and
         * their clients hear 2xx). Reloading before would forget them. */
        if (!wait_idle(x, EXP_RELOAD_WAIT_MS))
            return EXP_ERR_STORE;
        if (x->deleted || x->deleting)
            return EXP_ERR_GONE;
    }
    if (atomic_load(&x->stale)) {
        char err[256];
        int is_corrupt;
        struct exp_data *d = exp_replay_all(x, err, sizeof err, &is_corrupt);
        if (d == NULL && is_corrupt) {
            exp_mark_corrupt(x, err);
            return EXP_ERR_CORRUPT;
        }
        if (d == NULL) {
            log_warn("experiment %s: reload failed: %s", x->id, err);
            return EXP_ERR_STORE;
        }
        exp_data_free(x->d);
        x->d = d;
        d->need_reset = 1;
        atomic_fetch_add(&x->gen, 1);
        atomic_store(&x->stale, 0);
        char how[64] = "the whole log replayed";
        if (d->loaded_from > 0)
            snprintf(how, sizeof how, "from the snapshot at seq %" PRId64, d->loaded_from);
        log_info("experiment %s reloaded from disk after a failed write or a takeover (%" PRId64
                 " events, %s)",
                 x->id, d->seq, how);
    }
    /* Not only at a push: answers behind an old pending assignment, with
     * no assignment after them, would keep the assignments (and every
     * snapshot's walk of them) until that one expires, a TTL later. The
     * sweeper comes here every second. */
    exp_fifo_trim(x->d);
    if (x->d->flen > 0) {
        const struct exp_assignment *a = exp_fifo_at(x->d, 0);
        if (a->status != EXP_A_PENDING || a->expires_ms <= now) {
            struct exp_batch *b = calloc(1, sizeof *b);
            if (b == NULL)
                return EXP_OK;
            exp_batch_init(b);
            exp_expire_due(x, b, now);
            int rc = b->n == 0 ? STORE_OK : exp_submit(x, b, 1, 0, NULL, NULL);
            if (b->n == 0 || rc != STORE_OK) {
                exp_batch_free(b);
                free(b);
            }
            /* Refused: the expiries are in memory only (x is stale now);
             * the caller must not queue anything after them. */
            if (rc != STORE_OK)
                return EXP_ERR_STORE;
        }
    }
    return EXP_OK;
}

int exp_delete_locked(struct exp *x, struct exp_batch *b, int64_t now_ms, store_done_fn done,
                      void *arg)
{
    struct store_op *op = exp_batch_op(b);
    if (op == NULL)
        return STORE_ERR_NOMEM;
    op->kind = STORE_OP_EXP_DELETE;
    op->exp = x->rowid;
    /* The audit log's record of the delete (store.h, STORE_AUDIT_EXP_DELETE). */
    int known = x->d != NULL && x->corrupt[0] == '\0';
    op->id = exp_batch_str(b, x->id);
    op->design_hash = known ? exp_batch_str(b, exp_design_hash(x)) : NULL;
    op->ev.ts_ms = now_ms;
    op->ev.actor = b->actor;
    op->ev.request_id = b->request_id;
    if (op->id == NULL || (known && op->design_hash == NULL))
        return STORE_ERR_NOMEM;
    int rc = exp_submit(x, b, 0, 1, done, arg);
    if (rc != STORE_OK)
        return rc;
    x->deleting = 1; /* on_commit forgets it, or brings it back on failure */
    return STORE_OK;
}
