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
POLICY(policy_eb_tc)
POLICY(policy_t3c)
POLICY(policy_sr)
POLICY(policy_sar)
POLICY(policy_seq_halving)
POLICY(policy_ucb_e)
POLICY(policy_gape)
POLICY(policy_gape_v)
POLICY(policy_a_gape)
POLICY(policy_a_gape_v)
POLICY(policy_gcp)
POLICY(policy_gcp_targeted)
POLICY(policy_thompson)
POLICY(policy_vs_control)
