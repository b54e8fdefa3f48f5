/*
 * routes.c — the API's routing table: method, path pattern, handler,
 * required scope, metrics label. {id} matches one path segment (an
 * experiment id). The transport routes by it (http/http.h); auth.c admits
 * by its scopes; metrics.c counts by its rows.
 */
#include "api/api.h"

const struct http_route api_routes[] = {
    /* The dashboard: open pages; the page calls the API with the user's key. */
    {"GET", "/", api_web_page, API_SCOPE_NONE, "dashboard"},
    {"GET", "/experiments/{id}", api_web_page, API_SCOPE_NONE, "dashboard"},
    {"GET", "/static/{id}", api_web_static, API_SCOPE_NONE, "static"},
    {"POST", "/v1/experiments", api_experiments_create, API_SCOPE_ADMIN, "experiments"},
    {"GET", "/v1/experiments", api_experiments_list, API_SCOPE_READ, "experiments"},
    {"GET", "/v1/experiments/{id}", api_experiments_get, API_SCOPE_READ, "experiment"},
    {"PATCH", "/v1/experiments/{id}", api_experiments_patch, API_SCOPE_ADMIN, "experiment"},
    {"DELETE", "/v1/experiments/{id}", api_experiments_delete, API_SCOPE_ADMIN, "experiment"},
    {"POST", "/v1/experiments/{id}/assignments", api_assignments_create, API_SCOPE_ASSIGN,
     "assignments"},
    {"POST", "/v1/experiments/{id}/rewards", api_rewards_create, API_SCOPE_REPORT, "rewards"},
    {"POST", "/v1/experiments/{id}/observations", api_observations_create, API_SCOPE_REPORT,
     "observations"},
    {"POST", "/v1/experiments/{id}/corrections", api_corrections_create, API_SCOPE_ADMIN,
     "corrections"},
    {"GET", "/v1/experiments/{id}/status", api_status_get, API_SCOPE_READ, "status"},
    {"GET", "/v1/experiments/{id}/history", api_history_get, API_SCOPE_READ, "history"},
    {"GET", "/v1/experiments/{id}/export", api_export_get, API_SCOPE_READ, "export"},
    {"GET", "/v1/experiments/{id}/webhooks", api_webhooks_list, API_SCOPE_READ, "webhooks"},
    {"GET", "/v1/policies", api_policies_list, API_SCOPE_READ, "policies"},
    {"POST", "/v1/plan", api_plan_create, API_SCOPE_ADMIN, "plan"},
    {"GET", "/healthz", api_healthz, API_SCOPE_NONE, "healthz"},
    {"GET", "/readyz", api_readyz, API_SCOPE_NONE, "readyz"},
    {"GET", "/metrics", api_metrics_get, API_SCOPE_READ | API_SCOPE_IF_CONFIGURED, "metrics"},
    {"GET", "/openapi.json", api_openapi_get, API_SCOPE_NONE, "openapi"},
    {NULL, NULL, NULL, 0, NULL},
};
