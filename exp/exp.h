/*
 * exp.h — the experiment runtime: live experiments (configuration, engine,
 * outstanding assignments, history) and the registry of all of them. The
 * endpoint handlers (api/) drive it; it drives the engine (policies/) and
 * the event log (store/), and knows nothing of HTTP.
 *
 * Concurrency: each experiment has its own mutex (exp_lock/exp_unlock); the
 * registry is sharded by id, so no lock is global on the hot path. A caller
 * looks an experiment up (exp_get: a new reference), locks it, calls
 * exp_prepare_locked, applies its request with the exp_ev_* functions
 * (which number the events in the order they were applied and append them
 * to a batch), queues the batch with exp_submit_locked, unlocks, and drops
 * its reference with exp_put.
 *
 * Durability: events reach the engine before they reach the disk. If a
 * write fails (disk full), the writer fails every later write of the same
 * experiment too and marks it stale; the next request reloads it from disk
 * (the committed prefix of its log), so memory never keeps what the disk
 * lost. A write refused before it was queued (queue full, no memory) marks
 * it stale too, and nothing more is queued for it until the reload; the
 * reload waits until every write queued before is complete, so memory never
 * lacks an event the disk committed either. See store.h for the ordering
 * guarantee this relies on.
 *
 * The configuration (parsing, validation, the stored form) is exp/config.h.
 */
#ifndef BANDITD_EXP_EXP_H
#define BANDITD_EXP_EXP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exp/config.h"
#include "policies/engine.h"
#include "store/store.h"

#define EXP_MAX_UNIT 256

/* --- states ------------------------------------------------------------------------ */

enum exp_state { EXP_RUNNING = 0, EXP_PAUSED = 1, EXP_STOPPED = 2 };
#define EXP_N_STATES 3

/* "running" | "paused" | "stopped": the names the API, the event log and
 * the metrics use. */
const char *exp_state_name(enum exp_state s);
/* The state named `name`: 0 and *out, or −1. */
int exp_state_parse(const char *name, enum exp_state *out);

/* --- assignments ------------------------------------------------------------------- */

enum exp_astatus {
    EXP_A_PENDING = 0,
    EXP_A_REWARDED = 1,
    EXP_A_EXPIRED = 2,
    EXP_A_EXPLOIT = 3,
};

/* One assignment known in memory: pending, or not yet committed. */
struct exp_assignment {
    int64_t seq;
    int64_t expires_ms;
    int64_t created_ms;
    int32_t bandit;
    int32_t arm;
    double value;              /* reward (user units) once rewarded/expired with default */
    double late;               /* a late reward recorded after its expiry; NaN when none */
    uint8_t status;            /* enum exp_astatus */
    uint8_t committed;         /* the ASSIGN event is on disk */
    uint8_t outcome_committed; /* the outcome event (if any) is on disk */
    uint8_t released;          /* EXPIRED by a release (exp_ev_release_id) */
    uint8_t queued;            /* exp/ only: in the expiry FIFO (table.c) */
    uint8_t dropped;           /* exp/ only: out of the table, freed once the FIFO lets go */
    char *unit;                /* owned; NULL when none */
};

struct exp_history_point {
    uint64_t pulls;
    int64_t ts_ms;
    float *delta_c;      /* per bandit */
    float *rho;          /* per bandit */
    float *bound;        /* per bandit: the stop rule's error bound (NaN: none) */
    uint32_t *arm_pulls; /* all arms, bandit after bandit */
};

struct exp;

/* --- registry ------------------------------------------------------------------------ */

/* Initialise the registry over an open store (borrowed for its lifetime;
 * NULL: parse configurations only, as the fuzz targets do). */
int exp_registry_init(struct store *st, const struct exp_limits *lim);
/* Load every stored experiment, replay its log, and start the expiry
 * sweeper. Returns 0 or −1 with a message in err. */
int exp_registry_load(char *err, size_t errlen);
/* At a clean shutdown, after the HTTP server stopped and before
 * exp_registry_free: queue a snapshot of every experiment that had events
 * since its latest one (exp/snapshot.c), so that the next start replays
 * nothing. The store's close commits them. */
void exp_registry_checkpoint(void);
/* Drop every experiment (shutdown, after the HTTP server stopped). */
void exp_registry_free(void);
/* The limits the registry was initialised with. */
const struct exp_limits *exp_limits(void);
/* The store, for read paths (export). */
struct store *exp_store(void);

/* Number of experiments. exp_list returns up to `limit` experiments with
 * id > after (NULL: from the start), sorted by id, each a new reference the
 * caller must exp_put. */
size_t exp_count(void);
size_t exp_list(const char *after, size_t limit, struct exp **out);
/* Up to cap experiments in no order (no sort: what a pass over all of
 * them needs, /metrics), each a new reference the caller must exp_put. */
size_t exp_all(struct exp **out, size_t cap);
/* Pending assignments of all experiments (approximate). */
uint64_t exp_pending_total(void);
/* Assignments expired unanswered since start. */
uint64_t exp_expired_total(void);
/* The resident memory last measured (bytes; 0 when unknown) and whether
 * the cap is reached: creations then fail with EXP_ERR_MEMORY, and so do
 * new assignments (each counted at its measured cost until the next
 * measurement, so a burst cannot run far past the cap); rewards, reads and
 * deletes, which free or keep memory, go on. */
size_t exp_memory_used(void);
int exp_memory_full(void);

/* New reference to experiment id, or NULL. On a shared store an id not
 * registered here is looked up in the database (another daemon created
 * it) and registered, not owned. */
struct exp *exp_get(const char *id);
void exp_put(struct exp *x);

/* --- life cycle ----------------------------------------------------------------------- */

enum exp_err {
    EXP_OK = 0,
    EXP_ERR_EXISTS = 1, /* id taken */
    EXP_ERR_LIMIT = 2,  /* too many experiments, or too many pending assignments */
    EXP_ERR_STORE = 3,  /* the store rejected the write, or cannot be read */
    EXP_ERR_NOMEM = 4,
    EXP_ERR_GONE = 5,          /* deleted meanwhile */
    EXP_ERR_STOPPED = 6,       /* the transition is not allowed: a stop is final */
    EXP_ERR_CORRUPT = 7,       /* its event log is corrupt: refused until repaired (exp_corrupt) */
    EXP_ERR_MEMORY = 8,        /* the memory cap (max_memory) is reached */
    EXP_ERR_NO_CONCLUSION = 9, /* paused or stopped early, and the fallback is none */
    EXP_ERR_REFUSED = 10,      /* an edit or correction the experiment cannot take (why given) */
    EXP_ERR_NOT_FOUND = 11,    /* no such assignment */
    EXP_ERR_NOTOWNER = 12,     /* another daemon owns it (exp_owner names it) */
};

/* Create and register experiment cfg (consumed: ownership moves in, also on
 * failure). The id is reserved at once (a concurrent create of the same id
 * gets EXP_ERR_EXISTS, one beyond max_experiments EXP_ERR_LIMIT) but the
 * experiment stays invisible to exp_get until its configuration is
 * committed; done(arg, store_err) runs on the writer thread after that
 * commit (or failure, which unregisters it). On EXP_OK, *out is a new
 * reference and done will be called once; otherwise done is not called.
 * actor and request_id (NULL: none; borrowed until done) name who asked,
 * in the audit log's record of the creation (store.h). */
int exp_create(struct exp_config *cfg, const char *actor, const char *request_id,
               store_done_fn done, void *arg, struct exp **out);

/* --- under the experiment's lock ---------------------------------------------------- */

void exp_lock(struct exp *x);
void exp_unlock(struct exp *x);

/* Several daemons on one database (store.h, ownership): an experiment
 * owned by another daemon is registered here too (loaded at start, or
 * found in the database by exp_get when another daemon created it since),
 * but served only once this daemon owns it. exp_prepare_locked claims it
 * (a takeover when its owner is gone) and reloads it from the database, or
 * returns EXP_ERR_NOTOWNER; exp_owner then names the owner's address (""
 * when unknown). With x locked. */
const char *exp_owner(const struct exp *x);
/* Whether this daemon owns x (always 1 on SQLite). */
int exp_owned(const struct exp *x);
/* With x locked, for a listing through a daemon that does not own x: bring
 * x's state up to the database's (a replay when its log changed), without
 * claiming it. EXP_OK, EXP_ERR_GONE (deleted) or EXP_ERR_STORE. */
int exp_refresh_locked(struct exp *x);
/* Register the experiments other daemons created since this one loaded
 * (a shared store only; a no-op otherwise). 0, or a store error. */
int exp_registry_sync(void);

/* Call with the lock held, first thing: reloads the experiment from disk if
 * an earlier write failed (first waiting, up to a second, with the lock
 * released, for its writes still queued), expires due assignments (queuing
 * their events). Returns EXP_OK, EXP_ERR_GONE (deleted, or a delete is
 * queued), EXP_ERR_CORRUPT (its log is corrupt: only a delete may follow)
 * or EXP_ERR_STORE (reload failed or its writes are still queued, or the
 * expiry write was refused: reply 503, nothing may be queued), or, on a
 * shared store, EXP_ERR_NOTOWNER (a live daemon owns it: see above). */
int exp_prepare_locked(struct exp *x, int64_t now_ms);
/* Why x's event log cannot be served ("event log corrupt at seq N
 * (...)"), or NULL. An experiment whose log a replay found corrupt stays
 * registered, refused, so that its id is not taken and it can be deleted;
 * the others are served. */
const char *exp_corrupt(const struct exp *x);
/* Experiments refused for a corrupt log. */
size_t exp_corrupt_count(void);

/* The configuration never changes once created: it may be read with a
 * reference alone, without the lock. What edits change (name, budget, TTL)
 * is read with exp_name, exp_budget and exp_ttl_s, under the lock. */
const struct exp_config *exp_cfg(const struct exp *x);
const char *exp_id(const struct exp *x);
int64_t exp_created_ms(const struct exp *x);
int64_t exp_rowid(const struct exp *x);

struct engine *exp_engine(struct exp *x);
enum exp_state exp_get_state(const struct exp *x);
/* The rule that stopped it ("delta_c" | "glr" | "glr-heuristic" | "rho" |
 * "policy"; goal control: "superiority" | "futility"), or "budget" |
 * "manual"; NULL while running. */
const char *exp_stop_reason(const struct exp *x);
/* Bandit b's stop rule against its own threshold (engine_bandit_stop):
 * {rule, proven, fires_when, evidence, threshold, error_bound, fired}, the
 * "stop" object of GET .../status and of the webhook payloads (one
 * definition for both). New reference, or NULL. */
json_t *exp_stop_json(const struct engine *e, size_t b);
int64_t exp_last_seq(const struct exp *x); /* events applied so far */
/* The seq of the snapshot x's data was rebuilt from at its last load or
 * correction, 0 when from the whole log (lock held; the logs, tests). */
int64_t exp_loaded_from(const struct exp *x);
uint64_t exp_version(const struct exp *x); /* changes whenever status may change */
size_t exp_pending_count(const struct exp *x);
/* 1 while some write of x is queued and not yet committed (or failed):
 * what memory shows of x may then still be lost. */
int exp_writes_pending(const struct exp *x);

/* Time of x's latest event, ms since the epoch (its creation before any
 * event). Read without the lock: what /metrics ranks experiments by. */
int64_t exp_last_event_ms(const struct exp *x);

/* One experiment's figures in a few numbers (/metrics, the list endpoint). */
struct exp_summary {
    enum exp_state state;
    const char *stop_reason; /* exp_stop_reason: NULL while running */
    uint64_t pulls;          /* rewarded pulls */
    uint64_t pending;        /* pulls awaiting their reward */
    uint64_t handed_out;     /* pulls handed out: what a budget counts */
    uint64_t budget;         /* 0: fixed confidence */
    size_t bandits, bandits_done;
    double delta;   /* the goal's δ */
    double delta_c; /* the largest δᶜ over the bandits: every bandit's
                     * recommendation must hold */
};
/* Fill *out (lock held; while a correction rebuilds x it waits, the lock
 * released, until the rebuild is done). δᶜ is computed once per exp_version
 * and cached, so a poller that reads an unchanged experiment again costs no
 * statistics. */
void exp_summary_locked(struct exp *x, struct exp_summary *out);

/* Rescale a reward in user units to [0, 1]. */
double exp_scale(const struct exp *x, double v);
/* Width of the reward range (to scale bounds back). */
double exp_range(const struct exp *x);

/* Assignment ids: "<token>-<seq>-<check>". The token differs between a
 * deleted experiment and its re-creation under the same id; the check (32
 * bits of the assignment's creation time, hashed) differs between an
 * assignment a power loss took back (--sync normal) and the one handed out
 * again under its seq, so that a late reward of the lost one is never
 * credited to the new one. Ids without a check (versions before 0.6) are
 * still accepted. */
struct exp_aid {
    int64_t seq;
    uint32_t check;
    int has_check;
};
void exp_assignment_id(const struct exp *x, int64_t seq, int64_t created_ms, char *buf, size_t len);
/* 0 and *out, or −1 if id is not one of this experiment's. */
int exp_parse_assignment_id(const struct exp *x, const char *id, struct exp_aid *out);

/* History (bounded, decimated): number of points and the i-th. */
size_t exp_history_len(const struct exp *x);
const struct exp_history_point *exp_history_at(const struct exp *x, size_t i);

/* The latest edits and corrections (at most EXP_MARKS, oldest first), for
 * the history's chart: where in the run the experiment was changed. */
#define EXP_MARKS 32
struct exp_mark {
    int64_t seq, ts_ms;
    uint64_t pulls; /* rewarded pulls when it happened */
    int kind;       /* STORE_EV_EDIT or STORE_EV_CORRECT */
    char *text;     /* owned: the edit's change (JSON), the correction's reason */
    int64_t ref;    /* a correction's assignment seq; 0 for an edit */
};
size_t exp_marks_len(const struct exp *x);
const struct exp_mark *exp_mark_at(const struct exp *x, size_t i);

/* --- events and writes ------------------------------------------------------------- */

/* The store writes one request makes. Each exp_ev_* applies its event to the
 * engine and the in-memory tables and appends its store op here (seq
 * numbered); nothing is written until exp_submit_locked. A batch may live
 * on the stack or the heap; it must stay alive until its completion ran. */
struct exp_batch {
    struct store_op *ops; /* owned by the batch */
    size_t n, cap;
    char **strings; /* owned copies the ops point to */
    size_t nstr, capstr;
    int64_t *assign_seqs; /* assignments created by this batch */
    size_t nassign, capassign;
    int64_t *outcome_seqs; /* assignments finalised by this batch */
    size_t noutcome, capoutcome;
    /* Who asked and the request's id, recorded on each of its events (the
     * audit trail, audit.c); NULL: the daemon itself. Set with
     * exp_batch_caller; owned by the batch. */
    const char *actor, *request_id;
    /* A snapshot riding the batch (exp/snapshot.c), owned; NULL: none. */
    struct exp_snapshot *snap;
};

void exp_batch_init(struct exp_batch *b);
/* Record actor and request id (either may be NULL; copied) on b's events.
 * 0, or −1 out of memory (b unchanged). */
int exp_batch_caller(struct exp_batch *b, const char *actor, const char *request_id);
void exp_batch_free(struct exp_batch *b);

/* Hand out an assignment. bandit < 0: the policy chooses. unit may be NULL.
 * Fills *out (borrowed pointer into the table, valid while locked). While
 * the experiment cannot explore and has no conclusion to serve in the
 * bandit (paused, or stopped by hand before its rule fired), the
 * configured fallback is served (the control arm, or the current best), or
 * nothing: EXP_ERR_NO_CONCLUSION. Returns EXP_OK, EXP_ERR_LIMIT (too many
 * pending), EXP_ERR_MEMORY (the memory cap), EXP_ERR_NO_CONCLUSION,
 * EXP_ERR_NOMEM. */
int exp_ev_assign(struct exp *x, struct exp_batch *b, int bandit, const char *unit, int64_t now_ms,
                  const struct exp_assignment **out);

/* What a returning sticky unit gets (config.h, units): its latest
 * assignment in the bandit (any bandit when bandit < 0), unless it expired
 * unrewarded (after_expiry "new") or the bandit has concluded since and it
 * was an exploration pull (after_stop "recommendation"). Returns 1 and
 * fills *out (a copy; out->unit is NULL) when the unit keeps it, 0 when it
 * needs a new assignment (exp_ev_assign with the unit), −1 on a store
 * error. */
int exp_unit_lookup(struct exp *x, const char *unit, int bandit, struct exp_assignment *out);

/* Outcome of a reward report. */
enum exp_reward_status {
    EXP_R_ACCEPTED = 0,
    EXP_R_DUPLICATE = 1,
    EXP_R_CONFLICT = 2,
    EXP_R_UNKNOWN = 3,
    EXP_R_EXPIRED = 4,
    EXP_R_ERROR = 5, /* store read failed, or out of memory */
};
#define EXP_N_REWARD_STATUS 6
const char *exp_reward_status_name(enum exp_reward_status s);

/* Report reward v (user units, validated by the caller) for assignment seq. */
enum exp_reward_status exp_ev_reward(struct exp *x, struct exp_batch *b, int64_t seq, double v,
                                     int64_t now_ms);
/* The same for a parsed assignment id: unknown when its check names
 * another assignment than the one now at its seq. */
enum exp_reward_status exp_ev_reward_id(struct exp *x, struct exp_batch *b,
                                        const struct exp_aid *id, double v, int64_t now_ms);
/* Outcome of a release: a leased assignment that no visitor got, given
 * back (assignment blocks, docs/contract.md). */
enum exp_release_status {
    EXP_L_RELEASED = 0,  /* it was pending: it counts nowhere now */
    EXP_L_DUPLICATE = 1, /* released before */
    EXP_L_REWARDED = 2,  /* its reward came first: kept */
    EXP_L_EXPIRED = 3,   /* it expired first */
    EXP_L_UNKNOWN = 4,
    EXP_L_ERROR = 5, /* store read failed, or out of memory */
};
const char *exp_release_status_name(enum exp_release_status s);
/* Release assignment id: a pending pull is given back as if never handed
 * out — no reward (not even default_reward), it frees its place in the
 * budget and in pending — logged as an EXPIRE flagged STORE_XF_RELEASED.
 * An exploit assignment counts nowhere: released, no event. A reward that
 * comes later is a late one (recorded for the audit, not counted). */
enum exp_release_status exp_ev_release_id(struct exp *x, struct exp_batch *b,
                                          const struct exp_aid *id, int64_t now_ms);

/* Outcome of binding a unit to an assignment a client served from a block. */
enum exp_bind_status {
    EXP_B_BOUND = 0,     /* the unit holds it now (its latest assignment) */
    EXP_B_DUPLICATE = 1, /* bound to this unit before */
    EXP_B_CONFLICT = 2,  /* it is another unit's */
    EXP_B_UNKNOWN = 3,
    EXP_B_ERROR = 4, /* store read failed, or out of memory */
};
const char *exp_bind_status_name(enum exp_bind_status s);
/* Record that unit (validated by the caller) got assignment id from a
 * client's block: from then on (memory at once for an assignment still in
 * memory; the disk once committed otherwise) the unit gets it back as its
 * latest assignment in its bandit (sticky units), and the log keeps a UNIT
 * event for the audit. Whatever the assignment's status. */
enum exp_bind_status exp_ev_bind_id(struct exp *x, struct exp_batch *b, const struct exp_aid *id,
                                    const char *unit, int64_t now_ms);

/* An observation for (bandit, arm). EXP_OK or EXP_ERR_NOMEM. */
int exp_ev_observe(struct exp *x, struct exp_batch *b, size_t bandit, size_t arm, double v,
                   int64_t now_ms);
/* Change state (running / paused / stopped); asking for the state held is
 * no event. Returns EXP_OK, EXP_ERR_NOMEM, or EXP_ERR_STOPPED when leaving
 * "stopped" (a stop is final). */
int exp_ev_state(struct exp *x, struct exp_batch *b, enum exp_state s, int64_t now_ms);

/* --- edits of a live experiment (PATCH; edits.c) ----------------------------------- */

/* What an edit changes; a field at its "unchanged" value stays as it is. */
struct exp_edit {
    const char *name;  /* NULL: unchanged */
    int set_budget;    /* 1: the budget becomes `budget` (0: none) */
    uint64_t budget;   /* pulls */
    int64_t ttl_s;     /* 0: unchanged */
    int retire_bandit; /* −1: no arm retired; else the bandit and arm to retire */
    int retire_arm;
    const char *reason; /* NULL: none; recorded with the edit either way */
    int amendment;      /* an amendment (design.c): required once a frozen design
                         * has its first assignment */
};
/* Why an edit was refused: the field it names and the message. */
struct exp_refusal {
    char field[64];
    char message[256];
};

/* Apply edit ed and number it into b as one EDIT event (what it changed,
 * and the reason: shown by export and history). A change to what is
 * already so is no change; an edit that changes nothing is no event.
 * Returns EXP_OK, EXP_ERR_REFUSED (why filled: the budget is below what is
 * used, the experiment has stopped, the policy cannot plan again, the arm
 * cannot be retired (engine_retire_arm)...; nothing changed) or
 * EXP_ERR_NOMEM (nothing changed). A retired arm gets no more pulls. The TTL applies to
 * assignments handed out from now on; a pending assignment keeps its
 * expiry unless the new TTL ends it sooner (then it expires at its
 * creation plus the new TTL, or now if that has passed), so that
 * assignments still expire in the order they were handed out. */
int exp_ev_edit(struct exp *x, struct exp_batch *b, const struct exp_edit *ed, int64_t now_ms,
                struct exp_refusal *why);

/* The experiment's name, assignment TTL and budget now (lock held): what
 * edits made of the configuration's. Budget 0: none. */
const char *exp_name(const struct exp *x);
int64_t exp_ttl_s(const struct exp *x);
uint64_t exp_budget(const struct exp *x);
/* The design (design.c, docs/contract.md Clinical trials), lock held: its
 * hash now and at creation (64 hex digits; borrowed, valid while locked),
 * whether it is frozen now (created frozen, and assigned to), and all of
 * it as JSON {"hash", "initial_hash", "frozen", "locked", "changes",
 * "amendments": the latest changes} (new reference). blinded: the view of
 * a blinded reader (docs/contract.md, Clinical trials): each change keeps
 * its seq, time, kind and hashes but not its reason, which is free text
 * and may name the arm an amendment retired; the change itself is never
 * shown here (only the export, to unblinded readers, has it). */
const char *exp_design_hash(struct exp *x);
const char *exp_design_hash_initial(struct exp *x);
/* The hash of configuration c as created, into out (65 bytes). 0 or −1. */
int exp_design_hash_of(const struct exp_config *c, char out[65]);
int exp_design_frozen(const struct exp *x);
json_t *exp_design_json(struct exp *x, int blinded);
/* Append a record of kind (enum store_audit_kind: an export, an unblinded
 * read) to the audit log through the writer (audit.c): the strings are
 * copied, the time is now. done(arg, store_err) runs once after its
 * commit (may be NULL); on a refusal (returned) it is not called. */
int exp_audit_record(int kind, const char *subject, const char *detail, const char *actor,
                     const char *request_id, store_done_fn done, void *arg);
/* The same, waiting for the commit (a store error, or STORE_OK): for a
 * handler holding no lock whose answer cannot wait asynchronously (a
 * stream). */
int exp_audit_record_sync(int kind, const char *subject, const char *detail, const char *actor,
                          const char *request_id);
/* banditd audit verify (audit.c): recompute the hash chain of each
 * experiment's log (id NULL: every one) from the database alone, printing
 * one line per experiment to out ("ID: ok, …" or "ID: BROKEN at seq N
 * (why)"). 0: all verify; 1: a chain is broken; 2: an experiment or its
 * log cannot be read (or id names none). Needs no registry. */
int exp_audit_verify(struct store *st, const char *id, FILE *out);
/* Edits applied so far. */
size_t exp_edits(const struct exp *x);
/* 1 if the arm was retired by an edit. */
int exp_arm_retired(const struct exp *x, size_t bandit, size_t arm);

/* --- corrections (POST corrections; corrections.c) ---------------------------------- */

/* One correction: what to correct, and (on EXP_OK) what it replaced. */
struct exp_correction_item {
    struct exp_aid id;  /* a rewarded pull */
    double value;       /* user units, validated by the caller */
    const char *reason; /* required; recorded as the event's text */
    int64_t seq;        /* out: the correction's event */
    int32_t bandit, arm;
    double previous;    /* out: the value reported */
    int64_t reward_seq; /* out: the event that reported it */
};

/* Replace the rewards of rewarded pulls (items[0..n), one event each, in
 * that order). The statistics become what they would be had the values
 * been reported: the experiment's data is rebuilt from its log with each
 * value at its reward's place (exp_replay_with), once, after every queued
 * write committed (meanwhile other requests on x wait). The pulls the
 * policy chose since then stand: they are recorded as handed out, and the
 * policy chooses afresh from the rebuilt state on. All or nothing: an item
 * refused (EXP_ERR_REFUSED, why filled) or unknown (EXP_ERR_NOT_FOUND)
 * names its index in *bad and nothing changes. Refused: the experiment
 * has stopped; the assignment is pending, expired or an exploitation; it
 * was corrected already, or twice in items; the value is the one
 * reported; the rebuilt data would reopen a bandit that had concluded (a
 * conclusion is never withdrawn). Also EXP_ERR_STORE (the log cannot be
 * read, or the writes did not commit in time: retry), EXP_ERR_GONE,
 * EXP_ERR_NOMEM. */
int exp_ev_correct(struct exp *x, struct exp_batch *b, struct exp_correction_item *items, size_t n,
                   int64_t now_ms, size_t *bad, struct exp_refusal *why);

/* Queue the batch's ops (possibly none: the completion then still waits
 * for every write queued before it, so a reply that depends on earlier
 * writes of this experiment is sent only once they are on disk) for the
 * writer; done(arg, store_err) runs on the writer thread after commit.
 * Returns STORE_OK (done will be called once) or a store error (done is
 * not called). */
int exp_submit_locked(struct exp *x, struct exp_batch *b, store_done_fn done, void *arg);

/* Mark for deletion (under lock) and queue the delete; later requests get
 * EXP_ERR_GONE. The registry forgets the id once the delete is committed
 * (before done runs); if it fails, the experiment is back as the disk has
 * it. Same return contract as exp_submit_locked. The delete's transaction
 * appends its record to the audit log: b's caller (exp_batch_caller), now,
 * the design in force ("none" for a corrupt log, whose replay stopped
 * short of it) and the log's last seq and chain value as on disk. */
int exp_delete_locked(struct exp *x, struct exp_batch *b, int64_t now_ms, store_done_fn done,
                      void *arg);

/* 1 once a delete of x is queued or committed (takes x's lock: call
 * without it). A reader of the store that finds this 0 after its read knows
 * no delete was queued before the read, so the rows it saw were whole. */
int exp_gone(struct exp *x);

#endif
