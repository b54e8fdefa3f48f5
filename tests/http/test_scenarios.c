/*
 * test_scenarios.c — issue 4's scenarios against the real daemon:
 * - a trial coordinator whose outcomes come back 100 assignments late still
 *   stops `adapt` on the right arm, and the late outcomes of assignments
 *   handed out before the stop are all accepted without reopening it;
 * - sticky units: the same unit gets its first assignment back (not a new
 *   pull), also under concurrent requests, after the stop, and across a
 *   kill -9;
 * - many bandits: with `bandit` the pull stays in that bandit; without it
 *   the policy (uniform here) chooses; a done bandit named explicitly gets
 *   its recommendation as exploitation, and the others carry on;
 * - greedy confidence pursuit over three bandits finishes the easy bandit
 *   first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

#define DELAY 100
#define MAX_PULLS 20000

/* --- late outcomes ------------------------------------------------------------- */

static void run_delayed(uint64_t seed, long long *pulls_out)
{
    static const double p[3] = {0.2, 0.5, 0.8};
    char id[32];
    snprintf(id, sizeof id, "late-%llu", (unsigned long long)seed);
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"%s\",\"arms\":[\"p20\",\"p50\",\"p80\"],"
                            "\"policy\":{\"name\":\"adapt\"},\"goal\":{\"delta\":0.05},"
                            "\"seed\":%llu}",
                            id, (unsigned long long)seed));
    struct trng g;
    trng_seed(&g, seed);
    /* The outstanding assignments, oldest first: id and its outcome. */
    json_t *queue = json_array();
    long long handed = 0;
    for (;;) {
        json_t *a = texp_assign(tgroup_d, id, NULL);
        json_t *one = json_array_get(a, 0);
        int exploit = json_is_true(json_object_get(one, "exploit"));
        if (!exploit) {
            long long arm = tjson_int(one, "arm_index");
            json_array_append_new(queue, json_pack("{s:O,s:i}", "id", json_object_get(one, "id"),
                                                   "reward", trng_bernoulli(&g, p[arm])));
            handed++;
        }
        json_decref(a);
        if (exploit)
            break;
        if (handed > MAX_PULLS)
            fail_msg("%s did not stop within %d pulls", id, MAX_PULLS);
        if (json_array_size(queue) > DELAY) {
            json_t *oldest = json_array_get(queue, 0);
            assert_string_equal(texp_reward(tgroup_d, id, tjson_str(oldest, "id"),
                                            (double)tjson_int(oldest, "reward")),
                                "accepted");
            json_array_remove(queue, 0);
        }
    }
    json_t *st = texp_status(tgroup_d, id);
    assert_string_equal(tjson_str(st, "stop_reason"), "glr");
    assert_string_equal(tjson_str(st, "bandits[0].recommended[0]"), "p80");
    assert_int_equal(tjson_int(st, "pending"), (long long)json_array_size(queue));
    assert_true(json_array_size(queue) <= DELAY);
    long long at_stop = tjson_int(st, "pulls");
    json_decref(st);
    /* The outcomes still on their way are all accepted (in one batch, as a
     * coordinator's upload would be), and the stop is final. */
    json_t *items = json_array();
    size_t i;
    json_t *q;
    json_array_foreach(queue, i, q) json_array_append_new(
        items, json_pack("{s:O,s:O}", "assignment_id", json_object_get(q, "id"), "reward",
                         json_object_get(q, "reward")));
    if (json_array_size(items) > 0) {
        char path[96];
        snprintf(path, sizeof path, "/v1/experiments/%s/rewards", id);
        json_t *body = json_pack("{s:o}", "rewards", items);
        struct tresp *r = treq_json(tgroup_d, "POST", path, body);
        assert_status(r, 200);
        assert_int_equal(tjson_int(r->json, "accepted"), (long long)json_array_size(queue));
        tresp_free(r);
        json_decref(body);
    } else {
        json_decref(items);
    }
    st = texp_status(tgroup_d, id);
    assert_int_equal(tjson_int(st, "pending"), 0);
    assert_int_equal(tjson_int(st, "pulls"), handed);
    assert_string_equal(tjson_str(st, "state"), "stopped");
    assert_string_equal(tjson_str(st, "stop_reason"), "glr");
    assert_string_equal(tjson_str(st, "bandits[0].recommended[0]"), "p80");
    json_decref(st);
    json_t *a = texp_assign(tgroup_d, id, "{\"count\":5}");
    for (i = 0; i < 5; i++) {
        assert_true(json_is_true(tjson_get(json_array_get(a, i), "exploit")));
        assert_string_equal(tjson_str(json_array_get(a, i), "arm"), "p80");
    }
    json_decref(a);
    json_decref(queue);
    printf("# pulls to stop with outcomes %d assignments late: seed %llu: %lld rewarded at the "
           "stop, %lld handed out\n",
           DELAY, (unsigned long long)seed, at_stop, handed);
    *pulls_out = handed;
}

static void test_coordinator_outcomes_100_late(void **state)
{
    (void)state;
    long long total = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        long long n;
        run_delayed(seed, &n);
        total += n;
    }
    printf("# pulls to stop with delay %d: mean %.1f over 3 seeds\n", DELAY, (double)total / 3);
}

/* --- sticky units ------------------------------------------------------------------ */

static void test_sticky_units(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"sticky\",\"arms\":[\"a\",\"b\",\"c\"],"
                                      "\"policy\":{\"name\":\"uniform\"},\"seed\":1,"
                                      "\"fallback\":\"recommendation\"}"));
    struct tresp *r =
        treq(tgroup_d, "POST", "/v1/experiments/sticky/assignments", "{\"unit\":\"user-1\"}", NULL);
    assert_status(r, 201);
    json_t *first = json_incref(tjson_get(r->json, "assignments[0]"));
    tresp_free(r);
    for (int i = 0; i < 3; i++) {
        r = treq(tgroup_d, "POST", "/v1/experiments/sticky/assignments", "{\"unit\":\"user-1\"}",
                 NULL);
        assert_status(r, 200);
        assert_int_equal(json_array_size(json_object_get(r->json, "assignments")), 1);
        json_t *again = tjson_get(r->json, "assignments[0]");
        assert_string_equal(tjson_str(again, "id"), tjson_str(first, "id"));
        assert_string_equal(tjson_str(again, "arm"), tjson_str(first, "arm"));
        assert_string_equal(tjson_str(again, "expires_at"), tjson_str(first, "expires_at"));
        tresp_free(r);
    }
    json_t *st = texp_status(tgroup_d, "sticky");
    assert_int_equal(tjson_int(st, "handed_out"), 1);
    assert_int_equal(tjson_int(st, "pending"), 1);
    json_decref(st);
    /* Another unit is another assignment; a reward does not unstick it. */
    json_t *other = texp_assign(tgroup_d, "sticky", "{\"unit\":\"user-2\"}");
    assert_string_not_equal(tjson_str(other, "[0].id"), tjson_str(first, "id"));
    assert_string_equal(texp_reward(tgroup_d, "sticky", tjson_str(first, "id"), 1), "accepted");
    json_t *again = texp_assign(tgroup_d, "sticky", "{\"unit\":\"user-1\"}");
    assert_string_equal(tjson_str(again, "[0].id"), tjson_str(first, "id"));
    json_decref(again);
    /* After a stop by hand (no conclusion), known units keep their
     * assignment; new ones get the fallback, here the current best. */
    r = treq(tgroup_d, "PATCH", "/v1/experiments/sticky", "{\"state\":\"stopped\"}", NULL);
    assert_status(r, 200);
    tresp_free(r);
    again = texp_assign(tgroup_d, "sticky", "{\"unit\":\"user-2\"}");
    assert_string_equal(tjson_str(again, "[0].id"), tjson_str(other, "[0].id"));
    assert_false(json_is_true(tjson_get(again, "[0].exploit")));
    json_decref(again);
    json_t *late = texp_assign(tgroup_d, "sticky", "{\"unit\":\"user-3\"}");
    assert_true(json_is_true(tjson_get(late, "[0].exploit")));
    /* Across a kill -9, all three stick. */
    assert_int_equal(tdaemon_kill(tgroup_d), 0);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    static const char *const units[] = {"user-1", "user-2", "user-3"};
    json_t *want[] = {first, json_array_get(other, 0), json_array_get(late, 0)};
    for (int i = 0; i < 3; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"unit\":\"%s\"}", units[i]);
        r = treq(tgroup_d, "POST", "/v1/experiments/sticky/assignments", body, NULL);
        assert_status(r, 200);
        assert_string_equal(tjson_str(r->json, "assignments[0].id"), tjson_str(want[i], "id"));
        assert_string_equal(tjson_str(r->json, "assignments[0].arm"), tjson_str(want[i], "arm"));
        assert_true(json_equal(tjson_get(r->json, "assignments[0].exploit"),
                               json_object_get(want[i], "exploit")));
        tresp_free(r);
    }
    st = texp_status(tgroup_d, "sticky");
    assert_int_equal(tjson_int(st, "handed_out"), 2);
    json_decref(st);
    json_decref(late);
    json_decref(other);
    json_decref(first);
}

#define NUNITS 40

struct unit_runner {
    struct tclient *c;
    int reverse;
    char ids[NUNITS][48];
    int failed;
};

static void *assign_units(void *arg)
{
    struct unit_runner *u = arg;
    for (int k = 0; k < NUNITS; k++) {
        int i = u->reverse ? NUNITS - 1 - k : k;
        char body[64];
        snprintf(body, sizeof body, "{\"unit\":\"unit-%d\"}", i);
        struct tresp *r = tclient_req(u->c, "POST", "/v1/experiments/race/assignments", body, NULL);
        const char *id = tjson_str(r->json, "assignments[0].id");
        if ((r->status != 200 && r->status != 201) || id == NULL)
            u->failed = 1;
        else
            snprintf(u->ids[i], sizeof u->ids[i], "%s", id);
        tresp_free(r);
    }
    return NULL;
}

/* Two clients asking for the same units at the same time get the same
 * assignment for each unit, and each unit is one pull. */
static void test_sticky_units_concurrent(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"race\",\"arms\":[\"a\",\"b\"],\"seed\":1}"));
    struct unit_runner *u = calloc(2, sizeof *u);
    assert_non_null(u);
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        u[t].c = tclient_new(tgroup_d);
        u[t].reverse = t;
        assert_int_equal(pthread_create(&th[t], NULL, assign_units, &u[t]), 0);
    }
    for (int t = 0; t < 2; t++) {
        pthread_join(th[t], NULL);
        tclient_free(u[t].c);
        assert_false(u[t].failed);
    }
    for (int i = 0; i < NUNITS; i++)
        assert_string_equal(u[0].ids[i], u[1].ids[i]);
    json_t *st = texp_status(tgroup_d, "race");
    assert_int_equal(tjson_int(st, "handed_out"), NUNITS);
    assert_int_equal(tjson_int(st, "pending"), NUNITS);
    json_decref(st);
    free(u);
}

/* --- many bandits ---------------------------------------------------------------------- */

static void test_multi_bandit_uniform(void **state)
{
    (void)state;
    /* s1 is easy (one arm always pays, the other never); s2 cannot be
     * decided (both arms pay half the time). */
    json_decref(texp_create(tgroup_d, "{\"id\":\"mb\",\"bandits\":[{\"id\":\"s1\",\"arms\":[\"lo\","
                                      "\"hi\"]},{\"id\":\"s2\",\"arms\":[\"x\",\"y\"]}],"
                                      "\"policy\":{\"name\":\"uniform\"},\"seed\":11}"));
    struct trng g;
    trng_seed(&g, 11);
    /* Named bandit: the pull stays there. */
    json_t *a = texp_assign(tgroup_d, "mb", "{\"bandit\":\"s2\",\"count\":4}");
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(tjson_str(json_array_get(a, i), "bandit"), "s2");
        assert_string_equal(texp_reward(tgroup_d, "mb", tjson_str(json_array_get(a, i), "id"),
                                        trng_bernoulli(&g, 0.5)),
                            "accepted");
    }
    json_decref(a);
    /* Unnamed: the policy spreads pulls over both, until s1 is done. */
    int seen[2] = {0, 0};
    int done = 0;
    for (int n = 0; n < MAX_PULLS && !done; n++) {
        a = texp_assign(tgroup_d, "mb", NULL);
        json_t *one = json_array_get(a, 0);
        assert_false(json_is_true(json_object_get(one, "exploit")));
        int s1 = strcmp(tjson_str(one, "bandit"), "s1") == 0;
        seen[s1 ? 0 : 1]++;
        double reward = s1 ? (strcmp(tjson_str(one, "arm"), "hi") == 0) : trng_bernoulli(&g, 0.5);
        assert_string_equal(texp_reward(tgroup_d, "mb", tjson_str(one, "id"), reward), "accepted");
        json_decref(a);
        json_t *st = texp_status(tgroup_d, "mb");
        done = json_is_true(tjson_get(st, "bandits[0].done"));
        assert_false(json_is_true(tjson_get(st, "bandits[1].done")));
        json_decref(st);
    }
    assert_true(done);
    assert_true(seen[0] > 0 && seen[1] > 0);
    json_t *st = texp_status(tgroup_d, "mb");
    assert_int_equal(tjson_int(st, "bandits_done"), 1);
    assert_int_equal(tjson_int(st, "bandits_total"), 2);
    assert_string_equal(tjson_str(st, "state"), "running");
    assert_false(json_is_true(json_object_get(st, "stopped")));
    assert_string_equal(tjson_str(st, "bandits[0].id"), "s1");
    assert_string_equal(tjson_str(st, "bandits[0].recommended[0]"), "hi");
    /* s1 stopped on its rule (the proven GLR, uniform's default) with its
     * error bound within δ; s2 has not reached it. */
    assert_true(json_is_true(tjson_get(st, "bandits[0].stop.fired")));
    assert_true(tjson_num(st, "bandits[0].stop.error_bound") <= 0.05);
    assert_false(json_is_true(tjson_get(st, "bandits[1].stop.fired")));
    assert_true(tjson_num(st, "bandits[1].stop.error_bound") > 0.05);
    long long handed = tjson_int(st, "handed_out");
    json_decref(st);
    printf("# multi-bandit uniform: s1 done after %d of its pulls (%d in s2)\n", seen[0], seen[1]);
    /* The done bandit, named: its recommendation, as exploitation. */
    a = texp_assign(tgroup_d, "mb", "{\"bandit\":\"s1\",\"count\":5}");
    for (size_t i = 0; i < 5; i++) {
        assert_true(json_is_true(tjson_get(json_array_get(a, i), "exploit")));
        assert_string_equal(tjson_str(json_array_get(a, i), "arm"), "hi");
        assert_string_equal(tjson_str(json_array_get(a, i), "bandit"), "s1");
    }
    json_decref(a);
    /* Unnamed: only the unfinished bandit is pulled. */
    a = texp_assign(tgroup_d, "mb", "{\"count\":10}");
    for (size_t i = 0; i < 10; i++) {
        assert_false(json_is_true(tjson_get(json_array_get(a, i), "exploit")));
        assert_string_equal(tjson_str(json_array_get(a, i), "bandit"), "s2");
    }
    json_decref(a);
    st = texp_status(tgroup_d, "mb");
    assert_int_equal(tjson_int(st, "handed_out"), handed + 10);
    json_decref(st);
}

/* --- greedy confidence pursuit: the easy bandit first ----------------------------------- */

static void test_gcp_easy_bandit_first(void **state)
{
    (void)state;
    /* Three bandits of decreasing gap; the coordinator never names one. gcp
     * stops on its default, the proven GLR (ρ̄ ≥ τ is opt-in since issue 11):
     * "done" is the GLR's verdict, checked below on the bandit's stop. */
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments",
                           "{\"id\":\"gcp3\",\"bandits\":["
                           "{\"id\":\"easy\",\"arms\":[\"a\",\"b\"]},"
                           "{\"id\":\"medium\",\"arms\":[\"a\",\"b\"]},"
                           "{\"id\":\"hard\",\"arms\":[\"a\",\"b\"]}],"
                           "\"policy\":{\"name\":\"gcp\"},\"goal\":{\"delta\":0.05},"
                           "\"tau\":0.95,\"seed\":21}",
                           NULL);
    assert_status(r, 201);
    tresp_free(r);
    static const double p[3][2] = {{0.1, 0.9}, {0.35, 0.65}, {0.45, 0.55}};
    static const char *const names[3] = {"easy", "medium", "hard"};
    struct trng g;
    trng_seed(&g, 21);
    int first_done = -1;
    long long per_bandit[3] = {0, 0, 0};
    for (int n = 0; n < MAX_PULLS && first_done < 0; n++) {
        json_t *a = texp_assign(tgroup_d, "gcp3", NULL);
        json_t *one = json_array_get(a, 0);
        assert_false(json_is_true(json_object_get(one, "exploit")));
        int b = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(tjson_str(one, "bandit"), names[k]) == 0)
                b = k;
        assert_true(b >= 0);
        // b ≥ 0, asserted above (the analyzer takes cmocka's _fail for returning)
        // NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign)
        per_bandit[b]++;
        long long arm = tjson_int(one, "arm_index");
        assert_string_equal(
            texp_reward(tgroup_d, "gcp3", tjson_str(one, "id"), trng_bernoulli(&g, p[b][arm])),
            "accepted");
        json_decref(a);
        json_t *st = texp_status(tgroup_d, "gcp3");
        for (int k = 0; k < 3 && first_done < 0; k++) {
            char path[32];
            snprintf(path, sizeof path, "bandits[%d].done", k);
            if (json_is_true(tjson_get(st, path)))
                first_done = k;
        }
        json_decref(st);
    }
    printf("# gcp over three bandits: first done = %s after %lld/%lld/%lld pulls\n",
           first_done >= 0 ? names[first_done] : "none", per_bandit[0], per_bandit[1],
           per_bandit[2]);
    assert_int_equal(first_done, 0);
    json_t *st = texp_status(tgroup_d, "gcp3");
    assert_int_equal(tjson_int(st, "bandits_done"), 1);
    assert_string_equal(tjson_str(st, "bandits[0].recommended[0]"), "b");
    /* The GLR fired, proven and within δ; ρ̄ is only reported beside it. */
    assert_string_equal(tjson_str(st, "bandits[0].stop.rule"), "glr");
    assert_true(json_is_true(tjson_get(st, "bandits[0].stop.fired")));
    assert_true(json_is_true(tjson_get(st, "bandits[0].stop.proven")));
    assert_true(tjson_num(st, "bandits[0].stop.error_bound") <= 0.05);
    json_decref(st);
    /* Recruitment goes on in the unfinished bandits only. */
    for (int n = 0; n < 200; n++) {
        json_t *a = texp_assign(tgroup_d, "gcp3", NULL);
        json_t *one = json_array_get(a, 0);
        const char *bandit = tjson_str(one, "bandit");
        int b = strcmp(bandit, "medium") == 0 ? 1 : strcmp(bandit, "hard") == 0 ? 2 : 0;
        if (json_is_true(json_object_get(one, "exploit"))) {
            json_decref(a);
            break; /* every bandit is done */
        }
        assert_string_not_equal(bandit, "easy");
        long long arm = tjson_int(one, "arm_index");
        assert_string_equal(
            texp_reward(tgroup_d, "gcp3", tjson_str(one, "id"), trng_bernoulli(&g, p[b][arm])),
            "accepted");
        json_decref(a);
    }
    st = texp_status(tgroup_d, "gcp3");
    printf("# gcp after 200 more: bandits done %lld; pulls easy %lld, medium %lld, hard %lld\n",
           tjson_int(st, "bandits_done"),
           tjson_int(st, "bandits[0].arms[0].pulls") + tjson_int(st, "bandits[0].arms[1].pulls"),
           tjson_int(st, "bandits[1].arms[0].pulls") + tjson_int(st, "bandits[1].arms[1].pulls"),
           tjson_int(st, "bandits[2].arms[0].pulls") + tjson_int(st, "bandits[2].arms[1].pulls"));
    assert_true(json_is_true(tjson_get(st, "bandits[0].done")));
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coordinator_outcomes_100_late),
        cmocka_unit_test(test_sticky_units),
        cmocka_unit_test(test_sticky_units_concurrent),
        cmocka_unit_test(test_multi_bandit_uniform),
        cmocka_unit_test(test_gcp_easy_bandit_first),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
