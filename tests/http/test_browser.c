/*
 * test_browser.c — calling the API from web pages (issue 16), against the
 * real daemon with libcurl: CORS off by default (no Access-Control-*
 * header, preflights refused), the allowed origins (--cors-origins) with
 * Vary: Origin on every answer and the exposed headers, "*", a plain
 * OPTIONS; keys limited to named experiments (keys create --experiments)
 * that can do nothing else, sent as ?access_token= by a beacon with a
 * text/plain body; rate limits per key and per address (429
 * problem+json with Retry-After).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "tests/support/harness.h"

#define KEYLEN 128
#define ORIGIN "http://127.0.0.1:9"

static void start(struct tdaemon *d, const char *const *args)
{
    int rc = tdaemon_launch(d, args, 0);
    if (rc != 0) {
        char *e = tdaemon_stderr(d);
        fail_msg("daemon did not start (%d): %s", rc, e ? e : "");
    }
}

static void stop_clean(struct tdaemon *d)
{
    assert_int_equal(tdaemon_stop(d), 0);
}

/* Whether the comma-separated header value holds token (case-insensitive). */
static int has_token(const char *value, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = value; p != NULL && *p != '\0';) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, ",");
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len == n && strncasecmp(p, token, n) == 0)
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}

static void create(struct tdaemon *d, const char *key, const char *id)
{
    char body[128], auth[200];
    snprintf(body, sizeof body, "{\"id\":\"%s\",\"arms\":[\"red\",\"green\"]}", id);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key != NULL ? key : "");
    const char *h[] = {auth, NULL};
    struct tresp *r = treq(d, "POST", "/v1/experiments", body, key != NULL ? h : NULL);
    assert_status(r, 201);
    tresp_free(r);
}

static const char *const preflight_hdrs[] = {"Origin: " ORIGIN,
                                             "Access-Control-Request-Method: POST",
                                             "Access-Control-Request-Headers: authorization", NULL};
static const char *const origin_hdrs[] = {"Origin: " ORIGIN, NULL};

static void test_cors_off_by_default(void **state)
{
    struct tdaemon *d = *state;
    start(d, NULL);
    create(d, NULL, "e1");
    struct tresp *r = treq(d, "GET", "/v1/experiments/e1", NULL, origin_hdrs);
    assert_status(r, 200);
    assert_null(tresp_header(r, "Access-Control-Allow-Origin"));
    assert_null(tresp_header(r, "Vary")); /* nothing varies by origin */
    tresp_free(r);
    r = treq(d, "OPTIONS", "/v1/experiments/e1/assignments", NULL, preflight_hdrs);
    assert_problem(r, 403);
    assert_string_equal(tjson_str(r->json, "type"), "urn:banditd:problem:origin-not-allowed");
    assert_null(tresp_header(r, "Access-Control-Allow-Origin"));
    assert_null(tresp_header(r, "Access-Control-Allow-Methods"));
    tresp_free(r);
    /* a plain OPTIONS: the methods of the path */
    r = treq(d, "OPTIONS", "/v1/experiments/e1", NULL, NULL);
    assert_status(r, 204);
    assert_true(has_token(tresp_allow(r), "GET") && has_token(tresp_allow(r), "PATCH") &&
                has_token(tresp_allow(r), "DELETE") && has_token(tresp_allow(r), "OPTIONS"));
    tresp_free(r);
    r = treq(d, "OPTIONS", "/v1/nothing-here", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    stop_clean(d);
}

static void test_cors_allowed_origins(void **state)
{
    struct tdaemon *d = *state;
    static const char *const args[] = {"--cors-origins", "https://shop.example, " ORIGIN, NULL};
    start(d, args);
    create(d, NULL, "e1");
    /* a preflight from an allowed origin: no key needed, the path's methods */
    struct tresp *r = treq(d, "OPTIONS", "/v1/experiments/e1/assignments", NULL, preflight_hdrs);
    assert_status(r, 204);
    assert_string_equal(tresp_header(r, "Access-Control-Allow-Origin"), ORIGIN);
    assert_true(has_token(tresp_header(r, "Access-Control-Allow-Methods"), "POST"));
    assert_true(has_token(tresp_header(r, "Access-Control-Allow-Headers"), "Authorization"));
    assert_true(has_token(tresp_header(r, "Access-Control-Allow-Headers"), "Content-Type"));
    assert_non_null(tresp_header(r, "Access-Control-Max-Age"));
    assert_true(has_token(tresp_header(r, "Vary"), "Origin"));
    assert_null(tresp_header(r, "Access-Control-Allow-Credentials"));
    tresp_free(r);
    /* an answer, and an error, readable by the page, with the headers a
     * client needs exposed */
    const char *paths[] = {"/v1/experiments/e1/status", "/v1/experiments/nope"};
    for (size_t i = 0; i < 2; i++) {
        r = treq(d, "GET", paths[i], NULL, origin_hdrs);
        assert_status(r, i == 0 ? 200 : 404);
        assert_string_equal(tresp_header(r, "Access-Control-Allow-Origin"), ORIGIN);
        const char *expose = tresp_header(r, "Access-Control-Expose-Headers");
        assert_true(has_token(expose, "ETag") && has_token(expose, "Retry-After") &&
                    has_token(expose, "Banditd-Next-After"));
        assert_true(has_token(tresp_header(r, "Vary"), "Origin"));
        tresp_free(r);
    }
    /* another origin: no grant, still Vary (a cache must tell them apart) */
    static const char *const other[] = {"Origin: https://evil.example", NULL};
    r = treq(d, "GET", "/v1/experiments/e1", NULL, other);
    assert_status(r, 200);
    assert_null(tresp_header(r, "Access-Control-Allow-Origin"));
    assert_true(has_token(tresp_header(r, "Vary"), "Origin"));
    tresp_free(r);
    static const char *const other_pre[] = {"Origin: https://evil.example",
                                            "Access-Control-Request-Method: POST", NULL};
    r = treq(d, "OPTIONS", "/v1/experiments/e1/assignments", NULL, other_pre);
    assert_problem(r, 403);
    tresp_free(r);
    /* no Origin at all: Vary all the same */
    r = treq(d, "GET", "/v1/experiments/e1", NULL, NULL);
    assert_true(has_token(tresp_header(r, "Vary"), "Origin"));
    assert_null(tresp_header(r, "Access-Control-Allow-Origin"));
    tresp_free(r);
    /* the dashboard's own Vary is kept */
    static const char *const gz[] = {"Accept-Encoding: gzip", NULL};
    r = treq(d, "GET", "/", NULL, gz);
    assert_status(r, 200);
    assert_true(has_token(tresp_header(r, "Vary"), "Accept-Encoding"));
    assert_true(has_token(tresp_header(r, "Vary"), "Origin"));
    tresp_free(r);
    stop_clean(d);
}

static void test_cors_any_and_bad_lists(void **state)
{
    struct tdaemon *d = *state;
    static const char *const any[] = {"--cors-origins", "*", NULL};
    start(d, any);
    struct tresp *r = treq(d, "GET", "/v1/policies", NULL, origin_hdrs);
    assert_status(r, 200);
    assert_string_equal(tresp_header(r, "Access-Control-Allow-Origin"), "*");
    assert_null(tresp_header(r, "Vary")); /* the same answer for every origin */
    tresp_free(r);
    stop_clean(d);
    const char *bad[] = {"https://shop.example/", "shop.example", "https://Shop.example",
                         "https://a.example/path"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {"--cors-origins", bad[i], NULL};
        int rc = tdaemon_launch(d, args, 0);
        if (rc < 1000) {
            if (rc == 0)
                stop_clean(d);
            fail_msg("--cors-origins %s: started (%d)", bad[i], rc);
        }
        char *e = tdaemon_stderr(d);
        assert_non_null(strstr(e, "--cors-origins"));
        free(e);
    }
}

/* `keys create --experiments LIST --scope S`: the key, or the exit status. */
static int limited_key(struct tdaemon *d, const char *scope, const char *exps, char *key,
                       size_t len)
{
    const char *args[] = {"keys",          "create", "--db", tdaemon_db_path(d), "--scope", scope,
                          "--experiments", exps,     NULL};
    char err[1024];
    int rc = tdaemon_cli(d, args, NULL, key, len, err, sizeof err);
    key[strcspn(key, "\n")] = '\0';
    return rc;
}

static long status_of(struct tdaemon *d, const char *method, const char *path, const char *key,
                      const char *body)
{
    struct tresp *r = treq_key(d, method, path, key, body);
    long s = r->status;
    if (s >= 400)
        assert_problem(r, s);
    tresp_free(r);
    return s;
}

static void test_key_limited_to_experiments(void **state)
{
    struct tdaemon *d = *state;
    char admin[KEYLEN], web[KEYLEN], reader[KEYLEN], out[KEYLEN];
    assert_int_equal(tdaemon_create_key(d, "admin", admin, sizeof admin), 0);
    assert_int_equal(limited_key(d, "assign,report", "checkout-button", web, sizeof web), 0);
    assert_int_equal(limited_key(d, "read", "checkout-button,promo", reader, sizeof reader), 0);
    /* refused by the CLI: admin with a list, bad ids */
    assert_int_equal(limited_key(d, "admin", "checkout-button", out, sizeof out), 2);
    assert_int_equal(limited_key(d, "assign", "a b", out, sizeof out), 2);
    assert_int_equal(limited_key(d, "assign", "a,,b", out, sizeof out), 2);
    assert_int_equal(limited_key(d, "assign", "", out, sizeof out), 2);
    start(d, NULL);
    create(d, admin, "checkout-button");
    create(d, admin, "other");

    /* what the page's key may do: assign and report in its experiment */
    struct tresp *r = treq_key(d, "POST", "/v1/experiments/checkout-button/assignments", web, "{}");
    assert_status(r, 201);
    char aid[128];
    snprintf(aid, sizeof aid, "%s", tjson_str(r->json, "assignments[0].id"));
    tresp_free(r);
    char body[256];
    snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}", aid);
    assert_int_equal(status_of(d, "POST", "/v1/experiments/checkout-button/rewards", web, body),
                     200);
    /* and nothing else: status, create, list, another experiment, admin */
    assert_int_equal(status_of(d, "GET", "/v1/experiments/checkout-button/status", web, NULL), 403);
    assert_int_equal(status_of(d, "POST", "/v1/experiments", web, "{\"arms\":[\"a\",\"b\"]}"), 403);
    assert_int_equal(status_of(d, "GET", "/v1/experiments", web, NULL), 403);
    assert_int_equal(status_of(d, "POST", "/v1/experiments/other/assignments", web, "{}"), 403);
    assert_int_equal(status_of(d, "POST", "/v1/experiments/other/rewards", web, body), 403);
    assert_int_equal(
        status_of(d, "PATCH", "/v1/experiments/checkout-button", web, "{\"state\":\"stopped\"}"),
        403);
    assert_int_equal(status_of(d, "DELETE", "/v1/experiments/checkout-button", web, NULL), 403);
    /* a limited read key: its experiments' status, not the others', not the list */
    assert_int_equal(status_of(d, "GET", "/v1/experiments/checkout-button/status", reader, NULL),
                     200);
    assert_int_equal(status_of(d, "GET", "/v1/experiments/other/status", reader, NULL), 403);
    assert_int_equal(status_of(d, "GET", "/v1/experiments", reader, NULL), 403);
    assert_int_equal(status_of(d, "GET", "/v1/policies", reader, NULL), 403);

    /* a beacon: the key as access_token, the body as text/plain; the
     * same reward again is a duplicate, counted once */
    char path[512];
    snprintf(path, sizeof path, "/v1/experiments/checkout-button/rewards?access_token=%s", web);
    static const char *const text[] = {"Content-Type: text/plain;charset=UTF-8", NULL};
    r = treq(d, "POST", path, body, text);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "duplicates"), 1);
    tresp_free(r);
    /* text/plain only where a beacon goes */
    snprintf(path, sizeof path, "/v1/experiments/checkout-button/assignments?access_token=%s", web);
    r = treq(d, "POST", path, "{}", text);
    assert_problem(r, 415);
    tresp_free(r);
    r = treq(d, "POST", path, "{}", NULL);
    assert_status(r, 201);
    tresp_free(r);
    /* a key over every experiment is never taken from a URL */
    snprintf(path, sizeof path, "/v1/experiments?access_token=%s", admin);
    r = treq(d, "GET", path, NULL, NULL);
    assert_problem(r, 401);
    tresp_free(r);
    r = treq(d, "GET", "/v1/experiments/checkout-button/status?access_token=bd_nope", NULL, NULL);
    assert_problem(r, 401);
    tresp_free(r);

    /* keys list shows the limit */
    const char *la[] = {"keys", "list", "--json", "--db", tdaemon_db_path(d), NULL};
    char listing[8192], err[1024];
    assert_int_equal(tdaemon_cli(d, la, NULL, listing, sizeof listing, err, sizeof err), 0);
    json_t *list = json_loads(listing, 0, NULL);
    assert_non_null(list);
    assert_true(json_is_null(tjson_get(list, "[0].experiments")));
    assert_string_equal(tjson_str(list, "[1].experiments[0]"), "checkout-button");
    assert_string_equal(tjson_str(list, "[2].experiments[1]"), "promo");
    json_decref(list);
    stop_clean(d);
}

/* Requests until the first 429 (at most n): how many passed; the 429 is
 * checked. */
static int until_limited(struct tdaemon *d, const char *key, int n, double *elapsed)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        struct tresp *r = treq_key(d, "GET", "/v1/policies", key, NULL);
        if (r->status == 429) {
            assert_problem(r, 429);
            assert_string_equal(tjson_str(r->json, "type"), "urn:banditd:problem:rate-limited");
            const char *ra = tresp_header(r, "Retry-After");
            assert_non_null(ra);
            assert_true(strtol(ra, NULL, 10) >= 1);
            tresp_free(r);
            break;
        }
        assert_status(r, 200);
        tresp_free(r);
        ok++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return ok;
}

static void test_rate_limits(void **state)
{
    struct tdaemon *d = *state;
    char k1[KEYLEN], k2[KEYLEN];
    assert_int_equal(tdaemon_create_key(d, "read", k1, sizeof k1), 0);
    assert_int_equal(tdaemon_create_key(d, "read", k2, sizeof k2), 0);
    static const char *const args[] = {"--rate-limit", "1", "--rate-burst", "5", NULL};
    start(d, args);
    /* A bucket of 5 refilled at 1/s: the first 5 pass, then at most one
     * more per second elapsed; 60 requests are over it unless they took
     * a minute. */
    double s;
    int ok = until_limited(d, k1, 60, &s);
    assert_true(ok >= 5);
    assert_true(ok <= 5 + (int)s + 1);
    assert_true(ok < 60 || s > 50.0);
    /* each key its own bucket */
    ok = until_limited(d, k2, 3, &s);
    assert_int_equal(ok, 3);
    /* without a key: the client address's bucket (open routes included) */
    int passed = 0, limited = 0;
    for (int i = 0; i < 60 && !limited; i++) {
        struct tresp *r = treq(d, "GET", "/healthz", NULL, NULL);
        if (r->status == 429) {
            assert_problem(r, 429);
            assert_non_null(tresp_header(r, "Retry-After"));
            limited = 1;
        } else {
            assert_status(r, 200);
            passed++;
        }
        tresp_free(r);
    }
    assert_true(passed >= 5);
    stop_clean(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cors_off_by_default, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_cors_allowed_origins, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_cors_any_and_bad_lists, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_key_limited_to_experiments, tfresh_setup,
                                        tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_rate_limits, tfresh_setup, tfresh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
