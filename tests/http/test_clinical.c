/*
 * test_clinical.c — what a clinical trial needs of banditd (docs/contract.md,
 * Clinical trials), against the real daemon: a design hash at creation that
 * every change steps and a restart rebuilds; a frozen design refuses a PATCH
 * after its first assignment (409 naming the field and the amendments
 * endpoint) and takes amendments with a reason, listed in status and in the
 * export; what was randomised cannot be amended.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tests/support/harness.h"
#include "tests/support/tpg.h"

static struct tresp *amend(const char *id, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s/amendments", id);
    return treq(tgroup_d, "POST", path, body, NULL);
}

static struct tresp *patch(const char *id, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/experiments/%s", id);
    return treq(tgroup_d, "PATCH", path, body, NULL);
}

static int is_hex64(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* The export's rows (NDJSON) as a new array. */
static json_t *export_all(const char *id, char *design, size_t len)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/experiments/%s/export?format=ndjson", id);
    struct tresp *r = treq(tgroup_d, "GET", path, NULL, NULL);
    assert_status(r, 200);
    assert_non_null(tresp_header(r, "Banditd-Version"));
    if (design != NULL) {
        const char *h = tresp_header(r, "Banditd-Design-Hash");
        assert_non_null(h);
        snprintf(design, len, "%s", h);
    }
    json_t *rows = json_array();
    for (const char *p = r->body; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        json_t *row = json_loadb(p, (size_t)(nl - p), 0, NULL);
        assert_non_null(row);
        json_array_append_new(rows, row);
        p = nl + 1;
    }
    tresp_free(r);
    return rows;
}

/* The same configuration hashes the same; any difference, another hash;
 * GET, status and the export agree. */
static void test_design_hash(void **state)
{
    (void)state;
    json_t *a = texp_create(tgroup_d, "{\"id\":\"dh1\",\"arms\":[\"a\",\"b\"],\"seed\":4}");
    json_t *b = texp_create(tgroup_d, "{\"id\":\"dh2\",\"arms\":[\"a\",\"b\"],\"seed\":5}");
    const char *ha = tjson_str(a, "design_hash");
    assert_true(is_hex64(ha));
    assert_string_not_equal(ha, tjson_str(b, "design_hash"));
    assert_string_equal(ha, tjson_str(a, "design.initial_hash"));
    assert_false(json_is_true(tjson_get(a, "design.frozen")));
    json_t *st = texp_status(tgroup_d, "dh1");
    assert_string_equal(tjson_str(st, "design_hash"), ha);
    char exported[80];
    json_decref(export_all("dh1", exported, sizeof exported));
    assert_string_equal(exported, ha);
    /* Deleted and created again from the same body: the same design. */
    char copy[80];
    snprintf(copy, sizeof copy, "%s", ha);
    struct tresp *r = treq(tgroup_d, "DELETE", "/v1/experiments/dh1", NULL, NULL);
    assert_status(r, 204);
    tresp_free(r);
    json_t *c = texp_create(tgroup_d, "{\"id\":\"dh1\",\"arms\":[\"a\",\"b\"],\"seed\":4}");
    assert_string_equal(tjson_str(c, "design_hash"), copy);
    json_decref(st);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

/* A frozen design: PATCH works before the first assignment, is refused
 * after it (409 naming the field and the endpoint); an amendment with a
 * reason changes the hash, is listed in status and is an amendment row of
 * the export; the hashes come back the same after a restart. */
static void test_frozen_amendments(void **state)
{
    (void)state;
    json_t *j = texp_create(tgroup_d, "{\"id\":\"fz\",\"name\":\"trial\",\"arms\":[\"ctl\",\"a\","
                                      "\"b\"],\"goal\":{\"budget\":300},\"seed\":7,"
                                      "\"design\":{\"frozen\":true}}");
    assert_true(json_is_true(tjson_get(j, "design.frozen")));
    char h0[80];
    snprintf(h0, sizeof h0, "%s", tjson_str(j, "design_hash"));
    json_decref(j);
    /* Before the first patient the design may still be edited: a new hash. */
    struct tresp *r = patch("fz", "{\"name\":\"trial 1\"}");
    assert_status(r, 200);
    char h1[80];
    snprintf(h1, sizeof h1, "%s", tjson_str(r->json, "design_hash"));
    assert_string_not_equal(h0, h1);
    assert_string_equal(tjson_str(r->json, "design.amendments[0].previous_hash"), h0);
    assert_string_equal(tjson_str(r->json, "design.amendments[0].via"), "patch");
    tresp_free(r);

    json_decref(texp_assign(tgroup_d, "fz", NULL));
    r = patch("fz", "{\"goal\":{\"budget\":400}}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "goal.budget"));
    assert_non_null(strstr(tjson_str(r->json, "detail"), "/v1/experiments/fz/amendments"));
    tresp_free(r);
    /* A state change is not a design change. */
    r = patch("fz", "{\"state\":\"paused\"}");
    assert_status(r, 200);
    tresp_free(r);
    r = patch("fz", "{\"state\":\"running\"}");
    assert_status(r, 200);
    tresp_free(r);

    /* Amendments: a reason is required; what was randomised is not theirs. */
    r = amend("fz", "{\"change\":{\"goal\":{\"budget\":400}}}");
    assert_invalid(r, "reason");
    tresp_free(r);
    r = amend("fz", "{\"change\":{\"goal\":{\"delta\":0.1}},\"reason\":\"x\"}");
    assert_invalid(r, "change.goal.delta");
    tresp_free(r);
    r = amend("fz", "{\"change\":{\"arms\":[\"a\"]},\"reason\":\"x\"}");
    assert_invalid(r, "change.arms");
    tresp_free(r);
    r = amend("fz", "{\"change\":{\"state\":\"stopped\"},\"reason\":\"x\"}");
    assert_invalid(r, "change.state");
    tresp_free(r);
    r = amend("fz", "{\"change\":{\"goal\":{\"budget\":300}},\"reason\":\"same\"}");
    assert_problem(r, 409);
    assert_true(tproblem_has_field(r, "change"));
    tresp_free(r);
    r = amend("fz", "{\"change\":{\"goal\":{\"budget\":400}},\"reason\":\"DMC: slower accrual\"}");
    assert_status(r, 201);
    assert_string_equal(tjson_str(r->json, "previous_hash"), h1);
    char h2[80];
    snprintf(h2, sizeof h2, "%s", tjson_str(r->json, "design_hash"));
    assert_true(is_hex64(h2));
    assert_string_not_equal(h1, h2);
    tresp_free(r);
    r = amend("fz", "{\"change\":{\"assignment_ttl_s\":3600},\"reason\":\"visits weekly\"}");
    assert_status(r, 201);
    char h3[80];
    snprintf(h3, sizeof h3, "%s", tjson_str(r->json, "design_hash"));
    tresp_free(r);

    json_t *st = texp_status(tgroup_d, "fz");
    assert_string_equal(tjson_str(st, "design_hash"), h3);
    assert_int_equal(tjson_int(st, "budget"), 400);
    assert_int_equal(tjson_int(st, "design.changes"), 3);
    assert_true(json_is_true(tjson_get(st, "design.locked")));
    assert_string_equal(tjson_str(st, "design.amendments[1].reason"), "DMC: slower accrual");
    assert_string_equal(tjson_str(st, "design.amendments[1].via"), "amendment");
    assert_string_equal(tjson_str(st, "design.amendments[1].previous_hash"), h1);
    assert_string_equal(tjson_str(st, "design.amendments[1].design_hash"), h2);
    assert_string_equal(tjson_str(st, "design.amendments[2].design_hash"), h3);
    json_t *before = json_deep_copy(json_object_get(st, "design"));
    json_decref(st);

    char exported[80];
    json_t *rows = export_all("fz", exported, sizeof exported);
    assert_string_equal(exported, h3);
    size_t n_amend = 0, i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (strcmp(tjson_str(row, "kind"), "amendment") != 0)
            continue;
        json_t *note = json_loads(tjson_str(row, "note"), 0, NULL);
        assert_non_null(note);
        assert_string_equal(tjson_str(note, "design_hash"), n_amend == 0 ? h2 : h3);
        assert_string_equal(tjson_str(note, "previous_hash"), n_amend == 0 ? h1 : h2);
        json_decref(note);
        n_amend++;
    }
    assert_int_equal(n_amend, 2);
    json_decref(rows);

    /* The log rebuilds the same design and hashes. */
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    st = texp_status(tgroup_d, "fz");
    tjson_must_equal(before, json_object_get(st, "design"), "design after a restart");
    json_decref(st);
    json_decref(before);
}

/* A design that is not frozen keeps taking PATCH edits after assignments,
 * each a new hash; "design" is checked like every field. */
static void test_unfrozen_and_invalid(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"uf\",\"arms\":[\"a\",\"b\"]}"));
    json_decref(texp_assign(tgroup_d, "uf", NULL));
    struct tresp *r = patch("uf", "{\"assignment_ttl_s\":60}");
    assert_status(r, 200);
    assert_int_equal(tjson_int(r->json, "design.changes"), 1);
    tresp_free(r);
    r = treq(tgroup_d, "POST", "/v1/experiments",
             "{\"id\":\"bad\",\"arms\":[\"a\",\"b\"],\"design\":{\"frozen\":1}}", NULL);
    assert_invalid(r, "design.frozen");
    tresp_free(r);
    r = treq(tgroup_d, "POST", "/v1/experiments",
             "{\"id\":\"bad\",\"arms\":[\"a\",\"b\"],\"design\":{\"locked\":true}}", NULL);
    assert_invalid(r, "design.locked");
    tresp_free(r);
}

/* `banditd audit verify` on the database file: the exit status, its
 * output into out. */
static int audit_verify(const char *id, char *out, size_t len)
{
    const char *args[] = {"audit", "verify", "--db", tdaemon_db_path(tgroup_d), id, NULL};
    return tdaemon_cli(tgroup_d, args, NULL, out, len, NULL, 0);
}

/* Each event row carries its caller's request id and the chain value;
 * audit verify recomputes the chain from the database alone; a row changed
 * behind the daemon's back is named by its seq; new events after a
 * restart chain on. */
static void test_audit_chain(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"au\",\"arms\":[\"a\",\"b\"],\"seed\":2}"));
    const char *h[] = {"X-Request-Id: site-7.visit:42", NULL};
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments/au/assignments", "{}", h);
    assert_status(r, 201);
    char aid[128];
    snprintf(aid, sizeof aid, "%s", tjson_str(r->json, "assignments[0].id"));
    tresp_free(r);
    texp_reward(tgroup_d, "au", aid, 1.0);
    for (int i = 0; i < 4; i++) {
        json_t *a = texp_assign(tgroup_d, "au", NULL);
        texp_reward(tgroup_d, "au", tjson_str(a, "[0].id"), 0.25 * i);
        json_decref(a);
    }
    json_t *rows = export_all("au", NULL, 0);
    assert_true(json_array_size(rows) >= 5);
    assert_string_equal(tjson_str(rows, "[0].request_id"), "site-7.visit:42");
    assert_true(json_is_null(tjson_get(rows, "[0].actor"))); /* an open API: no key */
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        assert_true(is_hex64(tjson_str(row, "chain")));
        assert_non_null(tjson_str(row, "request_id"));
    }
    assert_string_not_equal(tjson_str(rows, "[0].chain"), tjson_str(rows, "[1].chain"));
    json_decref(rows);

    char out[4096];
    assert_int_equal(audit_verify("au", out, sizeof out), 0);
    assert_non_null(strstr(out, "au: ok, 10 events, 10 chained"));

    /* A reward changed in the file: the chain names its record. */
    assert_int_equal(tdaemon_stop(tgroup_d), 0);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(tgroup_d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE events SET value = 0.5 WHERE seq = 4 AND exp = (SELECT "
                                  "rowid FROM experiments WHERE id = 'au')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_changes(db), 1);
    assert_int_equal(audit_verify("au", out, sizeof out), 1);
    assert_non_null(strstr(out, "au: BROKEN at seq 4"));
    /* Put back: whole again. A row removed is named too. */
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE events SET value = 0 WHERE seq = 4 AND exp = (SELECT "
                                  "rowid FROM experiments WHERE id = 'au')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(audit_verify(NULL, out, sizeof out), 0);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE events SET chain = NULL WHERE seq = 6 AND exp = (SELECT "
                                  "rowid FROM experiments WHERE id = 'au')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(audit_verify("au", out, sizeof out), 1);
    assert_non_null(strstr(out, "au: BROKEN at seq 6"));
    assert_int_equal(
        sqlite3_exec(db,
                     "UPDATE events SET chain = (SELECT chain FROM events e2 WHERE "
                     "e2.exp = events.exp AND e2.seq = 5) WHERE seq = 6 AND exp = (SELECT "
                     "rowid FROM experiments WHERE id = 'au')",
                     NULL, NULL, NULL),
        SQLITE_OK);
    assert_int_equal(audit_verify("au", out, sizeof out), 1);
    sqlite3_close(db);

    /* After a restart the daemon chains on from the log as it is. */
    assert_int_equal(tdaemon_launch(tgroup_d, NULL, 0), 0);
    json_decref(texp_create(tgroup_d, "{\"id\":\"au2\",\"arms\":[\"a\",\"b\"]}"));
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    json_decref(texp_assign(tgroup_d, "au2", NULL));
    assert_int_equal(audit_verify("au2", out, sizeof out), 0);
    assert_non_null(strstr(out, "au2: ok, 1 events, 1 chained"));
    assert_int_equal(audit_verify("nosuch", out, sizeof out), 2);
}

/* Whether arms[0..n) splits into blocks of m·k assignments, m in {1, 2},
 * each holding every one of the k arms m times. */
static int balanced_blocks(const int *arms, size_t n, size_t k)
{
    unsigned char ok[200] = {1};
    assert_true(n < sizeof ok);
    for (size_t end = 1; end <= n; end++)
        for (size_t m = 1; m <= 2 && !ok[end]; m++) {
            size_t len = m * k;
            if (len > end || !ok[end - len])
                continue;
            size_t count[8] = {0};
            for (size_t i = end - len; i < end; i++)
                count[arms[i]]++;
            int even = 1;
            for (size_t a = 0; a < k; a++)
                even &= count[a] == m;
            ok[end] = (unsigned char)even;
        }
    return ok[n];
}

/* Burn-in by permuted blocks of random sizes: the first N·K assignments
 * give every arm N pulls, in blocks that are each balanced, without the
 * fixed rhythm of the least-served order (whose every aligned triple is a
 * permutation); a restart replays the same order. */
static void test_permuted_blocks(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"pb\",\"arms\":[\"ctl\",\"a\",\"b\"],\"seed\":11,"
                                      "\"constraints\":{\"burn_in\":{\"pulls\":12,"
                                      "\"blocks\":[1,2]}}}"));
    int arms[36];
    size_t count[3] = {0};
    for (size_t i = 0; i < 36; i++) {
        json_t *a = texp_assign(tgroup_d, "pb", NULL);
        arms[i] = (int)tjson_int(a, "[0].arm_index");
        count[arms[i]]++;
        json_decref(a);
    }
    for (size_t a = 0; a < 3; a++)
        assert_int_equal(count[a], 12);
    assert_true(balanced_blocks(arms, 36, 3));
    int aligned = 1;
    for (size_t i = 0; i < 36; i += 3)
        aligned &= arms[i] != arms[i + 1] && arms[i] != arms[i + 2] && arms[i + 1] != arms[i + 2];
    assert_false(aligned);
    /* The configuration keeps the form given. */
    json_t *st = tcall(tgroup_d, "GET", "/v1/experiments/pb", NULL, 200);
    assert_int_equal(tjson_int(st, "constraints.burn_in.pulls"), 12);
    json_decref(st);

    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments",
                           "{\"arms\":[\"a\",\"b\"],\"constraints\":{\"burn_in\":{\"pulls\":4,"
                           "\"blocks\":[0]}}}",
                           NULL);
    assert_invalid(r, "constraints.burn_in.blocks");
    tresp_free(r);
    r = treq(tgroup_d, "POST", "/v1/experiments",
             "{\"arms\":[\"a\",\"b\"],\"constraints\":{\"burn_in\":{\"blocks\":[2]}}}", NULL);
    assert_invalid(r, "constraints.burn_in.pulls");
    tresp_free(r);
}

/* Blinding by role, over the read routes and every scope: a blinded
 * experiment shows per-arm figures to unblinded and admin keys only; a read
 * key gets totals (status and history without arms) and is refused the
 * export and the webhook deliveries; sites read nothing. An experiment not
 * blinded is as before. The audit trail names the key of each event. */
static void test_blinding(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    enum { ADMIN, UNBLINDED, READ, ASSIGN, REPORT, NKEYS };
    static const char *const scopes[NKEYS] = {"admin", "unblinded", "read", "assign", "report"};
    char keys[NKEYS][128];
    for (int k = 0; k < NKEYS; k++)
        assert_int_equal(tdaemon_create_key(d, scopes[k], keys[k], sizeof keys[k]), 0);
    struct tresp *r =
        treq_key(d, "POST", "/v1/experiments", keys[ADMIN],
                 "{\"id\":\"bl\",\"arms\":[\"ctl\",\"a\"],\"design\":{\"blinded\":true}}");
    assert_status(r, 201);
    tresp_free(r);
    r = treq_key(d, "POST", "/v1/experiments", keys[ADMIN],
                 "{\"id\":\"open\",\"arms\":[\"x\",\"y\"]}");
    assert_status(r, 201);
    tresp_free(r);
    for (int i = 0; i < 4; i++) {
        r = treq_key(d, "POST", "/v1/experiments/bl/assignments", keys[ASSIGN], "{}");
        assert_status(r, 201);
        char body[200];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}",
                 tjson_str(r->json, "assignments[0].id"));
        tresp_free(r);
        r = treq_key(d, "POST", "/v1/experiments/bl/rewards", keys[REPORT], body);
        assert_status(r, 200);
        tresp_free(r);
    }
    static const struct {
        const char *path;
        const char *arm_field; /* present in the full view only; NULL: not JSON */
    } routes[] = {
        {"/v1/experiments/bl/status", "bandits[0].arms"},
        {"/v1/experiments/bl/history", "bandits[0].arm_pulls"},
        {"/v1/experiments/bl/export", NULL},
        {"/v1/experiments/bl/webhooks", NULL},
        {"/v1/experiments/bl", NULL},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        for (int k = 0; k < NKEYS; k++) {
            r = treq_key(d, "GET", routes[i].path, keys[k], NULL);
            long want = 200;
            int full = k == ADMIN || k == UNBLINDED;
            /* sites never read; a blinded read sees status, history and
             * the experiment, nothing else */
            if (k == ASSIGN || k == REPORT ||
                (k == READ && routes[i].arm_field == NULL &&
                 strcmp(routes[i].path, "/v1/experiments/bl") != 0))
                want = 403;
            if (r->status != want)
                fail_msg("GET %s with a %s key: %ld, expected %ld", routes[i].path, scopes[k],
                         r->status, want);
            if (want == 200 && routes[i].arm_field != NULL) {
                int has = tjson_get(r->json, routes[i].arm_field) != NULL;
                if (has != full)
                    fail_msg("GET %s with a %s key: %s %s", routes[i].path, scopes[k],
                             routes[i].arm_field, has ? "shown" : "hidden");
                if (!full)
                    assert_true(json_is_true(tjson_get(r->json, "blinded")));
                assert_int_equal(tjson_int(r->json, "pulls") > 0 ||
                                     json_is_array(tjson_get(r->json, "pulls")),
                                 1);
            }
            tresp_free(r);
        }
    /* Not blinded: a read key sees the arms. */
    r = treq_key(d, "GET", "/v1/experiments/open/status", keys[READ], NULL);
    assert_status(r, 200);
    assert_non_null(tjson_get(r->json, "bandits[0].arms"));
    tresp_free(r);
    /* Every event names its key. */
    r = treq_key(d, "GET", "/v1/experiments/bl/export", keys[UNBLINDED], NULL);
    assert_status(r, 200);
    assert_non_null(strstr(r->body, "\"actor\":\"key:"));
    assert_null(strstr(r->body, "\"actor\":null"));
    tresp_free(r);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* One SQL statement on d's database file, which must change one row. */
static void db_change(const struct tdaemon *d, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_close(db);
}

/* `banditd audit verify` of d's database (every experiment and the audit
 * log): its exit status, its output into out. */
static int verify_all(const struct tdaemon *d, char *out, size_t len)
{
    const char *args[] = {"audit", "verify", "--db", tdaemon_db_path(d), NULL};
    return tdaemon_cli(d, args, NULL, out, len, NULL, 0);
}

/* The audit log (store.h): keys created and revoked by the CLI and
 * experiments created through the API are recorded with who did it (the
 * key's id and name, or the CLI's user) and the request id, in a chain
 * that audit verify checks; events name the key by id and name; a key row
 * changed behind the CLI's back (a scope added, a revocation undone, a key
 * slipped in) or a record changed is named. */
static void test_audit_log(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    char admin[128], site[128], out[4096];
    const char *mk_admin[] = {"keys",    "create", "--db",   tdaemon_db_path(d),
                              "--scope", "admin",  "--name", "dmc office",
                              NULL};
    const char *mk_site[] = {"keys",    "create",        "--db",   tdaemon_db_path(d),
                             "--scope", "assign,report", "--name", "site-7",
                             NULL};
    assert_int_equal(tdaemon_cli(d, mk_admin, NULL, admin, sizeof admin, NULL, 0), 0);
    assert_int_equal(tdaemon_cli(d, mk_site, NULL, site, sizeof site, NULL, 0), 0);
    admin[strcspn(admin, "\n")] = '\0';
    site[strcspn(site, "\n")] = '\0';
    const char *h[] = {"X-Request-Id: create-7", NULL};
    char auth[200];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", admin);
    const char *hh[] = {h[0], auth, NULL};
    struct tresp *r =
        treq(d, "POST", "/v1/experiments", "{\"id\":\"al\",\"arms\":[\"a\",\"b\"]}", hh);
    assert_status(r, 201);
    tresp_free(r);
    r = treq_key(d, "POST", "/v1/experiments/al/assignments", site, "{}");
    assert_status(r, 201);
    tresp_free(r);
    const char *revoke[] = {"keys", "revoke", "2", "--db", tdaemon_db_path(d), NULL};
    assert_int_equal(tdaemon_cli(d, revoke, NULL, NULL, 0, NULL, 0), 0);
    r = treq_key(d, "GET", "/v1/experiments/al/export", admin, NULL);
    assert_status(r, 200);
    assert_non_null(strstr(r->body, "\"actor\":\"key:2:site-7\""));
    tresp_free(r);

    /* four records: two keys, the creation, the revocation */
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT kind, subject, actor, request_id, length(chain)"
                                        " FROM audit_log ORDER BY seq",
                                        -1, &st, NULL),
                     SQLITE_OK);
    static const struct {
        int kind;
        const char *subject, *actor_prefix, *request_id;
    } want[] = {{1, "key:1", "cli:", NULL},
                {1, "key:2", "cli:", NULL},
                {3, "al", "key:1:dmc office", "create-7"},
                {2, "key:2", "cli:", NULL}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), want[i].kind);
        assert_string_equal((const char *)sqlite3_column_text(st, 1), want[i].subject);
        const char *actor = (const char *)sqlite3_column_text(st, 2);
        const char *rid = (const char *)sqlite3_column_text(st, 3);
        assert_non_null(actor);
        assert_non_null(rid);
        assert_true(strncmp(actor, want[i].actor_prefix, strlen(want[i].actor_prefix)) == 0);
        if (want[i].request_id != NULL)
            assert_string_equal(rid, want[i].request_id);
        else
            assert_true(strncmp(rid, "cli-", 4) == 0);
        assert_int_equal(sqlite3_column_int(st, 4), 64);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_int_equal(verify_all(d, out, sizeof out), 0);
    assert_non_null(strstr(out, "audit log: ok, 4 records, keys as recorded (0 older"));

    /* tampered: the daemon is stopped, the file edited */
    assert_int_equal(tdaemon_stop(d), 0);
    static const struct {
        const char *change, *undo, *named;
    } cases[] = {
        {"UPDATE api_keys SET scopes = 'admin' WHERE rowid = 2",
         "UPDATE api_keys SET scopes = 'assign,report' WHERE rowid = 2",
         "audit log: BROKEN: key 2 differs from its creation record (seq 2)"},
        {"UPDATE api_keys SET revoked = 0 WHERE rowid = 2",
         "UPDATE api_keys SET revoked = 1 WHERE rowid = 2",
         "audit log: BROKEN: key 2 is not revoked, but recorded so"},
        {"INSERT INTO api_keys(name, scopes, hash, created_ms) VALUES ('x', 'admin', 'ab', 1)",
         "DELETE FROM api_keys WHERE rowid = 3", "audit log: BROKEN: key 3 has no creation record"},
        {"UPDATE audit_log SET actor = 'cli:someone' WHERE seq = 3",
         "UPDATE audit_log SET actor = 'key:1:dmc office' WHERE seq = 3",
         "audit log: BROKEN at seq 3 (chain value does not match the record)"},
        {"DELETE FROM audit_log WHERE seq = 4", NULL,
         "audit log: BROKEN: key 2 is revoked without a record"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        db_change(d, cases[i].change);
        assert_int_equal(verify_all(d, out, sizeof out), 1);
        if (strstr(out, cases[i].named) == NULL)
            fail_msg("after %s: %s", cases[i].change, out);
        assert_non_null(strstr(out, "al: ok")); /* the experiment's own log is whole */
        if (cases[i].undo != NULL) {
            db_change(d, cases[i].undo);
            assert_int_equal(verify_all(d, out, sizeof out), 0);
        }
    }
}

/* The same chain on PostgreSQL: rows written one by one and in a group
 * (one INSERT of arrays) verify; a changed row is named. */
static void test_audit_chain_postgres(void **state)
{
    (void)state;
    char err[512], uri[256], out[2048];
    if (tpg_start(err, sizeof err) != 0) {
        printf("# PostgreSQL not available: %s\n", err);
        skip();
    }
    tpg_new_db(uri, sizeof uri);
    const char *extra[] = {"--db", uri, NULL};
    struct tdaemon *d = tdaemon_start(extra);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"pg\",\"arms\":[\"a\",\"b\"],\"seed\":5}"));
    json_decref(texp_assign(d, "pg", NULL));
    struct tresp *r = treq(d, "POST", "/v1/experiments/pg/observations",
                           "{\"observations\":[{\"arm\":\"a\",\"reward\":1},{\"arm\":\"b\","
                           "\"reward\":0},{\"arm\":\"a\",\"reward\":0.5}]}",
                           NULL);
    assert_true(r->status >= 200 && r->status < 300);
    tresp_free(r);
    const char *args[] = {"audit", "verify", "--db", uri, "pg", NULL};
    assert_int_equal(tdaemon_cli(d, args, NULL, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "pg: ok, 4 events, 4 chained"));
    /* the audit log: the creation and a key, then the key's row changed */
    char key[128];
    const char *mk[] = {"keys", "create", "--db", uri, "--scope", "read", "--name", "r", NULL};
    assert_int_equal(tdaemon_cli(d, mk, NULL, key, sizeof key, NULL, 0), 0);
    assert_int_equal(tdaemon_cli(d, args, NULL, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "audit log: ok, 2 records"));
    assert_int_equal(tpg_exec(uri, "UPDATE api_keys SET scopes = 'admin'"), 0);
    assert_int_equal(tdaemon_cli(d, args, NULL, out, sizeof out, NULL, 0), 1);
    assert_non_null(strstr(out, "audit log: BROKEN: key 1 differs from its creation record"));
    assert_int_equal(tpg_exec(uri, "UPDATE api_keys SET scopes = 'read'"), 0);
    assert_int_equal(tpg_exec(uri, "UPDATE events SET value = 0.25 WHERE seq = 3"), 0);
    assert_int_equal(tdaemon_cli(d, args, NULL, out, sizeof out, NULL, 0), 1);
    assert_non_null(strstr(out, "pg: BROKEN at seq 3"));
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_design_hash),
        cmocka_unit_test(test_frozen_amendments),
        cmocka_unit_test(test_unfrozen_and_invalid),
        cmocka_unit_test(test_audit_chain),
        cmocka_unit_test(test_permuted_blocks),
        cmocka_unit_test_setup_teardown(test_blinding, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_audit_log, tfresh_setup, tfresh_teardown),
        cmocka_unit_test(test_audit_chain_postgres),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
