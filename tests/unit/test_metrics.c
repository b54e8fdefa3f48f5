/*
 * test_metrics.c — the /metrics exposition below HTTP: the text parses
 * strictly (names prefixed banditd_, every family typed, histograms
 * cumulative), and each counter moves by exactly what was recorded: requests
 * by route and status, the latency bucket a request falls in, assignments,
 * rewards by result, observations, expiries, store commits; per-experiment
 * series for the most recently active experiments only, the others counted
 * by state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "exp/exp.h"
#include "api/api.h"
#include "http/http.h"
#include "api/metrics.h"
#include "base/clock.h"
#include "tests/support/prom.h"
#include "tests/support/trun.h"
#include "tests/support/tstore.h"

static struct store *g_st;
static struct tstore *g_t;

static int group_setup(void **state)
{
    (void)state;
    g_t = tstore_new("m.db");
    g_st = g_t->s;
    struct exp_limits lim = {.max_experiments = 64,
                             .max_bandits = 4,
                             .max_arms = 8,
                             .max_batch = 10,
                             .max_count = 10,
                             .max_pending = 100,
                             .history_points = 16};
    exp_registry_init(g_st, &lim);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    exp_registry_free();
    return tstore_free(g_t);
}

static void scrape(struct prom *p)
{
    char *text = NULL, err[256];
    size_t len = 0;
    assert_int_equal(metrics_render(g_st, 1, &text, &len), 0);
    assert_int_equal(strlen(text), len);
    if (prom_parse(text, "banditd_", p, err, sizeof err) != 0)
        fail_msg("exposition does not parse: %s", err);
    free(text);
}

static const struct http_route *route_named(const char *method, const char *pattern)
{
    for (const struct http_route *rt = api_routes; rt->method != NULL; rt++)
        if (strcmp(rt->method, method) == 0 && strcmp(rt->pattern, pattern) == 0)
            return rt;
    fail_msg("no route %s %s", method, pattern);
    return NULL;
}

static void test_parses_with_every_family(void **state)
{
    (void)state;
    struct prom p;
    scrape(&p);
    static const char *const always[] = {"banditd_http_requests_in_flight",
                                         "banditd_assignments_total",
                                         "banditd_rewards_total",
                                         "banditd_observations_total",
                                         "banditd_pending_assignments",
                                         "banditd_experiments",
                                         "banditd_store_commits_total",
                                         "banditd_store_commit_failures_total",
                                         "banditd_store_commit_duration_seconds_sum",
                                         "banditd_store_queue_depth",
                                         "banditd_assignments_expired_total",
                                         "banditd_api_keys",
                                         "banditd_ready"};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++) {
        int found = 0;
        for (size_t k = 0; k < p.n && !found; k++)
            found = strcmp(p.s[k].name, always[i]) == 0;
        if (!found)
            fail_msg("%s missing", always[i]);
    }
    assert_true(p.families >= 15);
    /* Every route has its latency histogram, even before any request. */
    for (const struct http_route *rt = api_routes; rt->method != NULL; rt++) {
        char labels[128];
        snprintf(labels, sizeof labels, "route=\"%s\",method=\"%s\"", rt->name, rt->method);
        prom_must(&p, "banditd_http_request_duration_seconds_count", labels);
    }
    assert_true(prom_must(&p, "banditd_experiments", "state=\"running\"") == 0);
    prom_free(&p);
}

static void test_requests_by_route_and_status(void **state)
{
    (void)state;
    const struct http_route *st = route_named("GET", "/v1/experiments/{id}/status");
    const struct http_route *hz = route_named("GET", "/healthz");
    const char *st_labels = "route=\"status\",method=\"GET\"";
    struct prom a, b;
    scrape(&a);
    for (int i = 0; i < 3; i++)
        metrics_request(st, 200, 0.05); /* 50 µs: first bucket */
    metrics_request(st, 404, 3.0);      /* 3 ms: le=0.005 */
    metrics_request(st, 304, 2000.0);   /* 2 s: only +Inf */
    metrics_request(hz, 200, 0.3);
    metrics_request(NULL, 404, 0.2);
    scrape(&b);
    assert_true(prom_must(&b, "banditd_http_requests_total",
                          "route=\"status\",method=\"GET\",code=\"200\"") -
                    prom_or0(&a, "banditd_http_requests_total",
                             "route=\"status\",method=\"GET\",code=\"200\"") ==
                3);
    assert_true(prom_must(&b, "banditd_http_requests_total",
                          "route=\"status\",method=\"GET\",code=\"404\"") -
                    prom_or0(&a, "banditd_http_requests_total",
                             "route=\"status\",method=\"GET\",code=\"404\"") ==
                1);
    assert_true(prom_must(&b, "banditd_http_requests_total",
                          "route=\"healthz\",method=\"GET\",code=\"200\"") -
                    prom_or0(&a, "banditd_http_requests_total",
                             "route=\"healthz\",method=\"GET\",code=\"200\"") ==
                1);
    assert_true(prom_must(&b, "banditd_http_requests_total",
                          "route=\"unmatched\",method=\"any\",code=\"404\"") -
                    prom_or0(&a, "banditd_http_requests_total",
                             "route=\"unmatched\",method=\"any\",code=\"404\"") ==
                1);
    /* Buckets: 3 at ≤0.1 ms, 4 at ≤5 ms, 4 at ≤1 s, 5 at +Inf. */
    char l[160];
    static const struct {
        const char *le;
        double want;
    } buckets[] = {{"0.0001", 3}, {"0.001", 3}, {"0.0025", 3}, {"0.005", 4}, {"1", 4}, {"+Inf", 5}};
    for (size_t i = 0; i < sizeof buckets / sizeof buckets[0]; i++) {
        snprintf(l, sizeof l, "%s,le=\"%s\"", st_labels, buckets[i].le);
        double d = prom_must(&b, "banditd_http_request_duration_seconds_bucket", l) -
                   prom_must(&a, "banditd_http_request_duration_seconds_bucket", l);
        if (d != buckets[i].want)
            fail_msg("bucket le=%s grew by %g, expected %g", buckets[i].le, d, buckets[i].want);
    }
    double sum = prom_must(&b, "banditd_http_request_duration_seconds_sum", st_labels) -
                 prom_must(&a, "banditd_http_request_duration_seconds_sum", st_labels);
    assert_true(sum > 2.0029 && sum < 2.0032); /* 3×0.05 ms + 3 ms + 2 s */
    prom_free(&a);
    prom_free(&b);
}

/* One request on every route: each route's series grows by the number of
 * routes that share its labels (patterns with one name and method are one
 * series), and no series appears twice (the parser checks). */
static void test_every_route_counted_once(void **state)
{
    (void)state;
    struct prom a, b;
    scrape(&a);
    size_t n = 0;
    for (const struct http_route *rt = api_routes; rt->method != NULL; rt++, n++)
        metrics_request(rt, 299, 0.01);
    scrape(&b);
    size_t total = 0;
    for (const struct http_route *rt = api_routes; rt->method != NULL; rt++) {
        char labels[160];
        snprintf(labels, sizeof labels, "route=\"%s\",method=\"%s\",code=\"299\"", rt->name,
                 rt->method);
        size_t sharing = 0, first = 1;
        for (const struct http_route *o = api_routes; o != rt; o++)
            if (strcmp(o->name, rt->name) == 0 && strcmp(o->method, rt->method) == 0)
                first = 0;
        for (const struct http_route *o = api_routes; o->method != NULL; o++)
            sharing += strcmp(o->name, rt->name) == 0 && strcmp(o->method, rt->method) == 0;
        double d = prom_must(&b, "banditd_http_requests_total", labels) -
                   prom_or0(&a, "banditd_http_requests_total", labels);
        if (d != (double)sharing)
            fail_msg("%s: grew by %g, expected %zu", labels, d, sharing);
        if (first)
            total += (size_t)d;
    }
    assert_int_equal(total, n);
    prom_free(&a);
    prom_free(&b);
}

static void test_domain_counters(void **state)
{
    (void)state;
    struct prom a, b;
    scrape(&a);
    metrics_assignments(5, 0);
    metrics_assignments(2, 1);
    metrics_reward(EXP_R_ACCEPTED);
    metrics_reward(EXP_R_ACCEPTED);
    metrics_reward(EXP_R_DUPLICATE);
    metrics_reward(EXP_R_CONFLICT);
    metrics_reward(EXP_R_UNKNOWN);
    metrics_reward(EXP_R_EXPIRED);
    metrics_observations(4);
    scrape(&b);
    static const struct {
        const char *name, *labels;
        double delta;
    } want[] = {
        {"banditd_assignments_total", "kind=\"explore\"", 5},
        {"banditd_assignments_total", "kind=\"exploit\"", 2},
        {"banditd_rewards_total", "result=\"accepted\"", 2},
        {"banditd_rewards_total", "result=\"duplicate\"", 1},
        {"banditd_rewards_total", "result=\"conflict\"", 1},
        {"banditd_rewards_total", "result=\"unknown\"", 1},
        {"banditd_rewards_total", "result=\"expired\"", 1},
        {"banditd_rewards_total", "result=\"error\"", 0},
        {"banditd_observations_total", NULL, 4},
        /* expiries are the runtime's count (exp_expired_total): test_ops */
        {"banditd_assignments_expired_total", NULL, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        double d = prom_must(&b, want[i].name, want[i].labels) -
                   prom_must(&a, want[i].name, want[i].labels);
        if (d != want[i].delta)
            fail_msg("%s{%s} grew by %g, expected %g", want[i].name,
                     want[i].labels ? want[i].labels : "", d, want[i].delta);
    }
    prom_free(&a);
    prom_free(&b);
}

static void test_store_figures(void **state)
{
    (void)state;
    struct prom a, b;
    scrape(&a);
    int64_t id;
    /* Two writes through the writer: two more commits at least one each. */
    assert_int_equal(
        store_key_insert(g_st, "m", "read",
                         "1111111111111111111111111111111111111111111111111111111111111111", NULL,
                         1, NULL, NULL, &id),
        STORE_OK);
    assert_int_equal(store_key_revoke(g_st, id, NULL, NULL), STORE_OK);
    scrape(&b);
    double commits = prom_must(&b, "banditd_store_commits_total", NULL) -
                     prom_must(&a, "banditd_store_commits_total", NULL);
    assert_true(commits >= 1 && commits <= 2);
    assert_true(prom_must(&b, "banditd_store_commit_duration_seconds_count", NULL) ==
                prom_must(&b, "banditd_store_commits_total", NULL) +
                    prom_must(&b, "banditd_store_commit_failures_total", NULL));
    assert_true(prom_must(&b, "banditd_store_commit_duration_seconds_sum", NULL) >=
                prom_must(&a, "banditd_store_commit_duration_seconds_sum", NULL));
    assert_true(prom_must(&b, "banditd_store_queue_depth", NULL) == 0);
    prom_free(&a);
    prom_free(&b);
}

/* --- per-experiment series ------------------------------------------------------ */

/* Experiment id (arms a, b; goal as given), committed: a new reference. */
static struct exp *create(const char *id, const char *goal)
{
    char body[256];
    snprintf(body, sizeof body, "{\"id\":\"%s\",\"arms\":[\"a\",\"b\"],\"seed\":3%s%s}", id,
             goal ? ",\"goal\":" : "", goal ? goal : "");
    return trun_create(body);
}

/* One event on x at time t (ms): an assignment, or a change to state s. */
static void event_at(struct exp *x, int64_t t, int stop)
{
    struct exp_batch b;
    struct twait w;
    const struct exp_assignment *a;
    exp_batch_init(&b);
    exp_lock(x);
    assert_int_equal(exp_prepare_locked(x, t), EXP_OK);
    if (stop)
        assert_int_equal(exp_ev_state(x, &b, EXP_STOPPED, t), EXP_OK);
    else
        assert_int_equal(exp_ev_assign(x, &b, -1, NULL, t, &a), EXP_OK);
    twait_init(&w);
    assert_int_equal(exp_submit_locked(x, &b, twait_done, &w), STORE_OK);
    exp_unlock(x);
    assert_int_equal(twait_wait(&w), STORE_OK);
    exp_batch_free(&b);
}

static int shown(const struct prom *p, const char *id)
{
    char labels[128];
    int found = 0;
    snprintf(labels, sizeof labels, "experiment=\"%s\"", id);
    prom_get(p, "banditd_experiment_pulls_total", labels, &found);
    return found;
}

/* Series for the N most recently active experiments (latest event first),
 * the others counted by state; each family once, whatever N. */
static void test_experiments_most_recent_shown(void **state)
{
    (void)state;
    /* Events in the future of every creation: their times alone rank. */
    int64_t t0 = clock_wall_ms() + (int64_t)3600 * 1000;
    struct exp *ma = create("ma", NULL), *mb = create("mb", NULL), *mc = create("mc", NULL);
    struct exp *md = create("md", "{\"m\":1,\"epsilon\":0,\"delta\":0.1,\"budget\":50}");
    event_at(md, t0 + 500, 0);
    event_at(md, t0 + 600, 1); /* stopped by hand */
    event_at(ma, t0 + 1000, 0);
    event_at(mc, t0 + 2000, 0);
    event_at(mb, t0 + 3000, 0);
    event_at(mb, t0 + 3001, 0);

    struct prom p;
    metrics_set_experiments(2);
    scrape(&p);
    assert_true(shown(&p, "mb") && shown(&p, "mc") && !shown(&p, "ma") && !shown(&p, "md"));
    assert_true(prom_must(&p, "banditd_metrics_experiments_max", NULL) == 2);
    assert_true(prom_must(&p, "banditd_experiments_omitted", "state=\"running\"") == 1);
    assert_true(prom_must(&p, "banditd_experiments_omitted", "state=\"stopped\"") == 1);
    assert_true(prom_must(&p, "banditd_experiments_omitted", "state=\"paused\"") == 0);
    assert_true(prom_must(&p, "banditd_experiments", "state=\"running\"") == 3);
    assert_true(prom_must(&p, "banditd_experiments", "state=\"stopped\"") == 1);
    /* mb's figures: two assignments pending, nothing rewarded. */
    assert_true(prom_must(&p, "banditd_experiment_pending", "experiment=\"mb\"") == 2);
    assert_true(prom_must(&p, "banditd_experiment_handed_out_total", "experiment=\"mb\"") == 2);
    assert_true(prom_must(&p, "banditd_experiment_pulls_total", "experiment=\"mb\"") == 0);
    assert_true(prom_must(&p, "banditd_experiment_state", "experiment=\"mb\",state=\"running\"") ==
                1);
    assert_true(prom_must(&p, "banditd_experiment_state", "experiment=\"mb\",state=\"stopped\"") ==
                0);
    assert_true(prom_must(&p, "banditd_experiment_last_event_timestamp_seconds",
                          "experiment=\"mb\"") == (double)(t0 + 3001) / 1000.0);
    assert_true(prom_must(&p, "banditd_experiment_delta_c", "experiment=\"mb\"") > 0.05);
    prom_free(&p);

    /* A new event moves ma up; mc (now the oldest of the three) drops out. */
    event_at(ma, t0 + 4000, 0);
    scrape(&p);
    assert_true(shown(&p, "ma") && shown(&p, "mb") && !shown(&p, "mc"));
    prom_free(&p);

    /* All shown: the stopped one with its reason and budget. */
    metrics_set_experiments(10);
    scrape(&p);
    assert_true(shown(&p, "ma") && shown(&p, "mb") && shown(&p, "mc") && shown(&p, "md"));
    assert_true(prom_must(&p, "banditd_experiment_stop_reason",
                          "experiment=\"md\",reason=\"manual\"") == 1);
    int found = 1;
    prom_get(&p, "banditd_experiment_stop_reason", "experiment=\"mb\",reason=\"manual\"", &found);
    assert_false(found);
    assert_true(prom_must(&p, "banditd_experiment_budget", "experiment=\"md\"") == 50);
    prom_get(&p, "banditd_experiment_budget", "experiment=\"ma\"", &found);
    assert_false(found); /* fixed confidence: no budget series */
    assert_true(prom_must(&p, "banditd_experiment_info",
                          "experiment=\"md\",policy=\"sar\",mode=\"fixed_budget\"") == 1);
    assert_true(prom_must(&p, "banditd_experiment_delta", "experiment=\"md\"") == 0.1);
    assert_true(prom_must(&p, "banditd_experiments_omitted", "state=\"running\"") == 0);
    prom_free(&p);

    /* None: only the aggregates. */
    metrics_set_experiments(0);
    scrape(&p);
    for (size_t i = 0; i < p.n; i++)
        if (strncmp(p.s[i].name, "banditd_experiment_", 19) == 0)
            fail_msg("%s{%s} with --metrics-experiments 0", p.s[i].name, p.s[i].labels);
    assert_true(prom_must(&p, "banditd_experiments_omitted", "state=\"running\"") == 3);
    assert_true(prom_must(&p, "banditd_experiments_omitted", "state=\"stopped\"") == 1);
    prom_free(&p);
    metrics_set_experiments(METRICS_EXPERIMENTS_DEFAULT);
    exp_put(ma);
    exp_put(mb);
    exp_put(mc);
    exp_put(md);
}

/* The ranking among many: for several caps, exactly the N latest events'
 * experiments are shown, whatever order they were created in. */
static void test_experiments_ranking_many(void **state)
{
    (void)state;
    enum { N = 30 };
    int64_t t0 = clock_wall_ms() + (int64_t)7200 * 1000; /* after every other test's events */
    struct exp *x[N];
    int rank[N]; /* rank[i]: 0 = the latest event */
    uint32_t g = 12345;
    for (int i = 0; i < N; i++)
        rank[i] = i;
    for (int i = N - 1; i > 0; i--) { /* a fixed shuffle */
        g = g * 1103515245u + 12345u;
        int j = (int)((g >> 8) % (uint32_t)(i + 1)), t = rank[i];
        rank[i] = rank[j];
        rank[j] = t;
    }
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%02d", i);
        x[i] = create(id, NULL);
        event_at(x[i], t0 + (int64_t)(N - rank[i]) * 10, 0);
    }
    static const size_t caps[] = {1, 2, 7, 15, 29};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        struct prom p;
        metrics_set_experiments(caps[c]);
        scrape(&p);
        size_t n = 0;
        for (size_t k = 0; k < p.n; k++)
            n += strcmp(p.s[k].name, "banditd_experiment_info") == 0;
        assert_int_equal(n, caps[c]);
        for (int i = 0; i < N; i++) {
            char id[16];
            snprintf(id, sizeof id, "r%02d", i);
            if (shown(&p, id) != ((size_t)rank[i] < caps[c]))
                fail_msg("cap %zu: %s (rank %d) %s", caps[c], id, rank[i],
                         shown(&p, id) ? "shown" : "not shown");
        }
        prom_free(&p);
    }
    metrics_set_experiments(METRICS_EXPERIMENTS_DEFAULT);
    for (int i = 0; i < N; i++)
        exp_put(x[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parses_with_every_family),
        cmocka_unit_test(test_requests_by_route_and_status),
        cmocka_unit_test(test_every_route_counted_once),
        cmocka_unit_test(test_domain_counters),
        cmocka_unit_test(test_store_figures),
        cmocka_unit_test(test_experiments_most_recent_shown),
        cmocka_unit_test(test_experiments_ranking_many),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
