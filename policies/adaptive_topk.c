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
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct atopk {
    size_t k;
    unsigned m;
    double eps, delta;
    unsigned r;
    unsigned n_acc;
    unsigned char *acc;  /* A */
    unsigned char *rej;  /* B */
    struct fc_phases ph; /* S and the round's samples */
    int finished;
    unsigned char *chosen;
    uint32_t *rank;
    size_t *idx;
    double *val;
};

static void atopk_fini(void *state)
{
    struct atopk *s = state;
    if (s == NULL)
        return;
    fc_phases_free(&s->ph);
    free(s->acc);
    free(s->rej);
    free(s->chosen);
    free(s->rank);
    free(s->idx);
    free(s->val);
    free(s);
}

/* The outer loop's condition, Algorithm 1 line 3. */
static int atopk_more(const struct atopk *s, unsigned r)
{
    return 2.0 * ldexp(1.0, -(int)r) * (double)(s->m - s->n_acc) > s->eps * (double)s->m;
}

/* Round r's count, line 5. */
static uint64_t atopk_quota(const struct atopk *s, unsigned r)
{
    double rr = (double)r;
    return fc_count(ldexp(1.0, 2 * (int)r) * log(2.0 * (double)s->k * rr * rr / s->delta));
}

/* The end (line 16): A ∪ the (m − |A|) best of S by the last round's means
 * (ties at random); with no round run (never: the loop always runs once),
 * the engine's means. */
static void atopk_finish(struct atopk *s, const struct policy_ctx *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < s->k; i++) {
        s->chosen[i] = s->acc[i];
        if (!s->ph.active[i])
            continue;
        s->val[i] = fc_phases_mean(&s->ph, i);
        s->idx[n++] = i;
    }
    fc_shuffle(ctx->rng, s->idx, n);
    fc_sort_desc(s->idx, n, s->val, NULL);
    for (size_t r = 0; r < n && r < s->m - s->n_acc; r++)
        s->chosen[s->idx[r]] = 1;
    s->finished = 1;
}

/* Start round r + 1, or finish when the outer loop ends. Returns 1 when a
 * new round's carried samples already complete it. */
static int atopk_next_round(struct atopk *s, const struct policy_ctx *ctx)
{
    if (s->n_acc == s->m || s->ph.n_active + s->n_acc <= s->m || !atopk_more(s, s->r)) {
        atopk_finish(s, ctx);
        return 0;
    }
    uint64_t q = atopk_quota(s, s->r + 1);
    if (q == 0) {
        atopk_finish(s, ctx);
        return 0;
    }
    s->r++;
    return fc_phases_begin(&s->ph, ctx->rng, q, !atopk_more(s, s->r));
}

/* Lines 6–15 at the end of round r: accept or reject while some empirical
 * gap exceeds 2·2^(−r). idx holds S sorted by mean (ties at random); an
 * accepted arm is the head of that order, a rejected one its tail, so
 * removing it keeps the rest sorted. */
static void atopk_classify(struct atopk *s, const struct policy_ctx *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < s->k; i++) {
        if (!s->ph.active[i])
            continue;
        s->val[i] = fc_phases_mean(&s->ph, i);
        s->idx[n++] = i;
    }
    fc_shuffle(ctx->rng, s->idx, n);
    fc_sort_desc(s->idx, n, s->val, NULL);
    size_t lo = 0, hi = n; /* S = idx[lo..hi) */
    double bar = 2.0 * ldexp(1.0, -(int)s->r);
    while (s->n_acc < s->m && hi - lo > s->m - s->n_acc) {
        size_t need = s->m - s->n_acc;
        double ta = s->val[s->idx[lo + need]];     /* (m−|A|+1)-th largest */
        double tb = s->val[s->idx[lo + need - 1]]; /* (m−|A|)-th largest */
        /* Δ̃ is largest at one of the two ends of the order. */
        double gtop = s->val[s->idx[lo]] - ta;
        double gbot = tb - s->val[s->idx[hi - 1]];
        double g = gtop > gbot ? gtop : gbot;
        if (!(g > bar))
            break;
        /* argmax with random ties: several arms may share the extreme
         * mean, and the two ends may tie; count the candidates. */
        size_t ntop = 0, nbot = 0;
        if (gtop == g)
            while (lo + ntop < hi && s->val[s->idx[lo + ntop]] == s->val[s->idx[lo]])
                ntop++;
        if (gbot == g)
            while (nbot < hi - lo && s->val[s->idx[hi - 1 - nbot]] == s->val[s->idx[hi - 1]])
                nbot++;
        /* With equal means at both ends every gap is 0: not reached. */
        size_t u = policy_rand_index(ctx->rng, ntop + nbot);
        size_t x;
        if (u < ntop) {
            /* Move the chosen top arm to the head, then drop it. */
            size_t t = s->idx[lo + u];
            s->idx[lo + u] = s->idx[lo];
            s->idx[lo] = t;
            x = s->idx[lo++];
        } else {
            size_t v = hi - 1 - (u - ntop);
            size_t t = s->idx[v];
            s->idx[v] = s->idx[hi - 1];
            s->idx[hi - 1] = t;
            x = s->idx[--hi];
        }
        /* Line 9: accept when above θ̃_a. A top-end arm is above θ̃_a unless
         * every mean ties, a bottom-end one is below θ̃_b ≤ … */
        if (s->val[x] > ta) {
            s->acc[x] = 1;
            s->n_acc++;
        } else {
            s->rej[x] = 1;
        }
        fc_phases_deactivate(&s->ph, x);
    }
    /* The edges: all accepted (reject the rest) or S no larger than what is
     * still needed (accept it). */
    if (s->n_acc == s->m) {
        for (size_t r = lo; r < hi; r++) {
            s->rej[s->idx[r]] = 1;
            fc_phases_deactivate(&s->ph, s->idx[r]);
        }
    }
}

static void atopk_end_rounds(struct atopk *s, const struct policy_ctx *ctx)
{
    do {
        atopk_classify(s, ctx);
    } while (atopk_next_round(s, ctx));
}

static int atopk_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct atopk *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->k = ctx->n_arms[0];
    s->m = ctx->m;
    s->eps = ctx->epsilon;
    s->delta = ctx->delta;
    if (fc_phases_init(&s->ph, s->k) != 0)
        goto nomem;
    s->acc = calloc(s->k, 1);
    s->rej = calloc(s->k, 1);
    s->chosen = calloc(s->k, 1);
    s->rank = fc_rank_new(ctx->rng, s->k);
    s->idx = calloc(s->k, sizeof *s->idx);
    s->val = calloc(s->k, sizeof *s->val);
    if (!s->acc || !s->rej || !s->chosen || !s->rank || !s->idx || !s->val)
        goto nomem;
    for (size_t i = 0; i < s->k; i++)
        fc_phases_activate(&s->ph, i);
    s->r = 0;
    if (atopk_next_round(s, ctx)) /* r = 1; never complete without samples */
        atopk_end_rounds(s, ctx);
    (void)err;
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    atopk_fini(s);
    return -1;
}

static int atopk_select(void *state, const struct policy_ctx *ctx, int bandit,
                        struct policy_pick *pick)
{
    struct atopk *s = state;
    (void)bandit;
    pick->bandit = 0;
    if (s->finished)
        return POLICY_DONE;
    return fc_phases_select(&s->ph, ctx, &pick->arm);
}

static void atopk_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                         enum policy_event ev, double reward)
{
    struct atopk *s = state;
    (void)bandit;
    if (ev == POLICY_EV_RELEASE || s->finished)
        return;
    if (fc_phases_reward(&s->ph, arm, reward))
        atopk_end_rounds(s, ctx);
}

static int atopk_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    (void)ctx;
    (void)bandit;
    return ((struct atopk *)state)->finished;
}

/* A ∪ best of S once finished; before that A and the best of S by the
 * engine's means. */
static void atopk_recommend(void *state, const struct policy_ctx *ctx, size_t bandit,
                            unsigned char *high)
{
    struct atopk *s = state;
    (void)bandit;
    if (s->finished) {
        for (size_t i = 0; i < s->k; i++)
            high[i] = s->chosen[i];
        return;
    }
    fc_mark_interim(ctx, s->acc, s->ph.active, s->m, s->rank, s->idx, s->val, high);
}

const struct policy_ops policy_adaptive_topk = {
    .name = "adaptive-topk",
    .summary = "ADAPTIVETOPK (Chen, Li & Qiao 2017, Alg. 1): ε-top-m in aggregate regret",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_TOPM | POLICY_F_OWN_STOP,
    .params = NULL,
    .init = atopk_init,
    .fini = atopk_fini,
    .select = atopk_select,
    .update = atopk_update,
    .done = atopk_done,
    .recommend = atopk_recommend,
};
