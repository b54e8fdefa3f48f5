/*
 * seq_halving.c — Sequential Halving (Karnin, Koren & Somekh 2013, Alg. 1;
 * docs/policy-formulas.md), with top m.
 *
 * Rounds r = 0..R−1 on survivor sets S_0 = all K arms,
 * |S_{r+1}| = max(m, ⌈|S_r|/2⌉), until m arms remain (R = ⌈log₂ K⌉ for m = 1).
 * Round r pulls every survivor t_r = ⌊N / (|S_r| R)⌋ times, then keeps the
 * |S_{r+1}| best by empirical mean (ties at random). So each round spends at
 * most N/R and the rounds at most N; as in the paper the rounding leftover is
 * not spent (select() answers POLICY_DONE after the last round).
 *
 * One departure, on purpose: Karnin et al.'s analysis ranks a round on the
 * samples of that round only; we rank on every sample of the arm (the
 * engine's running means). The earlier samples are as valid as the new ones
 * (the usual practice); discarding them would waste most of the budget.
 *
 * Needs t_0 ≥ 1, i.e. N ≥ K R (checked at init).
 * One bandit per instance (the engine splits the budget between bandits).
 */
#include "policies/phases.h"
#include "base/ser.h"

#include <stdio.h>
#include <stdlib.h>

struct sh {
    struct phases ph; /* first: phases.h reads the state as this */
    size_t *keep;     /* survivors after each round */
};

/* Keep the |S_{r+1}| best active arms, reject the others. */
static void sh_decide(struct phases *ph, const struct policy_ctx *ctx, size_t phase)
{
    const struct sh *s = (const struct sh *)ph;
    size_t na = phases_order_active(ph, ctx, 0);
    for (size_t r = s->keep[phase]; r < na; r++)
        phases_reject(ph, ph->order[r]);
}

/* Survivor sizes; returns R. keep may be NULL (count only). */
static size_t sh_rounds(size_t k, unsigned m, size_t *keep)
{
    size_t r = 0, s = k;
    while (s > m) {
        size_t next = (s + 1) / 2;
        if (next < m)
            next = m;
        if (keep != NULL)
            keep[r] = next;
        s = next;
        r++;
    }
    return r;
}

static void sh_fini(void *state)
{
    struct sh *s = state;
    if (s == NULL)
        return;
    phases_fini(&s->ph);
    free(s->keep);
    free(s);
}

/* The budget (the instance's share) must pull every arm once a round. */
static int sh_budget_check(const struct policy_ctx *ctx, char *err, size_t errlen)
{
    size_t k = ctx->n_arms[0];
    size_t rounds = sh_rounds(k, ctx->m, NULL);
    if (ctx->budget >= (uint64_t)k * rounds)
        return 0;
    snprintf(err, errlen,
             "goal.budget: seq-halving needs at least %zu pulls (%zu arms × %zu rounds)%s",
             k * rounds, k, rounds, ctx->n_bandits == 1 ? "" : " in each bandit's share");
    return -1;
}

/* Cumulative per-arm targets of each round from ctx->budget (s->keep set). */
static void sh_plan(struct sh *s, const struct policy_ctx *ctx)
{
    size_t k = ctx->n_arms[0];
    size_t rounds = s->ph.nphases;
    uint64_t cum = 0;
    size_t survivors = k;
    for (size_t r = 0; r < rounds; r++) {
        cum += ctx->budget / ((uint64_t)survivors * rounds);
        s->ph.target[r] = cum;
        survivors = s->keep[r];
    }
}

static int sh_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    size_t k = ctx->n_arms[0];
    size_t rounds = sh_rounds(k, ctx->m, NULL);
    if (sh_budget_check(ctx, err, errlen) != 0)
        return -1;
    struct sh *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->keep = calloc(rounds, sizeof *s->keep);
    if (s->keep == NULL) {
        snprintf(err, errlen, "out of memory");
        sh_fini(s);
        return -1;
    }
    if (phases_init(&s->ph, ctx, rounds, sh_decide, err, errlen) != 0) {
        sh_fini(s);
        return -1;
    }
    sh_rounds(k, ctx->m, s->keep);
    sh_plan(s, ctx);
    *state = s;
    return 0;
}

/* A budget edit: the schedule again from the new share. */
static int sh_rebudget(void *state, const struct policy_ctx *ctx, int check, char *err,
                       size_t errlen)
{
    if (sh_budget_check(ctx, err, errlen) != 0)
        return -1;
    if (!check)
        sh_plan(state, ctx);
    return 0;
}

static void sh_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct sh *h = state;
    (void)ctx;
    phases_snap(&h->ph, s);
    ser_indices(s, h->keep, h->ph.nphases, h->ph.total + 1); /* arms kept: at most all */
}

const struct policy_ops policy_seq_halving = {
    .name = "seq-halving",
    .summary = "Sequential Halving (Karnin, Koren & Somekh 2013): halve the survivors each round",
    .flags = POLICY_F_FIXED_BUDGET | POLICY_F_TOPM | POLICY_F_OWN_STOP | POLICY_F_PHASES,
    .params = NULL,
    .init = sh_init,
    .fini = sh_fini,
    .select = phases_select,
    .update = phases_update,
    .done = phases_done,
    .recommend = phases_recommend,
    .rebudget = sh_rebudget,
    .snap = sh_snap,
};
