/*
 * gcp.c — Bayesian greedy confidence pursuit (Bachman & Precup 2013), the
 * `gcp` policy, and the pieces `gcp-targeted` shares with it (gcp.h).
 *
 * Arm selection (their Alg. 2): sample θ̂_j ~ Beta(α_j, β_j) for every arm,
 * γ̂ = (θ̂_(m) + θ̂_(m+1)) / 2, pull argmin_j √T_j |θ̂_j − γ̂| — eq. 8's form of
 * posterior sampling on the log misallocation ratio of eq. 7, with b = 1.
 * Bandit selection over M bandits (Alg. 3): for each bandit with ρ̄_i < τ
 * sample θ̂_i and its completion cost ĉ_i (eq. 12), pick argmin ĉ_i, then
 * Alg. 2 inside it. Objective: the number of bandits with ρ̄_i ≥ τ (eq. 2).
 * Stop rule (POLICY_F_OWN_STOP): a bandit is done when ρ̄ (eq. 3) ≥ τ, τ from
 * the experiment (default 1 − δ); done bandits get no more pulls.
 *
 * Choices where the paper is silent:
 * - Alg. 2 inside the bandit Alg. 3 chose draws a fresh sample, as the
 *   paper's "à la carte" composition of the two stages reads.
 * - Pending pulls count in T_j (see gcp.h for why this is the posterior-
 *   sample treatment of docs/policy-formulas.md, not an approximation of it).
 * - ρ̄_i is cached per bandit and refreshed on every reward or observation
 *   (it is O(m K) and changes only then), so select() costs Σ_i K_i Beta
 *   draws plus O(K) per bandit, and done() is O(1).
 * - The recommendation is the MAP top m (posterior means α/(α+β)), the set ρ̄
 *   is the confidence of; ties by a random rank drawn at creation. With the
 *   Beta(1, 1) prior it can differ from the empirical top m when counts
 *   differ (1/1 vs 9/10), and ρ̄ speaks of the MAP set.
 * - Param `bandits: uniform` replaces Alg. 3 by the paper's Uni-* baseline
 *   (§6; we serve the unfinished bandit with the fewest pulls rather than a
 *   uniformly random one), for comparisons and for users who want balanced
 *   recruitment with Bayesian arm selection.
 */
#include "policies/gcp.h"
#include "base/ser.h"
#include "policies/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

static const char *const bandit_modes[] = {"cost", "uniform", NULL};

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum { GCP_BANDITS, GCP_NPARAMS };

static const struct policy_param_spec gcp_params[] = {
    [GCP_BANDITS] =
        {.name = "bandits",
         .type = POLICY_PARAM_ENUM,
         .def = GCP_BANDITS_COST,
         .choices = bandit_modes,
         .doc = "bandit choice when the request names none: cost = Alg. 3, argmin of a posterior "
                "sample of the completion cost (eq. 12) over unfinished bandits; uniform = the "
                "Uni-* baseline of Bachman & Precup 2013 §6 (fewest pulls first)"},
    [GCP_NPARAMS] = {.name = NULL},
};

/* --- state ------------------------------------------------------------------ */

void gcp_fini(void *state)
{
    struct gcp *s = state;
    if (s == NULL)
        return;
    free(s->theta);
    free(s->work);
    free(s->index);
    free(s->cost);
    free(s->rho);
    free(s->cand);
    free(s->rank);
    free(s->rank_off);
    free(s);
}

int gcp_new(struct gcp **out, const struct policy_ctx *ctx, int mode, unsigned resample, char *err,
            size_t errlen)
{
    *out = NULL;
    struct gcp *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->nb = ctx->n_bandits;
    s->m = ctx->m;
    s->mode = mode;
    s->resample = resample;
    size_t total = 0;
    for (size_t b = 0; b < s->nb; b++) {
        total += ctx->n_arms[b];
        if (ctx->n_arms[b] > s->kmax)
            s->kmax = ctx->n_arms[b];
    }
    /* Scratch for select(), sized once so select never allocates. */
    s->theta = calloc(s->kmax, sizeof *s->theta);
    s->work = calloc(s->kmax, sizeof *s->work);
    s->index = calloc(s->kmax, sizeof *s->index);
    s->cost = calloc(s->nb, sizeof *s->cost);
    s->rho = calloc(s->nb, sizeof *s->rho); /* ρ̄ = 0 until every arm has data */
    s->cand = calloc(s->nb, 1);
    s->rank = calloc(total, sizeof *s->rank);
    s->rank_off = calloc(s->nb, sizeof *s->rank_off);
    if (!s->theta || !s->work || !s->index || !s->cost || !s->rho || !s->cand || !s->rank ||
        !s->rank_off)
        goto nomem;
    /* A random permutation per bandit for the recommendation's ties: fair to
     * every arm, stable between status calls, and drawn here because
     * recommend() must not touch the generator. */
    size_t off = 0;
    for (size_t b = 0; b < s->nb; b++) {
        s->rank_off[b] = off;
        order_rank_draw(ctx->rng, s->rank + off, ctx->n_arms[b]);
        off += ctx->n_arms[b];
    }
    *out = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    gcp_fini(s);
    return -1;
}

void gcp_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct gcp *g = state;
    size_t total = 0;
    for (size_t b = 0; b < ctx->n_bandits; b++)
        total += ctx->n_arms[b];
    ser_expect(s, g->nb);
    ser_expect(s, g->kmax);
    ser_f64s(s, g->theta, g->kmax);
    ser_f64s(s, g->work, g->kmax);
    ser_f64s(s, g->index, g->kmax);
    ser_f64s(s, g->cost, g->nb);
    ser_f64s(s, g->rho, g->nb);
    ser_flags(s, g->cand, g->nb);
    ser_u32s(s, g->rank, total);
    for (size_t b = 0; b < ctx->n_bandits; b++)
        ser_check_perm(s, g->rank + g->rank_off[b], ctx->n_arms[b]);
}

/* --- order statistics --------------------------------------------------------- */

static double median3(double a, double b, double c)
{
    if (a > b) {
        double t = a;
        a = b;
        b = t;
    }
    /* a <= b */
    if (c <= a)
        return a;
    return c < b ? c : b;
}

/* Quickselect, descending: afterwards w[r] is the (r+1)-th largest value,
 * everything before it is >= and everything after it <=. Three-way
 * partition around a median-of-three pivot, so ties cost nothing extra. */
static void select_desc(double *w, long k, long r)
{
    long lo = 0, hi = k - 1;
    while (lo < hi) {
        double p = median3(w[lo], w[lo + (hi - lo) / 2], w[hi]);
        /* [lo, lt) > p, [lt, i) == p, (gt, hi] < p */
        long lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            double x = w[i];
            if (x > p) {
                w[i++] = w[lt];
                w[lt++] = x;
            } else if (x < p) {
                w[i] = w[gt];
                w[gt--] = x;
            } else {
                i++;
            }
        }
        if (r < lt)
            hi = lt - 1;
        else if (r > gt)
            lo = gt + 1;
        else
            return;
    }
}

double gcp_gap_location(double *w, size_t k, unsigned m)
{
    select_desc(w, (long)k, (long)m);
    double below = w[m]; /* θ̂_(m+1) */
    double above = w[0]; /* θ̂_(m) = the least of the m largest */
    for (size_t i = 1; i < m; i++)
        if (w[i] < above)
            above = w[i];
    return (above + below) / 2.0;
}

/* --- sampling, Alg. 2, eq. 12, Alg. 3 -------------------------------------- */

double gcp_sample(struct gcp *s, const struct policy_ctx *ctx, size_t b)
{
    const struct stats_arm *a = ctx->arms[b];
    size_t k = ctx->n_arms[b];
    for (size_t j = 0; j < k; j++) {
        s->theta[j] = gsl_ran_beta(ctx->rng, a[j].alpha, a[j].beta);
        s->work[j] = s->theta[j];
    }
    return gcp_gap_location(s->work, k, s->m);
}

double gcp_cost(const struct gcp *s, size_t k, double gamma)
{
    double c = 0.0;
    for (size_t j = 0; j < k; j++) {
        double th = s->theta[j];
        double g = fabs(th - gamma);
        if (!(g > 0.0))
            return INFINITY;
        double var = th * (1.0 - th);
        double sd = sqrt(var > 0.0 ? var : 0.0);
        double num = sd + sqrt(var + (16.0 / 3.0) * g);
        c += num * num / (g * g);
    }
    return c;
}

size_t gcp_select_arm(struct gcp *s, const struct policy_ctx *ctx, size_t b)
{
    const struct stats_arm *a = ctx->arms[b];
    size_t k = ctx->n_arms[b];
    double gamma = gcp_sample(s, ctx, b);
    for (size_t j = 0; j < k; j++)
        s->index[j] = sqrt((double)(a[j].n + a[j].pending)) * fabs(s->theta[j] - gamma);
    return order_argmin(ctx->rng, s->index, NULL, k);
}

/* Mark in s->cand the bandits Alg. 3 may choose: those the engine has not
 * marked done (under gcp's own rule exactly the bandits with ρ̄ < τ, Alg. 3
 * line 5; see the top of this file). Returns how many. */
static size_t candidates(struct gcp *s, const struct policy_ctx *ctx)
{
    size_t count = 0;
    for (size_t b = 0; b < s->nb; b++) {
        s->cand[b] = !ctx->bandit_done[b];
        count += s->cand[b];
    }
    return count;
}

/* The only candidate, or (size_t)-1 when there are several. */
static size_t sole_candidate(const struct gcp *s)
{
    size_t which = (size_t)-1;
    for (size_t b = 0; b < s->nb; b++) {
        if (!s->cand[b])
            continue;
        if (which != (size_t)-1)
            return (size_t)-1;
        which = b;
    }
    return which;
}

int gcp_select_with(struct gcp *s, const struct policy_ctx *ctx, int bandit,
                    struct policy_pick *pick, gcp_choose_fn *choose)
{
    size_t b;
    if (bandit >= 0) {
        b = (size_t)bandit;
    } else {
        if (candidates(s, ctx) == 0)
            return POLICY_DONE;
        b = sole_candidate(s);
        if (b == (size_t)-1)
            b = choose(s, ctx);
    }
    pick->bandit = b;
    pick->arm = gcp_select_arm(s, ctx, b);
    return POLICY_OK;
}

size_t gcp_pick_bandit_cost(struct gcp *s, const struct policy_ctx *ctx)
{
    for (size_t b = 0; b < s->nb; b++) {
        s->cost[b] = INFINITY;
        if (!s->cand[b])
            continue;
        double gamma = gcp_sample(s, ctx, b);
        s->cost[b] = gcp_cost(s, ctx->n_arms[b], gamma);
    }
    return order_argmin(ctx->rng, s->cost, s->cand, s->nb);
}

/* Uni-* baseline: the candidate with the fewest pulls handed out (rewarded
 * plus pending), ties at random. */
static size_t pick_bandit_uniform(struct gcp *s, const struct policy_ctx *ctx)
{
    for (size_t b = 0; b < s->nb; b++) {
        uint64_t h = 0;
        for (size_t j = 0; j < ctx->n_arms[b]; j++)
            h += ctx->arms[b][j].n + ctx->arms[b][j].pending;
        s->cost[b] = (double)h;
    }
    return order_argmin(ctx->rng, s->cost, s->cand, s->nb);
}

/* --- vtable ------------------------------------------------------------------ */

static int gcp_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    int mode = (int)policy_param(ctx, GCP_BANDITS);
    struct gcp *s = NULL;
    if (gcp_new(&s, ctx, mode, 0, err, errlen) != 0)
        return -1;
    *state = s;
    return 0;
}

/* Alg. 3, or the Uni-* baseline. */
static size_t choose_bandit(struct gcp *s, const struct policy_ctx *ctx)
{
    return s->mode == GCP_BANDITS_UNIFORM ? pick_bandit_uniform(s, ctx)
                                          : gcp_pick_bandit_cost(s, ctx);
}

static int gcp_select(void *state, const struct policy_ctx *ctx, int bandit,
                      struct policy_pick *pick)
{
    return gcp_select_with(state, ctx, bandit, pick, choose_bandit);
}

void gcp_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                enum policy_event ev, double reward)
{
    struct gcp *s = state;
    (void)arm;
    (void)reward;
    if (ev == POLICY_EV_RELEASE)
        return; /* no data: ρ̄ counts rewarded pulls only */
    s->rho[bandit] = stats_rho(ctx->arms[bandit], ctx->n_arms[bandit], ctx->m);
}

/* ρ̄ ≥ τ has no proof (docs/stop-rules.md, `rho`): opt-in only. */
int gcp_stop_proven(const struct policy_params *params)
{
    (void)params;
    return 0;
}

int gcp_done(void *state, const struct policy_ctx *ctx, size_t bandit)
{
    const struct gcp *s = state;
    return s->rho[bandit] >= ctx->tau;
}

static double post_mean(const struct stats_arm *a)
{
    return a->alpha / (a->alpha + a->beta);
}

/* Is arm i ahead of arm j: larger posterior mean, ties by rank. */
static int ahead(const struct stats_arm *a, const uint32_t *rank, size_t i, size_t j)
{
    double pi = post_mean(&a[i]), pj = post_mean(&a[j]);
    if (pi != pj)
        return pi > pj;
    return rank[i] < rank[j];
}

void gcp_recommend(void *state, const struct policy_ctx *ctx, size_t bandit, unsigned char *high)
{
    const struct gcp *s = state;
    const struct stats_arm *a = ctx->arms[bandit];
    const uint32_t *rank = s->rank + s->rank_off[bandit];
    size_t k = ctx->n_arms[bandit];
    size_t want = ctx->m < k ? ctx->m : k;
    /* Repeated selection from the smaller side: O(min(m, K − m) K), no buffer. */
    int pick_best = want <= k - want;
    for (size_t i = 0; i < k; i++)
        high[i] = !pick_best;
    size_t rounds = pick_best ? want : k - want;
    for (size_t r = 0; r < rounds; r++) {
        size_t sel = k;
        for (size_t i = 0; i < k; i++) {
            if (high[i] != !pick_best)
                continue;
            if (sel == k || (pick_best ? ahead(a, rank, i, sel) : ahead(a, rank, sel, i)))
                sel = i;
        }
        high[sel] = (unsigned char)pick_best;
    }
}

const struct policy_ops policy_gcp = {
    .name = "gcp",
    .summary = "Greedy confidence pursuit (Bachman & Precup 2013, Alg. 2 and 3): Bayesian top-m "
               "arm and bandit selection, stop at rho >= tau",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_FIXED_BUDGET | POLICY_F_MULTI | POLICY_F_TOPM |
             POLICY_F_OWN_STOP | POLICY_F_RHO_STOP | POLICY_F_BAYES,
    .params = gcp_params,
    .init = gcp_init,
    .fini = gcp_fini,
    .select = gcp_select,
    .update = gcp_update,
    .done = gcp_done,
    .recommend = gcp_recommend,
    .rebudget = policy_rebudget_any, /* the budget is the engine's cap */
    .stop_proven = gcp_stop_proven,
    .snap = gcp_snap,
};
