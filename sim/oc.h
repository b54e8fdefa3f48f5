/*
 * oc.h — operating characteristics of an experiment's design, measured by
 * the engine that will randomise (docs/simulator.md, "Operating
 * characteristics"). Given a design (the engine configuration
 * exp_config_parse makes of a create body) and scenarios (true reward
 * distributions per arm: the null, where no arm is better, and the
 * alternatives the user gives), runs the design many times on each and
 * reports per scenario: type I error or power (as the goal defines them),
 * the sample size (mean, quantiles), the probability of each stop reason,
 * the bias and the coverage of the final per-arm estimates, each with its
 * Monte Carlo standard error; plus the seed, the runs, the design's hash
 * and the software version. Calibration finds the δ that holds the type I
 * error at a target under the least favourable null scenario (as adaptr's
 * calibrate_trial).
 *
 * Goals: what "a claim", "type I error" and "power" mean depends on the
 * goal (struct oc_goal in oc.c, one row per goal): best arm / top m today.
 *
 * Reproducibility: run i of a scenario is seeded by (seed, i) only, the
 * same i in every scenario and at every δ (common random numbers), so the
 * figures do not depend on the thread count, and calibration compares δs
 * on the same draws.
 */
#ifndef BANDITD_SIM_OC_H
#define BANDITD_SIM_OC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policies/engine.h"

#define SIM_OC_MAX_SCENARIOS 32
#define SIM_OC_MAX_RUNS 1000000ULL
#define SIM_OC_MAX_CELLS 50000000ULL      /* runs × arms kept for one scenario */
#define SIM_OC_DEFAULT_MAX_PULLS 10000ULL /* a run's cap without a budget */
/* Calibration's default search ranges (δ over log δ; goal.scale, 1 proven). */
#define SIM_OC_DELTA_LO 1e-6
#define SIM_OC_DELTA_HI 0.5
#define SIM_OC_SCALE_LO 0.05
#define SIM_OC_SCALE_HI 1.0

/* The design as an experiment has it. Everything borrowed. */
struct sim_oc_design {
    const struct engine_config *engine; /* exp_config's engine (n_arms, control arms inside) */
    double reward_min, reward_max;
    const char *const *bandit_ids;  /* n_bandits names */
    const char *const *const *arms; /* arms[b][i]: the arms' names */
    const char *hash;               /* the design's SHA-256 (exp/design.c); NULL: none */
    const char *experiment;         /* the stored experiment's id; NULL: a design file */
    const char *name;               /* the experiment's name; NULL: none */
};

struct sim_oc_options {
    uint64_t runs; /* per scenario, 1 .. SIM_OC_MAX_RUNS */
    uint64_t seed;
    unsigned threads;   /* 0: all cores */
    uint64_t max_pulls; /* per run, without a budget; 0: SIM_OC_DEFAULT_MAX_PULLS */
    /* > 0: no further batch of runs starts once this much computing time
     * has passed (the endpoint); the figures are then those of the first
     * runs of each scenario, whole batches of SIM_OC_BATCH. */
    double seconds;
    int progress; /* a progress bar on a terminal */
};

struct sim_oc_scenarios;

/* Parse scenarios against the design: {"scenarios": [...]} or the array
 * itself; each {"name": "...", "arms": [...]} or {"name", "bandits":
 * [{"arms": [...]}, ...]}, arms as in a simulator problem file (a bare
 * number is a Bernoulli p; distributions in reward units). 0 and *out
 * (free with sim_oc_scenarios_free), or −1 with a message naming the field
 * ("scenarios[1].arms[2].sd: must be positive"). j borrowed. */
int sim_oc_scenarios_parse(json_t *j, const struct sim_oc_design *d, struct sim_oc_scenarios **out,
                           char *err, size_t errlen);
void sim_oc_scenarios_free(struct sim_oc_scenarios *s);
size_t sim_oc_scenarios_count(const struct sim_oc_scenarios *s);
/* The index of the first null scenario (as the design's goal defines a
 * null), or −1. */
int sim_oc_scenarios_null(const struct sim_oc_design *d, const struct sim_oc_scenarios *s);

/* Every scenario: the report as a new JSON object (docs/simulator.md), or
 * NULL with a message (the engine refused the design, out of memory). */
json_t *sim_oc_run(const struct sim_oc_design *d, const struct sim_oc_scenarios *s,
                   const struct sim_oc_options *o, char *err, size_t errlen);

/* The goal member calibration sets for design c: "delta", or "scale" for
 * goal control (whose proven rule spends far less than δ: docs/stop-rules.md,
 * `control`; a scale below 1 is unproven). Static string. */
const char *sim_oc_calibrated(const struct engine_config *c);

/* Calibration of that member, with common random numbers (`iterations`
 * bisection steps) on scenario `scenario` (a null), or with −1 on every
 * null scenario at each step, the type I error being the largest over
 * them (the least favourable null binds): the largest δ in [lo, hi]
 * (over log δ) or the smallest scale in [lo, hi] (hi ≤ 1, linear) whose
 * type I error is at most `target`. 0 with *value and the calibration as
 * a new JSON object in *out (the parameter's name and value, the binding
 * null, its type I error with its MC SE, each null's, every step); 1 with
 * a message starting "calibrate: " when the calibration is refused (no
 * null; a target or range out of bounds; the error exceeds the target
 * even at the strict end; the design's type I error does not depend on
 * the parameter; o->seconds > 0 and the calibration took longer: every
 * step runs all o->runs, so a cut one would break common random numbers);
 * −1 with a message when the options are bad or the engine or memory
 * failed, as sim_oc_run fails. */
int sim_oc_calibrate(const struct sim_oc_design *d, const struct sim_oc_scenarios *s, int scenario,
                     const struct sim_oc_options *o, double target, double lo, double hi,
                     unsigned iterations, double *value, json_t **out, char *err, size_t errlen);

/* The report (sim_oc_run's JSON, borrowed) as Markdown a statistician can
 * attach to a protocol: provenance, definitions, the headline table, per
 * scenario the stop reasons, the per-arm estimates and a histogram of the
 * sample size, and the MC SE formulas. New string (free), or NULL. */
char *sim_oc_markdown(const json_t *report);

/* The sample size of every scenario as one SVG figure (a histogram per
 * scenario on a common axis, the mean and the 5% and 95% quantiles
 * marked). New string (free), or NULL. When the report has a string
 * "figure", sim_oc_markdown links it under the headline. */
char *sim_oc_svg(const json_t *report);

#endif
