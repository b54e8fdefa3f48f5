/*
 * goal.c — what a valid goal is (goal.h).
 */
#include "policies/goal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonv.h"

const char *goal_type_name(enum engine_goal t)
{
    return t == ENGINE_GOAL_CONTROL ? "control" : "top";
}

void goal_defaults(struct goal *g)
{
    g->type = ENGINE_GOAL_TOP;
    g->margin = 0;
    g->control = NULL;
    g->scale = 1;
    g->m = 1;
    g->epsilon = 0;
    g->delta = 0.05;
    g->budget = 0;
}

/* Each member's rule, as the message that refuses it (NULL: valid). The
 * message is the same whether the value is out of range or of the wrong
 * JSON type, so each is written once. buf: room for a formatted one. */
static const char *m_error(int ok, uint64_t m, char *buf, size_t len)
{
    if (!ok || m < 1)
        return "must be an integer >= 1";
    if (m > GOAL_MAX_M) {
        snprintf(buf, len, "must be at most %d", GOAL_MAX_M);
        return buf;
    }
    return NULL;
}

/* ε and the margin Δ: reward units, in [0, range) (range NaN: unknown, ≥ 0). */
static const char *in_range_error(int ok, double x, double range, char *buf, size_t len)
{
    if (isnan(range)) {
        if (!ok || !(x >= 0))
            return "must be a finite number >= 0";
        return NULL;
    }
    if (!ok || !(x >= 0 && x < range)) {
        snprintf(buf, len, "must be in [0, reward range (%g))", range);
        return buf;
    }
    return NULL;
}

static const char *delta_error(int ok, double delta)
{
    return ok && delta > 0 && delta < 1 ? NULL : "must be in (0, 1)";
}

#define CONTROL_M "must be 1 with type \"control\" (each arm is compared with the control)"
#define CONTROL_EPSILON "must be 0 with type \"control\" (the margin is its slack)"

static const char *budget_error(int ok, uint64_t budget)
{
    return ok && budget >= 1 && budget <= GOAL_MAX_BUDGET
               ? NULL
               : "must be null or a positive integer (at most 2^53)";
}

int goal_check(const struct goal *g, double range, const char *prefix, struct policy_error *err)
{
    char buf[96];
    const char *member = NULL, *why = NULL;
    if ((why = m_error(1, g->m, buf, sizeof buf)) != NULL)
        member = "m";
    else if ((why = in_range_error(isfinite(g->epsilon), g->epsilon, range, buf, sizeof buf)) !=
             NULL)
        member = "epsilon";
    else if ((why = delta_error(isfinite(g->delta), g->delta)) != NULL)
        member = "delta";
    else if (g->budget > 0 && (why = budget_error(1, g->budget)) != NULL)
        member = "budget";
    /* Δ is a superiority margin: how much better than control an arm must
     * be proven to be. Below 0 it would be non-inferiority, which the rule
     * does not claim (docs/stop-rules.md, `control`). */
    if (member == NULL && g->type == ENGINE_GOAL_CONTROL) {
        if ((why = in_range_error(isfinite(g->margin), g->margin, range, buf, sizeof buf)) != NULL)
            member = "margin";
        else if (!goal_scale_valid(g->scale)) {
            member = "scale";
            why = GOAL_SCALE_RULE;
        } else if (g->m != 1)
            member = "m";
        else if (g->epsilon != 0)
            member = "epsilon";
        why = why != NULL ? why : g->m != 1 ? CONTROL_M : CONTROL_EPSILON;
    }
    if (member == NULL)
        return 0;
    char field[64];
    snprintf(field, sizeof field, "%s%s", prefix, member);
    policy_error_set(err, field, "%s", why);
    return -1;
}

int goal_check_arms(unsigned m, const size_t *n_arms, size_t n_bandits, const char *prefix,
                    struct policy_error *err)
{
    for (size_t b = 0; b < n_bandits; b++)
        if (m >= n_arms[b]) {
            char field[64];
            snprintf(field, sizeof field, "%sm", prefix);
            policy_error_set(err, field,
                             "must be less than the number of arms (%zu in bandits[%zu])",
                             n_arms[b], b);
            return -1;
        }
    return 0;
}

/* Append {"field": prefix + member, "message": why} to errors. */
static int refuse(json_t *errors, const char *prefix, const char *member, const char *why)
{
    char field[64];
    snprintf(field, sizeof field, "%s%s", prefix, member);
    jv_error(errors, field, "%s", why);
    return 1;
}

int goal_parse(json_t *obj, double range, const char *prefix, struct goal *g, json_t *errors)
{
    int bad = 0;
    char buf[96];
    const char *why;
    json_t *v;
    if ((v = json_object_get(obj, "type")) != NULL) {
        const char *t = json_string_value(v);
        if (t != NULL && strcmp(t, "top") == 0)
            g->type = ENGINE_GOAL_TOP;
        else if (t != NULL && strcmp(t, "control") == 0)
            g->type = ENGINE_GOAL_CONTROL;
        else
            bad += refuse(errors, prefix, "type", "must be " GOAL_TYPES);
    }
    if ((v = json_object_get(obj, "m")) != NULL) {
        uint64_t m = 0;
        int ok = jv_count(v, UINT64_MAX, &m);
        if ((why = m_error(ok, m, buf, sizeof buf)) != NULL)
            bad += refuse(errors, prefix, "m", why);
        else
            g->m = (unsigned)m;
    }
    if ((v = json_object_get(obj, "epsilon")) != NULL) {
        double eps = 0;
        int ok = jv_number(v, &eps);
        if ((why = in_range_error(ok, eps, range, buf, sizeof buf)) != NULL)
            bad += refuse(errors, prefix, "epsilon", why);
        else
            g->epsilon = eps;
    }
    if ((v = json_object_get(obj, "delta")) != NULL) {
        double delta = 0;
        int ok = jv_number(v, &delta);
        if ((why = delta_error(ok, delta)) != NULL)
            bad += refuse(errors, prefix, "delta", why);
        else
            g->delta = delta;
    }
    if ((v = json_object_get(obj, "budget")) != NULL && !json_is_null(v)) {
        uint64_t budget = 0;
        int ok = jv_count(v, UINT64_MAX, &budget);
        if ((why = budget_error(ok, budget)) != NULL)
            bad += refuse(errors, prefix, "budget", why);
        else
            g->budget = budget;
    }
    int control = g->type == ENGINE_GOAL_CONTROL;
    if ((v = json_object_get(obj, "margin")) != NULL) {
        double margin = 0;
        int ok = jv_number(v, &margin);
        if (!control)
            bad += refuse(errors, prefix, "margin", GOAL_CONTROL_ONLY);
        else if ((why = in_range_error(ok, margin, range, buf, sizeof buf)) != NULL)
            bad += refuse(errors, prefix, "margin", why);
        else
            g->margin = margin;
    }
    if ((v = json_object_get(obj, "control")) != NULL) {
        uint64_t idx;
        if (!control)
            bad += refuse(errors, prefix, "control", GOAL_CONTROL_ONLY);
        else if (!(json_is_string(v) && json_string_length(v) > 0) &&
                 !jv_count(v, GOAL_MAX_M, &idx))
            bad += refuse(errors, prefix, "control", "must name an arm (or give its index)");
        else
            g->control = v;
    } else if (control) {
        bad += refuse(errors, prefix, "control", "required with type \"control\": the control arm");
    }
    if ((v = json_object_get(obj, "scale")) != NULL && !json_is_null(v)) {
        double scale = 0;
        int ok = jv_number(v, &scale);
        if (!control)
            bad += refuse(errors, prefix, "scale", GOAL_CONTROL_ONLY);
        else if (!ok || !(scale > 0 && scale <= 1))
            bad += refuse(errors, prefix, "scale", GOAL_SCALE_RULE);
        else
            g->scale = scale;
    }
    if (control && g->m != 1)
        bad += refuse(errors, prefix, "m", CONTROL_M);
    if (control && g->epsilon != 0)
        bad += refuse(errors, prefix, "epsilon", CONTROL_EPSILON);
    return bad;
}
