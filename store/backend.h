/*
 * backend.h — what a storage engine provides to the store (internal to
 * store/).
 *
 * store.c is the engine-independent front: the submission queue, the writer
 * thread, group commit with its savepoint retry, keyed poisoning, fault
 * injection and the writer's figures. A backend (sqlite.c, postgres.c)
 * supplies the transactions, the rows and the reads, through one
 * designated-initializer table of functions. Nothing above store/ sees
 * which backend runs: store_open picks it from the target's form.
 *
 * Threads: the write functions (begin … purge_step) are called from the
 * writer thread only, one transaction at a time; the read functions from
 * any thread, concurrently. Errors are store_err values (store.h).
 */
#ifndef BANDITD_STORE_BACKEND_H
#define BANDITD_STORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The columns every backend reads rows by, in this order (both schemas
 * have them: schema.c, postgres.c). */
#define EVENT_COLS                                                                                 \
    "exp, seq, kind, bandit, arm, flags, value, ref, ts_ms, expires_ms, unit, text, actor,"        \
    " request_id, chain"
#define EVENT_NCOLS 15 /* the columns of EVENT_COLS */
#define OUTBOX_COLS                                                                                \
    "id, exp, exp_id, event_id, type, url, secret, body, created_ms, state, attempts, next_ms,"    \
    " last_ms, last_status, last_error"

/* A backend's state; each backend defines it. */
struct store_backend;

enum store_key_op_kind { STORE_KEY_OP_INSERT = 1, STORE_KEY_OP_REVOKE = 2 };

/* API key writes ride the writer queue (one writing connection). */
struct store_key_op {
    int kind;
    const char *name, *scopes, *hash; /* INSERT; borrowed */
    const char *experiments;          /* INSERT: comma-separated ids, or NULL; borrowed */
    int64_t created_ms;
    int64_t rowid;                  /* REVOKE */
    int64_t *rowid_out;             /* INSERT: receives the new rowid */
    const char *actor, *request_id; /* for the audit log's record; borrowed, NULL: none */
};

struct store_backend_ops {
    const char *name;
    int local;  /* the database is a file on this machine (store_target_is_file) */
    int shared; /* several daemons may share it: ownership (store.h) */
    /* Whether this backend serves target (the --db value). */
    int (*claims)(const char *target);
    /* Open and migrate. *purging: deleted experiments' logs are still
     * waiting for the purge. NULL with a message in err on failure. The
     * result is new; free with close. */
    struct store_backend *(*open)(const char *target, enum store_sync sync, int *purging, char *err,
                                  size_t errlen);
    /* Close every connection and stop the backend's threads. */
    void (*close)(struct store_backend *b);

    /* --- the writer thread's, one transaction at a time ------------------ */
    int (*begin)(struct store_backend *b);
    int (*commit)(struct store_backend *b);
    void (*rollback)(struct store_backend *b); /* no-op when no transaction is open */
    int (*savepoint)(struct store_backend *b);
    int (*release)(struct store_backend *b);
    int (*rollback_to)(struct store_backend *b);
    /* One op of a submission. On failure *own says whether it was the op's
     * own data (a constraint, no such row: only its submission fails, the
     * transaction is still usable) or the transaction's (every submission
     * of the batch fails). */
    int (*write_op)(struct store_backend *b, const struct store_op *op, int *own);
    int (*write_key)(struct store_backend *b, const struct store_key_op *k, int *own);
    /* Send the rows write_op deferred (a backend may gather a group's
     * events into one statement); errors as write_op's. The front calls it
     * at the end of each submission run with savepoints, and at the end of
     * a group run without; the backend flushes before anything else it
     * runs. May be NULL: nothing is deferred. */
    int (*flush)(struct store_backend *b, int *own);
    /* Flush and commit in one exchange with the database (a remote one:
     * one round trip instead of one per statement), instead of flush then
     * commit at the end of a group run without savepoints. Errors as
     * flush's: *own says the rows' data failed (the front rolls back and
     * runs the group again with savepoints); any failure leaves the
     * transaction for rollback. May be NULL. */
    int (*flush_commit)(struct store_backend *b, int *own);
    /* Under load, the writer may wait for a group as large as the last
     * one, up to this share (1/n) of the last commit's time (store.c,
     * group_wait); 0: never waits. For an engine whose commit costs about
     * the same whatever the group's size (a round trip and the server's
     * WAL flush). */
    unsigned group_wait_share;
    /* One purge step in its own transaction (store.c, purge_due): 1 more
     * may remain, 0 done, -1 failed (rolled back; retried later). */
    int (*purge_step)(struct store_backend *b);
    /* The engine's reason for the last failure, for the log. */
    const char *(*errmsg)(struct store_backend *b);
    /* The database as it may be logged (no password); store_describe. */
    const char *(*describe)(struct store_backend *b);
    /* store_serve_exclusive; NULL: several daemons may serve it. */
    int (*serve_exclusive)(struct store_backend *b, char *err, size_t errlen);
    /* The database file, for watchers of it; NULL (or no function): none. */
    const char *(*file)(struct store_backend *b);
    /* After a group commit failed with err (not injected); may be NULL. */
    void (*commit_failed)(struct store_backend *b, int err);
    /* The backend's own figures into out (checkpoints); may be NULL. */
    void (*stats)(struct store_backend *b, struct store_stats *out);
    /* store_set_advertise; may be NULL (no ownership). */
    void (*set_advertise)(struct store_backend *b, const char *url);
    /* store_test_pause_heartbeat; may be NULL. */
    void (*pause_heartbeat)(struct store_backend *b, int paused);
    /* store_keys_epoch; may be NULL (always 0). Any thread. */
    uint64_t (*keys_epoch)(struct store_backend *b);

    /* --- reads: any thread, committed data only (store.h) ---------------- */
    int (*load_experiments)(struct store_backend *b,
                            int (*cb)(void *arg, const struct store_experiment_row *row),
                            void *arg);
    int (*load_events)(struct store_backend *b, int64_t exp, int64_t after_seq,
                       int (*cb)(void *arg, const struct store_event *ev), void *arg);
    int (*find_assignment)(struct store_backend *b, int64_t exp, int64_t seq,
                           struct store_event *out, char *buf, size_t buflen);
    /* out->unit: the row's unit copied into buf when buf is given (a UNIT
     * event's), else NULL; out->text NULL. */
    int (*find_outcome_kind)(struct store_backend *b, int64_t exp, int64_t ref, int kind,
                             struct store_event *out, char *buf, size_t buflen);
    int (*find_unit_in)(struct store_backend *b, int64_t exp, const char *unit, int bandit,
                        struct store_event *out);
    int (*last_seq)(struct store_backend *b, int64_t exp, int64_t *out);
    int (*find_experiment)(struct store_backend *b, const char *id,
                           int (*cb)(void *arg, const struct store_experiment_row *row), void *arg);
    int (*outbox_pending)(struct store_backend *b, int64_t after_id, int limit,
                          int (*cb)(void *arg, const struct store_delivery *d), void *arg);
    int (*outbox_list)(struct store_backend *b, int64_t exp, int64_t before_id, int limit,
                       int (*cb)(void *arg, const struct store_delivery *d), void *arg);
    int (*outbox_depth)(struct store_backend *b, int64_t *out);
    int (*load_keys)(struct store_backend *b, int (*cb)(void *arg, const struct store_key_row *row),
                     void *arg);
    int (*load_audit)(struct store_backend *b,
                      int (*cb)(void *arg, const struct store_audit_row *row), void *arg);
    int (*backup)(struct store_backend *b, const char *path, char *err, size_t errlen);
    /* cb(arg, the latest snapshot of exp whose seq is below `before`):
     * cb's result, or STORE_ERR_NOTFOUND when there is none, or an error
     * (store_load_snapshots walks back with it, one row at a time). */
    int (*load_snapshot)(struct store_backend *b, int64_t exp, int64_t before,
                         int (*cb)(void *arg, const struct store_snapshot *sn), void *arg);
};

/* Copy ev's unit (truncated), then actor, request_id and chain (each
 * whole or NULL) into buf, pointing ev at the copies; text becomes NULL
 * (store_find_assignment's contract). buf NULL: all NULL. */
void store_event_copy_strings(struct store_event *ev, char *buf, size_t buflen);

/* The audit log record (store.h) of a key op or an experiment's creation,
 * all but its seq: its subject and detail written into buf. 0, or −1 when
 * buf is too small. */
int store_audit_of_key(const struct store_key_op *k, int64_t key_id, struct store_audit_row *row,
                       char *buf, size_t len);
/* The same for an experiment's deletion (op of kind EXP_DELETE) whose log
 * ends at last_seq with chain value last_chain (0 and NULL: no event; NULL
 * too on rows older than the chain). */
int store_audit_of_delete(const struct store_op *op, int64_t last_seq, const char *last_chain,
                          struct store_audit_row *row, char *buf, size_t len);
int store_audit_of_create(const struct store_op *op, struct store_audit_row *row, char *buf,
                          size_t len);

/* The backends, tried in this order by store_open (sqlite.c claims
 * everything the others do not). */
extern const struct store_backend_ops store_postgres_ops; /* postgresql://… */
extern const struct store_backend_ops store_sqlite_ops;

#endif
