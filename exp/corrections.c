/*
 * corrections.c — a wrong outcome corrected (exp.h, exp_ev_correct): the
 * reward of a rewarded pull is replaced by a CORRECT event carrying the new
 * value and a reason. The statistics cannot be updated in place exactly
 * (the empirical-Bernstein process and the Beta draws depend on the order
 * of every reward), so the experiment's data is rebuilt from its log with
 * the corrected value at the reward's place, the way a restart replays it
 * (replay.c): memory and a later restart agree bit for bit.
 *
 * The rebuild reads the log from disk, so every write of the experiment
 * must have committed first: the correction waits for them with the
 * experiment marked draining, which holds other requests back
 * (exp_prepare_locked) until the rebuilt data is in place.
 */
#include <errno.h>
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

/* The reported value of rewarded pull id, from the log (every write has
 * committed). EXP_OK and *ev_out (the assignment), or an error. */
static int find_reward(struct exp *x, const struct exp_aid *id, struct store_event *as,
                       double *value, struct exp_refusal *why)
{
    char unit[8];
    int rc = store_find_assignment(exp_rt.store, x->rowid, id->seq, as, unit, sizeof unit);
    if (rc == STORE_ERR_NOTFOUND)
        return EXP_ERR_NOT_FOUND;
    if (rc != STORE_OK)
        return EXP_ERR_STORE;
    if (as->kind != STORE_EV_ASSIGN ||
        (id->has_check && exp_assignment_check(as->ts_ms) != id->check))
        return EXP_ERR_NOT_FOUND;
    if (as->flags & STORE_AF_EXPLOIT)
        return refused(why, "assignment_id",
                       "an exploitation assignment: its reward is recorded for the audit and "
                       "never counted, so there is nothing to correct");
    struct store_event o;
    rc = store_find_outcome(exp_rt.store, x->rowid, id->seq, &o);
    if (rc == STORE_ERR_NOTFOUND)
        return refused(why, "assignment_id", "pending: report its reward instead");
    if (rc != STORE_OK)
        return EXP_ERR_STORE;
    if (o.kind != STORE_EV_REWARD)
        return refused(why, "assignment_id",
                       "expired before its reward came: no reward of it is counted");
    rc = store_find_outcome_kind(exp_rt.store, x->rowid, id->seq, STORE_EV_CORRECT, &o);
    if (rc == STORE_OK)
        return refused(why, "assignment_id", "corrected already; a correction is final");
    if (rc != STORE_ERR_NOTFOUND)
        return EXP_ERR_STORE;
    rc = store_find_outcome_kind(exp_rt.store, x->rowid, id->seq, STORE_EV_REWARD, &o);
    if (rc != STORE_OK)
        return EXP_ERR_STORE;
    *value = o.value;
    return EXP_OK;
}

/* The rebuild, the checks on it and the swap (draining set, every write
 * committed). */
static int rebuild(struct exp *x, struct exp_batch *b, const struct exp_aid *id, double v,
                   const char *reason, int64_t now, struct exp_corrected *out,
                   struct exp_refusal *why)
{
    struct store_event as;
    double previous = NAN;
    int rc = find_reward(x, id, &as, &previous, why);
    if (rc != EXP_OK)
        return rc;
    if (previous == v)
        return refused(why, "reward", "the value reported already: nothing to correct");
    /* Reserve what the event needs before the data changes: an op (taken
     * back at once; its room stays) and the reason's copy. */
    if (exp_batch_op(b) == NULL)
        return EXP_ERR_NOMEM;
    b->n--;
    const char *text = exp_batch_str(b, reason);
    if (text == NULL)
        return EXP_ERR_NOMEM;
    struct exp_correction c = {.ref = id->seq, .seq = x->d->seq + 1, .value = v};
    char err[256];
    int is_corrupt = 0;
    struct exp_data *d = exp_replay_with(x, &c, err, sizeof err, &is_corrupt);
    if (d == NULL) {
        log_warn("experiment %s: correction of %lld: rebuild failed: %s", x->id, (long long)id->seq,
                 err);
        return EXP_ERR_STORE;
    }
    for (size_t k = 0; k < x->cfg.n_bandits; k++)
        if (engine_bandit_done(x->d->eng, k) && !engine_bandit_done(d->eng, k)) {
            exp_data_free(d);
            char msg[200];
            snprintf(msg, sizeof msg,
                     "bandit \"%s\" has concluded; with this value it would not have, and a "
                     "conclusion is never withdrawn",
                     x->cfg.bandit_ids[k]);
            return refused(why, "reward", msg);
        }
    /* What the webhooks announced stays what they announced: a transition
     * the correction causes (a bandit done) goes out with its event. */
    exp_watch_free(d->watch);
    d->watch = x->d->watch;
    x->d->watch = NULL;
    exp_data_free(x->d);
    x->d = d;
    atomic_fetch_add(&x->gen, 1);
    struct store_op *op = exp_event_op(x, b, STORE_EV_CORRECT, now);
    op->ev.ref = id->seq;
    op->ev.bandit = as.bandit;
    op->ev.arm = as.arm;
    op->ev.value = v;
    op->ev.text = text;
    out->seq = op->ev.seq;
    out->bandit = as.bandit;
    out->arm = as.arm;
    out->previous = previous;
    return EXP_OK;
}

int exp_ev_correct(struct exp *x, struct exp_batch *b, const struct exp_aid *id, double v,
                   const char *reason, int64_t now, struct exp_corrected *out,
                   struct exp_refusal *why)
{
    if (engine_stopped(x->d->eng))
        return refused(why, "assignment_id",
                       "the experiment has stopped: its result stands (a stop is final)");
    if (id->seq < 1 || id->seq > x->d->seq)
        return EXP_ERR_NOT_FOUND;
    x->draining = 1;
    int rc = drain(x) != 0               ? EXP_ERR_STORE
             : x->deleted || x->deleting ? EXP_ERR_GONE
                                         : rebuild(x, b, id, v, reason, now, out, why);
    x->draining = 0;
    pthread_cond_broadcast(&x->idle);
    return rc;
}
