/*
 * test_units.c — what a unit gets (issue 12, defects 3 and 4;
 * docs/contract.md, "Sticky units" and "Fallback"):
 * - while the experiment cannot explore and has nothing concluded to
 *   serve (paused, or stopped by hand early), a new unit gets the
 *   experiment's fallback: nothing (409) by default, the control arm when
 *   the experiment has one, or the current best when asked; a stop that
 *   concluded (here: a spent budget) serves its recommendation whatever the
 *   fallback;
 * - a returning unit keeps its assignment, but gets the winner after a
 *   stop (units.after_stop "recommendation", the default; "keep" keeps),
 *   a new assignment once its own expired unrewarded (units.after_expiry
 *   "new", the default; "keep" keeps), and one assignment per bandit;
 * - all of it survives a restart (kill -9 and replay).
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

/* One assignment of unit (NULL: none) in bandit (NULL: any); the status
 * code, and the arm, id and exploit flag of a 2xx. */
struct got {
    long status;
    char arm[32], id[64], bandit[32];
    int exploit;
};

static struct got assign(struct tdaemon *d, const char *exp, const char *unit, const char *bandit)
{
    char path[128], body[256] = "{";
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", exp);
    if (unit != NULL)
        snprintf(body + strlen(body), sizeof body - strlen(body), "\"unit\":\"%s\"%s", unit,
                 bandit ? "," : "");
    if (bandit != NULL)
        snprintf(body + strlen(body), sizeof body - strlen(body), "\"bandit\":\"%s\"", bandit);
    snprintf(body + strlen(body), sizeof body - strlen(body), "}");
    struct tresp *r = treq(d, "POST", path, body, NULL);
    struct got g = {.status = r->status};
    if (r->status == 200 || r->status == 201) {
        snprintf(g.arm, sizeof g.arm, "%s", tjson_str(r->json, "assignments[0].arm"));
        snprintf(g.id, sizeof g.id, "%s", tjson_str(r->json, "assignments[0].id"));
        snprintf(g.bandit, sizeof g.bandit, "%s", tjson_str(r->json, "assignments[0].bandit"));
        g.exploit = json_is_true(tjson_get(r->json, "assignments[0].exploit"));
    } else {
        assert_int_equal(r->status, 409);
        assert_string_equal(tresp_header(r, "Content-Type"), "application/problem+json");
    }
    tresp_free(r);
    return g;
}

static void patch(struct tdaemon *d, const char *exp, const char *state)
{
    char path[128], body[64];
    snprintf(path, sizeof path, "/v1/experiments/%s", exp);
    snprintf(body, sizeof body, "{\"state\":\"%s\"}", state);
    json_decref(tcall(d, "PATCH", path, body, 200));
}

static long long handed_out(struct tdaemon *d, const char *exp)
{
    json_t *st = texp_status(d, exp);
    long long h = tjson_int(st, "handed_out");
    json_decref(st);
    return h;
}

/* --- fallback ------------------------------------------------------------------ */

static void test_fallback_while_paused(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    /* Defaults: no control arm → nothing; a control arm → the control. */
    json_decref(texp_create(d, "{\"id\":\"plain\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":2}"));
    json_decref(texp_create(d, "{\"id\":\"ctl\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":2,"
                               "\"constraints\":{\"control\":{\"arm\":\"b\",\"share\":0.2}}}"));
    json_decref(texp_create(d, "{\"id\":\"best\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":2,"
                               "\"fallback\":\"recommendation\"}"));
    json_t *cfg = tcall(d, "GET", "/v1/experiments/plain", NULL, 200);
    assert_string_equal(tjson_str(cfg, "fallback"), "none");
    assert_string_equal(tjson_str(cfg, "units.after_stop"), "recommendation");
    assert_string_equal(tjson_str(cfg, "units.after_expiry"), "new");
    json_decref(cfg);
    cfg = tcall(d, "GET", "/v1/experiments/ctl", NULL, 200);
    assert_string_equal(tjson_str(cfg, "fallback"), "control");
    json_decref(cfg);
    struct tresp *r =
        treq(d, "POST", "/v1/experiments",
             "{\"id\":\"bad\",\"arms\":[\"a\",\"b\"],\"fallback\":\"control\"}", NULL);
    assert_problem(r, 400);
    assert_true(tproblem_has_field(r, "fallback"));
    tresp_free(r);

    static const char *const ids[] = {"plain", "ctl", "best"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(assign(d, ids[i], NULL, NULL).status, 201); /* running: explores */
        patch(d, ids[i], "paused");
    }
    for (int k = 0; k < 5; k++) {
        assert_int_equal(assign(d, "plain", NULL, NULL).status, 409);
        struct got g = assign(d, "ctl", NULL, NULL);
        assert_int_equal(g.status, 201);
        assert_string_equal(g.arm, "b");
        assert_true(g.exploit);
        g = assign(d, "best", NULL, NULL);
        assert_int_equal(g.status, 201);
        assert_true(g.exploit);
    }
    /* A refusal is no event and nothing is counted. */
    assert_int_equal(handed_out(d, "plain"), 1);
    assert_int_equal(handed_out(d, "ctl"), 1);

    /* A stop by hand before any conclusion: the same. */
    patch(d, "plain", "stopped");
    patch(d, "ctl", "stopped");
    assert_int_equal(assign(d, "plain", NULL, NULL).status, 409);
    assert_string_equal(assign(d, "ctl", NULL, NULL).arm, "b");

    /* The fallback assignments replay as they were served. */
    json_t *before = texp_status(d, "ctl");
    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    json_t *after = texp_status(d, "ctl");
    tjson_must_equal(before, after, "status after kill -9");
    json_decref(before);
    json_decref(after);
    assert_string_equal(assign(d, "ctl", NULL, NULL).arm, "b");
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* A spent budget is a conclusion: its recommendation is served whatever
 * the fallback. */
static void test_concluded_stop_serves_recommendation(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"fb\",\"arms\":[\"a\",\"b\"],\"seed\":4,"
                               "\"policy\":{\"name\":\"uniform\"},\"goal\":{\"budget\":4}}"));
    for (int i = 0; i < 4; i++) {
        struct got g = assign(d, "fb", NULL, NULL);
        assert_int_equal(g.status, 201);
        assert_false(g.exploit);
        assert_string_equal(texp_reward(d, "fb", g.id, strcmp(g.arm, "a") == 0), "accepted");
    }
    struct got g = assign(d, "fb", NULL, NULL);
    assert_int_equal(g.status, 201);
    assert_true(g.exploit);
    assert_string_equal(g.arm, "a");
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* --- sticky units ------------------------------------------------------------------ */

static void test_unit_after_stop(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    static const char *const ids[] = {"win", "keep"};
    json_decref(texp_create(d, "{\"id\":\"win\",\"arms\":[\"a\",\"b\"],\"seed\":5,"
                               "\"policy\":{\"name\":\"uniform\"},\"goal\":{\"budget\":6}}"));
    json_decref(texp_create(d, "{\"id\":\"keep\",\"arms\":[\"a\",\"b\"],\"seed\":5,"
                               "\"policy\":{\"name\":\"uniform\"},\"goal\":{\"budget\":6},"
                               "\"units\":{\"after_stop\":\"keep\"}}"));
    for (int e = 0; e < 2; e++) {
        /* Six units, each its own pull: arm a is the better one. */
        struct got first[6];
        char unit[16];
        for (int u = 0; u < 6; u++) {
            snprintf(unit, sizeof unit, "u%d", u);
            first[u] = assign(d, ids[e], unit, NULL);
            assert_int_equal(first[u].status, 201);
            assert_string_equal(texp_reward(d, ids[e], first[u].id, strcmp(first[u].arm, "a") == 0),
                                "accepted");
            /* Before the stop, a returning unit keeps its assignment. */
            struct got again = assign(d, ids[e], unit, NULL);
            if (u < 5) {
                assert_int_equal(again.status, 200);
                assert_string_equal(again.id, first[u].id);
            }
        }
        /* The budget is spent: stopped, "a" is the recommendation. */
        for (int u = 0; u < 6; u++) {
            snprintf(unit, sizeof unit, "u%d", u);
            struct got g = assign(d, ids[e], unit, NULL);
            if (e == 0) {
                /* the winner, as exploitation (once: then that is kept) */
                assert_string_equal(g.arm, "a");
                assert_true(g.exploit);
                struct got again = assign(d, ids[e], unit, NULL);
                assert_int_equal(again.status, 200);
                assert_string_equal(again.id, g.id);
            } else {
                assert_int_equal(g.status, 200);
                assert_string_equal(g.id, first[u].id);
                assert_false(g.exploit);
            }
        }
    }
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

static void test_unit_after_expiry(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"new\",\"arms\":[\"a\",\"b\"],\"seed\":6,"
                               "\"assignment_ttl_s\":1}"));
    json_decref(texp_create(d, "{\"id\":\"old\",\"arms\":[\"a\",\"b\"],\"seed\":6,"
                               "\"assignment_ttl_s\":1,\"units\":{\"after_expiry\":\"keep\"}}"));
    struct got n1 = assign(d, "new", "alice", NULL), o1 = assign(d, "old", "alice", NULL);
    /* a rewarded assignment is kept past its TTL */
    struct got n2 = assign(d, "new", "bob", NULL);
    assert_string_equal(texp_reward(d, "new", n2.id, 1), "accepted");
    tsleep_ms(2200);
    struct got n1b = assign(d, "new", "alice", NULL), o1b = assign(d, "old", "alice", NULL);
    assert_int_equal(n1b.status, 201);
    assert_string_not_equal(n1b.id, n1.id);
    assert_int_equal(o1b.status, 200);
    assert_string_equal(o1b.id, o1.id);
    struct got n2b = assign(d, "new", "bob", NULL);
    assert_int_equal(n2b.status, 200);
    assert_string_equal(n2b.id, n2.id);
    /* the new assignment is the one kept (rewarded, so that its own TTL
     * does not matter), also after a restart */
    assert_string_equal(texp_reward(d, "new", n1b.id, 1), "accepted");
    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    struct got n1c = assign(d, "new", "alice", NULL);
    assert_int_equal(n1c.status, 200);
    assert_string_equal(n1c.id, n1b.id);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

static void test_unit_per_bandit(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"mb\",\"seed\":7,\"bandits\":["
                               "{\"id\":\"eu\",\"arms\":[\"a\",\"b\"]},"
                               "{\"id\":\"us\",\"arms\":[\"a\",\"b\"]}]}"));
    struct got eu = assign(d, "mb", "carol", "eu");
    assert_int_equal(eu.status, 201);
    assert_string_equal(eu.bandit, "eu");
    struct got us = assign(d, "mb", "carol", "us");
    assert_int_equal(us.status, 201);
    assert_string_equal(us.bandit, "us");
    assert_string_not_equal(us.id, eu.id);
    struct got eu2 = assign(d, "mb", "carol", "eu"), us2 = assign(d, "mb", "carol", "us");
    assert_string_equal(eu2.id, eu.id);
    assert_string_equal(us2.id, us.id);
    /* no bandit named: the unit's latest assignment */
    struct got any = assign(d, "mb", "carol", NULL);
    assert_int_equal(any.status, 200);
    assert_string_equal(any.id, us.id);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fallback_while_paused),
        cmocka_unit_test(test_concluded_stop_serves_recommendation),
        cmocka_unit_test(test_unit_after_stop),
        cmocka_unit_test(test_unit_after_expiry),
        cmocka_unit_test(test_unit_per_bandit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
