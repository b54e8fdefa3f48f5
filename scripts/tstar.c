/*
 * tstar.c — prints Garivier & Kaufmann's optimal weights w*(μ) and T*(μ)
 * for Bernoulli means given on the command line, computed by the policies'
 * own tas_optimal_weights (policies/tas.h), as one JSON object:
 *
 *   build/scripts/tstar 0.5 0.45 0.43 0.4
 *   {"tstar": 989.79..., "w": [0.4165..., ...]}
 *
 * make reproduce uses it to cross-check the driver's independent bisection
 * (scripts/repro/stats.py, t_star) on the instance of its lower-bound table.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "policies/tas.h"

#define TSTAR_MAX_ARMS 64

int main(int argc, char **argv)
{
    double mu[TSTAR_MAX_ARMS] = {0}, w[TSTAR_MAX_ARMS] = {0};
    size_t k = (size_t)(argc - 1);
    if (argc < 3 || k > TSTAR_MAX_ARMS) {
        fprintf(stderr, "usage: tstar MU1 MU2 [... up to %d means in [0, 1]]\n", TSTAR_MAX_ARMS);
        return 2;
    }
    for (size_t i = 0; i < k; i++) {
        char *end = NULL;
        errno = 0;
        mu[i] = strtod(argv[i + 1], &end);
        if (end == argv[i + 1] || *end != '\0' || errno != 0 || !(mu[i] >= 0.0 && mu[i] <= 1.0)) {
            fprintf(stderr, "tstar: %s: not a mean in [0, 1]\n", argv[i + 1]);
            return 2;
        }
    }
    double ts = tas_optimal_weights(mu, k, w);
    printf("{\"tstar\": %.17g, \"w\": [", ts);
    for (size_t i = 0; i < k; i++)
        printf("%s%.17g", i ? ", " : "", w[i]);
    printf("]}\n");
    return 0;
}
