/*
 * blind.c — blinding by role (docs/contract.md, Clinical trials). An
 * experiment created with "design": {"blinded": true} shows its per-arm
 * figures (outcomes, means, intervals, allocation counts, which arm leads)
 * only to keys with scope unblinded or admin; a plain read key gets the
 * blinded view (totals, pending counts, whether and why it stopped), and
 * the routes that are per-arm through and through (export, webhook
 * deliveries) refuse it. Sites (assign, report) read nothing anyway. Each
 * unblinded read of a blinded experiment is logged with the key and the
 * request id. An open API (no key) has no roles to blind by.
 */
#include "api/api.h"

#include <string.h>

#include "api/auth.h"
#include "base/log.h"

int api_blinded(struct http_req *r, struct exp *x)
{
    if (!exp_cfg(x)->design_blinded || !auth_enabled())
        return 0;
    if (!(http_req_grant(r) & (API_SCOPE_ADMIN | API_SCOPE_UNBLINDED)))
        return 1;
    char actor[32 + HTTP_CALLER_NAME_MAX];
    api_actor(r, actor, sizeof actor);
    log_info("unblinded read of %s by %s (request %s)", exp_id(x), actor, http_req_request_id(r));
    return 0;
}

int api_reply_blinded(struct http_req *r)
{
    http_reply_header(
        r, "WWW-Authenticate",
        "Bearer realm=\"banditd\", error=\"insufficient_scope\", scope=\"unblinded\"");
    return http_reply_problem(
        r, 403,
        "this experiment is blinded: this endpoint needs an API key with scope unblinded (or "
        "admin)",
        NULL);
}

void api_blind_bandits(json_t *bandits)
{
    size_t i;
    json_t *b;
    json_array_foreach(bandits, i, b)
    {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(b, tmp, k, v)
        {
            if (strcmp(k, "id") != 0 && strcmp(k, "done") != 0)
                json_object_del(b, k);
        }
    }
}
