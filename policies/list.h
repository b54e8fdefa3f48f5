/*
 * list.h — the policy list, one line per policy (an X-macro read twice by
 * registry.c). Adding a policy: its file in policies/ plus one line here.
 * No include guard on purpose.
 */
POLICY(policy_uniform)
POLICY(policy_adapt)
POLICY(policy_gcp)
POLICY(policy_gcp_targeted)
POLICY(policy_thompson)
