/*
 * oc.c — operating characteristics (oc.h): scenarios parsed into problems,
 * every run of the design's engine recorded at its end (sim_options.on_end),
 * the records summed in run order into the figures and their Monte Carlo
 * standard errors, and the calibration of δ.
 */
#include "sim/oc.h"

#include "sim/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/version.h"
#include "policies/goal.h"
#include "policies/stop_rule.h"
#include "sim/sim.h"

/* Runs per call of sim_run when the computing time is bounded: the time is
 * checked between batches, so a report holds whole batches. */
#define SIM_OC_BATCH 32

struct oc_scenario {
    char *name; /* owned */
    struct sim_problem p;
};

struct sim_oc_scenarios {
    size_t n;
    struct oc_scenario s[SIM_OC_MAX_SCENARIOS];
};

/* One run, as its end left it. */
struct oc_rec {
    uint64_t pulls;
    const char *reason; /* static: engine_stop_reason_name, or "cap" */
    unsigned char claim, reject, correct, wrong;
};

/* What a goal calls a claim, and when a claim is an error: one row per
 * goal, the hook a new goal fills in. */
struct oc_goal {
    const char *name;
    const char *claim;  /* what a claim is, for the report */
    const char *type_i; /* the definition of the type I error */
    const char *power;  /* the definition of power */
    /* Is scenario p a null for this goal (no arm better)? */
    int (*is_null)(const struct sim_problem *p);
    /* The run's verdicts into rec (claim, reject, correct, wrong), from
     * the engine as the run left it and sim_run_in's judgement r. */
    void (*judge)(const struct sim_problem *p, int null, const struct engine *e,
                  const struct sim_run_result *r, struct oc_rec *rec);
};

/* --- goal: best arm / top m ------------------------------------------------ */

/* No arm better than another: every arm of every bandit has the same true
 * mean, so no set is the top m and any confident claim is false. */
static int best_is_null(const struct sim_problem *p)
{
    for (size_t b = 0; b < p->n_bandits; b++)
        for (size_t i = 1; i < p->n_arms[b]; i++)
            if (p->arms[b][i].mean != p->arms[b][0].mean)
                return 0;
    return 1;
}

/* A claim: the run ended on its decision, a confidence rule or the
 * policy's own (its phases), or the budget of a design that decides at its
 * budget (a fixed-budget policy, or no confidence rule). A budget that only
 * caps a fixed-confidence design, the manual stop and the cap make no
 * claim. */
static void best_judge(const struct sim_problem *p, int null, const struct engine *e,
                       const struct sim_run_result *r, struct oc_rec *rec)
{
    int capped = r->capped;
    enum engine_stop_reason why = engine_stop_reason(e);
    const struct engine_config *c = engine_config(e);
    int at_budget =
        engine_rule(e) == ENGINE_RULE_NONE || (c->policy->flags & POLICY_F_FIXED_BUDGET);
    int claim = !capped && (why == ENGINE_STOPPED_CONFIDENCE || why == ENGINE_STOPPED_POLICY ||
                            (why == ENGINE_STOPPED_BUDGET && at_budget));
    int wrong = 0;
    unsigned char high[ENGINE_MAX_ARMS];
    for (size_t b = 0; b < p->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(e, b, high, &st);
        int w, pw, rw;
        sim_evaluate_set(p, b, high, &w, &pw, &rw);
        wrong |= w;
    }
    rec->claim = (unsigned char)claim;
    rec->reject = (unsigned char)(claim && null);
    rec->wrong = (unsigned char)(claim && (null || wrong));
    rec->correct = (unsigned char)(claim && !null && !wrong);
}

#define OC_CLAIM_DECISION                                                                          \
    "the run ends on its decision: a confidence rule, the policy's own rule, or the budget of a "  \
    "design that decides at its budget (a fixed-budget policy, or no confidence rule); not the "   \
    "cap, nor a budget that only caps a fixed-confidence design"

static const struct oc_goal goal_best = {
    .name = "best-arm",
    .claim = OC_CLAIM_DECISION,
    .type_i = "P(a claim | null): a best arm declared when every arm has the same mean",
    .power = "P(a claim naming the true best arm in every bandit | alternative)",
    .is_null = best_is_null,
    .judge = best_judge,
};

/* Top m: the same verdicts on sets (sim_evaluate_set judges sets). */
static const struct oc_goal goal_top_m = {
    .name = "top-m",
    .claim = OC_CLAIM_DECISION,
    .type_i = "P(a claim | null): a top-m set declared when every arm has the same mean",
    .power = "P(a claim naming the true top m in every bandit | alternative)",
    .is_null = best_is_null,
    .judge = best_judge,
};

/* --- goal: comparisons with control ---------------------------------------- */

/* No arm beats the control by more than Δ (the global null, every arm equal
 * to the control, among them): any arm declared superior is a type I error. */
static int control_is_null(const struct sim_problem *p)
{
    for (size_t b = 0; b < p->n_bandits; b++)
        for (size_t i = 0; i < p->n_arms[b]; i++)
            if ((int)i != p->control && sim_vs_control_truth(p, b, i) > 0)
                return 0;
    return 1;
}

/* A claim: every comparison decided (stop reason superiority or futility).
 * Reject: some arm declared superior (a decision is final, so one made
 * before a budget stop counts). Wrong: some decision against the truth
 * (sim_run_in's judgement). Correct: every truly superior arm declared
 * superior. */
static void control_judge(const struct sim_problem *p, int null, const struct engine *e,
                          const struct sim_run_result *r, struct oc_rec *rec)
{
    enum engine_stop_reason why = engine_stop_reason(e);
    int all = 1;
    for (size_t b = 0; b < p->n_bandits; b++)
        for (size_t i = 0; i < p->n_arms[b]; i++) {
            struct engine_vs_control v;
            if ((int)i != p->control && sim_vs_control_truth(p, b, i) > 0 &&
                engine_vs_control(e, b, i, &v) == 0)
                all &= v.verdict == POLICY_SUPERIOR;
        }
    rec->claim = (unsigned char)(!r->capped && (why == ENGINE_STOPPED_SUPERIORITY ||
                                                why == ENGINE_STOPPED_FUTILITY));
    rec->reject = (unsigned char)(r->superior > 0);
    rec->wrong = (unsigned char)(r->false_superior || r->false_futile);
    rec->correct = (unsigned char)(!null && all);
}

static const struct oc_goal goal_control = {
    .name = "control",
    .claim = "every comparison with the control decided: stop reason superiority or futility",
    .type_i = "P(some arm declared superior | null): no arm beats the control by more than the "
              "margin (the global null, every arm equal to the control, among them)",
    .power = "P(every arm that beats the control by more than the margin is declared superior | "
             "alternative)",
    .is_null = control_is_null,
    .judge = control_judge,
};

static const struct oc_goal *goal_of(const struct engine_config *c)
{
    if (c->goal == ENGINE_GOAL_CONTROL)
        return &goal_control;
    return c->m == 1 ? &goal_best : &goal_top_m;
}

/* --- scenarios -------------------------------------------------------------- */

void sim_oc_scenarios_free(struct sim_oc_scenarios *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->s[i].name);
        sim_problem_free(&s->s[i].p);
    }
    free(s);
}

size_t sim_oc_scenarios_count(const struct sim_oc_scenarios *s)
{
    return s->n;
}

int sim_oc_scenarios_null(const struct sim_oc_design *d, const struct sim_oc_scenarios *s)
{
    const struct oc_goal *g = goal_of(d->engine);
    for (size_t i = 0; i < s->n; i++)
        if (g->is_null(&s->s[i].p))
            return (int)i;
    return -1;
}

/* Scenario j (an object) as a problem over the design's goal and range. */
static int parse_one(json_t *j, const struct sim_oc_design *d, const char *where,
                     struct oc_scenario *out, char *err, size_t errlen)
{
    const struct engine_config *c = d->engine;
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: must be an object {\"name\": ..., \"arms\": [...]}", where);
        return -1;
    }
    json_t *name = json_object_get(j, "name");
    if (name == NULL || !json_is_string(name) || json_string_length(name) == 0 ||
        json_string_length(name) > 128) {
        snprintf(err, errlen, "%s.name: required, a string of 1 to 128 bytes", where);
        return -1;
    }
    const char *k;
    json_t *v;
    double range = d->reward_max - d->reward_min;
    json_t *prob = json_pack("{s:{s:f,s:f},s:f}", "reward", "min", d->reward_min, "max",
                             d->reward_max, "delta", c->delta);
    if (prob != NULL && c->goal == ENGINE_GOAL_CONTROL) {
        /* The problem's goal is the design's: sim_run_in judges each
         * comparison against the true means. */
        for (size_t b = 1; b < c->n_bandits; b++)
            if (c->control_arm[b] != c->control_arm[0]) {
                snprintf(err, errlen,
                         "%s: the design's control arm is not at the same place in every "
                         "bandit (bandit %s): not simulated",
                         where, d->bandit_ids[b]);
                json_decref(prob);
                return -1;
            }
        json_object_set_new(prob, "type", json_string("control"));
        json_object_set_new(prob, "control", json_integer(c->control_arm[0]));
        json_object_set_new(prob, "margin", json_real(c->margin * range));
    } else if (prob != NULL) {
        json_object_set_new(prob, "m", json_integer((json_int_t)c->m));
        json_object_set_new(prob, "epsilon", json_real(c->epsilon * range));
    }
    if (prob == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_object_foreach(j, k, v)
    {
        if (strcmp(k, "name") == 0)
            continue;
        if (strcmp(k, "arms") != 0 && strcmp(k, "bandits") != 0) {
            snprintf(err, errlen, "%s.%s: unknown field (name, arms, bandits)", where, k);
            json_decref(prob);
            return -1;
        }
        json_object_set(prob, k, v);
    }
    char perr[256];
    int rc = sim_problem_parse(prob, &out->p, perr, sizeof perr);
    json_decref(prob);
    if (rc != 0) {
        snprintf(err, errlen, "%s.%s", where, perr);
        return -1;
    }
    if (out->p.n_bandits != c->n_bandits) {
        snprintf(err, errlen, "%s: the design has %zu bandits (got %zu)", where, c->n_bandits,
                 out->p.n_bandits);
        return -1;
    }
    for (size_t b = 0; b < c->n_bandits; b++)
        if (out->p.n_arms[b] != c->n_arms[b]) {
            snprintf(err, errlen, "%s: bandit %s has %zu arms in the design (got %zu)", where,
                     d->bandit_ids[b], c->n_arms[b], out->p.n_arms[b]);
            return -1;
        }
    out->name = strdup(json_string_value(name));
    if (out->name == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int sim_oc_scenarios_parse(json_t *j, const struct sim_oc_design *d, struct sim_oc_scenarios **out,
                           char *err, size_t errlen)
{
    *out = NULL;
    json_t *list = json_is_object(j) ? json_object_get(j, "scenarios") : j;
    if (json_is_object(j) && json_object_size(j) != 1 && list != NULL) {
        snprintf(err, errlen, "scenarios: the file holds {\"scenarios\": [...]} and nothing else");
        return -1;
    }
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n < 1 || n > SIM_OC_MAX_SCENARIOS) {
        snprintf(err, errlen, "scenarios: must be an array of 1 to %d scenarios",
                 SIM_OC_MAX_SCENARIOS);
        return -1;
    }
    struct sim_oc_scenarios *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char where[32];
        snprintf(where, sizeof where, "scenarios[%zu]", i);
        if (parse_one(json_array_get(list, i), d, where, &s->s[i], err, errlen) != 0) {
            s->n = i + 1; /* the failed one's parts too */
            sim_oc_scenarios_free(s);
            return -1;
        }
        s->n = i + 1;
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->s[k].name, s->s[i].name) == 0) {
                snprintf(err, errlen, "%s.name: \"%s\" is taken by scenarios[%zu]", where,
                         s->s[i].name, k);
                sim_oc_scenarios_free(s);
                return -1;
            }
    }
    *out = s;
    return 0;
}

/* --- runs --------------------------------------------------------------------- */

/* The records of one scenario's runs, written by the workers at their
 * runs' ends (each index by one worker) and read after sim_run joined. */
struct oc_acc {
    const struct sim_problem *p;
    const struct oc_goal *g;
    int null;
    size_t ka;        /* arms, all bandits */
    size_t *off;      /* owned: first arm of each bandit in the per-run arrays */
    struct oc_rec *r; /* owned, runs */
    double *est;      /* owned, runs × ka: the final mean (reward units), NaN without data */
    unsigned char *cover, *rec;
    /* goal control, per cell (the control's own: none): the verdict, the
     * final difference with the control (reward units, NaN without data)
     * and whether its interval holds the true difference */
    unsigned char *verdict, *dcover;
    double *dest;
    double lo, range;
};

static void acc_free(struct oc_acc *a)
{
    free(a->off);
    free(a->r);
    free(a->est);
    free(a->cover);
    free(a->rec);
    free(a->verdict);
    free(a->dcover);
    free(a->dest);
    memset(a, 0, sizeof *a);
}

static void on_end(void *arg, uint64_t run, const struct engine *e, const struct sim_run_result *r)
{
    struct oc_acc *a = arg;
    const struct sim_problem *p = a->p;
    uint64_t i = run; /* run i's record is r[i]: the batches' indexes are absolute */
    struct oc_rec *rec = &a->r[i];
    rec->pulls = r->pulls;
    rec->reason = r->capped ? "cap" : engine_stop_reason_name(e);
    if (rec->reason == NULL)
        rec->reason = "running";
    a->g->judge(p, a->null, e, r, rec);
    unsigned char high[ENGINE_MAX_ARMS];
    for (size_t b = 0; b < p->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(e, b, high, &st);
        const struct stats_arm *arms = engine_arms(e, b);
        for (size_t k = 0; k < p->n_arms[b]; k++) {
            size_t cell = (size_t)i * a->ka + a->off[b] + k;
            double l, h, truth = p->arms[b][k].mean;
            engine_arm_status_interval(e, b, k, &l, &h);
            a->est[cell] = arms[k].n > 0 ? a->lo + arms[k].mean * a->range : NAN;
            a->cover[cell] =
                (unsigned char)(a->lo + l * a->range <= truth && truth <= a->lo + h * a->range);
            a->rec[cell] = high[k];
            struct engine_vs_control v;
            if (a->verdict != NULL && engine_vs_control(e, b, k, &v) == 0) {
                double dt = truth - p->arms[b][p->control].mean;
                a->verdict[cell] = (unsigned char)v.verdict;
                a->dest[cell] = isnan(v.diff) ? NAN : v.diff * a->range;
                a->dcover[cell] =
                    (unsigned char)(v.lower * a->range <= dt && dt <= v.upper * a->range);
            }
        }
    }
}

/* An estimate with its Monte Carlo standard error (new reference). */
/* When k is 0 or n the MC SE is 0, which reads as certainty: o gains the
 * exact one-sided 95% bound, "upper95" = 1 − 0.05^(1/n) (k = 0, the rule
 * of three ≈ 3/n) or "lower95" = 0.05^(1/n) (k = n). o may be NULL. */
static json_t *with_bound95(json_t *o, uint64_t k, uint64_t n)
{
    if (o == NULL || n == 0 || (k != 0 && k != n))
        return o;
    double b = pow(0.05, 1.0 / (double)n);
    json_object_set_new(o, k == 0 ? "upper95" : "lower95", json_real(k == 0 ? 1.0 - b : b));
    return o;
}

static json_t *prop_json(uint64_t k, uint64_t n)
{
    double p = n > 0 ? (double)k / (double)n : 0.0, lo, hi;
    sim_wilson(k, n, SIM_Z95, &lo, &hi);
    return with_bound95(json_pack("{s:f,s:f,s:I,s:I,s:[f,f]}", "estimate", p, "mc_se",
                                  n > 0 ? sqrt(p * (1.0 - p) / (double)n) : 0.0, "count",
                                  (json_int_t)k, "runs", (json_int_t)n, "ci95", lo, hi),
                        k, n);
}

/* MC SE of the q-quantile of sorted x[0..n): half the distance between the
 * order statistics of ranks nq ∓ √(nq(1 − q)) (the binomial ±1 SE of the
 * count below the quantile; distribution-free). */
static double quantile_se(const uint64_t *x, uint64_t n, double q)
{
    double c = sqrt((double)n * q * (1.0 - q)), nq = (double)n * q;
    double lo = floor(nq - c), hi = ceil(nq + c);
    uint64_t il = lo < 0 ? 0 : (uint64_t)lo, ih = hi > (double)(n - 1) ? n - 1 : (uint64_t)hi;
    return ((double)x[ih] - (double)x[il]) / 2.0;
}

static const double quantile_levels[] = {0.05, 0.25, 0.5, 0.75, 0.95};
#define OC_HIST_BINS 12

/* The sample size: mean, sd, quantiles with their MC SE and a histogram
 * (new reference); sorts x. */
static json_t *sample_json(uint64_t *x, uint64_t n)
{
    double sum = 0, ss = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)x[i];
    double mean = sum / (double)n;
    for (uint64_t i = 0; i < n; i++)
        ss += ((double)x[i] - mean) * ((double)x[i] - mean);
    double sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    qsort(x, n, sizeof *x, sim_cmp_u64);
    json_t *qs = json_array();
    for (size_t k = 0; k < sizeof quantile_levels / sizeof quantile_levels[0]; k++)
        json_array_append_new(qs, json_pack("{s:f,s:f,s:f}", "level", quantile_levels[k], "value",
                                            sim_quantile(x, n, quantile_levels[k]), "mc_se",
                                            quantile_se(x, n, quantile_levels[k])));
    /* Equal-width bins from the least to the most pulls, the last closed;
     * one bin when every run took the same. */
    double lo = (double)x[0], hi = (double)x[n - 1];
    size_t nb = hi > lo ? (hi - lo < OC_HIST_BINS ? (size_t)(hi - lo) : OC_HIST_BINS) : 1;
    double w = hi > lo ? (hi - lo) / (double)nb : 0.0;
    uint64_t counts[OC_HIST_BINS] = {0};
    for (uint64_t i = 0; i < n; i++) {
        size_t bin = w > 0 ? (size_t)(((double)x[i] - lo) / w) : 0;
        counts[bin < nb ? bin : nb - 1]++;
    }
    json_t *edges = json_array(), *cts = json_array();
    for (size_t k = 0; k <= nb; k++)
        json_array_append_new(edges, json_real(lo + w * (double)k));
    for (size_t k = 0; k < nb; k++)
        json_array_append_new(cts, json_integer((json_int_t)counts[k]));
    return json_pack("{s:f,s:f,s:f,s:I,s:I,s:o,s:{s:o,s:o}}", "mean", mean, "mean_mc_se",
                     sd / sqrt((double)n), "sd", sd, "min", (json_int_t)x[0], "max",
                     (json_int_t)x[n - 1], "quantiles", qs, "histogram", "edges", edges, "counts",
                     cts);
}

/* The distinct stop reasons in order of first appearance, with their
 * probabilities (new reference). */
static json_t *reasons_json(const struct oc_acc *a, uint64_t n)
{
    const char *names[32];
    uint64_t counts[32] = {0};
    size_t k = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < k && strcmp(names[j], a->r[i].reason) != 0)
            j++;
        if (j == k && k < 32)
            names[k++] = a->r[i].reason;
        if (j < k)
            counts[j]++;
    }
    json_t *list = json_array();
    for (size_t j = 0; j < k; j++) {
        json_t *pj = prop_json(counts[j], n);
        json_object_set_new(pj, "reason", json_string(names[j]));
        json_array_append_new(list, pj);
    }
    return list;
}

/* Into o: the runs with an estimate among x[0], x[stride], ... (n of them,
 * NaN: none) and the estimates' mean, bias against truth with its MC SE,
 * and RMSE. */
static void bias_fields(json_t *o, const double *x, size_t stride, uint64_t n, double truth)
{
    double sum = 0, ss = 0;
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (!isnan(x[i * stride])) {
            sum += x[i * stride] - truth;
            m++;
        }
    double bias = m > 0 ? sum / (double)m : NAN;
    for (uint64_t i = 0; m > 1 && i < n; i++)
        if (!isnan(x[i * stride]))
            ss += (x[i * stride] - truth - bias) * (x[i * stride] - truth - bias);
    double sd = m > 1 ? sqrt(ss / (double)(m - 1)) : NAN;
    json_object_set_new(o, "runs_with_data", json_integer((json_int_t)m));
    json_object_set_new(o, "mean_estimate", m > 0 ? json_real(truth + bias) : json_null());
    json_object_set_new(o, "bias", m > 0 ? json_real(bias) : json_null());
    json_object_set_new(o, "bias_mc_se", m > 1 ? json_real(sd / sqrt((double)m)) : json_null());
    json_object_set_new(o, "rmse",
                        m > 1 ? json_real(sqrt(bias * bias + sd * sd * (double)(m - 1) / (double)m))
                              : json_null());
}

/* Runs i < n whose byte x[i · stride] equals v. */
static uint64_t count_eq(const unsigned char *x, size_t stride, uint64_t n, unsigned v)
{
    uint64_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        k += x[i * stride] == v;
    return k;
}

/* Goal control, arm k of bandit b (not the control): its comparison (new
 * reference): the true difference, the decision rates, the bias and the
 * coverage of the final difference and its interval. */
static json_t *vs_control_json(const struct oc_acc *a, size_t b, size_t k, uint64_t n)
{
    const struct sim_problem *p = a->p;
    size_t c = a->off[b] + k;
    double dt = p->arms[b][k].mean - p->arms[b][p->control].mean;
    int truth = sim_vs_control_truth(p, b, k);
    json_t *o = json_pack("{s:f,s:s}", "true_difference", dt, "truth",
                          truth > 0   ? "above the margin"
                          : truth < 0 ? "below the margin"
                                      : "at the margin");
    json_object_set_new(o, "declared_superior",
                        prop_json(count_eq(a->verdict + c, a->ka, n, POLICY_SUPERIOR), n));
    json_object_set_new(o, "declared_futile",
                        prop_json(count_eq(a->verdict + c, a->ka, n, POLICY_FUTILE), n));
    json_object_set_new(o, "open", prop_json(count_eq(a->verdict + c, a->ka, n, POLICY_OPEN), n));
    bias_fields(o, a->dest + c, a->ka, n, dt);
    json_object_set_new(o, "coverage", prop_json(count_eq(a->dcover + c, a->ka, n, 1), n));
    return o;
}

/* Per arm: truth, recommendation rate, bias and coverage, and with goal
 * control the comparison with the control (new reference). */
static json_t *arms_json(const struct sim_oc_design *d, const struct oc_acc *a, uint64_t n,
                         json_t **simultaneous)
{
    const struct sim_problem *p = a->p;
    json_t *list = json_array();
    uint64_t all = 0;
    for (uint64_t i = 0; i < n; i++) {
        int ok = 1;
        for (size_t c = 0; c < a->ka; c++)
            ok &= a->cover[i * a->ka + c];
        all += (uint64_t)ok;
    }
    *simultaneous = prop_json(all, n);
    for (size_t b = 0; b < p->n_bandits; b++)
        for (size_t k = 0; k < p->n_arms[b]; k++) {
            size_t c = a->off[b] + k;
            double truth = p->arms[b][k].mean;
            json_t *o = json_pack("{s:s,s:s,s:f}", "bandit", d->bandit_ids[b], "arm", d->arms[b][k],
                                  "true_mean", truth);
            int ctl = d->engine->control_arm != NULL && d->engine->control_arm[b] == (int)k;
            if (ctl)
                json_object_set_new(o, "control", json_true());
            json_object_set_new(o, "recommended", prop_json(count_eq(a->rec + c, a->ka, n, 1), n));
            bias_fields(o, a->est + c, a->ka, n, truth);
            json_object_set_new(o, "coverage", prop_json(count_eq(a->cover + c, a->ka, n, 1), n));
            if (a->verdict != NULL && !ctl)
                json_object_set_new(o, "vs_control", vs_control_json(a, b, k, n));
            json_array_append_new(list, o);
        }
    return list;
}

static json_t *means_json(const struct sim_problem *p)
{
    json_t *list = json_array();
    for (size_t b = 0; b < p->n_bandits; b++) {
        json_t *arms = json_array();
        for (size_t k = 0; k < p->n_arms[b]; k++)
            json_array_append_new(arms, json_real(p->arms[b][k].mean));
        json_array_append_new(list, arms);
    }
    return list;
}

static uint64_t cap_of(const struct engine_config *c, const struct sim_oc_options *o)
{
    if (c->budget > 0)
        return c->budget;
    return o->max_pulls > 0 ? o->max_pulls : SIM_OC_DEFAULT_MAX_PULLS;
}

/* The runs of scenario sc under engine configuration c into a (which the
 * caller frees with acc_free): *done runs, all o->runs unless the time
 * bound cut them. 0, or −1 with err. */
static int run_scenario(const struct engine_config *c, const struct sim_oc_design *d,
                        const struct oc_scenario *sc, const struct sim_oc_options *o, uint64_t t0,
                        struct oc_acc *a, uint64_t *done, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    const struct sim_problem *p = &sc->p;
    a->p = p;
    a->g = goal_of(c);
    a->null = a->g->is_null(p);
    a->lo = d->reward_min;
    a->range = d->reward_max - d->reward_min;
    a->off = calloc(p->n_bandits, sizeof *a->off);
    if (a->off == NULL)
        goto nomem;
    for (size_t b = 0; b < p->n_bandits; b++) {
        a->off[b] = a->ka;
        a->ka += p->n_arms[b];
    }
    if ((double)o->runs * (double)a->ka > (double)SIM_OC_MAX_CELLS) {
        snprintf(err, errlen, "runs: at most %llu runs × arms per scenario",
                 (unsigned long long)SIM_OC_MAX_CELLS);
        return -1;
    }
    a->r = calloc(o->runs, sizeof *a->r);
    a->est = calloc(o->runs * a->ka, sizeof *a->est);
    a->cover = calloc(o->runs * a->ka, 1);
    a->rec = calloc(o->runs * a->ka, 1);
    if (a->r == NULL || a->est == NULL || a->cover == NULL || a->rec == NULL)
        goto nomem;
    if (c->goal == ENGINE_GOAL_CONTROL) {
        a->verdict = calloc(o->runs * a->ka, 1);
        a->dcover = calloc(o->runs * a->ka, 1);
        a->dest = calloc(o->runs * a->ka, sizeof *a->dest);
        if (a->verdict == NULL || a->dcover == NULL || a->dest == NULL)
            goto nomem;
    }
    struct sim_options so;
    memset(&so, 0, sizeof so);
    so.design = c;
    so.policy = c->policy;
    so.params = c->params;
    so.stop = c->stop_rule;
    so.seed = o->seed;
    so.threads = o->threads;
    so.max_pulls = cap_of(c, o);
    so.progress = o->progress;
    so.on_end = on_end;
    so.on_end_arg = a;
    uint64_t n = 0;
    while (n < o->runs) {
        if (o->seconds > 0 && n > 0 && (double)(clock_mono_ns() - t0) / 1e9 >= o->seconds)
            break;
        uint64_t batch = o->seconds > 0 ? SIM_OC_BATCH : o->runs;
        if (batch > o->runs - n)
            batch = o->runs - n;
        so.first_run = n;
        so.runs = batch;
        struct sim_result res;
        if (sim_run(p, &so, &res, err, errlen) != 0)
            return -1;
        sim_result_free(&res);
        n += batch;
    }
    *done = n;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* One scenario's figures (new reference). */
static json_t *scenario_json(const struct sim_oc_design *d, const struct oc_scenario *sc,
                             const struct oc_acc *a, uint64_t n)
{
    uint64_t claim = 0, reject = 0, correct = 0, wrong = 0;
    uint64_t *pulls = calloc(n, sizeof *pulls);
    if (pulls == NULL)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        claim += a->r[i].claim;
        reject += a->r[i].reject;
        correct += a->r[i].correct;
        wrong += a->r[i].wrong;
        pulls[i] = a->r[i].pulls;
    }
    json_t *sim = NULL;
    json_t *arms = arms_json(d, a, n, &sim);
    json_t *j = json_pack("{s:s,s:b,s:o,s:I}", "name", sc->name, "null", a->null, "true_means",
                          means_json(&sc->p), "runs", (json_int_t)n);
    json_object_set_new(j, "type_i_error", a->null ? prop_json(reject, n) : json_null());
    json_object_set_new(j, "power", a->null ? json_null() : prop_json(correct, n));
    json_object_set_new(j, "claim", prop_json(claim, n));
    json_object_set_new(j, "wrong_claim", prop_json(wrong, n));
    json_object_set_new(j, "sample_size", sample_json(pulls, n));
    json_object_set_new(j, "stop_reasons", reasons_json(a, n));
    json_object_set_new(j, "arms", arms);
    json_object_set_new(j, "simultaneous_coverage", sim);
    free(pulls);
    return j;
}

/* The design's summary for the report (new reference). */
static json_t *design_json(const struct sim_oc_design *d, uint64_t cap)
{
    const struct engine_config *c = d->engine;
    json_t *bandits = json_array();
    for (size_t b = 0; b < c->n_bandits; b++) {
        json_t *arms = json_array();
        for (size_t k = 0; k < c->n_arms[b]; k++)
            json_array_append_new(arms, json_string(d->arms[b][k]));
        json_t *bj = json_pack("{s:s,s:o}", "id", d->bandit_ids[b], "arms", arms);
        if (c->control_arm != NULL && c->control_arm[b] >= 0)
            json_object_set_new(bj, "control", json_string(d->arms[b][c->control_arm[b]]));
        json_array_append_new(bandits, bj);
    }
    double range = d->reward_max - d->reward_min;
    json_t *j =
        json_pack("{s:s,s:I,s:f,s:f,s:o,s:s,s:s,s:{s:f,s:f},s:o,s:I}", "policy", c->policy->name,
                  "m", (json_int_t)c->m, "delta", c->delta, "epsilon", c->epsilon * range, "budget",
                  c->budget > 0 ? json_integer((json_int_t)c->budget) : json_null(), "stop_rule",
                  stop_rule_name(engine_resolve_rule(c)), "bound", stop_rule_bound_name(c->bound),
                  "reward", "min", d->reward_min, "max", d->reward_max, "bandits", bandits,
                  "max_pulls", (json_int_t)cap);
    if (d->name != NULL)
        json_object_set_new(j, "name", json_string(d->name));
    json_object_set_new(j, "goal", json_string(goal_type_name(c->goal)));
    if (c->goal == ENGINE_GOAL_CONTROL)
        json_object_set_new(j, "margin", json_real(c->margin * range));
    if (engine_calibrated(c))
        json_object_set_new(j, "scale", json_real(c->scale));
    json_object_set_new(j, "stop_proven",
                        json_boolean(engine_rule_proven(c, engine_resolve_rule(c))));
    if (c->burn_in > 0)
        json_object_set_new(j, "burn_in", json_integer((json_int_t)c->burn_in));
    if (c->min_prob > 0)
        json_object_set_new(j, "min_prob", json_real(c->min_prob));
    if (c->control_share > 0)
        json_object_set_new(j, "control_share", json_real(c->control_share));
    return j;
}

static int check_options(const struct sim_oc_options *o, char *err, size_t errlen)
{
    if (o->runs < 1 || o->runs > SIM_OC_MAX_RUNS) {
        snprintf(err, errlen, "runs: must be an integer from 1 to %llu",
                 (unsigned long long)SIM_OC_MAX_RUNS);
        return -1;
    }
    return 0;
}

/* The report for engine configuration c (d's, or a calibrated copy). */
static json_t *run_all(const struct engine_config *c, const struct sim_oc_design *d,
                       const struct sim_oc_scenarios *s, const struct sim_oc_options *o, char *err,
                       size_t errlen)
{
    if (check_options(o, err, errlen) != 0)
        return NULL;
    struct sim_oc_design dc = *d;
    dc.engine = c;
    const struct oc_goal *g = goal_of(c);
    uint64_t t0 = clock_mono_ns();
    json_t *list = json_array();
    uint64_t least = o->runs;
    for (size_t i = 0; list != NULL && i < s->n; i++) {
        struct oc_acc a;
        uint64_t n = 0;
        /* Every scenario gets its share of a bounded time. */
        struct sim_oc_options so = *o;
        if (o->seconds > 0)
            so.seconds = o->seconds * (double)(i + 1) / (double)s->n;
        if (run_scenario(c, &dc, &s->s[i], &so, t0, &a, &n, err, errlen) != 0) {
            acc_free(&a);
            json_decref(list);
            return NULL;
        }
        least = n < least ? n : least;
        json_t *sj = scenario_json(&dc, &s->s[i], &a, n);
        acc_free(&a);
        if (sj == NULL || json_array_append_new(list, sj) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    if (list == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_t *j = json_pack(
        "{s:s,s:{s:s,s:s},s:o,s:o,s:I,s:I,s:I,s:o,s:{s:s,s:s,s:s,s:s},s:o}", "kind",
        "operating_characteristics", "software", "name", "banditd", "version", BANDITD_VERSION,
        "design_hash", d->hash != NULL ? json_string(d->hash) : json_null(), "experiment",
        d->experiment != NULL ? json_string(d->experiment) : json_null(), "seed",
        (json_int_t)o->seed, "runs", (json_int_t)least, "runs_asked", (json_int_t)o->runs, "design",
        design_json(&dc, cap_of(c, o)), "goal", "name", g->name, "claim", g->claim, "type_i_error",
        g->type_i, "power", g->power, "scenarios", list);
    if (j == NULL)
        snprintf(err, errlen, "out of memory");
    return j;
}

json_t *sim_oc_run(const struct sim_oc_design *d, const struct sim_oc_scenarios *s,
                   const struct sim_oc_options *o, char *err, size_t errlen)
{
    return run_all(d->engine, d, s, o, err, errlen);
}

/* --- calibration ------------------------------------------------------------------ */

const char *sim_oc_calibrated(const struct engine_config *c)
{
    return c->goal == ENGINE_GOAL_CONTROL ? "scale" : "delta";
}

/* Type I errors (count) of scenario sc with the calibrated parameter at x,
 * over all o->runs: 1 when o->seconds (counted from t0) cut them (a
 * refusal), −1 when the engine failed. */
static int rejects_at(const struct sim_oc_design *d, const struct oc_scenario *sc,
                      const struct sim_oc_options *o, uint64_t t0, double x, uint64_t *k, char *err,
                      size_t errlen)
{
    struct engine_config c = *d->engine;
    if (c.goal == ENGINE_GOAL_CONTROL)
        c.scale = x;
    else
        c.delta = x;
    struct oc_acc a;
    uint64_t n = 0;
    int rc = run_scenario(&c, d, sc, o, t0, &a, &n, err, errlen);
    if (rc == 0 && n < o->runs) {
        snprintf(err, errlen,
                 "calibrate: more than %g s of computing (the bound): fewer runs, a lower "
                 "max_pulls, or bandit-sim oc --calibrate",
                 o->seconds);
        rc = 1;
    }
    *k = 0;
    for (uint64_t i = 0; rc == 0 && i < n; i++)
        *k += a.r[i].reject;
    acc_free(&a);
    return rc;
}

/* The nulls calibration holds at the target: scenario `scenario`, or
 * every null when it is −1. */
struct cal_nulls {
    size_t n, idx[SIM_OC_MAX_SCENARIOS];
};

/* Type I errors of every null at x (k[j] for nulls idx[j], the same runs
 * i in each: common random numbers) and the binding one, the largest
 * count (the first of equals). */
static int worst_at(const struct sim_oc_design *d, const struct sim_oc_scenarios *s,
                    const struct cal_nulls *nl, const struct sim_oc_options *o, uint64_t t0,
                    double x, uint64_t *k, size_t *binding, char *err, size_t errlen)
{
    *binding = 0;
    for (size_t j = 0; j < nl->n; j++) {
        int rc = rejects_at(d, &s->s[nl->idx[j]], o, t0, x, &k[j], err, errlen);
        if (rc != 0)
            return rc;
        if (k[j] > k[*binding])
            *binding = j;
    }
    return 0;
}

static json_t *step_json(const struct sim_oc_scenarios *s, const struct cal_nulls *nl,
                         const char *name, double x, const uint64_t *k, size_t b, double n)
{
    return json_pack("{s:f,s:f,s:s}", name, x, "type_i_error", (double)k[b] / n, "binding",
                     s->s[nl->idx[b]].name);
}

int sim_oc_calibrate(const struct sim_oc_design *d, const struct sim_oc_scenarios *s, int scenario,
                     const struct sim_oc_options *o, double target, double lo, double hi,
                     unsigned iterations, double *value, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = -1; /* 1: refused (a "calibrate: " message), −1: failed */
    if (check_options(o, err, errlen) != 0)
        return -1;
    const struct oc_goal *g = goal_of(d->engine);
    struct cal_nulls nl = {0};
    if (scenario >= 0) {
        if ((size_t)scenario < s->n && g->is_null(&s->s[scenario].p))
            nl.idx[nl.n++] = (size_t)scenario;
    } else {
        for (size_t i = 0; i < s->n; i++)
            if (g->is_null(&s->s[i].p))
                nl.idx[nl.n++] = i;
    }
    if (nl.n == 0) {
        snprintf(err, errlen, "calibrate: the scenario must be a null (every arm the same mean)");
        return 1;
    }
    /* δ: the type I error grows with it, bisected over log δ. The scale
     * of a control design: it shrinks as the scale grows, bisected
     * linearly; 1 is the proven rule. */
    const char *name = sim_oc_calibrated(d->engine);
    int by_scale = d->engine->goal == ENGINE_GOAL_CONTROL;
    if (!(target > 0 && target < 1) || !(lo > 0 && lo < hi && (by_scale ? hi <= 1 : hi < 1))) {
        snprintf(err, errlen, "calibrate: needs 0 < target < 1 and 0 < lo < hi %s 1",
                 by_scale ? "<=" : "<");
        return 1;
    }
    const double n = (double)o->runs;
    const uint64_t t0 = clock_mono_ns();
    /* strict: the end that keeps the error lowest; loose: the other. The
     * error at a value is the largest over the nulls (the least
     * favourable one binds). */
    double strict = by_scale ? hi : lo, loose = by_scale ? lo : hi;
    json_t *steps = json_array();
    uint64_t ks[SIM_OC_MAX_SCENARIOS], kl[SIM_OC_MAX_SCENARIOS], km[SIM_OC_MAX_SCENARIOS];
    size_t bs, bl, bm;
    if (steps == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if ((rc = worst_at(d, s, &nl, o, t0, strict, ks, &bs, err, errlen)) != 0 ||
        (rc = worst_at(d, s, &nl, o, t0, loose, kl, &bl, err, errlen)) != 0)
        goto fail;
    json_array_append_new(steps, step_json(s, &nl, name, strict, ks, bs, n));
    json_array_append_new(steps, step_json(s, &nl, name, loose, kl, bl, n));
    if ((double)ks[bs] > target * n) {
        if (ks[bs] == kl[bl])
            snprintf(err, errlen,
                     "calibrate: the type I error is %.4g at every %s from %g to %g: it does "
                     "not depend on %s (a fixed-budget design decides at its budget)",
                     (double)ks[bs] / n, name, lo, hi, name);
        else
            snprintf(err, errlen,
                     "calibrate: the type I error is %.4g > %.4g (null \"%s\") even at %s = %g "
                     "(raise max_pulls or change the design)",
                     (double)ks[bs] / n, target, s->s[nl.idx[bs]].name, name, strict);
        rc = 1;
        goto fail;
    }
    /* Invariant: type I(strict) ≤ target < type I(loose) (or loose itself
     * holds); ks and bs are strict's. */
    int bracketed = (double)kl[bl] > target * n;
    if (!bracketed) {
        strict = loose;
        memcpy(ks, kl, sizeof ks);
        bs = bl;
    } else {
        for (unsigned it = 0; it < iterations; it++) {
            double mid = by_scale ? 0.5 * (strict + loose) : exp(0.5 * (log(strict) + log(loose)));
            if ((rc = worst_at(d, s, &nl, o, t0, mid, km, &bm, err, errlen)) != 0)
                goto fail;
            json_array_append_new(steps, step_json(s, &nl, name, mid, km, bm, n));
            if ((double)km[bm] <= target * n) {
                strict = mid;
                memcpy(ks, km, sizeof ks);
                bs = bm;
            } else {
                loose = mid;
            }
        }
    }
    *value = strict;
    json_t *nulls = json_array();
    for (size_t j = 0; nulls != NULL && j < nl.n; j++) {
        double pj = (double)ks[j] / n;
        json_array_append_new(nulls,
                              with_bound95(json_pack("{s:s,s:f,s:f}", "scenario",
                                                     s->s[nl.idx[j]].name, "type_i_error", pj,
                                                     "type_i_error_mc_se", sqrt(pj * (1 - pj) / n)),
                                           ks[j], o->runs));
    }
    double p = (double)ks[bs] / n;
    *out = json_pack(
        "{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:I,s:I,s:s,s:o,s:o}", "scenario", s->s[nl.idx[bs]].name,
        "nulls_used",
        scenario >= 0 ? "the one named" : "every null scenario (the least favourable binds)",
        "parameter", name, "target", target, name, strict, "type_i_error", p, "type_i_error_mc_se",
        sqrt(p * (1 - p) / n), "runs", (json_int_t)o->runs, "seed", (json_int_t)o->seed, "method",
        by_scale ? "bisection over the scale of the bounds' widths (goal.scale), common random "
                   "numbers (run i seeded by (seed, i) at every scale and in every null): the "
                   "smallest scale tried whose type I error, the largest over the nulls, is at "
                   "most the target; the rule it gives is unproven"
                 : "bisection over log delta, common random numbers (run i seeded by (seed, i) "
                   "at every delta and in every null): the largest delta tried whose type I "
                   "error, the largest over the nulls, is at most the target",
        "steps", steps, "nulls", nulls);
    steps = NULL;
    /* false: even the loose end of the range keeps the type I error under
     * the target; the value found is that end, not a root. */
    if (*out != NULL)
        json_object_set_new(*out, "bracketed", json_boolean(bracketed));
    if (*out == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
fail:
    json_decref(steps);
    return rc;
}
