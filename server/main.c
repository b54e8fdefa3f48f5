/*
 * main.c — banditd: parse the settings, open the store, replay every
 * experiment, serve HTTP until SIGTERM/SIGINT, then finish in-flight
 * requests, flush the writer and exit 0. Meanwhile this thread re-reads the
 * API keys on SIGHUP and every --key-refresh seconds. `banditd keys ...` and
 * `banditd backup ...` run the offline tools of cli.c instead.
 */
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/metrics.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/version.h"
#include "exp/exp.h"
#include "http/http.h"
#include "notify/notify.h"
#include "server/cli.h"
#include "server/config.h"
#include "store/store.h"

/* Read a whole file (new buffer, NUL-terminated) or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    struct buf b;
    buf_init(&b, (size_t)16 << 20); /* a certificate or key: far below */
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_put(&b, chunk, n);
    (void)fclose(f);
    size_t len;
    return buf_detach(&b, &len);
}

/* Room for every connection the transport may hold (admitted, and refused
 * ones on their way out: up to 2 × --max-connections + 64) plus the
 * store's files: raise the soft limit on descriptors towards the hard one
 * when it is lower (1024 is a common default; past it accept() fails and
 * clients wait in the backlog). */
static void raise_fd_limit(unsigned max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)max_connections * 2 + 128;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
            log_warn("open files limited to %llu (ulimit -n; --max-connections %u wants %llu)",
                     (unsigned long long)(rl.rlim_cur > was ? rl.rlim_cur : was), max_connections,
                     (unsigned long long)want);
    }
}

/* Create the directory holding path if it is missing (./var on first run). */
static void ensure_parent_dir(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return;
    *slash = '\0';
    mkdir(dir, 0750);
}

/* Re-read the API keys; loud: say so even when nothing changed (SIGHUP). */
static void refresh_keys(int loud)
{
    int rc = auth_reload();
    if (rc < 0)
        log_warn("cannot re-read the API keys (%s); the previous ones stay in force",
                 store_strerror(-rc));
    else if (rc == 1 || loud)
        log_info("API keys %s: %zu usable, API %s", rc == 1 ? "changed" : "unchanged",
                 auth_active_keys(), auth_enabled() ? "closed (keys required)" : "open");
}

/* Serve until SIGTERM/SIGINT; returns the signal. */
static int wait_for_stop(const sigset_t *set, unsigned refresh_s)
{
    for (;;) {
        int sig = 0;
        if (refresh_s > 0) {
            struct timespec ts = {.tv_sec = (time_t)refresh_s, .tv_nsec = 0};
            sig = sigtimedwait(set, NULL, &ts);
            if (sig < 0) {
                if (errno == EAGAIN)
                    refresh_keys(0);
                continue;
            }
        } else if (sigwait(set, &sig) != 0) {
            continue;
        }
        if (sig == SIGHUP) {
            refresh_keys(1);
            continue;
        }
        return sig;
    }
}

int main(int argc, char **argv)
{
    char err[512] = "";
    struct config cfg;
    if (argc > 1 && cli_is_command(argv[1]))
        return cli_main(argc - 1, argv + 1);
    /* GSL's default error handler aborts (an allocation failing in
     * gsl_rng_alloc took the daemon down); its callers check results. */
    gsl_set_error_handler_off();
    config_defaults(&cfg);
    int rc = config_parse_args(&cfg, argc - 1, argv + 1, err, sizeof err);
    if (rc == 1)
        return 0;
    if (rc != 0) {
        fprintf(stderr, "banditd: %s\n", err);
        return 2;
    }

    /* Signals are taken by sigwait in this thread only; threads started
     * from here inherit the mask. A client closing early must not kill us. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    (void)signal(SIGPIPE, SIG_IGN);

    /* What was started is stopped at out:, in reverse, on every path. */
    int status = 1; /* 2: a configuration refused; 0 once served and stopped */
    int notifying = 0, registry = 0;
    char *cert = NULL, *key = NULL;
    struct http_server *srv = NULL;
    if (store_target_is_file(cfg.db))
        ensure_parent_dir(cfg.db);
    struct store *st = store_open(cfg.db, cfg.sync, err, sizeof err);
    if (st == NULL || store_serve_exclusive(st, err, sizeof err) != STORE_OK)
        goto fail;
    if (auth_init(st) != 0 || auth_watch(store_file(st)) != 0) {
        snprintf(err, sizeof err, "cannot read API keys");
        goto fail;
    }
    struct http_addr addr;
    if (http_addr_resolve(cfg.host, (uint16_t)cfg.port, &addr, err, sizeof err) != 0) {
        status = 2;
        goto fail;
    }
    if (!auth_enabled() && !http_addr_is_loopback(&addr) && !cfg.insecure) {
        char text[HTTP_ADDR_TEXT];
        http_addr_format(&addr, text, sizeof text);
        snprintf(err, sizeof err,
                 "refusing to listen on %s (%s) with no API key (the API would be open); "
                 "create a key (banditd keys create), listen on a loopback address "
                 "(127.0.0.1, [::1], localhost), or pass --insecure",
                 cfg.host, text);
        status = 2;
        goto fail;
    }
    /* Deliveries start before anything can write an outbox row: its hook
     * is in place for the first commit, and what the last run left pending
     * is resumed. */
    if (notify_start(st, &cfg.webhooks, err, sizeof err) != 0)
        goto fail;
    notifying = 1;
    if (cfg.advertise[0] != '\0')
        store_set_advertise(st, cfg.advertise);
    exp_registry_init(st, &cfg.limits);
    registry = 1;
    if (exp_registry_load(err, sizeof err) != 0)
        goto fail;
    if (cfg.tls_cert[0] != '\0' || cfg.tls_key[0] != '\0') {
        cert = slurp(cfg.tls_cert);
        key = slurp(cfg.tls_key);
        if (cert == NULL || key == NULL) {
            snprintf(err, sizeof err, "cannot read --tls-cert/--tls-key: %s", strerror(errno));
            goto fail;
        }
    }
    raise_fd_limit(cfg.max_connections);
    struct http_config hc = {
        .addr = &addr,
        .threads = cfg.threads,
        .max_body = cfg.max_body,
        .max_connections = cfg.max_connections,
        .max_connections_per_ip = cfg.max_connections_per_ip,
        .connection_timeout_s = cfg.timeout_s,
        .request_timeout_s = cfg.request_timeout_s,
        .log_requests = cfg.log_requests,
        .tls_cert_pem = cert,
        .tls_key_pem = key,
        .tls_priorities = cfg.tls_priorities[0] != '\0' ? cfg.tls_priorities : NULL,
        .routes = api_routes,
        .cors_origins = cfg.cors_origins,
        .rate_per_s = cfg.rate_limit,
        .rate_burst = cfg.rate_burst,
        .admit = auth_admit,
        .observe = metrics_request,
    };
    auth_set_metrics_need_key(cfg.metrics_need_key);
    metrics_set_experiments(cfg.metrics_experiments);
    srv = http_start(&hc, err, sizeof err);
    if (srv == NULL)
        goto fail;
    metrics_start();
    http_set_ready(1);
    char bound[HTTP_ADDR_TEXT];
    http_bound(srv, bound, sizeof bound);
    if (cfg.advertise[0] == '\0') {
        char url[HTTP_ADDR_TEXT + 16];
        snprintf(url, sizeof url, "%s://%s", cert ? "https" : "http", bound);
        store_set_advertise(st, url);
    }
    printf("listening on %s\n", bound);
    if (fflush(stdout) != 0) /* whoever waits for this line will not see it */
        log_warn("stdout: %s", strerror(errno));
    log_info("banditd %s serving %s on %s (db %s, sync %s)", BANDITD_VERSION,
             cert ? "HTTPS" : "HTTP", bound, store_describe(st),
             cfg.sync == STORE_SYNC_FULL ? "full" : "normal");

    int sig = wait_for_stop(&set, cfg.key_refresh_s);
    log_info("signal %d: finishing in-flight requests", sig);
    http_set_ready(0);
    http_stop(srv, 10000);
    if (registry)
        exp_registry_checkpoint();
    status = 0;
    goto out;
fail:
    fprintf(stderr, "banditd: %s\n", err);
out:
    if (registry)
        exp_registry_free();
    if (notifying)
        notify_stop(); /* before the store: its last updates go through the writer's drain */
    if (status == 0) { /* served: what the store did */
        struct store_stats ss;
        store_get_stats(st, &ss);
        log_info("store: %llu commits (%llu failed), %llu writes, %.1f writes per commit, "
                 "%.0f us per commit",
                 (unsigned long long)ss.commits, (unsigned long long)ss.failed_commits,
                 (unsigned long long)ss.writes,
                 ss.commits ? (double)ss.writes / (double)ss.commits : 0.0,
                 (ss.commits + ss.failed_commits) != 0
                     ? (double)ss.commit_us_total / (double)(ss.commits + ss.failed_commits)
                     : 0.0);
    }
    if (st != NULL) {
        auth_free();
        store_close(st);
    }
    free(cert);
    free(key);
    if (status == 0)
        log_info("stopped cleanly");
    return status;
}
