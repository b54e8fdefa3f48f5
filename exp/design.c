/*
 * design.c — the experiment's design as a versioned, hashed object
 * (docs/contract.md, Clinical trials). The design is the normalised
 * configuration; its hash at creation is the SHA-256 of that JSON in
 * canonical form (compact, keys sorted). Every EDIT event changes the
 * design and so its hash: the new hash is SHA-256(previous hash in hex ||
 * the change in canonical form without its "design_hash" member), and the
 * event carries both hashes, so a replay checks each step. An experiment
 * created with "design": {"frozen": true} takes changes after its first
 * assignment only as amendments (an EDIT with a required reason and
 * "amendment": true), never by a plain PATCH.
 *
 * The latest EXP_DESIGN_KEEP changes are kept in memory (a ring) for
 * status and export; all of them stay in the event log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/digest.h"
#include "base/jsonv.h"
#include "base/ser.h"
#include "exp/internal.h"

/* Design changes status and export list (the latest; the log has all). */
#define EXP_DESIGN_KEEP 64

struct exp_design_change {
    int64_t seq, ts_ms;
    int amendment;
    char *reason; /* owned; NULL: none */
    char previous[DIGEST_SHA256_HEX + 1];
    char hash[DIGEST_SHA256_HEX + 1];
};

struct exp_design_log {
    char hash[DIGEST_SHA256_HEX + 1]; /* the design in force */
    size_t total;                     /* changes applied */
    struct exp_design_change ring[EXP_DESIGN_KEEP];
    size_t head, len;
};

int exp_design_parse(struct exp_config *c, json_t *v, json_t *errors)
{
    if (v == NULL || json_is_null(v))
        return 0;
    static const char *const keys[] = {"frozen", "blinded", NULL};
    if (jv_object(v, keys, "design", errors) != 0)
        return 1;
    int frozen = 0, blinded = 0;
    if (jv_bool_member(v, "frozen", "design.frozen", &frozen, errors) ||
        jv_bool_member(v, "blinded", "design.blinded", &blinded, errors))
        return 1;
    c->design_frozen = frozen;
    c->design_blinded = blinded;
    return 0;
}

/* "blinded" is part of what is stored: without it a restart read a blinded
 * experiment back unblinded and showed a read key every arm. Written only
 * when true, so that the design (and hash) of every other experiment is
 * what it was. */
int exp_design_normalise(struct exp_config *c)
{
    json_t *d = json_pack("{s:b}", "frozen", c->design_frozen);
    if (d == NULL || (c->design_blinded && json_object_set_new(d, "blinded", json_true()) != 0)) {
        json_decref(d);
        return -1;
    }
    return json_object_set_new(c->json, "design", d) == 0 ? 0 : -1;
}

/* SHA-256 hex of prefix || j in canonical form (compact, sorted keys). */
static int hash_json(const char *prefix, const json_t *j, char out[DIGEST_SHA256_HEX + 1])
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL)
        return -1;
    const void *p[2] = {prefix, text};
    size_t len[2] = {strlen(prefix), strlen(text)};
    int rc = digest_sha256_hex(p, len, 2, out);
    free(text);
    return rc;
}

int exp_design_hash_of(const struct exp_config *c, char out[DIGEST_SHA256_HEX + 1])
{
    return hash_json("", c->json, out);
}

const char *exp_design_hash_initial(struct exp *x)
{
    /* Computed once, when x is made (registry.c, before anyone else sees
     * it): the configuration never changes. Computed again here only if
     * that failed (out of memory), under the lock. */
    if (x->design0[0] == '\0' && exp_design_hash_of(&x->cfg, x->design0) != 0)
        x->design0[0] = '\0';
    return x->design0;
}

const char *exp_design_hash(struct exp *x)
{
    return exp_design_hash_in(x, x->d);
}

const char *exp_design_hash_in(struct exp *x, const struct exp_data *d)
{
    const struct exp_design_log *l = d->design;
    return l != NULL ? l->hash : exp_design_hash_initial(x);
}

int exp_design_frozen(const struct exp *x)
{
    const struct engine *e = x->d->eng;
    return x->cfg.design_frozen && (engine_handed_out(e) > 0 || engine_pulls(e) > 0);
}

int exp_design_seal(struct exp *x, json_t *change, int amendment)
{
    const char *prev = exp_design_hash(x);
    char next[DIGEST_SHA256_HEX + 1];
    if (amendment && json_object_set_new(change, "amendment", json_true()) != 0)
        return -1;
    if (json_object_set_new(change, "previous_hash", json_string(prev)) != 0 ||
        hash_json(prev, change, next) != 0)
        return -1;
    return json_object_set_new(change, "design_hash", json_string(next)) == 0 ? 0 : -1;
}

void exp_design_free(struct exp_design_log *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->len; i++)
        free(l->ring[(l->head + i) % EXP_DESIGN_KEEP].reason);
    free(l);
}

/* A hash: 64 hex digits and the NUL. */
static void snap_hash(struct ser *s, char *h)
{
    ser_bytes(s, (unsigned char *)h, DIGEST_SHA256_HEX + 1);
    if (s->reading && ser_ok(s) && h[DIGEST_SHA256_HEX] != '\0')
        ser_fail(s);
}

void exp_design_snap(struct exp_data *d, struct ser *s)
{
    int have = d->design != NULL;
    ser_int(s, &have);
    if (!ser_ok(s) || !have)
        return;
    if (d->design == NULL && (!s->reading || (d->design = calloc(1, sizeof *d->design)) == NULL)) {
        ser_fail(s);
        return;
    }
    struct exp_design_log *l = d->design;
    snap_hash(s, l->hash);
    ser_size(s, &l->total);
    size_t n = l->len;
    ser_size(s, &n);
    if (s->reading && ser_ok(s) && n > EXP_DESIGN_KEEP)
        ser_fail(s);
    /* Oldest first; a load starts the ring at 0. */
    for (size_t i = 0; i < n && ser_ok(s); i++) {
        struct exp_design_change *c = &l->ring[s->reading ? i : (l->head + i) % EXP_DESIGN_KEEP];
        ser_i64(s, &c->seq);
        ser_i64(s, &c->ts_ms);
        ser_int(s, &c->amendment);
        ser_str(s, &c->reason, 1u << 20);
        snap_hash(s, c->previous);
        snap_hash(s, c->hash);
        if (s->reading && ser_ok(s)) {
            l->len++;
        } else if (s->reading) {
            free(c->reason); /* not counted in len: the free of the log misses it */
            c->reason = NULL;
        }
    }
}

int exp_design_note(struct exp *x, struct exp_data *d, const struct store_event *ev, char *why,
                    size_t len)
{
    int rc = 1;
    json_t *c = ev->text != NULL ? json_loads(ev->text, 0, NULL) : NULL;
    char *reason = NULL;
    if (!json_is_object(c)) {
        snprintf(why, len, "an edit that is not a JSON object");
        goto out;
    }
    if (d->design == NULL) {
        if ((d->design = calloc(1, sizeof *d->design)) == NULL) {
            rc = -1;
            goto out;
        }
        snprintf(d->design->hash, sizeof d->design->hash, "%s", exp_design_hash_initial(x));
    }
    struct exp_design_log *l = d->design;
    /* Edits logged before designs were hashed carry neither hash: their
     * step is derived the same way, from the change as logged. */
    /* Copied: deleting the member below frees the string. */
    char stored[DIGEST_SHA256_HEX + 2] = "";
    const char *sh = json_string_value(json_object_get(c, "design_hash"));
    if (sh != NULL)
        snprintf(stored, sizeof stored, "%s", sh);
    const char *prev = json_string_value(json_object_get(c, "previous_hash"));
    if (prev != NULL && strcmp(prev, l->hash) != 0) {
        snprintf(why, len, "an edit whose previous design hash is not the design's");
        goto out;
    }
    json_object_del(c, "design_hash");
    char next[DIGEST_SHA256_HEX + 1];
    if (hash_json(l->hash, c, next) != 0) {
        rc = -1;
        goto out;
    }
    if (stored[0] != '\0' && strcmp(stored, next) != 0) {
        snprintf(why, len, "an edit whose design hash does not match its change");
        goto out;
    }
    const char *r = json_string_value(json_object_get(c, "reason"));
    if (r != NULL && (reason = strdup(r)) == NULL) {
        rc = -1;
        goto out;
    }
    if (l->len == EXP_DESIGN_KEEP) {
        free(l->ring[l->head].reason);
        l->head = (l->head + 1) % EXP_DESIGN_KEEP;
        l->len--;
    }
    struct exp_design_change *ch = &l->ring[(l->head + l->len) % EXP_DESIGN_KEEP];
    l->len++;
    ch->seq = ev->seq;
    ch->ts_ms = ev->ts_ms;
    ch->amendment = json_is_true(json_object_get(c, "amendment"));
    ch->reason = reason;
    reason = NULL;
    memcpy(ch->previous, l->hash, sizeof ch->previous);
    snprintf(ch->hash, sizeof ch->hash, "%s", next);
    snprintf(l->hash, sizeof l->hash, "%s", next);
    l->total++;
    rc = 0;
out:
    free(reason);
    json_decref(c);
    return rc;
}

json_t *exp_design_json(struct exp *x, int blinded)
{
    const struct exp_design_log *l = x->d->design;
    json_t *list = json_array();
    for (size_t i = 0; l != NULL && i < l->len; i++) {
        const struct exp_design_change *ch = &l->ring[(l->head + i) % EXP_DESIGN_KEEP];
        char ts[CLOCK_RFC3339_LEN];
        clock_format_rfc3339(ch->ts_ms, ts, sizeof ts);
        json_t *c =
            json_pack("{s:I,s:s,s:s,s:b,s:s,s:s}", "seq", (json_int_t)ch->seq, "at", ts, "via",
                      ch->amendment ? "amendment" : "patch", "amendment", ch->amendment,
                      "previous_hash", ch->previous, "design_hash", ch->hash);
        /* The one place a change is rendered for a caller: a blinded
         * reader sees that it happened, when, and its hashes (the chain
         * from initial_hash to hash stays checkable), not why. */
        if (c != NULL && !blinded)
            json_object_set_new(c, "reason",
                                ch->reason != NULL ? json_string(ch->reason) : json_null());
        json_array_append_new(list, c);
    }
    return json_pack("{s:s,s:s,s:b,s:b,s:b,s:I,s:o}", "hash", exp_design_hash(x), "initial_hash",
                     exp_design_hash_initial(x), "frozen", x->cfg.design_frozen, "blinded",
                     x->cfg.design_blinded, "locked", exp_design_frozen(x), "changes",
                     (json_int_t)(l != NULL ? l->total : 0), "amendments", list);
}

int exp_design_burn_in(struct engine_config *e, json_t *v, json_t *errors)
{
    json_t *pulls = v, *blocks = NULL;
    if (json_is_object(v)) {
        static const char *const keys[] = {"pulls", "blocks", NULL};
        if (jv_object(v, keys, "constraints.burn_in", errors) != 0)
            return 1;
        pulls = json_object_get(v, "pulls");
        blocks = json_object_get(v, "blocks");
    }
    if (!json_is_integer(pulls) || json_integer_value(pulls) < 0 ||
        json_integer_value(pulls) > 1000000) {
        jv_error(errors, json_is_object(v) ? "constraints.burn_in.pulls" : "constraints.burn_in",
                 "must be an integer from 0 to 1000000");
        return 1;
    }
    e->burn_in = (uint32_t)json_integer_value(pulls);
    e->n_burn_in_blocks = 0;
    if (blocks == NULL || json_is_null(blocks))
        return 0;
    size_t n = json_array_size(blocks);
    if (!json_is_array(blocks) || n < 1 || n > ENGINE_MAX_BLOCKS || e->burn_in == 0) {
        jv_error(errors, "constraints.burn_in.blocks",
                 e->burn_in == 0 ? "needs pulls > 0"
                                 : "must be a list of 1 to 8 block sizes (pulls per arm)");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(blocks, i);
        if (!json_is_integer(m) || json_integer_value(m) < 1 ||
            json_integer_value(m) > ENGINE_MAX_BLOCK_MULT) {
            jv_error(errors, "constraints.burn_in.blocks",
                     "each block size is an integer from 1 to 64 (pulls per arm: a block is "
                     "m·K assignments)");
            return 1;
        }
        e->burn_in_blocks[i] = (uint8_t)json_integer_value(m);
    }
    e->n_burn_in_blocks = n;
    return 0;
}
