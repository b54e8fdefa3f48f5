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

/* Confidence bounds of one arm with `u` samples of mean `mean` at time t.
 * `cheap` variants are valid relaxations (lower ≥ lower_cheap,
 * upper ≤ upper_cheap) used to skip exact computations; may be NULL. */
struct lucb_bounds {
    double (*lower)(const struct lucb *l, double mean, double u, double t);
    double (*upper)(const struct lucb *l, double mean, double u, double t);
    double (*lower_cheap)(const struct lucb *l, double mean, double u, double t);
    double (*upper_cheap)(const struct lucb *l, double mean, double u, double t);
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
    unsigned char *high; /* scratch, then the certified set */
    unsigned char *certified;
    size_t *order;
    double *val;
    uint32_t *rank;
};

/* New state for ctx's bandit; NULL when out of memory. */
struct lucb *lucb_new(const struct lucb_bounds *b, double c1, double c2,
                      const struct policy_ctx *ctx);
void lucb_free(struct lucb *l);

int lucb_select(struct lucb *l, const struct policy_ctx *ctx, struct policy_pick *pick);
int lucb_done(struct lucb *l, const struct policy_ctx *ctx);
void lucb_recommend(struct lucb *l, const struct policy_ctx *ctx, unsigned char *high);

/* The stop statistic U(l*) − L(h*) on rewarded pulls (+INFINITY while some
 * arm has none); for tests and status. Draws from ctx->rng for High's ties. */
double lucb_gap(struct lucb *l, const struct policy_ctx *ctx);

#endif
