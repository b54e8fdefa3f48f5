/*
 * gape.c — GAPE
 */
#include "policies/gapidx.h"

extern const struct policy_ops policy_gape;

static const struct policy_param_spec params[] = {
    {.name = "eta",
     .type = POLICY_PARAM_NUM,
     .def = 1,
     .min = 1e-6,
     .max = 1e6,
     .doc = "a = η N / H (Gabillon et al. 2011 §4; default 1: gape0)"},
    {.name = "a",
     .type = POLICY_PARAM_NUM,
     .def = 0,
     .min = 0,
     .max = 1e12,
     .doc = "exploration parameter a itself; 0: from eta and H"},
    {.name = "h",
     .type = POLICY_PARAM_NUM,
     .def = 0,
     .min = 0,
     .max = 1e15,
     .doc = "complexity H if known; 0: the online estimate of a-gape (Gabillon et al. 2011 §3.3)"},
    {.name = NULL},
};

static int init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    double scale = policy_param(ctx, &policy_gape, "eta") * (double)ctx->budget;
    return policy_gapidx_new(state, ctx, "gape", 0, scale, policy_param(ctx, &policy_gape, "a"),
                             policy_param(ctx, &policy_gape, "h"), err, errlen);
}

const struct policy_ops policy_gape = {
    .name = "gape",
    .summary = "GapE (Gabillon et al. 2011): argmax over bandits and arms of −Δ̂ + sqrt(a/T)",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_MULTI,
    .params = params,
    .init = init,
    .fini = policy_gapidx_free,
    .select = policy_gapidx_select,
};
