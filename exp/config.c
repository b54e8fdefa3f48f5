/*
 * config.c — an experiment's configuration (config.h): the create body
 * parsed and validated, and its normalised JSON.
 */
#include "exp/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/jsonv.h"
#include "exp/internal.h"
#include "policies/goal.h"
#include "policies/stop_rule.h"

static void random_id(char *buf, size_t len)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char raw[32];
    if (len > sizeof raw + 1)
        len = sizeof raw + 1;
    if (getrandom(raw, len - 1, 0) != (ssize_t)(len - 1))
        memset(raw, 7, sizeof raw);
    for (size_t i = 0; i + 1 < len; i++)
        buf[i] = alphabet[raw[i] % (sizeof alphabet - 1)];
    buf[len - 1] = '\0';
}

void exp_config_free(struct exp_config *c)
{
    if (c == NULL)
        return;
    free(c->name);
    json_decref(c->policy_params);
    if (c->bandit_ids != NULL)
        for (size_t b = 0; b < c->n_bandits; b++)
            free(c->bandit_ids[b]);
    free(c->bandit_ids);
    if (c->arm_names != NULL)
        for (size_t b = 0; b < c->n_bandits; b++) {
            if (c->arm_names[b] != NULL)
                for (size_t i = 0; i < c->n_arms[b]; i++)
                    free(c->arm_names[b][i]);
            free(c->arm_names[b]);
        }
    free(c->arm_names);
    free(c->n_arms);
    free(c->control_arm);
    exp_webhooks_free(c);
    json_decref(c->json);
    memset(c, 0, sizeof *c);
}

/* A finite JSON number (integer or real), or 0 with *ok = 0. */
static double num(const json_t *v, int *ok)
{
    double x = 0;
    *ok = jv_number(v, &x);
    return x;
}

static int parse_bandits(struct exp_config *c, json_t *bandits, int shorthand, json_t *errors,
                         const struct exp_limits *lim)
{
    size_t nb = json_array_size(bandits);
    if (nb < 1 || nb > lim->max_bandits) {
        jv_error(errors, "bandits", "need 1 to %zu bandits", lim->max_bandits);
        return 1;
    }
    c->n_bandits = nb;
    c->bandit_ids = calloc(nb, sizeof *c->bandit_ids);
    c->n_arms = calloc(nb, sizeof *c->n_arms);
    c->arm_names = calloc(nb, sizeof *c->arm_names);
    if (!c->bandit_ids || !c->n_arms || !c->arm_names)
        return -1;
    int bad = 0;
    for (size_t b = 0; b < nb; b++) {
        char field[64];
        /* bid may point here: it must outlive the else block */
        // cppcheck-suppress variableScope
        char defid[32];
        json_t *bj = json_array_get(bandits, b);
        json_t *arms = NULL;
        const char *bid = NULL;
        if (shorthand) {
            arms = bj;
            bid = "default";
            snprintf(field, sizeof field, "arms");
        } else {
            snprintf(field, sizeof field, "bandits[%zu]", b);
            static const char *const keys[] = {"id", "arms", NULL};
            int unknown = jv_object(bj, keys, field, errors);
            if (unknown != 0)
                bad = 1;
            if (unknown < 0)
                continue;
            json_t *idj = json_object_get(bj, "id");
            snprintf(defid, sizeof defid, "b%zu", b);
            bid = idj == NULL ? (nb == 1 ? "default" : defid) : json_string_value(idj);
            if (bid == NULL || !exp_id_valid(bid)) {
                char f[80];
                snprintf(f, sizeof f, "%s.id", field);
                jv_error(errors, f, "must match [A-Za-z0-9_.-]{1,64}");
                bad = 1;
                continue;
            }
            arms = json_object_get(bj, "arms");
            snprintf(field + strlen(field), sizeof field - strlen(field), ".arms");
        }
        if (exp_cfg_bandit(c, bid) >= 0) { /* the ids so far; the others are NULL */
            jv_error(errors, field, "bandit id \"%s\" is used twice", bid);
            bad = 1;
        }
        c->bandit_ids[b] = strdup(bid);
        if (c->bandit_ids[b] == NULL)
            return -1;
        size_t k = json_array_size(arms);
        if (!json_is_array(arms) || k < 2 || k > lim->max_arms) {
            jv_error(errors, field, "must be an array of 2 to %zu arm names", lim->max_arms);
            bad = 1;
            continue;
        }
        c->n_arms[b] = k;
        c->arm_names[b] = calloc(k, sizeof **c->arm_names);
        if (c->arm_names[b] == NULL)
            return -1;
        for (size_t i = 0; i < k; i++) {
            const char *name = json_string_value(json_array_get(arms, i));
            if (name == NULL || name[0] == '\0' || strlen(name) > 64) {
                char f[96];
                snprintf(f, sizeof f, "%s[%zu]", field, i);
                jv_error(errors, f, "must be a non-empty string of at most 64 bytes");
                bad = 1;
                continue;
            }
            if (exp_cfg_arm(c, b, name) >= 0) { /* the names so far; the others are NULL */
                char f[96];
                snprintf(f, sizeof f, "%s[%zu]", field, i);
                jv_error(errors, f, "arm \"%s\" is listed twice", name);
                bad = 1;
            }
            c->arm_names[b][i] = strdup(name);
            if (c->arm_names[b][i] == NULL)
                return -1;
        }
    }
    return bad;
}

static int parse_policy(struct exp_config *c, json_t *pol, int has_budget, int vs_control,
                        json_t *errors)
{
    const char *name = vs_control ? "vs-control" : has_budget ? "sar" : "adapt";
    json_t *params = NULL;
    if (pol != NULL) {
        static const char *const keys[] = {"name", "params", NULL};
        if (jv_object(pol, keys, "policy", errors) != 0)
            return 1;
        json_t *nj = json_object_get(pol, "name");
        if (nj != NULL) {
            name = json_string_value(nj);
            if (name == NULL) {
                jv_error(errors, "policy.name", "must be a string");
                return 1;
            }
        }
        params = json_object_get(pol, "params");
        if (params != NULL && !json_is_object(params)) {
            jv_error(errors, "policy.params", "must be an object");
            return 1;
        }
    }
    c->policy = policy_find(name);
    if (c->policy == NULL && pol == NULL)
        c->policy = policy_find("uniform"); /* a build without the default */
    if (c->policy == NULL) {
        char list[1024] = "";
        size_t len = 0;
        for (const struct policy_ops *const *p = policy_all(); *p != NULL; p++)
            len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s%s",
                                    p == policy_all() ? "" : ", ", (*p)->name);
        jv_error(errors, "policy.name", "unknown policy \"%s\"; known: %s", name, list);
        return 1;
    }
    policy_params_defaults(c->policy, &c->engine.params);
    c->policy_params = params != NULL ? json_deep_copy(params) : json_object();
    if (c->policy_params == NULL)
        return -1;
    int bad = 0;
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v)
    {
        char field[128];
        snprintf(field, sizeof field, "policy.params.%s", key);
        int idx = policy_param_index(c->policy, key);
        if (idx < 0) {
            jv_error(errors, field, "policy %s has no parameter \"%s\"", c->policy->name, key);
            bad = 1;
            continue;
        }
        const struct policy_param_spec *spec = &c->policy->params[idx];
        char err[160];
        double out = 0;
        int ok;
        if (json_is_string(v)) {
            if (policy_param_parse(spec, json_string_value(v), &out, err, sizeof err) != 0) {
                jv_error(errors, field, "%s", err);
                bad = 1;
                continue;
            }
        } else {
            out = num(v, &ok);
            if (!ok || spec->type == POLICY_PARAM_ENUM ||
                policy_param_check(spec, out, err, sizeof err) != 0) {
                jv_error(errors, field, "%s",
                         !ok                               ? "must be a finite number"
                         : spec->type == POLICY_PARAM_ENUM ? "must be a string choice"
                                                           : err);
                bad = 1;
                continue;
            }
        }
        c->engine.params.values[idx] = out;
    }
    return bad;
}

static const char *const after_stop_names[] = {"recommendation", "keep", NULL};
static const char *const after_expiry_names[] = {"new", "keep", NULL};
static const char *const fallback_names[] = {"none", "control", "recommendation", NULL};

/* The index of s in names (NULL-terminated), or −1. */
static int name_index(const char *const *names, const char *s)
{
    for (int i = 0; s != NULL && names[i] != NULL; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* "units": {"after_stop": …, "after_expiry": …}; defaults: the winner after
 * a stop, a new assignment after an expiry. 0, or 1 with errors. */
static int parse_units(struct exp_config *c, json_t *units, json_t *errors)
{
    c->after_stop = EXP_AFTER_STOP_RECOMMENDATION;
    c->after_expiry = EXP_AFTER_EXPIRY_NEW;
    if (units == NULL || json_is_null(units))
        return 0;
    static const char *const keys[] = {"after_stop", "after_expiry", NULL};
    if (jv_object(units, keys, "units", errors) != 0)
        return 1;
    json_t *v = json_object_get(units, "after_stop");
    int i = v != NULL ? name_index(after_stop_names, json_string_value(v)) : 0;
    if (i < 0) {
        jv_error(errors, "units.after_stop", "must be \"recommendation\" or \"keep\"");
        return 1;
    }
    c->after_stop = (enum exp_after_stop)i;
    v = json_object_get(units, "after_expiry");
    i = v != NULL ? name_index(after_expiry_names, json_string_value(v)) : 0;
    if (i < 0) {
        jv_error(errors, "units.after_expiry", "must be \"new\" or \"keep\"");
        return 1;
    }
    c->after_expiry = (enum exp_after_expiry)i;
    return 0;
}

/* "fallback": what a new unit gets while the experiment has no conclusion
 * to serve (paused, stopped by hand early). Default: the control arm when
 * there is one, else nothing (409: the client shows its own default).
 * "control" needs a control arm. 0, or 1 with errors. */
static int parse_fallback(struct exp_config *c, json_t *v, json_t *errors)
{
    c->fallback = c->control_arm != NULL ? EXP_FALLBACK_CONTROL : EXP_FALLBACK_NONE;
    if (v == NULL || json_is_null(v))
        return 0;
    int i = name_index(fallback_names, json_string_value(v));
    if (i < 0) {
        jv_error(errors, "fallback", "must be \"none\", \"control\" or \"recommendation\"");
        return 1;
    }
    if (i == EXP_FALLBACK_CONTROL && c->control_arm == NULL) {
        jv_error(errors, "fallback", "\"control\" needs a control arm (constraints.control)");
        return 1;
    }
    c->fallback = (enum exp_fallback)i;
    return 0;
}

/* Build cfg->json: the configuration with every default made explicit. */
static int normalise(struct exp_config *c, json_t *stop_rule, const char *bound, double tau,
                     json_t *target, json_t *constraints)
{
    json_t *bandits = json_array();
    if (bandits == NULL)
        return -1;
    for (size_t b = 0; b < c->n_bandits; b++) {
        json_t *arms = json_array();
        for (size_t i = 0; i < c->n_arms[b]; i++)
            json_array_append_new(arms, json_string(c->arm_names[b][i]));
        json_array_append_new(bandits,
                              json_pack("{s:s,s:o}", "id", c->bandit_ids[b], "arms", arms));
    }
    const struct engine_config *e = &c->engine;
    double range = c->reward_max - c->reward_min;
    json_t *goal;
    if (e->goal == ENGINE_GOAL_CONTROL) /* an experiment of type top keeps its hash */
        goal = json_pack("{s:s,s:s,s:f,s:f}", "type", goal_type_name(e->goal), "control",
                         c->arm_names[0][e->control_arm[0]], "margin", e->margin * range, "delta",
                         e->delta);
    else
        goal = json_pack("{s:i,s:f,s:f}", "m", (json_int_t)e->m, "epsilon", e->epsilon * range,
                         "delta", e->delta);
    json_object_set_new(goal, "budget",
                        e->budget ? json_integer((json_int_t)e->budget) : json_null());
    /* only when calibrated: a design with the proven width keeps its hash */
    if (engine_calibrated(e))
        json_object_set_new(goal, "scale", json_real(e->scale));
    c->json = json_pack("{s:s,s:s,s:{s:s,s:O},s:o,s:{s:f,s:f},s:o,s:I,s:I,s:s}", "id", c->id,
                        "name", c->name, "policy", "name", c->policy->name, "params",
                        c->policy_params, "goal", goal, "reward", "min", c->reward_min, "max",
                        c->reward_max, "bandits", bandits, "assignment_ttl_s", (json_int_t)c->ttl_s,
                        "seed", (json_int_t)e->seed, "bound", bound);
    if (c->json == NULL)
        return -1;
    if (stop_rule != NULL)
        json_object_set(c->json, "stop_rule", stop_rule);
    if (!isnan(tau))
        json_object_set_new(c->json, "tau", json_real(tau));
    if (target != NULL)
        json_object_set(c->json, "target_arm", target);
    if (c->has_default_reward)
        json_object_set_new(c->json, "default_reward", json_real(c->default_reward));
    if (constraints != NULL)
        json_object_set(c->json, "constraints", constraints);
    json_object_set_new(c->json, "prior",
                        json_pack("{s:f,s:f}", "alpha", e->prior_alpha, "beta", e->prior_beta));
    json_object_set_new(c->json, "units",
                        json_pack("{s:s,s:s}", "after_stop", after_stop_names[c->after_stop],
                                  "after_expiry", after_expiry_names[c->after_expiry]));
    json_object_set_new(c->json, "fallback", json_string(fallback_names[c->fallback]));
    /* revision 1 has no member: the designs (and hashes) stored before it */
    if (e->glr_revision >= 2)
        json_object_set_new(c->json, "rule_revision", json_integer((json_int_t)e->glr_revision));
    return 0;
}

static int parse(json_t *body, const struct exp_limits *lim, struct exp_config *c, json_t *errors,
                 int stored);

/* goal.control (goal type control): an arm's name, found in every bandit at
 * the same place, or its index. It is the experiment's control arm, the one
 * constraints.control names too if given (they must agree). 0, 1 with
 * errors, −1 out of memory. */
static int parse_goal_control(struct exp_config *c, json_t *v, json_t *errors)
{
    int idx = -1;
    if (json_is_string(v)) {
        const char *name = json_string_value(v);
        for (size_t b = 0; b < c->n_bandits; b++) {
            int i = exp_cfg_arm(c, b, name);
            if (i < 0 || (b > 0 && i != idx)) {
                jv_error(errors, "goal.control",
                         i < 0 ? "no arm \"%s\" in bandit %s"
                               : "arm \"%s\" must be at the same place in every bandit (not in %s)",
                         name, c->bandit_ids[b]);
                return 1;
            }
            idx = i;
        }
    } else {
        idx = (int)json_integer_value(v); /* goal_parse checked a count */
        if (json_is_real(v))
            idx = (int)json_real_value(v);
        for (size_t b = 0; b < c->n_bandits; b++)
            if ((size_t)idx >= c->n_arms[b]) {
                jv_error(errors, "goal.control", "no arm %d in bandit %s", idx, c->bandit_ids[b]);
                return 1;
            }
    }
    if (c->control_arm != NULL) {
        for (size_t b = 0; b < c->n_bandits; b++)
            if (c->control_arm[b] != idx) {
                jv_error(errors, "goal.control", "must be the arm of constraints.control.arm");
                return 1;
            }
        return 0;
    }
    c->control_arm = calloc(c->n_bandits, sizeof *c->control_arm);
    if (c->control_arm == NULL)
        return -1;
    for (size_t b = 0; b < c->n_bandits; b++)
        c->control_arm[b] = idx;
    return 0;
}

int exp_config_parse(json_t *body, const struct exp_limits *lim, struct exp_config *c,
                     json_t *errors)
{
    return parse(body, lim, c, errors, 0);
}

int exp_config_load(json_t *body, const struct exp_limits *lim, struct exp_config *c,
                    json_t *errors)
{
    return parse(body, lim, c, errors, 1);
}

static int parse(json_t *body, const struct exp_limits *lim, struct exp_config *c, json_t *errors,
                 int stored)
{
    memset(c, 0, sizeof *c);
    int bad = 0, rc;
    if (!json_is_object(body)) {
        jv_error(errors, "", "the body must be a JSON object");
        return 1;
    }
    static const char *const keys[] = {"id",
                                       "name",
                                       "policy",
                                       "goal",
                                       "reward",
                                       "bandits",
                                       "arms",
                                       "assignment_ttl_s",
                                       "seed",
                                       "stop_rule",
                                       "bound",
                                       "tau",
                                       "target_arm",
                                       "default_reward",
                                       "constraints",
                                       "prior",
                                       "units",
                                       "fallback",
                                       "webhooks",
                                       "design",
                                       "rule_revision",
                                       NULL};
    if (jv_unknown_keys(body, keys, "", errors))
        bad = 1;

    json_t *v = json_object_get(body, "id");
    if (v != NULL) {
        const char *id = json_string_value(v);
        if (id == NULL || !exp_id_valid(id)) {
            jv_error(errors, "id", "must match [A-Za-z0-9_.-]{1,64}");
            bad = 1;
        } else {
            snprintf(c->id, sizeof c->id, "%s", id);
        }
    } else {
        random_id(c->id, 13);
    }
    v = json_object_get(body, "name");
    if (v != NULL && (!json_is_string(v) || json_string_length(v) > 256)) {
        jv_error(errors, "name", "must be a string of at most 256 bytes");
        bad = 1;
    }
    c->name = strdup(v != NULL && json_is_string(v) ? json_string_value(v) : c->id);
    if (c->name == NULL)
        return -1;

    /* reward range */
    c->reward_min = 0;
    c->reward_max = 1;
    json_t *reward = json_object_get(body, "reward");
    int reward_bad = 0;
    if (reward != NULL) {
        static const char *const rkeys[] = {"min", "max", NULL};
        int ok1 = 1, ok2 = 1;
        int unknown = jv_object(reward, rkeys, "reward", errors);
        if (unknown != 0)
            reward_bad = 1;
        if (unknown >= 0) {
            if ((v = json_object_get(reward, "min")) != NULL)
                c->reward_min = num(v, &ok1);
            if ((v = json_object_get(reward, "max")) != NULL)
                c->reward_max = num(v, &ok2);
            if (!ok1) {
                jv_error(errors, "reward.min", "must be a finite number");
                reward_bad = 1;
            }
            if (!ok2) {
                jv_error(errors, "reward.max", "must be a finite number");
                reward_bad = 1;
            }
            if (ok1 && ok2 && !goal_range_valid(c->reward_min, c->reward_max)) {
                jv_error(errors, "reward.max", GOAL_RANGE_RULE);
                reward_bad = 1;
            }
        }
    }
    bad |= reward_bad;
    /* ε is in reward units: it is checked against the range, unless the
     * range itself is wrong (reported above). */
    double range = reward_bad ? NAN : c->reward_max - c->reward_min;

    /* goal */
    struct engine_config *e = &c->engine;
    e->target_arm = -1;
    e->tau = NAN;
    struct goal g;
    goal_defaults(&g);
    json_t *goal = json_object_get(body, "goal");
    if (goal != NULL) {
        static const char *const gkeys[] = {"type",    "m",      "epsilon", "delta", "budget",
                                            "control", "margin", "scale",   NULL};
        int unknown = jv_object(goal, gkeys, "goal", errors);
        if (unknown != 0)
            bad = 1;
        if (unknown >= 0 && goal_parse(goal, range, "goal.", &g, errors) != 0)
            bad = 1;
    }
    e->m = g.m;
    e->delta = g.delta;
    e->budget = g.budget;
    e->goal = g.type;
    e->scale = g.scale;
    json_t *goal_control = g.control; /* resolved once the arms are parsed */
    if (!reward_bad) {
        e->epsilon = g.epsilon / range; /* the engine's [0, 1] units */
        e->margin = g.margin / range;
    }

    /* bandits */
    json_t *bandits = json_object_get(body, "bandits");
    json_t *arms = json_object_get(body, "arms");
    if (bandits != NULL && arms != NULL) {
        jv_error(errors, "arms", "give either \"arms\" or \"bandits\", not both");
        bad = 1;
    } else if (bandits != NULL) {
        if (!json_is_array(bandits)) {
            jv_error(errors, "bandits", "must be an array");
            bad = 1;
        } else if ((rc = parse_bandits(c, bandits, 0, errors, lim)) != 0) {
            if (rc < 0)
                return -1;
            bad = 1;
        }
    } else if (arms != NULL) {
        json_t *wrap = json_pack("[O]", arms);
        if (wrap == NULL)
            return -1;
        rc = parse_bandits(c, wrap, 1, errors, lim);
        json_decref(wrap);
        if (rc < 0)
            return -1;
        bad |= rc;
    } else {
        jv_error(errors, "bandits", "required (or \"arms\" for a single bandit)");
        bad = 1;
    }

    /* policy */
    if ((rc = parse_policy(c, json_object_get(body, "policy"), e->budget > 0,
                           e->goal == ENGINE_GOAL_CONTROL, errors)) != 0) {
        if (rc < 0)
            return -1;
        bad = 1;
    }

    /* TTL, seed */
    c->ttl_s = 86400;
    if ((v = json_object_get(body, "assignment_ttl_s")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > 10LL * 366 * 86400) {
            jv_error(errors, "assignment_ttl_s",
                     "must be an integer from 1 to 316224000 (10 years)");
            bad = 1;
        } else {
            c->ttl_s = json_integer_value(v);
        }
    }
    if ((v = json_object_get(body, "seed")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            jv_error(errors, "seed", "must be a non-negative integer");
            bad = 1;
        } else {
            e->seed = (uint64_t)json_integer_value(v);
        }
    } else {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = 12345;
        e->seed = r; /* stored with the configuration: replays are exact */
    }
    /* The proven GLR rule's revision, stored too: a replay after an upgrade
     * decides with the rule the experiment ran under. Stored without one:
     * created before the field, under revision 1 (the pair rule). */
    if ((v = json_object_get(body, "rule_revision")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > ENGINE_GLR_REVISION) {
            jv_error(errors, "rule_revision", "must be an integer from 1 to %d",
                     ENGINE_GLR_REVISION);
            bad = 1;
        } else {
            e->glr_revision = (unsigned)json_integer_value(v);
        }
    } else {
        e->glr_revision = stored ? 1 : ENGINE_GLR_REVISION;
    }

    /* stop rule, bound, tau */
    json_t *stop_rule = json_object_get(body, "stop_rule");
    e->stop_rule = ENGINE_RULE_DEFAULT;
    if (stop_rule != NULL) {
        const struct stop_rule_info *rule = stop_rule_find(json_string_value(stop_rule));
        if (rule == NULL) {
            char names[256];
            stop_rule_names(names, sizeof names);
            jv_error(errors, "stop_rule", "must be one of %s", names);
            bad = 1;
        } else {
            e->stop_rule = rule->rule;
        }
    }
    e->bound = STATS_BOUND_ANYTIME;
    if ((v = json_object_get(body, "bound")) != NULL &&
        stop_rule_bound_find(json_string_value(v), &e->bound) != 0) {
        jv_error(errors, "bound", "must be " STOP_RULE_BOUNDS);
        bad = 1;
    }
    double tau = NAN;
    if ((v = json_object_get(body, "tau")) != NULL && !json_is_null(v)) {
        int ok;
        tau = num(v, &ok);
        if (!ok || !goal_tau_valid(tau)) {
            jv_error(errors, "tau", GOAL_TAU_RULE);
            bad = 1;
            tau = NAN;
        }
    }
    e->tau = tau;

    /* default reward */
    if ((v = json_object_get(body, "default_reward")) != NULL && !json_is_null(v)) {
        int ok;
        c->default_reward = num(v, &ok);
        if (!ok || c->default_reward < c->reward_min || c->default_reward > c->reward_max) {
            jv_error(errors, "default_reward", "must be a finite number within the reward range");
            bad = 1;
        } else {
            c->has_default_reward = 1;
        }
    }
    /* Beta prior of every arm's posterior (ρ̄, gcp, gcp-targeted, thompson,
     * ttts). Bounded so that a typo (1e9) cannot drown every reward: with
     * α + β ≤ 2·10⁶ a posterior still moves after a few million pulls. */
    e->prior_alpha = 1;
    e->prior_beta = 1;
    json_t *prior = json_object_get(body, "prior");
    if (prior != NULL && !json_is_null(prior)) {
        static const char *const pkeys[] = {"alpha", "beta", NULL};
        int unknown = jv_object(prior, pkeys, "prior", errors);
        if (unknown != 0)
            bad = 1;
        if (unknown >= 0) {
            static const char *const pf[] = {"prior.alpha", "prior.beta"};
            double *dst[] = {&e->prior_alpha, &e->prior_beta};
            for (int i = 0; i < 2; i++) {
                if ((v = json_object_get(prior, pkeys[i])) == NULL)
                    continue;
                int ok;
                double x = num(v, &ok);
                if (!ok || !(x > 0 && x <= 1e6)) {
                    jv_error(errors, pf[i], "must be a number in (0, 1000000]");
                    bad = 1;
                } else {
                    *dst[i] = x;
                }
            }
        }
    }
    if ((rc = exp_webhooks_parse(c, json_object_get(body, "webhooks"), errors)) != 0) {
        if (rc < 0)
            return -1;
        bad = 1;
    }
    if (exp_design_parse(c, json_object_get(body, "design"), errors) != 0)
        bad = 1;
    if (bad)
        return 1;

    /* Fields that name arms need the bandits parsed. */
    json_t *target = json_object_get(body, "target_arm");
    if (target != NULL && !json_is_null(target)) {
        int idx = -1;
        if (json_is_string(target)) {
            idx = exp_cfg_arm(c, 0, json_string_value(target));
            for (size_t b = 1; b < c->n_bandits && idx >= 0; b++)
                if (exp_cfg_arm(c, b, json_string_value(target)) != idx)
                    idx = -2;
        } else if (json_is_integer(target) && json_integer_value(target) >= 0) {
            idx = (int)json_integer_value(target);
        }
        if (idx < 0) {
            jv_error(errors, "target_arm",
                     idx == -2 ? "must be at the same position in every bandit"
                               : "must name an arm (or give its index)");
            return 1;
        }
        /* A target only gcp-targeted reads: elsewhere it would be silently
         * ignored. Stored configurations from before this check keep it
         * (ignored, as then). */
        if (!(c->policy->flags & POLICY_F_NEEDS_TARGET) && !stored) {
            jv_error(errors, "target_arm", "policy %s does not use a target arm", c->policy->name);
            return 1;
        }
        e->target_arm = idx;
    } else {
        target = NULL;
    }

    json_t *constraints = json_object_get(body, "constraints");
    if (constraints != NULL && !json_is_null(constraints)) {
        static const char *const ckeys[] = {"burn_in", "min_prob", "control", NULL};
        if (jv_object(constraints, ckeys, "constraints", errors) != 0)
            return 1;
        int ok;
        if ((v = json_object_get(constraints, "burn_in")) != NULL &&
            exp_design_burn_in(e, v, errors) != 0)
            return 1;
        if ((v = json_object_get(constraints, "min_prob")) != NULL) {
            e->min_prob = num(v, &ok);
            if (!ok || e->min_prob < 0 || e->min_prob >= 1) {
                jv_error(errors, "constraints.min_prob", "must be a number in [0, 1)");
                return 1;
            }
        }
        json_t *ctl = json_object_get(constraints, "control");
        if (ctl != NULL && !json_is_null(ctl)) {
            static const char *const tkeys[] = {"arm", "share", NULL};
            if (jv_object(ctl, tkeys, "constraints.control", errors) != 0)
                return 1;
            const char *arm = json_string_value(json_object_get(ctl, "arm"));
            if (arm == NULL) {
                jv_error(errors, "constraints.control.arm", "must name an arm");
                return 1;
            }
            c->control_arm = calloc(c->n_bandits, sizeof *c->control_arm);
            if (c->control_arm == NULL)
                return -1;
            for (size_t b = 0; b < c->n_bandits; b++) {
                c->control_arm[b] = exp_cfg_arm(c, b, arm);
                if (c->control_arm[b] < 0) {
                    jv_error(errors, "constraints.control.arm", "no arm \"%s\" in bandit %s", arm,
                             c->bandit_ids[b]);
                    return 1;
                }
            }
            e->control_share = num(json_object_get(ctl, "share"), &ok);
            if (!ok || e->control_share <= 0 || e->control_share >= 1) {
                jv_error(errors, "constraints.control.share", "must be a number in (0, 1)");
                return 1;
            }
        }
    } else {
        constraints = NULL;
    }
    if (goal_control != NULL && (rc = parse_goal_control(c, goal_control, errors)) != 0)
        return rc;

    e->n_bandits = c->n_bandits;
    e->n_arms = c->n_arms;
    e->control_arm = c->control_arm;
    e->policy = c->policy;
    /* The engine's checks (policy flags against the goal and the arms),
     * then the policy's own against its parameters (e.g. ADAPT's cap needs
     * ε > 0), by building a throwaway engine. */
    struct policy_error perr;
    struct engine *probe = engine_create(e, &perr);
    if (probe == NULL && perr.code == POLICY_ERR_NOMEM)
        return -1; /* ours, not the body's */
    if (probe == NULL) {
        jv_error(errors, perr.field[0] != '\0' ? perr.field : "policy", "%s", perr.message);
        return 1;
    }
    engine_free(probe);
    if (parse_units(c, json_object_get(body, "units"), errors) != 0 ||
        parse_fallback(c, json_object_get(body, "fallback"), errors) != 0)
        return 1;
    if (normalise(c, stop_rule, stop_rule_bound_name(e->bound), tau, target, constraints) != 0 ||
        exp_webhooks_normalise(c) != 0 || exp_design_normalise(c) != 0)
        return -1;
    return 0;
}

int exp_id_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > EXP_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-'))
            return 0;
    }
    return 1;
}

int exp_cfg_bandit(const struct exp_config *cfg, const char *id)
{
    for (size_t b = 0; b < cfg->n_bandits; b++)
        if (cfg->bandit_ids[b] != NULL && strcmp(cfg->bandit_ids[b], id) == 0)
            return (int)b;
    return -1;
}

int exp_cfg_arm(const struct exp_config *cfg, size_t bandit, const char *name)
{
    for (size_t i = 0; i < cfg->n_arms[bandit]; i++)
        if (cfg->arm_names[bandit][i] != NULL && strcmp(cfg->arm_names[bandit][i], name) == 0)
            return (int)i;
    return -1;
}
