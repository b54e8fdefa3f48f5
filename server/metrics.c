/*
 * metrics.c — request counters. Placeholder until /metrics lands.
 */
#include "server/metrics.h"

void metrics_request(const char *route, const char *method, unsigned status, double ms)
{
    (void)route;
    (void)method;
    (void)status;
    (void)ms;
}
