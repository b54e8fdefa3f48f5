/*
 * webhooks.c — GET /v1/experiments/{id}/webhooks: the experiment's webhook
 * deliveries, newest first, as the outbox has them (notify/ delivers them;
 * docs/contract.md, Webhooks). A page is `limit` deliveries; `before` (a
 * delivery id, the previous page's next_before) pages back.
 */
#include "api/api.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/jsonv.h"
#include "notify/notify.h"

#define LIST_DEFAULT 20
#define LIST_MAX 100

static json_t *time_or_null(int64_t ms)
{
    char ts[CLOCK_RFC3339_LEN];
    if (ms <= 0)
        return json_null();
    clock_format_rfc3339(ms, ts, sizeof ts);
    return json_string(ts);
}

struct page {
    json_t *list;
    int64_t last_id;
    int n;
};

/* One delivery as the API shows it: never its secret. */
static int add_row(void *arg, const struct store_delivery *d)
{
    struct page *p = arg;
    int oom = 0;
    json_t *payload = d->body != NULL ? jv_loadb(d->body, strlen(d->body), 0, NULL, &oom) : NULL;
    if (oom)
        return STORE_ERR_NOMEM;
    json_t *j = json_pack(
        "{s:I,s:s?,s:s?,s:s?,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "id", (json_int_t)d->id, "event_id",
        d->event_id, "type", d->type, "url", d->url, "state", notify_state_name(d->state),
        "attempts", d->attempts, "created_at", time_or_null(d->created_ms), "last_attempt_at",
        time_or_null(d->last_ms), "next_attempt_at",
        d->state == STORE_OUTBOX_PENDING ? time_or_null(d->next_ms) : json_null(), "last_status",
        d->last_status > 0 ? json_integer(d->last_status) : json_null(), "last_error",
        d->last_error != NULL ? json_string(d->last_error) : json_null(), "payload",
        payload != NULL ? payload : json_null());
    if (j == NULL || json_array_append_new(p->list, j) != 0)
        return STORE_ERR_NOMEM;
    p->last_id = d->id;
    p->n++;
    return 0;
}

/* A positive integer query parameter within [1, max]; def when absent.
 * −1 when malformed. */
static long long query_int(struct http_req *r, const char *name, long long def, long long max)
{
    const char *v = http_req_query(r, name);
    if (v == NULL)
        return def;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || n < 1 || n > max)
        return -1;
    return n;
}

int api_webhooks_list(struct http_req *r)
{
    long long limit = query_int(r, "limit", LIST_DEFAULT, LIST_MAX);
    if (limit < 0)
        return http_reply_invalid(r, "limit", "must be an integer from 1 to 100");
    long long before = query_int(r, "before", INT64_MAX, INT64_MAX);
    if (before < 0)
        return http_reply_invalid(r, "before", "must be a delivery id (a positive integer)");
    struct exp *x = api_exp_find(r);
    if (x == NULL)
        return HTTP_DONE;
    if (api_blinded(r, x)) { /* the payloads hold per-arm means */
        exp_put(x);
        return api_reply_blinded(r);
    }
    int record = api_unblinded_read(r, x);
    char id[EXP_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", exp_id(x));
    /* the rowid never changes: no lock needed. The outbox holds committed
     * rows only, so nothing shown here can be taken back by a crash. */
    int64_t rowid = exp_rowid(x);
    exp_put(x);
    struct page p = {.list = json_array()};
    if (p.list == NULL)
        return http_reply_oom(r);
    int rc = store_outbox_list(exp_store(), rowid, before, (int)limit, add_row, &p);
    if (rc != STORE_OK) {
        json_decref(p.list);
        return rc == STORE_ERR_NOMEM ? http_reply_oom(r) : api_reply_store_error(r, rc);
    }
    json_t *j = json_pack("{s:o,s:o}", "deliveries", p.list, "next_before",
                          p.n == limit ? json_integer((json_int_t)p.last_id) : json_null());
    if (j == NULL)
        return http_reply_oom(r);
    if (!record)
        return http_reply_json(r, 200, j);
    struct api_join *jn = api_join_begin(r); /* answered once the read is recorded */
    if (jn == NULL) {
        json_decref(j);
        return HTTP_DONE;
    }
    api_join_record_read(jn, r, id, "webhooks");
    return api_join_finish(jn, 200, j);
}
