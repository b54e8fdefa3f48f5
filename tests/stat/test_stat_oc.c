/*
 * test_stat_oc.c — operating characteristics (sim/oc.h) against answers
 * known without simulation, and the calibration of δ.
 *
 * - A fixed-budget uniform design on two Bernoulli arms (20 pulls each):
 *   its power is P(S_b > S_a) + P(S_b = S_a)/2, S ~ Binomial(20, p), a tie
 *   broken by a fair random rank; the estimate must lie within 4 of its
 *   standard errors. Under the null it always claims (type I error 1: a
 *   fixed-budget design names a winner whatever the data), each arm half
 *   the time. The report's fields and its MC SE formulas are checked on
 *   the same report, and its independence from the thread count.
 * - Calibration: δ found for a type I error of 0.1 under a null (runs
 *   200, seed 11); the design at that δ, run again on fresh seeds (400
 *   runs, seed 12), shows a type I error within 3 combined MC SEs (plus the
 *   calibration's step, 2/200) of the target.
 * - Goal control (vs-control, Δ = 0.1, δ = 0.2, 400 runs): under the
 *   global null the type I error (some arm declared superior) is at most
 *   δ, and is the rate at which some arm is declared superior; with one arm
 *   0.4 above the control, power is exactly that arm's rate of superiority
 *   and the other arm is never declared superior; every difference
 *   interval misses its true difference in at most δ of the runs (the
 *   anytime guarantee); the stop reasons are the goal's. One-sided exact
 *   binomial tests at level 0.01.
 * - Goal control calibrated (two arms, x at the margin, budget 600):
 *   --calibrate sets goal.scale for a type I error of 0.1 (200 runs, seed
 *   22); on fresh seeds (400 runs, seed 23) the design at that scale is
 *   within 3 combined MC SEs (plus 2/200) of the target, and says it is
 *   unproven.
 * - Scenario files: every error names its field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "base/version.h"
#include "exp/exp.h"
#include "sim/oc.h"
#include "tests/support/stattest.h"

struct design {
    struct exp_config cfg;
    char hash[65];
    struct sim_oc_design d;
};

static void design_load(const char *text, struct design *out)
{
    static const struct exp_limits lim = {.max_bandits = 16, .max_arms = 64};
    json_t *body = json_loads(text, 0, NULL), *errors = json_array();
    assert_non_null(body);
    int rc = exp_config_parse(body, &lim, &out->cfg, errors);
    if (rc != 0)
        fail_msg("design does not parse: %s", json_dumps(errors, 0));
    assert_int_equal(exp_design_hash_of(&out->cfg, out->hash), 0);
    json_decref(body);
    json_decref(errors);
    memset(&out->d, 0, sizeof out->d);
    out->d.engine = &out->cfg.engine;
    out->d.reward_min = out->cfg.reward_min;
    out->d.reward_max = out->cfg.reward_max;
    out->d.bandit_ids = (const char *const *)out->cfg.bandit_ids;
    out->d.arms = (const char *const *const *)out->cfg.arm_names;
    out->d.hash = out->hash;
}

static struct sim_oc_scenarios *scenarios(const struct design *d, const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    struct sim_oc_scenarios *s = NULL;
    char err[256];
    if (sim_oc_scenarios_parse(j, &d->d, &s, err, sizeof err) != 0)
        fail_msg("scenarios: %s", err);
    json_decref(j);
    return s;
}

static json_t *scenario(json_t *report, size_t i)
{
    return json_array_get(json_object_get(report, "scenarios"), i);
}

static double field(json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = o;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k != NULL;
         k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    if (!json_is_number(v))
        fail_msg("%s: not a number", path);
    return json_number_value(v);
}

/* The MC SE of a proportion object is √(p(1 − p)/n), its estimate k/n. */
static void check_prop(json_t *o)
{
    double k = field(o, "count"), n = field(o, "runs"), p = field(o, "estimate");
    assert_true(fabs(p - k / n) < 1e-12);
    assert_true(fabs(field(o, "mc_se") - sqrt(p * (1 - p) / n)) < 1e-12);
}

static const char fixed_budget[] = "{\"id\": \"known\", \"seed\": 3, \"policy\": {\"name\": "
                                   "\"uniform\"}, \"goal\": {\"budget\": 40}, \"arms\": [\"a\", "
                                   "\"b\"]}";
static const char fixed_scen[] = "{\"scenarios\": [{\"name\": \"alt\", \"arms\": [0.4, 0.6]},"
                                 " {\"name\": \"null\", \"arms\": [0.5, 0.5]}]}";

static void test_known_power(void **state)
{
    (void)state;
    struct design d;
    design_load(fixed_budget, &d);
    struct sim_oc_scenarios *s = scenarios(&d, fixed_scen);
    const uint64_t runs = 2000;
    struct sim_oc_options o = {.runs = runs, .seed = 5, .threads = 2};
    char err[256];
    json_t *r = sim_oc_run(&d.d, s, &o, err, sizeof err);
    if (r == NULL)
        fail_msg("%s", err);

    double exact = 0;
    for (unsigned i = 0; i <= 20; i++)
        for (unsigned j = 0; j <= 20; j++) {
            double pij = gsl_ran_binomial_pdf(i, 0.4, 20) * gsl_ran_binomial_pdf(j, 0.6, 20);
            exact += j > i ? pij : j == i ? pij / 2 : 0;
        }
    json_t *alt = scenario(r, 0), *null = scenario(r, 1);
    double power = field(alt, "power.estimate"), se = sqrt(exact * (1 - exact) / (double)runs);
    print_message("# power %.4f ± %.4f, exact %.4f\n", power, field(alt, "power.mc_se"), exact);
    assert_true(fabs(power - exact) <= 4 * se);
    assert_true(json_is_null(json_object_get(alt, "type_i_error")));
    assert_true(json_is_false(json_object_get(alt, "null")));
    check_prop(json_object_get(alt, "power"));
    check_prop(json_object_get(alt, "claim"));

    /* Under the null a fixed-budget design always names a winner. */
    assert_true(json_is_true(json_object_get(null, "null")));
    assert_true(field(null, "type_i_error.estimate") == 1.0);
    /* At 1 the SE is 0: the exact one-sided 95% bound says how close to 1
     * (0.05^(1/n)); a rate inside (0, 1) has no such bound. */
    assert_true(fabs(field(null, "type_i_error.lower95") - pow(0.05, 1.0 / (double)runs)) < 1e-12);
    assert_null(json_object_get(json_object_get(null, "type_i_error"), "upper95"));
    assert_null(json_object_get(json_object_get(alt, "power"), "lower95"));
    assert_null(json_object_get(json_object_get(alt, "power"), "upper95"));
    assert_true(json_is_null(json_object_get(null, "power")));
    json_t *reasons = json_object_get(null, "stop_reasons");
    assert_int_equal(json_array_size(reasons), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(reasons, 0), "reason")),
                        "budget");
    json_t *arm = json_array_get(json_object_get(null, "arms"), 0);
    double rec = field(arm, "recommended.estimate");
    assert_true(fabs(rec - 0.5) <= 4 * sqrt(0.25 / (double)runs));
    check_prop(json_object_get(arm, "recommended"));
    check_prop(json_object_get(arm, "coverage"));
    /* Every run takes the budget: quantiles 40, no spread. */
    json_t *q;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(null, "sample_size"), "quantiles"), i, q)
    {
        assert_true(field(q, "value") == 40.0);
        assert_true(field(q, "mc_se") == 0.0);
    }
    assert_true(field(null, "sample_size.mean_mc_se") == 0.0);
    /* The bias of an arm's mean after 20 Bernoulli draws is 0: within 4 SE. */
    assert_true(fabs(field(arm, "bias")) <= 4 * field(arm, "bias_mc_se"));
    assert_true(field(arm, "bias_mc_se") > 0);

    /* Provenance. */
    assert_string_equal(json_string_value(json_object_get(r, "design_hash")), d.hash);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r, "software"), "version")),
        BANDITD_VERSION);
    assert_true(field(r, "seed") == 5 && field(r, "runs") == (double)runs);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "goal"), "name")),
                        "best-arm");

    /* The same figures on one thread. */
    o.threads = 1;
    json_t *r1 = sim_oc_run(&d.d, s, &o, err, sizeof err);
    assert_non_null(r1);
    assert_true(json_equal(r, r1));

    char *md = sim_oc_markdown(r);
    assert_non_null(md);
    assert_non_null(strstr(md, d.hash));
    assert_non_null(strstr(md, "| alt | 0.4, 0.6 | power = "));
    assert_non_null(strstr(md, "each side at δ/(2K)"));
    assert_null(strstr(md, "no coverage guarantee"));
    assert_non_null(strstr(md, "| null (null) | 0.5, 0.5 | α = 1.0000 (≥ 0.9985)"));
    free(md);
    json_decref(r1);
    json_decref(r);
    sim_oc_scenarios_free(s);
    exp_config_free(&d.cfg);
}

static void test_calibration(void **state)
{
    (void)state;
    struct design d;
    design_load("{\"id\": \"cal\", \"seed\": 1, \"policy\": {\"name\": \"uniform\"}, "
                "\"stop_rule\": \"glr-heuristic\", \"arms\": [\"c\", \"x\", \"y\"]}",
                &d);
    struct sim_oc_scenarios *s = scenarios(&d, "[{\"name\": \"null\", \"arms\": [0.3, 0.3, 0.3]}]");
    assert_int_equal(sim_oc_scenarios_null(&d.d, s), 0);
    const double target = 0.1;
    struct sim_oc_options o = {.runs = 200, .seed = 11, .max_pulls = 300};
    double delta;
    json_t *cal;
    char err[256];
    if (sim_oc_calibrate(&d.d, s, 0, &o, target, 1e-4, 0.9, 12, &delta, &cal, err, sizeof err) != 0)
        fail_msg("%s", err);
    double achieved = field(cal, "type_i_error");
    assert_true(json_is_true(json_object_get(cal, "bracketed")));
    assert_true(achieved <= target);
    assert_true(fabs(field(cal, "delta") - delta) < 1e-15);

    struct engine_config at = d.cfg.engine;
    at.delta = delta;
    struct sim_oc_design dd = d.d;
    dd.engine = &at;
    struct sim_oc_options fresh = {.runs = 400, .seed = 12, .max_pulls = 300};
    json_t *r = sim_oc_run(&dd, s, &fresh, err, sizeof err);
    assert_non_null(r);
    double t1 = field(scenario(r, 0), "type_i_error.estimate");
    double tol = 3 * sqrt(target * (1 - target) * (1.0 / 200 + 1.0 / 400)) + 2.0 / 200;
    print_message("# calibrated delta %.5g: type I %.4f (calibration runs), %.4f ± %.4f (fresh "
                  "runs), target %.2f, tolerance %.4f\n",
                  delta, achieved, t1, field(scenario(r, 0), "type_i_error.mc_se"), target, tol);
    assert_true(fabs(t1 - target) <= tol);
    assert_true(fabs(field(r, "design.delta") - delta) < 1e-12);

    /* A fixed-budget design's type I error does not move with δ. */
    struct design fb;
    design_load(fixed_budget, &fb);
    struct sim_oc_scenarios *fs = scenarios(&fb, fixed_scen);
    json_t *none = NULL;
    o.runs = 20;
    assert_int_equal(
        sim_oc_calibrate(&fb.d, fs, 1, &o, 0.05, 1e-3, 0.5, 4, &delta, &none, err, sizeof err), 1);
    assert_non_null(strstr(err, "does not depend on delta"));
    /* Calibration needs a null. */
    assert_int_equal(
        sim_oc_calibrate(&fb.d, fs, 0, &o, 0.05, 1e-3, 0.5, 4, &delta, &none, err, sizeof err), 1);
    assert_non_null(strstr(err, "null"));
    assert_null(none);
    sim_oc_scenarios_free(fs);
    exp_config_free(&fb.cfg);
    json_decref(r);
    json_decref(cal);
    sim_oc_scenarios_free(s);
    exp_config_free(&d.cfg);
}

static double prob(json_t *o, const char *path)
{
    char full[160];
    snprintf(full, sizeof full, "%s.count", path);
    return field(o, full);
}

static void test_control(void **state)
{
    (void)state;
    struct design d;
    design_load("{\"id\": \"ctl\", \"seed\": 1, \"policy\": {\"name\": \"vs-control\"}, "
                "\"arms\": [\"c\", \"x\", \"y\"], \"goal\": {\"type\": \"control\", "
                "\"control\": \"c\", \"margin\": 0.1, \"delta\": 0.2, \"budget\": 3000}}",
                &d);
    struct sim_oc_scenarios *s =
        scenarios(&d, "[{\"name\": \"null\", \"arms\": [0.3, 0.3, 0.3]},"
                      " {\"name\": \"y works\", \"arms\": [0.3, 0.3, 0.7]}]");
    const uint64_t runs = 400;
    struct sim_oc_options o = {.runs = runs, .seed = 21};
    char err[256];
    json_t *r = sim_oc_run(&d.d, s, &o, err, sizeof err);
    if (r == NULL)
        fail_msg("%s", err);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "goal"), "name")),
                        "control");
    json_t *null = scenario(r, 0), *alt = scenario(r, 1);
    assert_true(json_is_true(json_object_get(null, "null")));
    assert_true(json_is_false(json_object_get(alt, "null")));

    /* Null: some arm declared superior, at most δ; each arm's rate below it. */
    uint64_t k = (uint64_t)prob(null, "type_i_error");
    stattest_assert_rate_at_most("control null: type I error", k, runs, 0.2, 0.01);
    /* 0 of n (the proven rule is conservative: none at this seed): the
     * rule of three, 1 − 0.05^(1/n) ≈ 3/n, in the JSON and the Markdown. */
    assert_int_equal(k, 0);
    assert_true(fabs(field(null, "type_i_error.upper95") - (1 - pow(0.05, 1.0 / runs))) < 1e-12);
    char *md0 = sim_oc_markdown(r);
    assert_non_null(md0);
    assert_non_null(strstr(md0, "α = 0.0000 (≤ 0.0075)"));
    free(md0);
    json_t *arms = json_object_get(null, "arms");
    for (size_t i = 1; i < 3; i++) {
        json_t *v = json_object_get(json_array_get(arms, i), "vs_control");
        assert_true(prob(v, "declared_superior") <= (double)k);
        stattest_assert_rate_at_most("control null: the difference interval misses",
                                     runs - (uint64_t)prob(v, "coverage"), runs, 0.2, 0.01);
    }
    assert_null(json_object_get(json_array_get(arms, 0), "vs_control")); /* the control */

    /* Alternative: power is y's superiority rate; x is never superior. */
    arms = json_object_get(alt, "arms");
    json_t *vx = json_object_get(json_array_get(arms, 1), "vs_control");
    json_t *vy = json_object_get(json_array_get(arms, 2), "vs_control");
    assert_string_equal(json_string_value(json_object_get(vy, "truth")), "above the margin");
    assert_true(prob(alt, "power") == prob(vy, "declared_superior"));
    assert_true(field(alt, "power.estimate") > 0.5);
    stattest_assert_rate_at_most("control alternative: x declared superior",
                                 (uint64_t)prob(vx, "declared_superior"), runs, 0.2, 0.01);
    stattest_assert_rate_at_most("control alternative: some wrong decision",
                                 (uint64_t)prob(alt, "wrong_claim"), runs, 0.2, 0.01);
    /* Stop reasons are the goal's (or the budget). */
    json_t *x;
    size_t i;
    json_array_foreach(json_object_get(alt, "stop_reasons"), i, x)
    {
        const char *why = json_string_value(json_object_get(x, "reason"));
        assert_true(strcmp(why, "superiority") == 0 || strcmp(why, "futility") == 0 ||
                    strcmp(why, "budget") == 0);
    }
    char *md = sim_oc_markdown(r);
    assert_non_null(md);
    assert_non_null(strstr(md, "Comparisons with the control"));
    free(md);
    json_decref(r);
    sim_oc_scenarios_free(s);
    exp_config_free(&d.cfg);
}

/* The report of design d with goal.scale = scale on fresh seeds (400
 * runs, seed 23: not the calibration's). */
static json_t *run_at_scale(struct design *d, const struct sim_oc_scenarios *s, double scale)
{
    struct engine_config at = d->cfg.engine;
    at.scale = scale;
    struct sim_oc_design dd = d->d;
    dd.engine = &at;
    struct sim_oc_options fresh = {.runs = 400, .seed = 23};
    char err[256];
    json_t *r = sim_oc_run(&dd, s, &fresh, err, sizeof err);
    if (r == NULL)
        fail_msg("%s", err);
    return r;
}

/* Goal control: calibration sets goal.scale (the proven rule spends far
 * less than δ), and the design at the scale found, on fresh seeds, has
 * the target's type I error within its MC error; the report and the
 * design say the rule is unproven. */
static void test_control_calibration(void **state)
{
    (void)state;
    struct design d;
    design_load("{\"id\": \"ctlcal\", \"seed\": 1, \"policy\": {\"name\": \"vs-control\"}, "
                "\"arms\": [\"c\", \"x\"], \"goal\": {\"type\": \"control\", "
                "\"control\": \"c\", \"margin\": 0.1, \"delta\": 0.05, \"budget\": 600}}",
                &d);
    /* the least favourable null: x exactly at the margin */
    struct sim_oc_scenarios *s = scenarios(&d, "[{\"name\": \"at the margin\", "
                                               "\"arms\": [0.3, 0.4]}]");
    assert_int_equal(sim_oc_scenarios_null(&d.d, s), 0);
    assert_string_equal(sim_oc_calibrated(d.d.engine), "scale");
    const double target = 0.1;
    struct sim_oc_options o = {.runs = 200, .seed = 22};
    double scale;
    json_t *cal = NULL;
    char err[256];
    if (sim_oc_calibrate(&d.d, s, 0, &o, target, 0.05, 1, 10, &scale, &cal, err, sizeof err) != 0)
        fail_msg("%s", err);
    double achieved = field(cal, "type_i_error");
    assert_true(json_is_true(json_object_get(cal, "bracketed")));
    assert_string_equal(json_string_value(json_object_get(cal, "parameter")), "scale");
    assert_true(fabs(field(cal, "scale") - scale) < 1e-15);
    assert_true(achieved <= target);
    /* the proven end is the first step, far under the target */
    assert_true(field(json_array_get(json_object_get(cal, "steps"), 0), "scale") == 1);
    assert_true(field(json_array_get(json_object_get(cal, "steps"), 0), "type_i_error") < target);
    assert_true(scale > 0.05 && scale < 1);

    json_t *r = run_at_scale(&d, s, scale);
    double t1 = field(scenario(r, 0), "type_i_error.estimate");
    /* 3 combined MC SEs of the two estimates, plus the calibration's step */
    double tol = 3 * sqrt(target * (1 - target) * (1.0 / 200 + 1.0 / 400)) + 2.0 / 200;
    print_message("# calibrated scale %.5g: type I %.4f (calibration runs), %.4f ± %.4f (fresh "
                  "runs), target %.2f, tolerance %.4f\n",
                  scale, achieved, t1, field(scenario(r, 0), "type_i_error.mc_se"), target, tol);
    assert_true(fabs(t1 - target) <= tol);
    assert_true(fabs(field(r, "design.scale") - scale) < 1e-12);
    assert_true(json_is_false(json_object_get(json_object_get(r, "design"), "stop_proven")));
    char *md = sim_oc_markdown(r);
    assert_non_null(md);
    assert_non_null(strstr(md, "**Unproven rule**"));
    /* the coverage defined as the scaled intervals', with no guarantee */
    assert_non_null(strstr(md, "carries no coverage guarantee"));
    assert_null(strstr(md, "each side at δ/(2K)"));
    free(md);
    json_decref(r);
    json_decref(cal);
    sim_oc_scenarios_free(s);
    exp_config_free(&d.cfg);
}

/* Without a named null, calibration holds every null at the target: here
 * the all-equal null comes first and almost never errs, the null at the
 * margin binds. The design at the scale found, on fresh seeds, keeps the
 * type I error of both nulls under the target within the MC error. */
static void test_least_favourable_null(void **state)
{
    (void)state;
    struct design d;
    design_load("{\"id\": \"ctllf\", \"seed\": 1, \"policy\": {\"name\": \"vs-control\"}, "
                "\"arms\": [\"c\", \"x\"], \"goal\": {\"type\": \"control\", "
                "\"control\": \"c\", \"margin\": 0.1, \"delta\": 0.05, \"budget\": 600}}",
                &d);
    struct sim_oc_scenarios *s = scenarios(&d, "[{\"name\": \"all equal\", \"arms\": [0.3, 0.3]}, "
                                               "{\"name\": \"at the margin\", "
                                               "\"arms\": [0.3, 0.4]}]");
    const double target = 0.1;
    struct sim_oc_options o = {.runs = 200, .seed = 22};
    double scale, first;
    json_t *cal = NULL, *cal0 = NULL;
    char err[256];
    if (sim_oc_calibrate(&d.d, s, -1, &o, target, 0.05, 1, 10, &scale, &cal, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_string_equal(json_string_value(json_object_get(cal, "scenario")), "at the margin");
    assert_int_equal(json_array_size(json_object_get(cal, "nulls")), 2);
    assert_true(field(cal, "type_i_error") <= target);
    /* The first null alone allows a lower (looser) scale. */
    if (sim_oc_calibrate(&d.d, s, 0, &o, target, 0.05, 1, 10, &first, &cal0, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_string_equal(json_string_value(json_object_get(cal0, "scenario")), "all equal");
    assert_true(first < scale);

    json_t *r = run_at_scale(&d, s, scale);
    /* 3 combined MC SEs of the two estimates, plus the calibration's step */
    double tol = 3 * sqrt(target * (1 - target) * (1.0 / 200 + 1.0 / 400)) + 2.0 / 200;
    for (size_t i = 0; i < 2; i++) {
        double t1 = field(scenario(r, i), "type_i_error.estimate");
        print_message("# scale %.5g (first null alone %.5g): null %zu type I %.4f, target %.2f, "
                      "tolerance %.4f\n",
                      scale, first, i, t1, target, tol);
        assert_true(t1 <= target + tol);
    }
    json_decref(r);
    json_decref(cal0);
    json_decref(cal);
    sim_oc_scenarios_free(s);
    exp_config_free(&d.cfg);
}

static void test_scenario_errors(void **state)
{
    (void)state;
    struct design d;
    design_load(fixed_budget, &d);
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[]", "scenarios: must be an array of 1 to 32"},
        {"{\"scenarios\": [], \"x\": 1}", "nothing else"},
        {"[{\"arms\": [0.1, 0.2]}]", "scenarios[0].name: required"},
        {"[{\"name\": \"a\", \"arms\": [0.1, 0.2, 0.3]}]",
         "scenarios[0]: bandit default has 2 arms"},
        {"[{\"name\": \"a\", \"arms\": [0.1, 2]}]", "scenarios[0].arms[1]: a bare number"},
        {"[{\"name\": \"a\", \"arms\": [0.1, 0.2], \"means\": 1}]", "scenarios[0].means: unknown"},
        {"[{\"name\": \"a\", \"arms\": [0.1, {\"dist\": \"gaussian\", \"mean\": 0.2, \"sd\": 0}]}]",
         "scenarios[0].arms[1].sd: must be positive"},
        {"[{\"name\": \"a\", \"arms\": [0.1, 0.2]}, {\"name\": \"a\", \"arms\": [0.1, 0.2]}]",
         "scenarios[1].name: \"a\" is taken"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_loads(cases[i].text, 0, NULL);
        assert_non_null(j);
        struct sim_oc_scenarios *s = NULL;
        char err[256] = "";
        assert_int_equal(sim_oc_scenarios_parse(j, &d.d, &s, err, sizeof err), -1);
        assert_null(s);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("%s: got \"%s\", want \"%s\"", cases[i].text, err, cases[i].want);
        json_decref(j);
    }
    exp_config_free(&d.cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_power),
        cmocka_unit_test(test_calibration),
        cmocka_unit_test(test_control),
        cmocka_unit_test(test_control_calibration),
        cmocka_unit_test(test_least_favourable_null),
        cmocka_unit_test(test_scenario_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
