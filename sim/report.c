/*
 * report.c — the result as JSON (sim_result_json): rates with their Wilson
 * intervals, pull quantiles, the options that produced them, the trace.
 */
#include "sim/internal.h"

#include <math.h>

#include "policies/describe.h"

void sim_wilson(uint64_t k, uint64_t n, double z, double *lo, double *hi)
{
    if (n == 0) {
        *lo = 0.0;
        *hi = 1.0;
        return;
    }
    double nn = (double)n, ph = (double)k / nn, z2 = z * z;
    double centre = (ph + z2 / (2.0 * nn)) / (1.0 + z2 / nn);
    double half = z / (1.0 + z2 / nn) * sqrt(ph * (1.0 - ph) / nn + z2 / (4.0 * nn * nn));
    *lo = centre - half < 0.0 || k == 0 ? 0.0 : centre - half;
    *hi = centre + half > 1.0 || k == n ? 1.0 : centre + half;
}

/* The 95% Wilson interval as [lo, hi] (new reference). */
static json_t *ci_json(uint64_t k, uint64_t n)
{
    double lo, hi;
    sim_wilson(k, n, SIM_Z95, &lo, &hi);
    return json_pack("[f, f]", lo, hi);
}

static json_t *doubles_json(const double *x, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++)
        json_array_append_new(a, json_real(x[i]));
    return a;
}

/* The trace as parallel arrays (new reference). */
static json_t *trace_json(const struct sim_trace *t)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_t *pulls = json_array();
    for (size_t i = 0; pulls != NULL && i < t->n; i++)
        json_array_append_new(pulls, json_integer((json_int_t)t->pulls[i]));
    json_object_set_new(o, "per_decade", json_integer((json_int_t)t->per_decade));
    json_object_set_new(o, "pulls", pulls);
    json_object_set_new(o, "delta_c", doubles_json(t->delta_c, t->n));
    json_object_set_new(o, "rho", doubles_json(t->rho, t->n));
    json_object_set_new(o, "nss", doubles_json(t->nss, t->n));
    json_object_set_new(o, "error_rate", doubles_json(t->error_rate, t->n));
    json_object_set_new(o, "pac_error_rate", doubles_json(t->pac_error_rate, t->n));
    json_object_set_new(o, "regret_error_rate", doubles_json(t->regret_error_rate, t->n));
    json_object_set_new(o, "completed", doubles_json(t->completed, t->n));
    if (t->completed_target != NULL)
        json_object_set_new(o, "completed_target", doubles_json(t->completed_target, t->n));
    json_object_set_new(o, "running", doubles_json(t->running, t->n));
    return o;
}

/* Goal control: the rates of each decision with their Wilson intervals
 * (type_i_error: some arm declared superior whose true difference is ≤ Δ),
 * and per arm its true difference and how often it was declared superior
 * (its power when the difference exceeds Δ) or futile. New reference. */
static json_t *vs_control_json(const struct sim_problem *p, const struct sim_result *r)
{
    double n = r->runs > 0 ? (double)r->runs : 1.0;
    json_t *arms = json_array();
    size_t off = 0;
    for (size_t b = 0; arms != NULL && b < p->n_bandits; b++)
        for (size_t i = 0; i < p->n_arms[b]; i++, off++) {
            if ((int)i == p->control || off >= r->n_verdicts)
                continue;
            json_array_append_new(
                arms, json_pack("{s:I,s:I,s:f,s:f,s:o,s:f,s:o}", "bandit", (json_int_t)b, "arm",
                                (json_int_t)i, "difference",
                                p->arms[b][i].mean - p->arms[b][p->control].mean, "superior_rate",
                                (double)r->arm_superior[off] / n, "superior_rate_ci",
                                ci_json(r->arm_superior[off], r->runs), "futile_rate",
                                (double)r->arm_futile[off] / n, "futile_rate_ci",
                                ci_json(r->arm_futile[off], r->runs)));
        }
    return json_pack(
        "{s:I,s:f,s:f,s:o,s:I,s:f,s:o,s:f,s:f,s:f,s:o}", "control", (json_int_t)p->control,
        "margin", p->margin, "type_i_error", (double)r->false_superior / n, "type_i_error_ci",
        ci_json(r->false_superior, r->runs), "false_superior_runs", (json_int_t)r->false_superior,
        "false_futility_rate", (double)r->false_futile / n, "false_futility_rate_ci",
        ci_json(r->false_futile, r->runs), "any_superior_rate", (double)r->any_superior / n,
        "superiority_rate", (double)r->superiority_stops / n, "futility_rate",
        (double)r->futility_stops / n, "arms", arms);
}

json_t *sim_result_json(const struct sim_problem *p, const struct sim_options *o,
                        const struct sim_result *r)
{
    uint64_t budget = sim_effective_budget(p, o);
    double pps = r->wall_s > 0.0 ? (double)r->total_pulls / r->wall_s : 0.0;
    json_t *j = json_object();
    if (j == NULL)
        return NULL;
    json_object_set_new(j, "runs", json_integer((json_int_t)r->runs));
    json_object_set_new(j, "policy", json_string(o->policy->name));
    json_object_set_new(j, "params", describe_params(o->policy, &o->params));
    json_object_set_new(j, "error_rate", json_real(r->error_rate));
    json_object_set_new(j, "mean_bandit_error_rate", json_real(r->mean_bandit_error_rate));
    json_object_set_new(j, "pac_error_rate", json_real(r->pac_error_rate));
    json_object_set_new(j, "regret_error_rate", json_real(r->regret_error_rate));
    json_object_set_new(j, "mean_pulls", json_real(r->mean_pulls));
    json_object_set_new(j, "median_pulls", json_real(r->median_pulls));
    json_object_set_new(j, "p90_pulls", json_real(r->p90_pulls));
    json_object_set_new(j, "mean_completed", json_real(r->mean_completed));
    json_object_set_new(j, "wall_s", json_real(r->wall_s));
    /* extras */
    json_object_set_new(j, "error_rate_ci", ci_json(r->errors, r->runs));
    json_object_set_new(j, "pac_error_rate_ci", ci_json(r->pac_errors, r->runs));
    json_object_set_new(j, "regret_error_rate_ci", ci_json(r->regret_errors, r->runs));
    json_object_set_new(j, "errors", json_integer((json_int_t)r->errors));
    json_object_set_new(j, "sd_pulls", json_real(r->sd_pulls));
    json_object_set_new(j, "mean_pulls_se",
                        json_real(r->runs > 0 ? r->sd_pulls / sqrt((double)r->runs) : 0.0));
    json_object_set_new(j, "stopped_rate", json_real(r->stopped_rate));
    json_object_set_new(j, "capped_runs", json_integer((json_int_t)r->capped));
    json_object_set_new(j, "pulls_per_s", json_real(pps));
    json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(j, "delay", json_integer((json_int_t)o->delay));
    /* only when set: the output of a run without blocks is as it was */
    if (o->block > 1)
        json_object_set_new(j, "block", json_integer((json_int_t)o->block));
    json_object_set_new(j, "stop", json_string(stop_rule_name(o->stop)));
    json_object_set_new(j, "bound", json_string(stop_rule_bound_name(p->bound)));
    json_object_set_new(j, "budget", budget > 0 ? json_integer((json_int_t)budget) : json_null());
    json_object_set_new(j, "m", json_integer((json_int_t)p->m));
    json_object_set_new(j, "epsilon", json_real(p->epsilon));
    json_object_set_new(j, "delta", json_real(p->delta));
    json_object_set_new(j, "tau", isnan(p->tau) ? json_real(1.0 - p->delta) : json_real(p->tau));
    json_object_set_new(j, "bandits", json_integer((json_int_t)p->n_bandits));
    json_object_set_new(j, "clipped", json_boolean(p->clipped));
    if (o->burn_in > 0)
        json_object_set_new(j, "burn_in", json_integer((json_int_t)o->burn_in));
    if (o->min_prob > 0)
        json_object_set_new(j, "min_prob", json_real(o->min_prob));
    if (o->control_share > 0) {
        json_object_set_new(j, "control_arm", json_integer((json_int_t)o->control_arm));
        json_object_set_new(j, "control_share", json_real(o->control_share));
    }
    if (p->goal == ENGINE_GOAL_CONTROL)
        json_object_set_new(j, "vs_control", vs_control_json(p, r));
    if (r->trace.n > 0)
        json_object_set_new(j, "trace", trace_json(&r->trace));
    return j;
}
