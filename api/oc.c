/*
 * oc.c — POST /v1/experiments/{id}/oc: the operating characteristics of a
 * stored experiment's design (sim/oc.h) on the scenarios of the body,
 * answered at once and stored nowhere. The design is the one in force: the
 * configuration as created with the budget its amendments set, hashed as
 * status shows it (exp_design_hash).
 *
 * Scope read: the report is a function of the design (which a read key
 * sees) and of the scenarios the caller gives, never of the experiment's
 * data, so a blinded reader may have it. Its cost is bounded as POST
 * /v1/plan's is: one thread, at most OC_RUNS_MAX runs per scenario, a cap
 * on pulls per run, and no new batch of runs after OC_SECONDS; the report
 * says how many runs it holds. A `calibrate` target first calibrates δ (or
 * goal.scale, goal control) under every null, OC_CAL_ITERATIONS bisection
 * steps within OC_CAL_SECONDS (every step runs all the runs, for common
 * random numbers: a calibration the bound cuts is refused, not shortened),
 * and reports the design at the value found.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonv.h"
#include "sim/oc.h"

#define OC_RUNS_DEFAULT 200
#define OC_RUNS_MAX 1000
#define OC_MAX_PULLS_MAX 100000
#define OC_SECONDS 5.0
#define OC_CAL_ITERATIONS 8
#define OC_CAL_SECONDS 10.0

int api_oc_create(struct http_req *r)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 0, &body);
    if (x == NULL)
        return HTTP_DONE;
    /* exp_cfg(x) never changes while x is referenced: the scenarios are
     * parsed against it without the lock. */
    const struct exp_config *c = exp_cfg(x);
    struct sim_oc_design d = {
        .engine = &c->engine,
        .reward_min = c->reward_min,
        .reward_max = c->reward_max,
        .bandit_ids = (const char *const *)c->bandit_ids,
        .arms = (const char *const *const *)c->arm_names,
        .experiment = exp_id(x),
        .name = c->name,
    };
    struct sim_oc_options o = {
        .runs = OC_RUNS_DEFAULT, .seed = 1, .threads = 1, .seconds = OC_SECONDS};
    struct sim_oc_scenarios *sc = NULL;
    json_t *errors = json_array();
    int rc = errors == NULL ? -1 : 0, markdown;
    char err[320];
    static const char *const keys[] = {"scenarios", "runs", "seed",      "max_pulls",
                                       "markdown",  "svg",  "calibrate", NULL};
    if (rc == 0 && !json_is_object(body)) {
        jv_error(errors, "", "the body must be a JSON object");
        rc = 1;
    } else if (rc == 0 && jv_unknown_keys(body, keys, "", errors) > 0) {
        rc = 1;
    }
    if (rc == 0)
        rc = jv_int_member(body, "runs", NULL, 1, OC_RUNS_MAX, &o.runs, errors) |
             jv_int_member(body, "seed", NULL, 0, INT64_MAX, &o.seed, errors) |
             jv_int_member(body, "max_pulls", NULL, 1, OC_MAX_PULLS_MAX, &o.max_pulls, errors);
    int svg = 0;
    markdown = 0;
    if (rc == 0)
        rc = jv_bool_member(body, "markdown", NULL, &markdown, errors) |
             jv_bool_member(body, "svg", NULL, &svg, errors);
    json_t *cj = json_object_get(body, "calibrate");
    double target = cj != NULL ? json_number_value(cj) : 0;
    if (rc == 0 && cj != NULL && (!json_is_number(cj) || !(target > 0 && target < 1))) {
        jv_error(errors, "calibrate", "must be a type I error in (0, 1)");
        rc = 1;
    }
    size_t arms = 0;
    for (size_t b = 0; b < c->n_bandits; b++)
        arms += c->n_arms[b];
    if (rc == 0 && arms > 0 && (double)o.runs * (double)arms > (double)SIM_OC_MAX_CELLS) {
        jv_error(errors, "runs", "at most %llu runs for %zu arms (runs × arms ≤ %llu)",
                 (unsigned long long)(SIM_OC_MAX_CELLS / arms), arms,
                 (unsigned long long)SIM_OC_MAX_CELLS);
        rc = 1;
    }
    if (rc == 0 && json_object_get(body, "scenarios") == NULL) {
        jv_error(errors, "scenarios",
                 "required: the true mean (or distribution) of every arm, "
                 "per scenario");
        rc = 1;
    }
    if (rc == 0 &&
        sim_oc_scenarios_parse(json_object_get(body, "scenarios"), &d, &sc, err, sizeof err) != 0) {
        jv_error(errors, "scenarios", "%s", err);
        rc = 1;
    }
    if (rc == 0 && cj != NULL && sim_oc_scenarios_null(&d, sc) < 0) {
        jv_error(errors, "calibrate", "needs a null scenario among the scenarios");
        rc = 1;
    }
    if (rc != 0) {
        char detail[400];
        if (rc > 0)
            jv_first_error(errors, NULL, detail, sizeof detail);
        sim_oc_scenarios_free(sc); /* parsed when only calibrate was refused */
        exp_put(x);
        return api_reply_parse(r, rc, errors, detail);
    }
    json_decref(errors);

    /* The design in force: the budget and the hash amendments change. */
    if (api_exp_enter(r, x) != 0) {
        sim_oc_scenarios_free(sc);
        return HTTP_DONE;
    }
    struct engine_config ec = c->engine;
    ec.budget = engine_budget(exp_engine(x));
    char hash[80];
    snprintf(hash, sizeof hash, "%s", exp_design_hash(x));
    exp_unlock(x);
    d.engine = &ec;
    d.hash = hash;

    json_t *calib = NULL;
    if (cj != NULL) {
        /* The design with the value found, as bandit-sim oc --calibrate
         * reports it; its hash is not a stored experiment's, so the
         * report names the original one in calibration. */
        int by_scale = ec.goal == ENGINE_GOAL_CONTROL;
        struct sim_oc_options co = o;
        co.seconds = OC_CAL_SECONDS;
        double value;
        int crc =
            sim_oc_calibrate(&d, sc, -1, &co, target, by_scale ? SIM_OC_SCALE_LO : SIM_OC_DELTA_LO,
                             by_scale ? SIM_OC_SCALE_HI : SIM_OC_DELTA_HI, OC_CAL_ITERATIONS,
                             &value, &calib, err, sizeof err);
        if (crc != 0) {
            sim_oc_scenarios_free(sc);
            exp_put(x);
            /* A refusal is the caller's target; an engine failure is ours,
             * answered as the uncalibrated report's. */
            if (crc < 0)
                return http_reply_problem(r, 503, err, NULL);
            const char *why = strncmp(err, "calibrate: ", 11) == 0 ? err + 11 : err;
            return http_reply_invalid(r, "calibrate", why);
        }
        if (by_scale)
            ec.scale = value;
        else
            ec.delta = value;
        json_object_set_new(calib, "original_design_hash", json_string(hash));
        d.hash = NULL;
    }
    json_t *report = sim_oc_run(&d, sc, &o, err, sizeof err);
    if (report != NULL && calib != NULL)
        json_object_set_new(report, "calibration", calib);
    else
        json_decref(calib);
    sim_oc_scenarios_free(sc);
    if (report != NULL && markdown) {
        char *text = sim_oc_markdown(report);
        if (text == NULL || json_object_set_new(report, "markdown", json_string(text)) != 0) {
            json_decref(report);
            report = NULL;
            snprintf(err, sizeof err, "out of memory");
        }
        free(text);
    }
    if (report != NULL && svg) {
        char *text = sim_oc_svg(report);
        if (text == NULL || json_object_set_new(report, "svg", json_string(text)) != 0) {
            json_decref(report);
            report = NULL;
            snprintf(err, sizeof err, "out of memory");
        }
        free(text);
    }
    exp_put(x);
    if (report == NULL)
        return http_reply_problem(r, 503, err, NULL);
    return http_reply_json(r, 200, report);
}
