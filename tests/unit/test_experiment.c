/*
 * test_experiment.c — the experiment runtime (exp/) over a
 * real store, driven directly so that the writer can be paused and single
 * submissions refused (store_test.h): the interleavings that HTTP clients
 * can only hit by chance.
 *
 * What is checked is the durability invariant of experiment.h: the log on
 * disk never has a gap that memory filled, and memory never lacks (or
 * contradicts) an event the disk committed and a client was told about —
 * across a write refused at queue time, a reload while older writes are
 * still queued, an expiry whose write is refused, a delete whose commit
 * fails, and concurrent creates against the experiment limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "exp/config.h"
#include "exp/exp.h"
#include "policies/engine.h"
#include "store/store.h"
#include "store/store_test.h"
#include "tests/support/tstore.h"

/* --- fixture ------------------------------------------------------------------ */

static struct exp_limits limits(size_t max_experiments)
{
    struct exp_limits l = {.max_experiments = max_experiments,
                           .max_bandits = 16,
                           .max_arms = 64,
                           .max_batch = 1000,
                           .max_count = 100,
                           .max_pending = 100000,
                           .history_points = 16};
    return l;
}

static struct tstore *fx_open(size_t max_experiments)
{
    struct tstore *f = tstore_new("e.db");
    struct exp_limits l = limits(max_experiments);
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    return f;
}

static void fx_close(struct tstore *f)
{
    exp_registry_free();
    store_close(f->s); /* drains: every callback has run after this */
    f->s = NULL;
    tstore_free(f);
}

/* cmocka fixtures: the teardown runs even when a test fails. */
static int setup10(void **state)
{
    *state = fx_open(10);
    return 0;
}

static int setup1(void **state)
{
    *state = fx_open(1);
    return 0;
}

static int teardown(void **state)
{
    fx_close(*state);
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Create experiment id (two arms, uniform, ttl 1 s) and wait for its
 * commit. Returns a new reference or NULL (rc in *rc_out). */
static struct exp *create(const char *id, int *rc_out)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"arms\":[\"a\",\"b\"],\"policy\":{\"name\":\"uniform\"},"
             "\"seed\":7,\"assignment_ttl_s\":1}",
             id);
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    json_t *errors = json_array();
    struct exp_config cfg;
    assert_non_null(j);
    assert_int_equal(exp_config_parse(j, exp_limits(), &cfg, errors), 0);
    json_decref(j);
    json_decref(errors);
    struct twait w;
    twait_init(&w);
    struct exp *x = NULL;
    int rc = exp_create(&cfg, NULL, NULL, twait_done, &w, &x);
    if (rc != EXP_OK) {
        twait_cancel(&w);
        *rc_out = rc;
        return NULL;
    }
    int err = twait_wait(&w);
    if (err != STORE_OK) {
        exp_put(x);
        *rc_out = EXP_ERR_STORE;
        return NULL;
    }
    *rc_out = EXP_OK;
    return x;
}

/* One assignment applied and queued under the lock; the batch must live
 * until w completes. Returns the store error of the submission. */
static int assign_one(struct exp *x, struct exp_batch *b, struct twait *w, int64_t now,
                      int64_t *seq_out)
{
    const struct exp_assignment *a;
    exp_batch_init(b);
    assert_int_equal(exp_ev_assign(x, b, -1, NULL, now, &a), EXP_OK);
    if (seq_out)
        *seq_out = a->seq;
    twait_init(w);
    int rc = exp_submit_locked(x, b, twait_done, w);
    if (rc != STORE_OK) {
        twait_cancel(w);
    }
    return rc;
}

/* The event log of exp on disk must be 1, 2, …, n: no gap. Returns n. */
struct seqcheck {
    int64_t last;
    int gap;
};

static int check_seq(void *arg, const struct store_event *ev)
{
    struct seqcheck *c = arg;
    if (ev->seq != c->last + 1)
        c->gap = 1;
    c->last = ev->seq;
    return 0;
}

static int64_t assert_no_gap(struct store *s, int64_t rowid)
{
    struct seqcheck c = {0, 0};
    assert_int_equal(store_load_events(s, rowid, 0, check_seq, &c), STORE_OK);
    if (c.gap)
        fail_msg("the event log on disk has a gap (last seq %lld)", (long long)c.last);
    return c.last;
}

/* --- tests ----------------------------------------------------------------------- */

static int parse_body(const char *body, int stored, struct exp_config *cfg, json_t **errors)
{
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    assert_non_null(j);
    *errors = json_array();
    int rc = stored ? exp_config_load(j, exp_limits(), cfg, *errors)
                    : exp_config_parse(j, exp_limits(), cfg, *errors);
    json_decref(j);
    return rc;
}

/* The threshold of bandit 0's stop rule after the same rewards. */
static double threshold_after(const struct exp_config *cfg)
{
    struct policy_error err;
    struct engine *e = engine_create(&cfg->engine, &err);
    assert_non_null(e);
    for (int t = 0; t < 400; t++) {
        struct engine_pull p;
        engine_assign(e, -1, &p);
        engine_reward(e, p.bandit, p.arm, (t * 7 + (int)p.arm) % 5 < 2 + (int)p.arm % 2);
    }
    struct engine_stop_eval ev;
    engine_bandit_stop(e, 0, &ev);
    engine_free(e);
    return ev.threshold;
}

/* rule_revision: a new experiment runs under the current revision and
 * stores it; a stored one without it (created before the field) is revision
 * 1, whose JSON, and so whose design hash, is unchanged; revision 1 weighs
 * the GLR's pairs against ln((K − 1)/δ), revision 2 the leader product
 * against ln(1/δ); values out of range are refused naming the field. */
static void test_rule_revision(void **state)
{
    (void)state;
    static const char *const policies[] = {"uniform",
                                           "ttts"}; /* the engine's GLR, a policy's own */
    for (size_t p = 0; p < 2; p++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"id\":\"rr\",\"arms\":[\"a\",\"b\",\"c\",\"d\"],"
                 "\"policy\":{\"name\":\"%s\"},\"seed\":3,\"goal\":{\"delta\":0.05}}",
                 policies[p]);
        struct exp_config now, old;
        json_t *errors;
        assert_int_equal(parse_body(body, 0, &now, &errors), 0);
        json_decref(errors);
        assert_int_equal(now.engine.glr_revision, ENGINE_GLR_REVISION);
        json_t *rr = json_object_get(now.json, "rule_revision");
        assert_true(json_is_integer(rr) && json_integer_value(rr) == ENGINE_GLR_REVISION);
        /* the stored form of an experiment from before the field */
        json_t *stored = json_deep_copy(now.json);
        json_object_del(stored, "rule_revision");
        char *text = json_dumps(stored, JSON_COMPACT);
        assert_int_equal(parse_body(text, 1, &old, &errors), 0);
        json_decref(errors);
        assert_int_equal(old.engine.glr_revision, 1);
        assert_true(json_equal(old.json, stored));
        free(text);
        json_decref(stored);
        double t1 = threshold_after(&old), t2 = threshold_after(&now);
        if (!(fabs(t1 - log(3 / 0.05)) < 1e-12 && fabs(t2 - log(1 / 0.05)) < 1e-12))
            fail_msg("%s: thresholds %.17g (revision 1) and %.17g (revision 2)", policies[p], t1,
                     t2);
        exp_config_free(&now);
        exp_config_free(&old);
    }
    json_t *errors;
    const char *bad[] = {"0", "3", "\"2\"", "1.5", "null"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char b[512];
        snprintf(b, sizeof b,
                 "{\"id\":\"rr\",\"arms\":[\"a\",\"b\",\"c\"],\"policy\":{\"name\":\"uniform\"},"
                 "\"rule_revision\":%s}",
                 bad[i]);
        struct exp_config c;
        assert_true(parse_body(b, 0, &c, &errors) != 0);
        exp_config_free(&c);
        char *e = json_dumps(errors, JSON_COMPACT);
        if (strstr(e, "\"rule_revision\"") == NULL)
            fail_msg("rule_revision %s: %s", bad[i], e);
        free(e);
        json_decref(errors);
    }
}

/* A write refused at queue time makes the experiment stale; the reload it
 * triggers must not run while an older write of the same experiment is
 * still queued: that write commits afterwards (and its client is told so),
 * and memory must then know its assignment. */
static void test_reload_waits_for_queued_writes(void **state)
{
    struct tstore *f = *state;
    int rc;
    struct exp *x = create("q", &rc);
    assert_non_null(x);
    int64_t now = now_ms();

    store_test_pause_writer(f->s, 1);
    struct exp_batch b0, b1;
    struct twait w0, w1;
    int64_t seq0;
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
    assert_int_equal(assign_one(x, &b0, &w0, now, &seq0), STORE_OK); /* queued, paused */
    exp_unlock(x);

    store_test_fail_submits(f->s, 1);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
    assert_int_equal(assign_one(x, &b1, &w1, now, NULL), STORE_ERR_FULL); /* refused */
    exp_batch_free(&b1);
    exp_unlock(x);

    /* The next request: the experiment is stale but its first write is
     * still queued. Reloading now would read a log without it. */
    exp_lock(x);
    rc = exp_prepare_locked(x, now);
    assert_true(rc == EXP_OK || rc == EXP_ERR_STORE);
    exp_unlock(x);

    store_test_pause_writer(f->s, 0);
    assert_int_equal(twait_wait(&w0), STORE_OK); /* the client of b0 got a 201 */
    exp_batch_free(&b0);

    /* Its assignment must be known: a reward for it is accepted. */
    struct exp_batch b2;
    exp_batch_init(&b2);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
    assert_int_equal(exp_last_seq(x), seq0);
    assert_int_equal(exp_ev_reward(x, &b2, seq0, 1.0, now), EXP_R_ACCEPTED);
    struct twait w2;
    twait_init(&w2);
    assert_int_equal(exp_submit_locked(x, &b2, twait_done, &w2), STORE_OK);
    exp_unlock(x);
    assert_int_equal(twait_wait(&w2), STORE_OK);
    exp_batch_free(&b2);
    assert_int_equal(assert_no_gap(f->s, exp_rowid(x)), seq0 + 1);
    exp_put(x);
}

/* Expiry queues its own events (exp_prepare_locked); when that write is
 * refused, the request that triggered the expiry must not go on to queue
 * events numbered after the lost ones. */
static void test_refused_expiry_leaves_no_gap(void **state)
{
    struct tstore *f = *state;
    int rc;
    struct exp *x = create("e", &rc);
    assert_non_null(x);
    int64_t now = now_ms();
    struct exp_batch b0, b1;
    struct twait w0, w1;

    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
    assert_int_equal(assign_one(x, &b0, &w0, now, NULL), STORE_OK);
    exp_unlock(x);
    assert_int_equal(twait_wait(&w0), STORE_OK);
    exp_batch_free(&b0);

    /* 5 s later the assignment (ttl 1 s) is due: its EXPIRE is refused. */
    store_test_fail_submits(f->s, 1);
    exp_lock(x);
    rc = exp_prepare_locked(x, now + 5000);
    if (rc == EXP_OK) {
        /* Going on: whatever this request queues must not commit after
         * the gap. */
        rc = assign_one(x, &b1, &w1, now + 5000, NULL);
        exp_unlock(x);
        if (rc == STORE_OK)
            twait_wait(&w1);
        exp_batch_free(&b1);
    } else {
        assert_int_equal(rc, EXP_ERR_STORE);
        exp_unlock(x);
    }
    assert_no_gap(f->s, exp_rowid(x));

    /* Later requests reload and expire it again, durably. */
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now + 6000), EXP_OK);
    assert_int_equal(exp_pending_count(x), 0);
    assert_int_equal(assign_one(x, &b1, &w1, now + 6000, NULL), STORE_OK);
    exp_unlock(x);
    assert_int_equal(twait_wait(&w1), STORE_OK);
    exp_batch_free(&b1);
    assert_int_equal(assert_no_gap(f->s, exp_rowid(x)), 3); /* assign, expire, assign */
    exp_put(x);
}

/* A delete whose commit fails leaves the experiment as it is on disk: still
 * there, usable, and deletable once the disk is back. */
static void test_failed_delete_keeps_experiment(void **state)
{
    struct tstore *f = *state;
    int rc;
    struct exp *x = create("d", &rc);
    assert_non_null(x);
    int64_t now = now_ms();

    store_test_fail_commits(f->s, 1);
    struct exp_batch b;
    struct twait w;
    exp_batch_init(&b);
    twait_init(&w);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
    assert_int_equal(exp_delete_locked(x, &b, 0, twait_done, &w), STORE_OK);
    exp_unlock(x);
    assert_int_equal(twait_wait(&w), STORE_ERR_FULL); /* the client got a 503 */
    exp_batch_free(&b);

    /* Still on disk, so still here. */
    struct exp *again = exp_get("d");
    assert_ptr_equal(again, x);
    exp_put(again);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_OK);
    exp_unlock(x);

    /* And a retry deletes it. */
    exp_batch_init(&b);
    twait_init(&w);
    exp_lock(x);
    assert_int_equal(exp_delete_locked(x, &b, 0, twait_done, &w), STORE_OK);
    exp_unlock(x);
    assert_int_equal(twait_wait(&w), STORE_OK);
    exp_batch_free(&b);
    assert_null(exp_get("d"));
    assert_int_equal(exp_count(), 0);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now), EXP_ERR_GONE);
    exp_unlock(x);
    exp_put(x);
}

/* Concurrent creates never exceed --max-experiments. */
#define NCREATORS 4
#define ROUNDS 100

struct creator {
    pthread_barrier_t *start;
    int round, idx;
    struct exp *got;
};

static void *creator_main(void *arg)
{
    struct creator *c = arg;
    char id[32];
    int rc;
    snprintf(id, sizeof id, "r%d-%d", c->round, c->idx);
    pthread_barrier_wait(c->start);
    c->got = create(id, &rc);
    return NULL;
}

static void test_concurrent_creates_respect_limit(void **state)
{
    struct tstore *f = *state;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, NCREATORS);
        struct creator c[NCREATORS];
        pthread_t th[NCREATORS];
        for (int i = 0; i < NCREATORS; i++) {
            c[i] = (struct creator){.start = &start, .round = round, .idx = i};
            assert_int_equal(pthread_create(&th[i], NULL, creator_main, &c[i]), 0);
        }
        int created = 0;
        for (int i = 0; i < NCREATORS; i++) {
            pthread_join(th[i], NULL);
            created += c[i].got != NULL;
        }
        pthread_barrier_destroy(&start);
        if (created > 1 || exp_count() > 1)
            fail_msg("round %d: %d experiments created with a limit of 1", round, created);
        assert_int_equal(created, 1);
        for (int i = 0; i < NCREATORS; i++) {
            if (c[i].got == NULL)
                continue;
            struct exp_batch b;
            struct twait w;
            exp_batch_init(&b);
            twait_init(&w);
            exp_lock(c[i].got);
            assert_int_equal(exp_delete_locked(c[i].got, &b, 0, twait_done, &w), STORE_OK);
            exp_unlock(c[i].got);
            assert_int_equal(twait_wait(&w), STORE_OK);
            exp_batch_free(&b);
            exp_put(c[i].got);
        }
    }
    (void)f;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rule_revision, setup1, teardown),
        cmocka_unit_test_setup_teardown(test_reload_waits_for_queued_writes, setup10, teardown),
        cmocka_unit_test_setup_teardown(test_refused_expiry_leaves_no_gap, setup10, teardown),
        cmocka_unit_test_setup_teardown(test_failed_delete_keeps_experiment, setup10, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_creates_respect_limit, setup1, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
