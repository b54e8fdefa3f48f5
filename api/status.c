/*
 * status.c — GET /v1/experiments/{id}/status and /history: what dashboards
 * poll. Both carry an ETag (the experiment's event count, which changes
 * whenever either answer can), so If-None-Match answers 304 without
 * computing anything.
 */
#include "api/api.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/jsonv.h"

/* Lock {id} unless the client has its current version (If-None-Match):
 * NULL after answering (404, 503, or 304). Either way the ETag is set:
 * the experiment's creation time, id and version (which changes whenever
 * these answers can), and "-blinded" for a blinded view, so that a
 * caller who saw the blinded view never gets a 304 for the full one. */
static struct exp *lock_if_modified(struct http_req *r)
{
    struct exp *x = api_exp_lock(r);
    if (x == NULL)
        return NULL;
    char etag[160];
    snprintf(etag, sizeof etag, "\"%" PRId64 "-%s-%" PRIu64 "%s\"", exp_created_ms(x), exp_id(x),
             exp_version(x), api_blinded(r, x) ? "-blinded" : "");
    http_reply_header(r, "ETag", etag);
    if (http_etag_matches(http_req_header(r, "If-None-Match"), etag)) {
        api_exp_unlock(x);
        http_reply_empty(r, 304);
        return NULL;
    }
    return x;
}

/* Goal control: arm i's comparison with the control arm (engine.h,
 * engine_vs_control) in reward units, or NULL for the control arm itself
 * and for another goal. New reference. */
static json_t *vs_control_json(const struct engine *e, size_t b, size_t i, double range)
{
    static const char *const decisions[] = {
        [POLICY_OPEN] = "open", [POLICY_SUPERIOR] = "superior", [POLICY_FUTILE] = "futile"};
    struct engine_vs_control v;
    if (engine_vs_control(e, b, i, &v) != 0)
        return NULL;
    return json_pack("{s:o,s:o,s:o,s:s,s:o}", "difference", jv_real(v.diff * range), "lower",
                     jv_real(v.lower * range), "upper", jv_real(v.upper * range), "decision",
                     decisions[v.verdict], "decided_at",
                     v.at > 0 ? json_integer((json_int_t)v.at) : json_null());
}

static json_t *bandit_json(struct exp *x, size_t b)
{
    const struct exp_config *c = exp_cfg(x);
    struct engine *e = exp_engine(x);
    unsigned char high[ENGINE_MAX_ARMS];
    struct engine_bandit_status st;
    engine_bandit_status(e, b, high, &st);
    double lo = c->reward_min, range = exp_range(x);
    size_t k = c->n_arms[b];
    const struct stats_arm *arms = engine_arms(e, b);
    json_t *rec = json_array(), *arr = json_array();
    for (size_t i = 0; i < k; i++) {
        if (high[i])
            json_array_append_new(rec, json_string(c->arm_names[b][i]));
        double l, h;
        engine_arm_status_interval(e, b, i, &l, &h); /* all K together at 1 − δ */
        double var = stats_arm_var(&arms[i]);
        json_t *a = json_pack("{s:s,s:I,s:I}", "id", c->arm_names[b][i], "pulls",
                              (json_int_t)arms[i].n, "pending", (json_int_t)arms[i].pending);
        if (arms[i].n > 0) {
            json_object_set_new(a, "mean", json_real(lo + arms[i].mean * range));
            /* a wide range (1e200) squared is not finite: null */
            json_object_set_new(a, "variance", jv_real(var * range * range));
            json_object_set_new(a, "lower", json_real(lo + l * range));
            json_object_set_new(a, "upper", json_real(lo + h * range));
        } else {
            json_object_set_new(a, "mean", json_null());
            json_object_set_new(a, "variance", json_null());
            json_object_set_new(a, "lower", json_real(lo));
            json_object_set_new(a, "upper", json_real(lo + range));
        }
        json_object_set_new(a, "posterior_mean",
                            json_real(arms[i].alpha / (arms[i].alpha + arms[i].beta)));
        if (exp_arm_retired(x, b, i)) /* PATCH retire: no more pulls */
            json_object_set_new(a, "retired", json_true());
        if (c->engine.goal == ENGINE_GOAL_CONTROL) {
            json_t *vs = vs_control_json(e, b, i, range);
            json_object_set_new(a, vs != NULL ? "vs_control" : "control",
                                vs != NULL ? vs : json_true());
        }
        json_array_append_new(arr, a);
    }
    return json_pack("{s:s,s:o,s:f,s:f,s:f,s:f,s:b,s:o,s:o}", "id", c->bandit_ids[b], "recommended",
                     rec, "delta_c", st.delta_c, "rho", st.rho, "cutoff", lo + st.cutoff * range,
                     "glr", isfinite(st.glr) ? st.glr : 1e308, "done", st.done, "stop",
                     exp_stop_json(e, b), "arms", arr);
}

int api_status_get(struct http_req *r)
{
    struct exp *x = lock_if_modified(r);
    if (x == NULL)
        return HTTP_DONE;
    const struct exp_config *c = exp_cfg(x);
    struct engine *e = exp_engine(x);
    json_t *bandits = json_array();
    for (size_t b = 0; b < c->n_bandits; b++)
        json_array_append_new(bandits, bandit_json(x, b));
    const char *reason = exp_stop_reason(x);
    json_t *j = json_pack(
        "{s:s,s:s,s:b,s:o,s:I,s:I,s:I,s:o,s:s,s:I,s:f,s:f,s:I,s:I,s:o}", "id", exp_id(x), "state",
        exp_state_name(exp_get_state(x)), "stopped", engine_stopped(e), "stop_reason",
        reason ? json_string(reason) : json_null(), "pulls", (json_int_t)engine_pulls(e), "pending",
        (json_int_t)engine_pending(e), "handed_out", (json_int_t)engine_handed_out(e), "budget",
        exp_budget(x) ? json_integer((json_int_t)exp_budget(x)) : json_null(), "policy",
        c->policy->name, "m", (json_int_t)c->engine.m, "delta", c->engine.delta, "epsilon",
        c->engine.epsilon * exp_range(x), "bandits_done", (json_int_t)engine_bandits_done(e),
        "bandits_total", (json_int_t)c->n_bandits, "bandits", bandits);
    json_object_set_new(j, "design_hash", json_string(exp_design_hash(x)));
    json_object_set_new(j, "design", exp_design_json(x, api_blinded(r, x)));
    if (api_blinded(r, x)) {
        api_blind_bandits(bandits);
        json_object_set_new(j, "blinded", json_true());
    }
    return api_read_finish_as(r, x, 200, j, api_unblinded_read(r, x) ? "status" : NULL);
}

int api_history_get(struct http_req *r)
{
    struct exp *x = lock_if_modified(r);
    if (x == NULL)
        return HTTP_DONE;
    const struct exp_config *c = exp_cfg(x);
    size_t n = exp_history_len(x);
    /* Columns, not rows: a chart library takes them as they are. */
    json_t *pulls = json_array(), *times = json_array(), *bandits = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct exp_history_point *p = exp_history_at(x, i);
        char ts[CLOCK_RFC3339_LEN];
        clock_format_rfc3339(p->ts_ms, ts, sizeof ts);
        json_array_append_new(pulls, json_integer((json_int_t)p->pulls));
        json_array_append_new(times, json_string(ts));
    }
    size_t off = 0;
    for (size_t b = 0; b < c->n_bandits; b++) {
        json_t *dc = json_array(), *rho = json_array(), *bound = json_array();
        json_t *arms = json_object();
        for (size_t i = 0; i < n; i++) {
            const struct exp_history_point *p = exp_history_at(x, i);
            json_array_append_new(dc, json_real(p->delta_c[b]));
            json_array_append_new(rho, json_real(p->rho[b]));
            json_array_append_new(bound, jv_real(p->bound[b]));
        }
        for (size_t a = 0; a < c->n_arms[b]; a++) {
            json_t *col = json_array();
            for (size_t i = 0; i < n; i++)
                json_array_append_new(col, json_integer(exp_history_at(x, i)->arm_pulls[off + a]));
            json_object_set_new(arms, c->arm_names[b][a], col);
        }
        off += c->n_arms[b];
        json_array_append_new(bandits,
                              json_pack("{s:s,s:o,s:o,s:o,s:o}", "id", c->bandit_ids[b], "delta_c",
                                        dc, "rho", rho, "error_bound", bound, "arm_pulls", arms));
    }
    /* Where the run was changed: edits and corrections (the latest
     * EXP_MARKS), at the rewarded pulls they came at. A blinded reader
     * gets when and what kind, not the note: an edit's names the arm it
     * retired and its reason, a correction's an outcome (exp_design_json
     * shows such a reader the design's changes the same way). */
    int blind = api_blinded(r, x);
    json_t *marks = json_array();
    for (size_t i = 0; i < exp_marks_len(x); i++) {
        const struct exp_mark *m = exp_mark_at(x, i);
        char ts[CLOCK_RFC3339_LEN];
        clock_format_rfc3339(m->ts_ms, ts, sizeof ts);
        json_array_append_new(marks, json_pack("{s:I,s:s,s:I,s:s,s:s?}", "seq", (json_int_t)m->seq,
                                               "time", ts, "pulls", (json_int_t)m->pulls, "kind",
                                               m->kind == STORE_EV_EDIT ? "edit" : "correction",
                                               "note", blind ? NULL : m->text));
    }
    json_t *j = json_pack("{s:s,s:f,s:o,s:o,s:o,s:o}", "id", exp_id(x), "delta", c->engine.delta,
                          "pulls", pulls, "time", times, "bandits", bandits, "marks", marks);
    if (blind) {
        api_blind_bandits(bandits);
        json_object_set_new(j, "blinded", json_true());
    }
    return api_read_finish_as(r, x, 200, j, api_unblinded_read(r, x) ? "history" : NULL);
}
