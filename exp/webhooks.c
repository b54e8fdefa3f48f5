/*
 * webhooks.c — the runtime's half of webhooks (docs/contract.md, Webhooks):
 * the "webhooks" field of a configuration (parsed, normalised without its
 * secrets, stored with them), and the hook that finds, at each submission,
 * what the batch's events caused — the experiment stopped, a bandit done,
 * a bandit's burn-in complete, a pause or a resume — and appends one
 * outbox op per subscribed endpoint to that same batch. The outbox row
 * therefore commits in the transaction of the events that caused it: a
 * 2xx for a reward that stopped the experiment means its announcement is
 * on disk too. Delivery is notify/'s, which knows nothing of experiments.
 *
 * What was announced lives in a watch beside the engine (exp_data): a
 * transition is what differs between the watch and the engine after a
 * batch. A reload replays the log and starts the watch from the replayed
 * state (exp_watch_sync): what the log holds was announced in the same
 * transactions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/jsonv.h"
#include "exp/internal.h"

/* Bandits and arms a payload lists (the rest is in GET .../status): keeps
 * a payload under ~50 KB whatever the experiment's size. */
#define HOOK_MAX_BANDITS 16
#define HOOK_MAX_ARMS 32

/* One table, one meaning: the bit, its name. */
static const struct {
    unsigned bit;
    const char *name;
} hook_events[] = {
    {EXP_HOOK_STOPPED, "experiment.stopped"},  {EXP_HOOK_PAUSED, "experiment.paused"},
    {EXP_HOOK_RESUMED, "experiment.resumed"},  {EXP_HOOK_BANDIT_DONE, "bandit.done"},
    {EXP_HOOK_CONSTRAINT, "constraint.fired"},
};
#define N_HOOK_EVENTS (sizeof hook_events / sizeof hook_events[0])

const char *exp_hook_event_name(unsigned bit)
{
    for (size_t i = 0; i < N_HOOK_EVENTS; i++)
        if (hook_events[i].bit == bit)
            return hook_events[i].name;
    return NULL;
}

/* --- configuration ------------------------------------------------------------------ */

void exp_webhooks_free(struct exp_config *c)
{
    for (size_t i = 0; c->webhooks != NULL && i < c->n_webhooks; i++) {
        free(c->webhooks[i].url);
        if (c->webhooks[i].secret != NULL) {
            explicit_bzero(c->webhooks[i].secret, strlen(c->webhooks[i].secret));
            free(c->webhooks[i].secret);
        }
    }
    free(c->webhooks);
    c->webhooks = NULL;
    c->n_webhooks = 0;
}

/* An http:// or https:// URL with a host, printable ASCII, no spaces. Where
 * it may point (loopback, link-local) is the delivery's policy (notify.h),
 * checked at creation by the API and at each connection by notify. */
static const char *url_problem(const char *u)
{
    size_t n = strlen(u), skip;
    if (n > EXP_WEBHOOK_URL_MAX)
        return "must be at most 2048 bytes";
    if (strncasecmp(u, "https://", 8) == 0)
        skip = 8;
    else if (strncasecmp(u, "http://", 7) == 0)
        skip = 7;
    else
        return "must be an http:// or https:// URL";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)u[i] <= 0x20 || (unsigned char)u[i] >= 0x7f)
            return "must be printable ASCII without spaces (percent-encode the rest)";
    const char *host = u + skip;
    if (*host == '\0' || *host == '/' || *host == ':' || *host == '?' || *host == '#')
        return "must name a host";
    return NULL;
}

static unsigned parse_events(json_t *ev, const char *field, json_t *errors, int *bad)
{
    if (ev == NULL)
        return EXP_HOOK_ALL;
    size_t n = json_array_size(ev);
    if (!json_is_array(ev) || n == 0) {
        jv_error(errors, field, "must be a non-empty array of event names");
        *bad = 1;
        return 0;
    }
    unsigned bits = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(ev, i));
        unsigned bit = 0;
        for (size_t k = 0; name != NULL && k < N_HOOK_EVENTS; k++)
            if (strcmp(name, hook_events[k].name) == 0)
                bit = hook_events[k].bit;
        if (bit == 0) {
            jv_error(errors, field,
                     "unknown event at [%zu]: the events are experiment.stopped, "
                     "experiment.paused, experiment.resumed, bandit.done, constraint.fired",
                     i);
            *bad = 1;
        }
        bits |= bit;
    }
    return bits;
}

int exp_webhooks_parse(struct exp_config *c, json_t *v, json_t *errors)
{
    static const char *const keys[] = {"url", "events", "secret", NULL};
    if (v == NULL || json_is_null(v))
        return 0;
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n > EXP_WEBHOOKS_MAX) {
        jv_error(errors, "webhooks", "must be an array of at most %d endpoints", EXP_WEBHOOKS_MAX);
        return 1;
    }
    if (n == 0)
        return 0;
    c->webhooks = calloc(n, sizeof *c->webhooks);
    if (c->webhooks == NULL)
        return -1;
    c->n_webhooks = n;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char f[64];
        json_t *h = json_array_get(v, i);
        snprintf(f, sizeof f, "webhooks[%zu]", i);
        int unknown = jv_object(h, keys, f, errors);
        if (unknown != 0)
            bad = 1;
        if (unknown < 0)
            continue;
        const char *url = json_string_value(json_object_get(h, "url"));
        const char *why = url == NULL ? "required: an http:// or https:// URL" : url_problem(url);
        snprintf(f, sizeof f, "webhooks[%zu].url", i);
        if (why != NULL) {
            jv_error(errors, f, "%s", why);
            bad = 1;
        }
        for (size_t j = 0; why == NULL && j < i; j++)
            if (c->webhooks[j].url != NULL && strcmp(c->webhooks[j].url, url) == 0) {
                jv_error(errors, f, "the same URL as webhooks[%zu]", j);
                bad = 1;
            }
        snprintf(f, sizeof f, "webhooks[%zu].events", i);
        c->webhooks[i].events = parse_events(json_object_get(h, "events"), f, errors, &bad);
        json_t *sj = json_object_get(h, "secret");
        size_t slen = json_string_length(sj);
        snprintf(f, sizeof f, "webhooks[%zu].secret", i);
        if (!json_is_string(sj) || slen < EXP_WEBHOOK_SECRET_MIN || slen > EXP_WEBHOOK_SECRET_MAX ||
            strlen(json_string_value(sj)) != slen) {
            jv_error(errors, f,
                     "required: a string of %d to %d bytes (the HMAC key that signs each "
                     "delivery)",
                     EXP_WEBHOOK_SECRET_MIN, EXP_WEBHOOK_SECRET_MAX);
            bad = 1;
        }
        if (bad || url == NULL)
            continue;
        c->webhooks[i].url = strdup(url);
        c->webhooks[i].secret = strdup(json_string_value(sj));
        if (c->webhooks[i].url == NULL || c->webhooks[i].secret == NULL)
            return -1;
    }
    return bad;
}

/* "sha256:" and the first 16 hex digits of the secret's SHA-256: enough to
 * tell two secrets apart, nothing to sign with. */
static int fingerprint(const char *secret, char *out, size_t len)
{
    unsigned char dg[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, secret, strlen(secret), dg) != 0)
        return -1;
    size_t n = (size_t)snprintf(out, len, "sha256:");
    for (size_t i = 0; i < 8 && n + 2 < len; i++, n += 2)
        snprintf(out + n, len - n, "%02x", dg[i]);
    return 0;
}

/* events as an array of names, in the table's order. */
static json_t *events_json(unsigned bits)
{
    json_t *a = json_array();
    for (size_t k = 0; a != NULL && k < N_HOOK_EVENTS; k++)
        if (bits & hook_events[k].bit)
            json_array_append_new(a, json_string(hook_events[k].name));
    return a;
}

/* The webhooks as GET shows them (secrets 0) or as stored (secrets 1). */
static json_t *webhooks_json(const struct exp_config *c, int secrets)
{
    json_t *arr = json_array();
    if (arr == NULL)
        return NULL;
    for (size_t i = 0; i < c->n_webhooks; i++) {
        const struct exp_webhook *w = &c->webhooks[i];
        char fp[48];
        json_t *o = json_pack("{s:s,s:o}", "url", w->url, "events", events_json(w->events));
        if (o == NULL || json_array_append_new(arr, o) != 0)
            goto fail;
        if (secrets) {
            if (json_object_set_new(o, "secret", json_string(w->secret)) != 0)
                goto fail;
        } else if (fingerprint(w->secret, fp, sizeof fp) != 0 ||
                   json_object_set_new(o, "secret_set", json_true()) != 0 ||
                   json_object_set_new(o, "secret_fingerprint", json_string(fp)) != 0) {
            goto fail;
        }
    }
    return arr;
fail:
    json_decref(arr);
    return NULL;
}

int exp_webhooks_normalise(struct exp_config *c)
{
    if (c->n_webhooks == 0)
        return 0;
    json_t *a = webhooks_json(c, 0);
    return a != NULL && json_object_set_new(c->json, "webhooks", a) == 0 ? 0 : -1;
}

char *exp_config_stored_text(const struct exp_config *c)
{
    if (c->n_webhooks == 0)
        return jv_dumps(c->json, JSON_COMPACT | JSON_SORT_KEYS);
    char *text = NULL;
    json_t *j = json_copy(c->json); /* shallow: only "webhooks" is replaced */
    json_t *a = webhooks_json(c, 1);
    if (j != NULL && a != NULL && json_object_set(j, "webhooks", a) == 0)
        text = jv_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(a);
    json_decref(j);
    return text;
}

/* --- the watch --------------------------------------------------------------------- */

enum { W_DONE = 1, W_BURNED = 2 }; /* per-bandit flags: announced */

struct exp_watch {
    unsigned events;       /* every endpoint's events, together */
    int stopped;           /* the stop was announced */
    enum exp_state state;  /* the last state announced (running at the start) */
    unsigned char *flags;  /* per bandit: W_DONE, W_BURNED */
    uint32_t *burn_cursor; /* per bandit: arms 0…cursor−1 have their burn-in rewards */
};

struct exp_watch *exp_watch_new(const struct exp_config *cfg)
{
    struct exp_watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    for (size_t i = 0; i < cfg->n_webhooks; i++)
        w->events |= cfg->webhooks[i].events;
    w->state = EXP_RUNNING;
    w->flags = calloc(cfg->n_bandits, 1);
    w->burn_cursor = calloc(cfg->n_bandits, sizeof *w->burn_cursor);
    if (w->flags == NULL || w->burn_cursor == NULL) {
        exp_watch_free(w);
        return NULL;
    }
    return w;
}

void exp_watch_free(struct exp_watch *w)
{
    if (w == NULL)
        return;
    free(w->flags);
    free(w->burn_cursor);
    free(w);
}

/* Whether bandit b's burn-in is complete: every arm has at least burn_in
 * outcomes (n: rewards, observations, default rewards). n never decreases,
 * so the cursor only moves forward: O(K) over the bandit's life. */
static int burn_in_complete(const struct exp_config *c, struct exp_watch *w, const struct engine *e,
                            size_t b)
{
    const struct stats_arm *arms = engine_arms(e, b);
    while (w->burn_cursor[b] < c->n_arms[b] && arms[w->burn_cursor[b]].n >= c->engine.burn_in)
        w->burn_cursor[b]++;
    return w->burn_cursor[b] == c->n_arms[b];
}

void exp_watch_sync(const struct exp *x, struct exp_data *d)
{
    struct exp_watch *w = d->watch;
    if (w == NULL)
        return;
    const struct exp_config *c = &x->cfg;
    w->stopped = engine_stopped(d->eng);
    w->state = d->state;
    for (size_t b = 0; b < c->n_bandits; b++) {
        w->flags[b] = engine_bandit_done(d->eng, b) ? W_DONE : 0;
        if (c->engine.burn_in > 0 && burn_in_complete(c, w, d->eng, b))
            w->flags[b] |= W_BURNED;
    }
}

/* --- payloads ----------------------------------------------------------------------- */

/* One bandit's figures, as GET .../status names them (arms up to
 * HOOK_MAX_ARMS). New reference or NULL. */
static json_t *bandit_json(const struct exp *x, const struct exp_data *d, size_t b)
{
    const struct exp_config *c = &x->cfg;
    struct engine_bandit_status st;
    unsigned char *high = d->scratch;
    engine_bandit_status(d->eng, b, high, &st);
    double lo = c->reward_min, range = c->reward_max - c->reward_min;
    const struct stats_arm *arms = engine_arms(d->eng, b);
    size_t k = c->n_arms[b];
    json_t *rec = json_array(), *list = json_array();
    for (size_t i = 0; rec != NULL && list != NULL && i < k; i++) {
        if (high[i])
            json_array_append_new(rec, json_string(c->arm_names[b][i]));
        if (i < HOOK_MAX_ARMS)
            json_array_append_new(
                list,
                json_pack("{s:s,s:I,s:I,s:o}", "id", c->arm_names[b][i], "pulls",
                          (json_int_t)arms[i].n, "pending", (json_int_t)arms[i].pending, "mean",
                          arms[i].n > 0 ? jv_real(lo + arms[i].mean * range) : json_null()));
    }
    json_t *j =
        json_pack("{s:s,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id", c->bandit_ids[b], "done", st.done,
                  "recommended", rec, "delta_c", jv_real(st.delta_c), "rho", jv_real(st.rho), "glr",
                  jv_real(st.glr), "cutoff", jv_real(lo + st.cutoff * range), "stop",
                  exp_stop_json(d->eng, b), "arms", list);
    if (j != NULL && k > HOOK_MAX_ARMS)
        json_object_set_new(j, "arms_truncated", json_true());
    return j;
}

/* The experiment's figures: state, stop reason, counts. New reference. */
static json_t *experiment_json(const struct exp *x, const struct exp_data *d)
{
    const char *reason = exp_stop_reason(x);
    return json_pack(
        "{s:s,s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:I}", "id", x->id, "name",
        d->name != NULL ? d->name : x->cfg.name, "state", exp_state_name(exp_get_state(x)),
        "stop_reason", reason ? json_string(reason) : json_null(), "pulls",
        (json_int_t)engine_pulls(d->eng), "pending", (json_int_t)engine_pending(d->eng),
        "handed_out", (json_int_t)engine_handed_out(d->eng), "bandits_done",
        (json_int_t)engine_bandits_done(d->eng), "bandits_total", (json_int_t)x->cfg.n_bandits);
}

/* --- emission ------------------------------------------------------------------------ */

/* Keep p (malloc'd) until the batch is freed: b->strings frees any block. */
static int batch_own(struct exp_batch *b, void *p)
{
    if (buf_grow((void **)&b->strings, &b->capstr, b->nstr + 1, sizeof *b->strings, 4) != 0)
        return -1;
    b->strings[b->nstr++] = p;
    return 0;
}

/* One event: its payload and one outbox op per endpoint subscribed to bit.
 * bandit: the bandit it is about, or −1. data: the event's own fields
 * (stolen). 0 or −1 (out of memory). */
static int announce(struct exp *x, struct exp_batch *b, unsigned bit, long bandit, json_t *data,
                    int64_t now)
{
    const struct exp_config *c = &x->cfg;
    const char *type = exp_hook_event_name(bit);
    struct exp_data *d = x->d;
    char id[EXP_ID_MAX * 2 + 64], ts[CLOCK_RFC3339_LEN];
    int rc = -1;

    /* Unique (experiment, its token — which differs between a deleted
     * experiment and its re-creation —, the log position and its time, the
     * type, the bandit) and fixed once written: every attempt sends the
     * same body. */
    char pos[48];
    exp_assignment_id(x, d->seq, now, pos, sizeof pos);
    snprintf(id, sizeof id, "%s/%s/%s%s%s", x->id, pos, type, bandit >= 0 ? "/" : "",
             bandit >= 0 ? c->bandit_ids[bandit] : "");
    clock_format_rfc3339(now, ts, sizeof ts);
    json_t *j =
        json_pack("{s:s,s:s,s:s,s:I,s:o,s:o}", "id", id, "type", type, "created_at", ts, "seq",
                  (json_int_t)d->seq, "experiment", experiment_json(x, d), "data", data);
    /* data is stolen by json_pack, even when it fails */
    char *body = j != NULL ? jv_dumps(j, JSON_COMPACT) : NULL;
    char *eid = strdup(id);
    json_decref(j);
    if (body == NULL || eid == NULL || batch_own(b, body) != 0) {
        free(body);
        free(eid);
        return -1;
    }
    if (batch_own(b, eid) != 0) {
        free(eid);
        return -1;
    }
    for (size_t i = 0; i < c->n_webhooks; i++) {
        if (!(c->webhooks[i].events & bit))
            continue;
        struct store_delivery *dl = calloc(1, sizeof *dl);
        if (dl == NULL || batch_own(b, dl) != 0) {
            free(dl);
            goto out;
        }
        /* x's strings outlive the batch: it holds a reference until the
         * completion (commit.c), and the configuration never changes */
        dl->exp = x->rowid;
        dl->exp_id = x->id;
        dl->event_id = eid;
        dl->type = type;
        dl->url = c->webhooks[i].url;
        dl->secret = c->webhooks[i].secret;
        dl->body = body;
        dl->created_ms = now;
        dl->next_ms = now;
        struct store_op *op = exp_batch_op(b);
        if (op == NULL)
            goto out;
        op->kind = STORE_OP_OUTBOX;
        op->dl = dl;
    }
    rc = 0;
out:
    return rc;
}

int exp_watch_emit(struct exp *x, struct exp_batch *b)
{
    struct exp_data *d = x->d;
    struct exp_watch *w = d->watch;
    if (w == NULL || b->n == 0)
        return 0;
    const struct exp_config *c = &x->cfg;
    struct engine *e = d->eng;
    /* The time of the batch's last event (the one at d->seq), which with
     * its seq makes the event id: <token>-<seq>-<check>, as an assignment
     * id, so that an event a power loss took back and the one numbered
     * again after it never share an id. */
    int64_t now = clock_wall_ms();
    for (size_t i = b->n; i-- > 0;)
        if (b->ops[i].kind == STORE_OP_EVENT && b->ops[i].ev.seq == d->seq) {
            now = b->ops[i].ev.ts_ms;
            break;
        }
    size_t nops = b->n; /* the events' ops: announce appends after them */
    int stopped = engine_stopped(e), newly_stopped = stopped && !w->stopped;
    /* a manual stop closes every bandit: that is the stop's news, not theirs */
    int manual = newly_stopped && engine_stop_reason(e) == ENGINE_STOPPED_MANUAL;

    if (c->n_bandits > 1) {
        for (size_t k = 0; k < c->n_bandits; k++) {
            if ((w->flags[k] & W_DONE) || !engine_bandit_done(e, k))
                continue;
            if (!manual && (w->events & EXP_HOOK_BANDIT_DONE) &&
                announce(x, b, EXP_HOOK_BANDIT_DONE, (long)k,
                         json_pack("{s:o}", "bandit", bandit_json(x, d, k)), now) != 0)
                return -1;
            w->flags[k] |= W_DONE;
        }
    }
    if (c->engine.burn_in > 0 && (w->events & EXP_HOOK_CONSTRAINT)) {
        /* only the bandits this batch's events touched can have completed */
        for (size_t i = 0; i < nops; i++) {
            const struct store_op *op = &b->ops[i];
            if (op->kind != STORE_OP_EVENT || op->ev.bandit < 0 ||
                (size_t)op->ev.bandit >= c->n_bandits)
                continue;
            size_t k = (size_t)op->ev.bandit;
            if ((w->flags[k] & W_BURNED) || !burn_in_complete(c, w, e, k))
                continue;
            w->flags[k] |= W_BURNED;
            if (stopped)
                continue; /* nothing is allocated any more: no news */
            if (announce(x, b, EXP_HOOK_CONSTRAINT, (long)k,
                         json_pack("{s:s,s:I,s:s,s:o}", "constraint", "burn_in", "burn_in",
                                   (json_int_t)c->engine.burn_in, "message",
                                   "every arm has its burn-in outcomes: the policy allocates "
                                   "from now on (within the floor and the control share)",
                                   "bandit", bandit_json(x, d, k)),
                         now) != 0)
                return -1;
        }
    }
    if (!stopped && d->state != w->state) {
        unsigned bit = d->state == EXP_PAUSED ? EXP_HOOK_PAUSED : EXP_HOOK_RESUMED;
        if ((w->events & bit) &&
            announce(x, b, bit, -1, json_pack("{s:s}", "state", exp_state_name(d->state)), now) !=
                0)
            return -1;
        w->state = d->state;
    }
    if (newly_stopped && (w->events & EXP_HOOK_STOPPED)) {
        json_t *list = json_array();
        for (size_t k = 0; list != NULL && k < c->n_bandits && k < HOOK_MAX_BANDITS; k++)
            json_array_append_new(list, bandit_json(x, d, k));
        json_t *data = json_pack("{s:s,s:o}", "stop_reason", exp_stop_reason(x), "bandits", list);
        if (data != NULL && c->n_bandits > HOOK_MAX_BANDITS)
            json_object_set_new(data, "bandits_truncated", json_true());
        if (announce(x, b, EXP_HOOK_STOPPED, -1, data, now) != 0)
            return -1;
    }
    if (newly_stopped) {
        w->stopped = 1;
        w->state = EXP_STOPPED;
    }
    return 0;
}
