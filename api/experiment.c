/*
 * experiment.c — live experiments (see experiment.h): the sharded registry,
 * the in-memory tables of outstanding assignments, event application and
 * numbering, commit bookkeeping, reload after a failed write, replay at
 * startup, expiry, and the decimated history for dashboards.
 */
#include "api/experiment.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "server/metrics.h"

#define NSHARDS 64
#define SHARD_BUCKETS 1024
#define EXP_RELOAD_WAIT_MS 1000 /* a stale experiment waits this long for its queued writes */

/* --- per-experiment data that a reload replaces ----------------------------- */

struct exp_data {
    struct engine *eng;
    int64_t seq; /* last event applied */
    enum exp_state state;
    /* assignments in memory: open addressing on seq (linear probing) */
    struct exp_assignment **tab;
    size_t tab_cap, tab_n;
    /* sticky units of uncommitted assignments: open addressing, value = seq */
    int64_t *utab;
    size_t utab_cap, utab_n;
    /* pending seqs in creation order (= expiry order: one TTL per experiment) */
    int64_t *fifo;
    size_t fhead, flen, fcap;
    size_t pending;
    /* history */
    struct exp_history_point *hist; /* grows to history_points (most
                                     * experiments never fill it) */
    size_t hlen, hcap;
    uint64_t hstride, hnext;
    unsigned char *scratch; /* kmax entries */
    int need_reset;         /* next submission clears the store's failure mark */
};

struct exp {
    char id[EXP_ID_MAX + 1];
    int64_t rowid;
    int64_t created_ms;
    uint32_t token;
    pthread_mutex_t mu;
    pthread_cond_t idle; /* signalled when inflight drops to 0 (with mu) */
    atomic_int refs;
    atomic_int stale; /* a write failed: reload before the next request */
    atomic_uint gen;  /* increments at each reload */
    int inflight;     /* submissions queued whose on_commit has not run (mu) */
    int deleting;     /* a delete is queued: requests see the experiment gone (mu) */
    int deleted;      /* the delete committed (mu) */
    atomic_int visible;
    struct exp_config cfg;
    char *config_text; /* cfg.json serialised, as stored */
    struct exp_data *d;
    struct exp *next; /* shard bucket chain */
};

struct shard {
    pthread_mutex_t mu;
    struct exp *buckets[SHARD_BUCKETS];
};

static struct shard g_shards[NSHARDS];
static struct store *g_store;
static struct exp_limits g_lim;
static atomic_size_t g_count;
static atomic_uint_fast64_t g_pending_total;
static pthread_t g_sweeper;
static int g_sweeper_running;
static pthread_mutex_t g_sweeper_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_sweeper_cv = PTHREAD_COND_INITIALIZER;
static int g_sweeper_stop;

const struct exp_limits *exp_limits_get(void);
const struct exp_limits *exp_limits_get(void)
{
    return &g_lim;
}

struct store *exp_store(void)
{
    return g_store;
}

/* FNV-1a from a basis a digit short of FNV's own (an early typo): kept,
 * because assignment ids embed make_token's hash of the experiment id and
 * ids handed out must keep parsing after an upgrade. */
#define EXP_HASH_BASIS 1469598103934665603ULL

static uint64_t hash_str(const char *s)
{
    return hash_fnv1a_str(EXP_HASH_BASIS, s);
}

static uint64_t hash_seq(int64_t seq)
{
    return hash_mix64((uint64_t)seq);
}

/* --- assignment table -------------------------------------------------------- */

static size_t tab_slot(const struct exp_data *d, int64_t seq)
{
    size_t mask = d->tab_cap - 1;
    size_t i = hash_seq(seq) & mask;
    while (d->tab[i] != NULL && d->tab[i]->seq != seq)
        i = (i + 1) & mask;
    return i;
}

static struct exp_assignment *tab_find(const struct exp_data *d, int64_t seq)
{
    if (d->tab_cap == 0)
        return NULL;
    return d->tab[tab_slot(d, seq)];
}

static int tab_grow(struct exp_data *d)
{
    size_t ncap = d->tab_cap ? d->tab_cap * 2 : 64;
    struct exp_assignment **old = d->tab;
    size_t ocap = d->tab_cap;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    d->tab = calloc(ncap, sizeof *d->tab);
    if (d->tab == NULL) {
        d->tab = old;
        return -1;
    }
    d->tab_cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i] != NULL)
            d->tab[tab_slot(d, old[i]->seq)] = old[i];
    free(old);
    return 0;
}

static int tab_insert(struct exp_data *d, struct exp_assignment *a)
{
    if ((d->tab_n + 1) * 10 > d->tab_cap * 7 && tab_grow(d) != 0)
        return -1;
    d->tab[tab_slot(d, a->seq)] = a;
    d->tab_n++;
    return 0;
}

/* Remove (backward-shift deletion keeps probe chains intact, no tombstones). */
static void tab_remove(struct exp_data *d, int64_t seq)
{
    if (d->tab_cap == 0)
        return;
    size_t mask = d->tab_cap - 1;
    size_t i = tab_slot(d, seq);
    if (d->tab[i] == NULL)
        return;
    d->tab[i] = NULL;
    d->tab_n--;
    for (size_t j = (i + 1) & mask; d->tab[j] != NULL; j = (j + 1) & mask) {
        size_t home = hash_seq(d->tab[j]->seq) & mask;
        /* move j into the hole at i if its home is not in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            d->tab[i] = d->tab[j];
            d->tab[j] = NULL;
            i = j;
        }
    }
}

/* --- unit table (uncommitted sticky units) -------------------------------------- */

static size_t utab_slot(const struct exp_data *d, const char *unit)
{
    size_t mask = d->utab_cap - 1;
    size_t i = hash_str(unit) & mask;
    while (d->utab[i] != 0) {
        const struct exp_assignment *a = tab_find(d, d->utab[i]);
        if (a != NULL && a->unit != NULL && strcmp(a->unit, unit) == 0)
            break;
        i = (i + 1) & mask;
    }
    return i;
}

static int64_t utab_find(const struct exp_data *d, const char *unit)
{
    if (d->utab_cap == 0)
        return 0;
    return d->utab[utab_slot(d, unit)];
}

static int utab_grow(struct exp_data *d)
{
    size_t ncap = d->utab_cap ? d->utab_cap * 2 : 64;
    int64_t *old = d->utab;
    size_t ocap = d->utab_cap;
    d->utab = calloc(ncap, sizeof *d->utab);
    if (d->utab == NULL) {
        d->utab = old;
        return -1;
    }
    d->utab_cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i] == 0)
            continue;
        const struct exp_assignment *a = tab_find(d, old[i]);
        d->utab[utab_slot(d, a->unit)] = old[i];
    }
    free(old);
    return 0;
}

/* The caller reserved room (utab_grow) beforehand. */
static void utab_insert(struct exp_data *d, int64_t seq, const char *unit)
{
    d->utab[utab_slot(d, unit)] = seq;
    d->utab_n++;
}

static void utab_remove(struct exp_data *d, const char *unit)
{
    if (d->utab_cap == 0)
        return;
    size_t mask = d->utab_cap - 1;
    size_t i = utab_slot(d, unit);
    if (d->utab[i] == 0)
        return;
    d->utab[i] = 0;
    d->utab_n--;
    for (size_t j = (i + 1) & mask; d->utab[j] != 0; j = (j + 1) & mask) {
        const struct exp_assignment *a = tab_find(d, d->utab[j]);
        size_t home = hash_str(a->unit) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            d->utab[i] = d->utab[j];
            d->utab[j] = 0;
            i = j;
        }
    }
}

/* Make room for one more pending seq. */
static int fifo_reserve(struct exp_data *d)
{
    if (d->flen < d->fcap)
        return 0;
    size_t ncap = d->fcap ? d->fcap * 2 : 64;
    int64_t *n = malloc(ncap * sizeof *n);
    if (n == NULL)
        return -1;
    for (size_t i = 0; i < d->flen; i++)
        // NOLINTNEXTLINE(clang-analyzer-core.DivideZero): runs only if fcap ≥ flen > 0
        n[i] = d->fifo[(d->fhead + i) % d->fcap];
    free(d->fifo);
    d->fifo = n;
    d->fcap = ncap;
    d->fhead = 0;
    return 0;
}

static int fifo_push(struct exp_data *d, int64_t seq)
{
    if (fifo_reserve(d) != 0)
        return -1;
    d->fifo[(d->fhead + d->flen) % d->fcap] = seq;
    d->flen++;
    return 0;
}

static void free_assignment(struct exp_assignment *a)
{
    if (a == NULL)
        return;
    free(a->unit);
    free(a);
}

static void hist_free(struct exp_history_point *p)
{
    free(p->delta_c);
    free(p->rho);
    free(p->arm_pulls);
}

static void data_free(struct exp_data *d)
{
    if (d == NULL)
        return;
    engine_free(d->eng);
    for (size_t i = 0; i < d->tab_cap; i++)
        free_assignment(d->tab[i]);
    free(d->tab);
    free(d->utab);
    free(d->fifo);
    for (size_t i = 0; i < d->hlen; i++)
        hist_free(&d->hist[i]);
    free(d->hist);
    free(d->scratch);
    atomic_fetch_sub(&g_pending_total, d->pending);
    free(d);
}

static struct exp_data *data_new(const struct exp_config *cfg, char *err, size_t errlen)
{
    struct exp_data *d = calloc(1, sizeof *d);
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->eng = engine_create(&cfg->engine, err, errlen);
    size_t kmax = 0;
    for (size_t b = 0; b < cfg->n_bandits; b++)
        kmax = cfg->n_arms[b] > kmax ? cfg->n_arms[b] : kmax;
    d->scratch = calloc(kmax, 1);
    d->hstride = 1;
    d->hnext = 1;
    if (d->eng == NULL || d->scratch == NULL) {
        if (d->eng != NULL)
            snprintf(err, errlen, "out of memory");
        data_free(d);
        return NULL;
    }
    return d;
}

/* --- history ----------------------------------------------------------------- */

/* Record a point when the rewarded pulls reach the next mark; when the
 * buffer is full keep every other point and double the spacing, so a point
 * count bounded by history_points spans the experiment's whole life. */
static void history_maybe_record(struct exp *x, int64_t ts)
{
    struct exp_data *d = x->d;
    uint64_t pulls = engine_pulls(d->eng);
    if (pulls < d->hnext || g_lim.history_points < 2)
        return;
    if (d->hlen == g_lim.history_points) {
        size_t w = 0;
        for (size_t r = 0; r < d->hlen; r++) {
            if (r % 2 == 0)
                d->hist[w++] = d->hist[r];
            else
                hist_free(&d->hist[r]);
        }
        d->hlen = w;
        d->hstride *= 2;
    }
    const struct exp_config *c = &x->cfg;
    size_t total = 0;
    for (size_t b = 0; b < c->n_bandits; b++)
        total += c->n_arms[b];
    if (d->hlen == d->hcap) {
        /* 256 points up front were 10 KiB of a 16 KiB experiment */
        size_t ncap = d->hcap ? d->hcap * 2 : 8;
        if (ncap > g_lim.history_points)
            ncap = g_lim.history_points;
        struct exp_history_point *nh = realloc(d->hist, ncap * sizeof *nh);
        if (nh == NULL)
            return; /* history is best effort */
        d->hist = nh;
        d->hcap = ncap;
    }
    struct exp_history_point *p = &d->hist[d->hlen];
    p->pulls = pulls;
    p->ts_ms = ts;
    p->delta_c = calloc(c->n_bandits, sizeof *p->delta_c);
    p->rho = calloc(c->n_bandits, sizeof *p->rho);
    p->arm_pulls = calloc(total, sizeof *p->arm_pulls);
    if (!p->delta_c || !p->rho || !p->arm_pulls) {
        hist_free(p); /* history is best effort */
        return;
    }
    size_t off = 0;
    for (size_t b = 0; b < c->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(d->eng, b, d->scratch, &st);
        p->delta_c[b] = (float)st.delta_c;
        p->rho[b] = (float)st.rho;
        const struct stats_arm *a = engine_arms(d->eng, b);
        for (size_t i = 0; i < c->n_arms[b]; i++)
            p->arm_pulls[off++] = (uint32_t)(a[i].n > UINT32_MAX ? UINT32_MAX : a[i].n);
    }
    d->hlen++;
    d->hnext = pulls + d->hstride;
}

size_t exp_history_len(const struct exp *x)
{
    return x->d->hlen;
}

const struct exp_history_point *exp_history_at(const struct exp *x, size_t i)
{
    return &x->d->hist[i];
}

/* --- registry ---------------------------------------------------------------- */

static struct shard *shard_of(const char *id, size_t *bucket)
{
    uint64_t h = hash_str(id);
    *bucket = (size_t)(h >> 8) % SHARD_BUCKETS;
    return &g_shards[h % NSHARDS];
}

static void exp_free(struct exp *x)
{
    data_free(x->d);
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

struct exp *exp_get(const char *id)
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
static void registry_remove(struct exp *x)
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

size_t exp_list(const char *after, size_t limit, struct exp **out)
{
    /* Collect every visible experiment, sort by id, keep the page. The
     * registry is bounded by max_experiments, so this stays cheap. */
    size_t cap = atomic_load(&g_count) + 64, n = 0;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    struct exp **all = calloc(cap, sizeof *all);
    if (all == NULL)
        return 0;
    for (size_t s = 0; s < NSHARDS; s++) {
        pthread_mutex_lock(&g_shards[s].mu);
        for (size_t b = 0; b < SHARD_BUCKETS; b++)
            for (struct exp *x = g_shards[s].buckets[b]; x != NULL; x = x->next) {
                if (!atomic_load(&x->visible) || n == cap)
                    continue;
                if (after != NULL && strcmp(x->id, after) <= 0)
                    continue;
                atomic_fetch_add(&x->refs, 1);
                all[n++] = x;
            }
        pthread_mutex_unlock(&g_shards[s].mu);
    }
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

void exp_count_states(size_t counts[3])
{
    counts[0] = counts[1] = counts[2] = 0;
    size_t n = exp_count() + 64;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    struct exp **all = calloc(n, sizeof *all);
    if (all == NULL)
        return;
    size_t got = exp_list(NULL, n, all);
    for (size_t i = 0; i < got; i++) {
        exp_lock(all[i]);
        counts[exp_get_state(all[i])]++;
        exp_unlock(all[i]);
        exp_put(all[i]);
    }
    free(all);
}

uint64_t exp_pending_total(void)
{
    return atomic_load(&g_pending_total);
}

/* --- accessors ------------------------------------------------------------------ */

void exp_lock(struct exp *x)
{
    pthread_mutex_lock(&x->mu);
}

void exp_unlock(struct exp *x)
{
    pthread_mutex_unlock(&x->mu);
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

size_t exp_pending_count(const struct exp *x)
{
    return x->d->pending;
}

int exp_bandit_index(const struct exp *x, const char *id)
{
    for (size_t b = 0; b < x->cfg.n_bandits; b++)
        if (strcmp(x->cfg.bandit_ids[b], id) == 0)
            return (int)b;
    return -1;
}

int exp_arm_index(const struct exp *x, size_t b, const char *name)
{
    for (size_t i = 0; i < x->cfg.n_arms[b]; i++)
        if (strcmp(x->cfg.arm_names[b][i], name) == 0)
            return (int)i;
    return -1;
}

double exp_scale(const struct exp *x, double v)
{
    return (v - x->cfg.reward_min) / (x->cfg.reward_max - x->cfg.reward_min);
}

double exp_range(const struct exp *x)
{
    return x->cfg.reward_max - x->cfg.reward_min;
}

void exp_assignment_id(const struct exp *x, int64_t seq, char *buf, size_t len)
{
    /* "%08x-%lld" by hand: snprintf was a quarter of an assignment's reply */
    static const char hex[] = "0123456789abcdef";
    char tmp[32];
    size_t n = 0;
    for (int sh = 28; sh >= 0; sh -= 4)
        tmp[n++] = hex[(x->token >> sh) & 15];
    tmp[n++] = '-';
    char dig[24];
    size_t nd = 0;
    uint64_t u = seq < 0 ? 0 : (uint64_t)seq;
    do {
        dig[nd++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    while (nd > 0)
        tmp[n++] = dig[--nd];
    if (len == 0)
        return;
    if (n >= len)
        n = len - 1;
    memcpy(buf, tmp, n);
    buf[n] = '\0';
}

int64_t exp_parse_assignment_id(const struct exp *x, const char *id)
{
    static const char hex[] = "0123456789abcdef";
    if (strlen(id) < 10 || id[8] != '-')
        return -1;
    for (int i = 0, sh = 28; i < 8; i++, sh -= 4)
        if (id[i] != hex[(x->token >> sh) & 15])
            return -1;
    const char *p = id + 9;
    if (*p < '1' || *p > '9')
        return -1;
    int64_t seq = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || seq > (INT64_MAX - 9) / 10)
            return -1;
        seq = seq * 10 + (*p - '0');
    }
    return seq;
}

/* A token that differs between a deleted experiment and its re-creation
 * under the same id (their creation times differ) yet survives restarts. */
static uint32_t make_token(const char *id, int64_t created_ms)
{
    uint64_t h = hash_str(id) ^ hash_seq(created_ms);
    return (uint32_t)(h ^ (h >> 32));
}

/* --- batches ------------------------------------------------------------------------ */

void exp_batch_init(struct exp_batch *b)
{
    memset(b, 0, sizeof *b);
}

void exp_batch_free(struct exp_batch *b)
{
    for (size_t i = 0; i < b->nstr; i++)
        free(b->strings[i]);
    free(b->strings);
    free(b->ops);
    free(b->assign_seqs);
    free(b->outcome_seqs);
    memset(b, 0, sizeof *b);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    /* First room for 4: eight store_ops (144 bytes each) made a 1152-byte
     * block per request, and glibc consolidates its fast bins before every
     * request of 1 KiB or more (malloc_consolidate, ~1% in perf). */
    size_t ncap = *cap ? *cap * 2 : 4;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*p, ncap * size);
    if (n == NULL)
        return -1;
    *p = n;
    *cap = ncap;
    return 0;
}

static struct store_op *batch_op(struct exp_batch *b)
{
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0)
        return NULL;
    struct store_op *op = &b->ops[b->n++];
    memset(op, 0, sizeof *op);
    return op;
}

static const char *batch_str(struct exp_batch *b, const char *s)
{
    if (s == NULL)
        return NULL;
    if (grow((void **)&b->strings, &b->capstr, b->nstr + 1, sizeof *b->strings) != 0)
        return NULL;
    char *c = strdup(s);
    if (c != NULL)
        b->strings[b->nstr++] = c;
    return c;
}

static int batch_seq(int64_t **arr, size_t *n, size_t *cap, int64_t seq)
{
    if (grow((void **)arr, cap, *n + 1, sizeof **arr) != 0)
        return -1;
    (*arr)[(*n)++] = seq;
    return 0;
}

static struct store_op *event_op(struct exp *x, struct exp_batch *b, int kind, int64_t ts)
{
    struct store_op *op = batch_op(b);
    if (op == NULL)
        return NULL;
    op->kind = STORE_OP_EVENT;
    op->ev.exp = x->rowid;
    op->ev.seq = ++x->d->seq;
    op->ev.kind = kind;
    op->ev.value = NAN;
    op->ev.ts_ms = ts;
    op->ev.bandit = -1;
    op->ev.arm = -1;
    return op;
}

/* --- events ------------------------------------------------------------------------- */

static int is_final(const struct exp_assignment *a)
{
    return a->status != EXP_A_PENDING && a->committed && a->outcome_committed;
}

static void drop_if_final(struct exp_data *d, struct exp_assignment *a)
{
    if (a != NULL && is_final(a)) {
        tab_remove(d, a->seq);
        free_assignment(a);
    }
}

int exp_ev_assign(struct exp *x, struct exp_batch *b, int bandit, const char *unit, int64_t now,
                  const struct exp_assignment **out)
{
    struct exp_data *d = x->d;
    if (d->pending >= g_lim.max_pending)
        return EXP_ERR_LIMIT;
    struct exp_assignment *a = calloc(1, sizeof *a);
    if (a == NULL)
        return EXP_ERR_NOMEM;
    if (unit != NULL && (a->unit = strdup(unit)) == NULL) {
        free(a);
        return EXP_ERR_NOMEM;
    }
    /* Reserve every allocation before touching the engine: once the engine
     * moved, the event must reach the batch. */
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0 ||
        grow((void **)&b->assign_seqs, &b->capassign, b->nassign + 1, sizeof(int64_t)) != 0 ||
        grow((void **)&b->strings, &b->capstr, b->nstr + 1, sizeof *b->strings) != 0 ||
        ((d->tab_n + 1) * 10 > d->tab_cap * 7 && tab_grow(d) != 0) || fifo_reserve(d) != 0 ||
        (unit != NULL && (d->utab_n + 1) * 10 > d->utab_cap * 7 && utab_grow(d) != 0)) {
        free_assignment(a);
        return EXP_ERR_NOMEM;
    }
    struct engine_pull pull;
    engine_assign(d->eng, bandit, &pull);
    struct store_op *op = event_op(x, b, STORE_EV_ASSIGN, now);
    a->seq = op->ev.seq;
    a->bandit = (int32_t)pull.bandit;
    a->arm = (int32_t)pull.arm;
    a->created_ms = now;
    a->expires_ms = now + x->cfg.ttl_s * 1000;
    a->value = NAN;
    a->status = pull.exploit ? EXP_A_EXPLOIT : EXP_A_PENDING;
    a->outcome_committed = 1; /* no outcome yet */
    op->ev.bandit = a->bandit;
    op->ev.arm = a->arm;
    op->ev.flags =
        (pull.exploit ? STORE_AF_EXPLOIT : 0) | (bandit >= 0 ? STORE_AF_BANDIT_GIVEN : 0);
    op->ev.expires_ms = a->expires_ms;
    op->ev.unit = batch_str(b, unit);
    tab_insert(d, a);
    b->assign_seqs[b->nassign++] = a->seq;
    if (unit != NULL)
        utab_insert(d, a->seq, a->unit);
    if (!pull.exploit) {
        fifo_push(d, a->seq);
        d->pending++;
        atomic_fetch_add(&g_pending_total, 1);
    }
    *out = a;
    return EXP_OK;
}

int exp_find_unit(struct exp *x, const char *unit, struct exp_assignment *out)
{
    struct exp_data *d = x->d;
    int64_t seq = utab_find(d, unit);
    if (seq != 0) {
        *out = *tab_find(d, seq);
        out->unit = NULL;
        return 1;
    }
    struct store_event ev;
    int rc = store_find_unit(g_store, x->rowid, unit, &ev);
    if (rc == STORE_ERR_NOTFOUND)
        return 0;
    if (rc != STORE_OK)
        return -1;
    memset(out, 0, sizeof *out);
    out->seq = ev.seq;
    out->bandit = ev.bandit;
    out->arm = ev.arm;
    out->created_ms = ev.ts_ms;
    out->expires_ms = ev.expires_ms;
    out->status = (ev.flags & STORE_AF_EXPLOIT) ? EXP_A_EXPLOIT : EXP_A_PENDING;
    out->committed = 1;
    return 1;
}

const char *exp_reward_status_name(enum exp_reward_status s)
{
    static const char *const names[] = {"accepted", "duplicate", "conflict",
                                        "unknown",  "expired",   "error"};
    return names[s];
}

static void set_outcome(struct exp *x, struct exp_batch *b, struct exp_assignment *a,
                        struct store_op *op)
{
    op->ev.ref = a->seq;
    op->ev.bandit = a->bandit;
    op->ev.arm = a->arm;
    a->outcome_committed = 0;
    batch_seq(&b->outcome_seqs, &b->noutcome, &b->capoutcome, a->seq);
    (void)x;
}

enum exp_reward_status exp_ev_reward(struct exp *x, struct exp_batch *b, int64_t seq, double v,
                                     int64_t now)
{
    struct exp_data *d = x->d;
    if (seq < 1 || seq > d->seq)
        return EXP_R_UNKNOWN;
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0 ||
        grow((void **)&b->outcome_seqs, &b->capoutcome, b->noutcome + 1, sizeof(int64_t)) != 0)
        return EXP_R_ERROR;
    struct exp_assignment *a = tab_find(d, seq);
    if (a != NULL) {
        switch (a->status) {
        case EXP_A_PENDING: {
            engine_reward(d->eng, (size_t)a->bandit, (size_t)a->arm, exp_scale(x, v));
            a->status = EXP_A_REWARDED;
            a->value = v;
            d->pending--;
            atomic_fetch_sub(&g_pending_total, 1);
            struct store_op *op = event_op(x, b, STORE_EV_REWARD, now);
            op->ev.value = v;
            set_outcome(x, b, a, op);
            history_maybe_record(x, now);
            return EXP_R_ACCEPTED;
        }
        case EXP_A_REWARDED:
            return a->value == v ? EXP_R_DUPLICATE : EXP_R_CONFLICT;
        case EXP_A_EXPIRED: {
            struct store_op *op = event_op(x, b, STORE_EV_LATE, now);
            op->ev.value = v;
            op->ev.ref = a->seq;
            op->ev.bandit = a->bandit;
            op->ev.arm = a->arm;
            return EXP_R_EXPIRED;
        }
        case EXP_A_EXPLOIT:
            if (!isnan(a->value))
                return a->value == v ? EXP_R_DUPLICATE : EXP_R_CONFLICT;
            {
                /* Recorded for the audit trail; exploitation is not a pull
                 * and does not feed the statistics. */
                struct store_op *op = event_op(x, b, STORE_EV_REWARD, now);
                op->ev.value = v;
                a->value = v;
                set_outcome(x, b, a, op);
            }
            return EXP_R_ACCEPTED;
        default:
            return EXP_R_ERROR;
        }
    }
    /* Not in memory: finalised and committed long ago, or never ours. */
    struct store_event ev;
    char unit[8];
    int rc = store_find_assignment(g_store, x->rowid, seq, &ev, unit, sizeof unit);
    if (rc == STORE_ERR_NOTFOUND)
        return EXP_R_UNKNOWN;
    if (rc != STORE_OK || ev.kind != STORE_EV_ASSIGN)
        return rc != STORE_OK ? EXP_R_ERROR : EXP_R_UNKNOWN;
    struct store_event out;
    rc = store_find_outcome(g_store, x->rowid, seq, &out);
    if (rc == STORE_OK && out.kind == STORE_EV_REWARD)
        return out.value == v ? EXP_R_DUPLICATE : EXP_R_CONFLICT;
    if (rc == STORE_OK && (out.kind == STORE_EV_EXPIRE || out.kind == STORE_EV_LATE)) {
        struct store_op *op = event_op(x, b, STORE_EV_LATE, now);
        op->ev.value = v;
        op->ev.ref = seq;
        op->ev.bandit = ev.bandit;
        op->ev.arm = ev.arm;
        return EXP_R_EXPIRED;
    }
    if (rc == STORE_ERR_NOTFOUND && (ev.flags & STORE_AF_EXPLOIT)) {
        struct store_op *op = event_op(x, b, STORE_EV_REWARD, now);
        op->ev.value = v;
        op->ev.ref = seq;
        op->ev.bandit = ev.bandit;
        op->ev.arm = ev.arm;
        return EXP_R_ACCEPTED;
    }
    return EXP_R_ERROR;
}

int exp_ev_observe(struct exp *x, struct exp_batch *b, size_t bandit, size_t arm, double v,
                   int64_t now)
{
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0)
        return EXP_ERR_NOMEM;
    engine_observe(x->d->eng, bandit, arm, exp_scale(x, v));
    struct store_op *op = event_op(x, b, STORE_EV_OBSERVE, now);
    op->ev.bandit = (int32_t)bandit;
    op->ev.arm = (int32_t)arm;
    op->ev.value = v;
    history_maybe_record(x, now);
    return EXP_OK;
}

static const char *const state_names[] = {"running", "paused", "stopped"};

static void apply_state(struct exp_data *d, enum exp_state s)
{
    d->state = s;
    if (s == EXP_STOPPED)
        engine_stop(d->eng);
    else
        engine_set_paused(d->eng, s == EXP_PAUSED);
}

int exp_ev_state(struct exp *x, struct exp_batch *b, enum exp_state s, int64_t now)
{
    enum exp_state cur = exp_get_state(x);
    if (cur == s)
        return EXP_OK;
    if (cur == EXP_STOPPED)
        return EXP_ERR_INTERNAL; /* a stop is final */
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0)
        return EXP_ERR_NOMEM;
    apply_state(x->d, s);
    struct store_op *op = event_op(x, b, STORE_EV_STATE, now);
    op->ev.text = state_names[s];
    return EXP_OK;
}

/* Expire due assignments (FIFO order = expiry order). */
static void expire_due(struct exp *x, struct exp_batch *b, int64_t now)
{
    struct exp_data *d = x->d;
    while (d->flen > 0) {
        int64_t seq = d->fifo[d->fhead];
        struct exp_assignment *a = tab_find(d, seq);
        if (a != NULL && a->status == EXP_A_PENDING) {
            if (a->expires_ms > now)
                break;
            if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0 ||
                grow((void **)&b->outcome_seqs, &b->capoutcome, b->noutcome + 1, sizeof(int64_t)) !=
                    0)
                break; /* try again at the next sweep */
            struct store_op *op;
            if (x->cfg.has_default_reward) {
                engine_reward(d->eng, (size_t)a->bandit, (size_t)a->arm,
                              exp_scale(x, x->cfg.default_reward));
                op = event_op(x, b, STORE_EV_EXPIRE, now);
                op->ev.value = x->cfg.default_reward;
                a->value = x->cfg.default_reward;
            } else {
                engine_release(d->eng, (size_t)a->bandit, (size_t)a->arm);
                op = event_op(x, b, STORE_EV_EXPIRE, now);
            }
            a->status = EXP_A_EXPIRED;
            metrics_expired(1);
            d->pending--;
            atomic_fetch_sub(&g_pending_total, 1);
            set_outcome(x, b, a, op);
            history_maybe_record(x, now);
        }
        d->fhead = (d->fhead + 1) % d->fcap;
        d->flen--;
    }
}

/* --- submission and commit bookkeeping ------------------------------------------- */

struct sub {
    struct exp *x;
    unsigned gen;
    struct exp_batch *batch;
    store_done_fn done;
    void *arg;
    int owns_batch;
    int is_delete;
};

static void on_commit(void *arg, int err)
{
    struct sub *s = arg;
    struct exp *x = s->x;
    int forget = 0;
    exp_lock(x);
    if (--x->inflight == 0)
        pthread_cond_broadcast(&x->idle);
    if (s->is_delete) {
        /* Gone from memory only once gone from disk: a failed delete
         * leaves the experiment as the disk has it (reloaded, which also
         * clears the store's failure mark on its key), and since the id
         * stays registered meanwhile no create can take it (409). */
        x->deleting = 0;
        if (err == STORE_OK) {
            x->deleted = 1;
            forget = 1;
        } else {
            atomic_store(&x->stale, 1);
        }
    } else if (s->gen == atomic_load(&x->gen) && !x->deleted) {
        struct exp_data *d = x->d;
        if (err == STORE_OK) {
            for (size_t i = 0; i < s->batch->nassign; i++) {
                struct exp_assignment *a = tab_find(d, s->batch->assign_seqs[i]);
                if (a == NULL)
                    continue;
                a->committed = 1;
                if (a->unit != NULL)
                    utab_remove(d, a->unit);
                drop_if_final(d, a);
            }
            for (size_t i = 0; i < s->batch->noutcome; i++) {
                struct exp_assignment *a = tab_find(d, s->batch->outcome_seqs[i]);
                if (a == NULL)
                    continue;
                a->outcome_committed = 1;
                drop_if_final(d, a);
            }
        } else {
            /* Memory holds events the disk lost: reload before the next
             * request (the store fails this experiment's later writes until
             * then, so nothing after the gap commits). */
            atomic_store(&x->stale, 1);
        }
    }
    exp_unlock(x);
    if (forget)
        registry_remove(x); /* before the 204: the id is free when the client hears */
    if (s->done != NULL)
        s->done(s->arg, err);
    if (s->owns_batch) {
        exp_batch_free(s->batch);
        free(s->batch);
    }
    exp_put(x);
    free(s);
}

/* Queue b for the writer. is_delete: the batch deletes the experiment; it
 * depends on no earlier write (whatever they left, the row and its log
 * go), so it resets the key: a write that failed before it must not fail
 * the delete too (and the poison of a deleted rowid must not outlive it:
 * SQLite hands the largest rowid out again after its row is deleted). */
static int submit(struct exp *x, struct exp_batch *b, int owns, int is_delete, store_done_fn done,
                  void *arg)
{
    /* Memory holds events the disk does not (a write failed, or was never
     * queued): nothing after them may reach the disk until the reload. The
     * store refuses later writes of a key whose write failed; this covers
     * a write that never reached its queue (queue full, out of memory). */
    if (atomic_load(&x->stale) && !is_delete)
        return STORE_ERR_FULL;
    struct sub *s = calloc(1, sizeof *s);
    if (s == NULL) {
        atomic_store(&x->stale, 1);
        return STORE_ERR_NOMEM;
    }
    s->x = x;
    s->gen = atomic_load(&x->gen);
    s->batch = b;
    s->done = done;
    s->arg = arg;
    s->owns_batch = owns;
    s->is_delete = is_delete;
    atomic_fetch_add(&x->refs, 1);
    int rc = store_submit_keyed(g_store, x->rowid, x->d->need_reset || is_delete, b->ops, b->n,
                                on_commit, s);
    if (rc != STORE_OK) {
        /* Refused at once (queue full, no memory): unlike a failed
         * commit, this poisons nothing in the store, so the stale mark
         * alone keeps later events from being queued after the gap. */
        atomic_fetch_sub(&x->refs, 1);
        free(s);
        atomic_store(&x->stale, 1);
        return rc;
    }
    x->d->need_reset = 0;
    x->inflight++;
    return STORE_OK;
}

int exp_submit_locked(struct exp *x, struct exp_batch *b, store_done_fn done, void *arg)
{
    return submit(x, b, 0, 0, done, arg);
}

/* --- replay ------------------------------------------------------------------------- */

struct replay {
    struct exp *x;
    struct exp_data *d;
    int exact;    /* 0 after a mismatch: pulls are recorded, not re-selected */
    int mismatch; /* set when the policy chose differently from the log */
};

static int replay_event(void *arg, const struct store_event *ev)
{
    struct replay *r = arg;
    struct exp *x = r->x;
    struct exp_data *d = r->d;
    size_t nb = x->cfg.n_bandits;
    d->seq = ev->seq;
    switch (ev->kind) {
    case STORE_EV_ASSIGN: {
        if (ev->bandit < 0 || (size_t)ev->bandit >= nb || ev->arm < 0 ||
            (size_t)ev->arm >= x->cfg.n_arms[ev->bandit])
            return 0; /* corrupt row: skip it rather than crash */
        int exploit = (ev->flags & STORE_AF_EXPLOIT) != 0;
        if (r->exact) {
            struct engine_pull p;
            engine_assign(d->eng, (ev->flags & STORE_AF_BANDIT_GIVEN) ? ev->bandit : -1, &p);
            if ((int)p.bandit != ev->bandit || (int)p.arm != ev->arm || p.exploit != exploit) {
                r->mismatch = 1;
                return 1; /* start over in recording mode */
            }
        } else if (!exploit) {
            engine_record_pull(d->eng, (size_t)ev->bandit, (size_t)ev->arm);
        }
        if (exploit)
            return 0;
        struct exp_assignment *a = calloc(1, sizeof *a);
        if (a == NULL)
            return -1;
        a->seq = ev->seq;
        a->bandit = ev->bandit;
        a->arm = ev->arm;
        a->created_ms = ev->ts_ms;
        a->expires_ms = ev->expires_ms;
        a->value = NAN;
        a->status = EXP_A_PENDING;
        a->committed = 1;
        a->outcome_committed = 1;
        if (tab_insert(d, a) != 0) {
            free(a);
            return -1;
        }
        if (fifo_push(d, ev->seq) != 0)
            return -1;
        d->pending++;
        atomic_fetch_add(&g_pending_total, 1);
        return 0;
    }
    case STORE_EV_REWARD:
    case STORE_EV_EXPIRE: {
        struct exp_assignment *a = tab_find(d, ev->ref);
        if (a == NULL || a->status != EXP_A_PENDING)
            return 0; /* an exploit assignment's reward: audit only */
        if (ev->kind == STORE_EV_REWARD || !isnan(ev->value))
            engine_reward(d->eng, (size_t)a->bandit, (size_t)a->arm, exp_scale(x, ev->value));
        else
            engine_release(d->eng, (size_t)a->bandit, (size_t)a->arm);
        d->pending--;
        atomic_fetch_sub(&g_pending_total, 1);
        tab_remove(d, a->seq);
        free_assignment(a);
        history_maybe_record(x, ev->ts_ms);
        return 0;
    }
    case STORE_EV_OBSERVE:
        if (ev->bandit < 0 || (size_t)ev->bandit >= nb || ev->arm < 0 ||
            (size_t)ev->arm >= x->cfg.n_arms[ev->bandit])
            return 0;
        engine_observe(d->eng, (size_t)ev->bandit, (size_t)ev->arm, exp_scale(x, ev->value));
        history_maybe_record(x, ev->ts_ms);
        return 0;
    case STORE_EV_STATE:
        for (int s = 0; s < 3; s++)
            if (ev->text != NULL && strcmp(ev->text, state_names[s]) == 0)
                apply_state(d, (enum exp_state)s);
        return 0;
    default:
        return 0; /* LATE: audit only */
    }
}

/* Build x's data from its log on disk. Returns the new data or NULL. */
static struct exp_data *replay_all(struct exp *x, char *err, size_t errlen)
{
    for (int exact = 1; exact >= 0; exact--) {
        struct exp_data *d = data_new(&x->cfg, err, errlen);
        if (d == NULL)
            return NULL;
        struct exp_data *saved = x->d;
        x->d = d; /* history_maybe_record reads x->d */
        struct replay r = {.x = x, .d = d, .exact = exact};
        int rc = store_load_events(g_store, x->rowid, 0, replay_event, &r);
        x->d = saved;
        if (rc == 1 && r.mismatch) {
            log_warn("experiment %s: the policy no longer reproduces its log (new version?); "
                     "statistics restored exactly, policy state rebuilt from rewards only",
                     x->id);
            data_free(d);
            continue;
        }
        if (rc != STORE_OK) {
            snprintf(err, errlen, "reading events: %s", store_strerror(rc));
            data_free(d);
            return NULL;
        }
        return d;
    }
    snprintf(err, errlen, "replay failed");
    return NULL;
}

/* Wait (x locked, released meanwhile) until none of x's writes is queued or
 * another thread did the reload, at most timeout_ms. Returns 1 when so. */
static int wait_idle(struct exp *x, int timeout_ms)
{
    struct timespec dl = clock_deadline(CLOCK_MONOTONIC, (unsigned)timeout_ms);
    while (x->inflight > 0 && atomic_load(&x->stale))
        if (pthread_cond_timedwait(&x->idle, &x->mu, &dl) == ETIMEDOUT)
            break;
    return x->inflight == 0 || !atomic_load(&x->stale);
}

int exp_prepare_locked(struct exp *x, int64_t now)
{
    if (x->deleted || x->deleting)
        return EXP_ERR_GONE;
    if (atomic_load(&x->stale)) {
        /* The disk is final for this experiment only once every write
         * queued before the failure has completed: a write refused at
         * queue time poisons nothing, so older ones may still commit (and
         * their clients hear 2xx). Reloading before would forget them. */
        if (!wait_idle(x, EXP_RELOAD_WAIT_MS))
            return EXP_ERR_STORE;
        if (x->deleted || x->deleting)
            return EXP_ERR_GONE;
    }
    if (atomic_load(&x->stale)) {
        char err[256];
        struct exp_data *d = replay_all(x, err, sizeof err);
        if (d == NULL) {
            log_warn("experiment %s: reload failed: %s", x->id, err);
            return EXP_ERR_STORE;
        }
        data_free(x->d);
        x->d = d;
        d->need_reset = 1;
        atomic_fetch_add(&x->gen, 1);
        atomic_store(&x->stale, 0);
        log_info("experiment %s reloaded from disk after a failed write (%" PRId64 " events)",
                 x->id, d->seq);
    }
    if (x->d->flen > 0) {
        int64_t head = x->d->fifo[x->d->fhead];
        struct exp_assignment *a = tab_find(x->d, head);
        if (a == NULL || a->status != EXP_A_PENDING || a->expires_ms <= now) {
            struct exp_batch *b = calloc(1, sizeof *b);
            if (b == NULL)
                return EXP_OK;
            exp_batch_init(b);
            expire_due(x, b, now);
            int rc = b->n == 0 ? STORE_OK : submit(x, b, 1, 0, NULL, NULL);
            if (b->n == 0 || rc != STORE_OK) {
                exp_batch_free(b);
                free(b);
            }
            /* Refused: the expiries are in memory only (x is stale now);
             * the caller must not queue anything after them. */
            if (rc != STORE_OK)
                return EXP_ERR_STORE;
        }
    }
    return EXP_OK;
}

/* --- life cycle ------------------------------------------------------------------- */

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
    x->token = make_token(x->id, created_ms);
    x->config_text = json_dumps(x->cfg.json, JSON_COMPACT | JSON_SORT_KEYS);
    x->d = data_new(&x->cfg, err, errlen);
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
        registry_remove(c->x);
    if (c->done != NULL)
        c->done(c->arg, err);
    exp_put(c->x);
    free(c);
}

int exp_create(struct exp_config *cfg, store_done_fn done, void *arg, struct exp **out)
{
    char err[256];
    if (exp_count() >= g_lim.max_experiments) {
        exp_config_free(cfg);
        return EXP_ERR_LIMIT;
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
    int rc = registry_insert(x, g_lim.max_experiments);
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
    if (store_submit(g_store, &c->op, 1, on_created, c) != STORE_OK) {
        registry_remove(x);
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

int exp_delete_locked(struct exp *x, struct exp_batch *b, store_done_fn done, void *arg)
{
    struct store_op *op = batch_op(b);
    if (op == NULL)
        return STORE_ERR_NOMEM;
    op->kind = STORE_OP_EXP_DELETE;
    op->exp = x->rowid;
    int rc = submit(x, b, 0, 1, done, arg);
    if (rc != STORE_OK)
        return rc;
    x->deleting = 1; /* on_commit forgets it, or brings it back on failure */
    return STORE_OK;
}

int exp_gone(struct exp *x)
{
    exp_lock(x);
    int gone = x->deleting || x->deleted;
    exp_unlock(x);
    return gone;
}

/* --- startup and the expiry sweeper ---------------------------------------------------- */

struct load_ctx {
    char *err;
    size_t errlen;
    size_t loaded;
};

static int load_one(void *arg, const struct store_experiment_row *row)
{
    struct load_ctx *lc = arg;
    json_error_t jerr;
    json_t *j = json_loads(row->config_json, 0, &jerr);
    json_t *errors = json_array();
    struct exp_config cfg;
    int parsed = j != NULL && errors != NULL;
    int rc = parsed ? exp_config_parse(j, &cfg, errors) : -1;
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
    struct exp_data *d = replay_all(x, lc->err, lc->errlen);
    if (d == NULL) {
        exp_put(x);
        return -1;
    }
    data_free(x->d);
    x->d = d;
    atomic_store(&x->visible, 1);
    if (registry_insert(x, 0) != EXP_OK) {
        log_warn("experiment %s stored twice; keeping the first", x->id);
        exp_put(x);
        return 0;
    }
    lc->loaded++;
    return 0;
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
        size_t got = all != NULL ? exp_list(NULL, n, all) : 0;
        int64_t now = clock_wall_ms();
        for (size_t i = 0; i < got; i++) {
            exp_lock(all[i]);
            exp_prepare_locked(all[i], now);
            exp_unlock(all[i]);
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
    g_store = st;
    g_lim = *lim;
    if (g_lim.history_points < 2)
        g_lim.history_points = 2;
    for (size_t i = 0; i < NSHARDS; i++) {
        pthread_mutex_init(&g_shards[i].mu, NULL);
        memset(g_shards[i].buckets, 0, sizeof g_shards[i].buckets);
    }
    atomic_store(&g_count, 0);
    return 0;
}

int exp_registry_load(char *err, size_t errlen)
{
    struct load_ctx lc = {.err = err, .errlen = errlen};
    int rc = store_load_experiments(g_store, load_one, &lc);
    if (rc != 0) {
        if (err[0] == '\0')
            snprintf(err, errlen, "loading experiments: %s", store_strerror(rc));
        return -1;
    }
    log_info("loaded %zu experiments", lc.loaded);
    g_sweeper_stop = 0;
    if (pthread_create(&g_sweeper, NULL, sweeper_main, NULL) == 0)
        g_sweeper_running = 1;
    return 0;
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
