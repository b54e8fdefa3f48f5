/*
 * sim.h — the offline simulator behind bandit-sim and the statistical
 * tests: problem files (CONTRACT.md, "Simulator problem file"), arms with
 * known reward distributions, and runs of the very engine the daemon serves
 * (policies/engine.h), with optional feedback delay.
 *
 * Reproducibility: run i draws from generators seeded by (seed, i) only, so
 * results are identical for a given seed whatever the thread count.
 */
#ifndef BANDITD_SIM_SIM_H
#define BANDITD_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policies/engine.h"

enum sim_dist { SIM_BERNOULLI, SIM_RADEMACHER, SIM_UNIFORM, SIM_GAUSSIAN, SIM_BETA };

struct sim_arm {
    enum sim_dist dist;
    double p1, p2; /* bernoulli p; rademacher x, y; uniform low, high; gaussian mean, sd;
                    * beta a, b */
    double mean;   /* true mean in reward units, after clipping to the reward range */
};

struct sim_problem {
    unsigned m;
    double epsilon; /* reward units */
    double delta;
    uint64_t budget; /* 0: none */
    size_t n_bandits;
    size_t *n_arms;         /* owned */
    struct sim_arm **arms;  /* owned: arms[b][i] */
    double reward_min, reward_max;
    int target_arm; /* −1 none */
    double tau;     /* NaN: none */
    enum stats_bound bound;
    int clipped; /* some distribution can leave the reward range (draws are clipped) */
};

/* Parse a problem (borrowed JSON). 0, or −1 with a message naming the field. */
int sim_problem_parse(json_t *j, struct sim_problem *p, char *err, size_t errlen);
int sim_problem_load(const char *path, struct sim_problem *p, char *err, size_t errlen);
void sim_problem_free(struct sim_problem *p);

struct sim_options {
    const struct policy_ops *policy;
    struct policy_params params; /* validated, defaults filled */
    uint64_t runs;
    uint64_t seed;
    uint64_t delay;  /* rewards come back this many pulls later */
    uint64_t budget; /* overrides the problem's budget when > 0 (a cap for
                      * fixed-confidence policies) */
    unsigned threads; /* 0: all cores */
    enum engine_stop_rule stop; /* ENGINE_RULE_DEFAULT: the policy's own */
    int progress;     /* progress bar on stderr (when a terminal) */
    /* clinical constraints, as for an experiment */
    uint32_t burn_in;
    double min_prob;
};

/* Outcome of one run. */
struct sim_run_result {
    uint64_t pulls;      /* pulls handed out until the stop (or the cap) */
    int stopped;         /* stopped by its rule before any cap */
    int error;           /* some bandit's returned set is not the true top m */
    double bandit_error; /* fraction of bandits with a wrong set */
    int pac_error;       /* some returned arm is not (ε, m)-optimal */
    int regret_error;    /* aggregate regret > ε (Chen et al.) */
    size_t completed;    /* bandits with ρ̄ ≥ τ at the end (GCP objective) */
};

struct sim_result {
    uint64_t runs;
    double error_rate;
    double mean_bandit_error_rate;
    double pac_error_rate;
    double regret_error_rate;
    double mean_pulls, median_pulls, p90_pulls;
    double mean_completed;
    double stopped_rate; /* runs stopped by their rule before the cap */
    double wall_s;
};

/* One run (index i of the seed's sequence). 0, or −1 with a message. */
int sim_run_one(const struct sim_problem *p, const struct sim_options *o, uint64_t i,
                struct sim_run_result *out, char *err, size_t errlen);

/* All runs, over threads. 0, or −1 with a message. */
int sim_run(const struct sim_problem *p, const struct sim_options *o, struct sim_result *out,
            char *err, size_t errlen);

/* The result as the JSON object bandit-sim prints (new reference). */
json_t *sim_result_json(const struct sim_problem *p, const struct sim_options *o,
                        const struct sim_result *r);

#endif
