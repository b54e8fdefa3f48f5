/*
 * list.h — the policy list, one line per policy (an X-macro read twice by
 * registry.c). Adding a policy: its file in policies/ plus one line here.
 * No include guard on purpose.
 */
POLICY(policy_uniform)
POLICY(policy_adapt)
POLICY(policy_direct)
POLICY(policy_incremental)
POLICY(policy_halving)
POLICY(policy_lucb1)
POLICY(policy_kl_lucb)
POLICY(policy_adaptive_topk)
POLICY(policy_ttts)
POLICY(policy_track_and_stop)
