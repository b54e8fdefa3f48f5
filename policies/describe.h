/*
 * describe.h — the policies as data for clients: every policy of the
 * registry with its flags and parameters, and every stop rule, as the JSON
 * document that GET /v1/policies serves and `bandit-sim --list-policies`
 * prints (one function: the two cannot drift apart), and a policy's
 * parameter values by name (the simulator's result, the create body).
 */
#ifndef BANDITD_POLICIES_DESCRIBE_H
#define BANDITD_POLICIES_DESCRIBE_H

#include <jansson.h>

#include "policies/policy.h"

/* {"policies": [{"name", "summary", "flags": [...], "params": [{"name",
 * "type", "default", "min", "max" | "choices", "doc"}]}], "stop_rules":
 * [{"name", "proof", "summary"}]} (docs/openapi.json, PolicyList). New
 * reference, or NULL out of memory. */
json_t *describe_policies(void);

/* pp's values by parameter name, ENUM values by their choice's name
 * ({"variant": "adapt", "cap": 0}). New reference, or NULL. */
json_t *describe_params(const struct policy_ops *ops, const struct policy_params *pp);

#endif
