/*
 * phases.h — the machinery shared by the phase-based fixed-budget policies
 * (sr, sar, seq-halving): arms are active, accepted or rejected; phase k has
 * a cumulative per-arm target of samples; at the end of a phase a policy-
 * specific rule accepts or rejects arms. Internal to policies/.
 *
 * Serving under asynchrony (docs/policy-formulas.md, "Serving policies over HTTP"):
 *   - select() always answers the active arm of least n + pending (ties at
 *     random) in the scope asked for. While some active arm is below the
 *     phase's target this hands out the phase's quota exactly once (round-
 *     robin); once every active arm has its quota handed out, the same rule
 *     keeps answering round-robin while the phase waits for its rewards, and
 *     those extra samples count toward the next phase (targets are
 *     cumulative: an arm that got extras needs fewer new pulls).
 *   - A phase ends when every active arm has its target of REWARDED samples,
 *     or, for an arm whose bandit the engine has marked done (budget spent,
 *     manual stop), when it has no pull pending any more: no more pulls can
 *     come, so the remaining phases are decided back to back on the data
 *     that came back. A phase never waits for anything but rewards already
 *     handed out.
 *   - Decisions happen in update() (when the reward that completes a phase
 *     arrives) and, as a safeguard, at the start of select(); both may draw
 *     from ctx->rng for ties, which keeps the state a function of the call
 *     sequence. recommend() never draws: ties there go by a random rank drawn
 *     once at init.
 *
 * Budget: the caller's phase targets must sum to at most ctx->budget when
 * every phase is run synchronously. Extras given to an arm that is rejected
 * later are budget the formula did not plan for; the engine caps the pulls at
 * the budget and the last phases then end on what came back (rule above).
 *
 * A bandit is settled when its top set is decided: need == 0 (the rest is
 * rejected) or need == number of active arms (the rest is accepted). The
 * policy is finished when every bandit is settled; select() then answers
 * POLICY_DONE and recommend() returns the accepted arms. ops->done reports a
 * settled bandit, so the engine stops it at once (stop_reason "policy").
 *
 * The state of a phase policy is a `struct phases` (the policy's state
 * pointer points to it), so tests can inspect it.
 *
 * fc.h's fc_phases serves the same hand-out rule (quota once, round-robin
 * while a phase waits) for the fixed-confidence elimination policies, but is
 * a different mechanism on purpose: their phases need fresh samples (Median
 * Elimination's proof conditions on the arms left, so a phase keeps its own
 * accumulators and a carry), while SR/SAR/seq-halving decide on cumulative
 * means and cumulative targets, which the engine's counts already are. The
 * two also break ties differently (a draw per pull here, a per-phase random
 * order there, drawing nothing in select); one mechanism for both would
 * change every seeded decision sequence of one family. What they share is
 * in order.h (order_rank_draw, order_by_mean).
 */
#ifndef BANDITD_POLICIES_PHASES_H
#define BANDITD_POLICIES_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "policy.h"

enum { PHASES_ACTIVE = 0, PHASES_ACCEPTED = 1, PHASES_REJECTED = 2 };

struct phases;

/* End-of-phase rule: deactivate arms with phases_accept/_reject.
 * `phase` is the index of the phase that just ended (0-based). Must not
 * allocate. */
typedef void phases_decide_fn(struct phases *ph, const struct policy_ctx *ctx, size_t phase);

struct phases {
    size_t nb;              /* bandits in the instance's scope */
    size_t total;           /* arms over all bandits */
    size_t *off;            /* off[b] = flat index of bandit b's first arm; off[nb] = total */
    size_t *bandit_of;      /* flat index → bandit */
    unsigned char *status;  /* flat: PHASES_ACTIVE / ACCEPTED / REJECTED */
    unsigned *need;         /* per bandit: arms still to accept (SAR's m(k)) */
    size_t *n_active;       /* per bandit */
    unsigned char *settled; /* per bandit: top set decided */
    size_t n_settled;
    uint64_t *target; /* cumulative per-arm target of each phase (caller fills) */
    size_t nphases;
    size_t phase;   /* current phase; == nphases once every phase ended */
    uint32_t *rank; /* flat: random tie-break rank for recommend() */
    phases_decide_fn *decide;
    /* scratch for decide(), sized at init (select must not allocate) */
    size_t *order;       /* max arms per bandit */
    double *gap;         /* total */
    size_t *cand;        /* total */
    unsigned char *mask; /* total */
};

/* Allocate everything for ctx's bandits with `nphases` phases (targets left
 * zero for the caller to fill) and every arm active with need = ctx->m.
 * Draws the recommend() tie ranks from ctx->rng. Returns 0, or −1 with
 * "out of memory" in err. On failure the struct is left freeable. */
int phases_init(struct phases *ph, const struct policy_ctx *ctx, size_t nphases,
                phases_decide_fn *decide, char *err, size_t errlen);
void phases_fini(struct phases *ph);
/* Save or load ph's mutable part, targets included (policy.h's snap). */
void phases_snap(struct phases *ph, struct ser *s);
/* ops->snap of a policy whose state is a struct phases (sr, sar). */
void phases_state_snap(void *state, const struct policy_ctx *ctx, struct ser *s);

/* The vtable entries a phase policy uses as they are (state is the struct). */
int phases_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick);
void phases_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                   enum policy_event ev, double reward);
int phases_done(void *state, const struct policy_ctx *ctx, size_t bandit);
void phases_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                      unsigned char *high);

/* For decide functions: deactivate one arm (flat index), then settle its
 * bandit if its top set is now decided. */
void phases_accept(struct phases *ph, size_t flat);
void phases_reject(struct phases *ph, size_t flat);

/* Every bandit settled: nothing left to explore. */
int phases_finished(const struct phases *ph);

/* Sum over phases of (active arms during the phase) × (phase length) for a
 * plan in which phase k runs on active[k] arms: what the phases hand out when
 * rewards are synchronous. Used by init functions to check a plan against the
 * budget. */
uint64_t phases_plan_total(const uint64_t *target, const size_t *active, size_t nphases);

/* Active arms of bandit b ordered by mean, descending, ties at random;
 * writes them to ph->order and returns how many. */
size_t phases_order_active(struct phases *ph, const struct policy_ctx *ctx, size_t b);

#endif
