/*
 * config.h — the daemon's settings: defaults, command-line flags and the
 * config file (one `name = value` per line, the flag names without "--";
 * flags given on the command line win over the file).
 */
#ifndef BANDITD_SERVER_CONFIG_H
#define BANDITD_SERVER_CONFIG_H

#include <stddef.h>

#include "exp/config.h"
#include "notify/notify.h"
#include "store/store.h"

struct config {
    char host[256]; /* as given, brackets of an IPv6 address removed */
    unsigned port;
    char db[1024];
    char advertise[256]; /* this daemon's URL for the others' answers; "": http://LISTEN */
    unsigned threads;
    enum store_sync sync;
    int insecure;
    char tls_cert[1024];
    char tls_key[1024];
    char tls_priorities[512]; /* "": the transport's default */
    int log_requests;
    int metrics_need_key;
    size_t metrics_experiments; /* experiments with series of their own in /metrics */
    unsigned key_refresh_s;     /* re-read API keys every N s; 0: only on SIGHUP */
    size_t max_body;
    unsigned max_connections;
    unsigned max_connections_per_ip; /* 0: no cap per client address */
    unsigned timeout_s;
    unsigned request_timeout_s; /* 0: no deadline for a whole request */
    char cors_origins[2048];    /* origins whose pages may call the API; "": none */
    unsigned rate_limit;        /* requests a second per key or address; 0: none */
    unsigned rate_burst;        /* 0: rate_limit */
    struct exp_limits limits;
    struct notify_config webhooks; /* the webhook-* settings */
};

/* Defaults. */
void config_defaults(struct config *c);

/* Apply argv (after the program name) over c, reading --config FILE first,
 * then check the result (ranges, --tls-cert with --tls-key). Returns 0, 1
 * when --help or --version was given (printed), or −1 with a message in
 * err. */
int config_parse_args(struct config *c, int argc, char **argv, char *err, size_t errlen);

/* The usage text. */
void config_usage(void);

/* Name of the i-th setting (a flag without "--", a config file key), NULL
 * past the last: lets tests check that the docs cover every setting. */
const char *config_option_name(size_t i);

#endif
