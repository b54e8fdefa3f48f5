/*
 * metrics.h — counters for /metrics (Prometheus text exposition format
 * 0.0.4, every name prefixed banditd_).
 *
 * The hot path (one call per request, per assignment batch, per reward) is a
 * few relaxed C11 atomic increments into fixed arrays: no lock, no
 * allocation. Gauges (pending assignments, queue depth, experiments by
 * state, keys) and the per-experiment series (banditd_experiment_*, for at
 * most METRICS_EXPERIMENTS_MAX experiments) are read when /metrics is
 * scraped.
 *
 * Domain counters count decisions when they are made, before their commit:
 * when a commit fails (banditd_store_commit_failures_total) the client gets
 * a 503 and the experiment is reloaded from disk, but the counter keeps the
 * decision. They are for rates and dashboards, not for accounting — the
 * event log is the record.
 */
#ifndef BANDITD_API_METRICS_H
#define BANDITD_API_METRICS_H

#include <stddef.h>

#include "exp/exp.h"
#include "http/http.h"

/* Experiments with series of their own (--metrics-experiments): the most
 * recently active; the others are counted by state. */
#define METRICS_EXPERIMENTS_DEFAULT 100
#define METRICS_EXPERIMENTS_MAX 10000
/* Set it (clamped to METRICS_EXPERIMENTS_MAX; 0: none). */
void metrics_set_experiments(size_t n);

/* The daemon starts serving now (banditd_start_time_seconds). */
void metrics_start(void);

/* One served request: its route (an entry of api_routes, or NULL when no
 * route matched), its status and its latency in ms (the transport's
 * observer). */
void metrics_request(const struct http_route *route, unsigned status, double ms);

/* n assignments handed out; exploit: after the stop (not pulls). */
void metrics_assignments(size_t n, int exploit);
/* One reward report and its outcome. */
void metrics_reward(enum exp_reward_status s);
/* n observations recorded. */
void metrics_observations(size_t n);

/* The exposition text: a new malloc'd buffer in *out (length *len), or −1 on
 * allocation failure. Reads the store and the registry (st may be NULL).
 * see_blinded 0: blinded experiments' δᶜ left out (api/blind.c). */
int metrics_render(struct store *st, int see_blinded, char **out, size_t *len);

#endif
