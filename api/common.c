/*
 * common.c — what several endpoint files share: finding and locking the
 * experiment a request names, and its JSON representation.
 */
#include "api/api.h"

#include <math.h>
#include <stdio.h>

#include "api/jsonutil.h"
#include "base/clock.h"

struct exp *api_exp_find(struct api_req *r)
{
    const char *id = api_req_id(r);
    struct exp *x = id != NULL ? exp_get(id) : NULL;
    if (x == NULL) {
        char detail[128];
        snprintf(detail, sizeof detail, "no experiment \"%s\"", id ? id : "");
        api_reply_problem(r, 404, detail, NULL);
    }
    return x;
}

int api_exp_enter(struct api_req *r, struct exp *x)
{
    exp_lock(x);
    int rc = exp_prepare_locked(x, api_req_now_ms(r));
    if (rc == EXP_OK)
        return 0;
    exp_unlock(x);
    exp_put(x);
    if (rc == EXP_ERR_GONE)
        api_reply_problem(r, 404, "the experiment was deleted", NULL);
    else
        api_reply_problem(r, 503, "the experiment cannot be read from storage; retry later", NULL);
    return -1;
}

struct exp *api_exp_lock(struct api_req *r)
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

static const char *state_name(enum exp_state s)
{
    static const char *const names[] = {"running", "paused", "stopped"};
    return names[s];
}

const char *api_stop_reason(struct exp *x)
{
    switch (engine_stop_reason(exp_engine(x))) {
    case ENGINE_STOPPED_CONFIDENCE:
        return "confidence";
    case ENGINE_STOPPED_BUDGET:
        return "budget";
    case ENGINE_STOPPED_MANUAL:
        return "manual";
    case ENGINE_STOPPED_POLICY:
        return "policy";
    default:
        return NULL;
    }
}

const char *api_state_name(struct exp *x)
{
    return state_name(exp_get_state(x));
}

json_t *api_experiment_json(struct exp *x)
{
    json_t *j = json_deep_copy(exp_cfg(x)->json);
    if (j == NULL)
        return NULL;
    struct engine *e = exp_engine(x);
    const char *reason = api_stop_reason(x);
    char ts[40];
    clock_format_rfc3339(exp_created_ms(x), ts, sizeof ts);
    json_object_set_new(j, "state", json_string(api_state_name(x)));
    json_object_set_new(j, "stopped", json_boolean(engine_stopped(e)));
    json_object_set_new(j, "stop_reason", reason ? json_string(reason) : json_null());
    json_object_set_new(j, "created_at", json_string(ts));
    json_object_set_new(j, "pulls", json_integer((json_int_t)engine_pulls(e)));
    json_object_set_new(j, "pending", json_integer((json_int_t)engine_pending(e)));
    return j;
}
