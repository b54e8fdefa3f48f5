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
#include "base/ser.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct halving {
    struct fc_elim e; /* first: the fc_elim_* entries take the state as is */
    unsigned rounds;  /* ⌈log₂(K/m)⌉ */
    unsigned round;   /* 1-based, current */
    double eps_l, delta_l;
};

static void halving_fini(void *state)
{
    struct halving *s = state;
    if (s == NULL)
        return;
    fc_elim_fini(&s->e);
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
    return fc_phases_begin(&s->e.ph, rng, halving_quota(s->e.m, s->eps_l, s->delta_l),
                           s->round == s->rounds);
}

/* End of round l (lines 7–9): keep the best max(⌈|R_l|/2⌉, m) by this
 * round's means, ties at random; R_last (m arms, line 11) is the answer.
 * Then the next round, as long as carried samples complete rounds on their
 * own. */
static void halving_end_rounds(struct fc_elim *e, const struct policy_ctx *ctx)
{
    struct halving *s = (struct halving *)e;
    do {
        size_t n = fc_elim_order_active(e, ctx->rng);
        size_t keep = halving_keep(n, e->m);
        for (size_t r = keep; r < n; r++)
            fc_phases_deactivate(&e->ph, e->idx[r]);
        if (s->round == s->rounds) {
            for (size_t i = 0; i < e->k; i++)
                e->chosen[i] = e->ph.active[i];
            e->finished = 1;
            return;
        }
        s->round++;
        s->eps_l *= 0.75;
        s->delta_l *= 0.5;
    } while (halving_begin_round(s, ctx->rng));
}

static int halving_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct halving *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t k = ctx->n_arms[0];
    unsigned m = ctx->m;
    if (fc_elim_need_epsilon(ctx, "halving", err, errlen) != 0)
        goto fail;
    s->rounds = halving_rounds(k, m);
    /* The whole schedule, to refuse one that cannot finish. */
    double total = 0, e = ctx->epsilon / 4, d = ctx->delta / 2;
    size_t r = k;
    for (unsigned l = 1; l <= s->rounds; l++) {
        uint64_t q = halving_quota(m, e, d);
        total += (double)q * (double)r;
        if (q == 0 || total > FC_MAX_PULLS) {
            fc_elim_too_long("halving", err, errlen);
            goto fail;
        }
        r = halving_keep(r, m);
        e *= 0.75;
        d *= 0.5;
    }
    if (fc_elim_init(&s->e, ctx, halving_end_rounds, err, errlen) != 0)
        goto fail;
    /* Before the end: the best m of R_l by the engine's means. */
    s->e.interim_active = 1;
    s->round = 1;
    s->eps_l = ctx->epsilon / 4;
    s->delta_l = ctx->delta / 2;
    halving_begin_round(s, ctx->rng); /* no carry yet: never complete */
    *state = s;
    return 0;
fail:
    halving_fini(s);
    return -1;
}

static void halving_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct halving *h = state;
    (void)ctx;
    fc_elim_snap(&h->e, s);
    ser_uint(s, &h->rounds);
    ser_uint(s, &h->round);
    ser_check(s, h->round <= h->rounds);
    ser_f64(s, &h->eps_l);
    ser_f64(s, &h->delta_l);
}

const struct policy_ops policy_halving = {
    .name = "halving",
    .summary = "HALVING (Kalyanakrishnan & Stone 2010, Alg. 3): median elimination for m arms",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_NEEDS_EPSILON |
             POLICY_F_OWN_STOP | POLICY_F_PHASES,
    .params = NULL,
    .init = halving_init,
    .fini = halving_fini,
    .select = fc_elim_select,
    .update = fc_elim_update,
    .done = fc_elim_done,
    .recommend = fc_elim_recommend,
    .snap = halving_snap,
};
