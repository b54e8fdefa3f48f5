/*
 * policies.c — cost of the allocation decision, for every registered
 * policy (policy_all(): whatever policies/list.h holds when it is built).
 *
 *   policies [--out FILE] [--ms MS]
 *
 * For K = 10, 100 and 1000 arms (one bandit, m = 1, Bernoulli arms with
 * means spread evenly over [0.45, 0.55], so that no policy stops quickly):
 *
 *   - ns per select(): the time of engine_assign (the policy's select()
 *     plus the engine's bookkeeping around it), measured on a warm engine
 *     (20·K pulls rewarded first, or as many as 0.2 s allows), 16 assignments at a time with their
 *     rewards given afterwards (untimed), as an asynchronous service sees
 *     them. Assignments the engine serves as "exploit" (the policy is done)
 *     are not counted: the engine is rebuilt and the measure goes on;
 *   - pulls/s: engine_assign + engine_reward in a loop, one thread — what
 *     one simulator thread can do at most with this policy;
 *   - with the simulator built (sim/), simulator pulls/s: bandit-sim's
 *     sim_run on the same problem (budget 20·K, or fewer pulls for slow
 *     policies, all threads; see sim_pulls_s).
 *
 * Fixed-budget policies get a budget of 10^12 (never reached); policies
 * that need ε get 0.1, those that need a target arm get arm 0. Each
 * figure is the median of 5 timings of MS milliseconds (default 200).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>

#include "policies/engine.h"
#include "policies/policy.h"
#include "sim/sim.h"

#define REPEATS 5
#define BURST 16

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void config_for(const struct policy_ops *p, const size_t *k, struct engine_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_bandits = 1;
    c->n_arms = k;
    c->m = 1;
    c->delta = 0.05;
    c->epsilon = (p->flags & POLICY_F_NEEDS_EPSILON) ? 0.1 : 0.0;
    c->budget = (p->flags & POLICY_F_FIXED_BUDGET) ? 1000000000000ULL : 0;
    c->bound = STATS_BOUND_ANYTIME;
    c->stop_rule = ENGINE_RULE_DEFAULT;
    c->tau = NAN;
    c->target_arm = (p->flags & POLICY_F_NEEDS_TARGET) ? 0 : -1;
    c->seed = 12345;
    c->policy = p;
    policy_params_defaults(p, &c->params);
    if (p->flags & POLICY_F_CONTROL) { /* the sampler of goal control: arm 0 the control */
        static const int control[] = {0};
        c->goal = ENGINE_GOAL_CONTROL;
        c->control_arm = control;
        c->margin = 0.05;
    }
}

struct arms {
    size_t k;
    double *mu;
    gsl_rng *rng;
};

static double draw(struct arms *a, size_t arm)
{
    return gsl_rng_uniform(a->rng) < a->mu[arm] ? 1.0 : 0.0;
}

/* A warm engine, or NULL (message printed). */
static struct engine *warm_engine(const struct engine_config *c, struct arms *a)
{
    struct policy_error err;
    struct engine *e = engine_create(c, &err);
    if (e == NULL) {
        fprintf(stderr, "policies: %s: %s: %s\n", c->policy->name, err.field, err.message);
        return NULL;
    }
    /* 20·K pulls, or 0.2 s for slow policies at large K */
    double t_end = now_s() + 0.2;
    for (size_t i = 0; i < 20 * a->k && (i % 64 != 0 || now_s() < t_end); i++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        if (p.exploit)
            break;
        engine_reward(e, p.bandit, p.arm, draw(a, p.arm));
    }
    return e;
}

/* ns per engine_assign and pulls per second (assign + reward). Returns 0,
 * or −1 if the policy cannot run at this K. */
static int measure(const struct engine_config *c, struct arms *a, double ms, double *ns_select,
                   double *pulls_s)
{
    double sel[REPEATS], pps[REPEATS];
    struct engine *e = warm_engine(c, a);
    if (e == NULL)
        return -1;
    struct engine_pull burst[BURST];
    for (int r = 0; r < REPEATS; r++) {
        /* select: bursts of assignments, rewards untimed */
        double spent = 0, t_end = now_s() + ms / 1000.0;
        unsigned long n = 0;
        while (now_s() < t_end) {
            size_t got = 0;
            double t0 = now_s();
            for (; got < BURST; got++) {
                engine_assign(e, -1, &burst[got]);
                if (burst[got].exploit)
                    break;
            }
            spent += now_s() - t0;
            n += got;
            for (size_t i = 0; i < got; i++)
                engine_reward(e, burst[i].bandit, burst[i].arm, draw(a, burst[i].arm));
            if (got < BURST) { /* the policy is done: start a fresh engine */
                engine_free(e);
                if ((e = warm_engine(c, a)) == NULL)
                    return -1;
            }
        }
        sel[r] = n > 0 ? spent * 1e9 / (double)n : NAN;
        /* pulls per second: assign and reward, as a simulator does */
        n = 0;
        double t0 = now_s();
        t_end = t0 + ms / 1000.0;
        while (now_s() < t_end) {
            for (int i = 0; i < 64; i++) {
                struct engine_pull p;
                engine_assign(e, -1, &p);
                if (p.exploit) {
                    engine_free(e);
                    if ((e = warm_engine(c, a)) == NULL)
                        return -1;
                    continue;
                }
                engine_reward(e, p.bandit, p.arm, draw(a, p.arm));
                n++;
            }
        }
        pps[r] = (double)n / (now_s() - t0);
    }
    engine_free(e);
    *ns_select = median(sel, REPEATS);
    *pulls_s = median(pps, REPEATS);
    return 0;
}

/* Simulator pulls per second on K Bernoulli arms. The budget per run is
 * 20·K, less for slow policies (what one thread does in 0.5 s at the
 * engine's rate pps, at least K), and the number of runs about one second's
 * worth (2 to 200), so that every row takes about a second. */
static double sim_pulls_s(const struct policy_ops *p, size_t k, const double *mu, double pps)
{
    double budget = pps * 0.5;
    if (!(budget <= 20.0 * (double)k))
        budget = 20.0 * (double)k;
    if (budget < (double)k)
        budget = (double)k;
    double runs = pps * 1.0 / budget;
    if (!(runs >= 2))
        runs = 2;
    if (runs > 200)
        runs = 200;
    struct sim_problem prob;
    memset(&prob, 0, sizeof prob);
    size_t nk = k;
    struct sim_arm *arms = calloc(k, sizeof *arms);
    struct sim_arm *rows[1] = {arms};
    if (arms == NULL)
        return NAN;
    for (size_t i = 0; i < k; i++) {
        arms[i].dist = SIM_BERNOULLI;
        arms[i].p1 = mu[i];
        arms[i].mean = mu[i];
    }
    prob.m = 1;
    prob.epsilon = (p->flags & POLICY_F_NEEDS_EPSILON) ? 0.1 : 0.0;
    prob.delta = 0.05;
    prob.budget = (uint64_t)budget;
    prob.n_bandits = 1;
    prob.n_arms = &nk;
    prob.arms = rows;
    prob.reward_min = 0;
    prob.reward_max = 1;
    prob.target_arm = (p->flags & POLICY_F_NEEDS_TARGET) ? 0 : -1;
    prob.tau = NAN;
    prob.bound = STATS_BOUND_ANYTIME;
    prob.control = -1;
    if (p->flags & POLICY_F_CONTROL) {
        prob.goal = ENGINE_GOAL_CONTROL;
        prob.control = 0;
        prob.margin = 0.05;
    }
    struct sim_options o;
    memset(&o, 0, sizeof o);
    o.policy = p;
    policy_params_defaults(p, &o.params);
    o.runs = (uint64_t)runs;
    o.seed = 1;
    o.budget = (uint64_t)budget;
    struct sim_result res;
    char err[256];
    double out = NAN;
    if (sim_run(&prob, &o, &res, err, sizeof err) == 0 && res.wall_s > 0)
        out = res.mean_pulls * (double)res.runs / res.wall_s;
    else
        fprintf(stderr, "policies: sim %s K=%zu: %s\n", p->name, k, err);
    free(arms);
    return out;
}

static void emit(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (f != NULL) {
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
    }
    (void)fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    double ms = 200;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc)
            ms = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: policies [--out FILE] [--ms MS]\n");
            return 2;
        }
    }
    static const size_t ks[] = {10, 100, 1000};
    FILE *f = NULL;
    if (out != NULL && (f = fopen(out, "w")) == NULL) {
        perror(out);
        return 1;
    }
    double load[3] = {0};
    if (getloadavg(load, 3) < 0)
        load[0] = load[1] = load[2] = -1;
    emit(f, "## Policies (bench/policies)\n\n");
    emit(f,
         "One bandit, m = 1, K Bernoulli arms with means evenly in [0.45, 0.55]; "
         "load average %.2f, %.2f, %.2f. ns per select(): engine_assign on a warm engine "
         "(bursts of 16, rewards untimed); pulls/s: assign + reward on one thread",
         load[0], load[1], load[2]);
    emit(f, "; sim pulls/s: sim_run, budget 20·K (less for slow policies), all threads");
    emit(f, ". Median of %d timings of %.0f ms.\n\n", REPEATS, ms);
    emit(f, "| policy | ns/select K=10 | K=100 | K=1000 | pulls/s K=10 | K=100 | K=1000 |");
    emit(f, " sim pulls/s K=10 | K=100 | K=1000 |");
    emit(f, "\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    emit(f, " ---: | ---: | ---: |");
    emit(f, "\n");
    gsl_rng_env_setup();
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++) {
        const struct policy_ops *p = *pp;
        double ns[3], pps[3], sps[3];
        for (size_t ki = 0; ki < 3; ki++) {
            size_t k = ks[ki];
            struct arms a = {
                .k = k, .mu = calloc(k, sizeof(double)), .rng = gsl_rng_alloc(gsl_rng_mt19937)};
            if (a.mu == NULL || a.rng == NULL) {
                free(a.mu);
                gsl_rng_free(a.rng);
                return 1;
            }
            gsl_rng_set(a.rng, 99);
            for (size_t i = 0; i < k; i++)
                a.mu[i] = 0.45 + 0.1 * (double)i / (double)(k - 1);
            struct engine_config c;
            size_t kk = k;
            config_for(p, &kk, &c);
            if (measure(&c, &a, ms, &ns[ki], &pps[ki]) != 0)
                ns[ki] = pps[ki] = NAN;
            sps[ki] = sim_pulls_s(p, k, a.mu, pps[ki]);
            free(a.mu);
            gsl_rng_free(a.rng);
        }
        emit(f, "| %s | %.0f | %.0f | %.0f | %.3g | %.3g | %.3g |", p->name, ns[0], ns[1], ns[2],
             pps[0], pps[1], pps[2]);
        emit(f, " %.3g | %.3g | %.3g |", sps[0], sps[1], sps[2]);
        emit(f, "\n");
    }
    emit(f, "\n");
    if (f != NULL && fclose(f) != 0) { /* a short results file must not pass */
        perror(out);
        return 1;
    }
    return 0;
}
