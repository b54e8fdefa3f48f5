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

int exp_ev_assign(struct exp *x, struct exp_batch *b, int bandit, const char *unit, int64_t now,
                  const struct exp_assignment **out)
{
    struct exp_data *d = x->d;
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
    exp_tab_insert(d, a);
    b->assign_seqs[b->nassign++] = a->seq;
    if (unit != NULL)
        exp_utab_insert(d, a->seq, a->unit);
    if (!pull.exploit) {
        exp_fifo_push(d, a->seq);
        d->pending++;
        atomic_fetch_add(&exp_rt.pending_total, 1);
    }
    *out = a;
    return EXP_OK;
}

int exp_find_unit(struct exp *x, const char *unit, struct exp_assignment *out)
{
    struct exp_data *d = x->d;
    int64_t seq = exp_utab_find(d, unit);
    if (seq != 0) {
        *out = *exp_tab_find(d, seq);
        out->unit = NULL;
        return 1;
    }
    struct store_event ev;
    int rc = store_find_unit(exp_rt.store, x->rowid, unit, &ev);
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
    struct exp_assignment *a = exp_tab_find(d, seq);
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
            ref_op(x, b, STORE_EV_LATE, now, a->seq, a->bandit, a->arm, v);
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
    struct store_event out;
    rc = store_find_outcome(exp_rt.store, x->rowid, seq, &out);
    if (rc == STORE_OK && out.kind == STORE_EV_REWARD)
        return out.value == v ? EXP_R_DUPLICATE : EXP_R_CONFLICT;
    if (rc == STORE_OK && (out.kind == STORE_EV_EXPIRE || out.kind == STORE_EV_LATE)) {
        ref_op(x, b, STORE_EV_LATE, now, seq, ev.bandit, ev.arm, v);
        return EXP_R_EXPIRED;
    }
    if (rc == STORE_ERR_NOTFOUND && (ev.flags & STORE_AF_EXPLOIT)) {
        ref_op(x, b, STORE_EV_REWARD, now, seq, ev.bandit, ev.arm, v);
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
    exp_history_maybe_record(x, now);
    return EXP_OK;
}

void exp_apply_state(struct exp_data *d, enum exp_state s)
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
        int64_t seq = d->fifo[d->fhead];
        struct exp_assignment *a = exp_tab_find(d, seq);
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
            atomic_fetch_add(&exp_rt.expired_total, 1);
            d->pending--;
            atomic_fetch_sub(&exp_rt.pending_total, 1);
            set_outcome(x, b, a, op);
            exp_history_maybe_record(x, now);
        }
        d->fhead = (d->fhead + 1) % d->fcap;
        d->flen--;
    }
}
