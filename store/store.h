/*
 * store.h — durable storage of experiments and their event logs, behind one
 * interface whatever the engine (backend.h: SQLite, the embedded default).
 *
 * Persistence model: an experiment is its configuration plus an append-only
 * log of events, numbered 1, 2, 3… per experiment (seq): assignments,
 * rewards, observations, expiries, late rewards and state changes, in the
 * order the engine applied them. Replaying the log through a fresh engine
 * restores the statistics exactly and the policy state too (engine.h,
 * determinism). There is no other mutable state on disk.
 *
 * Writes are asynchronous: store_submit() queues a write (one request's
 * worth of rows) for the single writer thread, which commits whatever is
 * queued in one transaction (group commit) and then calls each write's
 * completion callback, in submission order, from the writer thread. A
 * callback with STORE_OK means the rows are committed (on disk per the sync
 * mode). Submissions are committed in the order they were queued, so the
 * committed part of an experiment's log is always a prefix of what was
 * queued: a caller that queues under its per-experiment lock never sees a
 * gap after a crash.
 *
 * Reads (store_find_*, store_load_*, store_export) run on the calling thread
 * through a per-thread connection; they never wait for the writer (SQLite's
 * WAL, PostgreSQL's MVCC) and see only committed data.
 */
#ifndef BANDITD_STORE_STORE_H
#define BANDITD_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Errors of this layer; 0 is success. */
enum store_err {
    STORE_OK = 0,
    STORE_ERR_NOTFOUND = 1, /* no such row */
    STORE_ERR_EXISTS = 2,   /* unique key taken (experiment id, unit) */
    STORE_ERR_FULL = 3,     /* unavailable: disk full, read-only, or locked by
                             * another process past the busy timeout; PostgreSQL
                             * unreachable, shutting down, failing over or a
                             * standby: retry later (503) */
    STORE_ERR_IO = 4,       /* other I/O or SQLite failure (500) */
    STORE_ERR_NOMEM = 5,
    STORE_ERR_CLOSED = 6,   /* store shutting down */
    STORE_ERR_NOTOWNER = 7, /* another daemon owns the experiment (store_claim) */
};

const char *store_strerror(int err);

/* SQLite's; PostgreSQL always commits with synchronous_commit on (a commit
 * returns once its WAL is flushed, and replicated to synchronous standbys). */
enum store_sync {
    STORE_SYNC_FULL = 0,   /* fsync the WAL at every commit: survives power loss */
    STORE_SYNC_NORMAL = 1, /* WAL written at commit, fsynced only before each
                            * checkpoint (every STORE_CKPT_PAGES WAL pages,
                            * store.c): survives a daemon crash (kill -9); a
                            * power loss or OS crash can lose every commit
                            * since the last checkpoint (a suffix: never a
                            * gap, never corruption) */
};

struct store;

/* Open (creating if needed) and migrate the database at path: a
 * postgresql:// (or postgres://) URI is a PostgreSQL database reached
 * through libpq (store/postgres.c), anything else an SQLite file. A new
 * database file is created with mode 0600 and SQLite gives its -wal and
 * -shm files the database's mode (an existing file keeps its mode). Returns NULL
 * with a message in err on failure (including a database whose schema is
 * newer than this build). The result is new; free with store_close, which
 * stops accepting submissions, drains the writer queue (commits it and calls
 * the callbacks), joins the writer and closes every connection. Call it
 * once no other thread is inside a store call, never from a callback. */
struct store *store_open(const char *path, enum store_sync sync, char *err, size_t errlen);
void store_close(struct store *s);

/* Whether target (a --db value) names a file on this machine (SQLite), as
 * opposed to a database server's URI: what may be stat'ed, created, made a
 * directory for. */
int store_target_is_file(const char *target);

/* The database as it may be shown in logs and messages: the SQLite file's
 * path, or the postgresql:// URI without its password. Borrowed from s. */
const char *store_describe(const struct store *s);

/* The database file when the store is one file on this machine (SQLite),
 * for what watches it (API keys: auth_watch); NULL otherwise. Borrowed. */
const char *store_file(const struct store *s);

/* This process serves the database as a daemon: refuse (STORE_ERR_EXISTS,
 * with who in err) when another daemon already does and the engine allows
 * one only (SQLite: a lock on PATH.lock, held until store_close); several
 * daemons may share a PostgreSQL database (ownership, below). The tools
 * (keys, backup) do not call it and run beside the daemon. */
int store_serve_exclusive(struct store *s, char *err, size_t errlen);

/* Schema version this build writes (PRAGMA user_version). */
int store_schema_version(void);

/* --- events --------------------------------------------------------------- */

enum store_event_kind {
    STORE_EV_ASSIGN = 1,  /* bandit, arm, flags, unit, expires */
    STORE_EV_REWARD = 2,  /* ref = assignment seq, value */
    STORE_EV_OBSERVE = 3, /* bandit, arm, value */
    STORE_EV_EXPIRE = 4,  /* ref; value = default reward recorded, or NaN */
    STORE_EV_LATE = 5,    /* ref, value: a reward after expiry (audit only) */
    STORE_EV_STATE = 6,   /* text = "running" | "paused" | "stopped" */
    STORE_EV_EDIT = 7,    /* text = the change, a JSON object (exp/edits.c) */
    STORE_EV_CORRECT = 8, /* ref, value: a rewarded pull's value replaced; text = the reason */
    STORE_EV_UNIT = 9,    /* ref, bandit, arm, unit: a client served assignment ref
                           * (leased in a block) to this unit */
};

/* ASSIGN flags */
enum {
    STORE_AF_EXPLOIT = 1u << 0,      /* served the recommendation; not a pull */
    STORE_AF_BANDIT_GIVEN = 1u << 1, /* the request named the bandit */
    STORE_AF_FALLBACK = 1u << 2,     /* the experiment's fallback arm (exp/config.h), not
                                      * the engine's recommendation; EXPLOIT too */
};

/* EXPIRE flags */
enum {
    STORE_XF_RELEASED = 1u << 0, /* released by the client (a leased assignment no visitor
                                  * got), not timed out; value NaN */
};

struct store_event {
    int64_t exp; /* experiment rowid */
    int64_t seq; /* 1, 2, 3… per experiment */
    int kind;    /* enum store_event_kind */
    int32_t bandit;
    int32_t arm;
    uint32_t flags;
    double value;       /* reward in the user's units; NaN when none */
    int64_t ref;        /* seq of the assignment this event is about; 0 if none */
    int64_t ts_ms;      /* when (ms since the epoch) */
    int64_t expires_ms; /* ASSIGN: expiry time; 0 if none */
    const char *unit;   /* ASSIGN: sticky unit or NULL; borrowed */
    const char *text;   /* STATE: new state; EDIT: the change; CORRECT: the reason; borrowed */
    /* The audit trail (exp/audit.c): who made the request that caused the
     * event ("key:<id>:<name>"; NULL: the daemon itself, or an open API) and its
     * request id (NULL: none), and the hash chain's value after this event
     * (64 hex digits; NULL on rows older than the chain). Borrowed. */
    const char *actor;
    const char *request_id;
    const char *chain;
};

/* --- writes --------------------------------------------------------------- */

enum store_op_kind {
    STORE_OP_EXP_CREATE = 1,    /* id, config_json, created_ms → rowid filled on commit;
                                 * ev.actor, ev.request_id: who asked (the audit log) */
    STORE_OP_EXP_DELETE = 2,    /* exp: the row; NOTFOUND if none. id, design_hash,
                                 * ev.ts_ms, ev.actor, ev.request_id: the audit log's
                                 * record (STORE_AUDIT_EXP_DELETE). Its events are
                                 * purged by the writer afterwards, in chunks
                                 * between group commits (no write waits for a
                                 * long log); rowids are never reused, so they
                                 * are never read again */
    STORE_OP_EVENT = 3,         /* ev */
    STORE_OP_PROBE = 4,         /* writes and removes a row: is the disk taking writes? */
    STORE_OP_OUTBOX = 5,        /* dl: a webhook delivery to make (every field but id and
                                 * the attempt's); committed with the events that caused it */
    STORE_OP_OUTBOX_UPDATE = 6, /* dl: id, state, attempts, next_ms, last_ms,
                                 * last_status, last_error after an attempt */
    STORE_OP_OUTBOX_PRUNE = 7,  /* dl->last_ms: finished deliveries whose last attempt
                                 * is older go */
    STORE_OP_CLAIM = 8,         /* exp: make this daemon its owner (store_claim) */
    STORE_OP_AUDIT = 9,         /* audit: a record of the audit log (below); its seq and
                                 * chain are the backend's */
    STORE_OP_SNAPSHOT = 10,     /* snap: a checkpoint of exp's state (below); older
                                 * ones are thinned (store_snapshots_keep) */
};

struct store_snapshot;

struct store_delivery;

struct store_op {
    int kind;
    /* EXP_CREATE */
    const char *id;          /* borrowed until the callback */
    const char *config_json; /* borrowed until the callback */
    int64_t created_ms;
    int64_t *rowid_out; /* receives the new rowid before the callback */
    /* EXP_DELETE (and id, ev's time, actor and request id) */
    int64_t exp;
    const char *design_hash; /* the design in force; borrowed until the callback */
    /* EVENT */
    struct store_event ev; /* strings borrowed until the callback */
    /* OUTBOX, OUTBOX_UPDATE, OUTBOX_PRUNE */
    const struct store_delivery *dl; /* borrowed until the callback */
    /* CLAIM: the owner's address when another daemon owns exp */
    char *owner_out;
    size_t owner_len;
    /* AUDIT: kind, ts_ms, subject, detail, actor, request_id (borrowed until
     * the callback) */
    const struct store_audit_row *audit;
    /* SNAPSHOT: borrowed until the callback */
    const struct store_snapshot *snap;
};

/* Completion: err is STORE_OK or a store_err; called once, on the writer
 * thread, after the transaction holding the write committed or failed.
 * Callbacks may call store_submit (from store_close's drain it returns
 * STORE_ERR_CLOSED) and the read functions; they must not call
 * store_write_sync (refused with STORE_ERR_IO: it would wait for itself),
 * store_key_insert/revoke (same) or store_close, and should be short: the
 * next group commit waits for them. */
typedef void (*store_done_fn)(void *arg, int err);

/* One submission: n ops committed atomically (a savepoint inside the group
 * transaction: one submission's constraint error does not fail the others).
 * ops must stay valid until done runs. Returns STORE_OK if queued (done will
 * be called exactly once) or, without calling done, STORE_ERR_CLOSED,
 * STORE_ERR_FULL (131072 submissions already waiting: back off) or
 * STORE_ERR_NOMEM. A failed commit (disk full, I/O error) fails every
 * submission of its group with STORE_ERR_FULL or STORE_ERR_IO. */
int store_submit(struct store *s, struct store_op *ops, size_t n, store_done_fn done, void *arg);

/* Keyed submission (key = experiment rowid, > 0). Every submission of a key
 * depends on the ones queued before it, so after a submission with key k
 * fails (constraint, disk full, I/O), every later submission with key k
 * fails too with the same error, without being executed — until one is
 * queued with reset = 1, which clears the failure and runs normally. The
 * daemon resets after reloading the experiment from disk, so the log on disk
 * never has a gap that memory filled. store_submit is key 0: never poisoned. */
int store_submit_keyed(struct store *s, int64_t key, int reset, struct store_op *ops, size_t n,
                       store_done_fn done, void *arg);

/* A write nothing depends on (a snapshot: a shortcut, megabytes) that
 * depends on key's writes queued before it: refused like them while key's
 * failure stands, but its own failure poisons nothing (later writes of key
 * do not need it). It commits in a transaction of its own, after the group
 * queued before it has committed and been answered, so their writers never
 * wait for its bytes. Otherwise as store_submit_keyed (reset = 0). */
int store_submit_aside(struct store *s, int64_t key, struct store_op *ops, size_t n,
                       store_done_fn done, void *arg);

/* Submit and wait (tools, tests, startup). Same atomicity. Not from a
 * completion callback. */
int store_write_sync(struct store *s, struct store_op *ops, size_t n);

/* Writer figures for /metrics. */
struct store_stats {
    uint64_t commits;
    uint64_t writes; /* submissions committed */
    uint64_t failed_commits;
    uint64_t commit_us_total; /* sum of commit latencies */
    uint64_t queue_depth;     /* submissions waiting now */
    uint64_t checkpoints;     /* WAL checkpoints (run off the commit path) */
    int writes_failing;       /* the last commit that wrote something failed */
};
void store_get_stats(struct store *s, struct store_stats *out);

/* --- reads (any thread; committed data only) ------------------------------ */
/* Each thread gets its own read-only connection on first use, closed when
 * the thread exits or at store_close. Reads are re-entrant: a callback of
 * store_load_* may call any read function (nested reads see the same
 * snapshot as the enclosing one). */

struct store_experiment_row {
    int64_t rowid;
    const char *id;          /* borrowed for the callback's duration */
    const char *config_json; /* borrowed for the callback's duration */
    int64_t created_ms;
};

/* Call cb for every experiment, by rowid. cb returns non-zero to stop
 * (that value is returned). */
int store_load_experiments(struct store *s,
                           int (*cb)(void *arg, const struct store_experiment_row *row), void *arg);

/* Call cb for every event of exp with seq > after_seq, in seq order. Strings
 * in the event are borrowed for the callback's duration. Streams (constant
 * memory): usable for replay and export. */
int store_load_events(struct store *s, int64_t exp, int64_t after_seq,
                      int (*cb)(void *arg, const struct store_event *ev), void *arg);

/* The ASSIGN event of exp with sequence number seq. STORE_ERR_NOTFOUND if
 * none. Strings are copied into buf (unit, truncated to buflen; then
 * actor, request_id and chain, each NULL when it does not fit whole);
 * text is NULL. */
int store_find_assignment(struct store *s, int64_t exp, int64_t seq, struct store_event *out,
                          char *buf, size_t buflen);

/* The first REWARD, EXPIRE or LATE event referring to assignment seq ref.
 * out->unit and out->text are NULL. */
int store_find_outcome(struct store *s, int64_t exp, int64_t ref, struct store_event *out);
/* The unit a UNIT event bound assignment ref to (the first), into buf.
 * STORE_OK, STORE_ERR_NOTFOUND (none), or an error. */
int store_find_bound_unit(struct store *s, int64_t exp, int64_t ref, char *buf, size_t buflen);
/* The first event of that kind (REWARD, EXPIRE or LATE) referring to ref. */
int store_find_outcome_kind(struct store *s, int64_t exp, int64_t ref, int kind,
                            struct store_event *out);

/* The latest ASSIGN event of exp for a sticky unit (a unit may hold
 * several: one per bandit, a new one after an expiry), or the latest UNIT
 * event binding an assignment to it (then out->ref names the assignment),
 * whichever is later. out->unit is the caller's unit, out->text NULL. */
int store_find_unit(struct store *s, int64_t exp, const char *unit, struct store_event *out);
/* The same within one bandit (bandit < 0: any). */
int store_find_unit_in(struct store *s, int64_t exp, const char *unit, int bandit,
                       struct store_event *out);

/* Highest seq of exp (0 when no event). */
int store_last_seq(struct store *s, int64_t exp, int64_t *out);

/* --- snapshots: checkpoints of an experiment's state --------------------- */
/* A snapshot is a serialized state of an experiment as of event seq
 * (exp/snapshot.c makes and reads it; to the store it is bytes with a few
 * labels): loading an experiment then reads the latest usable one and
 * replays only the events after it. The log stays whole and remains the
 * truth: a snapshot only saves time, and the daemon replays the full log
 * whenever one does not fit (another format, build or design, a bad
 * checksum). A snapshot is written like events (STORE_OP_SNAPSHOT, in the
 * same group commit, fenced like them on PostgreSQL: only the owner's
 * writer commits one), replacing one of the same seq; the writer then
 * thins the experiment's older ones (store_snapshots_keep), and a delete
 * takes them all.
 *
 * Older snapshots are kept, log-spaced, for the rebuild at a correction
 * (exp/corrections.c): it must start before the corrected reward, so a
 * snapshot at most about twice as far back as that reward serves it. Kept:
 * the latest two (a damaged latest falls back to the one before), then,
 * for each power of two d, the oldest snapshot whose distance in events
 * from the latest lies in [2^d, 2^(d+1)); at most STORE_SNAPSHOTS_MAX in
 * all (the oldest beyond it go). With a snapshot every E events, an
 * experiment of n events keeps about 2 + log2(n / E) of them (12 at
 * n = 10^7, E = 10^4). */

#define STORE_SNAPSHOTS_KEEP 2
#define STORE_SNAPSHOTS_MAX 12

/* Which snapshots of an experiment stay: seq[0..n) are their seqs (no two
 * equal), in any order; sorts them in place, the latest first, and sets
 * keep[i] to 1 for those that stay, 0 for those that go. The one rule both
 * backends apply. */
void store_snapshots_keep(int64_t *seq, size_t n, unsigned char *keep);

struct store_snapshot {
    int64_t exp;          /* experiment rowid */
    int64_t seq;          /* the last event the state covers */
    int format;           /* the state's layout version (the writer's own) */
    const char *software; /* the build that wrote it; borrowed */
    const char *design;   /* the experiment's design hash then; borrowed */
    const char *checksum; /* of the bytes (the writer's choice of hash); borrowed */
    int64_t created_ms;
    const void *state; /* the bytes; borrowed */
    size_t len;
};

/* Call cb for each snapshot of exp whose seq is below `before` (INT64_MAX:
 * every one), the latest (highest seq) first, one row read at a time (an
 * index serves "the latest below X"); its fields are borrowed for the
 * callback's duration. cb returns non-zero to stop (that value is
 * returned). */
int store_load_snapshots(struct store *s, int64_t exp, int64_t before,
                         int (*cb)(void *arg, const struct store_snapshot *sn), void *arg);

/* --- ownership: several daemons on one database -------------------------- */
/* With PostgreSQL any number of daemons may share the database. Each
 * experiment is written by at most one of them, its owner, and PostgreSQL
 * enforces it: the owner's writer connection holds a session-level
 * advisory lock on the experiment. Every write of an experiment's events,
 * of its delete and of its outbox rows checks, on the writer, that this
 * very connection holds that lock; the locks belong to the connection, so a
 * daemon whose connection ended (PostgreSQL released its locks, maybe to
 * another daemon since) owns nothing until it claims again — and reloads —
 * and such writes fail with STORE_ERR_NOTOWNER, nothing of them committed
 * (fencing: a daemon frozen past a takeover commits nothing when it wakes).
 * A daemon owns what it creates. Each daemon keeps a heartbeat row with its
 * advertised address; one whose heartbeat is older than STORE_LEASE_MS is
 * orphaned, and a claim of its experiments terminates its writer's
 * session (its locks go with it) and takes them over. SQLite: one daemon,
 * which owns everything (store_claim always succeeds). */

#define STORE_LEASE_MS 3000 /* a heartbeat older than this: the daemon is gone */

/* Whether several daemons may share this database (PostgreSQL). */
int store_shared(const struct store *s);

/* This daemon's address as other daemons name it to clients (e.g.
 * "http://10.0.0.5:8080"), kept with its heartbeat. Copied. */
void store_set_advertise(struct store *s, const char *url);

/* Make this daemon the owner of experiment exp (rowid). STORE_OK: it owns
 * it (it did already, the experiment had no owner, or its owner was
 * orphaned and lost it); the caller must reload the experiment from the
 * database before serving it unless it knew it owned it. STORE_ERR_NOTOWNER:
 * a live daemon owns it, whose advertised address is copied into owner
 * (truncated to ownerlen; "" when unknown). STORE_ERR_NOTFOUND: no such
 * experiment (deleted). Waits for the writer: not from a callback. */
int store_claim(struct store *s, int64_t exp, char *owner, size_t ownerlen);

/* The experiment called id (its row as in store_load_experiments, to cb
 * unless cb is NULL), STORE_ERR_NOTFOUND when there is none: one another
 * daemon created since this one loaded them, or deleted. */
int store_find_experiment(struct store *s, const char *id,
                          int (*cb)(void *arg, const struct store_experiment_row *row), void *arg);

/* --- webhook outbox (docs/contract.md, Webhooks) ------------------------- */
/* One row per delivery to make: a webhook event for one endpoint. The row
 * is inserted (STORE_OP_OUTBOX) in the same submission as the events that
 * caused it, so an acknowledged stop always has its delivery on disk. The
 * delivery thread (notify/) reads pending rows, and records each attempt
 * through the writer (STORE_OP_OUTBOX_UPDATE); finished rows are pruned by
 * age (STORE_OP_OUTBOX_PRUNE). The rows outlive their experiment's delete:
 * a stop followed at once by a delete is still announced. */

enum store_outbox_state {
    STORE_OUTBOX_PENDING = 0,
    STORE_OUTBOX_DELIVERED = 1,
    STORE_OUTBOX_FAILED = 2, /* gave up after the last attempt */
};

struct store_delivery {
    int64_t id;             /* rowid (reads, OUTBOX_UPDATE); an insert gets a new one */
    int64_t exp;            /* experiment rowid (the experiment may be gone since) */
    const char *exp_id;     /* borrowed */
    const char *event_id;   /* borrowed: unique per event, the same for every attempt */
    const char *type;       /* borrowed: "experiment.stopped", ... */
    const char *url;        /* borrowed */
    const char *secret;     /* borrowed: the HMAC key */
    const char *body;       /* borrowed: the JSON sent, byte for byte at every attempt */
    int64_t created_ms;     /* when the event happened */
    int state;              /* enum store_outbox_state */
    int attempts;           /* made so far */
    int64_t next_ms;        /* pending: not before (ms since the epoch) */
    int64_t last_ms;        /* the last attempt's time; 0: none yet */
    int last_status;        /* its HTTP status; 0: none (no answer) */
    const char *last_error; /* borrowed: why it failed, NULL when it did not */
};

/* Writer hook: fn(arg) runs on the writer thread after each commit that
 * inserted outbox rows, or claimed an experiment (its pending rows may be
 * this daemon's to deliver now), under the store's queue lock: it must only signal
 * (the delivery thread reads the rows itself). fn NULL removes it; once
 * this returns, the old hook is never called again. */
void store_set_outbox_hook(struct store *s, void (*fn)(void *arg), void *arg);

/* Pending deliveries with id > after_id, by id, at most limit. The row's
 * strings are borrowed for the callback's duration; cb returns non-zero to
 * stop (that value is returned). On a shared database only the ones this
 * daemon is to make, so that each is made by one daemon: those of the
 * experiments it owns, and those of experiments nobody owns (orphaned, or
 * deleted) on the live daemon with the smallest id; an attempt recorded by
 * a daemon after another took the experiment over changes nothing. */
int store_outbox_pending(struct store *s, int64_t after_id, int limit,
                         int (*cb)(void *arg, const struct store_delivery *d), void *arg);
/* Deliveries of experiment exp with id < before_id (INT64_MAX: from the
 * newest), newest first, at most limit; same callback contract. */
int store_outbox_list(struct store *s, int64_t exp, int64_t before_id, int limit,
                      int (*cb)(void *arg, const struct store_delivery *d), void *arg);
/* Number of pending deliveries (O(pending): the partial index's size). */
int store_outbox_depth(struct store *s, int64_t *out);

/* --- API keys (Access section of docs/contract.md) ------------------------ */
/* Insert and revoke go through the writer queue and wait for their commit
 * (one writing connection); revoke of an unknown rowid is NOTFOUND, a hash
 * already stored is EXISTS. */

struct store_key_row {
    int64_t rowid;
    const char *name;   /* borrowed */
    const char *scopes; /* comma-separated; borrowed */
    const char *hash;   /* hex SHA-256 of the key; borrowed */
    int64_t created_ms;
    int revoked;
    /* the experiments the key is limited to, comma-separated ids;
     * NULL: every experiment. Borrowed */
    const char *experiments;
};

/* experiments: NULL for a key over every experiment, else comma-separated
 * ids (the caller checked them). actor and request_id (either may be NULL)
 * name who asked, for the audit log's record of the change (below), which
 * commits with it. */
int store_key_insert(struct store *s, const char *name, const char *scopes, const char *hash,
                     const char *experiments, int64_t created_ms, const char *actor,
                     const char *request_id, int64_t *rowid_out);
int store_key_revoke(struct store *s, int64_t rowid, const char *actor, const char *request_id);
int store_load_keys(struct store *s, int (*cb)(void *arg, const struct store_key_row *row),
                    void *arg);
/* A number that changes, soon after the commit, whenever the API keys may
 * have changed in the database through any connection (another daemon,
 * `banditd keys`): PostgreSQL notifies every daemon (LISTEN/NOTIFY, one
 * notification per key write, and a change too whenever the listening
 * connection had to be made again). Always 0 where the backend has no such
 * signal (SQLite: watch the file instead, store_file). Any thread, no I/O. */
uint64_t store_keys_epoch(struct store *s);

/* --- the audit log (docs/contract.md, "Audit trail") --------------------- */
/* The actions no experiment's log holds, in one hash chain of their own:
 * API keys created and revoked (a key is not one experiment's: a key over
 * every experiment would need a record in every log, and one made before
 * an experiment in none), experiments created (with who asked: the
 * experiment's own log starts at its first event) and deleted (the log
 * goes with the experiment; the record keeps its last chain value). Each record is written
 * by the backend in the transaction that makes the change, its seq and
 * chain value taken under the log's lock (one writer on SQLite; a table
 * lock on PostgreSQL, which several daemons and the keys CLI share), so
 * the change and its record commit together or not at all. */

enum store_audit_kind {
    STORE_AUDIT_KEY_CREATE = 1, /* subject "key:<id>"; detail store_key_detail's */
    STORE_AUDIT_KEY_REVOKE = 2, /* subject "key:<id>"; detail NULL */
    STORE_AUDIT_EXP_CREATE = 3, /* subject the experiment's id; detail "config sha256:<hex>"
                                 * of its stored configuration */
    STORE_AUDIT_EXPORT = 4,     /* subject the experiment's id; detail "<format> after <seq>" */
    STORE_AUDIT_UNBLINDED = 5,  /* a blinded experiment read in full: subject its id,
                                 * detail what ("status", "history", "webhooks") */
    STORE_AUDIT_EXP_DELETE = 6, /* subject the experiment's id; detail "design <hex> last
                                 * <seq> chain <hex>" (seq 0, chain "none": no event):
                                 * its design in force and its log's last row as it was
                                 * in the deleting transaction, so that an export
                                 * archived before can still be shown to be its log */
};

struct store_audit_row {
    int64_t seq; /* 1, 2, 3… */
    int64_t ts_ms;
    int kind; /* enum store_audit_kind */
    /* Borrowed. actor as on events ("key:<id>:<name>"; NULL: the daemon or
     * an open API; "cli:<user>" for the keys CLI), chain: 64 hex digits. */
    const char *subject, *detail, *actor, *request_id, *chain;
};

/* The first record's previous chain value. */
#define STORE_AUDIT_GENESIS "banditd audit log"

/* out = SHA-256(prev || "\n" || row in canonical form), in hex: row's
 * seq, kind and time in decimal, then each string prefixed by its length
 * (−1: none); row->chain is not part of it. 0, or −1 when too long. */
int store_audit_next(const char *prev, const struct store_audit_row *row, char out[65]);
/* A key's record detail: its name, scopes, experiments and hash, each
 * prefixed by its length (−1: none). The length it needs (snprintf's);
 * STORE_AUDIT_BUF holds any key's (a name of 128 bytes, 64 experiment
 * ids). */
#define STORE_AUDIT_BUF 8192
int store_key_detail(const char *name, const char *scopes, const char *experiments,
                     const char *hash, char *buf, size_t len);
/* Every record in seq order into cb (strings live until it returns);
 * stops at cb's non-zero, returned. */
int store_load_audit(struct store *s, int (*cb)(void *arg, const struct store_audit_row *row),
                     void *arg);

/* Online backup to path (VACUUM INTO on a fresh read-only connection: a
 * consistent snapshot while the writer runs), fsynced. path must not exist
 * (STORE_ERR_EXISTS otherwise, even for an empty file); it is created with
 * mode 0600 and removed again if the backup fails. */
int store_backup(struct store *s, const char *path, char *err, size_t errlen);

#endif
