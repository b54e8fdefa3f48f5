/*
 * incremental.c — INCREMENTAL (Kalyanakrishnan & Stone 2010, Algorithm 2):
 * m rounds; round j runs Median Elimination (Even-Dar, Mannor & Mansour
 * 2006) with (ε, δ/m) on the arms not selected yet and selects the arm it
 * returns. Median Elimination: ε₁ = ε/4, δ₁ = (δ/m)/2; each step pulls every
 * remaining arm ⌈(4/ε_l²) ln(3/δ_l)⌉ times (their (ε_l/2)⁻² ln(3/δ_l)) and
 * drops the arms below the median (keeps the best ⌈|S|/2⌉, ties at random:
 * a wrong keep then needs at least half the arms bad, which is what their
 * Markov step bounds), ε_{l+1} = 3ε_l/4, δ_{l+1} = δ_l/2, until one arm is
 * left. Each selected arm is (ε, 1)-optimal among the remaining arms with
 * probability 1 − δ/m, hence (ε, m)-optimal (their Theorem 2).
 *
 * Every Median Elimination step uses fresh samples (fc.h: phases). Under
 * asynchrony a step's quota is handed out once and, while it waits, pulls go
 * round-robin to its arms; the very last step answers POLICY_DONE once its
 * quota is out.
 */
#include "policies/fc.h"
#include "base/ser.h"
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct incremental {
    struct fc_elim e;    /* first: the fc_elim_* entries take the state as is;
                            e.ph is the current Median Elimination step */
    double eps, delta_m; /* ε and δ/m: Median Elimination's inputs */
    double eps_l, delta_l;
    unsigned n_selected;
    unsigned char *selected; /* S_l */
};

static void incremental_fini(void *state)
{
    struct incremental *s = state;
    if (s == NULL)
        return;
    fc_elim_fini(&s->e);
    free(s->selected);
    free(s);
}

/* Median Elimination, step 2 (Even-Dar et al. 2006, Algorithm 2). */
static uint64_t me_quota(double eps_l, double delta_l)
{
    return fc_count(4.0 / (eps_l * eps_l) * log(3.0 / delta_l));
}

/* Is the current step the last one of the last Median Elimination? */
static int me_last_step(const struct incremental *s)
{
    return s->n_selected + 1 == s->e.m && s->e.ph.n_active <= 2;
}

static int me_begin_step(struct incremental *s, gsl_rng *rng)
{
    return fc_phases_begin(&s->e.ph, rng, me_quota(s->eps_l, s->delta_l), me_last_step(s));
}

/* A new Median Elimination over every arm not selected. */
static void me_start(struct incremental *s)
{
    for (size_t i = 0; i < s->e.k; i++)
        if (!s->selected[i])
            fc_phases_activate(&s->e.ph, i);
    s->eps_l = s->eps / 4;
    s->delta_l = s->delta_m / 2;
}

/* End of a Median Elimination step: keep the best ⌈|S|/2⌉ by the step's
 * means (ties at random). One arm left: select it (Algorithm 2, line 4) and
 * start the next Median Elimination, or finish with S_{m+1}. Loops while
 * carried samples complete steps on their own. */
static void incremental_end_steps(struct fc_elim *e, const struct policy_ctx *ctx)
{
    struct incremental *s = (struct incremental *)e;
    do {
        size_t n = fc_elim_order_active(e, ctx->rng);
        size_t keep = (n + 1) / 2;
        for (size_t r = keep; r < n; r++)
            fc_phases_deactivate(&e->ph, e->idx[r]);
        s->eps_l *= 0.75;
        s->delta_l *= 0.5;
        if (keep == 1) {
            size_t a = e->idx[0];
            fc_phases_deactivate(&e->ph, a);
            s->selected[a] = 1;
            if (++s->n_selected == e->m) {
                for (size_t i = 0; i < e->k; i++)
                    e->chosen[i] = s->selected[i];
                e->finished = 1;
                return;
            }
            me_start(s);
        }
    } while (me_begin_step(s, ctx->rng));
}

static int incremental_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct incremental *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t k = ctx->n_arms[0];
    s->eps = ctx->epsilon;
    s->delta_m = ctx->delta / ctx->m;
    if (fc_elim_need_epsilon(ctx, "incremental", err, errlen) != 0)
        goto fail;
    /* The whole schedule: run j works on K − j + 1 arms. */
    double total = 0;
    for (unsigned j = 1; j <= ctx->m; j++) {
        size_t r = k - j + 1;
        double e = s->eps / 4, d = s->delta_m / 2;
        while (r > 1) {
            uint64_t q = me_quota(e, d);
            total += (double)q * (double)r;
            if (q == 0 || total > FC_MAX_PULLS) {
                fc_elim_too_long("incremental", err, errlen);
                goto fail;
            }
            r = (r + 1) / 2;
            e *= 0.75;
            d *= 0.5;
        }
    }
    s->selected = calloc(k, 1);
    if (s->selected == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (fc_elim_init(&s->e, ctx, incremental_end_steps, err, errlen) != 0)
        goto fail;
    /* Before the end: the arms selected so far and the best of the rest by
     * the engine's means. */
    s->e.interim_accepted = s->selected;
    me_start(s);
    me_begin_step(s, ctx->rng);
    *state = s;
    return 0;
fail:
    incremental_fini(s);
    return -1;
}

static void incremental_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct incremental *c = state;
    (void)ctx;
    fc_elim_snap(&c->e, s);
    ser_f64(s, &c->eps);
    ser_f64(s, &c->delta_m);
    ser_f64(s, &c->eps_l);
    ser_f64(s, &c->delta_l);
    ser_uint(s, &c->n_selected);
    ser_flags(s, c->selected, c->e.k);
    ser_check(s, c->n_selected <= c->e.k);
}

const struct policy_ops policy_incremental = {
    .name = "incremental",
    .summary = "INCREMENTAL (Kalyanakrishnan & Stone 2010, Alg. 2): m runs of Median Elimination",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_NEEDS_EPSILON |
             POLICY_F_OWN_STOP | POLICY_F_PHASES,
    .params = NULL,
    .init = incremental_init,
    .fini = incremental_fini,
    .select = fc_elim_select,
    .update = fc_elim_update,
    .done = fc_elim_done,
    .recommend = fc_elim_recommend,
    .snap = incremental_snap,
};
