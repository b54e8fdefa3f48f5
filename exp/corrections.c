/*
 * corrections.c — a wrong outcome corrected (exp.h, exp_ev_correct): the
 * reward of a rewarded pull is replaced by a CORRECT event carrying the new
 * value and a reason. The statistics cannot be updated in place exactly
 * (the empirical-Bernstein process and the Beta draws depend on the order
 * of every reward), so the experiment's data is rebuilt from its log with
 * the corrected value at the reward's place, the way a restart replays it
 * (replay.c): memory and a later restart agree bit for bit.
 *
 * The rebuild starts from a stored snapshot taken before the earliest
 * corrected reward when there is one (replay.c, exp_replay_with): its cost
 * follows the distance to that reward, not the experiment's age.
 *
 * The rebuild reads the log from disk, so every write of the experiment
 * must have committed first: the correction waits for them with the
 * experiment marked draining, which holds other requests back
 * (exp_prepare_locked, exp_summary_locked) until the rebuilt data is in
 * place; the replay itself runs without the lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "exp/internal.h"

static int refused(struct exp_refusal *why, const char *field, const char *msg)
{
    snprintf(why->field, sizeof why->field, "%s", field);
    snprintf(why->message, sizeof why->message, "%s", msg);
    return EXP_ERR_REFUSED;
}

/* Wait (lock held, released meanwhile) until none of x's writes is
 * queued. 0, or −1 on timeout or a failed write. */
static int drain(struct exp *x)
{
    struct timespec dl = clock_deadline(CLOCK_MONOTONIC, EXP_RELOAD_WAIT_MS);
    while (x->inflight > 0)
        if (pthread_cond_timedwait(&x->idle, &x->mu, &dl) == ETIMEDOUT)
            return -1;
    return atomic_load(&x->stale) ? -1 : 0;
}

/* The reported value of rewarded pull it->id, from the log (every write
 * has committed): EXP_OK with it->bandit, arm, previous filled, or an
 * error. */
static int find_reward(struct exp *x, struct exp_correction_item *it, struct exp_refusal *why)
{
    const struct exp_aid *id = &it->id;
    struct store_event as, o;
    char unit[8];
    int rc = store_find_assignment(exp_rt.store, x->rowid, id->seq, &as, unit, sizeof unit);
    if (rc == STORE_ERR_NOTFOUND)
        return EXP_ERR_NOT_FOUND;
    if (rc != STORE_OK)
        return EXP_ERR_STORE;
    if (as.kind != STORE_EV_ASSIGN ||
        (id->has_check && exp_assignment_check(as.ts_ms) != id->check))
        return EXP_ERR_NOT_FOUND;
    if (as.flags & STORE_AF_EXPLOIT)
        return refused(why, "assignment_id",
                       "an exploitation assignment: its reward is recorded for the audit and "
                       "never counted, so there is nothing to correct");
    rc = store_find_outcome(exp_rt.store, x->rowid, id->seq, &o);
    if (rc == STORE_ERR_NOTFOUND)
        return refused(why, "assignment_id", "pending: report its reward instead");
    if (rc != STORE_OK)
        return EXP_ERR_STORE;
    /* An expiry counts when the experiment records a default reward: that
     * value can be corrected too (the real outcome came to light). */
    if (o.kind != STORE_EV_REWARD && !(o.kind == STORE_EV_EXPIRE && !isnan(o.value)))
        return refused(why, "assignment_id",
                       "expired before its reward came: no reward of it is counted");
    it->previous = o.value;
    it->reward_seq = o.seq;
    rc = store_find_outcome_kind(exp_rt.store, x->rowid, id->seq, STORE_EV_CORRECT, &o);
    if (rc == STORE_OK)
        return refused(why, "assignment_id", "corrected already; a correction is final");
    if (rc != STORE_ERR_NOTFOUND)
        return EXP_ERR_STORE;
    if (it->previous == it->value)
        return refused(why, "reward", "the value reported already: nothing to correct");
    it->bandit = as.bandit;
    it->arm = as.arm;
    return EXP_OK;
}

/* Check every item, rebuild, check the rebuilt data and swap it in
 * (draining set, every write committed). */
static int rebuild(struct exp *x, struct exp_batch *b, struct exp_correction_item *items, size_t n,
                   int64_t now, size_t *bad, struct exp_refusal *why)
{
    struct exp_correction *cs = calloc(n, sizeof *cs);
    const char **texts = calloc(n, sizeof *texts);
    int rc = cs != NULL && texts != NULL ? EXP_OK : EXP_ERR_NOMEM;
    size_t reserved = 0;
    for (size_t i = 0; i < n && rc == EXP_OK; i++) {
        *bad = i;
        for (size_t j = 0; j < i && rc == EXP_OK; j++)
            if (items[j].id.seq == items[i].id.seq)
                rc = refused(why, "assignment_id", "corrected twice in one request");
        if (rc == EXP_OK)
            rc = find_reward(x, &items[i], why);
        cs[i] = (struct exp_correction){.ref = items[i].id.seq,
                                        .seq = x->d->seq + 1 + (int64_t)i,
                                        .at = items[i].reward_seq,
                                        .value = items[i].value};
        /* What the events need, reserved before the data changes: their
         * ops (taken back at once; the room stays) and the reasons. */
        if (rc == EXP_OK && (texts[i] = exp_batch_str(b, items[i].reason)) == NULL)
            rc = EXP_ERR_NOMEM;
        if (rc == EXP_OK && exp_batch_op(b) == NULL)
            rc = EXP_ERR_NOMEM;
        reserved += rc == EXP_OK;
    }
    b->n -= reserved;
    if (rc != EXP_OK)
        goto out;
    char err[256];
    int is_corrupt = 0;
    /* The replay reads only the disk: the lock is not needed meanwhile, and
     * draining keeps every request out (exp_prepare_locked waits up to a
     * second, then answers 503; exp_summary_locked waits), so a long log
     * holds no server thread for long. */
    exp_unlock(x);
    struct exp_data *d = exp_replay_with(x, cs, n, err, sizeof err, &is_corrupt);
    exp_lock(x);
    if (d == NULL) {
        log_warn("experiment %s: correction: rebuild failed: %s", x->id, err);
        rc = EXP_ERR_STORE;
        goto out;
    }
    for (size_t k = 0; k < x->cfg.n_bandits; k++)
        if (engine_bandit_done(x->d->eng, k) && !engine_bandit_done(d->eng, k)) {
            exp_data_free(d);
            char msg[200];
            snprintf(msg, sizeof msg,
                     "bandit \"%s\" has concluded; with %s it would not have, and a "
                     "conclusion is never withdrawn",
                     x->cfg.bandit_ids[k], n == 1 ? "this value" : "these values");
            *bad = 0;
            rc = refused(why, "reward", msg);
            goto out;
        }
    char how[64] = "the whole log replayed";
    if (d->loaded_from > 0)
        snprintf(how, sizeof how, "from the snapshot at seq %" PRId64, d->loaded_from);
    log_info("experiment %s: correction: rebuilt %s", x->id, how);
    /* What the webhooks announced stays what they announced: a transition
     * the correction causes (a bandit done) goes out with its event. */
    exp_watch_free(d->watch);
    d->watch = x->d->watch;
    x->d->watch = NULL;
    exp_data_free(x->d);
    x->d = d;
    atomic_fetch_add(&x->gen, 1);
    for (size_t i = 0; i < n; i++) {
        struct store_op *op = exp_event_op(x, b, STORE_EV_CORRECT, now);
        op->ev.ref = items[i].id.seq;
        op->ev.bandit = items[i].bandit;
        op->ev.arm = items[i].arm;
        op->ev.value = items[i].value;
        op->ev.text = texts[i];
        exp_mark_add(x->d, &op->ev);
        items[i].seq = op->ev.seq;
    }
out:
    free(cs);
    free(texts);
    return rc;
}

int exp_ev_correct(struct exp *x, struct exp_batch *b, struct exp_correction_item *items, size_t n,
                   int64_t now, size_t *bad, struct exp_refusal *why)
{
    *bad = 0;
    if (engine_stopped(x->d->eng))
        return refused(why, "assignment_id",
                       "the experiment has stopped: its result stands (a stop is final)");
    for (size_t i = 0; i < n; i++)
        if (items[i].id.seq < 1 || items[i].id.seq > x->d->seq) {
            *bad = i;
            return EXP_ERR_NOT_FOUND;
        }
    x->draining = 1;
    int rc = drain(x) != 0               ? EXP_ERR_STORE
             : x->deleted || x->deleting ? EXP_ERR_GONE
                                         : rebuild(x, b, items, n, now, bad, why);
    x->draining = 0;
    pthread_cond_broadcast(&x->idle);
    return rc;
}
