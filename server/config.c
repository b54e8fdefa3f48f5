/*
 * config.c — flags and the config file. Every setting has one entry in the
 * table below, which drives parsing, the config file and --help alike.
 */
#include "server/config.h"

#include "base/version.h"
#include "api/metrics.h"
#include "policies/engine.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind { K_STR, K_TEXT, K_UINT, K_SIZE, K_BYTES, K_FLAG, K_SYNC, K_LISTEN }; /* K_STR: a path */

struct opt {
    const char *name;
    enum kind kind;
    size_t off, len;
    const char *help;
    unsigned long long min, max; /* K_UINT, K_SIZE: accepted range; max 0: no bound */
};

#define OFF(f) offsetof(struct config, f)
#define LIM(f) (offsetof(struct config, limits) + offsetof(struct exp_limits, f))
#define WH(f) (offsetof(struct config, webhooks) + offsetof(struct notify_config, f))

static const struct opt opts[] = {
    {"listen", K_LISTEN, 0, 0,
     "HOST:PORT to listen on, HOST an IPv4 address, [IPv6] or a name (default 127.0.0.1:8080; "
     "port 0: any)",
     0, 0},
    {"db", K_STR, OFF(db), sizeof(((struct config *)0)->db),
     "SQLite file, or a postgresql:// URI: a PostgreSQL database (default var/banditd.db)", 0, 0},
    {"db-url", K_TEXT, OFF(db), sizeof(((struct config *)0)->db),
     "postgresql://[user[:password]@][host][:port]/dbname[?param=value…]: the same as --db with "
     "a URI (libpq's parameters; a password is better in ~/.pgpass or PGPASSWORD)",
     0, 0},
    {"advertise", K_TEXT, OFF(advertise), sizeof(((struct config *)0)->advertise),
     "this daemon's URL as the others name it to clients when it owns an experiment they are "
     "asked for (several daemons on one PostgreSQL; default http://LISTEN)",
     0, 0},
    {"threads", K_UINT, OFF(threads), 0, "HTTP worker threads (default 0: number of cores)", 0,
     1024},
    {"sync", K_SYNC, 0, 0,
     "full: fsync the WAL at every commit (an acknowledged write survives power loss); normal: "
     "no fsync at commit: survives a crash of the daemon, but a power loss or OS crash can lose "
     "every write since the last checkpoint (up to 1000 WAL pages: hours of writes on a quiet "
     "system) (default full); SQLite only: PostgreSQL commits with synchronous_commit on",
     0, 0},
    {"insecure", K_FLAG, OFF(insecure), 0, "allow a non-loopback address while no API key exists",
     0, 0},
    {"tls-cert", K_STR, OFF(tls_cert), sizeof(((struct config *)0)->tls_cert),
     "PEM certificate: serve HTTPS", 0, 0},
    {"tls-key", K_STR, OFF(tls_key), sizeof(((struct config *)0)->tls_key), "PEM private key", 0,
     0},
    {"tls-priorities", K_TEXT, OFF(tls_priorities), sizeof(((struct config *)0)->tls_priorities),
     "GnuTLS priority string (default: TLS 1.2+, forward secrecy, AEAD only)", 0, 0},
    {"log-requests", K_FLAG, OFF(log_requests), 0, "one JSON line per request on stderr", 0, 0},
    {"metrics-need-key", K_FLAG, OFF(metrics_need_key), 0, "put /metrics behind the read scope", 0,
     0},
    {"metrics-experiments", K_SIZE, OFF(metrics_experiments), 0,
     "experiments with series of their own in /metrics, the most recently active; the others "
     "are counted by state (default 100; 0: none)",
     0, METRICS_EXPERIMENTS_MAX},
    {"key-refresh", K_UINT, OFF(key_refresh_s), 0,
     "seconds between re-reads of the API keys (default 2; 0: only on SIGHUP)", 0, 86400},
    {"max-body", K_SIZE, OFF(max_body), 0, "largest request body in bytes (default 1048576)", 64,
     1ULL << 30},
    {"max-connections", K_UINT, OFF(max_connections), 0,
     "concurrent connections; past it a new one hears 503 at once (default 1024)", 1, 1000000},
    {"max-connections-per-ip", K_UINT, OFF(max_connections_per_ip), 0,
     "concurrent connections from one client address; past it 429 (default 64; 0: no cap)", 0,
     1000000},
    {"timeout", K_UINT, OFF(timeout_s), 0,
     "seconds a connection may stay idle or stall mid-request (default 30)", 1, 86400},
    {"request-timeout", K_UINT, OFF(request_timeout_s), 0,
     "seconds to receive a whole request (line, headers, body) from when its connection is "
     "ready for it (default 30; 0: no limit)",
     0, 86400},
    {"cors-origins", K_TEXT, OFF(cors_origins), sizeof(((struct config *)0)->cors_origins),
     "origins whose web pages may call the API (CORS), comma-separated scheme://host[:port], or "
     "* for any (default: none)",
     0, 0},
    {"rate-limit", K_UINT, OFF(rate_limit), 0,
     "requests a second per API key, or per client address for requests without a key "
     "(an IPv6 address by its /64); past it 429 with Retry-After (default 0: no limit)",
     0, 1000000},
    {"rate-burst", K_UINT, OFF(rate_burst), 0,
     "requests a caller may send at once above --rate-limit (default 0: the rate-limit)", 0,
     1000000},
    {"max-experiments", K_SIZE, LIM(max_experiments), 0, "experiments (default 10000)", 1,
     100000000},
    {"max-bandits", K_SIZE, LIM(max_bandits), 0, "bandits per experiment (default 256)", 1,
     ENGINE_MAX_BANDITS},
    {"max-arms", K_SIZE, LIM(max_arms), 0, "arms per bandit (default 1024)", 2, ENGINE_MAX_ARMS},
    {"max-batch", K_SIZE, LIM(max_batch), 0, "items per reward/observation batch (default 1000)", 1,
     1000000},
    {"max-count", K_SIZE, LIM(max_count), 0, "assignments per request (default 100)", 1, 1000000},
    {"max-pending", K_SIZE, LIM(max_pending), 0,
     "outstanding assignments per experiment (default 1000000)", 1, 1ULL << 32},
    {"history-points", K_SIZE, LIM(history_points), 0,
     "history points kept per experiment (default 256)", 2, 65536},
    {"snapshot-every", K_SIZE, LIM(snapshot_every), 0,
     "events between two snapshots of an experiment's state, so that a start or a takeover "
     "replays only the events after the latest, and one of each at a clean shutdown; or, when "
     "more, half as many as its expiry queue holds (between half and all of its pending "
     "assignments) (default 10000; 0: none written)",
     0, 1ULL << 40},
    {"no-snapshots", K_FLAG, LIM(no_snapshots), 0,
     "neither read nor write snapshots: every load replays the whole event log", 0, 0},
    {"max-memory", K_BYTES, LIM(max_memory), 0,
     "resident memory past which new experiments (507) and assignments (503) are refused; "
     "K, M, G suffixes (default 3/4 of the machine's or the cgroup's memory; 0: no cap)",
     0, 0},
    /* webhooks' delivery (notify/notify.h) */
    {"webhook-attempts", K_UINT, WH(attempts), 0,
     "attempts per webhook delivery before it is marked failed (default 12)", 1, 100},
    {"webhook-backoff", K_UINT, WH(backoff_ms), 0,
     "milliseconds before a webhook's first retry, doubled at each retry, with jitter "
     "(default 10000)",
     1, 86400000},
    {"webhook-backoff-max", K_UINT, WH(backoff_max_ms), 0,
     "longest wait between two attempts of a webhook, in milliseconds (default 3600000)", 1,
     86400000},
    {"webhook-timeout", K_UINT, WH(timeout_ms), 0,
     "milliseconds one webhook attempt may take, connection included (default 10000)", 1, 600000},
    {"webhook-concurrency", K_UINT, WH(concurrency), 0,
     "webhook attempts in flight at once (default 16)", 1, 1024},
    {"webhook-allow-loopback", K_FLAG, WH(allow_loopback), 0,
     "let webhooks target loopback addresses (refused by default; link-local, multicast and "
     "unspecified addresses always are)",
     0, 0},
    {NULL, K_STR, 0, 0, NULL, 0, 0},
};

/* 3/4 of the memory this process may use: the machine's, or its cgroup's
 * limit when lower (a container). 0 when unknown (no cap). */
static size_t default_max_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    unsigned long long total =
        pages > 0 && page > 0 ? (unsigned long long)pages * (unsigned long long)page : 0;
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f != NULL) {
        char line[64];
        if (fgets(line, sizeof line, f) != NULL) {
            char *end;
            unsigned long long lim = strtoull(line, &end, 10);
            /* "max" (no limit) is no number: end stays at the start */
            if (end != line && lim > 0 && (total == 0 || lim < total))
                total = lim;
        }
        (void)fclose(f);
    }
    return (size_t)(total / 4 * 3);
}

void config_defaults(struct config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->host, sizeof c->host, "127.0.0.1");
    c->port = 8080;
    snprintf(c->db, sizeof c->db, "var/banditd.db");
    c->sync = STORE_SYNC_FULL;
    c->max_body = 1 << 20;
    c->max_connections = 1024;
    c->max_connections_per_ip = 64;
    c->timeout_s = 30;
    c->request_timeout_s = 30;
    c->key_refresh_s = 2;
    c->metrics_experiments = METRICS_EXPERIMENTS_DEFAULT;
    c->limits.max_experiments = 10000;
    c->limits.max_bandits = 256;
    c->limits.max_arms = 1024;
    c->limits.max_batch = 1000;
    c->limits.max_count = 100;
    c->limits.max_pending = 1000000;
    c->limits.history_points = 256;
    c->limits.snapshot_every = 10000;
    c->limits.max_memory = default_max_memory();
    notify_defaults(&c->webhooks);
}

const char *config_option_name(size_t i)
{
    return i < sizeof opts / sizeof opts[0] ? opts[i].name : NULL;
}

static const char *metavar(enum kind k)
{
    switch (k) {
    case K_STR:
        return "FILE";
    case K_TEXT:
        return "STRING";
    case K_UINT:
    case K_SIZE:
        return "N";
    case K_BYTES:
        return "BYTES";
    case K_SYNC:
        return "full|normal";
    case K_LISTEN:
        return "HOST:PORT";
    case K_FLAG:
        break;
    }
    return "";
}

void config_usage(void)
{
    printf("usage: banditd [options]           serve the HTTP API\n"
           "       banditd keys create --db PATH --scope SCOPE[,SCOPE] [--name NAME] [--stdin]\n"
           "       banditd keys list --db PATH [--json]\n"
           "       banditd keys revoke ID --db PATH\n"
           "       banditd backup --db PATH --to FILE\n"
           "\n"
           "Scopes: admin (everything), assign, report, read. While no key exists the API\n"
           "is open and only a loopback address is allowed (unless --insecure).\n"
           "Signals: SIGTERM/SIGINT finish in-flight requests and exit; SIGHUP re-reads keys.\n"
           "\n"
           "options (each also a `name = value` line in the --config FILE; flags win):\n"
           "  --%-28s %s\n"
           "  --%-28s %s\n",
           "config FILE", "read settings from FILE first", "version",
           "print the version (" BANDITD_VERSION ") and exit");
    for (const struct opt *o = opts; o->name != NULL; o++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->kind == K_FLAG ? "" : " ",
                 metavar(o->kind));
        printf("  --%-28s %s\n", left, o->help);
    }
    printf("\nSee banditd(8) and docs/operations.md.\n");
}

/* HOST:PORT, HOST an IPv4 address, a name, or an IPv6 address in brackets
 * ("[::1]:8080": without them its last group would read as the port). The
 * name is resolved when the daemon starts (http_addr_resolve). */
static int parse_listen(struct config *c, const char *v, char *err, size_t errlen)
{
    const char *host = v, *colon;
    size_t hlen;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (close == NULL || close[1] != ':') {
            snprintf(err, errlen, "--listen: expected [IPv6]:PORT, got %s", v);
            return -1;
        }
        host = v + 1;
        hlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strchr(v, ':');
        if (colon != NULL && strchr(colon + 1, ':') != NULL) {
            snprintf(err, errlen, "--listen: put an IPv6 address in brackets: [%s]:PORT", v);
            return -1;
        }
        hlen = colon != NULL ? (size_t)(colon - v) : 0;
    }
    if (colon == NULL || hlen == 0 || hlen >= sizeof c->host) {
        snprintf(err, errlen,
                 "--listen: expected HOST:PORT (127.0.0.1:8080, [::1]:8080, localhost:8080), "
                 "got %s",
                 v);
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (errno != 0 || colon[1] == '\0' || colon[1] == '-' || *end != '\0' || port > 65535) {
        snprintf(err, errlen, "--listen: bad port in %s", v);
        return -1;
    }
    memcpy(c->host, host, hlen);
    c->host[hlen] = '\0';
    c->port = (unsigned)port;
    return 0;
}

static int set(struct config *c, const struct opt *o, const char *v, char *err, size_t errlen)
{
    char *p = (char *)c + o->off;
    char *end;
    switch (o->kind) {
    case K_STR:
    case K_TEXT:
        if (strlen(v) >= o->len) {
            snprintf(err, errlen, "--%s: too long", o->name);
            return -1;
        }
        memcpy(p, v, strlen(v) + 1);
        return 0;
    case K_FLAG:
        *(int *)p =
            v == NULL || strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0;
        return 0;
    case K_UINT:
    case K_SIZE: {
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno != 0 || *v == '\0' || *end != '\0' || v[0] == '-') {
            snprintf(err, errlen, "--%s: not a non-negative integer: %s", o->name, v);
            return -1;
        }
        if (n < o->min || (o->max != 0 && n > o->max) ||
            (o->kind == K_UINT && n > (unsigned long long)UINT_MAX)) {
            snprintf(err, errlen, "--%s: %s is out of range [%llu, %llu]", o->name, v, o->min,
                     o->max ? o->max : (unsigned long long)UINT_MAX);
            return -1;
        }
        if (o->kind == K_UINT)
            *(unsigned *)p = (unsigned)n;
        else
            *(size_t *)p = (size_t)n;
        return 0;
    }
    case K_BYTES: {
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        if (shift != 0)
            end++;
        if (errno != 0 || *v == '\0' || *end != '\0' || v[0] == '-' || n > (SIZE_MAX >> shift)) {
            snprintf(err, errlen, "--%s: not a byte count (N, NK, NM or NG): %s", o->name, v);
            return -1;
        }
        *(size_t *)p = (size_t)(n << shift);
        return 0;
    }
    case K_SYNC:
        if (strcmp(v, "full") == 0)
            c->sync = STORE_SYNC_FULL;
        else if (strcmp(v, "normal") == 0)
            c->sync = STORE_SYNC_NORMAL;
        else {
            snprintf(err, errlen, "--sync: must be full or normal");
            return -1;
        }
        return 0;
    case K_LISTEN:
        return parse_listen(c, v, err, errlen);
    }
    return -1;
}

static const struct opt *find(const char *name)
{
    for (const struct opt *o = opts; o->name != NULL; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

static int read_file(struct config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "--config %s: %s", path, strerror(errno));
        return -1;
    }
    char line[2048];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#' || *s == '\n' || *s == '\0')
            continue;
        char *eq = strchr(s, '=');
        char *name = s, *val = NULL;
        if (eq != NULL) {
            *eq = '\0';
            val = eq + 1;
            while (*val == ' ' || *val == '\t')
                val++;
            val[strcspn(val, "\r\n")] = '\0';
            for (char *t = val + strlen(val); t > val && (t[-1] == ' ' || t[-1] == '\t'); t--)
                t[-1] = '\0';
        }
        for (char *t = name + strlen(name);
             t > name && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\n' || t[-1] == '\r'); t--)
            t[-1] = '\0';
        const struct opt *o = find(name);
        if (o == NULL) {
            snprintf(err, errlen, "%s:%d: unknown setting \"%s\"", path, lineno, name);
            rc = -1;
        } else if (val == NULL && o->kind != K_FLAG) {
            snprintf(err, errlen, "%s:%d: %s needs a value", path, lineno, name);
            rc = -1;
        } else {
            rc = set(c, o, val, err, errlen);
        }
    }
    (void)fclose(f);
    return rc;
}

int config_parse_args(struct config *c, int argc, char **argv, char *err, size_t errlen)
{
    /* The file first, so that flags override it. */
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--config needs a file");
                return -1;
            }
            if (read_file(c, argv[i + 1], err, errlen) != 0)
                return -1;
        }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            config_usage();
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            printf("banditd %s\n", BANDITD_VERSION);
            return 1;
        }
        if (strcmp(a, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument: %s (see --help)", a);
            return -1;
        }
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(a + 2, '=');
        size_t nlen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nlen >= sizeof name) {
            snprintf(err, errlen, "unknown option %s (see --help)", a);
            return -1;
        }
        memcpy(name, a + 2, nlen);
        name[nlen] = '\0';
        const struct opt *o = find(name);
        if (o == NULL) {
            snprintf(err, errlen, "unknown option %s (see --help)", a);
            return -1;
        }
        if (eq != NULL)
            val = eq + 1;
        else if (o->kind != K_FLAG) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--%s needs a value", name);
                return -1;
            }
            val = argv[++i];
        }
        if (set(c, o, val, err, errlen) != 0)
            return -1;
    }
    if ((c->tls_cert[0] != '\0') != (c->tls_key[0] != '\0')) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together");
        return -1;
    }
    return 0;
}
