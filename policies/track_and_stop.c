/*
 * track_and_stop.c — Track-and-Stop (Garivier & Kaufmann 2016), best arm
 * (m = 1). Sampling tracks the optimal proportions w*(μ̂) of the current
 * means (tas.h), with forced exploration so that μ̂ → μ:
 *
 *   D-tracking (default, their eq. 13): if min_a N_a < max(√t − K/2, 0) pull
 *     the least-sampled arm, else argmax_a (t w*_a(μ̂) − N_a).
 *   C-tracking (their §3.1): w^ε = the L∞ projection of w*(μ̂) on
 *     {w : w_a ≥ ε_t}, ε_t = (K² + t)^(−1/2)/2; pull argmax_a Σ_{s≤t} w^ε_a(s) − N_a.
 *
 * Stop: the proven GLR rule by default (stats_glr_stop_best: with ε = 0
 * and K ≥ 3 the leader product against ln(1/δ), stats_lead.c; otherwise
 * each pair's e-value, whose Jeffreys-mixture part is Garivier & Kaufmann
 * 2016's, regrets exact, against ln((K−1)/δ)), or
 * the heuristic ln((ln t + 1)/δ) of Garivier & Kaufmann's experiments
 * (param `threshold`). The arm certified at the stop is what recommend()
 * returns from then on.
 *
 * Asynchrony: N_a counts pending pulls (n + pending, t = Σ N_a), as if they
 * had returned at the current mean: the tracking then does not pile pulls
 * on an arm whose rewards are in flight. While some arm has no reward yet
 * (its mean is unknown), pulls go to the arm of least n + pending. The stop
 * rule uses rewarded pulls only.
 *
 * Cost: w*(μ̂) is recomputed only when rewards changed the means, warm-
 * started from the previous solution (tas.h); select() never allocates.
 * One computation solves K − 1 inner equations a few times over: ~3 µs at
 * K = 4, ~70 µs at K = 100, milliseconds at K = 1000. Garivier & Kaufmann
 * recompute at every step; by default we do so up to K = 16 and, beyond,
 * every ⌈K/16⌉ rewards (`refresh`), which keeps select() near K·1 µs/16
 * amortised. The sampling still tracks w*(μ̂(t)) up to a bounded lag, so
 * the proportions converge to the same limit; the stop rule (hence δ-
 * correctness) does not depend on the sampling at all.
 */
#include "policies/fc.h"
#include "base/ser.h"
#include "policies/policy.h"
#include "policies/tas.h"
#include "policies/order.h"
#include "policies/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { TRACK_D = 0, TRACK_C = 1 };
static const char *const trackings[] = {"d", "c", NULL};

/* Parameter indices: each one the position of its spec in the table
 * below, so a misspelt parameter is a compile error (policy_param). */
enum {
    TRACK_AND_STOP_TRACKING,
    TRACK_AND_STOP_THRESHOLD,
    TRACK_AND_STOP_REFRESH,
    TRACK_AND_STOP_NPARAMS
};

static const struct policy_param_spec tas_params[] = {
    [TRACK_AND_STOP_TRACKING] =
        {.name = "tracking",
         .type = POLICY_PARAM_ENUM,
         .def = TRACK_D,
         .choices = trackings,
         .doc = "d: D-tracking with forced exploration when min N_a < √t − K/2 (Garivier & "
                "Kaufmann 2016, eq. 13); c: C-tracking of the ε_t-projected weights (§3.1)"},
    [TRACK_AND_STOP_THRESHOLD] = FC_GLR_PARAM_THRESHOLD,
    [TRACK_AND_STOP_REFRESH] =
        {.name = "refresh",
         .type = POLICY_PARAM_INT,
         .def = 0,
         .min = 0,
         .max = 1000000,
         .doc = "rewards between two computations of w*(μ̂); 1 = at every change of the means "
                "(Garivier & Kaufmann 2016); 0 = automatic, 1 up to K = 16 arms, then ⌈K/16⌉ "
                "(w* costs O(K) root solves; the tracking's limit is unchanged)"},
    [TRACK_AND_STOP_NPARAMS] = {.name = NULL},
};

struct tas {
    struct fc_glr glr; /* first: fc_glr_state_done/recommend read the state as this;
                          its val is select()'s scratch too */
    size_t k;
    int tracking;
    double *w;    /* w*(μ̂), or its projection (C-tracking) */
    double *mu;   /* the means w was computed for */
    double *csum; /* C-tracking: Σ_s w^ε(s) */
    struct tas_warm warm;
    uint64_t data, wdata; /* rewards seen; rewards when w was computed */
    uint64_t refresh;     /* recompute w once data − wdata reaches this */
    int have_w;
};

static void tas_fini(void *state)
{
    struct tas *s = state;
    if (s == NULL)
        return;
    free(s->w);
    free(s->mu);
    free(s->csum);
    free(s->warm.x);
    fc_glr_fini(&s->glr);
    free(s);
}

static int tas_init(void **state, const struct policy_ctx *ctx, char *err, size_t errlen)
{
    struct tas *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    s->k = ctx->n_arms[0];
    s->tracking = (int)policy_param(ctx, TRACK_AND_STOP_TRACKING);
    s->refresh = (uint64_t)policy_param(ctx, TRACK_AND_STOP_REFRESH);
    if (s->refresh == 0)
        s->refresh = s->k <= 16 ? 1 : (s->k + 15) / 16;
    s->w = calloc(s->k, sizeof *s->w);
    s->mu = calloc(s->k, sizeof *s->mu);
    s->csum = calloc(s->k, sizeof *s->csum);
    s->warm.x = calloc(s->k, sizeof *s->warm.x);
    /* Tracking needs w* to a few digits, not to 1e-11: 1e-6 on y* saves
     * half the passes of the solver. */
    s->warm.tol = 1e-6;
    if (!s->w || !s->mu || !s->csum || !s->warm.x ||
        fc_glr_init(&s->glr, ctx, TRACK_AND_STOP_THRESHOLD) != 0)
        goto nomem;
    *state = s;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    tas_fini(s);
    return -1;
}

/* argmin of n + pending, ties at random. */
static size_t least_sampled(const struct policy_ctx *ctx, size_t k)
{
    const struct stats_arm *a = ctx->arms[0];
    size_t best = 0, ties = 0;
    uint64_t bv = 0;
    for (size_t i = 0; i < k; i++) {
        uint64_t c = a[i].n + a[i].pending;
        if (ties == 0 || c < bv) {
            best = i;
            bv = c;
            ties = 1;
        } else if (c == bv && rng_index(ctx->rng, ++ties) == 0) {
            best = i;
        }
    }
    return best;
}

/* L∞ projection of w onto {w_a ≥ e, Σ w = 1} (K e ≤ 1): lower the large
 * weights by a common η and lift the small ones to e, Σ max(w_a − η, e) = 1;
 * the left side decreases in η, so bisect. */
static void project(double *w, size_t k, double e)
{
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 60; it++) {
        double eta = 0.5 * (lo + hi), s = 0;
        for (size_t a = 0; a < k; a++)
            s += w[a] - eta > e ? w[a] - eta : e;
        if (s > 1)
            lo = eta;
        else
            hi = eta;
    }
    for (size_t a = 0; a < k; a++)
        w[a] = w[a] - hi > e ? w[a] - hi : e;
}

static int tas_select(void *state, const struct policy_ctx *ctx, int bandit,
                      struct policy_pick *pick)
{
    struct tas *s = state;
    const struct stats_arm *a = ctx->arms[0];
    size_t k = s->k;
    (void)bandit;
    pick->bandit = 0;
    double t = 0;
    uint64_t nmin = UINT64_MAX;
    int unknown = 0;
    for (size_t i = 0; i < k; i++) {
        uint64_t c = a[i].n + a[i].pending;
        t += (double)c;
        if (c < nmin)
            nmin = c;
        unknown |= a[i].n == 0;
    }
    if (unknown) {
        pick->arm = least_sampled(ctx, k);
        return POLICY_OK;
    }
    /* D-tracking's forced exploration (not C-tracking's: the projection
     * is its forced exploration). */
    if (s->tracking == TRACK_D && (double)nmin < sqrt(t) - (double)k / 2) {
        pick->arm = least_sampled(ctx, k);
        return POLICY_OK;
    }
    if (!s->have_w || s->data - s->wdata >= s->refresh) {
        for (size_t i = 0; i < k; i++)
            s->mu[i] = a[i].mean;
        tas_optimal_weights_warm(s->mu, k, s->w, &s->warm);
        s->wdata = s->data;
        s->have_w = 1;
    }
    if (s->tracking == TRACK_D) {
        for (size_t i = 0; i < k; i++)
            s->glr.val[i] = t * s->w[i] - (double)(a[i].n + a[i].pending);
    } else {
        /* Project a copy: w keeps w*(μ̂) for the next call. */
        double e = 0.5 / sqrt((double)k * (double)k + t);
        for (size_t i = 0; i < k; i++)
            s->glr.val[i] = s->w[i];
        project(s->glr.val, k, e);
        for (size_t i = 0; i < k; i++) {
            s->csum[i] += s->glr.val[i];
            s->glr.val[i] = s->csum[i] - (double)(a[i].n + a[i].pending);
        }
    }
    pick->arm = order_argmax(ctx->rng, s->glr.val, NULL, k);
    return POLICY_OK;
}

static void tas_update(void *state, const struct policy_ctx *ctx, size_t bandit, size_t arm,
                       enum policy_event ev, double reward)
{
    struct tas *s = state;
    (void)ctx;
    (void)bandit;
    (void)arm;
    (void)reward;
    if (ev != POLICY_EV_RELEASE)
        s->data++;
}

/* Proven with the proven GLR threshold; the heuristic one has no proof. */
static int tas_stop_proven(const struct policy_params *p)
{
    return p->values[TRACK_AND_STOP_THRESHOLD] == 0;
}

/* The warm start (the solver's last point) is state too: the next w*
 * starts from it, so a load without it would solve to other bits. */
static void tas_snap(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    struct tas *t = state;
    (void)ctx;
    fc_glr_snap(&t->glr, s);
    ser_expect(s, t->k);
    ser_f64s(s, t->w, t->k);
    ser_f64s(s, t->mu, t->k);
    ser_f64s(s, t->csum, t->k);
    ser_f64(s, &t->warm.y);
    ser_f64s(s, t->warm.x, t->k);
    ser_int(s, &t->warm.valid);
    ser_f64(s, &t->warm.tol);
    ser_u64(s, &t->data);
    ser_u64(s, &t->wdata);
    ser_u64(s, &t->refresh);
    ser_int(s, &t->have_w);
    ser_check(s, (t->have_w == 0 || t->have_w == 1) && (t->warm.valid == 0 || t->warm.valid == 1));
}

const struct policy_ops policy_track_and_stop = {
    .name = "track-and-stop",
    .summary = "Track-and-Stop (Garivier & Kaufmann 2016): track w*(μ̂), stop on the GLR rule",
    .flags = POLICY_F_FIXED_CONFIDENCE | POLICY_F_OWN_STOP | POLICY_F_GLR_STOP,
    .params = tas_params,
    .init = tas_init,
    .fini = tas_fini,
    .select = tas_select,
    .update = tas_update,
    .done = fc_glr_state_done,
    .recommend = fc_glr_state_recommend,
    .stop_proven = tas_stop_proven,
    .snap = tas_snap,
};
