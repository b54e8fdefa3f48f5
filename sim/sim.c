/*
 * sim.c — the offline simulator (see sim.h): problem files, arms with known
 * reward distributions, runs of the daemon's own engine with a feedback
 * delay, and the evaluation of each run's answer against the true means.
 *
 * Every run owns its generators, seeded from (seed, run index) only, and the
 * aggregate is built from integer counts and the per-run pull counts taken
 * in index order, so the output is bit-identical for any thread count.
 */
#include "sim/sim.h"

#include "base/clock.h"
#include "policies/rng.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

/* Relative slack (of the reward range) when comparing true means for the
 * (ε, m) and regret criteria: μ_(m) − ε computed in floating point must not
 * turn an arm sitting exactly on the boundary into an error. */
#define SIM_CMP_SLACK 1e-12

/* A run that gets only exploit answers while the engine is not stopped and no
 * reward is in flight can make no progress; after this many such answers in a
 * row it ends (counted as capped). The engine never does this today: the
 * guard keeps a future policy bug from hanging a simulation. */
#define SIM_IDLE_MAX 1000

/* ------------------------------------------------------------------------ */
/* Random numbers                                                           */
/* ------------------------------------------------------------------------ */

/* The key of run i: distinct runs of one seed get distinct keys (mix64 is a
 * bijection), and the engine and the reward draws take different streams. */
static uint64_t run_key(uint64_t seed, uint64_t i)
{
    return rng_mix64(rng_mix64(seed) + i);
}

/* ------------------------------------------------------------------------ */
/* Arms                                                                     */
/* ------------------------------------------------------------------------ */

static double clip(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* E[clip(X, lo, hi)] in closed form:
 *  bernoulli, rademacher: the two atoms, clipped;
 *  uniform U(a, b):  lo P(X < lo) + hi P(X > hi) + ∫_{max(a,lo)}^{min(b,hi)} x dx/(b − a);
 *  gaussian N(μ, σ): lo Φ(α) + hi Q(β) + μ (Φ(β) − Φ(α)) + σ (φ(α) − φ(β)),
 *                    α = (lo − μ)/σ, β = (hi − μ)/σ (the truncated-normal mean);
 *  beta B(a, b):     lo F(l) + hi (1 − F(h)) + a/(a+b) (F⁺(h) − F⁺(l)), l, h the
 *                    range clamped to [0, 1], F⁺ the Beta(a+1, b) CDF (since
 *                    x f_{a,b}(x) = a/(a+b) f_{a+1,b}(x)). */
double sim_arm_clipped_mean(const struct sim_arm *a, double lo, double hi)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return (1.0 - a->p1) * clip(0.0, lo, hi) + a->p1 * clip(1.0, lo, hi);
    case SIM_RADEMACHER:
        return 0.5 * clip(a->p1, lo, hi) + 0.5 * clip(a->p2, lo, hi);
    case SIM_UNIFORM: {
        double u0 = a->p1, u1 = a->p2, w = u1 - u0;
        double below = clip((lo - u0) / w, 0.0, 1.0);
        double above = clip((u1 - hi) / w, 0.0, 1.0);
        double s = u0 > lo ? u0 : lo, t = u1 < hi ? u1 : hi;
        double mid = t > s ? (t - s) * (t + s) / (2.0 * w) : 0.0;
        return lo * below + hi * above + mid;
    }
    case SIM_GAUSSIAN: {
        double mu = a->p1, sd = a->p2;
        double al = (lo - mu) / sd, be = (hi - mu) / sd;
        /* Φ(β) − Φ(α) from whichever tail keeps its digits. */
        double inside = al > 0.0 ? gsl_cdf_ugaussian_Q(al) - gsl_cdf_ugaussian_Q(be)
                                 : gsl_cdf_ugaussian_P(be) - gsl_cdf_ugaussian_P(al);
        return lo * gsl_cdf_ugaussian_P(al) + hi * gsl_cdf_ugaussian_Q(be) + mu * inside +
               sd * (gsl_ran_ugaussian_pdf(al) - gsl_ran_ugaussian_pdf(be));
    }
    case SIM_BETA: {
        double A = a->p1, B = a->p2;
        double l = clip(lo, 0.0, 1.0), h = clip(hi, 0.0, 1.0);
        return lo * gsl_cdf_beta_P(l, A, B) + hi * gsl_cdf_beta_Q(h, A, B) +
               A / (A + B) * (gsl_cdf_beta_P(h, A + 1.0, B) - gsl_cdf_beta_P(l, A + 1.0, B));
    }
    }
    return NAN;
}

int sim_arm_can_clip(const struct sim_arm *a, double lo, double hi)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return (a->p1 < 1.0 && (0.0 < lo || 0.0 > hi)) || (a->p1 > 0.0 && (1.0 < lo || 1.0 > hi));
    case SIM_RADEMACHER:
        return a->p1 < lo || a->p1 > hi || a->p2 < lo || a->p2 > hi;
    case SIM_UNIFORM:
        return a->p1 < lo || a->p2 > hi;
    case SIM_GAUSSIAN:
        return 1; /* unbounded */
    case SIM_BETA:
        return lo > 0.0 || hi < 1.0;
    }
    return 1;
}

/* One draw in reward units, before clipping. gsl_ran_gaussian_ziggurat is
 * GSL's fast normal sampler (same distribution as gsl_ran_gaussian). */
static double draw(const struct sim_arm *a, const gsl_rng *r)
{
    switch (a->dist) {
    case SIM_BERNOULLI:
        return (double)gsl_ran_bernoulli(r, a->p1);
    case SIM_RADEMACHER:
        return gsl_ran_bernoulli(r, 0.5) ? a->p2 : a->p1;
    case SIM_UNIFORM:
        return gsl_ran_flat(r, a->p1, a->p2);
    case SIM_GAUSSIAN:
        return a->p1 + gsl_ran_gaussian_ziggurat(r, a->p2);
    case SIM_BETA:
        return gsl_ran_beta(r, a->p1, a->p2);
    }
    return 0.0;
}

/* ------------------------------------------------------------------------ */
/* Problem files                                                            */
/* ------------------------------------------------------------------------ */

/* A finite number (integer or real). */
static int get_num(json_t *v, double *out)
{
    if (!json_is_number(v))
        return -1;
    double x = json_number_value(v);
    if (!isfinite(x))
        return -1;
    *out = x;
    return 0;
}

/* A non-negative integer, given as an integer or an integral real (1e6). */
static int get_count(json_t *v, uint64_t max, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x > max)
            return -1;
        *out = (uint64_t)x;
        return 0;
    }
    double x;
    if (get_num(v, &x) != 0 || x < 0 || x != floor(x) || x > (double)max)
        return -1;
    *out = (uint64_t)x;
    return 0;
}

/* Reject any key of obj outside allowed (NULL-terminated). */
static int check_keys(json_t *obj, const char *const *allowed, const char *where, char *err,
                      size_t errlen)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        (void)val;
        size_t i = 0;
        while (allowed[i] != NULL && strcmp(allowed[i], key) != 0)
            i++;
        if (allowed[i] == NULL) {
            snprintf(err, errlen, "%s%s%s: unknown field", where, *where ? "." : "", key);
            return -1;
        }
    }
    return 0;
}

struct dist_spec {
    const char *name;
    enum sim_dist dist;
    const char *k1, *k2; /* parameter names (k2 NULL: one parameter) */
};

static const struct dist_spec dists[] = {
    {"bernoulli", SIM_BERNOULLI, "p", NULL},
    {"rademacher", SIM_RADEMACHER, "x", "y"},
    {"uniform", SIM_UNIFORM, "low", "high"},
    {"gaussian", SIM_GAUSSIAN, "mean", "sd"},
    {"beta", SIM_BETA, "a", "b"},
};

#define N_DISTS (sizeof dists / sizeof dists[0])

static int parse_arm(json_t *j, const char *where, struct sim_arm *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (json_is_number(j)) { /* shorthand: Bernoulli(p) */
        if (get_num(j, &a->p1) != 0 || a->p1 < 0.0 || a->p1 > 1.0) {
            snprintf(err, errlen, "%s: a bare number is a Bernoulli p and must be in [0, 1]",
                     where);
            return -1;
        }
        a->dist = SIM_BERNOULLI;
        return 0;
    }
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: must be an object {\"dist\": ...} or a Bernoulli p", where);
        return -1;
    }
    const char *name = json_string_value(json_object_get(j, "dist"));
    if (name == NULL) {
        snprintf(err, errlen,
                 "%s.dist: required, one of bernoulli, rademacher, uniform, gaussian, beta", where);
        return -1;
    }
    const struct dist_spec *d = NULL;
    for (size_t i = 0; i < N_DISTS; i++)
        if (strcmp(dists[i].name, name) == 0)
            d = &dists[i];
    if (d == NULL) {
        snprintf(err, errlen,
                 "%s.dist: unknown distribution \"%s\" (bernoulli, rademacher, uniform, gaussian, "
                 "beta)",
                 where, name);
        return -1;
    }
    const char *allowed[] = {"dist", "id", d->k1, d->k2, NULL};
    if (check_keys(j, allowed, where, err, errlen) != 0)
        return -1;
    json_t *id = json_object_get(j, "id");
    if (id != NULL && !json_is_string(id)) {
        snprintf(err, errlen, "%s.id: must be a string", where);
        return -1;
    }
    a->dist = d->dist;
    const char *keys[2] = {d->k1, d->k2};
    double *vals[2] = {&a->p1, &a->p2};
    for (int k = 0; k < 2 && keys[k] != NULL; k++) {
        json_t *v = json_object_get(j, keys[k]);
        if (v == NULL || get_num(v, vals[k]) != 0) {
            snprintf(err, errlen, "%s.%s: required, a finite number", where, keys[k]);
            return -1;
        }
    }
    switch (a->dist) {
    case SIM_BERNOULLI:
        if (a->p1 < 0.0 || a->p1 > 1.0) {
            snprintf(err, errlen, "%s.p: must be in [0, 1]", where);
            return -1;
        }
        break;
    case SIM_RADEMACHER:
        break;
    case SIM_UNIFORM:
        if (!(a->p2 > a->p1)) {
            snprintf(err, errlen, "%s.high: must be greater than low", where);
            return -1;
        }
        break;
    case SIM_GAUSSIAN:
        if (!(a->p2 > 0.0)) {
            snprintf(err, errlen, "%s.sd: must be positive", where);
            return -1;
        }
        break;
    case SIM_BETA:
        if (!(a->p1 > 0.0)) {
            snprintf(err, errlen, "%s.a: must be positive", where);
            return -1;
        }
        if (!(a->p2 > 0.0)) {
            snprintf(err, errlen, "%s.b: must be positive", where);
            return -1;
        }
        break;
    }
    return 0;
}

/* One bandit: an object {"arms": [...], "id": ...} or, for the top-level
 * shorthand, the arms array itself. */
static int parse_arms(json_t *arms, const char *where, struct sim_problem *p, size_t b, char *err,
                      size_t errlen)
{
    if (!json_is_array(arms)) {
        snprintf(err, errlen, "%s: must be an array of arms", where);
        return -1;
    }
    size_t k = json_array_size(arms);
    if (k < 2 || k > ENGINE_MAX_ARMS) {
        snprintf(err, errlen, "%s: need 2 to %d arms (got %zu)", where, ENGINE_MAX_ARMS, k);
        return -1;
    }
    p->arms[b] = calloc(k, sizeof *p->arms[b]);
    if (p->arms[b] == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->n_arms[b] = k;
    for (size_t i = 0; i < k; i++) {
        char w[96];
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        if (parse_arm(json_array_get(arms, i), w, &p->arms[b][i], err, errlen) != 0)
            return -1;
    }
    return 0;
}

static const char *const problem_keys[] = {"m",       "epsilon", "delta",  "budget",
                                           "bandits", "arms",    "reward", "target_arm",
                                           "tau",     "bound",   NULL};
static const char *const reward_keys[] = {"min", "max", NULL};
static const char *const bandit_keys[] = {"arms", "id", NULL};

int sim_problem_parse(json_t *j, struct sim_problem *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->m = 1;
    p->epsilon = 0.0;
    p->delta = 0.05;
    p->reward_min = 0.0;
    p->reward_max = 1.0;
    p->target_arm = -1;
    p->tau = NAN;
    p->bound = STATS_BOUND_ANYTIME;
    json_t *v;

    if (!json_is_object(j)) {
        snprintf(err, errlen, "problem: must be a JSON object");
        return -1;
    }
    if (check_keys(j, problem_keys, "", err, errlen) != 0)
        goto fail;

    if ((v = json_object_get(j, "reward")) != NULL) {
        if (!json_is_object(v)) {
            snprintf(err, errlen, "reward: must be an object {\"min\": ..., \"max\": ...}");
            goto fail;
        }
        if (check_keys(v, reward_keys, "reward", err, errlen) != 0)
            goto fail;
        json_t *mn = json_object_get(v, "min"), *mx = json_object_get(v, "max");
        if (mn == NULL || get_num(mn, &p->reward_min) != 0) {
            snprintf(err, errlen, "reward.min: required, a finite number");
            goto fail;
        }
        if (mx == NULL || get_num(mx, &p->reward_max) != 0) {
            snprintf(err, errlen, "reward.max: required, a finite number");
            goto fail;
        }
        if (!(p->reward_max > p->reward_min) || !isfinite(p->reward_max - p->reward_min)) {
            snprintf(err, errlen, "reward.max: must be greater than reward.min");
            goto fail;
        }
    }
    double range = p->reward_max - p->reward_min;

    if ((v = json_object_get(j, "m")) != NULL) {
        uint64_t m;
        if (get_count(v, ENGINE_MAX_ARMS, &m) != 0 || m < 1) {
            snprintf(err, errlen, "m: must be an integer >= 1");
            goto fail;
        }
        p->m = (unsigned)m;
    }
    if ((v = json_object_get(j, "epsilon")) != NULL) {
        if (get_num(v, &p->epsilon) != 0 || p->epsilon < 0.0 || p->epsilon >= range) {
            snprintf(err, errlen, "epsilon: must be in [0, reward range (%g))", range);
            goto fail;
        }
    }
    if ((v = json_object_get(j, "delta")) != NULL) {
        if (get_num(v, &p->delta) != 0 || !(p->delta > 0.0 && p->delta < 1.0)) {
            snprintf(err, errlen, "delta: must be in (0, 1)");
            goto fail;
        }
    }
    if ((v = json_object_get(j, "budget")) != NULL && !json_is_null(v)) {
        if (get_count(v, UINT64_C(1) << 53, &p->budget) != 0 || p->budget < 1) {
            snprintf(err, errlen, "budget: must be null or a positive integer");
            goto fail;
        }
    }
    if ((v = json_object_get(j, "tau")) != NULL && !json_is_null(v)) {
        if (get_num(v, &p->tau) != 0 || !(p->tau > 0.0 && p->tau < 1.0)) {
            snprintf(err, errlen, "tau: must be null or in (0, 1)");
            goto fail;
        }
    }
    if ((v = json_object_get(j, "bound")) != NULL) {
        const char *s = json_string_value(v);
        if (s != NULL && strcmp(s, "anytime") == 0) {
            p->bound = STATS_BOUND_ANYTIME;
        } else if (s != NULL && strcmp(s, "fixed") == 0) {
            p->bound = STATS_BOUND_FIXED;
        } else {
            snprintf(err, errlen, "bound: must be \"anytime\" or \"fixed\"");
            goto fail;
        }
    }
    if ((v = json_object_get(j, "target_arm")) != NULL && !json_is_null(v)) {
        uint64_t t;
        if (get_count(v, ENGINE_MAX_ARMS, &t) != 0) {
            snprintf(err, errlen, "target_arm: must be null or an arm index >= 0");
            goto fail;
        }
        p->target_arm = (int)t;
    }

    /* Bandits: "bandits": [{"arms": [...]}, ...] or top-level "arms". */
    json_t *bandits = json_object_get(j, "bandits");
    json_t *arms = json_object_get(j, "arms");
    if (bandits != NULL && arms != NULL) {
        snprintf(err, errlen, "arms: give either bandits or arms, not both");
        goto fail;
    }
    if (bandits == NULL && arms == NULL) {
        snprintf(err, errlen, "bandits: required (an array of {\"arms\": [...]})");
        goto fail;
    }
    size_t nb = 1;
    if (bandits != NULL) {
        if (!json_is_array(bandits) || json_array_size(bandits) < 1 ||
            json_array_size(bandits) > ENGINE_MAX_BANDITS) {
            snprintf(err, errlen, "bandits: must be an array of 1 to %d bandits",
                     ENGINE_MAX_BANDITS);
            goto fail;
        }
        nb = json_array_size(bandits);
    }
    p->n_arms = calloc(nb, sizeof *p->n_arms);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    p->arms = calloc(nb, sizeof *p->arms);
    if (p->n_arms == NULL || p->arms == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    p->n_bandits = nb;
    if (bandits == NULL) {
        if (parse_arms(arms, "arms", p, 0, err, errlen) != 0)
            goto fail;
    } else {
        for (size_t b = 0; b < nb; b++) {
            json_t *bj = json_array_get(bandits, b);
            char w[64];
            snprintf(w, sizeof w, "bandits[%zu]", b);
            if (!json_is_object(bj)) {
                snprintf(err, errlen, "%s: must be an object {\"arms\": [...]}", w);
                goto fail;
            }
            if (check_keys(bj, bandit_keys, w, err, errlen) != 0)
                goto fail;
            json_t *id = json_object_get(bj, "id");
            if (id != NULL && !json_is_string(id)) {
                snprintf(err, errlen, "%s.id: must be a string", w);
                goto fail;
            }
            char wa[80];
            snprintf(wa, sizeof wa, "%s.arms", w);
            json_t *aj = json_object_get(bj, "arms");
            if (aj == NULL) {
                snprintf(err, errlen, "%s: required", wa);
                goto fail;
            }
            if (parse_arms(aj, wa, p, b, err, errlen) != 0)
                goto fail;
        }
    }

    /* Cross-field checks, with the problem file's field names. */
    for (size_t b = 0; b < p->n_bandits; b++) {
        if (p->m >= p->n_arms[b]) {
            snprintf(err, errlen, "m: must be less than the number of arms (%zu in bandits[%zu])",
                     p->n_arms[b], b);
            goto fail;
        }
        if (p->target_arm >= 0 && (size_t)p->target_arm >= p->n_arms[b]) {
            snprintf(err, errlen, "target_arm: no arm %d in bandits[%zu] (%zu arms)", p->target_arm,
                     b, p->n_arms[b]);
            goto fail;
        }
        for (size_t i = 0; i < p->n_arms[b]; i++) {
            struct sim_arm *a = &p->arms[b][i];
            a->mean = sim_arm_clipped_mean(a, p->reward_min, p->reward_max);
            if (sim_arm_can_clip(a, p->reward_min, p->reward_max))
                p->clipped = 1;
        }
    }
    return 0;
fail:
    sim_problem_free(p);
    return -1;
}

int sim_problem_load(const char *path, struct sim_problem *p, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &je)
                                       : json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        memset(p, 0, sizeof *p);
        if (je.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        else
            snprintf(err, errlen, "%s: %s", path, je.text);
        return -1;
    }
    int rc = sim_problem_parse(j, p, err, errlen);
    json_decref(j);
    return rc;
}

void sim_problem_free(struct sim_problem *p)
{
    if (p->arms != NULL)
        for (size_t b = 0; b < p->n_bandits; b++)
            free(p->arms[b]);
    free(p->arms);
    free(p->n_arms);
    p->arms = NULL;
    p->n_arms = NULL;
    p->n_bandits = 0;
}

/* ------------------------------------------------------------------------ */
/* Ground truth                                                             */
/* ------------------------------------------------------------------------ */

/* Per bandit: μ_(m), how many arms lie strictly above it, Σ of the top m and
 * of the bottom m true means (reward units; the trace's NSS), and whether the
 * target arm is in the true top m. Built once per simulation, read by every
 * run. */
struct truth {
    double *mu_m;
    size_t *above;
    double *top_sum;
    double *bottom_sum;
    unsigned char *target_top;
};

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static void truth_free(struct truth *t)
{
    free(t->mu_m);
    free(t->above);
    free(t->top_sum);
    free(t->bottom_sum);
    free(t->target_top);
}

static int truth_build(const struct sim_problem *p, struct truth *t)
{
    size_t kmax = 0;
    for (size_t b = 0; b < p->n_bandits; b++)
        kmax = p->n_arms[b] > kmax ? p->n_arms[b] : kmax;
    t->mu_m = calloc(p->n_bandits, sizeof *t->mu_m);
    t->above = calloc(p->n_bandits, sizeof *t->above);
    t->top_sum = calloc(p->n_bandits, sizeof *t->top_sum);
    t->bottom_sum = calloc(p->n_bandits, sizeof *t->bottom_sum);
    t->target_top = calloc(p->n_bandits, 1);
    double *v = calloc(kmax, sizeof *v);
    if (!t->mu_m || !t->above || !t->top_sum || !t->bottom_sum || !t->target_top || !v) {
        free(v);
        truth_free(t);
        return -1;
    }
    for (size_t b = 0; b < p->n_bandits; b++) {
        size_t k = p->n_arms[b];
        for (size_t i = 0; i < k; i++)
            v[i] = p->arms[b][i].mean;
        qsort(v, k, sizeof *v, cmp_desc);
        t->mu_m[b] = v[p->m - 1];
        t->top_sum[b] = 0.0;
        t->bottom_sum[b] = 0.0;
        for (size_t i = 0; i < p->m; i++) {
            t->top_sum[b] += v[i];
            t->bottom_sum[b] += v[k - 1 - i];
        }
        t->target_top[b] = p->target_arm >= 0 && (size_t)p->target_arm < k &&
                           p->arms[b][p->target_arm].mean >= t->mu_m[b];
        t->above[b] = 0;
        for (size_t i = 0; i < k; i++)
            t->above[b] += v[i] > t->mu_m[b];
    }
    free(v);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* One run                                                                  */
/* ------------------------------------------------------------------------ */

struct pending_reward {
    uint32_t bandit, arm;
    double r; /* rescaled to [0, 1] */
};

/* Trace sums over runs, per checkpoint (struct sim_trace): the [0, 1]
 * quantities in 32-bit fixed point, the verdicts and counts as integers, so
 * that adding the threads' sums in any order gives the same result. At most
 * 10^7 runs × 2^32 < 2^63. */
#define TRACE_FX 4294967296.0
#define TRACE_MAX_POINTS (20 * SIM_TRACE_MAX_PER_DECADE + 2)
enum { TRF_DC, TRF_RHO, TRF_NSS, TRF_N };
enum { TRC_ERR, TRC_PAC, TRC_REG, TRC_DONE, TRC_TARGET, TRC_RUN, TRC_N };

struct trace_acc {
    size_t n;            /* checkpoints; 0: no trace */
    const uint64_t *pts; /* borrowed, n entries */
    uint64_t *fx;        /* owned, TRF_N × n */
    uint64_t *ct;        /* owned, TRC_N × n */
    uint64_t longest;    /* most pulls handed out by one run */
};

/* Per-thread scratch, reused from run to run: the draw generator, the delay
 * FIFO (a ring of delay + 1 entries), the evaluation's high[] and the
 * thread's trace sums. */
struct scratch {
    gsl_rng *rng;
    struct pending_reward *fifo;
    size_t cap, head, len;
    struct engine_pull *blk; /* the leased block (--block > 1) */
    size_t bcap, bpos, blen;
    unsigned char *high;
    struct trace_acc tr;
};

static void scratch_free(struct scratch *s)
{
    if (s->rng != NULL)
        gsl_rng_free(s->rng);
    free(s->fifo);
    free(s->blk);
    free(s->high);
    free(s->tr.fx);
    free(s->tr.ct);
    memset(s, 0, sizeof *s);
}

/* npts checkpoints pts (borrowed; npts = 0: no trace). */
static int scratch_init(struct scratch *s, const struct sim_problem *p, uint64_t delay,
                        uint64_t block, const uint64_t *pts, size_t npts)
{
    memset(s, 0, sizeof *s);
    size_t kmax = 0;
    for (size_t b = 0; b < p->n_bandits; b++)
        kmax = p->n_arms[b] > kmax ? p->n_arms[b] : kmax;
    s->rng = gsl_rng_alloc(rng_xoshiro256ss);
    s->cap = (size_t)delay + 1;
    s->fifo = calloc(s->cap, sizeof *s->fifo);
    s->high = calloc(kmax, 1);
    if (s->rng == NULL || s->fifo == NULL || s->high == NULL)
        goto fail;
    if (block > 1) {
        s->bcap = (size_t)block;
        s->blk = calloc(s->bcap, sizeof *s->blk);
        if (s->blk == NULL)
            goto fail;
    }
    if (npts > 0) {
        s->tr.n = npts;
        s->tr.pts = pts;
        s->tr.fx = calloc(TRF_N * npts, sizeof *s->tr.fx);
        s->tr.ct = calloc(TRC_N * npts, sizeof *s->tr.ct);
        if (s->tr.fx == NULL || s->tr.ct == NULL)
            goto fail;
    }
    return 0;
fail:
    scratch_free(s);
    return -1;
}

static void fifo_push(struct scratch *s, size_t b, size_t arm, double r)
{
    struct pending_reward *x = &s->fifo[(s->head + s->len) % s->cap];
    x->bandit = (uint32_t)b;
    x->arm = (uint32_t)arm;
    x->r = r;
    s->len++;
}

static void fifo_deliver(struct scratch *s, struct engine *e)
{
    struct pending_reward x = s->fifo[s->head];
    s->head = (s->head + 1) % s->cap;
    s->len--;
    engine_reward(e, x.bandit, x.arm, x.r);
}

/* The next visitor's pull: engine_assign itself, or with a block (--block)
 * the next pull of the leased block, leasing a new one (up to bcap pulls,
 * fewer when the engine stops, serves a recommendation or reaches cap)
 * when it is used up. */
static void next_pull(struct scratch *s, struct engine *e, uint64_t cap, struct engine_pull *out)
{
    if (s->bcap == 0) {
        engine_assign(e, -1, out);
        return;
    }
    if (s->bpos == s->blen) {
        s->bpos = s->blen = 0;
        while (s->blen < s->bcap && !engine_stopped(e) && engine_handed_out(e) < cap) {
            struct engine_pull q;
            engine_assign(e, -1, &q);
            if (q.exploit) {
                if (s->blen == 0) {
                    *out = q; /* nothing handed out: as without a block */
                    return;
                }
                break;
            }
            s->blk[s->blen++] = q;
        }
        if (s->blen == 0) { /* stopped or capped meanwhile: the caller sees it */
            engine_assign(e, -1, out);
            return;
        }
    }
    *out = s->blk[s->bpos++];
}

static uint64_t effective_budget(const struct sim_problem *p, const struct sim_options *o)
{
    return o->budget > 0 ? o->budget : p->budget;
}

/* ctl: room for ENGINE_MAX_BANDITS control arm indexes (the engine copies
 * them). */
static void engine_cfg(const struct sim_problem *p, const struct sim_options *o, uint64_t seed,
                       struct engine_config *c, int *ctl)
{
    memset(c, 0, sizeof *c);
    c->n_bandits = p->n_bandits;
    c->n_arms = p->n_arms;
    c->m = p->m;
    c->epsilon = p->epsilon / (p->reward_max - p->reward_min);
    c->delta = p->delta;
    c->budget = effective_budget(p, o);
    c->bound = p->bound;
    c->stop_rule = o->stop;
    c->tau = p->tau;
    c->target_arm = p->target_arm;
    c->seed = seed;
    c->policy = o->policy;
    c->params = o->params;
    c->burn_in = o->burn_in;
    c->min_prob = o->min_prob;
    if (o->control_share > 0) {
        for (size_t b = 0; b < p->n_bandits && b < ENGINE_MAX_BANDITS; b++)
            ctl[b] = (int)o->control_arm;
        c->control_arm = ctl;
        c->control_share = o->control_share;
    }
}

/* Is the returned set of bandit b right? Exactly the true top m, where with
 * ties any set achieving the top-m values counts: m arms, none below μ_(m),
 * and all of the arms strictly above μ_(m). Also its (ε, m) and regret
 * verdicts (Chen et al. 2017: (1/m)(Σ top m − Σ chosen) ≤ ε). */
static void judge(const struct sim_problem *p, const struct truth *t, size_t b,
                  const unsigned char *high, int *wrong, int *pac_wrong, int *regret_wrong)
{
    double slack = SIM_CMP_SLACK * (p->reward_max - p->reward_min);
    size_t count = 0, above = 0;
    int below = 0, not_pac = 0;
    double sum = 0.0;
    for (size_t i = 0; i < p->n_arms[b]; i++) {
        if (!high[i])
            continue;
        double mu = p->arms[b][i].mean;
        count++;
        sum += mu;
        above += mu > t->mu_m[b];
        below |= mu < t->mu_m[b];
        not_pac |= mu < t->mu_m[b] - p->epsilon - slack;
    }
    *wrong = count != p->m || below || above != t->above[b];
    *pac_wrong = count != p->m || not_pac;
    *regret_wrong = count != p->m || (t->top_sum[b] - sum) / (double)p->m > p->epsilon + slack;
}

void sim_evaluate_set(const struct sim_problem *p, size_t b, const unsigned char *high, int *wrong,
                      int *pac_wrong, int *regret_wrong)
{
    struct truth t;
    if (truth_build(p, &t) != 0) {
        *wrong = *pac_wrong = *regret_wrong = 1; /* out of memory: no verdict */
        return;
    }
    judge(p, &t, b, high, wrong, pac_wrong, regret_wrong);
    truth_free(&t);
}

size_t sim_trace_points(unsigned per_decade, uint64_t limit, uint64_t *out, size_t cap)
{
    size_t n = 0;
    if (per_decade == 0 || limit == 0 || cap == 0)
        return 0;
    for (unsigned k = 0; n < cap; k++) {
        double x = floor(pow(10.0, (double)k / (double)per_decade) + 0.5);
        if (!(x < (double)limit))
            break;
        uint64_t t = (uint64_t)x;
        if (n == 0 || t > out[n - 1])
            out[n++] = t;
    }
    /* The limit itself closes the list: with a budget, the final answer. */
    if (n < cap && (n == 0 || out[n - 1] < limit))
        out[n++] = limit;
    return n;
}

/* Add the run's current state to the trace sums of checkpoints [from, to). */
static void trace_record(const struct sim_problem *p, const struct truth *t, struct engine *e,
                         struct scratch *s, size_t from, size_t to, int running)
{
    if (from >= to)
        return;
    const double tau = engine_config(e)->tau;
    double keep = 1.0, rho = 1.0, nss = 0.0;
    uint64_t err = 0, pac = 0, reg = 0, done = 0, target = 0;
    for (size_t b = 0; b < p->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(e, b, s->high, &st);
        int w, pw, rw;
        judge(p, t, b, s->high, &w, &pw, &rw);
        err |= (uint64_t)w;
        pac |= (uint64_t)pw;
        reg |= (uint64_t)rw;
        keep *= 1.0 - st.delta_c;
        rho = st.rho < rho ? st.rho : rho;
        double sel = 0.0, span = t->top_sum[b] - t->bottom_sum[b];
        for (size_t i = 0; i < p->n_arms[b]; i++)
            sel += s->high[i] ? p->arms[b][i].mean : 0.0;
        nss += span > 0.0 ? clip((sel - t->bottom_sum[b]) / span, 0.0, 1.0) : 1.0;
        if (st.rho >= tau) {
            done++;
            target += t->target_top[b];
        }
    }
    const double fx[TRF_N] = {clip(1.0 - keep, 0.0, 1.0), clip(rho, 0.0, 1.0),
                              nss / (double)p->n_bandits};
    const uint64_t ct[TRC_N] = {err, pac, reg, done, target, (uint64_t)running};
    for (size_t k = from; k < to; k++) {
        for (int q = 0; q < TRF_N; q++)
            s->tr.fx[q * s->tr.n + k] += (uint64_t)llround(fx[q] * TRACE_FX);
        for (int q = 0; q < TRC_N; q++)
            s->tr.ct[q * s->tr.n + k] += ct[q];
    }
}

static int run_one(const struct sim_problem *p, const struct sim_options *o, const struct truth *t,
                   struct scratch *s, uint64_t i, struct sim_run_result *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t key = run_key(o->seed, i);
    struct engine_config cfg;
    int ctl[ENGINE_MAX_BANDITS];
    engine_cfg(p, o, rng_mix64(key ^ 0x656e67696e65ULL) /* "engine" */, &cfg, ctl);
    struct engine *e = engine_create(&cfg, err, errlen);
    if (e == NULL)
        return -1;
    rng_seed64(s->rng, rng_mix64(key ^ 0x647261777300ULL) /* "draws" */);
    s->head = s->len = 0;
    s->bpos = s->blen = 0;

    const double lo = p->reward_min, hi = p->reward_max, scale = 1.0 / (hi - lo);
    const uint64_t delay = o->delay;
    const uint64_t cap = o->max_pulls > 0 ? o->max_pulls : SIM_SAFETY_PULLS;
    unsigned idle = 0;
    size_t next = 0; /* next trace checkpoint */
    while (!engine_stopped(e)) {
        if (engine_handed_out(e) >= cap) {
            out->capped = 1;
            break;
        }
        struct engine_pull pull;
        next_pull(s, e, cap, &pull);
        if (pull.exploit) {
            /* Some bandits are done and the engine served a recommendation:
             * nothing was handed out. Let time pass: the oldest reward in
             * flight comes back. */
            if (engine_stopped(e))
                break;
            if (s->len > 0) {
                fifo_deliver(s, e);
            } else if (++idle > SIM_IDLE_MAX) {
                out->capped = 1;
                break;
            }
            continue;
        }
        idle = 0;
        double x = clip(draw(&p->arms[pull.bandit][pull.arm], s->rng), lo, hi);
        double r = (x - lo) * scale;
        fifo_push(s, pull.bandit, pull.arm, r > 1.0 ? 1.0 : r);
        if (s->len > delay)
            fifo_deliver(s, e);
        /* A checkpoint the run ends on is recorded below, with its last
         * rewards in. */
        if (next < s->tr.n && engine_handed_out(e) >= s->tr.pts[next] && !engine_stopped(e) &&
            engine_handed_out(e) < cap) {
            size_t to = next;
            while (to < s->tr.n && engine_handed_out(e) >= s->tr.pts[to])
                to++;
            trace_record(p, t, e, s, next, to, 1);
            next = to;
        }
    }
    /* The rest of the block still goes to visitors: the client learns of
     * the stop only when it asks for its next block. Their rewards count,
     * as those in flight do: they are the cost of the block's staleness. */
    for (; s->bpos < s->blen; s->bpos++) {
        const struct engine_pull *q = &s->blk[s->bpos];
        double x = clip(draw(&p->arms[q->bandit][q->arm], s->rng), lo, hi);
        double r = (x - lo) * scale;
        if (s->len == s->cap)
            fifo_deliver(s, e);
        fifo_push(s, q->bandit, q->arm, r > 1.0 ? 1.0 : r);
    }
    /* Every reward in flight arrives before the answer is read: the
     * recommendation uses all the data the run paid for. */
    while (s->len > 0)
        fifo_deliver(s, e);
    /* Later checkpoints see the final answer. */
    trace_record(p, t, e, s, next, s->tr.n, 0);
    if (engine_handed_out(e) > s->tr.longest)
        s->tr.longest = engine_handed_out(e);

    out->pulls = engine_handed_out(e);
    enum engine_stop_reason why = engine_stop_reason(e);
    out->stopped =
        !out->capped && (why == ENGINE_STOPPED_CONFIDENCE || why == ENGINE_STOPPED_POLICY);
    const double tau = engine_config(e)->tau; /* resolved: 1 − δ when unset */
    for (size_t b = 0; b < p->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(e, b, s->high, &st);
        int w, pw, rw;
        judge(p, t, b, s->high, &w, &pw, &rw);
        out->wrong += (size_t)w;
        out->error |= w;
        out->pac_error |= pw;
        out->regret_error |= rw;
        out->completed += st.rho >= tau;
    }
    out->bandit_error = (double)out->wrong / (double)p->n_bandits;
    out->rewarded = engine_pulls(e);
    engine_free(e);
    return 0;
}

int sim_run_one(const struct sim_problem *p, const struct sim_options *o, uint64_t i,
                struct sim_run_result *out, char *err, size_t errlen)
{
    struct truth t;
    struct scratch s;
    if (o->delay > SIM_MAX_DELAY) {
        snprintf(err, errlen, "delay: at most %llu", (unsigned long long)SIM_MAX_DELAY);
        return -1;
    }
    if (o->block > SIM_MAX_BLOCK) {
        snprintf(err, errlen, "block: at most %llu", (unsigned long long)SIM_MAX_BLOCK);
        return -1;
    }
    if (truth_build(p, &t) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (scratch_init(&s, p, o->delay, o->block, NULL, 0) != 0) {
        truth_free(&t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = run_one(p, o, &t, &s, i, out, err, errlen);
    scratch_free(&s);
    truth_free(&t);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Many runs, over threads                                                  */
/* ------------------------------------------------------------------------ */

/* Integer tallies: sums of integers do not depend on the order in which the
 * threads add them, which is what makes the output thread-count independent. */
struct tally {
    uint64_t errors, pac, regret, stopped, capped, wrong, completed, pulls;
};

struct job {
    const struct sim_problem *p;
    const struct sim_options *o;
    const struct truth *t;
    uint64_t *pulls;     /* per run, by index */
    const uint64_t *pts; /* trace checkpoints (npts = 0: no trace) */
    size_t npts;
    atomic_uint_fast64_t next, done;
    atomic_int failed;
    pthread_mutex_t lock; /* guards the fields below */
    pthread_cond_t cond;
    unsigned finished; /* threads that have returned */
    struct tally sum;
    struct trace_acc tr; /* the threads' trace sums, added up (fx, ct owned by sim_run) */
    char err[256];
};

static void *worker(void *arg)
{
    struct job *j = arg;
    struct tally mine = {0};
    struct scratch s;
    char err[256] = "";
    int failed = scratch_init(&s, j->p, j->o->delay, j->o->block, j->pts, j->npts) != 0;
    if (failed)
        snprintf(err, sizeof err, "out of memory");
    while (!failed && !atomic_load(&j->failed)) {
        uint64_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->o->runs)
            break;
        struct sim_run_result r;
        if (run_one(j->p, j->o, j->t, &s, i, &r, err, sizeof err) != 0) {
            failed = 1;
            break;
        }
        j->pulls[i] = r.pulls;
        mine.errors += (uint64_t)r.error;
        mine.pac += (uint64_t)r.pac_error;
        mine.regret += (uint64_t)r.regret_error;
        mine.stopped += (uint64_t)r.stopped;
        mine.capped += (uint64_t)r.capped;
        mine.wrong += r.wrong;
        mine.completed += r.completed;
        mine.pulls += r.pulls;
        atomic_fetch_add(&j->done, 1);
    }
    pthread_mutex_lock(&j->lock);
    if (failed && !atomic_load(&j->failed)) {
        atomic_store(&j->failed, 1);
        snprintf(j->err, sizeof j->err, "%s", err);
    }
    j->sum.errors += mine.errors;
    j->sum.pac += mine.pac;
    j->sum.regret += mine.regret;
    j->sum.stopped += mine.stopped;
    j->sum.capped += mine.capped;
    j->sum.wrong += mine.wrong;
    j->sum.completed += mine.completed;
    j->sum.pulls += mine.pulls;
    /* s.tr.n == j->tr.n (both npts); bounded by the worker's own so that
     * npts = 0 (no trace arrays) visibly reads nothing */
    for (size_t k = 0; !failed && k < TRF_N * s.tr.n; k++)
        j->tr.fx[k] += s.tr.fx[k];
    for (size_t k = 0; !failed && k < TRC_N * s.tr.n; k++)
        j->tr.ct[k] += s.tr.ct[k];
    if (!failed && s.tr.longest > j->tr.longest)
        j->tr.longest = s.tr.longest;
    j->finished++;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    scratch_free(&s);
    return NULL;
}

static double now_s(void)
{
    return (double)clock_mono_ns() * 1e-9;
}

/* "[#####.....]  52%  5200/10000 runs  3.1 s, about 2.9 s left" on one line. */
static void progress_draw(uint64_t done, uint64_t total, double elapsed)
{
    enum { W = 30 };
    char bar[W + 1];
    size_t fill = total ? (size_t)((double)W * (double)done / (double)total) : W;
    for (size_t i = 0; i < W; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[W] = '\0';
    double left = done > 0 ? elapsed * (double)(total - done) / (double)done : 0.0;
    fprintf(stderr, "\r[%s] %3d%%  %llu/%llu runs  %.1f s, about %.1f s left ", bar,
            (int)(100.0 * (double)done / (double)(total ? total : 1)), (unsigned long long)done,
            (unsigned long long)total, elapsed, left);
    (void)fflush(stderr); /* a progress bar: nothing to do if it fails */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Quantile q of sorted x[0..n) with linear interpolation between order
 * statistics (Hyndman & Fan type 7, numpy's default): the median of an even
 * count is the mean of the two middle values. */
static double quantile(const uint64_t *x, uint64_t n, double q)
{
    if (n == 0)
        return 0.0;
    double h = (double)(n - 1) * q;
    uint64_t i = (uint64_t)floor(h);
    if (i + 1 >= n)
        return (double)x[n - 1];
    return (double)x[i] + (h - (double)i) * ((double)x[i + 1] - (double)x[i]);
}

static int check_options(const struct sim_problem *p, const struct sim_options *o, char *err,
                         size_t errlen)
{
    if (o->policy == NULL) {
        snprintf(err, errlen, "policy: required");
        return -1;
    }
    if (o->runs < 1 || o->runs > SIM_MAX_RUNS) {
        snprintf(err, errlen, "runs: must be in [1, %llu]", (unsigned long long)SIM_MAX_RUNS);
        return -1;
    }
    if (o->delay > SIM_MAX_DELAY) {
        snprintf(err, errlen, "delay: at most %llu", (unsigned long long)SIM_MAX_DELAY);
        return -1;
    }
    if (o->block > SIM_MAX_BLOCK) {
        snprintf(err, errlen, "block: at most %llu", (unsigned long long)SIM_MAX_BLOCK);
        return -1;
    }
    if (o->threads > SIM_MAX_THREADS) {
        snprintf(err, errlen, "threads: at most %d", SIM_MAX_THREADS);
        return -1;
    }
    if (o->trace_per_decade > SIM_TRACE_MAX_PER_DECADE) {
        snprintf(err, errlen, "trace: at most %d points per decade", SIM_TRACE_MAX_PER_DECADE);
        return -1;
    }
    /* The engine's own checks (policy flags against the goal), once, before
     * any thread starts. */
    struct engine_config c;
    int ctl[ENGINE_MAX_BANDITS];
    engine_cfg(p, o, 0, &c, ctl);
    return engine_validate(&c, err, errlen);
}

/* Means from the trace sums: the checkpoints up to the first one that no run
 * went past (it shows every run's final answer). 0, or −1 (out of memory,
 * nothing left allocated in out). */
static int trace_finish(const struct sim_problem *p, const struct sim_options *o,
                        const struct trace_acc *acc, struct sim_trace *out)
{
    size_t n = 0;
    while (n < acc->n && acc->pts[n] < acc->longest)
        n++;
    n = n < acc->n ? n + 1 : acc->n;
    memset(out, 0, sizeof *out);
    out->n = n;
    out->per_decade = o->trace_per_decade;
    out->pulls = calloc(n, sizeof *out->pulls);
    double **fx[TRF_N] = {&out->delta_c, &out->rho, &out->nss};
    double **ct[TRC_N] = {&out->error_rate, &out->pac_error_rate,   &out->regret_error_rate,
                          &out->completed,  &out->completed_target, &out->running};
    int fail = out->pulls == NULL;
    for (int q = 0; q < TRF_N; q++)
        fail |= (*fx[q] = calloc(n, sizeof(double))) == NULL;
    for (int q = 0; q < TRC_N; q++) {
        if (q == TRC_TARGET && p->target_arm < 0)
            continue;
        fail |= (*ct[q] = calloc(n, sizeof(double))) == NULL;
    }
    if (fail) {
        struct sim_result r = {.trace = *out};
        sim_result_free(&r);
        memset(out, 0, sizeof *out);
        return -1;
    }
    const double runs = (double)o->runs;
    for (size_t k = 0; k < n; k++) {
        out->pulls[k] = acc->pts[k];
        for (int q = 0; q < TRF_N; q++)
            (*fx[q])[k] = (double)acc->fx[q * acc->n + k] / TRACE_FX / runs;
        for (int q = 0; q < TRC_N; q++)
            if (*ct[q] != NULL)
                (*ct[q])[k] = (double)acc->ct[q * acc->n + k] / runs;
    }
    return 0;
}

int sim_run(const struct sim_problem *p, const struct sim_options *o, struct sim_result *out,
            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_options(p, o, err, errlen) != 0)
        return -1;
    double t0 = now_s();
    struct truth t;
    if (truth_build(p, &t) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint64_t *pulls = calloc(o->runs, sizeof *pulls);
    pthread_t *tid = NULL;
    unsigned nt = o->threads;
    if (nt == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        nt = ncpu > 0 ? (unsigned)ncpu : 1;
        if (nt > SIM_MAX_THREADS)
            nt = SIM_MAX_THREADS;
    }
    if (nt > o->runs)
        nt = (unsigned)o->runs;
    tid = calloc(nt, sizeof *tid);
    int rc = -1;
    uint64_t *pts = NULL;
    struct trace_acc tr = {0};
    if (pulls == NULL || tid == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (o->trace_per_decade > 0) {
        uint64_t limit = effective_budget(p, o);
        if (limit == 0)
            limit = o->max_pulls > 0 ? o->max_pulls : SIM_SAFETY_PULLS;
        pts = calloc(TRACE_MAX_POINTS, sizeof *pts);
        if (pts == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        tr.n = sim_trace_points(o->trace_per_decade, limit, pts, TRACE_MAX_POINTS);
        tr.pts = pts;
        tr.fx = calloc(TRF_N * tr.n, sizeof *tr.fx);
        tr.ct = calloc(TRC_N * tr.n, sizeof *tr.ct);
        if (tr.fx == NULL || tr.ct == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }

    struct job j = {.p = p, .o = o, .t = &t, .pulls = pulls, .pts = pts, .npts = tr.n, .tr = tr};
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.lock, NULL);
    pthread_cond_init(&j.cond, NULL);
    unsigned started = 0;
    for (; started < nt; started++) {
        if (pthread_create(&tid[started], NULL, worker, &j) != 0)
            break;
    }
    if (started == 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        pthread_cond_destroy(&j.cond);
        pthread_mutex_destroy(&j.lock);
        goto out;
    }
    /* Wait for the workers; redraw the progress bar every 0.2 s once the
     * simulation has lasted a second (and only on a terminal). */
    int show = o->progress && isatty(2);
    int drawn = 0;
    pthread_mutex_lock(&j.lock);
    while (j.finished < started) {
        if (!show) {
            pthread_cond_wait(&j.cond, &j.lock);
            continue;
        }
        struct timespec ts = clock_deadline(CLOCK_REALTIME, 200);
        pthread_cond_timedwait(&j.cond, &j.lock, &ts);
        double el = now_s() - t0;
        if (el > 1.0 && j.finished < started) {
            progress_draw(atomic_load(&j.done), o->runs, el);
            drawn = 1;
        }
    }
    pthread_mutex_unlock(&j.lock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (drawn)
        fprintf(stderr, "\r\033[K");
    pthread_cond_destroy(&j.cond);
    pthread_mutex_destroy(&j.lock);
    if (atomic_load(&j.failed)) {
        snprintf(err, errlen, "%s", j.err);
        goto out;
    }

    /* Aggregate, in index order where order could matter. */
    double n = (double)o->runs;
    out->runs = o->runs;
    out->errors = j.sum.errors;
    out->pac_errors = j.sum.pac;
    out->regret_errors = j.sum.regret;
    out->stopped = j.sum.stopped;
    out->capped = j.sum.capped;
    out->total_pulls = j.sum.pulls;
    out->error_rate = (double)j.sum.errors / n;
    out->pac_error_rate = (double)j.sum.pac / n;
    out->regret_error_rate = (double)j.sum.regret / n;
    out->stopped_rate = (double)j.sum.stopped / n;
    out->mean_bandit_error_rate = (double)j.sum.wrong / ((double)p->n_bandits * n);
    out->mean_completed = (double)j.sum.completed / n;
    out->mean_pulls = (double)j.sum.pulls / n;
    double ss = 0.0;
    for (uint64_t i = 0; i < o->runs; i++) {
        double d = (double)pulls[i] - out->mean_pulls;
        ss += d * d;
    }
    out->sd_pulls = o->runs > 1 ? sqrt(ss / (n - 1.0)) : 0.0;
    qsort(pulls, o->runs, sizeof *pulls, cmp_u64);
    out->median_pulls = quantile(pulls, o->runs, 0.5);
    out->p90_pulls = quantile(pulls, o->runs, 0.9);
    if (j.tr.n > 0 && trace_finish(p, o, &j.tr, &out->trace) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    out->wall_s = now_s() - t0;
    rc = 0;
out:
    free(tid);
    free(pulls);
    free(pts);
    free(tr.fx);
    free(tr.ct);
    truth_free(&t);
    return rc;
}

void sim_result_free(struct sim_result *r)
{
    struct sim_trace *t = &r->trace;
    free(t->pulls);
    free(t->delta_c);
    free(t->rho);
    free(t->nss);
    free(t->error_rate);
    free(t->pac_error_rate);
    free(t->regret_error_rate);
    free(t->completed);
    free(t->completed_target);
    free(t->running);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */
/* ------------------------------------------------------------------------ */

void sim_wilson(uint64_t k, uint64_t n, double z, double *lo, double *hi)
{
    if (n == 0) {
        *lo = 0.0;
        *hi = 1.0;
        return;
    }
    double nn = (double)n, ph = (double)k / nn, z2 = z * z;
    double centre = (ph + z2 / (2.0 * nn)) / (1.0 + z2 / nn);
    double half = z / (1.0 + z2 / nn) * sqrt(ph * (1.0 - ph) / nn + z2 / (4.0 * nn * nn));
    *lo = centre - half < 0.0 || k == 0 ? 0.0 : centre - half;
    *hi = centre + half > 1.0 || k == n ? 1.0 : centre + half;
}

struct rule_name {
    const char *name;
    enum engine_stop_rule rule;
};

static const struct rule_name rules[] = {
    {"policy", ENGINE_RULE_DEFAULT}, {"delta_c", ENGINE_RULE_DELTA_C},
    {"glr", ENGINE_RULE_GLR},        {"glr-heuristic", ENGINE_RULE_GLR_HEURISTIC},
    {"rho", ENGINE_RULE_RHO},        {"none", ENGINE_RULE_NONE},
};

int sim_stop_rule_parse(const char *name, enum engine_stop_rule *out)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].name, name) == 0) {
            *out = rules[i].rule;
            return 0;
        }
    return -1;
}

const char *sim_stop_rule_name(enum engine_stop_rule r)
{
    if (r == ENGINE_RULE_POLICY)
        return "policy";
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].rule == r)
            return rules[i].name;
    return "unknown";
}

/* The 95% Wilson interval as [lo, hi] (new reference). */
static json_t *ci_json(uint64_t k, uint64_t n)
{
    double lo, hi;
    sim_wilson(k, n, 1.959963984540054, &lo, &hi);
    return json_pack("[f, f]", lo, hi);
}

/* Parameter values by name; ENUM values by their choice's name (new). */
static json_t *params_json(const struct policy_ops *ops, const struct policy_params *pp)
{
    json_t *o = json_object();
    if (o == NULL || ops->params == NULL)
        return o;
    for (int i = 0; i < POLICY_MAX_PARAMS && ops->params[i].name != NULL; i++) {
        const struct policy_param_spec *s = &ops->params[i];
        double v = pp->values[i];
        json_t *jv = s->type == POLICY_PARAM_ENUM  ? json_string(s->choices[(size_t)v])
                     : s->type == POLICY_PARAM_INT ? json_integer((json_int_t)v)
                                                   : json_real(v);
        json_object_set_new(o, s->name, jv);
    }
    return o;
}

static json_t *doubles_json(const double *x, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++)
        json_array_append_new(a, json_real(x[i]));
    return a;
}

/* The trace as parallel arrays (new reference). */
static json_t *trace_json(const struct sim_trace *t)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_t *pulls = json_array();
    for (size_t i = 0; pulls != NULL && i < t->n; i++)
        json_array_append_new(pulls, json_integer((json_int_t)t->pulls[i]));
    json_object_set_new(o, "per_decade", json_integer((json_int_t)t->per_decade));
    json_object_set_new(o, "pulls", pulls);
    json_object_set_new(o, "delta_c", doubles_json(t->delta_c, t->n));
    json_object_set_new(o, "rho", doubles_json(t->rho, t->n));
    json_object_set_new(o, "nss", doubles_json(t->nss, t->n));
    json_object_set_new(o, "error_rate", doubles_json(t->error_rate, t->n));
    json_object_set_new(o, "pac_error_rate", doubles_json(t->pac_error_rate, t->n));
    json_object_set_new(o, "regret_error_rate", doubles_json(t->regret_error_rate, t->n));
    json_object_set_new(o, "completed", doubles_json(t->completed, t->n));
    if (t->completed_target != NULL)
        json_object_set_new(o, "completed_target", doubles_json(t->completed_target, t->n));
    json_object_set_new(o, "running", doubles_json(t->running, t->n));
    return o;
}

json_t *sim_result_json(const struct sim_problem *p, const struct sim_options *o,
                        const struct sim_result *r)
{
    uint64_t budget = effective_budget(p, o);
    double pps = r->wall_s > 0.0 ? (double)r->total_pulls / r->wall_s : 0.0;
    json_t *j = json_object();
    if (j == NULL)
        return NULL;
    json_object_set_new(j, "runs", json_integer((json_int_t)r->runs));
    json_object_set_new(j, "policy", json_string(o->policy->name));
    json_object_set_new(j, "params", params_json(o->policy, &o->params));
    json_object_set_new(j, "error_rate", json_real(r->error_rate));
    json_object_set_new(j, "mean_bandit_error_rate", json_real(r->mean_bandit_error_rate));
    json_object_set_new(j, "pac_error_rate", json_real(r->pac_error_rate));
    json_object_set_new(j, "regret_error_rate", json_real(r->regret_error_rate));
    json_object_set_new(j, "mean_pulls", json_real(r->mean_pulls));
    json_object_set_new(j, "median_pulls", json_real(r->median_pulls));
    json_object_set_new(j, "p90_pulls", json_real(r->p90_pulls));
    json_object_set_new(j, "mean_completed", json_real(r->mean_completed));
    json_object_set_new(j, "wall_s", json_real(r->wall_s));
    /* extras */
    json_object_set_new(j, "error_rate_ci", ci_json(r->errors, r->runs));
    json_object_set_new(j, "pac_error_rate_ci", ci_json(r->pac_errors, r->runs));
    json_object_set_new(j, "regret_error_rate_ci", ci_json(r->regret_errors, r->runs));
    json_object_set_new(j, "errors", json_integer((json_int_t)r->errors));
    json_object_set_new(j, "sd_pulls", json_real(r->sd_pulls));
    json_object_set_new(j, "mean_pulls_se",
                        json_real(r->runs > 0 ? r->sd_pulls / sqrt((double)r->runs) : 0.0));
    json_object_set_new(j, "stopped_rate", json_real(r->stopped_rate));
    json_object_set_new(j, "capped_runs", json_integer((json_int_t)r->capped));
    json_object_set_new(j, "pulls_per_s", json_real(pps));
    json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(j, "delay", json_integer((json_int_t)o->delay));
    /* only when set: the output of a run without blocks is as it was */
    if (o->block > 1)
        json_object_set_new(j, "block", json_integer((json_int_t)o->block));
    json_object_set_new(j, "stop", json_string(sim_stop_rule_name(o->stop)));
    json_object_set_new(j, "bound",
                        json_string(p->bound == STATS_BOUND_FIXED ? "fixed" : "anytime"));
    json_object_set_new(j, "budget", budget > 0 ? json_integer((json_int_t)budget) : json_null());
    json_object_set_new(j, "m", json_integer((json_int_t)p->m));
    json_object_set_new(j, "epsilon", json_real(p->epsilon));
    json_object_set_new(j, "delta", json_real(p->delta));
    json_object_set_new(j, "tau", isnan(p->tau) ? json_real(1.0 - p->delta) : json_real(p->tau));
    json_object_set_new(j, "bandits", json_integer((json_int_t)p->n_bandits));
    json_object_set_new(j, "clipped", json_boolean(p->clipped));
    if (o->burn_in > 0)
        json_object_set_new(j, "burn_in", json_integer((json_int_t)o->burn_in));
    if (o->min_prob > 0)
        json_object_set_new(j, "min_prob", json_real(o->min_prob));
    if (o->control_share > 0) {
        json_object_set_new(j, "control_arm", json_integer((json_int_t)o->control_arm));
        json_object_set_new(j, "control_share", json_real(o->control_share));
    }
    if (r->trace.n > 0)
        json_object_set_new(j, "trace", trace_json(&r->trace));
    return j;
}

static const struct {
    unsigned flag;
    const char *name;
} flag_names[] = {
    {POLICY_F_FIXED_CONFIDENCE, "fixed_confidence"},
    {POLICY_F_FIXED_BUDGET, "fixed_budget"},
    {POLICY_F_MULTI, "multi_bandit"},
    {POLICY_F_TOPM, "top_m"},
    {POLICY_F_NEEDS_EPSILON, "needs_epsilon"},
    {POLICY_F_OWN_STOP, "own_stop"},
    {POLICY_F_BAYES, "bayesian"},
    {POLICY_F_NEEDS_TARGET, "needs_target_arm"},
    {POLICY_F_REGRET, "regret"},
};

static json_t *param_spec_json(const struct policy_param_spec *s)
{
    static const char *const type_names[] = {"number", "integer", "enum"};
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(s->name));
    json_object_set_new(o, "type", json_string(type_names[s->type]));
    if (s->type == POLICY_PARAM_ENUM) {
        json_object_set_new(o, "default", json_string(s->choices[(size_t)s->def]));
        json_t *c = json_array();
        for (size_t i = 0; s->choices[i] != NULL; i++)
            json_array_append_new(c, json_string(s->choices[i]));
        json_object_set_new(o, "choices", c);
    } else if (s->type == POLICY_PARAM_INT) {
        json_object_set_new(o, "default", json_integer((json_int_t)s->def));
        json_object_set_new(o, "min", json_integer((json_int_t)s->min));
        json_object_set_new(o, "max", json_integer((json_int_t)s->max));
    } else {
        json_object_set_new(o, "default", json_real(s->def));
        json_object_set_new(o, "min", json_real(s->min));
        json_object_set_new(o, "max", json_real(s->max));
    }
    json_object_set_new(o, "doc", json_string(s->doc != NULL ? s->doc : ""));
    return o;
}

json_t *sim_policies_json(void)
{
    json_t *list = json_array();
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++) {
        const struct policy_ops *ops = *pp;
        json_t *flags = json_array();
        for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
            if (ops->flags & flag_names[i].flag)
                json_array_append_new(flags, json_string(flag_names[i].name));
        json_t *params = json_array();
        for (int i = 0; ops->params != NULL && i < POLICY_MAX_PARAMS && ops->params[i].name != NULL;
             i++)
            json_array_append_new(params, param_spec_json(&ops->params[i]));
        json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:o}", "name", ops->name, "summary",
                                              ops->summary ? ops->summary : "", "flags", flags,
                                              "params", params));
    }
    json_t *stops = json_array();
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        json_array_append_new(stops, json_string(rules[i].name));
    return json_pack("{s:o, s:o}", "policies", list, "stop_rules", stops);
}
