/*
 * toptwo.c — the shared steps of the top-two samplers (toptwo.h).
 */
#include "policies/toptwo.h"

#include <math.h>

#include "policies/order.h"
#include "policies/rng.h"

size_t toptwo_first_pull(gsl_rng *rng, const struct stats_arm *arms, size_t k)
{
    size_t best = (size_t)-1, ties = 0;
    uint64_t bv = 0;
    for (size_t i = 0; i < k; i++) {
        if (arms[i].n > 0)
            continue;
        if (ties == 0 || arms[i].pending < bv) {
            best = i;
            bv = arms[i].pending;
            ties = 1;
        } else if (arms[i].pending == bv && rng_index(rng, ++ties) == 0) {
            best = i;
        }
    }
    return best;
}

size_t toptwo_challenger(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t leader,
                         double eps, int penalised, double *w)
{
    if (k < 2)
        return leader;
    struct stats_arm b = arms[leader];
    b.n += b.pending;
    for (size_t j = 0; j < k; j++) {
        if (j == leader) {
            w[j] = INFINITY;
            continue;
        }
        struct stats_arm c = arms[j];
        c.n += c.pending;
        /* An arm ε above the leader already beats it: moving costs nothing
         * (and Z's search needs μ̂_j ≤ μ̂_leader + ε). */
        w[j] = c.mean >= b.mean + eps ? 0.0 : stats_glr_pair_z(&b, &c, eps);
        if (penalised)
            w[j] += log((double)c.n);
    }
    return order_argmin(rng, w, NULL, k);
}
