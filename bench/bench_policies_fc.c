/*
 * bench_policies_fc.c — cost of the fixed-confidence policies' select()
 * at K = 10, 100, 1000 arms, measured through the engine (engine_assign is
 * select() plus a few counters), and of a whole synchronous pull
 * (assign + reward, which runs update() and the policy's stop check).
 *
 * Each measurement starts from a warmed-up state: 20 K Bernoulli pulls on
 * means spread over [0.2, 0.8], so every arm has data and the index
 * policies are in their steady state. Means change after every reward, so
 * track-and-stop recomputes w*(μ̂) at every select (its worst case).
 * Prints one line per policy and K; `uptime` beside it tells the load.
 *
 *   build/bench/bench_policies_fc [policy ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "policies/engine.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *const DEFAULT[] = {"direct", "incremental",    "halving",
                                      "lucb1",  "kl-lucb",        "adaptive-topk",
                                      "ttts",   "track-and-stop", NULL};

static int bench(const char *name, size_t k, gsl_rng *env)
{
    const struct policy_ops *ops = policy_find(name);
    if (ops == NULL) {
        fprintf(stderr, "unknown policy %s\n", name);
        return -1;
    }
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = 1;
    c.n_arms = &k;
    c.m = 1;
    c.epsilon = (ops->flags & POLICY_F_NEEDS_EPSILON) ? 0.05 : 0.0;
    c.delta = 0.05;
    c.target_arm = -1;
    c.seed = 1;
    c.policy = ops;
    policy_params_defaults(ops, &c.params);
    char err[256];
    struct engine *e = engine_create(&c, err, sizeof err);
    if (e == NULL) {
        fprintf(stderr, "%s: %s\n", name, err);
        return -1;
    }
    double *mu = malloc(k * sizeof *mu);
    if (mu == NULL) {
        engine_free(e);
        return -1;
    }
    for (size_t i = 0; i < k; i++)
        mu[i] = 0.2 + 0.6 * (double)i / (double)(k - 1);
    struct engine_pull p;
    for (size_t i = 0; i < 20 * k; i++) {
        engine_assign(e, 0, &p);
        if (p.exploit)
            break;
        engine_reward(e, 0, p.arm, gsl_rng_uniform(env) < mu[p.arm]);
    }
    /* Enough pulls for ~0.2 s on the slowest policies; stop early if the
     * policy finishes. */
    double sel = 0, all = 0;
    uint64_t n = 0;
    double t_end = now() + 0.3;
    while (n < 2000000 && now() < t_end) {
        double t0 = now();
        engine_assign(e, 0, &p);
        double t1 = now();
        if (p.exploit)
            break;
        engine_reward(e, 0, p.arm, gsl_rng_uniform(env) < mu[p.arm]);
        double t2 = now();
        sel += t1 - t0;
        all += t2 - t0;
        n++;
    }
    /* The clock's own cost, to subtract. */
    double t0 = now(), dummy = 0;
    for (int i = 0; i < 100000; i++)
        dummy += now();
    double clk = (now() - t0) / 100000;
    (void)dummy;
    if (n == 0)
        printf("%-15s K=%-5zu finished during warm-up\n", name, k);
    else
        printf("%-15s K=%-5zu select %10.0f ns   pull (select+update+stop check) %10.0f ns"
               "   (%llu pulls)\n",
               name, k, sel / (double)n * 1e9 - clk * 1e9, all / (double)n * 1e9 - 2 * clk * 1e9,
               (unsigned long long)n);
    free(mu);
    engine_free(e);
    return 0;
}

int main(int argc, char **argv)
{
    gsl_rng *env = gsl_rng_alloc(gsl_rng_taus2);
    if (env == NULL)
        return 1;
    const size_t ks[] = {10, 100, 1000};
    int rc = 0;
    for (size_t j = 0; j < 3; j++) {
        if (argc > 1) {
            for (int i = 1; i < argc; i++)
                rc |= bench(argv[i], ks[j], env);
        } else {
            for (size_t i = 0; DEFAULT[i] != NULL; i++)
                rc |= bench(DEFAULT[i], ks[j], env);
        }
    }
    gsl_rng_free(env);
    return rc != 0;
}
