/*
 * test_corrections.c — correcting a wrong outcome over HTTP (POST
 * /v1/experiments/{id}/corrections {assignment_id, reward, reason}): the
 * corrected value replaces the reported one in the statistics at once, the
 * correction is an export row with its reason, a restart rebuilds exactly
 * the same state (before and after more pulls), and what cannot be
 * corrected is refused naming the field.
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

static struct tresp *correct(const char *exp, const char *aid, double v, const char *reason)
{
    char path[160], body[512];
    snprintf(path, sizeof path, "/v1/experiments/%s/corrections", exp);
    if (reason != NULL)
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%.17g,\"reason\":\"%s\"}",
                 aid, v, reason);
    else
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%.17g}", aid, v);
    return treq(tgroup_d, "POST", path, body, NULL);
}

/* The mean of arm `arm` in the status (bandit 0). */
static double arm_mean(json_t *st, const char *arm)
{
    json_t *arms = tjson_get(st, "bandits[0].arms");
    for (size_t i = 0; i < json_array_size(arms); i++)
        if (strcmp(tjson_str(json_array_get(arms, i), "id"), arm) == 0)
            return tjson_num(json_array_get(arms, i), "mean");
    fail_msg("no arm %s", arm);
    return NAN;
}

/* n pulls with rewards i % 2 (the first gets 1); the ids of the pulls
 * into ids, their arms into arms, and per arm the sum and count. */
static void pulls(const char *exp, int n, char ids[][64], char arms[][16], double *sum, int *cnt)
{
    for (int i = 0; i < n; i++) {
        json_t *a = texp_assign(tgroup_d, exp, NULL);
        assert_false(json_is_true(tjson_get(a, "[0].exploit")));
        long long k = tjson_int(a, "[0].arm_index");
        double v = (i % 2) == 0;
        assert_string_equal(texp_reward(tgroup_d, exp, tjson_str(a, "[0].id"), v), "accepted");
        if (ids != NULL) {
            snprintf(ids[i], 64, "%s", tjson_str(a, "[0].id"));
            snprintf(arms[i], 16, "%s", tjson_str(a, "[0].arm"));
        }
        sum[k] += v;
        cnt[k]++;
        json_decref(a);
    }
}

static void test_correction_replaces_value(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"co1\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":11,"
                                      "\"reward\":{\"min\":0,\"max\":1}}"));
    char ids[30][64], arms[30][16];
    double sum[3] = {0};
    int cnt[3] = {0};
    pulls("co1", 30, ids, arms, sum, cnt);
    json_t *before = texp_status(tgroup_d, "co1");
    /* ids[0] was rewarded 1: it was 0. */
    struct tresp *r = correct("co1", ids[0], 0, "double-counted conversion");
    assert_status(r, 201);
    assert_string_equal(tjson_str(r->json, "assignment_id"), ids[0]);
    assert_true(tjson_num(r->json, "previous") == 1);
    assert_true(tjson_num(r->json, "reward") == 0);
    assert_string_equal(tjson_str(r->json, "arm"), arms[0]);
    assert_string_equal(tjson_str(r->json, "reason"), "double-counted conversion");
    tresp_free(r);

    json_t *after = texp_status(tgroup_d, "co1");
    int k = arms[0][0] - 'a';
    double want = (sum[k] - 1) / cnt[k];
    assert_true(fabs(arm_mean(after, arms[0]) - want) < 1e-12);
    assert_true(fabs(arm_mean(before, arms[0]) - sum[k] / cnt[k]) < 1e-12);
    assert_int_equal(tjson_int(after, "pulls"), tjson_int(before, "pulls"));
    json_decref(before);

    /* A restart rebuilds the very same state. */
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *again = texp_status(tgroup_d, "co1");
    tjson_must_equal(after, again, "status after a correction, before and after a restart");
    json_decref(after);
    json_decref(again);

    /* The policy goes on from the corrected data; a restart after more
     * pulls replays them exactly. */
    pulls("co1", 20, NULL, NULL, sum, cnt);
    after = texp_status(tgroup_d, "co1");
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    again = texp_status(tgroup_d, "co1");
    tjson_must_equal(after, again, "status after pulls that followed a correction");
    json_decref(after);
    json_decref(again);
    /* ...re-selected, not merely recorded: the replay never fell back. */
    char *log = tdaemon_stderr(tgroup_d);
    assert_non_null(log);
    assert_null(strstr(log, "no longer reproduces"));
    free(log);

    /* The export keeps the reported value on the assignment's row and
     * adds the correction's. */
    struct tresp *e = treq(tgroup_d, "GET", "/v1/experiments/co1/export?format=ndjson", NULL, NULL);
    assert_status(e, 200);
    const char *row = strstr(e->body, "\"kind\":\"correction\"");
    assert_non_null(row);
    const char *line = row;
    while (line > e->body && line[-1] != '\n')
        line--;
    json_t *cr = json_loadb(line, (size_t)(strchr(row, '\n') - line), 0, NULL);
    assert_non_null(cr);
    assert_string_equal(tjson_str(cr, "assignment_id"), ids[0]);
    assert_true(tjson_num(cr, "reward") == 0);
    assert_string_equal(tjson_str(cr, "status"), "corrected");
    assert_string_equal(tjson_str(cr, "note"), "double-counted conversion");
    json_decref(cr);
    tresp_free(e);

    /* A correction is final. */
    r = correct("co1", ids[0], 1, "changed my mind");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "assignment_id"));
    tresp_free(r);
    /* The value reported already: nothing to correct. */
    r = correct("co1", ids[1], 0, "same");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "reward"));
    tresp_free(r);
}

static void test_correction_refused(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"co2\",\"arms\":[\"a\",\"b\"],\"seed\":12}"));
    json_t *a = texp_assign(tgroup_d, "co2", NULL);
    const char *pending = tjson_str(a, "[0].id");
    json_t *b = texp_assign(tgroup_d, "co2", NULL);
    const char *done = tjson_str(b, "[0].id");
    texp_reward(tgroup_d, "co2", done, 1);

    struct tresp *r = correct("co2", done, 0, NULL);
    assert_invalid(r, "reason");
    tresp_free(r);
    r = correct("co2", done, 2, "out of range");
    assert_invalid(r, "reward");
    tresp_free(r);
    r = treq(tgroup_d, "POST", "/v1/experiments/co2/corrections",
             "{\"assignment_id\":\"x\",\"reward\":0,\"reason\":\"r\",\"by\":\"me\"}", NULL);
    assert_invalid(r, "by");
    tresp_free(r);
    r = correct("co2", "00000000-99-00000000", 0, "unknown");
    assert_problem(r, 404);
    assert_true(tproblem_has_field(r, "assignment_id"));
    tresp_free(r);
    r = correct("co2", pending, 0, "not rewarded yet");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "assignment_id"));
    tresp_free(r);

    /* After a stop the result stands. */
    r = treq(tgroup_d, "PATCH", "/v1/experiments/co2", "{\"state\":\"stopped\"}", NULL);
    assert_status(r, 200);
    tresp_free(r);
    r = correct("co2", done, 0, "too late");
    assert_problem(r, 409);
    tresp_free(r);
    json_t *st = texp_status(tgroup_d, "co2");
    assert_int_equal(tjson_int(st, "pulls"), 1);
    assert_true(arm_mean(st, tjson_str(b, "[0].arm")) == 1);
    json_decref(st);
    json_decref(a);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correction_replaces_value),
        cmocka_unit_test(test_correction_refused),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
