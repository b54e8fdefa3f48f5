/*
 * test_control.c — comparisons with control over HTTP, against the real
 * daemon (docs/contract.md, Clinical trials; docs/stop-rules.md, `control`):
 * a trial of goal type control is assigned and rewarded until it stops; its
 * status names the stop reason, each arm's decision and its anytime
 * interval on the difference with the control; a blinded read sees only
 * that and why it stopped; a restart replays the same decisions; the goal's
 * fields are refused with problem+json naming them; a calibrated width
 * (goal.scale below 1) is labelled unproven in the status and in
 * GET /v1/policies.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/harness.h"

#define CAP 4000 /* assignments: far beyond what the trials below need */

/* Assign and reward (as the key, NULL: none) until the experiment serves
 * its recommendation; reward[arm] is the outcome of each arm, reward units.
 * Returns the assignments handed out. */
static int run_trial(struct tdaemon *d, const char *id, const char *key, const double *reward)
{
    char path[128], body[200];
    int n = 0;
    for (; n < CAP; n++) {
        snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
        struct tresp *r = treq_key(d, "POST", path, key, "{}");
        assert_status(r, 201);
        if (json_is_true(tjson_get(r->json, "assignments[0].exploit"))) {
            tresp_free(r);
            break;
        }
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%g}",
                 tjson_str(r->json, "assignments[0].id"),
                 reward[tjson_int(r->json, "assignments[0].arm_index")]);
        tresp_free(r);
        snprintf(path, sizeof path, "/v1/experiments/%s/rewards", id);
        r = treq_key(d, "POST", path, key, body);
        assert_status(r, 200);
        tresp_free(r);
    }
    assert_true(n < CAP);
    return n;
}

/* Arm i of the status's first bandit: its decision, and its interval holds
 * its estimate. */
static const char *decision(const json_t *st, int i)
{
    char p[96];
    snprintf(p, sizeof p, "bandits[0].arms[%d].vs_control", i);
    const json_t *v = tjson_get(st, p);
    assert_non_null(v);
    double lo = tjson_num(v, "lower"), hi = tjson_num(v, "upper");
    double diff = tjson_num(v, "difference");
    assert_true(lo <= diff && diff <= hi);
    return tjson_str(v, "decision");
}

/* A superiority trial (rewards 0.3 for the control and arm a, 0.9 for arm
 * b; Δ = 0.1): it stops for superiority, b superior and a futile with
 * their intervals on the right side of Δ; the control is marked; the stop
 * rule is control and fired; a blinded read (read key) sees no arm and no
 * interval but sees the stop reason; after the stop an assignment serves
 * b; a restart rebuilds the same decisions. */
static void test_superiority(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    char admin[128], reader[128];
    assert_int_equal(tdaemon_create_key(d, "admin", admin, sizeof admin), 0);
    assert_int_equal(tdaemon_create_key(d, "read", reader, sizeof reader), 0);
    struct tresp *r = treq_key(
        d, "POST", "/v1/experiments", admin,
        "{\"id\":\"trial\",\"arms\":[\"placebo\",\"a\",\"b\"],\"seed\":5,"
        "\"goal\":{\"type\":\"control\",\"control\":\"placebo\",\"margin\":0.1,\"delta\":0.1},"
        "\"design\":{\"blinded\":true}}");
    assert_status(r, 201);
    assert_string_equal(tjson_str(r->json, "policy.name"), "vs-control");
    assert_string_equal(tjson_str(r->json, "goal.type"), "control");
    assert_string_equal(tjson_str(r->json, "goal.control"), "placebo");
    tresp_free(r);
    static const double reward[] = {0.3, 0.3, 0.9};
    run_trial(d, "trial", admin, reward);

    json_t *before = NULL;
    for (int pass = 0; pass < 2; pass++) {
        r = treq_key(d, "GET", "/v1/experiments/trial/status", admin, NULL);
        assert_status(r, 200);
        assert_string_equal(tjson_str(r->json, "stop_reason"), "superiority");
        assert_true(json_is_true(tjson_get(r->json, "bandits[0].arms[0].control")));
        assert_null(tjson_get(r->json, "bandits[0].arms[0].vs_control"));
        assert_string_equal(decision(r->json, 1), "futile");
        assert_string_equal(decision(r->json, 2), "superior");
        assert_true(tjson_num(r->json, "bandits[0].arms[1].vs_control.upper") < 0.1);
        assert_true(tjson_num(r->json, "bandits[0].arms[2].vs_control.lower") > 0.1);
        assert_true(tjson_int(r->json, "bandits[0].arms[2].vs_control.decided_at") > 0);
        assert_string_equal(tjson_str(r->json, "bandits[0].stop.rule"), "control");
        assert_true(json_is_true(tjson_get(r->json, "bandits[0].stop.fired")));
        assert_true(json_is_true(tjson_get(r->json, "bandits[0].stop.proven")));
        assert_true(fabs(tjson_num(r->json, "bandits[0].stop.error_bound") - 0.1) < 1e-12);
        assert_string_equal(tjson_str(r->json, "bandits[0].recommended[0]"), "b");
        if (pass == 0) {
            before = json_deep_copy(tjson_get(r->json, "bandits[0].arms"));
        } else {
            /* the replay decided the same, at the same pulls */
            assert_true(json_equal(before, tjson_get(r->json, "bandits[0].arms")));
        }
        tresp_free(r);

        r = treq_key(d, "GET", "/v1/experiments/trial/status", reader, NULL);
        assert_status(r, 200);
        if (!json_is_true(tjson_get(r->json, "blinded")))
            fail_msg("pass %d: %s", pass, r->body);
        assert_true(json_is_true(tjson_get(r->json, "blinded")));
        assert_string_equal(tjson_str(r->json, "stop_reason"), "superiority");
        assert_null(tjson_get(r->json, "bandits[0].arms"));
        assert_null(strstr(r->body, "vs_control"));
        assert_null(strstr(r->body, "superior\""));
        tresp_free(r);

        r = treq_key(d, "POST", "/v1/experiments/trial/assignments", admin, "{}");
        assert_status(r, 201);
        assert_true(json_is_true(tjson_get(r->json, "assignments[0].exploit")));
        assert_string_equal(tjson_str(r->json, "assignments[0].arm"), "b");
        tresp_free(r);
        if (pass == 0)
            assert_int_equal(tdaemon_restart(d), 0);
    }
    json_decref(before);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* A null trial (every arm 0.5, Δ = 0.2) stops for futility, every arm
 * futile; the goal's fields are checked and named. */
static void test_futility_and_fields(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    struct tresp *r = treq(d, "POST", "/v1/experiments",
                           "{\"id\":\"null\",\"arms\":[\"c\",\"x\",\"y\",\"z\"],\"seed\":9,"
                           "\"goal\":{\"type\":\"control\",\"control\":0,\"margin\":0.2}}",
                           NULL);
    assert_status(r, 201);
    tresp_free(r);
    static const double reward[] = {0.5, 0.5, 0.5, 0.5};
    run_trial(d, "null", NULL, reward);
    r = treq(d, "GET", "/v1/experiments/null/status", NULL, NULL);
    assert_status(r, 200);
    assert_string_equal(tjson_str(r->json, "stop_reason"), "futility");
    for (int i = 1; i < 4; i++)
        assert_string_equal(decision(r->json, i), "futile");
    assert_string_equal(tjson_str(r->json, "bandits[0].recommended[0]"), "c");
    tresp_free(r);
    /* what the guarantee rests on is fixed at creation, as m, δ and ε are */
    static const char *const fixed[] = {"margin", "control", "type", "scale"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char field[32];
        snprintf(field, sizeof field, "goal.%s", fixed[i]);
        r = treqf(d, "PATCH", "/v1/experiments/null", "{\"goal\":{\"%s\":0}}", fixed[i]);
        assert_status(r, 400);
        assert_string_equal(tjson_str(r->json, "errors[0].field"), field);
        tresp_free(r);
        r = treqf(d, "POST", "/v1/experiments/null/amendments",
                  "{\"change\":{\"goal\":{\"%s\":0}},\"reason\":\"x\"}", fixed[i]);
        assert_status(r, 400);
        snprintf(field, sizeof field, "change.goal.%s", fixed[i]);
        assert_string_equal(tjson_str(r->json, "errors[0].field"), field);
        tresp_free(r);
    }

    static const struct {
        const char *goal, *extra, *field;
    } bad[] = {
        {"{\"type\":\"control\",\"control\":\"nope\"}", "", "goal.control"},
        {"{\"type\":\"control\"}", "", "goal.control"},
        {"{\"type\":\"control\",\"control\":7}", "", "goal.control"},
        {"{\"type\":\"control\",\"control\":\"c\",\"margin\":1}", "", "goal.margin"},
        {"{\"type\":\"control\",\"control\":\"c\",\"margin\":-0.1}", "", "goal.margin"},
        {"{\"type\":\"control\",\"control\":\"c\",\"m\":2}", "", "goal.m"},
        {"{\"type\":\"control\",\"control\":\"c\",\"epsilon\":0.1}", "", "goal.epsilon"},
        {"{\"type\":\"best\"}", "", "goal.type"},
        {"{\"margin\":0.1}", "", "goal.margin"},
        {"{\"control\":\"c\"}", "", "goal.control"},
        {"{\"type\":\"control\",\"control\":\"c\",\"scale\":0}", "", "goal.scale"},
        {"{\"type\":\"control\",\"control\":\"c\",\"scale\":1.5}", "", "goal.scale"},
        {"{\"type\":\"control\",\"control\":\"c\",\"scale\":-0.5}", "", "goal.scale"},
        {"{\"type\":\"control\",\"control\":\"c\",\"scale\":\"half\"}", "", "goal.scale"},
        {"{\"scale\":0.5}", "", "goal.scale"},
        {"{\"type\":\"control\",\"control\":\"c\"}", ",\"policy\":{\"name\":\"adapt\"}",
         "policy.name"},
        {"{\"type\":\"control\",\"control\":\"c\"}", ",\"stop_rule\":\"glr\"", "stop_rule"},
        {"{\"type\":\"control\",\"control\":\"c\"}", ",\"bound\":\"fixed\"", "bound"},
        {"{\"type\":\"control\",\"control\":\"c\"}",
         ",\"constraints\":{\"control\":{\"arm\":\"x\",\"share\":0.2}}", "goal.control"},
        {"{}", ",\"policy\":{\"name\":\"vs-control\"}", "policy.name"},
        {"{}", ",\"stop_rule\":\"control\"", "stop_rule"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = treqf(d, "POST", "/v1/experiments", "{\"arms\":[\"c\",\"x\"],\"goal\":%s%s}",
                  bad[i].goal, bad[i].extra);
        if (r->status != 400 || strcmp(tjson_str(r->json, "errors[0].field"), bad[i].field) != 0)
            fail_msg("goal %s%s: %ld %s, want 400 naming %s", bad[i].goal, bad[i].extra, r->status,
                     r->body, bad[i].field);
        assert_non_null(strstr(tresp_content_type(r), "application/problem+json"));
        tresp_free(r);
    }
    assert_int_equal(tdaemon_stop(d), 0);
}

/* A calibrated trial (goal.scale 0.5; the superiority rewards above): it
 * stops for superiority on the right arm, sooner than the proven rule
 * would, and says it rests on no proof: stop.proven false and no error
 * bound; the design keeps its scale (and a design without one gets none,
 * so that its hash is unchanged); GET /v1/policies says what makes the
 * rule unproven. */
static void test_calibrated(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    static const char *const ids[] = {"proven", "calibrated"};
    static const double reward[] = {0.3, 0.3, 0.9};
    int pulls[2];
    for (int k = 0; k < 2; k++) {
        struct tresp *r = treqf(d, "POST", "/v1/experiments",
                                "{\"id\":\"%s\",\"arms\":[\"placebo\",\"a\",\"b\"],\"seed\":5,"
                                "\"goal\":{\"type\":\"control\",\"control\":\"placebo\","
                                "\"margin\":0.1,\"delta\":0.1%s}}",
                                ids[k], k == 1 ? ",\"scale\":0.5" : "");
        assert_status(r, 201);
        if (k == 1)
            assert_true(fabs(tjson_num(r->json, "goal.scale") - 0.5) < 1e-12);
        else
            assert_null(tjson_get(r->json, "goal.scale"));
        tresp_free(r);
        pulls[k] = run_trial(d, ids[k], NULL, reward);
        char path[96];
        snprintf(path, sizeof path, "/v1/experiments/%s/status", ids[k]);
        r = treq(d, "GET", path, NULL, NULL);
        assert_status(r, 200);
        assert_string_equal(tjson_str(r->json, "stop_reason"), "superiority");
        assert_string_equal(tjson_str(r->json, "bandits[0].recommended[0]"), "b");
        assert_string_equal(tjson_str(r->json, "bandits[0].stop.rule"), "control");
        assert_true(json_is_true(tjson_get(r->json, "bandits[0].stop.fired")));
        if (k == 1) {
            assert_true(json_is_false(tjson_get(r->json, "bandits[0].stop.proven")));
            assert_true(json_is_null(tjson_get(r->json, "bandits[0].stop.error_bound")));
        } else {
            assert_true(json_is_true(tjson_get(r->json, "bandits[0].stop.proven")));
        }
        tresp_free(r);
    }
    /* narrower intervals decide sooner: that is what the proof is traded for */
    assert_true(pulls[1] < pulls[0]);

    struct tresp *r = treq(d, "GET", "/v1/policies", NULL, NULL);
    assert_status(r, 200);
    const json_t *rules = tjson_get(r->json, "stop_rules");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const json_t *rule = json_array_get(rules, i);
        const char *when = tjson_str(rule, "unproven_when");
        if (strcmp(tjson_str(rule, "name"), "control") == 0) {
            assert_true(json_is_true(tjson_get(rule, "proven")));
            assert_non_null(when);
            assert_non_null(strstr(when, "goal.scale"));
            seen = 1;
        }
    }
    assert_true(seen);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_superiority, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_futility_and_fields, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_calibrated, tfresh_setup, tfresh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
