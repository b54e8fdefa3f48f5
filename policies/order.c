/*
 * order.c — the orderings of order.h: one Fisher–Yates shuffle, one Shell
 * sort, random-tie extremes and the top-set markings.
 */
#include "policies/order.h"

#include <math.h>
#include <stdlib.h>

#include "policies/rng.h"

/* Fisher–Yates over elements of `size` bytes (size_t indices or uint32_t
 * ranks): one loop, so both kinds of permutation consume the generator
 * alike. */
static void fisher_yates(gsl_rng *rng, void *base, size_t n, size_t size)
{
    unsigned char *p = base;
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_index(rng, i);
        unsigned char *a = p + (i - 1) * size, *b = p + j * size;
        for (size_t c = 0; c < size; c++) {
            unsigned char t = a[c];
            a[c] = b[c];
            b[c] = t;
        }
    }
}

void order_shuffle(gsl_rng *rng, size_t *idx, size_t n)
{
    fisher_yates(rng, idx, n, sizeof *idx);
}

void order_rank_draw(gsl_rng *rng, uint32_t *rank, size_t k)
{
    for (size_t i = 0; i < k; i++)
        rank[i] = (uint32_t)i;
    fisher_yates(rng, rank, k, sizeof *rank);
}

uint32_t *order_rank_new(gsl_rng *rng, size_t k)
{
    uint32_t *rank = malloc((k ? k : 1) * sizeof *rank);
    if (rank != NULL)
        order_rank_draw(rng, rank, k);
    return rank;
}

/* What the sort compares: a key array with tie ranks, or the arms' means. */
struct sort_key {
    const double *val;
    const uint32_t *rank;
    const struct stats_arm *arms;
};

/* a before b? Larger value first, NaN last, then smaller rank. */
static int val_before(const struct sort_key *k, size_t a, size_t b)
{
    double va = k->val[a], vb = k->val[b];
    if (isnan(va) || isnan(vb)) {
        if (isnan(va) != isnan(vb))
            return !isnan(va);
    } else if (va != vb) {
        return va > vb;
    }
    return k->rank != NULL && k->rank[a] < k->rank[b];
}

/* a before b? Larger mean first (means are never NaN); ties keep their
 * places. */
static int mean_before(const struct sort_key *k, size_t a, size_t b)
{
    return k->arms[a].mean > k->arms[b].mean;
}

/* Ciura's gaps; the last pass (gap 1) is an insertion sort. */
static const size_t shell_gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
#define SHELL_NGAPS (sizeof shell_gaps / sizeof shell_gaps[0])

/* The one Shell sort; `first` is the first gap used (SHELL_NGAPS − 1:
 * insertion sort only). */
static void shell_sort(size_t *idx, size_t n,
                       int (*before)(const struct sort_key *, size_t, size_t),
                       const struct sort_key *key, size_t first)
{
    for (size_t g = first; g < SHELL_NGAPS; g++) {
        size_t gap = shell_gaps[g];
        for (size_t i = gap; i < n; i++) {
            size_t t = idx[i];
            size_t j = i;
            while (j >= gap && before(key, t, idx[j - gap])) {
                idx[j] = idx[j - gap];
                j -= gap;
            }
            idx[j] = t;
        }
    }
}

void order_sort_desc(size_t *idx, size_t n, const double *val, const uint32_t *rank)
{
    struct sort_key key = {val, rank, NULL};
    shell_sort(idx, n, val_before, &key, 0);
}

/* Shuffle, then sort by mean with a deterministic comparison sort: since the
 * shuffled input is exchangeable among arms of equal mean and the sort only
 * compares means, tied arms come out in uniformly random order. */
void order_by_mean(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t *idx)
{
    for (size_t i = 0; i < k; i++)
        idx[i] = i;
    order_shuffle(rng, idx, k);
    struct sort_key key = {NULL, NULL, arms};
    shell_sort(idx, k, mean_before, &key, k > 64 ? 0 : SHELL_NGAPS - 1);
}

/* The sort decides only ties across the boundary: when the m-th and
 * (m+1)-th largest means differ, the first m of any descending order are
 * the arms above it. The m + 1 largest values are kept sorted in top[]. */
#define TOP_FAST_MAX 8

void order_top_by_mean(gsl_rng *rng, const struct stats_arm *arms, size_t k, size_t m, size_t *idx,
                       unsigned char *high)
{
    if (m >= 1 && m < k && m <= TOP_FAST_MAX) {
        double top[TOP_FAST_MAX + 1] = {0};
        size_t nt = 0;
        for (size_t i = 0; i < k; i++) {
            double v = arms[i].mean;
            if (nt == m + 1 && !(v > top[m]))
                continue;
            size_t j = nt < m + 1 ? nt++ : m;
            for (; j > 0 && top[j - 1] < v; j--)
                top[j] = top[j - 1];
            top[j] = v;
        }
        if (top[m - 1] > top[m]) {
            for (size_t i = 0; i < k; i++)
                high[i] = arms[i].mean >= top[m - 1];
            return;
        }
    }
    for (size_t i = 0; i < k; i++)
        idx[i] = i;
    order_shuffle(rng, idx, k);
    struct sort_key key = {NULL, NULL, arms};
    shell_sort(idx, k, mean_before, &key, k > 64 ? 0 : SHELL_NGAPS - 1);
    for (size_t r = 0; r < k; r++)
        high[idx[r]] = r < m;
}

/* Reservoir-style tie breaking: the j-th tie replaces the current choice
 * with probability 1/j, so each tied index wins with probability 1/ties
 * without a second pass or scratch memory. */
static size_t arg_extreme(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n,
                          int want_max)
{
    size_t best = (size_t)-1;
    double bv = 0;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask != NULL && !mask[i])
            continue;
        double x = v[i];
        int wins = best == (size_t)-1 || (want_max ? x > bv : x < bv);
        if (wins) {
            best = i;
            bv = x;
            ties = 1;
        } else if (x == bv) {
            ties++;
            if (gsl_rng_uniform_int(rng, (unsigned long)ties) == 0)
                best = i;
        }
    }
    return best;
}

size_t order_argmax(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n)
{
    return arg_extreme(rng, v, mask, n, 1);
}

size_t order_argmin(gsl_rng *rng, const double *v, const unsigned char *mask, size_t n)
{
    return arg_extreme(rng, v, mask, n, 0);
}

size_t order_mark_top(const double *val, const unsigned char *mask, size_t k, size_t want,
                      const uint32_t *rank, size_t *idx, unsigned char *high)
{
    size_t n = 0;
    for (size_t i = 0; i < k; i++)
        if (mask == NULL || mask[i])
            idx[n++] = i;
    order_sort_desc(idx, n, val, rank);
    size_t got = want < n ? want : n;
    for (size_t r = 0; r < got; r++)
        high[idx[r]] = 1;
    return got;
}

/* Total order: larger mean first, then smaller rank (index without rank). */
static int top_before(const struct stats_arm *arms, const uint32_t *rank, size_t i, size_t j)
{
    if (arms[i].mean != arms[j].mean)
        return arms[i].mean > arms[j].mean;
    uint64_t ri = rank ? rank[i] : i, rj = rank ? rank[j] : j;
    return ri < rj;
}

/* Repeated selection, no buffer (the engine's status calls it on every
 * bandit): picks the best m when m is small, or marks all and drops the
 * worst K − m when m is large. */
void order_top_m(const struct stats_arm *arms, size_t k, unsigned m, const uint32_t *rank,
                 unsigned char *high)
{
    size_t want = m < k ? m : k;
    int pick_best = want <= k - want;
    for (size_t i = 0; i < k; i++)
        high[i] = pick_best ? 0 : 1;
    size_t rounds = pick_best ? want : k - want;
    for (size_t r = 0; r < rounds; r++) {
        size_t sel = k;
        for (size_t i = 0; i < k; i++) {
            if (high[i] != (pick_best ? 0 : 1))
                continue;
            if (sel == k ||
                (pick_best ? top_before(arms, rank, i, sel) : top_before(arms, rank, sel, i)))
                sel = i;
        }
        high[sel] = pick_best ? 1 : 0;
    }
}
