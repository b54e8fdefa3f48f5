/*
 * stop_rule.h — the stop rules' names: the one table that the daemon's
 * config parser (stop_rule), the simulator (--stop) and GET /v1/policies
 * read, so that a name means the same rule everywhere. What each rule
 * promises, with its proof or its gap, is docs/stop-rules.md.
 */
#ifndef BANDITD_POLICIES_STOP_RULE_H
#define BANDITD_POLICIES_STOP_RULE_H

#include <stddef.h>

#include "policies/engine.h"

/* How far a rule's guarantee goes (docs/stop-rules.md, "Defaults and status"). */
enum stop_rule_proof {
    STOP_RULE_PROVEN,     /* δ-correct: the proof is in docs/stop-rules.md */
    STOP_RULE_UNPROVEN,   /* no proof: opt-in */
    STOP_RULE_NO_CLAIM,   /* never stops on confidence: nothing to prove */
    STOP_RULE_PER_POLICY, /* the policy's rule: as proven as that rule is */
};

struct stop_rule_info {
    const char *name; /* as the create body and --stop spell it */
    enum engine_stop_rule rule;
    enum stop_rule_proof proof;
    const char *summary; /* one line */
};

/* Every rule, in the order documents list them; *n gets the count. */
const struct stop_rule_info *stop_rule_all(size_t *n);

/* The entry named name, or NULL. */
const struct stop_rule_info *stop_rule_find(const char *name);

/* The name of rule r ("unknown" for a value outside the enum). */
const char *stop_rule_name(enum engine_stop_rule r);

/* The setting that makes proven rule r unproven, as a sentence, or NULL
 * (none does). GET /v1/policies shows it beside the rule. */
const char *stop_rule_unproven_when(enum engine_stop_rule r);

/* "proven", "unproven", "no-claim" or "per-policy". */
const char *stop_rule_proof_name(enum stop_rule_proof p);

/* Every name as English: "default, policy, ... or none", into buf
 * (truncated to len − 1 bytes). For error messages. */
void stop_rule_names(char *buf, size_t len);

/* The bound family δᶜ's intervals use ("bound": docs/stop-rules.md,
 * "Time-uniform bounds"): its name, and the name's value (0, or −1 for an
 * unknown or NULL name). STOP_RULE_BOUNDS lists the names for messages. */
#define STOP_RULE_BOUNDS "\"anytime\" or \"fixed\""
const char *stop_rule_bound_name(enum stats_bound b);
int stop_rule_bound_find(const char *name, enum stats_bound *out);

#endif
