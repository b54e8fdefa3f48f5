/*
 * api.h — what an endpoint handler sees of an HTTP request, and the
 * handlers themselves (one file per endpoint group in api/).
 *
 * A handler parses and validates its request, applies it, and either queues
 * a reply (API_DONE) or, when the request wrote something, hands the reply to
 * api_req_wait and returns API_SUSPENDED: the connection is suspended (no
 * pool thread waits) and the reply goes out once the store committed the
 * write, or becomes a 503 problem if the commit failed. A 2xx therefore
 * always means on disk.
 *
 * Errors become HTTP statuses in one place: api_reply_problem (problem.c).
 */
#ifndef BANDITD_API_API_H
#define BANDITD_API_API_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/experiment.h"

struct api_req; /* defined by server/http.c */

enum api_rc {
    API_DONE = 0,      /* a reply is queued */
    API_SUSPENDED = 1, /* waiting for a write; the reply is stashed */
};

/* Scopes (CONTRACT.md, Access). */
enum api_scope {
    API_SCOPE_NONE = 0, /* open endpoints: health, openapi, dashboard */
    API_SCOPE_READ = 1u << 0,
    API_SCOPE_ASSIGN = 1u << 1,
    API_SCOPE_REPORT = 1u << 2,
    API_SCOPE_ADMIN = 1u << 3,
    /* Added to a scope: the route is open unless the daemon is configured to
     * close it (metrics-need-key for /metrics). */
    API_SCOPE_IF_CONFIGURED = 1u << 4,
};

/* --- request accessors (borrowed strings, valid for the request) --------- */
const char *api_req_method(const struct api_req *r);
const char *api_req_path(const struct api_req *r);
/* The {id} of the route, or NULL. */
const char *api_req_id(const struct api_req *r);
const char *api_req_query(const struct api_req *r, const char *key);
const char *api_req_header(const struct api_req *r, const char *name);
int64_t api_req_now_ms(const struct api_req *r);
/* Scopes the caller's key grants (all when no key exists). */
unsigned api_req_scopes(const struct api_req *r);

/* The body as JSON (a borrowed reference, owned by the request). An empty
 * body reads as {} when empty_ok. On malformed JSON replies 400 itself and
 * returns NULL (the handler returns API_DONE). */
json_t *api_req_json(struct api_req *r, int empty_ok);

/* The batch of store writes this request builds (owned by the request, kept
 * alive until the write completes). */
struct exp_batch *api_req_batch(struct api_req *r);

/* --- replies ------------------------------------------------------------------- */

/* Add a header to the reply about to be sent (copied). */
void api_reply_header(struct api_req *r, const char *name, const char *value);
/* JSON reply; body is stolen. Always returns API_DONE. */
int api_reply_json(struct api_req *r, unsigned status, json_t *body);
/* JSON text reply (api/jsonw.h; malloc'd, stolen; NULL: out of memory, 503). */
int api_reply_text(struct api_req *r, unsigned status, char *text, size_t len);
/* Raw reply; body (malloc'd) is stolen. */
int api_reply_raw(struct api_req *r, unsigned status, const char *content_type, char *body,
                  size_t len);
/* Reply from a buffer that outlives the server (embedded assets): sent
 * without a copy, never freed. */
int api_reply_static(struct api_req *r, unsigned status, const char *content_type,
                     const void *body, size_t len);
/* Empty reply (204, 304). */
int api_reply_empty(struct api_req *r, unsigned status);
/* Streamed reply: reader(cls, pos, buf, max) as MHD's content reader; free
 * called at the end. */
int api_reply_stream(struct api_req *r, unsigned status, const char *content_type,
                     long (*reader)(void *cls, uint64_t pos, char *buf, size_t max), void *cls,
                     void (*free_cls)(void *cls));

/* problem+json (RFC 9457): type, title, status, detail and, when errors is
 * given (stolen), the list of {"field", "message"}. */
int api_reply_problem(struct api_req *r, unsigned status, const char *detail, json_t *errors);
/* Convenience: one offending field. */
int api_reply_invalid(struct api_req *r, const char *field, const char *message);
/* The problem document itself (new reference), for the HTTP layer's own
 * errors (404, 405, 413, 415...). */
json_t *api_problem(unsigned status, const char *detail, json_t *errors);

/* --- writes ----------------------------------------------------------------------- */

/* Queue the request's batch (api_req_batch) for experiment x, whose lock
 * the caller holds; on STORE_OK the request must then api_req_wait. */
int api_req_submit(struct api_req *r, struct exp *x);
/* exp_create with this request waiting for the commit; same contract. */
int api_req_create(struct api_req *r, struct exp_config *cfg, struct exp **out);
/* exp_delete_locked with this request waiting for the commit. */
int api_req_delete(struct api_req *r, struct exp *x);
/* Completion callback used by the three above (store_done_fn). */
void api_req_write_done(void *req, int store_err);
/* Stash the reply (body stolen) for when the write completes; suspend.
 * Returns API_SUSPENDED (or API_DONE when the write already completed). */
int api_req_wait(struct api_req *r, unsigned status, json_t *body);
/* api_req_wait with the body already serialised (JSON text from api/jsonw.h,
 * malloc'd, stolen; NULL means out of memory and becomes a 503). */
int api_req_wait_text(struct api_req *r, unsigned status, char *text, size_t len);
/* Reply 503 for a store error (full disk, I/O) or 500. */
int api_reply_store_error(struct api_req *r, int store_err);

/* --- handlers (route table in server/routes.c) --------------------------------- */
typedef int (*api_handler_fn)(struct api_req *r);

int api_experiments_create(struct api_req *r);
int api_experiments_list(struct api_req *r);
int api_experiments_get(struct api_req *r);
int api_experiments_patch(struct api_req *r);
int api_experiments_delete(struct api_req *r);
int api_assignments_create(struct api_req *r);
int api_rewards_create(struct api_req *r);
int api_observations_create(struct api_req *r);
int api_status_get(struct api_req *r);
int api_history_get(struct api_req *r);
int api_export_get(struct api_req *r);
int api_policies_list(struct api_req *r);
int api_healthz(struct api_req *r);
int api_readyz(struct api_req *r);
int api_metrics_get(struct api_req *r);
int api_openapi_get(struct api_req *r);

/* Shared by handlers: look up {id} and lock it, or reply 404/503 and return
 * NULL. The caller unlocks and puts. */
struct exp *api_exp_lock(struct api_req *r);
/* The two halves of api_exp_lock: a reference to {id} (or 404 and NULL),
 * then lock and prepare it (0, or −1 after replying 404/503 and dropping
 * the reference). In between, exp_cfg() may be read: it never changes. */
struct exp *api_exp_find(struct api_req *r);
int api_exp_enter(struct api_req *r, struct exp *x);
void api_exp_unlock(struct exp *x);

/* "confidence" | "budget" | "manual" | "policy", or NULL while running. */
const char *api_stop_reason(struct exp *x);
/* "running" | "paused" | "stopped". */
const char *api_state_name(struct exp *x);

/* Experiment representation for GET/list/create: new reference. Lock held. */
json_t *api_experiment_json(struct exp *x);

/* The dashboard (web.c): the HTML shell at / and /experiments/{id}, assets
 * at /static/{name}; open routes, the page calls the API with a key. */
int api_web_page(struct api_req *r);
int api_web_static(struct api_req *r);

#endif
