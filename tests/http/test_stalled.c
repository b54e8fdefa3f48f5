/*
 * test_stalled.c — concurrent requests on one experiment with the daemon's
 * writer held mid-commit, so that an interleaving is forced rather than
 * hoped for (issue 13; PostgreSQL's isolation tester, from outside). The
 * daemon runs under tests/shim/faultfs.so: tfault_stall blocks every write
 * to the database inside the daemon — the writer thread stops inside its
 * commit, readers go on — and then a kill -9 takes the commit away. Any
 * request answered 2xx meanwhile must survive the kill.
 *
 * The regression of issue 13: "an acknowledged stop can be lost: a PATCH
 * asking for the state already held in memory answered 200 before the
 * earlier PATCH that set it had committed". Fixed in 888621e (the PATCH now
 * waits for the write that set the state); test_patch_same_state_waits
 * fails against b9cd0e0's daemon (BANDITD_BIN=…/b9cd0e0/build/asan/banditd)
 * and passes since. This suite is black-box on purpose: it runs against
 * any daemon binary. The same interleavings driven through exp/ directly,
 * with the store's own pause, are tests/unit/test_interleave.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/faults.h"
#include "tests/support/harness.h"

#define ANSWER_WAIT_MS 1500 /* how long a request may take to answer while stalled */

/* A request sent from a thread of its own (it may hang until the kill). */
struct call {
    struct tdaemon *d;
    const char *method;
    char path[96];
    char body[160];
    pthread_t th;
    int done;    /* answered (or failed), under __atomic */
    long status; /* once done; 0: no answer */
    char state[16];
};

static void *call_main(void *arg)
{
    struct call *c = arg;
    struct tclient *tc = tclient_new(c->d);
    struct tresp *r =
        tclient_req(tc, c->method, c->path, c->body[0] != '\0' ? c->body : NULL, NULL);
    c->status = r->status;
    const char *st = tjson_str(r->json, "state");
    snprintf(c->state, sizeof c->state, "%s", st != NULL ? st : "");
    tresp_free(r);
    tclient_free(tc);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void call_start(struct call *c, struct tdaemon *d, const char *method, const char *path,
                       const char *body)
{
    memset(c, 0, sizeof *c);
    c->d = d;
    c->method = method;
    snprintf(c->path, sizeof c->path, "%s", path);
    snprintf(c->body, sizeof c->body, "%s", body != NULL ? body : "");
    assert_int_equal(pthread_create(&c->th, NULL, call_main, c), 0);
}

/* Wait up to ms for c's answer: 1 if answered. */
static int call_wait(struct call *c, unsigned ms)
{
    for (unsigned w = 0; w <= ms; w += 10) {
        if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
            return c->status != 0;
        tsleep_ms(10);
    }
    return 0;
}

static void call_join(struct call *c)
{
    pthread_join(c->th, NULL);
}

struct fx {
    struct tdaemon *d;
    struct tfault *f;
};

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof *x);
    if (x == NULL || (x->d = tdaemon_new()) == NULL) {
        free(x);
        return -1;
    }
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    tfault_stall(x->f, 0);
    tfault_detach(x->f);
    tdaemon_free(x->d);
    free(x);
    return 0;
}

static void start(struct fx *x)
{
    x->f = tfault_attach(x->d, TFAULT_FS, 0);
    tdaemon_up(x->d, NULL, 0);
}

/* Hold the writer: after this, the next commit blocks inside the daemon. */
static void stall(struct fx *x)
{
    tfault_stall(x->f, 1);
}

/* The stalled commit never happens: kill -9, release, restart. */
static void crash(struct fx *x)
{
    assert_int_equal(tdaemon_kill(x->d), 0);
    tfault_stall(x->f, 0);
    tdaemon_up(x->d, NULL, 0);
}

static char *get_state(struct fx *x, const char *id, char *out, size_t len)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    struct tresp *r = treq(x->d, "GET", path, NULL, NULL);
    snprintf(out, len, "%s", r->status == 200 ? tjson_str(r->json, "state") : "(gone)");
    tresp_free(r);
    return out;
}

/* PATCH stopped, then PATCH stopped again while the first one's commit is
 * held: the second must not answer before the first committed — else a
 * crash takes back a stop that was acknowledged twice. */
static void test_patch_same_state_waits(void **state)
{
    struct fx *x = *state;
    start(x);
    json_decref(texp_create(x->d, "{\"id\":\"p\",\"arms\":[\"a\",\"b\"]}"));
    stall(x);
    struct call first, second;
    call_start(&first, x->d, "PATCH", "/v1/experiments/p", "{\"state\":\"stopped\"}");
    assert_true(tfault_wait_stalled(x->f, 10000)); /* its commit is held */
    call_start(&second, x->d, "PATCH", "/v1/experiments/p", "{\"state\":\"stopped\"}");
    int answered1 = call_wait(&second, ANSWER_WAIT_MS);
    int answered0 = __atomic_load_n(&first.done, __ATOMIC_ACQUIRE) && first.status != 0;
    long status2 = answered1 ? second.status : 0;
    crash(x);
    call_join(&first);
    call_join(&second);
    char st[32];
    get_state(x, "p", st, sizeof st);
    printf("# first PATCH %s, second %s (HTTP %ld); after kill -9: %s\n",
           answered0 ? "answered" : "held", answered1 ? "answered" : "held", status2, st);
    if (answered0)
        fail_msg("the first PATCH answered while its commit was held");
    if (answered1 && status2 >= 200 && status2 < 300 && strcmp(st, "stopped") != 0)
        fail_msg("an acknowledged stop was lost: the second PATCH answered %ld before the first "
                 "committed; after kill -9 the experiment is %s",
                 status2, st);
    assert_int_equal(tdaemon_stop(x->d), 0);
}

/* PATCH paused held; then PATCH running (a real change) and PATCH paused
 * again: whatever answered 2xx holds after the crash, in order. */
static void test_patch_against_patch(void **state)
{
    struct fx *x = *state;
    start(x);
    json_decref(texp_create(x->d, "{\"id\":\"pp\",\"arms\":[\"a\",\"b\"]}"));
    stall(x);
    struct call c[3];
    const char *want[3] = {"paused", "running", "paused"};
    char body[64];
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof body, "{\"state\":\"%s\"}", want[i]);
        call_start(&c[i], x->d, "PATCH", "/v1/experiments/pp", body);
        if (i == 0)
            assert_true(tfault_wait_stalled(x->f, 10000));
        else
            tsleep_ms(200);
    }
    int any = 0;
    for (int i = 0; i < 3; i++)
        any |= call_wait(&c[i], i == 2 ? ANSWER_WAIT_MS : 10) && c[i].status == 200;
    crash(x);
    for (int i = 0; i < 3; i++)
        call_join(&c[i]);
    char st[32];
    get_state(x, "pp", st, sizeof st);
    if (any)
        fail_msg("a PATCH answered 200 while the commit before it was held (now %s)", st);
    assert_string_equal(st, "running");
    assert_int_equal(tdaemon_stop(x->d), 0);
}

/* A reward while a stop of the same experiment is held: the reward (of an
 * assignment made before) is answered only once committed, after the
 * stop; neither may be acknowledged and lost. */
static void test_patch_against_reward(void **state)
{
    struct fx *x = *state;
    start(x);
    json_decref(texp_create(x->d, "{\"id\":\"pr\",\"arms\":[\"a\",\"b\"]}"));
    json_t *as = texp_assign(x->d, "pr", "{}");
    char body[160];
    snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}", tjson_str(as, "[0].id"));
    json_decref(as);
    stall(x);
    struct call stop, reward;
    call_start(&stop, x->d, "PATCH", "/v1/experiments/pr", "{\"state\":\"stopped\"}");
    assert_true(tfault_wait_stalled(x->f, 10000));
    call_start(&reward, x->d, "POST", "/v1/experiments/pr/rewards", body);
    int r_answered = call_wait(&reward, ANSWER_WAIT_MS);
    long r_status = reward.status;
    crash(x);
    call_join(&stop);
    call_join(&reward);
    json_t *st = texp_status(x->d, "pr");
    long pulls = (long)tjson_int(st, "pulls");
    json_decref(st);
    if (r_answered && r_status == 200 && pulls != 1)
        fail_msg("a reward acknowledged during a held stop is lost (%ld pulls)", pulls);
    assert_false(r_answered && r_status == 200);
    char s[32];
    assert_string_equal(get_state(x, "pr", s, sizeof s), "running");
    assert_int_equal(tdaemon_stop(x->d), 0);
}

/* A reward while a delete is held: 404 at once (the experiment is going) or
 * held; never 200. After the crash the experiment is back, unrewarded. */
static void test_delete_against_reward(void **state)
{
    struct fx *x = *state;
    start(x);
    json_decref(texp_create(x->d, "{\"id\":\"dr\",\"arms\":[\"a\",\"b\"]}"));
    json_t *as = texp_assign(x->d, "dr", "{}");
    char body[160];
    snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}", tjson_str(as, "[0].id"));
    json_decref(as);
    stall(x);
    struct call del, reward;
    call_start(&del, x->d, "DELETE", "/v1/experiments/dr", NULL);
    assert_true(tfault_wait_stalled(x->f, 10000));
    call_start(&reward, x->d, "POST", "/v1/experiments/dr/rewards", body);
    int answered = call_wait(&reward, ANSWER_WAIT_MS);
    long status = reward.status;
    crash(x);
    call_join(&del);
    call_join(&reward);
    if (answered && status != 404)
        fail_msg("a reward during a held delete answered %ld", status);
    json_t *st = texp_status(x->d, "dr");
    assert_int_equal(tjson_int(st, "pulls"), 0);
    json_decref(st);
    assert_int_equal(tdaemon_stop(x->d), 0);
}

/* Create, delete, create of one id while the first create is held: the id
 * is taken (409) and the experiment invisible (404) until it commits; then
 * delete and create again work in turn. */
static void test_create_delete_create(void **state)
{
    struct fx *x = *state;
    start(x);
    stall(x);
    struct call create;
    call_start(&create, x->d, "POST", "/v1/experiments", "{\"id\":\"cdc\",\"arms\":[\"a\",\"b\"]}");
    assert_true(tfault_wait_stalled(x->f, 10000));
    struct tresp *r = treq(x->d, "DELETE", "/v1/experiments/cdc", NULL, NULL);
    assert_problem(r, 404);
    tresp_free(r);
    r = treq(x->d, "POST", "/v1/experiments", "{\"id\":\"cdc\",\"arms\":[\"a\",\"b\",\"c\"]}",
             NULL);
    assert_problem(r, 409);
    tresp_free(r);
    assert_false(call_wait(&create, 200));
    tfault_stall(x->f, 0);
    call_join(&create);
    assert_int_equal(create.status, 201);
    r = treq(x->d, "DELETE", "/v1/experiments/cdc", NULL, NULL);
    assert_status(r, 204);
    tresp_free(r);
    json_decref(texp_create(x->d, "{\"id\":\"cdc\",\"arms\":[\"a\",\"b\",\"c\"]}"));
    /* and the second incarnation is what a restart finds */
    assert_int_equal(tdaemon_kill(x->d), 0);
    tdaemon_up(x->d, NULL, 0);
    json_t *j = tcall(x->d, "GET", "/v1/experiments/cdc", NULL, 200);
    assert_int_equal(json_array_size(tjson_get(j, "bandits[0].arms")), 3);
    json_decref(j);
    assert_int_equal(tdaemon_stop(x->d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_patch_same_state_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_against_patch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_against_reward, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_against_reward, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_delete_create, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
