/*
 * problem.c — problem files (sim.h, "Problem files"): a JSON document of bandits,
 * arms with their reward distributions and the goal, parsed and checked.
 */
#include "sim/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonv.h"
#include "policies/goal.h"

/* jsonv.h's unknown-key rule with this file's one-error convention: the
 * first key of obj outside allowed as "where.key: unknown field" in err and
 * −1, or 0. */
static int check_keys(json_t *obj, const char *const *allowed, const char *where, char *err,
                      size_t errlen)
{
    json_t *errors = json_array();
    int unknown = jv_unknown_keys(obj, allowed, where, errors);
    if (unknown > 0)
        jv_first_error(errors, NULL, err, errlen);
    json_decref(errors);
    return unknown > 0 ? -1 : 0;
}

struct dist_spec {
    const char *name;
    enum sim_dist dist;
    const char *k1, *k2; /* parameter names (k2 NULL: one parameter) */
};

static const struct dist_spec dists[] = {
    {"bernoulli", SIM_BERNOULLI, "p", NULL},
    {"rademacher", SIM_RADEMACHER, "x", "y"},
    {"uniform", SIM_UNIFORM, "low", "high"},
    {"gaussian", SIM_GAUSSIAN, "mean", "sd"},
    {"beta", SIM_BETA, "a", "b"},
};

#define N_DISTS (sizeof dists / sizeof dists[0])

static int parse_arm(json_t *j, const char *where, struct sim_arm *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (json_is_number(j)) { /* shorthand: Bernoulli(p) */
        if (!jv_number(j, &a->p1) || a->p1 < 0.0 || a->p1 > 1.0) {
            snprintf(err, errlen, "%s: a bare number is a Bernoulli p and must be in [0, 1]",
                     where);
            return -1;
        }
        a->dist = SIM_BERNOULLI;
        return 0;
    }
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: must be an object {\"dist\": ...} or a Bernoulli p", where);
        return -1;
    }
    const char *name = json_string_value(json_object_get(j, "dist"));
    if (name == NULL) {
        snprintf(err, errlen,
                 "%s.dist: required, one of bernoulli, rademacher, uniform, gaussian, beta", where);
        return -1;
    }
    const struct dist_spec *d = NULL;
    for (size_t i = 0; i < N_DISTS; i++)
        if (strcmp(dists[i].name, name) == 0)
            d = &dists[i];
    if (d == NULL) {
        snprintf(err, errlen,
                 "%s.dist: unknown distribution \"%s\" (bernoulli, rademacher, uniform, gaussian, "
                 "beta)",
                 where, name);
        return -1;
    }
    const char *allowed[] = {"dist", "id", d->k1, d->k2, NULL};
    if (check_keys(j, allowed, where, err, errlen) != 0)
        return -1;
    json_t *id = json_object_get(j, "id");
    if (id != NULL && !json_is_string(id)) {
        snprintf(err, errlen, "%s.id: must be a string", where);
        return -1;
    }
    a->dist = d->dist;
    const char *keys[2] = {d->k1, d->k2};
    double *vals[2] = {&a->p1, &a->p2};
    for (int k = 0; k < 2 && keys[k] != NULL; k++) {
        json_t *v = json_object_get(j, keys[k]);
        if (v == NULL || !jv_number(v, vals[k])) {
            snprintf(err, errlen, "%s.%s: required, a finite number", where, keys[k]);
            return -1;
        }
    }
    switch (a->dist) {
    case SIM_BERNOULLI:
        if (a->p1 < 0.0 || a->p1 > 1.0) {
            snprintf(err, errlen, "%s.p: must be in [0, 1]", where);
            return -1;
        }
        break;
    case SIM_RADEMACHER:
        break;
    case SIM_UNIFORM:
        if (!(a->p2 > a->p1)) {
            snprintf(err, errlen, "%s.high: must be greater than low", where);
            return -1;
        }
        break;
    case SIM_GAUSSIAN:
        if (!(a->p2 > 0.0)) {
            snprintf(err, errlen, "%s.sd: must be positive", where);
            return -1;
        }
        break;
    case SIM_BETA:
        if (!(a->p1 > 0.0)) {
            snprintf(err, errlen, "%s.a: must be positive", where);
            return -1;
        }
        if (!(a->p2 > 0.0)) {
            snprintf(err, errlen, "%s.b: must be positive", where);
            return -1;
        }
        break;
    }
    return 0;
}

/* One bandit: an object {"arms": [...], "id": ...} or, for the top-level
 * shorthand, the arms array itself. */
static int parse_arms(json_t *arms, const char *where, struct sim_problem *p, size_t b, char *err,
                      size_t errlen)
{
    if (!json_is_array(arms)) {
        snprintf(err, errlen, "%s: must be an array of arms", where);
        return -1;
    }
    size_t k = json_array_size(arms);
    if (k < 2 || k > ENGINE_MAX_ARMS) {
        snprintf(err, errlen, "%s: need 2 to %d arms (got %zu)", where, ENGINE_MAX_ARMS, k);
        return -1;
    }
    p->arms[b] = calloc(k, sizeof *p->arms[b]);
    if (p->arms[b] == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->n_arms[b] = k;
    for (size_t i = 0; i < k; i++) {
        char w[96];
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        if (parse_arm(json_array_get(arms, i), w, &p->arms[b][i], err, errlen) != 0)
            return -1;
    }
    return 0;
}

static const char *const problem_keys[] = {"type",    "m",          "epsilon", "delta",   "budget",
                                           "control", "margin",     "scale",   "bandits", "arms",
                                           "reward",  "target_arm", "tau",     "bound",   NULL};

/* The arms list of bandit b as given (top-level "arms" or bandits[b].arms). */
static json_t *arms_json(json_t *j, size_t b)
{
    json_t *bandits = json_object_get(j, "bandits");
    return bandits != NULL ? json_object_get(json_array_get(bandits, b), "arms")
                           : json_object_get(j, "arms");
}

/* goal.control: an index, or the "id" of an arm object, at the same place in
 * every bandit. 0, or −1 with err. */
static int resolve_control(json_t *j, const json_t *v, struct sim_problem *p, char *err,
                           size_t errlen)
{
    int idx = -1;
    for (size_t b = 0; b < p->n_bandits; b++) {
        int here = -1;
        if (json_is_string(v)) {
            json_t *arms = arms_json(j, b);
            for (size_t i = 0; i < json_array_size(arms) && here < 0; i++) {
                const char *id = json_string_value(json_object_get(json_array_get(arms, i), "id"));
                if (id != NULL && strcmp(id, json_string_value(v)) == 0)
                    here = (int)i;
            }
        } else {
            uint64_t x = 0;
            jv_count(v, ENGINE_MAX_ARMS, &x); /* goal_parse checked it */
            here = x < p->n_arms[b] ? (int)x : -1;
        }
        if (here < 0 || (b > 0 && here != idx)) {
            snprintf(err, errlen, "control: %s in bandits[%zu]",
                     here < 0 ? "no such arm" : "not at the same place as", b);
            return -1;
        }
        idx = here;
    }
    p->control = idx;
    return 0;
}
static const char *const reward_keys[] = {"min", "max", NULL};
static const char *const bandit_keys[] = {"arms", "id", NULL};

int sim_problem_parse(json_t *j, struct sim_problem *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->reward_min = 0.0;
    p->reward_max = 1.0;
    p->target_arm = -1;
    p->control = -1;
    p->tau = NAN;
    p->bound = STATS_BOUND_ANYTIME;
    json_t *v;

    if (!json_is_object(j)) {
        snprintf(err, errlen, "problem: must be a JSON object");
        return -1;
    }
    if (check_keys(j, problem_keys, "", err, errlen) != 0)
        goto fail;

    if ((v = json_object_get(j, "reward")) != NULL) {
        if (!json_is_object(v)) {
            snprintf(err, errlen, "reward: must be an object {\"min\": ..., \"max\": ...}");
            goto fail;
        }
        if (check_keys(v, reward_keys, "reward", err, errlen) != 0)
            goto fail;
        json_t *mn = json_object_get(v, "min"), *mx = json_object_get(v, "max");
        if (mn == NULL || !jv_number(mn, &p->reward_min)) {
            snprintf(err, errlen, "reward.min: required, a finite number");
            goto fail;
        }
        if (mx == NULL || !jv_number(mx, &p->reward_max)) {
            snprintf(err, errlen, "reward.max: required, a finite number");
            goto fail;
        }
        if (!goal_range_valid(p->reward_min, p->reward_max)) {
            snprintf(err, errlen, "reward.max: " GOAL_RANGE_RULE);
            goto fail;
        }
    }
    double range = p->reward_max - p->reward_min;

    struct goal g;
    goal_defaults(&g);
    json_t *errors = json_array();
    if (errors == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (goal_parse(j, range, "", &g, errors) != 0) {
        jv_first_error(errors, NULL, err, errlen);
        json_decref(errors);
        goto fail;
    }
    json_t *control = g.control; /* borrowed from j; resolved with the arms */
    json_decref(errors);
    p->goal = g.type;
    p->margin = g.margin;
    p->scale = g.scale;
    p->m = g.m;
    p->epsilon = g.epsilon;
    p->delta = g.delta;
    p->budget = g.budget;
    if ((v = json_object_get(j, "tau")) != NULL && !json_is_null(v)) {
        if (!jv_number(v, &p->tau) || !goal_tau_valid(p->tau)) {
            snprintf(err, errlen, "tau: " GOAL_TAU_RULE);
            goto fail;
        }
    }
    if ((v = json_object_get(j, "bound")) != NULL &&
        stop_rule_bound_find(json_string_value(v), &p->bound) != 0) {
        snprintf(err, errlen, "bound: must be " STOP_RULE_BOUNDS);
        goto fail;
    }
    if ((v = json_object_get(j, "target_arm")) != NULL && !json_is_null(v)) {
        uint64_t t;
        if (!jv_count(v, ENGINE_MAX_ARMS, &t)) {
            snprintf(err, errlen, "target_arm: must be null or an arm index >= 0");
            goto fail;
        }
        p->target_arm = (int)t;
    }

    /* Bandits: "bandits": [{"arms": [...]}, ...] or top-level "arms". */
    json_t *bandits = json_object_get(j, "bandits");
    json_t *arms = json_object_get(j, "arms");
    if (bandits != NULL && arms != NULL) {
        snprintf(err, errlen, "arms: give either bandits or arms, not both");
        goto fail;
    }
    if (bandits == NULL && arms == NULL) {
        snprintf(err, errlen, "bandits: required (an array of {\"arms\": [...]})");
        goto fail;
    }
    size_t nb = 1;
    if (bandits != NULL) {
        if (!json_is_array(bandits) || json_array_size(bandits) < 1 ||
            json_array_size(bandits) > ENGINE_MAX_BANDITS) {
            snprintf(err, errlen, "bandits: must be an array of 1 to %d bandits",
                     ENGINE_MAX_BANDITS);
            goto fail;
        }
        nb = json_array_size(bandits);
    }
    p->n_arms = calloc(nb, sizeof *p->n_arms);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    p->arms = calloc(nb, sizeof *p->arms);
    if (p->n_arms == NULL || p->arms == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    p->n_bandits = nb;
    if (bandits == NULL) {
        if (parse_arms(arms, "arms", p, 0, err, errlen) != 0)
            goto fail;
    } else {
        for (size_t b = 0; b < nb; b++) {
            json_t *bj = json_array_get(bandits, b);
            char w[64];
            snprintf(w, sizeof w, "bandits[%zu]", b);
            if (!json_is_object(bj)) {
                snprintf(err, errlen, "%s: must be an object {\"arms\": [...]}", w);
                goto fail;
            }
            if (check_keys(bj, bandit_keys, w, err, errlen) != 0)
                goto fail;
            json_t *id = json_object_get(bj, "id");
            if (id != NULL && !json_is_string(id)) {
                snprintf(err, errlen, "%s.id: must be a string", w);
                goto fail;
            }
            char wa[80];
            snprintf(wa, sizeof wa, "%s.arms", w);
            json_t *aj = json_object_get(bj, "arms");
            if (aj == NULL) {
                snprintf(err, errlen, "%s: required", wa);
                goto fail;
            }
            if (parse_arms(aj, wa, p, b, err, errlen) != 0)
                goto fail;
        }
    }

    if (control != NULL && resolve_control(j, control, p, err, errlen) != 0)
        goto fail;
    /* Cross-field checks, with the problem file's field names. */
    struct policy_error gerr;
    if (goal_check_arms(p->m, p->n_arms, p->n_bandits, "", &gerr) != 0) {
        policy_error_text(&gerr, err, errlen);
        goto fail;
    }
    for (size_t b = 0; b < p->n_bandits; b++) {
        if (p->target_arm >= 0 && (size_t)p->target_arm >= p->n_arms[b]) {
            snprintf(err, errlen, "target_arm: no arm %d in bandits[%zu] (%zu arms)", p->target_arm,
                     b, p->n_arms[b]);
            goto fail;
        }
        for (size_t i = 0; i < p->n_arms[b]; i++) {
            struct sim_arm *a = &p->arms[b][i];
            a->mean = sim_arm_clipped_mean(a, p->reward_min, p->reward_max);
            if (sim_arm_can_clip(a, p->reward_min, p->reward_max))
                p->clipped = 1;
        }
    }
    return 0;
fail:
    sim_problem_free(p);
    return -1;
}

int sim_problem_load(const char *path, struct sim_problem *p, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &je)
                                       : json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        memset(p, 0, sizeof *p);
        if (je.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        else
            snprintf(err, errlen, "%s: %s", path, je.text);
        return -1;
    }
    int rc = sim_problem_parse(j, p, err, errlen);
    json_decref(j);
    return rc;
}

void sim_problem_free(struct sim_problem *p)
{
    if (p->arms != NULL)
        for (size_t b = 0; b < p->n_bandits; b++)
            free(p->arms[b]);
    free(p->arms);
    free(p->n_arms);
    p->arms = NULL;
    p->n_arms = NULL;
    p->n_bandits = 0;
}
