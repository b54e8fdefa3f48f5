/*
 * a_gape.c — AGAPE
 */
#include "policies/gapidx.h"

extern const struct policy_ops policy_a_gape;

static const struct policy_param_spec params[] = {
    {.name = "eta",
     .type = POLICY_PARAM_NUM,
     .def = 1,
     .min = 1e-6,
     .max = 1e6,
     .doc = "a = η N / Ĥ (Gabillon et al. 2011 §4; default 1: a_gape0)"},
    {.name = NULL},
};

static int init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    double scale = policy_param(ctx, &policy_a_gape, "eta") * (double)ctx->budget;
    return policy_gapidx_new(state, ctx, "a-gape", 0, scale, 0, 0, err, errlen);
}

const struct policy_ops policy_a_gape = {
    .name = "a-gape",
    .summary = "Adaptive GapE (Gabillon et al. 2011 §3.3): GapE with H estimated online",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_MULTI,
    .params = params,
    .init = init,
    .fini = policy_gapidx_free,
    .select = policy_gapidx_select,
};
