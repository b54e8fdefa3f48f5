/*
 * plan.c — sample-size planning (sim.h, sim_plan_json): the pulls an
 * experiment can expect to need on a stated guess of its arms' means, two
 * ways. The lower bound T*(μ)·kl(δ, 1 − δ) of Garivier & Kaufmann (2016)
 * per bandit, computed by the policies' own tas_lower_bound (the function
 * track-and-stop and scripts/tstar use), and a quick simulation of the very
 * engine the daemon serves (sim_run) with a fixed seed.
 *
 * Rewards are simulated as Bernoulli draws on the ends of the reward range
 * with the guessed means: the largest variance a bounded reward can have,
 * so the plan errs on the side of more pulls for rewards of smaller
 * variance. The bound is the Bernoulli one for the same reason.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "policies/tas.h"
#include "sim/sim.h"

/* The per-run cap of a simulation without a budget (twenty times the
 * bound, at least PLAN_MIN_CAP; PLAN_NO_BOUND_CAP without a bound: a tie
 * never stops, its runs end at the cap and are counted as capped), and the
 * computing time after which no further run starts: a plan answers in a
 * few seconds at most whatever the guess. */
#define PLAN_MIN_CAP 2000ULL
#define PLAN_NO_BOUND_CAP 20000ULL
#define PLAN_SECONDS 2.0

/* Σ_b T*(μ_b) kl(δ, 1 − δ) and the per-bandit terms into arr; NaN when the
 * bound does not apply (m > 1), +inf when some bandit's best mean is tied. */
static double lower_bound(const struct engine_config *ec, double lo, double hi,
                          const double *const *means, json_t *arr)
{
    if (ec->m != 1)
        return NAN;
    double total = 0;
    double mu[ENGINE_MAX_ARMS], w[ENGINE_MAX_ARMS];
    for (size_t b = 0; b < ec->n_bandits; b++) {
        size_t k = ec->n_arms[b];
        for (size_t i = 0; i < k; i++)
            mu[i] = (means[b][i] - lo) / (hi - lo);
        double lb = tas_lower_bound(mu, k, ec->delta, w);
        double ts = tas_optimal_weights(mu, k, w);
        json_array_append_new(arr, json_pack("{s:o,s:o}", "tstar",
                                             isfinite(ts) ? json_real(ts) : json_null(), "pulls",
                                             isfinite(lb) ? json_real(lb) : json_null()));
        total += lb;
    }
    return total;
}

json_t *sim_plan_json(const struct engine_config *ec, double lo, double hi,
                      const double *const *means, uint64_t runs, uint64_t seed, char *err,
                      size_t errlen)
{
    json_t *out = NULL, *bandits = json_array();
    struct sim_problem p;
    memset(&p, 0, sizeof p);
    uint64_t *pulls = NULL;
    if (bandits == NULL)
        goto nomem;
    double lb = lower_bound(ec, lo, hi, means, bandits);
    int vs_control = ec->goal == ENGINE_GOAL_CONTROL;
    if (vs_control)
        lb = NAN; /* a best-arm bound: not what a comparison with control needs */

    p.m = ec->m;
    p.epsilon = ec->epsilon; /* [0, 1] units, as the problem's range */
    p.delta = ec->delta;
    p.budget = ec->budget;
    p.n_bandits = ec->n_bandits;
    p.reward_min = 0;
    p.reward_max = 1;
    p.target_arm = ec->target_arm;
    p.tau = ec->tau == 0 ? NAN : ec->tau;
    p.bound = ec->bound;
    p.goal = ec->goal;
    p.margin = ec->margin; /* [0, 1] units, as the problem's range */
    p.scale = ec->scale;
    p.control = vs_control && ec->control_arm != NULL ? ec->control_arm[0] : -1;
    p.n_arms = calloc(p.n_bandits, sizeof *p.n_arms);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, one per bandit
    p.arms = calloc(p.n_bandits, sizeof *p.arms);
    if (p.n_arms == NULL || p.arms == NULL)
        goto nomem;
    for (size_t b = 0; b < p.n_bandits; b++) {
        p.n_arms[b] = ec->n_arms[b];
        p.arms[b] = calloc(p.n_arms[b], sizeof *p.arms[b]);
        if (p.arms[b] == NULL)
            goto nomem;
        for (size_t i = 0; i < p.n_arms[b]; i++) {
            double q = (means[b][i] - lo) / (hi - lo);
            p.arms[b][i].dist = SIM_BERNOULLI;
            p.arms[b][i].p1 = q;
            p.arms[b][i].mean = q;
        }
    }

    struct sim_options o;
    memset(&o, 0, sizeof o);
    o.policy = ec->policy;
    o.params = ec->params;
    o.seed = seed;
    o.threads = 1; /* a request's share of the machine */
    o.stop = ec->stop_rule;
    o.burn_in = ec->burn_in;
    o.min_prob = ec->min_prob;
    if (ec->control_share > 0 && ec->control_arm != NULL && ec->control_arm[0] >= 0) {
        o.control_share = ec->control_share;
        o.control_arm = (unsigned)ec->control_arm[0];
    }
    uint64_t cap = ec->budget > 0 ? ec->budget
                   : isfinite(lb) ? (uint64_t)fmax((double)PLAN_MIN_CAP, 20 * lb)
                                  : PLAN_NO_BOUND_CAP;
    o.runs = runs;
    o.max_pulls = cap;
    pulls = calloc(runs, sizeof *pulls);
    if (pulls == NULL)
        goto nomem;
    uint64_t n = 0, errors = 0, stopped = 0, capped = 0;
    double sum = 0;
    uint64_t t0 = clock_mono_ns();
    while (n < runs && (n == 0 || (double)(clock_mono_ns() - t0) / 1e9 < PLAN_SECONDS)) {
        struct sim_run_result rr;
        if (sim_run_one(&p, &o, n, &rr, err, errlen) != 0)
            goto out;
        pulls[n++] = rr.pulls;
        sum += (double)rr.pulls;
        errors += rr.error != 0;
        stopped += rr.stopped != 0;
        capped += rr.capped != 0;
    }
    double median, p90;
    sim_pull_quantiles(pulls, n, &median, &p90);
    json_t *sim = json_pack(
        "{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:s}", "runs", (json_int_t)n, "runs_asked",
        (json_int_t)runs, "seed", (json_int_t)seed, "max_pulls", (json_int_t)cap, "mean_pulls",
        sum / (double)n, "median_pulls", median, "p90_pulls", p90, "error_rate",
        (double)errors / (double)n, "stopped_rate", (double)stopped / (double)n, "capped",
        (json_int_t)capped, "rewards", "bernoulli on the ends of the reward range");
    json_t *bound =
        json_pack("{s:o,s:O,s:s}", "pulls", isfinite(lb) ? json_real(lb) : json_null(), "bandits",
                  bandits, "formula", "T*(mu) kl(delta, 1 - delta), Bernoulli arms, m = 1");
    if (vs_control)
        json_object_set_new(bound, "note",
                            json_string("a best-arm bound: none for comparisons with control"));
    else if (isnan(lb))
        json_object_set_new(bound, "note", json_string("defined for the best arm (m = 1) only"));
    else if (!isfinite(lb))
        json_object_set_new(bound, "note",
                            json_string("a tie for the best mean: no sample size identifies it"));
    else if (ec->epsilon > 0)
        json_object_set_new(bound, "note",
                            json_string("for epsilon = 0: an epsilon-good answer may need fewer"));
    out = json_pack("{s:o,s:o}", "lower_bound", bound, "simulation", sim);
    if (out == NULL)
        goto nomem;
    goto out;
nomem:
    snprintf(err, errlen, "out of memory");
out:
    json_decref(bandits);
    free(pulls);
    sim_problem_free(&p);
    return out;
}
