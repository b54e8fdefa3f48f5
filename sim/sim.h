/*
 * sim.h — the offline simulator behind bandit-sim and the statistical
 * tests: problem files (docs/contract.md, "Simulator problem file"), arms with
 * known reward distributions, and runs of the very engine the daemon serves
 * (policies/engine.h), with optional feedback delay.
 *
 * Reproducibility: run i draws from generators seeded by (seed, i) only, so
 * results are identical for a given seed whatever the thread count.
 *
 * A run: build an engine (seeded from (seed, i)), loop engine_assign(e, −1)
 * → draw the arm's reward → deliver it `delay` pulls later (FIFO), until the
 * engine stops (its rule, the budget) or a safety cap; then deliver every
 * reward still in flight and evaluate the recommendation against the true
 * means. Rewards are clipped to the problem's range and rescaled to [0, 1]
 * for the engine; ε likewise (ε / (max − min)).
 *
 * Problem files: the fields of docs/contract.md, plus two conveniences — a bare
 * number p in an arms list is {"dist": "bernoulli", "p": p}; `"arms": [...]`
 * at top level is one bandit (as in the create body) — and an optional "id"
 * string on bandits and arms (ignored). Unknown fields are errors. Defaults:
 * m 1, epsilon 0, delta 0.05, budget null, reward {min 0, max 1}, target_arm
 * null, tau null (1 − δ), bound "anytime".
 */
#ifndef BANDITD_SIM_SIM_H
#define BANDITD_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policies/engine.h"
#include "policies/stop_rule.h"

#define SIM_MAX_RUNS 10000000ULL  /* per-run pull counts are kept for quantiles */
#define SIM_MAX_DELAY 10000000ULL /* FIFO entries (16 bytes each, per thread) */
#define SIM_MAX_BLOCK 1000000ULL  /* leased pulls (24 bytes each, per thread) */
#define SIM_MAX_THREADS 256
#define SIM_SAFETY_PULLS 100000000ULL /* default absolute cap on pulls per run */
#define SIM_TRACE_MAX_PER_DECADE 100  /* --trace N: at most 100 points per decade */

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
    size_t *n_arms;        /* owned */
    struct sim_arm **arms; /* owned: arms[b][i] */
    double reward_min, reward_max;
    int target_arm; /* −1 none */
    double tau;     /* NaN: none */
    enum stats_bound bound;
    int clipped; /* some distribution can leave the reward range (draws are clipped) */
    /* goal "type": "control" (docs/stop-rules.md, `control`): each arm
     * against arm `control` (the same index in every bandit; −1: another
     * goal) by the superiority margin Δ (reward units) */
    enum engine_goal goal;
    double margin;
    double scale; /* goal.scale: the factor on the bounds' widths; 1 (or 0): proven */
    int control;
};

/* Parse a problem (borrowed JSON). 0, or −1 with a message naming the field. */
int sim_problem_parse(json_t *j, struct sim_problem *p, char *err, size_t errlen);
int sim_problem_load(const char *path, struct sim_problem *p, char *err, size_t errlen);
void sim_problem_free(struct sim_problem *p);

struct sim_run_result;

struct sim_options {
    const struct policy_ops *policy;
    struct policy_params params; /* validated, defaults filled */
    uint64_t runs;
    uint64_t seed;
    uint64_t delay; /* rewards come back this many pulls later */
    /* Assignments leased at once (0 or 1: one per visitor, as a client
     * asking for each visitor does): the policy chooses a whole block
     * before any of its rewards comes back; the visitors are served from
     * it one by one, the whole block even when the engine stopped
     * meanwhile (the client learns of the stop at its next lease). */
    uint64_t block;
    uint64_t budget;            /* overrides the problem's budget when > 0 (a cap for
                                 * fixed-confidence policies) */
    unsigned threads;           /* 0: all cores */
    enum engine_stop_rule stop; /* ENGINE_RULE_DEFAULT: the policy's default */
    int progress;               /* progress bar on stderr (when a terminal) */
    /* clinical constraints, as for an experiment */
    uint32_t burn_in;
    double min_prob;
    double control_share;      /* > 0: this share of pulls goes to arm control_arm */
    unsigned control_arm;      /* index of the control arm in every bandit (with a share) */
    uint64_t max_pulls;        /* absolute cap per run, whatever the rule; 0: SIM_SAFETY_PULLS.
                                * A run that hits it ends not stopped and is counted in
                                * sim_result.capped */
    unsigned trace_per_decade; /* 0: no trace; else checkpoints per decade of pulls (at
                                * most SIM_TRACE_MAX_PER_DECADE), see struct sim_trace */
    int keep_runs;             /* goal control: keep each run's verdicts and stop reason
                                * (sim_result.run_*: bandit-sim --per-run) */
    /* An experiment's engine configuration as its design made it
     * (exp_config_parse; borrowed): when set, every run's engine is a copy
     * of it with the run's own seed (and budget when the field above is
     * set), and the fields above that configure an engine (policy, params,
     * stop, the constraints) are not read; the problem gives the arms, the
     * truth and the goal the answer is judged by. */
    const struct engine_config *design;
    uint64_t first_run; /* the runs are indexes first_run .. first_run + runs − 1 */
    /* Called at the end of every run, in the thread that made it, with the
     * engine as the run left it (every reward delivered): what sim_oc reads
     * the final estimates from. Runs of different indexes may be reported
     * concurrently. NULL: none. */
    void (*on_end)(void *arg, uint64_t run, const struct engine *e, const struct sim_run_result *r);
    void *on_end_arg;
};

/* The state of the runs at log-spaced pull counts, averaged over runs: what
 * the papers plot against "number of pulls" (Kalyanakrishnan & Stone's δᶜ
 * and NSS, Bachman & Precup's ρ̄ and completed bandits, Chen et al.'s failure
 * probability against the budget of a budget-independent allocation).
 *
 * Checkpoints: t_k = round(10^(k/N)), k = 0, 1, ..., deduplicated, up to the
 * run's limit (the budget, else max_pulls); with a budget the budget itself is
 * the last checkpoint. A run is observed just after its t_k-th pull was
 * handed out (and any reward due then delivered); a run that ended earlier
 * contributes its final state (after its last rewards came in), so a value at
 * t is "the answer a run would give after t pulls or at its stop, whichever
 * comes first". Only checkpoints up to the longest run are reported.
 *
 * Per run and checkpoint, over the M bandits: δᶜ = 1 − Π_b (1 − δᶜ_b) (a bound
 * on some bandit being wrong), ρ̄ = min_b ρ̄_b, NSS = mean_b of the normalised
 * sum of the recommended arms' true means, (Σ sel − Σ bottom m) / (Σ top m −
 * Σ bottom m) (1 when every arm has the same mean; K&S 2010 §5), the error
 * verdicts of the final answer (error, pac, regret), completed = bandits with
 * ρ̄_b ≥ τ, completed_target = those of them whose target arm is in the true
 * top m (with a target arm only), running = the run has not ended yet.
 * Means of [0, 1] quantities are summed in 32-bit fixed point and counts as
 * integers, so a trace, like the rest of the result, does not depend on the
 * thread count. */
struct sim_trace {
    size_t n; /* checkpoints reported */
    unsigned per_decade;
    uint64_t *pulls;             /* owned, n entries, increasing */
    double *delta_c, *rho, *nss; /* owned, n entries each: means over runs */
    double *error_rate, *pac_error_rate, *regret_error_rate;
    double *completed, *completed_target; /* completed_target NULL without a target arm */
    double *running;                      /* fraction of runs not ended at the checkpoint */
};

/* The checkpoints for a limit (see struct sim_trace) into out[0..cap);
 * returns how many there are (at most cap). */
size_t sim_trace_points(unsigned per_decade, uint64_t limit, uint64_t *out, size_t cap);

/* Outcome of one run. */
struct sim_run_result {
    uint64_t pulls;      /* pulls handed out until the stop (or the cap) */
    int stopped;         /* stopped by its rule before any cap */
    int error;           /* some bandit's returned set is not the true top m */
    double bandit_error; /* fraction of bandits with a wrong set */
    int pac_error;       /* some returned arm is not (ε, m)-optimal */
    int regret_error;    /* aggregate regret > ε (Chen et al.) */
    size_t completed;    /* bandits with ρ̄ ≥ τ at the end (GCP objective) */
    size_t wrong;        /* bandits with a wrong set (bandit_error = wrong / M) */
    int capped;          /* ended by the safety cap (max_pulls), not by the engine */
    uint64_t rewarded;   /* rewards delivered to the engine: all pulls (the delay
                          * FIFO is flushed before the answer is read) */
    enum engine_stop_reason reason;
    /* Goal control: arms declared superior and futile (all bandits), and
     * whether some decision is wrong against the true means: an arm
     * declared superior with μ_i − μ_c ≤ Δ (a type I error), one declared
     * futile with μ_i − μ_c ≥ Δ. error, pac_error and regret_error are then
     * "some decision is wrong". Each arm's verdict (enum policy_verdict,
     * bandit after bandit) is left in the scratch of sim_run_in. */
    size_t superior, futile;
    int false_superior, false_futile;
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
    /* exact counts behind the rates (for binomial tests and intervals) */
    uint64_t errors, pac_errors, regret_errors, stopped, capped;
    uint64_t total_pulls;
    double sd_pulls;        /* sample standard deviation of the pulls per run */
    struct sim_trace trace; /* n = 0 and no memory unless options.trace_per_decade > 0 */
    /* Goal control (zero otherwise): runs with some arm declared superior,
     * with a false superiority (the type I error: some arm declared superior
     * whose true difference is ≤ Δ), with a false futility, and stopped for
     * superiority and for futility; per arm (bandit after bandit, owned,
     * n_verdicts entries) the runs that declared it superior and futile. */
    uint64_t any_superior, false_superior, false_futile, superiority_stops, futility_stops;
    uint64_t *arm_superior, *arm_futile;
    size_t n_verdicts;
    /* options.keep_runs (NULL otherwise; owned): run i's pulls, stop reason
     * and verdicts (n_verdicts entries from run_verdicts[i · n_verdicts]). */
    uint64_t *run_pulls;
    unsigned char *run_reason, *run_verdicts;
};

/* Free what a result owns (its trace); the result is zeroed. Safe on a zeroed
 * or trace-less result. */
void sim_result_free(struct sim_result *r);

/* One run (index i of the seed's sequence). 0, or −1 with a message. */
int sim_run_one(const struct sim_problem *p, const struct sim_options *o, uint64_t i,
                struct sim_run_result *out, char *err, size_t errlen);

/* All runs, over threads. 0, or −1 with a message. On success the result may
 * own a trace: release it with sim_result_free. */
int sim_run(const struct sim_problem *p, const struct sim_options *o, struct sim_result *out,
            char *err, size_t errlen);

/* The result as the JSON object bandit-sim prints (new reference): the
 * contract's keys, then 95% Wilson intervals of the error rates and the
 * settings that produced it, and "trace" (an object of parallel arrays) when
 * the result has one. */
json_t *sim_result_json(const struct sim_problem *p, const struct sim_options *o,
                        const struct sim_result *r);

/* Sort pulls[0..n) and give their median and 90th percentile as sim_run
 * reports them (linear interpolation between order statistics). */
void sim_pull_quantiles(uint64_t *pulls, uint64_t n, double *median, double *p90);

/* Sample-size planning (plan.c; POST /v1/plan): for an experiment's engine
 * configuration ec (its budget, stop rule and constraints as created) and
 * a guess of the means of each bandit's arms (means[b][i], in the reward
 * range [lo, hi]), the lower bound Σ_b T*(μ_b) kl(δ, 1 − δ) (Garivier &
 * Kaufmann 2016; tas_lower_bound) and `runs` simulated runs of the engine
 * seeded by `seed`, rewards Bernoulli on {lo, hi}. The work is bounded:
 * each run ends at a cap (max_pulls in the answer), and runs are made in
 * their order (run i seeded by (seed, i)) until `runs` are done or about
 * PLAN_SECONDS of computing passed, so the figures are those of the first
 * n runs of the seed's sequence (the same n gives the same figures). New
 * JSON object, or NULL with a message in err. */
json_t *sim_plan_json(const struct engine_config *ec, double lo, double hi,
                      const double *const *means, uint64_t runs, uint64_t seed, char *err,
                      size_t errlen);

/* True mean of an arm after clipping to [lo, hi] (exact, see arms.c), and
 * whether a draw can fall outside that range. */
double sim_arm_clipped_mean(const struct sim_arm *a, double lo, double hi);
int sim_arm_can_clip(const struct sim_arm *a, double lo, double hi);

/* The verdicts on a returned set high[] (1 = returned) in bandit b against
 * the true (clipped) means: *wrong unless it is exactly the true top m (with
 * ties, any set achieving the top-m values); *pac_wrong if some returned arm
 * has μ < μ_(m) − ε; *regret_wrong if (1/m)(Σ top m − Σ returned) > ε (Chen et
 * al. 2017). A set without exactly m arms is wrong on all three counts. */
void sim_evaluate_set(const struct sim_problem *p, size_t b, const unsigned char *high, int *wrong,
                      int *pac_wrong, int *regret_wrong);

/* Wilson score interval for k successes in n trials at normal quantile z
 * (1.96 for 95%); [0, 1] when n = 0. */
void sim_wilson(uint64_t k, uint64_t n, double z, double *lo, double *hi);

#endif
