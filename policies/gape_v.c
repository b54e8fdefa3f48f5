/*
 * gape_v.c — GAPEV
 */
#include "policies/gapidx.h"

extern const struct policy_ops policy_gape_v;

static const struct policy_param_spec params[] = {
    {.name = "eta",
     .type = POLICY_PARAM_NUM,
     .def = 2,
     .min = 1e-6,
     .max = 1e6,
     .doc = "a = η N / Hσ (Gabillon et al. 2011 §4; default 2: gape_v0)"},
    {.name = "a",
     .type = POLICY_PARAM_NUM,
     .def = 0,
     .min = 0,
     .max = 1e12,
     .doc = "exploration parameter a itself; 0: from eta and Hσ"},
    {.name = "h",
     .type = POLICY_PARAM_NUM,
     .def = 0,
     .min = 0,
     .max = 1e15,
     .doc = "complexity Hσ if known; 0: the online estimate of a-gape-v (Gabillon et al. 2011 §3.3)"},
    {.name = NULL},
};

static int init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    double scale = policy_param(ctx, &policy_gape_v, "eta") * (double)ctx->budget;
    return policy_gapidx_new(state, ctx, "gape-v", 1, scale, policy_param(ctx, &policy_gape_v, "a"),
                             policy_param(ctx, &policy_gape_v, "h"), err, errlen);
}

const struct policy_ops policy_gape_v = {
    .name = "gape-v",
    .summary = "GapE-V (Gabillon et al. 2011): GapE with an empirical-Bernstein index",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_MULTI,
    .params = params,
    .init = init,
    .fini = policy_gapidx_free,
    .select = policy_gapidx_select,
};
