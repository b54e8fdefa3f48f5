/*
 * test_interleave.c — scripted interleavings of concurrent requests on one
 * experiment, in the manner of PostgreSQL's isolation tester: the runtime
 * (exp/) is driven directly over a real store whose writer is paused
 * (store_test.h), so that each step of each "session" happens exactly
 * where the script puts it — PATCH against PATCH, PATCH against reward,
 * delete against reward, create/delete/create of one id — with and
 * without the group commit failing. After each script the durability
 * invariants of exp.h hold: the log on disk has no gap, memory equals the
 * disk once every write completed (a reload gives the same seq, state and
 * pending count), no completion reports success for a write the disk does
 * not have, and completions come in submission order.
 *
 * The HTTP side of the same story (the handlers waiting on these
 * completions, against a real daemon whose writer is held mid-commit) is
 * tests/http/test_stalled.c. INTERLEAVE_ROUNDS runs every script again
 * (`make test-crash`: 50).
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
#include <time.h>

#include "exp/exp.h"
#include "store/store.h"
#include "store/store_test.h"
#include "tests/support/tstore.h"

/* --- sessions' completions -------------------------------------------------------- */

/* Completions, numbered in the order they ran. */
static int g_order;
static pthread_mutex_t g_order_mu = PTHREAD_MUTEX_INITIALIZER;

struct step {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, err, order;
    struct exp_batch b;
};

static void step_init(struct step *s)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->done = 0;
    s->err = -1;
    s->order = 0;
    exp_batch_init(&s->b);
}

static void step_done(void *arg, int err)
{
    struct step *s = arg;
    pthread_mutex_lock(&g_order_mu);
    int order = ++g_order;
    pthread_mutex_unlock(&g_order_mu);
    pthread_mutex_lock(&s->mu);
    s->err = err;
    s->order = order;
    s->done = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static int step_is_done(struct step *s)
{
    pthread_mutex_lock(&s->mu);
    int d = s->done;
    pthread_mutex_unlock(&s->mu);
    return d;
}

/* Wait for the completion; returns its store error. Frees the batch. */
static int step_wait(struct step *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->done)
        pthread_cond_wait(&s->cv, &s->mu);
    int err = s->err;
    pthread_mutex_unlock(&s->mu);
    exp_batch_free(&s->b);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    return err;
}

/* A step that was refused before queueing: no completion will come. */
static void step_abandon(struct step *s)
{
    exp_batch_free(&s->b);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- fixture ------------------------------------------------------------------ */

static struct tstore *fx_open(void)
{
    struct tstore *f = tstore_new("i.db");
    struct exp_limits l = {.max_experiments = 100,
                           .max_bandits = 4,
                           .max_arms = 8,
                           .max_batch = 100,
                           .max_count = 10,
                           .max_pending = 1000,
                           .history_points = 8};
    assert_int_equal(exp_registry_init(f->s, &l), 0);
    return f;
}

static int setup(void **state)
{
    *state = fx_open();
    return 0;
}

static int teardown(void **state)
{
    struct tstore *f = *state;
    store_test_pause_writer(f->s, 0);
    exp_registry_free();
    store_close(f->s);
    f->s = NULL;
    tstore_free(f);
    return 0;
}

/* Create id (two arms, uniform) and wait for its commit: a new reference,
 * or NULL with the exp_err in *rc. */
static struct exp *create(const char *id, int narms, int *rc, struct step *pending)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"arms\":[\"a\",\"b\"%s],\"policy\":{\"name\":\"uniform\"},"
             "\"seed\":5}",
             id, narms > 2 ? ",\"c\"" : "");
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    json_t *errors = json_array();
    struct exp_config cfg;
    assert_int_equal(exp_config_parse(j, exp_limits(), &cfg, errors), 0);
    json_decref(j);
    json_decref(errors);
    struct step local;
    struct step *s = &local;
    if (pending != NULL)
        s = pending;
    step_init(s);
    struct exp *x = NULL;
    *rc = exp_create(&cfg, NULL, NULL, step_done, s, &x);
    if (*rc != EXP_OK) {
        step_abandon(s);
        return NULL;
    }
    if (pending != NULL)
        return x; /* the caller waits */
    if (step_wait(s) != STORE_OK) {
        exp_put(x);
        *rc = EXP_ERR_STORE;
        return NULL;
    }
    return x;
}

/* One session's request, under the lock from prepare to submit. */
enum req { R_STATE, R_REWARD, R_ASSIGN, R_DELETE };

/* Run one request of a session and queue its writes (completion to s).
 * Returns the exp_err of prepare / the event, or the store error of the
 * submit (as −store_err). */
static int request(struct exp *x, struct step *s, enum req kind, int64_t arg)
{
    step_init(s);
    int64_t now = now_ms();
    exp_lock(x);
    int rc = exp_prepare_locked(x, now);
    if (rc == EXP_OK) {
        switch (kind) {
        case R_STATE:
            rc = exp_ev_state(x, &s->b, (enum exp_state)arg, now);
            break;
        case R_REWARD:
            rc = exp_ev_reward(x, &s->b, arg, 1.0, now) == EXP_R_ACCEPTED ? EXP_OK : EXP_ERR_GONE;
            break;
        case R_ASSIGN: {
            const struct exp_assignment *a;
            rc = exp_ev_assign(x, &s->b, -1, NULL, now, &a);
            break;
        }
        case R_DELETE:
            break;
        }
    }
    if (rc == EXP_OK) {
        int err = kind == R_DELETE ? exp_delete_locked(x, &s->b, 0, step_done, s)
                                   : exp_submit_locked(x, &s->b, step_done, s);
        if (err != STORE_OK)
            rc = -err;
    }
    exp_unlock(x);
    if (rc != EXP_OK)
        step_abandon(s);
    return rc;
}

/* The invariants of exp.h once every write completed: the log has no gap;
 * what memory holds is what a reload from disk gives. */
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

static void check_invariants(struct tstore *f, struct exp *x, const char *script)
{
    struct seqcheck c = {0, 0};
    assert_int_equal(store_load_events(f->s, exp_rowid(x), 0, check_seq, &c), STORE_OK);
    if (c.gap)
        fail_msg("%s: the log on disk has a gap (last seq %lld)", script, (long long)c.last);
    exp_lock(x);
    int rc = exp_prepare_locked(x, now_ms());
    int64_t mem_seq = exp_last_seq(x);
    enum exp_state mem_state = exp_get_state(x);
    size_t mem_pending = exp_pending_count(x);
    exp_unlock(x);
    if (rc == EXP_ERR_GONE)
        return;
    assert_int_equal(rc, EXP_OK);
    if (mem_seq != c.last)
        fail_msg("%s: memory has applied %lld events, the disk has %lld", script,
                 (long long)mem_seq, (long long)c.last);
    /* A fresh runtime over the same file sees the same experiment. */
    int64_t disk_last = -1;
    assert_int_equal(store_last_seq(f->s, exp_rowid(x), &disk_last), STORE_OK);
    assert_int_equal(disk_last, mem_seq);
    (void)mem_state;
    (void)mem_pending;
}

/* What a reload from disk says of x (state, pending), compared with
 * memory: force one by failing a write that changes nothing durable. */
static void check_reload_agrees(struct tstore *f, struct exp *x, const char *script)
{
    exp_lock(x);
    enum exp_state st = exp_get_state(x);
    size_t pending = exp_pending_count(x);
    int64_t seq = exp_last_seq(x);
    exp_unlock(x);
    /* A refused submission makes x stale: the next prepare reloads. */
    store_test_fail_submits(f->s, 1);
    struct step s;
    int rc = request(x, &s, R_STATE, st); /* no event: the empty batch is refused */
    if (rc == EXP_OK)
        fail_msg("%s: a refused submission reported queued", script);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, now_ms()), EXP_OK);
    if (exp_get_state(x) != st || exp_pending_count(x) != pending || exp_last_seq(x) != seq)
        fail_msg("%s: after a reload: state %d, %zu pending, seq %lld; memory had %d, %zu, %lld",
                 script, exp_get_state(x), exp_pending_count(x), (long long)exp_last_seq(x), st,
                 pending, (long long)seq);
    exp_unlock(x);
}

/* --- scripts --------------------------------------------------------------------- */

/* s1: PATCH stopped (held); s2: PATCH stopped again — the state is already
 * stopped in memory, so no event, but s2's completion must come after s1's
 * commit and carry its outcome: if s1's commit fails, s2 must fail too (a
 * 200 there would acknowledge a stop the disk does not have: issue 13). */
static void script_patch_patch(struct tstore *f, int fail_commit)
{
    int rc;
    struct exp *x = create("pp", 2, &rc, NULL);
    assert_non_null(x);
    store_test_pause_writer(f->s, 1);
    struct step s1, s2;
    assert_int_equal(request(x, &s1, R_STATE, EXP_STOPPED), EXP_OK);
    assert_int_equal(request(x, &s2, R_STATE, EXP_STOPPED), EXP_OK);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    if (step_is_done(&s2))
        fail_msg("the second PATCH completed while the first is still queued");
    if (fail_commit)
        store_test_fail_commits(f->s, 1);
    store_test_pause_writer(f->s, 0);
    int e1 = step_wait(&s1), e2 = step_wait(&s2);
    assert_true(s1.order < s2.order);
    if (fail_commit) {
        assert_int_not_equal(e1, STORE_OK);
        if (e2 == STORE_OK)
            fail_msg("the second PATCH succeeded though the stop it reports failed to commit");
        exp_lock(x);
        assert_int_equal(exp_prepare_locked(x, now_ms()), EXP_OK);
        assert_int_equal(exp_get_state(x), EXP_RUNNING); /* reloaded: the disk's */
        exp_unlock(x);
    } else {
        assert_int_equal(e1, STORE_OK);
        assert_int_equal(e2, STORE_OK);
        exp_lock(x);
        assert_int_equal(exp_get_state(x), EXP_STOPPED);
        exp_unlock(x);
    }
    check_invariants(f, x, "PATCH/PATCH");
    check_reload_agrees(f, x, "PATCH/PATCH");
    struct step d;
    assert_int_equal(request(x, &d, R_DELETE, 0), EXP_OK);
    assert_int_equal(step_wait(&d), STORE_OK);
    exp_put(x);
}

/* s1: PATCH paused (held); s2: reward of an assignment made before; s3:
 * PATCH running. Committed together, or failed together. */
static void script_patch_reward(struct tstore *f, int fail_commit)
{
    int rc;
    struct exp *x = create("pr", 2, &rc, NULL);
    assert_non_null(x);
    struct step a;
    assert_int_equal(request(x, &a, R_ASSIGN, 0), EXP_OK);
    assert_int_equal(step_wait(&a), STORE_OK);
    int64_t aseq = exp_last_seq(x);
    store_test_pause_writer(f->s, 1);
    struct step s1, s2, s3;
    assert_int_equal(request(x, &s1, R_STATE, EXP_PAUSED), EXP_OK);
    assert_int_equal(request(x, &s2, R_REWARD, aseq), EXP_OK);
    assert_int_equal(request(x, &s3, R_STATE, EXP_RUNNING), EXP_OK);
    if (fail_commit)
        store_test_fail_commits(f->s, 1);
    store_test_pause_writer(f->s, 0);
    int e1 = step_wait(&s1), e2 = step_wait(&s2), e3 = step_wait(&s3);
    assert_true(s1.order < s2.order && s2.order < s3.order);
    if (fail_commit) {
        assert_true(e1 != STORE_OK && e2 != STORE_OK && e3 != STORE_OK);
        exp_lock(x);
        assert_int_equal(exp_prepare_locked(x, now_ms()), EXP_OK);
        assert_int_equal(exp_pending_count(x), 1); /* the reward is gone with the rest */
        exp_unlock(x);
    } else {
        assert_true(e1 == STORE_OK && e2 == STORE_OK && e3 == STORE_OK);
        exp_lock(x);
        assert_int_equal(exp_pending_count(x), 0);
        assert_int_equal(exp_get_state(x), EXP_RUNNING);
        exp_unlock(x);
    }
    check_invariants(f, x, "PATCH/reward");
    check_reload_agrees(f, x, "PATCH/reward");
    struct step d;
    assert_int_equal(request(x, &d, R_DELETE, 0), EXP_OK);
    assert_int_equal(step_wait(&d), STORE_OK);
    exp_put(x);
}

/* s1: delete (held); s2: reward → gone at once (nothing queued). If the
 * delete fails, the experiment is back as the disk has it and s2's retry
 * is accepted. */
static void script_delete_reward(struct tstore *f, int fail_commit)
{
    int rc;
    struct exp *x = create("dr", 2, &rc, NULL);
    assert_non_null(x);
    struct step a;
    assert_int_equal(request(x, &a, R_ASSIGN, 0), EXP_OK);
    assert_int_equal(step_wait(&a), STORE_OK);
    int64_t aseq = exp_last_seq(x);
    store_test_pause_writer(f->s, 1);
    struct step s1, s2;
    assert_int_equal(request(x, &s1, R_DELETE, 0), EXP_OK);
    assert_int_equal(request(x, &s2, R_REWARD, aseq), EXP_ERR_GONE); /* …but it is going */
    if (fail_commit)
        store_test_fail_commits(f->s, 1);
    store_test_pause_writer(f->s, 0);
    int e1 = step_wait(&s1);
    if (fail_commit) {
        assert_int_not_equal(e1, STORE_OK);
        struct exp *again = exp_get("dr");
        assert_ptr_equal(again, x);
        exp_put(again);
        assert_int_equal(request(x, &s2, R_REWARD, aseq), EXP_OK);
        assert_int_equal(step_wait(&s2), STORE_OK);
        check_invariants(f, x, "delete/reward");
        struct step d;
        assert_int_equal(request(x, &d, R_DELETE, 0), EXP_OK);
        assert_int_equal(step_wait(&d), STORE_OK);
    } else {
        assert_int_equal(e1, STORE_OK);
        assert_null(exp_get("dr"));
    }
    exp_put(x);
}

/* create "cdc" (held): invisible, its id taken; once committed, delete it
 * and create it again: a new experiment, the old reference gone. */
static void script_create_delete_create(struct tstore *f, int fail_commit)
{
    int rc;
    store_test_pause_writer(f->s, 1);
    struct step c1;
    struct exp *x1 = create("cdc", 2, &rc, &c1);
    assert_non_null(x1);
    assert_null(exp_get("cdc")); /* not visible before its commit */
    struct exp *dup = create("cdc", 3, &rc, NULL);
    assert_null(dup);
    assert_int_equal(rc, EXP_ERR_EXISTS);
    if (fail_commit)
        store_test_fail_commits(f->s, 1);
    store_test_pause_writer(f->s, 0);
    int e = step_wait(&c1);
    if (fail_commit) {
        assert_int_not_equal(e, STORE_OK);
        assert_null(exp_get("cdc")); /* the failed create left nothing */
        exp_put(x1);
        x1 = create("cdc", 2, &rc, NULL); /* and the id is free again */
        assert_non_null(x1);
    } else {
        assert_int_equal(e, STORE_OK);
    }
    struct exp *got = exp_get("cdc");
    assert_ptr_equal(got, x1);
    exp_put(got);
    store_test_pause_writer(f->s, 1);
    struct step d;
    assert_int_equal(request(x1, &d, R_DELETE, 0), EXP_OK);
    /* the delete is queued: the id stays taken until it commits */
    struct exp *early = create("cdc", 3, &rc, NULL);
    assert_null(early);
    assert_int_equal(rc, EXP_ERR_EXISTS);
    store_test_pause_writer(f->s, 0);
    assert_int_equal(step_wait(&d), STORE_OK);
    struct exp *x2 = create("cdc", 3, &rc, NULL);
    assert_non_null(x2);
    assert_int_equal(exp_cfg(x2)->n_arms[0], 3);
    exp_lock(x1);
    assert_int_equal(exp_prepare_locked(x1, now_ms()), EXP_ERR_GONE);
    exp_unlock(x1);
    check_invariants(f, x2, "create/delete/create");
    exp_put(x1);
    struct step d2;
    assert_int_equal(request(x2, &d2, R_DELETE, 0), EXP_OK);
    assert_int_equal(step_wait(&d2), STORE_OK);
    exp_put(x2);
}

static long rounds(void)
{
    const char *v = getenv("INTERLEAVE_ROUNDS");
    long n = v != NULL && *v ? strtol(v, NULL, 10) : 1;
    return n < 1 ? 1 : n;
}

static void test_patch_against_patch(void **state)
{
    for (long i = 0; i < rounds(); i++) {
        script_patch_patch(*state, 0);
        script_patch_patch(*state, 1);
    }
}

static void test_patch_against_reward(void **state)
{
    for (long i = 0; i < rounds(); i++) {
        script_patch_reward(*state, 0);
        script_patch_reward(*state, 1);
    }
}

static void test_delete_against_reward(void **state)
{
    for (long i = 0; i < rounds(); i++) {
        script_delete_reward(*state, 0);
        script_delete_reward(*state, 1);
    }
}

static void test_create_delete_create(void **state)
{
    for (long i = 0; i < rounds(); i++) {
        script_create_delete_create(*state, 0);
        script_create_delete_create(*state, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_patch_against_patch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_against_reward, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_against_reward, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_delete_create, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
