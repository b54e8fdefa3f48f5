/*
 * common.c — what several endpoint files share: finding and locking the
 * experiment a request names, writes that answer once committed, the
 * experiment's JSON representation, and the one place where the lower
 * layers' errors (store, runtime, parse results) become HTTP statuses.
 */
#include "api/api.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/parse.h"
#include "base/clock.h"
#include "base/log.h"

struct exp *api_exp_find(struct http_req *r)
{
    const char *id = http_req_id(r);
    struct exp *x = id != NULL ? exp_get(id) : NULL;
    if (x == NULL) {
        char detail[128];
        snprintf(detail, sizeof detail, "no experiment \"%s\"", id ? id : "");
        http_reply_problem(r, 404, detail, NULL);
    }
    return x;
}

json_t *api_body_with_errors(struct http_req *r, json_t **errors, int *done)
{
    json_t *body = http_req_json(r, 0);
    if (body == NULL) {
        *done = HTTP_DONE;
        return NULL;
    }
    *errors = json_array();
    if (*errors == NULL) {
        *done = http_reply_oom(r);
        return NULL;
    }
    return body;
}

struct exp *api_exp_find_body(struct http_req *r, int empty_ok, json_t **body)
{
    *body = http_req_json(r, empty_ok);
    return *body != NULL ? api_exp_find(r) : NULL;
}

/* Lock and prepare x; corrupt_ok lets a corrupt experiment through (its
 * delete). */
static int enter(struct http_req *r, struct exp *x, int corrupt_ok)
{
    exp_lock(x);
    int rc = exp_prepare_locked(x, http_req_now_ms(r));
    if (rc == EXP_OK || (rc == EXP_ERR_CORRUPT && corrupt_ok))
        return 0;
    char detail[384];
    if (rc == EXP_ERR_CORRUPT)
        snprintf(detail, sizeof detail,
                 "experiment \"%s\" cannot be served: %s; an operator must restore it from a "
                 "backup or delete it",
                 exp_id(x), exp_corrupt(x));
    /* Another daemon owns it (several daemons on one PostgreSQL): 503, so
     * that a proxy tries the next daemon or the client retries, naming the
     * owner in Banditd-Owner; the experiment is taken over once its owner
     * stops (docs/operations.md, Several daemons). */
    if (rc == EXP_ERR_NOTOWNER) {
        snprintf(detail, sizeof detail,
                 "experiment \"%s\" is served by another daemon (%s); retry, through the load "
                 "balancer or there: it is taken over if that daemon stops",
                 exp_id(x), exp_owner(x)[0] ? exp_owner(x) : "address unknown");
        if (exp_owner(x)[0])
            http_reply_header(r, "Banditd-Owner", exp_owner(x));
    }
    exp_unlock(x);
    exp_put(x);
    if (rc == EXP_ERR_GONE)
        http_reply_problem(r, 404, "the experiment was deleted", NULL);
    else if (rc == EXP_ERR_CORRUPT)
        http_reply_problem_as(r, "corrupt-log", detail, NULL);
    else if (rc == EXP_ERR_NOTOWNER)
        http_reply_problem(r, 503, detail, NULL);
    else
        http_reply_problem(r, 503, "the experiment cannot be read from storage; retry later", NULL);
    return -1;
}

int api_exp_enter(struct http_req *r, struct exp *x)
{
    return enter(r, x, 0);
}

struct exp *api_exp_lock(struct http_req *r)
{
    struct exp *x = api_exp_find(r);
    if (x == NULL || api_exp_enter(r, x) != 0)
        return NULL;
    return x;
}

void api_exp_unlock(struct exp *x)
{
    exp_unlock(x);
    exp_put(x);
}

json_t *api_experiment_json(struct http_req *r, struct exp *x)
{
    json_t *j = json_deep_copy(exp_cfg(x)->json);
    if (j == NULL)
        return NULL;
    struct engine *e = exp_engine(x);
    const char *reason = exp_stop_reason(x);
    char ts[CLOCK_RFC3339_LEN];
    clock_format_rfc3339(exp_created_ms(x), ts, sizeof ts);
    /* What edits changed (exp_ev_edit): the values now, not as created. */
    json_object_set_new(j, "name", json_string(exp_name(x)));
    json_object_set_new(j, "assignment_ttl_s", json_integer((json_int_t)exp_ttl_s(x)));
    json_t *goal = json_object_get(j, "goal");
    if (goal != NULL)
        json_object_set_new(goal, "budget",
                            exp_budget(x) ? json_integer((json_int_t)exp_budget(x)) : json_null());
    json_object_set_new(j, "edits", json_integer((json_int_t)exp_edits(x)));
    json_object_set_new(j, "design_hash", json_string(exp_design_hash(x)));
    json_object_set_new(j, "design", exp_design_json(x, api_blinded(r, x)));
    json_object_set_new(j, "state", json_string(exp_state_name(exp_get_state(x))));
    json_object_set_new(j, "stopped", json_boolean(engine_stopped(e)));
    json_object_set_new(j, "stop_reason", reason ? json_string(reason) : json_null());
    json_object_set_new(j, "created_at", json_string(ts));
    json_object_set_new(j, "pulls", json_integer((json_int_t)engine_pulls(e)));
    json_object_set_new(j, "pending", json_integer((json_int_t)engine_pending(e)));
    return j;
}

/* --- errors of the lower layers ------------------------------------------------------ */

int api_reply_parse(struct http_req *r, int rc, json_t *errors, const char *detail)
{
    if (rc < 0) {
        json_decref(errors);
        return http_reply_oom(r);
    }
    return http_reply_problem(r, 400, detail, errors);
}

int api_reject(struct http_req *r, struct exp *x, int rc, struct api_errors *e)
{
    exp_put(x);
    json_t *list = e->list;
    e->list = NULL;
    return api_reply_parse(r, rc, list, e->detail);
}

const char *api_store_detail(int store_err)
{
    switch (store_err) {
    case STORE_ERR_FULL:
        return "storage is unavailable (full, read-only or unreachable); nothing was recorded, "
               "retry later";
    case STORE_ERR_CLOSED:
        return "the server is shutting down; nothing was recorded";
    case STORE_ERR_NOMEM:
        return "out of memory; nothing was recorded";
    default:
        return "storage error; nothing was recorded, retry later";
    }
}

int api_reply_store_error(struct http_req *r, int store_err)
{
    return http_reply_problem(r, 503, api_store_detail(store_err), NULL);
}

/* --- writes that answer once committed ------------------------------------------------ */

const char *api_actor(struct http_req *r, char buf[API_ACTOR_LEN])
{
    if (http_req_caller(r) <= 0)
        return NULL;
    snprintf(buf, API_ACTOR_LEN, "key:%" PRId64 ":%s", http_req_caller(r), http_req_caller_name(r));
    return buf;
}

struct api_write *api_write_begin(struct http_req *r)
{
    struct api_write *w = malloc(sizeof *w);
    if (w == NULL) {
        http_reply_oom(r);
        return NULL;
    }
    exp_batch_init(&w->batch);
    /* The audit trail: who asked, and which request (exp/audit.c). */
    char actor[API_ACTOR_LEN];
    if (exp_batch_caller(&w->batch, api_actor(r, actor), http_req_request_id(r)) != 0) {
        free(w);
        http_reply_oom(r);
        return NULL;
    }
    w->req = http_req_hold(r);
    return w;
}

static struct api_write *write_enter(struct http_req *r, struct exp *x, int corrupt_ok)
{
    if (enter(r, x, corrupt_ok) != 0)
        return NULL;
    struct api_write *w = api_write_begin(r);
    if (w == NULL)
        api_exp_unlock(x);
    return w;
}

struct api_write *api_write_enter(struct http_req *r, struct exp *x)
{
    return write_enter(r, x, 0);
}

struct api_write *api_write_enter_delete(struct http_req *r, struct exp *x)
{
    return write_enter(r, x, 1);
}

struct api_write *api_write_accept(struct http_req *r, struct exp *x, int rc, struct api_errors *e)
{
    if (rc != 0) {
        api_reject(r, x, rc, e);
        return NULL;
    }
    api_errors_free(e);
    return api_write_enter(r, x);
}

void api_write_abandon(struct api_write *w)
{
    if (w == NULL)
        return;
    http_req_release(w->req);
    exp_batch_free(&w->batch);
    free(w);
}

void api_write_done(void *arg, int store_err)
{
    struct api_write *w = arg;
    struct http_req *r = w->req;
    exp_batch_free(&w->batch);
    free(w);
    http_req_complete(r, store_err == STORE_OK ? 0 : 503,
                      store_err == STORE_OK ? NULL : api_store_detail(store_err));
}

struct api_join {
    struct exp_batch empty; /* shared by every submission: holds no op */
    atomic_uint left;       /* submissions not completed, + 1 until finish */
    atomic_int err;         /* a failed one's store error */
    struct http_req *req;   /* held */
};

static void join_done(void *arg, int err)
{
    struct api_join *j = arg;
    if (err != STORE_OK)
        atomic_store(&j->err, err);
    if (atomic_fetch_sub(&j->left, 1) != 1)
        return;
    int e = atomic_load(&j->err);
    struct http_req *r = j->req;
    free(j);
    http_req_complete(r, e != STORE_OK ? 503 : 0, e != STORE_OK ? api_store_detail(e) : NULL);
}

struct api_join *api_join_begin(struct http_req *r)
{
    struct api_join *j = calloc(1, sizeof *j);
    if (j == NULL) {
        http_reply_oom(r);
        return NULL;
    }
    exp_batch_init(&j->empty);
    atomic_init(&j->left, 1);
    atomic_init(&j->err, STORE_OK);
    j->req = http_req_hold(r);
    return j;
}

void api_join_add(struct api_join *j, struct exp *x)
{
    if (!exp_writes_pending(x))
        return;
    atomic_fetch_add(&j->left, 1);
    int rc = exp_submit_locked(x, &j->empty, join_done, j);
    if (rc != STORE_OK) {
        /* not queued: counts as failed; the count does not reach 0 here
         * (the reference taken by api_join_begin is held until finish) */
        atomic_store(&j->err, rc);
        atomic_fetch_sub(&j->left, 1);
    }
}

void api_join_record(struct api_join *j, int kind, const char *subject, const char *detail)
{
    char actor[API_ACTOR_LEN];
    atomic_fetch_add(&j->left, 1);
    int rc = exp_audit_record(kind, subject, detail, api_actor(j->req, actor),
                              http_req_request_id(j->req), join_done, j);
    if (rc != STORE_OK) { /* as api_join_add's */
        atomic_store(&j->err, rc);
        atomic_fetch_sub(&j->left, 1);
    }
}

int api_join_finish(struct api_join *j, unsigned status, json_t *body)
{
    struct http_req *r = j->req;
    join_done(j, STORE_OK); /* the reference held while adding */
    return http_req_wait(r, status, body);
}

int api_read_finish(struct http_req *r, struct exp *x, unsigned status, json_t *body)
{
    if (!exp_writes_pending(x)) {
        api_exp_unlock(x);
        return http_reply_json(r, status, body);
    }
    struct api_join *j = api_join_begin(r);
    if (j != NULL)
        api_join_add(j, x);
    api_exp_unlock(x);
    if (j == NULL) {
        json_decref(body);
        return HTTP_DONE;
    }
    return api_join_finish(j, status, body);
}

void api_join_record_read(struct api_join *j, struct http_req *r, const char *id, const char *what)
{
    char actor[API_ACTOR_LEN];
    const char *who = api_actor(r, actor);
    log_info("unblinded read of %s (%s) by %s (request %s)", id, what,
             who != NULL ? who : "a caller without a key", http_req_request_id(r));
    api_join_record(j, STORE_AUDIT_UNBLINDED, id, what);
}

int api_read_finish_as(struct http_req *r, struct exp *x, unsigned status, json_t *body,
                       const char *what)
{
    if (what == NULL)
        return api_read_finish(r, x, status, body);
    struct api_join *j = api_join_begin(r);
    if (j != NULL) {
        api_join_add(j, x);
        api_join_record_read(j, r, exp_id(x), what);
    }
    api_exp_unlock(x);
    if (j == NULL) {
        json_decref(body);
        return HTTP_DONE;
    }
    return api_join_finish(j, status, body);
}

/* Queue w for x and unlock x: 0, or the store's refusal (w freed). */
static int submit(struct api_write *w, struct exp *x)
{
    int rc = exp_submit_locked(x, &w->batch, api_write_done, w);
    api_exp_unlock(x);
    if (rc != STORE_OK)
        api_write_abandon(w);
    return rc;
}

int api_write_finish(struct api_write *w, struct exp *x, unsigned status, json_t *body)
{
    struct http_req *r = w->req;
    int rc = submit(w, x);
    if (rc != STORE_OK) {
        json_decref(body);
        return api_reply_store_error(r, rc);
    }
    return http_req_wait(r, status, body);
}

int api_write_finish_text(struct api_write *w, struct exp *x, unsigned status, char *text,
                          size_t len)
{
    struct http_req *r = w->req;
    int rc = submit(w, x);
    if (rc != STORE_OK) {
        free(text);
        return api_reply_store_error(r, rc);
    }
    return http_req_wait_text(r, status, text, len);
}
