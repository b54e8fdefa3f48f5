/*
 * drive.c — a test environment for engines (see drive.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/support/drive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double draw(const struct tdrive_env *env, size_t b, size_t arm)
{
    if (env->fixed)
        return env->mu[b][arm];
    return gsl_rng_uniform(env->rng) < env->mu[b][arm] ? 1.0 : 0.0;
}

int tdrive_run(struct engine *e, const struct tdrive_env *env, uint64_t cap, tdrive_hook hook,
               void *arg, struct tdrive_result *out)
{
    memset(out, 0, sizeof *out);
    size_t nb = env->nb ? env->nb : 1;
    if (nb > TDRIVE_MAX_BANDITS || engine_n_bandits(e) != nb)
        return -1;
    for (size_t b = 0; b < nb; b++)
        if (env->k[b] > TDRIVE_MAX_ARMS || engine_n_arms(e, b) != env->k[b])
            return -1;
    /* Ring of pulls in flight, oldest first. */
    size_t cap_q = (size_t)env->delay + 1;
    struct engine_pull *q = malloc(cap_q * sizeof *q);
    if (q == NULL)
        return -1;
    size_t head = 0, len = 0;
    uint64_t returned = 0, turn = 0, asked = 0;
    for (; !engine_stopped(e) && asked < cap; asked++) {
        int want = -1;
        if (env->ask == TDRIVE_ASK_FIRST) {
            want = 0;
        } else if (env->ask == TDRIVE_ASK_TURNS) {
            /* The next bandit in turn that is not done. */
            for (size_t t = 0; t < nb && engine_bandit_done(e, turn % nb); t++)
                turn++;
            want = (int)(turn++ % nb);
        }
        struct engine_pull p;
        if (engine_assign(e, want, &p) != 0) {
            out->failed = 1;
            break;
        }
        if (p.exploit) {
            if (env->ask == TDRIVE_ASK_TURNS)
                continue; /* that bandit is finished; ask for another */
            break;
        }
        out->pulls++;
        if (want >= 0 && p.bandit != (size_t)want)
            out->misrouted++;
        if (hook != NULL && hook(arg, e, &p) != 0) {
            out->aborted = 1;
            break;
        }
        q[(head + len) % cap_q] = p;
        len++;
        if (len > env->delay) {
            struct engine_pull r = q[head];
            head = (head + 1) % cap_q;
            len--;
            if (env->release_every && ++returned % env->release_every == 0)
                engine_release(e, r.bandit, r.arm);
            else
                engine_reward(e, r.bandit, r.arm, draw(env, r.bandit, r.arm));
        }
    }
    out->stopped = engine_stopped(e);
    out->capped = !out->stopped && asked >= cap;
    while (len > 0) {
        struct engine_pull r = q[head];
        head = (head + 1) % cap_q;
        len--;
        engine_reward(e, r.bandit, r.arm, draw(env, r.bandit, r.arm));
    }
    free(q);
    engine_bandit_status(e, 0, out->high, &out->st);
    return 0;
}

struct engine *tdrive_engine(const char *policy, size_t k, unsigned m, double eps, double delta,
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
    struct policy_error perr;
    struct engine *e = engine_create(&c, &perr);
    if (e == NULL)
        policy_error_text(&perr, err, errlen);
    return e;
}

struct engine *tengine_create(const struct engine_config *c)
{
    struct policy_error perr;
    struct engine *e = engine_create(c, &perr);
    if (e == NULL)
        fail_msg("engine_create: %s: %s", perr.field, perr.message);
    return e;
}

int tdrive_correct(const double *mu, size_t k, unsigned m, double eps, const unsigned char *high,
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
    double sorted[TDRIVE_MAX_ARMS];
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
