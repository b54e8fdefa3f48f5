/*
 * replay.c — an experiment's data rebuilt from its event log: at startup,
 * and after a failed write (commit.c). The policy re-selects every logged
 * pull, so its state comes back exactly (engine.h, determinism); a log the
 * policy no longer reproduces (a new version of it) is replayed again with
 * the logged pulls recorded instead of re-selected.
 *
 * Corrections (CORRECT events, corrections.c): a corrected reward is
 * replayed with its corrected value, at the place of the reward. From that
 * reward to the last correction of the log the policy can no longer
 * reproduce the logged pulls (it learnt other values), so they are
 * recorded; after the last correction it re-selects again. The live
 * rebuild at a correction (exp_replay_with) replays the same way with the
 * new correction as the last one, which is why a restart ends in the same
 * state as the running daemon did.
 *
 * Snapshots (snapshot.c): a load starts from the latest usable snapshot and
 * replays only the events after it; any doubt (no usable snapshot, a tail
 * the policy does not reproduce, a correction in the tail, an error) and
 * it replays the whole log as above. A load that replayed a long stretch
 * writes a snapshot of what it rebuilt, so the next load is short.
 *
 * The rebuild at a correction starts from a snapshot too, one taken before
 * the earliest reward any correction of the log (or the new one) replaced:
 * up to there the full replay applies no correction and re-selects every
 * pull, as the live daemon did, so its state is the snapshot's; after it
 * the tail replays exactly as the full replay's end does (the same
 * corrections, the same pulls recorded). Snapshots after that reward
 * cannot serve: from the first corrected reward to the last correction the
 * replay records the logged pulls where the live daemon had re-selected
 * them (a generator, a policy's phase), so their states differ.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "exp/internal.h"

/* The corrections of a log (and the one being made), sorted by ref. */
struct corrections {
    struct exp_correction *v;
    size_t n, cap;
    int64_t last_seq; /* the last correction's seq: pulls are recorded up to it */
};

/* Replay state. */
struct replay {
    struct exp *x;
    struct exp_data *d;
    int exact;                      /* 0 after a mismatch: pulls are recorded, not re-selected */
    int mismatch;                   /* set when the policy chose differently from the log */
    int64_t bad_seq;                /* the first event found corrupt (0: none) */
    char why[160];                  /* and what is wrong with it */
    const struct corrections *corr; /* NULL: a pass that stops at the first CORRECT */
    int diverged;                   /* a corrected reward was applied */
    uint64_t events;                /* events replayed */
};

/* A pass without the corrections met one: replay again with them. */
#define EXP_REPLAY_CORRECTIONS 3

static int corr_cmp(const void *a, const void *b)
{
    const struct exp_correction *x = a, *y = b;
    if (x->ref != y->ref)
        return x->ref < y->ref ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The correction of assignment ref (the first one logged), or NULL. */
static const struct exp_correction *corr_find(const struct corrections *c, int64_t ref)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].ref < ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->v[lo].ref == ref ? &c->v[lo] : NULL;
}

static int corr_add(struct corrections *c, const struct exp_correction *e)
{
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 8;
        struct exp_correction *nv = realloc(c->v, ncap * sizeof *nv);
        if (nv == NULL)
            return -1;
        c->v = nv;
        c->cap = ncap;
    }
    c->v[c->n++] = *e;
    if (e->seq > c->last_seq)
        c->last_seq = e->seq;
    return 0;
}

static int collect_event(void *arg, const struct store_event *ev)
{
    if (ev->kind != STORE_EV_CORRECT)
        return 0;
    struct exp_correction e = {.ref = ev->ref, .seq = ev->seq, .value = ev->value};
    return corr_add(arg, &e);
}

/* Every correction of x's log after seq `after`, plus extra[0..nextra),
 * sorted. */
static int collect(struct exp *x, int64_t after, const struct exp_correction *extra, size_t nextra,
                   struct corrections *c)
{
    int rc = store_load_events(exp_rt.store, x->rowid, after, collect_event, c);
    if (rc != STORE_OK)
        return rc;
    for (size_t i = 0; i < nextra; i++)
        if (corr_add(c, &extra[i]) != 0)
            return -1;
    qsort(c->v, c->n, sizeof *c->v, corr_cmp);
    return 0;
}

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
    /* Between a corrected reward and the last correction the policy saw
     * other values than when it chose: record what it chose then. */
    int reselect = r->exact && !(r->diverged && r->corr != NULL && ev->seq < r->corr->last_seq);
    if (reselect) {
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
    if (exp_fifo_push(d, a) != 0)
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
    double v = ev->value;
    /* A reward, or the default reward an expiry recorded, as corrected. */
    const struct exp_correction *c =
        !isnan(ev->value) && r->corr != NULL ? corr_find(r->corr, ev->ref) : NULL;
    if (c != NULL) {
        v = c->value;
        r->diverged = 1;
        if (d->corrected_from == 0 || ev->seq < d->corrected_from)
            d->corrected_from = ev->seq;
    }
    if (ev->kind == STORE_EV_REWARD || !isnan(v))
        engine_reward(d->eng, (size_t)a->bandit, (size_t)a->arm, exp_scale(x, v));
    else
        engine_release(d->eng, (size_t)a->bandit, (size_t)a->arm);
    d->pending--;
    atomic_fetch_sub(&exp_rt.pending_total, 1);
    /* no longer pending: the FIFO lets go of it (table.c) */
    a->status = ev->kind == STORE_EV_REWARD ? EXP_A_REWARDED : EXP_A_EXPIRED;
    exp_tab_drop(d, a);
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
    r->events++;
    exp_touch(x, ev->ts_ms);
    if (exp_audit_step(x, d, ev) != 0)
        return -1;
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
    case STORE_EV_EDIT: {
        char why[160];
        int rc = exp_replay_edit(x, d, ev, why, sizeof why);
        return rc > 0 ? corrupt(r, ev->seq, why) : rc;
    }
    case STORE_EV_LATE:
        if (ev->ref < 1 || ev->ref >= ev->seq)
            return corrupt(r, ev->seq, "a late reward of an assignment that is not before it");
        return 0; /* audit only */
    case STORE_EV_CORRECT:
        if (ev->ref < 1 || ev->ref >= ev->seq)
            return corrupt(r, ev->seq, "a correction of an assignment that is not before it");
        if (!value_ok(x, ev->value))
            return corrupt(r, ev->seq, "a correction outside the experiment's range");
        /* Applied at its reward's place: known before the replay starts. */
        if (r->corr == NULL)
            return EXP_REPLAY_CORRECTIONS;
        exp_mark_add(d, ev);
        return 0;
    default:
        return corrupt(r, ev->seq, "an event of an unknown kind");
    }
}

struct exp_data *exp_replay_all(struct exp *x, char *err, size_t errlen, int *is_corrupt)
{
    return exp_replay_with(x, NULL, 0, err, errlen, is_corrupt);
}

/* The latest snapshot that loads (store_load_snapshots' callback). */
struct snap_try {
    struct exp *x;
    struct exp_data *d;
};

static int try_snapshot(void *arg, const struct store_snapshot *sn)
{
    struct snap_try *t = arg;
    char why[160];
    t->d = exp_snapshot_load(t->x, sn, why, sizeof why);
    if (t->d == NULL)
        log_warn("experiment %s: snapshot at seq %" PRId64 " not used (%s)", t->x->id, sn->seq,
                 why);
    return t->d != NULL; /* else the next, older one */
}

/* New data for x from its latest usable snapshot below seq `before`, or
 * NULL (why logged, but for "none"). */
static struct exp_data *snapshot_below(struct exp *x, int64_t before)
{
    struct snap_try t = {.x = x};
    int rc = store_load_snapshots(exp_rt.store, x->rowid, before, try_snapshot, &t);
    if (t.d == NULL && (rc < 0 || (rc != STORE_OK && rc != 1)))
        log_warn("experiment %s: reading snapshots: %s", x->id,
                 rc < 0 ? "out of memory" : store_strerror(rc));
    return t.d;
}

/* x's data from its latest usable snapshot and the events after it, or
 * NULL: the caller replays the whole log (why logged, but for "none"). */
static struct exp_data *replay_from_snapshot(struct exp *x)
{
    struct exp_data *d = snapshot_below(x, INT64_MAX), *saved = x->d;
    if (d == NULL)
        return NULL;
    int64_t from = d->seq;
    x->d = d; /* history_maybe_record reads x->d */
    struct replay r = {.x = x, .d = d, .exact = 1};
    int rc = store_load_events(exp_rt.store, x->rowid, from, replay_event, &r);
    x->d = saved;
    if (rc != STORE_OK) {
        log_warn("experiment %s: the log after the snapshot at seq %" PRId64 " %s: replaying it "
                 "whole",
                 x->id, from,
                 rc == EXP_REPLAY_CORRECTIONS ? "holds a correction"
                 : rc == EXP_REPLAY_MISMATCH  ? "is not what the policy chooses"
                 : rc == EXP_REPLAY_CORRUPT   ? "is corrupt"
                                              : "cannot be read");
        exp_data_free(d);
        return NULL;
    }
    d->loaded_from = from;
    atomic_fetch_add(&exp_rt.snapshot_loads, 1);
    atomic_fetch_add(&exp_rt.events_replayed, r.events);
    return d;
}

/* The rebuild at a correction (extra[0..nextra)) from the latest usable
 * snapshot before every corrected reward, and the events after it with
 * the corrections (exp_replay_with's contract); NULL: the caller replays
 * the whole log (why logged, but for "no such snapshot"). */
static struct exp_data *correct_from_snapshot(struct exp *x, const struct exp_correction *extra,
                                              size_t nextra)
{
    /* x->d is the data the correction replaces, drained: nobody writes it */
    int64_t before = x->d->corrected_from;
    for (size_t i = 0; i < nextra; i++) {
        if (extra[i].at < 1)
            return NULL; /* not known: no bound */
        if (before == 0 || extra[i].at < before)
            before = extra[i].at;
    }
    struct exp_data *d = snapshot_below(x, before), *saved = x->d;
    if (d == NULL)
        return NULL;
    int64_t from = d->seq;
    /* Every correction logged after `from`: none is before it (each one
     * follows the reward it replaced, which is after `from`). */
    struct corrections cs = {0};
    int rc = collect(x, from, extra, nextra, &cs);
    if (rc == 0) {
        x->d = d; /* history_maybe_record reads x->d */
        struct replay r = {.x = x, .d = d, .exact = 1, .corr = &cs};
        rc = store_load_events(exp_rt.store, x->rowid, from, replay_event, &r);
        x->d = saved;
    }
    free(cs.v);
    if (rc != STORE_OK) {
        log_warn("experiment %s: correction: the log after the snapshot at seq %" PRId64
                 " %s: replaying it whole",
                 x->id, from,
                 rc == EXP_REPLAY_MISMATCH  ? "is not what the policy chooses"
                 : rc == EXP_REPLAY_CORRUPT ? "is corrupt"
                                            : "cannot be read");
        exp_data_free(d);
        return NULL;
    }
    d->loaded_from = from;
    /* as after a full rebuild: the next batch (the correction's) takes a
     * snapshot of the corrected state, so a restart need not replay */
    d->snap_seq = 0;
    return d;
}

static void snapshot_written(void *arg, int err)
{
    struct exp_snapshot *sn = arg;
    if (err != STORE_OK)
        log_warn("store: a snapshot of experiment rowid %" PRId64 " was not written: %s",
                 exp_snapshot_row(sn)->exp, store_strerror(err));
    exp_snapshot_free(sn);
}

/* After a load that replayed --snapshot-every events or more: a snapshot
 * of what it rebuilt (the log on disk up to d->seq: it may be written at
 * once, in no batch), so the next load starts there. Best effort. */
static void snapshot_after_load(struct exp *x, struct exp_data *d)
{
    if (!atomic_load(&x->owned) || !exp_snapshot_due(x, d))
        return; /* another daemon's: it writes its own */
    struct exp_snapshot *sn = exp_snapshot_make(x, d);
    if (sn == NULL)
        return;
    if (exp_snapshot_submit(sn, snapshot_written) != STORE_OK) {
        exp_snapshot_free(sn);
        return;
    }
    d->snap_seq = d->seq;
}

struct exp_data *exp_replay_with(struct exp *x, const struct exp_correction *extra, size_t nextra,
                                 char *err, size_t errlen, int *is_corrupt)
{
    *is_corrupt = 0;
    struct corrections cs = {0};
    const struct corrections *corr = NULL;
    struct exp_data *res = NULL;
    if (!exp_rt.lim.no_snapshots) {
        struct exp_data *d =
            nextra == 0 ? replay_from_snapshot(x) : correct_from_snapshot(x, extra, nextra);
        if (d != NULL) {
            exp_watch_sync(x, d);
            if (nextra == 0)
                snapshot_after_load(x, d);
            return d;
        }
    }
    if (nextra > 0) {
        int rc = collect(x, 0, extra, nextra, &cs);
        if (rc != 0) {
            snprintf(err, errlen, "reading events: %s",
                     rc < 0 ? "out of memory" : store_strerror(rc));
            goto out;
        }
        corr = &cs;
    }
    for (int exact = 1; exact >= 0; exact--) {
        struct exp_data *d = exp_data_new(&x->cfg, err, errlen);
        if (d == NULL)
            goto out;
        struct exp_data *saved = x->d;
        x->d = d; /* history_maybe_record reads x->d */
        struct replay r = {.x = x, .d = d, .exact = exact, .corr = corr};
        int rc = store_load_events(exp_rt.store, x->rowid, 0, replay_event, &r);
        x->d = saved;
        if (rc == EXP_REPLAY_CORRECTIONS) {
            /* The log holds corrections: replay again knowing them. */
            exp_data_free(d);
            rc = collect(x, 0, NULL, 0, &cs);
            if (rc != 0) {
                snprintf(err, errlen, "reading events: %s",
                         rc < 0 ? "out of memory" : store_strerror(rc));
                goto out;
            }
            corr = &cs;
            exact++;
            continue;
        }
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
            goto out;
        }
        if (rc != STORE_OK) {
            snprintf(err, errlen, "reading events: %s",
                     rc < 0 ? "out of memory" : store_strerror(rc));
            exp_data_free(d);
            goto out;
        }
        atomic_fetch_add(&exp_rt.events_replayed, r.events);
        exp_watch_sync(x, d);
        /* not with corrections being made: their events are not on disk */
        if (nextra == 0 && !exp_rt.lim.no_snapshots)
            snapshot_after_load(x, d);
        res = d;
        goto out;
    }
    snprintf(err, errlen, "replay failed");
out:
    free(cs.v);
    return res;
}
