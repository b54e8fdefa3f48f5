/*
 * internal.h — what the simulator's files share and nobody else sees:
 * clipping and drawing rewards, the ground truth a run is judged against,
 * the per-thread scratch with its trace sums, and one run. The files:
 *
 *   arms.c     reward distributions: draws, clipped means
 *   problem.c  problem files (sim_problem_parse, _load, _free)
 *   truth.c    the true top m of each bandit and the verdict on an answer
 *   run.c      one run of the engine with delayed feedback, its trace
 *   batch.c    many runs over threads, summed order-independently (sim_run)
 *   report.c   the result as JSON (sim_result_json, Wilson intervals)
 *   oc.c, oc_md.c   operating characteristics (oc.h)
 */
#ifndef BANDITD_SIM_INTERNAL_H
#define BANDITD_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "sim/sim.h"

static inline double sim_clip(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* The normal quantile of a two-sided 95% interval. */
#define SIM_Z95 1.959963984540054

/* --- arms.c ------------------------------------------------------------- */

/* One draw in reward units, before clipping. gsl_ran_gaussian_ziggurat is
 * GSL's fast normal sampler (same distribution as gsl_ran_gaussian). */
double sim_arm_draw(const struct sim_arm *a, const gsl_rng *r);

/* --- truth.c ------------------------------------------------------------ */

/* Per bandit: μ_(m), how many arms lie strictly above it, Σ of the top m and
 * of the bottom m true means (reward units; the trace's NSS), and whether the
 * target arm is in the true top m. Built once per simulation, read by every
 * run. */
struct sim_truth {
    double *mu_m;
    size_t *above;
    double *top_sum;
    double *bottom_sum;
    unsigned char *target_top;
};

/* Build t for p: 0, or −1 out of memory (nothing left allocated). */
int sim_truth_build(const struct sim_problem *p, struct sim_truth *t);
void sim_truth_free(struct sim_truth *t);
/* Is the returned set of bandit b right? Exactly the true top m, where with
 * ties any set achieving the top-m values counts: m arms, none below μ_(m),
 * and all of the arms strictly above μ_(m). Also its (ε, m) and regret
 * verdicts (Chen et al. 2017: (1/m)(Σ top m − Σ chosen) ≤ ε). */
void sim_judge(const struct sim_problem *p, const struct sim_truth *t, size_t b,
               const unsigned char *high, int *wrong, int *pac_wrong, int *regret_wrong);

/* --- batch.c ------------------------------------------------------------ */

/* qsort's order of uint64_t. */
int sim_cmp_u64(const void *a, const void *b);
/* Quantile q of sorted x[0..n), n ≥ 1, with linear interpolation between
 * order statistics (Hyndman & Fan type 7, numpy's default): the median of
 * an even count is the mean of the two middle values. */
double sim_quantile(const uint64_t *x, uint64_t n, double q);

/* --- run.c -------------------------------------------------------------- */

/* Goal control: arm i of bandit b against the control by the margin, from
 * the true means: 1 superior (μ_i − μ_c > Δ), −1 futile (< Δ), 0 at Δ. A
 * difference within 1e-12 of Δ counts as Δ: a boundary case written
 * 0.6 − 0.5 is exactly at Δ = 0.1. */
int sim_vs_control_truth(const struct sim_problem *p, size_t b, size_t i);

struct sim_pending {
    uint32_t bandit, arm;
    double r; /* rescaled to [0, 1] */
};

/* Trace sums over runs, per checkpoint (struct sim_trace): the [0, 1]
 * quantities in 32-bit fixed point, the verdicts and counts as integers, so
 * that adding the threads' sums in any order gives the same result. At most
 * 10^7 runs × 2^32 < 2^63. */
#define TRACE_FX 4294967296.0
#define TRACE_MAX_POINTS (20 * SIM_TRACE_MAX_PER_DECADE + 2)
enum { TRF_DC, TRF_RHO, TRF_NSS, TRF_N };
enum { TRC_ERR, TRC_PAC, TRC_REG, TRC_DONE, TRC_TARGET, TRC_RUN, TRC_N };

struct sim_trace_acc {
    size_t n;            /* checkpoints; 0: no trace */
    const uint64_t *pts; /* borrowed, n entries */
    uint64_t *fx;        /* owned, TRF_N × n */
    uint64_t *ct;        /* owned, TRC_N × n */
    uint64_t longest;    /* most pulls handed out by one run */
};

/* Per-thread scratch, reused from run to run: the draw generator, the delay
 * FIFO (a ring of delay + 1 entries), the evaluation's high[] and the
 * thread's trace sums. */
struct sim_scratch {
    gsl_rng *rng;
    struct sim_pending *fifo;
    size_t cap, head, len;
    struct engine_pull *blk; /* the leased block (--block > 1) */
    size_t bcap, bpos, blen;
    unsigned char *high;
    unsigned char *verdicts; /* goal control: the last run's verdicts (sim_run_result) */
    struct sim_trace_acc tr;
};

void sim_scratch_free(struct sim_scratch *s);
/* npts checkpoints pts (borrowed; npts = 0: no trace). */
int sim_scratch_init(struct sim_scratch *s, const struct sim_problem *p, uint64_t delay,
                     uint64_t block, const uint64_t *pts, size_t npts);
uint64_t sim_effective_budget(const struct sim_problem *p, const struct sim_options *o);
/* The per-thread sizes a run allocates (delay FIFO, leased block) within
 * their caps: 0, or −1 with the option named in err. */
int sim_check_run_sizes(const struct sim_options *o, char *err, size_t errlen);
/* ctl: room for ENGINE_MAX_BANDITS control arm indexes (the engine copies
 * them). */
void sim_engine_cfg(const struct sim_problem *p, const struct sim_options *o, uint64_t seed,
                    struct engine_config *c, int *ctl);
/* Run i of the simulation into out, with s's scratch: 0, or −1 with err
 * (the engine refused the configuration). */
int sim_run_in(const struct sim_problem *p, const struct sim_options *o, const struct sim_truth *t,
               struct sim_scratch *s, uint64_t i, struct sim_run_result *out, char *err,
               size_t errlen);

#endif
