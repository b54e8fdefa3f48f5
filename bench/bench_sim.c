/*
 * bench_sim.c — simulator throughput: pulls per second of bandit-sim's run
 * loop (engine + policy + reward draws + stop checks), one thread, for
 * adapt and uniform (δᶜ stop) on K = 3, 10 and 100 Bernoulli arms, both
 * bounds. Prints a markdown table: wall and CPU rate (the CPU figure is the
 * one to compare across machines under load), and the load average.
 *
 *   build/bench/bench_sim [--seconds S]   (default: about 2 s per row)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* K Bernoulli arms, means evenly spread over [0.2, 0.8], δ = 0.05. */
static int make_problem(size_t k, enum stats_bound bound, struct sim_problem *p)
{
    json_t *arms = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(arms, json_real(0.2 + 0.6 * (double)i / (double)(k - 1)));
    json_t *j = json_pack("{s:f, s:o, s:s}", "delta", 0.05, "arms", arms, "bound",
                          bound == STATS_BOUND_FIXED ? "fixed" : "anytime");
    char err[256];
    int rc = sim_problem_parse(j, p, err, sizeof err);
    json_decref(j);
    if (rc != 0)
        fprintf(stderr, "bench_sim: %s\n", err);
    return rc;
}

int main(int argc, char **argv)
{
    double seconds = 2.0;
    if (argc == 3 && strcmp(argv[1], "--seconds") == 0)
        seconds = atof(argv[2]);
    const char *policies[] = {"adapt", "uniform"};
    const size_t ks[] = {3, 10, 100};
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = -1;
        (void)fclose(f);
    }
    printf("## Simulator throughput (one thread)\n\n");
    printf("Load average at start: %.2f. Bernoulli arms evenly spread over [0.2, 0.8], "
           "δ = 0.05, stop δᶜ ≤ δ; runs end at the stop or at a cap of 20000 pulls.\n\n",
           load[0]);
    printf("| policy | K | bound | runs | pulls | pulls/s (wall) | pulls/s (CPU) |\n");
    printf("| --- | ---: | --- | ---: | ---: | ---: | ---: |\n");
    for (size_t pi = 0; pi < 2; pi++) {
        for (size_t ki = 0; ki < 3; ki++) {
            for (int b = 0; b < 2; b++) {
                struct sim_problem p;
                if (make_problem(ks[ki], b ? STATS_BOUND_FIXED : STATS_BOUND_ANYTIME, &p) != 0)
                    return 1;
                struct sim_options o;
                memset(&o, 0, sizeof o);
                o.policy = policy_find(policies[pi]);
                policy_params_defaults(o.policy, &o.params);
                o.stop = ENGINE_RULE_DELTA_C;
                o.threads = 1;
                o.max_pulls = 20000;
                o.seed = 1;
                /* Grow the run count until a batch lasts `seconds`. */
                uint64_t runs = 1, pulls = 0, done = 0;
                double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
                while (clock_s(CLOCK_MONOTONIC) - w0 < seconds) {
                    struct sim_result r;
                    char err[256];
                    o.runs = runs;
                    o.seed++;
                    if (sim_run(&p, &o, &r, err, sizeof err) != 0) {
                        fprintf(stderr, "bench_sim: %s\n", err);
                        return 1;
                    }
                    pulls += r.total_pulls;
                    done += runs;
                    runs *= 2;
                }
                double wall = clock_s(CLOCK_MONOTONIC) - w0;
                double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
                printf("| %s | %zu | %s | %llu | %llu | %.0f | %.0f |\n", policies[pi], ks[ki],
                       b ? "fixed" : "anytime", (unsigned long long)done, (unsigned long long)pulls,
                       (double)pulls / wall, (double)pulls / cpu);
                (void)fflush(stdout);
                sim_problem_free(&p);
            }
        }
    }
    return 0;
}
