/*
 * rewards.c — POST /v1/experiments/{id}/rewards, /observations, and what
 * a client reports of the assignments it leased in a block:
 * /assignments/release (no visitor got them) and /assignments/served
 * (which unit got which).
 *
 * Rewards, releases and served share one handler (outcome_items): every
 * item of a batch is validated before any is applied (api/parse.c): a
 * batch with one bad item changes nothing and the 400 names each
 * offending field; a request none of whose items names an assignment of
 * the experiment is a 404 (nothing to record), otherwise each item has its
 * status, "unknown" included. A 200 is sent only after the batch's events are
 * committed — including when every item is a duplicate, since the first
 * report may itself still be on its way to disk. Replies are written as
 * text (api/jsonw.h): these are the hottest write paths.
 */
#include "api/api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonv.h"
#include "base/jsonw.h"
#include "api/parse.h"
#include "api/metrics.h"

/* Queue the write, unlock, and answer w's text once committed. */
static int finish(struct api_write *wr, struct exp *x, struct jw *w, unsigned status)
{
    size_t len = 0;
    char *text = jw_finish(w, &len);
    return api_write_finish_text(wr, x, status, text, len);
}

/* A list of assignments, each with an outcome (reward, release, served):
 * the parsed items, and what to do with each. */
struct outcome_kind {
    /* the body's parser (api/parse.h), its items as a new array */
    int (*parse)(json_t *body, const struct exp_config *cfg, size_t max_batch, void **items,
                 size_t *n, int *batch, struct api_errors *e);
    const char *list;    /* the batch's list: "releases" */
    const char *counted; /* the count of done items in the answer: "released" */
    /* apply item i to assignment id: a status code, named by name */
    int (*apply)(struct exp *x, struct exp_batch *b, const struct exp_aid *id, const void *items,
                 size_t i, int64_t now_ms);
    const char *(*name)(int status);
    const char *(*aid)(const void *items, size_t i);
    int done, duplicate, unknown; /* status codes */
    /* counts each item's status in /metrics, an id that names no
     * assignment included; NULL: not counted */
    void (*count)(int status);
};

/* Apply each of n items, then answer {"<counted>":N,"duplicates":N,
 * "results":[{"assignment_id","status"}]} once committed; 404 (nothing
 * written) when none names an assignment of x, as for rewards. */
static int apply_items(struct http_req *r, struct exp *x, struct api_write *wr,
                       const struct outcome_kind *k, const void *items, size_t n, int batch)
{
    struct jw items_w, w;
    size_t done = 0, duplicates = 0, unknown = 0;
    json_t *unknowns = json_array();
    jw_init(&items_w);
    for (size_t i = 0; i < n; i++) {
        const char *aid = k->aid(items, i);
        struct exp_aid id;
        int st = exp_parse_assignment_id(x, aid, &id) != 0
                     ? k->unknown
                     : k->apply(x, &wr->batch, &id, items, i, http_req_now_ms(r));
        if (st == k->unknown) {
            char field[64];
            if (batch)
                snprintf(field, sizeof field, "%s[%zu].assignment_id", k->list, i);
            else
                snprintf(field, sizeof field, "assignment_id");
            unknown++;
            jv_error(unknowns, field, "unknown");
        }
        if (k->count != NULL)
            k->count(st);
        done += st == k->done;
        duplicates += st == k->duplicate;
        if (i > 0)
            jw_lit(&items_w, ",");
        jw_lit(&items_w, "{\"assignment_id\":");
        jw_str(&items_w, aid);
        jw_lit(&items_w, ",\"status\":");
        jw_str(&items_w, k->name(st));
        jw_lit(&items_w, "}");
    }
    if (unknown == n) {
        api_exp_unlock(x);
        api_write_abandon(wr);
        jw_free(&items_w);
        return http_reply_problem(r, 404,
                                  n == 1 ? "no such assignment in this experiment"
                                         : "no assignment of this experiment in the batch",
                                  unknowns);
    }
    json_decref(unknowns);
    jw_init(&w);
    jw_lit(&w, "{\"");
    jw_raw(&w, k->counted, strlen(k->counted));
    jw_lit(&w, "\":");
    jw_int(&w, (long long)done);
    jw_lit(&w, ",\"duplicates\":");
    jw_int(&w, (long long)duplicates);
    jw_lit(&w, ",\"results\":[");
    jw_append(&w, &items_w);
    jw_lit(&w, "]}");
    jw_free(&items_w);
    return finish(wr, x, &w, 200);
}

static int release_one(struct exp *x, struct exp_batch *b, const struct exp_aid *id,
                       const void *items, size_t i, int64_t now)
{
    (void)items;
    (void)i;
    return (int)exp_ev_release_id(x, b, id, now);
}

static const char *release_name(int st)
{
    return exp_release_status_name((enum exp_release_status)st);
}

static const char *release_aid(const void *items, size_t i)
{
    return ((const struct api_release_item *)items)[i].assignment_id;
}

static int serve_one(struct exp *x, struct exp_batch *b, const struct exp_aid *id,
                     const void *items, size_t i, int64_t now)
{
    return (int)exp_ev_bind_id(x, b, id, ((const struct api_served_item *)items)[i].unit, now);
}

static const char *serve_name(int st)
{
    return exp_bind_status_name((enum exp_bind_status)st);
}

static const char *serve_aid(const void *items, size_t i)
{
    return ((const struct api_served_item *)items)[i].assignment_id;
}

/* POST a list of assignments with their outcome k: parse, apply, answer. */
static int outcome_items(struct http_req *r, const struct outcome_kind *k)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 0, &body);
    if (x == NULL)
        return HTTP_DONE;
    void *items = NULL;
    size_t n = 0;
    int batch = 0;
    struct api_errors pe;
    int rc = k->parse(body, exp_cfg(x), exp_limits()->max_batch, &items, &n, &batch,
                      api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, rc, &pe);
    if (wr == NULL) {
        free(items);
        return HTTP_DONE;
    }
    int ret = apply_items(r, x, wr, k, items, n, batch);
    free(items);
    return ret;
}

/* The typed parsers, their items handed over as void * (new arrays). */
static int parse_releases(json_t *body, const struct exp_config *cfg, size_t max_batch,
                          void **items, size_t *n, int *batch, struct api_errors *e)
{
    struct api_release_item *it = NULL;
    int rc = api_parse_releases(body, cfg, max_batch, &it, n, batch, e);
    *items = it;
    return rc;
}

static int parse_served(json_t *body, const struct exp_config *cfg, size_t max_batch, void **items,
                        size_t *n, int *batch, struct api_errors *e)
{
    struct api_served_item *it = NULL;
    int rc = api_parse_served(body, cfg, max_batch, &it, n, batch, e);
    *items = it;
    return rc;
}

static int reward_one(struct exp *x, struct exp_batch *b, const struct exp_aid *id,
                      const void *items, size_t i, int64_t now)
{
    enum exp_reward_status st =
        exp_ev_reward_id(x, b, id, ((const struct api_reward_item *)items)[i].value, now);
    return (int)st;
}

static void reward_count(int st)
{
    metrics_reward((enum exp_reward_status)st);
}

static const char *reward_name(int st)
{
    return exp_reward_status_name((enum exp_reward_status)st);
}

static const char *reward_aid(const void *items, size_t i)
{
    return ((const struct api_reward_item *)items)[i].assignment_id;
}

static int parse_rewards(json_t *body, const struct exp_config *cfg, size_t max_batch, void **items,
                         size_t *n, int *batch, struct api_errors *e)
{
    struct api_reward_item *it = NULL;
    int rc = api_parse_rewards(body, cfg, max_batch, &it, n, batch, e);
    *items = it;
    return rc;
}

/* EXP_R_ERROR (a storage read failed): what was applied so far is still
 * written and reported. */
int api_rewards_create(struct http_req *r)
{
    static const struct outcome_kind kind = {
        parse_rewards, "rewards",      "accepted",      reward_one,    reward_name,
        reward_aid,    EXP_R_ACCEPTED, EXP_R_DUPLICATE, EXP_R_UNKNOWN, reward_count};
    return outcome_items(r, &kind);
}

int api_releases_create(struct http_req *r)
{
    static const struct outcome_kind kind = {
        parse_releases, "releases",     "released",      release_one,   release_name,
        release_aid,    EXP_L_RELEASED, EXP_L_DUPLICATE, EXP_L_UNKNOWN, NULL};
    return outcome_items(r, &kind);
}

int api_served_create(struct http_req *r)
{
    static const struct outcome_kind kind = {parse_served,  "served",  "bound",     serve_one,
                                             serve_name,    serve_aid, EXP_B_BOUND, EXP_B_DUPLICATE,
                                             EXP_B_UNKNOWN, NULL};
    return outcome_items(r, &kind);
}

int api_observations_create(struct http_req *r)
{
    json_t *body;
    struct exp *x = api_exp_find_body(r, 0, &body);
    if (x == NULL)
        return HTTP_DONE;
    struct api_observation_item *items = NULL;
    size_t n = 0;
    struct api_errors pe;
    int rc = api_parse_observations(body, exp_cfg(x), exp_limits()->max_batch, &items, &n,
                                    api_errors_init(&pe));
    struct api_write *wr = api_write_accept(r, x, rc, &pe);
    if (wr == NULL) {
        free(items);
        return HTTP_DONE;
    }
    size_t done = 0;
    for (; done < n; done++)
        if (exp_ev_observe(x, &wr->batch, (size_t)items[done].bandit, (size_t)items[done].arm,
                           items[done].value, http_req_now_ms(r)) != EXP_OK)
            break; /* out of memory: report what was recorded */
    free(items);
    metrics_observations(done);
    struct jw w;
    jw_init(&w);
    jw_lit(&w, "{\"accepted\":");
    jw_int(&w, (long long)done);
    jw_lit(&w, "}");
    return finish(wr, x, &w, 200);
}
