/*
 * adapt.c — ADAPT and its predecessors π1–π3 (Kalyanakrishnan & Stone 2010,
 * §4). All four sample one arm per pull and stop when the aggregate bound δᶜ
 * falls to δ (the engine's default stop rule for this policy):
 *
 *   π1 `uniform`  among arms whose Hoeffding width at δ/K exceeds ε/2, uniformly;
 *   π2 `collide`  among arms whose Hoeffding bounds at δ/K collide, uniformly;
 *   π3 `deltac`   arm i with probability ∝ δᶜ_i (Hoeffding), at the cutoff;
 *   π4 `adapt`    π3 with the tightest bounds (Hoeffding or empirical
 *                 Bernstein, per arm) — the default.
 *
 * We use the optimised cutoff c* (the paper's experiments use ĉ; c* is never
 * worse, §4), tracked from one select() to the next by a Newton step
 * (stats_delta_c_track; the full search where a step cannot be trusted).
 * Pending pulls count as returned at the arm's current mean; an arm with no
 * reward yet weighs 1/(1 + pending), which is the paper's weight 1 when
 * rewards are synchronous and stops a slow arm from absorbing every pull
 * while its first rewards are in flight.
 * Optional `cap` (the paper's remark after π4): never pull an arm more often
 * than DIRECT would, ⌈(2/ε²) ln(K/δ)⌉, which bounds the worst case.
 */
#include "policies/policy.h"
#include "base/ser.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { V_UNIFORM = 0, V_COLLIDE = 1, V_DELTAC = 2, V_ADAPT = 3 };

static const char *const variants[] = {"uniform", "collide", "deltac", "adapt", NULL};

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { ADAPT_VARIANT, ADAPT_CAP, ADAPT_NPARAMS };

static const struct policy_param_spec adapt_params[] = {
    [ADAPT_VARIANT] = {.name = "variant",
                       .type = POLICY_PARAM_ENUM,
                       .def = V_ADAPT,
                       .choices = variants,
                       .doc = "π1 uniform, π2 collide, π3 deltac, π4 adapt (K&S 2010 §4)"},
    [ADAPT_CAP] =
        {.name = "cap",
         .type = POLICY_PARAM_INT,
         .def = 0,
         .min = 0,
         .max = 1,
         .doc = "1: never pull an arm more than DIRECT's ⌈(2/ε²) ln(K/δ)⌉ (K&S §4; needs ε > 0)"},
    [ADAPT_NPARAMS] = {.name = NULL},
};

struct adapt {
    int variant;
    uint64_t cap; /* 0: none */
    size_t k;
    size_t *order;
    unsigned char *high;
    double *w;
    void *dc_ws; /* stats_delta_c_track workspace */
    double cut;  /* the last select()'s cutoff (NaN: none yet): the next one's start */
};

static void adapt_fini(void *state)
{
    struct adapt *s = state;
    if (s == NULL)
        return;
    free(s->order);
    free(s->high);
    free(s->w);
    free(s->dc_ws);
    free(s);
}

static int adapt_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct adapt *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->variant = (int)policy_param(ctx, ADAPT_VARIANT);
    s->k = ctx->n_arms[0];
    if (policy_param(ctx, ADAPT_CAP) != 0) {
        if (ctx->epsilon <= 0) {
            snprintf(err, errlen, "policy.params.cap: needs goal.epsilon > 0");
            adapt_fini(s);
            return -1;
        }
        s->cap =
            (uint64_t)ceil(2.0 / (ctx->epsilon * ctx->epsilon) * log((double)s->k / ctx->delta));
    }
    /* Scratch for select(), sized once so select never allocates. */
    s->order = calloc(s->k, sizeof *s->order);
    s->high = calloc(s->k, 1);
    s->w = calloc(s->k, sizeof *s->w);
    s->dc_ws = malloc(stats_dc_ws_size(s->k));
    if (!s->order || !s->high || !s->w || !s->dc_ws)
        goto nomem;
    stats_dc_ws_init(s->dc_ws, s->k);
    s->cut = NAN;
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    adapt_fini(s);
    return -1;
}

/* Sample index i with probability w[i] / Σ w; −1 if Σ w = 0. */
static long sample_weighted(gsl_rng *rng, const double *w, size_t k)
{
    double total = 0;
    for (size_t i = 0; i < k; i++)
        total += w[i];
    if (!(total > 0))
        return -1;
    double u = gsl_rng_uniform(rng) * total;
    long last = -1;
    for (size_t i = 0; i < k; i++) {
        if (w[i] <= 0)
            continue;
        last = (long)i;
        if (u < w[i])
            return (long)i;
        u -= w[i];
    }
    return last; /* rounding */
}

static int adapt_select(void *state, const struct policy_ctx *ctx, int bandit,
                        struct policy_pick *pick)
{
    struct adapt *s = state;
    const struct stats_arm *a = ctx->arms[0];
    size_t k = s->k;
    (void)bandit;
    pick->bandit = 0;

    /* The empirical High set, ties at random. */
    order_top_by_mean(ctx->rng, a, k, ctx->m, s->order, s->high);

    double d = ctx->delta / (double)k;
    switch (s->variant) {
    case V_UNIFORM:
        for (size_t i = 0; i < k; i++)
            s->w[i] = stats_width_hoeffding(ctx->bound, &a[i], a[i].pending, d) > ctx->epsilon / 2;
        break;
    case V_COLLIDE: {
        /* A High arm h collides with a Low arm l when LB_h + ε < UB_l. */
        double min_lb = INFINITY, max_ub = -INFINITY;
        for (size_t i = 0; i < k; i++) {
            double w = stats_width_hoeffding(ctx->bound, &a[i], a[i].pending, d);
            if (s->high[i] && a[i].mean - w + ctx->epsilon < min_lb)
                min_lb = a[i].mean - w + ctx->epsilon;
            if (!s->high[i] && a[i].mean + w > max_ub)
                max_ub = a[i].mean + w;
        }
        for (size_t i = 0; i < k; i++) {
            double w = stats_width_hoeffding(ctx->bound, &a[i], a[i].pending, d);
            s->w[i] = s->high[i] ? a[i].mean - w + ctx->epsilon < max_ub : a[i].mean + w > min_lb;
        }
        break;
    }
    default: {
        struct stats_dc_opts o = {.bound = ctx->bound,
                                  .epsilon = ctx->epsilon,
                                  .hoeffding_only = s->variant == V_DELTAC,
                                  .count_pending = 1};
        stats_delta_c_track(a, k, s->high, &o, &s->cut, s->w, s->dc_ws);
        break;
    }
    }
    for (size_t i = 0; i < k; i++) {
        if (a[i].n == 0)
            s->w[i] = 1.0 / (1.0 + (double)a[i].pending);
        if (s->cap && a[i].n + a[i].pending >= s->cap)
            s->w[i] = 0;
    }
    long i = sample_weighted(ctx->rng, s->w, k);
    if (i < 0) {
        /* π1/π2 with no candidate left: every bound is tight or separated;
         * keep sampling uniformly among uncapped arms until δᶜ says stop. */
        for (size_t j = 0; j < k; j++)
            s->w[j] = !(s->cap && a[j].n + a[j].pending >= s->cap);
        i = sample_weighted(ctx->rng, s->w, k);
        if (i < 0)
            return POLICY_DONE; /* every arm at DIRECT's cap */
    }
    pick->arm = policy_first_pulls(ctx->rng, a, k, (size_t)i);
    return POLICY_OK;
}

/* The cutoff is state (the next search starts from it); the rest is scratch
 * (select() rewrites it; dc_ws is a cache keyed by the arms' values), saved
 * all the same but dc_ws: a loaded state then equals a replayed one. */
static void adapt_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct adapt *a = state;
    (void)ctx;
    ser_expect(s, a->k);
    ser_u64(s, &a->cap);
    ser_indices(s, a->order, a->k, a->k);
    ser_flags(s, a->high, a->k);
    ser_f64s(s, a->w, a->k);
    ser_f64(s, &a->cut);
}

const struct policy_ops policy_adapt = {
    .name = "adapt",
    .summary = "ADAPT (π4) and π1–π3 of Kalyanakrishnan & Stone (2010, §4): sample ∝ δᶜ_i",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM,
    .params = adapt_params,
    .init = adapt_init,
    .fini = adapt_fini,
    .select = adapt_select,
    .snap = adapt_snap,
};
