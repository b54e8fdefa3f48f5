/*
 * parse.h — the pure parse-and-validate steps of the request bodies that
 * change an experiment (assignments, rewards, observations, PATCH): no
 * HTTP, no locks, no store. The handlers in api/ call them, and so do the
 * libFuzzer targets in tests/fuzz/, which is why they are separate.
 *
 * Each returns 0 (valid: the result is filled), 1 (invalid: one
 * {"field", "message"} object per problem appended to e->list, and
 * e->detail holds the problem's one-line summary) or −1 (out of memory).
 * Strings in results are borrowed from `body`. `cfg` is the experiment's
 * configuration (immutable once created, so reading it needs no lock).
 */
#ifndef BANDITD_API_PARSE_H
#define BANDITD_API_PARSE_H

#include <stddef.h>

#include <jansson.h>

#include "exp/exp.h"

#define API_DETAIL_MAX 256

/* What a failed parse reports: the list problem+json carries and its
 * one-line detail. */
struct api_errors {
    json_t *list; /* owned: {"field", "message"} objects */
    char detail[API_DETAIL_MAX];
};
/* Start an empty report (its list may fail to allocate: parsers then
 * return −1). Returns e. */
struct api_errors *api_errors_init(struct api_errors *e);
void api_errors_free(struct api_errors *e);

/* POST assignments: {"bandit": id, "unit": string, "count": n}, all optional. */
struct api_assign_req {
    int bandit;       /* index, −1: the policy chooses */
    const char *unit; /* NULL: none */
    size_t count;
};
int api_parse_assignment(json_t *body, const struct exp_config *cfg, size_t max_count,
                         struct api_assign_req *out, struct api_errors *e);

/* POST rewards: {"assignment_id", "reward"} or {"rewards": [...]}. */
struct api_reward_item {
    const char *assignment_id;
    double value; /* user units, within the reward range */
};
/* On 0, *items is a new array of *n items (free it). *batch tells the
 * list form from the single one (the single form answers 404 for an
 * unknown id). */
int api_parse_rewards(json_t *body, const struct exp_config *cfg, size_t max_batch,
                      struct api_reward_item **items, size_t *n, int *batch, struct api_errors *e);

/* POST assignments/release: {"assignment_id"} or {"releases": [...]}
 * (the same contract as api_parse_rewards). */
struct api_release_item {
    const char *assignment_id;
};
int api_parse_releases(json_t *body, const struct exp_config *cfg, size_t max_batch,
                       struct api_release_item **items, size_t *n, int *batch,
                       struct api_errors *e);

/* POST assignments/served: {"assignment_id", "unit"} or {"served": [...]}. */
struct api_served_item {
    const char *assignment_id;
    const char *unit; /* non-empty, at most EXP_MAX_UNIT bytes */
};
int api_parse_served(json_t *body, const struct exp_config *cfg, size_t max_batch,
                     struct api_served_item **items, size_t *n, int *batch, struct api_errors *e);

/* POST observations: {"bandit", "arm", "reward"} or {"observations": [...]}. */
struct api_observation_item {
    int bandit, arm;
    double value;
};
int api_parse_observations(json_t *body, const struct exp_config *cfg, size_t max_batch,
                           struct api_observation_item **items, size_t *n, struct api_errors *e);

/* PATCH: {"state", "name", "goal": {"budget"}, "assignment_ttl_s",
 * "retire": {"bandit", "arm"}, "reason"}, each optional, at least one of
 * them but the reason; cfg is the experiment's (retire names its arm). A
 * field of the configuration that cannot change on a live experiment
 * (what was randomised, or decided at creation) is refused by name. */
#define API_REASON_MAX 1024 /* bytes of an edit's or a correction's reason */
struct api_patch_req {
    int has_state;
    enum exp_state state;
    struct exp_edit edit; /* strings borrowed from the body */
};
int api_parse_patch(json_t *body, const struct exp_config *cfg, struct api_patch_req *out,
                    struct api_errors *e);

/* POST amendments: {"change": {what PATCH may change but the state},
 * "reason": string (required)}. out->edit is the change, its reason and
 * amendment set; errors name the change's fields as "change.<field>". */
int api_parse_amendment(json_t *body, const struct exp_config *cfg, struct api_patch_req *out,
                        struct api_errors *e);

/* POST corrections: {"assignment_id", "reward", "reason"} (all required)
 * or {"corrections": [...]}; same contract as api_parse_rewards. */
struct api_correction_item {
    const char *assignment_id;
    double value; /* user units, within the reward range */
    const char *reason;
};
int api_parse_corrections(json_t *body, const struct exp_config *cfg, size_t max_batch,
                          struct api_correction_item **items, size_t *n, int *batch,
                          struct api_errors *e);

#endif
