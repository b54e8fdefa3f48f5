/*
 * problem.c — the one place where errors become problem+json documents
 * (RFC 9457): the table of problem types — each a status, a type URN
 * (urn:banditd:problem:<slug>) and a title. A status alone names its first
 * type; a slug names a more precise one (validation, corrupt-log).
 * Every error reply of the daemon, including the HTTP layer's own (404,
 * 405, 413, 415, and libmicrohttpd's, mhderr.c), is built here. Also the
 * entity-tag match every conditional GET uses.
 */
#include "http/http.h"

#include <stdio.h>
#include <string.h>

struct problem_kind {
    unsigned status;
    const char *slug;
    const char *title;
};

static const struct problem_kind kinds[] = {
    {400, "invalid-request", "Invalid request"},
    {401, "unauthorized", "Missing or unknown API key"},
    {403, "forbidden", "The API key lacks the scope this needs"},
    {403, "origin-not-allowed", "This origin may not call the API from a browser"},
    {404, "not-found", "Not found"},
    {405, "method-not-allowed", "Method not allowed"},
    {409, "conflict", "Conflict"},
    {412, "precondition-failed", "Precondition failed"},
    {413, "too-large", "Request body too large"},
    {414, "uri-too-long", "Request target too long"},
    {415, "unsupported-media-type", "Unsupported media type"},
    {422, "unprocessable", "Unprocessable request"},
    {429, "too-many", "Too many outstanding requests"},
    {429, "rate-limited", "Rate limit exceeded"},
    {431, "header-fields-too-large", "Request header fields too large"},
    {500, "internal", "Internal error"},
    {500, "corrupt-log", "The experiment's event log is corrupt"},
    {400, "validation", "Validation failed"},
    {503, "unavailable", "Service unavailable"},
    {505, "http-version-not-supported", "HTTP version not supported"},
    {507, "insufficient-storage", "Insufficient storage"},
};

/* The type named slug, or else the first of status; NULL if neither. */
static const struct problem_kind *kind_of(unsigned status, const char *slug)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (slug != NULL ? strcmp(kinds[i].slug, slug) == 0 : kinds[i].status == status)
            return &kinds[i];
    return NULL;
}

static json_t *problem(const struct problem_kind *k, unsigned status, const char *detail,
                       json_t *errors)
{
    char type[96];
    snprintf(type, sizeof type, "urn:banditd:problem:%s", k ? k->slug : "error");
    json_t *p = json_pack("{s:s,s:s,s:i}", "type", type, "title", k ? k->title : "Error", "status",
                          (json_int_t)(k ? k->status : status));
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

json_t *http_problem(unsigned status, const char *detail, json_t *errors)
{
    /* field errors on a 400 are a validation failure */
    int validation = status == 400 && errors != NULL && json_array_size(errors) > 0;
    return problem(kind_of(status, validation ? "validation" : NULL), status, detail, errors);
}

int http_reply_problem_as(struct http_req *r, const char *slug, const char *detail, json_t *errors)
{
    const struct problem_kind *k = kind_of(0, slug);
    json_t *p = problem(k, 500, detail, errors);
    if (p == NULL)
        return http_reply_oom(r);
    return http_reply_json(r, k ? k->status : 500, p);
}

int http_reply_problem(struct http_req *r, unsigned status, const char *detail, json_t *errors)
{
    json_t *p = http_problem(status, detail, errors);
    if (p == NULL)
        return http_reply_oom(r);
    /* Both mean "not now": say when to come back. One second suits every
     * case we have (a full queue, a cap on pending assignments or
     * connections, shutting down); a handler that knows better sets its
     * own. */
    if ((status == 503 || status == 429) && !http_reply_has_header(r, "Retry-After"))
        http_reply_header(r, "Retry-After", "1");
    return http_reply_json(r, status, p);
}

int http_reply_invalid(struct http_req *r, const char *field, const char *message)
{
    json_t *errors = json_pack("[{s:s,s:s}]", "field", field, "message", message);
    char detail[256];
    snprintf(detail, sizeof detail, "%s: %s", field, message);
    return http_reply_problem(r, 400, detail, errors);
}

int http_reply_oom(struct http_req *r)
{
    /* no allocation of ours: the document is static */
    if (!http_reply_has_header(r, "Retry-After"))
        http_reply_header(r, "Retry-After", "1");
    return http_reply_static(r, 503, "application/problem+json", HTTP_PROBLEM_OOM,
                             sizeof HTTP_PROBLEM_OOM - 1);
}

int http_etag_matches(const char *if_none_match, const char *etag)
{
    if (if_none_match == NULL)
        return 0;
    size_t el = strlen(etag);
    const char *p = if_none_match;
    while (*p) {
        p += strspn(p, " \t,");
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, " \t,");
        if (n == el && strncmp(p, etag, n) == 0)
            return 1;
        p += n;
    }
    return 0;
}
