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
#include <strings.h>

#include <sqlite3.h>

#include "tests/support/harness.h"
#include "tests/support/tpg.h"

static struct tresp *amend(const char *id, const char *body)
{
    return texp_req(tgroup_d, "POST", id, "/amendments", body);
}

static struct tresp *patch(const char *id, const char *body)
{
    return texp_req(tgroup_d, "PATCH", id, "", body);
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

/* Every route × every scope, table-driven (docs/contract.md, the scope
 * matrix of Clinical trials and Access): each caller gets exactly the
 * status its scopes allow, and of a blinded experiment a read key (and a
 * caller without a key, where a route is open) sees no per-arm figure nor
 * δᶜ, while unblinded and admin keys see them. An experiment not blinded
 * shows a read key everything. The table must name every route of the
 * OpenAPI document: a route added later without a row fails here. */
enum { K_ADMIN, K_UNBLINDED, K_READ, K_ASSIGN, K_REPORT, K_NONE, NKEYS };
static const char *const scope_names[NKEYS] = {"admin",  "unblinded", "read",
                                               "assign", "report",    "none"};

/* What a 2xx of a blinded experiment must hide from a blinded caller and
 * show to the others. */
enum blind_check {
    B_NONE,    /* nothing per arm in the answer */
    B_STATUS,  /* status: bandits[0].arms, "blinded" */
    B_HISTORY, /* history: bandits[0].arm_pulls, "blinded" */
    B_LIST,    /* list: the item "bl"'s delta_c null */
    B_METRICS, /* /metrics: no experiment_delta_c{experiment="bl"} */
};

struct route_row {
    const char *method, *pattern; /* as in docs/openapi.json */
    const char *path;             /* @: the key's scope name (fresh ids) */
    const char *body;             /* NULL: none; @ as in path */
    /* who may: a bit per K_*; others get 403 (401 without a key) */
    unsigned allowed;
    enum blind_check check;
};

#define BIT(k) (1u << (k))
#define READERS (BIT(K_ADMIN) | BIT(K_UNBLINDED) | BIT(K_READ))
#define EVERYONE ((1u << NKEYS) - 1)

static const struct route_row route_rows[] = {
    /* the reads first: the data they check is not moved by the writes */
    {"GET", "/v1/experiments", "/v1/experiments", NULL, READERS, B_LIST},
    {"GET", "/v1/experiments/{id}", "/v1/experiments/bl", NULL, READERS, B_NONE},
    {"GET", "/v1/experiments/{id}/status", "/v1/experiments/bl/status", NULL, READERS, B_STATUS},
    {"GET", "/v1/experiments/{id}/history", "/v1/experiments/bl/history", NULL, READERS, B_HISTORY},
    {"GET", "/v1/experiments/{id}/export", "/v1/experiments/bl/export", NULL,
     BIT(K_ADMIN) | BIT(K_UNBLINDED), B_NONE},
    {"GET", "/v1/experiments/{id}/webhooks", "/v1/experiments/bl/webhooks", NULL,
     BIT(K_ADMIN) | BIT(K_UNBLINDED), B_NONE},
    {"GET", "/v1/policies", "/v1/policies", NULL, READERS, B_NONE},
    /* a function of the design and the caller's scenarios, not of the data */
    {"POST", "/v1/experiments/{id}/oc", "/v1/experiments/bl/oc",
     "{\"scenarios\":[{\"name\":\"null\",\"arms\":[0.3,0.3]}],\"runs\":2}", READERS, B_NONE},
    {"GET", "/metrics", "/metrics", NULL, EVERYONE, B_METRICS}, /* open: no --metrics-need-key */
    {"GET", "/healthz", "/healthz", NULL, EVERYONE, B_NONE},
    {"GET", "/readyz", "/readyz", NULL, EVERYONE, B_NONE},
    {"GET", "/openapi.json", "/openapi.json", NULL, EVERYONE, B_NONE},
    {"GET", "/", "/", NULL, EVERYONE, B_NONE},
    {"GET", "/experiments/{id}", "/experiments/bl", NULL, EVERYONE, B_NONE},
    {"GET", "/static/{id}", "/static/nope.js", NULL, EVERYONE, B_NONE}, /* 404, not 401 */
    /* the writes: only whether the scope is let in (the handlers' answers
     * are their own suites') */
    {"POST", "/v1/experiments", "/v1/experiments", "{\"id\":\"new-@\",\"arms\":[\"a\",\"b\"]}",
     BIT(K_ADMIN), B_NONE},
    {"PATCH", "/v1/experiments/{id}", "/v1/experiments/bl", "{\"name\":\"renamed\"}", BIT(K_ADMIN),
     B_NONE},
    {"DELETE", "/v1/experiments/{id}", "/v1/experiments/del-@", NULL, BIT(K_ADMIN), B_NONE},
    {"POST", "/v1/experiments/{id}/assignments", "/v1/experiments/bl/assignments", "{}",
     BIT(K_ADMIN) | BIT(K_ASSIGN), B_NONE},
    {"POST", "/v1/experiments/{id}/assignments/release", "/v1/experiments/bl/assignments/release",
     "{\"assignment_id\":\"nope\"}", BIT(K_ADMIN) | BIT(K_ASSIGN), B_NONE},
    {"POST", "/v1/experiments/{id}/assignments/served", "/v1/experiments/bl/assignments/served",
     "{\"assignment_id\":\"nope\",\"unit\":\"u\"}", BIT(K_ADMIN) | BIT(K_ASSIGN), B_NONE},
    {"POST", "/v1/experiments/{id}/rewards", "/v1/experiments/bl/rewards",
     "{\"assignment_id\":\"nope\",\"reward\":1}", BIT(K_ADMIN) | BIT(K_REPORT), B_NONE},
    {"POST", "/v1/experiments/{id}/observations", "/v1/experiments/bl/observations",
     "{\"arm\":\"a\",\"reward\":1}", BIT(K_ADMIN) | BIT(K_REPORT), B_NONE},
    {"POST", "/v1/experiments/{id}/corrections", "/v1/experiments/bl/corrections",
     "{\"assignment_id\":\"nope\",\"reward\":0,\"reason\":\"typo\"}", BIT(K_ADMIN), B_NONE},
    {"POST", "/v1/experiments/{id}/amendments", "/v1/experiments/bl/amendments",
     "{\"change\":{\"name\":\"amended\"},\"reason\":\"protocol v2\"}", BIT(K_ADMIN), B_NONE},
    {"POST", "/v1/plan", "/v1/plan",
     "{\"experiment\":{\"arms\":[\"a\",\"b\"]},\"means\":[0.2,0.8],\"runs\":2}", BIT(K_ADMIN),
     B_NONE},
};

/* Whether a blinded caller's answer r hides, and another's shows, what
 * check names; a failure message into why. */
static int blind_ok(enum blind_check check, const struct tresp *r, int blind, char *why, size_t len)
{
    int shown = 0;
    switch (check) {
    case B_NONE:
        return 1;
    case B_STATUS:
    case B_HISTORY:
        shown = tjson_get(r->json,
                          check == B_STATUS ? "bandits[0].arms" : "bandits[0].arm_pulls") != NULL;
        if (blind && !json_is_true(tjson_get(r->json, "blinded"))) {
            snprintf(why, len, "no \"blinded\": true");
            return 0;
        }
        if (blind && tjson_int(r->json, check == B_STATUS ? "pulls" : "pulls[0]") < 0) {
            snprintf(why, len, "no totals");
            return 0;
        }
        break;
    case B_LIST: {
        size_t i;
        json_t *e, *found = NULL;
        json_array_foreach(tjson_get(r->json, "experiments"), i,
                           e) if (strcmp(tjson_str(e, "id"), "bl") == 0) found = e;
        if (found == NULL) {
            snprintf(why, len, "bl not listed");
            return 0;
        }
        shown = json_is_number(json_object_get(found, "delta_c"));
        break;
    }
    case B_METRICS:
        shown = strstr(r->body, "banditd_experiment_delta_c{experiment=\"bl\"}") != NULL;
        if (strstr(r->body, "banditd_experiment_pulls_total{experiment=\"bl\"}") == NULL) {
            snprintf(why, len, "no totals of bl");
            return 0;
        }
        break;
    }
    if (shown == blind) {
        snprintf(why, len, "per-arm figures or δᶜ %s", shown ? "shown" : "hidden");
        return 0;
    }
    return 1;
}

/* tmpl with its '@' (if any) replaced by word, into out. */
static void fill(char *out, size_t len, const char *tmpl, const char *word)
{
    const char *at = strchr(tmpl, '@');
    int n = at == NULL ? snprintf(out, len, "%s", tmpl)
                       : snprintf(out, len, "%.*s%s%s", (int)(at - tmpl), tmpl, word, at + 1);
    assert_true(n > 0 && (size_t)n < len);
}

static void test_scope_matrix(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    char keys[NKEYS][128];
    for (int k = 0; k < K_NONE; k++)
        assert_int_equal(tdaemon_create_key(d, scope_names[k], keys[k], sizeof keys[k]), 0);
    const char *key[NKEYS];
    for (int k = 0; k < NKEYS; k++)
        key[k] = k == K_NONE ? NULL : keys[k];
    struct tresp *r =
        treq_key(d, "POST", "/v1/experiments", key[K_ADMIN],
                 "{\"id\":\"bl\",\"arms\":[\"a\",\"b\",\"c\"],\"design\":{\"blinded\":true}}");
    assert_status(r, 201);
    tresp_free(r);
    r = treq_key(d, "POST", "/v1/experiments", key[K_ADMIN],
                 "{\"id\":\"open\",\"arms\":[\"x\",\"y\"]}");
    assert_status(r, 201);
    tresp_free(r);
    for (int k = 0; k < NKEYS; k++) {
        char body[128];
        snprintf(body, sizeof body, "{\"id\":\"del-%s\",\"arms\":[\"a\",\"b\"]}", scope_names[k]);
        r = treq_key(d, "POST", "/v1/experiments", key[K_ADMIN], body);
        assert_status(r, 201);
        tresp_free(r);
    }
    for (int i = 0; i < 4; i++) {
        r = treq_key(d, "POST", "/v1/experiments/bl/assignments", key[K_ASSIGN], "{}");
        assert_status(r, 201);
        char body[200];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}",
                 tjson_str(r->json, "assignments[0].id"));
        tresp_free(r);
        r = treq_key(d, "POST", "/v1/experiments/bl/rewards", key[K_REPORT], body);
        assert_status(r, 200);
        tresp_free(r);
    }

    /* every route of the OpenAPI document has its row */
    r = treq(d, "GET", "/openapi.json", NULL, NULL);
    assert_status(r, 200);
    const char *pattern;
    json_t *ops;
    json_object_foreach(json_object_get(r->json, "paths"), pattern, ops)
    {
        const char *m;
        json_t *op;
        json_object_foreach(ops, m, op)
        {
            if (strcmp(m, "parameters") == 0)
                continue;
            int found = 0;
            for (size_t i = 0; i < sizeof route_rows / sizeof route_rows[0]; i++)
                found |= strcasecmp(route_rows[i].method, m) == 0 &&
                         strcmp(route_rows[i].pattern, pattern) == 0;
            if (!found)
                fail_msg("%s %s: no row in test_scope_matrix", m, pattern);
        }
    }
    tresp_free(r);

    for (size_t i = 0; i < sizeof route_rows / sizeof route_rows[0]; i++) {
        const struct route_row *row = &route_rows[i];
        for (int k = 0; k < NKEYS; k++) {
            char path[128], body[256];
            fill(path, sizeof path, row->path, scope_names[k]);
            if (row->body != NULL)
                fill(body, sizeof body, row->body, scope_names[k]);
            r = treq_key(d, row->method, path, key[k], row->body != NULL ? body : NULL);
            int allowed = (row->allowed & BIT(k)) != 0;
            if (!allowed) {
                long want = k == K_NONE ? 401 : 403;
                if (r->status != want)
                    fail_msg("%s %s with %s: %ld, expected %ld", row->method, path, scope_names[k],
                             r->status, want);
            } else if (r->status == 401 || r->status == 403 || r->status == 0 ||
                       (row->check != B_NONE && r->status != 200)) {
                fail_msg("%s %s with %s: %ld (%s)", row->method, path, scope_names[k], r->status,
                         r->body);
            } else {
                char why[128];
                int blind = k != K_ADMIN && k != K_UNBLINDED;
                if (!blind_ok(row->check, r, blind, why, sizeof why))
                    fail_msg("%s %s with %s: %s", row->method, path, scope_names[k], why);
            }
            tresp_free(r);
        }
    }

    /* The blinded view has an ETag of its own: no 304 of it for a full one. */
    r = treq_key(d, "GET", "/v1/experiments/bl/status", key[K_READ], NULL);
    char etag[200], inm[240];
    snprintf(etag, sizeof etag, "%s", tresp_header(r, "ETag"));
    tresp_free(r);
    snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    char auth[200];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key[K_UNBLINDED]);
    const char *hu[] = {inm, auth, NULL};
    r = treq(d, "GET", "/v1/experiments/bl/status", NULL, hu);
    assert_status(r, 200);
    assert_non_null(tjson_get(r->json, "bandits[0].arms"));
    assert_string_not_equal(tresp_header(r, "ETag"), etag);
    tresp_free(r);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key[K_READ]);
    r = treq(d, "GET", "/v1/experiments/bl/status", NULL, hu);
    assert_status(r, 304);
    tresp_free(r);

    /* A blinded reader sees each change of the design (when, its kind, its
     * hashes: the chain from initial_hash to hash) but not its reason,
     * which may name the arm it retired; nor does anything else it reads
     * (docs/contract.md, Clinical trials). */
    r = treq_key(d, "POST", "/v1/experiments/bl/amendments", key[K_ADMIN],
                 "{\"change\":{\"retire\":{\"arm\":\"b\"}},\"reason\":\"DMC: arm b harms\"}");
    assert_status(r, 201);
    tresp_free(r);
    static const char *const reads[] = {"/v1/experiments/bl", "/v1/experiments/bl/status",
                                        "/v1/experiments/bl/history", "/v1/experiments"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        for (int k = K_ADMIN; k <= K_READ; k++) {
            int blind = k == K_READ;
            r = treq_key(d, "GET", reads[i], key[k], NULL);
            assert_status(r, 200);
            json_t *ds = tjson_get(r->json, "design");
            json_t *marks = tjson_get(r->json, "marks");
            /* the reason is nowhere in what a blinded reader reads; the
             * others see it where the design or the history's marks are */
            if ((strstr(r->body, "arm b harms") != NULL) != (!blind && (ds != NULL || marks)))
                fail_msg("GET %s with %s: the amendment's reason %s: %s", reads[i], scope_names[k],
                         blind ? "shown" : "hidden", r->body);
            json_t *list = json_object_get(ds, "amendments");
            size_t n = json_array_size(list);
            /* the PATCH, the row's amendment, the retirement */
            assert_true(ds == NULL || n >= 3);
            const char *prev = ds != NULL ? tjson_str(ds, "initial_hash") : NULL;
            for (size_t c = 0; c < n; c++) {
                json_t *ch = json_array_get(list, c);
                assert_string_equal(tjson_str(ch, "previous_hash"), prev);
                prev = tjson_str(ch, "design_hash");
                assert_true(is_hex64(prev));
                assert_non_null(tjson_str(ch, "at"));
                assert_true(json_object_get(ch, "reason") == NULL ? blind : !blind);
            }
            /* the history's marks: when and what kind stay, the note is
             * the change itself (the arm retired) */
            for (size_t m = 0; m < json_array_size(marks); m++)
                assert_true(json_is_null(json_object_get(json_array_get(marks, m), "note")) ==
                            blind);
            assert_true(marks == NULL || json_array_size(marks) >= 3);
            if (ds != NULL) {
                assert_string_equal(prev, tjson_str(ds, "hash"));
                assert_string_equal(tjson_str(json_array_get(list, n - 1), "via"), "amendment");
            }
            tresp_free(r);
        }
    }

    /* Not blinded: a read key sees the arms and δᶜ. */
    r = treq_key(d, "GET", "/v1/experiments/open/status", key[K_READ], NULL);
    assert_status(r, 200);
    assert_non_null(tjson_get(r->json, "bandits[0].arms"));
    tresp_free(r);
    r = treq_key(d, "GET", "/metrics", NULL, NULL);
    assert_non_null(strstr(r->body, "banditd_experiment_delta_c{experiment=\"open\"}"));
    tresp_free(r);
    /* Every event names its key. */
    r = treq_key(d, "GET", "/v1/experiments/bl/export", key[K_UNBLINDED], NULL);
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
        treq(d, "POST", "/v1/experiments",
             "{\"id\":\"al\",\"arms\":[\"a\",\"b\"],\"design\":{\"blinded\":true}}", hh);
    assert_status(r, 201);
    tresp_free(r);
    r = treq_key(d, "POST", "/v1/experiments/al/assignments", site, "{}");
    assert_status(r, 201);
    tresp_free(r);
    const char *revoke[] = {"keys", "revoke", "2", "--db", tdaemon_db_path(d), NULL};
    assert_int_equal(tdaemon_cli(d, revoke, NULL, NULL, 0, NULL, 0), 0);
    /* an unblinded read and an export are recorded before they answer */
    const char *hs[] = {"X-Request-Id: dmc-look-1", auth, NULL};
    r = treq(d, "GET", "/v1/experiments/al/status", NULL, hs);
    assert_status(r, 200);
    assert_non_null(tjson_get(r->json, "bandits[0].arms"));
    tresp_free(r);
    r = treq_key(d, "GET", "/v1/experiments/al/export", admin, NULL);
    assert_status(r, 200);
    assert_non_null(strstr(r->body, "\"actor\":\"key:2:site-7\""));
    tresp_free(r);

    /* six records: two keys, the creation, the revocation, the read, the
     * export */
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT kind, subject, actor, request_id, length(chain),"
                                        " detail FROM audit_log ORDER BY seq",
                                        -1, &st, NULL),
                     SQLITE_OK);
    static const struct {
        int kind;
        const char *subject, *actor_prefix, *request_id, *detail;
    } want[] = {{1, "key:1", "cli:", "cli-", NULL},
                {1, "key:2", "cli:", "cli-", NULL},
                {3, "al", "key:1:dmc office", "create-7", "config sha256:"},
                {2, "key:2", "cli:", "cli-", NULL},
                {5, "al", "key:1:dmc office", "dmc-look-1", "status"},
                {4, "al", "key:1:dmc office", "", "ndjson after 0"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), want[i].kind);
        assert_string_equal((const char *)sqlite3_column_text(st, 1), want[i].subject);
        const char *actor = (const char *)sqlite3_column_text(st, 2);
        const char *rid = (const char *)sqlite3_column_text(st, 3);
        assert_non_null(actor);
        assert_non_null(rid);
        assert_true(strncmp(actor, want[i].actor_prefix, strlen(want[i].actor_prefix)) == 0);
        assert_true(strncmp(rid, want[i].request_id, strlen(want[i].request_id)) == 0);
        const char *detail = (const char *)sqlite3_column_text(st, 5);
        if (want[i].detail != NULL)
            assert_true(detail != NULL &&
                        strncmp(detail, want[i].detail, strlen(want[i].detail)) == 0);
        assert_int_equal(sqlite3_column_int(st, 4), 64);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_int_equal(verify_all(d, out, sizeof out), 0);
    assert_non_null(strstr(out, "audit log: ok, 6 records, keys as recorded (0 older"));

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
        {"UPDATE api_keys SET revoked = 1 WHERE rowid = 1",
         "UPDATE api_keys SET revoked = 0 WHERE rowid = 1",
         "audit log: BROKEN: key 1 is revoked without a record"},
        {"DELETE FROM audit_log WHERE seq = 4", NULL, "audit log: BROKEN at seq 4 (missing)"},
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

/* The last row's chain value of an export (NDJSON body), into out. */
static void export_head(const char *body, char *out, size_t len)
{
    const char *c = NULL;
    for (const char *p = strstr(body, "\"chain\":\""); p != NULL; p = strstr(p + 1, "\"chain\":\""))
        c = p + 9;
    assert_non_null(c);
    snprintf(out, len, "%.64s", c);
}

/* A delete is a record of the audit log (who, when, the request, the
 * design in force and the deleted log's last seq and chain value): the
 * chain of an export archived before the delete ends where the record
 * says; `audit verify ID` of the deleted experiment shows the record, and
 * one changed is named. */
static void test_audit_delete(void **state)
{
    struct tdaemon *d = *state;
    assert_int_equal(tdaemon_launch(d, NULL, 0), 0);
    char admin[128], out[4096];
    assert_int_equal(tdaemon_create_key(d, "admin", admin, sizeof admin), 0);
    struct tresp *r = treq_key(d, "POST", "/v1/experiments", admin,
                               "{\"id\":\"gone\",\"arms\":[\"a\",\"b\"],\"seed\":3}");
    assert_status(r, 201);
    tresp_free(r);
    for (int i = 0; i < 3; i++) {
        r = treq_key(d, "POST", "/v1/experiments/gone/assignments", admin, "{}");
        assert_status(r, 201);
        tresp_free(r);
    }
    r = treq_key(d, "PATCH", "/v1/experiments/gone", admin, "{\"name\":\"renamed\"}");
    assert_status(r, 200);
    char design[80];
    snprintf(design, sizeof design, "%s", tjson_str(r->json, "design_hash"));
    tresp_free(r);
    r = treq_key(d, "GET", "/v1/experiments/gone/export?format=ndjson", admin, NULL);
    assert_status(r, 200);
    char head[80];
    export_head(r->body, head, sizeof head);
    tresp_free(r);
    char auth[200];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", admin);
    const char *h[] = {"X-Request-Id: close-out-3", auth, NULL};
    r = treq(d, "DELETE", "/v1/experiments/gone", NULL, h);
    assert_status(r, 204);
    tresp_free(r);
    /* an experiment that never had an event */
    r = treq_key(d, "POST", "/v1/experiments", admin, "{\"id\":\"empty\",\"arms\":[\"a\",\"b\"]}");
    assert_status(r, 201);
    tresp_free(r);
    r = treq_key(d, "DELETE", "/v1/experiments/empty", admin, NULL);
    assert_status(r, 204);
    tresp_free(r);

    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT subject, actor, request_id, detail, ts_ms FROM"
                                        " audit_log WHERE kind = 6 ORDER BY seq",
                                        -1, &st, NULL),
                     SQLITE_OK);
    char want[256];
    /* the log: 3 assignments, the edit: its last row is seq 4 */
    snprintf(want, sizeof want, "design %s last 4 chain %s", design, head);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "gone");
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "key:1:");
    assert_string_equal((const char *)sqlite3_column_text(st, 2), "close-out-3");
    assert_string_equal((const char *)sqlite3_column_text(st, 3), want);
    assert_true(sqlite3_column_int64(st, 4) > 0);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "empty");
    assert_non_null(strstr((const char *)sqlite3_column_text(st, 3), " last 0 chain none"));
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);

    assert_int_equal(verify_all(d, out, sizeof out), 0);
    assert_non_null(
        strstr(out, "audit log: ok, 6 records")); /* key, 2 creations, export, 2 deletes */
    const char *one[] = {"audit", "verify", "--db", tdaemon_db_path(d), "gone", NULL};
    assert_int_equal(tdaemon_cli(d, one, NULL, out, sizeof out, NULL, 0), 0);
    if (strstr(out, "gone: deleted ") == NULL || strstr(out, "request close-out-3") == NULL ||
        strstr(out, want) == NULL || strstr(out, "audit log: ok") == NULL)
        fail_msg("audit verify gone: %s", out);
    const char *never[] = {"audit", "verify", "--db", tdaemon_db_path(d), "never", NULL};
    assert_int_equal(tdaemon_cli(d, never, NULL, out, sizeof out, NULL, 0), 2);
    assert_non_null(strstr(out, "never: no such experiment, and no record of its deletion"));

    /* the record changed: its chain names it */
    assert_int_equal(tdaemon_stop(d), 0);
    db_change(d, "UPDATE audit_log SET detail = replace(detail, 'last 4', 'last 3') WHERE kind = 6"
                 " AND subject = 'gone'");
    assert_int_equal(verify_all(d, out, sizeof out), 1);
    assert_non_null(strstr(out, "audit log: BROKEN at seq 4 (chain value does not match"));
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
    /* the audit log: the creation, an export and a key, then the key's row
     * changed */
    r = treq(d, "GET", "/v1/experiments/pg/export", NULL, NULL);
    assert_status(r, 200);
    tresp_free(r);
    /* a delete: its record names the log's last row as on disk */
    json_decref(texp_create(d, "{\"id\":\"pg2\",\"arms\":[\"a\",\"b\"]}"));
    json_decref(texp_assign(d, "pg2", NULL));
    r = treq(d, "GET", "/v1/experiments/pg2/export?format=ndjson", NULL, NULL);
    assert_status(r, 200);
    char head[80];
    export_head(r->body, head, sizeof head);
    tresp_free(r);
    r = treq(d, "DELETE", "/v1/experiments/pg2", NULL, NULL);
    assert_status(r, 204);
    tresp_free(r);
    const char *one[] = {"audit", "verify", "--db", uri, "pg2", NULL};
    assert_int_equal(tdaemon_cli(d, one, NULL, out, sizeof out, NULL, 0), 0);
    if (strstr(out, "pg2: deleted ") == NULL || strstr(out, head) == NULL ||
        strstr(out, " last 1 chain ") == NULL || strstr(out, "audit log: ok, 5 records") == NULL)
        fail_msg("audit verify pg2: %s", out);
    char key[128];
    const char *mk[] = {"keys", "create", "--db", uri, "--scope", "read", "--name", "r", NULL};
    assert_int_equal(tdaemon_cli(d, mk, NULL, key, sizeof key, NULL, 0), 0);
    assert_int_equal(tdaemon_cli(d, args, NULL, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "audit log: ok, 6 records"));
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
        cmocka_unit_test_setup_teardown(test_scope_matrix, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_audit_log, tfresh_setup, tfresh_teardown),
        cmocka_unit_test_setup_teardown(test_audit_delete, tfresh_setup, tfresh_teardown),
        cmocka_unit_test(test_audit_chain_postgres),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
