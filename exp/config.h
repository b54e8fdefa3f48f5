/*
 * config.h — an experiment's configuration: the create body parsed and
 * validated into a `struct exp_config`, its normalised JSON (every default
 * made explicit, the seed drawn: what the store keeps and GET returns), and
 * the lookups in it. The same parser reads stored configurations back at
 * startup, so a stored experiment is always one a client could have
 * created. A configuration never changes once created.
 */
#ifndef BANDITD_EXP_CONFIG_H
#define BANDITD_EXP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policies/engine.h"

#define EXP_ID_MAX 64

/* Limits (the daemon's flags). */
struct exp_limits {
    size_t max_experiments;
    size_t max_bandits;
    size_t max_arms;
    size_t max_batch;
    size_t max_count;   /* assignments per request */
    size_t max_pending; /* outstanding assignments per experiment */
    size_t history_points;
    size_t max_memory;     /* resident bytes past which nothing new is taken in; 0: no cap */
    size_t snapshot_every; /* events between two snapshots of an experiment, at least
                            * (exp/snapshot.c: more with many pending); 0: none written */
    int no_snapshots;      /* neither read nor write snapshots: every load replays the log */
};

/* What a returning unit gets (docs/contract.md, "Sticky units"). */
enum exp_after_stop {
    EXP_AFTER_STOP_RECOMMENDATION = 0, /* the winner: a new exploit assignment */
    EXP_AFTER_STOP_KEEP = 1,           /* its own assignment, as first handed out */
};
enum exp_after_expiry {
    EXP_AFTER_EXPIRY_NEW = 0,  /* a new assignment */
    EXP_AFTER_EXPIRY_KEEP = 1, /* the expired one again */
};
/* What a new unit gets while the experiment cannot explore and has no
 * conclusion (paused, or stopped by hand before its rule fired). */
enum exp_fallback {
    EXP_FALLBACK_NONE = 0,           /* nothing: 409, the client shows its default */
    EXP_FALLBACK_CONTROL = 1,        /* the control arm (constraints.control) */
    EXP_FALLBACK_RECOMMENDATION = 2, /* the current empirical best */
};

/* Webhooks (exp/webhooks.c; docs/contract.md, Webhooks): the events an
 * endpoint may subscribe to, as bits, and one endpoint. */
enum exp_hook_event {
    EXP_HOOK_STOPPED = 1u << 0,     /* "experiment.stopped" */
    EXP_HOOK_PAUSED = 1u << 1,      /* "experiment.paused" */
    EXP_HOOK_RESUMED = 1u << 2,     /* "experiment.resumed" */
    EXP_HOOK_BANDIT_DONE = 1u << 3, /* "bandit.done" (experiments of several bandits) */
    EXP_HOOK_CONSTRAINT = 1u << 4,  /* "constraint.fired" (the burn-in's data complete) */
};
#define EXP_HOOK_ALL 0x1fu
#define EXP_WEBHOOKS_MAX 8         /* endpoints per experiment */
#define EXP_WEBHOOK_URL_MAX 2048   /* bytes */
#define EXP_WEBHOOK_SECRET_MIN 16  /* bytes */
#define EXP_WEBHOOK_SECRET_MAX 256 /* bytes */

struct exp_webhook {
    char *url;       /* owned: http:// or https:// */
    char *secret;    /* owned: the HMAC key; never in cfg->json (GET shows a fingerprint) */
    unsigned events; /* enum exp_hook_event bits */
};

/* The event's name ("experiment.stopped"...) for one bit, or NULL. */
const char *exp_hook_event_name(unsigned bit);

struct exp_config {
    char id[EXP_ID_MAX + 1];
    char *name; /* owned */
    const struct policy_ops *policy;
    json_t *policy_params; /* owned reference: as given (object) */
    double reward_min, reward_max;
    int64_t ttl_s;
    int has_default_reward;
    double default_reward;
    size_t n_bandits;
    char **bandit_ids; /* owned */
    size_t *n_arms;    /* owned */
    char ***arm_names; /* owned: arm_names[b][i] */
    int *control_arm;  /* owned; per bandit or NULL */
    enum exp_after_stop after_stop;
    enum exp_after_expiry after_expiry;
    enum exp_fallback fallback;
    struct engine_config engine;  /* n_arms and control_arm point into this struct */
    struct exp_webhook *webhooks; /* owned; n_webhooks of them */
    size_t n_webhooks;
    int design_frozen;  /* "design": {"frozen": true}: changes after the first assignment
                         * only by amendment (exp/design.c) */
    int design_blinded; /* "design": {"blinded": true}: per-arm figures only for keys
                         * with scope unblinded (api/blind.c) */
    json_t *json;       /* owned: the normalised configuration as returned; what is stored
                         * is exp_config_stored_text (the same with the webhooks' secrets) */
};

/* Parse and validate a create body against lim. On success returns 0 and
 * fills cfg (the caller owns it: exp_config_free). On a validation failure
 * returns 1 and appends {"field", "message"} objects to errors (borrowed
 * array). On allocation failure returns −1. On failure cfg holds what was
 * filled in: free it with exp_config_free too. */
int exp_config_parse(json_t *body, const struct exp_limits *lim, struct exp_config *cfg,
                     json_t *errors);
/* The same for a configuration read back from the store: what later
 * versions refuse in a create body but once accepted (a target_arm the
 * policy ignores) is kept, so that an upgrade never drops an experiment. */
int exp_config_load(json_t *body, const struct exp_limits *lim, struct exp_config *cfg,
                    json_t *errors);
void exp_config_free(struct exp_config *cfg);

/* The configuration as stored: cfg->json with each webhook's secret in
 * place of its fingerprint, which exp_config_parse reads back. New string
 * (free), or NULL out of memory. */
char *exp_config_stored_text(const struct exp_config *cfg);

/* 1 if s is a valid experiment or bandit id: [A-Za-z0-9_.-]{1,64}. */
int exp_id_valid(const char *s);

/* Bandit index by id; arm index by name within bandit b; −1 if none. */
int exp_cfg_bandit(const struct exp_config *cfg, const char *id);
int exp_cfg_arm(const struct exp_config *cfg, size_t bandit, const char *name);

#endif
