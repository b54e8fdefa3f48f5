/*
 * routes.c — the API's routing table: method, path pattern, handler,
 * required scope, metrics label, flags (rewards may come by
 * navigator.sendBeacon, as text/plain). {id} matches one path segment (an
 * experiment id). The transport routes by it (http/http.h); auth.c admits
 * by its scopes; metrics.c counts by its rows.
 */
#include "api/api.h"

const struct http_route api_routes[] = {
    /* The dashboard: open pages; the page calls the API with the user's key. */
    {"GET", "/", api_web_page, API_SCOPE_NONE, "dashboard", 0},
    {"GET", "/experiments/{id}", api_web_page, API_SCOPE_NONE, "dashboard", 0},
    {"GET", "/static/{id}", api_web_static, API_SCOPE_NONE, "static", 0},
    {"POST", "/v1/experiments", api_experiments_create, API_SCOPE_ADMIN, "experiments", 0},
    {"GET", "/v1/experiments", api_experiments_list, API_SCOPE_READ, "experiments", 0},
    {"GET", "/v1/experiments/{id}", api_experiments_get, API_SCOPE_READ, "experiment", 0},
    {"PATCH", "/v1/experiments/{id}", api_experiments_patch, API_SCOPE_ADMIN, "experiment", 0},
    {"DELETE", "/v1/experiments/{id}", api_experiments_delete, API_SCOPE_ADMIN, "experiment", 0},
    {"POST", "/v1/experiments/{id}/assignments", api_assignments_create, API_SCOPE_ASSIGN,
     "assignments", 0},
    {"POST", "/v1/experiments/{id}/assignments/release", api_releases_create, API_SCOPE_ASSIGN,
     "release", 0},
    {"POST", "/v1/experiments/{id}/assignments/served", api_served_create, API_SCOPE_ASSIGN,
     "served", 0},
    {"POST", "/v1/experiments/{id}/rewards", api_rewards_create, API_SCOPE_REPORT, "rewards",
     HTTP_ROUTE_BEACON},
    {"POST", "/v1/experiments/{id}/observations", api_observations_create, API_SCOPE_REPORT,
     "observations", 0},
    {"POST", "/v1/experiments/{id}/corrections", api_corrections_create, API_SCOPE_ADMIN,
     "corrections", 0},
    {"POST", "/v1/experiments/{id}/amendments", api_amendments_create, API_SCOPE_ADMIN,
     "amendments", 0},
    {"GET", "/v1/experiments/{id}/status", api_status_get, API_SCOPE_READ, "status", 0},
    {"POST", "/v1/experiments/{id}/oc", api_oc_create, API_SCOPE_READ, "oc", 0},
    {"GET", "/v1/experiments/{id}/history", api_history_get, API_SCOPE_READ, "history", 0},
    {"GET", "/v1/experiments/{id}/export", api_export_get, API_SCOPE_READ, "export", 0},
    {"GET", "/v1/experiments/{id}/webhooks", api_webhooks_list, API_SCOPE_READ, "webhooks", 0},
    {"GET", "/v1/policies", api_policies_list, API_SCOPE_READ, "policies", 0},
    {"POST", "/v1/plan", api_plan_create, API_SCOPE_ADMIN, "plan", 0},
    {"GET", "/healthz", api_healthz, API_SCOPE_NONE, "healthz", 0},
    {"GET", "/readyz", api_readyz, API_SCOPE_NONE, "readyz", 0},
    {"GET", "/metrics", api_metrics_get, API_SCOPE_READ | API_SCOPE_IF_CONFIGURED, "metrics", 0},
    {"GET", "/openapi.json", api_openapi_get, API_SCOPE_NONE, "openapi", 0},
    {NULL, NULL, NULL, 0, NULL, 0},
};
