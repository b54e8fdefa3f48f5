/*
 * assignments.c — POST /v1/experiments/{id}/assignments: which arm next.
 * Body (all optional): {"bandit": "...", "unit": "...", "count": N}, parsed
 * by api_parse_assignment (api/parse.c).
 */
#include "api/api.h"

#include <stdio.h>
#include <string.h>

#include "api/jsonutil.h"
#include "base/jsonw.h"
#include "api/parse.h"
#include "server/metrics.h"
#include "base/clock.h"

extern const struct exp_limits *exp_limits_get(void);

/* {"id":…,"bandit":…,"arm":…,"arm_index":…,"expires_at":…,"exploit":…} */
static void assignment_text(struct jw *w, struct exp *x, const struct exp_assignment *a)
{
    const struct exp_config *c = exp_cfg(x);
    char id[48], exp_at[40];
    exp_assignment_id(x, a->seq, id, sizeof id);
    clock_format_rfc3339(a->expires_ms, exp_at, sizeof exp_at);
    jw_lit(w, "{\"id\":");
    jw_str(w, id);
    jw_lit(w, ",\"bandit\":");
    jw_str(w, c->bandit_ids[a->bandit]);
    jw_lit(w, ",\"arm\":");
    jw_str(w, c->arm_names[a->bandit][a->arm]);
    jw_lit(w, ",\"arm_index\":");
    jw_int(w, a->arm);
    jw_lit(w, ",\"expires_at\":");
    jw_str(w, exp_at);
    jw_lit(w, ",\"exploit\":");
    jw_bool(w, a->status == EXP_A_EXPLOIT);
    jw_lit(w, "}");
}

int api_assignments_create(struct api_req *r)
{
    json_t *body = api_req_json(r, 1);
    if (body == NULL)
        return API_DONE;
    struct exp *x = api_exp_find(r);
    if (x == NULL)
        return API_DONE;
    json_t *errors = json_array();
    struct api_assign_req req;
    char detail[API_DETAIL_MAX];
    int prc = errors != NULL ? api_parse_assignment(body, exp_cfg(x), exp_limits_get()->max_count,
                                                    &req, errors, detail)
                             : -1;
    if (prc != 0) {
        exp_put(x);
        if (prc < 0) {
            json_decref(errors);
            return api_reply_problem(r, 503, "out of memory", NULL);
        }
        return api_reply_problem(r, 400, detail, errors);
    }
    json_decref(errors);
    if (api_exp_enter(r, x) != 0)
        return API_DONE;
    const char *unit = req.unit;
    size_t count = req.count;
    int bandit = req.bandit;
    /* The reply is written as text (api/jsonw.h): {"assignments":[…]} */
    struct jw w;
    jw_init(&w);
    jw_lit(&w, "{\"assignments\":[");
    if (unit != NULL) {
        struct exp_assignment found;
        int rc = exp_find_unit(x, unit, &found);
        if (rc < 0) {
            api_exp_unlock(x);
            jw_free(&w);
            return api_reply_problem(r, 503, "storage read failed; retry later", NULL);
        }
        if (rc == 1) {
            /* Sticky: the unit's first assignment, not a new pull. */
            assignment_text(&w, x, &found);
            jw_lit(&w, "]}");
            size_t len = 0;
            if (found.committed) {
                api_exp_unlock(x);
                char *text = jw_finish(&w, &len);
                return api_reply_text(r, 200, text, len);
            }
            /* The first request's ASSIGN is not on disk yet: answer once
             * it is (an empty write queued behind it completes after it,
             * and fails if it failed), so a 200 never hands out an id
             * that a failed commit would take back. */
            int src = api_req_submit(r, x);
            api_exp_unlock(x);
            if (src != STORE_OK) {
                jw_free(&w);
                return api_reply_store_error(r, src);
            }
            char *text = jw_finish(&w, &len);
            return api_req_wait_text(r, 200, text, len);
        }
    }
    struct exp_batch *b = api_req_batch(r);
    int limited = 0;
    for (size_t i = 0; i < count; i++) {
        const struct exp_assignment *a;
        int rc = exp_ev_assign(x, b, bandit, unit, api_req_now_ms(r), &a);
        if (rc != EXP_OK) {
            limited = rc;
            break;
        }
        metrics_assignments(1, a->status == EXP_A_EXPLOIT);
        if (i > 0)
            jw_lit(&w, ",");
        assignment_text(&w, x, a);
    }
    if (b->n == 0) {
        api_exp_unlock(x);
        jw_free(&w);
        if (limited == EXP_ERR_LIMIT)
            return api_reply_problem(r, 429,
                                     "too many outstanding assignments; report rewards or wait "
                                     "for them to expire",
                                     NULL);
        return api_reply_problem(r, 503, "out of memory", NULL);
    }
    int rc = api_req_submit(r, x);
    api_exp_unlock(x);
    if (rc != STORE_OK) {
        jw_free(&w);
        return api_reply_store_error(r, rc);
    }
    jw_lit(&w, "]}");
    size_t len = 0;
    char *text = jw_finish(&w, &len);
    return api_req_wait_text(r, 201, text, len);
}
