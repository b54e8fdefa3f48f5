/*
 * parse.c — request bodies parsed and validated without HTTP (parse.h).
 * Every message here is part of the API (clients match on the field
 * names), so they are the ones the handlers always sent.
 */
#include "api/parse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonv.h"
#include "policies/goal.h"

static int add(json_t *errors, const char *field, const char *message)
{
    return jv_error(errors, field, "%s", message);
}

struct api_errors *api_errors_init(struct api_errors *e)
{
    e->list = json_array();
    e->detail[0] = '\0';
    return e;
}

void api_errors_free(struct api_errors *e)
{
    json_decref(e->list);
    e->list = NULL;
}

/* One offending field: the list gets it, the detail says "field: message". */
static int invalid(struct api_errors *e, const char *field, const char *message)
{
    snprintf(e->detail, API_DETAIL_MAX, "%s: %s", field, message);
    return add(e->list, field, message) != 0 ? -1 : 1;
}

/* The detail of a batch with item errors: the first one, and that nothing
 * was applied. */
static int item_errors(struct api_errors *e)
{
    jv_first_error(e->list, "; nothing was recorded", e->detail, API_DETAIL_MAX);
    return 1;
}

/* --- assignments ------------------------------------------------------------ */

/* What a sticky unit must be (assignments, served). */
#define UNIT_RULE "must be a non-empty string of at most 256 bytes"

int api_parse_assignment(json_t *body, const struct exp_config *cfg, size_t max_count,
                         struct api_assign_req *out, struct api_errors *e)
{
    if (e->list == NULL)
        return -1;
    static const char *const keys[] = {"bandit", "unit", "count", NULL};
    json_t *v;

    out->bandit = -1;
    out->unit = NULL;
    out->count = 1;
    if (!json_is_object(body))
        return invalid(e, "", "the body must be a JSON object");
    if (json_object_size(body) > 0 && jv_unknown_keys(body, keys, "", e->list) > 0) {
        snprintf(e->detail, API_DETAIL_MAX, "unknown fields");
        return 1;
    }
    if ((v = json_object_get(body, "bandit")) != NULL && !json_is_null(v)) {
        const char *id = json_string_value(v);
        if (id == NULL)
            return invalid(e, "bandit", "must be a bandit id (string)");
        out->bandit = exp_cfg_bandit(cfg, id);
        if (out->bandit < 0)
            return invalid(e, "bandit", "no such bandit in this experiment");
    }
    if ((v = json_object_get(body, "unit")) != NULL && !json_is_null(v)) {
        out->unit = json_string_value(v);
        if (out->unit == NULL || out->unit[0] == '\0' || strlen(out->unit) > EXP_MAX_UNIT)
            return invalid(e, "unit", UNIT_RULE);
    }
    if ((v = json_object_get(body, "count")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            (unsigned long long)json_integer_value(v) > (unsigned long long)max_count) {
            char msg[64];
            snprintf(msg, sizeof msg, "must be an integer from 1 to %zu", max_count);
            return invalid(e, "count", msg);
        }
        out->count = (size_t)json_integer_value(v);
    }
    if (out->unit != NULL && out->count != 1)
        return invalid(e, "count", "a unit gets exactly one assignment (count 1)");
    return 0;
}

/* --- rewards and observations ------------------------------------------------------ */

/* The items of a single-or-batch body: {"<one's fields>"} or {"<key>": [...]}.
 * Returns 0 with *arr (borrowed: the list, or NULL for the single form), 1
 * (invalid) or −1. */
static int items_of(json_t *body, const char *key, const char *const *item_keys, size_t max_batch,
                    json_t **arr, struct api_errors *e)
{
    *arr = NULL;
    if (!json_is_object(body))
        return invalid(e, "", "the body must be a JSON object");
    json_t *list = json_object_get(body, key);
    if (list != NULL) {
        if (json_object_size(body) != 1) {
            const char *const only[] = {key, NULL};
            jv_unknown_keys(body, only, "", e->list);
            snprintf(e->detail, API_DETAIL_MAX, "a batch body has only the list");
            return 1;
        }
        if (!json_is_array(list) || json_array_size(list) < 1 ||
            json_array_size(list) > max_batch) {
            char msg[80];
            snprintf(msg, sizeof msg, "must be an array of 1 to %zu items", max_batch);
            return invalid(e, key, msg);
        }
        *arr = list;
        return 0;
    }
    if (jv_unknown_keys(body, item_keys, "", e->list) > 0) {
        snprintf(e->detail, API_DETAIL_MAX, "unknown fields");
        return 1;
    }
    return 0;
}

static void item_field(char *buf, size_t len, int batch, const char *list, size_t i,
                       const char *name)
{
    if (batch)
        snprintf(buf, len, "%s[%zu].%s", list, i, name);
    else
        snprintf(buf, len, "%s", name);
}

/* Item i of a list (arr) or the lone body: NULL, with an error, when it is
 * not an object; in a batch, its unknown keys are errors too (a lone body's
 * were checked by items_of). */
static json_t *item_object(json_t *arr, json_t *body, size_t i, const char *list,
                           const char *const *item_keys, json_t *errors)
{
    json_t *o = arr != NULL ? json_array_get(arr, i) : body;
    char field[64];
    snprintf(field, sizeof field, "%s[%zu]", list, i);
    if (!json_is_object(o)) {
        add(errors, field, "must be an object");
        return NULL;
    }
    if (arr != NULL)
        jv_unknown_keys(o, item_keys, field, errors);
    return o;
}

/* A reward value: a finite number within the experiment's range. Appends
 * an error and returns 0 when it is not one. */
static int check_reward(const struct exp_config *c, json_t *v, int batch, const char *list,
                        size_t i, json_t *errors, double *out)
{
    char field[64], msg[128];
    if (v != NULL && jv_number(v, out) && *out >= c->reward_min && *out <= c->reward_max)
        return 1;
    item_field(field, sizeof field, batch, list, i, "reward");
    if (v == NULL)
        add(errors, field, "required");
    else if (!jv_number(v, out))
        add(errors, field, "must be a finite number");
    else {
        snprintf(msg, sizeof msg, "must be within the reward range [%g, %g]", c->reward_min,
                 c->reward_max);
        add(errors, field, msg);
    }
    return 0;
}

/* One item of a list body: i its index, batch whether it came in a list
 * (field names then read "<list>[i].<name>"); errors reported into
 * `errors`. */
struct item_kind {
    const char *list; /* "rewards" */
    const char *const *keys;
    size_t size; /* of one parsed item */
    void (*parse)(json_t *o, const struct exp_config *cfg, int batch, size_t i, void *item,
                  json_t *errors);
};

/* Every item of a single-or-batch body, all validated before any is
 * returned. Same contract as the parsers: 0 with a new array of *n items in
 * *items, 1 or −1. */
static int parse_items(json_t *body, const struct exp_config *cfg, size_t max_batch,
                       const struct item_kind *k, void **items, size_t *n, int *batch,
                       struct api_errors *e)
{
    json_t *arr;
    *items = NULL;
    *n = 0;
    *batch = 0;
    if (e->list == NULL)
        return -1;
    int rc = items_of(body, k->list, k->keys, max_batch, &arr, e);
    if (rc != 0)
        return rc;
    *batch = arr != NULL;
    size_t count = arr != NULL ? json_array_size(arr) : 1;
    char *it = calloc(count, k->size);
    if (it == NULL)
        return -1;
    for (size_t i = 0; i < count; i++) {
        json_t *o = item_object(arr, body, i, k->list, k->keys, e->list);
        if (o != NULL)
            k->parse(o, cfg, *batch, i, it + i * k->size, e->list);
    }
    if (json_array_size(e->list) > 0) {
        free(it);
        return item_errors(e);
    }
    *items = it;
    *n = count;
    return 0;
}

static void reward_item(json_t *o, const struct exp_config *cfg, int batch, size_t i, void *item,
                        json_t *errors)
{
    struct api_reward_item *it = item;
    it->assignment_id = json_string_value(json_object_get(o, "assignment_id"));
    if (it->assignment_id == NULL) {
        char field[64];
        item_field(field, sizeof field, batch, "rewards", i, "assignment_id");
        add(errors, field, "must be an assignment id (string)");
    }
    check_reward(cfg, json_object_get(o, "reward"), batch, "rewards", i, errors, &it->value);
}

int api_parse_rewards(json_t *body, const struct exp_config *cfg, size_t max_batch,
                      struct api_reward_item **items, size_t *n, int *batch, struct api_errors *e)
{
    static const char *const keys[] = {"assignment_id", "reward", NULL};
    static const struct item_kind kind = {"rewards", keys, sizeof **items, reward_item};
    return parse_items(body, cfg, max_batch, &kind, (void **)items, n, batch, e);
}

static void release_item(json_t *o, const struct exp_config *cfg, int batch, size_t i, void *item,
                         json_t *errors)
{
    struct api_release_item *it = item;
    (void)cfg;
    it->assignment_id = json_string_value(json_object_get(o, "assignment_id"));
    if (it->assignment_id == NULL) {
        char field[64];
        item_field(field, sizeof field, batch, "releases", i, "assignment_id");
        add(errors, field, "must be an assignment id (string)");
    }
}

int api_parse_releases(json_t *body, const struct exp_config *cfg, size_t max_batch,
                       struct api_release_item **items, size_t *n, int *batch, struct api_errors *e)
{
    static const char *const keys[] = {"assignment_id", NULL};
    static const struct item_kind kind = {"releases", keys, sizeof **items, release_item};
    return parse_items(body, cfg, max_batch, &kind, (void **)items, n, batch, e);
}

static void served_item(json_t *o, const struct exp_config *cfg, int batch, size_t i, void *item,
                        json_t *errors)
{
    struct api_served_item *it = item;
    char field[64];
    (void)cfg;
    it->assignment_id = json_string_value(json_object_get(o, "assignment_id"));
    if (it->assignment_id == NULL) {
        item_field(field, sizeof field, batch, "served", i, "assignment_id");
        add(errors, field, "must be an assignment id (string)");
    }
    it->unit = json_string_value(json_object_get(o, "unit"));
    if (it->unit == NULL || it->unit[0] == '\0' || strlen(it->unit) > EXP_MAX_UNIT) {
        item_field(field, sizeof field, batch, "served", i, "unit");
        add(errors, field, UNIT_RULE);
    }
}

int api_parse_served(json_t *body, const struct exp_config *cfg, size_t max_batch,
                     struct api_served_item **items, size_t *n, int *batch, struct api_errors *e)
{
    static const char *const keys[] = {"assignment_id", "unit", NULL};
    static const struct item_kind kind = {"served", keys, sizeof **items, served_item};
    return parse_items(body, cfg, max_batch, &kind, (void **)items, n, batch, e);
}

static void observation_item(json_t *o, const struct exp_config *cfg, int batch, size_t i,
                             void *item, json_t *errors)
{
    struct api_observation_item *it = item;
    char field[64];
    json_t *bj = json_object_get(o, "bandit");
    it->bandit = 0;
    if (bj != NULL && !json_is_null(bj)) {
        const char *bid = json_string_value(bj);
        it->bandit = bid != NULL ? exp_cfg_bandit(cfg, bid) : -1;
        if (it->bandit < 0) {
            item_field(field, sizeof field, batch, "observations", i, "bandit");
            add(errors, field, "no such bandit in this experiment");
            return;
        }
    } else if (cfg->n_bandits > 1) {
        item_field(field, sizeof field, batch, "observations", i, "bandit");
        add(errors, field, "required: the experiment has several bandits");
        return;
    }
    const char *arm = json_string_value(json_object_get(o, "arm"));
    it->arm = arm != NULL ? exp_cfg_arm(cfg, (size_t)it->bandit, arm) : -1;
    if (it->arm < 0) {
        item_field(field, sizeof field, batch, "observations", i, "arm");
        add(errors, field, "must name an arm of the bandit");
    }
    check_reward(cfg, json_object_get(o, "reward"), batch, "observations", i, errors, &it->value);
}

int api_parse_observations(json_t *body, const struct exp_config *cfg, size_t max_batch,
                           struct api_observation_item **items, size_t *n, struct api_errors *e)
{
    static const char *const keys[] = {"bandit", "arm", "reward", NULL};
    static const struct item_kind kind = {"observations", keys, sizeof **items, observation_item};
    int batch;
    return parse_items(body, cfg, max_batch, &kind, (void **)items, n, &batch, e);
}

/* --- PATCH ------------------------------------------------------------------------ */

/* Configuration fields a PATCH names but may not change: what was
 * randomised, or what the guarantee was computed for. */
static const char *const fixed_keys[] = {
    "id",        "policy", "reward",   "bandits",    "arms",           "seed",
    "stop_rule", "bound",  "tau",      "target_arm", "default_reward", "constraints",
    "prior",     "units",  "fallback", "webhooks",   "rule_revision",  NULL};

/* "reason": an optional string of at most API_REASON_MAX bytes. */
static int parse_reason(json_t *v, const char **out, struct api_errors *e)
{
    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > API_REASON_MAX)
        return invalid(e, "reason", "must be a non-empty string of at most 1024 bytes");
    *out = json_string_value(v);
    return 0;
}

static void correction_item(json_t *o, const struct exp_config *cfg, int batch, size_t i,
                            void *item, json_t *errors)
{
    struct api_correction_item *it = item;
    char field[64];
    it->assignment_id = json_string_value(json_object_get(o, "assignment_id"));
    if (it->assignment_id == NULL) {
        item_field(field, sizeof field, batch, "corrections", i, "assignment_id");
        add(errors, field, "required: the id of a rewarded assignment");
    }
    check_reward(cfg, json_object_get(o, "reward"), batch, "corrections", i, errors, &it->value);
    json_t *r = json_object_get(o, "reason");
    it->reason = json_string_value(r);
    if (it->reason == NULL || json_string_length(r) == 0 ||
        json_string_length(r) > API_REASON_MAX) {
        item_field(field, sizeof field, batch, "corrections", i, "reason");
        add(errors, field, "required: why the reported value was wrong (at most 1024 bytes)");
    }
}

int api_parse_corrections(json_t *body, const struct exp_config *cfg, size_t max_batch,
                          struct api_correction_item **items, size_t *n, int *batch,
                          struct api_errors *e)
{
    static const char *const keys[] = {"assignment_id", "reward", "reason", NULL};
    static const struct item_kind kind = {"corrections", keys, sizeof **items, correction_item};
    return parse_items(body, cfg, max_batch, &kind, (void **)items, n, batch, e);
}

/* "retire": {"bandit" (optional with one bandit), "arm"}. */
static int parse_retire(json_t *v, const struct exp_config *cfg, struct exp_edit *ed,
                        struct api_errors *e)
{
    static const char *const keys[] = {"bandit", "arm", NULL};
    if (!json_is_object(v))
        return invalid(e, "retire", "must be an object {\"bandit\", \"arm\"}");
    if (jv_unknown_keys(v, keys, "retire", e->list) > 0) {
        snprintf(e->detail, API_DETAIL_MAX, "unknown fields");
        return 1;
    }
    json_t *bj = json_object_get(v, "bandit");
    int b = 0;
    if (bj != NULL) {
        const char *id = json_string_value(bj);
        if (id == NULL || (b = exp_cfg_bandit(cfg, id)) < 0)
            return invalid(e, "retire.bandit", "no such bandit in this experiment");
    } else if (cfg->n_bandits > 1) {
        return invalid(e, "retire.bandit", "required: the experiment has several bandits");
    }
    const char *arm = json_string_value(json_object_get(v, "arm"));
    int a = arm != NULL ? exp_cfg_arm(cfg, (size_t)b, arm) : -1;
    if (a < 0)
        return invalid(e, "retire.arm", "must name an arm of the bandit");
    ed->retire_bandit = b;
    ed->retire_arm = a;
    return 0;
}

int api_parse_patch(json_t *body, const struct exp_config *cfg, struct api_patch_req *out,
                    struct api_errors *e)
{
    if (e->list == NULL)
        return -1;
    static const char *const keys[] = {"state",  "name",   "goal", "assignment_ttl_s",
                                       "retire", "reason", NULL};
    memset(out, 0, sizeof *out);
    out->edit.retire_bandit = -1;
    out->edit.retire_arm = -1;
    if (!json_is_object(body))
        return invalid(e, "", "the body must be a JSON object");
    for (size_t i = 0; fixed_keys[i] != NULL; i++)
        if (json_object_get(body, fixed_keys[i]) != NULL)
            return invalid(e, fixed_keys[i],
                           "cannot change on a live experiment (fixed at creation)");
    if (jv_unknown_keys(body, keys, "", e->list) > 0) {
        snprintf(e->detail, API_DETAIL_MAX, "unknown fields");
        return 1;
    }
    json_t *v;
    if ((v = json_object_get(body, "state")) != NULL) {
        if (exp_state_parse(json_string_value(v), &out->state) != 0)
            return invalid(e, "state", "must be \"running\", \"paused\" or \"stopped\"");
        out->has_state = 1;
    }
    if ((v = json_object_get(body, "name")) != NULL) {
        if (!json_is_string(v) || json_string_length(v) > 256)
            return invalid(e, "name", "must be a string of at most 256 bytes");
        out->edit.name = json_string_value(v);
    }
    if ((v = json_object_get(body, "goal")) != NULL) {
        static const char *const gkeys[] = {"budget", NULL};
        if (!json_is_object(v))
            return invalid(e, "goal", "must be an object");
        static const char *const gfixed[] = {"type",    "m",      "epsilon", "delta",
                                             "control", "margin", "scale",   NULL};
        for (size_t i = 0; gfixed[i] != NULL; i++)
            if (json_object_get(v, gfixed[i]) != NULL) {
                char field[16];
                snprintf(field, sizeof field, "goal.%s", gfixed[i]);
                return invalid(e, field, "cannot change on a live experiment (fixed at creation)");
            }
        if (jv_unknown_keys(v, gkeys, "goal", e->list) > 0) {
            snprintf(e->detail, API_DETAIL_MAX, "unknown fields");
            return 1;
        }
        if (json_object_get(v, "budget") != NULL) {
            /* The create body's rule (policies/goal.h); null: no budget. */
            struct goal g;
            goal_defaults(&g);
            if (goal_parse(v, NAN, "goal.", &g, e->list) > 0) {
                jv_first_error(e->list, NULL, e->detail, API_DETAIL_MAX);
                return 1;
            }
            out->edit.set_budget = 1;
            out->edit.budget = g.budget;
        }
    }
    if ((v = json_object_get(body, "assignment_ttl_s")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > 10LL * 366 * 86400)
            return invalid(e, "assignment_ttl_s",
                           "must be an integer from 1 to 316224000 (10 years)");
        out->edit.ttl_s = json_integer_value(v);
    }
    if ((v = json_object_get(body, "retire")) != NULL && parse_retire(v, cfg, &out->edit, e) != 0)
        return 1;
    if (parse_reason(json_object_get(body, "reason"), &out->edit.reason, e) != 0)
        return 1;
    if (!out->has_state && out->edit.name == NULL && !out->edit.set_budget &&
        out->edit.ttl_s == 0 && out->edit.retire_bandit < 0)
        return invalid(e, "",
                       "nothing to change: give state, name, goal.budget, "
                       "assignment_ttl_s or retire");
    return 0;
}

int api_parse_amendment(json_t *body, const struct exp_config *cfg, struct api_patch_req *out,
                        struct api_errors *e)
{
    if (e->list == NULL)
        return -1;
    static const char *const keys[] = {"change", "reason", NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(body))
        return invalid(e, "", "the body must be a JSON object");
    if (jv_unknown_keys(body, keys, "", e->list) > 0) {
        snprintf(e->detail, API_DETAIL_MAX, "unknown fields");
        return 1;
    }
    const char *reason;
    if (parse_reason(json_object_get(body, "reason"), &reason, e) != 0)
        return 1;
    if (reason == NULL)
        return invalid(e, "reason", "required: why the design changes");
    json_t *change = json_object_get(body, "change");
    if (!json_is_object(change))
        return invalid(e, "change", "required: an object of what PATCH may change");
    /* A state change or a reason inside is not part of the design. */
    if (json_object_get(change, "state") != NULL)
        return invalid(e, "change.state",
                       "a state change is not an amendment: PATCH /v1/experiments/{id}");
    if (json_object_get(change, "reason") != NULL)
        return invalid(e, "change.reason", "give the reason beside the change, not in it");
    int rc = api_parse_patch(change, cfg, out, e);
    if (rc > 0) {
        /* The fields as the body names them. */
        size_t i;
        json_t *it;
        json_array_foreach(e->list, i, it)
        {
            const char *f = json_string_value(json_object_get(it, "field"));
            char field[96];
            snprintf(field, sizeof field, "change%s%s", f != NULL && *f ? "." : "",
                     f != NULL ? f : "");
            json_object_set_new(it, "field", json_string(field));
        }
        char detail[API_DETAIL_MAX + 8];
        snprintf(detail, sizeof detail, "change.%s", e->detail);
        snprintf(e->detail, API_DETAIL_MAX, "%.*s", API_DETAIL_MAX - 1, detail);
        return 1;
    }
    if (rc == 0) {
        out->edit.reason = reason;
        out->edit.amendment = 1;
    }
    return rc;
}
