/*
 * test_exp_webhooks.c — the runtime's half of webhooks (exp/webhooks.c)
 * over a real store, and the delivery module's pure parts (notify.h):
 *
 * - the configuration: GET's form has a fingerprint and no secret, the
 *   stored form has the secret and parses back to the same configuration,
 *   and an experiment without webhooks is stored exactly as before;
 * - the outbox row commits with the batch that caused it, or not at all:
 *   a stop whose commit fails leaves no row, the reload forgets the stop,
 *   and the stop made again is announced once; a reload after an
 *   announced stop (a later write failed) announces nothing again;
 * - the signature (a vector computed independently with Python's hmac)
 *   and the target policy on literal addresses.
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

#include "exp/exp.h"
#include "notify/notify.h"
#include "store/store.h"
#include "store/store_test.h"
#include "tests/support/tstore.h"

#define SECRET "whsec-0123456789abcdef"
#define HOOKS                                                                                      \
    "\"webhooks\":[{\"url\":\"https://hooks.example.com/b\",\"secret\":\"" SECRET "\"},"           \
    "{\"url\":\"https://other.example.com/b\",\"secret\":\"" SECRET                                \
    "x\",\"events\":[\"experiment.paused\"]}]"

/* --- fixture ------------------------------------------------------------------ */

static const struct exp_limits g_limits = {.max_experiments = 10,
                                           .max_bandits = 16,
                                           .max_arms = 64,
                                           .max_batch = 1000,
                                           .max_count = 100,
                                           .max_pending = 100000,
                                           .history_points = 16};

static int setup(void **state)
{
    struct tstore *f = tstore_new("w.db");
    assert_int_equal(exp_registry_init(f->s, &g_limits), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct tstore *f = *state;
    exp_registry_free();
    store_close(f->s);
    f->s = NULL;
    tstore_free(f);
    return 0;
}

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, err;
};

static void waiter_init(struct waiter *w)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->done = 0;
    w->err = -1;
}

static void waiter_done(void *arg, int err)
{
    struct waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    w->err = err;
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int waiter_wait(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    int err = w->err;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return err;
}

static int parse(const char *body, struct exp_config *cfg)
{
    json_t *j = json_loads(body, 0, NULL), *errors = json_array();
    assert_non_null(j);
    int rc = exp_config_parse(j, &g_limits, cfg, errors);
    json_decref(j);
    json_decref(errors);
    return rc;
}

static struct exp *create(const char *body)
{
    struct exp_config cfg;
    assert_int_equal(parse(body, &cfg), 0);
    struct waiter w;
    waiter_init(&w);
    struct exp *x = NULL;
    assert_int_equal(exp_create(&cfg, NULL, NULL, waiter_done, &w, &x), EXP_OK);
    assert_int_equal(waiter_wait(&w), STORE_OK);
    return x;
}

/* Change x's state in one batch and wait for its commit: the store error. */
static int set_state(struct exp *x, enum exp_state s)
{
    struct exp_batch b;
    struct waiter w;
    exp_batch_init(&b);
    waiter_init(&w);
    exp_lock(x);
    int rc = exp_prepare_locked(x, 0);
    if (rc == EXP_OK)
        rc = exp_ev_state(x, &b, s, 1700000000000);
    if (rc == EXP_OK)
        rc = exp_submit_locked(x, &b, waiter_done, &w);
    exp_unlock(x);
    if (rc != EXP_OK) {
        w.done = 1;
        w.err = rc;
    }
    int err = waiter_wait(&w);
    exp_batch_free(&b);
    return err;
}

struct rows {
    int n;
    char type[16][32], event[16][128], url[16][64];
};

static int collect(void *arg, const struct store_delivery *d)
{
    struct rows *r = arg;
    assert_true(r->n < 16);
    snprintf(r->type[r->n], sizeof r->type[0], "%s", d->type);
    snprintf(r->event[r->n], sizeof r->event[0], "%s", d->event_id);
    snprintf(r->url[r->n], sizeof r->url[0], "%s", d->url);
    assert_string_equal(d->secret, strstr(d->url, "other") ? SECRET "x" : SECRET);
    r->n++;
    return 0;
}

static struct rows outbox(struct tstore *f, const struct exp *x)
{
    struct rows r = {0};
    assert_int_equal(store_outbox_list(f->s, exp_rowid(x), INT64_MAX, 16, collect, &r), STORE_OK);
    return r;
}

/* --- configuration ---------------------------------------------------------------- */

static void test_config_forms(void **state)
{
    (void)state;
    struct exp_config a, b, plain;
    assert_int_equal(parse("{\"id\":\"w\",\"arms\":[\"a\",\"b\"],\"seed\":1," HOOKS "}", &a), 0);
    assert_int_equal(a.n_webhooks, 2);
    assert_int_equal(a.webhooks[0].events, EXP_HOOK_ALL);
    assert_int_equal(a.webhooks[1].events, EXP_HOOK_PAUSED);
    char *shown = json_dumps(a.json, JSON_COMPACT | JSON_SORT_KEYS);
    assert_null(strstr(shown, SECRET));
    assert_non_null(strstr(shown, "\"secret_fingerprint\":\"sha256:"));
    char *stored = exp_config_stored_text(&a);
    assert_non_null(strstr(stored, "\"secret\":\"" SECRET "\""));
    assert_int_equal(parse(stored, &b), 0); /* what startup does */
    assert_true(json_equal(a.json, b.json));
    assert_string_equal(b.webhooks[1].secret, SECRET "x");
    free(shown);
    free(stored);
    /* without webhooks, stored exactly as before this feature */
    assert_int_equal(parse("{\"id\":\"p\",\"arms\":[\"a\",\"b\"],\"seed\":1}", &plain), 0);
    stored = exp_config_stored_text(&plain);
    char *old = json_dumps(plain.json, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(stored, old);
    assert_null(strstr(stored, "webhooks"));
    free(stored);
    free(old);
    exp_config_free(&a);
    exp_config_free(&b);
    exp_config_free(&plain);
    /* "webhooks": [] is none */
    assert_int_equal(parse("{\"arms\":[\"a\",\"b\"],\"webhooks\":[]}", &a), 0);
    assert_int_equal(a.n_webhooks, 0);
    assert_null(json_object_get(a.json, "webhooks"));
    exp_config_free(&a);
}

/* --- the outbox row and its batch -------------------------------------------------- */

static void test_row_per_endpoint(void **state)
{
    struct tstore *f = *state;
    struct exp *x = create("{\"id\":\"two\",\"arms\":[\"a\",\"b\"]," HOOKS "}");
    assert_int_equal(set_state(x, EXP_PAUSED), STORE_OK);
    struct rows r = outbox(f, x);
    assert_int_equal(r.n, 2); /* both endpoints subscribe to paused */
    assert_string_equal(r.event[0], r.event[1]);
    assert_string_equal(r.type[0], "experiment.paused");
    assert_int_equal(set_state(x, EXP_STOPPED), STORE_OK);
    r = outbox(f, x);
    assert_int_equal(r.n, 3); /* the second endpoint does not take stops */
    assert_string_equal(r.type[0], "experiment.stopped");
    assert_string_equal(r.url[0], "https://hooks.example.com/b");
    exp_put(x);
}

static void test_failed_commit_takes_the_row(void **state)
{
    struct tstore *f = *state;
    struct exp *x = create("{\"id\":\"fail\",\"arms\":[\"a\",\"b\"]," HOOKS "}");
    store_test_fail_commits(f->s, 1);
    assert_int_equal(set_state(x, EXP_STOPPED), STORE_ERR_FULL);
    assert_int_equal(outbox(f, x).n, 0);
    /* the reload forgets the stop (the disk never had it); made again, it
     * is announced once */
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, 0), EXP_OK);
    assert_int_equal(exp_get_state(x), EXP_RUNNING);
    exp_unlock(x);
    assert_int_equal(set_state(x, EXP_STOPPED), STORE_OK);
    struct rows r = outbox(f, x);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.type[0], "experiment.stopped");
    exp_put(x);
}

static void test_reload_announces_nothing_again(void **state)
{
    struct tstore *f = *state;
    struct exp *x = create("{\"id\":\"again\",\"arms\":[\"a\",\"b\"]," HOOKS "}");
    assert_int_equal(set_state(x, EXP_PAUSED), STORE_OK);
    assert_int_equal(outbox(f, x).n, 2);
    /* a later write fails: the experiment reloads from its log */
    store_test_fail_commits(f->s, 1);
    assert_int_equal(set_state(x, EXP_RUNNING), STORE_ERR_FULL);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, 0), EXP_OK);
    assert_int_equal(exp_get_state(x), EXP_PAUSED);
    exp_unlock(x);
    /* the pause replayed is not news; the resume is, once */
    assert_int_equal(set_state(x, EXP_RUNNING), STORE_OK);
    struct rows r = outbox(f, x);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.type[0], "experiment.resumed");
    assert_string_equal(r.type[1], "experiment.paused");
    exp_put(x);
}

/* --- notify's pure parts ---------------------------------------------------------- */

static void test_signature_vector(void **state)
{
    (void)state;
    char sig[128];
    const char *body = "{\"id\":\"e/1\"}";
    /* python3: hmac.new(b"whsec-0123456789abcdef", b'1700000000.{"id":"e/1"}',
     *                   hashlib.sha256).hexdigest() */
    assert_int_equal(notify_sign(SECRET, 1700000000, body, strlen(body), sig, sizeof sig), 0);
    assert_string_equal(
        sig, "t=1700000000,v1=0d9ec4fc18c474a72f1a3e9b0740573fb3a3081fc9186548a02a24d5f4e6f371");
    assert_int_equal(notify_sign(SECRET, 1, body, strlen(body), sig, 64), -1);
}

static void test_target_policy(void **state)
{
    (void)state;
    static const char *const refused[] = {"http://127.0.0.1/x",
                                          "http://127.1.2.3:8080/",
                                          "http://[::1]/",
                                          "http://[::ffff:127.0.0.1]/",
                                          "http://localhost/",
                                          "http://api.LOCALHOST:1/",
                                          "http://169.254.169.254/",
                                          "http://[fe80::1%25eth0]/",
                                          "http://0.0.0.0/",
                                          "http://224.0.0.1/",
                                          "http://255.255.255.255/",
                                          "http://[ff02::1]/",
                                          "http://[::]/",
                                          "https://[::ffff:169.254.1.1]/",
                                          NULL};
    static const char *const allowed[] = {
        "https://hooks.example.com/b", "http://10.0.0.1:8080/private-is-allowed",
        "http://[2001:db8::1]/", "https://127.example.com/", NULL};
    char why[200];
    for (int i = 0; refused[i] != NULL; i++)
        if (notify_url_check(refused[i], why, sizeof why) != 1)
            fail_msg("%s allowed", refused[i]);
    for (int i = 0; allowed[i] != NULL; i++)
        if (notify_url_check(allowed[i], why, sizeof why) != 0)
            fail_msg("%s refused: %s", allowed[i], why);
    assert_int_equal(notify_url_check("http://127.0.0.1/", why, sizeof why), 1);
    assert_non_null(strstr(why, "--webhook-allow-loopback"));
    assert_int_equal(notify_url_check("not a url", why, sizeof why), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_forms),
        cmocka_unit_test_setup_teardown(test_row_per_endpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_commit_takes_the_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_announces_nothing_again, setup, teardown),
        cmocka_unit_test(test_signature_vector),
        cmocka_unit_test(test_target_policy),
    };
    return cmocka_run_group_tests_name("exp_webhooks", tests, NULL, NULL);
}
