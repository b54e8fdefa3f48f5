/*
 * test_recovery.c — restarts. After a clean stop (SIGTERM, exit 0) and
 * after kill -9, the restarted daemon must (1) have lost no acknowledged
 * reward, (2) report exactly the same status, experiment and history
 * documents as before (byte-for-byte equal JSON, ETag included), and
 * (3) continue exactly where it was: the same assignments, in the same
 * order, with the same sequence numbers, as an identical experiment on the
 * same daemon that was never restarted (exact resumption: the policy's
 * state and random generator are rebuilt from the log).
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

static const double g_p[3] = {0.2, 0.5, 0.8};

/* What an experiment handed out, as "seq:arm:exploit" lines. */
struct trace {
    char *text;
    size_t len, cap;
};

static void trace_add(struct trace *t, json_t *assignment)
{
    const char *id = tjson_str(assignment, "id");
    assert_non_null(id);
    /* the seq, not the id: its check holds the creation time */
    long long seq = (long long)tassignment_seq(id, NULL, 0);
    assert_true(seq > 0);
    char line[128];
    int n = snprintf(line, sizeof line, "%lld:%s:%d\n", seq, tjson_str(assignment, "arm"),
                     json_is_true(json_object_get(assignment, "exploit")));
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->text = realloc(t->text, t->cap);
        assert_non_null(t->text);
    }
    memcpy(t->text + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

static void create_exp(struct tdaemon *d, const char *id)
{
    json_decref(texp_create(d,
                            "{\"id\":\"%s\",\"arms\":[\"p20\",\"p50\",\"p80\"],"
                            "\"policy\":{\"name\":\"adapt\"},\"seed\":77}",
                            id));
}

/* n pulls, each rewarded at once (from g) unless keep is given: then the
 * assignment ids are appended there, left pending. */
static void pulls_p(struct tdaemon *d, const char *id, struct trng *g, const double *p, int n,
                    struct trace *t, json_t *keep)
{
    for (int i = 0; i < n; i++) {
        json_t *a = texp_assign(d, id, NULL);
        json_t *one = json_array_get(a, 0);
        trace_add(t, one);
        long long arm = tjson_int(one, "arm_index");
        int reward = trng_bernoulli(g, p[arm]);
        if (keep != NULL)
            json_array_append_new(
                keep, json_pack("{s:s,s:i}", "id", tjson_str(one, "id"), "reward", reward));
        else if (!json_is_true(json_object_get(one, "exploit")))
            assert_string_equal(texp_reward(d, id, tjson_str(one, "id"), reward), "accepted");
        json_decref(a);
    }
}

static void pulls(struct tdaemon *d, const char *id, struct trng *g, int n, struct trace *t,
                  json_t *keep)
{
    pulls_p(d, id, g, g_p, n, t, keep);
}

static void reward_kept(struct tdaemon *d, const char *id, json_t *keep)
{
    size_t i;
    json_t *k;
    json_array_foreach(keep, i, k) assert_string_equal(
        texp_reward(d, id, tjson_str(k, "id"), (double)tjson_int(k, "reward")), "accepted");
    json_array_clear(keep);
}

static void observe(struct tdaemon *d, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/observations", id);
    struct tresp *r = treq(d, "POST", path,
                           "{\"observations\":[{\"arm\":\"p50\",\"reward\":1},"
                           "{\"arm\":\"p20\",\"reward\":0},{\"arm\":\"p80\",\"reward\":0.5}]}",
                           NULL);
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "accepted"), 3);
    tresp_free(r);
}

/* The three documents a client reads, and the status ETag. */
struct snapshot {
    json_t *status, *exp, *history;
    char etag[160];
};

static void snap(struct tdaemon *d, const char *id, struct snapshot *s)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/status", id);
    struct tresp *r = treq(d, "GET", path, NULL, NULL);
    assert_status(r, 200);
    s->status = json_incref(r->json);
    assert_non_null(tresp_etag(r));
    snprintf(s->etag, sizeof s->etag, "%s", tresp_etag(r));
    tresp_free(r);
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    r = treq(d, "GET", path, NULL, NULL);
    assert_status(r, 200);
    s->exp = json_incref(r->json);
    tresp_free(r);
    snprintf(path, sizeof path, "/v1/experiments/%s/history", id);
    r = treq(d, "GET", path, NULL, NULL);
    assert_status(r, 200);
    s->history = json_incref(r->json);
    tresp_free(r);
}

static void snap_free(struct snapshot *s)
{
    json_decref(s->status);
    json_decref(s->exp);
    json_decref(s->history);
}

static void assert_same_snapshot(struct snapshot *a, struct snapshot *b)
{
    tjson_must_equal(a->status, b->status, "status");
    tjson_must_equal(a->exp, b->exp, "experiment");
    tjson_must_equal(a->history, b->history, "history");
    assert_string_equal(a->etag, b->etag);
}

/* Status without the fields that name the experiment. */
static json_t *anonymous(json_t *status)
{
    json_t *c = json_deep_copy(status);
    json_object_del(c, "id");
    /* the design is its configuration, id included */
    json_object_del(c, "design_hash");
    json_object_del(c, "design");
    return c;
}

/* One scenario: a reference experiment runs the whole script; the other
 * runs its first half, the daemon goes down (stop or kill -9) and comes
 * back, and it runs the second half. Both must hand out the same
 * assignments and end in the same state. */
static void restart_scenario(int use_kill)
{
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    struct trace ref = {0}, rec = {0};
    struct trng gref, grec;
    trng_seed(&gref, 5);
    trng_seed(&grec, 5);
    json_t *kref = json_array(), *krec = json_array();
    create_exp(d, "ref");
    create_exp(d, "rec");

    /* First half: 120 answered pulls, 3 observations, 6 pulls left
     * pending, a sticky unit. */
    pulls(d, "ref", &gref, 120, &ref, NULL);
    pulls(d, "rec", &grec, 120, &rec, NULL);
    observe(d, "ref");
    observe(d, "rec");
    pulls(d, "ref", &gref, 6, &ref, kref);
    pulls(d, "rec", &grec, 6, &rec, krec);
    json_t *uref = texp_assign(d, "ref", "{\"unit\":\"patient-1\"}");
    json_t *urec = texp_assign(d, "rec", "{\"unit\":\"patient-1\"}");
    trace_add(&ref, json_array_get(uref, 0));
    trace_add(&rec, json_array_get(urec, 0));

    struct snapshot before, after;
    snap(d, "rec", &before);
    assert_int_equal(tjson_int(before.status, "pending"), 7);
    if (use_kill)
        assert_int_equal(tdaemon_kill(d), 0);
    else
        assert_int_equal(tdaemon_stop(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    snap(d, "rec", &after);
    assert_same_snapshot(&before, &after);
    snap_free(&before);
    snap_free(&after);

    /* The sticky unit gets the same assignment back, not a new pull. */
    json_t *again = texp_assign(d, "rec", "{\"unit\":\"patient-1\"}");
    assert_string_equal(tjson_str(again, "[0].id"), tjson_str(urec, "[0].id"));
    assert_string_equal(tjson_str(again, "[0].arm"), tjson_str(urec, "[0].arm"));
    json_decref(again);

    /* Second half: the pending ones come back, then 150 more pulls. */
    reward_kept(d, "ref", kref);
    reward_kept(d, "rec", krec);
    assert_string_equal(texp_reward(d, "ref", tjson_str(uref, "[0].id"), 1), "accepted");
    assert_string_equal(texp_reward(d, "rec", tjson_str(urec, "[0].id"), 1), "accepted");
    pulls(d, "ref", &gref, 150, &ref, NULL);
    pulls(d, "rec", &grec, 150, &rec, NULL);
    assert_string_equal(ref.text, rec.text);

    json_t *sref = texp_status(d, "ref"), *srec = texp_status(d, "rec");
    json_t *aref = anonymous(sref), *arec = anonymous(srec);
    tjson_must_equal(aref, arec, "status of the restarted experiment vs the reference");
    assert_int_equal(tjson_int(srec, "pending"), 0);
    json_decref(aref);
    json_decref(arec);
    json_decref(sref);
    json_decref(srec);
    json_decref(uref);
    json_decref(urec);
    json_decref(kref);
    json_decref(krec);
    free(ref.text);
    free(rec.text);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

static void test_sigterm_restart_resumes_exactly(void **state)
{
    (void)state;
    restart_scenario(0);
}

static void test_kill9_resumes_exactly(void **state)
{
    (void)state;
    restart_scenario(1);
}

/* A fixed-budget phase policy (SAR) killed in the middle of a phase, with
 * pulls outstanding, resumes the same run and spends exactly its budget. */
static void test_kill9_mid_phase_resumes_to_budget(void **state)
{
    (void)state;
    static const double p4[4] = {0.2, 0.4, 0.6, 0.8};
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    static const char *const ids[2] = {"bref", "brec"};
    for (int i = 0; i < 2; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"id\":\"%s\",\"arms\":[\"p20\",\"p40\",\"p60\",\"p80\"],"
                 "\"policy\":{\"name\":\"sar\"},\"goal\":{\"budget\":400},\"seed\":13}",
                 ids[i]);
        struct tresp *r = treq(d, "POST", "/v1/experiments", body, NULL);
        assert_status(r, 201);
        tresp_free(r);
    }
    struct trace ref = {0}, rec = {0};
    struct trng gref, grec;
    trng_seed(&gref, 13);
    trng_seed(&grec, 13);
    json_t *kref = json_array(), *krec = json_array();
    /* 4 arms, budget 400: SAR's first phase hands out ~25 pulls per arm;
     * 170 + 3 outstanding is well inside a later phase. */
    pulls_p(d, "bref", &gref, p4, 170, &ref, NULL);
    pulls_p(d, "brec", &grec, p4, 170, &rec, NULL);
    pulls_p(d, "bref", &gref, p4, 3, &ref, kref);
    pulls_p(d, "brec", &grec, p4, 3, &rec, krec);
    json_t *before = texp_status(d, "brec");
    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    json_t *after = texp_status(d, "brec");
    tjson_must_equal(before, after, "status after kill -9");
    json_decref(before);
    json_decref(after);
    reward_kept(d, "bref", kref);
    reward_kept(d, "brec", krec);
    /* Past the budget every assignment is exploitation. */
    pulls_p(d, "bref", &gref, p4, 300, &ref, NULL);
    pulls_p(d, "brec", &grec, p4, 300, &rec, NULL);
    assert_string_equal(ref.text, rec.text);
    json_t *sref = texp_status(d, "bref"), *srec = texp_status(d, "brec");
    json_t *aref = anonymous(sref), *arec = anonymous(srec);
    tjson_must_equal(aref, arec, "status of the killed experiment vs the reference");
    /* The run ends where the uninterrupted one ends, never past the
     * budget: at it, or where SAR's last phase ends (its phase lengths are
     * rounded down, so they may add up to a few pulls less). */
    long long handed = tjson_int(srec, "handed_out");
    assert_true(handed <= 400 && handed > 400 - 4);
    assert_int_equal(tjson_int(srec, "pulls"), handed);
    assert_int_equal(tjson_int(srec, "pending"), 0);
    const char *why = tjson_str(srec, "stop_reason");
    assert_non_null(why);
    assert_true(strcmp(why, "budget") == 0 || strcmp(why, "policy") == 0);
    printf("# sar, budget 400, arms (0.2, 0.4, 0.6, 0.8): %lld pulls, stop %s, recommends %s\n",
           handed, why, tjson_str(srec, "bandits[0].recommended[0]"));
    json_decref(aref);
    json_decref(arec);
    json_decref(sref);
    json_decref(srec);
    json_decref(kref);
    json_decref(krec);
    free(ref.text);
    free(rec.text);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* --- kill -9 while rewards are in flight ----------------------------------------- */

#define NASSIGN 300

struct sender {
    struct tclient *c;
    json_t *ids;        /* assignment ids to reward, in order */
    int acked[NASSIGN]; /* 1: a 200 "accepted" came back */
    int sent[NASSIGN];  /* 1: the request was started */
    pthread_mutex_t mu;
    int nacked;
};

static void *send_rewards(void *arg)
{
    struct sender *s = arg;
    for (size_t i = 0; i < json_array_size(s->ids); i++) {
        char body[160];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}",
                 json_string_value(json_array_get(s->ids, i)), (int)(i % 2));
        s->sent[i] = 1;
        struct tresp *r = tclient_req(s->c, "POST", "/v1/experiments/k9/rewards", body, NULL);
        const char *st = tjson_str(r->json, "results[0].status");
        int ok = r->status == 200 && st != NULL && strcmp(st, "accepted") == 0;
        int dead = r->status == 0;
        tresp_free(r);
        if (dead)
            break; /* the daemon is gone */
        if (ok) {
            pthread_mutex_lock(&s->mu);
            s->acked[i] = 1;
            s->nacked++;
            pthread_mutex_unlock(&s->mu);
        }
    }
    return NULL;
}

/* Experiment "k9" (uniform over three arms, this seed) with NASSIGN
 * assignments, and a thread (*th) sending their rewards on a client of its
 * own; returns once a third is acknowledged (bounded wait: the sender may
 * also finish first on a fast machine, which proves less but is no error). */
static struct sender *start_sender(struct tdaemon *d, unsigned seed, pthread_t *th)
{
    json_decref(texp_create(d,
                            "{\"id\":\"k9\",\"arms\":[\"a\",\"b\",\"c\"],"
                            "\"policy\":{\"name\":\"uniform\"},\"seed\":%u}",
                            seed));
    struct sender *s = calloc(1, sizeof *s);
    assert_non_null(s);
    pthread_mutex_init(&s->mu, NULL);
    s->ids = json_array();
    for (int i = 0; i < NASSIGN / 100; i++) {
        json_t *a = texp_assign(d, "k9", "{\"count\":100}");
        size_t k;
        json_t *one;
        json_array_foreach(a, k, one) json_array_append(s->ids, json_object_get(one, "id"));
        json_decref(a);
    }
    assert_int_equal(json_array_size(s->ids), NASSIGN);
    s->c = tclient_new(d);
    assert_int_equal(pthread_create(th, NULL, send_rewards, s), 0);
    for (int waited = 0; waited < 60000; waited += 2) {
        pthread_mutex_lock(&s->mu);
        int n = s->nacked;
        pthread_mutex_unlock(&s->mu);
        if (n >= NASSIGN / 3)
            break;
        tsleep_ms(2);
    }
    return s;
}

/* Wait for the sender to end (its daemon is gone or stopped); the rewards
 * acknowledged, and in *sent those sent. */
static int sender_join(struct sender *s, pthread_t th, int *sent)
{
    pthread_join(th, NULL);
    tclient_free(s->c);
    int acked = 0;
    *sent = 0;
    for (int i = 0; i < NASSIGN; i++) {
        acked += s->acked[i];
        *sent += s->sent[i];
    }
    return acked;
}

static void sender_free(struct sender *s)
{
    json_decref(s->ids);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void test_kill9_loses_no_acknowledged_reward(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    pthread_t th;
    /* Kill once a third is acknowledged. */
    struct sender *s = start_sender(d, 3, &th);
    assert_int_equal(tdaemon_kill(d), 0);
    int sent;
    int acked = sender_join(s, th, &sent);
    printf("# kill -9 after %d rewards acknowledged, %d sent\n", acked, sent);
    assert_true(acked >= NASSIGN / 3);

    assert_int_equal(tdaemon_restart(d), 0);
    json_t *st = texp_status(d, "k9");
    long long n_pulls = tjson_int(st, "pulls");
    /* Every acknowledged reward is there; at most the unanswered ones in
     * flight were added besides. */
    assert_true(n_pulls >= acked);
    assert_true(n_pulls <= sent);
    assert_int_equal(tjson_int(st, "pulls") + tjson_int(st, "pending"), NASSIGN);
    json_decref(st);
    /* Each acknowledged reward is on disk: sending it again is a duplicate;
     * a different value is a conflict. */
    for (int i = 0; i < NASSIGN; i++) {
        const char *aid = json_string_value(json_array_get(s->ids, i));
        const char *r = texp_reward(d, "k9", aid, (double)(i % 2));
        if (s->acked[i])
            assert_string_equal(r, "duplicate");
        else
            assert_true(strcmp(r, "accepted") == 0 || strcmp(r, "duplicate") == 0);
        if (s->acked[i] && i % 17 == 0)
            assert_string_equal(texp_reward(d, "k9", aid, (double)(1 - i % 2)), "conflict");
    }
    st = texp_status(d, "k9");
    assert_int_equal(tjson_int(st, "pulls"), NASSIGN);
    assert_int_equal(tjson_int(st, "pending"), 0);
    json_decref(st);
    sender_free(s);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* SIGTERM while rewards stream in: in-flight requests finish, the daemon
 * exits 0, and every acknowledged reward is on disk. */
static void test_sigterm_under_load(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    pthread_t th;
    struct sender *s = start_sender(d, 4, &th);
    assert_int_equal(tdaemon_stop(d), 0);
    int sent;
    int acked = sender_join(s, th, &sent);
    printf("# SIGTERM after %d rewards acknowledged\n", acked);
    assert_int_equal(tdaemon_restart(d), 0);
    for (int i = 0; i < NASSIGN; i++)
        if (s->acked[i])
            assert_string_equal(
                texp_reward(d, "k9", json_string_value(json_array_get(s->ids, i)), (double)(i % 2)),
                "duplicate");
    json_t *st = texp_status(d, "k9");
    assert_true(tjson_int(st, "pulls") >= acked);
    json_decref(st);
    sender_free(s);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* Several clients at once on one experiment (assign, then reward, each on
 * its own connection), then kill -9: the counts add up, and the log
 * replays to the same status — the order events were numbered in is the
 * order they were applied. */
#define NWRITERS 3
#define PER_WRITER 120

struct writer {
    struct tclient *c;
    int errors;
};

static void *write_loop(void *arg)
{
    struct writer *w = arg;
    for (int i = 0; i < PER_WRITER; i++) {
        struct tresp *r = tclient_req(w->c, "POST", "/v1/experiments/conc/assignments", "{}", NULL);
        const char *id = tjson_str(r->json, "assignments[0].id");
        char body[128];
        if (r->status != 201 || id == NULL) {
            w->errors++;
            tresp_free(r);
            continue;
        }
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", id, i % 3 == 0);
        tresp_free(r);
        r = tclient_req(w->c, "POST", "/v1/experiments/conc/rewards", body, NULL);
        const char *st = tjson_str(r->json, "results[0].status");
        if (r->status != 200 || st == NULL || strcmp(st, "accepted") != 0)
            w->errors++;
        tresp_free(r);
    }
    return NULL;
}

static void test_concurrent_writers_then_kill9(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"conc\",\"arms\":[\"a\",\"b\",\"c\",\"d\"],"
                               "\"seed\":8}"));
    struct writer w[NWRITERS];
    pthread_t th[NWRITERS];
    for (int i = 0; i < NWRITERS; i++) {
        w[i].c = tclient_new(d);
        w[i].errors = 0;
        assert_int_equal(pthread_create(&th[i], NULL, write_loop, &w[i]), 0);
    }
    for (int i = 0; i < NWRITERS; i++) {
        pthread_join(th[i], NULL);
        tclient_free(w[i].c);
        assert_int_equal(w[i].errors, 0);
    }
    struct snapshot before, after;
    snap(d, "conc", &before);
    assert_int_equal(tjson_int(before.status, "handed_out"), NWRITERS * PER_WRITER);
    assert_int_equal(tjson_int(before.status, "pulls") + tjson_int(before.status, "pending"),
                     NWRITERS * PER_WRITER);
    assert_int_equal(tjson_int(before.status, "pending"), 0);
    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    snap(d, "conc", &after);
    assert_same_snapshot(&before, &after);
    snap_free(&before);
    snap_free(&after);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

/* Several restarts in a row, and a stopped experiment stays stopped. */
static void test_repeated_restarts(void **state)
{
    (void)state;
    struct tdaemon *d = tdaemon_start(NULL);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"multi\",\"arms\":[\"a\",\"b\"],\"seed\":1}"));
    json_decref(texp_create(d, "{\"id\":\"halted\",\"arms\":[\"a\",\"b\"],\"seed\":1}"));
    struct tresp *r = treq(d, "PATCH", "/v1/experiments/halted", "{\"state\":\"stopped\"}", NULL);
    assert_status(r, 200);
    tresp_free(r);
    r = treq(d, "PATCH", "/v1/experiments/multi", "{\"state\":\"paused\"}", NULL);
    assert_status(r, 200);
    tresp_free(r);
    json_t *first = texp_status(d, "multi");
    for (int i = 0; i < 3; i++) {
        if (i % 2)
            assert_int_equal(tdaemon_kill(d), 0);
        assert_int_equal(tdaemon_restart(d), 0);
        json_t *st = texp_status(d, "multi");
        tjson_must_equal(first, st, "status after restart");
        assert_string_equal(tjson_str(st, "state"), "paused");
        json_decref(st);
        st = texp_status(d, "halted");
        assert_string_equal(tjson_str(st, "state"), "stopped");
        assert_string_equal(tjson_str(st, "stop_reason"), "manual");
        json_decref(st);
    }
    json_decref(first);
    r = treq(d, "PATCH", "/v1/experiments/halted", "{\"state\":\"running\"}", NULL);
    assert_problem(r, 409);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm_restart_resumes_exactly),
        cmocka_unit_test(test_kill9_resumes_exactly),
        cmocka_unit_test(test_kill9_mid_phase_resumes_to_budget),
        cmocka_unit_test(test_kill9_loses_no_acknowledged_reward),
        cmocka_unit_test(test_sigterm_under_load),
        cmocka_unit_test(test_concurrent_writers_then_kill9),
        cmocka_unit_test(test_repeated_restarts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
