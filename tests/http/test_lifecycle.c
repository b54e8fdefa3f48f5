/*
 * test_lifecycle.c — an experiment's life over HTTP: PATCH pause / resume /
 * stop (paused serves its fallback — here the recommendation, as
 * exploitation — and still takes outstanding rewards; a stop is final), DELETE then 404 and
 * re-creation under the same id with fresh assignment ids, the history endpoint's bounded,
 * decimated points, and conditional GETs (ETag / If-None-Match → 304) on status and history.
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

#include "tests/support/harness.h"

#define HISTORY_POINTS 16

static int group_setup(void **state)
{
    (void)state;
    static const char *const extra[] = {"--history-points", "16", NULL};
    return tgroup_start(extra);
}

static struct tresp *patch_state(const char *id, const char *st)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    return treqf(tgroup_d, "PATCH", path, "{\"state\":\"%s\"}", st);
}

/* n assignments one by one; returns how many were exploitation. */
static int count_exploit(const char *id, int n, json_t *ids)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        json_t *a = texp_assign(tgroup_d, id, NULL);
        k += json_is_true(tjson_get(a, "[0].exploit"));
        if (ids != NULL)
            json_array_append(ids, tjson_get(a, "[0].id"));
        json_decref(a);
    }
    return k;
}

/* The create answer: 201, Location, the configuration with every default
 * explicit (so a restart replays the same run), and a generated id when
 * none was given. */
static void test_create_answer(void **state)
{
    (void)state;
    const char *body = "{\"arms\":[\"a\",\"b\"]}";
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments", body, NULL);
    assert_status(r, 201);
    assert_true(strncmp(tresp_content_type(r), "application/json", 16) == 0);
    const char *id = tjson_str(r->json, "id");
    assert_non_null(id);
    assert_true(strlen(id) >= 1 && strlen(id) <= 64);
    assert_true(strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
                strlen(id));
    char want[128];
    snprintf(want, sizeof want, "/v1/experiments/%s", id);
    assert_non_null(tresp_location(r));
    assert_string_equal(tresp_location(r), want);
    json_t *j = r->json;
    assert_string_equal(tjson_str(j, "policy.name"), "adapt");
    assert_int_equal(tjson_int(j, "goal.m"), 1);
    assert_true(tjson_num(j, "goal.epsilon") == 0);
    assert_true(tjson_num(j, "goal.delta") == 0.05);
    assert_true(json_is_null(tjson_get(j, "goal.budget")));
    assert_true(tjson_num(j, "reward.min") == 0 && tjson_num(j, "reward.max") == 1);
    assert_string_equal(tjson_str(j, "bandits[0].id"), "default");
    assert_string_equal(tjson_str(j, "bandits[0].arms[1]"), "b");
    assert_int_equal(tjson_int(j, "assignment_ttl_s"), 86400);
    assert_true(json_is_integer(json_object_get(j, "seed")));
    assert_string_equal(tjson_str(j, "bound"), "anytime");
    assert_string_equal(tjson_str(j, "state"), "running");
    assert_int_equal(tjson_int(j, "pulls"), 0);
    /* GET at the Location gives the same configuration. */
    struct tresp *g = treq(tgroup_d, "GET", want, NULL, NULL);
    assert_status(g, 200);
    assert_true(json_equal(json_object_get(g->json, "seed"), json_object_get(j, "seed")));
    assert_true(json_equal(json_object_get(g->json, "goal"), json_object_get(j, "goal")));
    tresp_free(g);
    /* The same body again is another experiment. */
    struct tresp *r2 = treq(tgroup_d, "POST", "/v1/experiments", body, NULL);
    assert_status(r2, 201);
    assert_string_not_equal(tjson_str(r2->json, "id"), id);
    tresp_free(r2);
    tresp_free(r);
}

static void test_pause_resume_stop(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"life\",\"arms\":[\"a\",\"b\",\"c\"],"
                                      "\"policy\":{\"name\":\"uniform\"},\"seed\":9,"
                                      "\"fallback\":\"recommendation\"}"));
    json_t *out = json_array();
    assert_int_equal(count_exploit("life", 6, out), 0);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(
            texp_reward(tgroup_d, "life", json_string_value(json_array_get(out, i)), 1),
            "accepted");

    struct tresp *r = patch_state("life", "paused");
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "state"), "paused");
    assert_false(json_is_true(json_object_get(r->json, "stopped")));
    tresp_free(r);
    /* Pausing twice is fine (idempotent). */
    r = patch_state("life", "paused");
    assert_status(r, 200);
    tresp_free(r);
    json_t *st = texp_status(tgroup_d, "life");
    assert_string_equal(tjson_str(st, "state"), "paused");
    assert_true(json_is_null(json_object_get(st, "stop_reason")));
    long long handed = tjson_int(st, "handed_out");
    json_decref(st);
    /* Paused: exploitation only, nothing counted. */
    assert_int_equal(count_exploit("life", 5, NULL), 5);
    /* Outstanding assignments still take their rewards. */
    for (size_t i = 3; i < 6; i++)
        assert_string_equal(
            texp_reward(tgroup_d, "life", json_string_value(json_array_get(out, i)), 0),
            "accepted");
    st = texp_status(tgroup_d, "life");
    assert_int_equal(tjson_int(st, "handed_out"), handed);
    assert_int_equal(tjson_int(st, "pulls"), 6);
    assert_int_equal(tjson_int(st, "pending"), 0);
    json_decref(st);

    r = patch_state("life", "running");
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "state"), "running");
    tresp_free(r);
    assert_int_equal(count_exploit("life", 4, NULL), 0);

    r = patch_state("life", "stopped");
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "state"), "stopped");
    assert_string_equal(tjson_str(r->json, "stop_reason"), "manual");
    tresp_free(r);
    assert_int_equal(count_exploit("life", 4, NULL), 4);
    /* Stopping again is idempotent; leaving "stopped" is a conflict. */
    r = patch_state("life", "stopped");
    assert_status(r, 200);
    tresp_free(r);
    static const char *const back[] = {"running", "paused"};
    for (int i = 0; i < 2; i++) {
        r = patch_state("life", back[i]);
        assert_problem(r, 409);
        tresp_free(r);
    }
    st = texp_status(tgroup_d, "life");
    assert_string_equal(tjson_str(st, "state"), "stopped");
    assert_string_equal(tjson_str(st, "stop_reason"), "manual");
    assert_int_equal(tjson_int(st, "pending"), 4);
    json_decref(st);
    json_decref(out);
}

/* A stopped experiment keeps accepting its outstanding rewards, and they
 * never flip it back to exploring. */
static void test_stop_keeps_rewards(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"fin\",\"arms\":[\"a\",\"b\"],\"seed\":3,"
                                      "\"fallback\":\"recommendation\"}"));
    json_t *a = texp_assign(tgroup_d, "fin", "{\"count\":8}");
    struct tresp *r = patch_state("fin", "stopped");
    assert_status(r, 200);
    tresp_free(r);
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(
            texp_reward(tgroup_d, "fin", tjson_str(json_array_get(a, i), "id"), (double)(i % 2)),
            "accepted");
    json_t *st = texp_status(tgroup_d, "fin");
    assert_int_equal(tjson_int(st, "pulls"), 8);
    assert_int_equal(tjson_int(st, "pending"), 0);
    assert_string_equal(tjson_str(st, "state"), "stopped");
    json_decref(st);
    assert_int_equal(count_exploit("fin", 3, NULL), 3);
    json_decref(a);
}

static void test_delete_and_recreate(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"gone\",\"arms\":[\"a\",\"b\"],\"seed\":1}"));
    json_t *a = texp_assign(tgroup_d, "gone", "{\"count\":3}");
    assert_string_equal(texp_reward(tgroup_d, "gone", tjson_str(a, "[0].id"), 1), "accepted");
    json_t *u = texp_assign(tgroup_d, "gone", "{\"unit\":\"u1\"}");

    struct tresp *r = treq(tgroup_d, "DELETE", "/v1/experiments/gone", NULL, NULL);
    assert_status(r, 204);
    assert_int_equal(r->len, 0);
    tresp_free(r);
    static const char *const paths[] = {"/v1/experiments/gone", "/v1/experiments/gone/status",
                                        "/v1/experiments/gone/history",
                                        "/v1/experiments/gone/export"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        r = treq(tgroup_d, "GET", paths[i], NULL, NULL);
        assert_problem(r, 404);
        tresp_free(r);
    }
    r = treq(tgroup_d, "DELETE", "/v1/experiments/gone", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    r = treq(tgroup_d, "GET", "/v1/experiments", NULL, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r->json, "experiments"), i, e)
        assert_string_not_equal(tjson_str(e, "id"), "gone");
    tresp_free(r);

    /* Same id again: a fresh experiment. */
    json_t *created =
        texp_create(tgroup_d, "{\"id\":\"gone\",\"arms\":[\"x\",\"y\",\"z\"],\"seed\":1}");
    assert_int_equal(json_array_size(tjson_get(created, "bandits[0].arms")), 3);
    json_decref(created);
    json_t *st = texp_status(tgroup_d, "gone");
    assert_int_equal(tjson_int(st, "pulls"), 0);
    assert_int_equal(tjson_int(st, "pending"), 0);
    assert_int_equal(tjson_int(st, "handed_out"), 0);
    json_decref(st);
    /* Old assignment ids mean nothing to it. */
    r = treqf(tgroup_d, "POST", "/v1/experiments/gone/rewards",
              "{\"assignment_id\":\"%s\",\"reward\":1}", tjson_str(a, "[1].id"));
    assert_problem(r, 404);
    tresp_free(r);
    r = treqf(tgroup_d, "POST", "/v1/experiments/gone/rewards",
              "{\"assignment_id\":\"%s\",\"reward\":1}", tjson_str(a, "[0].id"));
    assert_problem(r, 404);
    tresp_free(r);
    /* New ids start over at 1 but differ from the old ones; the old unit
     * is a new unit here. */
    json_t *b = texp_assign(tgroup_d, "gone", NULL);
    const char *nid = tjson_str(b, "[0].id");
    assert_int_equal(tassignment_seq(nid, NULL, 0), 1);
    assert_string_not_equal(nid, tjson_str(a, "[0].id"));
    json_t *u2 = texp_assign(tgroup_d, "gone", "{\"unit\":\"u1\"}");
    assert_string_not_equal(tjson_str(u2, "[0].id"), tjson_str(u, "[0].id"));
    assert_int_equal(tassignment_seq(tjson_str(u2, "[0].id"), NULL, 0), 2);
    assert_string_equal(texp_reward(tgroup_d, "gone", nid, 1), "accepted");
    json_decref(u2);
    json_decref(b);
    json_decref(u);
    json_decref(a);

    /* And all of that survives a restart. */
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    st = texp_status(tgroup_d, "gone");
    assert_int_equal(tjson_int(st, "pulls"), 1);
    assert_int_equal(tjson_int(st, "pending"), 1);
    assert_string_equal(tjson_str(st, "bandits[0].arms[0].id"), "x");
    json_decref(st);
}

static void test_history_bounded(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"hist\",\"arms\":[\"a\",\"b\"],\"seed\":2}"));
    /* 2000 observations in batches: the history keeps at most 16 points,
     * spread over the whole run. */
    for (int batch = 0; batch < 2; batch++) {
        json_t *items = json_array();
        for (int i = 0; i < 1000; i++)
            json_array_append_new(
                items, json_pack("{s:s,s:i}", "arm", i % 2 ? "a" : "b", "reward", (i % 3) == 0));
        json_t *body = json_pack("{s:o}", "observations", items);
        struct tresp *r = treq_json(tgroup_d, "POST", "/v1/experiments/hist/observations", body);
        assert_status(r, 200);
        assert_int_equal(tjson_int(r->json, "accepted"), 1000);
        tresp_free(r);
        json_decref(body);
    }
    struct tresp *r = treq(tgroup_d, "GET", "/v1/experiments/hist/history", NULL, NULL);
    assert_status(r, 200);
    json_t *h = r->json;
    json_t *pulls = json_object_get(h, "pulls");
    size_t n = json_array_size(pulls);
    assert_true(n >= HISTORY_POINTS / 2 && n <= HISTORY_POINTS);
    assert_int_equal(json_array_size(json_object_get(h, "time")), n);
    assert_int_equal(json_array_size(tjson_get(h, "bandits[0].delta_c")), n);
    assert_int_equal(json_array_size(tjson_get(h, "bandits[0].rho")), n);
    /* the stop rule's error bound beside δᶜ: a number in [0, 1] (the
     * default rule, the proven GLR, has one at every point) */
    json_t *eb = tjson_get(h, "bandits[0].error_bound");
    assert_int_equal(json_array_size(eb), n);
    for (size_t i = 0; i < n; i++) {
        double v = json_number_value(json_array_get(eb, i));
        assert_true(json_is_number(json_array_get(eb, i)) && v >= 0 && v <= 1);
    }
    assert_int_equal(json_array_size(tjson_get(h, "bandits[0].arm_pulls.a")), n);
    assert_int_equal(json_array_size(tjson_get(h, "bandits[0].arm_pulls.b")), n);
    /* Increasing pulls, from the start to near the end, arms adding up. */
    long long prev = 0;
    for (size_t i = 0; i < n; i++) {
        long long p = (long long)json_integer_value(json_array_get(pulls, i));
        assert_true(p > prev);
        prev = p;
        long long pa = (long long)json_integer_value(
            json_array_get(tjson_get(h, "bandits[0].arm_pulls.a"), i));
        long long pb = (long long)json_integer_value(
            json_array_get(tjson_get(h, "bandits[0].arm_pulls.b"), i));
        assert_int_equal(pa + pb, p);
        double dc = json_number_value(json_array_get(tjson_get(h, "bandits[0].delta_c"), i));
        assert_true(dc >= 0 && dc <= 1);
    }
    assert_true(json_integer_value(json_array_get(pulls, 0)) <= 2);
    assert_true(prev > 2000 / 2);
    assert_true(fabs(tjson_num(h, "delta") - 0.05) < 1e-12);
    tresp_free(r);
}

static void test_conditional_get(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"etag\",\"arms\":[\"a\",\"b\"],\"seed\":2}"));
    static const char *const paths[] = {"/v1/experiments/etag/status",
                                        "/v1/experiments/etag/history"};
    for (size_t p = 0; p < 2; p++) {
        struct tresp *r = treq(tgroup_d, "GET", paths[p], NULL, NULL);
        assert_status(r, 200);
        const char *etag = tresp_etag(r);
        assert_non_null(etag);
        assert_true(etag[0] == '"' && etag[strlen(etag) - 1] == '"');
        char tag[200], hdr[240];
        snprintf(tag, sizeof tag, "%s", etag);
        tresp_free(r);
        snprintf(hdr, sizeof hdr, "If-None-Match: %s", tag);
        const char *h[] = {hdr, NULL};
        r = treq(tgroup_d, "GET", paths[p], NULL, h);
        assert_status(r, 304);
        assert_int_equal(r->len, 0);
        assert_string_equal(tresp_etag(r), tag);
        tresp_free(r);
        /* A list of tags, or *, matches too; another tag does not. */
        char list[480];
        snprintf(list, sizeof list, "If-None-Match: \"other\", %s", tag);
        const char *hl[] = {list, NULL};
        r = treq(tgroup_d, "GET", paths[p], NULL, hl);
        assert_status(r, 304);
        tresp_free(r);
        const char *hs[] = {"If-None-Match: *", NULL};
        r = treq(tgroup_d, "GET", paths[p], NULL, hs);
        assert_status(r, 304);
        tresp_free(r);
        const char *ho[] = {"If-None-Match: \"0-etag-0\"", NULL};
        r = treq(tgroup_d, "GET", paths[p], NULL, ho);
        assert_status(r, 200);
        tresp_free(r);
        /* Any change makes the old tag stale. */
        json_decref(texp_assign(tgroup_d, "etag", NULL));
        r = treq(tgroup_d, "GET", paths[p], NULL, h);
        assert_status(r, 200);
        assert_non_null(tresp_etag(r));
        assert_string_not_equal(tresp_etag(r), tag);
        tresp_free(r);
    }
    /* A deleted and re-created experiment never matches its old tags. */
    struct tresp *r = treq(tgroup_d, "GET", paths[0], NULL, NULL);
    char tag[200], hdr[240];
    snprintf(tag, sizeof tag, "%s", tresp_etag(r));
    tresp_free(r);
    r = treq(tgroup_d, "DELETE", "/v1/experiments/etag", NULL, NULL);
    assert_status(r, 204);
    tresp_free(r);
    json_decref(texp_create(tgroup_d, "{\"id\":\"etag\",\"arms\":[\"a\",\"b\"],\"seed\":2}"));
    json_decref(texp_assign(tgroup_d, "etag", NULL));
    json_decref(texp_assign(tgroup_d, "etag", NULL));
    snprintf(hdr, sizeof hdr, "If-None-Match: %s", tag);
    const char *h[] = {hdr, NULL};
    r = treq(tgroup_d, "GET", paths[0], NULL, h);
    assert_status(r, 200);
    tresp_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_answer),      cmocka_unit_test(test_pause_resume_stop),
        cmocka_unit_test(test_stop_keeps_rewards), cmocka_unit_test(test_delete_and_recreate),
        cmocka_unit_test(test_history_bounded),    cmocka_unit_test(test_conditional_get),
    };
    return cmocka_run_group_tests(tests, group_setup, tgroup_teardown);
}
