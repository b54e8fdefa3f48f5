/*
 * test_auth.c — access control against the real daemon (docs/contract.md,
 * Access): the API is open without keys; 401 (with WWW-Authenticate, as
 * problem+json) for a missing, malformed or unknown key; 403 for a key
 * without the scope, for every route of the table; admin works everywhere;
 * open routes need no key; /metrics behind `read` when configured; revoking
 * and creating keys while the daemon runs (for the next request, and on
 * SIGHUP and the periodic re-read);
 * the keys CLI; the non-loopback refusal; TLS with a certificate made here,
 * only TLS 1.2 and 1.3 with forward secrecy by default (--tls-priorities).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sqlite3.h>

#include "api/auth.h"
#include "api/api.h"
#include "http/http.h"
#include "tests/support/harness.h"
#include "tests/support/raw.h"

#define KEYLEN 128

struct fx {
    struct tdaemon *d;
    char admin[KEYLEN], read[KEYLEN], assign[KEYLEN], report[KEYLEN];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    if (f == NULL || tfresh_setup((void **)&f->d) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    tdaemon_free(f->d);
    free(f);
    return 0;
}

static void make_keys(struct fx *f)
{
    assert_int_equal(tdaemon_create_key(f->d, "admin", f->admin, KEYLEN), 0);
    assert_int_equal(tdaemon_create_key(f->d, "read", f->read, KEYLEN), 0);
    assert_int_equal(tdaemon_create_key(f->d, "assign", f->assign, KEYLEN), 0);
    assert_int_equal(tdaemon_create_key(f->d, "report", f->report, KEYLEN), 0);
}

static void start(struct fx *f, const char *const *args)
{
    int rc = tdaemon_launch(f->d, args, 0);
    if (rc != 0) {
        char *e = tdaemon_stderr(f->d);
        fail_msg("daemon did not start (%d): %s", rc, e ? e : "");
    }
}

static void stop_clean(struct fx *f)
{
    assert_int_equal(tdaemon_stop(f->d), 0);
}

/* Request and return the status, freeing the reply. */
static long req(struct fx *f, const char *method, const char *path, const char *key,
                const char *body)
{
    struct tresp *r = treq_key(f->d, method, path, key, body);
    long s = r->status;
    if (s == 0)
        fail_msg("%s %s: %s", method, path, r->error);
    tresp_free(r);
    return s;
}

/* Wait (up to ms) until path answers want with key. */
static int wait_status(struct fx *f, const char *path, const char *key, long want, int ms)
{
    for (int waited = 0; waited <= ms; waited += 50) {
        if (req(f, "GET", path, key, NULL) == want)
            return 1;
        usleep(50000);
    }
    return 0;
}

static void test_open_without_keys(void **state)
{
    struct fx *f = *state;
    start(f, NULL);
    assert_int_equal(
        req(f, "POST", "/v1/experiments", NULL, "{\"id\":\"e\",\"arms\":[\"a\",\"b\"]}"), 201);
    assert_int_equal(req(f, "GET", "/v1/experiments/e/status", NULL, NULL), 200);
    /* A key sent while none exists is ignored, not refused. */
    assert_int_equal(req(f, "GET", "/v1/experiments", "bd_whatever", NULL), 200);
    stop_clean(f);
}

static void check_401(struct fx *f, const char *auth_header)
{
    const char *want_challenge = auth_header == NULL
                                     ? "Bearer realm=\"banditd\""
                                     : "Bearer realm=\"banditd\", error=\"invalid_token\"";
    const char *const headers[] = {auth_header, NULL};
    struct tresp *r = treq(f->d, "GET", "/v1/experiments", NULL, auth_header ? headers : NULL);
    if (r->status != 401)
        fail_msg("Authorization \"%s\": %ld, expected 401", auth_header ? auth_header : "(none)",
                 r->status);
    assert_non_null(tresp_header(r, "WWW-Authenticate"));
    assert_string_equal(tresp_header(r, "WWW-Authenticate"), want_challenge);
    assert_non_null(tresp_content_type(r));
    assert_string_equal(tresp_content_type(r), "application/problem+json");
    json_t *j = r->json;
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "type")),
                        "urn:banditd:problem:unauthorized");
    assert_int_equal(json_integer_value(json_object_get(j, "status")), 401);
    tresp_free(r);
}

static void test_401_missing_or_unknown(void **state)
{
    struct fx *f = *state;
    make_keys(f);
    start(f, NULL);
    check_401(f, NULL);
    check_401(f, "Authorization: Bearer bd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    check_401(f, "Authorization: Basic YWRtaW46YWRtaW4=");
    check_401(f, "Authorization: Bearer");
    char h[256];
    snprintf(h, sizeof h, "Authorization: %s", f->admin); /* no scheme */
    check_401(f, h);
    snprintf(h, sizeof h, "Authorization: Bearer %.*s", (int)strlen(f->admin) - 1, f->admin);
    check_401(f, h);
    /* The right key works; scheme case does not matter. */
    assert_int_equal(req(f, "GET", "/v1/experiments", f->admin, NULL), 200);
    snprintf(h, sizeof h, "Authorization: bearer %s", f->read);
    const char *const hl[] = {h, NULL};
    struct tresp *r = treq(f->d, "GET", "/v1/experiments", NULL, hl);
    assert_status(r, 200);
    tresp_free(r);
    /* A 401 also for writes, and the body is not looked at. */
    assert_int_equal(req(f, "POST", "/v1/experiments", NULL, "{not json"), 401);
    stop_clean(f);
}

/* The path of a route with {id} replaced. */
static void route_path(const struct http_route *rt, const char *id, char *out, size_t len)
{
    const char *p = strstr(rt->pattern, "{id}");
    if (p == NULL)
        snprintf(out, len, "%s", rt->pattern);
    else
        snprintf(out, len, "%.*s%s%s", (int)(p - rt->pattern), rt->pattern, id, p + 4);
}

/* Routes whose answer to the matrix's requests is known to be 2xx: the API
 * and the operational endpoints (other branches add pages and assets). */
static int strict_route(const struct http_route *rt)
{
    static const char *const ops[] = {"/healthz", "/readyz", "/metrics", "/openapi.json", NULL};
    if (strncmp(rt->pattern, "/v1/", 4) == 0)
        return 1;
    for (const char *const *p = ops; *p != NULL; p++)
        if (strcmp(rt->pattern, *p) == 0)
            return 1;
    return 0;
}

/* An assignment of experiment "e" (test_scope_matrix makes it), so that
 * a reward reaches its handler and succeeds (a batch of only unknown ids
 * is a 404). */
static char g_assignment[64];
/* A second one for the block routes (release, served): released, it could
 * no longer be rewarded and corrected. */
static char g_leased[64];

static const char *route_body(const struct http_route *rt, int n)
{
    if (strcmp(rt->method, "POST") == 0 && strcmp(rt->pattern, "/v1/experiments") == 0) {
        static char buf[128];
        snprintf(buf, sizeof buf, "{\"id\":\"made-%d\",\"arms\":[\"a\",\"b\"]}", n);
        return buf;
    }
    if (strstr(rt->pattern, "/rewards")) {
        static char buf[160];
        snprintf(buf, sizeof buf, "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1}]}",
                 g_assignment);
        return buf;
    }
    if (strstr(rt->pattern, "/observations"))
        return "{\"arm\":\"a\",\"reward\":1}";
    if (strstr(rt->pattern, "/assignments/release")) {
        static char buf[160];
        snprintf(buf, sizeof buf, "{\"assignment_id\":\"%s\"}", g_leased);
        return buf;
    }
    if (strstr(rt->pattern, "/assignments/served")) {
        static char buf[160];
        snprintf(buf, sizeof buf, "{\"assignment_id\":\"%s\",\"unit\":\"u1\"}", g_leased);
        return buf;
    }
    if (strstr(rt->pattern, "/corrections")) { /* admin only: once, after the reward */
        static char buf[200];
        snprintf(buf, sizeof buf,
                 "{\"assignment_id\":\"%s\",\"reward\":0,\"reason\":\"scope matrix\"}",
                 g_assignment);
        return buf;
    }
    if (strstr(rt->pattern, "/amendments")) { /* a new name each time: a change */
        static char buf[128];
        snprintf(buf, sizeof buf, "{\"change\":{\"name\":\"amended-%d\"},\"reason\":\"test\"}", n);
        return buf;
    }
    if (strstr(rt->pattern, "/oc"))
        return "{\"scenarios\":[{\"name\":\"null\",\"arms\":[0.5,0.5]}],\"runs\":1,"
               "\"max_pulls\":50}";
    if (strcmp(rt->pattern, "/v1/plan") == 0)
        return "{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.5,0.4],\"runs\":1}";
    if (strcmp(rt->method, "PATCH") == 0)
        return "{\"state\":\"running\"}";
    if (strcmp(rt->method, "POST") == 0)
        return "{}";
    return NULL;
}

/* Every route of the table with every key: 403 exactly when the key lacks
 * the route's scope (admin has them all); otherwise the request reaches its
 * handler and succeeds. */
static void test_scope_matrix(void **state)
{
    struct fx *f = *state;
    make_keys(f);
    start(f, NULL);
    assert_int_equal(
        req(f, "POST", "/v1/experiments", f->admin, "{\"id\":\"e\",\"arms\":[\"a\",\"b\"]}"), 201);
    assert_int_equal(
        req(f, "POST", "/v1/experiments", f->admin, "{\"id\":\"doomed\",\"arms\":[\"a\",\"b\"]}"),
        201);
    struct tresp *a = treq_key(f->d, "POST", "/v1/experiments/e/assignments", f->admin, "{}");
    assert_int_equal(a->status, 201);
    snprintf(g_assignment, sizeof g_assignment, "%s", tjson_str(a->json, "assignments[0].id"));
    tresp_free(a);
    a = treq_key(f->d, "POST", "/v1/experiments/e/assignments", f->admin, "{}");
    assert_int_equal(a->status, 201);
    snprintf(g_leased, sizeof g_leased, "%s", tjson_str(a->json, "assignments[0].id"));
    tresp_free(a);
    const struct {
        const char *key;
        unsigned scopes;
        const char *name;
    } keys[] = {
        {f->read, API_SCOPE_READ, "read"},
        {f->assign, API_SCOPE_ASSIGN, "assign"},
        {f->report, API_SCOPE_REPORT, "report"},
        {f->admin, API_SCOPE_ADMIN, "admin"}, /* last: it deletes */
    };
    int n = 0, checked = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (const struct http_route *rt = api_routes; rt->method != NULL; rt++, n++) {
            char path[256];
            route_path(rt, strcmp(rt->method, "DELETE") == 0 ? "doomed" : "e", path, sizeof path);
            unsigned need = rt->need & ~(unsigned)API_SCOPE_IF_CONFIGURED;
            if (rt->need & API_SCOPE_IF_CONFIGURED)
                need = API_SCOPE_NONE; /* not configured here */
            long s = req(f, rt->method, path, keys[k].key, route_body(rt, n));
            int allowed = need == API_SCOPE_NONE || (keys[k].scopes & need) ||
                          (keys[k].scopes & API_SCOPE_ADMIN);
            if (!allowed && s != 403)
                fail_msg("%s %s with a %s key: %ld, expected 403", rt->method, path, keys[k].name,
                         s);
            /* The API answers 2xx to these requests; other routes (pages,
             * assets named by the path) may answer 404 to our made-up id,
             * but never refuse the key or fail. */
            if (allowed && strict_route(rt) && (s < 200 || s > 299))
                fail_msg("%s %s with a %s key: %ld, expected 2xx", rt->method, path, keys[k].name,
                         s);
            if (allowed && (s == 401 || s == 403 || s >= 500))
                fail_msg("%s %s with a %s key: %ld", rt->method, path, keys[k].name, s);
            checked++;
        }
    assert_true(checked >= 4 * 12);
    /* Open routes answer without any key. */
    for (const struct http_route *rt = api_routes; rt->method != NULL; rt++) {
        if (rt->need != API_SCOPE_NONE && !(rt->need & API_SCOPE_IF_CONFIGURED))
            continue;
        char path[256];
        route_path(rt, "e", path, sizeof path);
        long s = req(f, rt->method, path, NULL, NULL);
        if ((strict_route(rt) && s != 200) || s == 401 || s == 403 || s >= 500)
            fail_msg("open route %s %s without a key: %ld", rt->method, path, s);
    }
    /* The 403 is problem+json naming the scope problem. */
    struct tresp *r = treq_key(f->d, "POST", "/v1/experiments/e/assignments", f->read, "{}");
    assert_status(r, 403);
    json_t *j = r->json;
    assert_string_equal(json_string_value(json_object_get(j, "type")),
                        "urn:banditd:problem:forbidden");
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")), "scope assign"));
    assert_non_null(tresp_header(r, "WWW-Authenticate"));
    assert_string_equal(tresp_header(r, "WWW-Authenticate"),
                        "Bearer realm=\"banditd\", error=\"insufficient_scope\", "
                        "scope=\"assign\"");
    tresp_free(r);
    /* A key with two scopes has both. */
    char both[KEYLEN];
    assert_int_equal(tdaemon_create_key(f->d, "assign,report", both, sizeof both), 0);
    tdaemon_signal(f->d, SIGHUP);
    for (int i = 0; i < 100 && req(f, "POST", "/v1/experiments/e/assignments", both, "{}") != 201;
         i++)
        usleep(50000);
    assert_int_equal(
        req(f, "POST", "/v1/experiments/e/observations", both, "{\"arm\":\"a\",\"reward\":0}"),
        200);
    assert_int_equal(req(f, "GET", "/v1/experiments/e/status", both, NULL), 403);
    stop_clean(f);
}

static void test_metrics_need_key(void **state)
{
    struct fx *f = *state;
    make_keys(f);
    static const char *const args[] = {"--metrics-need-key", NULL};
    start(f, args);
    assert_int_equal(req(f, "GET", "/metrics", NULL, NULL), 401);
    assert_int_equal(req(f, "GET", "/metrics", f->assign, NULL), 403);
    assert_int_equal(req(f, "GET", "/metrics", f->read, NULL), 200);
    assert_int_equal(req(f, "GET", "/metrics", f->admin, NULL), 200);
    /* The other operational routes stay open. */
    assert_int_equal(req(f, "GET", "/healthz", NULL, NULL), 200);
    assert_int_equal(req(f, "GET", "/readyz", NULL, NULL), 200);
    assert_int_equal(req(f, "GET", "/openapi.json", NULL, NULL), 200);
    stop_clean(f);
}

static void test_revoke_takes_effect_at_once(void **state)
{
    struct fx *f = *state;
    make_keys(f);
    static const char *const args[] = {"--key-refresh", "0", NULL}; /* only SIGHUP */
    start(f, args);
    assert_int_equal(req(f, "GET", "/v1/experiments", f->read, NULL), 200);
    char out[4096], err[4096];
    static const char *const list_args[] = {"keys", "list", "--json", "--db", NULL, NULL};
    const char *la[6];
    memcpy(la, list_args, sizeof la);
    la[4] = tdaemon_db_path(f->d);
    assert_int_equal(tdaemon_cli(f->d, la, NULL, out, sizeof out, err, sizeof err), 0);
    json_t *list = json_loads(out, 0, NULL);
    assert_non_null(list);
    json_int_t read_id = 0;
    size_t i;
    json_t *k;
    json_array_foreach(list, i, k)
    {
        json_t *sc = json_object_get(k, "scopes");
        if (json_array_size(sc) == 1 &&
            strcmp(json_string_value(json_array_get(sc, 0)), "read") == 0)
            read_id = json_integer_value(json_object_get(k, "id"));
    }
    json_decref(list);
    assert_true(read_id > 0);
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)read_id);
    const char *ra[] = {"keys", "revoke", idbuf, "--db", tdaemon_db_path(f->d), NULL};
    assert_int_equal(tdaemon_cli(f->d, ra, NULL, out, sizeof out, err, sizeof err), 0);
    /* No polling, no signal: refused from the very next request (it was
     * accepted until the next re-read, up to --key-refresh seconds). */
    assert_int_equal(req(f, "GET", "/v1/experiments", f->read, NULL), 401);
    assert_int_equal(req(f, "GET", "/v1/experiments", f->admin, NULL), 200);
    /* a new key works at once too */
    char fresh[KEYLEN];
    assert_int_equal(tdaemon_create_key(f->d, "read", fresh, sizeof fresh), 0);
    assert_int_equal(req(f, "GET", "/v1/experiments", fresh, NULL), 200);
    /* SIGHUP still re-reads (and says so) */
    tdaemon_signal(f->d, SIGHUP);
    assert_true(wait_status(f, "/v1/experiments", f->read, 401, 10000));
    stop_clean(f);
    char *log = tdaemon_stderr(f->d);
    assert_non_null(strstr(log, "API keys changed"));
    assert_non_null(strstr(log, "API keys unchanged"));
    free(log);
}

static void test_new_key_picked_up_by_polling(void **state)
{
    struct fx *f = *state;
    assert_int_equal(tdaemon_create_key(f->d, "admin", f->admin, KEYLEN), 0);
    static const char *const args[] = {"--key-refresh", "1", NULL};
    start(f, args);
    char fresh[KEYLEN];
    assert_int_equal(tdaemon_create_key(f->d, "read", fresh, sizeof fresh), 0);
    /* No signal: the daemon re-reads within its refresh period. */
    assert_true(wait_status(f, "/v1/experiments", fresh, 200, 10000));
    stop_clean(f);
}

/* Revoking every key leaves the API closed (never silently open). */
static void test_all_revoked_stays_closed(void **state)
{
    struct fx *f = *state;
    char key[KEYLEN], out[256], err[512];
    assert_int_equal(tdaemon_create_key(f->d, "admin", key, sizeof key), 0);
    const char *ra[] = {"keys", "revoke", "1", "--db", tdaemon_db_path(f->d), NULL};
    assert_int_equal(tdaemon_cli(f->d, ra, NULL, out, sizeof out, err, sizeof err), 0);
    start(f, NULL);
    assert_int_equal(req(f, "GET", "/v1/experiments", NULL, NULL), 401);
    assert_int_equal(req(f, "GET", "/v1/experiments", key, NULL), 401);
    stop_clean(f);
}

static void test_keys_cli(void **state)
{
    struct fx *f = *state;
    char out[8192], err[2048], k1[KEYLEN], k2[KEYLEN];
    const char *db = tdaemon_db_path(f->d);
    {
        const char *a[] = {"keys",        "create", "--db",      db,  "--scope",
                           "read,assign", "--name", "ci runner", NULL};
        assert_int_equal(tdaemon_cli(f->d, a, NULL, k1, sizeof k1, err, sizeof err), 0);
        k1[strcspn(k1, "\n")] = '\0';
        assert_non_null(strstr(err, "shown only"));
    }
    assert_int_equal(tdaemon_create_key(f->d, "admin", k2, sizeof k2), 0);
    /* Format: bd_ + 43 base64url characters, distinct. */
    for (const char *k = k1; k != NULL; k = k == k1 ? k2 : NULL) {
        assert_int_equal(strlen(k), 46);
        assert_memory_equal(k, "bd_", 3);
        for (const char *p = k + 3; *p; p++)
            assert_true(isalnum((unsigned char)*p) || *p == '-' || *p == '_');
    }
    assert_string_not_equal(k1, k2);
    /* Listing: ids, names, canonical scopes, never the key or its hash. */
    {
        const char *a[] = {"keys", "list", "--db", db, NULL};
        assert_int_equal(tdaemon_cli(f->d, a, NULL, out, sizeof out, err, sizeof err), 0);
        assert_non_null(strstr(out, "ci runner"));
        assert_non_null(strstr(out, "assign,read"));
        assert_non_null(strstr(out, "admin"));
        assert_null(strstr(out, k1));
        assert_null(strstr(out, k2));
        char hex[AUTH_HASH_HEX_LEN + 1];
        assert_int_equal(auth_hash_hex(k1, strlen(k1), hex, sizeof hex), 0);
        assert_null(strstr(out, hex));
    }
    {
        const char *a[] = {"keys", "list", "--json", "--db", db, NULL};
        assert_int_equal(tdaemon_cli(f->d, a, NULL, out, sizeof out, err, sizeof err), 0);
        json_t *j = json_loads(out, 0, NULL);
        assert_int_equal(json_array_size(j), 2);
        json_t *first = json_array_get(j, 0);
        assert_int_equal(json_integer_value(json_object_get(first, "id")), 1);
        assert_string_equal(json_string_value(json_object_get(first, "name")), "ci runner");
        assert_true(json_is_false(json_object_get(first, "revoked")));
        assert_non_null(json_object_get(first, "created"));
        json_decref(j);
    }
    /* The database holds the SHA-256 of each key, never the key. */
    {
        sqlite3 *dbh = NULL;
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_open_v2(db, &dbh, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(
            sqlite3_prepare_v2(dbh, "SELECT hash, name, scopes FROM api_keys ORDER BY rowid", -1,
                               &st, NULL),
            SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        char hex[AUTH_HASH_HEX_LEN + 1];
        assert_int_equal(auth_hash_hex(k1, strlen(k1), hex, sizeof hex), 0);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), hex);
        sqlite3_finalize(st);
        assert_int_equal(sqlite3_prepare_v2(dbh,
                                            "SELECT count(*) FROM api_keys WHERE "
                                            "instr(hash || coalesce(name, '') || scopes, "
                                            "'bd_') > 0",
                                            -1, &st, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), 0);
        sqlite3_finalize(st);
        sqlite3_close(dbh);
    }
    /* Revoke, and the errors. */
    {
        const char *a[] = {"keys", "revoke", "1", "--db", db, NULL};
        assert_int_equal(tdaemon_cli(f->d, a, NULL, out, sizeof out, err, sizeof err), 0);
        const char *l[] = {"keys", "list", "--json", "--db", db, NULL};
        assert_int_equal(tdaemon_cli(f->d, l, NULL, out, sizeof out, err, sizeof err), 0);
        json_t *j = json_loads(out, 0, NULL);
        assert_true(json_is_true(json_object_get(json_array_get(j, 0), "revoked")));
        assert_true(json_is_false(json_object_get(json_array_get(j, 1), "revoked")));
        json_decref(j);
    }
    static const struct {
        const char *args[10];
        int status;
    } bad[] = {
        {{"keys", "revoke", "99", "--db", NULL}, 1},
        {{"keys", "revoke", "x", "--db", NULL}, 2},
        {{"keys", "revoke", "--db", NULL}, 2},
        {{"keys", "create", "--scope", "write", "--db", NULL}, 2},
        {{"keys", "create", "--db", NULL}, 2},
        {{"keys", "rotate", "--db", NULL}, 2},
        {{"keys", "list", "--bogus", "--db", NULL}, 2},
        {{"keys", "create", "--scope", "read", "--name", "", "--db", NULL}, 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a[12];
        size_t n = 0;
        for (; bad[i].args[n] != NULL; n++)
            a[n] = bad[i].args[n];
        a[n++] = db; /* after the trailing --db */
        a[n] = NULL;
        int s = tdaemon_cli(f->d, a, NULL, out, sizeof out, err, sizeof err);
        if (s != bad[i].status)
            fail_msg("case %zu: exit %d, expected %d (%s)", i, s, bad[i].status, err);
        assert_true(strlen(err) > 0);
    }
    /* No --db at all. */
    const char *nodb[] = {"keys", "list", NULL};
    assert_int_equal(tdaemon_cli(f->d, nodb, NULL, out, sizeof out, err, sizeof err), 2);
    /* list of a database that does not exist does not create it. */
    char ghost[256];
    snprintf(ghost, sizeof ghost, "%s/ghost.db", tdaemon_dir(f->d));
    const char *gl[] = {"keys", "list", "--db", ghost, NULL};
    assert_int_equal(tdaemon_cli(f->d, gl, NULL, out, sizeof out, err, sizeof err), 1);
    assert_int_equal(access(ghost, F_OK), -1);
}

/* One key on several databases (shards): keys create --stdin. */
static void test_same_key_on_two_shards(void **state)
{
    struct fx *f = *state;
    char key[KEYLEN], out[512], err[1024];
    assert_int_equal(tdaemon_create_key(f->d, "read", key, sizeof key), 0);
    struct tdaemon *other = tdaemon_new();
    assert_non_null(other);
    char input[KEYLEN + 2];
    snprintf(input, sizeof input, "%s\n", key);
    const char *a[] = {
        "keys", "create", "--stdin", "--scope", "read", "--db", tdaemon_db_path(other), NULL};
    assert_int_equal(tdaemon_cli(other, a, input, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, ""); /* nothing to show: the caller has it */
    /* Twice: refused. Malformed input: refused, nothing stored. */
    assert_int_equal(tdaemon_cli(other, a, input, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "already"));
    assert_int_equal(tdaemon_cli(other, a, "password1\n", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(tdaemon_cli(other, a, "", out, sizeof out, err, sizeof err), 2);
    start(f, NULL);
    assert_int_equal(tdaemon_launch(other, NULL, 0), 0);
    assert_int_equal(req(f, "GET", "/v1/experiments", key, NULL), 200);
    struct tresp *r = treq_key(other, "GET", "/v1/experiments", key, NULL);
    assert_status(r, 200);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(other), 0);
    tdaemon_free(other);
    stop_clean(f);
}

/* A config file supplies --db to the subcommands. */
static void test_keys_cli_config(void **state)
{
    struct fx *f = *state;
    char conf[256], out[512], err[512];
    snprintf(conf, sizeof conf, "%s/banditd.conf", tdaemon_dir(f->d));
    FILE *c = fopen(conf, "w");
    assert_non_null(c);
    fprintf(c, "db = %s\nmax-arms = 9\n", tdaemon_db_path(f->d));
    assert_int_equal(fclose(c), 0);
    const char *a[] = {"keys", "create", "--config", conf, "--scope", "read", NULL};
    assert_int_equal(tdaemon_cli(f->d, a, NULL, out, sizeof out, err, sizeof err), 0);
    const char *l[] = {"keys", "list", "--db", tdaemon_db_path(f->d), NULL};
    assert_int_equal(tdaemon_cli(f->d, l, NULL, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "read"));
}

static void test_non_loopback_needs_key_or_insecure(void **state)
{
    struct fx *f = *state;
    static const char *const any[] = {"--listen", "0.0.0.0:0", NULL};
    int rc = tdaemon_launch(f->d, any, TDAEMON_OWN_LISTEN);
    assert_int_equal(rc, 1000 + 2);
    char *log = tdaemon_stderr(f->d);
    assert_non_null(strstr(log, "--insecure"));
    free(log);
    static const char *const insecure[] = {"--listen", "0.0.0.0:0", "--insecure", NULL};
    assert_int_equal(tdaemon_launch(f->d, insecure, TDAEMON_OWN_LISTEN), 0);
    assert_int_equal(req(f, "GET", "/healthz", NULL, NULL), 200);
    stop_clean(f);
    /* With a key the API is closed, so any address is fine. */
    char key[KEYLEN];
    assert_int_equal(tdaemon_create_key(f->d, "read", key, sizeof key), 0);
    assert_int_equal(tdaemon_launch(f->d, any, TDAEMON_OWN_LISTEN), 0);
    assert_int_equal(req(f, "GET", "/v1/experiments", NULL, NULL), 401);
    assert_int_equal(req(f, "GET", "/v1/experiments", key, NULL), 200);
    stop_clean(f);
}

// NOLINTNEXTLINE(readability-non-const-parameter): curl's write callback type
static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* The address of the daemon's "listening on ADDRESS" line, into buf. */
static void listening_on(struct fx *f, char *buf, size_t len)
{
    char path[700], line[256] = "";
    snprintf(path, sizeof path, "%s/stdout", tdaemon_dir(f->d));
    FILE *o = fopen(path, "r");
    assert_non_null(o);
    assert_non_null(fgets(line, sizeof line, o));
    (void)fclose(o);
    line[strcspn(line, "\n")] = '\0';
    assert_true(strncmp(line, "listening on ", 13) == 0);
    size_t n = strlen(line + 13);
    assert_true(n < len);
    memcpy(buf, line + 13, n + 1);
}

/* GET /healthz over a plain socket from src ("127.0.0.1" or "::1"). */
static int healthz_from(struct fx *f, const char *src)
{
    struct rawc *c = rawc_dial(tdaemon_port(f->d), src);
    if (c == NULL)
        return 0;
    assert_int_equal(rawc_send(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    struct rawr *r = rawc_read(c, 30.0);
    int status = r->status;
    rawr_free(r);
    rawc_close(c);
    return status;
}

/* --listen takes IPv6 in brackets and host names, and the loopback rule
 * knows them: [::1] and localhost are loopback, [::] is not. (On main:
 * "localhost:8080" was refused as not loopback, with advice to pass an
 * address, and [::1] could not be parsed.) */
static void test_listen_ipv6_and_names(void **state)
{
    struct fx *f = *state;
    char addr[128];
    static const char *const v6[] = {"--listen", "[::1]:0", NULL};
    assert_int_equal(tdaemon_launch(f->d, v6, TDAEMON_OWN_LISTEN), 0);
    listening_on(f, addr, sizeof addr);
    assert_true(strncmp(addr, "[::1]:", 6) == 0);
    assert_int_equal(healthz_from(f, "::1"), 200);
    stop_clean(f);
    static const char *const name[] = {"--listen", "localhost:0", NULL};
    assert_int_equal(tdaemon_launch(f->d, name, TDAEMON_OWN_LISTEN), 0);
    listening_on(f, addr, sizeof addr);
    assert_int_equal(healthz_from(f, strncmp(addr, "[::1]", 5) == 0 ? "::1" : NULL), 200);
    stop_clean(f);
    /* the IPv6 wildcard is not loopback: refused while no key exists */
    static const char *const any6[] = {"--listen", "[::]:0", NULL};
    assert_int_equal(tdaemon_launch(f->d, any6, TDAEMON_OWN_LISTEN), 1000 + 2);
    char *log = tdaemon_stderr(f->d);
    assert_non_null(strstr(log, "--insecure"));
    free(log);
    /* and with --insecure it serves both families */
    static const char *const any6i[] = {"--listen", "[::]:0", "--insecure", NULL};
    assert_int_equal(tdaemon_launch(f->d, any6i, TDAEMON_OWN_LISTEN), 0);
    assert_int_equal(healthz_from(f, "::1"), 200);
    assert_int_equal(healthz_from(f, NULL), 200);
    stop_clean(f);
    /* a bare IPv6 address is ambiguous; an unknown name says so */
    static const char *const bare[] = {"--listen", "::1:8080", NULL};
    assert_int_equal(tdaemon_launch(f->d, bare, TDAEMON_OWN_LISTEN), 1000 + 2);
    static const char *const unknown[] = {"--listen", "no-such-host.invalid:0", NULL};
    assert_int_equal(tdaemon_launch(f->d, unknown, TDAEMON_OWN_LISTEN), 1000 + 2);
    log = tdaemon_stderr(f->d);
    assert_non_null(strstr(log, "cannot resolve no-such-host.invalid"));
    free(log);
}

/* A self-signed certificate for 127.0.0.1, made with the openssl tool. */
static void make_cert(struct fx *f, char *cert, char *key, size_t len)
{
    char cmd[1024];
    snprintf(cert, len, "%s/cert.pem", tdaemon_dir(f->d));
    snprintf(key, len, "%s/key.pem", tdaemon_dir(f->d));
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout %s -out %s -days 2 -subj /CN=127.0.0.1 "
             "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             key, cert);
    if (system(cmd) != 0)
        fail_msg("openssl could not make a certificate (is the openssl package installed?)");
}

static void test_tls_round_trip(void **state)
{
    struct fx *f = *state;
    char cert[256], key[256];
    make_cert(f, cert, key, sizeof cert);
    make_keys(f);
    const char *args[] = {"--tls-cert", cert, "--tls-key", key, NULL};
    start(f, args);
    tdaemon_use_tls(f->d, 1, cert);
    assert_int_equal(req(f, "GET", "/healthz", NULL, NULL), 200);
    assert_int_equal(
        req(f, "POST", "/v1/experiments", f->admin, "{\"id\":\"t\",\"arms\":[\"a\",\"b\"]}"), 201);
    struct tresp *r = treq_key(f->d, "POST", "/v1/experiments/t/assignments", f->assign, "{}");
    assert_status(r, 201);
    assert_non_null(strstr(r->body, "\"assignments\""));
    tresp_free(r);
    assert_int_equal(req(f, "GET", "/v1/experiments", NULL, NULL), 401);
    /* Without the CA the certificate does not verify. */
    tdaemon_use_tls(f->d, 1, NULL);
    r = treq(f->d, "GET", "/healthz", NULL, NULL);
    assert_int_equal(r->status, 0);
    tresp_free(r);
    /* Plain HTTP on the TLS port gets no HTTP answer. */
    tdaemon_use_tls(f->d, 0, NULL);
    r = treq(f->d, "GET", "/healthz", NULL, NULL);
    assert_true(r->status != 200);
    tresp_free(r);
    stop_clean(f);
    char *log = tdaemon_stderr(f->d);
    assert_non_null(strstr(log, "serving HTTPS"));
    free(log);
}

/* One GET /healthz over TLS with libcurl (OpenSSL) pinned to TLS versions
 * [min, max] (CURL_SSLVERSION_*) and an OpenSSL cipher list (NULL: its
 * default). The HTTP status, 0 when the handshake failed. The client's own
 * floor is lowered to security level 0, so that a refusal is the server's. */
static long tls_get(struct fx *f, const char *ca, long min, long max, const char *ciphers)
{
    CURL *h = curl_easy_init();
    assert_non_null(h);
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%u/healthz", (unsigned)tdaemon_port(f->d));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_SSLVERSION, min | max);
    curl_easy_setopt(h, CURLOPT_SSL_CIPHER_LIST, ciphers ? ciphers : "DEFAULT:@SECLEVEL=0");
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    return status;
}

/* TLS 1.2+ and forward secrecy by default: TLS 1.0 and 1.1, and a TLS 1.2
 * key exchange by RSA encryption (no forward secrecy) fail the handshake;
 * --tls-priorities changes that. An RSA certificate, so that an RSA key
 * exchange is possible at all. (On main: TLS 1.1 and AES128-GCM-SHA256 with
 * RSA key exchange both answered 200.) */
static void test_tls_versions_and_key_exchange(void **state)
{
    struct fx *f = *state;
    char cert[256], key[256], cmd[1024];
    snprintf(cert, sizeof cert, "%s/rsa-cert.pem", tdaemon_dir(f->d));
    snprintf(key, sizeof key, "%s/rsa-key.pem", tdaemon_dir(f->d));
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 2 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             key, cert);
    if (system(cmd) != 0)
        fail_msg("openssl could not make a certificate");
    const char *args[] = {"--tls-cert", cert, "--tls-key", key, NULL};
    start(f, args);
    assert_int_equal(tls_get(f, cert, CURL_SSLVERSION_TLSv1_2, CURL_SSLVERSION_MAX_TLSv1_2, NULL),
                     200);
    assert_int_equal(tls_get(f, cert, CURL_SSLVERSION_TLSv1_3, CURL_SSLVERSION_MAX_TLSv1_3, NULL),
                     200);
    assert_int_equal(tls_get(f, cert, CURL_SSLVERSION_TLSv1_2, CURL_SSLVERSION_MAX_TLSv1_2,
                             "ECDHE-RSA-AES128-GCM-SHA256"),
                     200);
    assert_int_equal(tls_get(f, cert, CURL_SSLVERSION_TLSv1_0, CURL_SSLVERSION_MAX_TLSv1_1, NULL),
                     0);
    assert_int_equal(tls_get(f, cert, CURL_SSLVERSION_TLSv1_2, CURL_SSLVERSION_MAX_TLSv1_2,
                             "AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA:@SECLEVEL=0"),
                     0);
    stop_clean(f);
    /* configurable: GnuTLS's NORMAL takes TLS 1.1 back */
    const char *normal[] = {"--tls-cert",       cert,     "--tls-key", key,
                            "--tls-priorities", "NORMAL", NULL};
    start(f, normal);
    assert_int_equal(tls_get(f, cert, CURL_SSLVERSION_TLSv1_0, CURL_SSLVERSION_MAX_TLSv1_1, NULL),
                     200);
    stop_clean(f);
    /* a priority string GnuTLS cannot read stops the start, saying where */
    const char *bad[] = {"--tls-cert",        cert, "--tls-key", key, "--tls-priorities",
                         "SECURE128:+NOSUCH", NULL};
    assert_int_equal(tdaemon_launch(f->d, bad, 0), 1000 + 1);
    char *log = tdaemon_stderr(f->d);
    assert_non_null(strstr(log, "--tls-priorities"));
    assert_non_null(strstr(log, "NOSUCH"));
    free(log);
}

static void test_tls_bad_setup(void **state)
{
    struct fx *f = *state;
    char cert[256], key[256], junk[256];
    make_cert(f, cert, key, sizeof cert);
    const char *only_cert[] = {"--tls-cert", cert, NULL};
    assert_int_equal(tdaemon_launch(f->d, only_cert, 0), 1000 + 2);
    const char *missing[] = {"--tls-cert", cert, "--tls-key", "/nonexistent/key.pem", NULL};
    assert_int_equal(tdaemon_launch(f->d, missing, 0), 1000 + 1);
    snprintf(junk, sizeof junk, "%s/junk.pem", tdaemon_dir(f->d));
    FILE *j = fopen(junk, "w");
    assert_non_null(j);
    fputs("not a key\n", j);
    assert_int_equal(fclose(j), 0);
    const char *bad[] = {"--tls-cert", cert, "--tls-key", junk, NULL};
    assert_int_equal(tdaemon_launch(f->d, bad, 0), 1000 + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_without_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_401_missing_or_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_matrix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_need_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke_takes_effect_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_key_picked_up_by_polling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_revoked_stays_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_cli, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_cli_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_key_on_two_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_loopback_needs_key_or_insecure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_ipv6_and_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_bad_setup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_versions_and_key_exchange, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
