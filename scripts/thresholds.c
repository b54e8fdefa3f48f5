/*
 * thresholds.c — `make docs-thresholds`: how many samples each GLR threshold
 * needs on one pair, printed as the Markdown table of docs/stop-rules.md
 * ("Literature thresholds"). Each row is a pair of arms whose empirical
 * means sit at their true means (the mean path), with a fixed ratio of
 * counts; each cell the least count of the less-pulled arm at which the
 * rule stops, found by doubling and bisection (every rule's evidence grows
 * with the counts on this path). The rules are the library's own: the
 * proven rule (stats_glr_pair_passes), Kaufmann & Koolen's pair threshold
 * (stats_kk_pair_threshold), Garivier & Kaufmann's ln(2t(K − 1)/δ) with t
 * the pair's samples only (which favours it) and the heuristic
 * ln((ln t + 1)/δ) (no proof). Deterministic: no simulation.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "policies/stats.h"

enum rule { RULE_PROVEN, RULE_KK, RULE_GK, RULE_HEURISTIC, N_RULE };

struct row {
    double mi, mj; /* means of the High and the Low arm */
    double ratio;  /* N_i / N_j */
    size_t k;
    double delta;
};

static int passes(enum rule r, const struct row *w, uint64_t nj)
{
    struct stats_arm ai, aj;
    stats_arm_init(&ai, 1.0, 1.0);
    stats_arm_init(&aj, 1.0, 1.0);
    ai.n = (uint64_t)llround(w->ratio * (double)nj);
    aj.n = nj;
    ai.mean = w->mi;
    aj.mean = w->mj;
    double z = stats_glr_pair_z(&ai, &aj, 0.0), t = (double)(ai.n + aj.n);
    switch (r) {
    case RULE_PROVEN:
        return stats_glr_pair_passes(STATS_GLR_PROVEN, &ai, &aj, z, 0.0,
                                     log((double)(w->k - 1) / w->delta));
    case RULE_KK:
        return z > stats_kk_pair_threshold((double)ai.n, (double)aj.n, w->k, 1, w->delta);
    case RULE_GK:
        return z > log(2.0 * t * (double)(w->k - 1) / w->delta);
    case RULE_HEURISTIC:
        return z > stats_glr_threshold(STATS_GLR_HEURISTIC, t, w->k, 1, 0.0, w->delta);
    case N_RULE:
        break;
    }
    return 0;
}

/* The least N_j at which the rule stops (0 if none below 2^40). */
static uint64_t least(enum rule r, const struct row *w)
{
    uint64_t hi = 1;
    while (!passes(r, w, hi)) {
        if (hi > (1ull << 40))
            return 0;
        hi *= 2;
    }
    uint64_t lo = hi / 2; /* fails (or 0) */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (passes(r, w, mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int main(void)
{
    static const struct row rows[] = {
        {0.5, 0.45, 1, 2, 0.1},   {0.5, 0.45, 1, 2, 0.01},  {0.5, 0.45, 1, 10, 0.1},
        {0.5, 0.45, 1, 10, 0.01}, {0.5, 0.45, 4, 10, 0.1},  {0.5, 0.45, 4, 10, 0.01},
        {0.5, 0.49, 1, 2, 0.1},   {0.5, 0.49, 1, 2, 1e-6},  {0.6, 0.4, 1, 4, 0.1},
        {0.06, 0.03, 1, 4, 0.1},  {0.06, 0.03, 4, 4, 0.01}, {0.95, 0.9, 1, 4, 0.05},
    };
    printf("Least samples of the less-pulled arm at which each rule stops on a pair whose "
           "empirical means are the true ones (`make docs-thresholds`, scripts/thresholds.c; "
           "N_i/N_j the ratio of the High arm's count to the Low arm's; G&K: "
           "ln(2t(K − 1)/δ) with t the pair's samples).\n\n");
    printf("| means | N_i/N_j | K | δ | proven GLR (ours) | Kaufmann & Koolen 2𝒞_exp | "
           "G&K 2016 | heuristic (no proof) | K&K ÷ ours |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *w = &rows[i];
        uint64_t n[N_RULE];
        for (int r = 0; r < N_RULE; r++)
            n[r] = least((enum rule)r, w);
        printf("| (%g, %g) | %g | %zu | %g | %llu | %llu | %llu | %llu | %.2f |\n", w->mi, w->mj,
               w->ratio, w->k, w->delta, (unsigned long long)n[RULE_PROVEN],
               (unsigned long long)n[RULE_KK], (unsigned long long)n[RULE_GK],
               (unsigned long long)n[RULE_HEURISTIC],
               n[RULE_PROVEN] ? (double)n[RULE_KK] / (double)n[RULE_PROVEN] : 0.0);
    }
    return 0;
}
