/*
 * gape.c — GapE and GapE-V (Gabillon, Ghavamzadeh, Lazaric & Bubeck 2011,
 * Fig. 1 and §3.2), one or M bandits, top m through top-m gaps (Bachman &
 * Precup 2013, fn. 5). One algorithm with two indexes (gapidx.h), so one
 * file: they differ in the index, the complexity H they are scaled by, and
 * the paper's default η.
 *
 * GapE flattens the bandits into one pool: pull argmax over (bandit, arm) of
 *   B = −Δ̂ + sqrt(a / T),  T = n + pending (gapidx.h),
 * every arm once first. The theory value is a = (4/9)(N − MK)/H with
 * H = Σ_{m,k} 1/Δ²_mk; the paper's experiments (§4) run a = η N / H and so do
 * we, N the experiment's whole budget.
 *
 * GapE-V: GapE with an empirical-Bernstein index,
 *   B = −Δ̂ + sqrt(2 a σ̂² / T) + 7 a / (3 (T − 1)),  T = n + pending,
 * σ̂² the unbiased empirical variance; every arm twice first (σ̂ needs two
 * samples, so the budget must cover 2 pulls per arm). Theory:
 * a = (8/9)(N − 2MK)/Hσ with Hσ = Σ (σ + sqrt(σ² + (16/3)Δ))² / Δ²; the
 * experiments (§4) run a = η N / Hσ, and so do we.
 *
 * Parameters: `h` = H (Hσ) when known (the paper's setting); without it
 * GapE has no H to use and runs on the online lower-confidence estimate
 * Ĥ(t), i.e. exactly as a-gape (a-gape-v). `eta` = 0 (default) picks the
 * paper's value for the complexity in use. GapE: 4 with a known H (Fig. 2
 * left: GapE's best η on Problem 1 lies in 4–8; we measure 15.1% error at
 * η = 4 against the paper's 15.7%), 1/2 with Ĥ (A-GapE's best range there is
 * 1/4–1/2). GapE-V: 4 with a known Hσ ("a good choice of η for GapE-V is
 * always close to 2 and 4"; we measure 15.1% error on Problem 2 at η = 4
 * against Unif's 28%), 1 with the estimate (A-GapE-V's range 1/4–2 in
 * Fig. 2 right; 14.3% at η = 1). `a` sets the exploration parameter
 * directly.
 */
#include "policies/gapidx.h"

/* The names, for the vtables and gapidx_new's messages. */
#define GAPE_NAME "gape"
#define GAPE_V_NAME "gape-v"

/* Parameter indices: each one the position of its spec in the tables
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { GAPE_ETA, GAPE_A, GAPE_H, GAPE_NPARAMS };

static const struct policy_param_spec gape_params[] = {
    [GAPE_ETA] =
        {.name = "eta",
         .type = POLICY_PARAM_NUM,
         .def = 0,
         .min = 0,
         .max = 1e6,
         .doc = "a = η N / H (Gabillon et al. 2011 §4); 0: 4 with a known H, 1/2 with the online "
                "estimate (their Fig. 2)"},
    [GAPE_A] = GAPIDX_PARAM_A("exploration parameter a itself; 0: from eta and H"),
    [GAPE_H] = GAPIDX_PARAM_H("complexity H = Σ 1/Δ² over all bandits and arms if known; 0: the "
                              "online estimate Ĥ(t) of a-gape (Gabillon et al. 2011 §3.3)"),
    [GAPE_NPARAMS] = {.name = NULL},
};

static const struct policy_param_spec gape_v_params[] = {
    [GAPE_ETA] =
        {.name = "eta",
         .type = POLICY_PARAM_NUM,
         .def = 0,
         .min = 0,
         .max = 1e6,
         .doc = "a = η N / Hσ (Gabillon et al. 2011 §4); 0: 4 with a known Hσ, 1 with the online "
                "estimate (their Fig. 2)"},
    [GAPE_A] = GAPIDX_PARAM_A("exploration parameter a itself; 0: from eta and Hσ"),
    [GAPE_H] =
        GAPIDX_PARAM_H("complexity Hσ = Σ (σ + sqrt(σ² + 16Δ/3))²/Δ² if known; 0: the online "
                       "estimate Ĥσ(t) of a-gape-v (Gabillon et al. 2011 §3.3)"),
    [GAPE_NPARAMS] = {.name = NULL},
};

/* a = η N / H; η = 0 picks 4 with a known H, eta_online without one. */
static double gape_scale(const struct policy_ctx *ctx, double eta_online)
{
    double h = policy_param(ctx, GAPE_H);
    double eta = policy_param(ctx, GAPE_ETA);
    if (eta == 0)
        eta = h > 0 ? 4.0 : eta_online;
    return eta * (double)ctx->budget;
}

static int gape_new(void **state, const struct policy_ctx *ctx, const char *name, int bernstein,
                    double eta_online, char *err, size_t errlen)
{
    return gapidx_new(state, ctx, name, bernstein, gape_scale(ctx, eta_online),
                      policy_param(ctx, GAPE_A), policy_param(ctx, GAPE_H), err, errlen);
}

/* A budget edit: a = η N / H with the new N. */
static int gape_rebudget(void *state, const struct policy_ctx *ctx, int check, char *err,
                         size_t errlen)
{
    return gapidx_rebudget(state, ctx, GAPE_NAME, gape_scale(ctx, 0.5), check, err, errlen);
}

static int gape_v_rebudget(void *state, const struct policy_ctx *ctx, int check, char *err,
                           size_t errlen)
{
    return gapidx_rebudget(state, ctx, GAPE_V_NAME, gape_scale(ctx, 1.0), check, err, errlen);
}

static int gape_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    return gape_new(state, ctx, GAPE_NAME, 0, 0.5, err, errlen);
}

static int gape_v_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    return gape_new(state, ctx, GAPE_V_NAME, 1, 1.0, err, errlen);
}

const struct policy_ops policy_gape = {
    .name = GAPE_NAME,
    .summary = "GapE (Gabillon et al. 2011): argmax over bandits and arms of −Δ̂ + sqrt(a/T)",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_MULTI,
    .params = gape_params,
    .init = gape_init,
    .fini = gapidx_free,
    .select = gapidx_select,
    .rebudget = gape_rebudget,
    .snap = gapidx_snap,
};

const struct policy_ops policy_gape_v = {
    .name = GAPE_V_NAME,
    .summary = "GapE-V (Gabillon et al. 2011): GapE with an empirical-Bernstein index",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_MULTI,
    .params = gape_v_params,
    .init = gape_v_init,
    .fini = gapidx_free,
    .select = gapidx_select,
    .rebudget = gape_v_rebudget,
    .snap = gapidx_snap,
};
