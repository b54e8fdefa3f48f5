/*
 * plan.c — POST /v1/plan: sample-size planning before an experiment is
 * created. The body is a create body (what POST /v1/experiments would take)
 * and a guess of the arms' means; the answer is the lower bound
 * T*(μ)·kl(δ, 1 − δ) and a quick simulation of the engine with a fixed seed
 * (sim.h, sim_plan_json). Nothing is stored.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonv.h"
#include "sim/sim.h"

#define PLAN_RUNS_DEFAULT 100
#define PLAN_RUNS_MAX 1000

/* The guess: [[...], ...] per bandit, or [...] for a single bandit. Fills
 * means[b] (pointers into vals). 0, or 1 after an error into errors. */
static int parse_means(json_t *v, const struct exp_config *c, double *vals, double **means,
                       json_t *errors)
{
    if (!json_is_array(v) || json_array_size(v) == 0) {
        jv_error(errors, "means", "required: the guessed mean of every arm, per bandit");
        return 1;
    }
    int flat = !json_is_array(json_array_get(v, 0));
    if (flat ? c->n_bandits != 1 : json_array_size(v) != c->n_bandits) {
        jv_error(errors, "means", "one list of means per bandit (%zu bandits)", c->n_bandits);
        return 1;
    }
    size_t off = 0;
    for (size_t b = 0; b < c->n_bandits; b++) {
        json_t *list = flat ? v : json_array_get(v, b);
        char field[48];
        snprintf(field, sizeof field, flat ? "means" : "means[%zu]", b);
        if (!json_is_array(list) || json_array_size(list) != c->n_arms[b]) {
            jv_error(errors, field, "one mean per arm (%zu arms)", c->n_arms[b]);
            return 1;
        }
        means[b] = vals + off;
        for (size_t i = 0; i < c->n_arms[b]; i++) {
            double x;
            if (!jv_number(json_array_get(list, i), &x) || x < c->reward_min || x > c->reward_max) {
                jv_error(errors, field, "means must be numbers within the reward range [%g, %g]",
                         c->reward_min, c->reward_max);
                return 1;
            }
            vals[off++] = x;
        }
    }
    return 0;
}

int api_plan_create(struct http_req *r)
{
    json_t *errors = NULL;
    int done;
    json_t *body = api_body_with_errors(r, &errors, &done);
    if (body == NULL)
        return done;
    static const char *const keys[] = {"experiment", "means", "runs", NULL};
    struct exp_config cfg;
    memset(&cfg, 0, sizeof cfg);
    double *vals = NULL, **means = NULL;
    json_t *exp = json_object_get(body, "experiment");
    json_t *sub = json_array();
    int rc = 0;
    if (!json_is_object(body)) {
        jv_error(errors, "", "the body must be a JSON object");
        rc = 1;
    } else if (jv_unknown_keys(body, keys, "", errors) > 0) {
        rc = 1;
    } else if (!json_is_object(exp)) {
        jv_error(errors, "experiment", "required: the experiment as it would be created");
        rc = 1;
    } else if (sub == NULL) {
        rc = -1;
    } else if ((rc = exp_config_parse(exp, exp_limits(), &cfg, sub)) > 0) {
        /* The create body's fields, named under "experiment". */
        size_t i;
        json_t *e;
        json_array_foreach(sub, i, e)
        {
            const char *f = json_string_value(json_object_get(e, "field"));
            const char *m = json_string_value(json_object_get(e, "message"));
            char field[96];
            snprintf(field, sizeof field, "experiment%s%s", f != NULL && f[0] ? "." : "",
                     f != NULL ? f : "");
            jv_error(errors, field, "%s", m != NULL ? m : "invalid");
        }
    }
    uint64_t runs = PLAN_RUNS_DEFAULT;
    if (rc == 0)
        rc = jv_int_member(body, "runs", NULL, 1, PLAN_RUNS_MAX, &runs, errors);
    if (rc == 0) {
        size_t total = 0;
        for (size_t b = 0; b < cfg.n_bandits; b++)
            total += cfg.n_arms[b];
        vals = calloc(total, sizeof *vals);
        means = calloc(cfg.n_bandits, sizeof *means);
        if (vals == NULL || means == NULL)
            rc = -1;
        else
            rc = parse_means(json_object_get(body, "means"), &cfg, vals, means, errors);
    }
    json_decref(sub);
    if (rc != 0) {
        char detail[320];
        if (rc > 0)
            jv_first_error(errors, NULL, detail, sizeof detail);
        free(vals);
        free(means);
        exp_config_free(&cfg);
        return api_reply_parse(r, rc, errors, detail);
    }
    json_decref(errors);
    /* A fixed seed: the experiment's when it names one, else 1. */
    json_t *sj = json_object_get(exp, "seed");
    uint64_t seed = json_is_integer(sj) ? (uint64_t)json_integer_value(sj) : 1;
    char err[256];
    json_t *plan = sim_plan_json(&cfg.engine, cfg.reward_min, cfg.reward_max,
                                 (const double *const *)means, runs, seed, err, sizeof err);
    if (plan != NULL) {
        json_object_set_new(plan, "policy", json_string(cfg.policy->name));
        json_object_set_new(plan, "delta", json_real(cfg.engine.delta));
        json_object_set_new(plan, "m", json_integer((json_int_t)cfg.engine.m));
        json_object_set_new(plan, "budget",
                            cfg.engine.budget ? json_integer((json_int_t)cfg.engine.budget)
                                              : json_null());
        json_object_set(plan, "means", json_object_get(body, "means"));
    }
    free(vals);
    free(means);
    exp_config_free(&cfg);
    if (plan == NULL)
        return http_reply_problem(r, 503, err, NULL);
    return http_reply_json(r, 200, plan);
}
