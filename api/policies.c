/*
 * policies.c — GET /v1/policies: every policy this build serves, with its
 * flags (fixed confidence, fixed budget, multi-bandit, top-m, own stop
 * rule, needs ε, needs a target arm...) and its parameters (type, default,
 * range or choices, one line of doc with the paper it comes from), and every
 * stop rule (name, proof status, summary). The document is exactly
 * `bandit-sim --list-policies` (both come from policies/describe.h), so a
 * client can build a create form from it and a script can compare the
 * daemon with the simulator.
 */
#include "api/api.h"

#include "policies/describe.h"

int api_policies_list(struct http_req *r)
{
    json_t *j = describe_policies();
    if (j == NULL)
        return http_reply_oom(r);
    return http_reply_json(r, 200, j);
}
