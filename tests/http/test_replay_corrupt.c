/*
 * test_replay_corrupt.c — a corrupt row in a stored event log (issue 13:
 * "replay silently skips or accepts corrupt rows"). Several experiments get
 * a few events each; the daemon stops; one row of each but one is then
 * damaged with SQLite directly (an arm out of range, an unknown kind, a
 * reward that refers to no assignment, a gap in seq, a reward outside the
 * reward range, an unknown state); the daemon starts again.
 *
 * What must happen (exp/replay.c and api/ implement it):
 *   - the daemon starts and serves the intact experiment exactly as before;
 *   - it refuses to serve each damaged one: every request on it (GET,
 *     status, assignments, rewards, PATCH) answers 500 problem+json with
 *     type "urn:banditd:problem:corrupt-log" and a detail naming the seq
 *     and what is wrong — 500, not 503: retrying will not help, an operator
 *     must; not 404: the id is still taken (a create of it is 409);
 *   - DELETE of a damaged experiment works (204): the operator's way out;
 *   - one log line per damaged experiment at error level:
 *     "experiment ID: event log corrupt at seq N (WHAT); not served";
 *   - the gauge banditd_experiments_corrupt counts them (0 when none).
 *
 * Replay used to skip or accept every one of these rows and serve the
 * experiment; this test fails if it does again. The daemon runs with
 * --no-snapshots: the clean stop would otherwise snapshot every experiment,
 * and a load from a snapshot reads no row before it (exp/snapshot.c; the
 * audit chain's verify finds such damage, docs/operations.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tests/support/faults.h"
#include "tests/support/harness.h"
#include "tests/support/prom.h"

struct damage {
    const char *id;
    const char *what;
    const char *sql; /* ?1: the experiment's rowid */
};

/* Each experiment's log: ASSIGN 1, REWARD 2 (of 1), ASSIGN 3, REWARD 4 (of
 * 3), STATE 5 (paused), STATE 6 (running). */
static const struct damage g_damage[] = {
    {"bad-arm", "arm out of range", "UPDATE events SET arm = 99 WHERE exp = ?1 AND seq = 3"},
    {"bad-kind", "unknown kind", "UPDATE events SET kind = 42 WHERE exp = ?1 AND seq = 2"},
    {"bad-orphan", "reward of no assignment",
     "UPDATE events SET ref = 999 WHERE exp = ?1 AND seq = 4"},
    {"bad-gap", "seq gap", "DELETE FROM events WHERE exp = ?1 AND seq = 3"},
    {"bad-value", "reward outside the range",
     "UPDATE events SET value = 7 WHERE exp = ?1 AND seq = 2"},
    {"bad-state", "unknown state", "UPDATE events SET text = 'bogus' WHERE exp = ?1 AND seq = 5"},
};
#define NDAMAGE (sizeof g_damage / sizeof g_damage[0])

static void fill(struct tdaemon *d, const char *id)
{
    char body[160], path[96];
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"arms\":[\"a\",\"b\"],\"policy\":{\"name\":\"uniform\"},\"seed\":1}",
             id);
    json_decref(texp_create(d, "%s", body));
    for (int i = 0; i < 2; i++) {
        json_t *a = texp_assign(d, id, "{}");
        assert_string_equal(texp_reward(d, id, tjson_str(a, "[0].id"), 1), "accepted");
        json_decref(a);
    }
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    json_decref(tcall(d, "PATCH", path, "{\"state\":\"paused\"}", 200));
    json_decref(tcall(d, "PATCH", path, "{\"state\":\"running\"}", 200));
}

static void damage(const char *db_path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    for (size_t i = 0; i < NDAMAGE; i++) {
        sqlite3_stmt *q = NULL;
        assert_int_equal(
            sqlite3_prepare_v2(db, "SELECT rowid FROM experiments WHERE id = ?1", -1, &q, NULL),
            SQLITE_OK);
        sqlite3_bind_text(q, 1, g_damage[i].id, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        long long rowid = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        assert_int_equal(sqlite3_prepare_v2(db, g_damage[i].sql, -1, &q, NULL), SQLITE_OK);
        sqlite3_bind_int64(q, 1, rowid);
        assert_int_equal(sqlite3_step(q), SQLITE_DONE);
        sqlite3_finalize(q);
        assert_int_equal(sqlite3_changes(db), 1);
    }
    sqlite3_close(db);
}

/* Appends to why (a running list of what is not as proposed). */
static void want(char *why, size_t len, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void want(char *why, size_t len, int ok, const char *fmt, ...)
{
    if (ok)
        return;
    size_t used = strlen(why);
    if (used + 2 >= len)
        return;
    if (used > 0) {
        memcpy(why + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + used, len - used, fmt, ap);
    va_end(ap);
}

static int corrupt_problem(const struct tresp *r)
{
    const char *t = r->json != NULL ? tjson_str(r->json, "type") : NULL;
    return r->status == 500 && t != NULL && strcmp(t, "urn:banditd:problem:corrupt-log") == 0;
}

static void test_corrupt_rows_refused(void **state)
{
    (void)state;
    static const char *const flags[] = {"--no-snapshots", NULL};
    struct tdaemon *d = tdaemon_start(flags);
    assert_non_null(d);
    fill(d, "good");
    for (size_t i = 0; i < NDAMAGE; i++)
        fill(d, g_damage[i].id);
    json_t *before = texp_status(d, "good");
    assert_int_equal(tdaemon_stop(d), 0);
    damage(tdaemon_db_path(d));
    assert_int_equal(tdaemon_restart(d), 0);

    /* Kept serving: the intact experiment, exactly as before (passes today). */
    json_t *after = texp_status(d, "good");
    assert_int_equal(tjson_int(after, "pulls"), tjson_int(before, "pulls"));
    assert_int_equal(tjson_int(after, "pulls"), 2);
    json_decref(before);
    json_decref(after);
    json_decref(texp_assign(d, "good", "{}"));
    char msg[256];
    assert_int_equal(tdb_integrity(tdaemon_db_path(d), msg, sizeof msg), 0);

    /* Refused: the damaged ones (fails today). */
    char why[2048] = "";
    char *err = tdaemon_stderr(d);
    for (size_t i = 0; i < NDAMAGE; i++) {
        const char *id = g_damage[i].id;
        char path[128], body[160];
        snprintf(path, sizeof path, "/v1/experiments/%s", id);
        struct tresp *r = treq(d, "GET", path, NULL, NULL);
        want(why, sizeof why, corrupt_problem(r), "GET %s is not a corrupt-log 500", id);
        tresp_free(r);
        snprintf(path, sizeof path, "/v1/experiments/%s/status", id);
        r = treq(d, "GET", path, NULL, NULL);
        want(why, sizeof why, corrupt_problem(r), "status of %s is not a corrupt-log 500", id);
        tresp_free(r);
        snprintf(path, sizeof path, "/v1/experiments/%s/assignments", id);
        r = treq(d, "POST", path, "{}", NULL);
        want(why, sizeof why, corrupt_problem(r), "an assignment of %s is not refused", id);
        tresp_free(r);
        snprintf(body, sizeof body, "{\"id\":\"%s\",\"arms\":[\"a\",\"b\"]}", id);
        r = treq(d, "POST", "/v1/experiments", body, NULL);
        want(why, sizeof why, r->status == 409, "the id %s is not kept taken (409)", id);
        tresp_free(r);
        char line[160];
        snprintf(line, sizeof line, "experiment %s: event log corrupt at seq", id);
        want(why, sizeof why, err != NULL && strstr(err, line) != NULL,
             "no log line \"experiment %s: event log corrupt at seq N (%s)\"", id,
             g_damage[i].what);
    }
    free(err);
    struct tresp *m = treq(d, "GET", "/metrics", NULL, NULL);
    assert_status(m, 200);
    struct prom p;
    char perr[256];
    assert_int_equal(prom_parse(m->body, "banditd_", &p, perr, sizeof perr), 0);
    int found = 0;
    double n = prom_get(&p, "banditd_experiments_corrupt", "", &found);
    const size_t ndamage = NDAMAGE;
    want(why, sizeof why, found && n == (double)ndamage, "banditd_experiments_corrupt is not %zu",
         ndamage);
    prom_free(&p);
    tresp_free(m);
    /* The way out: DELETE removes a damaged experiment. */
    struct tresp *r = treq(d, "DELETE", "/v1/experiments/bad-gap", NULL, NULL);
    want(why, sizeof why, r->status == 204, "DELETE of %s is not 204", "bad-gap");
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
    if (why[0] != '\0')
        fail_msg("(issue 13): replay accepts corrupt rows: %s", why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corrupt_rows_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
