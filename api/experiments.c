/*
 * experiments.c — POST/GET/PATCH/DELETE /v1/experiments[/{id}].
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/parse.h"
#include "base/clock.h"
#include "base/jsonv.h"
#include "notify/notify.h"

int api_experiments_create(struct http_req *r)
{
    json_t *errors = NULL;
    int done;
    json_t *body = api_body_with_errors(r, &errors, &done);
    if (body == NULL)
        return done;
    struct exp_config cfg;
    /* The configuration is stored as built: built while jansson failed an
     * allocation it may miss members (normalise ignores set_new's
     * failures), and the experiment would not load after a restart. */
    unsigned long jfail = jv_alloc_failures();
    int rc = exp_config_parse(body, exp_limits(), &cfg, errors);
    if (jv_alloc_failures() != jfail) {
        exp_config_free(&cfg);
        json_decref(errors);
        return http_reply_oom(r);
    }
    /* Where a webhook may point is the delivery's policy (notify.h): a
     * literal address it would refuse is refused now, not at the stop. */
    for (size_t i = 0; rc == 0 && i < cfg.n_webhooks; i++) {
        char why[160];
        if (notify_url_check(cfg.webhooks[i].url, why, sizeof why) != 0) {
            char field[48];
            snprintf(field, sizeof field, "webhooks[%zu].url", i);
            jv_error(errors, field, "%s", why);
            rc = 1;
        }
    }
    if (rc != 0) {
        char detail[320];
        if (rc > 0)
            jv_first_error(errors, NULL, detail, sizeof detail);
        exp_config_free(&cfg);
        return api_reply_parse(r, rc, errors, detail);
    }
    json_decref(errors);
    char id[EXP_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", cfg.id);
    struct api_write *wr = api_write_begin(r);
    if (wr == NULL) {
        exp_config_free(&cfg);
        return HTTP_DONE;
    }
    struct exp *x = NULL;
    rc = exp_create(&cfg, wr->batch.actor, wr->batch.request_id, api_write_done, wr, &x);
    if (rc != EXP_OK)
        api_write_abandon(wr);
    switch (rc) {
    case EXP_OK:
        break;
    case EXP_ERR_EXISTS: {
        char detail[128];
        snprintf(detail, sizeof detail, "an experiment \"%s\" exists already", id);
        return http_reply_problem(r, 409, detail,
                                  json_pack("[{s:s,s:s}]", "field", "id", "message", "taken"));
    }
    case EXP_ERR_LIMIT:
        return http_reply_problem(r, 429, "the experiment limit is reached; delete some first",
                                  NULL);
    case EXP_ERR_MEMORY:
        return http_reply_problem(r, 507,
                                  "the daemon's memory cap (--max-memory) is reached; delete "
                                  "experiments or raise the cap",
                                  NULL);
    default:
        return http_reply_problem(r, 503, "cannot store the experiment now; retry later", NULL);
    }
    exp_lock(x);
    json_t *j = api_experiment_json(r, x);
    exp_unlock(x);
    exp_put(x);
    char loc[128];
    snprintf(loc, sizeof loc, "/v1/experiments/%s", id);
    http_reply_header(r, "Location", loc);
    return http_req_wait(r, 201, j);
}

/* blind: x's δᶜ hidden from this caller (api_sees_blinded). */
static json_t *summary(struct exp *x, int blind)
{
    const struct exp_config *c = exp_cfg(x);
    struct exp_summary sm;
    exp_summary_locked(x, &sm);
    char ts[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(exp_created_ms(x), ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:o,s:o,s:s,s:I,s:I}", "id", exp_id(x), "name",
                     exp_name(x), "state", exp_state_name(sm.state), "policy", c->policy->name,
                     "pulls", (json_int_t)sm.pulls, "pending", (json_int_t)sm.pending, "delta_c",
                     blind && c->design_blinded ? json_null() : json_real(sm.delta_c),
                     "stop_reason", sm.stop_reason ? json_string(sm.stop_reason) : json_null(),
                     "created_at", ts, "bandits", (json_int_t)sm.bandits, "bandits_done",
                     (json_int_t)sm.bandits_done);
}

int api_experiments_list(struct http_req *r)
{
    size_t limit = 100;
    const char *l = http_req_query(r, "limit");
    if (l != NULL) {
        char *end;
        long v = strtol(l, &end, 10);
        if (*l == '\0' || *end != '\0' || v < 1 || v > 1000)
            return http_reply_invalid(r, "limit", "must be an integer from 1 to 1000");
        limit = (size_t)v;
    }
    const char *after = http_req_query(r, "after");
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    struct exp **page = calloc(limit + 1, sizeof *page);
    json_t *arr = json_array();
    if (page == NULL || arr == NULL) {
        free(page);
        json_decref(arr);
        return http_reply_oom(r);
    }
    /* One more than asked tells whether a next page exists. Each summary
     * is of an experiment prepared as for a request of its own (reloaded
     * if a write failed), and the page goes out once what it shows is on
     * disk. */
    struct api_join *j = api_join_begin(r);
    /* Several daemons on one database: the experiments the others created
     * are listed too; one another daemon owns is shown as the database has
     * it (exp_refresh_locked), without taking it over. */
    int unavailable = j != NULL && exp_registry_sync() != 0;
    int blind = !api_sees_blinded(r);
    size_t n = j != NULL && !unavailable ? exp_list(after, limit + 1, page) : 0;
    for (size_t i = 0; i < n && i < limit && !unavailable; i++) {
        exp_lock(page[i]);
        int rc = exp_owned(page[i]) ? exp_prepare_locked(page[i], http_req_now_ms(r))
                                    : exp_refresh_locked(page[i]);
        if (rc == EXP_OK) {
            json_array_append_new(arr, summary(page[i], blind));
            api_join_add(j, page[i]);
        }
        unavailable = rc == EXP_ERR_STORE;
        exp_unlock(page[i]);
    }
    json_t *next = n > limit ? json_string(exp_id(page[limit - 1])) : json_null();
    for (size_t i = 0; i < n; i++)
        exp_put(page[i]);
    free(page);
    if (j == NULL) {
        json_decref(arr);
        json_decref(next);
        return HTTP_DONE;
    }
    json_t *body = json_pack("{s:o,s:o}", "experiments", arr, "next", next);
    if (unavailable) {
        json_decref(body);
        body = http_problem(503, "an experiment cannot be read from storage; retry later", NULL);
        http_reply_header(r, "Retry-After", "1");
        return api_join_finish(j, 503, body);
    }
    return api_join_finish(j, 200, body);
}

int api_experiments_get(struct http_req *r)
{
    struct exp *x = api_exp_lock(r);
    if (x == NULL)
        return HTTP_DONE;
    json_t *j = api_experiment_json(r, x);
    return api_read_finish(r, x, 200, j);
}

int api_experiments_patch(struct http_req *r)
{
    json_t *body = http_req_json(r, 0);
    if (body == NULL)
        return HTTP_DONE;
    struct exp *x = api_exp_find(r);
    if (x == NULL)
        return HTTP_DONE;
    struct api_patch_req req;
    struct api_errors pe;
    int prc = api_parse_patch(body, exp_cfg(x), &req, api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, prc, &pe);
    if (wr == NULL)
        return HTTP_DONE;
    /* The edit first, then the state: a stop in the same request comes
     * after the change, and the whole request is one write. Leaving
     * "stopped" is refused before anything changes. */
    if (req.has_state && req.state != EXP_STOPPED && exp_get_state(x) == EXP_STOPPED) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        return http_reply_problem(
            r, 409, "the experiment has stopped; a stop is final",
            json_pack("[{s:s,s:s}]", "field", "state", "message", "cannot leave \"stopped\""));
    }
    struct exp_refusal why = {{0}, {0}};
    int rc = exp_ev_edit(x, &wr->batch, &req.edit, http_req_now_ms(r), &why);
    if (rc != EXP_OK) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        if (rc == EXP_ERR_NOMEM)
            return http_reply_oom(r);
        char detail[360];
        snprintf(detail, sizeof detail, "%s: %s", why.field, why.message);
        return http_reply_problem(
            r, 409, detail, json_pack("[{s:s,s:s}]", "field", why.field, "message", why.message));
    }
    if (req.has_state && exp_ev_state(x, &wr->batch, req.state, http_req_now_ms(r)) != EXP_OK) {
        /* Out of memory after the edit was applied: the edit must still
         * reach the disk (memory has it), the state change did not happen. */
        return api_write_finish(wr, x, 503,
                                http_problem(503, "out of memory: the state did not change", NULL));
    }
    /* Asking for the state already held queues no event, but still waits
     * for the write that set it: a 200 must never report a state a crash
     * could take back. */
    json_t *j = api_experiment_json(r, x);
    return api_write_finish(wr, x, 200, j);
}

int api_experiments_delete(struct http_req *r)
{
    struct exp *x = api_exp_find(r);
    struct api_write *wr = x != NULL ? api_write_enter_delete(r, x) : NULL;
    if (wr == NULL)
        return HTTP_DONE;
    int rc = exp_delete_locked(x, &wr->batch, http_req_now_ms(r), api_write_done, wr);
    api_exp_unlock(x);
    if (rc != STORE_OK) {
        api_write_abandon(wr);
        return api_reply_store_error(r, rc);
    }
    return http_req_wait(r, 204, NULL);
}
