/*
 * load.c — end-to-end benchmarks of the daemon (`make bench` runs all three):
 *
 *   load throughput [options]   wrk against banditd and bench/bare
 *   load memory [options]       resident size per experiment and per
 *                               pending assignment
 *   load log [options]          export, re-sent rewards and delete on an
 *                               experiment of 10⁶ events
 *   load metrics [options]      a scrape of /metrics with 10⁴ experiments
 *   load blocks [options]       visitors one client serves per second with
 *                               assignment blocks of 1, 10 and 100
 *   load pg [options]           PostgreSQL against SQLite in the same run
 *   load cluster [options]      1, 2 and 3 daemons on one PostgreSQL
 *   load pending [options]      assignments/s with ~3·10⁵ pending against ~0
 *
 * throughput: starts the bare libmicrohttpd + jansson server (bench/bare.c,
 * the stack's ceiling) and banditd on a fresh database, both on free ports
 * with the same thread pool, then for each connection count and endpoint
 * (assignments, rewards — each for a fresh assignment, created beforehand —
 * observations, status) runs wrk -t2 in pairs: the ceiling, then at once
 * the daemon. Figures are medians over the pairs and each ratio the median
 * of the per-pair ratios, so that a neighbour's load, which moves the
 * ceiling by 2x within a minute here, cancels out as far as it can. A
 * markdown table goes to stdout and the output file, with the load average
 * before and after. Exit status 0 even when a target is missed (the table
 * says so); 1 on setup failure.
 *
 * memory: starts banditd, reads VmRSS from /proc/PID/status, creates E
 * experiments (3 arms) over HTTP, reads it again, creates A pending
 * assignments spread evenly over them (count=100 per request), reads it
 * again, and reports the differences per experiment and per assignment.
 *
 * log: issue 12's work that grows with the log. Fills experiment `big`
 * with E events (assignments, `--batch` per request, each batch rewarded at
 * once) and `small` with S, restarts the daemon (replay timed; nothing of
 * the logs is left in memory), then times: the export of each (µs per row),
 * the incremental export of big's latest batch (?after=),
 * re-sending the rewards of the first and of the latest batch (duplicates,
 * looked up on disk), an assignment on `big` sent during each re-send, and
 * the DELETE of `big` (against that of an empty experiment) with
 * assignments on `small` until its log is purged. Targets are ratios within
 * the run. Options: --events E (1000000) --small S (10000) --batch B (1000)
 * --timeout T (120 s per request; a request cut there is marked `>`).
 *
 * metrics: issue 12's per-experiment series must not make a scrape cost
 * a lock and a δᶜ computation per experiment. Creates E experiments
 * (--experiments, default 10⁴ here; 3 arms, 6 assignments each, rewarded)
 * over 8 connections, then times /metrics: the first scrape (nothing
 * cached), the median and the largest of 21 more, its size and the
 * experiments with series of their own; and the median of 32 assignments
 * on one experiment idle and while another connection scrapes in a loop.
 * --metrics-cap N passes --metrics-experiments N to the daemon (a daemon
 * without the flag: leave it out).
 *
 * blocks: issue 16's assignment blocks. One client process, one kept-alive
 * connection (libcurl), serves visitors for --duration seconds at each
 * block size B: with B = 1 a visitor costs an assignment (with its unit)
 * and a reward; with B > 1 a lease of B (count), then per block one
 * served batch (which unit got which) and one rewards batch. Visitors/s
 * against the daemon's own assignment throughput in the same run (wrk
 * assign.lua at 2 connections, wrk's least, and at 64, the same duration). Arms of equal
 * means (rewards alternate 0 and 1), so no experiment stops meanwhile.
 *
 * pg: issue 14's ratio. Starts a PostgreSQL server of its own
 * (tests/support/pgserver.c, as the tests do) and two daemons at once, one
 * on a fresh SQLite file (--sync full), one on a fresh database of that
 * server; for each connection count, assignments and rewards (each for a
 * fresh assignment) in pairs of wrk runs, SQLite first in even pairs and
 * PostgreSQL first in odd ones, so that a neighbour's load falls on both
 * alike. Per row: req/s and p99 of each, each writer's writes per commit
 * and ms per commit over the run (from /metrics), and the medians of the
 * per-pair ratios PostgreSQL ÷ SQLite (target ≥ 0.5).
 *
 * cluster: 1, 2 and 3 daemons on one fresh database of such a server, each
 * owning the experiments it created; the first --conns count split evenly
 * over them, one wrk per daemon, all at once; the sum of their req/s and
 * the largest p99 (assignments, then rewards), medians over --pairs runs.
 *
 * pending: a request's cost must not grow with the experiment's pending
 * assignments. Eight libcurl connections cycle (assignments count=100,
 * then a rewards batch for the oldest 100 once a connection holds more
 * than its share of --pending P, 300000): one experiment is filled to P
 * pending, then --pairs runs of --duration s alternate between it and a
 * fresh experiment rewarding at once (~0 pending): the same request mix.
 * Assignments/s, p99 and the largest latency of each; the median of the
 * per-pair ratios (target ≥ 0.5). Alongside every run one more connection
 * cycles on a third experiment rewarding at once (the neighbour: what the
 * big one's snapshots cost another experiment's writes): its p99 and
 * largest latency beside each side. --snapshots off: the daemon with
 * --no-snapshots (what the snapshots cost the latency).
 *
 * Options: --daemon PATH (build/banditd) --bare PATH (build/bench/bare)
 * --scripts DIR (bench) --out FILE --duration S (3, per run) --pairs P (3)
 * --conns 16,64,256
 * --threads N (cores) --sync full|normal (full) --experiments E (1000)
 * --db URI (throughput: the daemon on this empty PostgreSQL database; the
 * table's --sync is then PostgreSQL's synchronous_commit = on)
 * --assignments A (100000) --normal-too 0|1 (1: with --sync full, also
 * assignments, rewards and observations at 64 connections on a --sync normal daemon).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sqlite3.h>

#include "tests/support/pgserver.h"

#define MAX_CONNS 8
#define WRK_THREADS 2

struct opts {
    const char *daemon, *bare, *scripts, *out, *sync;
    const char *db; /* throughput: a postgresql:// URI instead of a fresh SQLite file */
    unsigned duration, threads;
    unsigned conns[MAX_CONNS];
    size_t nconns;
    size_t experiments, assignments;
    size_t pending;      /* pending: the experiment's pending assignments */
    int sync_normal_too; /* also assignments, rewards, observations with --sync normal at 64 */
    unsigned pairs;      /* (ceiling, daemon) run pairs per row */
    size_t log_events, log_small, log_batch; /* log: events in big and small, batch */
    unsigned timeout_s;                      /* log: per request */
    int experiments_given;                   /* --experiments was given */
    long metrics_cap;                        /* metrics: --metrics-experiments; −1: not passed */
    int no_snapshots;                        /* pending: the daemon with --no-snapshots */
};

/* --- processes ------------------------------------------------------------ */

/* argv strings for execv, which takes char *const[] but does not write. */
static char *mut(const char *s)
{
    return (char *)(uintptr_t)s;
}

struct proc {
    pid_t pid;
    unsigned port;
};

/* Start argv (stdout read for "listening on HOST:PORT", stderr to errlog).
 * Returns 0 or −1. */
static int proc_start(struct proc *p, char *const argv[], const char *errlog)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        int e = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0)
            dup2(e, STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[256] = "";
    p->pid = pid;
    p->port = 0;
    if (f != NULL && fgets(line, sizeof line, f) != NULL) {
        const char *colon = strrchr(line, ':');
        if (strncmp(line, "listening on ", 13) == 0 && colon != NULL)
            p->port = (unsigned)strtoul(colon + 1, NULL, 10);
    }
    if (f != NULL)
        (void)fclose(f); /* the child's later stdout writes get EPIPE; it prints nothing more */
    else
        close(fds[0]);
    if (p->port == 0) {
        fprintf(stderr, "load: %s did not start (see %s)\n", argv[0], errlog);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return 0;
}

/* A banditd on db (an SQLite file or a postgresql:// URI) with the runs'
 * settings (--threads, no pending or per-address cap, --no-snapshots with
 * --snapshots off) and the --sync given; 0 or −1. */
static int daemon_start(const struct opts *o, struct proc *p, const char *db, const char *sync,
                        const char *log)
{
    char thr[16];
    snprintf(thr, sizeof thr, "%u", o->threads);
    char *argv[] = {mut(o->daemon),
                    mut("--listen"),
                    mut("127.0.0.1:0"),
                    mut("--db"),
                    mut(db),
                    mut("--threads"),
                    thr,
                    mut("--sync"),
                    mut(sync),
                    mut("--max-pending"),
                    mut("100000000"),
                    mut("--max-connections-per-ip"),
                    mut("0"),
                    o->no_snapshots ? mut("--no-snapshots") : NULL,
                    NULL};
    return proc_start(p, argv, log);
}

/* SIGTERM and wait; the exit status, or −1. */
static int proc_stop(struct proc *p)
{
    int st = 0;
    if (p->pid <= 0)
        return -1;
    kill(p->pid, SIGTERM);
    if (waitpid(p->pid, &st, 0) < 0)
        return -1;
    p->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A daemon still running at the end of a run stopped: 0, or 1 after saying
 * it did not stop cleanly (what names it, log is where it wrote). */
static int stop_checked(struct proc *p, const char *what, const char *log)
{
    if (p->pid <= 0 || proc_stop(p) == 0)
        return 0;
    fprintf(stderr, "load: %s did not stop cleanly (see %s)\n", what, log);
    return 1;
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    (void)fclose(f);
    return kb;
}

static void loadavg(char *buf, size_t len)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double a = 0, b = 0, c = 0;
    if (f != NULL) {
        if (fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3)
            a = b = c = -1;
        (void)fclose(f);
    }
    snprintf(buf, len, "%.2f, %.2f, %.2f", a, b, c);
}

/* --- HTTP (libcurl) ----------------------------------------------------------- */

struct buf {
    char *p;
    size_t n;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct buf *b = arg;
    size_t n = size * nmemb;
    char *np = realloc(b->p, b->n + n + 1);
    if (np == NULL)
        return 0;
    memcpy(np + b->n, ptr, n);
    b->n += n;
    np[b->n] = '\0';
    b->p = np;
    return n;
}

/* One request on handle c (kept alive by the caller). Returns the status
 * and, when out is given, the parsed body (new reference or NULL). */
static long http(CURL *c, unsigned port, const char *method, const char *path, const char *body,
                 json_t **out)
{
    char url[512];
    struct buf b = {NULL, 0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    long status = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (body == NULL)
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (out != NULL)
        *out = b.p != NULL ? json_loads(b.p, 0, NULL) : NULL;
    free(b.p);
    return status;
}

static int create_experiment(CURL *c, unsigned port, const char *id)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"policy\":{\"name\":\"adapt\"},\"arms\":[\"a\",\"b\",\"c\"],"
             "\"seed\":1}",
             id);
    long st = http(c, port, "POST", "/v1/experiments", body, NULL);
    if (st != 201) {
        fprintf(stderr, "load: creating experiment %s: HTTP %ld\n", id, st);
        return -1;
    }
    return 0;
}

/* Assignments in parallel: `total` spread over `nexp` experiments named
 * PREFIX0…, count=100 per request, from several threads. */
struct filler {
    const char *prefix;
    size_t nexp, from, to; /* request indexes [from, to) */
    size_t total;
    unsigned port;
    int failed;
    char token[16];
};

static void *fill_main(void *arg)
{
    struct filler *f = arg;
    CURL *c = curl_easy_init();
    if (c == NULL) {
        f->failed = 1;
        return NULL;
    }
    size_t per_exp = f->total / f->nexp, reqs_per_exp = (per_exp + 99) / 100;
    for (size_t i = f->from; i < f->to && !f->failed; i++) {
        size_t e = i / reqs_per_exp, k = i % reqs_per_exp;
        size_t count = per_exp - k * 100 < 100 ? per_exp - k * 100 : 100;
        char path[128], body[64];
        snprintf(path, sizeof path, "/v1/experiments/%s%zu/assignments", f->prefix, e);
        snprintf(body, sizeof body, "{\"count\":%zu}", count);
        json_t *j = NULL;
        long st = http(c, f->port, "POST", path, body, &j);
        if (st != 201)
            f->failed = 1;
        const char *id = json_string_value(
            json_object_get(json_array_get(json_object_get(j, "assignments"), 0), "id"));
        if (id != NULL && f->token[0] == '\0')
            snprintf(f->token, sizeof f->token, "%.8s", id);
        json_decref(j);
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* Create `total` pending assignments over nexp experiments PREFIX0…; the
 * token of the last experiment's ids goes to token (nexp == 1 in the
 * throughput run). Returns 0 or −1. */
static int fill(unsigned port, const char *prefix, size_t nexp, size_t total, char *token,
                size_t toklen)
{
    enum { NT = 8 };
    struct filler f[NT];
    pthread_t t[NT];
    size_t per_exp = total / nexp, reqs = nexp * ((per_exp + 99) / 100);
    int started = 0, failed = 0;
    for (; started < NT; started++) {
        int i = started;
        memset(&f[i], 0, sizeof f[i]);
        f[i].port = port;
        f[i].prefix = prefix;
        f[i].nexp = nexp;
        f[i].total = total;
        f[i].from = reqs * (size_t)i / NT;
        f[i].to = reqs * (size_t)(i + 1) / NT;
        if (pthread_create(&t[i], NULL, fill_main, &f[i]) != 0) {
            fprintf(stderr, "load: pthread_create failed\n");
            failed = 1; /* f[i..] unfilled */
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        failed |= f[i].failed;
        if (token != NULL && f[i].token[0])
            snprintf(token, toklen, "%s", f[i].token);
    }
    return failed ? -1 : 0;
}

/* --- wrk ------------------------------------------------------------------------ */

struct result {
    double rps, p50_ms, p99_ms;
    long requests, non2xx, sock_errors;
    int ok;
};

static double to_ms(double v, const char *unit)
{
    if (strcmp(unit, "us") == 0)
        return v / 1000.0;
    if (strcmp(unit, "s") == 0)
        return v * 1000.0;
    if (strcmp(unit, "m") == 0)
        return v * 60000.0;
    return v; /* ms */
}

/* Run wrk and parse its report. args: extra script arguments or NULL. */
static struct result run_wrk(const struct opts *o, unsigned conns, const char *script,
                             unsigned port, const char *path, const char *args)
{
    struct result r = {0};
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd,
             "wrk -t%d -c%u -d%us --latency -s %s/%s http://127.0.0.1:%u%s%s%s 2>&1", WRK_THREADS,
             conns, o->duration, o->scripts, script, port, path, args ? " -- " : "",
             args ? args : "");
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return r;
    while (fgets(line, sizeof line, p) != NULL) {
        double v;
        char unit[8];
        long a, b, c, d;
        if (sscanf(line, " 50%% %lf%7[a-z]", &v, unit) == 2)
            r.p50_ms = to_ms(v, unit);
        else if (sscanf(line, " 99%% %lf%7[a-z]", &v, unit) == 2)
            r.p99_ms = to_ms(v, unit);
        else if (sscanf(line, "Requests/sec: %lf", &v) == 1) {
            r.rps = v;
            r.ok = 1;
        } else if (sscanf(line, " %ld requests in", &a) == 1)
            r.requests = a;
        else if (sscanf(line, " Non-2xx or 3xx responses: %ld", &a) == 1)
            r.non2xx = a;
        else if (sscanf(line, " Socket errors: connect %ld, read %ld, write %ld, timeout %ld", &a,
                        &b, &c, &d) == 4)
            r.sock_errors = a + b + c + d;
    }
    if (pclose(p) != 0)
        r.ok = 0;
    if (!r.ok)
        fprintf(stderr, "load: wrk failed: %s\n", cmd);
    return r;
}

/* --- report ------------------------------------------------------------------------ */

/* One endpoint at one connection count: `pairs` runs of the ceiling, each
 * followed at once by a run of the daemon. On a shared machine the
 * neighbours' load moves the ceiling by 2x within a minute (measured: 15k
 * to 44k req/s); a run and its ceiling a few seconds apart see about the
 * same load, so each figure is the median over pairs of daemon ÷ ceiling. */
#define MAX_PAIRS 9

struct row {
    const char *what;
    unsigned conns;
    double rps, p50, p99;       /* the daemon: medians over runs */
    double c_rps, c_p50, c_p99; /* the ceiling: medians over runs */
    double r_rps, r_p50, r_p99; /* medians of the per-pair ratios */
    long errors;                /* non-2xx and socket errors, all runs */
};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double med(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct row summarise(const char *what, unsigned conns, const struct result *d,
                            const struct result *c, size_t pairs)
{
    double v[6][MAX_PAIRS] = {{0}}, rr[3][MAX_PAIRS] = {{0}};
    struct row w = {.what = what, .conns = conns};
    for (size_t i = 0; i < pairs; i++) {
        v[0][i] = d[i].rps;
        v[1][i] = d[i].p50_ms;
        v[2][i] = d[i].p99_ms;
        v[3][i] = c[i].rps;
        v[4][i] = c[i].p50_ms;
        v[5][i] = c[i].p99_ms;
        rr[0][i] = c[i].rps > 0 ? d[i].rps / c[i].rps : 0;
        rr[1][i] = c[i].p50_ms > 0 ? d[i].p50_ms / c[i].p50_ms : 0;
        rr[2][i] = c[i].p99_ms > 0 ? d[i].p99_ms / c[i].p99_ms : 0;
        w.errors += d[i].non2xx + d[i].sock_errors;
    }
    w.rps = med(v[0], pairs);
    w.p50 = med(v[1], pairs);
    w.p99 = med(v[2], pairs);
    w.c_rps = med(v[3], pairs);
    w.c_p50 = med(v[4], pairs);
    w.c_p99 = med(v[5], pairs);
    w.r_rps = med(rr[0], pairs);
    w.r_p50 = med(rr[1], pairs);
    w.r_p99 = med(rr[2], pairs);
    return w;
}

/* The time now, as the results say it ("2026-11-27 05:16 UTC"). */
static void utc_now(char *date, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) == NULL || strftime(date, len, "%Y-%m-%d %H:%M UTC", &tm) == 0)
        snprintf(date, len, "(date unknown)");
}

static void emit(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (f != NULL) {
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
    }
    (void)fflush(stdout);
}

static void print_rows(FILE *f, const struct row *rows, size_t n)
{
    emit(f, "| endpoint | conns | req/s | p50 ms | p99 ms | non-2xx | ceiling req/s | "
            "ceiling p50 / p99 ms | req/s ÷ ceiling | p50 ÷ ceiling | p99 ÷ ceiling |\n");
    emit(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < n; i++) {
        const struct row *w = &rows[i];
        emit(f,
             "| %s | %u | %.0f | %.2f | %.2f | %ld | %.0f | %.2f / %.2f | %.0f%% | %.2f | %.2f |\n",
             w->what, w->conns, w->rps, w->p50, w->p99, w->errors, w->c_rps, w->c_p50, w->c_p99,
             100 * w->r_rps, w->r_p50, w->r_p99);
    }
}

/* The targets of issue 5 at 64 connections. */
static int check_targets(FILE *f, const struct row *rows, size_t n)
{
    int misses = 0;
    for (size_t i = 0; i < n; i++) {
        const struct row *w = &rows[i];
        if (w->conns != 64 || strcmp(w->what, "status") == 0)
            continue;
        double want = strncmp(w->what, "observations", 12) == 0 ? 0.40 : 0.45;
        int ok = w->r_rps >= want && w->p99 <= 10.0 && w->errors == 0;
        emit(f,
             "- %s at 64 connections: %.0f%% of the ceiling (target ≥ %.0f%%), p99 %.2f ms "
             "(target ≤ 10), %ld non-2xx: **%s**\n",
             w->what, 100 * w->r_rps, 100 * want, w->p99, w->errors, ok ? "met" : "missed");
        misses += !ok;
    }
    return misses;
}

/* --- throughput ------------------------------------------------------------------- */

struct scenario {
    const char *what;
    const char *script;
    char path[192];
    /* rewards: the ids of pair i are TOKEN-(i·N + t·chunk + 1 …) for thread t */
    int reward;
    char token[16];
    size_t n_per_run;
};

/* Pairs of (ceiling, daemon) runs of one scenario; appends a row. */
static int run_pairs(const struct opts *o, unsigned conns, const struct proc *bare,
                     const struct proc *d, struct scenario *sc, struct row *out)
{
    struct result rd[MAX_PAIRS], rc[MAX_PAIRS];
    for (unsigned i = 0; i < o->pairs; i++) {
        char args[128];
        rc[i] = run_wrk(o, conns, "assign.lua", bare->port, "/", NULL);
        if (sc->reward)
            snprintf(args, sizeof args, "%s %zu %zu %d", sc->token, (size_t)i * sc->n_per_run,
                     sc->n_per_run / WRK_THREADS, WRK_THREADS);
        rd[i] = run_wrk(o, conns, sc->script, d->port, sc->path, sc->reward ? args : NULL);
        if (!rc[i].ok || !rd[i].ok)
            return -1;
    }
    *out = summarise(sc->what, conns, rd, rc, o->pairs);
    return 0;
}

/* Fresh assignments for every reward run: pairs × n in experiment id. */
static int prepare_rewards(CURL *c, unsigned port, const char *prefix, size_t n, unsigned pairs,
                           struct scenario *sc)
{
    char id[96];
    snprintf(id, sizeof id, "%s0", prefix);
    if (create_experiment(c, port, id) != 0 ||
        fill(port, prefix, 1, n * pairs, sc->token, sizeof sc->token) != 0 || !sc->token[0]) {
        fprintf(stderr, "load: pre-creating %zu assignments failed\n", n * pairs);
        return -1;
    }
    sc->n_per_run = n;
    snprintf(sc->path, sizeof sc->path, "/v1/experiments/%s/rewards", id);
    return 0;
}

/* A run's temporary directory, once the run passed (a failed one keeps its
 * logs for reading). */
static void remove_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "load: could not remove %s\n", dir);
}

/* The end of every run: its directory removed when it passed, its logs kept
 * and named when it failed. Returns rc. */
static int finish_run(int rc, CURL *c, const char *dir)
{
    curl_easy_cleanup(c);
    if (rc == 0)
        remove_dir(dir);
    else
        fprintf(stderr, "load: failed; logs kept in %s\n", dir);
    return rc;
}

static int throughput(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", db[256], dbn[256], log1[256], log2[256], log3[256],
         thr[16];
    char load0[64], load1[64];
    struct proc bare = {0}, d = {0}, dn = {0};
    struct row rows[MAX_CONNS * 4 + 3]; /* 4 per count, 3 with --sync normal */
    size_t nrows = 0;
    int rc = 1;
    CURL *c = curl_easy_init();

    if (c == NULL || mkdtemp(dir) == NULL) {
        fprintf(stderr, "load: setup failed\n");
        return 1;
    }
    if (o->db != NULL)
        snprintf(db, sizeof db, "%s", o->db); /* an empty PostgreSQL database */
    else
        snprintf(db, sizeof db, "%s/bench.db", dir);
    snprintf(dbn, sizeof dbn, "%s/normal.db", dir);
    snprintf(log1, sizeof log1, "%s/bare.log", dir);
    snprintf(log2, sizeof log2, "%s/banditd.log", dir);
    snprintf(log3, sizeof log3, "%s/banditd-normal.log", dir);
    snprintf(thr, sizeof thr, "%u", o->threads);
    char *bare_argv[] = {mut(o->bare), mut("--listen"), mut("127.0.0.1:0"), mut("--threads"), thr,
                         NULL};
    char *d_argv[] = {mut(o->daemon), mut("--listen"), mut("127.0.0.1:0"), mut("--db"), db,
                      mut("--threads"), thr, mut("--sync"), mut(o->sync),
                      /* a reward run pre-creates pairs × 2 × ceiling × duration
                       * assignments in one experiment: over the default cap on
                       * an idle machine */
                      mut("--max-pending"), mut("100000000"),
                      /* wrk's 256 connections all come from 127.0.0.1 */
                      mut("--max-connections-per-ip"), mut("0"), NULL};
    char *n_argv[] = {mut(o->daemon),
                      mut("--listen"),
                      mut("127.0.0.1:0"),
                      mut("--db"),
                      dbn,
                      mut("--threads"),
                      thr,
                      mut("--sync"),
                      mut("normal"),
                      mut("--max-pending"),
                      mut("100000000"),
                      mut("--max-connections-per-ip"),
                      mut("0"),
                      NULL};
    int normal_too = o->sync_normal_too && strcmp(o->sync, "full") == 0;
    loadavg(load0, sizeof load0);
    if (proc_start(&bare, bare_argv, log1) != 0 || proc_start(&d, d_argv, log2) != 0 ||
        (normal_too && proc_start(&dn, n_argv, log3) != 0))
        goto out;

    for (size_t ci = 0; ci < o->nconns; ci++) {
        unsigned n = o->conns[ci];
        struct result probe = run_wrk(o, n, "assign.lua", bare.port, "/", NULL); /* warm-up */
        if (!probe.ok)
            goto out;
        /* fresh assignments for a reward run at twice this ceiling */
        size_t per_run = (size_t)(probe.rps * o->duration * 2) + 1000;
        struct scenario sc[4];
        memset(sc, 0, sizeof sc);
        sc[0] = (struct scenario){.what = "assignments", .script = "assign.lua"};
        snprintf(sc[0].path, sizeof sc[0].path, "/v1/experiments/assign-%u/assignments", n);
        sc[1] = (struct scenario){.what = "rewards", .script = "reward.lua", .reward = 1};
        sc[2] = (struct scenario){.what = "observations", .script = "observe.lua"};
        snprintf(sc[2].path, sizeof sc[2].path, "/v1/experiments/observe-%u/observations", n);
        sc[3] = (struct scenario){.what = "status", .script = "status.lua"};
        char id[64], prefix[64];
        snprintf(id, sizeof id, "assign-%u", n);
        if (create_experiment(c, d.port, id) != 0)
            goto out;
        snprintf(id, sizeof id, "observe-%u", n);
        if (create_experiment(c, d.port, id) != 0)
            goto out;
        snprintf(prefix, sizeof prefix, "reward-%u-", n);
        if (prepare_rewards(c, d.port, prefix, per_run, o->pairs, &sc[1]) != 0)
            goto out;
        snprintf(sc[3].path, sizeof sc[3].path, "/v1/experiments/%s0/status", prefix);
        size_t first = nrows;
        for (int k = 0; k < 4; k++)
            if (run_pairs(o, n, &bare, &d, &sc[k], &rows[nrows++]) != 0)
                goto out;
        /* the ceiling row: the medians of every ceiling run at this count */
        (void)first;
        fprintf(stderr, "load: %u connections done\n", n);

        if (n == 64 && normal_too) {
            struct scenario ns[3];
            memset(ns, 0, sizeof ns);
            ns[0] =
                (struct scenario){.what = "assignments (--sync normal)", .script = "assign.lua"};
            snprintf(ns[0].path, sizeof ns[0].path, "/v1/experiments/assign/assignments");
            ns[1] = (struct scenario){
                .what = "rewards (--sync normal)", .script = "reward.lua", .reward = 1};
            ns[2] =
                (struct scenario){.what = "observations (--sync normal)", .script = "observe.lua"};
            snprintf(ns[2].path, sizeof ns[2].path, "/v1/experiments/observe/observations");
            if (create_experiment(c, dn.port, "assign") != 0 ||
                create_experiment(c, dn.port, "observe") != 0 ||
                prepare_rewards(c, dn.port, "reward-", per_run, o->pairs, &ns[1]) != 0)
                goto out;
            for (int k = 0; k < 3; k++)
                if (run_pairs(o, n, &bare, &dn, &ns[k], &rows[nrows++]) != 0)
                    goto out;
        }
    }
    loadavg(load1, sizeof load1);

    FILE *f = NULL;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    char date[64];
    utc_now(date, sizeof date);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    emit(f, "## Throughput and latency (bench/load)\n\n");
    emit(f,
         "%s; %ld cores; load average before %s, after %s; wrk -t%d, %u pairs of %u s runs "
         "per row: the ceiling (bench/bare.c: libmicrohttpd + jansson, a fixed document, the "
         "daemon's MHD flags and %u threads), then at once the daemon (--sync %s, %u HTTP "
         "threads). Figures are medians over the pairs; ratios are medians of the per-pair "
         "ratios daemon ÷ ceiling (latency: 1 = as fast). Rewards: each for a fresh "
         "assignment created beforehand.\n\n",
         date, cores, load0, load1, WRK_THREADS, o->pairs, o->duration, o->threads, o->sync,
         o->threads);
    print_rows(f, rows, nrows);
    emit(f, "\n");
    check_targets(f, rows, nrows);
    emit(f, "\n");
    if (f != NULL && fclose(f) != 0) { /* a short results file must not pass */
        perror(o->out);
        goto out;
    }
    rc = 0;
out:
    if (stop_checked(&d, "banditd", log2) != 0)
        rc = 1;
    if (stop_checked(&dn, "banditd (--sync normal)", log3) != 0)
        rc = 1;
    if (bare.pid > 0)
        proc_stop(&bare);
    return finish_run(rc, c, dir);
}

/* --- memory ---------------------------------------------------------------------- */

static int memory(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", db[256], log[256], load0[64];
    struct proc d = {0};
    int rc = 1;
    CURL *c = curl_easy_init();
    if (c == NULL || mkdtemp(dir) == NULL)
        return 1;
    snprintf(db, sizeof db, "%s/mem.db", dir);
    snprintf(log, sizeof log, "%s/banditd.log", dir);
    /* Normal sync: this measures memory, not the disk. */
    char *argv[] = {mut(o->daemon),
                    mut("--listen"),
                    mut("127.0.0.1:0"),
                    mut("--db"),
                    db,
                    mut("--sync"),
                    mut("normal"),
                    NULL};
    loadavg(load0, sizeof load0);
    if (proc_start(&d, argv, log) != 0)
        goto out;
    /* A first request of each kind, so that per-thread buffers (SQLite
     * readers, libmicrohttpd pools) exist before the first reading. */
    if (create_experiment(c, d.port, "warmup") != 0 ||
        http(c, d.port, "POST", "/v1/experiments/warmup/assignments", "{}", NULL) != 201)
        goto out;
    sleep(1);
    long r0 = rss_kb(d.pid);
    for (size_t i = 0; i < o->experiments; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%zu", i);
        if (create_experiment(c, d.port, id) != 0)
            goto out;
    }
    sleep(1);
    long r1 = rss_kb(d.pid);
    if (fill(d.port, "m", o->experiments, o->assignments, NULL, 0) != 0) {
        fprintf(stderr, "load: creating assignments failed\n");
        goto out;
    }
    sleep(1);
    long r2 = rss_kb(d.pid);
    json_t *st = NULL;
    http(c, d.port, "GET", "/v1/experiments/m0/status", NULL, &st);
    long long pend0 = json_integer_value(json_object_get(st, "pending"));
    json_decref(st);

    FILE *f = NULL;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    emit(f, "## Memory (bench/load memory)\n\n");
    emit(f,
         "VmRSS of banditd (load average %s): %ld kB after start, %ld kB with %zu "
         "experiments (3 arms, adapt), %ld kB with %zu pending assignments on top (%lld "
         "in the first experiment).\n\n",
         load0, r0, r1, o->experiments, r2, o->assignments, pend0);
    emit(f, "| what | resident bytes each |\n| --- | ---: |\n");
    emit(f, "| experiment (3 arms, empty) | %.0f |\n",
         (double)(r1 - r0) * 1024.0 / (double)o->experiments);
    emit(f, "| pending assignment | %.0f |\n\n",
         (double)(r2 - r1) * 1024.0 / (double)o->assignments);
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        goto out;
    }
    rc = 0;
out:
    if (stop_checked(&d, "banditd", log) != 0)
        rc = 1;
    return finish_run(rc, c, dir);
}

/* --- log: work that grows with the log (issue 12) ------------------------------ */

/* A clock in seconds (durations only). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Counts what a streamed answer carries without keeping it. */
struct counter {
    size_t bytes, lines;
};

// cppcheck-suppress constParameter ; libcurl's write callback signature
// NOLINTNEXTLINE(readability-non-const-parameter): libcurl's write callback signature
static size_t on_count(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct counter *k = arg;
    size_t n = size * nmemb;
    k->bytes += n;
    for (size_t i = 0; i < n; i++)
        k->lines += ptr[i] == '\n';
    return n;
}

/* One timed request with a time limit; the answer is counted, not kept.
 * Returns the status (0: failed or timed out) and the seconds it took. */
static long timed(CURL *c, unsigned port, const char *method, const char *path, const char *body,
                  unsigned timeout_s, double *secs, struct counter *k)
{
    char url[512];
    struct counter dummy = {0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    long status = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (body == NULL)
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_count);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, k != NULL ? k : &dummy);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)timeout_s);
    double t0 = now_s();
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    *secs = now_s() - t0;
    curl_slist_free_all(h);
    return status;
}

/* A request on its own thread, started while the main thread times another
 * one behind it. */
struct bg {
    unsigned port, timeout_s;
    const char *method, *path, *body;
    long status;
    double secs;
    pthread_t t;
};

static void *bg_main(void *arg)
{
    struct bg *b = arg;
    CURL *c = curl_easy_init();
    if (c == NULL)
        return NULL;
    b->status = timed(c, b->port, b->method, b->path, b->body, b->timeout_s, &b->secs, NULL);
    curl_easy_cleanup(c);
    return NULL;
}

/* Send `method path body` on a thread and, 2 ms later, `POST then {}` here:
 * the latter's seconds to *secs, the former's to *of_secs (its status to
 * *of_status when given). 0, or −1 when the thread cannot start. */
static int behind(CURL *c, unsigned port, unsigned timeout_s, const char *method, const char *path,
                  const char *body, const char *then, double *secs, double *of_secs,
                  long *of_status)
{
    struct bg b = {
        .port = port, .timeout_s = timeout_s, .method = method, .path = path, .body = body};
    if (pthread_create(&b.t, NULL, bg_main, &b) != 0)
        return -1;
    usleep(2000); /* let it start */
    if (timed(c, port, "POST", then, "{}", timeout_s, secs, NULL) != 201)
        *secs = timeout_s;
    pthread_join(b.t, NULL);
    *of_secs = b.secs;
    if (of_status != NULL)
        *of_status = b.status;
    return 0;
}

/* Events of deleted experiments still in the database at path (0 when it
 * has no purges table: a schema that deletes at once). */
static long purge_backlog(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long n = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM (SELECT 1 FROM events WHERE exp IN"
                           " (SELECT exp FROM purges) LIMIT 1)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

struct logrun;
static void during_purge(CURL *c, unsigned port, const char *db, unsigned timeout_s,
                         struct logrun *r);

/* Re-send a reward batch to `big` up to RESENDS times (fewer once 30 s are
 * spent: main took minutes for one) and return the median's status and
 * seconds. */
#define RESENDS 5
static long resend(CURL *c, unsigned port, const char *body, unsigned timeout_s, double *secs)
{
    double v[RESENDS] = {0}, spent = 0;
    long st = 0;
    int n = 0;
    while (n < RESENDS && (n == 0 || spent < 30)) {
        st = timed(c, port, "POST", "/v1/experiments/big/rewards", body, timeout_s, &v[n], NULL);
        spent += v[n++];
        if (st != 200)
            break;
    }
    *secs = med(v, (size_t)n);
    return st;
}

/* Median latency of n single assignments on experiment id. */
static double assign_median(CURL *c, unsigned port, const char *id, int n, unsigned timeout_s)
{
    double v[32] = {0};
    char path[128];
    if (n > 32)
        n = 32;
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
    for (int i = 0; i < n; i++)
        if (timed(c, port, "POST", path, "{}", timeout_s, &v[i], NULL) != 201)
            return -1;
    return med(v, (size_t)n);
}

/* A reward batch for every assignment of one answer: {"rewards":[…]}, each
 * reward 0 or 1 by position (equal means on every arm: no stop). New
 * string or NULL. */
static char *rewards_body(json_t *assignments)
{
    json_t *items = json_array(), *body = json_object();
    size_t i;
    json_t *a;
    json_array_foreach(assignments, i, a)
    {
        json_array_append_new(items, json_pack("{s:O,s:i}", "assignment_id",
                                               json_object_get(a, "id"), "reward", (int)(i % 2)));
    }
    json_object_set_new(body, "rewards", items);
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return s;
}

/* n events (assignments in batches of `batch`, each batch rewarded at once:
 * 2 events per assignment) in experiment id. The first and the last reward
 * batches go to *first and *last (new strings). 0 or −1. */
static int fill_log(CURL *c, unsigned port, const char *id, size_t n, size_t batch, char **first,
                    char **last)
{
    char apath[128], rpath[128], abody[64];
    snprintf(apath, sizeof apath, "/v1/experiments/%s/assignments", id);
    snprintf(rpath, sizeof rpath, "/v1/experiments/%s/rewards", id);
    snprintf(abody, sizeof abody, "{\"count\":%zu}", batch);
    for (size_t done = 0; done < n; done += 2 * batch) {
        json_t *j = NULL;
        if (http(c, port, "POST", apath, abody, &j) != 201) {
            json_decref(j);
            fprintf(stderr, "load: assignments for %s failed\n", id);
            return -1;
        }
        char *rb = rewards_body(json_object_get(j, "assignments"));
        json_decref(j);
        if (rb == NULL || http(c, port, "POST", rpath, rb, NULL) != 200) {
            free(rb);
            fprintf(stderr, "load: rewards for %s failed\n", id);
            return -1;
        }
        if (*first == NULL) {
            *first = rb;
        } else {
            free(*last);
            *last = rb;
        }
        if (done % 100000 < 2 * batch)
            fprintf(stderr, "load: %s: %zu events\n", id, done + 2 * batch);
    }
    return 0;
}

/* The figures of one run of `load log`. */
struct logrun {
    double replay_s;
    double export_small_s, export_big_s, export_new_s;
    size_t rows_small, rows_big, rows_new;
    long export_small_st, export_big_st, export_new_st;
    double assign_idle_s, assign_small_s;
    double resend_first_s, resend_last_s;
    long resend_first_st, resend_last_st;
    double behind_first_s, behind_first_of_s, behind_last_s, behind_last_of_s;
    double delete_s, behind_delete_s, delete_empty_s, assign_after_s;
    long delete_st;
    double purge_s, purge_p50_s, purge_max_s; /* assignments on small during the purge */
    size_t purge_n;
    int purge_over; /* the purge was over when the sampling ended */
};

#define PURGE_SAMPLES 65536
#define N_EMPTY 5 /* empty experiments deleted: the median is the yardstick */

/* Assignments on `small`, one after another, until big's log is purged
 * (or 60 s): their median and maximum latency and the purge's duration. */
static void during_purge(CURL *c, unsigned port, const char *db, unsigned timeout_s,
                         struct logrun *r)
{
    static double v[PURGE_SAMPLES];
    size_t n = 0;
    double t0 = now_s();
    while (n < PURGE_SAMPLES && now_s() - t0 < 60 && purge_backlog(db) > 0) {
        if (timed(c, port, "POST", "/v1/experiments/small/assignments", "{}", timeout_s, &v[n],
                  NULL) != 201)
            v[n] = timeout_s;
        r->purge_max_s = v[n] > r->purge_max_s ? v[n] : r->purge_max_s;
        n++;
    }
    r->purge_s = now_s() - t0;
    r->purge_over = purge_backlog(db) == 0;
    r->purge_n = n;
    r->purge_p50_s = n ? med(v, n) : 0;
}

static void log_report(FILE *f, const struct opts *o, const struct logrun *r, const char *load0,
                       const char *load1)
{
    char date[64];
    utc_now(date, sizeof date);
    emit(f, "## Work that grows with the log (bench/load log)\n\n");
    emit(f,
         "%s; load average before %s, after %s. Experiment `big`: %zu events (assignments "
         "of 3 arms, %zu per request, each batch rewarded at once), `small`: %zu; then a "
         "restart (--sync %s) so that every re-sent reward is looked up on disk. Each "
         "request has %u s; `>` marks one cut there.\n\n",
         date, load0, load1, o->log_events, o->log_batch, o->log_small, o->sync, o->timeout_s);
    emit(f, "| what | figure |\n| --- | ---: |\n");
    emit(f, "| replay at start (%zu events) | %.2f s |\n", o->log_events + o->log_small,
         r->replay_s);
    emit(f, "| export `small`: %zu rows | %s%.3f s (%.2f µs/row) |\n", r->rows_small,
         r->export_small_st == 200 ? "" : "> ", r->export_small_s,
         r->rows_small ? 1e6 * r->export_small_s / (double)r->rows_small : 0);
    emit(f, "| export `big`: %zu rows | %s%.3f s (%.2f µs/row) |\n", r->rows_big,
         r->export_big_st == 200 ? "" : "> ", r->export_big_s,
         r->rows_big ? 1e6 * r->export_big_s / (double)r->rows_big : 0);
    emit(f, "| export `big` after its latest batch (`?after=`): %zu rows | %s%.3f s |\n",
         r->rows_new, r->export_new_st == 200 ? "" : "> ", r->export_new_s);
    emit(f, "| one assignment on `big`, idle (median of 15) | %.2f ms |\n", 1e3 * r->assign_idle_s);
    emit(f,
         "| re-sent rewards of the first %zu assignments (one batch, median of 5) | %s%.3f s |\n",
         o->log_batch, r->resend_first_st == 200 ? "" : "> ", r->resend_first_s);
    emit(f, "| re-sent rewards of the latest %zu assignments (likewise) | %s%.3f s |\n",
         o->log_batch, r->resend_last_st == 200 ? "" : "> ", r->resend_last_s);
    emit(f, "| one assignment on `big` sent during the first's re-send (%.3f s) | %.2f ms |\n",
         r->behind_first_of_s, 1e3 * r->behind_first_s);
    emit(f, "| one assignment on `big` sent during the latest's re-send (%.3f s) | %.2f ms |\n",
         r->behind_last_of_s, 1e3 * r->behind_last_s);
    emit(f, "| one assignment on `small`, idle (median of 15) | %.2f ms |\n",
         1e3 * r->assign_small_s);
    emit(f, "| DELETE of an empty experiment (median of %d) | %.2f ms |\n", N_EMPTY,
         1e3 * r->delete_empty_s);
    emit(f, "| DELETE `big` | %s%.2f ms |\n",
         r->delete_st == 204 || r->delete_st == 200 ? "" : "> ", 1e3 * r->delete_s);
    emit(f, "| one assignment on `small` sent during that delete | %.2f ms |\n",
         1e3 * r->behind_delete_s);
    emit(f,
         "| assignments on `small` while `big`'s log is purged (%s %.2f s after the answer): "
         "%zu, median / max | %.2f / %.2f ms |\n",
         r->purge_over ? "over" : "not over", r->purge_s, r->purge_n, 1e3 * r->purge_p50_s,
         1e3 * r->purge_max_s);
    emit(f, "| the same once the purge is over (median of 31) | %.2f ms |\n\n",
         1e3 * r->assign_after_s);

    /* Targets: ratios within this run, so that the machine's speed cancels. */
    double per_small = r->rows_small ? r->export_small_s / (double)r->rows_small : 0;
    double per_big = r->rows_big ? r->export_big_s / (double)r->rows_big : 0;
    double x_export = per_small > 0 ? per_big / per_small : 0;
    double x_resend = r->resend_first_s > 0 ? r->resend_last_s / r->resend_first_s : 0;
    double x_behind = r->resend_first_s > 0 ? r->behind_last_s / r->resend_first_s : 0;
    double x_delete = r->delete_empty_s > 0 ? r->delete_s / r->delete_empty_s : 0;
    double x_purge = r->assign_after_s > 0 ? r->purge_p50_s / r->assign_after_s : 0;
    int ok_export = r->export_big_st == 200 && x_export <= 2.0;
    emit(f,
         "- export: µs per row on `big` ÷ on `small` = %.2f (target ≤ 2: linear in what it "
         "returns)%s: **%s**\n",
         x_export, r->export_big_st == 200 ? "" : ", `big` unfinished",
         ok_export ? "met" : "missed");
    emit(f,
         "- re-sent rewards: latest %zu ÷ first %zu = %.2f (target ≤ 2: no cost in the "
         "assignment's age): **%s**\n",
         o->log_batch, o->log_batch, x_resend,
         r->resend_last_st == 200 && x_resend <= 2.0 ? "met" : "missed");
    emit(f,
         "- an assignment behind the latest re-sent rewards ÷ re-sending the first = %.2f "
         "(target ≤ 2: it waits for no more than a re-send early in the log costs): "
         "**%s**\n",
         x_behind, x_behind <= 2.0 && r->resend_last_st == 200 ? "met" : "missed");
    emit(f,
         "- DELETE of `big` ÷ DELETE of an empty experiment = %.1f, and assignments on `small` "
         "while `big`'s log is purged ÷ once it is over (medians) = %.1f (targets ≤ 10: a "
         "delete is one commit, the log goes in the background; the single assignment sent "
         "during the delete is in the table, not a target: one sample): **%s**\n\n",
         x_delete, x_purge,
         (r->delete_st == 204 || r->delete_st == 200) && x_delete <= 10 && x_purge <= 10
             ? "met"
             : "missed");
}

static int log_mode(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", db[256], log1[256], log2[256], load0[64], load1[64],
         batch[32];
    struct proc d = {0};
    struct logrun r = {0};
    char *first = NULL, *last = NULL, *dummy_first = NULL, *dummy_last = NULL;
    int rc = 1;
    CURL *c = curl_easy_init();
    if (c == NULL || mkdtemp(dir) == NULL)
        return 1;
    snprintf(db, sizeof db, "%s/log.db", dir);
    snprintf(log1, sizeof log1, "%s/fill.log", dir);
    snprintf(log2, sizeof log2, "%s/banditd.log", dir);
    snprintf(batch, sizeof batch, "%zu", o->log_batch);
    loadavg(load0, sizeof load0);

    /* Filling runs with --sync normal: what is measured comes after the
     * restart. */
    char *fill_argv[] = {mut(o->daemon),
                         mut("--listen"),
                         mut("127.0.0.1:0"),
                         mut("--db"),
                         db,
                         mut("--sync"),
                         mut("normal"),
                         mut("--max-count"),
                         batch,
                         mut("--max-batch"),
                         batch,
                         NULL};
    if (proc_start(&d, fill_argv, log1) != 0)
        goto out;
    static const char create_fmt[] =
        "{\"id\":\"%s\",\"policy\":{\"name\":\"uniform\"},\"arms\":[\"a\",\"b\",\"c\"],"
        "\"goal\":{\"delta\":1e-9},\"seed\":1}";
    char body[256];
    snprintf(body, sizeof body, create_fmt, "big");
    if (http(c, d.port, "POST", "/v1/experiments", body, NULL) != 201)
        goto out;
    snprintf(body, sizeof body, create_fmt, "small");
    if (http(c, d.port, "POST", "/v1/experiments", body, NULL) != 201)
        goto out;
    for (int i = 0; i < N_EMPTY; i++) { /* the delete's yardstick */
        char id[16];
        snprintf(id, sizeof id, "empty%d", i);
        snprintf(body, sizeof body, create_fmt, id);
        if (http(c, d.port, "POST", "/v1/experiments", body, NULL) != 201)
            goto out;
    }
    if (fill_log(c, d.port, "big", o->log_events, o->log_batch, &first, &last) != 0 ||
        fill_log(c, d.port, "small", o->log_small, o->log_batch, &dummy_first, &dummy_last) != 0 ||
        first == NULL || last == NULL)
        goto out;
    if (proc_stop(&d) != 0) {
        fprintf(stderr, "load: the filling daemon did not stop cleanly (see %s)\n", log1);
        goto out;
    }

    char *argv[] = {mut(o->daemon),
                    mut("--listen"),
                    mut("127.0.0.1:0"),
                    mut("--db"),
                    db,
                    mut("--sync"),
                    mut(o->sync),
                    mut("--max-count"),
                    batch,
                    mut("--max-batch"),
                    batch,
                    NULL};
    double t0 = now_s();
    if (proc_start(&d, argv, log2) != 0)
        goto out;
    r.replay_s = now_s() - t0;
    fprintf(stderr, "load: restarted after %.2f s of replay\n", r.replay_s);

    struct counter k = {0};
    r.export_small_st = timed(c, d.port, "GET", "/v1/experiments/small/export?format=ndjson", NULL,
                              o->timeout_s, &r.export_small_s, &k);
    r.rows_small = k.lines;
    k = (struct counter){0};
    r.export_big_st = timed(c, d.port, "GET", "/v1/experiments/big/export?format=ndjson", NULL,
                            o->timeout_s, &r.export_big_s, &k);
    r.rows_big = k.lines;
    fprintf(stderr, "load: export of big: %zu rows in %.2f s (HTTP %ld)\n", r.rows_big,
            r.export_big_s, r.export_big_st);
    /* the export may have been cut: a fresh connection for what follows */
    curl_easy_cleanup(c);
    if ((c = curl_easy_init()) == NULL)
        goto out;
    /* What a pipeline pulls: only the latest batch and its rewards
     * (?after=, the events fill_log made: whole batches of 2B). */
    char newpath[128];
    size_t big_events =
        (o->log_events + 2 * o->log_batch - 1) / (2 * o->log_batch) * 2 * o->log_batch;
    snprintf(newpath, sizeof newpath, "/v1/experiments/big/export?format=ndjson&after=%zu",
             big_events - 2 * o->log_batch);
    k = (struct counter){0};
    r.export_new_st = timed(c, d.port, "GET", newpath, NULL, o->timeout_s, &r.export_new_s, &k);
    r.rows_new = k.lines;
    r.assign_idle_s = assign_median(c, d.port, "big", 15, o->timeout_s);
    r.resend_first_st = resend(c, d.port, first, o->timeout_s, &r.resend_first_s);
    r.resend_last_st = resend(c, d.port, last, o->timeout_s, &r.resend_last_s);
    fprintf(stderr, "load: re-sent first %.3f s, latest %.3f s\n", r.resend_first_s,
            r.resend_last_s);

    /* an assignment on the same experiment behind re-sent rewards */
    if (behind(c, d.port, o->timeout_s, "POST", "/v1/experiments/big/rewards", first,
               "/v1/experiments/big/assignments", &r.behind_first_s, &r.behind_first_of_s,
               NULL) != 0 ||
        behind(c, d.port, o->timeout_s, "POST", "/v1/experiments/big/rewards", last,
               "/v1/experiments/big/assignments", &r.behind_last_s, &r.behind_last_of_s, NULL) != 0)
        goto out;

    /* the delete, an assignment on another experiment sent during it, then
     * assignments there until the purge of big's log is over */
    r.assign_small_s = assign_median(c, d.port, "small", 15, o->timeout_s);
    {
        double v[N_EMPTY] = {0};
        for (int i = 0; i < N_EMPTY; i++) {
            char path[64];
            snprintf(path, sizeof path, "/v1/experiments/empty%d", i);
            if (timed(c, d.port, "DELETE", path, NULL, o->timeout_s, &v[i], NULL) != 204)
                goto out;
        }
        r.delete_empty_s = med(v, N_EMPTY);
    }
    if (behind(c, d.port, o->timeout_s, "DELETE", "/v1/experiments/big", NULL,
               "/v1/experiments/small/assignments", &r.behind_delete_s, &r.delete_s,
               &r.delete_st) != 0)
        goto out;
    during_purge(c, d.port, db, o->timeout_s, &r);
    /* the same assignments once the purge is over: the yardstick, measured
     * as close to the purge as possible on a machine whose load moves */
    r.assign_after_s = assign_median(c, d.port, "small", 31, o->timeout_s);
    loadavg(load1, sizeof load1);

    FILE *f = NULL;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    log_report(f, o, &r, load0, load1);
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        goto out;
    }
    rc = 0;
out:
    if (stop_checked(&d, "banditd", log2) != 0)
        rc = 1;
    free(first);
    free(last);
    free(dummy_first);
    free(dummy_last);
    return finish_run(rc, c, dir);
}

/* --- main ------------------------------------------------------------------------ */

/* --- metrics: a scrape with many experiments (issue 12) ------------------------- */

/* Experiments e{from}…e{to − 1}: created, 6 assignments each, rewarded. */
struct maker {
    size_t from, to;
    unsigned port;
    int failed;
};

static void *make_main(void *arg)
{
    struct maker *m = arg;
    CURL *c = curl_easy_init();
    if (c == NULL) {
        m->failed = 1;
        return NULL;
    }
    for (size_t i = m->from; i < m->to && !m->failed; i++) {
        char id[32], path[96];
        json_t *j = NULL;
        snprintf(id, sizeof id, "e%zu", i);
        if (create_experiment(c, m->port, id) != 0) {
            m->failed = 1;
            break;
        }
        snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
        if (http(c, m->port, "POST", path, "{\"count\":6}", &j) != 201)
            m->failed = 1;
        char *rb = m->failed ? NULL : rewards_body(json_object_get(j, "assignments"));
        json_decref(j);
        snprintf(path, sizeof path, "/v1/experiments/%s/rewards", id);
        if (rb == NULL || http(c, m->port, "POST", path, rb, NULL) != 200)
            m->failed = 1;
        free(rb);
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* Scrapes /metrics in a loop until *stop. */
struct scraper {
    unsigned port;
    atomic_int stop;
    size_t n;
    pthread_t t;
};

static void *scrape_main(void *arg)
{
    struct scraper *s = arg;
    CURL *c = curl_easy_init();
    double secs;
    while (c != NULL && !atomic_load(&s->stop)) {
        if (timed(c, s->port, "GET", "/metrics", NULL, 60, &secs, NULL) != 200)
            break;
        s->n++;
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* The text of GET path (new string, or NULL). */
static char *get_text(CURL *c, unsigned port, const char *path)
{
    char url[256];
    struct buf b = {NULL, 0};
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) != CURLE_OK) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

#define SCRAPES 21

static int metrics_mode(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", db[256], log[256], load0[64], load1[64], cap[32];
    struct proc d = {0};
    int rc = 1;
    size_t nexp = o->experiments_given ? o->experiments : 10000;
    CURL *c = curl_easy_init();
    if (c == NULL || mkdtemp(dir) == NULL)
        return 1;
    snprintf(db, sizeof db, "%s/metrics.db", dir);
    snprintf(log, sizeof log, "%s/banditd.log", dir);
    snprintf(cap, sizeof cap, "%ld", o->metrics_cap);
    char *argv[] = {mut(o->daemon),
                    mut("--listen"),
                    mut("127.0.0.1:0"),
                    mut("--db"),
                    db,
                    mut("--sync"),
                    mut("normal"),
                    mut("--max-experiments"),
                    mut("1000000"),
                    o->metrics_cap >= 0 ? mut("--metrics-experiments") : NULL,
                    cap,
                    NULL};
    loadavg(load0, sizeof load0);
    if (proc_start(&d, argv, log) != 0)
        goto out;
    enum { NT = 8 };
    struct maker m[NT];
    pthread_t t[NT];
    int started = 0, failed = 0;
    double t0 = now_s();
    for (; started < NT; started++) {
        m[started] = (struct maker){.port = d.port,
                                    .from = nexp * (size_t)started / NT,
                                    .to = nexp * (size_t)(started + 1) / NT};
        if (pthread_create(&t[started], NULL, make_main, &m[started]) != 0) {
            failed = 1;
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        failed |= m[i].failed;
    }
    if (failed) {
        fprintf(stderr, "load: creating the experiments failed\n");
        goto out;
    }
    fprintf(stderr, "load: %zu experiments made in %.1f s\n", nexp, now_s() - t0);

    double first = 0, v[SCRAPES];
    struct counter k = {0};
    if (timed(c, d.port, "GET", "/metrics", NULL, o->timeout_s, &first, &k) != 200)
        goto out;
    for (int i = 0; i < SCRAPES; i++)
        if (timed(c, d.port, "GET", "/metrics", NULL, o->timeout_s, &v[i], NULL) != 200)
            goto out;
    double worst = v[0];
    for (int i = 1; i < SCRAPES; i++)
        worst = v[i] > worst ? v[i] : worst;
    double p50 = med(v, SCRAPES);
    char *text = get_text(c, d.port, "/metrics");
    size_t shown = 0;
    for (const char *p = text; p != NULL && (p = strstr(p, "\nbanditd_experiment_info{")); p++)
        shown++;
    free(text);
    double idle = assign_median(c, d.port, "e0", 32, o->timeout_s);
    struct scraper sc = {.port = d.port};
    atomic_init(&sc.stop, 0);
    if (pthread_create(&sc.t, NULL, scrape_main, &sc) != 0)
        goto out;
    usleep(20000);
    double busy = assign_median(c, d.port, "e0", 32, o->timeout_s);
    atomic_store(&sc.stop, 1);
    pthread_join(sc.t, NULL);
    loadavg(load1, sizeof load1);

    FILE *f = NULL;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    emit(f, "## /metrics with %zu experiments (bench/load metrics)\n\n", nexp);
    emit(f,
         "%zu experiments (3 arms, adapt, 6 assignments each, rewarded), %s; load average "
         "%s before, %s after.\n\n",
         nexp,
         o->metrics_cap >= 0 ? "--metrics-experiments as given" : "the daemon's default flags",
         load0, load1);
    emit(f, "| what | figure |\n| --- | ---: |\n");
    emit(f, "| first scrape (nothing cached) | %.1f ms |\n", first * 1e3);
    emit(f, "| scrape, median of %d | %.1f ms |\n", SCRAPES, p50 * 1e3);
    emit(f, "| scrape, largest of %d | %.1f ms |\n", SCRAPES, worst * 1e3);
    emit(f, "| exposition | %zu bytes, %zu lines |\n", k.bytes, k.lines);
    emit(f, "| experiments with series of their own | %zu |\n", shown);
    emit(f, "| assignment, median of 32, idle | %.2f ms |\n", idle * 1e3);
    emit(f, "| assignment, median of 32, while scraping in a loop (%zu scrapes) | %.2f ms |\n\n",
         sc.n, busy * 1e3);
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        goto out;
    }
    rc = 0;
out:
    if (stop_checked(&d, "banditd", log) != 0)
        rc = 1;
    return finish_run(rc, c, dir);
}

/* --- blocks ------------------------------------------------------------------------ */

/* Visitors served from blocks of b for `secs` on experiment id, one
 * request at a time on c; the visitors, or −1 on an error. *reqs gets the
 * requests made. */
static long serve_blocks(CURL *c, unsigned port, const char *id, size_t b, double secs, long *reqs)
{
    char path[128], rpath[128], spath[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
    snprintf(rpath, sizeof rpath, "/v1/experiments/%s/rewards", id);
    snprintf(spath, sizeof spath, "/v1/experiments/%s/assignments/served", id);
    long visitors = 0;
    *reqs = 0;
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        char body[64];
        if (b == 1)
            snprintf(body, sizeof body, "{\"unit\":\"v%ld\"}", visitors);
        else
            snprintf(body, sizeof body, "{\"count\":%zu}", b);
        json_t *got = NULL;
        long st = http(c, port, "POST", path, body, &got);
        (*reqs)++;
        json_t *list = json_object_get(got, "assignments");
        if ((st != 200 && st != 201) || json_array_size(list) != b) {
            fprintf(stderr, "load: blocks: lease of %zu: HTTP %ld\n", b, st);
            json_decref(got);
            return -1;
        }
        json_t *rewards = json_array(), *served = json_array();
        size_t i;
        json_t *a;
        json_array_foreach(list, i, a)
        {
            char unit[32];
            snprintf(unit, sizeof unit, "v%ld", visitors);
            json_t *aid = json_object_get(a, "id");
            json_array_append_new(rewards, json_pack("{s:O,s:i}", "assignment_id", aid, "reward",
                                                     (int)(visitors % 2)));
            json_array_append_new(served,
                                  json_pack("{s:O,s:s}", "assignment_id", aid, "unit", unit));
            visitors++;
        }
        json_decref(got);
        json_t *rb = json_pack("{s:o}", "rewards", rewards);
        json_t *sb = json_pack("{s:o}", "served", served);
        char *rtext = json_dumps(rb, JSON_COMPACT), *stext = json_dumps(sb, JSON_COMPACT);
        json_decref(rb);
        json_decref(sb);
        long st_s = b == 1 ? 200 : http(c, port, "POST", spath, stext, NULL);
        long st_r = http(c, port, "POST", rpath, rtext, NULL);
        *reqs += b == 1 ? 1 : 2;
        free(rtext);
        free(stext);
        if (st_s != 200 || st_r != 200) {
            fprintf(stderr, "load: blocks: served HTTP %ld, rewards HTTP %ld\n", st_s, st_r);
            return -1;
        }
    }
    return visitors;
}

static int blocks_mode(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", db[256], log[256], load0[64], load1[64];
    struct proc d = {0};
    int rc = 1;
    CURL *c = curl_easy_init();
    if (c == NULL || mkdtemp(dir) == NULL) {
        fprintf(stderr, "load: setup failed\n");
        return 1;
    }
    snprintf(db, sizeof db, "%s/blocks.db", dir);
    snprintf(log, sizeof log, "%s/banditd.log", dir);
    static const size_t sizes[] = {1, 10, 100};
    double vps[3] = {0}, per_visitor[3] = {0};
    struct result own[2];
    loadavg(load0, sizeof load0);
    if (daemon_start(o, &d, db, o->sync, log) != 0)
        goto out;
    for (size_t k = 0; k < 3; k++) {
        char id[32];
        long reqs = 0;
        snprintf(id, sizeof id, "blocks-%zu", sizes[k]);
        if (create_experiment(c, d.port, id) != 0)
            goto out;
        double t0 = now_s();
        long v = serve_blocks(c, d.port, id, sizes[k], o->duration, &reqs);
        double secs = now_s() - t0;
        if (v < 0)
            goto out;
        vps[k] = (double)v / secs;
        per_visitor[k] = (double)reqs / (double)v;
        fprintf(stderr, "load: blocks of %zu: %.0f visitors/s\n", sizes[k], vps[k]);
    }
    if (create_experiment(c, d.port, "own") != 0)
        goto out;
    /* wrk needs a connection per thread: 2 is its least */
    own[0] = run_wrk(o, WRK_THREADS, "assign.lua", d.port, "/v1/experiments/own/assignments", NULL);
    own[1] = run_wrk(o, 64, "assign.lua", d.port, "/v1/experiments/own/assignments", NULL);
    if (!own[0].ok || !own[1].ok)
        goto out;
    loadavg(load1, sizeof load1);
    FILE *f = NULL;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    emit(f, "## Assignment blocks: visitors one client serves (bench/load blocks)\n\n");
    emit(f,
         "%ld cores; load average before %s, after %s; banditd --sync %s, %u HTTP threads; one "
         "client process, one kept-alive connection, %u s per row. A visitor: an assignment "
         "and its reward; with blocks, one lease, one served batch and one rewards batch per "
         "block. Against the daemon's own assignment throughput in the same run (wrk -t%d "
         "assign.lua, %u s): %.0f/s at %d connections, %.0f/s at 64.\n\n",
         cores, load0, load1, o->sync, o->threads, o->duration, WRK_THREADS, o->duration,
         own[0].rps, WRK_THREADS, own[1].rps);
    emit(f,
         "| block | visitors/s | requests per visitor | ÷ assignments/s, %d conns | ÷ 64 conns |\n",
         WRK_THREADS);
    emit(f, "| --- | --- | --- | --- | --- |\n");
    for (size_t k = 0; k < 3; k++)
        emit(f, "| %zu | %.0f | %.2f | %.2f | %.2f |\n", sizes[k], vps[k], per_visitor[k],
             vps[k] / own[0].rps, vps[k] / own[1].rps);
    emit(f, "\n");
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        goto out;
    }
    rc = 0;
out:
    if (stop_checked(&d, "banditd", log) != 0)
        rc = 1;
    return finish_run(rc, c, dir);
}

/* --- pending: a request's cost against the pending assignments ----------------------- */

#define PEND_THREADS 8 /* client connections */
#define PEND_BLOCK 100 /* assignments per request (count), rewards per batch */

/* One client connection's cycles: an assignments request of PEND_BLOCK,
 * their ids queued, and once more than `lag` wait, a rewards batch for the
 * oldest PEND_BLOCK. The queue is kept between runs (the fill leaves it
 * full), so the experiment's pending assignments stay at the fill's level
 * while the timed runs go on. */
struct cycler {
    const char *id;
    size_t lag;            /* ids this connection keeps unrewarded */
    double secs;           /* run for this long; 0: until lag ids wait (the fill) */
    pthread_barrier_t *go; /* every connection starts its run at once */
    char **q;              /* ring of ids awaiting their reward (owned) */
    size_t qhead, qn, qcap;
    long cycles, value; /* cycles of the last run; rewards alternate 0 and 1 */
    double *lat;        /* the last run's assignment latencies, seconds (owned) */
    size_t nlat, caplat;
    unsigned port;
    int failed;
};

static int cyc_push(struct cycler *y, const char *id)
{
    if (y->qn == y->qcap) {
        size_t ncap = y->qcap ? y->qcap * 2 : 1024;
        char **n = malloc(ncap * sizeof *n);
        if (n == NULL)
            return -1;
        for (size_t i = 0; i < y->qn; i++)
            n[i] = y->q[(y->qhead + i) % y->qcap];
        free(y->q);
        y->q = n;
        y->qcap = ncap;
        y->qhead = 0;
    }
    char *copy = strdup(id);
    if (copy == NULL)
        return -1;
    y->q[(y->qhead + y->qn++) % y->qcap] = copy;
    return 0;
}

/* One cycle on c: 0, or −1 (said why). */
static int cyc_step(struct cycler *y, CURL *c)
{
    char path[128], rpath[128], body[64];
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", y->id);
    snprintf(rpath, sizeof rpath, "/v1/experiments/%s/rewards", y->id);
    snprintf(body, sizeof body, "{\"count\":%d}", PEND_BLOCK);
    json_t *got = NULL;
    double t0 = now_s();
    long st = http(c, y->port, "POST", path, body, &got);
    double dt = now_s() - t0;
    json_t *list = json_object_get(got, "assignments");
    size_t i;
    json_t *a;
    int rc = -1;
    if (st != 201 || json_array_size(list) != PEND_BLOCK) {
        fprintf(stderr, "load: pending: assignments on %s: HTTP %ld\n", y->id, st);
        goto out;
    }
    if (y->secs > 0) {
        if (y->nlat == y->caplat) {
            size_t ncap = y->caplat ? y->caplat * 2 : 1024;
            double *n = realloc(y->lat, ncap * sizeof *n);
            if (n == NULL)
                goto out;
            y->lat = n;
            y->caplat = ncap;
        }
        y->lat[y->nlat++] = dt;
    }
    json_array_foreach(list, i, a)
    {
        const char *id = json_string_value(json_object_get(a, "id"));
        if (id == NULL || cyc_push(y, id) != 0)
            goto out;
    }
    if (y->qn > y->lag) {
        json_t *rewards = json_array();
        for (int k = 0; k < PEND_BLOCK && y->qn > 0; k++) {
            char *id = y->q[y->qhead];
            y->qhead = (y->qhead + 1) % y->qcap;
            y->qn--;
            json_array_append_new(rewards, json_pack("{s:s,s:i}", "assignment_id", id, "reward",
                                                     (int)(y->value++ % 2)));
            free(id);
        }
        json_t *rb = json_pack("{s:o}", "rewards", rewards);
        char *text = json_dumps(rb, JSON_COMPACT);
        json_decref(rb);
        long sr = text != NULL ? http(c, y->port, "POST", rpath, text, NULL) : 0;
        free(text);
        if (sr != 200) {
            fprintf(stderr, "load: pending: rewards on %s: HTTP %ld\n", y->id, sr);
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(got);
    return rc;
}

static void *cyc_main(void *arg)
{
    struct cycler *y = arg;
    CURL *c = curl_easy_init();
    y->cycles = 0;
    y->nlat = 0;
    pthread_barrier_wait(y->go);
    if (c == NULL) {
        y->failed = 1;
        return NULL;
    }
    double t0 = now_s();
    while (!y->failed && (y->secs > 0 ? now_s() - t0 < y->secs : y->qn < y->lag)) {
        if (cyc_step(y, c) != 0)
            y->failed = 1;
        y->cycles++;
    }
    curl_easy_cleanup(c);
    return NULL;
}

static void cyc_free(struct cycler *y)
{
    for (size_t i = 0; i < y->qn; i++)
        free(y->q[(y->qhead + i) % y->qcap]);
    free(y->q);
    free(y->lat);
}

struct pend_run {
    double aps;              /* assignments per second, every connection */
    double p50, p99, worst;  /* the assignments requests' latency, ms */
    long long pending;       /* the experiment's pending assignments after the run */
    double nb_p99, nb_worst; /* the neighbour's (when one ran), ms */
};

/* The p99 and largest of y's latencies, ms. */
static void lat_tail(const struct cycler *y, double *p99, double *worst)
{
    double *v = malloc((y->nlat ? y->nlat : 1) * sizeof *v);
    *p99 = *worst = 0;
    if (v == NULL)
        return;
    for (size_t j = 0; j < y->nlat; j++)
        v[j] = y->lat[j] * 1e3;
    qsort(v, y->nlat, sizeof *v, cmp_d);
    if (y->nlat > 0) {
        *p99 = v[(y->nlat * 99) / 100];
        *worst = v[y->nlat - 1];
    }
    free(v);
}

/* The experiment's pending assignments (GET status), or −1. */
static long long pending_now(CURL *c, unsigned port, const char *id)
{
    char path[128];
    json_t *st = NULL;
    snprintf(path, sizeof path, "/v1/experiments/%s/status", id);
    long code = http(c, port, "GET", path, NULL, &st);
    json_t *p = json_object_get(st, "pending");
    long long n = code == 200 && json_is_integer(p) ? (long long)json_integer_value(p) : -1;
    json_decref(st);
    return n;
}

/* One run of the PEND_THREADS connections y[] (secs 0: the fill), and of
 * the neighbour nb alongside when not NULL (its latencies apart). 0 or −1. */
static int pend_run(struct cycler *y, struct cycler *nb, double secs, CURL *c, struct pend_run *out)
{
    pthread_barrier_t go;
    pthread_t t[PEND_THREADS + 1];
    struct cycler *conn[PEND_THREADS + 1];
    int started = 0, failed = 0, want = 0;
    for (; want < PEND_THREADS; want++)
        conn[want] = &y[want];
    if (nb != NULL)
        conn[want++] = nb;
    pthread_barrier_init(&go, NULL, (unsigned)want + 1);
    for (; started < want; started++) {
        conn[started]->secs = secs;
        conn[started]->go = &go;
        if (pthread_create(&t[started], NULL, cyc_main, conn[started]) != 0)
            break;
    }
    if (started < want) {
        /* the barrier cannot be passed: nothing was sent */
        fprintf(stderr, "load: pthread_create failed\n");
        exit(1);
    }
    double t0 = now_s();
    pthread_barrier_wait(&go);
    long cycles = 0;
    size_t nlat = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        failed |= conn[i]->failed;
        if (i == PEND_THREADS)
            continue; /* the neighbour: its latencies apart */
        cycles += y[i].cycles;
        nlat += y[i].nlat;
    }
    double wall = now_s() - t0;
    pthread_barrier_destroy(&go);
    if (failed || out == NULL)
        return failed ? -1 : 0;
    double *all = malloc((nlat ? nlat : 1) * sizeof *all);
    if (all == NULL)
        return -1;
    size_t k = 0;
    for (int i = 0; i < PEND_THREADS; i++)
        for (size_t j = 0; j < y[i].nlat; j++)
            all[k++] = y[i].lat[j] * 1e3;
    qsort(all, k, sizeof *all, cmp_d);
    out->aps = (double)cycles * PEND_BLOCK / wall;
    out->p50 = k ? all[k / 2] : 0;
    out->p99 = k ? all[(k * 99) / 100] : 0;
    out->worst = k ? all[k - 1] : 0;
    out->pending = pending_now(c, y[0].port, y[0].id);
    if (nb != NULL)
        lat_tail(nb, &out->nb_p99, &out->nb_worst);
    free(all);
    return 0;
}

/* The create body of experiment id. stop_rule none: equal means for a long
 * time must not end a run in a stop (assignments would then be
 * exploitations, never pending). */
static void pend_body(char *body, size_t len, const char *id)
{
    snprintf(body, len,
             "{\"id\":\"%s\",\"policy\":{\"name\":\"adapt\"},\"arms\":[\"a\",\"b\",\"c\"],"
             "\"seed\":1,\"stop_rule\":\"none\",\"assignment_ttl_s\":86400}",
             id);
}

static int pending_mode(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", db[256], log[256], load0[64], load1[64];
    struct proc d = {0};
    struct cycler big[PEND_THREADS], zero[PEND_THREADS], nb = {0};
    struct pend_run rb[MAX_PAIRS], rz[MAX_PAIRS];
    int rc = 1;
    CURL *c = curl_easy_init();
    memset(big, 0, sizeof big);
    memset(zero, 0, sizeof zero);
    if (c == NULL || mkdtemp(dir) == NULL) {
        fprintf(stderr, "load: setup failed\n");
        return 1;
    }
    snprintf(db, sizeof db, "%s/pending.db", dir);
    snprintf(log, sizeof log, "%s/banditd.log", dir);
    loadavg(load0, sizeof load0);
    if (daemon_start(o, &d, db, o->sync, log) != 0)
        goto out;
    char body[256];
    pend_body(body, sizeof body, "big");
    if (http(c, d.port, "POST", "/v1/experiments", body, NULL) != 201) {
        fprintf(stderr, "load: pending: creating the experiment failed\n");
        goto out;
    }
    for (int i = 0; i < PEND_THREADS; i++) {
        /* a whole number of blocks: the fill ends when a connection holds
         * exactly its lag (with a part block it would reward and refill
         * forever) */
        big[i] = (struct cycler){.port = d.port,
                                 .id = "big",
                                 .lag = (o->pending / PEND_THREADS + PEND_BLOCK - 1) / PEND_BLOCK *
                                        PEND_BLOCK};
        zero[i] = (struct cycler){.port = d.port, .lag = 0};
    }
    double f0 = now_s();
    if (pend_run(big, NULL, 0, c, NULL) != 0)
        goto out;
    /* the neighbour: one connection on an experiment of its own, rewarding
     * at once, alongside the runs of big (its snapshots' writes) */
    pend_body(body, sizeof body, "neighbour");
    if (http(c, d.port, "POST", "/v1/experiments", body, NULL) != 201)
        goto out;
    nb = (struct cycler){.port = d.port, .id = "neighbour", .lag = 0};
    double fill_s = now_s() - f0;
    long long filled = pending_now(c, d.port, "big");
    fprintf(stderr, "load: pending: %lld pending in %.1f s\n", filled, fill_s);
    char ids[MAX_PAIRS][32];
    for (unsigned p = 0; p < o->pairs; p++) {
        /* a fresh experiment each pair: ~0 pending in every run of it */
        snprintf(ids[p], sizeof ids[p], "zero-%u", p);
        pend_body(body, sizeof body, ids[p]);
        if (http(c, d.port, "POST", "/v1/experiments", body, NULL) != 201)
            goto out;
        for (int i = 0; i < PEND_THREADS; i++)
            zero[i].id = ids[p];
        /* zero first in even pairs, big first in odd ones: a neighbour's
         * load falls on both alike */
        int first_zero = p % 2 == 0;
        if (pend_run(first_zero ? zero : big, &nb, o->duration, c, first_zero ? &rz[p] : &rb[p]) !=
                0 ||
            pend_run(first_zero ? big : zero, &nb, o->duration, c, first_zero ? &rb[p] : &rz[p]) !=
                0)
            goto out;
        fprintf(stderr, "load: pending: pair %u: %.0f/s at %lld pending, %.0f/s at %lld\n", p,
                rb[p].aps, rb[p].pending, rz[p].aps, rz[p].pending);
    }
    loadavg(load1, sizeof load1);
    double ratio[MAX_PAIRS] = {0}, ab[MAX_PAIRS] = {0}, az[MAX_PAIRS] = {0};
    double pb[MAX_PAIRS] = {0}, pz[MAX_PAIRS] = {0}, wb = 0, wz = 0;
    double pnb[MAX_PAIRS] = {0}, pnz[MAX_PAIRS] = {0}, wnb = 0, wnz = 0;
    long long lo = filled, hi = filled, zmax = 0;
    for (unsigned p = 0; p < o->pairs; p++) {
        pnb[p] = rb[p].nb_p99;
        pnz[p] = rz[p].nb_p99;
        wnb = rb[p].nb_worst > wnb ? rb[p].nb_worst : wnb;
        wnz = rz[p].nb_worst > wnz ? rz[p].nb_worst : wnz;
        ratio[p] = rz[p].aps > 0 ? rb[p].aps / rz[p].aps : 0;
        ab[p] = rb[p].aps;
        az[p] = rz[p].aps;
        pb[p] = rb[p].p99;
        pz[p] = rz[p].p99;
        wb = rb[p].worst > wb ? rb[p].worst : wb;
        wz = rz[p].worst > wz ? rz[p].worst : wz;
        lo = rb[p].pending < lo ? rb[p].pending : lo;
        hi = rb[p].pending > hi ? rb[p].pending : hi;
        zmax = rz[p].pending > zmax ? rz[p].pending : zmax;
    }
    double r = med(ratio, o->pairs);
    FILE *f = NULL;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    emit(f, "## Pending assignments: a request's cost against them (bench/load pending)\n\n");
    emit(f,
         "banditd --sync %s, %u HTTP threads; load average before %s, after %s. %d client "
         "connections (libcurl, kept alive), each cycling: an assignments request of count=%d, "
         "then a rewards batch of %d for the oldest it holds once it holds more than its share "
         "of the pending target. One experiment filled to %lld pending (%.1f s, no rewards), "
         "then %u pairs of %u s runs (alternating which goes first): that experiment (%lld to "
         "%lld pending after its runs) against a fresh one rewarding at once (at most %lld "
         "pending). Same request mix on both sides, and alongside every run one more connection "
         "on a third experiment rewarding at once (the neighbour).%s\n\n",
         o->sync, o->threads, load0, load1, PEND_THREADS, PEND_BLOCK, PEND_BLOCK, filled, fill_s,
         o->pairs, o->duration, lo, hi, zmax,
         o->no_snapshots ? " The daemon ran with --no-snapshots." : "");
    emit(f, "| experiment | assignments/s (median) | p99 ms (median) | largest ms |\n");
    emit(f, "| --- | ---: | ---: | ---: |\n");
    emit(f, "| ~%lld pending | %.0f | %.1f | %.1f |\n", filled, med(ab, o->pairs),
         med(pb, o->pairs), wb);
    emit(f, "| ~0 pending | %.0f | %.1f | %.1f |\n", med(az, o->pairs), med(pz, o->pairs), wz);
    emit(f, "| its neighbour (1 connection) | | %.1f | %.1f |\n", med(pnb, o->pairs), wnb);
    emit(f, "| ~0's neighbour | | %.1f | %.1f |\n\n", med(pnz, o->pairs), wnz);
    emit(f, "Ratio (median of the per-pair ratios): **%.2f** (target ≥ 0.5: %s).\n\n", r,
         r >= 0.5 ? "met" : "MISSED");
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < PEND_THREADS; i++) {
        cyc_free(&big[i]);
        cyc_free(&zero[i]);
    }
    cyc_free(&nb);
    if (stop_checked(&d, "banditd", log) != 0)
        rc = 1;
    return finish_run(rc, c, dir);
}

/* --- pg: PostgreSQL against SQLite, and daemons sharing one PostgreSQL ---------------- */

/* The writer's figures from /metrics (store.h's store_stats). */
struct storefig {
    double commits, writes, commit_s;
};

static int store_figures(CURL *c, unsigned port, struct storefig *out)
{
    char *t = get_text(c, port, "/metrics");
    memset(out, 0, sizeof *out);
    if (t == NULL)
        return -1;
    for (char *l = t; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        (void)(sscanf(l, "banditd_store_commits_total %lf", &out->commits) == 1 ||
               sscanf(l, "banditd_store_writes_total %lf", &out->writes) == 1 ||
               sscanf(l, "banditd_store_commit_duration_seconds_sum %lf", &out->commit_s) == 1);
    }
    free(t);
    return 0;
}

/* One engine's side of a pg row: its daemon, its scenario, its runs. */
struct side {
    struct proc *d;
    struct scenario sc;
    struct result r[MAX_PAIRS];
    double per_commit[MAX_PAIRS], ms_commit[MAX_PAIRS];
};

/* One wrk run of side e's scenario (pair i), with the writer's figures
 * over it. */
static int side_run(const struct opts *o, CURL *c, unsigned conns, struct side *e, unsigned i)
{
    char args[128];
    struct storefig a, b;
    if (e->sc.reward)
        snprintf(args, sizeof args, "%s %zu %zu %d", e->sc.token, (size_t)i * e->sc.n_per_run,
                 e->sc.n_per_run / WRK_THREADS, WRK_THREADS);
    if (store_figures(c, e->d->port, &a) != 0)
        return -1;
    e->r[i] = run_wrk(o, conns, e->sc.script, e->d->port, e->sc.path, e->sc.reward ? args : NULL);
    if (!e->r[i].ok || store_figures(c, e->d->port, &b) != 0)
        return -1;
    double n = b.commits - a.commits;
    e->per_commit[i] = n > 0 ? (b.writes - a.writes) / n : 0;
    e->ms_commit[i] = n > 0 ? 1000 * (b.commit_s - a.commit_s) / n : 0;
    return 0;
}

static int pg_mode(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", sq[256], uri[512], err[1024], log1[256], log2[256];
    char load0[64], load1[64];
    struct proc ds = {0}, dp = {0};
    int rc = 1;
    CURL *c = curl_easy_init();
    FILE *f = NULL;

    if (c == NULL || mkdtemp(dir) == NULL) {
        fprintf(stderr, "load: setup failed\n");
        return 1;
    }
    if (pgserver_new_db(uri, sizeof uri, err, sizeof err) != 0) {
        fprintf(stderr, "load: PostgreSQL: %s\n", err);
        goto out;
    }
    snprintf(sq, sizeof sq, "%s/sqlite.db", dir);
    snprintf(log1, sizeof log1, "%s/sqlite.log", dir);
    snprintf(log2, sizeof log2, "%s/postgres.log", dir);
    loadavg(load0, sizeof load0);
    if (daemon_start(o, &ds, sq, "full", log1) != 0 || daemon_start(o, &dp, uri, "full", log2) != 0)
        goto out;
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    char date[64];
    utc_now(date, sizeof date);
    emit(f, "## PostgreSQL against SQLite (bench/load pg)\n\n");
    emit(f,
         "%s. Two daemons at once, each with %u HTTP threads: one on a fresh SQLite file (--sync "
         "full: fsync at every commit), one on a fresh database of a PostgreSQL server the "
         "benchmark starts on this machine (initdb defaults, fsync on, synchronous_commit on, "
         "a Unix socket). wrk -t%d, %u pairs of %u s runs per row, SQLite first in even pairs "
         "and PostgreSQL first in odd ones; figures are medians over the pairs, ratios the "
         "medians of the per-pair ratios PostgreSQL ÷ SQLite. Writes per commit and ms per "
         "commit come from each daemon's /metrics over the run (banditd_store_*). Rewards: "
         "each for a fresh assignment created beforehand. Load average before %s.\n\n",
         date, o->threads, WRK_THREADS, o->pairs, o->duration, load0);
    emit(f, "| endpoint | conns | SQLite req/s | p99 ms | writes/commit | ms/commit | "
            "PostgreSQL req/s | p99 ms | writes/commit | ms/commit | req/s ratio | p99 ratio |\n");
    emit(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "|\n");
    for (size_t ci = 0; ci < o->nconns; ci++) {
        unsigned n = o->conns[ci];
        /* fresh assignments for each reward run: 1.5 times the most
         * assignments either engine served in one run of this count */
        size_t per_run = 1000;
        for (int k = 0; k < 2; k++) {
            struct side e[2] = {{.d = &ds}, {.d = &dp}};
            for (int j = 0; j < 2; j++) {
                char id[64];
                if (k == 0) {
                    e[j].sc = (struct scenario){.what = "assignments", .script = "assign.lua"};
                    snprintf(id, sizeof id, "assign-%u", n);
                    snprintf(e[j].sc.path, sizeof e[j].sc.path, "/v1/experiments/%s/assignments",
                             id);
                    if (create_experiment(c, e[j].d->port, id) != 0)
                        goto out;
                } else {
                    e[j].sc =
                        (struct scenario){.what = "rewards", .script = "reward.lua", .reward = 1};
                    snprintf(id, sizeof id, "reward-%u-", n);
                    if (prepare_rewards(c, e[j].d->port, id, per_run, o->pairs, &e[j].sc) != 0)
                        goto out;
                }
            }
            for (unsigned i = 0; i < o->pairs; i++)
                for (int j = 0; j < 2; j++)
                    if (side_run(o, c, n, &e[(j + i) % 2], i) != 0)
                        goto out;
            double v[10][MAX_PAIRS] = {{0}};
            for (unsigned i = 0; i < o->pairs; i++) {
                for (size_t j = 0; j < 2; j++) {
                    v[4 * j][i] = e[j].r[i].rps;
                    v[4 * j + 1][i] = e[j].r[i].p99_ms;
                    v[4 * j + 2][i] = e[j].per_commit[i];
                    v[4 * j + 3][i] = e[j].ms_commit[i];
                }
                v[8][i] = e[0].r[i].rps > 0 ? e[1].r[i].rps / e[0].r[i].rps : 0;
                v[9][i] = e[1].r[i].p99_ms > 0 ? e[0].r[i].p99_ms / e[1].r[i].p99_ms : 0;
            }
            for (unsigned i = 0; i < o->pairs; i++)
                for (size_t j = 0; j < 2; j++)
                    if ((size_t)(e[j].r[i].rps * o->duration * 1.5) + 1000 > per_run)
                        per_run = (size_t)(e[j].r[i].rps * o->duration * 1.5) + 1000;
            long errors = 0;
            for (unsigned i = 0; i < o->pairs; i++)
                errors += e[0].r[i].non2xx + e[0].r[i].sock_errors + e[1].r[i].non2xx +
                          e[1].r[i].sock_errors;
            emit(f,
                 "| %s | %u | %.0f | %.2f | %.1f | %.2f | %.0f | %.2f | %.1f | %.2f | %.2f | "
                 "%.2f |\n",
                 e[0].sc.what, n, med(v[0], o->pairs), med(v[1], o->pairs), med(v[2], o->pairs),
                 med(v[3], o->pairs), med(v[4], o->pairs), med(v[5], o->pairs), med(v[6], o->pairs),
                 med(v[7], o->pairs), med(v[8], o->pairs), med(v[9], o->pairs));
            if (errors != 0)
                emit(f, "\n(%ld non-2xx or socket errors in that row)\n\n", errors);
            if (n == 64)
                fprintf(stderr, "load pg: %s at 64: PostgreSQL ÷ SQLite %.2f (target ≥ 0.5)\n",
                        e[0].sc.what, med(v[8], o->pairs));
        }
    }
    loadavg(load1, sizeof load1);
    emit(f,
         "\nLoad average after %s. p99 ratio: SQLite's p99 ÷ PostgreSQL's (1 = as fast). "
         "Target (issue 14): PostgreSQL's req/s ≥ 0.5 of SQLite's.\n\n",
         load1);
    rc = 0;
out:
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        rc = 1;
    }
    if (stop_checked(&ds, "the SQLite daemon", log1) != 0)
        rc = 1;
    if (stop_checked(&dp, "the PostgreSQL daemon", log2) != 0)
        rc = 1;
    return finish_run(rc, c, dir);
}

/* One wrk run on its own thread (the cluster's daemons are loaded at once). */
struct wrk_job {
    const struct opts *o;
    unsigned conns, port;
    const struct scenario *sc;
    unsigned pair;
    struct result r;
};

static void *wrk_main(void *arg)
{
    struct wrk_job *w = arg;
    char args[128];
    if (w->sc->reward)
        snprintf(args, sizeof args, "%s %zu %zu %d", w->sc->token,
                 (size_t)w->pair * w->sc->n_per_run, w->sc->n_per_run / WRK_THREADS, WRK_THREADS);
    w->r =
        run_wrk(w->o, w->conns, w->sc->script, w->port, w->sc->path, w->sc->reward ? args : NULL);
    return NULL;
}

#define CLUSTER_MAX 3

static int cluster_mode(const struct opts *o)
{
    char dir[] = "/tmp/banditd-bench.XXXXXX", uri[512], err[1024], log[CLUSTER_MAX][256];
    char load0[64], load1[64];
    struct proc d[CLUSTER_MAX];
    unsigned total = o->conns[0];
    int rc = 1;
    CURL *c = curl_easy_init();
    FILE *f = NULL;

    memset(d, 0, sizeof d);
    if (c == NULL || mkdtemp(dir) == NULL) {
        fprintf(stderr, "load: setup failed\n");
        return 1;
    }
    if (pgserver_start(err, sizeof err) != 0) {
        fprintf(stderr, "load: PostgreSQL: %s\n", err);
        goto out;
    }
    if (o->out != NULL && (f = fopen(o->out, "w")) == NULL) {
        perror(o->out);
        goto out;
    }
    loadavg(load0, sizeof load0);
    char date[64];
    utc_now(date, sizeof date);
    emit(f, "## Daemons sharing one PostgreSQL (bench/load cluster)\n\n");
    emit(f,
         "%s. 1, 2 and 3 daemons (%u HTTP threads each) on one fresh database of a PostgreSQL "
         "server the benchmark starts on this machine (as in the table above), each owning "
         "the experiments it created; %u connections in all, split evenly over the daemons "
         "(one wrk -t%d per daemon, all at once, on that daemon's own experiment). Figures: "
         "the sum of the daemons' req/s and the largest p99, medians over %u runs of %u s. "
         "Load average before %s.\n\n",
         date, o->threads, total, WRK_THREADS, o->pairs, o->duration, load0);
    emit(f, "| daemons | assignments/s | p99 ms | rewards/s | p99 ms |\n");
    emit(f, "| ---: | ---: | ---: | ---: | ---: |\n");
    for (int nd = 1; nd <= CLUSTER_MAX; nd++) {
        struct scenario sc[CLUSTER_MAX][2];
        double v[4][MAX_PAIRS] = {{0}};
        unsigned conns = total / (unsigned)nd;
        if (pgserver_new_db(uri, sizeof uri, err, sizeof err) != 0) {
            fprintf(stderr, "load: PostgreSQL: %s\n", err);
            goto out;
        }
        for (int i = 0; i < nd; i++) {
            snprintf(log[i], sizeof log[i], "%s/daemon%d-%d.log", dir, nd, i);
            if (daemon_start(o, &d[i], uri, "full", log[i]) != 0)
                goto out;
        }
        /* rewards to spare: 20,000/s per daemon is more than one reaches here */
        size_t per_run = (size_t)20000 * o->duration + 1000;
        for (int i = 0; i < nd; i++) {
            char id[64];
            sc[i][0] = (struct scenario){.what = "assignments", .script = "assign.lua"};
            snprintf(id, sizeof id, "assign-%d", i);
            snprintf(sc[i][0].path, sizeof sc[i][0].path, "/v1/experiments/%s/assignments", id);
            sc[i][1] = (struct scenario){.what = "rewards", .script = "reward.lua", .reward = 1};
            if (create_experiment(c, d[i].port, id) != 0)
                goto out;
            snprintf(id, sizeof id, "reward-%d-", i);
            if (prepare_rewards(c, d[i].port, id, per_run, o->pairs, &sc[i][1]) != 0)
                goto out;
        }
        for (size_t k = 0; k < 2; k++) {
            for (unsigned p = 0; p < o->pairs; p++) {
                struct wrk_job w[CLUSTER_MAX];
                pthread_t t[CLUSTER_MAX];
                int started = 0, failed = 0;
                for (; started < nd; started++) {
                    w[started] = (struct wrk_job){.o = o,
                                                  .conns = conns,
                                                  .port = d[started].port,
                                                  .sc = &sc[started][k],
                                                  .pair = p};
                    if (pthread_create(&t[started], NULL, wrk_main, &w[started]) != 0)
                        break;
                }
                double sum = 0, p99 = 0;
                for (int i = 0; i < started; i++) {
                    pthread_join(t[i], NULL);
                    failed |= !w[i].r.ok || w[i].r.non2xx != 0;
                    sum += w[i].r.rps;
                    p99 = w[i].r.p99_ms > p99 ? w[i].r.p99_ms : p99;
                }
                if (failed || started < nd) {
                    fprintf(stderr, "load: a cluster run failed (%d daemons)\n", nd);
                    goto out;
                }
                v[2 * k][p] = sum;
                v[2 * k + 1][p] = p99;
            }
        }
        emit(f, "| %d | %.0f | %.2f | %.0f | %.2f |\n", nd, med(v[0], o->pairs),
             med(v[1], o->pairs), med(v[2], o->pairs), med(v[3], o->pairs));
        for (int i = 0; i < nd; i++)
            if (proc_stop(&d[i]) != 0) {
                fprintf(stderr, "load: a daemon did not stop cleanly (see %s)\n", log[i]);
                goto out;
            }
    }
    loadavg(load1, sizeof load1);
    emit(f, "\nLoad average after %s.\n\n", load1);
    rc = 0;
out:
    if (f != NULL && fclose(f) != 0) {
        perror(o->out);
        rc = 1;
    }
    for (int i = 0; i < CLUSTER_MAX; i++)
        if (d[i].pid > 0)
            proc_stop(&d[i]);
    return finish_run(rc, c, dir);
}

static int parse_conns(struct opts *o, const char *v)
{
    o->nconns = 0;
    for (const char *p = v; *p && o->nconns < MAX_CONNS;) {
        char *end;
        unsigned long n = strtoul(p, &end, 10);
        if (end == p || n == 0 || n > 10000)
            return -1;
        o->conns[o->nconns++] = (unsigned)n;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return o->nconns > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct opts o = {.daemon = "build/banditd",
                     .bare = "build/bench/bare",
                     .scripts = "bench",
                     .sync = "full",
                     .duration = 3,
                     .experiments = 1000,
                     .assignments = 100000,
                     .pending = 300000,
                     .sync_normal_too = 1,
                     .pairs = 3,
                     .log_events = 1000000,
                     .log_small = 10000,
                     .log_batch = 1000,
                     .timeout_s = 120,
                     .metrics_cap = -1};
    parse_conns(&o, "16,64,256");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = cores > 0 ? (unsigned)cores : 2;
    if (argc < 2 || (strcmp(argv[1], "throughput") != 0 && strcmp(argv[1], "memory") != 0 &&
                     strcmp(argv[1], "log") != 0 && strcmp(argv[1], "metrics") != 0 &&
                     strcmp(argv[1], "blocks") != 0 && strcmp(argv[1], "pg") != 0 &&
                     strcmp(argv[1], "cluster") != 0 && strcmp(argv[1], "pending") != 0)) {
        fprintf(stderr, "usage: load throughput|memory|log|metrics|blocks|pg|cluster|pending "
                        "[options] "
                        "(see bench/load.c)\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            fprintf(stderr, "load: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--daemon") == 0)
            o.daemon = v;
        else if (strcmp(a, "--bare") == 0)
            o.bare = v;
        else if (strcmp(a, "--scripts") == 0)
            o.scripts = v;
        else if (strcmp(a, "--out") == 0)
            o.out = v;
        else if (strcmp(a, "--sync") == 0)
            o.sync = v;
        else if (strcmp(a, "--db") == 0)
            o.db = v;
        else if (strcmp(a, "--duration") == 0)
            o.duration = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--threads") == 0)
            o.threads = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--experiments") == 0) {
            o.experiments = strtoul(v, NULL, 10);
            o.experiments_given = 1;
        } else if (strcmp(a, "--metrics-cap") == 0)
            o.metrics_cap = strtol(v, NULL, 10);
        else if (strcmp(a, "--pending") == 0)
            o.pending = strtoul(v, NULL, 10);
        else if (strcmp(a, "--snapshots") == 0)
            o.no_snapshots = strcmp(v, "off") == 0;
        else if (strcmp(a, "--assignments") == 0)
            o.assignments = strtoul(v, NULL, 10);
        else if (strcmp(a, "--normal-too") == 0)
            o.sync_normal_too = atoi(v);
        else if (strcmp(a, "--pairs") == 0)
            o.pairs = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--events") == 0)
            o.log_events = strtoul(v, NULL, 10);
        else if (strcmp(a, "--small") == 0)
            o.log_small = strtoul(v, NULL, 10);
        else if (strcmp(a, "--batch") == 0)
            o.log_batch = strtoul(v, NULL, 10);
        else if (strcmp(a, "--timeout") == 0)
            o.timeout_s = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--conns") == 0) {
            if (parse_conns(&o, v) != 0) {
                fprintf(stderr, "load: --conns: a list like 16,64,256\n");
                return 2;
            }
        } else {
            fprintf(stderr, "load: unknown option %s\n", a);
            return 2;
        }
    }
    if (o.pairs < 1 || o.pairs > MAX_PAIRS) {
        fprintf(stderr, "load: --pairs: 1 to %d\n", MAX_PAIRS);
        return 2;
    }
    if (o.duration == 0 || o.threads == 0 || o.experiments == 0 || o.assignments == 0 ||
        o.log_batch == 0 || o.log_events < 4 * o.log_batch || o.log_small < 2 * o.log_batch ||
        o.timeout_s == 0) {
        fprintf(stderr, "load: --duration, --threads, --experiments, --assignments, --batch, "
                        "--timeout must be > 0, --events ≥ 4 batches, --small ≥ 2\n");
        return 2;
    }
    (void)signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = strcmp(argv[1], "throughput") == 0 ? throughput(&o)
             : strcmp(argv[1], "memory") == 0   ? memory(&o)
             : strcmp(argv[1], "metrics") == 0  ? metrics_mode(&o)
             : strcmp(argv[1], "blocks") == 0   ? blocks_mode(&o)
             : strcmp(argv[1], "pg") == 0       ? pg_mode(&o)
             : strcmp(argv[1], "cluster") == 0  ? cluster_mode(&o)
             : strcmp(argv[1], "pending") == 0  ? pending_mode(&o)
                                                : log_mode(&o);
    curl_global_cleanup();
    return rc;
}
