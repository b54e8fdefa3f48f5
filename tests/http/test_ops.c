/*
 * test_ops.c — operations against the real daemon: /metrics parses and its
 * counters follow the traffic (requests by route and status, assignments,
 * rewards by result, observations, expiries, pending, experiments by state,
 * commits; per-experiment series as the status says, for the most recently
 * active only); /openapi.json is the compiled-in document; --log-requests writes
 * one JSON line per request; `banditd backup` copies a live database that a
 * second daemon then serves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "api/openapi.h"
#include "tests/support/harness.h"
#include "tests/support/prom.h"

static void scrape(struct tdaemon *d, struct prom *p)
{
    char err[256];
    struct tresp *r = treq(d, "GET", "/metrics", NULL, NULL);
    assert_status(r, 200);
    assert_non_null(tresp_content_type(r));
    assert_string_equal(tresp_content_type(r), "text/plain; version=0.0.4; charset=utf-8");
    if (prom_parse(r->body, "banditd_", p, err, sizeof err) != 0)
        fail_msg("/metrics does not parse: %s", err);
    tresp_free(r);
}

#define DELTA(a, b, name, labels) (prom_must(&(b), name, labels) - prom_or0(&(a), name, labels))

static void test_metrics_follow_traffic(void **state)
{
    struct tdaemon *d = *state;
    tdaemon_up(d, NULL, 0);
    struct prom a, b;
    json_decref(tcall(d, "POST", "/v1/experiments",
                      "{\"id\":\"m\",\"arms\":[\"a\",\"b\"],\"reward\":{\"min\":0,\"max\":1},"
                      "\"fallback\":\"recommendation\"}",
                      201));
    scrape(d, &a);
    for (int i = 0; i < 3; i++)
        json_decref(tcall(d, "GET", "/healthz", NULL, 200));
    json_decref(tcall(d, "GET", "/nowhere", NULL, 404));
    json_t *as = tcall(d, "POST", "/v1/experiments/m/assignments", "{\"count\":3}", 201);
    json_t *list = json_object_get(as, "assignments");
    assert_int_equal(json_array_size(list), 3);
    char body[512];
    const char *id0 = json_string_value(json_object_get(json_array_get(list, 0), "id"));
    const char *id1 = json_string_value(json_object_get(json_array_get(list, 1), "id"));
    snprintf(body, sizeof body,
             "{\"rewards\":[{\"assignment_id\":\"%s\",\"reward\":1},"
             "{\"assignment_id\":\"%s\",\"reward\":1},"
             "{\"assignment_id\":\"%s\",\"reward\":0},"
             "{\"assignment_id\":\"%s\",\"reward\":0},"
             "{\"assignment_id\":\"zz-9\",\"reward\":0}]}",
             id0, id0, id0, id1);
    json_t *rr = tcall(d, "POST", "/v1/experiments/m/rewards", body, 200);
    assert_int_equal(json_integer_value(json_object_get(rr, "accepted")), 2);
    json_decref(rr);
    json_decref(as);
    json_decref(tcall(
        d, "POST", "/v1/experiments/m/observations",
        "{\"observations\":[{\"arm\":\"a\",\"reward\":1},{\"arm\":\"b\",\"reward\":0}]}", 200));
    scrape(d, &b);
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"healthz\",method=\"GET\",code=\"200\"") == 3);
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"unmatched\",method=\"any\",code=\"404\"") == 1);
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"assignments\",method=\"POST\",code=\"201\"") == 1);
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"rewards\",method=\"POST\",code=\"200\"") == 1);
    /* The first scrape was counted too, by the time of the second. */
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"metrics\",method=\"GET\",code=\"200\"") == 1);
    assert_true(DELTA(a, b, "banditd_http_request_duration_seconds_count",
                      "route=\"healthz\",method=\"GET\"") == 3);
    assert_true(DELTA(a, b, "banditd_assignments_total", "kind=\"explore\"") == 3);
    assert_true(DELTA(a, b, "banditd_rewards_total", "result=\"accepted\"") == 2);
    assert_true(DELTA(a, b, "banditd_rewards_total", "result=\"duplicate\"") == 1);
    assert_true(DELTA(a, b, "banditd_rewards_total", "result=\"conflict\"") == 1);
    assert_true(DELTA(a, b, "banditd_rewards_total", "result=\"unknown\"") == 1);
    assert_true(DELTA(a, b, "banditd_observations_total", NULL) == 2);
    assert_true(prom_must(&b, "banditd_pending_assignments", NULL) == 1);
    assert_true(prom_must(&b, "banditd_experiments", "state=\"running\"") == 1);
    assert_true(prom_must(&b, "banditd_experiments", "state=\"stopped\"") == 0);
    assert_true(DELTA(a, b, "banditd_store_commits_total", NULL) >= 1);
    assert_true(DELTA(a, b, "banditd_store_writes_total", NULL) >= 3);
    assert_true(prom_must(&b, "banditd_store_commit_failures_total", NULL) == 0);
    assert_true(prom_must(&b, "banditd_ready", NULL) == 1);
    assert_true(prom_must(&b, "banditd_auth_enabled", NULL) == 0);
    assert_true(prom_must(&b, "banditd_start_time_seconds", NULL) > 1.6e9);
    prom_free(&a);
    prom_free(&b);

    /* Stop it: the gauge moves, and assignments now exploit. */
    json_decref(tcall(d, "PATCH", "/v1/experiments/m", "{\"state\":\"stopped\"}", 200));
    scrape(d, &a);
    json_decref(tcall(d, "POST", "/v1/experiments/m/assignments", "{}", 201));
    scrape(d, &b);
    assert_true(prom_must(&b, "banditd_experiments", "state=\"stopped\"") == 1);
    assert_true(prom_must(&b, "banditd_experiments", "state=\"running\"") == 0);
    assert_true(DELTA(a, b, "banditd_assignments_total", "kind=\"exploit\"") == 1);
    assert_true(DELTA(a, b, "banditd_assignments_total", "kind=\"explore\"") == 0);
    prom_free(&a);
    prom_free(&b);
    assert_int_equal(tdaemon_stop(d), 0);
}

static void test_metrics_count_expiries(void **state)
{
    struct tdaemon *d = *state;
    tdaemon_up(d, NULL, 0);
    json_decref(tcall(d, "POST", "/v1/experiments",
                      "{\"id\":\"x\",\"arms\":[\"a\",\"b\"],\"assignment_ttl_s\":1}", 201));
    struct prom a, b;
    scrape(d, &a);
    json_decref(tcall(d, "POST", "/v1/experiments/x/assignments", "{\"count\":2}", 201));
    /* TTL 1 s; the sweeper runs every second. */
    int done = 0;
    for (int i = 0; i < 100 && !done; i++) {
        usleep(100000);
        scrape(d, &b);
        done = DELTA(a, b, "banditd_assignments_expired_total", NULL) == 2;
        if (!done)
            prom_free(&b);
    }
    assert_true(done);
    assert_true(prom_must(&b, "banditd_pending_assignments", NULL) == 0);
    prom_free(&a);
    prom_free(&b);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* A failed commit (injected by the store's BANDITD_STORE_FAIL_COMMITS: let
 * one commit through, fail the next) shows in the failure counter and as a
 * 503 on its route, and the next write commits again. */
static void test_metrics_count_failed_commits(void **state)
{
    struct tdaemon *d = *state;
    setenv("BANDITD_STORE_FAIL_COMMITS", "1+1", 1);
    tdaemon_up(d, NULL, 0);
    unsetenv("BANDITD_STORE_FAIL_COMMITS");
    json_decref(tcall(d, "POST", "/v1/experiments", "{\"id\":\"f\",\"arms\":[\"a\",\"b\"]}", 201));
    struct prom a, b;
    scrape(d, &a);
    json_decref(
        tcall(d, "POST", "/v1/experiments/f/observations", "{\"arm\":\"a\",\"reward\":1}", 503));
    json_decref(
        tcall(d, "POST", "/v1/experiments/f/observations", "{\"arm\":\"a\",\"reward\":1}", 200));
    scrape(d, &b);
    assert_true(DELTA(a, b, "banditd_store_commit_failures_total", NULL) == 1);
    assert_true(DELTA(a, b, "banditd_store_commits_total", NULL) == 1);
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"observations\",method=\"POST\",code=\"503\"") == 1);
    assert_true(DELTA(a, b, "banditd_http_requests_total",
                      "route=\"observations\",method=\"POST\",code=\"200\"") == 1);
    assert_true(prom_must(&b, "banditd_store_commit_duration_seconds_count", NULL) ==
                prom_must(&b, "banditd_store_commits_total", NULL) +
                    prom_must(&b, "banditd_store_commit_failures_total", NULL));
    /* Only the committed observation is in the statistics. */
    json_t *st = tcall(d, "GET", "/v1/experiments/f/status", NULL, 200);
    assert_int_equal(json_integer_value(json_object_get(st, "pulls")), 1);
    json_decref(st);
    prom_free(&a);
    prom_free(&b);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* n assignments on experiment id (bandit named when given), each rewarded
 * 1 or 0 by position; returns how many were pulls (not exploit). */
static size_t drive(struct tdaemon *d, const char *id, const char *bandit, size_t n)
{
    char path[128], body[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
    if (bandit != NULL)
        snprintf(body, sizeof body, "{\"count\":%zu,\"bandit\":\"%s\"}", n, bandit);
    else
        snprintf(body, sizeof body, "{\"count\":%zu}", n);
    json_t *as = tcall(d, "POST", path, body, 201);
    json_t *list = json_object_get(as, "assignments"), *rewards = json_array(), *a;
    size_t i, pulls = 0;
    json_array_foreach(list, i, a)
    {
        pulls += !json_is_true(json_object_get(a, "exploit"));
        json_array_append_new(rewards, json_pack("{s:O,s:i}", "assignment_id",
                                                 json_object_get(a, "id"), "reward", (int)(i % 2)));
    }
    json_t *rj = json_pack("{s:o}", "rewards", rewards);
    char *rb = json_dumps(rj, JSON_COMPACT);
    json_decref(rj);
    snprintf(path, sizeof path, "/v1/experiments/%s/rewards", id);
    json_decref(tcall(d, "POST", path, rb, 200));
    free(rb);
    json_decref(as);
    return pulls;
}

/* The experiment's series say what its status says. */
static void assert_series_match_status(struct tdaemon *d, const struct prom *p, const char *id)
{
    char path[128], l[160];
    snprintf(path, sizeof path, "/v1/experiments/%s/status", id);
    json_t *st = tcall(d, "GET", path, NULL, 200);
    snprintf(l, sizeof l, "experiment=\"%s\"", id);
    assert_true(prom_must(p, "banditd_experiment_pulls_total", l) == tjson_num(st, "pulls"));
    assert_true(prom_must(p, "banditd_experiment_pending", l) == tjson_num(st, "pending"));
    assert_true(prom_must(p, "banditd_experiment_handed_out_total", l) ==
                tjson_num(st, "handed_out"));
    assert_true(prom_must(p, "banditd_experiment_bandits_done", l) ==
                tjson_num(st, "bandits_done"));
    assert_true(prom_must(p, "banditd_experiment_bandits", l) == tjson_num(st, "bandits_total"));
    double worst = 0;
    json_t *b;
    size_t i;
    json_array_foreach(json_object_get(st, "bandits"), i, b)
    {
        double dc = json_real_value(json_object_get(b, "delta_c"));
        worst = dc > worst ? dc : worst;
    }
    double got = prom_must(p, "banditd_experiment_delta_c", l);
    if (got < worst * (1 - 1e-12) || got > worst * (1 + 1e-12))
        fail_msg("%s: banditd_experiment_delta_c %.17g, status says %.17g", id, got, worst);
    snprintf(l, sizeof l, "experiment=\"%s\",state=\"%s\"", id, tjson_str(st, "state"));
    assert_true(prom_must(p, "banditd_experiment_state", l) == 1);
    json_decref(st);
}

/* --metrics-experiments 1: the one most recently active experiment has
 * series of its own, equal to its status (δᶜ recomputed once it changed);
 * the other is counted; a budget stop shows its reason and the budget. */
static void test_metrics_per_experiment(void **state)
{
    struct tdaemon *d = *state;
    static const char *const flags[] = {"--metrics-experiments", "1", NULL};
    tdaemon_up(d, flags, 0);
    json_decref(tcall(d, "POST", "/v1/experiments",
                      "{\"id\":\"p\",\"arms\":[\"a\",\"b\",\"c\"],\"seed\":4}", 201));
    json_decref(tcall(d, "POST", "/v1/experiments",
                      "{\"id\":\"q\",\"seed\":5,\"policy\":{\"name\":\"uniform\"},"
                      "\"goal\":{\"m\":1,\"epsilon\":0,\"delta\":0.05,\"budget\":40},"
                      "\"bandits\":[{\"id\":\"s1\",\"arms\":[\"x\",\"y\"]},"
                      "{\"id\":\"s2\",\"arms\":[\"x\",\"y\"]}]}",
                      201));
    struct prom a;
    drive(d, "p", NULL, 12);
    tsleep_ms(5);
    scrape(d, &a);
    assert_series_match_status(d, &a, "p");
    assert_true(prom_must(&a, "banditd_metrics_experiments_max", NULL) == 1);
    assert_true(prom_must(&a, "banditd_experiments_omitted", "state=\"running\"") == 1);
    assert_true(prom_must(&a, "banditd_experiment_info",
                          "experiment=\"p\",policy=\"adapt\",mode=\"fixed_confidence\"") == 1);
    prom_free(&a);

    /* More rewards: a new version, so δᶜ is not the cached one. */
    drive(d, "p", NULL, 30);
    tsleep_ms(5);
    scrape(d, &a);
    assert_series_match_status(d, &a, "p");
    prom_free(&a);

    /* q to its budget: now q is shown, p is counted. */
    size_t pulls = 0;
    for (int i = 0; i < 20 && pulls < 40; i++)
        pulls += drive(d, "q", i % 2 ? "s1" : "s2", 4);
    tsleep_ms(5);
    scrape(d, &a);
    int found = 1;
    prom_get(&a, "banditd_experiment_pulls_total", "experiment=\"p\"", &found);
    assert_false(found);
    assert_series_match_status(d, &a, "q");
    assert_true(
        prom_must(&a, "banditd_experiment_stop_reason", "experiment=\"q\",reason=\"budget\"") == 1);
    assert_true(prom_must(&a, "banditd_experiment_budget", "experiment=\"q\"") == 40);
    assert_true(prom_must(&a, "banditd_experiment_handed_out_total", "experiment=\"q\"") == 40);
    assert_true(prom_must(&a, "banditd_experiments_omitted", "state=\"running\"") == 1);
    assert_true(prom_must(&a, "banditd_experiments_omitted", "state=\"stopped\"") == 0);
    prom_free(&a);
    assert_int_equal(tdaemon_stop(d), 0);
}

static void test_openapi_served(void **state)
{
    struct tdaemon *d = *state;
    tdaemon_up(d, NULL, 0);
    struct tresp *r = treq(d, "GET", "/openapi.json", NULL, NULL);
    assert_status(r, 200);
    assert_non_null(tresp_content_type(r));
    assert_string_equal(tresp_content_type(r), "application/json");
    json_t *served = json_loads(r->body, 0, NULL);
    json_t *built = json_loads(api_openapi_json, 0, NULL);
    assert_non_null(served);
    assert_true(json_equal(served, built));
    json_decref(served);
    json_decref(built);
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* The JSON request lines in a log (new array). */
static json_t *request_lines(const char *log)
{
    json_t *out = json_array();
    for (const char *p = log; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (n > 0 && p[0] == '{') {
            json_t *j = json_loadb(p, n, 0, NULL);
            if (j == NULL)
                fail_msg("a log line is not JSON: %.*s", (int)n, p);
            json_array_append_new(out, j);
        }
        p = eol ? eol + 1 : NULL;
    }
    return out;
}

static void test_request_log(void **state)
{
    struct tdaemon *d = *state;
    static const char *const args[] = {"--log-requests", NULL};
    tdaemon_up(d, args, 0);
    json_decref(tcall(d, "POST", "/v1/experiments", "{\"id\":\"l\",\"arms\":[\"a\",\"b\"]}", 201));
    json_decref(tcall(d, "GET", "/v1/experiments/l/status", NULL, 200));
    json_decref(tcall(d, "GET", "/v1/experiments/nope/status", NULL, 404));
    /* A key (id 1) appears in the lines of the requests it made, never itself. */
    char key[128];
    assert_int_equal(tdaemon_create_key(d, "read", key, sizeof key), 0);
    tdaemon_signal(d, SIGHUP);
    for (int i = 0; i < 200; i++) {
        struct tresp *kr = treq(d, "GET", "/v1/experiments/l", NULL, NULL);
        long s = kr->status;
        tresp_free(kr);
        if (s == 401)
            break;
        tsleep_ms(20);
    }
    struct tresp *kr = treq_key(d, "GET", "/v1/experiments/l", key, NULL);
    assert_status(kr, 200);
    tresp_free(kr);
    assert_int_equal(tdaemon_stop(d), 0);
    char *log = tdaemon_stderr(d);
    assert_null(strstr(log, key));
    /* ms to the microsecond, written so: not a double's 17 digits
     * ("ms":0.057035000000000002) */
    int seen = 0;
    for (const char *m = strstr(log, "\"ms\":"); m != NULL; m = strstr(m + 1, "\"ms\":")) {
        const char *num = m + 5, *dot = num + strspn(num, "0123456789");
        size_t decimals = *dot == '.' ? strspn(dot + 1, "0123456789") : 0;
        if (decimals > 3)
            fail_msg("ms printed with %zu decimals: %.40s", decimals, m);
        seen++;
    }
    assert_true(seen >= 5);
    json_t *all = request_lines(log);
    free(log);
    /* The last line is the keyed request; before it come 401s (polling
     * until the key took effect), before those the three of the table. */
    size_t n = json_array_size(all);
    assert_true(n >= 5);
    json_t *keyed = json_array_get(all, n - 1);
    assert_int_equal(json_integer_value(json_object_get(keyed, "status")), 200);
    assert_int_equal(json_integer_value(json_object_get(keyed, "key")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, n - 2), "status")),
                     401);
    assert_null(json_object_get(json_array_get(all, n - 2), "key"));
    json_t *lines = json_array();
    for (size_t i = 0; i < 3; i++)
        json_array_append(lines, json_array_get(all, i));
    json_decref(all);
    static const struct {
        const char *method, *path;
        int status;
    } want[] = {{"POST", "/v1/experiments", 201},
                {"GET", "/v1/experiments/l/status", 200},
                {"GET", "/v1/experiments/nope/status", 404}};
    for (size_t i = 0; i < 3; i++) {
        json_t *j = json_array_get(lines, i);
        assert_string_equal(json_string_value(json_object_get(j, "msg")), "request");
        assert_string_equal(json_string_value(json_object_get(j, "method")), want[i].method);
        assert_string_equal(json_string_value(json_object_get(j, "path")), want[i].path);
        assert_int_equal(json_integer_value(json_object_get(j, "status")), want[i].status);
        assert_true(json_is_number(json_object_get(j, "ms")));
        assert_true(json_number_value(json_object_get(j, "ms")) >= 0);
        const char *t = json_string_value(json_object_get(j, "time"));
        assert_non_null(t);
        assert_int_equal(strlen(t), 24); /* 2026-01-02T03:04:05.678Z */
        assert_int_equal(t[23], 'Z');
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(lines, 1), "experiment")),
                        "l");
    json_decref(lines);

    /* Off by default. */
    json_t *none;
    struct tdaemon *d2 = tdaemon_new();
    assert_non_null(d2);
    tdaemon_up(d2, NULL, 0);
    json_decref(tcall(d2, "GET", "/healthz", NULL, 200));
    assert_int_equal(tdaemon_stop(d2), 0);
    log = tdaemon_stderr(d2);
    none = request_lines(log);
    free(log);
    assert_int_equal(json_array_size(none), 0);
    json_decref(none);
    tdaemon_free(d2);
}

static void test_backup_of_a_live_database(void **state)
{
    struct tdaemon *d = *state;
    tdaemon_up(d, NULL, 0);
    json_decref(tcall(d, "POST", "/v1/experiments", "{\"id\":\"b\",\"arms\":[\"a\",\"b\"]}", 201));
    for (int i = 0; i < 5; i++)
        json_decref(tcall(d, "POST", "/v1/experiments/b/observations",
                          "{\"arm\":\"a\",\"reward\":1}", 200));
    /* The copy goes where a second daemon will serve it from. */
    struct tdaemon *d2 = tdaemon_new();
    assert_non_null(d2);
    char out[512], err[1024];
    const char *copy = tdaemon_db_path(d2);
    const char *a[] = {"backup", "--db", tdaemon_db_path(d), "--to", copy, NULL};
    assert_int_equal(tdaemon_cli(d, a, NULL, out, sizeof out, err, sizeof err), 0);
    /* Never over an existing file. */
    assert_int_equal(tdaemon_cli(d, a, NULL, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "exists"));
    const char *noto[] = {"backup", "--db", tdaemon_db_path(d), NULL};
    assert_int_equal(tdaemon_cli(d, noto, NULL, out, sizeof out, err, sizeof err), 2);
    /* The live daemon keeps serving. */
    json_decref(
        tcall(d, "POST", "/v1/experiments/b/observations", "{\"arm\":\"b\",\"reward\":0}", 200));
    assert_int_equal(tdaemon_stop(d), 0);

    tdaemon_up(d2, NULL, 0);
    json_t *st = tcall(d2, "GET", "/v1/experiments/b/status", NULL, 200);
    assert_int_equal(json_integer_value(json_object_get(st, "pulls")), 5);
    json_decref(st);
    assert_int_equal(tdaemon_stop(d2), 0);
    tdaemon_free(d2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_metrics_follow_traffic, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_count_expiries, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_count_failed_commits, tfresh_setup,
                                        tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_per_experiment, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_openapi_served, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_request_log, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_backup_of_a_live_database, tfresh_setup,
                                        tfresh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
