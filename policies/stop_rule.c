/*
 * stop_rule.c — the stop rules' names (stop_rule.h).
 */
#include "policies/stop_rule.h"

#include <stdio.h>
#include <string.h>

/* "default" and "policy" are two rules: "default" is what the policy does
 * without stop_rule (docs/stop-rules.md, "Defaults and status"), "policy"
 * insists on the policy's own rule and is refused for a policy without one.
 * They once shared the name "policy" with these two meanings. */
static const struct stop_rule_info rules[] = {
    {"default", ENGINE_RULE_DEFAULT, STOP_RULE_PER_POLICY,
     "the policy's documented default: its own rule when that has a proof, none for a regret "
     "policy or a fixed-budget run, else the proven glr"},
    {"policy", ENGINE_RULE_POLICY, STOP_RULE_PER_POLICY,
     "the policy's own rule from its paper, proven or not as its paper is; refused for a policy "
     "without one"},
    {"delta_c", ENGINE_RULE_DELTA_C, STOP_RULE_PROVEN,
     "δᶜ ≤ δ: the arms' anytime bounds at δ/K separate High from Low (bound \"fixed\": no "
     "proof)"},
    {"glr", ENGINE_RULE_GLR, STOP_RULE_PROVEN,
     "GLR with the proven threshold: for one best arm of K ≥ 3 with ε = 0 every "
     "challenger's leader product exceeds 1/δ (rule_revision 2), otherwise every pair's "
     "e-value exceeds m(K−m)/δ"},
    {"glr-heuristic", ENGINE_RULE_GLR_HEURISTIC, STOP_RULE_UNPROVEN,
     "GLR > ln((ln t + 1)/δ): no proof"},
    {"rho", ENGINE_RULE_RHO, STOP_RULE_UNPROVEN, "ρ̄ ≥ τ (Bachman & Precup): no proof"},
    {"control", ENGINE_RULE_CONTROL, STOP_RULE_PROVEN,
     "goal control: every arm's anytime interval on its difference with the control arm, at "
     "δ/(2K) per arm and side, lies above the margin (superior) or below it (futile)"},
    {"none", ENGINE_RULE_NONE, STOP_RULE_NO_CLAIM,
     "never on confidence: the budget or a manual stop ends the run"},
};

#define N_RULES (sizeof rules / sizeof rules[0])

const struct stop_rule_info *stop_rule_all(size_t *n)
{
    *n = N_RULES;
    return rules;
}

const struct stop_rule_info *stop_rule_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < N_RULES; i++)
        if (strcmp(rules[i].name, name) == 0)
            return &rules[i];
    return NULL;
}

const char *stop_rule_name(enum engine_stop_rule r)
{
    for (size_t i = 0; i < N_RULES; i++)
        if (rules[i].rule == r)
            return rules[i].name;
    return "unknown";
}

const char *stop_rule_unproven_when(enum engine_stop_rule r)
{
    /* engine_rule_proven: goal.scale below 1 (docs/stop-rules.md, `control`) */
    return r == ENGINE_RULE_CONTROL
               ? "goal.scale below 1: every width scaled by a calibrated factor, opt-in, no proof "
                 "(the error rates are the simulation's: bandit-sim oc --calibrate)"
               : NULL;
}

const char *stop_rule_proof_name(enum stop_rule_proof p)
{
    static const char *const names[] = {
        [STOP_RULE_PROVEN] = "proven",
        [STOP_RULE_UNPROVEN] = "unproven",
        [STOP_RULE_NO_CLAIM] = "no-claim",
        [STOP_RULE_PER_POLICY] = "per-policy",
    };
    return (size_t)p < sizeof names / sizeof names[0] ? names[p] : "unknown";
}

void stop_rule_names(char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < N_RULES && used < len; i++) {
        const char *sep = i == 0 ? "" : i + 1 == N_RULES ? " or " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, rules[i].name);
        if (w < 0)
            return;
        used += (size_t)w;
    }
}

static const char *const bound_names[] = {
    [STATS_BOUND_ANYTIME] = "anytime",
    [STATS_BOUND_FIXED] = "fixed",
};

const char *stop_rule_bound_name(enum stats_bound b)
{
    return (size_t)b < sizeof bound_names / sizeof bound_names[0] ? bound_names[b] : "unknown";
}

int stop_rule_bound_find(const char *name, enum stats_bound *out)
{
    for (size_t i = 0; name != NULL && i < sizeof bound_names / sizeof bound_names[0]; i++)
        if (strcmp(bound_names[i], name) == 0) {
            *out = (enum stats_bound)i;
            return 0;
        }
    return -1;
}
