/*
 * adaptive_topk.c — ADAPTIVETOPK (Chen, Li & Qiao 2017, Algorithm 1):
 * ε-top-m arms in aggregate regret, (1/m)(Σ_{top m} θ − Σ_{chosen} θ) ≤ ε.
 *
 *   r = 0, S = all arms, A = B = ∅.
 *   while 2·2^(−r)(m − |A|) > ε m:
 *     r += 1; pull each arm of S ⌈2^(2r) ln(2 K r²/δ)⌉ times (fresh samples)
 *     θ̃_a, θ̃_b = the (m−|A|+1)-th and (m−|A|)-th largest means in S;
 *     Δ̃_i = max(θ̃_i − θ̃_a, θ̃_b − θ̃_i)
 *     while max_i Δ̃_i > 2·2^(−r): x = argmax; accept x into A if θ̃_x > θ̃_a,
 *       else reject it into B; S −= x; recompute θ̃_a, θ̃_b
 *   return A ∪ the (m − |A|) best of S (by the last round's means).
 *
 * Constants checked against the paper's Claim 1: with t = 2^(2r) ln(2Kr²/δ)
 * samples in [0, 1], Hoeffding gives P(|θ̃ − θ| ≥ 2^(−r)) ≤ 2 e^(−2 t 4^(−r))
 * = 2 (δ / (2Kr²))² ≤ δ / (2Kr²); the union over arms and rounds is
 * δ π²/12 < δ. Rounds use fresh samples: event E is defined on the
 * round-r sample of each arm.
 *
 * Two edges the pseudo-code leaves implicit: when |A| reaches m the rest of S
 * is rejected, and when |S| falls to m − |A| the rest is accepted (θ̃_a no
 * longer exists); either ends the run. With ε = 0 the run ends only when the
 * top m are separated; a round whose count would pass FC_MAX_PULLS ends it
 * with the current answer (unreachable unless ε < ~1e-7 or top means tie).
 *
 * Under asynchrony (fc.h) a round's quota is handed out once; while it waits,
 * pulls go round-robin to S and count in the next round. A round known to be
 * the last (2·2^(−r)(m − |A|) ≤ ε m already at its start) answers
 * POLICY_DONE once its quota is out.
 */
#include "policies/fc.h"
#include "base/ser.h"
#include "policies/policy.h"
#include "policies/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct atopk {
    struct fc_elim e; /* first: the fc_elim_* entries take the state as is;
                         e.ph holds S and the round's samples */
    double eps, delta;
    unsigned r;
    unsigned n_acc;
    unsigned char *acc; /* A */
    unsigned char *rej; /* B */
};

static void atopk_fini(void *state)
{
    struct atopk *s = state;
    if (s == NULL)
        return;
    fc_elim_fini(&s->e);
    free(s->acc);
    free(s->rej);
    free(s);
}

/* The outer loop's condition, Algorithm 1 line 3. */
static int atopk_more(const struct atopk *s, unsigned r)
{
    return 2.0 * ldexp(1.0, -(int)r) * (double)(s->e.m - s->n_acc) > s->eps * (double)s->e.m;
}

/* Round r's count, line 5. */
static uint64_t atopk_quota(const struct atopk *s, unsigned r)
{
    double rr = (double)r;
    return fc_count(ldexp(1.0, 2 * (int)r) * log(2.0 * (double)s->e.k * rr * rr / s->delta));
}

/* The end (line 16): A ∪ the (m − |A|) best of S by the last round's means
 * (ties at random); with no round run (never: the loop always runs once),
 * the engine's means. */
static void atopk_finish(struct atopk *s, const struct policy_ctx *ctx)
{
    struct fc_elim *e = &s->e;
    for (size_t i = 0; i < e->k; i++)
        e->chosen[i] = s->acc[i];
    size_t n = fc_elim_order_active(e, ctx->rng);
    for (size_t r = 0; r < n && r < e->m - s->n_acc; r++)
        e->chosen[e->idx[r]] = 1;
    e->finished = 1;
}

/* Start round r + 1, or finish when the outer loop ends. Returns 1 when a
 * new round's carried samples already complete it. */
static int atopk_next_round(struct atopk *s, const struct policy_ctx *ctx)
{
    if (s->n_acc == s->e.m || s->e.ph.n_active + s->n_acc <= s->e.m || !atopk_more(s, s->r)) {
        atopk_finish(s, ctx);
        return 0;
    }
    uint64_t q = atopk_quota(s, s->r + 1);
    if (q == 0) {
        atopk_finish(s, ctx);
        return 0;
    }
    s->r++;
    return fc_phases_begin(&s->e.ph, ctx->rng, q, !atopk_more(s, s->r));
}

/* Lines 6–15 at the end of round r: accept or reject while some empirical
 * gap exceeds 2·2^(−r). idx holds S sorted by mean (ties at random); an
 * accepted arm is the head of that order, a rejected one its tail, so
 * removing it keeps the rest sorted. */
static void atopk_classify(struct atopk *s, const struct policy_ctx *ctx)
{
    size_t n = fc_elim_order_active(&s->e, ctx->rng);
    size_t *idx = s->e.idx;
    const double *val = s->e.val;
    const unsigned m = s->e.m;
    size_t lo = 0, hi = n; /* S = idx[lo..hi) */
    double bar = 2.0 * ldexp(1.0, -(int)s->r);
    while (s->n_acc < m && hi - lo > m - s->n_acc) {
        size_t need = m - s->n_acc;
        double ta = val[idx[lo + need]];     /* (m−|A|+1)-th largest */
        double tb = val[idx[lo + need - 1]]; /* (m−|A|)-th largest */
        /* Δ̃ is largest at one of the two ends of the order. */
        double gtop = val[idx[lo]] - ta;
        double gbot = tb - val[idx[hi - 1]];
        double g = gtop > gbot ? gtop : gbot;
        if (!(g > bar))
            break;
        /* argmax with random ties: several arms may share the extreme
         * mean, and the two ends may tie; count the candidates. */
        size_t ntop = 0, nbot = 0;
        if (gtop == g)
            while (lo + ntop < hi && val[idx[lo + ntop]] == val[idx[lo]])
                ntop++;
        if (gbot == g)
            while (nbot < hi - lo && val[idx[hi - 1 - nbot]] == val[idx[hi - 1]])
                nbot++;
        /* With equal means at both ends every gap is 0: not reached. */
        size_t u = rng_index(ctx->rng, ntop + nbot);
        size_t x;
        if (u < ntop) {
            /* Move the chosen top arm to the head, then drop it. */
            size_t t = idx[lo + u];
            idx[lo + u] = idx[lo];
            idx[lo] = t;
            x = idx[lo++];
        } else {
            size_t v = hi - 1 - (u - ntop);
            size_t t = idx[v];
            idx[v] = idx[hi - 1];
            idx[hi - 1] = t;
            x = idx[--hi];
        }
        /* Line 9: accept when above θ̃_a. A top-end arm is above θ̃_a unless
         * every mean ties, a bottom-end one is below θ̃_b ≤ … */
        if (val[x] > ta) {
            s->acc[x] = 1;
            s->n_acc++;
        } else {
            s->rej[x] = 1;
        }
        fc_phases_deactivate(&s->e.ph, x);
    }
    /* The edges: all accepted (reject the rest) or S no larger than what is
     * still needed (accept it). */
    if (s->n_acc == m) {
        for (size_t r = lo; r < hi; r++) {
            s->rej[idx[r]] = 1;
            fc_phases_deactivate(&s->e.ph, idx[r]);
        }
    }
}

static void atopk_end_rounds(struct fc_elim *e, const struct policy_ctx *ctx)
{
    struct atopk *s = (struct atopk *)e;
    do {
        atopk_classify(s, ctx);
    } while (atopk_next_round(s, ctx));
}

static int atopk_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct atopk *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->eps = ctx->epsilon;
    s->delta = ctx->delta;
    if (fc_elim_init(&s->e, ctx, atopk_end_rounds, err, errlen) != 0)
        goto fail;
    /* Before the end: A and the best of S by the engine's means. */
    s->acc = calloc(s->e.k, 1);
    s->rej = calloc(s->e.k, 1);
    if (!s->acc || !s->rej) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    s->e.interim_accepted = s->acc;
    s->e.interim_active = 1;
    s->r = 0;
    if (atopk_next_round(s, ctx)) /* r = 1; never complete without samples */
        atopk_end_rounds(&s->e, ctx);
    *state = s;
    return 0;
fail:
    atopk_fini(s);
    return -1;
}

static void atopk_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct atopk *a = state;
    (void)ctx;
    fc_elim_snap(&a->e, s);
    ser_f64(s, &a->eps);
    ser_f64(s, &a->delta);
    ser_uint(s, &a->r);
    ser_uint(s, &a->n_acc);
    ser_flags(s, a->acc, a->e.k);
    ser_flags(s, a->rej, a->e.k);
    ser_check(s, a->n_acc <= a->e.k);
}

const struct policy_ops policy_adaptive_topk = {
    .name = "adaptive-topk",
    .summary = "ADAPTIVETOPK (Chen, Li & Qiao 2017, Alg. 1): ε-top-m in aggregate regret",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_OWN_STOP | POLICY_F_PHASES,
    .params = NULL,
    .init = atopk_init,
    .fini = atopk_fini,
    .select = fc_elim_select,
    .update = fc_elim_update,
    .done = fc_elim_done,
    .recommend = fc_elim_recommend,
    .snap = atopk_snap,
};
