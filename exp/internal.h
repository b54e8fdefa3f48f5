/*
 * internal.h — what the runtime's own files share (the .c files of exp/ only; the
 * contract is exp.h). The parts:
 *
 *   registry.c  the sharded registry, references, create/delete, startup
 *               load, the expiry sweeper, accessors
 *   table.c     the in-memory tables of one experiment: assignments by
 *               seq, sticky units not yet committed, the expiry FIFO
 *   events.c    events applied to the engine and numbered into a batch
 *               (assign, reward, observe, state, expiry), assignment ids
 *   commit.c    submission to the writer, commit bookkeeping, the reload
 *               after a failed write (exp_prepare_locked)
 *   replay.c    rebuilding an experiment's data from its log
 *   history.c   the decimated history dashboards draw
 *   config.c    the configuration (config.h)
 *   edits.c     edits of a live experiment (PATCH: name, budget, TTL) as
 *               events, applied live and replayed
 *   corrections.c  a rewarded pull's value replaced: the data rebuilt
 *               from the log with the corrected value
 *   webhooks.c  the webhooks' configuration, and the hook that turns a stop,
 *               a bandit done, a constraint or a pause into outbox rows of
 *               the batch that caused it
 */
#ifndef BANDITD_EXP_INTERNAL_H
#define BANDITD_EXP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "exp/exp.h"

struct ser; /* base/ser.h */

/* A stale experiment waits this long for its queued writes before a reload. */
#define EXP_RELOAD_WAIT_MS 1000

/* Per-experiment data that a reload replaces as a whole. */
struct exp_data {
    struct engine *eng;
    int64_t seq; /* last event applied */
    enum exp_state state;
    /* assignments in memory: open addressing on seq (linear probing) */
    struct exp_assignment **tab;
    size_t tab_cap, tab_n;
    /* sticky units of uncommitted assignments: open addressing, value = seq */
    int64_t *utab;
    size_t utab_cap, utab_n;
    /* pending assignments in creation order (= expiry order: one TTL per
     * experiment), with answered ones not yet let go: at most 2·pending +
     * EXP_FIFO_SLACK after a push (table.c). Pointers, not seqs: a walk
     * (a snapshot's, an expiry's) reads each in order without a table
     * lookup; an assignment in it is freed only once it leaves it. */
    struct exp_assignment **fifo;
    size_t fhead, flen, fcap;
    size_t pending;
    /* history */
    struct exp_history_point *hist; /* grows to history_points (most
                                     * experiments never fill it) */
    size_t hlen, hcap;
    uint64_t hstride, hnext;
    unsigned char *scratch;   /* kmax entries */
    unsigned char *concluded; /* per bandit: done by its own rule before a stop by hand */
    int need_reset;           /* next submission clears the store's failure mark */
    struct exp_watch *watch;  /* what webhooks announced (webhooks.c); NULL: none configured */
    /* What edits (edits.c) changed of the configuration: the configuration
     * itself never changes (read without the lock); these are read under it. */
    char *name;             /* owned; NULL: the configuration's */
    int64_t ttl_s;          /* the assignment TTL now */
    size_t edits;           /* edits applied */
    struct exp_mark *marks; /* EXP_MARKS entries once the first is made; a ring */
    size_t mhead, mlen;
    struct exp_design_log *design; /* design.c: the hash in force and the latest
                                    * changes; NULL until the first edit */
    char chain[65];                /* audit.c: the hash chain after the last event; "" before any */
    int64_t snap_seq;              /* snapshot.c: the seq of the latest snapshot written or
                                    * loaded (0: none) */
    int64_t loaded_from;           /* replay.c: the seq of the snapshot this data was loaded
                                    * from (0: the whole log), for the logs */
    int64_t corrected_from;        /* replay.c: the seq of the earliest reward (or default
                                    * reward) a correction replaced (0: none); a correction's
                                    * rebuild starts from a snapshot before it */
};

struct exp {
    char id[EXP_ID_MAX + 1];
    int64_t rowid;
    int64_t created_ms;
    uint32_t token;
    pthread_mutex_t mu;
    pthread_cond_t idle; /* signalled when inflight drops to 0 (with mu) */
    atomic_int refs;
    atomic_int stale; /* a write failed: reload before the next request */
    atomic_uint gen;  /* increments at each reload */
    int inflight;     /* submissions queued whose on_commit has not run (mu) */
    int deleting;     /* a delete is queued: requests see the experiment gone (mu) */
    int deleted;      /* the delete committed (mu) */
    int draining;     /* a correction waits for every write to commit: requests wait (mu) */
    atomic_int visible;
    /* This daemon owns it (store.h, ownership): it may write and serve it.
     * Always 1 on a store of one daemon (SQLite). Cleared when a write is
     * refused as NOTOWNER; set again by a claim in exp_prepare_locked,
     * which then reloads the experiment from the database. */
    atomic_int owned;
    char owner[128]; /* (mu) the owner's address, from the last refused claim */
    struct exp_config cfg;
    char design0[65];  /* the design's hash at creation, computed when x is made */
    char *config_text; /* cfg.json serialised, as stored */
    struct exp_data *d;
    char corrupt[256]; /* why its log cannot be served; "" when it can (mu) */
    /* Time of the latest event applied (its creation before any): written
     * under mu, read without it (exp_last_event_ms, the metrics' ranking). */
    atomic_int_fast64_t last_event_ms;
    /* The largest δᶜ over the bandits, for the version it was computed at
     * (mu): a scrape recomputes only what changed since the last one. */
    uint64_t dc_version;
    double dc_max;
    int dc_valid;
    struct exp *next; /* shard bucket chain */
};

/* The runtime's process-wide state (registry.c). */
struct exp_runtime {
    struct store *store;
    struct exp_limits lim;
    atomic_uint_fast64_t pending_total;
    atomic_uint_fast64_t expired_total;
    atomic_size_t corrupt;                /* experiments refused for a corrupt log */
    atomic_size_t rss;                    /* resident bytes at the last measurement */
    atomic_uint_fast64_t pending_at_rss;  /* pending_total then */
    atomic_uint_fast64_t snapshot_loads;  /* loads that started from a snapshot (replay.c) */
    atomic_uint_fast64_t events_replayed; /* events replayed by loads */
};
extern struct exp_runtime exp_rt;

/* --- registry.c ------------------------------------------------------------------- */

/* Forget x (drops the registry's reference). */
void exp_registry_remove(struct exp *x);
/* Measure the resident memory now (registry.c; the sweeper does it every
 * second, creations before they allocate). */
void exp_memory_measure(void);

/* Refuse x from now on: its log is corrupt (why: the replay's message).
 * Logged as an error and counted. */
void exp_mark_corrupt(struct exp *x, const char *why);

/* --- table.c: assignments by seq, uncommitted units, the expiry FIFO -------------- */

struct exp_assignment *exp_tab_find(const struct exp_data *d, int64_t seq);
/* Make room for one more entry (0, or −1 out of memory). */
int exp_tab_reserve(struct exp_data *d);
/* Insert a (owned by the table from now); −1 when the table cannot grow. */
int exp_tab_insert(struct exp_data *d, struct exp_assignment *a);
void exp_tab_remove(struct exp_data *d, int64_t seq);
/* Remove a (not pending) from the table and free it, or, while the FIFO
 * still holds it, mark it to be freed when the FIFO lets go of it. */
void exp_tab_drop(struct exp_data *d, struct exp_assignment *a);

int64_t exp_utab_find(const struct exp_data *d, const char *unit);
/* Make room for one more unit (0, or −1). */
int exp_utab_reserve(struct exp_data *d);
/* The caller reserved room beforehand; the assignment of seq must be in
 * the table (its unit is the key). */
/* Insert or replace the unit's entry (its latest assignment). */
void exp_utab_insert(struct exp_data *d, int64_t seq, const char *unit);
/* Remove the unit's entry if it is still seq's. */
void exp_utab_remove(struct exp_data *d, const char *unit, int64_t seq);

/* Answered assignments the FIFO may hold beyond as many as are pending
 * before a trim compacts it (table.c). */
#define EXP_FIFO_SLACK 64
/* Let go of the assignments no longer pending (order kept) once they
 * outnumber the pending ones by EXP_FIFO_SLACK: freeing those the table
 * dropped. Cost amortised over the answers. */
void exp_fifo_trim(struct exp_data *d);
/* Make room for one more entry (0, or −1 out of memory); trims first. */
int exp_fifo_reserve(struct exp_data *d);
/* Append a (pending, in the table: borrowed, the table owns it). */
int exp_fifo_push(struct exp_data *d, struct exp_assignment *a);
/* The i-th entry from the head (i < d->flen), borrowed. */
struct exp_assignment *exp_fifo_at(const struct exp_data *d, size_t i);
/* Let go of the head (d->flen > 0), freeing it if the table dropped it. */
void exp_fifo_pop(struct exp_data *d);

void exp_assignment_free(struct exp_assignment *a);
/* Drop a from the table once it is final: its outcome known and every
 * event about it committed. */
void exp_drop_if_final(struct exp_data *d, struct exp_assignment *a);
/* New data for cfg: an engine, empty tables. NULL with a message in err. */
struct exp_data *exp_data_new(const struct exp_config *cfg, char *err, size_t errlen);
void exp_data_free(struct exp_data *d);

/* --- events.c ---------------------------------------------------------------------- */

/* An event of time ts was applied to x (lock held, or x not yet visible). */
void exp_touch(struct exp *x, int64_t ts);

/* Apply a state to d's engine (an event, or its replay). */
void exp_apply_state(struct exp_data *d, enum exp_state s);
/* Expire x's due assignments into b (FIFO order = expiry order). */
void exp_expire_due(struct exp *x, struct exp_batch *b, int64_t now_ms);
/* Number the next event of x (kind, time ts) and append its op to b
 * (bandit, arm −1, value NaN), or NULL on out of memory (nothing numbered). */
struct store_op *exp_event_op(struct exp *x, struct exp_batch *b, int kind, int64_t ts);
/* The check of an assignment created at created_ms (exp_aid.check). */
uint32_t exp_assignment_check(int64_t created_ms);
/* A copy of s owned by b (alive until b is freed), or NULL. */
const char *exp_batch_str(struct exp_batch *b, const char *s);
/* Append a store op to b (zeroed), or NULL on out of memory. */
struct store_op *exp_batch_op(struct exp_batch *b);
/* The token of assignment ids: differs between a deleted experiment and
 * its re-creation under the same id, yet survives restarts. */
uint32_t exp_make_token(const char *id, int64_t created_ms);
/* FNV-1a of an id, from the registry's historical basis. */
uint64_t exp_hash_id(const char *id);

/* --- commit.c ---------------------------------------------------------------------- */

/* Queue b for the writer. owns: the runtime frees b after its commit.
 * is_delete: the batch deletes the experiment (it resets the store's
 * failure mark of the key). Same contract as exp_submit_locked. */
int exp_submit(struct exp *x, struct exp_batch *b, int owns, int is_delete, store_done_fn done,
               void *arg);

/* --- replay.c ---------------------------------------------------------------------- */

/* store_load_events callback results that stop a replay. */
#define EXP_REPLAY_MISMATCH 1 /* the policy chose differently from the log */
#define EXP_REPLAY_CORRUPT 2  /* an event the log cannot hold */

/* Build x's data from its log on disk: new data, or NULL with a message
 * ("event log corrupt at seq N (why)" with *is_corrupt = 1 when the
 * log itself is wrong: a gap, an event of an arm or an assignment that does
 * not exist, a value out of range, an unknown kind or state). */
struct exp_data *exp_replay_all(struct exp *x, char *err, size_t errlen, int *is_corrupt);

/* A correction: assignment ref's reward is value from event seq on; at:
 * the event that reported the value it replaces (0: not known). */
struct exp_correction {
    int64_t ref, seq, at;
    double value;
};
/* The same with the corrections of the log plus extra[0..nextra), the
 * ones being made (their seqs: the next events', their `at` known):
 * corrections.c's rebuild, with x's data drained and not read meanwhile.
 * It starts from the latest usable snapshot before both the earliest `at`
 * and x->d->corrected_from (the state there is the full replay's: no
 * correction reaches back before it) and replays the events after it,
 * and replays the whole log when there is none (or the tail does not
 * replay). */
struct exp_data *exp_replay_with(struct exp *x, const struct exp_correction *extra, size_t nextra,
                                 char *err, size_t errlen, int *is_corrupt);

/* --- snapshot.c -------------------------------------------------------------------- */

/* A snapshot of x's data d as of d->seq, ready to write (its row), or NULL
 * (out of memory, or a state that does not serialize). The result is new:
 * exp_snapshot_free. */
struct exp_snapshot *exp_snapshot_make(struct exp *x, struct exp_data *d);
void exp_snapshot_free(struct exp_snapshot *sn);
/* Its row for STORE_OP_SNAPSHOT, borrowed from sn. */
const struct store_snapshot *exp_snapshot_row(const struct exp_snapshot *sn);
/* Queue sn on its own, behind its experiment's writes queued so far and
 * refused while one of them failed (store_submit_aside: in a transaction
 * of its own; its failure fails nothing else): STORE_OK, and done(sn, err)
 * runs once it committed or failed (it frees sn); else sn is still the
 * caller's. For data that is the disk's (a load's); live data goes through
 * exp_snapshot_capture. */
int exp_snapshot_submit(struct exp_snapshot *sn, store_done_fn done);
/* Whether d has gone --snapshot-every events past its latest snapshot, and
 * at least half as many as its FIFO holds (a snapshot's cost is in those). */
int exp_snapshot_due(const struct exp *x, const struct exp_data *d);
/* x locked, right after a batch was queued (exp_submit), so every event of
 * x's data is queued: when x is due, copy its data into a snapshot's bytes
 * (the one O(state) step under the lock) and keep it for this thread's
 * exp_snapshot_flush. Best effort: one that cannot be made is skipped
 * (logged); a thread holds one at a time. */
void exp_snapshot_capture(struct exp *x);
/* x unlocked by this thread (exp_unlock): the snapshot it captured of x,
 * if any, checksummed without the lock, then queued (exp_snapshot_submit,
 * x locked a moment) unless x was reloaded, went stale or is being deleted
 * since: a snapshot never covers an event the disk lost. A crash before
 * it is written loses only it: the next load starts from the previous one
 * and replays a longer tail. */
void exp_snapshot_flush(struct exp *x);
/* A snapshot in b when an event came since x's latest one (the shutdown's
 * checkpoint, exp_registry_checkpoint), owned by b from then on. Best
 * effort: one that cannot be made is skipped (logged). */
void exp_snapshot_attach(struct exp *x, struct exp_batch *b);
/* New data for x from a stored snapshot, or NULL with why (another
 * format, build, configuration or design, a bad checksum, bytes that do
 * not parse): the caller replays the log in full. */
struct exp_data *exp_snapshot_load(struct exp *x, const struct store_snapshot *sn, char *why,
                                   size_t len);

/* --- webhooks.c -------------------------------------------------------------------- */

/* Parse the create body's "webhooks" (v may be NULL: none) into c. 0, 1
 * after appending {"field", "message"} to errors, −1 out of memory. */
int exp_webhooks_parse(struct exp_config *c, json_t *v, json_t *errors);
/* Add "webhooks" (fingerprints, no secrets) to c->json when there are
 * any. 0 or −1. */
int exp_webhooks_normalise(struct exp_config *c);
void exp_webhooks_free(struct exp_config *c);

/* What the webhooks of one experiment's data announced so far: a new
 * watch for cfg, or NULL out of memory. */
struct exp_watch *exp_watch_new(const struct exp_config *cfg);
void exp_watch_free(struct exp_watch *w);
/* After a replay: what the log holds was announced when it was written
 * (its outbox rows are in the same transactions), so the watch starts
 * from the replayed state. */
void exp_watch_sync(const struct exp *x, struct exp_data *d);
/* At each submission, after the batch's events were applied: append an
 * outbox op to b for every transition since the last submission (stop,
 * bandit done, burn-in complete, pause, resume) and each endpoint that
 * subscribed to it. 0, or −1 out of memory (nothing may be submitted
 * then: the caller marks x stale, so the reload forgets the events and
 * the transition happens, and is announced, again). */
int exp_watch_emit(struct exp *x, struct exp_batch *b);

/* --- edits.c ---------------------------------------------------------------------- */

/* Replay an EDIT event (its text, the change as logged) into d. 0; 1 with
 * a message in why when the log holds an edit the experiment cannot take
 * (the replay calls the log corrupt); −1 out of memory. */
int exp_replay_edit(struct exp *x, struct exp_data *d, const struct store_event *ev, char *why,
                    size_t len);

/* --- design.c --------------------------------------------------------------------- */

struct exp_design_log;
/* Parse the create body's "design" (v may be NULL) into c: 0, or 1 after
 * appending {"field", "message"} to errors. */
int exp_design_parse(struct exp_config *c, json_t *v, json_t *errors);
/* Add "design" to c->json. 0 or −1. */
int exp_design_normalise(struct exp_config *c);
/* Before an EDIT's change (an object, modified) is logged: add
 * "amendment": true when it is one, "previous_hash" (the design's now) and
 * "design_hash" (the design's after it). 0, or −1 out of memory. */
int exp_design_seal(struct exp *x, json_t *change, int amendment);
/* An EDIT event ev was applied to d (live or replayed): check its hashes
 * and step d's design hash. 0; 1 with a message in why when its hashes do
 * not match (the replay calls the log corrupt); −1 out of memory. */
int exp_design_note(struct exp *x, struct exp_data *d, const struct store_event *ev, char *why,
                    size_t len);
void exp_design_free(struct exp_design_log *l);
/* The design hash in force in d (exp_design_hash of x's data d). */
const char *exp_design_hash_in(struct exp *x, const struct exp_data *d);
/* Save or load (a fresh d's) design log: snapshot.c. */
void exp_design_snap(struct exp_data *d, struct ser *s);
/* constraints.burn_in (v): an integer N (pulls per arm, least served
 * first) or {"pulls": N, "blocks": [m, …]} (permuted blocks of m pulls per
 * arm, m drawn from the list) into e. 0, or 1 after appending to errors. */
int exp_design_burn_in(struct engine_config *e, json_t *v, json_t *errors);

/* --- audit.c ---------------------------------------------------------------------- */

/* The chain after event ev, from prev (64 hex digits): into out. 0 or −1. */
int exp_audit_next(const char *prev, const struct store_event *ev, char out[65]);
/* Replay: step d's chain over ev (as read from the log: its stored value
 * when it has one). 0 or −1. */
int exp_audit_step(struct exp *x, struct exp_data *d, const struct store_event *ev);
/* Before b is queued: stamp its events with b's caller and their chain
 * values (copies owned by b), stepping x's chain. 0, or −1 out of memory
 * (x must then be reloaded: its chain may have moved). */
int exp_audit_seal(struct exp *x, struct exp_batch *b);

/* --- history.c --------------------------------------------------------------------- */

/* Remember an edit or a correction (its event ev) for the history: best
 * effort, like the points. */
void exp_mark_add(struct exp_data *d, const struct store_event *ev);

/* Record a history point if the pulls reached the next mark. */
void exp_history_maybe_record(struct exp *x, int64_t ts_ms);
void exp_history_free(struct exp_data *d);
/* Save or load (into a fresh d) the history points and the marks:
 * snapshot.c. A load fails s when the points were kept under another
 * history_points (the thinning would go otherwise). */
void exp_history_snap(const struct exp *x, struct exp_data *d, struct ser *s);

#endif
