/*
 * test_edits.c — editing a live experiment over HTTP (PATCH name, goal.budget,
 * assignment_ttl_s, with an optional reason): each change shows at once, is
 * an event of the export, and comes back the same after a restart (the log
 * replays it); a budget never falls below what is used, a cut to it stops
 * the experiment, a stop is never undone; what was randomised is refused by
 * name; a fixed-budget policy plans again from the new budget and spends it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/harness.h"

static struct tresp *patch(const char *id, const char *body)
{
    return texp_req(tgroup_d, "PATCH", id, "", body);
}

static json_t *get_exp(const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    return tcall(tgroup_d, "GET", path, NULL, 200);
}

/* The export's rows of one kind (NDJSON), as a new array. */
static json_t *export_rows(const char *id, const char *kind)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/experiments/%s/export?format=ndjson", id);
    struct tresp *r = treq(tgroup_d, "GET", path, NULL, NULL);
    assert_status(r, 200);
    json_t *rows = json_array();
    for (const char *p = r->body; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        json_t *row = json_loadb(p, (size_t)(nl - p), 0, NULL);
        assert_non_null(row);
        if (strcmp(tjson_str(row, "kind"), kind) == 0)
            json_array_append(rows, row);
        json_decref(row);
        p = nl + 1;
    }
    tresp_free(r);
    return rows;
}

/* Name, TTL and budget change at once, each change is an edit row of the
 * export with its reason and previous values, and all of it survives a
 * restart. */
static void test_edit_and_replay(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed1\",\"name\":\"first\",\"arms\":[\"a\",\"b\","
                                      "\"c\"],\"goal\":{\"budget\":100},\"seed\":3}"));
    struct tresp *r = patch("ed1", "{\"name\":\"second\",\"reason\":\"typo\"}");
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "name"), "second");
    assert_int_equal(tjson_int(r->json, "edits"), 1);
    tresp_free(r);
    r = patch("ed1", "{\"assignment_ttl_s\":60,\"goal\":{\"budget\":50}}");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "assignment_ttl_s"), 60);
    assert_int_equal(tjson_int(r->json, "goal.budget"), 50);
    assert_int_equal(tjson_int(r->json, "edits"), 2);
    tresp_free(r);
    /* The same values again: no change, no event. */
    r = patch("ed1", "{\"name\":\"second\",\"goal\":{\"budget\":50}}");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "edits"), 2);
    tresp_free(r);

    /* A new assignment gets the new TTL. */
    json_t *a = texp_assign(tgroup_d, "ed1", NULL);
    const char *exp_at = tjson_str(a, "[0].expires_at");
    assert_non_null(exp_at);
    struct tm tm = {0};
    assert_non_null(strptime(exp_at, "%Y-%m-%dT%H:%M:%S", &tm));
    long left = (long)(timegm(&tm) - time(NULL));
    assert_true(left >= 55 && left <= 61);
    json_decref(a);

    json_t *st = texp_status(tgroup_d, "ed1");
    assert_int_equal(tjson_int(st, "budget"), 50);
    json_decref(st);

    json_t *rows = export_rows("ed1", "edit");
    assert_int_equal(json_array_size(rows), 2);
    json_t *note = json_loads(tjson_str(rows, "[0].note"), 0, NULL);
    assert_non_null(note);
    assert_string_equal(tjson_str(note, "name"), "second");
    assert_string_equal(tjson_str(note, "reason"), "typo");
    assert_string_equal(tjson_str(note, "previous.name"), "first");
    json_decref(note);
    note = json_loads(tjson_str(rows, "[1].note"), 0, NULL);
    assert_int_equal(tjson_int(note, "budget"), 50);
    assert_int_equal(tjson_int(note, "previous.budget"), 100);
    assert_int_equal(tjson_int(note, "assignment_ttl_s"), 60);
    assert_int_equal(tjson_int(note, "previous.assignment_ttl_s"), 86400);
    json_decref(note);
    json_decref(rows);

    /* The history marks where the run was changed. */
    json_t *h = tcall(tgroup_d, "GET", "/v1/experiments/ed1/history", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(h, "marks")), 2);
    assert_string_equal(tjson_str(h, "marks[0].kind"), "edit");
    assert_non_null(strstr(tjson_str(h, "marks[1].note"), "\"budget\":50"));

    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *h2 = tcall(tgroup_d, "GET", "/v1/experiments/ed1/history", NULL, 200);
    tjson_must_equal(json_object_get(h, "marks"), json_object_get(h2, "marks"),
                     "history marks after a restart");
    json_decref(h);
    json_decref(h2);
    json_t *x = get_exp("ed1");
    assert_string_equal(tjson_str(x, "name"), "second");
    assert_int_equal(tjson_int(x, "assignment_ttl_s"), 60);
    assert_int_equal(tjson_int(x, "goal.budget"), 50);
    assert_int_equal(tjson_int(x, "edits"), 2);
    json_decref(x);
    /* The list shows the new name too. */
    x = tcall(tgroup_d, "GET", "/v1/experiments", NULL, 200);
    int seen = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(x, "experiments")); i++) {
        json_t *e = json_array_get(json_object_get(x, "experiments"), i);
        if (strcmp(tjson_str(e, "id"), "ed1") == 0) {
            assert_string_equal(tjson_str(e, "name"), "second");
            seen = 1;
        }
    }
    assert_true(seen);
    json_decref(x);
}

/* A budget never falls below what is used (rewarded plus pending); a cut
 * to exactly that stops the experiment on its budget, and a stop is final:
 * the budget cannot grow again and the state cannot leave "stopped". */
static void test_budget_floor_and_stop(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed2\",\"arms\":[\"a\",\"b\",\"c\"],"
                                      "\"goal\":{\"budget\":20},\"seed\":4}"));
    json_decref(texp_assign(tgroup_d, "ed2", "{\"count\":10}"));
    struct tresp *r = patch("ed2", "{\"goal\":{\"budget\":9}}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "goal.budget"));
    assert_non_null(strstr(tjson_str(r->json, "detail"), "10 pulls are already used"));
    tresp_free(r);
    json_t *x = get_exp("ed2");
    assert_int_equal(tjson_int(x, "goal.budget"), 20);
    assert_int_equal(tjson_int(x, "edits"), 0);
    json_decref(x);

    r = patch("ed2", "{\"goal\":{\"budget\":10},\"reason\":\"out of money\"}");
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "state"), "stopped");
    assert_string_equal(tjson_str(r->json, "stop_reason"), "budget");
    tresp_free(r);
    json_t *a = texp_assign(tgroup_d, "ed2", NULL);
    assert_true(json_is_true(tjson_get(a, "[0].exploit")));
    json_decref(a);

    r = patch("ed2", "{\"goal\":{\"budget\":30}}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "goal.budget"));
    tresp_free(r);
    r = patch("ed2", "{\"state\":\"running\",\"name\":\"again\"}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "state"));
    tresp_free(r);
    /* Nothing of the refused request applied. */
    x = get_exp("ed2");
    assert_string_equal(tjson_str(x, "name"), "ed2");
    json_decref(x);
    /* A rename of a stopped experiment is fine. */
    r = patch("ed2", "{\"name\":\"ended\"}");
    assert_status(r, 200);
    tresp_free(r);

    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    x = get_exp("ed2");
    assert_string_equal(tjson_str(x, "stop_reason"), "budget");
    assert_int_equal(tjson_int(x, "goal.budget"), 10);
    assert_string_equal(tjson_str(x, "name"), "ended");
    json_decref(x);
}

/* Bad edits are 400 problems naming the field; what was randomised or
 * fixed at creation cannot change. */
static void test_refused_fields(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed3\",\"arms\":[\"a\",\"b\"],\"seed\":5}"));
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{}", ""},
        {"{\"seed\":1}", "seed"},
        {"{\"rule_revision\":1}", "rule_revision"},
        {"{\"bandits\":[]}", "bandits"},
        {"{\"policy\":{\"name\":\"lucb\"}}", "policy"},
        {"{\"goal\":{\"delta\":0.1}}", "goal.delta"},
        {"{\"goal\":{\"budget\":0}}", "goal.budget"},
        {"{\"goal\":{\"budget\":\"many\"}}", "goal.budget"},
        {"{\"assignment_ttl_s\":0}", "assignment_ttl_s"},
        {"{\"name\":7}", "name"},
        {"{\"name\":\"x\",\"reason\":5}", "reason"},
        {"{\"name\":\"x\",\"colour\":\"red\"}", "colour"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tresp *r = patch("ed3", bad[i].body);
        assert_invalid(r, bad[i].field);
        tresp_free(r);
    }
    /* A fixed-budget policy cannot lose its budget; a fixed-confidence
     * one can gain or lose a cap. */
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed3sr\",\"policy\":{\"name\":\"sr\"},\"arms\":"
                                      "[\"a\",\"b\"],\"goal\":{\"budget\":40},\"seed\":5}"));
    struct tresp *r = patch("ed3sr", "{\"goal\":{\"budget\":null}}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "goal.budget"));
    tresp_free(r);
    /* An index policy takes the new budget into its exploration parameter;
     * one that reads it as a cap takes it as it is. */
    static const char *const others[] = {"ucb-e", "gape-v", "a-gape", "uniform", "gcp"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char id[32], path[64];
        snprintf(id, sizeof id, "ed3-%s", others[i]);
        json_decref(texp_create(tgroup_d,
                                "{\"id\":\"%s\",\"policy\":{\"name\":\"%s\"},\"arms\":[\"a\","
                                "\"b\"],\"goal\":{\"budget\":40},\"seed\":5}",
                                id, others[i]));
        json_decref(texp_assign(tgroup_d, id, "{\"count\":4}"));
        snprintf(path, sizeof path, "/v1/experiments/%s", id);
        json_t *x = tcall(tgroup_d, "PATCH", path, "{\"goal\":{\"budget\":80}}", 200);
        assert_int_equal(tjson_int(x, "goal.budget"), 80);
        json_decref(x);
    }
    r = patch("ed3", "{\"goal\":{\"budget\":500}}");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "goal.budget"), 500);
    tresp_free(r);
    r = patch("ed3", "{\"goal\":{\"budget\":null}}");
    assert_status(r, 200);
    assert_true(json_is_null(tjson_get(r->json, "goal.budget")));
    tresp_free(r);
}

/* Run ed to its end with Bernoulli rewards of means mu (seeded): the pulls
 * handed out. */
static long long run_to_end(const char *id, const double *mu, struct trng *g)
{
    for (int i = 0; i < 100000; i++) {
        json_t *a = texp_assign(tgroup_d, id, NULL);
        int exploit = json_is_true(tjson_get(a, "[0].exploit"));
        long long arm = tjson_int(a, "[0].arm_index");
        if (!exploit)
            texp_reward(tgroup_d, id, tjson_str(a, "[0].id"), trng_bernoulli(g, mu[arm]));
        json_decref(a);
        if (exploit)
            break;
    }
    json_t *st = texp_status(tgroup_d, id);
    long long n = tjson_int(st, "handed_out");
    json_decref(st);
    return n;
}

/* Successive Rejects plans its phases from the budget: extended half-way,
 * it plans again and spends the new budget, not the old one; a restart
 * replays the edit at its place and ends in the same state. */
static void test_fixed_budget_extended(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed4\",\"policy\":{\"name\":\"sr\"},\"arms\":"
                                      "[\"a\",\"b\",\"c\"],\"goal\":{\"budget\":300},\"seed\":6}"));
    static const double mu[] = {0.3, 0.5, 0.6};
    struct trng g;
    trng_seed(&g, 6);
    for (int i = 0; i < 100; i++) {
        json_t *a = texp_assign(tgroup_d, "ed4", NULL);
        texp_reward(tgroup_d, "ed4", tjson_str(a, "[0].id"),
                    trng_bernoulli(&g, mu[tjson_int(a, "[0].arm_index")]));
        json_decref(a);
    }
    struct tresp *r = patch("ed4", "{\"goal\":{\"budget\":600},\"reason\":\"more traffic\"}");
    assert_status(r, 200);
    tresp_free(r);
    long long n = run_to_end("ed4", mu, &g);
    /* What SR spends of 600 from the start (its plan rounds down a little:
     * a function of the budget alone with rewards on time). */
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed4ref\",\"policy\":{\"name\":\"sr\"},"
                                      "\"arms\":[\"a\",\"b\",\"c\"],\"goal\":{\"budget\":600},"
                                      "\"seed\":6}"));
    long long ref = run_to_end("ed4ref", mu, &g);
    assert_true(ref > 590 && ref <= 600);
    assert_int_equal(n, ref);
    json_t *before = texp_status(tgroup_d, "ed4");
    assert_string_equal(tjson_str(before, "state"), "stopped");
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *after = texp_status(tgroup_d, "ed4");
    tjson_must_equal(before, after, "status of an edited sr run before and after a restart");
    json_decref(before);
    json_decref(after);
}

/* A shorter TTL ends pending assignments sooner (their creation plus the
 * new TTL), so they expire as handed out; a longer one keeps theirs. */
static void test_ttl_shortened(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed5\",\"arms\":[\"a\",\"b\"],"
                                      "\"assignment_ttl_s\":3600,\"seed\":7}"));
    json_decref(texp_assign(tgroup_d, "ed5", "{\"count\":2}"));
    struct tresp *r = patch("ed5", "{\"assignment_ttl_s\":1}");
    assert_status(r, 200);
    tresp_free(r);
    json_t *st = texp_status(tgroup_d, "ed5");
    assert_int_equal(tjson_int(st, "pending"), 2);
    json_decref(st);
    tsleep_ms(1300);
    st = texp_status(tgroup_d, "ed5");
    assert_int_equal(tjson_int(st, "pending"), 0);
    json_decref(st);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    st = texp_status(tgroup_d, "ed5");
    assert_int_equal(tjson_int(st, "pending"), 0);
    json_decref(st);
}

/* A retired arm gets no more pulls; its data stay; the retirement is an
 * edit, replayed at its place; what would break the policy or leave too
 * few arms is refused naming "retire". */
static void test_retire_arm(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed6\",\"arms\":[\"a\",\"b\",\"c\"],"
                                      "\"seed\":8}"));
    struct trng g;
    trng_seed(&g, 8);
    for (int i = 0; i < 9; i++) {
        json_t *a = texp_assign(tgroup_d, "ed6", NULL);
        texp_reward(tgroup_d, "ed6", tjson_str(a, "[0].id"), trng_bernoulli(&g, 0.5));
        json_decref(a);
    }
    json_t *st = texp_status(tgroup_d, "ed6");
    long long b_pulls = tjson_int(st, "bandits[0].arms[1].pulls");
    assert_null(tjson_get(st, "bandits[0].arms[1].retired"));
    json_decref(st);
    struct tresp *r = patch("ed6", "{\"retire\":{\"arm\":\"b\"},\"reason\":\"broken page\"}");
    assert_status(r, 200);
    tresp_free(r);
    for (int i = 0; i < 60; i++) {
        json_t *a = texp_assign(tgroup_d, "ed6", NULL);
        assert_string_not_equal(tjson_str(a, "[0].arm"), "b");
        if (!json_is_true(tjson_get(a, "[0].exploit")))
            texp_reward(tgroup_d, "ed6", tjson_str(a, "[0].id"), trng_bernoulli(&g, 0.5));
        json_decref(a);
    }
    /* A block too. */
    json_t *blk = texp_assign(tgroup_d, "ed6", "{\"count\":6}");
    for (size_t i = 0; i < json_array_size(blk); i++)
        assert_string_not_equal(tjson_str(json_array_get(blk, i), "arm"), "b");
    json_decref(blk);
    st = texp_status(tgroup_d, "ed6");
    assert_true(json_is_true(tjson_get(st, "bandits[0].arms[1].retired")));
    assert_int_equal(tjson_int(st, "bandits[0].arms[1].pulls"), b_pulls);
    assert_int_equal(tjson_int(st, "bandits[0].arms[1].pending"), 0);

    /* Two of three retired leaves fewer than m + 1 = 2. */
    r = patch("ed6", "{\"retire\":{\"arm\":\"a\"}}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "retire"));
    tresp_free(r);
    r = patch("ed6", "{\"retire\":{\"arm\":\"z\"}}");
    assert_invalid(r, "retire.arm");
    tresp_free(r);
    r = patch("ed6", "{\"retire\":\"b\"}");
    assert_invalid(r, "retire");
    tresp_free(r);

    json_t *rows = export_rows("ed6", "edit");
    assert_int_equal(json_array_size(rows), 1);
    json_t *note = json_loads(tjson_str(rows, "[0].note"), 0, NULL);
    assert_string_equal(tjson_str(note, "retire.arm"), "b");
    assert_string_equal(tjson_str(note, "reason"), "broken page");
    json_decref(note);
    json_decref(rows);

    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *again = texp_status(tgroup_d, "ed6");
    tjson_must_equal(st, again, "status of an experiment with a retired arm, after a restart");
    json_decref(again);
    json_decref(st);
    json_t *a = texp_assign(tgroup_d, "ed6", NULL);
    assert_string_not_equal(tjson_str(a, "[0].arm"), "b");
    json_decref(a);

    /* A phase policy waits for every active arm: refused. */
    json_decref(texp_create(tgroup_d, "{\"id\":\"ed6sr\",\"policy\":{\"name\":\"sr\"},"
                                      "\"arms\":[\"a\",\"b\",\"c\"],\"goal\":{\"budget\":90}}"));
    r = patch("ed6sr", "{\"retire\":{\"arm\":\"a\"}}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "retire"));
    tresp_free(r);
    /* Several bandits: the bandit is named. */
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"ed6m\",\"bandits\":[{\"id\":\"x\",\"arms\":"
                            "[\"a\",\"b\",\"c\"]},{\"id\":\"y\",\"arms\":[\"a\",\"b\"]}]}"));
    r = patch("ed6m", "{\"retire\":{\"arm\":\"a\"}}");
    assert_invalid(r, "retire.bandit");
    tresp_free(r);
    r = patch("ed6m", "{\"retire\":{\"bandit\":\"x\",\"arm\":\"a\"}}");
    assert_status(r, 200);
    tresp_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_and_replay), cmocka_unit_test(test_budget_floor_and_stop),
        cmocka_unit_test(test_refused_fields),  cmocka_unit_test(test_fixed_budget_extended),
        cmocka_unit_test(test_ttl_shortened),   cmocka_unit_test(test_retire_arm),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
