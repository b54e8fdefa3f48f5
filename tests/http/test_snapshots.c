/*
 * test_snapshots.c — a restart from a snapshot continues exactly as a full
 * replay of the log does (issue 14 item 4). Two daemons get the same
 * requests in the same order: one writes a snapshot every 25 events, the
 * witness runs with --no-snapshots and rebuilds from its whole log at every
 * start. Both are killed with SIGKILL mid-run (rewards outstanding, units
 * bound) and restarted: the first from its latest snapshot and the tail of
 * its log (its load line says so), then, killed again, from a snapshot made
 * unreadable on disk (a bad checksum: it falls back to the full log, and
 * says why). Every answer — each assignment's seq, bandit, arm and exploit
 * flag, each reward's outcome — and every status document must be the same
 * on both, before and after each restart and at the end; a clean stop
 * leaves a snapshot of the last event, so the next start replays nothing.
 * A snapshot whose state is wrong under a right checksum (a bug, a partial
 * write, a hand edit that redid the checksum: truncated, a count changed,
 * an arm index or a tie-break rank out of range) is refused by the
 * decoder's own checks: the daemon starts, logs why, replays the log and
 * serves what the witness does.
 * On PostgreSQL (a server the test starts, tests/support/tpg.h): the owner
 * is killed and another daemon takes the experiment over from the latest
 * snapshot (its log line says so), answering as the witness on SQLite does.
 * A snapshot is written after its batch, in a transaction of its own: a
 * daemon killed between the two (BANDITD_STORE_KILL_ASIDE) has every
 * answered event on disk and no second snapshot; it restarts from the
 * first and the tail, into the state a replay of the whole log gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "base/digest.h"
#include "tests/support/harness.h"
#include "tests/support/tbytes.h"
#include "tests/support/tpg.h"

#define STEPS 360
#define DELAY 6
#define CREATE                                                                                     \
    "{\"id\":\"x\",\"arms\":[\"a\",\"b\",\"c\",\"d\"],\"policy\":{\"name\":\"ttts\"},\"seed\":7}"

struct side {
    struct tdaemon *d;
    char ids[STEPS][64]; /* assignment ids waiting for their reward, oldest at head */
    int reward[STEPS];
    size_t head, tail;
};

static void describe(json_t *one, char *buf, size_t len)
{
    long long seq = (long long)tassignment_seq(tjson_str(one, "id"), NULL, 0);
    assert_true(seq > 0);
    snprintf(buf, len, "%lld %s %s %d", seq, tjson_str(one, "bandit"), tjson_str(one, "arm"),
             json_is_true(json_object_get(one, "exploit")));
}

static void same_status(struct side *s, const char *when)
{
    json_t *a = texp_status(s[0].d, "x"), *b = texp_status(s[1].d, "x");
    if (!json_equal(a, b)) {
        char *ta = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
        char *tb = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("status differs %s:\nsnapshots %s\nwitness   %s", when, ta, tb);
    }
    json_decref(a);
    json_decref(b);
}

/* The last load line of d's log says `want` ("(1 from a snapshot)"). */
static void last_load_says(struct tdaemon *d, const char *want)
{
    char *log = tdaemon_stderr(d);
    if (log == NULL) {
        fail_msg("no log");
        return;
    }
    const char *last = NULL;
    for (const char *p = strstr(log, "info: loaded "); p != NULL;
         p = strstr(p + 1, "info: loaded "))
        last = p;
    if (last == NULL) {
        fail_msg("no load line");
        return;
    }
    const char *eol = strchr(last, '\n');
    if (strstr(last, want) == NULL || (eol != NULL && strstr(last, want) > eol))
        fail_msg("want \"%s\" in the load line: %.*s", want,
                 eol != NULL ? (int)(eol - last) : (int)strlen(last), last);
    free(log);
}

static void sql(struct tdaemon *d, const char *stmt)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(db, stmt, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", stmt, err);
    sqlite3_close(db);
}

/* The one integer stmt selects from d's database. */
static int64_t sql_int(struct tdaemon *d, const char *stmt)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, stmt, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void kill_both(struct side *s)
{
    for (int k = 0; k < 2; k++)
        assert_int_equal(tdaemon_kill(s[k].d), 0);
}

static void restart(struct side *s)
{
    for (int k = 0; k < 2; k++)
        assert_int_equal(tdaemon_restart(s[k].d), 0);
}

/* Step t on both sides: the same request, the same answer; the rewards
 * come back DELAY assignments late, each accepted (or a duplicate) on both. */
static void step(struct side *s, int t, struct trng *g)
{
    static const double mu[4] = {0.3, 0.45, 0.5, 0.7};
    char body[64] = "{}", what[2][128];
    if (t % 5 == 0) /* a sticky unit, some of them returning */
        snprintf(body, sizeof body, "{\"unit\":\"u%d\"}", t % 35);
    json_t *ans[2];
    for (int k = 0; k < 2; k++) {
        ans[k] = texp_assign(s[k].d, "x", body);
        describe(json_array_get(ans[k], 0), what[k], sizeof what[k]);
    }
    if (strcmp(what[0], what[1]) != 0)
        fail_msg("step %d: the daemon with snapshots answered %s, the witness %s", t, what[0],
                 what[1]);
    json_t *one = json_array_get(ans[0], 0);
    if (!json_is_true(json_object_get(one, "exploit"))) {
        int r = trng_bernoulli(g, mu[tjson_int(one, "arm_index")]);
        for (int k = 0; k < 2; k++) {
            snprintf(s[k].ids[s[k].tail], 64, "%s", tjson_str(json_array_get(ans[k], 0), "id"));
            s[k].reward[s[k].tail++] = r;
        }
    }
    json_decref(ans[0]);
    json_decref(ans[1]);
    if (s[0].tail - s[0].head > DELAY) {
        /* a unit's second visit got its first assignment back: its reward
         * is then a duplicate, on both */
        char first[32];
        snprintf(first, sizeof first, "%s",
                 texp_reward(s[0].d, "x", s[0].ids[s[0].head], s[0].reward[s[0].head]));
        assert_string_equal(first,
                            texp_reward(s[1].d, "x", s[1].ids[s[1].head], s[1].reward[s[1].head]));
        s[0].head++;
        s[1].head++;
    }
}

/* Two daemons on SQLite with experiment x each: one writing a snapshot
 * every 25 events, the witness with --no-snapshots. */
static struct side *two_sides(void)
{
    static const char *const snap_flags[] = {"--snapshot-every", "25", NULL};
    static const char *const witness_flags[] = {"--no-snapshots", NULL};
    struct side *s = calloc(2, sizeof *s);
    assert_non_null(s);
    s[0].d = tdaemon_start(snap_flags);
    s[1].d = tdaemon_start(witness_flags);
    assert_non_null(s[0].d);
    assert_non_null(s[1].d);
    for (int k = 0; k < 2; k++)
        json_decref(texp_create(s[k].d, CREATE));
    return s;
}

static void test_restart_from_snapshot(void **state)
{
    (void)state;
    struct side *s = two_sides();
    struct trng g;
    trng_seed(&g, 14);
    for (int t = 0; t < STEPS; t++) {
        step(s, t, &g);
        if (t == 150 || t == 280) {
            json_t *before = texp_status(s[0].d, "x");
            assert_true(tjson_int(before, "pending") > 0);
            kill_both(s);
            if (t == 280) /* the snapshots unreadable: the full log is replayed */
                sql(s[0].d, "UPDATE snapshots SET state = zeroblob(length(state))");
            restart(s);
            last_load_says(s[0].d, t == 150 ? "(1 from a snapshot)" : "(0 from a snapshot)");
            last_load_says(s[1].d, "(0 from a snapshot)");
            json_t *after = texp_status(s[0].d, "x");
            assert_true(json_equal(before, after));
            json_decref(before);
            json_decref(after);
            same_status(s, t == 150 ? "after a restart from a snapshot"
                                    : "after a restart past a bad snapshot");
        }
    }
    char *log = tdaemon_stderr(s[0].d);
    if (log == NULL || strstr(log, "not used (checksum mismatch)") == NULL)
        fail_msg("no warning of the damaged snapshot");
    free(log);
    same_status(s, "at the end");
    /* A clean stop snapshots the last event: the next start replays none. */
    assert_int_equal(tdaemon_stop(s[0].d), 0);
    assert_int_equal(tdaemon_restart(s[0].d), 0);
    last_load_says(s[0].d, "(1 from a snapshot), 0 events replayed");
    same_status(s, "after a clean restart");
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tdaemon_stop(s[k].d), 0);
        tdaemon_free(s[k].d);
    }
    free(s);
}

/* Where the state's fields sit (exp/snapshot.c, engine_snap) for CREATE:
 * one bandit of 4 arms, ttts. The first arm's reward count follows the
 * layout's format, the configuration's hash, seq, state, time and chain,
 * then the engine's format, policy name, bandits, instances and arm
 * count; the ranks follow the 4 arms' statistics (11 fields each) and their
 * count. The last pending assignment ends the state, in varints (ser.h):
 * seq, bandit, arm, created, expires (last_arm). */
#define OFF_ARM0_N (8 + (8 + 64) + 8 + 4 + 8 + (8 + 65) + 8 + (8 + 4) + 8 + 8 + 8)
#define OFF_RANK0 (OFF_ARM0_N + 4 * 11 * 8 + 8)

/* The first byte of the varint that ends just before b + end (its last
 * byte has the high bit clear, the others set). */
static size_t varint_start(const unsigned char *b, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && (b[i - 1] & 0x80))
        i--;
    return i;
}

/* The offset of the last pending assignment's arm (one byte: below 128),
 * before its creation's and expiry's varints. */
static size_t last_arm(const unsigned char *b, size_t len)
{
    return varint_start(b, varint_start(b, len)) - 1;
}

enum damage { TRUNCATED, COUNT_CHANGED, ARM_OUT_OF_RANGE, RANK_OUT_OF_RANGE, N_DAMAGES };
static const char *const damage_name[N_DAMAGES] = {
    "truncated", "a count changed", "an arm index out of range", "a rank out of range"};

/* Keep only d's latest snapshot, damage its state as `how` says and redo
 * its checksum, so that only the decoder can tell. arm0_pulls: the first
 * arm's reward count, which the layout must show where expected. */
static void damage_snapshot(struct tdaemon *d, enum damage how, int64_t arm0_pulls)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "DELETE FROM snapshots WHERE seq < (SELECT max(seq) FROM"
                                  " snapshots)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT seq, state FROM snapshots", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t seq = sqlite3_column_int64(st, 0);
    size_t len = (size_t)sqlite3_column_bytes(st, 1);
    unsigned char *b = malloc(len);
    assert_non_null(b);
    memcpy(b, sqlite3_column_blob(st, 1), len);
    sqlite3_finalize(st);
    assert_true(len > OFF_RANK0 + 4 + 32);
    /* the layout is where this test expects it */
    assert_int_equal((int64_t)tbytes_get_le(b + OFF_ARM0_N, 8), arm0_pulls);
    assert_true(tbytes_get_le(b + OFF_RANK0, 4) < 4);
    assert_true(b[last_arm(b, len)] < 4);
    switch (how) {
    case TRUNCATED:
        len -= 9;
        break;
    case COUNT_CHANGED:
        tbytes_put_le(b + OFF_ARM0_N, 8, (uint64_t)arm0_pulls + 1);
        break;
    case ARM_OUT_OF_RANGE:
        b[last_arm(b, len)] = 99;
        break;
    case RANK_OUT_OF_RANGE:
        tbytes_put_le(b + OFF_RANK0, 4, 77);
        break;
    default:
        break;
    }
    char sum[DIGEST_SHA256_HEX + 1];
    const void *pieces[1] = {b};
    size_t lens[1] = {len};
    assert_int_equal(digest_sha256_hex(pieces, lens, 1, sum), 0);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "UPDATE snapshots SET state = ?1, checksum = ?2"
                                        " WHERE seq = ?3",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(st, 1, b, (int)len, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, sum, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, seq);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(b);
}

/* How many times `what` occurs in d's log. */
static int log_count(struct tdaemon *d, const char *what)
{
    char *log = tdaemon_stderr(d);
    int n = 0;
    for (const char *p = log != NULL ? strstr(log, what) : NULL; p != NULL; p = strstr(p + 1, what))
        n++;
    free(log);
    return n;
}

static void test_bad_snapshot_state(void **state)
{
    (void)state;
    struct side *s = two_sides();
    struct trng g;
    trng_seed(&g, 16);
    int t = 0;
    for (int how = 0; how < N_DAMAGES; how++) {
        for (int end = t + 40; t < end; t++)
            step(s, t, &g);
        json_t *st = texp_status(s[0].d, "x");
        json_t *arm0 = json_array_get(
            json_object_get(json_array_get(json_object_get(st, "bandits"), 0), "arms"), 0);
        int64_t pulls = tjson_int(arm0, "pulls");
        assert_true(tjson_int(st, "pending") > 0); /* a pending assignment ends the state */
        json_decref(st);
        /* a clean stop snapshots the last event */
        assert_int_equal(tdaemon_stop(s[0].d), 0);
        damage_snapshot(s[0].d, (enum damage)how, pulls);
        assert_int_equal(tdaemon_restart(s[0].d), 0);
        last_load_says(s[0].d, "(0 from a snapshot)");
        if (log_count(s[0].d, "not used (state does not parse") != how + 1)
            fail_msg("%s: no warning of the damaged snapshot", damage_name[how]);
        char when[96];
        snprintf(when, sizeof when, "after a restart past a snapshot %s", damage_name[how]);
        same_status(s, when);
    }
    for (int end = t + 20; t < end; t++)
        step(s, t, &g);
    same_status(s, "at the end");
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tdaemon_stop(s[k].d), 0);
        tdaemon_free(s[k].d);
    }
    free(s);
}

/* On PostgreSQL: the owner writes snapshots; killed with SIGKILL, its
 * experiment is taken over by another daemon, which loads it from the
 * latest snapshot and the tail, and answers as a witness on SQLite that
 * replays its whole log at every start. */
static void test_takeover_from_snapshot(void **state)
{
    (void)state;
    char uri[256];
    tpg_new_db(uri, sizeof uri);
    const char *const pg_flags[] = {"--db", uri, "--snapshot-every", "25", NULL};
    static const char *const witness_flags[] = {"--no-snapshots", NULL};
    struct side *s = calloc(2, sizeof *s);
    assert_non_null(s);
    struct tdaemon *owner = tdaemon_start(pg_flags), *other = tdaemon_start(pg_flags);
    s[0].d = owner;
    s[1].d = tdaemon_start(witness_flags);
    assert_non_null(owner);
    assert_non_null(other);
    assert_non_null(s[1].d);
    for (int k = 0; k < 2; k++)
        json_decref(texp_create(s[k].d, CREATE));
    struct trng g;
    trng_seed(&g, 15);
    int t = 0;
    for (; t < 140; t++)
        step(s, t, &g);
    assert_true(tpg_count(uri, "SELECT count(*) FROM snapshots") >= 1);
    json_t *before = texp_status(owner, "x");
    assert_int_equal(tdaemon_kill(owner), 0);
    /* the other daemon takes it over at its first request */
    struct tresp *r = NULL;
    for (int i = 0; i < 500; i++) {
        r = treq(other, "GET", "/v1/experiments/x/status", NULL, NULL);
        if (r->status == 200)
            break;
        assert_int_equal(r->status, 503);
        tresp_free(r);
        r = NULL;
        tsleep_ms(20);
    }
    assert_non_null(r);
    tresp_free(r);
    json_t *after = texp_status(other, "x");
    assert_true(json_equal(before, after));
    json_decref(before);
    json_decref(after);
    char *log = tdaemon_stderr(other);
    if (log == NULL) {
        fail_msg("no log");
        return;
    }
    if (strstr(log, "experiment x reloaded from disk after a failed write or a takeover") == NULL ||
        strstr(log, "from the snapshot at seq") == NULL)
        fail_msg("the takeover did not start from a snapshot:\n%s", log);
    free(log);
    s[0].d = other;
    for (; t < 220; t++)
        step(s, t, &g);
    same_status(s, "after the takeover");
    assert_int_equal(tdaemon_stop(other), 0);
    assert_int_equal(tdaemon_stop(s[1].d), 0);
    tdaemon_free(owner);
    tdaemon_free(other);
    tdaemon_free(s[1].d);
    free(s);
}

/* Killed between a batch's commit and its snapshot's write: the writer
 * raises SIGKILL just before the second snapshot (the second aside write),
 * after the group holding that snapshot's batch was committed and answered. */
static void test_crash_before_snapshot_write(void **state)
{
    (void)state;
    static const char *const flags[] = {"--snapshot-every", "25", NULL};
    setenv("BANDITD_STORE_KILL_ASIDE", "2", 1);
    struct tdaemon *d = tdaemon_start(flags);
    unsetenv("BANDITD_STORE_KILL_ASIDE"); /* restarts run without it */
    assert_non_null(d);
    json_decref(texp_create(d, CREATE));
    char held[400][64];
    int64_t last_seq = 0;
    size_t nheld = 0, rewarded = 0, t = 0;
    struct trng g;
    trng_seed(&g, 17);
    /* assignments, each other one rewarded two steps later, until the kill */
    for (; t < 400; t++) {
        struct tresp *r = treq(d, "POST", "/v1/experiments/x/assignments", "{}", NULL);
        int ok = r->status == 200 || r->status == 201;
        if (ok) {
            const char *id = tjson_str(r->json, "assignments[0].id");
            assert_non_null(id);
            snprintf(held[nheld++], sizeof held[0], "%s", id);
            last_seq = tassignment_seq(id, NULL, 0);
        }
        tresp_free(r);
        if (!ok)
            break;
        if (t % 2 == 1 && nheld >= 3) {
            r = treqf(d, "POST", "/v1/experiments/x/rewards",
                      "{\"assignment_id\":\"%s\",\"reward\":%d}", held[nheld - 3],
                      trng_bernoulli(&g, 0.5));
            ok = r->status == 200 &&
                 strcmp(tjson_str(r->json, "results[0].status"), "accepted") == 0;
            tresp_free(r);
            if (!ok)
                break;
            rewarded++;
        }
    }
    if (t == 400)
        fail_msg("the daemon was not killed at its second snapshot's write");
    assert_int_equal(tdaemon_wait(d), 128 + SIGKILL);
    /* the first snapshot only; every answered event on disk, and the batch
     * the second snapshot followed (25 events or more after the first) */
    assert_int_equal(sql_int(d, "SELECT count(*) FROM snapshots"), 1);
    int64_t snap = sql_int(d, "SELECT seq FROM snapshots"),
            last = sql_int(d, "SELECT max(seq) FROM events");
    assert_true(snap >= 25);
    assert_true(last >= snap + 25);
    assert_true(last >= last_seq);
    /* the restart starts from that snapshot and replays the tail */
    assert_int_equal(tdaemon_restart(d), 0);
    last_load_says(d, "(1 from a snapshot)");
    json_t *from_snap = texp_status(d, "x");
    assert_true(tjson_int(from_snap, "pending") > 0);
    long long pulls = 0;
    json_t *arms =
        json_object_get(json_array_get(json_object_get(from_snap, "bandits"), 0), "arms");
    for (size_t i = 0; i < json_array_size(arms); i++)
        pulls += tjson_int(json_array_get(arms, i), "pulls");
    assert_true(pulls >= (long long)rewarded); /* every answered reward counted */
    assert_int_equal(tdaemon_kill(d), 0);
    /* and that state is the whole log's */
    static const char *const replay[] = {"--no-snapshots", NULL};
    assert_int_equal(tdaemon_launch(d, replay, 0), 0);
    last_load_says(d, "(0 from a snapshot)");
    json_t *from_log = texp_status(d, "x");
    tjson_must_equal(from_snap, from_log, "status (snapshot + tail, whole log)");
    json_decref(from_snap);
    json_decref(from_log);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_from_snapshot),
        cmocka_unit_test(test_bad_snapshot_state),
        cmocka_unit_test(test_crash_before_snapshot_write),
        cmocka_unit_test(test_takeover_from_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
