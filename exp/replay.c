/*
 * replay.c — an experiment's data rebuilt from its event log: at startup,
 * and after a failed write (commit.c). The policy re-selects every logged
 * pull, so its state comes back exactly (engine.h, determinism); a log the
 * policy no longer reproduces (a new version of it) is replayed again with
 * the logged pulls recorded instead of re-selected.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "exp/internal.h"

/* Replay state. */
struct replay {
    struct exp *x;
    struct exp_data *d;
    int exact;       /* 0 after a mismatch: pulls are recorded, not re-selected */
    int mismatch;    /* set when the policy chose differently from the log */
    int64_t bad_seq; /* the first event found corrupt (0: none) */
    char why[160];   /* and what is wrong with it */
};

/* Stop the replay: the event at seq is corrupt. */
static int corrupt(struct replay *r, int64_t seq, const char *why)
{
    r->bad_seq = seq;
    snprintf(r->why, sizeof r->why, "%s", why);
    return EXP_REPLAY_CORRUPT;
}

static int arm_ok(const struct exp *x, int32_t bandit, int32_t arm)
{
    return bandit >= 0 && (size_t)bandit < x->cfg.n_bandits && arm >= 0 &&
           (size_t)arm < x->cfg.n_arms[bandit];
}

static int value_ok(const struct exp *x, double v)
{
    return isfinite(v) && v >= x->cfg.reward_min && v <= x->cfg.reward_max;
}

/* An outcome (REWARD or EXPIRE) of an assignment that is not pending in
 * memory: legitimate only as the audit record of an exploit assignment's
 * reward (those are never pending). Checked on disk: exploit rewards are
 * few, and pending ones never take this path. */
static int audit_reward_ok(struct replay *r, const struct store_event *ev)
{
    if (ev->kind != STORE_EV_REWARD)
        return 0;
    struct store_event a;
    char unit[8];
    int rc = store_find_assignment(exp_rt.store, r->x->rowid, ev->ref, &a, unit, sizeof unit);
    return rc == STORE_OK && a.kind == STORE_EV_ASSIGN && (a.flags & STORE_AF_EXPLOIT);
}

static int replay_assign(struct replay *r, const struct store_event *ev)
{
    struct exp *x = r->x;
    struct exp_data *d = r->d;
    if (!arm_ok(x, ev->bandit, ev->arm))
        return corrupt(r, ev->seq, "assignment of an arm the experiment does not have");
    int exploit = (ev->flags & STORE_AF_EXPLOIT) != 0;
    /* The fallback arm: the control, served in place of the engine's
     * recommendation (events.c). */
    int fallback = (ev->flags & STORE_AF_FALLBACK) != 0;
    if (fallback &&
        (!exploit || x->cfg.control_arm == NULL || x->cfg.control_arm[ev->bandit] != ev->arm))
        return corrupt(r, ev->seq, "a fallback assignment of an arm that is not the control");
    if (r->exact) {
        struct engine_pull p;
        engine_assign(d->eng, (ev->flags & STORE_AF_BANDIT_GIVEN) ? ev->bandit : -1, &p);
        if ((int)p.bandit != ev->bandit || (!fallback && (int)p.arm != ev->arm) ||
            p.exploit != exploit) {
            r->mismatch = 1;
            return EXP_REPLAY_MISMATCH; /* start over in recording mode */
        }
    } else if (!exploit) {
        engine_record_pull(d->eng, (size_t)ev->bandit, (size_t)ev->arm);
    }
    if (exploit)
        return 0;
    struct exp_assignment *a = calloc(1, sizeof *a);
    if (a == NULL)
        return -1;
    a->seq = ev->seq;
    a->bandit = ev->bandit;
    a->arm = ev->arm;
    a->created_ms = ev->ts_ms;
    a->expires_ms = ev->expires_ms;
    a->value = NAN;
    a->late = NAN;
    a->status = EXP_A_PENDING;
    a->committed = 1;
    a->outcome_committed = 1;
    if (exp_tab_insert(d, a) != 0) {
        free(a);
        return -1;
    }
    if (exp_fifo_push(d, ev->seq) != 0)
        return -1;
    d->pending++;
    atomic_fetch_add(&exp_rt.pending_total, 1);
    return 0;
}

static int replay_outcome(struct replay *r, const struct store_event *ev)
{
    struct exp *x = r->x;
    struct exp_data *d = r->d;
    if (ev->ref < 1 || ev->ref >= ev->seq)
        return corrupt(r, ev->seq, "an outcome of an assignment that is not before it");
    if (ev->kind == STORE_EV_REWARD ? !value_ok(x, ev->value)
                                    : !isnan(ev->value) && !value_ok(x, ev->value))
        return corrupt(r, ev->seq, "a reward outside the experiment's range");
    struct exp_assignment *a = exp_tab_find(d, ev->ref);
    if (a == NULL || a->status != EXP_A_PENDING) {
        if (!audit_reward_ok(r, ev))
            return corrupt(r, ev->seq, "an outcome of no pending assignment");
        return 0; /* an exploit assignment's reward: audit only */
    }
    if (ev->kind == STORE_EV_REWARD || !isnan(ev->value))
        engine_reward(d->eng, (size_t)a->bandit, (size_t)a->arm, exp_scale(x, ev->value));
    else
        engine_release(d->eng, (size_t)a->bandit, (size_t)a->arm);
    d->pending--;
    atomic_fetch_sub(&exp_rt.pending_total, 1);
    exp_tab_remove(d, a->seq);
    exp_assignment_free(a);
    exp_history_maybe_record(x, ev->ts_ms);
    return 0;
}

static int replay_event(void *arg, const struct store_event *ev)
{
    struct replay *r = arg;
    struct exp *x = r->x;
    struct exp_data *d = r->d;
    if (ev->seq != d->seq + 1)
        return corrupt(r, ev->seq,
                       ev->seq <= d->seq ? "an event numbered twice"
                                         : "events missing before this one");
    d->seq = ev->seq;
    exp_touch(x, ev->ts_ms);
    switch (ev->kind) {
    case STORE_EV_ASSIGN:
        return replay_assign(r, ev);
    case STORE_EV_REWARD:
    case STORE_EV_EXPIRE:
        return replay_outcome(r, ev);
    case STORE_EV_UNIT:
        /* who got an assignment of a block: read from the disk when asked
         * (events.c, find_unit), nothing to rebuild */
        if (ev->ref < 1 || ev->ref >= ev->seq || ev->unit == NULL || ev->unit[0] == '\0')
            return corrupt(r, ev->seq, "a unit bound to no assignment before it");
        return 0;
    case STORE_EV_OBSERVE:
        if (!arm_ok(x, ev->bandit, ev->arm))
            return corrupt(r, ev->seq, "an observation of an arm the experiment does not have");
        if (!value_ok(x, ev->value))
            return corrupt(r, ev->seq, "an observation outside the experiment's range");
        engine_observe(d->eng, (size_t)ev->bandit, (size_t)ev->arm, exp_scale(x, ev->value));
        exp_history_maybe_record(x, ev->ts_ms);
        return 0;
    case STORE_EV_STATE: {
        enum exp_state s;
        if (exp_state_parse(ev->text, &s) != 0)
            return corrupt(r, ev->seq, "an unknown state");
        if (engine_stopped(d->eng) && s != EXP_STOPPED)
            return corrupt(r, ev->seq, "a state change after the stop");
        exp_apply_state(d, s);
        return 0;
    }
    case STORE_EV_LATE:
        if (ev->ref < 1 || ev->ref >= ev->seq)
            return corrupt(r, ev->seq, "a late reward of an assignment that is not before it");
        return 0; /* audit only */
    default:
        return corrupt(r, ev->seq, "an event of an unknown kind");
    }
}

struct exp_data *exp_replay_all(struct exp *x, char *err, size_t errlen, int *is_corrupt)
{
    *is_corrupt = 0;
    for (int exact = 1; exact >= 0; exact--) {
        struct exp_data *d = exp_data_new(&x->cfg, err, errlen);
        if (d == NULL)
            return NULL;
        struct exp_data *saved = x->d;
        x->d = d; /* history_maybe_record reads x->d */
        struct replay r = {.x = x, .d = d, .exact = exact};
        int rc = store_load_events(exp_rt.store, x->rowid, 0, replay_event, &r);
        x->d = saved;
        if (rc == EXP_REPLAY_MISMATCH && r.mismatch) {
            log_warn("experiment %s: the policy no longer reproduces its log (new version?); "
                     "statistics restored exactly, policy state rebuilt from rewards only",
                     x->id);
            exp_data_free(d);
            continue;
        }
        if (rc == EXP_REPLAY_CORRUPT) {
            snprintf(err, errlen, "event log corrupt at seq %" PRId64 " (%s)", r.bad_seq, r.why);
            *is_corrupt = 1;
            exp_data_free(d);
            return NULL;
        }
        if (rc != STORE_OK) {
            snprintf(err, errlen, "reading events: %s",
                     rc < 0 ? "out of memory" : store_strerror(rc));
            exp_data_free(d);
            return NULL;
        }
        exp_watch_sync(x, d);
        return d;
    }
    snprintf(err, errlen, "replay failed");
    return NULL;
}
