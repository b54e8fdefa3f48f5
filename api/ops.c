/*
 * ops.c — operational endpoints: /healthz (the process answers) and /readyz
 * (experiments loaded, storage writable).
 */
#include "api/api.h"

#include "server/http.h"

int api_healthz(struct api_req *r)
{
    return api_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

int api_readyz(struct api_req *r)
{
    if (!http_ready())
        return api_reply_problem(r, 503, "starting: experiments are being loaded", NULL);
    struct store_stats st;
    store_get_stats(exp_store(), &st);
    return api_reply_json(r, 200,
                          json_pack("{s:s,s:I,s:I}", "status", "ready", "experiments",
                                    (json_int_t)exp_count(), "queue_depth",
                                    (json_int_t)st.queue_depth));
}
