/*
 * replay.c — an experiment's data rebuilt from its event log: at startup,
 * and after a failed write (commit.c). The policy re-selects every logged
 * pull, so its state comes back exactly (engine.h, determinism); a log the
 * policy no longer reproduces (a new version of it) is replayed again with
 * the logged pulls recorded instead of re-selected.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "exp/internal.h"

/* Replay state. */
struct replay {
    struct exp *x;
    struct exp_data *d;
    int exact;    /* 0 after a mismatch: pulls are recorded, not re-selected */
    int mismatch; /* set when the policy chose differently from the log */
};

static int replay_event(void *arg, const struct store_event *ev)
{
    struct replay *r = arg;
    struct exp *x = r->x;
    struct exp_data *d = r->d;
    size_t nb = x->cfg.n_bandits;
    d->seq = ev->seq;
    switch (ev->kind) {
    case STORE_EV_ASSIGN: {
        if (ev->bandit < 0 || (size_t)ev->bandit >= nb || ev->arm < 0 ||
            (size_t)ev->arm >= x->cfg.n_arms[ev->bandit])
            return 0; /* corrupt row: skip it rather than crash */
        int exploit = (ev->flags & STORE_AF_EXPLOIT) != 0;
        if (r->exact) {
            struct engine_pull p;
            engine_assign(d->eng, (ev->flags & STORE_AF_BANDIT_GIVEN) ? ev->bandit : -1, &p);
            if ((int)p.bandit != ev->bandit || (int)p.arm != ev->arm || p.exploit != exploit) {
                r->mismatch = 1;
                return 1; /* start over in recording mode */
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
    case STORE_EV_REWARD:
    case STORE_EV_EXPIRE: {
        struct exp_assignment *a = exp_tab_find(d, ev->ref);
        if (a == NULL || a->status != EXP_A_PENDING)
            return 0; /* an exploit assignment's reward: audit only */
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
    case STORE_EV_OBSERVE:
        if (ev->bandit < 0 || (size_t)ev->bandit >= nb || ev->arm < 0 ||
            (size_t)ev->arm >= x->cfg.n_arms[ev->bandit])
            return 0;
        engine_observe(d->eng, (size_t)ev->bandit, (size_t)ev->arm, exp_scale(x, ev->value));
        exp_history_maybe_record(x, ev->ts_ms);
        return 0;
    case STORE_EV_STATE: {
        enum exp_state s;
        if (exp_state_parse(ev->text, &s) == 0)
            exp_apply_state(d, s);
        return 0;
    }
    default:
        return 0; /* LATE: audit only */
    }
}

/* Build x's data from its log on disk. Returns the new data or NULL. */
struct exp_data *exp_replay_all(struct exp *x, char *err, size_t errlen)
{
    for (int exact = 1; exact >= 0; exact--) {
        struct exp_data *d = exp_data_new(&x->cfg, err, errlen);
        if (d == NULL)
            return NULL;
        struct exp_data *saved = x->d;
        x->d = d; /* history_maybe_record reads x->d */
        struct replay r = {.x = x, .d = d, .exact = exact};
        int rc = store_load_events(exp_rt.store, x->rowid, 0, replay_event, &r);
        x->d = saved;
        if (rc == 1 && r.mismatch) {
            log_warn("experiment %s: the policy no longer reproduces its log (new version?); "
                     "statistics restored exactly, policy state rebuilt from rewards only",
                     x->id);
            exp_data_free(d);
            continue;
        }
        if (rc != STORE_OK) {
            snprintf(err, errlen, "reading events: %s", store_strerror(rc));
            exp_data_free(d);
            return NULL;
        }
        return d;
    }
    snprintf(err, errlen, "replay failed");
    return NULL;
}
