/*
 * bench_policies_fb.c — cost of the fixed-budget policies' select().
 *
 *   make build/bench/bench_policies_fb && ./build/bench/bench_policies_fb
 *
 * For each policy and K = 10, 100, 1000 arms (one bandit, m = 1):
 *   - select: ns per select() call on a frozen context (arms with 20 samples
 *     each, a fresh policy instance, no pull recorded between calls), the
 *     figure issue 3 asks for;
 *   - pull: ns per assignment + reward through the engine with a budget of
 *     20 K, rewards synchronous (Bernoulli draws from a fixed generator):
 *     includes the engine's bookkeeping, update() and the phase decisions.
 * Times are this thread's CPU time (the machine is shared; the load average
 * is printed first): cache and frequency effects of a loaded machine remain.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "policies/engine.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bench_select(const struct policy_ops *ops, size_t k, gsl_rng *env)
{
    struct stats_arm *arms = calloc(k, sizeof *arms);
    struct stats_arm *bandits[1] = {arms};
    size_t n_arms[1] = {k};
    unsigned char done[1] = {0};
    for (size_t i = 0; i < k; i++) {
        stats_arm_init(&arms[i], 1, 1);
        double mu = 0.2 + 0.6 * (double)i / (double)k;
        for (int t = 0; t < 20; t++)
            stats_arm_add(&arms[i], gsl_rng_uniform(env) < mu);
    }
    struct policy_params pp;
    policy_params_defaults(ops, &pp);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    struct policy_ctx ctx = {.n_bandits = 1,
                             .n_arms = n_arms,
                             .arms = bandits,
                             .bandit_done = done,
                             .m = 1,
                             .delta = 0.05,
                             .budget = 100 * k,
                             .params = &pp,
                             .rng = rng,
                             .target_arm = -1};
    void *state = NULL;
    char err[256];
    if (ops->init(&state, &ctx, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", ops->name, err);
        exit(1);
    }
    struct policy_pick pk;
    ops->select(state, &ctx, -1, &pk); /* the phase decisions due, once */
    long iters = (long)(2e7 / (double)k);
    double t0 = now();
    size_t sink = 0;
    for (long i = 0; i < iters; i++) {
        ops->select(state, &ctx, -1, &pk);
        sink += pk.arm;
    }
    double ns = (now() - t0) * 1e9 / (double)iters;
    if (sink == (size_t)-1)
        puts("");
    if (ops->fini != NULL)
        ops->fini(state);
    gsl_rng_free(rng);
    free(arms);
    return ns;
}

static double bench_pull(const struct policy_ops *ops, size_t k, gsl_rng *env)
{
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = 1;
    c.n_arms = &k;
    c.m = 1;
    c.delta = 0.05;
    c.budget = 20 * k;
    c.tau = NAN;
    c.target_arm = -1;
    c.seed = 1;
    c.policy = ops;
    policy_params_defaults(ops, &c.params);
    char err[256];
    struct engine *e = engine_create(&c, err, sizeof err);
    if (e == NULL) {
        fprintf(stderr, "%s: %s\n", ops->name, err);
        exit(1);
    }
    double t0 = now();
    uint64_t n = 0;
    while (!engine_stopped(e)) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        if (pl.exploit)
            break;
        double mu = 0.2 + 0.6 * (double)pl.arm / (double)k;
        engine_reward(e, pl.bandit, pl.arm, gsl_rng_uniform(env) < mu);
        n++;
    }
    double ns = (now() - t0) * 1e9 / (double)n;
    engine_free(e);
    return ns;
}

int main(void)
{
    static const char *const names[] = {"uniform", "sr",     "sar",    "seq-halving", "ucb-e",
                                        "gape",    "gape-v", "a-gape", "a-gape-v",    NULL};
    static const size_t ks[] = {10, 100, 1000};
    double load[3] = {0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = NAN;
        (void)fclose(f);
    }
    printf("load average %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    printf("%-12s %10s %10s %10s   %10s %10s %10s\n", "policy", "select K=10", "K=100", "K=1000",
           "pull K=10", "K=100", "K=1000");
    gsl_rng *env = gsl_rng_alloc(gsl_rng_taus2);
    for (size_t i = 0; names[i] != NULL; i++) {
        const struct policy_ops *ops = policy_find(names[i]);
        printf("%-12s", names[i]);
        for (size_t j = 0; j < 3; j++)
            printf(" %10.0f", bench_select(ops, ks[j], env));
        printf("  ");
        for (size_t j = 0; j < 3; j++)
            printf(" %10.0f", bench_pull(ops, ks[j], env));
        printf("\n");
        (void)fflush(stdout);
    }
    gsl_rng_free(env);
    return 0;
}
