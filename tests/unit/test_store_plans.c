/*
 * test_store_plans.c — what every SQL statement of the store costs (issue 12,
 * "work that grows with the log").
 *
 * The store lists every statement it runs (store_test_sql). For each one
 * this file holds the query plan it must have; a statement without an entry
 * here, or an entry for a statement the store no longer has, fails the
 * test, so a new statement cannot skip the check. On a realistic database
 * (two experiments of 1,260 and 25,200 events: assignments with units,
 * rewards, expiries, late rewards, observations, state changes) each
 * statement is checked three ways, before and after ANALYZE (the planner's
 * choice may change with statistics):
 *
 *   1. EXPLAIN QUERY PLAN equals the expected plan, line for line;
 *   2. whatever the entry says, no line is a SCAN of events, and every
 *      SEARCH of events is bounded by the experiment and a seq, ref or unit
 *      ("exp=? AND …"), or, for a statement marked as one end of a range
 *      (ORDER BY seq [DESC] LIMIT k), by the experiment alone;
 *   3. the work it does, counted in virtual-machine steps
 *      (SQLITE_STMTSTATUS_VM_STEP), is the same on the small experiment as
 *      on the big one, with the parameters pointing at the same place in
 *      each log (its end): the plan text cannot show a LIMIT at work or a
 *      range that reads the whole log, the step count can.
 *
 * Main's outcome lookup (SEARCH events USING PRIMARY KEY (exp=?), ORDER BY
 * seq LIMIT 1) fails 1, 2 and 3 (it walks the log from its start: 24,000
 * rows against 1,260), and main's delete of a whole log fails 2 and 3.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/store_test.h"
#include "tests/support/tpg.h"
#include "tests/support/tstore.h"

/* Each round of a log: 7 events (seq r*7+1 … r*7+7). */
#define ROUND 7
#define SMALL_ROUNDS 180 /* 1,260 events */
#define BIG_ROUNDS 3600  /* 25,200 events */
#define WORK_SLACK 16    /* VM steps the big log may add (none expected) */

/* One round at seq base+1…base+7: an assignment with a unit, rewarded; an
 * assignment without one, expired, then a late reward; an observation; a
 * state change. */
static void round_ops(struct store_op *op, int64_t exp, int64_t base, char *unit, size_t ulen)
{
    static const int kinds[ROUND] = {STORE_EV_ASSIGN, STORE_EV_ASSIGN, STORE_EV_REWARD,
                                     STORE_EV_EXPIRE, STORE_EV_LATE,   STORE_EV_OBSERVE,
                                     STORE_EV_STATE};
    snprintf(unit, ulen, "unit-%lld", (long long)base + 1);
    for (int i = 0; i < ROUND; i++) {
        memset(&op[i], 0, sizeof op[i]);
        op[i].kind = STORE_OP_EVENT;
        op[i].ev.exp = exp;
        op[i].ev.seq = base + 1 + i;
        op[i].ev.kind = kinds[i];
        op[i].ev.arm = i % 3;
        op[i].ev.value = kinds[i] == STORE_EV_ASSIGN ? NAN : 0.5;
        op[i].ev.ts_ms = 1700000000000 + base + i;
    }
    op[0].ev.unit = unit;
    op[0].ev.expires_ms = 1700000100000 + base;
    op[1].ev.expires_ms = 1700000100000 + base;
    op[2].ev.ref = base + 1;
    op[3].ev.ref = base + 2;
    op[4].ev.ref = base + 2;
    op[6].ev.text = "running";
}

/* The log of exp, `rounds` rounds, with a snapshot riding each of the
 * last two submissions (both logs have as many: the same work asked of
 * the statements on them). */
static void fill(struct store *s, int64_t exp, int rounds)
{
    enum { PER = 100 }; /* rounds per submission */
    static struct store_op ops[PER * ROUND + 1];
    static char units[PER][32];
    static const unsigned char state[16] = {1, 2, 3};
    for (int r = 0; r < rounds; r += PER) {
        int n = rounds - r < PER ? rounds - r : PER;
        for (int i = 0; i < n; i++)
            round_ops(&ops[(size_t)i * ROUND], exp, (int64_t)(r + i) * ROUND, units[i],
                      sizeof units[i]);
        struct store_snapshot sn = {.exp = exp,
                                    .seq = (int64_t)(r + n) * ROUND,
                                    .format = 1,
                                    .software = "t",
                                    .design = "d",
                                    .checksum = "c",
                                    .state = state,
                                    .len = sizeof state};
        ops[(size_t)n * ROUND] = (struct store_op){.kind = STORE_OP_SNAPSHOT, .snap = &sn};
        size_t with = r + 2 * PER >= rounds; /* one of the last two */
        assert_int_equal(store_write_sync(s, ops, (size_t)n * ROUND + with), STORE_OK);
    }
}

/* --- expectations ------------------------------------------------------------ */

/* Parameters, one letter each: E the experiment's rowid, L its last seq,
 * N the next seq, T the seq five before the last, A the last rewarded
 * assignment's seq (with a unit), U that assignment's unit, 1 the integer
 * 1, s a string, _ NULL. */
struct expect {
    const char *name;
    const char *plan;   /* EXPLAIN QUERY PLAN's lines joined by "; " */
    int end;            /* one end of an experiment's range: (exp=?) allowed */
    const char *params; /* NULL: not run (transaction control, settings) */
};

static const struct expect expects[] = {
    {"begin", "", 0, NULL},
    {"commit", "", 0, NULL},
    {"rollback", "", 0, NULL},
    {"savepoint", "", 0, NULL},
    {"release", "", 0, NULL},
    {"rollback_to", "", 0, NULL},
    {"exp_insert", "", 0, "ss1"},
    {"exp_delete", "SEARCH experiments USING INTEGER PRIMARY KEY (rowid=?)", 0, "E"},
    {"purge_add", "", 0, "E"},
    {"purge_next", "SCAN purges", 0, ""},
    {"purge_chunk",
     "SEARCH events USING PRIMARY KEY (exp=? AND seq=?); LIST SUBQUERY 1; "
     "SEARCH events USING PRIMARY KEY (exp=?)",
     1, "E"},
    {"purge_done", "SEARCH purges USING INTEGER PRIMARY KEY (rowid=?)", 0, "E"},
    {"event_insert", "", 0, "EN1111111111sss"},
    {"key_insert", "", 0, "sss1s"},
    {"key_revoke", "SEARCH api_keys USING INTEGER PRIMARY KEY (rowid=?)", 0, "1"},
    /* the audit log's last record: the rowid's other end, one step */
    {"audit_last", "SCAN audit_log", 0, ""},
    {"audit_insert", "", 0, "N11sssss"},
    {"experiments", "SCAN experiments", 0, ""},
    {"experiment_by_id", "SEARCH experiments USING INDEX sqlite_autoindex_experiments_1 (id=?)", 0,
     "s"},
    {"events", "SEARCH events USING PRIMARY KEY (exp=? AND seq>?)", 0, "ET"},
    {"assignment", "SEARCH events USING PRIMARY KEY (exp=? AND seq=?)", 0, "EA"},
    {"outcome", "SEARCH events USING INDEX events_ref (exp=? AND ref=?)", 0, "EA0"},
    {"unit", "SEARCH events USING INDEX events_unit (exp=? AND unit=?)", 0, "EUM"},
    {"last_seq", "SEARCH events USING PRIMARY KEY (exp=?)", 1, "E"},
    {"last_event", "SEARCH events USING PRIMARY KEY (exp=?)", 1, "E"}, /* a delete's record */
    {"keys", "SCAN api_keys", 0, ""},
    {"audit", "SCAN audit_log", 0, ""},
    /* the webhook outbox: its partial indexes bound each read by what is
     * pending (or one experiment's rows), never by the rows kept */
    {"outbox_insert", "", 0, "Essssss11"},
    {"outbox_update", "SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?)", 0, "111111s"},
    {"outbox_prune", "SEARCH outbox USING INDEX outbox_finished (last_ms<?)", 0, "1"},
    {"outbox_pending", "SEARCH outbox USING INDEX outbox_pending (id>?)", 0, "11"},
    {"outbox_list", "SEARCH outbox USING INDEX outbox_exp (exp=? AND id<?)", 0, "E11"},
    {"outbox_depth", "SCAN outbox USING INDEX outbox_pending", 0, ""},
    /* snapshots: a few rows per experiment, found by their key */
    {"snap_insert", "", 0, "E11sss1s"},
    {"snap_seqs", "SEARCH snapshots USING COVERING INDEX sqlite_autoindex_snapshots_1 (exp=?)", 0,
     "E"},
    {"snap_drop", "SEARCH snapshots USING INDEX sqlite_autoindex_snapshots_1 (exp=? AND seq=?)", 0,
     "EL"},
    {"snap_delete", "SEARCH snapshots USING INDEX sqlite_autoindex_snapshots_1 (exp=?)", 0, "E"},
    /* the latest below a seq (a correction's rebuild), one step per row */
    {"snapshots", "SEARCH snapshots USING INDEX sqlite_autoindex_snapshots_1 (exp=? AND seq<?)", 0,
     "EL"},
    {"wal", "", 0, NULL},
    {"sync_full", "", 0, NULL},
    {"sync_normal", "", 0, NULL},
    {"no_foreign_keys", "", 0, NULL},
    {"no_autocheckpoint", "", 0, NULL},
    {"backup", "", 0, NULL},
};

#define N_EXPECTS (sizeof expects / sizeof expects[0])

static const struct expect *expect_for(const char *name)
{
    for (size_t i = 0; i < N_EXPECTS; i++)
        if (strcmp(expects[i].name, name) == 0)
            return &expects[i];
    return NULL;
}

/* --- the fixture: a database with two logs ------------------------------------- */

struct logs {
    struct tstore *f;
    sqlite3 *db; /* the test's own read-write connection */
    int64_t small, big;
};

static int setup(void **state)
{
    struct logs *l = calloc(1, sizeof *l);
    struct store_op c[2] = {
        {.kind = STORE_OP_EXP_CREATE, .id = "small", .config_json = "{}", .rowid_out = &l->small},
        {.kind = STORE_OP_EXP_CREATE, .id = "big", .config_json = "{}", .rowid_out = &l->big}};
    assert_non_null(l);
    l->f = tstore_new("plans.db");
    assert_int_equal(store_write_sync(l->f->s, c, 2), STORE_OK);
    fill(l->f->s, l->small, SMALL_ROUNDS);
    fill(l->f->s, l->big, BIG_ROUNDS);
    assert_int_equal(store_key_insert(l->f->s, "k", "read", "abc", NULL, 1, NULL, NULL, NULL),
                     STORE_OK);
    store_close(l->f->s);
    l->f->s = NULL;
    assert_int_equal(sqlite3_open(l->f->path, &l->db), SQLITE_OK);
    *state = l;
    return 0;
}

static int teardown(void **state)
{
    struct logs *l = *state;
    sqlite3_close(l->db);
    tstore_free(l->f);
    free(l);
    return 0;
}

/* --- checks ------------------------------------------------------------------- */

/* EXPLAIN QUERY PLAN of sql, its lines joined by "; ", into out. */
static void plan_of(sqlite3 *db, const char *sql, char *out, size_t len)
{
    char eqp[1024];
    sqlite3_stmt *st = NULL;
    size_t n = 0;

    snprintf(eqp, sizeof eqp, "EXPLAIN QUERY PLAN %s", sql);
    if (sqlite3_prepare_v2(db, eqp, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 3);
        n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s", n ? "; " : "",
                              line ? line : "");
    }
    sqlite3_finalize(st);
}

/* The rule that holds whatever the expectations say: no SCAN of events, and
 * a SEARCH of events bounded by the experiment and a seq, ref or unit (or
 * the experiment alone for one end of a range, when e->end). */
static void check_rule(const struct store_sql *q, const struct expect *e, const char *plan)
{
    char buf[1024], *save = NULL;
    snprintf(buf, sizeof buf, "%s", plan);
    for (char *line = strtok_r(buf, ";", &save); line; line = strtok_r(NULL, ";", &save)) {
        while (*line == ' ')
            line++;
        if (strncmp(line, "SCAN events", 11) == 0)
            fail_msg("%s scans events: %s", q->name, plan);
        if (strncmp(line, "SEARCH events ", 14) != 0)
            continue;
        const char *bound = strchr(line, '(');
        if (bound == NULL) {
            fail_msg("%s: a search of events without a bound: %s", q->name, plan);
            return;
        }
        if (strncmp(bound, "(exp=? AND seq", 14) == 0 ||
            strncmp(bound, "(exp=? AND ref=?", 16) == 0 ||
            strncmp(bound, "(exp=? AND unit=?", 17) == 0)
            continue;
        if (e->end && strcmp(bound, "(exp=?)") == 0 && strstr(q->sql, " LIMIT ") != NULL)
            continue;
        fail_msg("%s: a search of events not bounded by the experiment and a seq, ref or "
                 "unit: %s",
                 q->name, plan);
    }
}

/* The values the parameter letters stand for, in one experiment's log. */
struct probe {
    int64_t exp, last, assign;
    char unit[32];
};

static struct probe probe_of(int64_t exp, int rounds)
{
    struct probe p = {.exp = exp, .last = (int64_t)rounds * ROUND};
    p.assign = (int64_t)(rounds - 1) * ROUND + 1;
    snprintf(p.unit, sizeof p.unit, "unit-%lld", (long long)p.assign);
    return p;
}

/* Run q with the probe's parameters inside a transaction that is rolled
 * back, and return its VM steps; *rows receives the rows it returned or
 * changed. */
static int vm_steps(sqlite3 *db, const struct store_sql *q, const char *params,
                    const struct probe *p, int *rows)
{
    sqlite3_stmt *st = NULL;
    int rc;

    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    if (sqlite3_prepare_v2(db, q->sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", q->name, sqlite3_errmsg(db));
    assert_int_equal((int)strlen(params), sqlite3_bind_parameter_count(st));
    for (int i = 0; params[i]; i++) {
        int k = i + 1;
        switch (params[i]) {
        case 'E':
            rc = sqlite3_bind_int64(st, k, p->exp);
            break;
        case 'L':
            rc = sqlite3_bind_int64(st, k, p->last);
            break;
        case 'N':
            rc = sqlite3_bind_int64(st, k, p->last + 1);
            break;
        case 'T':
            rc = sqlite3_bind_int64(st, k, p->last - 5);
            break;
        case 'A':
            rc = sqlite3_bind_int64(st, k, p->assign);
            break;
        case 'U':
            rc = sqlite3_bind_text(st, k, p->unit, -1, SQLITE_TRANSIENT);
            break;
        case '1':
            rc = sqlite3_bind_int(st, k, 1);
            break;
        case '0':
            rc = sqlite3_bind_int(st, k, 0); /* "any" (an outcome's kind) */
            break;
        case 'M':
            rc = sqlite3_bind_int(st, k, -1); /* "any" (a bandit) */
            break;
        case 's':
            rc = sqlite3_bind_text(st, k, "probe", -1, SQLITE_STATIC);
            break;
        case '_':
            rc = sqlite3_bind_null(st, k);
            break;
        default:
            rc = SQLITE_MISUSE;
            fail_msg("%s: unknown parameter letter %c", q->name, params[i]);
        }
        assert_int_equal(rc, SQLITE_OK);
    }
    *rows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        (*rows)++;
    if (rc != SQLITE_DONE)
        fail_msg("%s: %s", q->name, sqlite3_errmsg(db));
    if (sqlite3_stmt_readonly(st) == 0)
        *rows += sqlite3_changes(db);
    int steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    return steps;
}

static void check_all(struct logs *l, const char *when)
{
    char plan[1024];
    struct probe small = probe_of(l->small, SMALL_ROUNDS), big = probe_of(l->big, BIG_ROUNDS);
    const struct store_sql *q;
    size_t i;

    for (i = 0; (q = store_test_sql(i)) != NULL; i++) {
        const struct expect *e = expect_for(q->name);
        if (e == NULL) {
            fail_msg("store statement \"%s\" (%s) has no expected plan here: add one", q->name,
                     q->sql);
            return;
        }
        plan_of(l->db, q->sql, plan, sizeof plan);
        if (strcmp(plan, e->plan) != 0)
            fail_msg("%s (%s): plan \"%s\", expected \"%s\"", q->name, when, plan, e->plan);
        check_rule(q, e, plan);
        if (e->params == NULL)
            continue;
        int rows_small, rows_big;
        int s_small = vm_steps(l->db, q, e->params, &small, &rows_small);
        int s_big = vm_steps(l->db, q, e->params, &big, &rows_big);
        assert_int_equal(rows_small, rows_big); /* the same work asked of both */
        if (s_big > s_small + WORK_SLACK)
            fail_msg("%s (%s): %d VM steps on a log of %d events, %d on one of %d: its work "
                     "grows with the log",
                     q->name, when, s_big, BIG_ROUNDS * ROUND, s_small, SMALL_ROUNDS * ROUND);
    }
    assert_int_equal(i, N_EXPECTS); /* and no expectation for a statement that is gone */
}

static void test_plans(void **state)
{
    struct logs *l = *state;
    check_all(l, "without statistics");
    assert_int_equal(sqlite3_exec(l->db, "ANALYZE", NULL, NULL, NULL), SQLITE_OK);
    check_all(l, "after ANALYZE");
}

/* The probes find what they should: the work check measures real lookups. */
static void test_probes_hit(void **state)
{
    struct logs *l = *state;
    struct store_event ev;
    char err[256], unit[32];
    struct probe big = probe_of(l->big, BIG_ROUNDS);
    int64_t last;

    l->f->s = store_open(l->f->path, STORE_SYNC_NORMAL, err, sizeof err);
    if (l->f->s == NULL)
        fail_msg("reopen: %s", err);
    assert_int_equal(store_find_outcome(l->f->s, l->big, big.assign, &ev), STORE_OK);
    assert_int_equal(ev.kind, STORE_EV_REWARD);
    assert_int_equal(ev.seq, big.assign + 2);
    /* expired, then a late reward: the first outcome is the expiry */
    assert_int_equal(store_find_outcome(l->f->s, l->big, big.assign + 1, &ev), STORE_OK);
    assert_int_equal(ev.kind, STORE_EV_EXPIRE);
    assert_int_equal(store_find_outcome(l->f->s, l->big, 1, &ev), STORE_OK);
    assert_int_equal(ev.seq, 3);
    assert_int_equal(store_find_unit(l->f->s, l->big, big.unit, &ev), STORE_OK);
    assert_int_equal(ev.seq, big.assign);
    assert_int_equal(store_find_assignment(l->f->s, l->big, big.assign, &ev, unit, sizeof unit),
                     STORE_OK);
    assert_string_equal(unit, big.unit);
    assert_int_equal(store_last_seq(l->f->s, l->big, &last), STORE_OK);
    assert_int_equal(last, big.last);
    store_close(l->f->s);
    l->f->s = NULL;
}

/* --- PostgreSQL ---------------------------------------------------------------- */
/*
 * The same database on the PostgreSQL backend (store_test_pg_sql), checked
 * with EXPLAIN (ANALYZE, BUFFERS) EXECUTE inside a transaction that is
 * rolled back, with the plan PostgreSQL would choose for those values and
 * with the generic plan a prepared statement settles on after five runs
 * (plan_cache_mode), before and after ANALYZE:
 *
 *   1. no Seq Scan of events, and the statement's index is used;
 *   2. no Sort above events where the index gives the order (the first
 *      outcome, a unit's latest assignment, the last seq);
 *   3. the buffers it touches are the same on the small log as on the big
 *      one (PG_WORK_SLACK: a B-tree one level deeper), with the same rows.
 */

#define PG_WORK_SLACK 4

struct pg_expect {
    const char *name;
    const char *index;  /* the index the plan must use; NULL: none asked */
    int no_sort;        /* the order must come from the index */
    const char *params; /* letters as above; NULL: not run */
};

static const struct pg_expect pg_expects[] = {
    {"begin", NULL, 0, NULL},
    {"commit", NULL, 0, NULL},
    {"rollback", NULL, 0, NULL},
    {"savepoint", NULL, 0, NULL},
    {"release", NULL, 0, NULL},
    {"rollback_to", NULL, 0, NULL},
    {"exp_insert", NULL, 0, "ss1"},
    {"exp_delete", NULL, 0, "E"}, /* two rows here: a scan is right */
    {"purge_add", NULL, 0, "E"},
    {"purge_next", NULL, 0, ""},
    {"purge_chunk", "events_pkey", 0, "E"},
    {"purge_done", NULL, 0, "E"},
    {"event_insert", NULL, 0, "EN1111111111sss"},
    {"event_insert_many", NULL, 0, NULL}, /* arrays: an insert, no search */
    {"key_insert", NULL, 0, "sss1s"},
    {"key_revoke", NULL, 0, "1"},
    {"audit_lock", NULL, 0, NULL}, /* a lock: no plan */
    {"audit_last", NULL, 0, ""},   /* keys and creations: a few rows */
    {"audit_insert", NULL, 0, "N11sssss"},
    {"key_notify", NULL, 0, ""}, /* no table */
    {"outbox_insert", NULL, 0, "Essssss11"},
    {"outbox_update", NULL, 0, "111111s1"},
    {"outbox_prune", NULL, 0, "1"},
    {"exists", NULL, 0, "E"},
    {"lock_try", NULL, 0, NULL}, /* locks: no table */
    {"lock", NULL, 0, NULL},
    {"lock_holder", NULL, 0, NULL}, /* pg_locks and nodes: a few rows */
    {"terminate", NULL, 0, NULL},
    {"beat", NULL, 0, NULL},
    {"node_gone", NULL, 0, NULL},
    {"experiments", NULL, 0, ""},
    {"experiment_by_id", NULL, 0, "s"}, /* two rows here: a scan is right */
    {"events", "events_pkey", 0, "ET"}, /* a sort of the rows it returns at most */
    {"assignment", "events_pkey", 0, "EA"},
    {"outcome", "events_ref", 1, "EA0"},
    {"unit", "events_unit", 1, "EUM"},
    {"last_seq", "events_pkey", 1, "E"},
    {"last_event", "events_pkey", 1, "E"}, /* a delete's record */
    {"keys", NULL, 0, ""},
    {"audit", NULL, 0, ""},
    {"outbox_pending", NULL, 0, "1111s1"}, /* with pg_locks and nodes: a few rows */
    {"outbox_list", NULL, 0, "E11"},
    {"outbox_depth", NULL, 0, ""},
    {"snap_insert", NULL, 0, NULL},          /* a bytea parameter: run unprepared */
    {"snap_seqs", "snapshots_pkey", 0, "E"}, /* at most STORE_SNAPSHOTS_MAX + 1 rows */
    {"snap_drop", "snapshots_pkey", 0, "EL"},
    {"snap_delete", "snapshots_pkey", 0, "E"},
    {"snapshots", "snapshots_pkey", 1, "EL"}, /* the latest below a seq */
};

#define N_PG_EXPECTS (sizeof pg_expects / sizeof pg_expects[0])

struct pglogs {
    struct tstore *f;
    PGconn *c;
    int64_t small, big;
};

static int pg_setup(void **state)
{
    struct pglogs *l = calloc(1, sizeof *l);
    assert_non_null(l);
    struct store_op c[2] = {
        {.kind = STORE_OP_EXP_CREATE, .id = "small", .config_json = "{}", .rowid_out = &l->small},
        {.kind = STORE_OP_EXP_CREATE, .id = "big", .config_json = "{}", .rowid_out = &l->big}};
    l->f = tstore_new_pg();
    assert_int_equal(store_write_sync(l->f->s, c, 2), STORE_OK);
    fill(l->f->s, l->small, SMALL_ROUNDS);
    fill(l->f->s, l->big, BIG_ROUNDS);
    assert_int_equal(store_key_insert(l->f->s, "k", "read", "abc", NULL, 1, NULL, NULL, NULL),
                     STORE_OK);
    store_close(l->f->s);
    l->f->s = NULL;
    l->c = PQconnectdb(l->f->path);
    assert_int_equal(PQstatus(l->c), CONNECTION_OK);
    /* other experiments' snapshots, a dozen each, as on a busy database:
     * a table of a few rows is scanned whatever its index */
    PGresult *r = PQexec(l->c, "INSERT INTO snapshots SELECT 1000000 + g / 12, g % 12, 1, 't',"
                               " 'd', 'c', 0, '\\x00' FROM generate_series(0, 23999) g");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    *state = l;
    return 0;
}

static int pg_teardown(void **state)
{
    struct pglogs *l = *state;
    PQfinish(l->c);
    tstore_free(l->f);
    free(l);
    return 0;
}

static void pg_run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
}

/* The parameters' literals for EXECUTE, e.g. "(3, 'unit-7')", into out. */
static void pg_args(const char *name, const char *params, const struct probe *p, char *out,
                    size_t len)
{
    size_t n = 0;
    if (params[0] == '\0') {
        out[0] = '\0';
        return;
    }
    n += (size_t)snprintf(out, len, "(");
    for (int i = 0; params[i]; i++) {
        char v[64];
        switch (params[i]) {
        case 'E':
            snprintf(v, sizeof v, "%lld", (long long)p->exp);
            break;
        case 'L':
            snprintf(v, sizeof v, "%lld", (long long)p->last);
            break;
        case 'N':
            snprintf(v, sizeof v, "%lld", (long long)p->last + 1);
            break;
        case 'T':
            snprintf(v, sizeof v, "%lld", (long long)p->last - 5);
            break;
        case 'A':
            snprintf(v, sizeof v, "%lld", (long long)p->assign);
            break;
        case 'U':
            snprintf(v, sizeof v, "'%s'", p->unit);
            break;
        case '1':
        case '0':
            snprintf(v, sizeof v, "%c", params[i]);
            break;
        case 'M':
            snprintf(v, sizeof v, "-1");
            break;
        case 's':
            snprintf(v, sizeof v, "'probe'");
            break;
        default:
            fail_msg("%s: unknown parameter letter %c", name, params[i]);
            return;
        }
        n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s", i ? ", " : "", v);
    }
    snprintf(out + n, n < len ? len - n : 0, ")");
}

/* EXPLAIN (ANALYZE, BUFFERS) of prepared statement q with p's values in a
 * rolled-back transaction: the plan's lines into plan, the buffers its
 * top node touched returned, the rows it returned or changed in *rows. */
static long pg_explain(PGconn *c, const struct store_sql *q, const struct pg_expect *e,
                       const struct probe *p, char *plan, size_t len, long *rows)
{
    char sql[512], args[256];
    size_t n = 0;
    long buffers = -1;

    pg_args(q->name, e->params, p, args, sizeof args);
    pg_run(c, "BEGIN");
    snprintf(sql, sizeof sql, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE %s%s",
             q->name, args);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    plan[0] = '\0';
    *rows = -1;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *line = PQgetvalue(r, i, 0);
        const char *b = strstr(line, "Buffers: shared");
        n += (size_t)snprintf(plan + n, n < len ? len - n : 0, "%s\n", line);
        if (b != NULL && buffers < 0) { /* the top node's: the whole statement's */
            long hit = 0, read = 0;
            const char *h = strstr(b, "hit="), *rd = strstr(b, "read=");
            if (h)
                hit = strtol(h + 4, NULL, 10);
            if (rd)
                read = strtol(rd + 5, NULL, 10);
            buffers = hit + read;
        }
        const char *ar = strstr(line, "actual rows=");
        if (ar != NULL && *rows < 0)
            *rows = strtol(ar + 12, NULL, 10);
    }
    PQclear(r);
    pg_run(c, "ROLLBACK");
    return buffers < 0 ? 0 : buffers;
}

static void pg_check_all(struct pglogs *l, const char *when)
{
    char plan[4096];
    struct probe small = probe_of(l->small, SMALL_ROUNDS), big = probe_of(l->big, BIG_ROUNDS);
    const struct store_sql *q;
    size_t i, j;

    for (i = 0; (q = store_test_pg_sql(i)) != NULL; i++) {
        const struct pg_expect *e = NULL;
        for (j = 0; j < N_PG_EXPECTS; j++)
            if (strcmp(pg_expects[j].name, q->name) == 0)
                e = &pg_expects[j];
        if (e == NULL) {
            fail_msg("PostgreSQL statement \"%s\" (%s) has no expectation here: add one", q->name,
                     q->sql);
            return;
        }
        if (e->params == NULL)
            continue;
        char prep[1024];
        snprintf(prep, sizeof prep, "PREPARE %s AS %s", q->name, q->sql);
        pg_run(l->c, prep);
        long rows_small, rows_big;
        long b_small = pg_explain(l->c, q, e, &small, plan, sizeof plan, &rows_small);
        long b_big = pg_explain(l->c, q, e, &big, plan, sizeof plan, &rows_big);
        if (strstr(plan, "Seq Scan on events") != NULL)
            fail_msg("%s (%s) scans events:\n%s", q->name, when, plan);
        if (e->index != NULL && strstr(plan, e->index) == NULL)
            fail_msg("%s (%s) does not use %s:\n%s", q->name, when, e->index, plan);
        if (e->no_sort && strstr(plan, "Sort") != NULL)
            fail_msg("%s (%s) sorts what its index orders:\n%s", q->name, when, plan);
        if (strstr(q->sql, "events") != NULL) {
            if (rows_small != rows_big)
                fail_msg("%s (%s): %ld rows on the small log, %ld on the big one", q->name, when,
                         rows_small, rows_big);
            if (b_big > b_small + PG_WORK_SLACK)
                fail_msg("%s (%s): %ld buffers on a log of %d events, %ld on one of %d: its "
                         "work grows with the log:\n%s",
                         q->name, when, b_big, BIG_ROUNDS * ROUND, b_small, SMALL_ROUNDS * ROUND,
                         plan);
        }
        snprintf(prep, sizeof prep, "DEALLOCATE %s", q->name);
        pg_run(l->c, prep);
    }
    assert_int_equal(i, N_PG_EXPECTS);
}

static void test_pg_plans(void **state)
{
    struct pglogs *l = *state;
    pg_run(l->c, "SET plan_cache_mode = force_custom_plan");
    pg_check_all(l, "custom plans, without statistics");
    pg_run(l->c, "SET plan_cache_mode = force_generic_plan");
    pg_check_all(l, "generic plans, without statistics");
    pg_run(l->c, "ANALYZE");
    pg_run(l->c, "SET plan_cache_mode = force_custom_plan");
    pg_check_all(l, "custom plans, after ANALYZE");
    pg_run(l->c, "SET plan_cache_mode = force_generic_plan");
    pg_check_all(l, "generic plans, after ANALYZE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probes_hit),
        cmocka_unit_test(test_plans),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_pg_plans),
    };
    /* one database for both: building it is most of the suite's time */
    int failed = cmocka_run_group_tests_name("store_plans", tests, setup, teardown);
    return failed +
           cmocka_run_group_tests_name("store_plans-postgresql", pg_tests, pg_setup, pg_teardown);
}
