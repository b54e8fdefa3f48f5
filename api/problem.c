/*
 * problem.c — the one place where errors become HTTP statuses and
 * problem+json documents (RFC 9457). Every error reply of the daemon,
 * including the HTTP layer's own (404, 405, 413, 415), is built here.
 */
#include "api/api.h"

#include <stdio.h>

#include "store/store.h"

struct problem_kind {
    unsigned status;
    const char *slug;
    const char *title;
};

static const struct problem_kind kinds[] = {
    {400, "invalid-request", "Invalid request"},
    {401, "unauthorized", "Missing or unknown API key"},
    {403, "forbidden", "The API key lacks the scope this needs"},
    {404, "not-found", "Not found"},
    {405, "method-not-allowed", "Method not allowed"},
    {409, "conflict", "Conflict"},
    {412, "precondition-failed", "Precondition failed"},
    {413, "too-large", "Request body too large"},
    {415, "unsupported-media-type", "Unsupported media type"},
    {422, "unprocessable", "Unprocessable request"},
    {429, "too-many", "Too many outstanding requests"},
    {500, "internal", "Internal error"},
    {503, "unavailable", "Service unavailable"},
};

json_t *api_problem(unsigned status, const char *detail, json_t *errors)
{
    const struct problem_kind *k = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].status == status)
            k = &kinds[i];
    char type[96];
    snprintf(type, sizeof type, "urn:banditd:problem:%s", k ? k->slug : "error");
    const char *slug_title = k ? k->title : "Error";
    if (status == 400 && errors != NULL && json_array_size(errors) > 0) {
        snprintf(type, sizeof type, "urn:banditd:problem:validation");
        slug_title = "Validation failed";
    }
    json_t *p =
        json_pack("{s:s,s:s,s:i}", "type", type, "title", slug_title, "status", (json_int_t)status);
    if (p == NULL) {
        json_decref(errors);
        return NULL;
    }
    if (detail != NULL)
        json_object_set_new(p, "detail", json_string(detail));
    if (errors != NULL)
        json_object_set_new(p, "errors", errors);
    return p;
}

int api_reply_problem(struct api_req *r, unsigned status, const char *detail, json_t *errors)
{
    json_t *p = api_problem(status, detail, errors);
    if (p == NULL)
        return api_reply_raw(r, 500, "text/plain", NULL, 0);
    if (status == 503)
        api_reply_header(r, "Retry-After", "1");
    return api_reply_json(r, status, p);
}

int api_reply_invalid(struct api_req *r, const char *field, const char *message)
{
    json_t *errors = json_pack("[{s:s,s:s}]", "field", field, "message", message);
    char detail[256];
    snprintf(detail, sizeof detail, "%s: %s", field, message);
    return api_reply_problem(r, 400, detail, errors);
}

int api_reply_store_error(struct api_req *r, int store_err)
{
    switch (store_err) {
    case STORE_ERR_FULL:
        return api_reply_problem(
            r, 503, "storage is full or read-only; nothing was recorded, retry later", NULL);
    case STORE_ERR_CLOSED:
        return api_reply_problem(r, 503, "the server is shutting down; nothing was recorded", NULL);
    case STORE_ERR_NOMEM:
        return api_reply_problem(r, 503, "out of memory; nothing was recorded", NULL);
    default:
        return api_reply_problem(r, 503, "storage error; nothing was recorded, retry later", NULL);
    }
}
