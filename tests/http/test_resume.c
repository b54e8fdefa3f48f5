/*
 * test_resume.c — exact resumption against an independent witness (issue 4
 * item 7). Two daemons get the same requests in the same order: one runs
 * uninterrupted, the other is killed with SIGKILL in the middle of the run
 * and restarted on its database. Every answer must be the same on both —
 * each assignment's sequence number, bandit, arm and exploit flag — and so
 * must every status document, before and after the kill and at the end.
 * A second daemon (rather than a second experiment on the same one) rules
 * out anything the two experiments could share inside one process.
 * - SAR, fixed budget 400 on four arms, every reward 15 assignments late,
 *   killed in the middle of its second phase with 15 pulls outstanding:
 *   resumes to exactly the budget (with late rewards the phase waits spend
 *   SAR's rounding leftover; docs/policies.md) and settles the same way;
 * - GapE over three bandits, budget 600, rewards 10 late, some requests
 *   naming a bandit, killed mid-run: the same choices of bandit and arm,
 *   exactly the budget;
 * - a DELETE whose commit fails (injected full disk) leaves the experiment
 *   in place, in memory as on disk: a retry deletes it for good.
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

#define MAX_STEPS 5000

/* One side of the comparison: a daemon and its rewards in flight. */
struct side {
    struct tdaemon *d;
    char (*ids)[64]; /* queue of assignment ids, oldest at head */
    int *reward;
    size_t head, tail;
};

static void side_init(struct side *s, struct tdaemon *d)
{
    memset(s, 0, sizeof *s);
    s->d = d;
    s->ids = calloc(MAX_STEPS, sizeof *s->ids);
    s->reward = calloc(MAX_STEPS, sizeof *s->reward);
    assert_non_null(s->ids);
    assert_non_null(s->reward);
}

static void side_free(struct side *s)
{
    free(s->ids);
    free(s->reward);
}

/* The part of an assignment that must match: "seq bandit arm exploit". */
static void describe(json_t *one, char *buf, size_t len)
{
    const char *id = tjson_str(one, "id");
    assert_non_null(id);
    /* the seq, not the id: its check holds the creation time */
    long long seq = (long long)tassignment_seq(id, NULL, 0);
    assert_true(seq > 0);
    snprintf(buf, len, "%lld %s %s %d", seq, tjson_str(one, "bandit"), tjson_str(one, "arm"),
             json_is_true(json_object_get(one, "exploit")));
}

/* What a scenario's experiment looks like. */
struct scenario {
    const char *create; /* body */
    const char *id;
    int delay;                               /* rewards come back this many assignments late */
    const char *named;                       /* every 7th request names this bandit (NULL: never) */
    const double *(*mu)(const char *bandit); /* true means of a bandit's arms */
    int kill_at;                             /* step after which the second daemon is killed */
    long long budget;
};

/* Deliver the oldest reward of both sides; both must accept it. */
static void deliver(struct side *s, int n)
{
    for (int k = 0; k < n; k++) {
        assert_true(s[k].head < s[k].tail);
        assert_string_equal(texp_reward(s[k].d, "x", s[k].ids[s[k].head], s[k].reward[s[k].head]),
                            "accepted");
        s[k].head++;
    }
}

static void assert_same_status(struct side *s, const char *when)
{
    json_t *a = texp_status(s[0].d, "x"), *b = texp_status(s[1].d, "x");
    if (!json_equal(a, b)) {
        char *ta = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
        char *tb = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("status differs %s:\nwitness %s\nkilled  %s", when, ta, tb);
    }
    json_decref(a);
    json_decref(b);
}

/* Run the scenario in lockstep on both daemons; s[1] is killed once. */
static void run(const struct scenario *sc)
{
    struct side s[2];
    side_init(&s[0], tdaemon_start(NULL));
    side_init(&s[1], tdaemon_start(NULL));
    assert_non_null(s[0].d);
    assert_non_null(s[1].d);
    for (int k = 0; k < 2; k++)
        json_decref(texp_create(s[k].d, "%s", sc->create));
    struct trng g;
    trng_seed(&g, 2024);
    int killed = 0, exploiting = 0;
    long long steps = 0;
    char named_body[96] = "";
    if (sc->named != NULL)
        snprintf(named_body, sizeof named_body, "{\"bandit\":\"%s\"}", sc->named);
    for (int t = 0; t < MAX_STEPS; t++) {
        const char *body = sc->named != NULL && t % 7 == 6 ? named_body : NULL;
        char what[2][128];
        int exploit = 0;
        int arm = -1;
        const char *bandit = NULL;
        json_t *ans[2];
        for (int k = 0; k < 2; k++) {
            ans[k] = texp_assign(s[k].d, "x", body);
            describe(json_array_get(ans[k], 0), what[k], sizeof what[k]);
        }
        if (strcmp(what[0], what[1]) != 0)
            fail_msg("step %d (%s): witness answered %s, the %s daemon %s", t,
                     killed ? "after the kill" : "before the kill", what[0],
                     killed ? "restarted" : "other", what[1]);
        json_t *one = json_array_get(ans[0], 0);
        exploit = json_is_true(json_object_get(one, "exploit"));
        arm = (int)tjson_int(one, "arm_index");
        bandit = tjson_str(one, "bandit");
        if (!exploit) {
            int r = trng_bernoulli(&g, sc->mu(bandit)[arm]);
            for (int k = 0; k < 2; k++) {
                snprintf(s[k].ids[s[k].tail], 64, "%s", tjson_str(json_array_get(ans[k], 0), "id"));
                s[k].reward[s[k].tail] = r;
                s[k].tail++;
            }
            steps++;
        } else {
            exploiting++;
        }
        json_decref(ans[0]);
        json_decref(ans[1]);
        /* Rewards come back `delay` assignments late; once the experiment
         * exploits, time passes: the oldest one comes back each step. */
        if (s[0].tail - s[0].head > (size_t)sc->delay || (exploit && s[0].head < s[0].tail))
            deliver(s, 2);
        if (t == sc->kill_at) {
            /* Mid-run: rewards outstanding, the phase not over. */
            json_t *before = texp_status(s[1].d, "x");
            assert_int_equal(tjson_int(before, "pending"), sc->delay);
            assert_false(json_is_true(json_object_get(before, "stopped")));
            assert_int_equal(tdaemon_kill(s[1].d), 0);
            assert_int_equal(tdaemon_restart(s[1].d), 0);
            json_t *after = texp_status(s[1].d, "x");
            assert_true(json_equal(before, after));
            json_decref(before);
            json_decref(after);
            assert_same_status(s, "right after the restart");
            killed = 1;
        }
        if (exploit && s[0].head == s[0].tail && exploiting > 3)
            break;
    }
    assert_true(killed);
    assert_same_status(s, "at the end");
    json_t *st = texp_status(s[1].d, "x");
    assert_true(json_is_true(json_object_get(st, "stopped")));
    assert_int_equal(tjson_int(st, "pending"), 0);
    assert_int_equal(tjson_int(st, "handed_out"), sc->budget);
    assert_int_equal(tjson_int(st, "pulls"), sc->budget);
    printf("# %s: killed after step %d, %lld pulls handed out (budget %lld), stop %s\n", sc->id,
           sc->kill_at, steps, sc->budget, tjson_str(st, "stop_reason"));
    json_decref(st);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tdaemon_stop(s[k].d), 0);
        tdaemon_free(s[k].d);
        side_free(&s[k]);
    }
}

static const double *sar_mu(const char *bandit)
{
    static const double mu[4] = {0.2, 0.4, 0.6, 0.8};
    (void)bandit;
    return mu;
}

/* SAR on 4 arms with N = 400: phase 1 hands out 4 × 63 = 252 pulls, phase
 * 2 another 3 × 21 (to 315): step 290 is inside phase 2. */
static void test_sar_kill9_mid_phase(void **state)
{
    (void)state;
    const struct scenario sc = {
        .create = "{\"id\":\"x\",\"arms\":[\"p20\",\"p40\",\"p60\",\"p80\"],"
                  "\"policy\":{\"name\":\"sar\"},\"goal\":{\"budget\":400},\"seed\":13}",
        .id = "sar",
        .delay = 15,
        .mu = sar_mu,
        .kill_at = 290,
        .budget = 400,
    };
    run(&sc);
}

static const double *gape_mu(const char *bandit)
{
    static const double easy[3] = {0.1, 0.9, 0.1}, hard1[3] = {0.45, 0.4, 0.55},
                        hard2[3] = {0.6, 0.5, 0.45};
    if (strcmp(bandit, "easy") == 0)
        return easy;
    return strcmp(bandit, "hard1") == 0 ? hard1 : hard2;
}

static void test_gape_multi_bandit_kill9(void **state)
{
    (void)state;
    const struct scenario sc = {
        .create = "{\"id\":\"x\",\"bandits\":[{\"id\":\"easy\",\"arms\":[\"a\",\"b\",\"c\"]},"
                  "{\"id\":\"hard1\",\"arms\":[\"a\",\"b\",\"c\"]},{\"id\":\"hard2\",\"arms\":"
                  "[\"a\",\"b\",\"c\"]}],\"policy\":{\"name\":\"gape\"},\"goal\":{\"budget\":600},"
                  "\"seed\":21}",
        .id = "gape",
        .delay = 10,
        .named = "hard2",
        .mu = gape_mu,
        .kill_at = 333,
        .budget = 600,
    };
    run(&sc);
}

/* --- a failed delete --------------------------------------------------------------------- */

/* BANDITD_STORE_FAIL_COMMITS=2+1: the create and one assignment commit, the
 * delete's commit fails as on a full disk. The experiment must still be
 * there (it is on disk): GET answers it, a retried DELETE removes it, and
 * after a restart it is gone. Before the fix, memory forgot it at once: the
 * retry answered 404 and it came back at the next start. */
static void test_failed_delete_keeps_experiment(void **state)
{
    (void)state;
    setenv("BANDITD_STORE_FAIL_COMMITS", "2+1", 1);
    struct tdaemon *d = tdaemon_start(NULL);
    unsetenv("BANDITD_STORE_FAIL_COMMITS");
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"del\",\"arms\":[\"a\",\"b\"],\"seed\":1}"));
    json_decref(texp_assign(d, "del", NULL));
    struct tresp *r = treq(d, "DELETE", "/v1/experiments/del", NULL, NULL);
    assert_problem(r, 503);
    tresp_free(r);
    r = treq(d, "GET", "/v1/experiments/del", NULL, NULL);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "pending"), 1);
    tresp_free(r);
    r = treq(d, "DELETE", "/v1/experiments/del", NULL, NULL);
    assert_status(r, 204);
    tresp_free(r);
    r = treq(d, "GET", "/v1/experiments/del", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    r = treq(d, "GET", "/v1/experiments/del", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    /* The id is free again, and the new experiment's writes succeed (its
     * rowid may be the deleted one's). */
    json_decref(texp_create(d, "{\"id\":\"del\",\"arms\":[\"a\",\"b\"],\"seed\":2}"));
    json_t *a = texp_assign(d, "del", NULL);
    assert_string_equal(texp_reward(d, "del", tjson_str(a, "[0].id"), 1), "accepted");
    json_decref(a);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sar_kill9_mid_phase),
        cmocka_unit_test(test_gape_multi_bandit_kill9),
        cmocka_unit_test(test_failed_delete_keeps_experiment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
