/*
 * policy.c — parameter validation for the interface of policy.h. The
 * registry itself is registry.c: adding a policy is one line there.
 */
#include "policies/policy.h"
#include "policies/rng.h"

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

int policy_own_stop_proven(const struct policy_ops *ops, const struct policy_params *p)
{
    if (!(ops->flags & POLICY_F_OWN_STOP))
        return 0;
    return ops->stop_proven == NULL || ops->stop_proven(p);
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

double policy_param(const struct policy_ctx *ctx, int i)
{
    return ctx->params->values[i];
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
    size_t pick = rng_index(rng, fresh);
    for (size_t i = 0; i < k; i++)
        if (arms[i].n == 0 && arms[i].pending == 0 && pick-- == 0)
            return i;
    return arm; /* not reached */
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

void policy_snap_stateless(void *state, const struct policy_ctx *ctx, struct ser *s)
{
    (void)state;
    (void)ctx;
    (void)s;
}
