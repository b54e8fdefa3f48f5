/*
 * policy.h — the interface every allocation policy implements, and the
 * registry the daemon and the simulator look policies up in.
 *
 * A policy is a `const struct policy_ops` (designated initializers) in its own
 * file under policies/, listed once in registry.c. The engine (engine.h) owns
 * everything shared — per-arm statistics, pending pulls, the random number
 * generator, budgets, stop rules, clinical constraints — and hands the policy a
 * read-only `struct policy_ctx`; the policy keeps only its private state
 * (phases, active and accepted sets, queued pulls).
 *
 * Determinism contract: a policy's state must be a function of the sequence
 * of calls it received and of the draws it took from ctx->rng. The daemon
 * persists that sequence (assignments, rewards, releases) and replays it on
 * restart, so a policy that reads the clock or a global is a bug.
 *
 * Asynchrony contract (docs/policy-formulas.md, "Serving policies over HTTP"): select()
 * is called while earlier pulls are still pending (arm->pending > 0); it must
 * always answer (never wait), and rewards may arrive for arms the policy did
 * not pick (burn-in, control share, observations). Index policies count
 * pending pulls as if they had returned the arm's current mean; phase policies
 * hand out each phase's quota once and, while a phase waits for its last
 * rewards, keep answering from the active arms round-robin, counting those
 * extra samples in the next phase.
 *
 * Naming rule for policies/: a public name starts with the name of the file
 * that defines it, and the header of that name declares it — policy_ for this
 * interface (policy.c, registry.c), order_ (order.c), rng_ (rng.c), stats_
 * (the stats_*.c family, one header), and a family toolkit's own name:
 * fc_ (fc.c, fixed-confidence phases, elimination and the GLR stop),
 * phases_ (phases.c, fixed-budget phases), gapidx_ (gapidx.c), lucb_, gcp_,
 * tas_, toptwo_ (the top-two samplers' first pulls and challenger), engine_.
 * A policy file exports nothing but its vtable, named policy_<file> (lucb1.c:
 * policy_lucb1), listed in list.h, and names its parameters' indices
 * <FILE>_<PARAM> (LUCB1_K1: see policy_param). Everything else is static.
 */
#ifndef BANDITD_POLICIES_POLICY_H
#define BANDITD_POLICIES_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "stats.h"

struct ser; /* base/ser.h */

/* What a policy is and needs (ops->flags). */
enum {
    POLICY_F_FIXED_CONFIDENCE = 1u << 0, /* stops on a confidence rule */
    POLICY_F_FIXED_BUDGET = 1u << 1,     /* needs a budget */
    POLICY_F_MULTI = 1u << 2,            /* handles M bandits itself (chooses the bandit) */
    POLICY_F_TOPM = 1u << 3,             /* supports m > 1 */
    POLICY_F_NEEDS_EPSILON = 1u << 4,    /* ε > 0 required (direct, incremental, halving) */
    POLICY_F_OWN_STOP = 1u << 5,         /* ops->done implements its own stop rule */
    POLICY_F_BAYES = 1u << 6,            /* reads the Beta posteriors */
    POLICY_F_NEEDS_TARGET = 1u << 7,     /* needs target_arm (gcp-targeted) */
    POLICY_F_REGRET = 1u << 8,           /* not pure exploration (thompson) */
    POLICY_F_GLR_STOP = 1u << 9,         /* the own rule is the GLR rule (ε-GLR, m = 1), its
                                          * threshold the proven one exactly when stop_proven */
    POLICY_F_RHO_STOP = 1u << 10,        /* the own rule is ρ̄ ≥ τ (gcp) */
    POLICY_F_PHASES = 1u << 11,          /* a phase ends when every active arm has its
                                          * samples: no arm may stop getting pulls
                                          * (engine_retire_arm refuses) */
    POLICY_F_CONTROL = 1u << 12,         /* samples for comparisons with a control arm:
                                          * runs the goal "control" and only it */
};

/* A comparison with the control arm (goal "control", docs/stop-rules.md,
 * `control`): still open, or decided for good. The engine decides; a
 * policy reads ctx->verdict to stop sampling what is decided. */
enum policy_verdict {
    POLICY_OPEN = 0,
    POLICY_SUPERIOR = 1, /* μ_i − μ_control > Δ, proven */
    POLICY_FUTILE = 2,   /* μ_i − μ_control < Δ, proven */
};

/* One declared parameter: validated generically before init() runs. */
enum policy_param_type { POLICY_PARAM_NUM, POLICY_PARAM_INT, POLICY_PARAM_ENUM };

struct policy_param_spec {
    const char *name;
    enum policy_param_type type;
    double def;                 /* default (NUM/INT), or index into choices (ENUM) */
    double min, max;            /* inclusive range for NUM/INT */
    const char *const *choices; /* NULL-terminated, ENUM only */
    const char *doc;            /* one line, with the paper and equation it comes from */
};

/* The parameters a user passed, after validation: values[i] belongs to
 * ops->params[i] (ENUM values hold the choice index). */
struct policy_params {
    double values[16];
};
#define POLICY_MAX_PARAMS 16

/* What the engine shows a policy. Everything is read-only except rng. */
struct policy_ctx {
    size_t n_bandits;
    const size_t *n_arms;             /* arms per bandit */
    struct stats_arm *const *arms;    /* arms[b][i], rewards rescaled to [0, 1] */
    const unsigned char *bandit_done; /* the engine's verdict per bandit */
    unsigned m;                       /* size of the wanted top set */
    double epsilon;                   /* in [0, 1] units */
    double delta;
    /* the proven GLR rule's kind for this experiment (STATS_GLR_PROVEN, or
     * STATS_GLR_PROVEN_PAIRS for rule revision 1): what the policies' own
     * GLR stop uses when proven */
    enum stats_glr_threshold glr_proven;
    uint64_t budget;        /* pulls this policy instance may hand out; 0 = none */
    uint64_t handed_out;    /* pulls handed out so far (rewarded + pending + released) */
    enum stats_bound bound; /* "anytime" (default) or "fixed" */
    double tau;             /* per-bandit confidence target for GCP */
    int target_arm;         /* gcp-targeted; −1 when unset */
    const struct policy_params *params;
    gsl_rng *rng; /* the experiment's generator: the only randomness allowed */
    /* Goal "control" (NULL and 0 otherwise): per bandit of the scope, the
     * control arm (−1: none) and each arm's enum policy_verdict (the
     * control's own stays POLICY_OPEN); margin Δ in [0, 1] units. */
    const int *control;
    const unsigned char *const *verdict;
    double margin;
};

/* select() result. */
struct policy_pick {
    size_t bandit;
    size_t arm;
};

/* select() return values. */
enum {
    POLICY_OK = 0,
    POLICY_DONE = 1, /* nothing left to explore in this scope (phases spent) */
};

/* update() kinds. */
enum policy_event {
    POLICY_EV_REWARD = 0,      /* a pending pull came back; stats already updated */
    POLICY_EV_OBSERVATION = 1, /* a reward not tied to a pull of ours; stats updated */
    POLICY_EV_RELEASE = 2,     /* a pending pull expired without reward; no data */
};

struct policy_ops {
    const char *name;
    const char *summary; /* one line: what it is, which paper */
    unsigned flags;
    const struct policy_param_spec *params; /* NULL-terminated by name == NULL; may be NULL */

    /* Allocate the private state (*state, owned by the engine and freed with
     * fini). ctx is the context select() will get. On error return non-zero
     * with a message naming the offending parameter in err. */
    int (*init)(void **state, const struct policy_ctx *ctx, char *err, size_t errlen);
    void (*fini)(void *state);

    /* Choose the next pull. bandit >= 0: an arm of that bandit; bandit < 0
     * (POLICY_F_MULTI only): the policy chooses the bandit too. Must not
     * allocate. Return POLICY_OK with *pick filled, or POLICY_DONE. */
    int (*select)(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick);

    /* Learn of an event on (bandit, arm); ctx->arms already reflects it.
     * May be NULL for policies that read everything from ctx. */
    void (*update)(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                   enum policy_event ev, double reward);

    /* Own stop rule (POLICY_F_OWN_STOP): non-zero when the bandit is done. */
    int (*done)(void *state, const struct policy_ctx *ctx, size_t bandit);

    /* The set the policy returns for a bandit (high[i] = 1 for chosen arms);
     * NULL means the empirical top m (ties by the engine's random ranks).
     * Called by the status endpoint: must not draw from ctx->rng. */
    void (*recommend)(void *state, const struct policy_ctx *ctx, size_t bandit,
                      unsigned char *high);

    /* Whether the own stop rule, with these (validated) parameters, has a
     * proof of δ-correctness (docs/stop-rules.md). NULL: it has (the
     * paper's). A policy whose own rule has none with its default
     * parameters is not stopped by it unless the experiment asks for it
     * (the engine then stops it on the proven GLR rule). */
    int (*stop_proven)(const struct policy_params *params);
    /* A budget edit (engine_set_budget): ctx->budget is the instance's new
     * share. A policy that plans its allocation from the budget plans again
     * from here: phases already run keep what they had, the current and
     * later ones get the new schedule. check != 0: only say whether the
     * budget is acceptable (0, or non-zero with a message naming
     * "goal.budget" in err), changing nothing. NULL: a policy flagged
     * POLICY_F_FIXED_BUDGET cannot change its budget; any other policy
     * reads the budget as a cap only and needs no hook. */
    int (*rebudget)(void *state, const struct policy_ctx *ctx, int check, char *err, size_t errlen);
    /* Snapshots (engine_snapshot_save/load): save the state's every field
     * that a call may change into s, or (s->reading) load them from s, one
     * function for both directions (base/ser.h). On load the state was just
     * made by init with the same context: fields that init derives from
     * the configuration alone need not be saved, arrays are checked against
     * their sizes (a mismatch fails s, and the engine is discarded). The
     * layout is the policy's own; change it and bump ENGINE_SNAPSHOT_FORMAT.
     * Required: every policy of the registry has one (a test checks that
     * snapshot + tail replays to the full replay's state, bit for bit). */
    void (*snap)(void *state, const struct policy_ctx *ctx, struct ser *s);
};

/* --- registry ------------------------------------------------------------ */

/* The policy named `name`, or NULL. */
const struct policy_ops *policy_find(const char *name);
/* All policies, NULL-terminated (for docs and the simulator's --list). */
const struct policy_ops *const *policy_all(void);

/* Parse one parameter value given as text ("0.5", "adapt") against spec.
 * Returns 0 and sets *out, or non-zero with a message in err. */
int policy_param_parse(const struct policy_param_spec *spec, const char *text, double *out,
                       char *err, size_t errlen);
/* Check a numeric value against spec; same contract. */
int policy_param_check(const struct policy_param_spec *spec, double v, char *err, size_t errlen);
/* Index of parameter `name` in ops->params, or −1. */
int policy_param_index(const struct policy_ops *ops, const char *name);
/* Fill p with every default of ops. */
void policy_params_defaults(const struct policy_ops *ops, struct policy_params *p);
/* ops->stop_proven(p), or 1 without it; 0 for a policy without an own rule. */
int policy_own_stop_proven(const struct policy_ops *ops, const struct policy_params *p);
/* Value of the policy's own parameter number i, the position of its spec in
 * ops->params. A policy names its positions with an enum beside its table
 * and fills the table with designated initializers ([LUCB1_K1] = {...}), so
 * a misspelt parameter is a compile error and a reordered table cannot
 * misread one. (Names from users go through policy_param_index.) */
double policy_param(const struct policy_ctx *ctx, int i);

/* Helpers shared by policies live in their own modules (see the naming
 * rule above): orderings and random tie-breaks in order.h, uniform draws in
 * rng.h, statistics in stats.h, the families' toolkits in fc.h, phases.h,
 * gapidx.h, lucb.h, gcp.h and tas.h. */

/* The first pulls of a block: a sampling policy (adapt, ttts, thompson)
 * that picked `arm` while arm has no reward yet and a pull of it pending
 * learns nothing from a second one that another arm with nothing handed
 * out would not teach it, so such an arm (uniformly among them) takes the
 * pull instead; otherwise `arm`. With rewards on time (no pending pull at
 * select) it never changes a pick or draws: a block of assignments on a
 * fresh experiment (count = K) covers K distinct arms. */
size_t policy_first_pulls(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t arm);

/* The snap hook of a policy without state of its own (init sets *state to
 * NULL): nothing to save or load. */
void policy_snap_stateless(void *state, const struct policy_ctx *ctx, struct ser *s);

/* The rebudget hook of a policy that reads the budget as a cap only (the
 * engine's), though flagged fixed-budget: any budget will do. */
int policy_rebudget_any(void *state, const struct policy_ctx *ctx, int check, char *err,
                        size_t errlen);

#endif
