/*
 * vs_control.c — the sampler of the goal "control" (docs/stop-rules.md,
 * `control`; docs/policies.md): many arms against one control arm. Each
 * pull goes to the control arm while it has fewer than r times the pulls of
 * the least-served arm whose comparison is still open, else to that arm
 * (ties at random). With r = √k (k the comparisons still open, the default
 * "sqrt") the control keeps near √k times each open arm's pulls, the
 * allocation that minimises the variance of k differences with a shared
 * control (Dunnett 1955); "equal" (r = 1) is the classical equal
 * randomisation. The least-served open arm is the one whose interval on
 * its difference is widest (every interval has the control's width plus its
 * own, which shrinks with its pulls), so the open comparisons narrow
 * together; a decided arm (superior or futile) gets no more pulls. Pulls
 * are counted with the pending ones, so late rewards keep the ratio. The
 * engine decides the verdicts and stops; this file only samples. O(K) per
 * pull.
 */
#include "policies/policy.h"
#include "policies/rng.h"

#include <math.h>
#include <stddef.h>

enum { VS_CONTROL_ALLOCATION, VS_CONTROL_NPARAMS };
enum { VS_CONTROL_SQRT, VS_CONTROL_EQUAL };

static const char *const vs_control_allocations[] = {"sqrt", "equal", NULL};

static const struct policy_param_spec vs_control_params[] = {
    [VS_CONTROL_ALLOCATION] =
        {.name = "allocation",
         .type = POLICY_PARAM_ENUM,
         .def = VS_CONTROL_SQRT,
         .choices = vs_control_allocations,
         .doc = "the control arm's pulls per open arm's: sqrt (√k for k comparisons still "
                "open, Dunnett 1955) or equal (1: equal randomisation)"},
    [VS_CONTROL_NPARAMS] = {.name = NULL},
};

// NOLINTNEXTLINE(readability-non-const-parameter): policy_ops.init's signature
static int vs_control_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    (void)ctx;
    (void)err;
    (void)errlen;
    *state = NULL;
    return 0;
}

static uint64_t handed(const struct stats_arm *a)
{
    return a->n + a->pending;
}

static int vs_control_select(void *state, const struct policy_ctx *ctx, int bandit,
                             struct policy_pick *pick)
{
    (void)state;
    size_t b = 0;
    if (bandit >= 0)
        b = (size_t)bandit;
    else
        while (b + 1 < ctx->n_bandits && ctx->bandit_done[b])
            b++;
    if (ctx->control == NULL || ctx->control[b] < 0)
        return POLICY_DONE; /* the engine refuses this goal without a control arm */
    const struct stats_arm *a = ctx->arms[b];
    const unsigned char *verdict = ctx->verdict[b];
    size_t c = (size_t)ctx->control[b], best = c, open = 0, ties = 0;
    for (size_t i = 0; i < ctx->n_arms[b]; i++) {
        if (i == c || verdict[i] != POLICY_OPEN)
            continue;
        open++;
        if (ties == 0 || handed(&a[i]) < handed(&a[best])) {
            best = i;
            ties = 1;
        } else if (handed(&a[i]) == handed(&a[best]) && rng_index(ctx->rng, ++ties) == 0) {
            best = i;
        }
    }
    pick->bandit = b;
    pick->arm = c;
    if (open == 0)
        return POLICY_OK; /* every comparison decided: the engine is stopping the bandit */
    double r =
        policy_param(ctx, VS_CONTROL_ALLOCATION) == VS_CONTROL_EQUAL ? 1.0 : sqrt((double)open);
    if (!((double)handed(&a[c]) < r * (double)handed(&a[best])))
        pick->arm = best;
    return POLICY_OK;
}

const struct policy_ops policy_vs_control = {
    .name = "vs-control",
    .summary = "Many arms against a control (goal type control): the control at √k times each "
               "open arm's pulls (Dunnett 1955), the least-served open arm otherwise",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_CONTROL,
    .params = vs_control_params,
    .init = vs_control_init,
    .fini = NULL,
    .select = vs_control_select,
    .snap = policy_snap_stateless,
};
