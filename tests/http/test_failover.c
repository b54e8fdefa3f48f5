/*
 * test_failover.c — several daemons on one PostgreSQL database (issue 14):
 * ownership, the answer of a daemon that does not own an experiment, and
 * failover with nothing acknowledged lost.
 *
 * A real PostgreSQL server started by the test (tests/support/tpg.h), two
 * daemons A and B on one database of it:
 *
 *   - an experiment created through A is A's: B lists it (GET
 *     /v1/experiments), and answers a request for it 503 problem+json with
 *     Retry-After and Banditd-Owner naming A's address;
 *   - A serves assignments (some with sticky units) and rewards; then A is
 *     killed with SIGKILL: B takes the experiment over at the next request
 *     (within FAILOVER_MAX_MS), with every reward A acknowledged — the
 *     status's pulls and means, each REWARD on the server exactly once —
 *     the same assignment for each sticky unit, and the run continues;
 *   - a frozen owner: a daemon C owns an experiment and is stopped with
 *     SIGSTOP past the lease; B takes it over (C's session is ended) and
 *     serves it; C, continued (SIGCONT), commits nothing more for it and
 *     answers 503 naming B;
 *   - a database that cannot be reached, or does not exist, stops the
 *     daemon at start with exit status 1 and libpq's reason, the password
 *     not shown; so does a wrong password (a role that must give its
 *     password, scram-sha-256 over TCP, which the right one passes), and a
 *     database whose schema is newer than the daemon's;
 *   - API keys written through one daemon's database connection (`banditd
 *     keys`) reach the others through PostgreSQL's notifications: with
 *     --key-refresh 0 (no periodic re-read) a new key is accepted and a
 *     revoked one refused by both daemons within seconds.
 */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/support/harness.h"
#include "tests/support/pgserver.h"
#include "tests/support/tpg.h"

#define ROUNDS 120            /* assignments rewarded through A */
#define UNITS 10              /* of them with a sticky unit */
#define FAILOVER_MAX_MS 10000 /* kill of the owner to the first 2xx of the other */
#define LEASE_WAIT_MS 4500    /* past STORE_LEASE_MS (3 s) and one heartbeat */

struct fixture {
    char uri[256];
    struct tdaemon *a, *b, *c;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tdaemon_free(f->a);
    tdaemon_free(f->b);
    tdaemon_free(f->c);
    free(f);
    return 0;
}

static struct tdaemon *start_on(const char *uri)
{
    const char *extra[] = {"--db", uri, NULL};
    struct tdaemon *d = tdaemon_start(extra);
    assert_non_null(d);
    return d;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "http://127.0.0.1:PORT" of d: its default advertised address. */
static void url_of(struct tdaemon *d, char *out, size_t len)
{
    snprintf(out, len, "http://127.0.0.1:%u", (unsigned)tdaemon_port(d));
}

/* Assignments of exp through d until one answers 2xx, for at most max_ms;
 * the answer (new reference) and the time it took. */
static struct tresp *assign_until_served(struct tdaemon *d, const char *exp, const char *body,
                                         int64_t max_ms, int64_t *took)
{
    char path[128];
    int64_t t0 = now_ms();
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", exp);
    for (;;) {
        struct tresp *r = treq(d, "POST", path, body, NULL);
        if (r->status == 201 || r->status == 200 || now_ms() - t0 > max_ms) {
            *took = now_ms() - t0;
            return r;
        }
        if (r->status != 503)
            fail_msg("during the takeover: HTTP %ld: %s", r->status, r->body ? r->body : "");
        tresp_free(r);
        tsleep_ms(20);
    }
}

static void test_non_owner_and_failover(void **state)
{
    struct fixture *f = *state;
    char a_url[64], body[160], unit_ids[UNITS][48];
    long pulls[2] = {0, 0}, sum[2] = {0, 0};
    int unit_values[UNITS];
    struct trng rng;

    tpg_new_db(f->uri, sizeof f->uri);
    f->a = start_on(f->uri);
    f->b = start_on(f->uri);
    url_of(f->a, a_url, sizeof a_url);
    /* No confidence stop: a stopped experiment hands a returning unit the
     * winner instead of its exploration pull (exp_unit_lookup), and whether
     * 120 pulls reach a stop depends on the policy's random stream. */
    json_decref(texp_create(f->a, "{\"id\":\"fo\",\"policy\":{\"name\":\"adapt\"},"
                                  "\"goal\":{\"delta\":0.001},\"stop_rule\":\"none\","
                                  "\"arms\":[\"a\",\"b\"],\"seed\":3}"));

    /* B lists it, and names A for a request of it */
    json_t *list = tcall(f->b, "GET", "/v1/experiments", NULL, 200);
    assert_string_equal(tjson_str(list, "experiments[0].id"), "fo");
    json_decref(list);
    tsleep_ms(1500); /* A's heartbeat carries its address (one a second) */
    struct tresp *r = treq(f->b, "POST", "/v1/experiments/fo/assignments", "{}", NULL);
    assert_problem(r, 503);
    assert_non_null(tresp_header(r, "Retry-After"));
    assert_non_null(tresp_header(r, "Banditd-Owner"));
    assert_string_equal(tresp_header(r, "Banditd-Owner"), a_url);
    assert_non_null(strstr(tjson_str(r->json, "detail"), a_url));
    tresp_free(r);

    /* A serves, B stays out of it */
    trng_seed(&rng, 20261127);
    for (int i = 0; i < ROUNDS; i++) {
        char unit[32] = "";
        if (i < UNITS)
            snprintf(unit, sizeof unit, ",\"unit\":\"u%d\"", i);
        snprintf(body, sizeof body, "{%s}", unit[0] ? unit + 1 : "");
        json_t *as = texp_assign(f->a, "fo", body);
        const char *id = tjson_str(as, "[0].id");
        int arm = (int)tjson_int(as, "[0].arm_index");
        int exploit = json_is_true(tjson_get(as, "[0].exploit"));
        assert_non_null(id);
        if (i < UNITS)
            snprintf(unit_ids[i], sizeof unit_ids[i], "%s", id);
        int v = trng_bernoulli(&rng, arm == 0 ? 0.3 : 0.6);
        if (i < UNITS)
            unit_values[i] = v;
        assert_string_equal(texp_reward(f->a, "fo", id, v), "accepted");
        if (!exploit) {
            pulls[arm]++;
            sum[arm] += v;
        }
        json_decref(as);
    }

    /* the owner dies; the other serves within seconds */
    assert_int_equal(tdaemon_kill(f->a), 0);
    int64_t took = 0;
    r = assign_until_served(f->b, "fo", "{\"unit\":\"u0\"}", FAILOVER_MAX_MS, &took);
    assert_true(r->status == 200 || r->status == 201);
    /* the same assignment for the sticky unit */
    assert_string_equal(tjson_str(r->json, "assignments[0].id"), unit_ids[0]);
    tresp_free(r);
    printf("# failover: first 2xx from the other daemon %lld ms after the kill\n", (long long)took);

    /* every acknowledged reward, exactly as acknowledged */
    json_t *st = texp_status(f->b, "fo");
    texp_assert_acknowledged(st, 2, pulls, sum);
    json_decref(st);
    assert_int_equal(tpg_count(f->uri, "SELECT count(*) FROM events WHERE kind = 2"), ROUNDS);
    assert_int_equal(tpg_count(f->uri, "SELECT count(*) FROM (SELECT ref FROM events WHERE"
                                       " kind = 2 GROUP BY ref HAVING count(*) > 1) d"),
                     0);
    for (int i = 0; i < UNITS; i++) {
        snprintf(body, sizeof body, "{\"unit\":\"u%d\"}", i);
        json_t *as = texp_assign(f->b, "fo", body);
        assert_string_equal(tjson_str(as, "[0].id"), unit_ids[i]);
        json_decref(as);
    }
    /* and the run goes on: a reward sent again is a duplicate, new ones count */
    assert_string_equal(texp_reward(f->b, "fo", unit_ids[1], unit_values[1]), "duplicate");
    json_t *as = texp_assign(f->b, "fo", "{}");
    assert_string_equal(texp_reward(f->b, "fo", tjson_str(as, "[0].id"), 1), "accepted");
    json_decref(as);
    assert_int_equal(tdaemon_stop(f->b), 0);
}

static void test_frozen_owner_commits_nothing(void **state)
{
    struct fixture *f = *state;
    char b_url[64];

    tpg_new_db(f->uri, sizeof f->uri);
    f->b = start_on(f->uri);
    f->c = start_on(f->uri);
    url_of(f->b, b_url, sizeof b_url);
    json_decref(texp_create(f->c, "{\"id\":\"fz\",\"arms\":[\"a\",\"b\"],\"seed\":5}"));
    json_t *as = texp_assign(f->c, "fz", "{}");
    assert_string_equal(texp_reward(f->c, "fz", tjson_str(as, "[0].id"), 1), "accepted");
    json_decref(as);

    /* C freezes with its connections open (its locks held) */
    assert_int_equal(tdaemon_signal(f->c, SIGSTOP), 0);
    tsleep_ms(LEASE_WAIT_MS);
    int64_t took = 0;
    struct tresp *r = assign_until_served(f->b, "fz", "{}", FAILOVER_MAX_MS, &took);
    assert_status(r, 201);
    char b_id[48];
    snprintf(b_id, sizeof b_id, "%s", tjson_str(r->json, "assignments[0].id"));
    tresp_free(r);
    printf("# frozen owner: taken over %lld ms after the lease ran out\n", (long long)took);
    int64_t events = tpg_count(f->uri, "SELECT count(*) FROM events");

    /* C wakes: it cannot commit anything for fz, and names B */
    assert_int_equal(tdaemon_signal(f->c, SIGCONT), 0);
    for (int i = 0; i < 3; i++) {
        r = treq(f->c, "POST", "/v1/experiments/fz/assignments", "{}", NULL);
        assert_problem(r, 503);
        tresp_free(r);
    }
    r = treq(f->c, "POST", "/v1/experiments/fz/assignments", "{}", NULL);
    assert_problem(r, 503);
    assert_non_null(tresp_header(r, "Banditd-Owner"));
    assert_string_equal(tresp_header(r, "Banditd-Owner"), b_url);
    tresp_free(r);
    assert_int_equal(tpg_count(f->uri, "SELECT count(*) FROM events"), events);
    /* B goes on */
    assert_string_equal(texp_reward(f->b, "fz", b_id, 0), "accepted");
    assert_int_equal(tdaemon_stop(f->c), 0);
    assert_int_equal(tdaemon_stop(f->b), 0);
}

static void test_unreachable_database_refused(void **state)
{
    struct fixture *f = *state;
    char uri[300], missing[300];

    tpg_new_db(f->uri, sizeof f->uri);
    f->a = tdaemon_new();
    assert_non_null(f->a);
    snprintf(uri, sizeof uri, "postgresql://banditd:sesame@/postgres?host=%s/nowhere",
             tdaemon_dir(f->a));
    const char *extra[] = {"--db", uri, NULL};
    assert_int_equal(tdaemon_launch(f->a, extra, 0), 1000 + 1);
    char *err = tdaemon_stderr(f->a);
    assert_non_null(err);
    if (strstr(err, "postgresql://banditd:***@") == NULL || strstr(err, "sesame") != NULL)
        fail_msg("start on an unreachable database: %s", err);
    free(err);
    /* a database that does not exist on a server that does */
    size_t q = strcspn(f->uri, "?");
    snprintf(missing, sizeof missing, "%.*s_gone%s", (int)q, f->uri, f->uri + q);
    const char *extra2[] = {"--db", missing, NULL};
    assert_int_equal(tdaemon_launch(f->a, extra2, 0), 1000 + 1);
    err = tdaemon_stderr(f->a);
    assert_non_null(err);
    if (strstr(err, "does not exist") == NULL)
        fail_msg("start on a missing database: %s", err);
    free(err);
}

/* The daemon's start on uri: exit status 1 with want in its stderr, and
 * no "sesame" (the password) there. */
static void refused_with(struct tdaemon *d, const char *uri, const char *want)
{
    const char *extra[] = {"--db", uri, NULL};
    assert_int_equal(tdaemon_launch(d, extra, 0), 1000 + 1);
    char *err = tdaemon_stderr(d);
    assert_non_null(err);
    if (strstr(err, want) == NULL || strstr(err, "sesame") != NULL)
        fail_msg("start on %s: wanted \"%s\" (and no password): %s", uri, want, err);
    free(err);
}

static void test_bad_password_and_newer_schema_refused(void **state)
{
    struct fixture *f = *state;
    char uri[300];

    tpg_new_db(f->uri, sizeof f->uri);
    assert_int_equal(pgserver_password_role(f->uri, "sesame-right"), 0);
    /* the database's name: postgresql://banditd@/NAME?host=… */
    const char *name = strstr(f->uri, "@/") + 2;
    int nlen = (int)strcspn(name, "?");
    f->a = tdaemon_new();
    assert_non_null(f->a);
    snprintf(uri, sizeof uri, "postgresql://" PGSERVER_PW_ROLE ":sesame-wrong@127.0.0.1:%u/%.*s",
             pgserver_tcp_port(), nlen, name);
    refused_with(f->a, uri, "password authentication failed");
    refused_with(f->a, uri, PGSERVER_PW_ROLE ":***@127.0.0.1");
    /* the right password passes (the role, the TCP port and the rule are
     * as the refusal above assumed) */
    snprintf(uri, sizeof uri, "postgresql://" PGSERVER_PW_ROLE ":sesame-right@127.0.0.1:%u/%.*s",
             pgserver_tcp_port(), nlen, name);
    const char *extra[] = {"--db", uri, NULL};
    assert_int_equal(tdaemon_launch(f->a, extra, 0), 0);
    assert_int_equal(tdaemon_stop(f->a), 0);
    /* a schema from a newer banditd: refused, untouched */
    assert_int_equal(tpg_exec(f->uri, "UPDATE banditd_schema SET version = 999"), 0);
    refused_with(f->a, f->uri, "newer than this build");
    assert_int_equal(tpg_count(f->uri, "SELECT max(version) FROM banditd_schema"), 999);
}

/* Poll GET /v1/experiments with key on d until it answers want (10 s at
 * most: with --key-refresh 0 only a notification can change the answer). */
static int answers(struct tdaemon *d, const char *key, int want)
{
    int got = 0;
    for (int i = 0; i < 1000 && got != want; i++) {
        struct tresp *r = treq_key(d, "GET", "/v1/experiments", key, NULL);
        got = (int)r->status;
        tresp_free(r);
        if (got != want)
            tsleep_ms(10);
    }
    return got;
}

static void test_keys_reach_every_daemon(void **state)
{
    struct fixture *f = *state;
    char key[128], admin[128], err[1024], id[32];
    const char *flags[] = {"--db", f->uri, "--key-refresh", "0", NULL};

    tpg_new_db(f->uri, sizeof f->uri);
    f->a = tdaemon_start(flags);
    f->b = tdaemon_start(flags);
    assert_non_null(f->a);
    assert_non_null(f->b);
    const char *mk_admin[] = {"keys", "create", "--db", f->uri, "--scope", "admin", NULL};
    const char *mk_read[] = {"keys", "create", "--db", f->uri, "--scope", "read", NULL};
    assert_int_equal(tdaemon_cli(f->a, mk_admin, NULL, admin, sizeof admin, NULL, 0), 0);
    assert_int_equal(tdaemon_cli(f->a, mk_read, NULL, key, sizeof key, err, sizeof err), 0);
    admin[strcspn(admin, "\n")] = key[strcspn(key, "\n")] = '\0';
    const char *num = strstr(err, "created key ");
    assert_non_null(num);
    long long kid = strtoll(num + strlen("created key "), NULL, 10);
    assert_true(kid > 0);
    /* the API closed and the key works on both, with no re-read */
    assert_int_equal(answers(f->a, NULL, 401), 401);
    assert_int_equal(answers(f->b, NULL, 401), 401);
    assert_int_equal(answers(f->a, key, 200), 200);
    assert_int_equal(answers(f->b, key, 200), 200);
    snprintf(id, sizeof id, "%lld", kid);
    const char *revoke[] = {"keys", "revoke", id, "--db", f->uri, NULL};
    assert_int_equal(tdaemon_cli(f->a, revoke, NULL, NULL, 0, NULL, 0), 0);
    assert_int_equal(answers(f->b, key, 401), 401);
    assert_int_equal(answers(f->a, key, 401), 401);
    assert_int_equal(answers(f->b, admin, 200), 200);
    assert_int_equal(tdaemon_stop(f->a), 0);
    assert_int_equal(tdaemon_stop(f->b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_non_owner_and_failover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frozen_owner_commits_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_database_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_password_and_newer_schema_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_keys_reach_every_daemon, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
