/*
 * ops.c — operational endpoints: /healthz (the process answers), /readyz
 * (experiments loaded, storage writable), /metrics and /openapi.json.
 */
#include "api/api.h"

#include <stdlib.h>
#include <string.h>

#include "api/openapi.h"
#include "api/metrics.h"

int api_healthz(struct http_req *r)
{
    return http_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

int api_readyz(struct http_req *r)
{
    if (!http_ready())
        return http_reply_problem(r, 503, "starting: experiments are being loaded", NULL);
    struct store_stats st;
    store_get_stats(exp_store(), &st);
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
    if (metrics_render(exp_store(), &text, &len) != 0)
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
