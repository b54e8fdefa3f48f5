/*
 * assignments.c — POST /v1/experiments/{id}/assignments: which arm next.
 * Body (all optional): {"bandit": "...", "unit": "...", "count": N}.
 */
#include "api/api.h"

#include <stdio.h>
#include <string.h>

#include "api/jsonutil.h"
#include "server/metrics.h"

extern const struct exp_limits *exp_limits_get(void);

static json_t *assignment_json(struct exp *x, const struct exp_assignment *a)
{
    const struct exp_config *c = exp_cfg(x);
    char id[48], exp_at[40];
    exp_assignment_id(x, a->seq, id, sizeof id);
    api_format_time(a->expires_ms, exp_at, sizeof exp_at);
    return json_pack("{s:s,s:s,s:s,s:i,s:s,s:b}", "id", id, "bandit", c->bandit_ids[a->bandit],
                     "arm", c->arm_names[a->bandit][a->arm], "arm_index", (json_int_t)a->arm,
                     "expires_at", exp_at, "exploit", a->status == EXP_A_EXPLOIT);
}

int api_assignments_create(struct api_req *r)
{
    json_t *body = api_req_json(r, 1);
    if (body == NULL)
        return API_DONE;
    if (!json_is_object(body))
        return api_reply_invalid(r, "", "the body must be a JSON object");
    static const char *const keys[] = {"bandit", "unit", "count", NULL};
    json_t *errors = json_array();
    if (api_json_unknown_keys(body, keys, "", errors) > 0)
        return api_reply_problem(r, 400, "unknown fields", errors);
    json_decref(errors);

    const char *bandit_id = NULL, *unit = NULL;
    json_t *v;
    if ((v = json_object_get(body, "bandit")) != NULL && !json_is_null(v)) {
        bandit_id = json_string_value(v);
        if (bandit_id == NULL)
            return api_reply_invalid(r, "bandit", "must be a bandit id (string)");
    }
    if ((v = json_object_get(body, "unit")) != NULL && !json_is_null(v)) {
        unit = json_string_value(v);
        if (unit == NULL || unit[0] == '\0' || strlen(unit) > EXP_MAX_UNIT)
            return api_reply_invalid(r, "unit", "must be a non-empty string of at most 256 bytes");
    }
    size_t count = 1, max_count = exp_limits_get()->max_count;
    if ((v = json_object_get(body, "count")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            (size_t)json_integer_value(v) > max_count) {
            char msg[64];
            snprintf(msg, sizeof msg, "must be an integer from 1 to %zu", max_count);
            return api_reply_invalid(r, "count", msg);
        }
        count = (size_t)json_integer_value(v);
    }
    if (unit != NULL && count != 1)
        return api_reply_invalid(r, "count", "a unit gets exactly one assignment (count 1)");

    struct exp *x = api_exp_lock(r);
    if (x == NULL)
        return API_DONE;
    int bandit = -1;
    if (bandit_id != NULL && (bandit = exp_bandit_index(x, bandit_id)) < 0) {
        api_exp_unlock(x);
        return api_reply_invalid(r, "bandit", "no such bandit in this experiment");
    }
    json_t *list = json_array();
    if (unit != NULL) {
        struct exp_assignment found;
        int rc = exp_find_unit(x, unit, &found);
        if (rc < 0) {
            api_exp_unlock(x);
            json_decref(list);
            return api_reply_problem(r, 503, "storage read failed; retry later", NULL);
        }
        if (rc == 1) {
            /* Sticky: the unit's first assignment, not a new pull. */
            json_array_append_new(list, assignment_json(x, &found));
            api_exp_unlock(x);
            return api_reply_json(r, 200, json_pack("{s:o}", "assignments", list));
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
        json_array_append_new(list, assignment_json(x, a));
    }
    if (b->n == 0) {
        api_exp_unlock(x);
        json_decref(list);
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
        json_decref(list);
        return api_reply_store_error(r, rc);
    }
    return api_req_wait(r, 201, json_pack("{s:o}", "assignments", list));
}
