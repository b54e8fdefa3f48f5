/*
 * fcdrive.c — a test environment for engines (see fcdrive.h).
 */
#include "tests/support/fcdrive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double draw(const struct fcdrive_env *env, size_t arm)
{
    if (env->fixed)
        return env->mu[arm];
    return gsl_rng_uniform(env->rng) < env->mu[arm] ? 1.0 : 0.0;
}

int fcdrive_run(struct engine *e, const struct fcdrive_env *env, uint64_t cap, fcdrive_hook hook,
                void *arg, struct fcdrive_result *out)
{
    memset(out, 0, sizeof *out);
    if (env->k > FCDRIVE_MAX_ARMS || engine_n_arms(e, 0) != env->k)
        return -1;
    /* Ring of pulls in flight, oldest first. */
    size_t cap_q = (size_t)env->delay + 1;
    size_t *q = malloc(cap_q * sizeof *q);
    if (q == NULL)
        return -1;
    size_t head = 0, len = 0;
    while (!engine_stopped(e) && out->pulls < cap) {
        struct engine_pull p;
        if (engine_assign(e, 0, &p) != 0)
            break;
        if (p.exploit)
            break;
        out->pulls++;
        if (hook != NULL && hook(arg, e, &p) != 0) {
            out->aborted = 1;
            break;
        }
        q[(head + len) % cap_q] = p.arm;
        len++;
        if (len > env->delay) {
            size_t arm = q[head];
            head = (head + 1) % cap_q;
            len--;
            engine_reward(e, 0, arm, draw(env, arm));
        }
    }
    out->stopped = engine_stopped(e);
    while (len > 0) {
        size_t arm = q[head];
        head = (head + 1) % cap_q;
        len--;
        engine_reward(e, 0, arm, draw(env, arm));
    }
    free(q);
    engine_bandit_status(e, 0, out->high, &out->st);
    return 0;
}

struct engine *fcdrive_engine(const char *policy, size_t k, unsigned m, double eps, double delta,
                              uint64_t seed, const char *const *names, const double *values,
                              char *err, size_t errlen)
{
    const struct policy_ops *ops = policy_find(policy);
    if (ops == NULL) {
        snprintf(err, errlen, "policy.name: unknown policy %s", policy);
        return NULL;
    }
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = 1;
    c.n_arms = &k;
    c.m = m;
    c.epsilon = eps;
    c.delta = delta;
    c.bound = STATS_BOUND_ANYTIME;
    c.stop_rule = ENGINE_RULE_DEFAULT;
    c.target_arm = -1;
    c.seed = seed;
    c.policy = ops;
    policy_params_defaults(ops, &c.params);
    for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
        int j = policy_param_index(ops, names[i]);
        if (j < 0) {
            snprintf(err, errlen, "policy.params.%s: unknown parameter", names[i]);
            return NULL;
        }
        char why[128];
        if (policy_param_check(&ops->params[j], values[i], why, sizeof why) != 0) {
            snprintf(err, errlen, "policy.params.%s: %s", names[i], why);
            return NULL;
        }
        c.params.values[j] = values[i];
    }
    return engine_create(&c, err, errlen);
}

int fcdrive_correct(const double *mu, size_t k, unsigned m, double eps, const unsigned char *high,
                    int kind)
{
    size_t chosen = 0;
    double sum_chosen = 0;
    for (size_t i = 0; i < k; i++)
        if (high[i]) {
            chosen++;
            sum_chosen += mu[i];
        }
    if (chosen != m)
        return 0;
    /* The m largest true means. */
    double sorted[FCDRIVE_MAX_ARMS];
    for (size_t i = 0; i < k; i++)
        sorted[i] = mu[i];
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && sorted[j - 1] < sorted[j]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    if (kind == 1) {
        double top = 0;
        for (unsigned r = 0; r < m; r++)
            top += sorted[r];
        return (top - sum_chosen) / m <= eps + 1e-12;
    }
    for (size_t i = 0; i < k; i++)
        if (high[i] && mu[i] < sorted[m - 1] - eps - 1e-12)
            return 0;
    return 1;
}
