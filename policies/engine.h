/*
 * engine.h — one experiment's allocation state machine, without I/O.
 *
 * The engine is what the daemon serves and what the simulator measures: the
 * per-arm statistics, pending pulls, the experiment's random generator, the
 * policy instance(s), budgets, stop rules, clinical constraints (burn-in,
 * minimum allocation probability, control share) and the status figures
 * (recommended set, δᶜ, ρ̄, GLR). It knows nothing of HTTP, SQL or time.
 *
 * Determinism: given the same config and the same sequence of calls
 * (engine_assign, engine_reward, engine_release, engine_observe,
 * engine_stop), an engine reaches the same state, bit for bit. The daemon
 * stores that sequence and replays it on restart; that is how exact
 * resumption works. Status functions never touch the random generator.
 *
 * Threads: an engine is not thread-safe; the caller holds a lock around it.
 */
#ifndef BANDITD_POLICIES_ENGINE_H
#define BANDITD_POLICIES_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "policy.h"
#include "stats.h"

#define ENGINE_MAX_BANDITS 1024
#define ENGINE_MAX_ARMS 4096

/* Names, proof status and summaries: policies/stop_rule.h. */
enum engine_stop_rule {
    ENGINE_RULE_DEFAULT = 0,   /* engine_resolve_rule: own rule if proven, else GLR */
    ENGINE_RULE_DELTA_C,       /* δᶜ ≤ δ (K&S §4), bound per config */
    ENGINE_RULE_GLR,           /* Chernoff GLR, proven threshold */
    ENGINE_RULE_GLR_HEURISTIC, /* Chernoff GLR, ln((ln t + 1)/δ) */
    ENGINE_RULE_POLICY,        /* the policy's own rule (error if it has none) */
    ENGINE_RULE_RHO,           /* ρ̄ ≥ τ (Bachman & Precup) */
    ENGINE_RULE_NONE,          /* never stop on confidence (budget only) */
    ENGINE_RULE_CONTROL,       /* goal "control": every arm superior or futile */
};
/* The last rule: a new one goes after it and takes this name's place
 * (engine_snap checks a loaded rule against it). */
#define ENGINE_RULE_LAST ENGINE_RULE_CONTROL

/* What an experiment asks for (goal.h): the m best arms, or each arm
 * against a control arm (control_arm) by a margin. */
enum engine_goal {
    ENGINE_GOAL_TOP = 0,
    ENGINE_GOAL_CONTROL = 1,
};

struct engine_config;

/* The rule a configuration stops on: its stop_rule, or without one the
 * policy's own rule when that has a proof with the policy's default
 * parameters, none for regret-minimising policies and fixed-budget runs,
 * the proven GLR rule otherwise (gcp's unproven ρ̄ included). Needs
 * c->policy and c->params; never ENGINE_RULE_DEFAULT. */
enum engine_stop_rule engine_resolve_rule(const struct engine_config *c);
/* Whether rule r, as c configures it (bound, policy parameters), has a
 * proof. ENGINE_RULE_NONE claims nothing: 0. */
int engine_rule_proven(const struct engine_config *c, enum engine_stop_rule r);

enum engine_stop_reason {
    ENGINE_RUNNING = 0,
    ENGINE_STOPPED_CONFIDENCE,  /* a confidence rule fired in every bandit */
    ENGINE_STOPPED_BUDGET,      /* the budget is handed out */
    ENGINE_STOPPED_MANUAL,      /* engine_stop() */
    ENGINE_STOPPED_POLICY,      /* the policy's own rule / its phases ended */
    ENGINE_STOPPED_SUPERIORITY, /* goal control: every arm decided, some superior */
    ENGINE_STOPPED_FUTILITY,    /* goal control: every arm decided, none superior */
};
/* The last reason (as ENGINE_RULE_LAST). */
#define ENGINE_STOPPED_LAST ENGINE_STOPPED_FUTILITY

#define ENGINE_MAX_BLOCKS 8      /* block sizes to draw from */
#define ENGINE_MAX_BLOCK_MULT 64 /* the largest block, in pulls per arm */

struct engine_config {
    size_t n_bandits;
    const size_t *n_arms; /* per bandit, copied */
    unsigned m;
    double epsilon; /* in [0, 1] units (caller rescales) */
    double delta;
    uint64_t budget; /* 0: fixed confidence */
    enum stats_bound bound;
    enum engine_stop_rule stop_rule;
    double tau;     /* NaN or 0: 1 − δ */
    int target_arm; /* −1: none */
    uint64_t seed;
    double prior_alpha, prior_beta; /* Beta prior; 0 means 1 */
    /* The proven GLR rule's revision, kept per experiment so that a replay
     * after an upgrade decides as the experiment's own rule did: 0 the
     * current (ENGINE_GLR_REVISION: the leader product for one best arm of
     * K ≥ 3 with ε = 0); 1 the pair rule only (experiments created before
     * the leader product). */
    unsigned glr_revision;
    const struct policy_ops *policy;
    struct policy_params params; /* validated values, defaults filled */
    /* clinical-trial constraints */
    uint32_t burn_in; /* pulls per arm before the policy takes over */
    /* Burn-in by permuted blocks (docs/constraints.md): each block gives
     * every arm still in its burn-in m pulls in a random order, m drawn at
     * random from burn_in_blocks[0..n_burn_in_blocks) at each block (cut to
     * what the burn-in still needs). 0 blocks: least served first. */
    uint8_t burn_in_blocks[ENGINE_MAX_BLOCKS];
    size_t n_burn_in_blocks;
    double min_prob;        /* additive floor f: p_i = f + (1 − K f) q_i; with a control
                             * share s: p_i = s·[i = control] + f + (1 − s − K f) q_i */
    const int *control_arm; /* per bandit, copied; NULL: none (−1 in a bandit: none there) */
    double control_share;   /* fixed share of pulls for the control arm */
    /* Goal "control" (docs/stop-rules.md, `control`): each arm against
     * control_arm (needed in every bandit), superior when μ_i − μ_control
     * > margin is proven, futile when μ_i − μ_control < margin is. */
    enum engine_goal goal;
    double margin; /* Δ in [0, 1) units (caller rescales) */
    /* Goal control: the factor on the half-width of every arm's bound
     * (goal.scale). 0 or 1: the proven rule; in (0, 1): a calibrated,
     * unproven rule whose error rate only a simulation gives (bandit-sim
     * oc --calibrate; docs/stop-rules.md, `control`). The level δ/(2K)
     * alone cannot be calibrated: even at 0.5 per side the time-uniform
     * width keeps its ln ln n term, and the type I error at the margin
     * stays near 0.02 (200 runs of docs/oc/trial3-design.json). */
    double scale;
};

/* Is c's rule calibrated (goal control with a scale in (0, 1))? */
static inline int engine_calibrated(const struct engine_config *c)
{
    return c->scale > 0 && c->scale < 1;
}

struct engine;

/* Validate cfg and build an engine. Returns NULL with err filled: the
 * offending field (the API's name: "goal.m") and why, or POLICY_ERR_NOMEM.
 * The result is new; free it with engine_free. */
struct engine *engine_create(const struct engine_config *cfg, struct policy_error *err);
void engine_free(struct engine *e);

/* Check a configuration without building anything: 0, or −1 with err
 * filled (POLICY_ERR_INVALID). */
int engine_validate(const struct engine_config *cfg, struct policy_error *err);

/* One assignment. */
struct engine_pull {
    size_t bandit;
    size_t arm;
    int exploit; /* 1: the bandit is done (or the experiment stopped or
                  * paused): this is the recommendation, not a pull; it
                  * counts nowhere and needs no reward */
};

/* Hand out one pull. bandit >= 0 targets that bandit; bandit < 0 lets the
 * policy (or the engine, for single-bandit policies) choose. Never fails for
 * a valid bandit; returns −1 only when bandit is out of range. */
int engine_assign(struct engine *e, int bandit, struct engine_pull *out);

/* Replay fallback: account a pull of (bandit, arm) that the policy did not
 * choose (a log written by another version of a policy). Statistics stay
 * exact; the policy learns of it only through later updates. */
void engine_record_pull(struct engine *e, size_t bandit, size_t arm);

/* A pending pull of (bandit, arm) came back with reward r ∈ [0, 1]. */
void engine_reward(struct engine *e, size_t bandit, size_t arm, double r);
/* A pending pull of (bandit, arm) expired unanswered. */
void engine_release(struct engine *e, size_t bandit, size_t arm);
/* An outcome not tied to a pull (observations endpoint). */
void engine_observe(struct engine *e, size_t bandit, size_t arm, double r);
/* Stop for good (manual). */
void engine_stop(struct engine *e);

/* Pause: assignments exploit (serve the recommendation, count nothing) but
 * rewards are still taken. Not an event of the replayed sequence's policy
 * calls; the caller replays it too. */
void engine_set_paused(struct engine *e, int paused);

/* --- status (never touches the random generator) ------------------------- */

enum engine_stop_reason engine_stop_reason(const struct engine *e);
int engine_stopped(const struct engine *e);
size_t engine_n_bandits(const struct engine *e);
size_t engine_n_arms(const struct engine *e, size_t bandit);
const struct stats_arm *engine_arms(const struct engine *e, size_t bandit);
uint64_t engine_pulls(const struct engine *e);      /* rewarded pulls, all bandits */
uint64_t engine_pending(const struct engine *e);    /* pending pulls, all bandits */
uint64_t engine_handed_out(const struct engine *e); /* pulls handed out (budget count) */
int engine_bandit_done(const struct engine *e, size_t bandit);
size_t engine_bandits_done(const struct engine *e);

struct engine_bandit_status {
    double delta_c; /* δᶜ of the recommended set at the optimised cutoff */
    double cutoff;  /* c* (in [0, 1] units) */
    double rho;     /* Bachman & Precup's ρ̄ */
    double glr;     /* GLR statistic Z of the recommended set */
    int done;
};

/* How a rule compares its evidence with its threshold. */
enum engine_fires {
    ENGINE_FIRES_NONE = 0, /* the rule shows no figures */
    ENGINE_FIRES_AT_MOST,  /* evidence ≤ threshold (δᶜ) */
    ENGINE_FIRES_ABOVE,    /* evidence > threshold (GLR) */
    ENGINE_FIRES_AT_LEAST, /* evidence ≥ threshold (ρ̄) */
};
#define ENGINE_FIRES_LAST ENGINE_FIRES_AT_LEAST /* (as ENGINE_RULE_LAST) */
/* The figures of a bandit's stop rule (docs/stop-rules.md). error_bound: for a proven rule, the
 * smallest δ at which it would hold now, an anytime-valid bound on the probability that the
 * recommended set is wrong; NaN where no proof gives one, and NaN figures where the rule shows none
 * (a paper's own rule, `none`). */
struct engine_stop_eval {
    enum engine_stop_rule rule; /* resolved */
    int proven;
    enum engine_fires fires;
    double evidence, threshold, error_bound;
    int fired; /* 1: the rule stopped the bandit; the figures are those of that moment */
};
/* The rule's figures now, or frozen at the moment it fired. */
void engine_bandit_stop(const struct engine *e, size_t bandit, struct engine_stop_eval *out);

/* Fill st and high[] (n_arms entries: 1 = recommended). */
void engine_bandit_status(const struct engine *e, size_t bandit, unsigned char *high,
                          struct engine_bandit_status *st);

/* Goal "control": arm's comparison with its bandit's control arm, in [0, 1]
 * units. The interval holds, with every other arm's of the bandit, at all
 * times at once with probability ≥ 1 − δ (docs/stop-rules.md, `control`):
 * each arm's anytime bound at δ/(2K) per side, difference = [lo_i − hi_c,
 * hi_i − lo_c]. verdict is decided once (at the rewarded pulls `at` of the
 * bandit) and kept; the interval moves on with later rewards. −1 (out
 * untouched) when the goal is not control or arm is the control arm. */
struct engine_vs_control {
    double diff, lower, upper; /* μ̂_i − μ̂_c (NaN while either has no reward) and the bounds */
    enum policy_verdict verdict; /* POLICY_OPEN until decided */
    uint64_t at;                 /* the bandit's rewarded pulls when decided; 0 while open */
};
int engine_vs_control(const struct engine *e, size_t bandit, size_t arm,
                      struct engine_vs_control *out);
/* The control arm of bandit (goal control or a control share), or −1. */
int engine_control_arm(const struct engine *e, size_t bandit);

/* Per-arm confidence interval at level 1 − d (the experiment's bound family),
 * in [0, 1] units, clipped to [0, 1]. */
void engine_arm_interval(const struct engine *e, size_t bandit, size_t arm, double d, double *lo,
                         double *hi);

/* The per-arm interval status shows (and the operating characteristics
 * judge): each side at δ/(2K), so that all K intervals of a bandit hold
 * together with probability ≥ 1 − δ (time-uniformly for "anytime"). */
void engine_arm_status_interval(const struct engine *e, size_t bandit, size_t arm, double *lo,
                                double *hi);

/* Why the engine stopped, as status and the event log name it: the rule
 * that fired (stop_rule_name: "glr", "delta_c"...), "budget", "manual",
 * "policy"; NULL while it runs. Static string. */
const char *engine_stop_reason_name(const struct engine *e);

const struct engine_config *engine_config(const struct engine *e);
/* The rule the engine stops on (engine_resolve_rule of its config). */
enum engine_stop_rule engine_rule(const struct engine *e);

/* --- edits of a running engine (PATCH; replayed from the log in order) ---- */

/* The budget now (0: none), and what counts against it: rewarded plus
 * pending pulls (an expired pull frees its place). */
uint64_t engine_budget(const struct engine *e);
uint64_t engine_budget_used(const struct engine *e);

/* Change the budget to `budget` (0: none). Refused (−1, a message naming
 * "goal.budget" as err's field, the engine unchanged) when the engine has stopped,
 * when the budget would fall below what is used, below what engine_create
 * would accept (an arm a pull, each bandit's share its arms), when it
 * would change the resolved stop rule (a fixed-budget policy's budget
 * cannot be removed), or when the policy plans from its budget and has no
 * rebudget hook. Per-bandit instances get the new budget split as
 * engine_create splits it; a bandit already done stays done, and one whose
 * new share is used up is done at once (stop_reason "budget" when that
 * ends the experiment). */
int engine_set_budget(struct engine *e, uint64_t budget, struct policy_error *err);

/* Retire arm of bandit: it gets no more pulls. A pull the policy (or a
 * constraint: the floor, the burn-in) gives it goes to the bandit's arm of
 * fewest pulls handed out that is not retired (ties by the bandit's random
 * rank: no draw); a recommendation served after the stop skips it while a
 * recommended arm is not retired. Its data stay in the statistics: it is
 * still ranked, recommended and counted by the stop rules. Refused (−1, err on
 * field "retire", the engine unchanged) when the engine
 * has stopped or the bandit is done, when the policy ends its phases on
 * every active arm's samples (POLICY_F_PHASES), when fewer than m + 1 arms
 * would be left, or for the control arm of a control share. Retiring a
 * retired arm changes nothing. */
int engine_retire_arm(struct engine *e, size_t bandit, size_t arm, struct policy_error *err);
/* Take back a retirement made by the same edit, before any other call (an
 * edit refused after it: exp/edits.c keeps an edit all or nothing). */
void engine_retire_undo(struct engine *e, size_t bandit, size_t arm);
int engine_arm_retired(const struct engine *e, size_t bandit, size_t arm);

/* --- snapshots (exp/snapshot.c: loading a long log from a checkpoint) ----- */

struct ser; /* base/ser.h */

/* The layout of engine_snap, with every policy's ops->snap: bump it when
 * either changes (a snapshot of another format is never loaded: the log is
 * replayed in full instead). */
#define ENGINE_SNAPSHOT_FORMAT 3

/* The proven GLR rule's current revision (engine_config.glr_revision). */
#define ENGINE_GLR_REVISION 2

/* Save (s a writer) or load (s a reader) e's whole state: statistics,
 * pending and budget counts, the random generator, stop state and the
 * figures frozen when a rule fired, retirements, burn-in blocks, the
 * budget as edited, and each policy instance's own state (ops->snap).
 * To load, e must come straight from engine_create with the configuration
 * of the engine saved (before any edit: the edits' effects are in the
 * state). A shape that differs (bandits, arms, policy, instances), bytes
 * that end early or a value out of range fail s (ser_ok 0): e is then in an
 * unspecified state and must be freed. After a load e continues exactly as
 * the saved engine would have (engine.h, determinism). */
void engine_snap(struct engine *e, struct ser *s);

#endif
