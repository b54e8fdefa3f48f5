/*
 * drive.h — drive an engine (policies/engine.h) through a simulated
 * environment in unit tests: Bernoulli (or deterministic) arms over one or
 * several bandits, rewards returned `delay` pulls late (optionally some of
 * them released instead, as expiries are), the outstanding rewards
 * delivered once the engine stops (so the final recommendation sees them,
 * as in production). The one driver of tests/unit (the fixed-confidence and
 * fixed-budget policy tests); statistical tests use the simulator (sim/)
 * instead, which measures rates over many runs.
 *
 * Requests: TDRIVE_ASK_ANY (the engine picks the bandit), TDRIVE_ASK_FIRST
 * (always bandit 0) or TDRIVE_ASK_TURNS (each bandit in turn, skipping the
 * ones the engine has marked done; an exploit answer for one is skipped).
 * Otherwise an exploit answer ends the run.
 */
#ifndef BANDITD_TESTS_DRIVE_H
#define BANDITD_TESTS_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "policies/engine.h"

#define TDRIVE_MAX_ARMS 64
#define TDRIVE_MAX_BANDITS 8

enum tdrive_ask { TDRIVE_ASK_ANY = 0, TDRIVE_ASK_FIRST = 1, TDRIVE_ASK_TURNS = 2 };

struct tdrive_env {
    size_t nb;                            /* bandits; 0 counts as 1 */
    const size_t *k;                      /* arms per bandit (nb entries) */
    const double *mu[TDRIVE_MAX_BANDITS]; /* true means in [0, 1], per bandit */
    uint64_t delay;                       /* rewards come back this many pulls later */
    int fixed;                            /* 1: reward = the mean itself (deterministic) */
    gsl_rng *rng;                         /* the environment's own generator */
    enum tdrive_ask ask;
    unsigned release_every; /* every n-th returned pull is released instead (0: none) */
};

/* Called after every pull handed out (exploit answers excluded), before its
 * reward is queued. Non-zero return aborts the run. */
typedef int (*tdrive_hook)(void *arg, const struct engine *e, const struct engine_pull *p);

struct tdrive_result {
    uint64_t pulls;                      /* pulls handed out */
    int stopped;                         /* the engine stopped before the cap */
    int aborted;                         /* the hook asked to stop */
    int failed;                          /* engine_assign returned an error */
    int capped;                          /* ended by the cap, not stopped */
    uint64_t misrouted;                  /* pulls on another bandit than asked for */
    unsigned char high[TDRIVE_MAX_ARMS]; /* bandit 0's recommendation after the last rewards */
    struct engine_bandit_status st;      /* bandit 0's status then */
};

/* Run until the engine stops, or `cap` requests. 0, or −1 on bad
 * arguments (too many bandits or arms, or k not the engine's). */
int tdrive_run(struct engine *e, const struct tdrive_env *env, uint64_t cap, tdrive_hook hook,
               void *arg, struct tdrive_result *out);

/* An engine for one bandit of k arms with the policy's defaults overridden
 * by (name, value) pairs (names NULL-terminated); NULL with a message in
 * err. */
struct engine *tdrive_engine(const char *policy, size_t k, unsigned m, double eps, double delta,
                             uint64_t seed, const char *const *names, const double *values,
                             char *err, size_t errlen);

/* engine_create(c), failing the test with its message when it refuses. */
struct engine *tengine_create(const struct engine_config *c);

/* Is high[] correct for the truth mu? kind 0: (ε, m)-optimal (every chosen
 * arm ≥ μ_(m) − ε); kind 1: aggregate regret ≤ ε (Chen et al.); both also
 * require exactly m arms. */
int tdrive_correct(const double *mu, size_t k, unsigned m, double eps, const unsigned char *high,
                   int kind);

#endif
