/*
 * test_openapi.c — keeps the compiled-in OpenAPI document true: it parses,
 * says 3.1, every route of server/routes.c is there with its method and the
 * scope it needs, every operation of the document is a route, every $ref
 * resolves, path parameters are declared, operation ids are unique, and the
 * schemas the contract names exist with their fields.
 *
 * One escape, for branches merging in parallel: an operation marked
 * "x-banditd-landing" documents a route that another branch is adding. It
 * may be absent from the table (the route has not landed yet); once routed
 * it is checked like any other, and the test says the mark can go. Anything
 * else documented must be routed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "api/openapi.h"
#include "api/api.h"
#include "http/http.h"
#include "policies/stop_rule.h"

static json_t *g_doc;

static const char *const methods[] = {"get",  "put",   "post",  "delete", "options",
                                      "head", "patch", "trace", NULL};

static void lower(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < len; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

static void test_parses(void **state)
{
    (void)state;
    assert_int_equal(strlen(api_openapi_json), api_openapi_json_len);
    json_error_t err;
    json_t *d = json_loadb(api_openapi_json, api_openapi_json_len, JSON_REJECT_DUPLICATES, &err);
    if (d == NULL)
        fail_msg("docs/openapi.json: line %d: %s", err.line, err.text);
    g_doc = d;
    const char *v = json_string_value(json_object_get(g_doc, "openapi"));
    assert_non_null(v);
    assert_memory_equal(v, "3.1", 3);
    assert_non_null(json_object_get(json_object_get(g_doc, "info"), "title"));
    assert_true(json_is_object(json_object_get(g_doc, "paths")));
}

/* The security requirement a route's scope calls for. */
static void check_security(const struct http_route *rt, json_t *op)
{
    json_t *sec = json_object_get(op, "security");
    if (!json_is_array(sec))
        fail_msg("%s %s: no security list", rt->method, rt->pattern);
    unsigned scope = rt->need & ~(unsigned)API_SCOPE_IF_CONFIGURED;
    if (scope == API_SCOPE_NONE) {
        if (json_array_size(sec) != 0)
            fail_msg("%s %s is open: security must be []", rt->method, rt->pattern);
        return;
    }
    const char *name = scope == API_SCOPE_ADMIN    ? "admin"
                       : scope == API_SCOPE_ASSIGN ? "assign"
                       : scope == API_SCOPE_REPORT ? "report"
                                                   : "read";
    int found_scope = 0, found_open = 0;
    size_t i;
    json_t *req;
    json_array_foreach(sec, i, req)
    {
        if (json_object_size(req) == 0) {
            found_open = 1;
            continue;
        }
        json_t *sc = json_object_get(req, "bearerAuth");
        if (json_array_size(sc) == 1 && strcmp(json_string_value(json_array_get(sc, 0)), name) == 0)
            found_scope = 1;
    }
    if (!found_scope)
        fail_msg("%s %s: security must name scope %s", rt->method, rt->pattern, name);
    if (found_open != ((rt->need & API_SCOPE_IF_CONFIGURED) != 0))
        fail_msg("%s %s: the optional ({}) requirement must match the route's scope", rt->method,
                 rt->pattern);
}

static void test_every_route_documented(void **state)
{
    (void)state;
    assert_non_null(g_doc);
    json_t *paths = json_object_get(g_doc, "paths");
    size_t n = 0;
    for (const struct http_route *rt = api_routes; rt->method != NULL; rt++, n++) {
        json_t *item = json_object_get(paths, rt->pattern);
        if (item == NULL)
            fail_msg("route %s %s is missing from docs/openapi.json", rt->method, rt->pattern);
        char m[16];
        lower(rt->method, m, sizeof m);
        json_t *op = json_object_get(item, m);
        if (op == NULL)
            fail_msg("route %s %s: the document has no \"%s\" operation", rt->method, rt->pattern,
                     m);
        if (!json_is_object(json_object_get(op, "responses")) ||
            json_object_size(json_object_get(op, "responses")) == 0)
            fail_msg("%s %s: no responses", rt->method, rt->pattern);
        check_security(rt, op);
        /* A route that needs a key documents 401 and 403. */
        if ((rt->need & ~(unsigned)API_SCOPE_IF_CONFIGURED) != API_SCOPE_NONE) {
            json_t *rs = json_object_get(op, "responses");
            if (json_object_get(rs, "401") == NULL || json_object_get(rs, "403") == NULL)
                fail_msg("%s %s: 401 and 403 must be documented", rt->method, rt->pattern);
        }
    }
    assert_true(n >= 12);
}

static void test_every_operation_is_a_route(void **state)
{
    (void)state;
    assert_non_null(g_doc);
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(g_doc, "paths"), path, item)
    {
        const char *key;
        json_t *v;
        int ops = 0;
        json_object_foreach(item, key, v)
        {
            int is_method = 0;
            for (const char *const *m = methods; *m != NULL; m++)
                if (strcmp(*m, key) == 0)
                    is_method = 1;
            if (!is_method)
                continue;
            ops++;
            int found = 0;
            for (const struct http_route *rt = api_routes; rt->method != NULL; rt++) {
                char m[16];
                lower(rt->method, m, sizeof m);
                if (strcmp(rt->pattern, path) == 0 && strcmp(m, key) == 0)
                    found = 1;
            }
            int landing = json_object_get(v, "x-banditd-landing") != NULL;
            if (!found && !landing)
                fail_msg("docs/openapi.json documents %s %s, which is not a route", key, path);
            if (found && landing)
                print_message("note: %s %s is routed now: drop its x-banditd-landing mark\n", key,
                              path);
        }
        if (ops == 0)
            fail_msg("path %s has no operation", path);
    }
}

/* Resolve a local "#/a/b" pointer. */
static json_t *resolve(const char *ref)
{
    if (strncmp(ref, "#/", 2) != 0)
        return NULL;
    json_t *node = g_doc;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ref + 2);
    for (char *save = NULL, *tok = strtok_r(buf, "/", &save); tok != NULL && node != NULL;
         tok = strtok_r(NULL, "/", &save))
        node = json_object_get(node, tok);
    return node;
}

// NOLINTNEXTLINE(misc-no-recursion): walks the committed OpenAPI document, as deep as it is
static void walk_refs(json_t *node, size_t *count)
{
    if (json_is_object(node)) {
        const char *key;
        json_t *v;
        json_object_foreach(node, key, v)
        {
            if (strcmp(key, "$ref") == 0 && json_is_string(v)) {
                (*count)++;
                if (resolve(json_string_value(v)) == NULL)
                    fail_msg("$ref %s does not resolve", json_string_value(v));
            } else {
                walk_refs(v, count);
            }
        }
    } else if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) walk_refs(v, count);
    }
}

static void test_refs_resolve(void **state)
{
    (void)state;
    assert_non_null(g_doc);
    size_t count = 0;
    walk_refs(g_doc, &count);
    assert_true(count > 20);
}

/* {id} in a path is declared as a path parameter (on the path or the op). */
static void test_path_params_and_ids(void **state)
{
    (void)state;
    assert_non_null(g_doc);
    const char *path;
    json_t *item;
    json_t *seen = json_object();
    json_object_foreach(json_object_get(g_doc, "paths"), path, item)
    {
        const char *key;
        json_t *op;
        json_object_foreach(item, key, op)
        {
            if (strcmp(key, "parameters") == 0)
                continue;
            const char *oid = json_string_value(json_object_get(op, "operationId"));
            if (oid == NULL)
                fail_msg("%s %s: no operationId", key, path);
            if (json_object_get(seen, oid) != NULL)
                fail_msg("operationId %s used twice", oid);
            json_object_set_new(seen, oid, json_true());
            if (strstr(path, "{id}") == NULL)
                continue;
            int declared = 0;
            json_t *lists[2] = {json_object_get(item, "parameters"),
                                json_object_get(op, "parameters")};
            for (int l = 0; l < 2; l++) {
                size_t i;
                json_t *p;
                json_array_foreach(lists[l], i, p)
                {
                    json_t *rp = json_object_get(p, "$ref")
                                     ? resolve(json_string_value(json_object_get(p, "$ref")))
                                     : p;
                    const char *in = json_string_value(json_object_get(rp, "in"));
                    const char *name = json_string_value(json_object_get(rp, "name"));
                    if (in && name && strcmp(in, "path") == 0 && strcmp(name, "id") == 0)
                        declared = 1;
                }
            }
            if (!declared)
                fail_msg("%s %s: path parameter id not declared", key, path);
        }
    }
    json_decref(seen);
}

/* The schemas docs/contract.md names carry the contract's fields. */
static void test_contract_schemas(void **state)
{
    (void)state;
    assert_non_null(g_doc);
    json_t *schemas = json_object_get(json_object_get(g_doc, "components"), "schemas");
    static const char *const want[][18] = {
        {"ExperimentFields", "id", "name", "policy", "goal", "reward", "bandits", "arms",
         "assignment_ttl_s", "seed", "stop_rule", "bound", "tau", "target_arm", "default_reward",
         "constraints", "webhooks"},
        {"Goal", "m", "epsilon", "delta", "budget"},
        {"Constraints", "burn_in", "min_prob", "control"},
        {"AssignmentRequest", "bandit", "unit", "count"},
        {"Assignment", "id", "bandit", "arm", "arm_index", "expires_at", "exploit"},
        {"RewardResponse", "accepted", "duplicates", "results"},
        {"RewardResult", "assignment_id", "status"},
        {"Status", "id", "state", "stopped", "stop_reason", "pulls", "pending", "budget",
         "bandits"},
        {"BanditStatus", "id", "recommended", "delta_c", "rho", "done", "arms"},
        {"ArmStatus", "id", "pulls", "pending", "mean", "variance", "lower", "upper"},
        {"Problem", "type", "title", "status", "detail", "errors"},
        {"FieldError", "field", "message"},
        {"Webhook", "url", "events", "secret", "secret_set", "secret_fingerprint"},
        {"WebhookPayload", "id", "type", "created_at", "seq", "experiment", "data"},
        {"WebhookDelivery", "id", "event_id", "type", "url", "state", "attempts", "created_at",
         "last_attempt_at", "next_attempt_at", "last_status", "last_error", "payload"},
        {"WebhookDeliveryList", "deliveries", "next_before"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *s = json_object_get(schemas, want[i][0]);
        if (s == NULL)
            fail_msg("schema %s missing", want[i][0]);
        json_t *props = json_object_get(s, "properties");
        for (size_t k = 1; k < 18 && want[i][k] != NULL; k++)
            if (json_object_get(props, want[i][k]) == NULL)
                fail_msg("schema %s lacks %s", want[i][0], want[i][k]);
    }
    /* Reward statuses are the contract's (plus error). */
    json_t *st = json_object_get(
        json_object_get(json_object_get(json_object_get(schemas, "RewardResult"), "properties"),
                        "status"),
        "enum");
    static const char *const statuses[] = {"accepted", "duplicate", "conflict", "unknown",
                                           "expired"};
    for (size_t i = 0; i < 5; i++) {
        int found = 0;
        size_t k;
        json_t *v;
        json_array_foreach(st, k, v) found |= strcmp(json_string_value(v), statuses[i]) == 0;
        if (!found)
            fail_msg("RewardResult.status lacks %s", statuses[i]);
    }
}

/* stop_rule's enum is the stop rule table (policies/stop_rule.h), in order. */
static void test_stop_rule_enum(void **state)
{
    (void)state;
    assert_non_null(g_doc);
    json_t *schemas = json_object_get(json_object_get(g_doc, "components"), "schemas");
    json_t *e = json_object_get(
        json_object_get(json_object_get(json_object_get(schemas, "ExperimentFields"), "properties"),
                        "stop_rule"),
        "enum");
    size_t n;
    const struct stop_rule_info *all = stop_rule_all(&n);
    assert_int_equal(json_array_size(e), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_string_value(json_array_get(e, i)), all[i].name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parses),
        cmocka_unit_test(test_every_route_documented),
        cmocka_unit_test(test_every_operation_is_a_route),
        cmocka_unit_test(test_refs_resolve),
        cmocka_unit_test(test_path_params_and_ids),
        cmocka_unit_test(test_contract_schemas),
        cmocka_unit_test(test_stop_rule_enum),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(g_doc);
    return rc;
}
