/*
 * fcdrive.h — drive an engine (policies/engine.h) through a simulated
 * environment in tests: Bernoulli (or deterministic) arms, rewards returned
 * `delay` pulls late, the outstanding rewards delivered once the engine
 * stops (so the final recommendation sees them, as in production).
 * Independent of sim/ so policy tests do not wait for the simulator.
 */
#ifndef BANDITD_TESTS_FCDRIVE_H
#define BANDITD_TESTS_FCDRIVE_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "policies/engine.h"

#define FCDRIVE_MAX_ARMS 64

struct fcdrive_env {
    const double *mu; /* true means in [0, 1] */
    size_t k;
    uint64_t delay; /* rewards come back this many pulls later */
    int fixed;      /* 1: reward = the mean itself (deterministic) */
    gsl_rng *rng;   /* the environment's own generator */
};

/* Called after every pull handed out (exploit ones excluded). Non-zero
 * return aborts the run. */
typedef int (*fcdrive_hook)(void *arg, const struct engine *e, const struct engine_pull *p);

struct fcdrive_result {
    uint64_t pulls;                       /* pulls handed out */
    int stopped;                          /* the engine stopped before the cap */
    int aborted;                          /* the hook asked to stop */
    unsigned char high[FCDRIVE_MAX_ARMS]; /* recommendation after the last rewards */
    struct engine_bandit_status st;
};

/* Run bandit 0 until the engine stops or `cap` pulls. 0, or −1 on bad
 * arguments. */
int fcdrive_run(struct engine *e, const struct fcdrive_env *env, uint64_t cap, fcdrive_hook hook,
                void *arg, struct fcdrive_result *out);

/* An engine for one bandit of env->k arms with the policy's defaults
 * overridden by (name, value) pairs (names NULL-terminated); NULL with a
 * message in err. */
struct engine *fcdrive_engine(const char *policy, size_t k, unsigned m, double eps, double delta,
                              uint64_t seed, const char *const *names, const double *values,
                              char *err, size_t errlen);

/* Is high[] correct for the truth mu? kind 0: (ε, m)-optimal (every chosen
 * arm ≥ μ_(m) − ε); kind 1: aggregate regret ≤ ε (Chen et al.); both also
 * require exactly m arms. */
int fcdrive_correct(const double *mu, size_t k, unsigned m, double eps, const unsigned char *high,
                    int kind);

#endif
