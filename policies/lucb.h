/*
 * lucb.h — the LUCB skeleton shared by lucb1 (Hoeffding bounds) and kl-lucb
 * (KL bounds): Kalyanakrishnan, Tewari, Auer & Stone (2012), and Kaufmann &
 * Kalyanakrishnan (2013).
 *
 * Each round: High = the empirical top m (ties at random), h* = the High arm
 * of lowest lower bound, l* = the Low arm of highest upper bound. Stop when
 * U(l*) − L(h*) < ε and return High; else pull h* and l* (two consecutive
 * assignments: select returns h* and queues l*).
 *
 * Asynchrony: select counts pending pulls as returned at the arm's current
 * mean (count n + pending, mean unchanged, t = Σ (n + pending)); an arm with
 * no reward yet has the trivial bounds [0, 1]; arms never pulled are pulled
 * first. The stop rule uses rewarded pulls only (count n, t = Σ n), so its
 * guarantee is the paper's. The set certified at the stop is kept:
 * recommend() returns it, whatever rewards still arrive.
 */
#ifndef BANDITD_POLICIES_LUCB_H
#define BANDITD_POLICIES_LUCB_H

#include <stddef.h>
#include <stdint.h>

#include "policies/policy.h"

struct lucb;

/* A policy's confidence bounds: for an arm with `u` samples of mean `mean`,
 * lower(mean, u, x) and upper(mean, u, x) at exploration level x = level(t)
 * (LUCB1: x = ln(k1 K t^p/δ); KL-LUCB: x = β(t, δ)). With grid > 0 the
 * level is rounded up to the grid e^(grid·j) — wider bounds, so the
 * guarantee holds a fortiori — and each arm's bounds are cached until its
 * count, its mean or the rounded level change: a select then recomputes
 * only the arms that moved (the expensive KL bounds; KL-LUCB's pulls with
 * β on a 0.5% grid were within noise of the exact β's in our runs). */
struct lucb_bounds {
    double (*level)(const struct lucb *l, double t);
    double (*lower)(double mean, double u, double x);
    double (*upper)(double mean, double u, double x);
    double grid;
};

/* One cached pair of bounds, keyed by what they depend on. */
struct lucb_cache {
    double u, mean, x;
    double lo, hi;
};

struct lucb {
    const struct lucb_bounds *b;
    double c1, c2; /* the bound's constants (policy-defined) */
    double k;      /* number of arms, as a double for the bounds */
    double delta;
    size_t n;
    unsigned m;
    long queued; /* arm to hand out next (l*), −1 none */
    int stopped;
    unsigned char *high; /* scratch: the current High set */
    unsigned char *certified;
    struct lucb_cache *cache[2]; /* [0] rewarded counts (stop), [1] with pending (select) */
    size_t *order;
    double *val;
    uint32_t *rank;
};

/* New state for ctx's bandit in *state. 0, or −1 with "out of memory" in err. */
int lucb_init(void **state, const struct lucb_bounds *b, double c1, double c2,
              const struct policy_ctx *ctx, char *err, size_t errlen);

/* The vtable entries of lucb1 and kl-lucb (state is a struct lucb). */
void lucb_fini(void *state);
void lucb_snap(void *state, const struct policy_ctx *ctx, struct ser *s);
int lucb_select(void *state, const struct policy_ctx *ctx, int bandit, struct policy_pick *pick);
int lucb_done(void *state, const struct policy_ctx *ctx, size_t bandit);
void lucb_recommend(void *state, const struct policy_ctx *ctx, size_t bandit, unsigned char *high);

#endif
