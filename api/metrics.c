/*
 * metrics.c — the counters behind /metrics and their exposition (see
 * metrics.h). Request counters are a fixed [route][status] array of atomics
 * indexed by the route's position in api_routes, so counting a request is
 * two array lookups and three relaxed increments; the text is built only
 * when scraped.
 */
#include "api/metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/auth.h"
#include "base/buf.h"
#include "notify/notify.h"

/* Rows: every route of the table, plus one for requests no route matched. */
#define MAX_ROUTES 48
#define ROW_UNMATCHED MAX_ROUTES
#define N_ROWS (MAX_ROUTES + 1)
/* Statuses 100..599, each its own counter. */
#define STATUS_MIN 100
#define N_STATUS 500
/* Largest exposition we build: a cap far above what the arrays can fill,
 * plus room for each experiment shown (at most 16 lines of at most 256
 * bytes: ids are at most 64 characters). */
#define MAX_TEXT ((size_t)4 << 20)
#define MAX_TEXT_PER_EXPERIMENT ((size_t)4096)

/* Latency buckets (seconds): 0.1 ms to 1 s, roughly 1-2.5-5 per decade. */
static const double bucket_le[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                   0.025,  0.05,    0.1,    0.25,  0.5,    1.0};
#define N_BUCKETS (sizeof bucket_le / sizeof bucket_le[0])

typedef atomic_uint_fast64_t counter;

static counter g_requests[N_ROWS][N_STATUS];
static counter g_latency[N_ROWS][N_BUCKETS + 1]; /* last: above 1 s */
static counter g_latency_ns[N_ROWS];
static counter g_assign[2]; /* explore, exploit */
static counter g_rewards[EXP_N_REWARD_STATUS];
static counter g_observations;
static atomic_int_fast64_t g_start_s;
/* --metrics-experiments: experiments with series of their own. */
static atomic_size_t g_shown_max = METRICS_EXPERIMENTS_DEFAULT;

static void add(counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static size_t row_of(const struct http_route *rt)
{
    if (rt == NULL)
        return ROW_UNMATCHED;
    size_t i = (size_t)(rt - api_routes);
    return i < MAX_ROUTES ? i : ROW_UNMATCHED;
}

void metrics_request(const struct http_route *route, unsigned status, double ms)
{
    size_t row = row_of(route);
    if (status >= STATUS_MIN && status < STATUS_MIN + N_STATUS)
        add(&g_requests[row][status - STATUS_MIN], 1);
    double s = ms / 1000.0;
    size_t b = 0;
    while (b < N_BUCKETS && s > bucket_le[b])
        b++;
    add(&g_latency[row][b], 1);
    add(&g_latency_ns[row], ms > 0 ? (uint64_t)(ms * 1e6) : 0);
}

void metrics_start(void)
{
    atomic_store(&g_start_s, (int_fast64_t)time(NULL));
}

void metrics_set_experiments(size_t n)
{
    atomic_store(&g_shown_max, n < METRICS_EXPERIMENTS_MAX ? n : METRICS_EXPERIMENTS_MAX);
}

void metrics_assignments(size_t n, int exploit)
{
    add(&g_assign[exploit ? 1 : 0], n);
}

void metrics_reward(enum exp_reward_status s)
{
    if ((unsigned)s <= EXP_R_ERROR)
        add(&g_rewards[s], 1);
}

void metrics_observations(size_t n)
{
    add(&g_observations, n);
}

/* --- exposition ------------------------------------------------------------------ */

static void header(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP banditd_%s %s\n# TYPE banditd_%s %s\n", name, help, name, type);
}

static void route_labels(size_t row, const char **name, const char **method)
{
    if (row == ROW_UNMATCHED) {
        *name = "unmatched";
        *method = "any";
        return;
    }
    *name = api_routes[row].name;
    *method = api_routes[row].method;
}

/* Route rows in use: the table's length (at most MAX_ROUTES) + unmatched. */
static size_t n_routes(void)
{
    size_t n = 0;
    while (n < MAX_ROUTES && api_routes[n].method != NULL)
        n++;
    return n;
}

/* Rows that share their labels (two patterns with one route name and
 * method, e.g. the dashboard's pages) are one series: rendered once, at the
 * first such row, summed over all of them. */
static int same_labels(size_t a, size_t b)
{
    const char *na, *ma, *nb, *mb;
    route_labels(a, &na, &ma);
    route_labels(b, &nb, &mb);
    return strcmp(na, nb) == 0 && strcmp(ma, mb) == 0;
}

/* The rows in use, in table order, unmatched last. */
static size_t rows_in_use(size_t rows[N_ROWS])
{
    size_t nr = n_routes(), n = 0;
    for (size_t i = 0; i < nr; i++)
        rows[n++] = i;
    rows[n++] = ROW_UNMATCHED;
    return n;
}

static int is_group_leader(const size_t *rows, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (same_labels(rows[j], rows[i]))
            return 0;
    return 1;
}

static void render_requests(struct buf *b)
{
    size_t rows[N_ROWS];
    size_t n = rows_in_use(rows);
    header(b, "http_requests_total", "counter",
           "HTTP requests answered, by route (pattern name), method and status code.");
    for (size_t i = 0; i < n; i++) {
        if (!is_group_leader(rows, i))
            continue;
        const char *name, *method;
        route_labels(rows[i], &name, &method);
        for (size_t s = 0; s < N_STATUS; s++) {
            uint64_t v = 0;
            for (size_t k = i; k < n; k++)
                if (same_labels(rows[i], rows[k]))
                    v += get(&g_requests[rows[k]][s]);
            if (v > 0)
                buf_printf(
                    b,
                    "banditd_http_requests_total{route=\"%s\",method=\"%s\",code=\"%zu\"} %llu\n",
                    name, method, s + STATUS_MIN, (unsigned long long)v);
        }
    }
    header(b, "http_request_duration_seconds", "histogram",
           "Time from the request's first byte to its reply being queued, by route.");
    for (size_t i = 0; i < n; i++) {
        if (!is_group_leader(rows, i))
            continue;
        const char *name, *method;
        route_labels(rows[i], &name, &method);
        uint64_t counts[N_BUCKETS + 1] = {0}, ns = 0, total = 0;
        for (size_t k = i; k < n; k++) {
            if (!same_labels(rows[i], rows[k]))
                continue;
            for (size_t q = 0; q <= N_BUCKETS; q++)
                counts[q] += get(&g_latency[rows[k]][q]);
            ns += get(&g_latency_ns[rows[k]]);
        }
        for (size_t q = 0; q <= N_BUCKETS; q++)
            total += counts[q];
        if (total == 0 && rows[i] == ROW_UNMATCHED)
            continue;
        uint64_t cum = 0;
        for (size_t q = 0; q < N_BUCKETS; q++) {
            cum += counts[q];
            buf_printf(b,
                       "banditd_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
                       "le=\"%g\"} %llu\n",
                       name, method, bucket_le[q], (unsigned long long)cum);
        }
        buf_printf(
            b,
            "banditd_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"+Inf\"} "
            "%llu\n",
            name, method, (unsigned long long)total);
        buf_printf(b,
                   "banditd_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.9f\n",
                   name, method, (double)ns / 1e9);
        buf_printf(b,
                   "banditd_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} %llu\n",
                   name, method, (unsigned long long)total);
    }
    header(b, "http_requests_in_flight", "gauge", "Requests being served now.");
    buf_printf(b, "banditd_http_requests_in_flight %u\n", http_in_flight());
}

static void render_domain(struct buf *b)
{
    header(b, "assignments_total", "counter",
           "Assignments handed out; kind=exploit after an experiment stopped (not pulls).");
    buf_printf(b, "banditd_assignments_total{kind=\"explore\"} %llu\n",
               (unsigned long long)get(&g_assign[0]));
    buf_printf(b, "banditd_assignments_total{kind=\"exploit\"} %llu\n",
               (unsigned long long)get(&g_assign[1]));
    header(b, "assignments_expired_total", "counter",
           "Assignments that expired unanswered (default_reward recorded when configured).");
    buf_printf(b, "banditd_assignments_expired_total %llu\n",
               (unsigned long long)exp_expired_total());
    header(b, "rewards_total", "counter",
           "Reward reports by result (expired: the reward came after its assignment expired).");
    for (int s = EXP_R_ACCEPTED; s <= EXP_R_ERROR; s++)
        buf_printf(b, "banditd_rewards_total{result=\"%s\"} %llu\n",
                   s == EXP_R_ERROR ? "error" : exp_reward_status_name((enum exp_reward_status)s),
                   (unsigned long long)get(&g_rewards[s]));
    header(b, "observations_total", "counter", "Observations recorded.");
    buf_printf(b, "banditd_observations_total %llu\n", (unsigned long long)get(&g_observations));
    header(b, "pending_assignments", "gauge",
           "Assignments handed out and neither rewarded nor expired, all experiments.");
    buf_printf(b, "banditd_pending_assignments %llu\n", (unsigned long long)exp_pending_total());
    header(b, "memory_resident_bytes", "gauge",
           "Resident memory at the last measurement (each second), with pending assignments "
           "counted since.");
    buf_printf(b, "banditd_memory_resident_bytes %zu\n", exp_memory_used());
    header(b, "memory_cap_bytes", "gauge",
           "--max-memory: past it new experiments and assignments are refused (0: no cap).");
    buf_printf(b, "banditd_memory_cap_bytes %zu\n", exp_limits()->max_memory);
    header(b, "experiments_corrupt", "gauge",
           "Experiments refused because their event log is corrupt (see the log).");
    buf_printf(b, "banditd_experiments_corrupt %zu\n", exp_corrupt_count());
}

/* --- experiments ---------------------------------------------------------------- */
/*
 * Series of their own for at most --metrics-experiments experiments: the
 * most recently active ones (latest event first, ties by id), so that a
 * scrape shows what is moving and what has just stopped. The others are
 * counted by state in banditd_experiments_omitted; the global families
 * (banditd_experiments, banditd_pending_assignments, …) cover everything.
 *
 * Cost: the ranking reads an atomic per experiment, no lock; then one pass
 * takes each experiment's lock once and briefly — its state, and for a
 * shown one its summary, whose δᶜ exp_summary_locked caches per version —
 * so a scrape of 10,000 quiet experiments computes no statistics at all.
 */

struct shown {
    const struct exp *x; /* a reference of the pass's list */
    struct exp_summary s;
    int blind; /* blinded for this scrape: no δᶜ (api/blind.c) */
};

struct recent {
    int64_t t;
    size_t i;
    const char *id;
};

/* a before b: more recent, ties by id (unique: a total order) */
static int before(const struct recent *a, const struct recent *b)
{
    if (a->t != b->t)
        return a->t > b->t;
    return strcmp(a->id, b->id) < 0;
}

/* Reorder r[0..n) so that its k first are the k most recent (k < n), in
 * linear time on average: a quickselect, since a full sort of 10⁴
 * experiments would cost more than the rest of the scrape. */
static void select_recent(struct recent *r, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        struct recent pivot = r[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (before(&r[i], &pivot))
                i++;
            while (before(&pivot, &r[j]))
                j--;
            if (i <= j) {
                struct recent t = r[i];
                r[i] = r[j];
                r[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        /* r[lo..j] precede r[i..hi]; between them, the pivot's equals */
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* Mark in show[] (n entries) the `want` most recently active of all[]. */
static int choose(struct exp *const *all, size_t n, size_t want, unsigned char *show)
{
    if (n <= want) {
        memset(show, 1, n);
        return 0;
    }
    memset(show, 0, n);
    if (want == 0)
        return 0;
    struct recent *r = calloc(n, sizeof *r);
    if (r == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        r[i] = (struct recent){exp_last_event_ms(all[i]), i, exp_id(all[i])};
    select_recent(r, n, want);
    for (size_t k = 0; k < want; k++)
        show[r[k].i] = 1;
    free(r);
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(exp_id(((const struct shown *)a)->x), exp_id(((const struct shown *)b)->x));
}

/* One sample per shown experiment: name{experiment="id"} value (%.15g: a
 * timestamp in seconds keeps its milliseconds).
 * Ids match [A-Za-z0-9_.-] (exp/config.c): no escaping needed. */
static void per_exp(struct buf *b, const struct shown *sh, size_t n, const char *name,
                    const char *type, const char *help, double (*value)(const struct shown *),
                    int (*present)(const struct shown *))
{
    header(b, name, type, help);
    for (size_t i = 0; i < n; i++)
        if (present == NULL || present(&sh[i]))
            buf_printf(b, "banditd_%s{experiment=\"%s\"} %.15g\n", name, exp_id(sh[i].x),
                       value(&sh[i]));
}

static double v_pulls(const struct shown *s)
{
    return (double)s->s.pulls;
}
static double v_handed_out(const struct shown *s)
{
    return (double)s->s.handed_out;
}
static double v_budget(const struct shown *s)
{
    return (double)s->s.budget;
}
static int has_budget(const struct shown *s)
{
    return s->s.budget > 0;
}
static double v_pending(const struct shown *s)
{
    return (double)s->s.pending;
}
static double v_delta_c(const struct shown *s)
{
    return s->s.delta_c;
}
static int not_blind(const struct shown *s)
{
    return !s->blind;
}
static double v_delta(const struct shown *s)
{
    return s->s.delta;
}
static double v_bandits(const struct shown *s)
{
    return (double)s->s.bandits;
}
static double v_bandits_done(const struct shown *s)
{
    return (double)s->s.bandits_done;
}
static double v_last_event(const struct shown *s)
{
    return (double)exp_last_event_ms(s->x) / 1000.0;
}

static void render_shown(struct buf *b, const struct shown *sh, size_t n)
{
    header(b, "experiment_info", "gauge",
           "1 for each experiment shown (at most --metrics-experiments, the most recently "
           "active): its policy and mode.");
    for (size_t i = 0; i < n; i++)
        buf_printf(b, "banditd_experiment_info{experiment=\"%s\",policy=\"%s\",mode=\"%s\"} 1\n",
                   exp_id(sh[i].x), exp_cfg(sh[i].x)->policy->name,
                   sh[i].s.budget > 0 ? "fixed_budget" : "fixed_confidence");
    header(b, "experiment_state", "gauge", "1 for the experiment's state, 0 for the others.");
    for (size_t i = 0; i < n; i++)
        for (int st = 0; st < EXP_N_STATES; st++)
            buf_printf(b, "banditd_experiment_state{experiment=\"%s\",state=\"%s\"} %d\n",
                       exp_id(sh[i].x), exp_state_name((enum exp_state)st),
                       (int)sh[i].s.state == st);
    header(b, "experiment_stop_reason", "gauge",
           "1 for a stopped experiment's reason: confidence, budget, manual or policy.");
    for (size_t i = 0; i < n; i++)
        if (sh[i].s.stop_reason != NULL)
            buf_printf(b, "banditd_experiment_stop_reason{experiment=\"%s\",reason=\"%s\"} 1\n",
                       exp_id(sh[i].x), sh[i].s.stop_reason);
    per_exp(b, sh, n, "experiment_pulls_total", "counter", "Rewarded pulls of the experiment.",
            v_pulls, NULL);
    per_exp(b, sh, n, "experiment_handed_out_total", "counter",
            "Pulls handed out (rewarded, pending or expired): what a budget counts.", v_handed_out,
            NULL);
    per_exp(b, sh, n, "experiment_budget", "gauge",
            "The budget of a fixed-budget experiment, in pulls handed out.", v_budget, has_budget);
    per_exp(b, sh, n, "experiment_pending", "gauge", "Pulls awaiting their reward.", v_pending,
            NULL);
    per_exp(b, sh, n, "experiment_delta_c", "gauge",
            "The largest δᶜ over the experiment's bandits: a bound on the probability that "
            "a recommendation is wrong.",
            v_delta_c, not_blind);
    per_exp(b, sh, n, "experiment_delta", "gauge", "The goal's δ (a confidence stop needs δᶜ ≤ δ).",
            v_delta, NULL);
    per_exp(b, sh, n, "experiment_bandits", "gauge", "Bandits of the experiment.", v_bandits, NULL);
    per_exp(b, sh, n, "experiment_bandits_done", "gauge",
            "Bandits that get no more pulls (decided, out of budget, or stopped).", v_bandits_done,
            NULL);
    per_exp(b, sh, n, "experiment_last_event_timestamp_seconds", "gauge",
            "Unix time of the experiment's latest event (its creation before any): what "
            "ranks experiments for --metrics-experiments.",
            v_last_event, NULL);
}

static void render_experiments(struct buf *b, int see_blinded)
{
    size_t want = atomic_load(&g_shown_max);
    size_t cap = exp_count() + 64, n = 0, nsh = 0;
    size_t states[EXP_N_STATES] = {0}, omitted[EXP_N_STATES] = {0};
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    struct exp **all = calloc(cap, sizeof *all);
    unsigned char *show = calloc(cap, 1);
    struct shown *sh = calloc((want < cap ? want : cap) + 1, sizeof *sh);
    if (all == NULL || show == NULL || sh == NULL) {
        b->failed = 1;
        goto out;
    }
    n = exp_all(all, cap);
    if (choose(all, n, want, show) != 0) {
        b->failed = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        exp_lock(all[i]);
        if (exp_corrupt(all[i]) == NULL) { /* counted apart: experiments_corrupt */
            enum exp_state st = exp_get_state(all[i]);
            states[st]++;
            if (show[i]) {
                sh[nsh].x = all[i];
                sh[nsh].blind = !see_blinded && exp_cfg(all[i])->design_blinded;
                exp_summary_locked(all[i], &sh[nsh++].s);
            } else {
                omitted[st]++;
            }
        }
        exp_unlock(all[i]);
    }
    header(b, "experiments", "gauge", "Experiments by state.");
    for (int st = 0; st < EXP_N_STATES; st++)
        buf_printf(b, "banditd_experiments{state=\"%s\"} %zu\n", exp_state_name((enum exp_state)st),
                   states[st]);
    header(b, "metrics_experiments_max", "gauge",
           "--metrics-experiments: experiments shown with series of their own.");
    buf_printf(b, "banditd_metrics_experiments_max %zu\n", want);
    header(b, "experiments_omitted", "gauge",
           "Experiments past --metrics-experiments (the least recently active): no series of "
           "their own, counted here by state.");
    for (int st = 0; st < EXP_N_STATES; st++)
        buf_printf(b, "banditd_experiments_omitted{state=\"%s\"} %zu\n",
                   exp_state_name((enum exp_state)st), omitted[st]);
    qsort(sh, nsh, sizeof *sh, by_id); /* a stable order from scrape to scrape */
    render_shown(b, sh, nsh);
out:
    for (size_t i = 0; i < n; i++)
        exp_put(all[i]);
    free(all);
    free(show);
    free(sh);
}

static void render_store(struct buf *b, struct store *st)
{
    struct store_stats s;
    if (st == NULL)
        return;
    store_get_stats(st, &s);
    header(b, "store_commits_total", "counter", "Group commits (transactions) of the writer.");
    buf_printf(b, "banditd_store_commits_total %llu\n", (unsigned long long)s.commits);
    header(b, "store_writes_total", "counter", "Submissions (one request's writes) committed.");
    buf_printf(b, "banditd_store_writes_total %llu\n", (unsigned long long)s.writes);
    header(b, "store_commit_failures_total", "counter",
           "Commits that failed (full or read-only disk, I/O error); their requests got 503.");
    buf_printf(b, "banditd_store_commit_failures_total %llu\n",
               (unsigned long long)s.failed_commits);
    /* The store sums the time of every commit attempt, failed ones too. */
    header(b, "store_commit_duration_seconds", "summary",
           "Time the writer spends per commit attempt (successful or failed).");
    buf_printf(b, "banditd_store_commit_duration_seconds_sum %.6f\n",
               (double)s.commit_us_total / 1e6);
    buf_printf(b, "banditd_store_commit_duration_seconds_count %llu\n",
               (unsigned long long)s.commits + s.failed_commits);
    header(b, "store_queue_depth", "gauge", "Submissions waiting for the writer.");
    buf_printf(b, "banditd_store_queue_depth %llu\n", (unsigned long long)s.queue_depth);
}

/* Webhooks (notify.h): the delivery thread's counters and the outbox. */
static void render_webhooks(struct buf *b)
{
    struct notify_stats s;
    notify_get_stats(&s);
    header(b, "webhook_deliveries_total", "counter",
           "Webhook deliveries finished: delivered (a 2xx), or failed after their last attempt.");
    buf_printf(b, "banditd_webhook_deliveries_total{result=\"delivered\"} %llu\n",
               (unsigned long long)s.delivered);
    buf_printf(b, "banditd_webhook_deliveries_total{result=\"failed\"} %llu\n",
               (unsigned long long)s.failed);
    header(b, "webhook_attempts_total", "counter", "Webhook HTTP attempts made.");
    buf_printf(b, "banditd_webhook_attempts_total %llu\n", (unsigned long long)s.attempts);
    header(b, "webhook_retries_total", "counter",
           "Webhook attempts that failed and were scheduled again (with backoff).");
    buf_printf(b, "banditd_webhook_retries_total %llu\n", (unsigned long long)s.retried);
    header(b, "webhook_refused_total", "counter",
           "Webhook attempts refused before connecting: the target resolved to a forbidden "
           "address (loopback without --webhook-allow-loopback, link-local, ...).");
    buf_printf(b, "banditd_webhook_refused_total %llu\n", (unsigned long long)s.refused);
    header(b, "webhook_attempts_in_flight", "gauge", "Webhook attempts running now.");
    buf_printf(b, "banditd_webhook_attempts_in_flight %llu\n", (unsigned long long)s.in_flight);
    if (s.depth >= 0) {
        header(b, "webhook_outbox_pending", "gauge",
               "Webhook deliveries waiting in the outbox (not yet delivered nor failed).");
        buf_printf(b, "banditd_webhook_outbox_pending %lld\n", (long long)s.depth);
    }
}

int metrics_render(struct store *st, int see_blinded, char **out, size_t *len)
{
    struct buf b;
    buf_init(&b, MAX_TEXT + atomic_load(&g_shown_max) * MAX_TEXT_PER_EXPERIMENT);
    render_requests(&b);
    render_domain(&b);
    render_experiments(&b, see_blinded);
    render_store(&b, st);
    render_webhooks(&b);
    header(&b, "api_keys", "gauge", "Usable (unrevoked) API keys loaded.");
    buf_printf(&b, "banditd_api_keys %zu\n", auth_active_keys());
    header(&b, "auth_enabled", "gauge", "1 when requests need an API key.");
    buf_printf(&b, "banditd_auth_enabled %d\n", auth_enabled() ? 1 : 0);
    header(&b, "ready", "gauge", "1 when the daemon serves (experiments loaded, not stopping).");
    buf_printf(&b, "banditd_ready %d\n", http_ready() ? 1 : 0);
    int64_t start = (int64_t)atomic_load(&g_start_s);
    if (start > 0) {
        header(&b, "start_time_seconds", "gauge", "Unix time the daemon started serving.");
        buf_printf(&b, "banditd_start_time_seconds %lld\n", (long long)start);
    }
    *out = buf_detach(&b, len);
    return *out != NULL ? 0 : -1;
}
