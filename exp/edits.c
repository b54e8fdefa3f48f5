/*
 * edits.c — edits of a live experiment (exp.h, exp_ev_edit): its name, its
 * budget and its assignment TTL change by an EDIT event, applied at once and
 * replayed in log order, so a restart rebuilds the same engine. What was
 * randomised (policy, arms, seed, goal but the budget) never changes, and
 * neither does the stored configuration: the changed values live in the
 * experiment's data; a retired arm (it gets no more pulls) lives in the
 * engine. The event's text is the change as a JSON object ({"name",
 * "budget", "assignment_ttl_s", "retire", "reason", "previous"}), which is
 * also what export shows; a later amendment (a required reason, a design
 * hash) adds fields to the same object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jsonv.h"
#include "exp/internal.h"

const char *exp_name(const struct exp *x)
{
    return x->d->name != NULL ? x->d->name : x->cfg.name;
}

int64_t exp_ttl_s(const struct exp *x)
{
    return x->d->ttl_s;
}

uint64_t exp_budget(const struct exp *x)
{
    return engine_budget(x->d->eng);
}

size_t exp_edits(const struct exp *x)
{
    return x->d->edits;
}

int exp_arm_retired(const struct exp *x, size_t bandit, size_t arm)
{
    return engine_arm_retired(x->d->eng, bandit, arm);
}

/* The engine's "field: message" as a refusal. */
static void refuse(struct exp_refusal *why, const struct policy_error *err)
{
    snprintf(why->field, sizeof why->field, "%.63s", err->field[0] ? err->field : "goal.budget");
    snprintf(why->message, sizeof why->message, "%s", err->message);
}

/* Pending assignments expire no later than their creation plus the new
 * TTL (now at the earliest). Creation order stays expiry order: for two
 * assignments created c1 ≤ c2, min(e1, max(now, c1 + t)) ≤ max(now, c2 + t)
 * and every later one expires at c + t ≥ now. O(pending) under x's lock
 * (10-20 ms at 3·10⁵), for a shorter TTL only, on purpose: applied lazily,
 * every shorter TTL set while an assignment was pending would have to be
 * applied by every reader of its expiry (a reward's check, the sweep, the
 * status, snapshots, replay) — for an operator's edit (operations.md). */
static void cap_expiries(struct exp_data *d, int64_t ttl_s, int64_t now)
{
    for (size_t i = 0; i < d->flen; i++) {
        struct exp_assignment *a = exp_fifo_at(d, i);
        if (a->status != EXP_A_PENDING)
            continue;
        int64_t cap = a->created_ms + ttl_s * 1000;
        if (cap < now)
            cap = now;
        if (cap < a->expires_ms)
            a->expires_ms = cap;
    }
}

/* Apply a change to d: everything or nothing. 0, 1 (refused: why filled)
 * or −1 (out of memory). */
static int apply(struct exp_data *d, const char *name, int set_budget, uint64_t budget,
                 int64_t ttl_s, int rb, int ra, int64_t now, struct exp_refusal *why)
{
    char *copy = NULL;
    struct policy_error err = {0};
    if (name != NULL && (copy = strdup(name)) == NULL)
        return -1;
    /* The retirement first: it alone can be taken back (engine.h). */
    if (rb >= 0 && engine_retire_arm(d->eng, (size_t)rb, (size_t)ra, &err) != 0) {
        free(copy);
        refuse(why, &err);
        return 1;
    }
    if (set_budget && engine_set_budget(d->eng, budget, &err) != 0) {
        if (rb >= 0)
            engine_retire_undo(d->eng, (size_t)rb, (size_t)ra);
        free(copy);
        refuse(why, &err);
        return 1;
    }
    if (name != NULL) {
        free(d->name);
        d->name = copy;
    }
    if (ttl_s > 0) {
        if (ttl_s < d->ttl_s)
            cap_expiries(d, ttl_s, now);
        d->ttl_s = ttl_s;
    }
    d->edits++;
    return 0;
}

static json_t *budget_json(uint64_t b)
{
    return b != 0 ? json_integer((json_int_t)b) : json_null();
}

int exp_ev_edit(struct exp *x, struct exp_batch *b, const struct exp_edit *ed, int64_t now,
                struct exp_refusal *why)
{
    struct exp_data *d = x->d;
    const char *name = ed->name != NULL && strcmp(ed->name, exp_name(x)) != 0 ? ed->name : NULL;
    int set_budget = ed->set_budget && ed->budget != engine_budget(d->eng);
    int64_t ttl_s = ed->ttl_s > 0 && ed->ttl_s != d->ttl_s ? ed->ttl_s : 0;
    int rb = ed->retire_bandit >= 0 &&
                     !engine_arm_retired(d->eng, (size_t)ed->retire_bandit, (size_t)ed->retire_arm)
                 ? ed->retire_bandit
                 : -1;
    if (name == NULL && !set_budget && ttl_s == 0 && rb < 0)
        return EXP_OK;
    /* A frozen design changes after its first assignment only by an
     * amendment (design.c); the refusal names the first field changed. */
    if (!ed->amendment && exp_design_frozen(x)) {
        snprintf(why->field, sizeof why->field, "%s",
                 name != NULL ? "name"
                 : set_budget ? "goal.budget"
                 : ttl_s > 0  ? "assignment_ttl_s"
                              : "retire");
        snprintf(why->message, sizeof why->message,
                 "the design is frozen since the first assignment: change it with POST "
                 "/v1/experiments/%s/amendments and a reason",
                 x->id);
        return EXP_ERR_REFUSED;
    }
    json_t *change = json_object(), *prev = json_object();
    if (change == NULL || prev == NULL) {
        json_decref(change);
        json_decref(prev);
        return EXP_ERR_NOMEM;
    }
    /* The log must hold every part of the change memory takes: a part
     * that cannot be built (out of memory) fails the whole edit. */
    int bad = 0;
    if (name != NULL) {
        bad |= json_object_set_new(change, "name", json_string(name));
        bad |= json_object_set_new(prev, "name", json_string(exp_name(x)));
    }
    if (set_budget) {
        bad |= json_object_set_new(change, "budget", budget_json(ed->budget));
        bad |= json_object_set_new(prev, "budget", budget_json(engine_budget(d->eng)));
    }
    if (ttl_s > 0) {
        bad |= json_object_set_new(change, "assignment_ttl_s", json_integer((json_int_t)ttl_s));
        bad |= json_object_set_new(prev, "assignment_ttl_s", json_integer((json_int_t)d->ttl_s));
    }
    if (rb >= 0)
        bad |= json_object_set_new(change, "retire",
                                   json_pack("{s:s,s:s}", "bandit", x->cfg.bandit_ids[rb], "arm",
                                             x->cfg.arm_names[rb][ed->retire_arm]));
    if (ed->reason != NULL)
        bad |= json_object_set_new(change, "reason", json_string(ed->reason));
    bad |= json_object_set_new(change, "previous", prev);
    if (bad || exp_design_seal(x, change, ed->amendment) != 0) {
        json_decref(change);
        return EXP_ERR_NOMEM;
    }
    char *text = jv_dumps(change, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(change);
    const char *owned = text != NULL ? exp_batch_str(b, text) : NULL;
    free(text);
    if (owned == NULL)
        return EXP_ERR_NOMEM;
    /* Numbered first so that nothing can fail once the engine changed;
     * a refusal takes the number back. */
    struct store_op *op = exp_event_op(x, b, STORE_EV_EDIT, now);
    if (op == NULL)
        return EXP_ERR_NOMEM;
    int rc = apply(d, name, set_budget, ed->budget, ttl_s, rb, ed->retire_arm, now, why);
    if (rc != 0) {
        b->n--;
        d->seq--;
        return rc < 0 ? EXP_ERR_NOMEM : EXP_ERR_REFUSED;
    }
    op->ev.text = owned;
    exp_mark_add(d, &op->ev);
    /* Its own seal cannot mismatch. Out of memory would leave the design's
     * hash behind the engine: the reload (stale) recomputes it from the log. */
    char dwhy[8];
    if (exp_design_note(x, d, &op->ev, dwhy, sizeof dwhy) != 0)
        atomic_store(&x->stale, 1);
    return EXP_OK;
}

int exp_replay_edit(struct exp *x, struct exp_data *d, const struct store_event *ev, char *why,
                    size_t len)
{
    json_error_t jerr;
    json_t *c = ev->text != NULL ? json_loads(ev->text, 0, &jerr) : NULL;
    /* Out of memory is ours, not the log's: never call the log corrupt
     * for it (the replay fails and is tried again). */
    if (c == NULL && ev->text != NULL && json_error_code(&jerr) == json_error_out_of_memory)
        return -1;
    if (!json_is_object(c)) {
        json_decref(c);
        snprintf(why, len, "an edit that is not a JSON object");
        return 1;
    }
    const char *name = NULL;
    int set_budget = 0;
    uint64_t budget = 0;
    int64_t ttl_s = 0;
    json_t *v;
    int bad = 0;
    if ((v = json_object_get(c, "name")) != NULL)
        bad |= (name = json_string_value(v)) == NULL;
    if ((v = json_object_get(c, "budget")) != NULL) {
        set_budget = 1;
        bad |= !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) > 0);
        budget = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
    }
    if ((v = json_object_get(c, "assignment_ttl_s")) != NULL) {
        bad |= !(json_is_integer(v) && json_integer_value(v) > 0);
        ttl_s = json_integer_value(v);
    }
    int rb = -1, ra = -1;
    if ((v = json_object_get(c, "retire")) != NULL) {
        const char *bid = json_string_value(json_object_get(v, "bandit"));
        const char *arm = json_string_value(json_object_get(v, "arm"));
        rb = bid != NULL ? exp_cfg_bandit(&x->cfg, bid) : -1;
        ra = rb >= 0 && arm != NULL ? exp_cfg_arm(&x->cfg, (size_t)rb, arm) : -1;
        bad |= ra < 0;
    }
    struct exp_refusal r = {{0}, {0}};
    int rc = bad ? 1 : apply(d, name, set_budget, budget, ttl_s, rb, ra, ev->ts_ms, &r);
    json_decref(c);
    if (rc > 0)
        snprintf(why, len, "an edit the experiment cannot take (%s: %s)", bad ? "" : r.field,
                 bad ? "malformed" : r.message);
    if (rc == 0) {
        exp_mark_add(d, ev);
        rc = exp_design_note(x, d, ev, why, len);
    }
    return rc;
}
