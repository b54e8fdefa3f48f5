/*
 * ucb_e.c — UCB-E for top m (Audibert, Bubeck & Munos 2010; Bubeck, Wang &
 * Viswanathan 2013, Fig. 3): pull argmax_i B_i, B_i = −Δ̂_i + sqrt(a / T_i),
 * with Δ̂ the top-m gaps and T_i = n_i + pending_i (gapidx.h).
 *
 * Exploration parameter: a = c (N − K) / H with H = Σ_i 1/Δ_i² the top-m
 * complexity H^⟨m⟩ (Bubeck et al.); Audibert et al.'s Theorem 1 holds for
 * c ≤ 25/36, and their experiments run c of order 1, our default. Three ways
 * to set it: `a` directly; `h` = H when the user knows it; neither (the
 * service's usual case): H is replaced at every pull by Gabillon et al.'s
 * lower-confidence estimate Ĥ(t) = Σ 1/UCB_Δ² (docs/policy-formulas.md), which makes it
 * an adaptive UCB-E (a plain online plug-in, not Audibert et al.'s phased
 * AdUCB-E).
 *
 * One bandit per instance: with M bandits the engine runs one UCB-E per
 * bandit on N/M pulls (Gabillon et al.'s "Unif+UCB-E").
 */
#include "policies/gapidx.h"

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { UCB_E_C, UCB_E_A, UCB_E_H, UCB_E_NPARAMS };

static const struct policy_param_spec ucb_e_params[] = {
    [UCB_E_C] = {.name = "c",
                 .type = POLICY_PARAM_NUM,
                 .def = 1,
                 .min = 1e-6,
                 .max = 1e6,
                 .doc = "a = c (N − K) / H (Bubeck et al. 2013 Fig. 3; Audibert et al. 2010 Thm 1: "
                        "c ≤ 25/36)"},
    [UCB_E_A] = GAPIDX_PARAM_A("exploration parameter a itself; 0: from c and H"),
    [UCB_E_H] =
        GAPIDX_PARAM_H("complexity H = Σ 1/Δ_i² (top-m gaps) if known; 0: online estimate Ĥ "
                       "(Gabillon et al. 2011 §3.3)"),
    [UCB_E_NPARAMS] = {.name = NULL},
};

/* a = c (N − K) / H: the scale c (N − K). */
static double ucb_e_scale(const struct policy_ctx *ctx)
{
    double k = (double)ctx->n_arms[0];
    return policy_param(ctx, UCB_E_C) * ((double)ctx->budget - k);
}

static int ucb_e_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    return gapidx_new(state, ctx, "ucb-e", 0, ucb_e_scale(ctx), policy_param(ctx, UCB_E_A),
                      policy_param(ctx, UCB_E_H), err, errlen);
}

static int ucb_e_rebudget(void *state, const struct policy_ctx *ctx, int check, char *err,
                          size_t errlen)
{
    return gapidx_rebudget(state, ctx, "ucb-e", ucb_e_scale(ctx), check, err, errlen);
}

const struct policy_ops policy_ucb_e = {
    .name = "ucb-e",
    .summary = "UCB-E for top m (Audibert et al. 2010; Bubeck et al. 2013 Fig. 3): −Δ̂ + sqrt(a/T)",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM,
    .params = ucb_e_params,
    .init = ucb_e_init,
    .fini = gapidx_free,
    .select = gapidx_select,
    .rebudget = ucb_e_rebudget,
    .snap = gapidx_snap,
};
