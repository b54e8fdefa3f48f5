/*
 * rewards.c — POST /v1/experiments/{id}/rewards and /observations.
 *
 * Every item of a batch is validated before any is applied: a batch with
 * one bad item changes nothing and the 400 names each offending field. A
 * 200 is sent only after the batch's events are committed — including when
 * every item is a duplicate, since the first report may itself still be on
 * its way to disk.
 */
#include "api/api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonutil.h"
#include "server/metrics.h"

extern const struct exp_limits *exp_limits_get(void);

/* The items of a single-or-batch body: {"<one fields>"} or {"<key>": [...]}.
 * Returns a new reference to an array, or NULL after replying 400. */
static json_t *items_of(struct api_req *r, json_t *body, const char *key,
                        const char *const *item_keys)
{
    if (!json_is_object(body)) {
        api_reply_invalid(r, "", "the body must be a JSON object");
        return NULL;
    }
    json_t *arr = json_object_get(body, key);
    if (arr != NULL) {
        if (json_object_size(body) != 1) {
            json_t *errors = json_array();
            const char *const only[] = {key, NULL};
            api_json_unknown_keys(body, only, "", errors);
            api_reply_problem(r, 400, "a batch body has only the list", errors);
            return NULL;
        }
        size_t max = exp_limits_get()->max_batch;
        if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > max) {
            char msg[80];
            snprintf(msg, sizeof msg, "must be an array of 1 to %zu items", max);
            api_reply_invalid(r, key, msg);
            return NULL;
        }
        return json_incref(arr);
    }
    json_t *errors = json_array();
    if (api_json_unknown_keys(body, item_keys, "", errors) > 0) {
        api_reply_problem(r, 400, "unknown fields", errors);
        return NULL;
    }
    json_decref(errors);
    return json_pack("[O]", body);
}

/* Validate a reward value: a finite number within the experiment's range. */
static int check_reward(struct exp *x, json_t *v, const char *field, json_t *errors,
                        double *out)
{
    const struct exp_config *c = exp_cfg(x);
    char msg[128];
    if (v == NULL) {
        json_array_append_new(errors,
                              json_pack("{s:s,s:s}", "field", field, "message", "required"));
        return 0;
    }
    if (!api_json_number(v, out)) {
        json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message",
                                                "must be a finite number"));
        return 0;
    }
    if (*out < c->reward_min || *out > c->reward_max) {
        snprintf(msg, sizeof msg, "must be within the reward range [%g, %g]", c->reward_min,
                 c->reward_max);
        json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message", msg));
        return 0;
    }
    return 1;
}

static void item_field(char *buf, size_t len, int batch, const char *list, size_t i,
                       const char *name)
{
    if (batch)
        snprintf(buf, len, "%s[%zu].%s", list, i, name);
    else
        snprintf(buf, len, "%s", name);
}

static int finish(struct api_req *r, struct exp *x, json_t *reply)
{
    int rc = api_req_submit(r, x);
    api_exp_unlock(x);
    if (rc != STORE_OK) {
        json_decref(reply);
        return api_reply_store_error(r, rc);
    }
    return api_req_wait(r, 200, reply);
}

int api_rewards_create(struct api_req *r)
{
    json_t *body = api_req_json(r, 0);
    if (body == NULL)
        return API_DONE;
    static const char *const item_keys[] = {"assignment_id", "reward", NULL};
    json_t *items = items_of(r, body, "rewards", item_keys);
    if (items == NULL)
        return API_DONE;
    int batch = json_object_get(body, "rewards") != NULL;
    struct exp *x = api_exp_lock(r);
    if (x == NULL) {
        json_decref(items);
        return API_DONE;
    }
    size_t n = json_array_size(items);
    json_t *errors = json_array();
    double *values = calloc(n, sizeof *values);
    if (values == NULL || errors == NULL) {
        api_exp_unlock(x);
        json_decref(items);
        json_decref(errors);
        free(values);
        return api_reply_problem(r, 503, "out of memory", NULL);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        char field[64], prefix[32];
        snprintf(prefix, sizeof prefix, "rewards[%zu]", i);
        if (!json_is_object(it)) {
            json_array_append_new(errors, json_pack("{s:s,s:s}", "field", prefix, "message",
                                                    "must be an object"));
            continue;
        }
        if (batch)
            api_json_unknown_keys(it, item_keys, prefix, errors);
        item_field(field, sizeof field, batch, "rewards", i, "assignment_id");
        if (!json_is_string(json_object_get(it, "assignment_id")))
            json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message",
                                                    "must be an assignment id (string)"));
        item_field(field, sizeof field, batch, "rewards", i, "reward");
        check_reward(x, json_object_get(it, "reward"), field, errors, &values[i]);
    }
    if (json_array_size(errors) > 0) {
        api_exp_unlock(x);
        json_decref(items);
        free(values);
        json_t *first = json_array_get(errors, 0);
        char detail[256];
        snprintf(detail, sizeof detail, "%s: %s; nothing was recorded",
                 json_string_value(json_object_get(first, "field")),
                 json_string_value(json_object_get(first, "message")));
        return api_reply_problem(r, 400, detail, errors);
    }
    json_decref(errors);
    struct exp_batch *b = api_req_batch(r);
    json_t *results = json_array();
    size_t accepted = 0, duplicates = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        const char *aid = json_string_value(json_object_get(it, "assignment_id"));
        int64_t seq = exp_parse_assignment_id(x, aid);
        enum exp_reward_status st =
            seq < 0 ? EXP_R_UNKNOWN : exp_ev_reward(x, b, seq, values[i], api_req_now_ms(r));
        metrics_reward(st);
        if (st == EXP_R_ERROR) {
            /* A storage read failed: stop here; what was applied so far is
             * still written below and reported. */
            json_array_append_new(results, json_pack("{s:s,s:s}", "assignment_id", aid,
                                                     "status", "error"));
            continue;
        }
        accepted += st == EXP_R_ACCEPTED;
        duplicates += st == EXP_R_DUPLICATE;
        json_array_append_new(results, json_pack("{s:s,s:s}", "assignment_id", aid, "status",
                                                 exp_reward_status_name(st)));
    }
    json_decref(items);
    free(values);
    json_t *reply = json_pack("{s:I,s:I,s:o}", "accepted", (json_int_t)accepted, "duplicates",
                              (json_int_t)duplicates, "results", results);
    if (!batch && n == 1 &&
        strcmp(json_string_value(json_object_get(json_array_get(results, 0), "status")),
               "unknown") == 0) {
        api_exp_unlock(x);
        json_decref(reply);
        return api_reply_problem(r, 404, "no such assignment in this experiment",
                                 json_pack("[{s:s,s:s}]", "field", "assignment_id", "message",
                                           "unknown"));
    }
    return finish(r, x, reply);
}

int api_observations_create(struct api_req *r)
{
    json_t *body = api_req_json(r, 0);
    if (body == NULL)
        return API_DONE;
    static const char *const item_keys[] = {"bandit", "arm", "reward", NULL};
    json_t *items = items_of(r, body, "observations", item_keys);
    if (items == NULL)
        return API_DONE;
    int batch = json_object_get(body, "observations") != NULL;
    struct exp *x = api_exp_lock(r);
    if (x == NULL) {
        json_decref(items);
        return API_DONE;
    }
    size_t n = json_array_size(items);
    json_t *errors = json_array();
    double *values = calloc(n, sizeof *values);
    int *bandits = calloc(n, sizeof *bandits), *arms = calloc(n, sizeof *arms);
    if (!values || !bandits || !arms || !errors) {
        api_exp_unlock(x);
        json_decref(items);
        json_decref(errors);
        free(values);
        free(bandits);
        free(arms);
        return api_reply_problem(r, 503, "out of memory", NULL);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        char field[64], prefix[40];
        snprintf(prefix, sizeof prefix, "observations[%zu]", i);
        if (!json_is_object(it)) {
            json_array_append_new(errors, json_pack("{s:s,s:s}", "field", prefix, "message",
                                                    "must be an object"));
            continue;
        }
        if (batch)
            api_json_unknown_keys(it, item_keys, prefix, errors);
        json_t *bj = json_object_get(it, "bandit");
        bandits[i] = 0;
        if (bj != NULL && !json_is_null(bj)) {
            const char *bid = json_string_value(bj);
            bandits[i] = bid != NULL ? exp_bandit_index(x, bid) : -1;
            if (bandits[i] < 0) {
                item_field(field, sizeof field, batch, "observations", i, "bandit");
                json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message",
                                                        "no such bandit in this experiment"));
                continue;
            }
        } else if (exp_cfg(x)->n_bandits > 1) {
            item_field(field, sizeof field, batch, "observations", i, "bandit");
            json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message",
                                                    "required: the experiment has several bandits"));
            continue;
        }
        const char *arm = json_string_value(json_object_get(it, "arm"));
        arms[i] = arm != NULL ? exp_arm_index(x, (size_t)bandits[i], arm) : -1;
        if (arms[i] < 0) {
            item_field(field, sizeof field, batch, "observations", i, "arm");
            json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message",
                                                    "must name an arm of the bandit"));
        }
        item_field(field, sizeof field, batch, "observations", i, "reward");
        check_reward(x, json_object_get(it, "reward"), field, errors, &values[i]);
    }
    json_decref(items);
    if (json_array_size(errors) > 0) {
        api_exp_unlock(x);
        free(values);
        free(bandits);
        free(arms);
        json_t *first = json_array_get(errors, 0);
        char detail[256];
        snprintf(detail, sizeof detail, "%s: %s; nothing was recorded",
                 json_string_value(json_object_get(first, "field")),
                 json_string_value(json_object_get(first, "message")));
        return api_reply_problem(r, 400, detail, errors);
    }
    json_decref(errors);
    struct exp_batch *b = api_req_batch(r);
    for (size_t i = 0; i < n; i++)
        if (exp_ev_observe(x, b, (size_t)bandits[i], (size_t)arms[i], values[i],
                           api_req_now_ms(r)) != EXP_OK) {
            n = i; /* out of memory: report what was recorded */
            break;
        }
    free(values);
    free(bandits);
    free(arms);
    metrics_observations(n);
    return finish(r, x, json_pack("{s:I}", "accepted", (json_int_t)n));
}
