/*
 * targets.c — fuzz target bodies (targets.h).
 *
 * The request-body targets validate against one fixed experiment with two
 * bandits of three arms and a reward range of [-1, 5], created once through
 * exp_config_parse, so that every path of the item validators (bandit and
 * arm lookups, range checks) is reachable.
 */
#include "tests/fuzz/targets.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "exp/exp.h"
#include "api/parse.h"
#include "policies/engine.h"
#include "sim/sim.h"

static struct exp_config g_cfg;
static int g_ready;

/* Limits as the daemon's defaults (server/config.c). */
static void init_once(void)
{
    if (g_ready)
        return;
    struct exp_limits lim = {.max_experiments = 10000,
                             .max_bandits = 256,
                             .max_arms = 1024,
                             .max_batch = 1000,
                             .max_count = 100,
                             .max_pending = 1000000,
                             .history_points = 256};
    exp_registry_init(NULL, &lim);
    json_t *j = json_loads("{\"id\":\"fz\",\"policy\":{\"name\":\"uniform\"},"
                           "\"goal\":{\"budget\":1000},\"reward\":{\"min\":-1,\"max\":5},"
                           "\"bandits\":[{\"id\":\"x\",\"arms\":[\"a\",\"b\",\"c\"]},"
                           "{\"id\":\"y\",\"arms\":[\"d\",\"e\",\"f\"]}]}",
                           0, NULL);
    json_t *errors = json_array();
    if (j == NULL || errors == NULL || exp_config_parse(j, exp_limits(), &g_cfg, errors) != 0)
        abort(); /* the fixture itself must be valid */
    json_decref(j);
    json_decref(errors);
    g_ready = 1;
}

/* The body as http_req_json reads it; NULL when it is not JSON. */
static json_t *load(const uint8_t *data, size_t size)
{
    json_error_t err;
    return json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
}

int fuzz_expconfig(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    json_t *errors = json_array();
    struct exp_config cfg;
    int rc = exp_config_parse(body, exp_limits(), &cfg, errors);
    if (rc == 0) {
        /* what creation does next: build the engine and serialise */
        char err[256];
        cfg.engine.n_arms = cfg.n_arms;
        cfg.engine.control_arm = cfg.control_arm;
        struct engine *e = engine_create(&cfg.engine, err, sizeof err);
        if (e != NULL) {
            struct engine_pull p;
            engine_assign(e, -1, &p);
            engine_free(e);
        }
        char *text = json_dumps(cfg.json, JSON_COMPACT | JSON_SORT_KEYS);
        free(text);
    }
    exp_config_free(&cfg);
    json_decref(errors);
    json_decref(body);
    return 0;
}

int fuzz_assignment(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_assign_req req;
    int rc = api_parse_assignment(body, &g_cfg, 100, &req, api_errors_init(&e));
    if (rc == 0 && (req.count < 1 || req.count > 100 || req.bandit >= 2))
        abort();
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_rewards(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_reward_item *items = NULL;
    size_t n = 0;
    int batch = 0;
    int rc = api_parse_rewards(body, &g_cfg, 1000, &items, &n, &batch, api_errors_init(&e));
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (items[i].assignment_id == NULL || !(items[i].value >= -1 && items[i].value <= 5))
            abort(); /* accepted out of contract */
    free(items);
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_observations(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_observation_item *items = NULL;
    size_t n = 0;
    int rc = api_parse_observations(body, &g_cfg, 1000, &items, &n, api_errors_init(&e));
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (items[i].bandit < 0 || items[i].bandit > 1 || items[i].arm < 0 || items[i].arm > 2 ||
            !(items[i].value >= -1 && items[i].value <= 5))
            abort();
    free(items);
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_patch(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    enum exp_state st;
    api_parse_patch(body, &st, api_errors_init(&e));
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_simproblem(const uint8_t *data, size_t size)
{
    json_t *j = load(data, size);
    if (j == NULL)
        return 0;
    struct sim_problem p;
    char err[256];
    memset(&p, 0, sizeof p);
    if (sim_problem_parse(j, &p, err, sizeof err) == 0)
        sim_problem_free(&p);
    json_decref(j);
    return 0;
}
