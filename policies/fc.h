/*
 * fc.h — helpers shared by the fixed-confidence policies (direct,
 * incremental, halving, adaptive-topk, lucb1, kl-lucb, ttts,
 * track-and-stop): phase bookkeeping for the elimination policies, the GLR
 * stop of the best-arm sampling rules, and the interim recommendation a
 * policy gives before it has finished. Orderings and tie-break ranks are
 * order.h's.
 *
 * Phases under asynchrony (docs/policy-formulas.md, "Serving policies over HTTP"). A
 * phase asks every active arm for `quota` fresh rewarded samples. Each arm
 * keeps two accumulators: the current phase's samples and a carry. A reward
 * for an active arm goes to the phase until the arm has its quota, then to
 * the carry; the phase ends when every active arm has its quota, and the
 * carry becomes the next phase's first samples (arms that leave the active
 * set lose theirs). Pulls are handed out while n_phase + pending < quota
 * (each quota pull once; an expired pull reopens its slot); once every quota
 * pull is out, a phase that is not the last keeps answering round-robin from
 * the active arms (those samples land in the carry), and the last phase
 * answers POLICY_DONE.
 *
 * Why the split keeps the papers' guarantees: which rewards land in a phase
 * is decided by their arrival order, never by their values, so a phase's
 * samples are fresh and independent of every earlier decision, as Median
 * Elimination, HALVING and ADAPTIVETOPK assume. A phase may hold more than
 * its quota (a carry larger than the next quota): more samples, a count that
 * still does not depend on the values, so the Hoeffding steps still hold.
 *
 * phases.h is the fixed-budget counterpart (cumulative targets on the
 * engine's counts); it says why the two stay separate.
 *
 * None of these functions allocate except the *_init ones.
 */
#ifndef BANDITD_POLICIES_FC_H
#define BANDITD_POLICIES_FC_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "policies/policy.h"
#include "policies/stats.h"

/* Most pulls a phase schedule may ask for (per arm and phase, or in total
 * when it is known in advance): far beyond any experiment, and small enough
 * that every count stays exact in a double and a uint64. */
#define FC_MAX_PULLS 1e15

struct fc_phases {
    size_t k;
    uint64_t quota;        /* rewarded samples each active arm needs */
    int last;              /* the last phase: POLICY_DONE once its quota is out */
    size_t n_active;       /* arms in the phase */
    size_t n_full;         /* active arms that have their quota */
    unsigned char *active; /* k entries */
    uint64_t *cnt;         /* per arm: samples of this phase */
    double *sum;
    uint64_t *ccnt; /* per arm: carry (samples beyond the quota) */
    double *csum;
    /* select()'s round-robin: the phase's arms in a random order (drawn at
     * fc_phases_begin: ties between equally served arms go by it), a
     * cursor, and the load level being served, for quota pulls and for the
     * pulls answered while the phase waits. Amortised O(1) per pull. */
    size_t *perm;
    size_t n_perm, cursor;
    uint64_t qlvl, xlvl;
};

/* Allocate for k arms, none active. 0, or −1 (out of memory; p is then
 * safe to free). */
int fc_phases_init(struct fc_phases *p, size_t k);
void fc_phases_free(struct fc_phases *p);
/* Save or load p's mutable part (base/ser.h; a snapshot, policy.h's snap). */
void fc_phases_snap(struct fc_phases *p, struct ser *s);

/* Make arm i active (accumulators empty) or inactive (accumulators dropped). */
void fc_phases_activate(struct fc_phases *p, size_t i);
void fc_phases_deactivate(struct fc_phases *p, size_t i);

/* Start a phase over the active arms: each arm's carry becomes its first
 * samples; rng draws the round-robin order. Returns 1 when the carries
 * already complete it. */
int fc_phases_begin(struct fc_phases *p, gsl_rng *rng, uint64_t quota, int last);

/* A reward (or observation) r for arm i: counted if i is active. Returns 1
 * when this reward completes the phase. */
int fc_phases_reward(struct fc_phases *p, size_t i, double r);

int fc_phases_complete(const struct fc_phases *p);

/* The next pull (bandit 0 of ctx): a quota pull to an active arm with the
 * fewest phase samples plus pending pulls, else (not the last phase) a
 * round-robin pull to an active arm with the fewest phase + carried +
 * pending, else POLICY_DONE. Equally served arms take turns in the phase's
 * random order. Never draws. */
int fc_phases_select(struct fc_phases *p, const struct policy_ctx *ctx, size_t *arm);

/* Phase mean of arm i (NaN without samples). */
double fc_phases_mean(const struct fc_phases *p, size_t i);

/* --- elimination policies ------------------------------------------------- */

/* What direct, incremental, halving and adaptive-topk share: one bandit, a
 * phase schedule on fc_phases, a decision when a phase's samples are in, and
 * the set returned once finished. A policy's state struct starts with a
 * struct fc_elim (so the vtable entries below take the policy's state as
 * is); the policy supplies `end`, which decides at the end of a phase and
 * either begins the next one or sets `finished` with `chosen` filled. */
struct fc_elim;
typedef void fc_elim_end_fn(struct fc_elim *e, const struct policy_ctx *ctx);

struct fc_elim {
    size_t k;
    unsigned m;
    struct fc_phases ph;
    int finished;
    unsigned char *chosen; /* the returned set, once finished */
    uint32_t *rank;        /* recommend()'s tie-break (order_rank_new) */
    size_t *idx;           /* scratch, k entries */
    double *val;           /* scratch, k entries */
    fc_elim_end_fn *end;   /* a phase's samples are all in */
    /* recommend() before the end (fc_mark_interim): arms accepted so far
     * (owned by the policy; NULL: none), and whether the candidates are the
     * phase's active arms (else every arm not accepted). */
    const unsigned char *interim_accepted;
    int interim_active;
};

/* Allocate for ctx's bandit 0 (phases, chosen, idx, val) with every arm
 * active, and draw the recommend() ranks from ctx->rng. 0, or −1 with "out
 * of memory" in err (e is then safe to fc_elim_fini). */
int fc_elim_init(struct fc_elim *e, const struct policy_ctx *ctx, fc_elim_end_fn *end, char *err,
                 size_t errlen);
void fc_elim_fini(struct fc_elim *e);
/* Save or load e, its phases included (policy.h's snap). */
void fc_elim_snap(struct fc_elim *e, struct ser *s);

/* "goal.epsilon: <name> needs epsilon > 0" in err unless ctx->epsilon > 0:
 * 0 when it is, −1 otherwise. */
int fc_elim_need_epsilon(const struct policy_ctx *ctx, const char *name, char *err, size_t errlen);

/* The refusal of a schedule longer than FC_MAX_PULLS, naming the policy. */
void fc_elim_too_long(const char *name, char *err, size_t errlen);

/* The active arms in e->idx ordered by their phase means, descending, ties
 * at random (draws from rng); returns how many. */
size_t fc_elim_order_active(struct fc_elim *e, gsl_rng *rng);

/* Vtable entries (state points to a struct whose first member is a struct
 * fc_elim): select serves the phase until finished; update feeds rewards
 * (releases ignored) and calls end when a phase completes; done is
 * `finished`; recommend is `chosen` once finished, else fc_mark_interim. */
int fc_elim_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick);
void fc_elim_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                    enum policy_event ev, double reward);
int fc_elim_done(void *state, const struct policy_ctx *ctx, size_t bandit);
void fc_elim_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                       unsigned char *high);

/* --- the GLR stop of best-arm sampling rules --------------------------------- */

/* ttts and track-and-stop stop alike: once every arm has a reward, when the
 * ε-GLR statistic of the empirical best (stats_glr_best, ties at random) exceeds
 * the threshold of stats_glr_threshold (m = 1) in every pair (stats_glr_stop_best:
 * the proven rule weighs each pair's evidence, stats_glr_pair_evidence); the
 * certified arm is then
 * the answer, and before that the best arm by the engine's means (ties by a
 * rank drawn once). val is scratch of k entries a policy may share. */
struct fc_glr {
    size_t k;
    enum stats_glr_threshold thr;
    int stopped;
    size_t certified;
    uint32_t *rank;
    size_t *idx;
    double *val;
    struct stats_glr_memo memo; /* the proven check's, over memo_arm */
    struct stats_glr_memo_arm *memo_arm;
};

/* The "threshold" parameter of the policies fc_glr stops (ttts,
 * track-and-stop): one entry of their policy_param_spec tables, choice 0
 * proven, 1 heuristic, as fc_glr_init reads it. */
extern const char *const fc_glr_thresholds[];
#define FC_GLR_PARAM_THRESHOLD                                                                     \
    {                                                                                              \
        .name = "threshold", .type = POLICY_PARAM_ENUM, .def = 0, .choices = fc_glr_thresholds,    \
        .doc = "GLR stop threshold: proven = with ε = 0 and K ≥ 3, every challenger's leader "  \
               "product (its e-value times the others' on the rewards they got while leading, "    \
               "stats_glr_lead_evidence) exceeds 1/δ, otherwise per pair an e-value exceeds "     \
               "(K−1)/δ: at the worst null point, a fixed mixture of the products of the two "  \
               "arms' Jeffreys-mixture (Garivier & Kaufmann 2016's proof, regret exact) and "      \
               "one-sided normal-mixture e-values (stats_glr_pair_evidence); heuristic = "         \
               "ln((ln t + 1)/δ) (Garivier & Kaufmann 2016 experiments, no proof)"                \
    }

/* Allocate for ctx's bandit 0, take the threshold from the policy's enum
 * parameter of index `threshold` (its "threshold": choice 0 = proven, else
 * heuristic) and draw the ranks from ctx->rng. 0, or −1 (out of memory; g
 * is then safe to fc_glr_fini). */
int fc_glr_init(struct fc_glr *g, const struct policy_ctx *ctx, int threshold);
void fc_glr_fini(struct fc_glr *g);
/* Save or load g (policy.h's snap). */
void fc_glr_snap(struct fc_glr *g, struct ser *s);

/* The stop test on bandit 0 of ctx (ops->done): 1 once stopped (final). */
int fc_glr_done(struct fc_glr *g, const struct policy_ctx *ctx);

/* The certified arm once stopped, else the interim best (ops->recommend). */
void fc_glr_recommend(struct fc_glr *g, const struct policy_ctx *ctx, unsigned char *high);

/* ops->done and ops->recommend themselves, for a policy whose state starts
 * with its struct fc_glr (they read the state as one; bandit unused). */
int fc_glr_state_done(void *state, const struct policy_ctx *ctx, size_t bandit);
void fc_glr_state_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                            unsigned char *high);

/* --- recommendations and counts ------------------------------------------- */

/* A recommendation before a policy has finished (status calls mid-run):
 * the accepted arms (may be NULL), then the best of cand (NULL = all arms not
 * accepted) by the engine's means, arms without a reward last, ties by rank,
 * m arms in all. val and idx are scratch of k entries. Never draws. */
void fc_mark_interim(const struct policy_ctx *ctx, const unsigned char *accepted,
                     const unsigned char *cand, unsigned m, const uint32_t *rank, size_t *idx,
                     double *val, unsigned char *high);

/* ⌈x⌉ as a pull count, or 0 when x is not finite or above FC_MAX_PULLS
 * (the caller reports the schedule as too long). */
uint64_t fc_count(double x);

#endif
