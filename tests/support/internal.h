/*
 * internal.h — what the harness's own files share (not for tests).
 */
#ifndef BANDITD_TESTS_SUPPORT_INTERNAL_H
#define BANDITD_TESTS_SUPPORT_INTERNAL_H

#include "tests/support/harness.h"

/* curl_global_init once per process. */
void tharness_global_init(void);
/* Drop the kept-alive connection (before the daemon goes away). */
void tclient_disconnect(struct tclient *c);
/* Whether requests to d use https, and the CA to verify against (NULL:
 * the system's). */
int tdaemon_https(const struct tdaemon *d, const char **cafile);
/* The daemon's own client. */
struct tclient *tdaemon_client(struct tdaemon *d);

#endif
