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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

static struct tresp *correct(const char *exp, const char *aid, double v, const char *reason)
{
    char path[160], body[4096];
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

    json_t *h = tcall(tgroup_d, "GET", "/v1/experiments/co1/history", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(h, "marks")), 1);
    assert_string_equal(tjson_str(h, "marks[0].kind"), "correction");
    assert_string_equal(tjson_str(h, "marks[0].note"), "double-counted conversion");
    assert_int_equal(tjson_int(h, "marks[0].pulls"), 30);
    json_decref(h);

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

    /* An expiry that recorded the default reward counts: it can be
     * corrected; one without a default cannot. */
    json_decref(texp_create(tgroup_d, "{\"id\":\"co2d\",\"arms\":[\"a\",\"b\"],\"seed\":15,"
                                      "\"assignment_ttl_s\":1,\"default_reward\":0}"));
    json_t *e = texp_assign(tgroup_d, "co2d", NULL);
    tsleep_ms(1200);
    json_t *st = texp_status(tgroup_d, "co2d");
    assert_int_equal(tjson_int(st, "pulls"), 1); /* expired, counted at 0 */
    json_decref(st);
    r = correct("co2d", tjson_str(e, "[0].id"), 1, "converted after the window");
    assert_status(r, 201);
    assert_true(tjson_num(r->json, "previous") == 0);
    tresp_free(r);
    st = texp_status(tgroup_d, "co2d");
    assert_true(arm_mean(st, tjson_str(e, "[0].arm")) == 1);
    json_decref(st);
    json_decref(e);

    /* After a stop the result stands. */
    r = treq(tgroup_d, "PATCH", "/v1/experiments/co2", "{\"state\":\"stopped\"}", NULL);
    assert_status(r, 200);
    tresp_free(r);
    r = correct("co2", done, 0, "too late");
    assert_problem(r, 409);
    tresp_free(r);
    st = texp_status(tgroup_d, "co2");
    assert_int_equal(tjson_int(st, "pulls"), 1);
    assert_true(arm_mean(st, tjson_str(b, "[0].arm")) == 1);
    json_decref(st);
    json_decref(a);
    json_decref(b);
}

/* A list of corrections: one rebuild, one event each, all or nothing. */
static void test_correction_batch(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"co4\",\"arms\":[\"a\",\"b\"],\"seed\":14}"));
    char ids[10][64], arms[10][16];
    double sum[2] = {0};
    int cnt[2] = {0};
    pulls("co4", 10, ids, arms, sum, cnt);
    json_t *before = texp_status(tgroup_d, "co4");
    char body[1024];
    /* ids[1] was rewarded 0 and corrected to 0: refused, and the others
     * with it. */
    snprintf(body, sizeof body,
             "{\"corrections\":[{\"assignment_id\":\"%s\",\"reward\":0,\"reason\":\"r\"},"
             "{\"assignment_id\":\"%s\",\"reward\":0,\"reason\":\"r\"}]}",
             ids[0], ids[1]);
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments/co4/corrections", body, NULL);
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "corrections[1].reward"));
    tresp_free(r);
    json_t *same = texp_status(tgroup_d, "co4");
    tjson_must_equal(before, same, "status after a refused list of corrections");
    json_decref(same);
    snprintf(body, sizeof body,
             "{\"corrections\":[{\"assignment_id\":\"%s\",\"reward\":0,\"reason\":\"a\"},"
             "{\"assignment_id\":\"%s\",\"reward\":1,\"reason\":\"b\"},"
             "{\"assignment_id\":\"%s\",\"reward\":0.5,\"reason\":\"c\"}]}",
             ids[0], ids[1], ids[2]);
    r = treq(tgroup_d, "POST", "/v1/experiments/co4/corrections", body, NULL);
    assert_status(r, 201);
    assert_int_equal(json_array_size(json_object_get(r->json, "corrections")), 3);
    long long s0 = tjson_int(r->json, "corrections[0].seq");
    assert_int_equal(tjson_int(r->json, "corrections[2].seq"), s0 + 2);
    assert_true(tjson_num(r->json, "corrections[2].previous") == 1);
    tresp_free(r);
    /* The means: every arm's sum moved by what its corrections changed. */
    double delta[2] = {0};
    delta[arms[0][0] - 'a'] += 0 - 1;
    delta[arms[1][0] - 'a'] += 1 - 0;
    delta[arms[2][0] - 'a'] += 0.5 - 1;
    json_t *after = texp_status(tgroup_d, "co4");
    for (int k = 0; k < 2; k++) {
        const char *arm = k == 0 ? "a" : "b";
        if (cnt[k] > 0)
            assert_true(fabs(arm_mean(after, arm) - (sum[k] + delta[k]) / cnt[k]) < 1e-12);
    }
    /* The same assignment twice in one list is refused. */
    snprintf(body, sizeof body,
             "{\"corrections\":[{\"assignment_id\":\"%s\",\"reward\":1,\"reason\":\"a\"},"
             "{\"assignment_id\":\"%s\",\"reward\":0.5,\"reason\":\"b\"}]}",
             ids[3], ids[3]); /* ids[3] was rewarded 0 */
    r = treq(tgroup_d, "POST", "/v1/experiments/co4/corrections", body, NULL);
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "corrections[1].assignment_id"));
    tresp_free(r);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *again = texp_status(tgroup_d, "co4");
    tjson_must_equal(after, again, "status after a list of corrections, after a restart");
    json_decref(again);
    json_decref(after);
    json_decref(before);
}

/* Traffic on another connection while corrections rebuild the experiment:
 * every request is answered (the rebuild holds them back, never drops
 * them), and a restart ends in the state the daemon had. */
struct traffic {
    struct tclient *c;
    atomic_int stop;
    int sent, failed;
};

static void *traffic_run(void *arg)
{
    struct traffic *t = arg;
    while (!atomic_load(&t->stop)) {
        struct tresp *r = tclient_req(t->c, "POST", "/v1/experiments/co3/assignments", "{}", NULL);
        const char *id = r->status == 201 ? tjson_str(r->json, "assignments[0].id") : NULL;
        if (id == NULL) {
            t->failed++;
            tresp_free(r);
            continue;
        }
        char body[160];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", id,
                 t->sent % 3 == 0);
        tresp_free(r);
        r = tclient_req(t->c, "POST", "/v1/experiments/co3/rewards", body, NULL);
        t->failed += r->status != 200;
        t->sent++;
        tresp_free(r);
    }
    return NULL;
}

static void test_correction_under_traffic(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"co3\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":13}"));
    char ids[40][64], arms[40][16];
    double sum[3] = {0};
    int cnt[3] = {0};
    pulls("co3", 40, ids, arms, sum, cnt);
    struct traffic t = {.c = tclient_new(tgroup_d)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, traffic_run, &t), 0);
    int corrected = 0;
    for (int i = 0; i < 40; i += 2) { /* ids[i] were rewarded 1 */
        struct tresp *r = correct("co3", ids[i], 0, "bot traffic");
        assert_status(r, 201);
        corrected++;
        tresp_free(r);
    }
    atomic_store(&t.stop, 1);
    pthread_join(th, NULL);
    tclient_free(t.c);
    assert_int_equal(t.failed, 0);
    assert_true(t.sent > 0);
    json_t *st = texp_status(tgroup_d, "co3");
    assert_int_equal(tjson_int(st, "pulls"), 40 + t.sent);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_t *again = texp_status(tgroup_d, "co3");
    tjson_must_equal(st, again, "status after corrections under traffic, after a restart");
    json_decref(st);
    json_decref(again);
    char *log = tdaemon_stderr(tgroup_d);
    assert_null(strstr(log, "no longer reproduces"));
    free(log);
    printf("# %d corrections while %d assignments and rewards went through\n", corrected, t.sent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correction_replaces_value),
        cmocka_unit_test(test_correction_refused),
        cmocka_unit_test(test_correction_batch),
        cmocka_unit_test(test_correction_under_traffic),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
