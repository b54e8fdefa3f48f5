/*
 * table.c — one experiment's in-memory tables (internal.h): the
 * assignments it still tracks (open addressing on seq, linear probing,
 * backward-shift deletion), the sticky units whose assignment is not
 * committed yet (keyed by unit, valued by seq), and the FIFO of pending
 * assignments in expiry order (compacted as answers accumulate in it); and
 * the data a reload replaces as a whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "exp/internal.h"

static uint64_t hash_seq(int64_t seq)
{
    return hash_mix64((uint64_t)seq);
}

static size_t tab_slot(const struct exp_data *d, int64_t seq)
{
    size_t mask = d->tab_cap - 1;
    size_t i = hash_seq(seq) & mask;
    while (d->tab[i] != NULL && d->tab[i]->seq != seq)
        i = (i + 1) & mask;
    return i;
}

struct exp_assignment *exp_tab_find(const struct exp_data *d, int64_t seq)
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

int exp_tab_reserve(struct exp_data *d)
{
    return (d->tab_n + 1) * 10 > d->tab_cap * 7 ? tab_grow(d) : 0;
}

int exp_tab_insert(struct exp_data *d, struct exp_assignment *a)
{
    if (exp_tab_reserve(d) != 0)
        return -1;
    d->tab[tab_slot(d, a->seq)] = a;
    d->tab_n++;
    return 0;
}

/* Remove (backward-shift deletion keeps probe chains intact, no tombstones). */
void exp_tab_remove(struct exp_data *d, int64_t seq)
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

static size_t utab_slot(const struct exp_data *d, const char *unit)
{
    size_t mask = d->utab_cap - 1;
    size_t i = exp_hash_id(unit) & mask;
    while (d->utab[i] != 0) {
        const struct exp_assignment *a = exp_tab_find(d, d->utab[i]);
        if (a != NULL && a->unit != NULL && strcmp(a->unit, unit) == 0)
            break;
        i = (i + 1) & mask;
    }
    return i;
}

int64_t exp_utab_find(const struct exp_data *d, const char *unit)
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
        const struct exp_assignment *a = exp_tab_find(d, old[i]);
        d->utab[utab_slot(d, a->unit)] = old[i];
    }
    free(old);
    return 0;
}

int exp_utab_reserve(struct exp_data *d)
{
    return (d->utab_n + 1) * 10 > d->utab_cap * 7 ? utab_grow(d) : 0;
}

void exp_utab_insert(struct exp_data *d, int64_t seq, const char *unit)
{
    size_t i = utab_slot(d, unit);
    if (d->utab[i] == 0)
        d->utab_n++;
    d->utab[i] = seq; /* a unit's newer assignment replaces its older one */
}

void exp_utab_remove(struct exp_data *d, const char *unit, int64_t seq)
{
    if (d->utab_cap == 0)
        return;
    size_t mask = d->utab_cap - 1;
    size_t i = utab_slot(d, unit);
    if (d->utab[i] != seq)
        return; /* none, or a newer assignment of the unit, not committed yet */
    d->utab[i] = 0;
    d->utab_n--;
    for (size_t j = (i + 1) & mask; d->utab[j] != 0; j = (j + 1) & mask) {
        const struct exp_assignment *a = exp_tab_find(d, d->utab[j]);
        size_t home = exp_hash_id(a->unit) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            d->utab[i] = d->utab[j];
            d->utab[j] = 0;
            i = j;
        }
    }
}

/* The FIFO lets go of a: freed if the table dropped it already. */
static void fifo_release(struct exp_assignment *a)
{
    a->queued = 0;
    if (a->dropped)
        exp_assignment_free(a);
}

/* Let go of the assignments no longer pending, keeping the order. An
 * answered assignment stays in the FIFO until it reaches the head, and one
 * old assignment still pending holds back every later one: without this
 * the FIFO, and every snapshot's walk of it, would grow with the
 * assignments of a whole TTL rather than with the pending ones. */
static void fifo_compact(struct exp_data *d)
{
    size_t w = 0;
    for (size_t r = 0; r < d->flen; r++) {
        struct exp_assignment *a = d->fifo[(d->fhead + r) % d->fcap];
        if (a->status == EXP_A_PENDING)
            d->fifo[(d->fhead + w++) % d->fcap] = a;
        else
            fifo_release(a);
    }
    d->flen = w;
}

void exp_fifo_trim(struct exp_data *d)
{
    /* Compacted once the answered entries outnumber the pending ones
     * (every pending assignment is here): a walk of flen entries then lets
     * go of at least flen/2 of them, so its cost per answer is bounded. */
    if (d->flen >= 2 * d->pending + EXP_FIFO_SLACK)
        fifo_compact(d);
}

int exp_fifo_reserve(struct exp_data *d)
{
    exp_fifo_trim(d); /* flen ≤ 2·pending + EXP_FIFO_SLACK after every push */
    if (d->flen < d->fcap)
        return 0;
    size_t ncap = d->fcap ? d->fcap * 2 : 64;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): sizeof *p for an array of pointers
    struct exp_assignment **n = malloc(ncap * sizeof *n);
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

int exp_fifo_push(struct exp_data *d, struct exp_assignment *a)
{
    if (exp_fifo_reserve(d) != 0)
        return -1;
    d->fifo[(d->fhead + d->flen) % d->fcap] = a;
    d->flen++;
    a->queued = 1;
    return 0;
}

struct exp_assignment *exp_fifo_at(const struct exp_data *d, size_t i)
{
    return d->fifo[(d->fhead + i) % d->fcap];
}

void exp_fifo_pop(struct exp_data *d)
{
    struct exp_assignment *a = d->fifo[d->fhead];
    d->fhead = (d->fhead + 1) % d->fcap;
    d->flen--;
    fifo_release(a);
}

void exp_tab_drop(struct exp_data *d, struct exp_assignment *a)
{
    exp_tab_remove(d, a->seq);
    if (a->queued)
        a->dropped = 1; /* the FIFO frees it (fifo_release) */
    else
        exp_assignment_free(a);
}

void exp_assignment_free(struct exp_assignment *a)
{
    if (a == NULL)
        return;
    free(a->unit);
    free(a);
}

void exp_data_free(struct exp_data *d)
{
    if (d == NULL)
        return;
    engine_free(d->eng);
    /* what the table dropped is the FIFO's alone; the rest is the table's */
    for (size_t i = 0; i < d->flen; i++) {
        struct exp_assignment *a = exp_fifo_at(d, i);
        if (a->dropped)
            exp_assignment_free(a);
    }
    for (size_t i = 0; i < d->tab_cap; i++)
        exp_assignment_free(d->tab[i]);
    free(d->tab);
    free(d->utab);
    free(d->fifo);
    exp_history_free(d);
    free(d->scratch);
    free(d->concluded);
    exp_watch_free(d->watch);
    free(d->name);
    exp_design_free(d->design);
    atomic_fetch_sub(&exp_rt.pending_total, d->pending);
    free(d);
}

struct exp_data *exp_data_new(const struct exp_config *cfg, char *err, size_t errlen)
{
    struct exp_data *d = calloc(1, sizeof *d);
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    struct policy_error perr;
    d->eng = engine_create(&cfg->engine, &perr);
    if (d->eng == NULL)
        policy_error_text(&perr, err, errlen);
    size_t kmax = 0;
    for (size_t b = 0; b < cfg->n_bandits; b++)
        kmax = cfg->n_arms[b] > kmax ? cfg->n_arms[b] : kmax;
    d->scratch = calloc(kmax, 1);
    d->concluded = calloc(cfg->n_bandits, 1);
    d->hstride = 1;
    d->hnext = 1;
    d->ttl_s = cfg->ttl_s;
    if (cfg->n_webhooks > 0)
        d->watch = exp_watch_new(cfg);
    if (d->eng == NULL || d->scratch == NULL || d->concluded == NULL ||
        (cfg->n_webhooks > 0 && d->watch == NULL)) {
        if (d->eng != NULL)
            snprintf(err, errlen, "out of memory");
        exp_data_free(d);
        return NULL;
    }
    return d;
}

static int is_final(const struct exp_assignment *a)
{
    return a->status != EXP_A_PENDING && a->committed && a->outcome_committed;
}

void exp_drop_if_final(struct exp_data *d, struct exp_assignment *a)
{
    if (a != NULL && is_final(a))
        exp_tab_drop(d, a);
}
