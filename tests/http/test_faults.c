/*
 * test_faults.c — a write that fails (disk full, injected through the
 * store's BANDITD_STORE_FAIL_COMMITS=K+N: K commits pass, the next N fail)
 * answers 503 problem+json with Retry-After, records nothing (memory is
 * reloaded from disk before the next request, so it never keeps what the
 * disk lost), and the experiment carries on afterwards — also across a
 * restart. Plus the per-experiment cap on outstanding assignments (429).
 *
 * The client is sequential, so each write request is exactly one commit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

static void assert_503(struct tresp *r)
{
    assert_problem(r, 503);
    assert_non_null(tresp_header(r, "Retry-After"));
}

static void test_failed_writes_record_nothing(void **state)
{
    (void)state;
    /* Commits: 1 create, 2 assign; 3 and 4 fail; then all pass. */
    setenv("BANDITD_STORE_FAIL_COMMITS", "2+2", 1);
    struct tdaemon *d = tdaemon_start(NULL);
    unsetenv("BANDITD_STORE_FAIL_COMMITS"); /* restarts run without faults */
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"f\",\"arms\":[\"a\",\"b\"],"
                               "\"policy\":{\"name\":\"uniform\"},\"seed\":1}"));
    json_t *a1 = texp_assign(d, "f", NULL);
    const char *id1 = tjson_str(a1, "[0].id");
    json_t *before = texp_status(d, "f");

    /* Commit 3 fails: the reward is not recorded. */
    struct tresp *r =
        treqf(d, "POST", "/v1/experiments/f/rewards", "{\"assignment_id\":\"%s\",\"reward\":1}", id1);
    assert_503(r);
    tresp_free(r);
    json_t *st = texp_status(d, "f");
    assert_int_equal(tjson_int(st, "pulls"), 0);
    assert_int_equal(tjson_int(st, "pending"), 1);
    json_decref(st);

    /* Commit 4 fails: no assignment is handed out. */
    r = treq(d, "POST", "/v1/experiments/f/assignments", "{\"count\":3}", NULL);
    assert_503(r);
    assert_null(json_object_get(r->json, "assignments"));
    tresp_free(r);
    st = texp_status(d, "f");
    if (!json_equal(before, st)) {
        char *t1 = json_dumps(before, JSON_COMPACT), *t2 = json_dumps(st, JSON_COMPACT);
        fail_msg("failed writes changed the status:\nbefore %s\nafter  %s", t1, t2);
    }
    json_decref(st);

    /* The disk is back: the same reward is accepted (not a duplicate: the
     * first one never happened), assignments continue. */
    assert_string_equal(texp_reward(d, "f", id1, 1), "accepted");
    json_t *a2 = texp_assign(d, "f", "{\"count\":2}");
    assert_int_equal(json_array_size(a2), 2);
    assert_string_not_equal(tjson_str(a2, "[0].id"), id1);
    assert_string_equal(texp_reward(d, "f", tjson_str(a2, "[0].id"), 0), "accepted");
    st = texp_status(d, "f");
    assert_int_equal(tjson_int(st, "pulls"), 2);
    assert_int_equal(tjson_int(st, "pending"), 1);
    assert_int_equal(tjson_int(st, "handed_out"), 3);

    /* What memory says is what the disk says. */
    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    json_t *after = texp_status(d, "f");
    if (!json_equal(st, after))
        fail_msg("status differs after a restart following failed writes");
    json_decref(after);
    json_decref(st);
    assert_string_equal(texp_reward(d, "f", tjson_str(a2, "[1].id"), 1), "accepted");
    assert_string_equal(texp_reward(d, "f", id1, 1), "duplicate");
    json_decref(a2);
    json_decref(a1);
    json_decref(before);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* A create whose commit fails leaves no experiment behind. */
static void test_failed_create(void **state)
{
    (void)state;
    setenv("BANDITD_STORE_FAIL_COMMITS", "1", 1);
    struct tdaemon *d = tdaemon_start(NULL);
    unsetenv("BANDITD_STORE_FAIL_COMMITS");
    assert_non_null(d);
    struct tresp *r =
        treq(d, "POST", "/v1/experiments", "{\"id\":\"nope\",\"arms\":[\"a\",\"b\"]}", NULL);
    assert_503(r);
    tresp_free(r);
    r = treq(d, "GET", "/v1/experiments/nope", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    /* The id is free again. */
    json_decref(texp_create(d, "{\"id\":\"nope\",\"arms\":[\"a\",\"b\"]}"));
    assert_int_equal(tdaemon_restart(d), 0);
    r = treq(d, "GET", "/v1/experiments/nope", NULL, NULL);
    assert_status(r, 200);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* --max-pending: a request beyond the cap gets what fits, then 429. */
static void test_too_many_pending(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-pending", "5", NULL};
    struct tdaemon *d = tdaemon_start(extra);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"cap\",\"arms\":[\"a\",\"b\"]}"));
    json_t *a = texp_assign(d, "cap", "{\"count\":8}");
    assert_int_equal(json_array_size(a), 5);
    struct tresp *r = treq(d, "POST", "/v1/experiments/cap/assignments", "{}", NULL);
    assert_problem(r, 429);
    tresp_free(r);
    /* A reward frees a place. */
    assert_string_equal(texp_reward(d, "cap", tjson_str(a, "[0].id"), 1), "accepted");
    json_t *b = texp_assign(d, "cap", NULL);
    assert_int_equal(json_array_size(b), 1);
    json_decref(b);
    json_decref(a);
    json_t *st = texp_status(d, "cap");
    assert_int_equal(tjson_int(st, "pending"), 5);
    json_decref(st);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_writes_record_nothing),
        cmocka_unit_test(test_failed_create),
        cmocka_unit_test(test_too_many_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
