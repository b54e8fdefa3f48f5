/*
 * api.h — the HTTP API: its routes, its endpoint handlers (one file per
 * endpoint group: parse, validate, apply, answer) and what they share.
 *
 * Handlers run on the transport's threads (http/http.h) and drive the
 * experiment runtime (exp/exp.h). A request that writes builds its events
 * in a write (api_write_begin), queues it (api_write_submit) and answers
 * with http_req_wait: the reply goes out only once the store committed the
 * write, or becomes a 503 problem if the commit failed. A 2xx therefore
 * always means on disk.
 *
 * Errors of the lower layers become HTTP statuses here, in common.c
 * (store and runtime errors, parse results); problem+json itself is the
 * transport's (http_reply_problem).
 */
#ifndef BANDITD_API_API_H
#define BANDITD_API_API_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "exp/exp.h"
#include "http/http.h"

/* Scopes of API keys (docs: Access). A route's `need` is one of them, with
 * API_SCOPE_IF_CONFIGURED added for routes that are open unless the daemon
 * is configured to close them (metrics-need-key for /metrics). */
enum api_scope {
    API_SCOPE_NONE = 0, /* open endpoints: health, openapi, dashboard */
    API_SCOPE_READ = 1u << 0,
    API_SCOPE_ASSIGN = 1u << 1,
    API_SCOPE_REPORT = 1u << 2,
    API_SCOPE_ADMIN = 1u << 3,
    API_SCOPE_IF_CONFIGURED = 1u << 4,
    /* Reads of a blinded experiment in full (docs/contract.md, Clinical
     * trials: the data monitoring committee); implies read. */
    API_SCOPE_UNBLINDED = 1u << 5,
};

/* The routing table (routes.c), terminated by a NULL method. */
extern const struct http_route api_routes[];

/* --- handlers ---------------------------------------------------------------------- */

int api_experiments_create(struct http_req *r);
int api_experiments_list(struct http_req *r);
int api_experiments_get(struct http_req *r);
int api_experiments_patch(struct http_req *r);
int api_experiments_delete(struct http_req *r);
int api_assignments_create(struct http_req *r);
int api_rewards_create(struct http_req *r);
int api_releases_create(struct http_req *r);
int api_served_create(struct http_req *r);
int api_observations_create(struct http_req *r);
int api_corrections_create(struct http_req *r);
int api_amendments_create(struct http_req *r);
int api_status_get(struct http_req *r);
int api_history_get(struct http_req *r);
int api_export_get(struct http_req *r);
int api_webhooks_list(struct http_req *r);
int api_policies_list(struct http_req *r);
int api_plan_create(struct http_req *r);
int api_oc_create(struct http_req *r);
int api_healthz(struct http_req *r);
int api_readyz(struct http_req *r);
int api_metrics_get(struct http_req *r);
int api_openapi_get(struct http_req *r);
/* The dashboard (web.c): the HTML shell at / and /experiments/{id}, assets
 * at /static/{name}; open routes, the page calls the API with a key. */
int api_web_page(struct http_req *r);
int api_web_static(struct http_req *r);

/* --- shared by handlers (common.c) ----------------------------------------------- */

/* Look up {id} and lock it, or reply 404/503 and return NULL. The caller
 * unlocks and puts (api_exp_unlock). */
struct exp *api_exp_lock(struct http_req *r);
/* The two halves of api_exp_lock: a reference to {id} (or 404 and NULL),
 * then lock and prepare it (0, or −1 after replying 404/503 and dropping
 * the reference). In between, exp_cfg() may be read: it never changes. */
struct exp *api_exp_find(struct http_req *r);
/* The body as JSON (http_req_json; borrowed) in *body, then api_exp_find:
 * NULL after replying 400 or 404. */
struct exp *api_exp_find_body(struct http_req *r, int empty_ok, json_t **body);
/* The body as JSON (borrowed) and a new, empty list for its errors (*errors,
 * the caller's), for a handler that validates a body naming no experiment;
 * NULL when the request is already answered (400, or 503 out of memory),
 * with *done the handler's return value. */
json_t *api_body_with_errors(struct http_req *r, json_t **errors, int *done);
int api_exp_enter(struct http_req *r, struct exp *x);
void api_exp_unlock(struct exp *x);

/* Whether r must get x's blinded view (blind.c): x was created blinded
 * ("design": {"blinded": true}), the API is closed and r's key has neither
 * unblinded nor admin. */
int api_blinded(struct http_req *r, struct exp *x);
/* Whether r reads blinded x in full (a read the audit log records). */
int api_unblinded_read(struct http_req *r, struct exp *x);
/* api_read_finish, and when what (the route: "status", "history") is not
 * NULL, the answer waits for the audit log's record of this unblinded
 * read of x too (503 if it cannot be written). Unlocks x. */
int api_read_finish_as(struct http_req *r, struct exp *x, unsigned status, json_t *body,
                       const char *what);
/* Whether r may see blinded experiments in full (an open API, or a key
 * with unblinded or admin); logs nothing. */
int api_sees_blinded(const struct http_req *r);
/* Refuse r a route a blinded caller may not see (403 naming the scope).
 * Returns HTTP_DONE. */
int api_reply_blinded(struct http_req *r);
/* The blinded view of a list of bandits (status, history): each keeps its
 * id and whether it is done, nothing per arm. */
void api_blind_bandits(json_t *bandits);

/* Experiment representation for GET, PATCH and create, as r may see it
 * (its design's changes blinded by api_blinded): new reference. Lock held. */
json_t *api_experiment_json(struct http_req *r, struct exp *x);

/* Reply to a failed parse: rc −1 is out of memory (503, errors dropped),
 * rc 1 a 400 with detail and errors (stolen). Returns HTTP_DONE. */
int api_reply_parse(struct http_req *r, int rc, json_t *errors, const char *detail);
struct api_errors;
/* The same for a request body parser's report (api/parse.h; its list is
 * taken), dropping the reference x (may be NULL) first. */
int api_reject(struct http_req *r, struct exp *x, int rc, struct api_errors *e);
/* The detail of a 503 for a store error (a literal). */
const char *api_store_detail(int store_err);
/* Reply 503 for a store error (full disk, I/O, shutting down). */
int api_reply_store_error(struct http_req *r, int store_err);

/* A write: the store events of one request, alive until its commit. */
struct api_write {
    struct exp_batch batch;
    struct http_req *req; /* held until the commit */
};
/* The audit trail's name of r's caller, "key:<id>:<name>" (the name may
 * be empty; ids are digits, so the first ':' after them ends the id),
 * written into buf (API_ACTOR_LEN bytes): buf, or NULL when r came without
 * a key (an open API, an open route). */
#define API_ACTOR_LEN (32 + HTTP_CALLER_NAME_MAX)
const char *api_actor(struct http_req *r, char buf[API_ACTOR_LEN]);
/* A new write for r (a hold on r taken), or NULL after replying 503. */
struct api_write *api_write_begin(struct http_req *r);
/* Lock and prepare x (api_exp_enter) and begin a write: NULL after
 * replying (x then unlocked and its reference dropped). */
struct api_write *api_write_enter(struct http_req *r, struct exp *x);
/* The same for its delete: a corrupt experiment may be deleted. */
struct api_write *api_write_enter_delete(struct http_req *r, struct exp *x);
/* After parsing a body (rc and e from a parser of api/parse.h): a write
 * on x as api_write_enter when rc is 0, else NULL after api_reject. e is
 * freed either way. */
struct api_write *api_write_accept(struct http_req *r, struct exp *x, int rc, struct api_errors *e);
/* Drop a write that was never submitted (releases the hold). */
void api_write_abandon(struct api_write *w);
/* Queue w for x (lock held; w may hold no event: the reply then waits for
 * x's earlier writes) and unlock x (dropping the caller's reference too).
 * Then stash the reply: body (stolen, may be NULL) or text (malloc'd,
 * stolen) with status; it goes out once w committed. On a refused
 * submission w is freed and a 503 goes out at once. Returns what the
 * handler returns. */
int api_write_finish(struct api_write *w, struct exp *x, unsigned status, json_t *body);
int api_write_finish_text(struct api_write *w, struct exp *x, unsigned status, char *text,
                          size_t len);
/* The completion of a write (store_done_fn; arg is its struct api_write):
 * answers the request, frees the write. */
void api_write_done(void *arg, int store_err);

/* Answers that show experiments go out only once every write of theirs
 * that the answer includes is on disk, so a reader never sees what a crash
 * or a failed commit could take back: a join waits for each experiment
 * added to it (an empty write queued behind its pending ones; nothing when
 * it has none), and fails with 503 if one of those writes failed. */
struct api_join;
/* A join for r (a hold taken), or NULL after replying 503. */
struct api_join *api_join_begin(struct http_req *r);
/* Wait for x's pending writes too (x locked). */
void api_join_add(struct api_join *j, struct exp *x);
/* Stash the reply (body stolen) until every write waited for completed. */
int api_join_finish(struct api_join *j, unsigned status, json_t *body);
/* Make j wait for a record of kind (enum store_audit_kind) about subject
 * in the audit log too, naming j's request's caller (exp_audit_record). */
void api_join_record(struct api_join *j, int kind, const char *subject, const char *detail);
/* api_join_record of an unblinded read of experiment id (what: the route),
 * and its log line (blind.c). */
void api_join_record_read(struct api_join *j, struct http_req *r, const char *id, const char *what);
/* Unlock x and answer with body (stolen) once x's writes are on disk: at
 * once when none is pending. */
int api_read_finish(struct http_req *r, struct exp *x, unsigned status, json_t *body);

#endif
