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
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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
    const char *s[4] = {ev->unit, ev->text, ev->actor, ev->request_id};
    const void *p[6] = {prev, head};
    size_t len[6] = {strlen(prev), (size_t)n};
    for (int i = 0; i < 4; i++) {
        p[2 + i] = s[i] != NULL ? s[i] : "";
        len[2 + i] = s[i] != NULL ? strlen(s[i]) : 0;
    }
    return digest_sha256_hex(p, len, 6, out);
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

static int verify_event(void *arg, const struct store_event *ev)
{
    struct verify *v = arg;
    if (ev->seq != v->expect_seq) {
        v->broken_seq = v->expect_seq;
        snprintf(v->why, sizeof v->why, "%s", ev->seq > v->expect_seq ? "missing" : "repeated");
        return VERIFY_STOP;
    }
    v->expect_seq++;
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

int exp_audit_verify(struct store *st, const char *id, FILE *out)
{
    struct verify_all va = {.st = st, .only = id, .out = out};
    int rc = store_load_experiments(st, verify_one, &va);
    if (rc != STORE_OK) {
        fprintf(out, "cannot read the experiments: %s\n", store_strerror(rc));
        return 2;
    }
    if (id != NULL && va.found == 0) {
        fprintf(out, "%s: no such experiment\n", id);
        return 2;
    }
    return va.broken > 0 ? 1 : va.failed > 0 ? 2 : 0;
}
