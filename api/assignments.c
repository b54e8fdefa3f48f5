/*
 * assignments.c — POST /v1/experiments/{id}/assignments: which arm next.
 * Body (all optional): {"bandit": "...", "unit": "...", "count": N}, parsed
 * by api_parse_assignment (api/parse.c).
 */
#include "api/api.h"

#include <stdio.h>
#include <string.h>

#include "base/jsonw.h"
#include "api/parse.h"
#include "api/metrics.h"
#include "base/clock.h"

/* {"id":…,"bandit":…,"arm":…,"arm_index":…,"expires_at":…,"exploit":…} */
static void assignment_text(struct jw *w, struct exp *x, const struct exp_assignment *a)
{
    const struct exp_config *c = exp_cfg(x);
    char id[48], exp_at[CLOCK_RFC3339_LEN];
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

int api_assignments_create(struct http_req *r)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 1, &body);
    if (x == NULL)
        return HTTP_DONE;
    struct api_assign_req req;
    struct api_errors pe;
    int prc =
        api_parse_assignment(body, exp_cfg(x), exp_limits()->max_count, &req, api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, prc, &pe);
    if (wr == NULL)
        return HTTP_DONE;
    const char *unit = req.unit;
    size_t count = req.count;
    int bandit = req.bandit;
    /* The reply is written as text (base/jsonw.h): {"assignments":[…]} */
    struct jw w;
    jw_init(&w);
    jw_lit(&w, "{\"assignments\":[");
    if (unit != NULL) {
        struct exp_assignment found;
        int rc = exp_unit_lookup(x, unit, bandit, &found);
        if (rc < 0) {
            api_exp_unlock(x);
            api_write_abandon(wr);
            jw_free(&w);
            return http_reply_problem(r, 503, "storage read failed; retry later", NULL);
        }
        if (rc == 1) {
            /* Sticky: the assignment the unit holds, not a new pull (it
             * gets a new one after an expiry, in another bandit, or the
             * winner after a stop: exp_unit_lookup). If its ASSIGN is not
             * on disk yet, the empty write queued behind it answers once
             * it is (and fails if it failed), so a 200 never hands out an
             * id that a failed commit would take back. */
            assignment_text(&w, x, &found);
            jw_lit(&w, "]}");
            size_t len = 0;
            char *text = jw_finish(&w, &len);
            if (found.committed) {
                api_exp_unlock(x);
                api_write_abandon(wr);
                return http_reply_text(r, 200, text, len);
            }
            return api_write_finish_text(wr, x, 200, text, len);
        }
    }
    int limited = 0;
    for (size_t i = 0; i < count; i++) {
        const struct exp_assignment *a;
        int rc = exp_ev_assign(x, &wr->batch, bandit, unit, http_req_now_ms(r), &a);
        if (rc != EXP_OK) {
            limited = rc;
            break;
        }
        metrics_assignments(1, a->status == EXP_A_EXPLOIT);
        if (i > 0)
            jw_lit(&w, ",");
        assignment_text(&w, x, a);
    }
    if (wr->batch.n == 0) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        jw_free(&w);
        if (limited == EXP_ERR_NO_CONCLUSION)
            return http_reply_problem(r, 409,
                                      "the experiment is paused, or was stopped before a "
                                      "conclusion, and its fallback is \"none\": show your "
                                      "default",
                                      NULL);
        if (limited == EXP_ERR_MEMORY)
            return http_reply_problem(r, 503,
                                      "the daemon's memory cap is reached; report rewards or "
                                      "wait for assignments to expire",
                                      NULL);
        if (limited == EXP_ERR_LIMIT)
            return http_reply_problem(r, 429,
                                      "too many outstanding assignments; report rewards or wait "
                                      "for them to expire",
                                      NULL);
        return http_reply_oom(r);
    }
    jw_lit(&w, "]}");
    size_t len = 0;
    char *text = jw_finish(&w, &len);
    return api_write_finish_text(wr, x, 201, text, len);
}
