/*
 * truth.c — the ground truth a run is judged against: each bandit's true top m,
 * and the verdicts (exact, PAC, regret) on a returned set.
 */
#include "sim/internal.h"

#include <stdlib.h>

/* Relative slack (of the reward range) when comparing true means for the
 * (ε, m) and regret criteria: μ_(m) − ε computed in floating point must not
 * turn an arm sitting exactly on the boundary into an error. */
#define SIM_CMP_SLACK 1e-12

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

void sim_truth_free(struct sim_truth *t)
{
    free(t->mu_m);
    free(t->above);
    free(t->top_sum);
    free(t->bottom_sum);
    free(t->target_top);
}

int sim_truth_build(const struct sim_problem *p, struct sim_truth *t)
{
    if (p->n_bandits == 0)
        return -1; /* no problem file has none (problem.c): nothing to judge */
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
        sim_truth_free(t);
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

void sim_judge(const struct sim_problem *p, const struct sim_truth *t, size_t b,
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
    struct sim_truth t;
    if (sim_truth_build(p, &t) != 0) {
        *wrong = *pac_wrong = *regret_wrong = 1; /* out of memory: no verdict */
        return;
    }
    sim_judge(p, &t, b, high, wrong, pac_wrong, regret_wrong);
    sim_truth_free(&t);
}
