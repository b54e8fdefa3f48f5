/*
 * test_rewards.c — what happens to outcomes (docs/contract.md, rewards): the
 * same reward twice is a duplicate counted once; a different value for the
 * same assignment is a conflict that changes nothing; an unknown id is
 * "unknown" (404 when alone); an assignment past its TTL expires — with
 * the experiment's default_reward recorded or released without one — and
 * a reward arriving after that answers "expired" and changes nothing.
 * Batches: count on assignments, lists of rewards and observations with
 * per-item results, caps (--max-batch, --max-count), and a batch with one
 * bad item changes nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/harness.h"

#define MAX_BATCH 10
#define MAX_COUNT 20
#define EXPIRY_TIMEOUT_MS 30000 /* generous: TTL 1 s, sweeper every second */

static int group_setup(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-batch", "10", "--max-count", "20", NULL};
    return tgroup_start(extra);
}

static struct tresp *post(const char *exp, const char *what, const char *body)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/experiments/%s/%s", exp, what);
    return treq(tgroup_d, "POST", path, body, NULL);
}

/* Σ mean × pulls over the two arms of bandit 0 in a status: the sum of the
 * rewards counted, in the experiment's units. */
static double reward_sum(const json_t *st)
{
    double sum = 0;
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof path, "bandits[0].arms[%d].mean", i);
        json_t *m = tjson_get(st, path);
        snprintf(path, sizeof path, "bandits[0].arms[%d].pulls", i);
        if (json_is_number(m))
            sum += json_number_value(m) * (double)tjson_int(st, path);
    }
    return sum;
}

/* --- duplicates, conflicts, unknown ---------------------------------------------- */

static void test_duplicate_and_conflict(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"dc\",\"arms\":[\"a\",\"b\"],\"reward\":{\"min\":0,"
                                      "\"max\":10},\"policy\":{\"name\":\"uniform\"},\"seed\":1}"));
    json_t *a = texp_assign(tgroup_d, "dc", "{\"count\":2}");
    const char *id0 = tjson_str(a, "[0].id"), *id1 = tjson_str(a, "[1].id");
    assert_string_equal(texp_reward(tgroup_d, "dc", id0, 7.5), "accepted");
    json_t *st1 = texp_status(tgroup_d, "dc");
    assert_int_equal(tjson_int(st1, "pulls"), 1);
    /* Same value: duplicate (7.5 written differently is the same number). */
    char body[256];
    snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":7.50}", id0);
    struct tresp *r = post("dc", "rewards", body);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 0);
    assert_int_equal(tjson_int(r->json, "duplicates"), 1);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "duplicate");
    assert_string_equal(tjson_str(r->json, "results[0].assignment_id"), id0);
    tresp_free(r);
    /* Different value: conflict, nothing changes. */
    assert_string_equal(texp_reward(tgroup_d, "dc", id0, 2), "conflict");
    json_t *st2 = texp_status(tgroup_d, "dc");
    if (!json_equal(st1, st2))
        fail_msg("a duplicate or a conflict changed the status");
    json_decref(st2);
    /* In one batch: the first report of id1 wins, then duplicate and
     * conflict against it. */
    snprintf(body, sizeof body,
             "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":3},"
             "{\"assignment_id\":\"%s\",\"reward\":3},{\"assignment_id\":\"%s\",\"reward\":4},"
             "{\"assignment_id\":\"%s\",\"reward\":7.5}]}",
             id1, id1, id1, id0);
    r = post("dc", "rewards", body);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 1);
    assert_int_equal(tjson_int(r->json, "duplicates"), 2);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "accepted");
    assert_string_equal(tjson_str(r->json, "results[1].status"), "duplicate");
    assert_string_equal(tjson_str(r->json, "results[2].status"), "conflict");
    assert_string_equal(tjson_str(r->json, "results[3].status"), "duplicate");
    tresp_free(r);
    json_t *st = texp_status(tgroup_d, "dc");
    assert_int_equal(tjson_int(st, "pulls"), 2);
    assert_int_equal(tjson_int(st, "pending"), 0);
    /* Means are in the experiment's units: 7.5 and 3 on whichever arms. */
    double sum = reward_sum(st);
    assert_true(fabs(sum - 10.5) < 1e-9);
    json_decref(st);
    json_decref(st1);
    json_decref(a);
}

/* Duplicates are still answered after the assignment left memory, and after
 * a restart (the store answers them). */
static void test_duplicate_from_disk(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"dd\",\"arms\":[\"a\",\"b\"],\"seed\":2}"));
    json_t *a = texp_assign(tgroup_d, "dd", "{\"count\":5}");
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(
            texp_reward(tgroup_d, "dd", tjson_str(json_array_get(a, i), "id"), (double)(i % 2)),
            "accepted");
    /* Many later assignments push nothing out of a cache, but the rewarded
     * ones are final and answered from disk. */
    json_t *b = texp_assign(tgroup_d, "dd", "{\"count\":20}");
    for (size_t i = 0; i < 5; i++) {
        const char *id = tjson_str(json_array_get(a, i), "id");
        assert_string_equal(texp_reward(tgroup_d, "dd", id, (double)(i % 2)), "duplicate");
        assert_string_equal(texp_reward(tgroup_d, "dd", id, 0.5), "conflict");
    }
    json_t *st = texp_status(tgroup_d, "dd");
    assert_int_equal(tjson_int(st, "pulls"), 5);
    assert_int_equal(tjson_int(st, "pending"), 20);
    json_decref(st);
    json_decref(a);
    json_decref(b);
}

static void test_unknown_in_batch(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"uk\",\"arms\":[\"a\",\"b\"]}"));
    json_t *a = texp_assign(tgroup_d, "uk", NULL);
    const char *id = tjson_str(a, "[0].id");
    char body[512], other[64];
    snprintf(other, sizeof other, "%.8s-999999", id);
    snprintf(body, sizeof body,
             "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1},{\"assignment_id\":\"nope\","
             "\"reward\":1},{\"assignment_id\":\"%s\",\"reward\":0}]}",
             other, id);
    struct tresp *r = post("uk", "rewards", body);
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "results[0].status"), "unknown");
    assert_string_equal(tjson_str(r->json, "results[1].status"), "unknown");
    assert_string_equal(tjson_str(r->json, "results[2].status"), "accepted");
    assert_int_equal(tjson_int(r->json, "accepted"), 1);
    assert_int_equal(tjson_int(r->json, "duplicates"), 0);
    tresp_free(r);
    /* One rule for single and batch: nothing known in the request is a 404
     * naming every unknown item; anything known, a 200 with each status. */
    snprintf(body, sizeof body,
             "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1},"
             "{\"assignment_id\":\"nope\",\"reward\":1}]}",
             other);
    r = post("uk", "rewards", body);
    assert_problem(r, 404);
    assert_true(tproblem_has_field(r, "rewards[0].assignment_id"));
    assert_true(tproblem_has_field(r, "rewards[1].assignment_id"));
    tresp_free(r);
    json_decref(a);
}

/* --- batches ------------------------------------------------------------------------ */

static void test_assignment_count(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"cnt\",\"arms\":[\"a\",\"b\",\"c\"],"
                                      "\"policy\":{\"name\":\"uniform\"},\"seed\":4}"));
    json_t *a = texp_assign(tgroup_d, "cnt", "{\"count\":20}");
    assert_int_equal(json_array_size(a), MAX_COUNT);
    /* Distinct ids, consecutive sequence numbers. */
    for (size_t i = 0; i < MAX_COUNT; i++) {
        const char *id = tjson_str(json_array_get(a, i), "id");
        assert_non_null(id);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(id, tjson_str(json_array_get(a, j), "id"));
        const char *dash = strchr(id, '-');
        assert_non_null(dash);
        assert_int_equal(strtoll(dash + 1, NULL, 10), (long long)i + 1);
        assert_false(json_is_true(json_object_get(json_array_get(a, i), "exploit")));
        assert_non_null(tjson_str(json_array_get(a, i), "expires_at"));
    }
    struct tresp *r = post("cnt", "assignments", "{\"count\":21}");
    assert_invalid(r, "count");
    tresp_free(r);
    json_t *st = texp_status(tgroup_d, "cnt");
    assert_int_equal(tjson_int(st, "pending"), MAX_COUNT);
    assert_int_equal(tjson_int(st, "handed_out"), MAX_COUNT);
    json_decref(st);
    json_decref(a);
}

static void test_reward_batch(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"rb\",\"arms\":[\"a\",\"b\"],\"seed\":5}"));
    json_t *a = texp_assign(tgroup_d, "rb", "{\"count\":12}");
    /* Over the cap: refused whole. */
    json_t *items = json_array();
    for (size_t i = 0; i < 11; i++)
        json_array_append_new(items,
                              json_pack("{s:O,s:i}", "assignment_id",
                                        json_object_get(json_array_get(a, i), "id"), "reward", 1));
    json_t *body = json_pack("{s:O}", "rewards", items);
    char *text = json_dumps(body, JSON_COMPACT);
    struct tresp *r = post("rb", "rewards", text);
    assert_invalid(r, "rewards");
    tresp_free(r);
    free(text);
    json_decref(body);
    /* One bad item in ten: 400 naming it, nothing recorded. */
    json_array_remove(items, 10);
    json_object_set_new(json_array_get(items, 6), "reward", json_string("1"));
    body = json_pack("{s:O}", "rewards", items);
    text = json_dumps(body, JSON_COMPACT);
    r = post("rb", "rewards", text);
    assert_invalid(r, "rewards[6].reward");
    assert_int_equal(json_array_size(json_object_get(r->json, "errors")), 1);
    tresp_free(r);
    free(text);
    json_decref(body);
    json_t *st = texp_status(tgroup_d, "rb");
    assert_int_equal(tjson_int(st, "pulls"), 0);
    assert_int_equal(tjson_int(st, "pending"), 12);
    json_decref(st);
    /* Two bad items: both named. */
    json_object_set_new(json_array_get(items, 2), "reward", json_real(1.5));
    body = json_pack("{s:O}", "rewards", items);
    text = json_dumps(body, JSON_COMPACT);
    r = post("rb", "rewards", text);
    assert_invalid(r, "rewards[6].reward");
    assert_true(tproblem_has_field(r, "rewards[2].reward"));
    tresp_free(r);
    free(text);
    json_decref(body);
    /* Fixed: all ten accepted, per-item results in order. */
    json_object_set_new(json_array_get(items, 2), "reward", json_integer(0));
    json_object_set_new(json_array_get(items, 6), "reward", json_real(0.25));
    body = json_pack("{s:O}", "rewards", items);
    text = json_dumps(body, JSON_COMPACT);
    r = post("rb", "rewards", text);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 10);
    assert_int_equal(json_array_size(json_object_get(r->json, "results")), 10);
    for (size_t i = 0; i < 10; i++) {
        json_t *res = json_array_get(json_object_get(r->json, "results"), i);
        assert_string_equal(tjson_str(res, "status"), "accepted");
        assert_string_equal(tjson_str(res, "assignment_id"), tjson_str(json_array_get(a, i), "id"));
    }
    tresp_free(r);
    /* The same batch again: all duplicates. */
    r = post("rb", "rewards", text);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 0);
    assert_int_equal(tjson_int(r->json, "duplicates"), 10);
    tresp_free(r);
    free(text);
    json_decref(body);
    json_decref(items);
    st = texp_status(tgroup_d, "rb");
    assert_int_equal(tjson_int(st, "pulls"), 10);
    assert_int_equal(tjson_int(st, "pending"), 2);
    json_decref(st);
    json_decref(a);
}

static void test_observation_batch(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ob\",\"bandits\":[{\"id\":\"s1\",\"arms\":[\"a\","
                                      "\"b\"]},{\"id\":\"s2\",\"arms\":[\"a\",\"b\"]}]}"));
    /* Several bandits: each observation names its bandit. */
    struct tresp *r = post("ob", "observations", "{\"arm\":\"a\",\"reward\":1}");
    assert_invalid(r, "bandit");
    tresp_free(r);
    r = post("ob", "observations",
             "{\"observations\":[{\"bandit\":\"s1\",\"arm\":\"a\",\"reward\":1},"
             "{\"bandit\":\"s2\",\"arm\":\"b\",\"reward\":0},"
             "{\"bandit\":\"s2\",\"arm\":\"c\",\"reward\":0}]}");
    assert_invalid(r, "observations[2].arm");
    tresp_free(r);
    json_t *st = texp_status(tgroup_d, "ob");
    assert_int_equal(tjson_int(st, "pulls"), 0);
    json_decref(st);
    r = post("ob", "observations",
             "{\"observations\":[{\"bandit\":\"s1\",\"arm\":\"a\",\"reward\":1},"
             "{\"bandit\":\"s2\",\"arm\":\"b\",\"reward\":0},"
             "{\"bandit\":\"s2\",\"arm\":\"b\",\"reward\":1}]}");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 3);
    tresp_free(r);
    r = post("ob", "observations", "{\"bandit\":\"s1\",\"arm\":\"b\",\"reward\":0.5}");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 1);
    tresp_free(r);
    st = texp_status(tgroup_d, "ob");
    /* Observations count as evidence (pulls) but were never handed out. */
    assert_int_equal(tjson_int(st, "pulls"), 4);
    assert_int_equal(tjson_int(st, "handed_out"), 0);
    assert_int_equal(tjson_int(st, "bandits[0].arms[0].pulls"), 1);
    assert_int_equal(tjson_int(st, "bandits[0].arms[1].pulls"), 1);
    assert_int_equal(tjson_int(st, "bandits[1].arms[0].pulls"), 0);
    assert_int_equal(tjson_int(st, "bandits[1].arms[1].pulls"), 2);
    assert_true(fabs(tjson_num(st, "bandits[1].arms[1].mean") - 0.5) < 1e-12);
    assert_true(fabs(tjson_num(st, "bandits[0].arms[1].mean") - 0.5) < 1e-12);
    json_decref(st);
}

/* --- expiry -------------------------------------------------------------------------- */

/* Wait until the experiment's summary in the list (which does not itself
 * trigger expiry: only the sweeper can have expired them) shows no pending
 * assignment. */
static void wait_no_pending(const char *id)
{
    for (unsigned waited = 0; waited < EXPIRY_TIMEOUT_MS; waited += 100) {
        struct tresp *r = treq(tgroup_d, "GET", "/v1/experiments?limit=1000", NULL, NULL);
        assert_status(r, 200);
        size_t i;
        json_t *e;
        long long pending = -1;
        json_array_foreach(json_object_get(r->json, "experiments"), i,
                           e) if (strcmp(tjson_str(e, "id"), id) == 0) pending =
            tjson_int(e, "pending");
        tresp_free(r);
        assert_true(pending >= 0);
        if (pending == 0)
            return;
        tsleep_ms(100);
    }
    fail_msg("%s: assignments not expired by the sweeper within %d ms", id, EXPIRY_TIMEOUT_MS);
}

static void test_expiry_without_default(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ex\",\"arms\":[\"a\",\"b\"],"
                                      "\"assignment_ttl_s\":1,\"policy\":{\"name\":\"uniform\"},"
                                      "\"seed\":6}"));
    json_t *a = texp_assign(tgroup_d, "ex", "{\"count\":4}");
    /* One answered in time. */
    assert_string_equal(texp_reward(tgroup_d, "ex", tjson_str(a, "[0].id"), 1), "accepted");
    json_t *st = texp_status(tgroup_d, "ex");
    assert_int_equal(tjson_int(st, "pending"), 3);
    json_decref(st);
    wait_no_pending("ex");
    st = texp_status(tgroup_d, "ex");
    assert_int_equal(tjson_int(st, "pending"), 0);
    assert_int_equal(tjson_int(st, "pulls"), 1); /* released, not rewarded */
    /* Late rewards answer "expired" and change nothing. */
    for (int i = 1; i < 4; i++)
        assert_string_equal(
            texp_reward(tgroup_d, "ex", tjson_str(json_array_get(a, (size_t)i), "id"), 1),
            "expired");
    /* Re-sent, a late reward is the one already recorded (no second audit
     * row: issue 12); another value is a conflict that records nothing. */
    assert_string_equal(texp_reward(tgroup_d, "ex", tjson_str(a, "[1].id"), 1), "expired");
    assert_string_equal(texp_reward(tgroup_d, "ex", tjson_str(a, "[1].id"), 0), "conflict");
    struct tresp *ex = treq(tgroup_d, "GET", "/v1/experiments/ex/export?format=csv", NULL, NULL);
    assert_status(ex, 200);
    int late_rows = 0;
    for (const char *p = ex->body; (p = strstr(p, "late_reward,")) != NULL; p++)
        late_rows++;
    assert_int_equal(late_rows, 3);
    tresp_free(ex);
    /* The rewarded one is still a duplicate. */
    assert_string_equal(texp_reward(tgroup_d, "ex", tjson_str(a, "[0].id"), 1), "duplicate");
    json_t *st2 = texp_status(tgroup_d, "ex");
    if (!json_equal(st, st2))
        fail_msg("a late reward changed the status");
    json_decref(st2);
    json_decref(st);
    json_decref(a);
}

static void test_expiry_with_default(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"exd\",\"arms\":[\"a\",\"b\"],"
                                      "\"reward\":{\"min\":0,\"max\":4},\"default_reward\":1,"
                                      "\"assignment_ttl_s\":1,\"policy\":{\"name\":\"uniform\"},"
                                      "\"seed\":7}"));
    json_t *a = texp_assign(tgroup_d, "exd", "{\"count\":6}");
    assert_string_equal(texp_reward(tgroup_d, "exd", tjson_str(a, "[0].id"), 3), "accepted");
    wait_no_pending("exd");
    json_t *st = texp_status(tgroup_d, "exd");
    assert_int_equal(tjson_int(st, "pending"), 0);
    /* The five expired ones count with the default reward. */
    assert_int_equal(tjson_int(st, "pulls"), 6);
    double sum = reward_sum(st);
    assert_true(fabs(sum - (3 + 5 * 1)) < 1e-9);
    for (int i = 1; i < 6; i++)
        assert_string_equal(
            texp_reward(tgroup_d, "exd", tjson_str(json_array_get(a, (size_t)i), "id"), 4),
            "expired");
    json_t *st2 = texp_status(tgroup_d, "exd");
    if (!json_equal(st, st2))
        fail_msg("a late reward changed the status");
    json_decref(st2);
    json_decref(st);
    /* The experiment's document says what it records. */
    struct tresp *r = treq(tgroup_d, "GET", "/v1/experiments/exd", NULL, NULL);
    assert_status(r, 200);
    assert_true(fabs(tjson_num(r->json, "default_reward") - 1) < 1e-12);
    assert_int_equal(tjson_int(r->json, "assignment_ttl_s"), 1);
    tresp_free(r);
    json_decref(a);
}

/* Expiry survives a restart: the expired assignments stay expired, late
 * rewards still answer "expired". */
static void test_expiry_after_restart(void **state)
{
    (void)state;
    json_t *before = texp_status(tgroup_d, "exd");
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *after = texp_status(tgroup_d, "exd");
    if (!json_equal(before, after))
        fail_msg("status changed across the restart");
    json_decref(before);
    json_decref(after);
    /* Assignments handed out before the restart, expiring while it was
     * down: expired at the first request after it. */
    json_t *a = texp_assign(tgroup_d, "ex", "{\"count\":2}");
    assert_int_equal(tdaemon_kill(tgroup_d), 0);
    tsleep_ms(1100);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    assert_string_equal(texp_reward(tgroup_d, "ex", tjson_str(a, "[0].id"), 1), "expired");
    json_t *st = texp_status(tgroup_d, "ex");
    assert_int_equal(tjson_int(st, "pending"), 0);
    json_decref(st);
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duplicate_and_conflict), cmocka_unit_test(test_duplicate_from_disk),
        cmocka_unit_test(test_unknown_in_batch),       cmocka_unit_test(test_assignment_count),
        cmocka_unit_test(test_reward_batch),           cmocka_unit_test(test_observation_batch),
        cmocka_unit_test(test_expiry_without_default), cmocka_unit_test(test_expiry_with_default),
        cmocka_unit_test(test_expiry_after_restart),
    };
    return cmocka_run_group_tests(tests, group_setup, tgroup_teardown);
}
