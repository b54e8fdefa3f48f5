/*
 * goal.h — what an experiment asks for: the m best arms, within ε, with
 * confidence 1 − δ, optionally within a budget of pulls; or (type
 * "control") each arm against a control arm by a margin Δ, every decision
 * right with probability 1 − δ (docs/stop-rules.md, `control`). One definition of
 * a valid goal, read by the daemon's create body ("goal": {...}), by the
 * simulator's problem files (the same members at top level) and its
 * options, and checked again by the engine (engine_validate), so that the
 * three cannot disagree on what they accept.
 *
 * What a goal needs of a policy (m > 1 needs a top-m policy, ε > 0 some
 * policies, a budget the fixed-budget ones) and of the arms (m below their
 * number) is the engine's to check: it knows both.
 */
#ifndef BANDITD_POLICIES_GOAL_H
#define BANDITD_POLICIES_GOAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policies/engine.h"
#include "policies/error.h"

#define GOAL_MAX_M ENGINE_MAX_ARMS
#define GOAL_MAX_BUDGET (UINT64_C(1) << 53) /* exact in a JSON number (a double) */

/* The goal's types, as the create body spells them ("type"). */
#define GOAL_TYPES "\"top\" or \"control\""
const char *goal_type_name(enum engine_goal t);

struct goal {
    enum engine_goal type; /* ENGINE_GOAL_TOP ("top", the default) or ENGINE_GOAL_CONTROL */
    unsigned m;            /* arms to find: 1 to GOAL_MAX_M */
    double epsilon;        /* slack in reward units: 0 ≤ ε < reward range */
    double delta;          /* error probability: 0 < δ < 1 */
    uint64_t budget;       /* pulls: 1 to GOAL_MAX_BUDGET; 0: none (fixed confidence) */
    /* type control only: the superiority margin Δ (reward units, 0 ≤ Δ <
     * range; 0 by default) and the control arm as given (borrowed from the
     * parsed object: a name, or an index; the caller resolves it against its
     * arms). With type control, m is 1 and ε 0. */
    double margin;
    json_t *control;
    /* type control only: the factor on the widths of the bounds the
     * decisions rest on; 1 (absent or null): the proven rule. Below 1 the
     * rule is calibrated, not proven (engine_config.scale). */
    double scale;
};

/* goal.scale's rule as its message; the message refusing a control-only member. */
#define GOAL_SCALE_RULE                                                                            \
    "must be null or 1 (the proven rule), or in (0, 1): a calibrated width, unproven (its error "  \
    "rate is the simulation's: bandit-sim oc --calibrate)"
#define GOAL_CONTROL_ONLY "only with type \"control\""

/* 0 stands for 1 in an engine configuration (zero-initialised: proven). */
static inline int goal_scale_valid(double scale)
{
    return scale > 0 ? scale <= 1 : scale == 0;
}

/* Two settings beside the goal that the same three places read: the reward
 * range [min, max] (finite, max > min by a finite range: ε and every reward
 * are rescaled by it) and tau, ρ̄'s target (docs/stop-rules.md, rho; NaN:
 * none given, 1 − δ). Each rule with the message that refuses it. An
 * infinite width (±1e308) made the engine's arithmetic fail later, as if
 * out of memory: a 503 that clients retry forever. */
#define GOAL_RANGE_RULE "must be greater than reward.min (by a finite range)"
#define GOAL_TAU_RULE "must be null or in (0, 1)"

static inline int goal_range_valid(double min, double max)
{
    return max > min && isfinite(max - min);
}

static inline int goal_tau_valid(double tau)
{
    return isnan(tau) || (tau > 0 && tau < 1);
}

/* type top, m 1, ε 0, δ 0.05, no budget, Δ 0, no control, the proven
 * width: what a missing member means. */
void goal_defaults(struct goal *g);

/* Check g's values. range is the reward range ε is measured in (1 for the
 * engine's [0, 1] units); fields are named prefix + member ("goal." gives
 * goal.m, "" gives m). 0, or −1 with err filled on the first wrong one. */
int goal_check(const struct goal *g, double range, const char *prefix, struct policy_error *err);

/* m against the arms: below the number of arms of every bandit (n_arms[b],
 * b < n_bandits). 0, or −1 with err on prefix + "m". */
int goal_check_arms(unsigned m, const size_t *n_arms, size_t n_bandits, const char *prefix,
                    struct policy_error *err);

/* Read obj's members type, m, epsilon, delta, budget, margin, control and
 * scale (each optional but control with type control, which also refuses
 * m ≠ 1 and ε ≠ 0; margin, control and scale are refused with another
 * type; budget and scale may be null; m and budget integers, 1e6 written as a real too) over g,
 * which holds the defaults, and check each as goal_check does. range NaN:
 * unknown (the reward range is itself wrong), ε is then checked for ≥ 0
 * only. Every wrong member is appended to errors (borrowed array, jv_error)
 * as {"field": prefix + member, "message"}. Other members of obj are the
 * caller's (unknown-key checks included). Returns the number of errors. */
int goal_parse(json_t *obj, double range, const char *prefix, struct goal *g, json_t *errors);

#endif
