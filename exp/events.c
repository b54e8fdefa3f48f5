/*
 * events.c — what a request does to an experiment (exp.h): each event is
 * applied to the engine and the in-memory tables at once, numbered (seq),
 * and appended to the request's batch for the writer; and the assignment
 * ids that name assignment events.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "exp/internal.h"

/* FNV-1a from a basis a digit short of FNV's own (an early typo): kept,
 * because assignment ids embed exp_make_token's hash of the experiment id,
 * and ids handed out must keep parsing after an upgrade. */
#define EXP_HASH_BASIS 1469598103934665603ULL

uint64_t exp_hash_id(const char *id)
{
    return hash_fnv1a_str(EXP_HASH_BASIS, id);
}

static const char *const state_names[EXP_N_STATES] = {"running", "paused", "stopped"};

const char *exp_state_name(enum exp_state s)
{
    return (unsigned)s < EXP_N_STATES ? state_names[s] : "unknown";
}

int exp_state_parse(const char *name, enum exp_state *out)
{
    for (int s = 0; name != NULL && s < EXP_N_STATES; s++)
        if (strcmp(name, state_names[s]) == 0) {
            *out = (enum exp_state)s;
            return 0;
        }
    return -1;
}

/* Batches start with room for 4: eight store_ops (144 bytes each) made a
 * 1152-byte block per request, and glibc consolidates its fast bins before
 * every request of 1 KiB or more (malloc_consolidate, ~1% in perf). */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    return buf_grow(p, cap, need, size, 4);
}

/* The check of an assignment created at created_ms: 32 bits of its hash. */
static uint32_t id_check(int64_t created_ms)
{
    return (uint32_t)(hash_mix64((uint64_t)created_ms) >> 32);
}

static size_t put_hex32(char *o, uint32_t v)
{
    static const char hex[] = "0123456789abcdef";
    for (int sh = 28; sh >= 0; sh -= 4)
        *o++ = hex[(v >> sh) & 15];
    return 8;
}

void exp_assignment_id(const struct exp *x, int64_t seq, int64_t created_ms, char *buf, size_t len)
{
    /* "%08x-%lld-%08x" by hand: snprintf was a quarter of an assignment's reply */
    char tmp[48];
    size_t n = put_hex32(tmp, x->token);
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
    tmp[n++] = '-';
    n += put_hex32(tmp + n, id_check(created_ms));
    if (len == 0)
        return;
    if (n >= len)
        n = len - 1;
    memcpy(buf, tmp, n);
    buf[n] = '\0';
}

int exp_parse_assignment_id(const struct exp *x, const char *id, struct exp_aid *out)
{
    static const char hex[] = "0123456789abcdef";
    out->seq = -1;
    out->has_check = 0;
    out->check = 0;
    if (strlen(id) < 10 || id[8] != '-')
        return -1;
    for (int i = 0, sh = 28; i < 8; i++, sh -= 4)
        if (id[i] != hex[(x->token >> sh) & 15])
            return -1;
    const char *p = id + 9;
    if (*p < '1' || *p > '9')
        return -1;
    int64_t seq = 0;
    for (; *p && *p != '-'; p++) {
        if (*p < '0' || *p > '9' || seq > (INT64_MAX - 9) / 10)
            return -1;
        seq = seq * 10 + (*p - '0');
    }
    if (*p == '-') { /* the check; ids of 0.x versions have none */
        p++;
        uint32_t v = 0;
        for (int i = 0; i < 8; i++, p++) {
            const char *h = *p ? strchr(hex, *p) : NULL;
            if (h == NULL)
                return -1;
            v = v << 4 | (uint32_t)(h - hex);
        }
        if (*p != '\0')
            return -1;
        out->has_check = 1;
        out->check = v;
    }
    out->seq = seq;
    return 0;
}

uint32_t exp_assignment_check(int64_t created_ms)
{
    return id_check(created_ms);
}

/* Whether an assignment created at created_ms is the one id named. */
static int id_matches(const struct exp_aid *id, int64_t created_ms)
{
    return !id->has_check || id->check == id_check(created_ms);
}

/* A token that differs between a deleted experiment and its re-creation
 * under the same id (their creation times differ) yet survives restarts. */
uint32_t exp_make_token(const char *id, int64_t created_ms)
{
    uint64_t h = exp_hash_id(id) ^ hash_mix64((uint64_t)created_ms);
    return (uint32_t)(h ^ (h >> 32));
}

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
    exp_snapshot_free(b->snap);
    memset(b, 0, sizeof *b);
}

struct store_op *exp_batch_op(struct exp_batch *b)
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

void exp_touch(struct exp *x, int64_t ts)
{
    /* Writers hold x's lock: a plain compare suffices; readers take no lock. */
    if (ts > atomic_load_explicit(&x->last_event_ms, memory_order_relaxed))
        atomic_store_explicit(&x->last_event_ms, ts, memory_order_relaxed);
}

static struct store_op *event_op(struct exp *x, struct exp_batch *b, int kind, int64_t ts)
{
    struct store_op *op = exp_batch_op(b);
    if (op == NULL)
        return NULL;
    exp_touch(x, ts);
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

struct store_op *exp_event_op(struct exp *x, struct exp_batch *b, int kind, int64_t ts)
{
    return event_op(x, b, kind, ts);
}

const char *exp_batch_str(struct exp_batch *b, const char *s)
{
    return batch_str(b, s);
}

/* An event about assignment ref of (bandit, arm), with value v. */
static struct store_op *ref_op(struct exp *x, struct exp_batch *b, int kind, int64_t ts,
                               int64_t ref, int32_t bandit, int32_t arm, double v)
{
    struct store_op *op = event_op(x, b, kind, ts);
    op->ev.ref = ref;
    op->ev.bandit = bandit;
    op->ev.arm = arm;
    op->ev.value = v;
    return op;
}

/* Bandit b has no conclusion to serve: the experiment cannot explore
 * (paused, or stopped by hand) and b's rule has not fired. A stop on the
 * budget concludes (a fixed budget's answer is its recommendation). */
static int inconclusive(const struct exp *x, size_t b)
{
    const struct engine *e = x->d->eng;
    if (engine_stopped(e))
        return engine_stop_reason(e) == ENGINE_STOPPED_MANUAL && !x->d->concluded[b];
    return x->d->state == EXP_PAUSED && !engine_bandit_done(e, b);
}

/* Bandit b will serve only its conclusion from now on: it is done, or the
 * experiment stopped with a conclusion. */
static int concluded(const struct exp *x, size_t b)
{
    const struct engine *e = x->d->eng;
    if (engine_stopped(e)) /* a stop by hand marks every bandit done: ask why */
        return !inconclusive(x, b);
    return engine_bandit_done(e, b);
}

/* Whether a request for bandit (any when < 0) may land where there is no
 * conclusion to serve. */
static int may_be_inconclusive(const struct exp *x, int bandit)
{
    if (bandit >= 0)
        return inconclusive(x, (size_t)bandit);
    for (size_t b = 0; b < x->cfg.n_bandits; b++)
        if (inconclusive(x, b))
            return 1;
    return 0;
}

int exp_ev_assign(struct exp *x, struct exp_batch *b, int bandit, const char *unit, int64_t now,
                  const struct exp_assignment **out)
{
    struct exp_data *d = x->d;
    /* Refused before the engine moves: a refusal is no event. */
    if (x->cfg.fallback == EXP_FALLBACK_NONE && may_be_inconclusive(x, bandit))
        return EXP_ERR_NO_CONCLUSION;
    if (d->pending >= exp_rt.lim.max_pending)
        return EXP_ERR_LIMIT;
    if (exp_memory_full())
        return EXP_ERR_MEMORY;
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
        exp_tab_reserve(d) != 0 || exp_fifo_reserve(d) != 0 ||
        (unit != NULL && exp_utab_reserve(d) != 0)) {
        exp_assignment_free(a);
        return EXP_ERR_NOMEM;
    }
    struct engine_pull pull;
    engine_assign(d->eng, bandit, &pull);
    int fallback =
        pull.exploit && x->cfg.fallback == EXP_FALLBACK_CONTROL && inconclusive(x, pull.bandit);
    if (fallback)
        pull.arm = (size_t)x->cfg.control_arm[pull.bandit];
    struct store_op *op = event_op(x, b, STORE_EV_ASSIGN, now);
    a->seq = op->ev.seq;
    a->bandit = (int32_t)pull.bandit;
    a->arm = (int32_t)pull.arm;
    a->created_ms = now;
    a->expires_ms = now + d->ttl_s * 1000; /* the TTL now: edits change it */
    a->value = NAN;
    a->late = NAN;
    a->status = pull.exploit ? EXP_A_EXPLOIT : EXP_A_PENDING;
    a->outcome_committed = 1; /* no outcome yet */
    op->ev.bandit = a->bandit;
    op->ev.arm = a->arm;
    op->ev.flags = (pull.exploit ? STORE_AF_EXPLOIT : 0) |
                   (bandit >= 0 ? STORE_AF_BANDIT_GIVEN : 0) | (fallback ? STORE_AF_FALLBACK : 0);
    op->ev.expires_ms = a->expires_ms;
    op->ev.unit = batch_str(b, unit);
    exp_tab_insert(d, a);
    b->assign_seqs[b->nassign++] = a->seq;
    if (unit != NULL)
        exp_utab_insert(d, a->seq, a->unit);
    if (!pull.exploit) {
        exp_fifo_push(d, a);
        d->pending++;
        atomic_fetch_add(&exp_rt.pending_total, 1);
    }
    *out = a;
    return EXP_OK;
}

/* The latest assignment of unit in bandit (any when < 0): the table of
 * uncommitted ones first, then the disk. 1 and *out, 0, or −1. */
static int find_unit(struct exp *x, const char *unit, int bandit, struct exp_assignment *out)
{
    struct exp_data *d = x->d;
    int64_t seq = exp_utab_find(d, unit);
    const struct exp_assignment *m = seq != 0 ? exp_tab_find(d, seq) : NULL;
    if (m != NULL && (bandit < 0 || m->bandit == bandit)) {
        *out = *m;
        out->unit = NULL;
        return 1;
    }
    struct store_event ev;
    int rc = store_find_unit_in(exp_rt.store, x->rowid, unit, bandit, &ev);
    if (rc == STORE_ERR_NOTFOUND)
        return 0;
    if (rc == STORE_OK && ev.kind == STORE_EV_UNIT) {
        /* bound by a client that served it from a block: the assignment */
        char none[8];
        rc = store_find_assignment(exp_rt.store, x->rowid, ev.ref, &ev, none, sizeof none);
        if (rc == STORE_ERR_NOTFOUND)
            return 0;
    }
    if (rc != STORE_OK)
        return -1;
    m = exp_tab_find(d, ev.seq); /* committed but not final: memory knows its status */
    if (m != NULL) {
        *out = *m;
        out->unit = NULL;
        return 1;
    }
    memset(out, 0, sizeof *out);
    out->seq = ev.seq;
    out->bandit = ev.bandit;
    out->arm = ev.arm;
    out->created_ms = ev.ts_ms;
    out->expires_ms = ev.expires_ms;
    out->value = NAN;
    out->late = NAN;
    out->committed = 1;
    out->outcome_committed = 1;
    if (ev.flags & STORE_AF_EXPLOIT) {
        out->status = EXP_A_EXPLOIT;
        return 1;
    }
    /* A pull no longer in memory is final: its outcome is on disk. */
    struct store_event o;
    rc = store_find_outcome(exp_rt.store, x->rowid, ev.seq, &o);
    if (rc != STORE_OK)
        return -1;
    out->status = o.kind == STORE_EV_REWARD ? EXP_A_REWARDED : EXP_A_EXPIRED;
    out->value = o.value;
    return 1;
}

int exp_unit_lookup(struct exp *x, const char *unit, int bandit, struct exp_assignment *out)
{
    int rc = find_unit(x, unit, bandit, out);
    if (rc <= 0)
        return rc;
    if (out->status == EXP_A_EXPIRED && x->cfg.after_expiry == EXP_AFTER_EXPIRY_NEW)
        return 0;
    if (out->status != EXP_A_EXPLOIT && x->cfg.after_stop == EXP_AFTER_STOP_RECOMMENDATION &&
        concluded(x, (size_t)out->bandit))
        return 0;
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
    struct exp_aid id = {.seq = seq, .has_check = 0};
    return exp_ev_reward_id(x, b, &id, v, now);
}

enum exp_reward_status exp_ev_reward_id(struct exp *x, struct exp_batch *b,
                                        const struct exp_aid *id, double v, int64_t now)
{
    struct exp_data *d = x->d;
    int64_t seq = id->seq;
    if (seq < 1 || seq > d->seq)
        return EXP_R_UNKNOWN;
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0 ||
        grow((void **)&b->outcome_seqs, &b->capoutcome, b->noutcome + 1, sizeof(int64_t)) != 0)
        return EXP_R_ERROR;
    struct exp_assignment *a = exp_tab_find(d, seq);
    if (a != NULL && !id_matches(id, a->created_ms))
        return EXP_R_UNKNOWN; /* its seq, another assignment (handed out again after a loss) */
    if (a != NULL) {
        switch (a->status) {
        case EXP_A_PENDING: {
            engine_reward(d->eng, (size_t)a->bandit, (size_t)a->arm, exp_scale(x, v));
            a->status = EXP_A_REWARDED;
            a->value = v;
            d->pending--;
            atomic_fetch_sub(&exp_rt.pending_total, 1);
            struct store_op *op = event_op(x, b, STORE_EV_REWARD, now);
            op->ev.value = v;
            set_outcome(x, b, a, op);
            exp_history_maybe_record(x, now);
            return EXP_R_ACCEPTED;
        }
        case EXP_A_REWARDED:
            return a->value == v ? EXP_R_DUPLICATE : EXP_R_CONFLICT;
        case EXP_A_EXPIRED:
            /* Recorded once for the audit; the same value again is that
             * record, another one a conflict. */
            if (!isnan(a->late))
                return a->late == v ? EXP_R_EXPIRED : EXP_R_CONFLICT;
            ref_op(x, b, STORE_EV_LATE, now, a->seq, a->bandit, a->arm, v);
            a->late = v;
            return EXP_R_EXPIRED;
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
    int rc = store_find_assignment(exp_rt.store, x->rowid, seq, &ev, unit, sizeof unit);
    if (rc == STORE_ERR_NOTFOUND)
        return EXP_R_UNKNOWN;
    if (rc != STORE_OK || ev.kind != STORE_EV_ASSIGN)
        return rc != STORE_OK ? EXP_R_ERROR : EXP_R_UNKNOWN;
    if (!id_matches(id, ev.ts_ms))
        return EXP_R_UNKNOWN;
    struct store_event out;
    rc = store_find_outcome(exp_rt.store, x->rowid, seq, &out);
    if (rc == STORE_OK && out.kind == STORE_EV_REWARD)
        return out.value == v ? EXP_R_DUPLICATE : EXP_R_CONFLICT;
    if (rc == STORE_OK && (out.kind == STORE_EV_EXPIRE || out.kind == STORE_EV_LATE)) {
        struct store_event late;
        rc = store_find_outcome_kind(exp_rt.store, x->rowid, seq, STORE_EV_LATE, &late);
        if (rc == STORE_OK)
            return late.value == v ? EXP_R_EXPIRED : EXP_R_CONFLICT;
        if (rc != STORE_ERR_NOTFOUND)
            return EXP_R_ERROR;
        ref_op(x, b, STORE_EV_LATE, now, seq, ev.bandit, ev.arm, v);
        return EXP_R_EXPIRED;
    }
    if (rc == STORE_ERR_NOTFOUND && (ev.flags & STORE_AF_EXPLOIT)) {
        ref_op(x, b, STORE_EV_REWARD, now, seq, ev.bandit, ev.arm, v);
        return EXP_R_ACCEPTED;
    }
    return EXP_R_ERROR;
}

const char *exp_release_status_name(enum exp_release_status s)
{
    static const char *const names[] = {"released", "duplicate", "rewarded",
                                        "expired",  "unknown",   "error"};
    return names[s];
}

enum exp_release_status exp_ev_release_id(struct exp *x, struct exp_batch *b,
                                          const struct exp_aid *id, int64_t now)
{
    struct exp_data *d = x->d;
    int64_t seq = id->seq;
    if (seq < 1 || seq > d->seq)
        return EXP_L_UNKNOWN;
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0 ||
        grow((void **)&b->outcome_seqs, &b->capoutcome, b->noutcome + 1, sizeof(int64_t)) != 0)
        return EXP_L_ERROR;
    struct exp_assignment *a = exp_tab_find(d, seq);
    if (a != NULL && !id_matches(id, a->created_ms))
        return EXP_L_UNKNOWN;
    if (a != NULL) {
        switch (a->status) {
        case EXP_A_PENDING: {
            engine_release(d->eng, (size_t)a->bandit, (size_t)a->arm);
            a->status = EXP_A_EXPIRED;
            a->released = 1;
            d->pending--;
            atomic_fetch_sub(&exp_rt.pending_total, 1);
            struct store_op *op = event_op(x, b, STORE_EV_EXPIRE, now);
            op->ev.flags = STORE_XF_RELEASED;
            set_outcome(x, b, a, op);
            exp_history_maybe_record(x, now);
            return EXP_L_RELEASED;
        }
        case EXP_A_REWARDED:
            return EXP_L_REWARDED;
        case EXP_A_EXPIRED:
            return a->released ? EXP_L_DUPLICATE : EXP_L_EXPIRED;
        case EXP_A_EXPLOIT:
            return EXP_L_RELEASED; /* not a pull: nothing to give back */
        default:
            return EXP_L_ERROR;
        }
    }
    /* Not in memory: final and committed. */
    struct store_event ev;
    char unit[8];
    int rc = store_find_assignment(exp_rt.store, x->rowid, seq, &ev, unit, sizeof unit);
    if (rc == STORE_ERR_NOTFOUND)
        return EXP_L_UNKNOWN;
    if (rc != STORE_OK || ev.kind != STORE_EV_ASSIGN)
        return rc != STORE_OK ? EXP_L_ERROR : EXP_L_UNKNOWN;
    if (!id_matches(id, ev.ts_ms))
        return EXP_L_UNKNOWN;
    if (ev.flags & STORE_AF_EXPLOIT)
        return EXP_L_RELEASED;
    struct store_event out;
    rc = store_find_outcome(exp_rt.store, x->rowid, seq, &out);
    if (rc != STORE_OK)
        return EXP_L_ERROR;
    if (out.kind == STORE_EV_REWARD)
        return EXP_L_REWARDED;
    return out.kind == STORE_EV_EXPIRE && (out.flags & STORE_XF_RELEASED) ? EXP_L_DUPLICATE
                                                                          : EXP_L_EXPIRED;
}

const char *exp_bind_status_name(enum exp_bind_status s)
{
    static const char *const names[] = {"bound", "duplicate", "conflict", "unknown", "error"};
    return names[s];
}

/* The unit assignment seq is bound to on disk (at its creation, or by a
 * UNIT event) into buf, "" when none. 0, or −1 on a store error. */
static int stored_unit(struct exp *x, int64_t seq, char *buf, size_t len)
{
    struct store_event ev;
    int rc = store_find_assignment(exp_rt.store, x->rowid, seq, &ev, buf, len);
    if (rc != STORE_OK)
        return -1;
    if (ev.unit != NULL)
        return 0;
    rc = store_find_bound_unit(exp_rt.store, x->rowid, seq, buf, len);
    if (rc == STORE_ERR_NOTFOUND)
        buf[0] = '\0';
    return rc == STORE_OK || rc == STORE_ERR_NOTFOUND ? 0 : -1;
}

enum exp_bind_status exp_ev_bind_id(struct exp *x, struct exp_batch *b, const struct exp_aid *id,
                                    const char *unit, int64_t now)
{
    struct exp_data *d = x->d;
    int64_t seq = id->seq;
    if (seq < 1 || seq > d->seq)
        return EXP_B_UNKNOWN;
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0 ||
        grow((void **)&b->assign_seqs, &b->capassign, b->nassign + 1, sizeof(int64_t)) != 0 ||
        grow((void **)&b->strings, &b->capstr, b->nstr + 1, sizeof *b->strings) != 0 ||
        exp_utab_reserve(d) != 0)
        return EXP_B_ERROR;
    struct exp_assignment *a = exp_tab_find(d, seq);
    int32_t bandit, arm;
    if (a != NULL) {
        if (!id_matches(id, a->created_ms))
            return EXP_B_UNKNOWN;
        bandit = a->bandit;
        arm = a->arm;
    } else {
        struct store_event ev;
        char none[8];
        int rc = store_find_assignment(exp_rt.store, x->rowid, seq, &ev, none, sizeof none);
        if (rc == STORE_ERR_NOTFOUND || (rc == STORE_OK && ev.kind != STORE_EV_ASSIGN))
            return EXP_B_UNKNOWN;
        if (rc != STORE_OK)
            return EXP_B_ERROR;
        if (!id_matches(id, ev.ts_ms))
            return EXP_B_UNKNOWN;
        bandit = ev.bandit;
        arm = ev.arm;
    }
    /* Whose is it already? Memory knows what it bound since the assignment
     * was loaded; the disk what came before (a restart loads no units). */
    char held[EXP_MAX_UNIT + 1] = "";
    if (a != NULL && a->unit != NULL)
        snprintf(held, sizeof held, "%s", a->unit);
    else if ((a == NULL || a->committed) && stored_unit(x, seq, held, sizeof held) != 0)
        return EXP_B_ERROR;
    if (held[0] != '\0')
        return strcmp(held, unit) == 0 ? EXP_B_DUPLICATE : EXP_B_CONFLICT;
    if (a != NULL && (a->unit = strdup(unit)) == NULL)
        return EXP_B_ERROR;
    const char *copy = batch_str(b, unit);
    if (copy == NULL) {
        if (a != NULL) {
            free(a->unit);
            a->unit = NULL;
        }
        return EXP_B_ERROR;
    }
    struct store_op *op = ref_op(x, b, STORE_EV_UNIT, now, seq, bandit, arm, NAN);
    op->ev.unit = copy;
    if (a != NULL) {
        /* the unit finds it in memory until the event is on disk (the
         * commit drops the entry, as for a new assignment's) */
        exp_utab_insert(d, seq, a->unit);
        b->assign_seqs[b->nassign++] = seq;
    }
    return EXP_B_BOUND;
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
    exp_history_maybe_record(x, now);
    return EXP_OK;
}

void exp_apply_state(struct exp_data *d, enum exp_state s)
{
    d->state = s;
    if (s == EXP_STOPPED && !engine_stopped(d->eng)) {
        /* A stop by hand marks every bandit done; which ones had concluded
         * by their own rule is remembered first (for the fallback). */
        for (size_t b = 0; b < engine_n_bandits(d->eng); b++)
            d->concluded[b] = (unsigned char)engine_bandit_done(d->eng, b);
        engine_stop(d->eng);
    } else if (s != EXP_STOPPED) {
        engine_set_paused(d->eng, s == EXP_PAUSED);
    }
}

int exp_ev_state(struct exp *x, struct exp_batch *b, enum exp_state s, int64_t now)
{
    enum exp_state cur = exp_get_state(x);
    if (cur == s)
        return EXP_OK;
    if (cur == EXP_STOPPED)
        return EXP_ERR_STOPPED; /* a stop is final */
    if (grow((void **)&b->ops, &b->cap, b->n + 1, sizeof *b->ops) != 0)
        return EXP_ERR_NOMEM;
    exp_apply_state(x->d, s);
    struct store_op *op = event_op(x, b, STORE_EV_STATE, now);
    op->ev.text = exp_state_name(s);
    return EXP_OK;
}

/* Expire due assignments (FIFO order = expiry order). */
void exp_expire_due(struct exp *x, struct exp_batch *b, int64_t now)
{
    struct exp_data *d = x->d;
    while (d->flen > 0) {
        struct exp_assignment *a = exp_fifo_at(d, 0);
        if (a->status == EXP_A_PENDING) {
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
            atomic_fetch_add(&exp_rt.expired_total, 1);
            d->pending--;
            atomic_fetch_sub(&exp_rt.pending_total, 1);
            set_outcome(x, b, a, op);
            exp_history_maybe_record(x, now);
        }
        exp_fifo_pop(d);
    }
}
