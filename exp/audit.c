/*
 * audit.c — the audit trail's hash chain over each experiment's event log
 * (docs/contract.md, Clinical trials; docs/operations.md, "Audit").
 *
 * Each event row carries chain = SHA-256(previous chain in hex || "\n" ||
 * the event in canonical form), the first event's previous value being the
 * design's hash at creation (design.c): the log is tied to the design it
 * ran under, and a row changed, removed or inserted later breaks every
 * chain value from it on. The canonical form lists every column but the
 * chain itself, numbers in decimal (the reward with %.17g, which reads back
 * to the same double; "null" when none), strings prefixed by their length
 * (−1: none), so no two events share one.
 *
 * The chain is computed where the log's order is decided, under the
 * experiment's lock, when a batch is queued (exp_submit): the head is one
 * value in the experiment's data, so a request costs one SHA-256 per event
 * it writes; a reload after a failed write rebuilds it from the log with
 * the rest of the data (the replay takes each row's stored value, and
 * computes it for rows older than the chain), so memory never chains onto
 * an event the disk lost. The writer stores it.
 * exp_audit_verify recomputes it from the database alone.
 *
 * It also verifies the audit log (store.h): the chain of the records of
 * what no experiment's log holds (keys created and revoked, experiments
 * created and deleted; a deletion record must name the design and the last
 * row, and `audit verify ID` of a deleted experiment prints it), and that the API keys are as
 * recorded: each key made since the log began has its creation record with the same name, scopes,
 * experiments and hash, and each revoked key its revocation — a key row
 * changed (a scope added), added or un-revoked behind the CLI's back is
 * named. Keys older than the log (schema 8) have no record and are only
 * counted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/digest.h"
#include "exp/internal.h"

/* Length of a string column in the canonical form; −1: none. */
static long slen(const char *s)
{
    return s != NULL ? (long)strlen(s) : -1L;
}

int exp_audit_next(const char *prev, const struct store_event *ev, char out[65])
{
    char head[320], value[40];
    if (ev->value != ev->value)
        snprintf(value, sizeof value, "null");
    else
        snprintf(value, sizeof value, "%.17g", ev->value);
    int n = snprintf(head, sizeof head,
                     "\n%" PRId64 "|%d|%d|%d|%u|%s|%" PRId64 "|%" PRId64 "|%" PRId64
                     "|%ld|%ld|%ld|%ld|",
                     ev->seq, ev->kind, (int)ev->bandit, (int)ev->arm, (unsigned)ev->flags, value,
                     ev->ref, ev->ts_ms, ev->expires_ms, slen(ev->unit), slen(ev->text),
                     slen(ev->actor), slen(ev->request_id));
    if (n < 0 || (size_t)n >= sizeof head)
        return -1;
    const char *const s[4] = {ev->unit, ev->text, ev->actor, ev->request_id};
    return digest_chain_hex(prev, head, (size_t)n, s, 4, out);
}

int exp_audit_step(struct exp *x, struct exp_data *d, const struct store_event *ev)
{
    /* A row that carries its value: the chain goes on from it, as stored
     * (a SHA-256 costs ~2-3 µs here, a replay of a long log is millions of
     * rows; whether the values are right is audit verify's to check). */
    if (ev->chain != NULL && strlen(ev->chain) == DIGEST_SHA256_HEX) {
        memcpy(d->chain, ev->chain, DIGEST_SHA256_HEX + 1);
        return 0;
    }
    const char *prev = d->chain[0] != '\0' ? d->chain : exp_design_hash_initial(x);
    char next[65];
    if (exp_audit_next(prev, ev, next) != 0)
        return -1;
    memcpy(d->chain, next, sizeof next);
    return 0;
}

int exp_batch_caller(struct exp_batch *b, const char *actor, const char *request_id)
{
    const char *a = actor != NULL ? exp_batch_str(b, actor) : NULL;
    const char *r = request_id != NULL ? exp_batch_str(b, request_id) : NULL;
    if ((actor != NULL && a == NULL) || (request_id != NULL && r == NULL))
        return -1;
    b->actor = a;
    b->request_id = r;
    return 0;
}

int exp_audit_seal(struct exp *x, struct exp_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct store_op *op = &b->ops[i];
        if (op->kind != STORE_OP_EVENT)
            continue;
        op->ev.actor = b->actor;
        op->ev.request_id = b->request_id;
        if (exp_audit_step(x, x->d, &op->ev) != 0)
            return -1;
        if ((op->ev.chain = exp_batch_str(b, x->d->chain)) == NULL)
            return -1;
    }
    return 0;
}

/* --- reads the audit log records ---------------------------------------------------- */

/* A record on its way to the writer: the op, the row and their strings. */
struct audit_sub {
    struct store_op op;
    struct store_audit_row row;
    store_done_fn done;
    void *arg;
    char *subject, *detail, *actor, *request_id; /* owned */
};

static void audit_sub_free(struct audit_sub *a)
{
    free(a->subject);
    free(a->detail);
    free(a->actor);
    free(a->request_id);
    free(a);
}

static void on_recorded(void *arg, int err)
{
    struct audit_sub *a = arg;
    if (a->done != NULL)
        a->done(a->arg, err);
    audit_sub_free(a);
}

/* A copy of s (NULL stays NULL); *failed set when out of memory. */
static char *dup_or_null(const char *s, int *failed)
{
    char *d = s != NULL ? strdup(s) : NULL;
    if (s != NULL && d == NULL)
        *failed = 1;
    return d;
}

int exp_audit_record_sync(int kind, const char *subject, const char *detail, const char *actor,
                          const char *request_id)
{
    struct store_audit_row row = {.ts_ms = clock_wall_ms(),
                                  .kind = kind,
                                  .subject = subject,
                                  .detail = detail,
                                  .actor = actor,
                                  .request_id = request_id};
    struct store_op op = {.kind = STORE_OP_AUDIT, .audit = &row};
    return store_write_sync(exp_rt.store, &op, 1);
}

int exp_audit_record(int kind, const char *subject, const char *detail, const char *actor,
                     const char *request_id, store_done_fn done, void *arg)
{
    struct audit_sub *a = calloc(1, sizeof *a);
    if (a == NULL)
        return STORE_ERR_NOMEM;
    int failed = 0;
    a->subject = dup_or_null(subject, &failed);
    a->detail = dup_or_null(detail, &failed);
    a->actor = dup_or_null(actor, &failed);
    a->request_id = dup_or_null(request_id, &failed);
    if (failed) {
        audit_sub_free(a);
        return STORE_ERR_NOMEM;
    }
    a->row = (struct store_audit_row){.ts_ms = clock_wall_ms(),
                                      .kind = kind,
                                      .subject = a->subject,
                                      .detail = a->detail,
                                      .actor = a->actor,
                                      .request_id = a->request_id};
    a->op.kind = STORE_OP_AUDIT;
    a->op.audit = &a->row;
    a->done = done;
    a->arg = arg;
    int rc = store_submit(exp_rt.store, &a->op, 1, on_recorded, a);
    if (rc != STORE_OK)
        audit_sub_free(a); /* not queued: done is not called */
    return rc;
}

/* --- verification (banditd audit verify) ---------------------------------------- */

/* verify_event's result that stops at a broken record (apart from the
 * store's errors, which store_load_events returns too). */
#define VERIFY_STOP 1000

struct verify {
    char chain[65];
    int64_t expect_seq; /* the next seq the log must hold */
    int64_t events, chained;
    int64_t broken_seq; /* the first record that does not verify; 0: none */
    char why[160];
};

/* Whether seq breaks a log numbered 1, 2, 3...: 1 with *broken and why
 * ("missing", "repeated") set, else 0 and *expect moved on. */
static int seq_breaks(int64_t seq, int64_t *expect, int64_t *broken, char *why, size_t len)
{
    if (seq != *expect) {
        *broken = *expect;
        snprintf(why, len, "%s", seq > *expect ? "missing" : "repeated");
        return 1;
    }
    (*expect)++;
    return 0;
}

static int verify_event(void *arg, const struct store_event *ev)
{
    struct verify *v = arg;
    if (seq_breaks(ev->seq, &v->expect_seq, &v->broken_seq, v->why, sizeof v->why))
        return VERIFY_STOP;
    v->events++;
    char next[65];
    if (exp_audit_next(v->chain, ev, next) != 0)
        return -1;
    if (ev->chain == NULL) {
        /* Rows written before the chain existed carry none; once one does,
         * every later one must: a chain removed is a change. */
        if (v->chained > 0) {
            v->broken_seq = ev->seq;
            snprintf(v->why, sizeof v->why, "no chain value after chained rows");
            return VERIFY_STOP;
        }
    } else if (strcmp(ev->chain, next) != 0) {
        v->broken_seq = ev->seq;
        snprintf(v->why, sizeof v->why, "chain value does not match the row");
        return VERIFY_STOP;
    } else {
        v->chained++;
    }
    memcpy(v->chain, next, sizeof next);
    return 0;
}

struct verify_all {
    struct store *st;
    const char *only;
    FILE *out;
    int broken, found, failed;
};

static int verify_one(void *arg, const struct store_experiment_row *row)
{
    struct verify_all *va = arg;
    if (va->only != NULL && strcmp(va->only, row->id) != 0)
        return 0;
    va->found++;
    struct exp_limits lim = {.max_experiments = SIZE_MAX,
                             .max_bandits = SIZE_MAX,
                             .max_arms = SIZE_MAX,
                             .max_batch = SIZE_MAX,
                             .max_count = SIZE_MAX,
                             .max_pending = SIZE_MAX,
                             .history_points = 1};
    struct verify v = {.expect_seq = 1};
    json_t *j = json_loads(row->config_json, 0, NULL);
    json_t *errors = json_array();
    struct exp_config cfg;
    int rc = j != NULL && errors != NULL ? exp_config_load(j, &lim, &cfg, errors) : -1;
    if (rc == 0 && exp_design_hash_of(&cfg, v.chain) != 0)
        rc = -1;
    if (j != NULL && errors != NULL)
        exp_config_free(&cfg);
    json_decref(j);
    json_decref(errors);
    if (rc != 0) {
        fprintf(va->out, "%s: FAILED: its configuration cannot be read\n", row->id);
        va->failed++;
        return 0;
    }
    rc = store_load_events(va->st, row->rowid, 0, verify_event, &v);
    if (v.broken_seq != 0) {
        fprintf(va->out, "%s: BROKEN at seq %" PRId64 " (%s)\n", row->id, v.broken_seq, v.why);
        va->broken++;
    } else if (rc != 0) {
        fprintf(va->out, "%s: FAILED: cannot read its log (%s)\n", row->id,
                rc < 0 ? "out of memory" : store_strerror(rc));
        va->failed++;
    } else {
        fprintf(va->out, "%s: ok, %" PRId64 " events, %" PRId64 " chained, head %s\n", row->id,
                v.events, v.chained, v.chain);
    }
    return 0;
}

/* --- the audit log: its chain, and the keys against their records ------------------ */

/* What the key check keeps of a key's records. */
struct key_record {
    int64_t key;        /* the key's id */
    int64_t create_seq; /* its creation record; 0: none */
    int64_t revoke_seq; /* its revocation record; 0: none */
    char *detail;       /* the creation record's detail; owned */
};

struct verify_log {
    const char *only;  /* audit verify ID: the experiment asked for; borrowed */
    char deleted[512]; /* its latest deletion record, as printed; "" none */
    char chain[65];
    int64_t expect_seq, broken_seq;
    char why[200];
    struct key_record *keys; /* owned; one per key named by a record */
    size_t n, cap;
    int nomem;
};

/* The record of key id in v (added when add), or NULL. */
static struct key_record *key_record(struct verify_log *v, int64_t id, int add)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->keys[i].key == id)
            return &v->keys[i];
    if (!add)
        return NULL;
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        struct key_record *k = realloc(v->keys, cap * sizeof *k);
        if (k == NULL)
            return NULL;
        v->keys = k;
        v->cap = cap;
    }
    v->keys[v->n] = (struct key_record){.key = id};
    return &v->keys[v->n++];
}

/* Whether the n bytes at p are a SHA-256 in hex or "none". */
static int hash_or_none(const char *p, size_t n)
{
    return (n == 4 && strncmp(p, "none", 4) == 0) ||
           (n == DIGEST_SHA256_HEX && strspn(p, "0123456789abcdef") >= n);
}

/* A deletion record's detail (store.h, STORE_AUDIT_EXP_DELETE): "design
 * <hex|none> last <seq> chain <hex|none>". 1 when well formed. */
static int delete_detail_ok(const char *d)
{
    if (d == NULL || strncmp(d, "design ", 7) != 0)
        return 0;
    const char *h = d + 7;
    size_t hn = strcspn(h, " ");
    if (!hash_or_none(h, hn) || strncmp(h + hn, " last ", 6) != 0)
        return 0;
    const char *n = h + hn + 6;
    char *end = NULL;
    long long last = strtoll(n, &end, 10);
    if (end == n || *n == '-' || *n == '+' || last < 0 || strncmp(end, " chain ", 7) != 0)
        return 0;
    const char *c = end + 7;
    size_t cn = strlen(c);
    /* no event, no chain; rows older than the chain have none either */
    return hash_or_none(c, cn) && (last != 0 || cn == 4);
}

static int verify_record(void *arg, const struct store_audit_row *row)
{
    struct verify_log *v = arg;
    if (seq_breaks(row->seq, &v->expect_seq, &v->broken_seq, v->why, sizeof v->why))
        return VERIFY_STOP;
    char next[65];
    if (store_audit_next(v->chain, row, next) != 0)
        return -1;
    if (row->chain == NULL || strcmp(row->chain, next) != 0) {
        v->broken_seq = row->seq;
        snprintf(v->why, sizeof v->why, "chain value does not match the record");
        return VERIFY_STOP;
    }
    memcpy(v->chain, next, sizeof next);
    if (row->kind == STORE_AUDIT_EXP_DELETE) {
        if (!delete_detail_ok(row->detail)) {
            v->broken_seq = row->seq;
            snprintf(v->why, sizeof v->why, "a deletion record without its design and last row");
            return VERIFY_STOP;
        }
        if (v->only != NULL && row->subject != NULL && strcmp(row->subject, v->only) == 0) {
            char ts[CLOCK_RFC3339_LEN];
            clock_format_rfc3339(row->ts_ms, ts, sizeof ts);
            /* the latest deletion of that id (it may have been made again) */
            snprintf(v->deleted, sizeof v->deleted,
                     "%s: deleted %s by %s (request %s; audit log seq %" PRId64 "): %s\n", v->only,
                     ts, row->actor != NULL ? row->actor : "a caller without a key",
                     row->request_id != NULL ? row->request_id : "none", row->seq, row->detail);
        }
    }
    int64_t id = 0;
    char *end = NULL;
    if (row->subject != NULL && strncmp(row->subject, "key:", 4) == 0)
        id = strtoll(row->subject + 4, &end, 10);
    if ((row->kind == STORE_AUDIT_KEY_CREATE || row->kind == STORE_AUDIT_KEY_REVOKE) && id > 0 &&
        end != NULL && *end == '\0') {
        struct key_record *k = key_record(v, id, 1);
        if (k == NULL) {
            v->nomem = 1;
            return -1;
        }
        if (row->kind == STORE_AUDIT_KEY_REVOKE) {
            k->revoke_seq = row->seq;
            return 0;
        }
        char *d = strdup(row->detail ? row->detail : "");
        if (d == NULL) {
            v->nomem = 1;
            return -1;
        }
        free(k->detail);
        k->detail = d; /* moved to the record */
        k->create_seq = row->seq;
    }
    return 0;
}

struct verify_keys {
    struct verify_log *v;
    int64_t first_recorded; /* the lowest key id with a creation record; 0: none */
    int64_t older;          /* keys older than the log */
    int64_t bad_key;        /* the first key that is not as recorded; 0: none */
    char why[200];
};

static int verify_key(void *arg, const struct store_key_row *row)
{
    struct verify_keys *vk = arg;
    struct key_record *k = key_record(vk->v, row->rowid, 0);
    if (k == NULL || k->create_seq == 0) {
        if (vk->first_recorded == 0 || row->rowid < vk->first_recorded) {
            vk->older++; /* made before the log began */
            return 0;
        }
        vk->bad_key = row->rowid;
        snprintf(vk->why, sizeof vk->why, "key %" PRId64 " has no creation record", row->rowid);
        return VERIFY_STOP;
    }
    char d[STORE_AUDIT_BUF];
    int n = store_key_detail(row->name, row->scopes, row->experiments, row->hash, d, sizeof d);
    if (n < 0 || (size_t)n >= sizeof d || strcmp(d, k->detail) != 0) {
        vk->bad_key = row->rowid;
        snprintf(vk->why, sizeof vk->why,
                 "key %" PRId64 " differs from its creation record (seq %" PRId64 ")", row->rowid,
                 k->create_seq);
        return VERIFY_STOP;
    }
    if (row->revoked != (k->revoke_seq != 0)) {
        vk->bad_key = row->rowid;
        snprintf(vk->why, sizeof vk->why, "key %" PRId64 " %s", row->rowid,
                 row->revoked ? "is revoked without a record" : "is not revoked, but recorded so");
        return VERIFY_STOP;
    }
    k->create_seq = -k->create_seq; /* seen: a record of a key no row holds is named below */
    return 0;
}

/* Verify the audit log and the keys against it, one line to out: 0 ok,
 * 1 broken, 2 unreadable. */
static int verify_log(struct store *st, const char *deleted_id, FILE *out)
{
    struct verify_log v = {.only = deleted_id, .chain = STORE_AUDIT_GENESIS, .expect_seq = 1};
    struct verify_keys vk = {.v = &v};
    int ret = 0;
    int rc = store_load_audit(st, verify_record, &v);
    if (deleted_id != NULL && v.broken_seq == 0 && rc == STORE_OK) {
        if (v.deleted[0] == '\0') {
            fprintf(out, "%s: no such experiment, and no record of its deletion\n", deleted_id);
            ret = 2;
            goto out;
        }
        fputs(v.deleted, out);
    }
    if (v.broken_seq != 0) {
        fprintf(out, "audit log: BROKEN at seq %" PRId64 " (%s)\n", v.broken_seq, v.why);
        ret = 1;
        goto out;
    }
    if (rc != STORE_OK) {
        fprintf(out, "audit log: FAILED: cannot read it (%s)\n",
                rc < 0 || v.nomem ? "out of memory" : store_strerror(rc));
        ret = 2;
        goto out;
    }
    for (size_t i = 0; i < v.n; i++)
        if (v.keys[i].create_seq != 0 &&
            (vk.first_recorded == 0 || v.keys[i].key < vk.first_recorded))
            vk.first_recorded = v.keys[i].key;
    rc = store_load_keys(st, verify_key, &vk);
    if (vk.bad_key == 0 && rc == STORE_OK) {
        for (size_t i = 0; i < v.n; i++)
            if (v.keys[i].create_seq > 0) { /* recorded, but no row holds it */
                vk.bad_key = v.keys[i].key;
                snprintf(vk.why, sizeof vk.why,
                         "key %" PRId64 " is recorded (seq %" PRId64 ") but gone", v.keys[i].key,
                         v.keys[i].create_seq);
                break;
            }
    }
    if (vk.bad_key != 0) {
        fprintf(out, "audit log: BROKEN: %s\n", vk.why);
        ret = 1;
    } else if (rc != STORE_OK) {
        fprintf(out, "audit log: FAILED: cannot read the keys (%s)\n",
                rc < 0 ? "out of memory" : store_strerror(rc));
        ret = 2;
    } else {
        fprintf(out,
                "audit log: ok, %" PRId64 " records, keys as recorded (%" PRId64
                " older than the log), head %s\n",
                v.expect_seq - 1, vk.older, v.chain);
    }
out:
    for (size_t i = 0; i < v.n; i++)
        free(v.keys[i].detail);
    free(v.keys);
    return ret;
}

int exp_audit_verify(struct store *st, const char *id, FILE *out)
{
    struct verify_all va = {.st = st, .only = id, .out = out};
    int rc = store_load_experiments(st, verify_one, &va);
    if (rc != STORE_OK) {
        fprintf(out, "cannot read the experiments: %s\n", store_strerror(rc));
        return 2;
    }
    /* A deleted experiment's log is gone: its deletion record (who, when,
     * its design and last chain value, against which an export archived
     * before can be checked) is what is left to show. */
    int log = verify_log(st, id != NULL && va.found == 0 ? id : NULL, out);
    if (id != NULL && va.found == 0)
        return log;
    return va.broken > 0 || log == 1 ? 1 : va.failed > 0 || log == 2 ? 2 : 0;
}
