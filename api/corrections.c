/*
 * corrections.c — POST /v1/experiments/{id}/corrections: the values of
 * rewarded pulls replaced, each with a reason (exp.h, exp_ev_correct), one
 * or a list of them (one rebuild of the experiment for the whole list).
 * 201 once the corrections are on disk; the statistics show them at once.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/parse.h"

/* "field" or "corrections[i].field". */
static void item_field(char *buf, size_t len, int batch, size_t i, const char *field)
{
    if (batch)
        snprintf(buf, len, "corrections[%zu].%s", i, field);
    else
        snprintf(buf, len, "%s", field);
}

int api_corrections_create(struct http_req *r)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 0, &body);
    if (x == NULL)
        return HTTP_DONE;
    struct api_correction_item *req = NULL;
    size_t n = 0;
    int batch = 0;
    struct api_errors pe;
    int rc = api_parse_corrections(body, exp_cfg(x), exp_limits()->max_batch, &req, &n, &batch,
                                   api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, rc, &pe);
    if (wr == NULL) {
        free(req);
        return HTTP_DONE;
    }
    struct exp_correction_item *items = calloc(n, sizeof *items);
    size_t bad = 0;
    struct exp_refusal why = {{0}, {0}};
    rc = items != NULL ? EXP_OK : EXP_ERR_NOMEM;
    for (size_t i = 0; i < n && rc == EXP_OK; i++) {
        items[i].value = req[i].value;
        items[i].reason = req[i].reason;
        if (exp_parse_assignment_id(x, req[i].assignment_id, &items[i].id) != 0) {
            bad = i;
            rc = EXP_ERR_NOT_FOUND;
        }
    }
    if (rc == EXP_OK)
        rc = exp_ev_correct(x, &wr->batch, items, n, http_req_now_ms(r), &bad, &why);
    if (rc != EXP_OK) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        free(items);
        free(req);
        char field[96], detail[400];
        switch (rc) {
        case EXP_ERR_NOT_FOUND:
            item_field(field, sizeof field, batch, bad, "assignment_id");
            snprintf(detail, sizeof detail, "%s: no such assignment in this experiment%s", field,
                     batch ? "; nothing was corrected" : "");
            return http_reply_problem(
                r, 404, detail, json_pack("[{s:s,s:s}]", "field", field, "message", "unknown"));
        case EXP_ERR_REFUSED:
            item_field(field, sizeof field, batch, bad, why.field);
            snprintf(detail, sizeof detail, "%s: %s%s", field, why.message,
                     batch ? "; nothing was corrected" : "");
            return http_reply_problem(
                r, 409, detail, json_pack("[{s:s,s:s}]", "field", field, "message", why.message));
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
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s,s:I,s:s,s:s,s:f,s:f,s:s}", "assignment_id",
                                              req[i].assignment_id, "seq", (json_int_t)items[i].seq,
                                              "bandit", c->bandit_ids[items[i].bandit], "arm",
                                              c->arm_names[items[i].bandit][items[i].arm], "reward",
                                              items[i].value, "previous", items[i].previous,
                                              "reason", items[i].reason));
    free(items);
    free(req);
    json_t *j =
        batch ? json_pack("{s:o}", "corrections", list) : json_incref(json_array_get(list, 0));
    if (!batch)
        json_decref(list);
    return api_write_finish(wr, x, 201, j);
}
