/*
 * corrections.c — POST /v1/experiments/{id}/corrections: a rewarded pull's
 * value replaced, with a reason (exp.h, exp_ev_correct). 201 once the
 * correction is on disk; the statistics show it at once.
 */
#include "api/api.h"

#include <stdio.h>

#include "api/parse.h"

int api_corrections_create(struct http_req *r)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 0, &body);
    if (x == NULL)
        return HTTP_DONE;
    struct api_correction_req req;
    struct api_errors pe;
    int rc = api_parse_correction(body, exp_cfg(x), &req, api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, rc, &pe);
    if (wr == NULL)
        return HTTP_DONE;
    struct exp_aid id;
    struct exp_corrected out;
    struct exp_refusal why;
    rc = exp_parse_assignment_id(x, req.assignment_id, &id) != 0
             ? EXP_ERR_NOT_FOUND
             : exp_ev_correct(x, &wr->batch, &id, req.value, req.reason, http_req_now_ms(r), &out,
                              &why);
    if (rc != EXP_OK) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        char detail[360];
        switch (rc) {
        case EXP_ERR_NOT_FOUND:
            return http_reply_problem(
                r, 404, "no such assignment in this experiment",
                json_pack("[{s:s,s:s}]", "field", "assignment_id", "message", "unknown"));
        case EXP_ERR_REFUSED:
            snprintf(detail, sizeof detail, "%s: %s", why.field, why.message);
            return http_reply_problem(
                r, 409, detail,
                json_pack("[{s:s,s:s}]", "field", why.field, "message", why.message));
        case EXP_ERR_NOMEM:
            return http_reply_oom(r);
        case EXP_ERR_GONE:
            return http_reply_problem(r, 404, "the experiment was deleted", NULL);
        default:
            http_reply_header(r, "Retry-After", "1");
            return http_reply_problem(r, 503, "cannot apply the correction now; retry later", NULL);
        }
    }
    const struct exp_config *c = exp_cfg(x);
    json_t *j = json_pack("{s:s,s:I,s:s,s:s,s:f,s:f,s:s}", "assignment_id", req.assignment_id,
                          "seq", (json_int_t)out.seq, "bandit", c->bandit_ids[out.bandit], "arm",
                          c->arm_names[out.bandit][out.arm], "reward", req.value, "previous",
                          out.previous, "reason", req.reason);
    return api_write_finish(wr, x, 201, j);
}
