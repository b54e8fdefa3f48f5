/*
 * snapshot.c — checkpoints of an experiment's data (store.h, snapshots),
 * so that loading an experiment replays only the events after its latest
 * checkpoint: the cost of a load follows the tail, not the age.
 *
 * A snapshot is everything a replay of the log up to event seq rebuilds
 * (replay.c): the engine (engine_snap: statistics, generator, policy state,
 * budgets, stop state), the pending assignments in expiry order, the state,
 * the audit chain, the edits' effects (name, TTL, design log), the history
 * points and marks, and the time of the last event. It is taken from the
 * live data right after a batch is queued (exp_snapshot_capture), after a
 * load that replayed a long tail, and at a clean shutdown.
 *
 * Under the experiment's lock only the copy is made: the bytes, O(state),
 * written into a kept buffer. The checksum, the queueing and the write come
 * after the lock is let go (exp_snapshot_flush), the write in a transaction
 * of its own after its batch's (store_submit_aside): no request of the
 * experiment waits for the SHA-256 of megabytes, and no writer of a group
 * for their write. It is queued behind every batch of the events it covers
 * and refused with them if one fails (the store's keyed poisoning), so it
 * never covers an event the disk lost; a crash between its batch's commit
 * and its own loses only it (the next load starts from the previous one).
 *
 * A snapshot is only ever a shortcut: the log stays whole, and a load falls
 * back to the full replay whenever one does not fit — another layout
 * (EXP_SNAPSHOT_FORMAT with the engine's), another build (a policy may have
 * changed), another configuration or design, a bad checksum, bytes that do
 * not parse or fields that disagree (every field read is checked: ranges,
 * indices, counts against each other, here, in engine_snap and in each
 * policy's ops->snap: a checksum does not catch a state written wrong), or
 * a tail that the policy no longer reproduces or that holds a correction.
 * Such a state is never used, so never a wrong one.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/ser.h"
#include "base/version.h"
#include "exp/internal.h"

/* The layout below; the column holds it with the engine's (format()).
 * 2: corrected_from (a correction's rebuild starts from a snapshot).
 * 3: pending assignments as small differences (snap_pending). */
#define EXP_SNAPSHOT_FORMAT 3
/* Largest snapshot written (a million pending assignments are ~40 MB). It
 * rides in its events' transaction, so one the store refuses would fail
 * them too: below SQLite's default SQLITE_MAX_LENGTH (10^9 bytes) and
 * PostgreSQL's 1 GB field; a larger state is simply not snapshotted. */
#define EXP_SNAPSHOT_MAX ((size_t)1 << 29)

struct exp_snapshot {
    struct store_snapshot row; /* its strings and state point below */
    struct store_op op;        /* exp_snapshot_submit's: writes row */
    char design[DIGEST_SHA256_HEX + 1];
    char checksum[DIGEST_SHA256_HEX + 1];
    void *bytes;   /* owned */
    size_t cap;    /* bytes' allocation */
    struct exp *x; /* a captured one's experiment (a reference), else NULL */
    unsigned gen;  /* x->gen at the capture */
};

/* A large snapshot's buffer kept after its write, for the next capture:
 * it writes into pages already mapped instead of faulting megabytes in
 * under the lock (a fresh 10 MB took 8-13 ms of a 22 ms capture at 3·10⁵
 * pending). One, the largest lately freed: its memory is the price. */
#define SPARE_MIN ((size_t)1 << 20)
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static char *spare;      /* owned; NULL: none */
static size_t spare_cap; /* its size */

/* The snapshot this thread captured under an experiment's lock
 * (exp_snapshot_capture), to be sealed and queued once it lets the lock go
 * (exp_snapshot_flush); owned. */
static _Thread_local struct exp_snapshot *tl_captured;

static int format(void)
{
    return EXP_SNAPSHOT_FORMAT * 1000 + ENGINE_SNAPSHOT_FORMAT;
}

/* SHA-256 of n bytes, as hex. 0 or −1. */
static int checksum(const void *p, size_t n, char out[DIGEST_SHA256_HEX + 1])
{
    const void *pieces[1] = {p};
    size_t lens[1] = {n};
    return digest_sha256_hex(pieces, lens, 1, out);
}

/* The configuration as stored: a snapshot of another one is not this
 * experiment's (its design hash names the design, not every setting). */
static void snap_config(struct ser *s, const struct exp *x)
{
    char h[DIGEST_SHA256_HEX + 1] = "";
    const char *text = x->config_text != NULL ? x->config_text : "";
    if (checksum(text, strlen(text), h) != 0)
        ser_fail(s);
    char *own = h, *got = NULL;
    ser_str(s, s->reading ? &got : &own, DIGEST_SHA256_HEX);
    if (s->reading && ser_ok(s) && (got == NULL || strcmp(got, h) != 0))
        ser_fail(s);
    free(got);
}

/* One pending assignment after prev (the one before it in the FIFO, zero
 * before the first) with d's TTL in ms: its seq and creation as
 * differences from prev's, its expiry from its creation plus the TTL
 * (0 unless a shorter TTL capped it), bandit and arm — about 5 bytes where
 * fixed fields took 32, so a snapshot's copy, checksum and write of
 * 3·10⁵ pending are 1.5 MB, not 10. Differences in wrapping arithmetic: a
 * reader's garbage gives garbage values, which it checks, never overflow. */
static void snap_one(struct ser *s, struct exp_assignment *a, const struct exp_assignment *prev,
                     uint64_t ttl_ms)
{
    int64_t dseq = (int64_t)((uint64_t)a->seq - (uint64_t)prev->seq);
    int64_t dcreated = (int64_t)((uint64_t)a->created_ms - (uint64_t)prev->created_ms);
    int64_t dexpires = (int64_t)((uint64_t)a->expires_ms - (uint64_t)a->created_ms - ttl_ms);
    uint64_t bandit = (uint64_t)a->bandit, arm = (uint64_t)a->arm;
    ser_zigzag(s, &dseq);
    ser_varint(s, &bandit);
    ser_varint(s, &arm);
    ser_zigzag(s, &dcreated);
    ser_zigzag(s, &dexpires);
    if (!s->reading || !ser_ok(s))
        return;
    a->seq = (int64_t)((uint64_t)prev->seq + (uint64_t)dseq);
    a->created_ms = (int64_t)((uint64_t)prev->created_ms + (uint64_t)dcreated);
    a->expires_ms = (int64_t)((uint64_t)a->created_ms + ttl_ms + (uint64_t)dexpires);
    if (bandit > INT32_MAX || arm > INT32_MAX) {
        ser_fail(s);
        return;
    }
    a->bandit = (int32_t)bandit;
    a->arm = (int32_t)arm;
}

/* The pending assignments, in the expiry FIFO's order (a replay pushes every
 * assignment and skips the answered ones at the head: the same order). */
static void snap_pending(struct ser *s, const struct exp *x, struct exp_data *d)
{
    size_t n = d->pending;
    ser_size(s, &n);
    struct exp_assignment zero = {0}, *prev = &zero;
    uint64_t ttl_ms = (uint64_t)d->ttl_s * 1000u;
    if (!s->reading) {
        size_t seen = 0;
        for (size_t i = 0; i < d->flen && ser_ok(s); i++) {
            struct exp_assignment *a = exp_fifo_at(d, i);
            if (a->status != EXP_A_PENDING)
                continue;
            snap_one(s, a, prev, ttl_ms);
            prev = a;
            seen++;
        }
        if (seen != n)
            ser_fail(s); /* the FIFO lost one: no snapshot rather than a wrong one */
        return;
    }
    for (size_t i = 0; i < n && ser_ok(s); i++) {
        struct exp_assignment *a = calloc(1, sizeof *a);
        if (a == NULL) {
            ser_fail(s);
            return;
        }
        snap_one(s, a, prev, ttl_ms);
        a->value = NAN;
        a->late = NAN;
        a->status = EXP_A_PENDING;
        a->committed = 1;
        a->outcome_committed = 1;
        /* bandit and arm index the engine's arrays when the assignment is
         * answered: bytes that name another layout are refused here */
        if (!ser_ok(s) || a->seq < 1 || a->seq > d->seq || (size_t)a->bandit >= x->cfg.n_bandits ||
            (size_t)a->arm >= x->cfg.n_arms[a->bandit] || exp_tab_find(d, a->seq) != NULL ||
            exp_tab_insert(d, a) != 0) {
            free(a);
            ser_fail(s);
            return;
        }
        if (exp_fifo_push(d, a) != 0) {
            ser_fail(s);
            return;
        }
        prev = a;
        d->pending++;
        atomic_fetch_add(&exp_rt.pending_total, 1);
    }
}

/* A reader's check of the pending assignments against the engine's
 * pending pulls, arm by arm: each assignment answered later releases its
 * arm's count, so a count the engine does not hold would go wrong then. */
static void check_pending(struct ser *s, const struct exp *x, struct exp_data *d)
{
    if (!s->reading || !ser_ok(s))
        return;
    size_t nb = x->cfg.n_bandits, total = 0;
    size_t *off = calloc(nb + 1, sizeof *off);
    for (size_t b = 0; off != NULL && b < nb; b++)
        off[b + 1] = total += x->cfg.n_arms[b];
    uint64_t *cnt = calloc(total ? total : 1, sizeof *cnt);
    if (off == NULL || cnt == NULL) {
        ser_fail(s);
        goto out;
    }
    for (size_t i = 0; i < d->flen; i++) {
        const struct exp_assignment *a = exp_fifo_at(d, i);
        if (a->status == EXP_A_PENDING) /* snap_pending checked its arm */
            cnt[off[a->bandit] + (size_t)a->arm]++;
    }
    ser_check(s, d->pending == engine_pending(d->eng));
    for (size_t b = 0; b < nb && ser_ok(s); b++) {
        const struct stats_arm *arms = engine_arms(d->eng, b);
        for (size_t i = 0; i < x->cfg.n_arms[b]; i++)
            ser_check(s, arms[i].pending == cnt[off[b] + i]);
    }
out:
    free(off);
    free(cnt);
}

/* The whole of d, both ways (a reader fills a fresh d of x's). */
static void snap_data(struct ser *s, struct exp *x, struct exp_data *d, int64_t *last_ms)
{
    ser_expect(s, EXP_SNAPSHOT_FORMAT);
    snap_config(s, x);
    ser_i64(s, &d->seq);
    int state = (int)d->state;
    ser_enum(s, &state, EXP_STOPPED);
    d->state = (enum exp_state)state;
    ser_i64(s, last_ms);
    ser_bytes(s, (unsigned char *)d->chain, sizeof d->chain);
    if (s->reading && ser_ok(s) && d->chain[sizeof d->chain - 1] != '\0')
        ser_fail(s);
    engine_snap(d->eng, s);
    ser_flags(s, d->concluded, x->cfg.n_bandits);
    ser_str(s, &d->name, 1u << 16);
    ser_i64(s, &d->ttl_s);
    ser_size(s, &d->edits);
    ser_i64(s, &d->corrected_from);
    if (s->reading && ser_ok(s) && (d->corrected_from < 0 || d->corrected_from > d->seq))
        ser_fail(s);
    exp_design_snap(d, s);
    exp_history_snap(x, d, s);
    snap_pending(s, x, d); /* last: it checks seqs against d->seq */
    check_pending(s, x, d);
}

void exp_snapshot_free(struct exp_snapshot *sn)
{
    if (sn == NULL)
        return;
    if (sn->x != NULL)
        exp_put(sn->x);
    char *p = sn->bytes;
    if (p != NULL && sn->cap >= SPARE_MIN) {
        pthread_mutex_lock(&spare_mu);
        if (sn->cap > spare_cap) {
            char *t = spare;
            spare = p;
            spare_cap = sn->cap;
            p = t;
        }
        pthread_mutex_unlock(&spare_mu);
    }
    free(p);
    free(sn);
}

/* The bytes of d as of d->seq and the row's fields but the checksum
 * (seal), or NULL: what must be read under x's lock. */
static struct exp_snapshot *capture(struct exp *x, struct exp_data *d)
{
    struct exp_snapshot *sn = calloc(1, sizeof *sn);
    struct buf b;
    buf_init(&b, EXP_SNAPSHOT_MAX);
    /* At most 43 bytes per pending assignment (snap_one: five varints),
     * about 5 as a rule, and the rest, which is small: room at once (the
     * spare's pages, or one allocation), not by doubling (a copy each,
     * under the lock); too big fails as appending would */
    size_t want = d->pending < EXP_SNAPSHOT_MAX / 64 ? 8 * d->pending + 65536 : 0;
    if (want >= SPARE_MIN) {
        pthread_mutex_lock(&spare_mu);
        if (spare != NULL && spare_cap > want) {
            buf_init_owned(&b, spare, spare_cap, EXP_SNAPSHOT_MAX);
            spare = NULL;
            spare_cap = 0;
        }
        pthread_mutex_unlock(&spare_mu);
    }
    if (sn == NULL || (want > 0 && buf_reserve(&b, want) != 0))
        goto fail;
    struct ser s;
    ser_writer(&s, &b);
    int64_t last_ms = atomic_load(&x->last_event_ms);
    snap_data(&s, x, d, &last_ms);
    if (!ser_ok(&s))
        goto fail;
    size_t len = 0;
    sn->cap = b.cap;
    sn->bytes = buf_detach(&b, &len);
    if (sn->bytes == NULL)
        goto fail;
    snprintf(sn->design, sizeof sn->design, "%s", exp_design_hash_in(x, d));
    sn->row = (struct store_snapshot){.exp = x->rowid,
                                      .seq = d->seq,
                                      .format = format(),
                                      .software = BANDITD_VERSION,
                                      .design = sn->design,
                                      .checksum = sn->checksum,
                                      .created_ms = clock_wall_ms(),
                                      .state = sn->bytes,
                                      .len = len};
    return sn;
fail:
    buf_free(&b);
    exp_snapshot_free(sn);
    return NULL;
}

/* The checksum of sn's bytes (SHA-256 of megabytes: no lock needed). 0 or −1. */
static int seal(struct exp_snapshot *sn)
{
    return checksum(sn->row.state, sn->row.len, sn->checksum);
}

struct exp_snapshot *exp_snapshot_make(struct exp *x, struct exp_data *d)
{
    struct exp_snapshot *sn = capture(x, d);
    if (sn != NULL && seal(sn) != 0) {
        exp_snapshot_free(sn);
        sn = NULL;
    }
    return sn;
}

int exp_snapshot_submit(struct exp_snapshot *sn, store_done_fn done)
{
    sn->op = (struct store_op){.kind = STORE_OP_SNAPSHOT, .snap = &sn->row};
    return store_submit_aside(exp_rt.store, sn->row.exp, &sn->op, 1, done, sn);
}

static void captured_written(void *arg, int err)
{
    struct exp_snapshot *sn = arg;
    if (err != STORE_OK)
        log_warn("experiment %s: the snapshot at seq %" PRId64 " was not written (%s); the next "
                 "one in --snapshot-every events",
                 sn->x->id, sn->row.seq, store_strerror(err));
    exp_snapshot_free(sn);
}

/* No snapshot of d could be made: a shortcut only (the log has
 * everything), so say so and try again in --snapshot-every events. */
static void skipped(const struct exp *x, struct exp_data *d)
{
    d->snap_seq = d->seq;
    log_warn("experiment %s: no snapshot at seq %" PRId64 " (out of memory, or a state that "
             "does not serialize); the next in --snapshot-every events",
             x->id, d->seq);
}

void exp_snapshot_capture(struct exp *x)
{
    struct exp_data *d = x->d;
    if (tl_captured != NULL || !exp_snapshot_due(x, d))
        return; /* one at a time per thread: this one comes at a later batch */
    struct exp_snapshot *sn = capture(x, d);
    if (sn == NULL) {
        skipped(x, d);
        return;
    }
    atomic_fetch_add(&x->refs, 1);
    sn->x = x;
    sn->gen = atomic_load(&x->gen);
    tl_captured = sn;
    d->snap_seq = d->seq;
}

void exp_snapshot_flush(struct exp *x)
{
    struct exp_snapshot *sn = tl_captured;
    if (sn == NULL || sn->x != x)
        return;
    tl_captured = NULL;
    int rc = seal(sn) == 0 ? STORE_OK : STORE_ERR_NOMEM;
    if (rc == STORE_OK) {
        /* Queued behind the batches of every event it covers (they were
         * queued when it was captured), and refused with them if one
         * failed: unless x was reloaded since (gen), whose first write
         * clears that failure — then its events may be lost, so it goes. */
        pthread_mutex_lock(&x->mu);
        if (sn->gen == atomic_load(&x->gen) && !atomic_load(&x->stale) && !x->deleting &&
            !x->deleted && atomic_load(&x->owned))
            rc = exp_snapshot_submit(sn, captured_written);
        else
            rc = STORE_ERR_CLOSED;
        pthread_mutex_unlock(&x->mu);
    }
    if (rc != STORE_OK)
        exp_snapshot_free(sn); /* else captured_written frees it */
}

const struct store_snapshot *exp_snapshot_row(const struct exp_snapshot *sn)
{
    return &sn->row;
}

int exp_snapshot_due(const struct exp *x, const struct exp_data *d)
{
    size_t every = exp_rt.lim.snapshot_every;
    /* A snapshot walks the FIFO (snap_pending) and copies about 5 bytes
     * per pending assignment under x's lock, then writes them.
     * Spaced by half as many events as the FIFO holds, its cost per event
     * stays bounded however many are pending (every 10⁴ events at 3·10⁵
     * pending cut assignments/s to a quarter: docs/measurements.md). Half:
     * the FIFO grows by at most one entry per event, so the gap is always
     * reached (with nothing answered, at twice the previous snapshot's
     * seq). A load replays at most that many events beyond the pending it
     * reads. */
    uint64_t gap = every > d->flen / 2 ? every : d->flen / 2;
    return every > 0 && !exp_rt.lim.no_snapshots && d->seq > d->snap_seq &&
           (uint64_t)(d->seq - d->snap_seq) >= gap && x->corrupt[0] == '\0';
}

void exp_snapshot_attach(struct exp *x, struct exp_batch *b)
{
    struct exp_data *d = x->d;
    if (b->snap != NULL || exp_rt.lim.no_snapshots || x->corrupt[0] != '\0' ||
        d->seq <= d->snap_seq)
        return;
    struct exp_snapshot *sn = exp_snapshot_make(x, d);
    if (sn == NULL) {
        skipped(x, d);
        return;
    }
    struct store_op *op = exp_batch_op(b);
    if (op == NULL) {
        exp_snapshot_free(sn);
        return;
    }
    op->kind = STORE_OP_SNAPSHOT;
    op->snap = &sn->row;
    b->snap = sn;
    d->snap_seq = d->seq;
}

/* Load a fresh data of x's from sn: the data, or NULL with why. */
struct exp_data *exp_snapshot_load(struct exp *x, const struct store_snapshot *sn, char *why,
                                   size_t len)
{
    char sum[DIGEST_SHA256_HEX + 1];
    if (sn->format != format()) {
        snprintf(why, len, "format %d, this build reads %d", sn->format, format());
        return NULL;
    }
    if (sn->software == NULL || strcmp(sn->software, BANDITD_VERSION) != 0) {
        snprintf(why, len, "written by banditd %s, this is %s",
                 sn->software != NULL ? sn->software : "?", BANDITD_VERSION);
        return NULL;
    }
    if (sn->checksum == NULL || checksum(sn->state, sn->len, sum) != 0 ||
        strcmp(sum, sn->checksum) != 0) {
        snprintf(why, len, "checksum mismatch");
        return NULL;
    }
    struct exp_data *d = exp_data_new(&x->cfg, why, len);
    if (d == NULL)
        return NULL;
    struct ser s;
    ser_reader(&s, sn->state, sn->len);
    int64_t last_ms = 0;
    snap_data(&s, x, d, &last_ms);
    if (!ser_end(&s) || d->seq != sn->seq) {
        snprintf(why, len,
                 "state does not parse as this experiment's (another configuration, policy "
                 "layout or --history-points), or its fields disagree (a damaged state)");
        exp_data_free(d); /* its pending count goes with it */
        return NULL;
    }
    /* The design in force then, by the log's edits (their hashes were checked
     * when they were applied): what the row says it is. */
    if (sn->design == NULL || strcmp(exp_design_hash_in(x, d), sn->design) != 0) {
        snprintf(why, len, "another design");
        exp_data_free(d);
        return NULL;
    }
    exp_touch(x, last_ms);
    d->snap_seq = d->seq;
    return d;
}
