/*
 * bench_store.c — event inserts per second through the store's writer.
 *
 *   make build/bench/bench_store && ./build/bench/bench_store [DIR [purge [N]]]
 *
 * For each sync mode: one submission per commit (store_write_sync in a
 * loop), exactly 64 per commit (the writer paused while 64 are queued), and
 * a stream with up to 4096 submissions in flight (the writer groups what it
 * finds). Every submission is one event row. The database lives in DIR
 * (default /tmp) and is removed afterwards.
 *
 * With `purge`: the latency of single writes to one experiment while the
 * log of another (N events, default 200000) is purged after its delete,
 * against the same writes before (store.c's purge between commits).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_test.h"

struct done_count {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long n, errors;
};

static void on_done(void *arg, int err)
{
    struct done_count *d = arg;
    pthread_mutex_lock(&d->mu);
    d->n++;
    if (err)
        d->errors++;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void wait_until(struct done_count *d, long n)
{
    pthread_mutex_lock(&d->mu);
    while (d->n < n)
        pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(struct store_op *op, int64_t exp, int64_t seq)
{
    memset(op, 0, sizeof *op);
    op->kind = STORE_OP_EVENT;
    op->ev.exp = exp;
    op->ev.seq = seq;
    op->ev.ts_ms = 1700000000000 + seq;
    if (seq % 2) {
        op->ev.kind = STORE_EV_ASSIGN;
        op->ev.arm = (int32_t)(seq % 3);
        op->ev.expires_ms = op->ev.ts_ms + 86400000;
        op->ev.value = NAN;
    } else {
        op->ev.kind = STORE_EV_REWARD;
        op->ev.ref = seq - 1;
        op->ev.value = (double)(seq % 5) / 4.0;
    }
}

/* mode 1: sync per write; 64: paused groups of 64; 0: stream */
static void run(const char *dir, enum store_sync sync, int mode, long n)
{
    char path[512], err[256];
    struct store *s;
    struct store_op *ops = calloc((size_t)n, sizeof *ops);
    struct done_count d = {.n = 0};
    struct store_stats st;
    int64_t exp = 0;
    double t0, dt;
    long errors = 0;

    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    snprintf(path, sizeof path, "%s/bench_store.%d.db", dir, (int)getpid());
    s = store_open(path, sync, err, sizeof err);
    if (s == NULL || ops == NULL) {
        fprintf(stderr, "open: %s\n", err);
        exit(1);
    }
    {
        struct store_op c = {
            .kind = STORE_OP_EXP_CREATE, .id = "bench", .config_json = "{}", .rowid_out = &exp};
        store_write_sync(s, &c, 1);
    }
    for (long i = 0; i < n; i++)
        fill(&ops[i], exp, i + 1);

    t0 = now_s();
    if (mode == 1) {
        for (long i = 0; i < n; i++)
            errors += store_write_sync(s, &ops[i], 1) != STORE_OK;
    } else if (mode == 64) {
        for (long i = 0; i < n; i += 64) {
            store_test_pause_writer(s, 1);
            for (long j = i; j < i + 64 && j < n; j++)
                store_submit(s, &ops[j], 1, on_done, &d);
            store_test_pause_writer(s, 0);
            wait_until(&d, i + 64 < n ? i + 64 : n);
        }
    } else {
        for (long i = 0; i < n; i++) {
            if (i >= 4096)
                wait_until(&d, i - 4096 + 1);
            while (store_submit(s, &ops[i], 1, on_done, &d) != STORE_OK)
                usleep(100);
        }
        wait_until(&d, n);
    }
    dt = now_s() - t0;
    errors += d.errors;
    store_get_stats(s, &st);
    printf(
        "%-6s %-10s %8ld inserts %7.3f s %10.0f inserts/s  %6.1f per commit  %7.1f us/commit%s\n",
        sync == STORE_SYNC_FULL ? "FULL" : "NORMAL",
        mode == 1    ? "1/commit"
        : mode == 64 ? "64/commit"
                     : "stream",
        n, dt, (double)n / dt, (double)st.writes / (double)(st.commits ? st.commits : 1),
        (double)st.commit_us_total / (double)(st.commits ? st.commits : 1),
        errors ? "  ERRORS" : "");
    store_close(s);
    (void)unlink(path);
    pthread_cond_destroy(&d.cv);
    pthread_mutex_destroy(&d.mu);
    free(ops);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Latency of single writes to one experiment (store_write_sync) while
 * another experiment's log of n events is purged after its delete,
 * against the same writes before the delete. */
static void purge_run(const char *dir, enum store_sync sync, long n)
{
    enum { IDLE = 200, MAXS = 100000 };
    char path[512], err[256];
    struct store *s;
    int64_t big = 0, small = 0;
    struct store_op *ops = calloc((size_t)n, sizeof *ops), op;
    static double lat[MAXS];
    long seq = 0;

    snprintf(path, sizeof path, "%s/bench_purge.%d.db", dir, (int)getpid());
    s = store_open(path, sync, err, sizeof err);
    if (s == NULL || ops == NULL) {
        fprintf(stderr, "open: %s\n", err);
        exit(1);
    }
    struct store_op c[2] = {
        {.kind = STORE_OP_EXP_CREATE, .id = "big", .config_json = "{}", .rowid_out = &big},
        {.kind = STORE_OP_EXP_CREATE, .id = "small", .config_json = "{}", .rowid_out = &small}};
    store_write_sync(s, c, 2);
    for (long i = 0; i < n; i++)
        fill(&ops[i], big, i + 1);
    for (long i = 0; i < n; i += 4096)
        store_write_sync(s, &ops[i], (size_t)(n - i < 4096 ? n - i : 4096));
    for (int i = 0; i < IDLE; i++) {
        fill(&op, small, ++seq);
        double t = now_s();
        store_write_sync(s, &op, 1);
        lat[i] = now_s() - t;
    }
    qsort(lat, IDLE, sizeof *lat, cmp_double);
    double idle50 = lat[IDLE / 2], idle99 = lat[IDLE * 99 / 100];

    op = (struct store_op){.kind = STORE_OP_EXP_DELETE, .exp = big};
    double t0 = now_s();
    store_write_sync(s, &op, 1);
    double del = now_s() - t0;
    long k = 0;
    int64_t last = 1;
    while (k < MAXS && last > 0) {
        fill(&op, small, ++seq);
        double t = now_s();
        store_write_sync(s, &op, 1);
        lat[k++] = now_s() - t;
        if (k % 16 == 0)
            store_last_seq(s, big, &last); /* 0 once the purge is over */
    }
    double purge = now_s() - t0;
    qsort(lat, (size_t)k, sizeof *lat, cmp_double);
    printf("%-6s purge of %ld events: delete %.2f ms, purge %.2f s; single writes idle p50 %.3f "
           "p99 %.3f ms, during the purge (%ld) p50 %.3f p99 %.3f max %.3f ms\n",
           sync == STORE_SYNC_FULL ? "FULL" : "NORMAL", n, 1e3 * del, purge, 1e3 * idle50,
           1e3 * idle99, k, 1e3 * lat[k / 2], 1e3 * lat[k * 99 / 100], 1e3 * lat[k - 1]);
    store_close(s);
    (void)unlink(path);
    free(ops);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    if (argc > 2 && strcmp(argv[2], "purge") == 0) {
        purge_run(dir, STORE_SYNC_FULL, argc > 3 ? atol(argv[3]) : 200000);
        purge_run(dir, STORE_SYNC_NORMAL, argc > 3 ? atol(argv[3]) : 200000);
        return 0;
    }
    for (int sy = 0; sy < 2; sy++) {
        enum store_sync sync = sy ? STORE_SYNC_NORMAL : STORE_SYNC_FULL;
        run(dir, sync, 1, sy ? 20000 : 2000);
        run(dir, sync, 64, 200000);
        run(dir, sync, 0, 500000);
    }
    return 0;
}
