/*
 * policies.c — cost of the allocation decision, for every registered
 * policy (policy_all(): whatever policies/list.h holds when it is built).
 *
 *   policies [--out FILE] [--ms MS] [--only NAME,...] [--k K,...] [--checks-only] [--cpu]
 *            [--bound anytime|fixed]
 *
 * For K = 10, 100 and 1000 arms (--k: others; --only: those policies) (one bandit, m = 1, Bernoulli
 * arms with means spread evenly over [0.45, 0.55], so that no policy stops quickly):
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
 *
 * Then the cost of the stop checks per reward (--checks-only: that table
 * alone): uniform sampling run to the stop of the proven GLR (and of the
 * heuristic GLR and δᶜ; eb-tc's own proven GLR) at δ = 0.1, on issue 11's K = 10 instance and a
 * K = 100 one; ns per reward = (the run's CPU time under the rule − its
 * CPU time under "none" for the same pulls and rewards) / pulls.
 *
 * --bound fixed: every engine and simulation with the papers' fixed-n
 * bounds (`bound: "fixed"`) instead of the anytime ones; only the policies
 * and rules built on δᶜ (adapt, delta_c) differ.
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

/* --cpu: select() timed in this thread's CPU time (a shared machine's
 * other processes then do not count; the clock costs a system call, about
 * 20 ns per select over a burst). */
static int use_cpu_clock;
static double cpu_s(void);

/* --bound: the bound family of every engine and simulation. */
static enum stats_bound bench_bound = STATS_BOUND_ANYTIME;

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

static void config_for(const struct policy_ops *p, const size_t *k, struct engine_config *c);

/* --- the stop checks' cost per reward ------------------------------------ */

#define CHECK_CAP 2000000 /* pulls: a run that has not stopped by then counts as it is */

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run of uniform sampling under `rule`, to its stop (at most `cap`
 * pulls): this thread's CPU seconds for the whole run (assignments,
 * rewards and their draws: under "none" the same work less the checks;
 * CPU time, because the machine is shared); *pulls the pulls made. */
static double timed_run(const char *policy, size_t k, const double *mu, enum engine_stop_rule rule,
                        uint64_t seed, uint64_t cap, uint64_t *pulls)
{
    const struct policy_ops *p = policy_find(policy);
    struct engine_config c;
    size_t kk = k;
    config_for(p, &kk, &c);
    c.delta = 0.1;
    c.stop_rule = rule;
    c.seed = seed;
    struct policy_error err;
    struct engine *e = engine_create(&c, &err);
    if (e == NULL) {
        fprintf(stderr, "policies: checks: %s: %s\n", err.field, err.message);
        return NAN;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)seed);
    uint64_t n = 0;
    double t0 = cpu_s();
    for (; n < cap; n++) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        if (pl.exploit)
            break;
        engine_reward(e, pl.bandit, pl.arm, gsl_rng_uniform(rng) < mu[pl.arm] ? 1.0 : 0.0);
    }
    double spent = cpu_s() - t0;
    gsl_rng_free(rng);
    engine_free(e);
    *pulls = n;
    return spent;
}

/* ns per reward that `rule`'s check adds, over `runs` runs (the median of
 * the runs' figures); *pulls_out the mean pulls to the stop. */
static double check_ns(const char *policy, size_t k, const double *mu, enum engine_stop_rule rule,
                       int runs, double *pulls_out)
{
    double v[16];
    double total = 0;
    if (runs > 16)
        runs = 16;
    for (int r = 0; r < runs; r++) {
        uint64_t n = 0, n0 = 0;
        double t = timed_run(policy, k, mu, rule, 1000 + (uint64_t)r, CHECK_CAP, &n);
        double t0 = timed_run(policy, k, mu, ENGINE_RULE_NONE, 1000 + (uint64_t)r, n, &n0);
        v[r] = n > 0 ? (t - t0) * 1e9 / (double)n : NAN;
        total += (double)n;
    }
    *pulls_out = total / runs;
    return median(v, (size_t)runs);
}

/* ns per engine_assign of `policy` over `runs` runs to its default stop
 * at δ = 0.1 (the mean over all pulls: a warm engine's select() is not that
 * of an engine near its stop), each call timed in this thread's CPU time
 * less the clock's own cost; *pulls_out the mean pulls per run. */
static double run_select_ns(const char *policy, size_t k, const double *mu, int runs,
                            double *pulls_out)
{
    const struct policy_ops *p = policy_find(policy);
    double clock_cost = 0;
    for (int i = 0; i < 1000; i++) {
        double t0 = cpu_s();
        clock_cost += cpu_s() - t0;
    }
    clock_cost /= 1000;
    double spent = 0, pulls = 0;
    for (int r = 0; r < runs; r++) {
        struct engine_config c;
        size_t kk = k;
        config_for(p, &kk, &c);
        c.delta = 0.1;
        c.seed = 2000 + (uint64_t)r;
        struct policy_error err;
        struct engine *e = engine_create(&c, &err);
        if (e == NULL)
            return NAN;
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 2000 + (unsigned long)r);
        for (uint64_t n = 0; n < CHECK_CAP; n++) {
            struct engine_pull pl;
            double t0 = cpu_s();
            engine_assign(e, -1, &pl);
            spent += cpu_s() - t0 - clock_cost;
            if (pl.exploit)
                break;
            pulls++;
            engine_reward(e, pl.bandit, pl.arm, gsl_rng_uniform(rng) < mu[pl.arm] ? 1.0 : 0.0);
        }
        gsl_rng_free(rng);
        engine_free(e);
    }
    *pulls_out = pulls / runs;
    return pulls > 0 ? spent * 1e9 / pulls : NAN;
}

static void emit(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void checks_table(FILE *f)
{
    static const struct {
        const char *name, *policy;
        enum engine_stop_rule rule;
    } rules[] = {{"glr (proven)", "uniform", ENGINE_RULE_GLR},
                 {"glr-heuristic", "uniform", ENGINE_RULE_GLR_HEURISTIC},
                 {"delta_c", "uniform", ENGINE_RULE_DELTA_C},
                 {"eb-tc's own (proven GLR, certified arm)", "eb-tc", ENGINE_RULE_POLICY}};
    static const double mu1[4] = {0.5, 0.45, 0.43, 0.4};
    double mu10[10], mu100[100];
    for (size_t i = 0; i < 10; i++)
        mu10[i] = 0.6 - 0.05 * (double)i;
    mu100[0] = 0.7;
    for (size_t i = 1; i < 100; i++)
        mu100[i] = 0.6 - 0.4 * (double)(i - 1) / 98.0;
    double load[3] = {0};
    if (getloadavg(load, 3) < 0)
        load[0] = load[1] = load[2] = -1;
    emit(f, "## Stop checks per reward (bench/policies)\n\n");
    emit(f,
         "Uniform sampling (eb-tc for its own rule) run to the rule's stop at δ = 0.1 (5 runs at K "
         "= 4 and 10, 3 at "
         "K = 100, the median run's figure); K = 4: μ1 = (0.5, 0.45, 0.43, 0.4); K = 10: μ = 0.6, "
         "0.55, …, 0.15 (issue 11); K = 100: μ = 0.7, "
         "then 99 arms evenly in [0.2, 0.6]; load average %.2f, %.2f, %.2f. ns per reward: "
         "the run's CPU time (this thread's) under the rule less its CPU time under \"none\" "
         "for the same pulls and rewards, per pull.\n\n",
         load[0], load[1], load[2]);
    emit(f, "| rule | ns/reward μ1 | pulls μ1 | ns/reward K=10 | pulls K=10 | ns/reward K=100 "
            "| pulls K=100 |\n");
    emit(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        double p4, p10, p100;
        double ns4 = check_ns(rules[r].policy, 4, mu1, rules[r].rule, 5, &p4);
        double ns10 = check_ns(rules[r].policy, 10, mu10, rules[r].rule, 5, &p10);
        double ns100 = check_ns(rules[r].policy, 100, mu100, rules[r].rule, 3, &p100);
        emit(f, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", rules[r].name, ns4, p4, ns10,
             p10, ns100, p100);
    }
    emit(f, "\n");
    emit(f, "## select() over whole runs (bench/policies)\n\n");
    if (bench_bound == STATS_BOUND_FIXED)
        emit(f, "With the fixed-n bounds (--bound fixed). ");
    emit(f, "The same instances, each policy with its default stop at δ = 0.1 (3 runs at K = 4 "
            "and 10, 1 at K = 100): ns per engine_assign averaged over every pull of the runs, "
            "each call in this thread's CPU time less the clock's cost.\n\n");
    emit(f, "| policy | ns/select μ1 | pulls μ1 | ns/select K=10 | pulls K=10 | ns/select K=100 "
            "| pulls K=100 |\n");
    emit(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    static const char *const run_policies[] = {"adapt"};
    for (size_t r = 0; r < sizeof run_policies / sizeof run_policies[0]; r++) {
        double p4, p10, p100;
        double ns4 = run_select_ns(run_policies[r], 4, mu1, 3, &p4);
        double ns10 = run_select_ns(run_policies[r], 10, mu10, 3, &p10);
        double ns100 = run_select_ns(run_policies[r], 100, mu100, 1, &p100);
        emit(f, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", run_policies[r], ns4, p4,
             ns10, p10, ns100, p100);
    }
    emit(f, "\n");
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
    c->bound = bench_bound;
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
            double t0 = use_cpu_clock ? cpu_s() : now_s();
            for (; got < BURST; got++) {
                engine_assign(e, -1, &burst[got]);
                if (burst[got].exploit)
                    break;
            }
            spent += (use_cpu_clock ? cpu_s() : now_s()) - t0;
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
    prob.bound = bench_bound;
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

/* Is name in the comma-separated list (NULL: every name is)? */
static int listed(const char *list, const char *name)
{
    if (list == NULL)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

#define MAX_KS 8

int main(int argc, char **argv)
{
    const char *out = NULL, *only = NULL;
    double ms = 200;
    int checks_only = 0;
    size_t ks[MAX_KS] = {10, 100, 1000}, nk = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc)
            ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--checks-only") == 0)
            checks_only = 1;
        else if (strcmp(argv[i], "--cpu") == 0)
            use_cpu_clock = 1;
        else if (strcmp(argv[i], "--bound") == 0 && i + 1 < argc) {
            const char *b = argv[++i];
            if (strcmp(b, "fixed") == 0)
                bench_bound = STATS_BOUND_FIXED;
            else if (strcmp(b, "anytime") != 0) {
                fprintf(stderr, "policies: --bound: anytime or fixed\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--k") == 0 && i + 1 < argc) {
            char *p = argv[++i];
            for (nk = 0; nk < MAX_KS && *p != '\0'; nk++) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);
                if (end == p || v < 2 || v > 100000) {
                    fprintf(stderr, "policies: --k: a list of arm counts ≥ 2\n");
                    return 2;
                }
                ks[nk] = (size_t)v;
                p = *end == ',' ? end + 1 : end;
            }
        } else {
            fprintf(stderr, "usage: policies [--out FILE] [--ms MS] [--only NAME,...] [--k K,...] "
                            "[--checks-only] [--cpu] [--bound anytime|fixed]\n");
            return 2;
        }
    }
    FILE *f = NULL;
    if (out != NULL && (f = fopen(out, "w")) == NULL) {
        perror(out);
        return 1;
    }
    gsl_rng_env_setup();
    if (checks_only)
        goto checks;
    double load[3] = {0};
    if (getloadavg(load, 3) < 0)
        load[0] = load[1] = load[2] = -1;
    emit(f, "## Policies (bench/policies)\n\n");
    emit(f,
         "One bandit, m = 1, K Bernoulli arms with means evenly in [0.45, 0.55]; "
         "load average %.2f, %.2f, %.2f. ns per select(): engine_assign on a warm engine "
         "(bursts of 16, rewards untimed%s); pulls/s: assign + reward on one thread",
         load[0], load[1], load[2], use_cpu_clock ? "; this thread's CPU time" : "");
    emit(f, "; sim pulls/s: sim_run, budget 20·K (less for slow policies), all threads");
    if (bench_bound == STATS_BOUND_FIXED)
        emit(f, "; the fixed-n bounds (--bound fixed)");
    emit(f, ". Median of %d timings of %.0f ms.\n\n", REPEATS, ms);
    emit(f, "| policy |");
    for (int part = 0; part < 3; part++)
        for (size_t ki = 0; ki < nk; ki++)
            emit(f, " %s%s%zu |",
                 ki > 0      ? ""
                 : part == 0 ? "ns/select "
                 : part == 1 ? "pulls/s "
                             : "sim pulls/s ",
                 "K=", ks[ki]);
    emit(f, "\n| --- |");
    for (size_t j = 0; j < 3 * nk; j++)
        emit(f, " ---: |");
    emit(f, "\n");
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++) {
        const struct policy_ops *p = *pp;
        if (!listed(only, p->name))
            continue;
        double ns[MAX_KS], pps[MAX_KS], sps[MAX_KS];
        for (size_t ki = 0; ki < nk; ki++) {
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
        emit(f, "| %s |", p->name);
        for (size_t ki = 0; ki < nk; ki++)
            emit(f, " %.0f |", ns[ki]);
        for (size_t ki = 0; ki < nk; ki++)
            emit(f, " %.3g |", pps[ki]);
        for (size_t ki = 0; ki < nk; ki++)
            emit(f, " %.3g |", sps[ki]);
        emit(f, "\n");
    }
    emit(f, "\n");
checks:
    if (only == NULL || checks_only)
        checks_table(f);
    if (f != NULL && fclose(f) != 0) { /* a short results file must not pass */
        perror(out);
        return 1;
    }
    return 0;
}
