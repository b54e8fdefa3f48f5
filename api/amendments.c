/*
 * amendments.c — POST /v1/experiments/{id}/amendments: a change of the
 * design with a required reason (docs/contract.md, Clinical trials). It
 * may change what a PATCH may change (name, goal.budget, assignment_ttl_s,
 * retire an arm), never what was randomised; it is logged as an EDIT event
 * marked as an amendment, with the design's hash before and after
 * (exp/design.c). The only way to change a frozen design once it has its
 * first assignment. 201 once on disk, with the new design.
 */
#include "api/api.h"

#include <stdio.h>
#include <string.h>

#include "api/parse.h"

int api_amendments_create(struct http_req *r)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 0, &body);
    if (x == NULL)
        return HTTP_DONE;
    struct api_patch_req req;
    struct api_errors pe;
    int prc = api_parse_amendment(body, exp_cfg(x), &req, api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, prc, &pe);
    if (wr == NULL)
        return HTTP_DONE;
    char before[80];
    snprintf(before, sizeof before, "%s", exp_design_hash(x));
    struct exp_refusal why = {{0}, {0}};
    int rc = exp_ev_edit(x, &wr->batch, &req.edit, http_req_now_ms(r), &why);
    if (rc == EXP_OK && wr->batch.n == 0) {
        snprintf(why.field, sizeof why.field, "change");
        snprintf(why.message, sizeof why.message, "changes nothing: the design has it already");
        rc = EXP_ERR_REFUSED;
    }
    if (rc != EXP_OK) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        if (rc == EXP_ERR_NOMEM)
            return http_reply_oom(r);
        char field[96], detail[400];
        snprintf(field, sizeof field, "%s%s",
                 why.field[0] && strcmp(why.field, "change") != 0 ? "change." : "", why.field);
        snprintf(detail, sizeof detail, "%s: %s", field, why.message);
        return http_reply_problem(r, 409, detail,
                                  json_pack("[{s:s,s:s}]", "field", field, "message", why.message));
    }
    json_t *j =
        json_pack("{s:s,s:s,s:s,s:o}", "previous_hash", before, "design_hash", exp_design_hash(x),
                  "reason", req.edit.reason, "design", exp_design_json(x, api_blinded(r, x)));
    return api_write_finish(wr, x, 201, j);
}
