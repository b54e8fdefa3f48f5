/*
 * ops.c — operational endpoints: /healthz (the process answers), /readyz
 * (experiments loaded, storage writable), /metrics and /openapi.json.
 */
#include "api/api.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/openapi.h"
#include "api/metrics.h"

int api_healthz(struct http_req *r)
{
    return http_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* A probe write (at most one at a time, one a second) while writes fail:
 * the next readiness check sees whether the disk takes writes again, even
 * when no traffic comes because the load balancer took us out. */
static atomic_int g_probing;
static atomic_llong g_probe_ms;
static struct store_op g_probe_op = {.kind = STORE_OP_PROBE};

static void probe_done(void *arg, int err)
{
    (void)arg;
    (void)err; /* the store's writes_failing says it */
    atomic_store(&g_probing, 0);
}

static void probe(int64_t now_ms)
{
    if (now_ms - atomic_load(&g_probe_ms) < 1000 || atomic_exchange(&g_probing, 1))
        return;
    atomic_store(&g_probe_ms, (long long)now_ms);
    if (store_submit(exp_store(), &g_probe_op, 1, probe_done, NULL) != STORE_OK)
        atomic_store(&g_probing, 0);
}

int api_readyz(struct http_req *r)
{
    if (!http_ready())
        return http_reply_problem(r, 503, "starting: experiments are being loaded", NULL);
    struct store_stats st;
    store_get_stats(exp_store(), &st);
    if (st.writes_failing) {
        probe(http_req_now_ms(r));
        return http_reply_problem(r, 503,
                                  "storage refuses writes (full disk or I/O errors); reads are "
                                  "served, writes answer 503",
                                  NULL);
    }
    return http_reply_json(r, 200,
                           json_pack("{s:s,s:I,s:I}", "status", "ready", "experiments",
                                     (json_int_t)exp_count(), "queue_depth",
                                     (json_int_t)st.queue_depth));
}

/* GET /metrics: Prometheus text exposition (metrics.c). */
int api_metrics_get(struct http_req *r)
{
    char *text = NULL;
    size_t len = 0;
    if (metrics_render(exp_store(), api_sees_blinded(r), &text, &len) != 0)
        return http_reply_oom(r);
    return http_reply_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

/* GET /openapi.json: the compiled-in document (a copy: replies own their
 * buffer). */
int api_openapi_get(struct http_req *r)
{
    char *copy = malloc(api_openapi_json_len + 1);
    if (copy == NULL)
        return http_reply_oom(r);
    memcpy(copy, api_openapi_json, api_openapi_json_len + 1);
    return http_reply_raw(r, 200, "application/json", copy, api_openapi_json_len);
}
