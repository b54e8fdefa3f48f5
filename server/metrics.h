/*
 * metrics.h — counters for /metrics (Prometheus text format).
 */
#ifndef BANDITD_SERVER_METRICS_H
#define BANDITD_SERVER_METRICS_H

/* One served request: route name, method, status, latency in ms. */
void metrics_request(const char *route, const char *method, unsigned status, double ms);

#endif
