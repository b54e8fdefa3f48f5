/*
 * blind.c — blinding by role (docs/contract.md, Clinical trials). An
 * experiment created with "design": {"blinded": true} shows its per-arm
 * figures (outcomes, means, intervals, allocation counts, which arm leads)
 * only to keys with scope unblinded or admin; a plain read key gets the
 * blinded view (totals, pending counts, whether and why it stopped), and
 * the routes that are per-arm through and through (export, webhook
 * deliveries) refuse it; the list and /metrics drop its δᶜ (the strength
 * of the evidence so far is an interim result too). Sites (assign,
 * report) read nothing anyway. Each unblinded read of a blinded
 * experiment's per-arm figures (status, history, webhook deliveries) is a
 * record of the audit log, committed before the answer goes out (a read
 * the log cannot take is answered 503), and a log line; the list's and the
 * metrics' one figure is not (polled every few seconds by dashboards and
 * scrapers). An open API (no key) has no roles to blind by. The record is
 * written by common.c's joins (api_read_finish_as, api_join_record_read),
 * with the other commits a read waits for.
 */
#include "api/api.h"

#include <string.h>

#include "api/auth.h"

int api_sees_blinded(const struct http_req *r)
{
    return !auth_enabled() || (http_req_grant(r) & (API_SCOPE_ADMIN | API_SCOPE_UNBLINDED)) != 0;
}

int api_blinded(struct http_req *r, struct exp *x)
{
    return exp_cfg(x)->design_blinded && !api_sees_blinded(r);
}

int api_unblinded_read(struct http_req *r, struct exp *x)
{
    return exp_cfg(x)->design_blinded && auth_enabled() && api_sees_blinded(r);
}

int api_reply_blinded(struct http_req *r)
{
    auth_challenge_scope(r, API_SCOPE_UNBLINDED);
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
