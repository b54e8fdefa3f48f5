/*
 * floors.c — `make docs-thresholds`, second table: the floors of the pair
 * rule (the proven GLR rule for ε > 0, top m and two arms, and for one best
 * arm before the leader product) on issue 11's instances, beside the
 * default's measured ratios (docs/stop-rules.md, "What the issue-11 targets
 * need"). Deterministic, no simulation.
 *
 * The floor of a rule on an instance: the empirical means sit at the true
 * ones, the counts are integers (struct stats_arm with n, mean = μ,
 * m2 = n·μ(1 − μ), as the engine keeps them), and the rule stops when every
 * pair (leader, j) passes; the floor is the least total count at which it
 * does, either under the allocation best for the rule (for each leader
 * count n1, each challenger's least count at which its pair passes, summed,
 * minimised over n1) or along Garivier & Kaufmann's optimal weights w*
 * (tas_optimal_weights). The heuristic threshold depends on the total t:
 * its optimal-allocation floor is the fixed point t = floor(β(t)). The
 * leader product has no such floor: what it pays depends on how long the
 * returned arm led, a property of the run.
 *
 * The measured ratios are quoted, not simulated: argv[1] is
 * docs/measurements.md, whose generated default table (`make docs-defaults`)
 * gives the row of the default (`adapt`, GLR proven); its T*·kl column heads
 * are checked against ours. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/stats.h"
#include "policies/tas.h"

#define FLOORS_MAX_ARMS 10
#define FLOORS_DOC_MAX (4u << 20) /* docs/measurements.md is far below this */
#define FLOORS_NONE UINT64_MAX    /* no count below the cap passes */
#define FLOORS_CAP (1ull << 34)   /* a count no experiment reaches */

/* The pair rule's threshold ln((K − 1)/δ): these floors are the pair
 * rule's (the proven rule's before the leader product, and its rule for
 * ε > 0 or top-m); stats_glr_threshold gives ln(1/δ) for the leader
 * product, which is no pair rule. */
static double floors_pair_beta(size_t k, double delta)
{
    return log((double)(k - 1) / delta);
}

struct instance {
    const char *name;  /* as the default table's column heads spell it */
    const char *label; /* as this table prints it */
    size_t k;
    double mu[FLOORS_MAX_ARMS]; /* sorted, the leader first */
};

static const struct instance instances[] = {
    {"μ1", "μ1 = (0.5, 0.45, 0.43, 0.4)", 4, {0.5, 0.45, 0.43, 0.4}},
    {"μ2", "μ2 = (0.3, 0.21, 0.2, 0.19, 0.18)", 5, {0.3, 0.21, 0.2, 0.19, 0.18}},
    {"K = 10",
     "K = 10, (0.6, 0.55, …, 0.15)",
     10,
     {0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15}},
    {"K = 2", "(0.5, 0.45)", 2, {0.5, 0.45}},
};
#define N_INST (sizeof instances / sizeof instances[0])
static const double deltas[] = {0.1, 0.01};
#define N_DELTA (sizeof deltas / sizeof deltas[0])

/* One cell's problem: an instance, a rule, its threshold. */
struct cell {
    const struct instance *in;
    enum stats_glr_threshold kind;
    double beta; /* the pair threshold (the heuristic's at a fixed t) */
};

static void arm_at(struct stats_arm *a, uint64_t n, double mu)
{
    stats_arm_init(a, 1.0, 1.0);
    a->n = n;
    a->mean = mu;
    a->m2 = (double)n * mu * (1.0 - mu);
}

/* Does the pair (leader with n1 pulls, arm j with nj) pass at c->beta? */
static int pair_passes(const struct cell *c, uint64_t n1, size_t j, uint64_t nj)
{
    struct stats_arm ai, aj;
    arm_at(&ai, n1, c->in->mu[0]);
    arm_at(&aj, nj, c->in->mu[j]);
    double z = stats_glr_pair_z(&ai, &aj, 0.0);
    return stats_glr_pair_passes(c->kind, &ai, &aj, z, 0.0, c->beta);
}

/* The least n ≥ 1 at which passes(ctx, n) holds, for a test monotone in n
 * (FLOORS_NONE if none below the cap): doubling, then bisection. */
static uint64_t least_passing(int (*passes)(void *ctx, uint64_t n), void *ctx)
{
    uint64_t hi = 1;
    while (!passes(ctx, hi)) {
        if (hi >= FLOORS_CAP)
            return FLOORS_NONE;
        hi *= 2;
    }
    uint64_t lo = hi / 2; /* fails, or 0 */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (passes(ctx, mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

struct nj_at {
    const struct cell *c;
    uint64_t n1;
    size_t j;
};

static int nj_passes(void *ctx, uint64_t nj)
{
    const struct nj_at *a = ctx;
    return pair_passes(a->c, a->n1, a->j, nj);
}

/* Arm j's least count at which its pair passes with the leader at n1
 * (FLOORS_NONE if none below the cap; the evidence grows with nj on the
 * mean path). */
static uint64_t least_nj(const struct cell *c, uint64_t n1, size_t j)
{
    struct nj_at a = {c, n1, j};
    return least_passing(nj_passes, &a);
}

/* The least total with the leader at n1; FLOORS_NONE if some pair never
 * passes or the total reaches `bound` (no better than the best so far). */
static uint64_t total_at(const struct cell *c, uint64_t n1, uint64_t bound)
{
    uint64_t t = n1;
    for (size_t j = 1; j < c->in->k && t < bound; j++) {
        uint64_t nj = least_nj(c, n1, j);
        if (nj == FLOORS_NONE)
            return FLOORS_NONE;
        t += nj;
    }
    return t < bound ? t : FLOORS_NONE;
}

/* The floor under the allocation best for the rule: the least total over
 * leader counts n1 on a geometric grid (ratio 1.01, from 2 until n1 alone
 * exceeds the best total), then every integer n1 between the best grid
 * point's neighbours. *n1_out receives the minimiser. */
static uint64_t floor_opt(const struct cell *c, uint64_t *n1_out)
{
    uint64_t best = FLOORS_NONE, best_n1 = 0, prev = 1, below = 1, above = 2;
    for (int s = 0; 2.0 * pow(1.01, s) < (double)FLOORS_CAP; s++) {
        double x = 2.0 * pow(1.01, s);
        uint64_t n1 = (uint64_t)llround(x);
        if (n1 == prev)
            continue;
        if (best != FLOORS_NONE && n1 >= best)
            break;
        uint64_t t = total_at(c, n1, best);
        if (t != FLOORS_NONE) {
            best = t;
            best_n1 = n1;
            below = prev;
            above = (uint64_t)llround(x * 1.01) + 1;
        }
        prev = n1;
    }
    for (uint64_t n1 = below; best != FLOORS_NONE && n1 <= above; n1++) {
        uint64_t t = total_at(c, n1, best);
        if (t != FLOORS_NONE && t < best) {
            best = t;
            best_n1 = n1;
        }
    }
    *n1_out = best_n1;
    return best;
}

/* The heuristic's optimal-allocation floor with its threshold read at the
 * floor's own t: t ← floor(β(t)) from t = 10⁴ until it stays (the floor
 * grows with β, β with t, like ln ln t: a few steps). */
static uint64_t floor_opt_heuristic(struct cell *c, double delta, uint64_t *n1_out)
{
    uint64_t t = 10000, f = FLOORS_NONE;
    for (int it = 0; it < 50; it++) {
        c->beta = stats_glr_threshold(STATS_GLR_HEURISTIC, (double)t, c->in->k, 1, 0.0, delta);
        f = floor_opt(c, n1_out);
        if (f == t || f == FLOORS_NONE)
            break;
        t = f;
    }
    return f;
}

/* Counts at total scale N along w (each at least 1), their sum returned. */
static uint64_t counts_along(const double *w, size_t k, uint64_t big_n, uint64_t *n)
{
    uint64_t t = 0;
    for (size_t a = 0; a < k; a++) {
        n[a] = (uint64_t)llround(w[a] * (double)big_n);
        if (n[a] < 1)
            n[a] = 1;
        t += n[a];
    }
    return t;
}

/* Does the rule stop with the counts at scale N along w? The heuristic's
 * threshold is read at the counts' own total. */
static int stops_along(struct cell *c, const double *w, uint64_t big_n, double delta)
{
    uint64_t n[FLOORS_MAX_ARMS] = {0};
    uint64_t t = counts_along(w, c->in->k, big_n, n);
    if (c->kind == STATS_GLR_HEURISTIC)
        c->beta = stats_glr_threshold(STATS_GLR_HEURISTIC, (double)t, c->in->k, 1, 0.0, delta);
    for (size_t j = 1; j < c->in->k; j++)
        if (!pair_passes(c, n[0], j, n[j]))
            return 0;
    return 1;
}

/* The floor along w: the least total of the counts at the least scale N
 * at which the rule stops (FLOORS_NONE if none below the cap). */
struct along_at {
    struct cell *c;
    const double *w;
    double delta;
};

static int along_stops(void *ctx, uint64_t n)
{
    const struct along_at *a = ctx;
    return stops_along(a->c, a->w, n, a->delta);
}

static uint64_t floor_along(struct cell *c, const double *w, double delta)
{
    struct along_at a = {c, w, delta};
    uint64_t hi = least_passing(along_stops, &a);
    if (hi == FLOORS_NONE)
        return FLOORS_NONE;
    uint64_t n[FLOORS_MAX_ARMS] = {0};
    return counts_along(w, c->in->k, hi, n);
}

/* --- the measured ratios, quoted from docs/measurements.md ----------------- */

struct quoted {
    double ratio[N_INST][N_DELTA]; /* the default's mean ÷ T*·kl */
    double tkl[N_INST][N_DELTA];   /* the column heads' T*·kl */
};

static char *read_doc(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    char *buf = malloc(FLOORS_DOC_MAX + 1);
    size_t n = buf ? fread(buf, 1, FLOORS_DOC_MAX, f) : 0;
    (void)fclose(f); /* read only: nothing to lose */
    if (buf == NULL || n == FLOORS_DOC_MAX) {
        fprintf(stderr, "%s: unreadable or too large\n", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* The text of cell `col` (0-based) of the Markdown table line `line`, up to
 * its closing bar, into out (NUL-terminated); 0 if the line is shorter. */
static int table_cell(const char *line, size_t col, char *out, size_t cap)
{
    const char *p = strchr(line, '|');
    for (size_t i = 0; p != NULL && i < col; i++)
        p = strchr(p + 1, '|');
    if (p == NULL)
        return 0;
    const char *end = strpbrk(p + 1, "|\n");
    if (end == NULL || *end != '|' || (size_t)(end - p) > cap)
        return 0;
    while (p + 1 < end && p[1] == ' ')
        p++;
    size_t len = (size_t)(end - p - 1);
    memcpy(out, p + 1, len);
    out[len] = '\0';
    return 1;
}

/* The default row and the T*·kl heads of the generated default table: the
 * first table of <!-- generated:defaults -->, whose columns are the
 * instances above at δ = 0.1 then 0.01, in this order (checked). */
static int quote_measured(const char *path, struct quoted *q)
{
    int rc = -1;
    char *doc = read_doc(path);
    if (doc == NULL)
        return -1;
    const char *block = strstr(doc, "<!-- generated:defaults -->");
    const char *head = block ? strstr(block, "\n| policy | stop |") : NULL;
    const char *row = head ? strstr(head, "\n| `adapt` | GLR (proven) |") : NULL;
    const char *stop = block ? strstr(block, "<!-- /generated -->") : NULL;
    if (row == NULL || stop == NULL || row > stop) {
        fprintf(stderr, "%s: no default row in the generated defaults table\n", path);
        goto out;
    }
    for (size_t i = 0; i < N_INST; i++) {
        for (size_t d = 0; d < N_DELTA; d++) {
            size_t col = 2 + 2 * i + d;
            char h[256], r[256], want[64];
            snprintf(want, sizeof want, "%s, δ = %g (T*·kl = ", instances[i].name, deltas[d]);
            const char *eq = NULL;
            char *end = NULL;
            if (table_cell(head + 1, col, h, sizeof h) && strncmp(h, want, strlen(want)) == 0)
                eq = h + strlen(want);
            if (eq == NULL || !table_cell(row + 1, col, r, sizeof r)) {
                fprintf(stderr, "%s: column %zu is not \"%s…\"\n", path, col, want);
                goto out;
            }
            q->tkl[i][d] = strtod(eq, NULL);
            q->ratio[i][d] = strtod(r, &end);
            if (end == r || strncmp(end, "×", strlen("×")) != 0 || !(q->tkl[i][d] > 0)) {
                fprintf(stderr, "%s: column %zu: no ratio in \"%s\"\n", path, col, r);
                goto out;
            }
        }
    }
    rc = 0;
out:
    free(doc);
    return rc;
}

/* --- the table --------------------------------------------------------------- */

struct result {
    double tkl;                    /* T*(μ)·kl(δ, 1 − δ) */
    uint64_t proven, proven_n1;    /* optimal-allocation floor, leader count */
    uint64_t heur, heur_n1;        /* the same, heuristic at its own t */
    uint64_t proven_w, heur_w;     /* floors along w* */
    double heur_beta, proven_beta; /* the thresholds at the floors */
};

static void compute(const struct instance *in, double delta, struct result *r)
{
    double w[FLOORS_MAX_ARMS];
    r->tkl = tas_lower_bound(in->mu, in->k, delta, w);
    tas_optimal_weights(in->mu, in->k, w);
    r->proven_beta = floors_pair_beta(in->k, delta);
    struct cell c = {in, STATS_GLR_PROVEN, r->proven_beta};
    r->proven = floor_opt(&c, &r->proven_n1);
    r->proven_w = floor_along(&c, w, delta);
    struct cell h = {in, STATS_GLR_HEURISTIC, 0.0};
    r->heur = floor_opt_heuristic(&h, delta, &r->heur_n1);
    r->heur_beta = h.beta;
    r->heur_w = floor_along(&h, w, delta);
}

int main(int argc, char **argv)
{
    struct quoted q;
    struct result res[N_INST][N_DELTA];
    if (argc != 2) {
        fprintf(stderr, "usage: floors docs/measurements.md\n");
        return 2;
    }
    if (quote_measured(argv[1], &q) != 0)
        return 1;
    for (size_t i = 0; i < N_INST; i++) {
        for (size_t d = 0; d < N_DELTA; d++) {
            struct result *r = &res[i][d];
            compute(&instances[i], deltas[d], r);
            if (fabs(r->tkl - q.tkl[i][d]) > 1.0) {
                fprintf(stderr, "floors: %s, δ = %g: T*·kl %.1f here, %.0f in %s\n",
                        instances[i].name, deltas[d], r->tkl, q.tkl[i][d], argv[1]);
                return 1;
            }
        }
    }

    printf("Floors: the least total count at which a rule stops when every empirical mean "
           "is the true one, counts integers, ÷ T*(μ)·kl(δ, 1 − δ) (`make docs-thresholds`, "
           "scripts/floors.c; no simulation). *Best allocation*: the leader's count n1 and "
           "each challenger's least count at which its pair passes, the sum minimised over n1 "
           "(the leader's share n1/total in brackets: the minimum is flat, shares about "
           "0.01 apart reach the same total); *at w\\**: counts along Garivier & "
           "Kaufmann's optimal weights. Proven: the pair rule (four products, threshold "
           "ln((K − 1)/δ); the rule for ε > 0, top m and two arms, and for one best arm before "
           "the leader product); "
           "heuristic: ln((ln t + 1)/δ) at the floor's own t (a fixed point; its value in "
           "brackets). *Measured*: the default (`adapt`, proven GLR: the leader product on "
           "every instance here but two arms) in "
           "[measurements.md](measurements.md#the-default-proven-stop-rules-against-the-lower-"
           "bound)'s generated table (100 runs at δ = 0.1, 50 at δ = 0.01; half on two arms), "
           "quoted, and its ratio to the pair rule's floor (below 1 where the leader product "
           "saves the union).\n\n");
    printf("| instance | δ | T*·kl | proven, best allocation | proven, at w* | "
           "heuristic, best allocation | heuristic, at w* | measured | measured ÷ floor |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < N_INST; i++) {
        for (size_t d = 0; d < N_DELTA; d++) {
            const struct result *r = &res[i][d];
            printf("| %s | %g | %.0f | %.2f× (%.2f) | %.2f× | %.2f× (%.2f; β %.2f) | %.2f× | "
                   "%.2f× | %.2f |\n",
                   d == 0 ? instances[i].label : "", deltas[d], r->tkl, (double)r->proven / r->tkl,
                   (double)r->proven_n1 / (double)r->proven, (double)r->proven_w / r->tkl,
                   (double)r->heur / r->tkl, (double)r->heur_n1 / (double)r->heur, r->heur_beta,
                   (double)r->heur_w / r->tkl, q.ratio[i][d],
                   q.ratio[i][d] * r->tkl / (double)r->proven);
        }
    }

    return 0;
}
