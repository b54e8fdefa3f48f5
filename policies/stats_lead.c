/*
 * stats_lead.c — the proven rule's leader product (stats.h, "the leader
 * product"): for one returned arm with ε = 0 and K ≥ 3, one e-value per
 * challenger a for the null "a is a best arm": a's own e-value for
 * "μ_a ≥ c" times, for every other arm h, an e-value for "μ_h ≤ c" on the
 * rewards h received while it led its bandit, at a common null point c.
 * Compared with ln(1/δ): the error's union runs over no pairs, where the
 * pair rule's runs over K − 1 (docs/stop-rules.md, `glr`, "The leader
 * product", has the proof and the measurements).
 *
 * No state but the caller's memo; a stop or an evidence without one
 * allocates k regrets.
 */
#include "policies/stats.h"

#include <math.h>
#include <stdlib.h>

#include "policies/stats_impl.h"

int stats_glr_uses_lead(enum stats_glr_threshold kind, size_t k, unsigned m, double eps)
{
    return kind == STATS_GLR_PROVEN && m == 1 && k >= 3 && !(eps > 0.0);
}

double stats_glr_union(enum stats_glr_threshold kind, size_t k, unsigned m, double eps)
{
    if (stats_glr_uses_lead(kind, k, m, eps))
        return 1.0;
    if (m > 0 && (size_t)m < k)
        return (double)m * (double)(k - m);
    return 1.0;
}

/* The leader is chosen on the rewards before x: whether x counts cannot
 * depend on x, which is what keeps each lead factor a supermartingale. */
size_t stats_arms_leader(const struct stats_arm *arms, size_t k)
{
    size_t lead = k;
    for (size_t i = 0; i < k; i++)
        if (arms[i].n > 0 && (lead == k || arms[i].mean > arms[lead].mean))
            lead = i;
    return lead;
}

void stats_arm_lead(struct stats_arm *arms, size_t k, size_t arm, double x)
{
    if (arm < k && stats_arms_leader(arms, k) == arm)
        stats_arm_lead_add(&arms[arm], x);
}

void stats_arm_lead_add(struct stats_arm *a, double x)
{
    if (isnan(x))
        return;
    x = unit_clamp(x);
    if (a->pool_n < STATS_LEAD_POOLED) {
        a->pool_n++;
        a->pool_sum += x;
    } else {
        a->lead_n++;
        a->lead_sum += x;
    }
}

/* The weights, fixed before any data, on a fixed partition of the null
 * mean c: each arm's factor mixes its KT e-value and its one-sided normal
 * mixture (as in the pair rule: KT near 0 and 1, the normal mixture near
 * 1/2), and a lead factor keeps an atom P0 at 1 (the mixture's λ = 0), so
 * that an arm that led for a while and then fell behind costs at most
 * ln(1/P0) instead of its KT regret. The table and P0 were chosen in pilot
 * runs (docs/stop-rules.md, "The leader product"); any table fixed before
 * the data keeps the proof. ln w is kept with w (the unit tests recompute
 * it). */
#define LEAD_PIECES 3
static const double LEAD_EDGE[LEAD_PIECES + 1] = {0.0, 0.15, 0.85, 1.0};
/* the challenger a's factor, "μ_a ≥ c": KT, normal mixture */
static const double LEAD_LW_A[LEAD_PIECES][2] = {
    {-0.13353139262452263, -2.0794415416798357}, /* 7/8, 1/8 */
    {-2.0794415416798357, -0.13353139262452263}, /* 1/8, 7/8 */
    {-0.13353139262452263, -2.0794415416798357},
};
/* a lead factor, "μ_h ≤ c", beside its atom: KT, normal mixture */
static const double LEAD_LW_H[LEAD_PIECES][2] = {
    {-0.2076393647782445, -1.6739764335716716}, /* 13/16, 3/16 */
    {-3.4657359027997265, -0.0317486983145803}, /* 1/32, 31/32 */
    {-0.2076393647782445, -1.6739764335716716},
};
#define LEAD_LN_P0 (-1.8971199848858813)   /* ln 0.15 */
#define LEAD_LN_1P0 (-0.16251892949777494) /* ln 0.85 */

/* The piece that holds c (the first, at an edge). */
static int lead_piece(double c)
{
    int k = 0;
    while (k + 1 < LEAD_PIECES && c > LEAD_EDGE[k + 1])
        k++;
    return k;
}

void stats_glr_lead_weights(double c, double w_a[2], double w_h[3])
{
    int k = lead_piece(c);
    for (int s = 0; s < 2; s++) {
        w_a[s] = exp(LEAD_LW_A[k][s]);
        w_h[s] = exp(LEAD_LN_1P0 + LEAD_LW_H[k][s]);
    }
    w_h[2] = exp(LEAD_LN_P0);
}

static double lse2(double x, double y)
{
    double h = x > y ? x : y;
    if (h == -INFINITY || h == INFINITY || h != h)
        return h;
    return h + log1p(exp(-fabs(x - y)));
}

static double unit_mean(double sum, uint64_t n)
{
    return unit_clamp(n > 0 ? sum / (double)n : 0.0);
}

/* One challenger's problem: the arms, their regrets (reg[i].regret for
 * (n, μ̂), reg[i].lead_regret for the lead rewards, both current), a, the
 * pool of the other arms' first lead rewards (count, sum, the normal
 * mixture's constants) and the current piece. */
struct lead_ev {
    const struct stats_arm *arms;
    struct stats_glr_memo_arm *reg;
    size_t k, a, first; /* first: the first arm with lead rewards (reg[].next) */
    double pn, ps, pvr, psq, pc0;
    int piece;
};

/* ln F_a(c): a's KT e-value at max(c, μ̂_a) and its normal mixture for
 * "μ_a ≥ c"; nondecreasing in c. */
static double lead_fa(const struct lead_ev *e, double c)
{
    const struct stats_arm *x = &e->arms[e->a];
    const struct stats_glr_memo_arm *g = &e->reg[e->a];
    double n = (double)x->n, m = unit_clamp(x->mean);
    double kt = (n > 0.0 && c > m ? n * kl_exact(m, c) : 0.0) - g->regret;
    double nm = mix_logm_lower(n * (c - m), g->vr, g->sq, g->c0);
    return lse2(LEAD_LW_A[e->piece][0] + kt, LEAD_LW_A[e->piece][1] + nm);
}

/* ln G_h(c): the atom, h's KT e-value at min(c, μ̂'_h) and its normal
 * mixture for "μ_h ≤ c" (the pair rule's High prior ρ_H), on the lead
 * rewards; nonincreasing in c, and at most 0 from c = μ̂'_h on (the KT
 * factor is e^{−r'} ≤ 1 there and the mixture at most its value at a zero
 * deviation, ½ ln(ρ_H/(V + ρ_H)) ≤ 0). */
static double lead_g1(const struct lead_ev *e, size_t h, double c)
{
    const struct stats_arm *x = &e->arms[h];
    const struct stats_glr_memo_arm *g = &e->reg[h];
    double n = (double)x->lead_n, m = unit_mean(x->lead_sum, x->lead_n);
    double kt = (c < m ? n * kl_exact(m, c) : 0.0) - g->lead_regret;
    double nm = mix_logm_lower(n * (m - c), g->lead_vr, g->lead_sq, g->lead_c0);
    double in = lse2(LEAD_LW_H[e->piece][0] + kt, LEAD_LW_H[e->piece][1] + nm);
    return lse2(LEAD_LN_P0, LEAD_LN_1P0 + in);
}

/* ln G_pool(c): the atom and the normal mixture for "every pooled reward's
 * mean ≤ c" on the pool (Hoeffding holds for each reward at its own mean:
 * no KT factor, whose likelihood needs one mean); nonincreasing in c, at
 * most 0 from the pool's mean on. */
static double lead_gp(const struct lead_ev *e, double c)
{
    if (!(e->pn > 0.0))
        return 0.0;
    double nm = mix_logm_lower(e->ps - e->pn * c, e->pvr, e->psq, e->pc0);
    return lse2(LEAD_LN_P0, LEAD_LN_1P0 + nm);
}

/* Σ over h ≠ a with lead rewards of ln G_h(c), and the pool's. */
static double lead_gh(const struct lead_ev *e, double c)
{
    double v = lead_gp(e, c);
    for (size_t h = e->first; h < e->k; h = e->reg[h].next)
        if (h != e->a)
            v += lead_g1(e, h, c);
    return v;
}

/* f(c, piece, x, y) from m when it was computed for the same arguments,
 * else computed and kept: the factors are pure functions of them, so the
 * value is the same bit for bit. */
#define LEAD_CACHED(m, c_, piece_, x_, y_, expr)                                                   \
    ((m)->c == (c_) && (m)->piece == (piece_) && (m)->x == (x_) && (m)->y == (y_)                  \
         ? (m)->v                                                                                  \
         : ((m)->c = (c_), (m)->piece = (piece_), (m)->x = (x_), (m)->y = (y_), (m)->v = (expr)))

/* ln of the product at c, each factor's value kept in the memo with its
 * arguments (LEAD_CACHED): at the cutoff the witness last failed at, a
 * check after one reward recomputes the one factor that reward moved.
 * With upper, the factors of lead arms with μ̂'_h ≤ c (and of a pool with
 * its mean ≤ c), at most 0, are left out: an upper bound that spares
 * their logarithms, for failing only (most arms that once led are far
 * below the cutoff). Either is an upper bound on the infimum. */
static double lead_at(struct lead_ev *e, double c, int upper)
{
    struct stats_glr_memo_arm *ra = &e->reg[e->a];
    const struct stats_arm *xa = &e->arms[e->a];
    double v = LEAD_CACHED(&ra->as_challenger, c, e->piece, (double)xa->n, xa->mean, lead_fa(e, c));
    if (!upper || e->ps > e->pn * c)
        v += LEAD_CACHED(&ra->pool, c, e->piece, e->pn, e->ps, lead_gp(e, c));
    for (size_t h = e->first; h < e->k; h = e->reg[h].next) {
        const struct stats_arm *x = &e->arms[h];
        if (h != e->a && (!upper || unit_mean(x->lead_sum, x->lead_n) > c))
            v += LEAD_CACHED(&e->reg[h].as_lead, c, e->piece, (double)x->lead_n, x->lead_sum,
                             lead_g1(e, h, c));
    }
    return v;
}

static double lead_f(void *ctx, double c)
{
    const struct lead_ev *e = ctx;
    return lead_fa(e, c) + lead_gh(e, c);
}

/* On [lo, hi] the product is at least F_a(lo) Π G_h(hi) (each factor
 * monotone), less the rounding margin of the pair rule. +∞ stays +∞. */
static double lead_bound(const struct lead_ev *e, double lo, double hi)
{
    double v = lead_fa(e, lo) + lead_gh(e, hi);
    if (v != v)
        return -INFINITY;
    return v == INFINITY ? v : v - 1e-11 * (1.0 + fabs(v));
}

#define LEAD_GOLDEN 64 /* 0.618^64 < 1e-13 on [0, 1] */
#define LEAD_TOL 4e-14

/* A point near the minimiser: the mean of a's rewards and every lead
 * reward of the others. Its value bounds the infimum above. */
static double lead_guess(const struct lead_ev *e)
{
    double n = (double)e->arms[e->a].n, s = n * e->arms[e->a].mean + e->ps;
    n += e->pn;
    for (size_t h = e->first; h < e->k; h = e->reg[h].next) {
        if (h == e->a)
            continue;
        n += (double)e->arms[h].lead_n;
        s += e->arms[h].lead_sum;
    }
    double c = n > 0.0 ? s / n : 0.5;
    return unit_clamp(c);
}

/* The search's early ends (lead_search): a point whose value is at most
 * beta (the infimum is too: 0) or, every fourth step, a bracket whose bound
 * clears it (every bound of a narrower bracket is at least that one: 1). */
struct lead_stop_at {
    struct lead_ev *e;
    double beta;
    double at; /* a point whose value was at most beta, after a fail */
};

static double lead_f_at(void *ctx, double c)
{
    return lead_f(((struct lead_stop_at *)ctx)->e, c);
}

static int lead_early(void *ctx, int it, double lo, double hi, double f1, double f2)
{
    struct lead_stop_at *s = ctx;
    if (!(f1 > s->beta) || !(f2 > s->beta)) {
        const double g = (sqrt(5.0) - 1.0) / 2.0; /* golden_section's interior points */
        s->at = !(f1 > s->beta) ? hi - g * (hi - lo) : lo + g * (hi - lo);
        return -1;
    }
    return it > 0 && it % 4 == 0 && lead_bound(s->e, lo, hi) > s->beta ? 1 : 0;
}

/* Golden section on [*lo, *hi] (the product is log-convex on a piece:
 * each factor is a positive mixture of log-convex functions of c, so the
 * search keeps the minimiser in its bracket). With a beta (not NAN) it
 * ends early (lead_early): 0 for a fail (a point about where it failed in
 * *at), 1 for a pass; −1 when it ran to its end, the bracket in *lo, *hi. */
static int lead_search(struct lead_ev *e, double *lo, double *hi, double beta, double *at)
{
    if (isnan(beta)) {
        golden_section(lead_f, e, lo, hi, LEAD_GOLDEN, LEAD_TOL);
        return -1;
    }
    struct lead_stop_at s = {e, beta, NAN};
    int r = golden_section_until(lead_f_at, lead_early, &s, lo, hi, LEAD_GOLDEN, LEAD_TOL);
    *at = s.at;
    return r < 0 ? 0 : r > 0 ? 1 : -1;
}

/* The evidence against "a is a best arm" (beta = NAN), or whether it
 * exceeds beta: the least bound over the pieces, each searched by golden
 * section. With a beta, an upper bound at a guess at or below it fails at
 * once, a piece whose bound at its ends clears it needs no search, and the
 * search ends early (lead_search); all are implied by the full
 * comparison, so the answer is that of the evidence > beta. */
struct lead_set {
    struct stats_glr_memo_arm *reg;
    size_t first;  /* the list of arms with lead rewards, by reg[].next */
    double pn, ps; /* the pool: every arm's share */
};

static double lead_run(const struct stats_arm *arms, size_t k, size_t a, const struct lead_set *set,
                       double beta, double *wc)
{
    struct lead_ev e = {arms, set->reg, k, a, set->first, 0.0, 0.0, 0.0, 0.0, 0.0, 0};
    e.pn = set->pn - (double)arms[a].pool_n;
    e.ps = set->ps - arms[a].pool_sum;
    e.ps = e.ps > 0.0 ? (e.ps < e.pn ? e.ps : e.pn) : 0.0; /* the difference's rounding */
    e.pvr = e.pn / 4.0 + MIX_RHO;
    e.psq = sqrt(e.pvr);
    e.pc0 = mix_c0(e.pvr);
    int test = !isnan(beta);
    if (test && wc != NULL && !isnan(*wc)) { /* where it failed last: one factor moved */
        e.piece = lead_piece(*wc);
        if (!(lead_at(&e, *wc, 0) > beta))
            return -INFINITY;
    }
    if (test) {
        double c0 = lead_guess(&e);
        e.piece = lead_piece(c0);
        if (!(lead_at(&e, c0, 1) > beta)) {
            if (wc != NULL)
                *wc = c0;
            return -INFINITY;
        }
        if (wc != NULL)
            *wc = NAN;
    }
    double v = INFINITY;
    for (int p = 0; p < LEAD_PIECES; p++) {
        double lo = LEAD_EDGE[p], hi = LEAD_EDGE[p + 1];
        e.piece = p;
        if (test && lead_bound(&e, lo, hi) > beta)
            continue;
        double at = NAN;
        int r = lead_search(&e, &lo, &hi, beta, &at);
        if (r == 1)
            continue;
        if (r == 0) {
            if (wc != NULL && at >= LEAD_EDGE[p] && at <= LEAD_EDGE[p + 1])
                *wc = at;
            return -INFINITY;
        }
        double x = lead_bound(&e, lo, hi);
        if (test && !(x > beta)) {
            if (wc != NULL)
                *wc = lo + (hi - lo) / 2;
            return -INFINITY;
        }
        v = x < v ? x : v;
    }
    return v;
}

/* Refresh the regrets and constants the evaluation reads where an arm's
 * counts moved (the same function of the same counts: a memo changes no
 * answer), chain the arms with lead rewards and total the pool. */
static void lead_refresh(const struct stats_arm *arms, size_t k, struct stats_glr_memo_arm *reg,
                         struct lead_set *set)
{
    set->reg = reg;
    set->first = k;
    set->pn = set->ps = 0.0;
    size_t *link = &set->first;
    for (size_t i = 0; i < k; i++) {
        struct stats_glr_memo_arm *x = &reg[i];
        const struct stats_arm *a = &arms[i];
        if (x->n != a->n || x->mean != a->mean)
            memo_arm_own(x, a);
        set->pn += (double)a->pool_n;
        set->ps += a->pool_sum;
        if (a->lead_n == 0)
            continue;
        if (x->lead_n != a->lead_n || x->lead_sum != a->lead_sum) {
            x->lead_n = a->lead_n;
            x->lead_sum = a->lead_sum;
            x->lead_regret = stats_kt_regret((double)a->lead_n, unit_mean(a->lead_sum, a->lead_n));
            x->lead_vr = (double)a->lead_n / 4.0 + PAIR_RHO_HIGH;
            x->lead_sq = sqrt(x->lead_vr);
            x->lead_c0 = M_LN2 + 0.5 * log(PAIR_RHO_HIGH / x->lead_vr);
        }
        *link = i;
        link = &x->next;
    }
    *link = k;
}

double stats_glr_lead_evidence(const struct stats_arm *arms, size_t k, size_t best)
{
    struct stats_glr_memo memo;
    struct stats_glr_memo_arm *reg = malloc(k * sizeof *reg);
    if (reg == NULL)
        return -INFINITY; /* never an overstatement */
    stats_glr_memo_init(&memo, reg, k);
    struct lead_set set;
    lead_refresh(arms, k, reg, &set);
    double v = INFINITY;
    for (size_t a = 0; a < k; a++) {
        if (a == best)
            continue;
        double x = lead_run(arms, k, a, &set, NAN, NULL);
        v = x < v ? x : v;
    }
    free(reg);
    return v;
}

/* memo's order by mean, largest first (the lowest index on a tie), sorted
 * again from the last check's: insertion sort, about O(k) when few means
 * crossed since. */
static int lead_ahead(const struct stats_arm *arms, size_t y, size_t x)
{
    double my = arms[y].mean, mx = arms[x].mean;
    if (my != mx)
        return my > mx;
    return y < x; /* a tie: the lower index first */
}

static void lead_sort(const struct stats_arm *arms, size_t k, struct stats_glr_memo_arm *reg)
{
    for (size_t i = 1; i < k; i++) {
        size_t x = reg[i].order, j = i;
        for (; j > 0; j--) {
            size_t y = reg[j - 1].order;
            if (lead_ahead(arms, y, x))
                break;
            reg[j].order = y;
        }
        reg[j].order = x;
    }
}

/* Every challenger passes: the one that failed last first (the witness,
 * memo->wj), then the others by mean, largest first (the likeliest to
 * fail, and the next witness); the answer does not depend on the order. */
static int lead_stop(const struct stats_arm *arms, size_t k, size_t best, double beta,
                     struct stats_glr_memo *memo)
{
    size_t w = memo->wi != memo->wj && memo->wi == best ? memo->wj : k;
    struct lead_set set;
    lead_refresh(arms, k, memo->arm, &set);
    if (w < k && w != best && !(lead_run(arms, k, w, &set, beta, &memo->wc) > beta))
        return 0;
    memo->wc = NAN;
    lead_sort(arms, k, memo->arm);
    for (size_t i = 0; i < k; i++) {
        size_t a = memo->arm[i].order;
        if (a == best || a == w)
            continue;
        if (!(lead_run(arms, k, a, &set, beta, &memo->wc) > beta)) {
            memo->wi = best;
            memo->wj = a;
            return 0;
        }
        memo->wc = NAN;
    }
    return 1;
}

int stats_glr_lead_stop(const struct stats_arm *arms, size_t k, size_t best, double beta,
                        struct stats_glr_memo *memo)
{
    if (memo != NULL && memo->k == k)
        return lead_stop(arms, k, best, beta, memo);
    struct stats_glr_memo_arm *reg = malloc(k * sizeof *reg);
    if (reg == NULL)
        return 0; /* no stop is never a wrong one */
    struct stats_glr_memo own;
    stats_glr_memo_init(&own, reg, k);
    int r = lead_stop(arms, k, best, beta, &own);
    free(reg);
    return r;
}
