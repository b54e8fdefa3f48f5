/*
 * export.c — GET /v1/experiments/{id}/export?format=ndjson|csv[&after=SEQ]:
 * the audit trail of an experiment, streamed, whole or what is new.
 *
 * One row per logged fact, in log order (seq):
 *   assignment   every assignment handed out (pulls and exploitation),
 *                joined with its outcome: status "pending" (a pull awaiting
 *                its reward), "rewarded", "expired" (reward = the
 *                default_reward recorded, or empty), "released" (a
 *                leased assignment the client gave back), or for an exploit
 *                assignment without a reward "unrewarded";
 *                reward_time = when the outcome was logged.
 *   observation  an outcome not tied to an assignment.
 *   late_reward  a reward that arrived after its assignment expired
 *                (recorded for the audit, never counted).
 *   unit         a unit a client served an assignment of its block to
 *                (POST .../assignments/served): status = served.
 *   state        a PATCH of the state: status = running|paused|stopped.
 *   edit         a PATCH of name, budget or TTL: note = the change (JSON),
 *                with the design's hash before and after (exp/design.c).
 *   amendment    the same made by POST amendments (a reason required).
 *   correction   a reward replaced (POST corrections): reward = the new
 *                value, status "corrected", note = the reason.
 * Columns (CSV header; NDJSON keys, null when empty): kind, seq,
 * assignment_id, time, unit, bandit, arm, exploit, reward, status,
 * reward_time, note, actor, request_id, chain (the audit trail: the key
 * that asked, "key:<id>:<name>"; the request's id; the hash chain after the row's
 * event, exp/audit.c — an assignment row's are its assignment event's).
 * Times are RFC 3339 UTC; rewards are in the experiment's
 * units, printed so they read back to the same double.
 *
 * Incremental export, ?after=N: the rows of the events with seq in (N, E],
 * E the snapshot's last event, and again, whole, every assignment with
 * seq ≤ N whose outcome (reward or expiry) was logged in (N, E], where that
 * outcome was logged (so its seqs are not sorted). Rows keep
 * their seq, which is unique in the experiment, so a consumer that upserts
 * rows by seq holds exactly the full export at E. E goes out in the header
 * Banditd-Next-After (on every export), the `after` of the next request; a
 * consumer that lost it may resume after the largest seq it holds instead
 * (it then gets a few rows again, which the upsert absorbs). The cursor is
 * the log's own numbering rather than an opaque token: it is in every row
 * the consumer already stored, survives restarts, and costs one index seek.
 * An `after` past the last committed event cannot come from this
 * experiment's log (a deleted and re-created id starts again at 1): 400.
 *
 * The export is a snapshot of what was committed when the request came in
 * (events up to that seq; an outcome logged later shows as pending), read
 * in chunks of at most CHUNK_EVENTS events from the MHD content reader, so
 * memory stays bounded whatever the log's size. The reader runs on an MHD
 * thread without the experiment's lock: it touches only the store (read
 * connections are per thread and see committed data) and the immutable
 * parts of the experiment (configuration, rowid, id token), kept alive by
 * the reference the stream holds. The first chunk is read before the
 * answer starts, so a failure there is a 503 (or 404). If the experiment
 * is deleted later, or a later read fails, the stream ends with an error
 * (the connection is closed before the chunked terminator), so a client
 * never takes a truncated export for a complete one.
 */
#include "api/api.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/version.h"
#include "base/log.h"
#include "base/clock.h"

#define CHUNK_EVENTS 512               /* events read per store query */
#define BUF_TARGET ((size_t)48 * 1024) /* refill stops once this much is buffered */

enum fmt { FMT_NDJSON, FMT_CSV };

struct export
{
    struct exp *x; /* reference held until the stream ends */
    char id[EXP_ID_MAX + 1];
    int64_t rowid;
    int64_t end_seq;  /* snapshot: last committed event at the request */
    int64_t after;    /* ?after: assignments up to it come again with a new outcome */
    int64_t next_seq; /* events with seq > next_seq are still to read */
    enum fmt fmt;
    int header_done, done, failed;
    size_t events_in_chunk;
    struct buf out; /* pending output */
    size_t off;     /* sent of it */
};

static const char *const columns[] = {
    "kind",   "seq",    "assignment_id", "time", "unit",  "bandit",     "arm",  "exploit",
    "reward", "status", "reward_time",   "note", "actor", "request_id", "chain"};
enum { NCOL = sizeof columns / sizeof columns[0] };

/* --- output buffer ----------------------------------------------------------- */

static int put(struct export *e, const char *s, size_t n)
{
    return buf_put(&e->out, s, n);
}

static int puts_(struct export *e, const char *s)
{
    return buf_puts(&e->out, s);
}

/* Shortest %g form that reads back to v. */
static void format_number(double v, char *out, size_t len)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* A JSON string literal (the input is valid UTF-8: it came through jansson). */
static int put_json_string(struct export *e, const char *s)
{
    if (puts_(e, "\"") != 0)
        return -1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            esc[2] = '\0';
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            if (put(e, (const char *)p, 1) != 0)
                return -1;
            continue;
        }
        if (puts_(e, esc) != 0)
            return -1;
    }
    return puts_(e, "\"");
}

/* A CSV field (RFC 4180): quoted when it holds a comma, quote or line
 * break, with quotes doubled. */
static int put_csv_field(struct export *e, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL)
        return puts_(e, s);
    if (puts_(e, "\"") != 0)
        return -1;
    for (const char *p = s; *p; p++)
        if ((*p == '"' && puts_(e, "\"\"") != 0) || (*p != '"' && put(e, p, 1) != 0))
            return -1;
    return puts_(e, "\"");
}

/* One row: values[i] is the text of column i or NULL (empty / null);
 * is_string[i] says whether NDJSON quotes it. */
static int put_row(struct export *e, const char *const values[NCOL], const int is_string[NCOL])
{
    int rc = 0;
    if (e->fmt == FMT_CSV) {
        for (size_t i = 0; i < NCOL && rc == 0; i++) {
            if (i > 0)
                rc = puts_(e, ",");
            if (rc == 0 && values[i] != NULL)
                rc = put_csv_field(e, values[i]);
        }
        return rc != 0 ? rc : puts_(e, "\r\n");
    }
    rc = puts_(e, "{");
    for (size_t i = 0; i < NCOL && rc == 0; i++) {
        rc = puts_(e, i > 0 ? ",\"" : "\"");
        if (rc == 0)
            rc = puts_(e, columns[i]);
        if (rc == 0)
            rc = puts_(e, "\":");
        if (rc == 0)
            rc = values[i] == NULL ? puts_(e, "null")
                 : is_string[i]    ? put_json_string(e, values[i])
                                   : puts_(e, values[i]);
    }
    return rc != 0 ? rc : puts_(e, "}\n");
}

/* --- rows from events ------------------------------------------------------------- */

/* The audit trail's columns of the row of event ev (exp/audit.c): who
 * asked, the request, the hash chain after the event. */
static void audit_cols(const char **v, const struct store_event *ev)
{
    v[12] = ev->actor;
    v[13] = ev->request_id;
    v[14] = ev->chain;
}

static const char *bandit_name(const struct exp_config *c, int32_t b)
{
    return b >= 0 && (size_t)b < c->n_bandits ? c->bandit_ids[b] : NULL;
}

static const char *arm_name(const struct exp_config *c, int32_t b, int32_t a)
{
    if (b < 0 || (size_t)b >= c->n_bandits || a < 0 || (size_t)a >= c->n_arms[b])
        return NULL;
    return c->arm_names[b][a];
}

static const int str[NCOL] = {1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1};

/* The row of assignment event ev, joined with its outcome as of the
 * snapshot. 0, or −1 (e->failed set) on a read or memory error. */
static int assignment_row(struct export *e, const struct store_event *ev)
{
    const struct exp_config *c = exp_cfg(e->x);
    const char *v[NCOL] = {NULL};
    char seq[24], aid[48], ts[CLOCK_RFC3339_LEN], reward[40], rtime[CLOCK_RFC3339_LEN];
    int exploit = (ev->flags & STORE_AF_EXPLOIT) != 0;
    snprintf(seq, sizeof seq, "%" PRId64, ev->seq);
    clock_format_rfc3339(ev->ts_ms, ts, sizeof ts);
    exp_assignment_id(e->x, ev->seq, ev->ts_ms, aid, sizeof aid);
    v[0] = "assignment";
    v[1] = seq;
    v[2] = aid;
    v[3] = ts;
    v[4] = ev->unit;
    v[5] = bandit_name(c, ev->bandit);
    v[6] = arm_name(c, ev->bandit, ev->arm);
    v[7] = exploit ? "true" : "false";
    audit_cols(v, ev);
    v[9] = exploit ? "unrewarded" : "pending";
    struct store_event out;
    int rc = store_find_outcome(exp_store(), e->rowid, ev->seq, &out);
    if (rc != STORE_OK && rc != STORE_ERR_NOTFOUND) {
        e->failed = 1;
        return -1;
    }
    if (rc == STORE_OK && out.seq <= e->end_seq) {
        v[9] = out.kind == STORE_EV_REWARD                                      ? "rewarded"
               : out.kind == STORE_EV_EXPIRE && (out.flags & STORE_XF_RELEASED) ? "released"
                                                                                : "expired";
        if (!isnan(out.value) && out.kind != STORE_EV_LATE) {
            format_number(out.value, reward, sizeof reward);
            v[8] = reward;
        }
        clock_format_rfc3339(out.ts_ms, rtime, sizeof rtime);
        v[10] = rtime;
    }
    if (put_row(e, v, str) != 0) {
        e->failed = 1;
        return -1;
    }
    return 0;
}

/* An outcome (reward, expiry) logged after the cursor of an assignment
 * at or before it: that assignment's row again, with the outcome. */
static int updated_row(struct export *e, int64_t ref)
{
    struct store_event a;
    char unit[EXP_MAX_UNIT + 256]; /* and the audit trail's strings */
    int rc = store_find_assignment(exp_store(), e->rowid, ref, &a, unit, sizeof unit);
    if (rc == STORE_ERR_NOTFOUND)
        return 0; /* an outcome of no assignment: replay refuses such a log */
    if (rc != STORE_OK) {
        e->failed = 1;
        return -1;
    }
    return assignment_row(e, &a);
}

/* The id of assignment ref into aid: it needs the assignment's creation
 * time, read from the log (rare rows). 0, or −1 (e->failed set). */
static int ref_id(struct export *e, int64_t ref, char *aid, size_t len)
{
    struct store_event as;
    char unit[8];
    if (store_find_assignment(exp_store(), e->rowid, ref, &as, unit, sizeof unit) != STORE_OK) {
        e->failed = 1;
        return -1;
    }
    exp_assignment_id(e->x, ref, as.ts_ms, aid, len);
    return 0;
}

static int on_event(void *arg, const struct store_event *ev)
{
    struct export *e = arg;
    if (ev->seq > e->end_seq) {
        e->done = 1;
        return 1;
    }
    e->next_seq = ev->seq;
    const struct exp_config *c = exp_cfg(e->x);
    const char *v[NCOL] = {NULL};
    char seq[24], aid[48], ts[CLOCK_RFC3339_LEN], reward[40];
    snprintf(seq, sizeof seq, "%" PRId64, ev->seq);
    clock_format_rfc3339(ev->ts_ms, ts, sizeof ts);
    v[1] = seq;
    v[3] = ts;
    audit_cols(v, ev);
    switch (ev->kind) {
    case STORE_EV_ASSIGN:
        if (assignment_row(e, ev) != 0)
            return 1;
        break;
    case STORE_EV_REWARD:
    case STORE_EV_EXPIRE:
        /* Shown on their assignment's row: sent again when the cursor
         * already passed that row. */
        if (ev->ref <= e->after && updated_row(e, ev->ref) != 0)
            return 1;
        break;
    case STORE_EV_OBSERVE:
    case STORE_EV_LATE:
    case STORE_EV_CORRECT:
        /* an outcome on its own row: an observation, a reward that came
         * after its assignment expired, or a correction of a reward (the
         * assignment's row keeps the value reported; this row's replaces
         * it in the statistics, note = the reason) */
        v[0] = ev->kind == STORE_EV_OBSERVE ? "observation"
               : ev->kind == STORE_EV_LATE  ? "late_reward"
                                            : "correction";
        if (ev->kind != STORE_EV_OBSERVE) {
            if (ref_id(e, ev->ref, aid, sizeof aid) != 0)
                return 1;
            v[2] = aid;
        }
        v[5] = bandit_name(c, ev->bandit);
        v[6] = arm_name(c, ev->bandit, ev->arm);
        format_number(ev->value, reward, sizeof reward);
        v[8] = reward;
        v[9] = ev->kind == STORE_EV_OBSERVE ? "observed"
               : ev->kind == STORE_EV_LATE  ? "expired"
                                            : "corrected";
        v[11] = ev->kind == STORE_EV_CORRECT ? ev->text : NULL;
        break;
    case STORE_EV_UNIT:
        /* a unit served an assignment of a block (its row has no unit) */
        if (ref_id(e, ev->ref, aid, sizeof aid) != 0)
            return 1;
        v[0] = "unit";
        v[2] = aid;
        v[4] = ev->unit;
        v[5] = bandit_name(c, ev->bandit);
        v[6] = arm_name(c, ev->bandit, ev->arm);
        v[9] = "served";
        break;
    case STORE_EV_STATE:
        v[0] = "state";
        v[9] = ev->text;
        break;
    case STORE_EV_EDIT:
        /* note: the change (exp/edits.c), with its design hashes */
        v[0] = ev->text != NULL && strstr(ev->text, "\"amendment\":true") != NULL ? "amendment"
                                                                                  : "edit";
        v[11] = ev->text;
        break;
    default:
        break;
    }
    if (v[0] != NULL && put_row(e, v, str) != 0) {
        e->failed = 1;
        return 1;
    }
    /* Stop this query once enough is buffered or read; the next refill
     * continues after next_seq. */
    if (++e->events_in_chunk >= CHUNK_EVENTS || e->out.len >= BUF_TARGET)
        return 1;
    return 0;
}

/* Still the same live experiment? (A delete marks it at once, when it is
 * queued; the registry forgets it only after the commit.) */
static int still_there(struct export *e)
{
    return !exp_gone(e->x);
}

/* Fill the buffer with the next rows. 0, or −1 on failure. */
static int refill(struct export *e)
{
    e->out.len = e->off = 0;
    if (!e->header_done) {
        e->header_done = 1;
        if (e->fmt == FMT_CSV) {
            for (size_t i = 0; i < NCOL; i++)
                if ((i > 0 && puts_(e, ",") != 0) || puts_(e, columns[i]) != 0)
                    return -1;
            if (puts_(e, "\r\n") != 0)
                return -1;
        }
    }
    while (!e->done && e->out.len < BUF_TARGET) {
        e->events_in_chunk = 0;
        int64_t before = e->next_seq;
        int rc = store_load_events(exp_store(), e->rowid, e->next_seq, on_event, e);
        if (e->failed || (rc != STORE_OK && rc != 1)) {
            log_warn("export of %s failed at seq %" PRId64 ": %s", e->id, e->next_seq,
                     e->failed ? "read or memory error" : store_strerror(rc));
            return -1;
        }
        /* Checked after reading: if no delete is queued now, none was
         * queued before the rows above were read, so they are whole. */
        if (!still_there(e)) {
            log_warn("export of %s stopped: the experiment was deleted", e->id);
            return -1;
        }
        if (rc == STORE_OK || e->next_seq >= e->end_seq || e->next_seq == before)
            e->done = 1; /* the log (or the snapshot) is exhausted */
    }
    return 0;
}

static long export_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos; /* MHD reads sequentially */
    struct export *e = cls;
    if (e->off == e->out.len) {
        if (e->done && e->header_done)
            return 0;
        if (refill(e) != 0)
            return -1;
        if (e->out.len == 0)
            return 0;
    }
    size_t n = e->out.len - e->off;
    if (n > max)
        n = max;
    memcpy(buf, e->out.p + e->off, n);
    e->off += n;
    return (long)n;
}

static void export_free(void *cls)
{
    struct export *e = cls;
    exp_put(e->x);
    buf_free(&e->out);
    free(e);
}

/* ?after: absent is 0; else decimal digits only. 0 and *out, or −1. */
static int parse_after(const char *s, int64_t *out)
{
    *out = 0;
    if (s == NULL)
        return 0;
    if (*s == '\0' || strlen(s) > 18)
        return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 0;
}

int api_export_get(struct http_req *r)
{
    enum fmt fmt = FMT_NDJSON;
    const char *f = http_req_query(r, "format");
    if (f != NULL && strcmp(f, "csv") == 0)
        fmt = FMT_CSV;
    else if (f != NULL && strcmp(f, "ndjson") != 0)
        return http_reply_invalid(r, "format", "must be \"ndjson\" or \"csv\"");
    int64_t after;
    if (parse_after(http_req_query(r, "after"), &after) != 0)
        return http_reply_invalid(r, "after",
                                  "must be an integer ≥ 0: the Banditd-Next-After of an earlier "
                                  "export, or the largest seq received");
    struct exp *x = api_exp_lock(r);
    if (x == NULL)
        return HTTP_DONE;
    if (api_blinded(r, x)) { /* every row names an arm */
        api_exp_unlock(x);
        return api_reply_blinded(r);
    }
    int64_t rowid = exp_rowid(x);
    char design[80], design0[80];
    snprintf(design, sizeof design, "%s", exp_design_hash(x));
    snprintf(design0, sizeof design0, "%s", exp_design_hash_initial(x));
    exp_unlock(x); /* the reference stays: the stream holds it */
    struct export *e = calloc(1, sizeof *e);
    int64_t last = 0;
    int rc = e != NULL ? store_last_seq(exp_store(), rowid, &last) : STORE_ERR_NOMEM;
    if (rc != STORE_OK) {
        free(e);
        exp_put(x);
        return http_reply_problem(r, 503, "storage read failed; retry later", NULL);
    }
    if (after > last) {
        free(e);
        exp_put(x);
        char msg[160];
        snprintf(msg, sizeof msg,
                 "is past the last committed event (%" PRId64
                 "): a cursor of another experiment of this id? Export from the start",
                 last);
        return http_reply_invalid(r, "after", msg);
    }
    e->x = x;
    buf_init(&e->out, 0);
    snprintf(e->id, sizeof e->id, "%s", exp_id(x));
    e->rowid = rowid;
    e->end_seq = last;
    e->after = after;
    e->next_seq = after;
    e->fmt = fmt;
    e->done = after >= last;
    /* The first rows are read before anything is sent: a failure there
     * (the whole of a small export) is still a problem+json answer, where
     * once streaming it can only cut the connection (test_allocfaults). */
    if (refill(e) != 0) {
        int gone = !still_there(e);
        export_free(e);
        if (gone)
            return http_reply_problem(r, 404, "the experiment was deleted", NULL);
        return http_reply_problem(r, 503, "storage read failed; retry later", NULL);
    }
    /* The audit log's record of the export (docs/contract.md, Audit
     * trail), on disk before the first byte goes out: no lock is held
     * here, the wait is one group commit. */
    char detail[64], actor[API_ACTOR_LEN];
    snprintf(detail, sizeof detail, "%s after %" PRId64, fmt == FMT_CSV ? "csv" : "ndjson", after);
    if (exp_audit_record_sync(STORE_AUDIT_EXPORT, e->id, detail, api_actor(r, actor),
                              http_req_request_id(r)) != STORE_OK) {
        export_free(e);
        return http_reply_problem(r, 503, "cannot record the export in the audit log; retry later",
                                  NULL);
    }
    char disp[EXP_ID_MAX + 64], next[24];
    if (after > 0)
        snprintf(disp, sizeof disp, "attachment; filename=\"%s.after-%" PRId64 ".%s\"", e->id,
                 after, fmt == FMT_CSV ? "csv" : "ndjson");
    else
        snprintf(disp, sizeof disp, "attachment; filename=\"%s.%s\"", e->id,
                 fmt == FMT_CSV ? "csv" : "ndjson");
    http_reply_header(r, "Content-Disposition", disp);
    snprintf(next, sizeof next, "%" PRId64, last);
    http_reply_header(r, "Banditd-Next-After", next);
    /* The design in force and at creation (docs/contract.md, Clinical
     * trials); its changes are the edit and amendment rows. */
    http_reply_header(r, "Banditd-Design-Hash", design);
    http_reply_header(r, "Banditd-Design-Initial-Hash", design0);
    /* with the seed (in the design) what reconstructs every allocation */
    http_reply_header(r, "Banditd-Version", BANDITD_VERSION);
    return http_reply_stream(
        r, 200, fmt == FMT_CSV ? "text/csv; charset=utf-8; header=present" : "application/x-ndjson",
        export_read, e, export_free);
}
