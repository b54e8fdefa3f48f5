/*
 * test_leases.c — assignment blocks (issue 16) against the real daemon: a
 * client leases a block (count), hands some out, and releases the rest
 * (POST .../assignments/release): released assignments count nowhere
 * (pending exact, no default reward, the budget's place given back),
 * releasing again is a duplicate, across a restart too; a reward after a
 * release is late (not counted); a rewarded assignment is not released;
 * the export says "released"; bad bodies and unknown ids as for rewards.
 * Which unit got which (POST .../assignments/served): the unit gets its
 * assignment back from then on (memory, then disk after a restart), the
 * latest one bound wins, another unit's is a conflict, the same again a
 * duplicate; the export has a row per binding.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/support/harness.h"

#define REL "/v1/experiments/blk/assignments/release"

/* The ids of a new block of n assignments (into ids[n][64]). */
static void lease(const char *exp, int n, char ids[][64])
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", exp);
    struct tresp *r = treqf(tgroup_d, "POST", path, "{\"count\":%d}", n);
    assert_status(r, 201);
    assert_int_equal(json_array_size(tjson_get(r->json, "assignments")), (size_t)n);
    for (int i = 0; i < n; i++) {
        char p[48];
        snprintf(p, sizeof p, "assignments[%d].id", i);
        snprintf(ids[i], 64, "%s", tjson_str(r->json, p));
    }
    tresp_free(r);
}

/* POST a release batch of ids[from..to) (and extra raw items); the answer. */
static struct tresp *release(const char *path, char ids[][64], int from, int to)
{
    json_t *items = json_array();
    for (int i = from; i < to; i++)
        json_array_append_new(items, json_pack("{s:s}", "assignment_id", ids[i]));
    json_t *body = json_pack("{s:o}", "releases", items);
    struct tresp *r = treq_json(tgroup_d, "POST", path, body);
    json_decref(body);
    return r;
}

static long long status_int(const char *exp, const char *path)
{
    char url[128];
    snprintf(url, sizeof url, "/v1/experiments/%s/status", exp);
    struct tresp *r = treq(tgroup_d, "GET", url, NULL, NULL);
    assert_status(r, 200);
    long long v = tjson_int(r->json, path);
    tresp_free(r);
    return v;
}

static void test_release_leftovers(void **state)
{
    (void)state;
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments",
                           "{\"id\":\"blk\",\"arms\":[\"a\",\"b\"],\"default_reward\":0}", NULL);
    assert_status(r, 201);
    tresp_free(r);
    char ids[10][64];
    lease("blk", 10, ids);
    assert_int_equal(status_int("blk", "pending"), 10);
    /* three visitors served and rewarded, the other seven given back */
    r = treqf(tgroup_d, "POST", "/v1/experiments/blk/rewards",
              "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1},{\"assignment_id\":\"%s\","
              "\"reward\":0},{\"assignment_id\":\"%s\",\"reward\":1}]}",
              ids[0], ids[1], ids[2]);
    assert_status(r, 200);
    tresp_free(r);
    r = release(REL, ids, 3, 10);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "released"), 7);
    assert_int_equal(tjson_int(r->json, "duplicates"), 0);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "released");
    tresp_free(r);
    /* pending exact; nothing recorded for them, not even default_reward */
    assert_int_equal(status_int("blk", "pending"), 0);
    assert_int_equal(status_int("blk", "pulls"), 3);
    /* again (a retry): duplicates, nothing changes; a rewarded one is kept */
    r = release(REL, ids, 0, 10);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "released"), 0);
    assert_int_equal(tjson_int(r->json, "duplicates"), 7);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "rewarded");
    assert_string_equal(tjson_str(r->json, "results[9].status"), "duplicate");
    tresp_free(r);
    /* a reward after the release is late: recorded for the audit only */
    r = treqf(tgroup_d, "POST", "/v1/experiments/blk/rewards",
              "{\"assignment_id\":\"%s\",\"reward\":1}", ids[5]);
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "expired");
    tresp_free(r);
    assert_int_equal(status_int("blk", "pulls"), 3);
    /* the audit trail says which were released */
    r = treq(tgroup_d, "GET", "/v1/experiments/blk/export?format=ndjson", NULL, NULL);
    assert_status(r, 200);
    int released = 0, rewarded = 0;
    for (char *line = r->body; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        json_t *row = json_loadb(line, nl ? (size_t)(nl - line) : strlen(line), 0, NULL);
        const char *st = json_string_value(json_object_get(row, "status"));
        released += st != NULL && strcmp(st, "released") == 0;
        rewarded += st != NULL && strcmp(st, "rewarded") == 0;
        json_decref(row);
        line = nl ? nl + 1 : NULL;
    }
    tresp_free(r);
    assert_int_equal(released, 7);
    assert_int_equal(rewarded, 3);
    /* after a restart (replay, the store's path): still duplicates */
    assert_int_equal(tdaemon_stop(tgroup_d), 0);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    assert_int_equal(status_int("blk", "pulls"), 3);
    assert_int_equal(status_int("blk", "pending"), 0);
    r = release(REL, ids, 0, 10);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "duplicates"), 7);
    assert_string_equal(tjson_str(r->json, "results[1].status"), "rewarded");
    tresp_free(r);
}

static void test_release_frees_the_budget(void **state)
{
    (void)state;
    struct tresp *r =
        treq(tgroup_d, "POST", "/v1/experiments",
             "{\"id\":\"bud\",\"arms\":[\"a\",\"b\"],\"policy\":{\"name\":\"uniform\","
             "\"params\":{}},\"goal\":{\"budget\":10}}",
             NULL);
    assert_status(r, 201);
    tresp_free(r);
    char ids[8][64];
    lease("bud", 8, ids);
    /* four of them given back: their places in the budget are free again
     * (a budget handed out in full ends exploration at once: release
     * before that) */
    r = release("/v1/experiments/bud/assignments/release", ids, 4, 8);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "released"), 4);
    tresp_free(r);
    char more[6][64];
    lease("bud", 6, more);
    r = treq(tgroup_d, "GET", "/v1/experiments/bud/status", NULL, NULL);
    assert_int_equal(tjson_int(r->json, "pending"), 10);
    tresp_free(r);
    /* and now it is spent: the next one serves the recommendation */
    r = treq(tgroup_d, "POST", "/v1/experiments/bud/assignments", "{}", NULL);
    assert_status(r, 201);
    assert_true(json_is_true(tjson_get(r->json, "assignments[0].exploit")));
    tresp_free(r);
}

static void test_release_bad_requests(void **state)
{
    (void)state;
    struct tresp *r =
        treq(tgroup_d, "POST", "/v1/experiments", "{\"id\":\"bad\",\"arms\":[\"a\",\"b\"]}", NULL);
    assert_status(r, 201);
    tresp_free(r);
    const char *path = "/v1/experiments/bad/assignments/release";
    r = treq(tgroup_d, "POST", path, "{\"releases\":[{\"assignment_id\":3}]}", NULL);
    assert_problem(r, 400);
    assert_true(tproblem_has_field(r, "releases[0].assignment_id"));
    tresp_free(r);
    r = treq(tgroup_d, "POST", path, "{\"releases\":[]}", NULL);
    assert_problem(r, 400);
    tresp_free(r);
    r = treq(tgroup_d, "POST", path, "{\"assignment_id\":\"x\",\"other\":1}", NULL);
    assert_problem(r, 400);
    tresp_free(r);
    r = treq(tgroup_d, "POST", path, "{\"assignment_id\":\"nope\"}", NULL);
    assert_problem(r, 404);
    tresp_free(r);
    r = treq(tgroup_d, "POST", "/v1/experiments/none/assignments/release",
             "{\"assignment_id\":\"x\"}", NULL);
    assert_problem(r, 404);
    tresp_free(r);
}

/* What a unit gets when it asks (its assignment id), into id. */
static void ask(const char *unit, char *id, size_t len)
{
    struct tresp *r =
        treqf(tgroup_d, "POST", "/v1/experiments/srv/assignments", "{\"unit\":\"%s\"}", unit);
    assert_true(r->status == 200 || r->status == 201);
    snprintf(id, len, "%s", tjson_str(r->json, "assignments[0].id"));
    tresp_free(r);
}

static struct tresp *serve(const char *aid, const char *unit)
{
    return treqf(tgroup_d, "POST", "/v1/experiments/srv/assignments/served",
                 "{\"served\":[{\"assignment_id\":\"%s\",\"unit\":\"%s\"}]}", aid, unit);
}

static void test_served_units(void **state)
{
    (void)state;
    struct tresp *r =
        treq(tgroup_d, "POST", "/v1/experiments", "{\"id\":\"srv\",\"arms\":[\"a\",\"b\"]}", NULL);
    assert_status(r, 201);
    tresp_free(r);
    char ids[3][64], got[64];
    lease("srv", 3, ids);
    /* the client hands ids[0] to u1 and says so */
    r = serve(ids[0], "u1");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "bound"), 1);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "bound");
    tresp_free(r);
    ask("u1", got, sizeof got);
    assert_string_equal(got, ids[0]);
    /* again: a duplicate; to another unit: a conflict */
    r = serve(ids[0], "u1");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "duplicate");
    assert_int_equal(tjson_int(r->json, "duplicates"), 1);
    tresp_free(r);
    r = serve(ids[0], "u2");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "conflict");
    tresp_free(r);
    /* u1 comes back through another client's block: its latest wins */
    r = serve(ids[1], "u1");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "bound");
    tresp_free(r);
    ask("u1", got, sizeof got);
    assert_string_equal(got, ids[1]);
    /* a unit that asked itself (its own assignment) cannot be rebound */
    char own[64];
    ask("u3", own, sizeof own);
    r = serve(own, "u4");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "conflict");
    tresp_free(r);
    /* from the disk after a restart */
    assert_int_equal(tdaemon_stop(tgroup_d), 0);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    ask("u1", got, sizeof got);
    assert_string_equal(got, ids[1]);
    r = serve(ids[0], "u1");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "duplicate");
    tresp_free(r);
    r = serve(ids[1], "u5");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "conflict");
    tresp_free(r);
    r = serve(ids[2], "u6");
    assert_string_equal(tjson_str(r->json, "results[0].status"), "bound");
    tresp_free(r);
    ask("u6", got, sizeof got);
    assert_string_equal(got, ids[2]);
    /* the audit trail: one row per binding */
    r = treq(tgroup_d, "GET", "/v1/experiments/srv/export?format=csv", NULL, NULL);
    assert_status(r, 200);
    int rows = 0;
    for (const char *p = r->body; (p = strstr(p, "\nunit,")) != NULL; p++)
        rows++;
    assert_int_equal(rows, 3);
    tresp_free(r);
    /* bad items */
    r = treq(tgroup_d, "POST", "/v1/experiments/srv/assignments/served",
             "{\"served\":[{\"assignment_id\":\"x\",\"unit\":\"\"}]}", NULL);
    assert_problem(r, 400);
    assert_true(tproblem_has_field(r, "served[0].unit"));
    tresp_free(r);
    r = treq(tgroup_d, "POST", "/v1/experiments/srv/assignments/served",
             "{\"assignment_id\":\"nope\",\"unit\":\"u\"}", NULL);
    assert_problem(r, 404);
    tresp_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_leftovers),
        cmocka_unit_test(test_release_frees_the_budget),
        cmocka_unit_test(test_release_bad_requests),
        cmocka_unit_test(test_served_units),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
