/*
 * test_sim_cli.c — black-box tests of the bandit-sim command (sim/main.c):
 * the JSON it prints, --list-policies, output independent of --threads, and
 * one-line errors with a non-zero exit for every kind of bad input; `oc`:
 * its report in JSON and Markdown, its Markdown file, its errors.
 *
 * The binary is $BANDIT_SIM_BIN (make test sets it), else build/bandit-sim.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/support/stattest.h"
#include "tests/support/tstore.h"

static char dir[] = "/tmp/test_sim_cli_XXXXXX";
static char problem[256];

struct outcome {
    int status; /* exit status, or −1 if it did not exit normally */
    char out[65536];
    char err[4096];
};

/* Run bandit-sim with args (a shell fragment: the tests write them). */
static void run(const char *args, struct outcome *o)
{
    const char *bin = getenv("BANDIT_SIM_BIN");
    if (bin == NULL)
        bin = "build/bandit-sim";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out' 2>'%s/err' </dev/null", bin, args, dir, dir);
    int st = system(cmd);
    o->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char path[512];
    snprintf(path, sizeof path, "%s/out", dir);
    tread_file(path, o->out, sizeof o->out);
    snprintf(path, sizeof path, "%s/err", dir);
    tread_file(path, o->err, sizeof o->err);
}

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(problem, sizeof problem, "%s/p.json", dir);
    FILE *f = fopen(problem, "w");
    if (f == NULL)
        return -1;
    fputs("{\"m\": 1, \"delta\": 0.1, \"bandits\": [{\"arms\": [0.2, 0.5, 0.8]}]}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return ttree_remove(dir);
}

static void test_list_policies(void **state)
{
    (void)state;
    struct outcome o;
    run("--list-policies", &o);
    assert_int_equal(o.status, 0);
    json_error_t je;
    json_t *j = json_loads(o.out, 0, &je);
    if (j == NULL)
        fail_msg("not JSON (%s): %s", je.text, o.out);
    json_t *list = json_object_get(j, "policies");
    assert_true(json_array_size(list) >= 2);
    json_decref(j);
}

/* One JSON object on one line; the same numbers with 1 and 2 threads. */
static void test_run_and_threads(void **state)
{
    (void)state;
    struct outcome o1, o2;
    char args[512];
    snprintf(args, sizeof args,
             "--problem '%s' --policy adapt --param variant=adapt --runs 12 --seed 5 --delay 2 "
             "--threads 1",
             problem);
    run(args, &o1);
    assert_int_equal(o1.status, 0);
    assert_string_equal(o1.err, "");
    assert_non_null(strchr(o1.out, '\n'));
    assert_true(strchr(o1.out, '\n') == o1.out + strlen(o1.out) - 1); /* one line */
    snprintf(args, sizeof args,
             "--problem '%s' --policy adapt --runs 12 --seed 5 --delay 2 --threads 2", problem);
    run(args, &o2);
    assert_int_equal(o2.status, 0);
    json_t *a = json_loads(o1.out, 0, NULL), *b = json_loads(o2.out, 0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    stattest_assert_result_keys(a, o1.out);
    assert_int_equal(json_integer_value(json_object_get(a, "runs")), 12);
    json_object_del(a, "wall_s");
    json_object_del(b, "wall_s");
    json_object_del(a, "pulls_per_s");
    json_object_del(b, "pulls_per_s");
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);

    /* The problem on stdin, the goal overridden from the command line. */
    snprintf(args, sizeof args,
             "--problem - --policy uniform --budget 30 --runs 3 --bound fixed --delta 0.2 "
             "--pretty < '%s'",
             problem);
    /* (run() gives the command /dev/null as stdin, so call it here) */
    const char *bin = getenv("BANDIT_SIM_BIN");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s/out'", bin ? bin : "build/bandit-sim", args, dir);
    assert_int_equal(system(cmd), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/out", dir);
    tread_file(path, o1.out, sizeof o1.out);
    json_t *c = json_loads(o1.out, 0, NULL);
    assert_non_null(c);
    assert_int_equal(json_integer_value(json_object_get(c, "budget")), 30);
    assert_string_equal(json_string_value(json_object_get(c, "bound")), "fixed");
    assert_true(json_real_value(json_object_get(c, "delta")) == 0.2);
    assert_true(json_real_value(json_object_get(c, "mean_pulls")) == 30.0);
    json_decref(c);
}

struct bad {
    const char *args; /* @P: the problem file */
    const char *want; /* in the error line */
};

static const struct bad bad[] = {
    {"--policy adapt", "--problem"},
    {"--problem @P", "--policy"},
    {"--problem @P --policy nosuch", "nosuch"},
    {"--problem @P --policy adapt --param nope=1", "nope"},
    {"--problem @P --policy adapt --param variant=sideways", "variant"},
    {"--problem @P --policy adapt --param cap=2", "cap"},
    {"--problem @P --policy adapt --param cap", "cap"},
    {"--problem @P --policy adapt --runs 0", "--runs"},
    {"--problem @P --policy adapt --runs -3", "--runs"},
    {"--problem @P --policy adapt --runs 12x", "--runs"},
    {"--problem @P --policy adapt --delay abc", "--delay"},
    {"--problem @P --policy adapt --budget 0", "--budget"},
    {"--problem @P --policy adapt --threads 100000", "--threads"},
    {"--problem @P --policy adapt --stop sometime", "--stop"},
    {"--problem @P --policy adapt --bound loose", "--bound"},
    {"--problem @P --policy adapt --delta 1", "--delta"},
    {"--problem @P --policy adapt --epsilon -1", "--epsilon"},
    {"--problem @P --policy adapt --m 3", "--m"},
    {"--problem @P --policy adapt --min-prob 0.5", "--min-prob"},
    {"--problem @P --policy adapt --colour red", "--colour"},
    {"--problem @P --policy adapt extra", "extra"},
    {"--problem @P --policy adapt --runs", "--runs"},
    {"--problem /nonexistent/p.json --policy adapt", "/nonexistent/p.json"},
    {"--problem @P --policy uniform --budget 2", "budget"},
    {"--problem @P --policy adapt --trace 0", "--trace"},
    {"--problem @P --policy adapt --trace 101", "--trace"},
};

static void test_bad_input(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024];
        const char *at = strstr(bad[i].args, "@P");
        if (at != NULL)
            snprintf(args, sizeof args, "%.*s%s%s", (int)(at - bad[i].args), bad[i].args, problem,
                     at + 2);
        else
            snprintf(args, sizeof args, "%s", bad[i].args);
        struct outcome o;
        run(args, &o);
        if (o.status <= 0)
            fail_msg("bandit-sim %s: exit status %d, want non-zero", args, o.status);
        assert_string_equal(o.out, "");
        size_t len = strlen(o.err);
        if (len == 0 || o.err[len - 1] != '\n' || strchr(o.err, '\n') != o.err + len - 1)
            fail_msg("bandit-sim %s: want one error line, got \"%s\"", args, o.err);
        if (strncmp(o.err, "bandit-sim: ", 12) != 0 || strstr(o.err, bad[i].want) == NULL)
            fail_msg("bandit-sim %s: error \"%s\" does not name %s", args, o.err, bad[i].want);
    }
}

/* --trace adds an object of parallel arrays, one entry per checkpoint. */
static void test_trace_json(void **state)
{
    (void)state;
    char args[512];
    snprintf(args, sizeof args, "--problem '%s' --policy adapt --runs 20 --trace 3", problem);
    struct outcome o;
    run(args, &o);
    assert_int_equal(o.status, 0);
    json_error_t je;
    json_t *j = json_loads(o.out, 0, &je);
    assert_non_null(j);
    json_t *t = json_object_get(j, "trace");
    assert_true(json_is_object(t));
    assert_int_equal(json_integer_value(json_object_get(t, "per_decade")), 3);
    size_t n = json_array_size(json_object_get(t, "pulls"));
    assert_true(n >= 2);
    const char *fields[] = {
        "delta_c",           "rho",       "nss",    "error_rate", "pac_error_rate",
        "regret_error_rate", "completed", "running"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        assert_int_equal(json_array_size(json_object_get(t, fields[i])), n);
    assert_null(json_object_get(t, "completed_target")); /* no target arm */
    json_decref(j);

    /* Without --trace there is no trace. */
    snprintf(args, sizeof args, "--problem '%s' --policy adapt --runs 5", problem);
    run(args, &o);
    assert_int_equal(o.status, 0);
    assert_null(strstr(o.out, "\"trace\""));
}

static void write_text(const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* bandit-sim oc: the report, the same as Markdown, and one-line errors. */
static void test_oc(void **state)
{
    (void)state;
    char design[256], scen[256], badf[256], md[300], args[1024];
    write_text("design.json",
               "{\"id\": \"t\", \"seed\": 1, \"arms\": [\"c\", \"x\"], \"goal\": {\"budget\": 60}}",
               design, sizeof design);
    write_text("scen.json",
               "{\"scenarios\": [{\"name\": \"null\", \"arms\": [0.4, 0.4]},"
               " {\"name\": \"alt\", \"arms\": [0.4, 0.7]}]}",
               scen, sizeof scen);
    write_text("bad.json", "[{\"name\": \"n\", \"arms\": [0.4, 0.4, 0.4]}]", badf, sizeof badf);
    snprintf(md, sizeof md, "%s/oc.md", dir);
    snprintf(args, sizeof args,
             "oc --design '%s' --scenarios '%s' --runs 8 --markdown '%s' --svg '%s/n.svg'", design,
             scen, md, dir);
    struct outcome o;
    run(args, &o);
    if (o.status != 0)
        fail_msg("bandit-sim %s: %d: %s", args, o.status, o.err);
    json_t *j = json_loads(o.out, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "operating_characteristics");
    assert_int_equal(json_integer_value(json_object_get(j, "runs")), 8);
    assert_int_equal(json_array_size(json_object_get(j, "scenarios")), 2);
    const char *hash = json_string_value(json_object_get(j, "design_hash"));
    assert_true(hash != NULL && strlen(hash) == 64);
    char text[65536];
    tread_file(md, text, sizeof text);
    assert_non_null(strstr(text, hash));
    assert_non_null(strstr(text, "## Headline"));
    assert_non_null(strstr(text, "](n.svg)")); /* the figure, relative to the page */
    char svg[65536], svgpath[300];
    snprintf(svgpath, sizeof svgpath, "%s/n.svg", dir);
    tread_file(svgpath, svg, sizeof svg);
    assert_int_equal(strncmp(svg, "<svg ", 5), 0);
    assert_non_null(strstr(svg, "</svg>"));
    /* --format markdown prints the same page. */
    snprintf(args, sizeof args,
             "oc --design '%s' --scenarios '%s' --runs 8 --markdown '%s' --svg '%s/n.svg' "
             "--format markdown",
             design, scen, md, dir);
    run(args, &o);
    assert_int_equal(o.status, 0);
    /* the same page but the command line that made it */
    assert_non_null(strstr(o.out, "## Design"));
    assert_string_equal(strstr(o.out, "## Design"), strstr(text, "## Design"));
    json_decref(j);

    const struct {
        const char *design, *scenarios, *more, *want;
    } errs[] = {
        {design, NULL, "", "oc: --design and --scenarios are required"},
        {design, badf, "", "scenarios[0]: bandit default has 2"},
        {design, scen, "--runs 0", "--runs: must be an integer"},
        {design, scen, "--calibrate 2", "--calibrate: must be a type I error"},
        {design, scen, "--calibrate 0.1 --null alt", "must be a null"},
        {design, scen, "--scale-range 0.5,2", "--scale-range: must be LO,HI with 0 < LO < HI <= 1"},
        {design, scen, "--delta-range 0.5,1", "--delta-range: must be LO,HI with 0 < LO < HI < 1"},
        {scen, scen, "", "--design: "},
        {design, scen, "--stop glr", "--stop: unknown option"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        char a[1024];
        snprintf(a, sizeof a, "oc --design '%s'%s%s%s %s", errs[i].design,
                 errs[i].scenarios ? " --scenarios '" : "",
                 errs[i].scenarios ? errs[i].scenarios : "", errs[i].scenarios ? "'" : "",
                 errs[i].more);
        run(a, &o);
        if (o.status != 2 && o.status != 1)
            fail_msg("bandit-sim %s: exit status %d, want 1 or 2", a, o.status);
        assert_string_equal(o.out, "");
        if (strncmp(o.err, "bandit-sim: ", 12) != 0 || strstr(o.err, errs[i].want) == NULL)
            fail_msg("bandit-sim %s: error \"%s\" does not say %s", a, o.err, errs[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_policies),
        cmocka_unit_test(test_run_and_threads),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_trace_json),
        cmocka_unit_test(test_oc),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
