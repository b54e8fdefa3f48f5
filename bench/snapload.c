/*
 * snapload.c — the load time of one long experiment, with and without
 * snapshots (issue 14 item 4: "the cost of loading an experiment must not
 * grow with its age"; `make bench`).
 *
 *   snapload [--db PATH|URI] [--events N] [--tail T] [--out FILE]
 *
 * Fills experiment `big` (4 arms, ttts, no stop rule: it never stops) with
 * N events written straight through the store (an engine of the same
 * configuration chooses each assignment, rewarded at once, so the log is
 * the one the daemon would have written; the audit chain's column holds a
 * constant, which a replay copies as it is). Then, each time in a fresh
 * registry on a reopened store, as a daemon's start does:
 *   1. loads it with --no-snapshots: the full replay;
 *   2. loads it with snapshots on: a full replay again (there is none yet),
 *      after which the load writes a snapshot of event N − T;
 *   3. appends the last T events (T = 9,999 by default: at most
 *      --snapshot-every − 1 events follow the latest snapshot) and loads
 *      it again: the snapshot and the tail.
 *   4. corrects the reward of a pull near the end (a fresh registry loaded
 *      as in 3, a correction's rebuild timed from the request to its
 *      commit): with --no-snapshots, the whole log replayed (as every
 *      correction did before they started from a snapshot), and with
 *      snapshots, from the latest one before the reward (3's).
 * Writes a markdown table (stdout and --out). The figures that matter are
 * the load from the snapshot (target ≤ 1 s at N = 10⁷) and the
 * correction's ratio, whole log ÷ from a snapshot.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "exp/exp.h"
#include "policies/engine.h"
#include "policies/rng.h"
#include "store/store.h"

#define CHUNK 20000 /* events per write */
#define CHAIN "0000000000000000000000000000000000000000000000000000000000000000"

static const char *const body =
    "{\"id\":\"big\",\"arms\":[\"a\",\"b\",\"c\",\"d\"],\"policy\":{\"name\":\"ttts\"},"
    "\"stop_rule\":\"none\",\"seed\":14}";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_config(const struct exp_limits *lim, struct exp_config *cfg)
{
    json_t *j = json_loads(body, 0, NULL), *errors = json_array();
    int rc = j != NULL && errors != NULL ? exp_config_parse(j, lim, cfg, errors) : -1;
    if (rc != 0) {
        char *e = errors != NULL ? json_dumps(errors, 0) : NULL;
        fprintf(stderr, "snapload: config: %s\n", e != NULL ? e : "?");
        free(e);
    }
    json_decref(j);
    json_decref(errors);
    return rc;
}

static void done_flag(void *arg, int err)
{
    *(int *)arg = err == STORE_OK ? 1 : -1;
}

/* The generator of the log: the engine of the experiment's configuration. */
struct gen {
    struct engine *e;
    gsl_rng *env;
    int64_t seq, ts, ttl_ms, rowid;
};

/* Append n events (assignment, reward, …) through the store. */
static int fill(struct store *st, struct gen *g, uint64_t n)
{
    static const double mu[4] = {0.50, 0.52, 0.54, 0.56};
    struct store_op *ops = calloc(CHUNK, sizeof *ops);
    if (ops == NULL)
        return -1;
    uint64_t left = n;
    while (left > 0) {
        size_t k = 0;
        while (k + 2 <= CHUNK && left >= 2) {
            struct engine_pull p;
            engine_assign(g->e, -1, &p);
            g->ts++;
            struct store_event *a = &ops[k++].ev;
            ops[k - 1].kind = STORE_OP_EVENT;
            *a = (struct store_event){.exp = g->rowid,
                                      .seq = ++g->seq,
                                      .kind = STORE_EV_ASSIGN,
                                      .bandit = (int32_t)p.bandit,
                                      .arm = (int32_t)p.arm,
                                      .value = NAN,
                                      .ts_ms = g->ts,
                                      .expires_ms = g->ts + g->ttl_ms,
                                      .chain = CHAIN};
            double r = gsl_rng_uniform(g->env) < mu[p.arm] ? 1.0 : 0.0;
            engine_reward(g->e, p.bandit, p.arm, r);
            ops[k].kind = STORE_OP_EVENT;
            ops[k++].ev = (struct store_event){.exp = g->rowid,
                                               .seq = ++g->seq,
                                               .kind = STORE_EV_REWARD,
                                               .bandit = (int32_t)p.bandit,
                                               .arm = (int32_t)p.arm,
                                               .value = r,
                                               .ref = g->seq - 1,
                                               .ts_ms = g->ts,
                                               .chain = CHAIN};
            left -= 2;
        }
        if (left == 1) { /* an odd count: one more pending assignment */
            struct engine_pull p;
            engine_assign(g->e, -1, &p);
            ops[k].kind = STORE_OP_EVENT;
            ops[k++].ev = (struct store_event){.exp = g->rowid,
                                               .seq = ++g->seq,
                                               .kind = STORE_EV_ASSIGN,
                                               .bandit = (int32_t)p.bandit,
                                               .arm = (int32_t)p.arm,
                                               .value = NAN,
                                               .ts_ms = ++g->ts,
                                               .expires_ms = g->ts + g->ttl_ms,
                                               .chain = CHAIN};
            left = 0;
        }
        int rc = store_write_sync(st, ops, k);
        if (rc != STORE_OK) {
            fprintf(stderr, "snapload: write: %s\n", store_strerror(rc));
            free(ops);
            return -1;
        }
    }
    free(ops);
    return 0;
}

static int find_rowid(void *arg, const struct store_experiment_row *row)
{
    *(int64_t *)arg = row->rowid;
    return 0;
}

/* One load, as a daemon's start does it: seconds, or −1. */
static double load(const char *db, const struct exp_limits *lim)
{
    char err[256];
    struct store *st = store_open(db, STORE_SYNC_NORMAL, err, sizeof err);
    if (st == NULL) {
        fprintf(stderr, "snapload: %s\n", err);
        return -1;
    }
    exp_registry_init(st, lim);
    double t0 = now_s();
    int rc = exp_registry_load(err, sizeof err);
    double t = now_s() - t0;
    if (rc != 0)
        fprintf(stderr, "snapload: load: %s\n", err);
    exp_registry_free();
    store_close(st); /* commits the snapshot a load may have queued */
    return rc == 0 ? t : -1;
}

static void correction_done(void *arg, int err)
{
    *(int *)arg = err == STORE_OK ? 1 : -1;
}

/* The rewarded pull of `big` whose reward is the latest before event
 * `before` (assignment seq into *seq, its value into *v): 0, or −1. */
static int rewarded(struct store *st, int64_t rowid, int64_t before, int64_t *seq, double *v)
{
    for (int64_t s = before - 1; s > 0; s--) {
        struct store_event a, o;
        char unit[8];
        if (store_find_assignment(st, rowid, s, &a, unit, sizeof unit) == STORE_OK &&
            store_find_outcome(st, rowid, s, &o) == STORE_OK && o.kind == STORE_EV_REWARD &&
            o.seq < before) {
            *seq = s;
            *v = o.value;
            return 0;
        }
    }
    return -1;
}

/* Load the database as a start does, then correct the latest reward
 * before event `before`, timed from the request to its commit: seconds,
 * or −1. *at: the corrected reward's event. */
static double correct(const char *db, const struct exp_limits *lim, int64_t rowid, int64_t before,
                      int64_t *at)
{
    char err[256];
    double t = -1;
    struct store *st = store_open(db, STORE_SYNC_NORMAL, err, sizeof err);
    if (st == NULL) {
        fprintf(stderr, "snapload: %s\n", err);
        return -1;
    }
    exp_registry_init(st, lim);
    struct exp *x = NULL;
    int64_t seq = 0;
    double v = 0;
    if (exp_registry_load(err, sizeof err) != 0 || (x = exp_get("big")) == NULL ||
        rewarded(st, rowid, before, &seq, &v) != 0) {
        fprintf(stderr, "snapload: correction: no experiment or no reward to correct\n");
        goto out;
    }
    struct exp_correction_item it = {
        .id = {.seq = seq}, .value = v > 0.5 ? 0.0 : 1.0, .reason = "bench"};
    struct exp_batch b;
    struct exp_refusal why = {{0}, {0}};
    size_t bad = 0;
    int done = 0;
    exp_batch_init(&b);
    double t0 = now_s();
    exp_lock(x);
    int rc = exp_prepare_locked(x, 1800000000000);
    if (rc == EXP_OK)
        rc = exp_ev_correct(x, &b, &it, 1, 1800000000000, &bad, &why);
    if (rc == EXP_OK)
        rc = exp_submit_locked(x, &b, correction_done, &done) == STORE_OK ? EXP_OK : -1;
    exp_unlock(x);
    while (rc == EXP_OK && done == 0)
        usleep(100);
    if (rc == EXP_OK && done > 0) {
        t = now_s() - t0;
        *at = it.reward_seq;
    } else {
        fprintf(stderr, "snapload: correction failed (%d)\n", rc);
    }
    exp_batch_free(&b);
out:
    if (x != NULL)
        exp_put(x);
    exp_registry_free();
    store_close(st);
    return t;
}

int main(int argc, char **argv)
{
    const char *db = NULL, *out = NULL;
    uint64_t events = 10000000, tail = 9999;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--db") == 0)
            db = argv[i + 1];
        else if (strcmp(argv[i], "--events") == 0)
            events = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--tail") == 0)
            tail = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0)
            out = argv[i + 1];
        else {
            fprintf(stderr, "usage: snapload [--db PATH|URI] [--events N] [--tail T] [--out F]\n");
            return 2;
        }
    }
    char path[256];
    if (db == NULL) {
        snprintf(path, sizeof path, "/tmp/snapload.%d.db", (int)getpid());
        db = path;
    }
    if (tail >= events)
        tail = events / 2;
    struct exp_limits lim = {.max_experiments = 10,
                             .max_bandits = 16,
                             .max_arms = 16,
                             .max_batch = 1000,
                             .max_count = 100,
                             .max_pending = 1000000,
                             .history_points = 256,
                             .snapshot_every = 0,
                             .no_snapshots = 1};
    char err[256];
    struct store *st = store_open(db, STORE_SYNC_NORMAL, err, sizeof err);
    if (st == NULL) {
        fprintf(stderr, "snapload: %s\n", err);
        return 1;
    }
    exp_registry_init(st, &lim);
    struct exp_config cfg, mine;
    if (parse_config(&lim, &cfg) != 0 || parse_config(&lim, &mine) != 0)
        return 1;
    int created = 0;
    struct exp *x = NULL;
    if (exp_create(&cfg, NULL, NULL, done_flag, &created, &x) != EXP_OK)
        return 1;
    while (created == 0)
        usleep(1000);
    exp_put(x);
    struct gen g = {.ttl_ms = mine.ttl_s * 1000, .ts = 1700000000000};
    struct policy_error perr;
    g.e = engine_create(&mine.engine, &perr);
    g.env = gsl_rng_alloc(rng_xoshiro256ss);
    if (created < 0 || g.e == NULL || g.env == NULL ||
        store_find_experiment(st, "big", find_rowid, &g.rowid) != STORE_OK)
        return 1;
    rng_seed64(g.env, 2026);
    double t0 = now_s();
    if (fill(st, &g, events - tail) != 0)
        return 1;
    double t_fill = now_s() - t0;
    exp_registry_free();
    store_close(st);

    double full = load(db, &lim);
    lim.no_snapshots = 0;
    lim.snapshot_every = 10000;
    double first = load(db, &lim); /* full again, then a snapshot of event N − T */

    st = store_open(db, STORE_SYNC_NORMAL, err, sizeof err);
    /* PostgreSQL: a new session owns nothing until it claims (store.h) */
    if (st == NULL || store_claim(st, g.rowid, NULL, 0) != STORE_OK || fill(st, &g, tail) != 0)
        return 1;
    store_close(st);
    double snap = load(db, &lim);

    /* corrections near the end: from the snapshot first (a later one must
     * start before the reward it corrected, which the second is not) */
    int64_t at_snap = 0, at_full = 0;
    double c_snap = correct(db, &lim, g.rowid, g.seq, &at_snap);
    lim.no_snapshots = 1;
    double c_full = correct(db, &lim, g.rowid, at_snap, &at_full);

    char table[4096];
    snprintf(table, sizeof table,
             "## Loading a long experiment (snapshots, issue 14)\n\n"
             "One experiment of %" PRIu64 " events (4 arms, ttts, every assignment rewarded; "
             "written through the store in %.1f s), loaded as a start does, on %s.\n\n"
             "| load | seconds |\n|---|---:|\n"
             "| whole log (--no-snapshots) | %.2f |\n"
             "| whole log, then a snapshot written (the first start with snapshots) | %.2f |\n"
             "| latest snapshot + a tail of %" PRIu64 " events | %.3f |\n\n"
             "Target: ≤ 1 s from a snapshot at 10⁷ events.\n\n"
             "A correction of a reward near the end (event %" PRId64 ", then %" PRId64
             "), from the request to its commit:\n\n"
             "| correction's rebuild | seconds |\n|---|---:|\n"
             "| whole log replayed (--no-snapshots; how every correction rebuilt before) | %.2f |\n"
             "| from the latest snapshot before the reward | %.3f |\n"
             "| ratio, whole log ÷ snapshot | %.0f× |\n",
             events, t_fill, strncmp(db, "postgres", 8) == 0 ? "PostgreSQL" : "SQLite", full, first,
             tail, snap, at_snap, at_full, c_full, c_snap, c_snap > 0 ? c_full / c_snap : 0.0);
    fputs(table, stdout);
    if (out != NULL) {
        FILE *f = fopen(out, "w");
        if (f != NULL) {
            (void)fputs(table, f);
            (void)fclose(f);
        }
    }
    engine_free(g.e);
    gsl_rng_free(g.env);
    exp_config_free(&mine);
    if (db == path) {
        char p[300];
        (void)unlink(path);
        snprintf(p, sizeof p, "%s-wal", path);
        (void)unlink(p);
        snprintf(p, sizeof p, "%s-shm", path);
        (void)unlink(p);
        snprintf(p, sizeof p, "%s.lock", path);
        (void)unlink(p);
    }
    return full < 0 || first < 0 || snap < 0 || c_snap < 0 || c_full < 0;
}
