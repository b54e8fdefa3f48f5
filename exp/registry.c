/*
 * registry.c — the registry of live experiments (exp.h): sharded by id so
 * that no lock is global on the hot path, reference counted; creation and
 * deletion, loading every stored experiment at startup, the sweeper that
 * expires due assignments once a second, and the accessors of one
 * experiment.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/jsonv.h"
#include "base/log.h"
#include "exp/internal.h"
#include "policies/stop_rule.h"

#define NSHARDS 64
#define SHARD_BUCKETS 1024

struct shard {
    pthread_mutex_t mu;
    struct exp *buckets[SHARD_BUCKETS];
};

struct exp_runtime exp_rt;

static struct shard g_shards[NSHARDS];
static atomic_size_t g_count;
static pthread_t g_sweeper;
static int g_sweeper_running;
static pthread_mutex_t g_sweeper_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_sweeper_cv = PTHREAD_COND_INITIALIZER;
static int g_sweeper_stop;

const struct exp_limits *exp_limits(void)
{
    return &exp_rt.lim;
}

struct store *exp_store(void)
{
    return exp_rt.store;
}

uint64_t exp_expired_total(void)
{
    return atomic_load(&exp_rt.expired_total);
}

/* --- the memory cap --------------------------------------------------------------- */

/* What a pending assignment costs in memory (the table entry, its slot and
 * FIFO place; docs/operations.md, sizing): counted between measurements. */
#define EXP_ASSIGNMENT_BYTES 128

void exp_memory_measure(void)
{
    if (exp_rt.lim.max_memory == 0)
        return;
    /* statm: "size resident shared ..." in pages. */
    char line[160] = "", *end = line, *end2 = line;
    FILE *f = fopen("/proc/self/statm", "r");
    int ok = f != NULL && fgets(line, sizeof line, f) != NULL;
    if (f != NULL)
        (void)fclose(f);
    unsigned long long resident = 0;
    if (ok) {
        (void)strtoull(line, &end, 10);
        resident = strtoull(end, &end2, 10);
    }
    if (!ok || end == line || end2 == end)
        return; /* unknown: the cap cannot be enforced, the last figure stays */
    atomic_store(&exp_rt.pending_at_rss, atomic_load(&exp_rt.pending_total));
    atomic_store(&exp_rt.rss, (size_t)(resident * (unsigned long long)sysconf(_SC_PAGESIZE)));
}

size_t exp_memory_used(void)
{
    uint64_t now = atomic_load(&exp_rt.pending_total);
    uint64_t then = atomic_load(&exp_rt.pending_at_rss);
    size_t grown = now > then ? (size_t)(now - then) * EXP_ASSIGNMENT_BYTES : 0;
    return atomic_load(&exp_rt.rss) + grown;
}

int exp_memory_full(void)
{
    return exp_rt.lim.max_memory != 0 && exp_memory_used() >= exp_rt.lim.max_memory;
}

json_t *exp_stop_json(const struct engine *e, size_t b)
{
    struct engine_stop_eval s;
    engine_bandit_stop(e, b, &s);
    static const char *const when_names[] = {NULL, "evidence <= threshold", "evidence > threshold",
                                             "evidence >= threshold"};
    const char *when = isnan(s.evidence) ? NULL : when_names[s.fires];
    return json_pack("{s:s,s:b,s:o,s:o,s:o,s:o,s:b}", "rule", stop_rule_name(s.rule), "proven",
                     s.proven, "fires_when", when ? json_string(when) : json_null(), "evidence",
                     jv_real(s.evidence), "threshold", jv_real(s.threshold), "error_bound",
                     jv_real(s.error_bound), "fired", s.fired);
}

const char *exp_stop_reason(const struct exp *x)
{
    return engine_stop_reason_name(x->d->eng);
}

static struct shard *shard_of(const char *id, size_t *bucket)
{
    uint64_t h = exp_hash_id(id);
    *bucket = (size_t)(h >> 8) % SHARD_BUCKETS;
    return &g_shards[h % NSHARDS];
}

void exp_mark_corrupt(struct exp *x, const char *why)
{
    if (x->corrupt[0] != '\0')
        return;
    snprintf(x->corrupt, sizeof x->corrupt, "%s", why[0] ? why : "event log corrupt");
    atomic_fetch_add(&exp_rt.corrupt, 1);
    log_error("experiment %s: %s; not served (the others are; restore it from a backup or "
              "delete it)",
              x->id, x->corrupt);
}

const char *exp_corrupt(const struct exp *x)
{
    return x->corrupt[0] != '\0' ? x->corrupt : NULL;
}

size_t exp_corrupt_count(void)
{
    return atomic_load(&exp_rt.corrupt);
}

static void exp_free(struct exp *x)
{
    exp_data_free(x->d);
    exp_config_free(&x->cfg);
    free(x->config_text);
    pthread_cond_destroy(&x->idle);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

void exp_put(struct exp *x)
{
    if (x != NULL && atomic_fetch_sub(&x->refs, 1) == 1)
        exp_free(x);
}

static struct exp *find_in_shard(struct shard *s, size_t bucket, const char *id)
{
    for (struct exp *x = s->buckets[bucket]; x != NULL; x = x->next)
        if (strcmp(x->id, id) == 0)
            return x;
    return NULL;
}

static struct exp *get_local(const char *id)
{
    size_t bucket;
    struct shard *s = shard_of(id, &bucket);
    pthread_mutex_lock(&s->mu);
    struct exp *x = find_in_shard(s, bucket, id);
    if (x != NULL && atomic_load(&x->visible))
        atomic_fetch_add(&x->refs, 1);
    else
        x = NULL;
    pthread_mutex_unlock(&s->mu);
    return x;
}

static int load_remote(void *arg, const struct store_experiment_row *row);

struct exp *exp_get(const char *id)
{
    struct exp *x = get_local(id);
    if (x != NULL || !store_shared(exp_rt.store))
        return x;
    /* another daemon's, created since this one loaded (or unknown: the
     * lookup is one index probe) */
    if (store_find_experiment(exp_rt.store, id, load_remote, NULL) != STORE_OK)
        return NULL;
    return get_local(id);
}

/* Insert x unless its id is taken or, limit > 0, the registry already holds
 * limit experiments; the registry's reference is x's first. The count is
 * reserved atomically: concurrent creates in different shards cannot all
 * pass a check made before any of them inserted. */
static int registry_insert(struct exp *x, size_t limit)
{
    size_t bucket;
    struct shard *s = shard_of(x->id, &bucket);
    pthread_mutex_lock(&s->mu);
    if (find_in_shard(s, bucket, x->id) != NULL) {
        pthread_mutex_unlock(&s->mu);
        return EXP_ERR_EXISTS;
    }
    if (atomic_fetch_add(&g_count, 1) >= limit && limit > 0) {
        atomic_fetch_sub(&g_count, 1);
        pthread_mutex_unlock(&s->mu);
        return EXP_ERR_LIMIT;
    }
    x->next = s->buckets[bucket];
    s->buckets[bucket] = x;
    pthread_mutex_unlock(&s->mu);
    return EXP_OK;
}

/* Forget x (drops the registry's reference). */
void exp_registry_remove(struct exp *x)
{
    size_t bucket;
    struct shard *s = shard_of(x->id, &bucket);
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (struct exp **pp = &s->buckets[bucket]; *pp != NULL; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            found = 1;
            break;
        }
    if (found)
        atomic_fetch_sub(&g_count, 1);
    pthread_mutex_unlock(&s->mu);
    if (found && x->corrupt[0] != '\0')
        atomic_fetch_sub(&exp_rt.corrupt, 1);
    if (found)
        exp_put(x);
}

size_t exp_count(void)
{
    return atomic_load(&g_count);
}

static int cmp_exp_id(const void *a, const void *b)
{
    return strcmp((*(struct exp *const *)a)->id, (*(struct exp *const *)b)->id);
}

/* References to the visible experiments with id > after (NULL: all), in
 * no order, at most cap of them, into out. */
static size_t collect(const char *after, struct exp **out, size_t cap)
{
    size_t n = 0;
    for (size_t s = 0; s < NSHARDS; s++) {
        pthread_mutex_lock(&g_shards[s].mu);
        for (size_t b = 0; b < SHARD_BUCKETS; b++)
            for (struct exp *x = g_shards[s].buckets[b]; x != NULL; x = x->next) {
                if (!atomic_load(&x->visible) || n == cap)
                    continue;
                if (after != NULL && strcmp(x->id, after) <= 0)
                    continue;
                atomic_fetch_add(&x->refs, 1);
                out[n++] = x;
            }
        pthread_mutex_unlock(&g_shards[s].mu);
    }
    return n;
}

size_t exp_all(struct exp **out, size_t cap)
{
    return collect(NULL, out, cap);
}

size_t exp_list(const char *after, size_t limit, struct exp **out)
{
    /* Collect every visible experiment, sort by id, keep the page. The
     * registry is bounded by max_experiments, so this stays cheap. */
    size_t cap = atomic_load(&g_count) + 64;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    struct exp **all = calloc(cap, sizeof *all);
    if (all == NULL)
        return 0;
    size_t n = collect(after, all, cap);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    qsort(all, n, sizeof *all, cmp_exp_id);
    size_t keep = n < limit ? n : limit;
    for (size_t i = 0; i < n; i++) {
        if (i < keep)
            out[i] = all[i];
        else
            exp_put(all[i]);
    }
    free(all);
    return keep;
}

uint64_t exp_pending_total(void)
{
    return atomic_load(&exp_rt.pending_total);
}

void exp_lock(struct exp *x)
{
    pthread_mutex_lock(&x->mu);
}

void exp_unlock(struct exp *x)
{
    pthread_mutex_unlock(&x->mu);
    exp_snapshot_flush(x); /* the snapshot this thread captured, if any */
}

const struct exp_config *exp_cfg(const struct exp *x)
{
    return &x->cfg;
}

struct engine *exp_engine(struct exp *x)
{
    return x->d->eng;
}

enum exp_state exp_get_state(const struct exp *x)
{
    if (engine_stopped(x->d->eng))
        return EXP_STOPPED;
    return x->d->state;
}

const char *exp_owner(const struct exp *x)
{
    return x->owner;
}

int exp_owned(const struct exp *x)
{
    return atomic_load(&x->owned);
}

int64_t exp_created_ms(const struct exp *x)
{
    return x->created_ms;
}

int64_t exp_rowid(const struct exp *x)
{
    return x->rowid;
}

int64_t exp_last_seq(const struct exp *x)
{
    return x->d->seq;
}

int64_t exp_loaded_from(const struct exp *x)
{
    return x->d->loaded_from;
}

uint64_t exp_version(const struct exp *x)
{
    /* The event count alone would repeat after a reload: events applied
     * but lost by a failed write are numbered again by later ones, and a
     * client holding a tag read in between would get 304 for different
     * content. The reload generation keeps every version distinct. */
    return (uint64_t)x->d->seq | ((uint64_t)atomic_load(&x->gen) << 48);
}

const char *exp_id(const struct exp *x)
{
    return x->id;
}

int64_t exp_last_event_ms(const struct exp *x)
{
    return (int64_t)atomic_load_explicit(&x->last_event_ms, memory_order_relaxed);
}

void exp_summary_locked(struct exp *x, struct exp_summary *out)
{
    /* A correction rebuilding x from its log (corrections.c) swaps x->d
     * without the lock: read once it is done. */
    while (x->draining)
        pthread_cond_wait(&x->idle, &x->mu);
    struct engine *e = x->d->eng;
    const struct exp_config *c = &x->cfg;
    uint64_t v = exp_version(x);
    if (!x->dc_valid || x->dc_version != v) {
        double worst = 0;
        unsigned char high[ENGINE_MAX_ARMS];
        for (size_t b = 0; b < c->n_bandits; b++) {
            struct engine_bandit_status st;
            engine_bandit_status(e, b, high, &st);
            if (st.delta_c > worst)
                worst = st.delta_c;
        }
        x->dc_max = worst;
        x->dc_version = v;
        x->dc_valid = 1;
    }
    out->state = exp_get_state(x);
    out->stop_reason = exp_stop_reason(x);
    out->pulls = engine_pulls(e);
    out->pending = engine_pending(e);
    out->handed_out = engine_handed_out(e);
    out->budget = engine_budget(e); /* edits change it */
    out->bandits = c->n_bandits;
    out->bandits_done = engine_bandits_done(e);
    out->delta = c->engine.delta;
    out->delta_c = x->dc_max;
}

int exp_writes_pending(const struct exp *x)
{
    return x->inflight > 0;
}

size_t exp_pending_count(const struct exp *x)
{
    return x->d->pending;
}

double exp_scale(const struct exp *x, double v)
{
    return (v - x->cfg.reward_min) / (x->cfg.reward_max - x->cfg.reward_min);
}

double exp_range(const struct exp *x)
{
    return x->cfg.reward_max - x->cfg.reward_min;
}

static struct exp *exp_new(struct exp_config *cfg, int64_t created_ms, char *err, size_t errlen)
{
    struct exp *x = calloc(1, sizeof *x);
    if (x == NULL) {
        snprintf(err, errlen, "out of memory");
        exp_config_free(cfg);
        return NULL;
    }
    pthread_mutex_init(&x->mu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&x->idle, &ca);
        pthread_condattr_destroy(&ca);
    }
    atomic_init(&x->refs, 1);
    x->cfg = *cfg; /* ownership moves in */
    memset(cfg, 0, sizeof *cfg);
    x->cfg.engine.n_arms = x->cfg.n_arms;
    x->cfg.engine.control_arm = x->cfg.control_arm;
    snprintf(x->id, sizeof x->id, "%s", x->cfg.id);
    x->created_ms = created_ms;
    atomic_init(&x->last_event_ms, created_ms);
    x->token = exp_make_token(x->id, created_ms);
    atomic_init(&x->owned, 1); /* what it creates, a daemon owns */
    x->config_text = exp_config_stored_text(&x->cfg);
    /* before x is visible: read without the lock from then on (a
     * correction's rebuild replays with it released) */
    exp_design_hash_initial(x);
    x->d = exp_data_new(&x->cfg, err, errlen);
    if (x->config_text == NULL || x->d == NULL) {
        if (x->config_text == NULL)
            snprintf(err, errlen, "out of memory");
        exp_free(x);
        return NULL;
    }
    return x;
}

struct create_sub {
    struct exp *x;
    struct store_op op;
    store_done_fn done;
    void *arg;
};

static void on_created(void *arg, int err)
{
    struct create_sub *c = arg;
    if (err == STORE_OK)
        atomic_store(&c->x->visible, 1);
    else
        exp_registry_remove(c->x);
    if (c->done != NULL)
        c->done(c->arg, err);
    exp_put(c->x);
    free(c);
}

int exp_create(struct exp_config *cfg, const char *actor, const char *request_id,
               store_done_fn done, void *arg, struct exp **out)
{
    char err[256];
    if (exp_count() >= exp_rt.lim.max_experiments) {
        exp_config_free(cfg);
        return EXP_ERR_LIMIT;
    }
    exp_memory_measure();
    if (exp_memory_full()) {
        exp_config_free(cfg);
        return EXP_ERR_MEMORY;
    }
    struct exp *x = exp_new(cfg, clock_wall_ms(), err, sizeof err);
    if (x == NULL)
        return EXP_ERR_NOMEM;
    struct create_sub *c = calloc(1, sizeof *c);
    if (c == NULL) {
        exp_put(x);
        return EXP_ERR_NOMEM;
    }
    /* the registry takes x's first reference */
    int rc = registry_insert(x, exp_rt.lim.max_experiments);
    if (rc != EXP_OK) {
        free(c);
        exp_put(x);
        return rc;
    }
    atomic_fetch_add(&x->refs, 2); /* one for the callback, one for *out */
    c->x = x;
    c->done = done;
    c->arg = arg;
    c->op.kind = STORE_OP_EXP_CREATE;
    c->op.id = x->id;
    c->op.config_json = x->config_text;
    c->op.created_ms = x->created_ms;
    c->op.rowid_out = &x->rowid;
    c->op.ev.actor = actor; /* the audit log's record of the creation */
    c->op.ev.request_id = request_id;
    if (store_submit(exp_rt.store, &c->op, 1, on_created, c) != STORE_OK) {
        exp_registry_remove(x);
        /* The two references taken above. The analyzer does not follow the
         * atomic count and has registry_remove free x. */
        exp_put(x); // NOLINT(clang-analyzer-unix.Malloc)
        exp_put(x); // NOLINT(clang-analyzer-unix.Malloc)
        free(c);
        return EXP_ERR_STORE;
    }
    *out = x;
    return EXP_OK;
}

int exp_gone(struct exp *x)
{
    exp_lock(x);
    int gone = x->deleting || x->deleted;
    exp_unlock(x);
    return gone;
}

struct load_ctx {
    char *err;
    size_t errlen;
    size_t loaded;
    int remote; /* another daemon's, found after the start: neither claimed nor replayed */
};

static int load_one(void *arg, const struct store_experiment_row *row)
{
    struct load_ctx *lc = arg;
    json_error_t jerr;
    int oom;
    json_t *j = jv_loadb(row->config_json, strlen(row->config_json), 0, &jerr, &oom);
    if (oom) { /* never load a configuration jansson may have cut short */
        snprintf(lc->err, lc->errlen, "experiment %s: out of memory reading its configuration",
                 row->id);
        return -1;
    }
    json_t *errors = json_array();
    struct exp_config cfg;
    int parsed = j != NULL && errors != NULL;
    int rc = parsed ? exp_config_load(j, &exp_rt.lim, &cfg, errors) : -1;
    if (rc != 0) {
        char *e = parsed ? json_dumps(errors, JSON_COMPACT) : NULL;
        log_warn("experiment %s: stored configuration no longer valid (%s); skipped", row->id,
                 e ? e : jerr.text);
        free(e);
        if (parsed) /* a failed parse leaves what it filled in for us to free */
            exp_config_free(&cfg);
        json_decref(j);
        json_decref(errors);
        return 0;
    }
    json_decref(j);
    json_decref(errors);
    struct exp *x = exp_new(&cfg, row->created_ms, lc->err, lc->errlen);
    if (x == NULL)
        return -1;
    x->rowid = row->rowid;
    if (store_shared(exp_rt.store)) {
        /* several daemons: serve only what this one owns; the others are
         * registered for listing, and claimed when a request comes */
        int crc = lc->remote ? STORE_ERR_NOTOWNER
                             : store_claim(exp_rt.store, x->rowid, x->owner, sizeof x->owner);
        if (crc != STORE_OK && crc != STORE_ERR_NOTOWNER) {
            snprintf(lc->err, lc->errlen, "experiment %s: claiming it: %s", x->id,
                     store_strerror(crc));
            exp_put(x);
            return crc == STORE_ERR_NOTFOUND ? 0 : -1; /* deleted meanwhile: skip */
        }
        atomic_store(&x->owned, crc == STORE_OK);
    }
    if (lc->remote) {
        /* its state is read when needed (exp_refresh_locked, a claim) */
        atomic_store(&x->stale, 1);
        atomic_store(&x->visible, 1);
        if (registry_insert(x, 0) != EXP_OK)
            exp_put(x); /* registered meanwhile */
        return 0;
    }
    int is_corrupt;
    struct exp_data *d = exp_replay_all(x, lc->err, lc->errlen, &is_corrupt);
    if (d == NULL && is_corrupt) {
        /* Registered but refused: the others are served. The data stays
         * the fresh engine exp_new made, which nothing reads. */
        exp_mark_corrupt(x, lc->err);
        lc->err[0] = '\0';
    } else if (d == NULL) {
        exp_put(x);
        return -1;
    } else {
        exp_data_free(x->d);
        x->d = d;
    }
    atomic_store(&x->visible, 1);
    if (registry_insert(x, 0) != EXP_OK) {
        log_warn("experiment %s stored twice; keeping the first", x->id);
        exp_put(x);
        return 0;
    }
    lc->loaded++;
    return 0;
}

/* A row of another daemon's experiment, registered not owned (exp_get,
 * exp_registry_sync). */
static int load_remote(void *arg, const struct store_experiment_row *row)
{
    (void)arg;
    char err[256] = "";
    struct load_ctx lc = {.err = err, .errlen = sizeof err, .remote = 1};
    struct exp *known = get_local(row->id);
    if (known != NULL) {
        exp_put(known);
        return 0;
    }
    return load_one(&lc, row) < 0 ? STORE_ERR_NOMEM : 0;
}

int exp_registry_sync(void)
{
    if (!store_shared(exp_rt.store))
        return 0;
    return store_load_experiments(exp_rt.store, load_remote, NULL);
}

static void *sweeper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_sweeper_mu);
    while (!g_sweeper_stop) {
        struct timespec ts = clock_deadline(CLOCK_REALTIME, 1000);
        pthread_cond_timedwait(&g_sweeper_cv, &g_sweeper_mu, &ts);
        if (g_sweeper_stop)
            break;
        pthread_mutex_unlock(&g_sweeper_mu);
        size_t n = exp_count() + 64;
        // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
        struct exp **all = calloc(n, sizeof *all);
        size_t got = all != NULL ? exp_all(all, n) : 0; /* no order needed: no sort */
        int64_t now = clock_wall_ms();
        exp_memory_measure();
        for (size_t i = 0; i < got; i++) {
            /* another daemon's: its owner expires them (no takeover from here) */
            if (atomic_load(&all[i]->owned)) {
                exp_lock(all[i]);
                exp_prepare_locked(all[i], now);
                exp_unlock(all[i]);
            }
            exp_put(all[i]);
        }
        free(all);
        pthread_mutex_lock(&g_sweeper_mu);
    }
    pthread_mutex_unlock(&g_sweeper_mu);
    return NULL;
}

int exp_registry_init(struct store *st, const struct exp_limits *lim)
{
    exp_rt.store = st;
    exp_rt.lim = *lim;
    if (exp_rt.lim.history_points < 2)
        exp_rt.lim.history_points = 2;
    for (size_t i = 0; i < NSHARDS; i++) {
        pthread_mutex_init(&g_shards[i].mu, NULL);
        memset(g_shards[i].buckets, 0, sizeof g_shards[i].buckets);
    }
    atomic_store(&g_count, 0);
    atomic_store(&exp_rt.snapshot_loads, 0);
    atomic_store(&exp_rt.events_replayed, 0);
    return 0;
}

int exp_registry_load(char *err, size_t errlen)
{
    struct load_ctx lc = {.err = err, .errlen = errlen};
    int rc = store_load_experiments(exp_rt.store, load_one, &lc);
    if (rc != 0) {
        if (err[0] == '\0')
            snprintf(err, errlen, "loading experiments: %s", store_strerror(rc));
        return -1;
    }
    log_info("loaded %zu experiments (%" PRIuFAST64 " from a snapshot), %" PRIuFAST64
             " events replayed",
             lc.loaded, atomic_load(&exp_rt.snapshot_loads), atomic_load(&exp_rt.events_replayed));
    exp_memory_measure();
    g_sweeper_stop = 0;
    if (pthread_create(&g_sweeper, NULL, sweeper_main, NULL) == 0)
        g_sweeper_running = 1;
    return 0;
}

void exp_registry_checkpoint(void)
{
    if (exp_rt.lim.no_snapshots || exp_rt.lim.snapshot_every == 0)
        return;
    size_t n = 0, queued = 0;
    for (size_t s = 0; s < NSHARDS; s++) {
        pthread_mutex_lock(&g_shards[s].mu);
        for (size_t b = 0; b < SHARD_BUCKETS; b++)
            for (struct exp *x = g_shards[s].buckets[b]; x != NULL; x = x->next)
                n++;
        pthread_mutex_unlock(&g_shards[s].mu);
    }
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers
    struct exp **all = calloc(n ? n : 1, sizeof *all);
    if (all == NULL)
        return;
    n = exp_all(all, n);
    for (size_t i = 0; i < n; i++) {
        struct exp *x = all[i];
        exp_lock(x);
        struct exp_batch *b = calloc(1, sizeof *b);
        if (b != NULL && x->d != NULL && atomic_load(&x->owned) && !atomic_load(&x->stale) &&
            !x->deleting && !x->deleted) {
            exp_batch_init(b);
            exp_snapshot_attach(x, b);
            if (b->snap != NULL && exp_submit(x, b, 1, 0, NULL, NULL) == STORE_OK) {
                b = NULL; /* the runtime's now */
                queued++;
            }
        }
        if (b != NULL) {
            exp_batch_free(b);
            free(b);
        }
        exp_unlock(x);
        exp_put(x);
    }
    free(all);
    if (queued > 0)
        log_info("%zu snapshots queued for the shutdown", queued);
}

void exp_registry_free(void)
{
    if (g_sweeper_running) {
        pthread_mutex_lock(&g_sweeper_mu);
        g_sweeper_stop = 1;
        pthread_cond_signal(&g_sweeper_cv);
        pthread_mutex_unlock(&g_sweeper_mu);
        pthread_join(g_sweeper, NULL);
        g_sweeper_running = 0;
    }
    for (size_t s = 0; s < NSHARDS; s++) {
        for (size_t b = 0; b < SHARD_BUCKETS; b++) {
            struct exp *x = g_shards[s].buckets[b];
            while (x != NULL) {
                struct exp *next = x->next;
                exp_put(x);
                x = next;
            }
            g_shards[s].buckets[b] = NULL;
        }
        pthread_mutex_destroy(&g_shards[s].mu);
    }
    atomic_store(&g_count, 0);
}
