/*
 * history.c — the decimated history dashboards draw (δᶜ, ρ̄, the stop
 * rule's error bound and pulls per arm against rewarded pulls): at most history_points points per
 * experiment, thinned so that they span its whole life.
 */
#include <stdlib.h>
#include <string.h>

#include "base/ser.h"
#include "exp/internal.h"

static void hist_free(struct exp_history_point *p)
{
    free(p->delta_c);
    free(p->rho);
    free(p->bound);
    free(p->arm_pulls);
}

/* Record a point when the rewarded pulls reach the next mark; when the
 * buffer is full keep every other point and double the spacing, so a point
 * count bounded by history_points spans the experiment's whole life. */
void exp_history_maybe_record(struct exp *x, int64_t ts)
{
    struct exp_data *d = x->d;
    uint64_t pulls = engine_pulls(d->eng);
    if (pulls < d->hnext || exp_rt.lim.history_points < 2)
        return;
    if (d->hlen == exp_rt.lim.history_points) {
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
        if (ncap > exp_rt.lim.history_points)
            ncap = exp_rt.lim.history_points;
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
    p->bound = calloc(c->n_bandits, sizeof *p->bound);
    p->arm_pulls = calloc(total, sizeof *p->arm_pulls);
    if (!p->delta_c || !p->rho || !p->bound || !p->arm_pulls) {
        hist_free(p); /* history is best effort */
        return;
    }
    size_t off = 0;
    for (size_t b = 0; b < c->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(d->eng, b, d->scratch, &st);
        p->delta_c[b] = (float)st.delta_c;
        p->rho[b] = (float)st.rho;
        struct engine_stop_eval se;
        engine_bandit_stop(d->eng, b, &se);
        p->bound[b] = (float)se.error_bound;
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

void exp_history_free(struct exp_data *d)
{
    for (size_t i = 0; i < d->hlen; i++)
        hist_free(&d->hist[i]);
    free(d->hist);
    d->hist = NULL;
    d->hlen = d->hcap = 0;
    for (size_t i = 0; d->marks != NULL && i < d->mlen; i++)
        free(d->marks[(d->mhead + i) % EXP_MARKS].text);
    free(d->marks);
    d->marks = NULL;
    d->mhead = d->mlen = 0;
}

void exp_mark_add(struct exp_data *d, const struct store_event *ev)
{
    if (d->marks == NULL && (d->marks = calloc(EXP_MARKS, sizeof *d->marks)) == NULL)
        return;
    char *text = ev->text != NULL ? strdup(ev->text) : NULL;
    if (ev->text != NULL && text == NULL)
        return;
    struct exp_mark *m;
    if (d->mlen == EXP_MARKS) { /* the oldest goes */
        m = &d->marks[d->mhead];
        free(m->text);
        d->mhead = (d->mhead + 1) % EXP_MARKS;
    } else {
        m = &d->marks[(d->mhead + d->mlen++) % EXP_MARKS];
    }
    m->seq = ev->seq;
    m->ts_ms = ev->ts_ms;
    m->pulls = engine_pulls(d->eng);
    m->kind = ev->kind;
    m->text = text;
    m->ref = ev->kind == STORE_EV_CORRECT ? ev->ref : 0;
}

size_t exp_marks_len(const struct exp *x)
{
    return x->d->mlen;
}

const struct exp_mark *exp_mark_at(const struct exp *x, size_t i)
{
    return &x->d->marks[(x->d->mhead + i) % EXP_MARKS];
}

/* Floats by their bits. */
static void snap_floats(struct ser *s, float *v, size_t n)
{
    ser_expect(s, n);
    for (size_t i = 0; i < n && ser_ok(s); i++) {
        uint32_t w;
        memcpy(&w, &v[i], sizeof w);
        ser_u32(s, &w);
        memcpy(&v[i], &w, sizeof w);
    }
}

void exp_history_snap(const struct exp *x, struct exp_data *d, struct ser *s)
{
    const struct exp_config *c = &x->cfg;
    size_t total = 0;
    for (size_t b = 0; b < c->n_bandits; b++)
        total += c->n_arms[b];
    /* The points thin at history_points: another cap would thin otherwise. */
    ser_expect(s, exp_rt.lim.history_points);
    ser_u64(s, &d->hstride);
    /* A spacing of 0 would record a point at every pull and never thin
     * apart: out of range like a count past the cap. */
    if (s->reading && ser_ok(s) && d->hstride == 0) {
        ser_fail(s);
        return;
    }
    ser_u64(s, &d->hnext);
    size_t n = d->hlen;
    ser_size(s, &n);
    if (s->reading && ser_ok(s)) {
        if (n > exp_rt.lim.history_points ||
            (n > 0 && (d->hist = calloc(n, sizeof *d->hist)) == NULL)) {
            ser_fail(s);
            return;
        }
        d->hcap = n;
    }
    for (size_t i = 0; i < n && ser_ok(s); i++) {
        struct exp_history_point *p = &d->hist[i];
        if (s->reading) {
            p->delta_c = calloc(c->n_bandits, sizeof *p->delta_c);
            p->rho = calloc(c->n_bandits, sizeof *p->rho);
            p->bound = calloc(c->n_bandits, sizeof *p->bound);
            p->arm_pulls = calloc(total, sizeof *p->arm_pulls);
            d->hlen++; /* freed with d whatever follows */
            if (!p->delta_c || !p->rho || !p->bound || !p->arm_pulls) {
                ser_fail(s);
                return;
            }
        }
        ser_u64(s, &p->pulls);
        ser_i64(s, &p->ts_ms);
        snap_floats(s, p->delta_c, c->n_bandits);
        snap_floats(s, p->rho, c->n_bandits);
        snap_floats(s, p->bound, c->n_bandits);
        ser_u32s(s, p->arm_pulls, total);
    }
    /* The marks, oldest first (a load starts the ring at 0). */
    size_t m = d->mlen;
    ser_size(s, &m);
    if (s->reading && ser_ok(s) && m > 0) {
        if (m > EXP_MARKS || (d->marks = calloc(EXP_MARKS, sizeof *d->marks)) == NULL) {
            ser_fail(s);
            return;
        }
    }
    for (size_t i = 0; i < m && ser_ok(s); i++) {
        struct exp_mark *k = &d->marks[s->reading ? i : (d->mhead + i) % EXP_MARKS];
        ser_i64(s, &k->seq);
        ser_i64(s, &k->ts_ms);
        ser_u64(s, &k->pulls);
        ser_int(s, &k->kind);
        ser_str(s, &k->text, 1u << 20);
        ser_i64(s, &k->ref);
        ser_check(s, (k->kind == STORE_EV_EDIT || k->kind == STORE_EV_CORRECT) && k->seq >= 1 &&
                         k->seq <= d->seq && k->ref >= 0 && k->ref < k->seq);
        if (s->reading && ser_ok(s)) {
            d->mlen++;
        } else if (s->reading) {
            free(k->text); /* not counted in mlen: the free of the marks misses it */
            k->text = NULL;
        }
    }
}