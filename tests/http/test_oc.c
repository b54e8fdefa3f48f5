/*
 * test_oc.c — operating characteristics of a stored experiment over HTTP
 * (POST /v1/experiments/{id}/oc): the design in force (its hash as status
 * shows it, the budget an amendment set), the same report for the same
 * seed, the Markdown on request, nothing stored, and bad input refused
 * naming the field. And `bandit-sim oc` on the create body: the daemon's
 * design hash and the endpoint's figures, to the bit ($BANDIT_SIM_BIN, else
 * build/bandit-sim).
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
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/tstore.h"

static const char scenarios[] = "\"scenarios\":[{\"name\":\"null\",\"arms\":[0.3,0.3,0.3]},"
                                "{\"name\":\"one better\",\"arms\":[0.3,0.3,0.6]}]";

static void test_report(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"oc1\",\"arms\":[\"ctl\",\"a\",\"b\"],"
                                      "\"goal\":{\"budget\":300},\"seed\":7,"
                                      "\"design\":{\"frozen\":true}}"));
    char body[512];
    snprintf(body, sizeof body, "{%s,\"runs\":40,\"seed\":3}", scenarios);
    json_t *r = tcall(tgroup_d, "POST", "/v1/experiments/oc1/oc", body, 200);
    json_t *st = texp_status(tgroup_d, "oc1");
    assert_string_equal(tjson_str(r, "design_hash"), tjson_str(st, "design_hash"));
    assert_string_equal(tjson_str(r, "experiment"), "oc1");
    assert_int_equal(tjson_int(r, "runs"), 40);
    assert_int_equal(tjson_int(r, "seed"), 3);
    assert_int_equal(tjson_int(r, "design.budget"), 300);
    assert_true(json_is_true(tjson_get(r, "scenarios[0].null")));
    assert_true(tjson_num(r, "scenarios[0].type_i_error.estimate") >= 0);
    assert_true(json_is_null(tjson_get(r, "scenarios[0].power")));
    assert_true(tjson_num(r, "scenarios[1].power.estimate") > 0.5);
    assert_true(tjson_num(r, "scenarios[1].sample_size.quantiles[4].value") <= 300);
    assert_string_equal(tjson_str(r, "scenarios[1].arms[2].arm"), "b");
    assert_non_null(tjson_str(r, "software.version"));
    /* Nothing was randomised. */
    assert_int_equal(tjson_int(st, "pulls"), 0);
    assert_int_equal(tjson_int(st, "handed_out"), 0);
    json_decref(st);
    /* The same seed: the same report. */
    json_t *again = tcall(tgroup_d, "POST", "/v1/experiments/oc1/oc", body, 200);
    tjson_must_equal(r, again, "the same report twice");
    json_decref(again);
    json_decref(r);

    /* After an amendment of the budget: the new budget, the new hash. */
    json_decref(texp_assign(tgroup_d, "oc1", NULL));
    json_decref(tcall(tgroup_d, "POST", "/v1/experiments/oc1/amendments",
                      "{\"change\":{\"goal\":{\"budget\":200}},\"reason\":\"fewer patients\"}",
                      201));
    snprintf(body, sizeof body, "{%s,\"runs\":10,\"markdown\":true,\"svg\":true}", scenarios);
    r = tcall(tgroup_d, "POST", "/v1/experiments/oc1/oc", body, 200);
    st = texp_status(tgroup_d, "oc1");
    assert_string_equal(tjson_str(r, "design_hash"), tjson_str(st, "design_hash"));
    assert_int_equal(tjson_int(r, "design.budget"), 200);
    assert_int_equal(tjson_int(r, "seed"), 1);
    const char *md = tjson_str(r, "markdown");
    assert_non_null(md);
    assert_non_null(strstr(md, "# Operating characteristics of `oc1`"));
    assert_non_null(strstr(md, tjson_str(st, "design_hash")));
    assert_int_equal(strncmp(tjson_str(r, "svg"), "<svg ", 5), 0);
    json_decref(st);
    json_decref(r);
}

/* Goal control: the comparisons with the control, per arm. */
static void test_control_goal(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"oc4\",\"arms\":[\"ctl\",\"a\",\"b\"],"
                                      "\"policy\":{\"name\":\"vs-control\"},\"goal\":{\"type\":"
                                      "\"control\",\"control\":\"ctl\",\"margin\":0.1,"
                                      "\"budget\":400}}"));
    json_t *r = tcall(tgroup_d, "POST", "/v1/experiments/oc4/oc",
                      "{\"scenarios\":[{\"name\":\"null\",\"arms\":[0.3,0.3,0.3]},"
                      "{\"name\":\"b\",\"arms\":[0.3,0.3,0.9]}],\"runs\":5}",
                      200);
    assert_string_equal(tjson_str(r, "goal.name"), "control");
    assert_string_equal(tjson_str(r, "design.goal"), "control");
    assert_true(fabs(tjson_num(r, "design.margin") - 0.1) < 1e-12);
    assert_true(json_is_true(tjson_get(r, "scenarios[0].null")));
    assert_true(json_is_false(tjson_get(r, "scenarios[1].null")));
    assert_true(json_is_true(tjson_get(r, "scenarios[1].arms[0].control")));
    assert_null(tjson_get(r, "scenarios[1].arms[0].vs_control"));
    assert_string_equal(tjson_str(r, "scenarios[1].arms[2].vs_control.truth"), "above the margin");
    assert_int_equal(tjson_int(r, "scenarios[1].arms[2].vs_control.declared_superior.runs"), 5);
    json_decref(r);
}

/* calibrate: goal.scale of a control design held under both nulls, the
 * report at the value found; the stored design untouched. */
static void test_calibrate(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"oc5\",\"arms\":[\"ctl\",\"a\"],"
                                      "\"policy\":{\"name\":\"vs-control\"},\"goal\":{\"type\":"
                                      "\"control\",\"control\":\"ctl\",\"margin\":0.1,"
                                      "\"budget\":300}}"));
    json_t *r = tcall(tgroup_d, "POST", "/v1/experiments/oc5/oc",
                      "{\"scenarios\":[{\"name\":\"equal\",\"arms\":[0.3,0.3]},"
                      "{\"name\":\"margin\",\"arms\":[0.3,0.4]},"
                      "{\"name\":\"works\",\"arms\":[0.3,0.6]}],\"runs\":40,\"calibrate\":0.2,"
                      "\"markdown\":true}",
                      200);
    json_t *st = texp_status(tgroup_d, "oc5");
    assert_string_equal(tjson_str(r, "calibration.parameter"), "scale");
    assert_string_equal(tjson_str(r, "calibration.original_design_hash"),
                        tjson_str(st, "design_hash"));
    assert_true(json_is_null(tjson_get(r, "design_hash")));
    /* The Markdown says the calibrated design has no hash, and names the
     * original's, not a hash row that reads "(none)". */
    const char *md = tjson_str(r, "markdown");
    assert_non_null(strstr(md, "not a stored design: no hash"));
    assert_null(strstr(md, "its hash above"));
    assert_non_null(strstr(md, tjson_str(st, "design_hash")));
    assert_int_equal(json_array_size(tjson_get(r, "calibration.nulls")), 2);
    const char *binding = tjson_str(r, "calibration.scenario");
    assert_true(strcmp(binding, "equal") == 0 || strcmp(binding, "margin") == 0);
    assert_true(tjson_num(r, "calibration.type_i_error") <= 0.2);
    double scale = tjson_num(r, "calibration.scale");
    assert_true(scale >= 0.05 && scale <= 1);
    if (scale < 1)
        assert_true(fabs(tjson_num(r, "design.scale") - scale) < 1e-12);
    /* the report's runs are the calibration's seeds: its type I errors
     * are those at the value found */
    assert_true(fabs(tjson_num(r, "scenarios[1].type_i_error.estimate") -
                     tjson_num(r, "calibration.nulls[1].type_i_error")) < 1e-12);
    json_decref(st);
    json_decref(r);
    /* Without calibrate the stored design (the proven rule) is reported. */
    r = tcall(tgroup_d, "POST", "/v1/experiments/oc5/oc",
              "{\"scenarios\":[{\"name\":\"equal\",\"arms\":[0.3,0.3]}],\"runs\":5}", 200);
    assert_null(tjson_get(r, "calibration"));
    assert_null(tjson_get(r, "design.scale"));
    json_decref(r);
}

static void test_invalid(void **state)
{
    (void)state;
    json_decref(texp_create(tgroup_d, "{\"id\":\"oc2\",\"arms\":[\"ctl\",\"a\"]}"));
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{}", "scenarios"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2,0.3]}]}", "scenarios"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"runs\":0}", "runs"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"runs\":1001}", "runs"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"max_pulls\":0}", "max_pulls"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"markdown\":1}", "markdown"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"svg\":\"yes\"}", "svg"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"threads\":4}", "threads"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"calibrate\":0}", "calibrate"},
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"calibrate\":\"a\"}", "calibrate"},
        /* no null to calibrate on */
        {"{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}],\"calibrate\":0.1}", "calibrate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments/oc2/oc", bad[i].body, NULL);
        assert_invalid(r, bad[i].field);
        tresp_free(r);
    }
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments/nope/oc",
                           "{\"scenarios\":[{\"name\":\"x\",\"arms\":[0.1,0.2]}]}", NULL);
    assert_status(r, 404);
    tresp_free(r);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* a and b alike, numbers to 1e-12 relative: the daemon prints reals
 * with 15 significant digits, bandit-sim oc with 17. */
// NOLINTNEXTLINE(misc-no-recursion): walks two reports, as deep as they are (four levels)
static int near_equal(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return fabs(x - y) <= 1e-12 * fmax(1.0, fabs(x));
    }
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!near_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach(a, k, v)
        {
            if (!near_equal(v, json_object_get(b, k)))
                return 0;
        }
        return 1;
    }
    return json_equal(a, b);
}

static void test_cli_same_engine(void **state)
{
    (void)state;
    static const char design[] = "{\"id\":\"oc3\",\"arms\":[\"ctl\",\"a\",\"b\"],\"seed\":5,"
                                 "\"goal\":{\"delta\":0.1},\"constraints\":{\"burn_in\":2}}";
    json_t *made = texp_create(tgroup_d, "%s", design);
    char body[512];
    snprintf(body, sizeof body, "{%s,\"runs\":6,\"seed\":9,\"max_pulls\":80}", scenarios);
    json_t *r = tcall(tgroup_d, "POST", "/v1/experiments/oc3/oc", body, 200);

    char dir[] = "/tmp/test_oc_XXXXXX", path[256], cmd[1024], out[1 << 16];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/design.json", dir);
    write_file(path, design);
    snprintf(path, sizeof path, "%s/scenarios.json", dir);
    snprintf(body, sizeof body, "{%s}", scenarios);
    write_file(path, body);
    const char *bin = getenv("BANDIT_SIM_BIN");
    snprintf(cmd, sizeof cmd,
             "'%s' oc --design '%s/design.json' --scenarios '%s/scenarios.json' --runs 6 --seed 9 "
             "--max-pulls 80 --threads 2 --no-progress > '%s/out'",
             bin != NULL ? bin : "build/bandit-sim", dir, dir, dir);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    snprintf(path, sizeof path, "%s/out", dir);
    tread_file(path, out, sizeof out);
    json_t *cli = json_loads(out, 0, NULL);
    assert_non_null(cli);
    assert_string_equal(tjson_str(cli, "design_hash"), tjson_str(made, "design_hash"));
    assert_string_equal(tjson_str(cli, "design_hash"), tjson_str(r, "design_hash"));
    assert_true(near_equal(json_object_get(cli, "scenarios"), json_object_get(r, "scenarios")));
    assert_true(near_equal(json_object_get(cli, "design"), json_object_get(r, "design")));
    assert_true(tjson_num(r, "scenarios[1].arms[2].runs_with_data") == 6);
    assert_int_equal(ttree_remove(dir), 0);
    json_decref(cli);
    json_decref(r);
    json_decref(made);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report),          cmocka_unit_test(test_control_goal),
        cmocka_unit_test(test_calibrate),       cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_cli_same_engine),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
