/*
 * policy.c — parameter validation and the helpers every policy shares
 * (random tie-breaking, ordering by mean, top-m gaps). The registry itself
 * is registry.c: adding a policy is one line there.
 */
#include "policies/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int policy_param_index(const struct policy_ops *ops, const char *name)
{
    if (ops->params == NULL)
        return -1;
    for (int i = 0; i < POLICY_MAX_PARAMS && ops->params[i].name != NULL; i++)
        if (strcmp(ops->params[i].name, name) == 0)
            return i;
    return -1;
}

void policy_params_defaults(const struct policy_ops *ops, struct policy_params *p)
{
    memset(p, 0, sizeof *p);
    if (ops->params == NULL)
        return;
    for (int i = 0; i < POLICY_MAX_PARAMS && ops->params[i].name != NULL; i++)
        p->values[i] = ops->params[i].def;
}

int policy_param_check(const struct policy_param_spec *spec, double v, char *err, size_t errlen)
{
    if (!isfinite(v)) {
        snprintf(err, errlen, "must be a finite number");
        return -1;
    }
    switch (spec->type) {
    case POLICY_PARAM_ENUM: {
        size_t n = 0;
        while (spec->choices[n] != NULL)
            n++;
        if (v < 0 || v >= (double)n || v != floor(v)) {
            snprintf(err, errlen, "must be one of the listed choices");
            return -1;
        }
        return 0;
    }
    case POLICY_PARAM_INT:
        if (v != floor(v)) {
            snprintf(err, errlen, "must be an integer");
            return -1;
        }
        /* fall through */
    case POLICY_PARAM_NUM:
        if (v < spec->min || v > spec->max) {
            snprintf(err, errlen, "must be in [%g, %g]", spec->min, spec->max);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown parameter type");
    return -1;
}

int policy_param_parse(const struct policy_param_spec *spec, const char *text, double *out,
                       char *err, size_t errlen)
{
    if (spec->type == POLICY_PARAM_ENUM) {
        size_t len = 0;
        for (size_t i = 0; spec->choices[i] != NULL; i++) {
            if (strcmp(spec->choices[i], text) == 0) {
                *out = (double)i;
                return 0;
            }
            len += (size_t)snprintf(err + (len < errlen ? len : errlen),
                                    len < errlen ? errlen - len : 0, "%s%s", i ? "|" : "must be ",
                                    spec->choices[i]);
        }
        return -1;
    }
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0') {
        snprintf(err, errlen, "must be a number");
        return -1;
    }
    if (policy_param_check(spec, v, err, errlen) != 0)
        return -1;
    *out = v;
    return 0;
}

double policy_param(const struct policy_ctx *ctx, const struct policy_ops *ops, const char *name)
{
    int i = policy_param_index(ops, name);
    if (i < 0)
        abort(); /* a policy asking for a parameter it did not declare */
    return ctx->params->values[i];
}

size_t policy_rand_index(gsl_rng *rng, size_t n)
{
    if (n <= 1)
        return 0;
    return (size_t)gsl_rng_uniform_int(rng, (unsigned long)n);
}

// NOLINTNEXTLINE(readability-non-const-parameter): the rebudget hook's signature
int policy_rebudget_any(void *state, const struct policy_ctx *ctx, int check, char *err,
                        size_t errlen)
{
    (void)state;
    (void)ctx;
    (void)check;
    (void)err;
    (void)errlen;
    return 0;
}

size_t policy_first_pulls(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t arm)
{
    if (arms[arm].n > 0 || arms[arm].pending == 0)
        return arm;
    size_t fresh = 0;
    for (size_t i = 0; i < k; i++)
        fresh += arms[i].n == 0 && arms[i].pending == 0;
    if (fresh == 0)
        return arm;
    size_t pick = policy_rand_index(rng, fresh);
    for (size_t i = 0; i < k; i++)
        if (arms[i].n == 0 && arms[i].pending == 0 && pick-- == 0)
            return i;
    return arm; /* not reached */
}

void policy_rank_draw(gsl_rng *rng, uint32_t *rank, size_t k)
{
    for (size_t i = 0; i < k; i++)
        rank[i] = (uint32_t)i;
    for (size_t i = k; i > 1; i--) {
        size_t j = policy_rand_index(rng, i);
        uint32_t t = rank[i - 1];
        rank[i - 1] = rank[j];
        rank[j] = t;
    }
}

/* Reservoir-style tie breaking: the j-th tie replaces the current choice
 * with probability 1/j, so each tied index wins with probability 1/ties
 * without a second pass or scratch memory. */
static size_t arg_extreme(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n,
                          int want_max)
{
    size_t best = (size_t)-1;
    double bv = 0;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask != NULL && !mask[i])
            continue;
        double x = v[i];
        int better = best == (size_t)-1 || (want_max ? x > bv : x < bv);
        if (better) {
            best = i;
            bv = x;
            ties = 1;
        } else if (x == bv) {
            ties++;
            if (gsl_rng_uniform_int(rng, (unsigned long)ties) == 0)
                best = i;
        }
    }
    return best;
}

size_t policy_argmax(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n)
{
    return arg_extreme(rng, v, mask, n, 1);
}

size_t policy_argmin(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n)
{
    return arg_extreme(rng, v, mask, n, 0);
}

/* Shuffle, then sort by mean with a deterministic comparison sort: since the
 * shuffled input is exchangeable among arms of equal mean and the sort only
 * compares means, tied arms come out in uniformly random order. Insertion
 * sort for small K, Shell sort beyond; neither allocates. */
void policy_order_by_mean(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t *idx)
{
    for (size_t i = 0; i < k; i++)
        idx[i] = i;
    for (size_t i = k; i > 1; i--) {
        size_t j = policy_rand_index(rng, i);
        size_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
    if (k > 64) {
        static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
        for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
            size_t gap = gaps[g];
            for (size_t i = gap; i < k; i++) {
                size_t t = idx[i];
                size_t j = i;
                while (j >= gap && arms[idx[j - gap]].mean < arms[t].mean) {
                    idx[j] = idx[j - gap];
                    j -= gap;
                }
                idx[j] = t;
            }
        }
        return;
    }
    for (size_t i = 1; i < k; i++) {
        size_t t = idx[i];
        size_t j = i;
        while (j > 0 && arms[idx[j - 1]].mean < arms[t].mean) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = t;
    }
}

void policy_topm_gaps(gsl_rng *rng, const struct stats_arm *arms, size_t k, unsigned m, double *gap,
                      size_t *order)
{
    if (k == 0)
        return;
    if (k == 1) {
        gap[0] = 0;
        return;
    }
    if (m == 0 || m >= k)
        m = 1;
    policy_order_by_mean(rng, arms, k, order);
    double mu_m = arms[order[m - 1]].mean; /* μ̂_(m) */
    double mu_m1 = arms[order[m]].mean;    /* μ̂_(m+1) */
    for (size_t r = 0; r < k; r++) {
        size_t i = order[r];
        gap[i] = r < m ? arms[i].mean - mu_m1 : mu_m - arms[i].mean;
    }
}
