/*
 * halving.c — HALVING (Kalyanakrishnan & Stone 2010, Algorithm 3): Median
 * Elimination generalised to m arms. ε₁ = ε/4, δ₁ = δ/2; for
 * l = 1..⌈log₂(K/m)⌉ pull each arm of R_l ⌈(2/ε_l²) ln(3m/δ_l)⌉ times, keep
 * the max(⌈|R_l|/2⌉, m) best, ε_{l+1} = 3ε_l/4, δ_{l+1} = δ_l/2; return
 * R_last (m arms). (ε, m, δ)-optimal by their Theorem 3: Σ ε_l < ε, Σ δ_l < δ,
 * and round l errs with probability at most δ_l — which needs each round's
 * means to come from fresh samples (the proof conditions on R_l), so a round
 * uses only its own samples (fc.h: phases).
 *
 * Under asynchrony each round's quota is handed out once; while a round
 * waits for its last rewards, pulls go round-robin to R_l and count in the
 * next round. The last round answers POLICY_DONE once its quota is out.
 */
#include "policies/fc.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct halving {
    size_t k;
    unsigned m;
    unsigned rounds; /* ⌈log₂(K/m)⌉ */
    unsigned round;  /* 1-based, current */
    double eps_l, delta_l;
    struct fc_phases ph;
    int finished;
    uint32_t *rank;
    size_t *idx;
    double *val;
};

static void halving_fini(void *state)
{
    struct halving *s = state;
    if (s == NULL)
        return;
    fc_phases_free(&s->ph);
    free(s->rank);
    free(s->idx);
    free(s->val);
    free(s);
}

/* Algorithm 3, line 5. */
static uint64_t halving_quota(unsigned m, double eps_l, double delta_l)
{
    return fc_count(2.0 / (eps_l * eps_l) * log(3.0 * m / delta_l));
}

/* ⌈log₂(K/m)⌉ without floating point: the least L with m·2^L ≥ K. */
static unsigned halving_rounds(size_t k, unsigned m)
{
    unsigned l = 0;
    for (uint64_t c = m; c < k; c *= 2)
        l++;
    return l;
}

/* Size of R_{l+1} given |R_l| (line 7). */
static size_t halving_keep(size_t r, unsigned m)
{
    size_t half = (r + 1) / 2;
    return half > m ? half : m;
}

static int halving_begin_round(struct halving *s, gsl_rng *rng)
{
    return fc_phases_begin(&s->ph, rng, halving_quota(s->m, s->eps_l, s->delta_l),
                           s->round == s->rounds);
}

static int halving_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct halving *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->k = ctx->n_arms[0];
    s->m = ctx->m;
    if (!(ctx->epsilon > 0)) {
        snprintf(err, errlen, "goal.epsilon: halving needs epsilon > 0");
        halving_fini(s);
        return -1;
    }
    s->rounds = halving_rounds(s->k, s->m);
    /* The whole schedule, to refuse one that cannot finish. */
    double total = 0, e = ctx->epsilon / 4, d = ctx->delta / 2;
    size_t r = s->k;
    for (unsigned l = 1; l <= s->rounds; l++) {
        uint64_t q = halving_quota(s->m, e, d);
        total += (double)q * (double)r;
        if (q == 0 || total > FC_MAX_PULLS) {
            snprintf(err, errlen, "goal.epsilon: too small for halving (more than %g pulls)",
                     FC_MAX_PULLS);
            halving_fini(s);
            return -1;
        }
        r = halving_keep(r, s->m);
        e *= 0.75;
        d *= 0.5;
    }
    if (fc_phases_init(&s->ph, s->k) != 0)
        goto nomem;
    s->rank = fc_rank_new(ctx->rng, s->k);
    s->idx = calloc(s->k, sizeof *s->idx);
    s->val = calloc(s->k, sizeof *s->val);
    if (!s->rank || !s->idx || !s->val)
        goto nomem;
    for (size_t i = 0; i < s->k; i++)
        fc_phases_activate(&s->ph, i);
    s->round = 1;
    s->eps_l = ctx->epsilon / 4;
    s->delta_l = ctx->delta / 2;
    halving_begin_round(s, ctx->rng); /* no carry yet: never complete */
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    halving_fini(s);
    return -1;
}

static int halving_select(void *state, const struct policy_ctx *ctx, int bandit,
                          struct policy_pick *pick)
{
    struct halving *s = state;
    (void)bandit;
    pick->bandit = 0;
    if (s->finished)
        return POLICY_DONE;
    return fc_phases_select(&s->ph, ctx, &pick->arm);
}

/* End of round l (lines 7–9): keep the best max(⌈|R_l|/2⌉, m) by this
 * round's means, ties at random. Then the next round, as long as carried
 * samples complete rounds on their own. */
static void halving_end_rounds(struct halving *s, const struct policy_ctx *ctx)
{
    do {
        size_t n = 0;
        for (size_t i = 0; i < s->k; i++) {
            if (!s->ph.active[i])
                continue;
            s->val[i] = fc_phases_mean(&s->ph, i);
            s->idx[n++] = i;
        }
        fc_shuffle(ctx->rng, s->idx, n);
        fc_sort_desc(s->idx, n, s->val, NULL);
        size_t keep = halving_keep(n, s->m);
        for (size_t r = keep; r < n; r++)
            fc_phases_deactivate(&s->ph, s->idx[r]);
        if (s->round == s->rounds) {
            s->finished = 1;
            return;
        }
        s->round++;
        s->eps_l *= 0.75;
        s->delta_l *= 0.5;
    } while (halving_begin_round(s, ctx->rng));
}

static void halving_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                           enum policy_event ev, double reward)
{
    struct halving *s = state;
    (void)bandit;
    if (ev == POLICY_EV_RELEASE || s->finished)
        return;
    if (fc_phases_reward(&s->ph, arm, reward))
        halving_end_rounds(s, ctx);
}

static int halving_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    (void)ctx;
    (void)bandit;
    return ((struct halving *)state)->finished;
}

/* R_last once finished (exactly m arms, line 11); before that the best m of
 * R_l by the engine's means. */
static void halving_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                              unsigned char *high)
{
    struct halving *s = state;
    (void)bandit;
    if (s->finished) {
        for (size_t i = 0; i < s->k; i++)
            high[i] = s->ph.active[i];
        return;
    }
    fc_mark_interim(ctx, NULL, s->ph.active, s->m, s->rank, s->idx, s->val, high);
}

const struct policy_ops policy_halving = {
    .name = "halving",
    .summary = "HALVING (Kalyanakrishnan & Stone 2010, Alg. 3): median elimination for m arms",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_NEEDS_EPSILON | POLICY_F_OWN_STOP,
    .params = NULL,
    .init = halving_init,
    .fini = halving_fini,
    .select = halving_select,
    .update = halving_update,
    .done = halving_done,
    .recommend = halving_recommend,
};
