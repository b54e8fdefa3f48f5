/*
 * test_policies.c — every registered policy served over HTTP (issue 4,
 * "All policies served"). The list comes from GET /v1/policies, which must
 * be exactly `bandit-sim --list-policies`; for each policy:
 * - a valid configuration (built from its flags: a budget for fixed-budget
 *   and regret policies, ε for those that need it, a target arm) is created
 *   with its defaults and again with every parameter given explicitly, and
 *   a short assign/reward loop runs without a 5xx, ending in a sane status;
 *   multi-bandit policies also run on two bandits without naming one;
 * - every invalid combination its flags imply is refused with a
 *   problem+json naming the field: goal.budget, target_arm, goal.epsilon,
 *   goal.m (m ≥ K; m > 1 for a best-arm policy), policy.params.X (unknown,
 *   below its minimum, above its maximum, not an integer, not a choice),
 *   stop_rule ("policy" without a rule of its own);
 * - every stop rule of the list is accepted or refused alike by the daemon
 *   and by bandit-sim;
 * plus the constraint combinations and the Beta prior of the create body.
 * A policy merged later is covered without touching this file.
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

static json_t *g_list; /* GET /v1/policies */

static int group_setup(void **state)
{
    (void)state;
    if (tgroup_start(NULL) != 0)
        return -1;
    struct tresp *r = treq(tgroup_d, "GET", "/v1/policies", NULL, NULL);
    if (r->status == 200 && r->json != NULL)
        g_list = json_incref(r->json);
    tresp_free(r);
    return g_list == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    json_decref(g_list);
    return tgroup_teardown(state);
}

static int has_flag(json_t *p, const char *flag)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(p, "flags"), i,
                       f) if (strcmp(json_string_value(f), flag) == 0) return 1;
    return 0;
}

/* The goal, target and budget a policy needs on three arms, as create-body
 * members (a JSON fragment without braces). */
static void valid_fields(json_t *p, char *buf, size_t len, long long budget)
{
    int fb = has_flag(p, "fixed_budget") && !has_flag(p, "fixed_confidence");
    int regret = has_flag(p, "regret");
    /* a sampler for comparisons with control: that goal, arm 0 ("lo") the
     * control (an index: the simulator's arms have no names) */
    snprintf(buf, len, "\"goal\":{%s\"delta\":0.1,\"epsilon\":%s,\"budget\":%s}%s",
             has_flag(p, "control") ? "\"type\":\"control\",\"control\":0,\"margin\":0.1," : "",
             has_flag(p, "needs_epsilon") ? "0.1" : "0",
             fb || regret ? (budget == 60 ? "60" : "120") : "null",
             has_flag(p, "needs_target_arm") ? ",\"target_arm\":\"hi\"" : "");
}

/* Every parameter of p at its default, as a params object (new). */
static json_t *explicit_defaults(json_t *p)
{
    json_t *o = json_object();
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(p, "params"), i, q) json_object_set(
        o, json_string_value(json_object_get(q, "name")), json_object_get(q, "default"));
    return o;
}

/* n assignments of experiment id, each rewarded at once (Bernoulli with
 * the arm's p[] from g): every answer 201 (never 5xx), every arm valid. */
static void drive(const char *id, int n, const char *bandit, struct trng *g)
{
    static const double p[3] = {0.2, 0.5, 0.8};
    char body[128];
    snprintf(body, sizeof body, bandit ? "{\"bandit\":\"%s\"}" : "{}", bandit);
    for (int i = 0; i < n; i++) {
        json_t *a = texp_assign(tgroup_d, id, body);
        json_t *one = json_array_get(a, 0);
        long long arm = tjson_int(one, "arm_index");
        assert_true(arm >= 0 && arm < 3);
        if (bandit != NULL)
            assert_string_equal(tjson_str(one, "bandit"), bandit);
        if (!json_is_true(json_object_get(one, "exploit")))
            assert_string_equal(
                texp_reward(tgroup_d, id, tjson_str(one, "id"), trng_bernoulli(g, p[arm])),
                "accepted");
        json_decref(a);
    }
}

/* The status of a short run makes sense: counts add up, the budget is not
 * exceeded, each bandit recommends m arms, δᶜ and ρ̄ are probabilities, and
 * a stopped experiment says why. */
static void check_sane(const char *id, long long m, long long budget)
{
    json_t *s = texp_status(tgroup_d, id);
    long long pulls = tjson_int(s, "pulls"), pending = tjson_int(s, "pending");
    long long handed = tjson_int(s, "handed_out");
    assert_true(pulls >= 0 && pending == 0);
    assert_int_equal(pulls + pending, handed);
    if (budget > 0)
        assert_true(handed <= budget);
    size_t b;
    json_t *bj;
    json_array_foreach(json_object_get(s, "bandits"), b, bj)
    {
        assert_int_equal(json_array_size(json_object_get(bj, "recommended")), m);
        double dc = tjson_num(bj, "delta_c"), rho = tjson_num(bj, "rho");
        assert_true(dc >= 0 && dc <= 1);
        assert_true(rho >= 0 && rho <= 1);
        long long sum = 0;
        size_t i;
        json_t *arm;
        json_array_foreach(json_object_get(bj, "arms"), i, arm) sum += tjson_int(arm, "pulls");
        assert_true(sum <= pulls);
    }
    int stopped = json_is_true(json_object_get(s, "stopped"));
    const char *why = tjson_str(s, "stop_reason");
    assert_int_equal(stopped, why != NULL);
    assert_string_equal(tjson_str(s, "state"), stopped ? "stopped" : "running");
    json_decref(s);
}

/* GET /v1/policies is exactly what `bandit-sim --list-policies` prints. */
static void test_list_matches_simulator(void **state)
{
    (void)state;
    const char *bin = getenv("BANDIT_SIM_BIN");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s --list-policies", bin != NULL ? bin : "build/bandit-sim");
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    json_error_t e;
    json_t *sim = json_loadf(f, 0, &e);
    assert_int_equal(pclose(f), 0);
    if (sim == NULL)
        fail_msg("bandit-sim --list-policies: not JSON (%s)", e.text);
    assert_true(json_equal(sim, g_list));
    json_decref(sim);
    /* What a client builds forms from is there for each. */
    size_t i;
    json_t *p;
    assert_true(json_array_size(json_object_get(g_list, "policies")) >= 2);
    json_array_foreach(json_object_get(g_list, "policies"), i, p)
    {
        assert_non_null(tjson_str(p, "name"));
        assert_non_null(tjson_str(p, "summary"));
        assert_true(json_is_array(json_object_get(p, "flags")));
        assert_true(json_is_array(json_object_get(p, "params")));
    }
    /* Read-only: other methods are refused. */
    struct tresp *r = treq(tgroup_d, "POST", "/v1/policies", "{}", NULL);
    assert_problem(r, 405);
    tresp_free(r);
}

/* Each policy, created with its defaults and with explicit parameters,
 * serves a short assign/reward loop. */
static void test_every_policy_serves(void **state)
{
    (void)state;
    size_t i;
    json_t *p;
    struct trng g;
    trng_seed(&g, 4242);
    json_array_foreach(json_object_get(g_list, "policies"), i, p)
    {
        const char *name = tjson_str(p, "name");
        char fields[256], id[96];
        valid_fields(p, fields, sizeof fields, 60);
        long long budget = strstr(fields, "\"budget\":60") ? 60 : 0;

        snprintf(id, sizeof id, "all-%s", name);
        json_decref(texp_create(tgroup_d,
                                "{\"id\":\"%s\",\"arms\":[\"lo\",\"mid\",\"hi\"],"
                                "\"policy\":{\"name\":\"%s\"},%s,\"seed\":7}",
                                id, name, fields));
        drive(id, 40, NULL, &g);
        check_sane(id, 1, budget);

        /* Every parameter given explicitly, at its default. */
        json_t *params = explicit_defaults(p);
        char *ptext = json_dumps(params, JSON_COMPACT);
        snprintf(id, sizeof id, "explicit-%s", name);
        json_t *x = texp_create(tgroup_d,
                                "{\"id\":\"%s\",\"arms\":[\"lo\",\"mid\",\"hi\"],"
                                "\"policy\":{\"name\":\"%s\",\"params\":%s},%s,\"seed\":7}",
                                id, name, ptext, fields);
        assert_true(json_equal(tjson_get(x, "policy.params"), params));
        json_decref(x);
        free(ptext);
        json_decref(params);
        drive(id, 10, NULL, &g);
        check_sane(id, 1, budget);

        /* Top m. */
        if (has_flag(p, "top_m")) {
            snprintf(id, sizeof id, "top2-%s", name);
            char f2[300];
            snprintf(f2, sizeof f2, "%s", fields);
            char *m = strstr(f2, "\"delta\"");
            assert_non_null(m);
            memmove(m + 7, m, strlen(m) + 1);
            memcpy(m, "\"m\":2, ", 7);
            json_decref(texp_create(tgroup_d,
                                    "{\"id\":\"%s\",\"arms\":[\"lo\",\"mid\",\"hi\"],"
                                    "\"policy\":{\"name\":\"%s\"},%s,\"seed\":8}",
                                    id, name, f2));
            drive(id, 20, NULL, &g);
            check_sane(id, 2, budget);
        }

        /* Two bandits: a multi-bandit policy chooses the bandit, any other
         * is served per bandit by the engine; naming one keeps the pull
         * there. */
        valid_fields(p, fields, sizeof fields, 120);
        budget = budget ? 120 : 0;
        snprintf(id, sizeof id, "two-%s", name);
        json_decref(
            texp_create(tgroup_d,
                        "{\"id\":\"%s\",\"bandits\":[{\"id\":\"s1\",\"arms\":[\"lo\","
                        "\"mid\",\"hi\"]},{\"id\":\"s2\",\"arms\":[\"lo\",\"mid\",\"hi\"]}],"
                        "\"policy\":{\"name\":\"%s\"},%s,\"seed\":9}",
                        id, name, fields));
        drive(id, 20, NULL, &g);
        drive(id, 10, "s2", &g);
        check_sane(id, 1, budget);
    }
}

static void create_invalid(const char *field, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void create_invalid(const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = NULL;
    assert_true(vasprintf(&body, fmt, ap) >= 0);
    va_end(ap);
    struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments", body, NULL);
    if (r->status != 400 || !tproblem_has_field(r, field))
        fail_msg("%s: expected 400 naming %s, got %ld %s", body, field, r->status,
                 r->body ? r->body : "");
    assert_invalid(r, field);
    tresp_free(r);
    free(body);
}

/* Out-of-range values of one declared parameter. */
static void invalid_params(const char *name, const char *fields, json_t *q)
{
    const char *pname = tjson_str(q, "name"), *type = tjson_str(q, "type");
    char field[128];
    snprintf(field, sizeof field, "policy.params.%s", pname);
#define BAD(valuefmt, value)                                                                       \
    create_invalid(field,                                                                          \
                   "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\",\"params\":{"    \
                   "\"%s\":" valuefmt "}},%s}",                                                    \
                   name, pname, value, fields)
    if (strcmp(type, "enum") == 0) {
        BAD("%s", "\"no-such-choice\"");
        BAD("%s", "1");
        return;
    }
    double lo = tjson_num(q, "min"), hi = tjson_num(q, "max");
    char v[64];
    snprintf(v, sizeof v, "%.17g", lo - (fabs(lo) > 1 ? fabs(lo) : 1));
    BAD("%s", v);
    snprintf(v, sizeof v, "%.17g", hi + (fabs(hi) > 1 ? fabs(hi) : 1));
    BAD("%s", v);
    BAD("%s", "\"not a number\"");
    BAD("%s", "null");
    if (strcmp(type, "integer") == 0 && hi - lo >= 1) {
        snprintf(v, sizeof v, "%.17g", lo + 0.5);
        BAD("%s", v);
    }
#undef BAD
}

/* The exit status of `bandit-sim ARGS` (its stderr into err, up to len − 1
 * bytes), or −1 if it could not be run. */
static int run_sim(const char *args, char *err, size_t len)
{
    const char *bin = getenv("BANDIT_SIM_BIN");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1 >/dev/null", bin != NULL ? bin : "build/bandit-sim",
             args);
    FILE *f = popen(cmd, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(err, 1, len - 1, f);
    err[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every stop rule GET /v1/policies lists, with every policy: the daemon
 * (stop_rule) and the simulator (--stop) accept the same pairs, and refuse
 * the others naming the rule's field ("policy" for a policy without a rule
 * of its own). The two once gave "policy" two meanings. */
static void test_stop_rules_agree(void **state)
{
    (void)state;
    char dir[] = "/tmp/banditd-stoprules-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[sizeof dir + 16];
    snprintf(path, sizeof path, "%s/p.json", dir);
    size_t i, j;
    json_t *p, *rule;
    int refused = 0, accepted = 0;
    json_array_foreach(json_object_get(g_list, "policies"), i, p)
    {
        const char *name = tjson_str(p, "name");
        char fields[256];
        valid_fields(p, fields, sizeof fields, 60);
        /* The same problem for the simulator: the goal's members at top
         * level, arms 0.2, 0.5, 0.8, the target arm by index. */
        char *wrapped = NULL;
        assert_true(asprintf(&wrapped, "{%s}", fields) >= 0);
        json_t *body_j = json_loads(wrapped, 0, NULL);
        assert_non_null(body_j);
        json_t *prob = json_deep_copy(json_object_get(body_j, "goal"));
        json_object_set_new(prob, "arms", json_pack("[f, f, f]", 0.2, 0.5, 0.8));
        if (json_object_get(body_j, "target_arm") != NULL)
            json_object_set_new(prob, "target_arm", json_integer(2));
        char *problem = json_dumps(prob, 0);
        assert_non_null(problem);
        json_decref(prob);
        json_decref(body_j);
        free(wrapped);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_true(fputs(problem, f) >= 0);
        assert_int_equal(fclose(f), 0);
        json_array_foreach(json_object_get(g_list, "stop_rules"), j, rule)
        {
            const char *rname = tjson_str(rule, "name");
            assert_non_null(tjson_str(rule, "proof"));
            assert_non_null(tjson_str(rule, "summary"));
            char *body = NULL;
            assert_true(asprintf(&body,
                                 "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":"
                                 "\"%s\"},\"stop_rule\":\"%s\",%s}",
                                 name, rname, fields) >= 0);
            struct tresp *r = treq(tgroup_d, "POST", "/v1/experiments", body, NULL);
            char args[512], err[1024];
            snprintf(args, sizeof args,
                     "--problem %s --policy %s --stop %s --runs 1 --max-pulls 300 --threads 1 "
                     "--no-progress",
                     path, name, rname);
            int rc = run_sim(args, err, sizeof err);
            if (r->status == 201 && rc == 0) {
                accepted++;
            } else if (r->status == 400 && tproblem_has_field(r, "stop_rule") && rc == 1 &&
                       strstr(err, "--stop") != NULL) {
                refused++;
                /* Only "policy" depends on the policy, and "control" on the
                 * goal: a comparison with control stops on that rule only. */
                int control = has_flag(p, "control");
                if (control)
                    assert_true(strcmp(rname, "default") != 0 && strcmp(rname, "control") != 0);
                else if (strcmp(rname, "control") != 0)
                    assert_string_equal(rname, "policy");
                if (!control && strcmp(rname, "policy") == 0)
                    assert_false(has_flag(p, "own_stop"));
            } else {
                fail_msg("%s with stop rule %s: the daemon answers %ld %s, the simulator exits "
                         "%d: %s",
                         name, rname, r->status, r->body ? r->body : "", rc, err);
            }
            tresp_free(r);
            free(body);
        }
        free(problem);
    }
    assert_true(accepted > 0 && refused > 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* Every invalid combination a policy's flags imply. */
static void test_invalid_combinations(void **state)
{
    (void)state;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(g_list, "policies"), i, p)
    {
        const char *name = tjson_str(p, "name");
        char fields[256];
        valid_fields(p, fields, sizeof fields, 60);
        const char *eps = has_flag(p, "needs_epsilon") ? "0.1" : "0";
        const char *target = has_flag(p, "needs_target_arm") ? ",\"target_arm\":\"hi\"" : "";
        int needs_budget = has_flag(p, "fixed_budget") && !has_flag(p, "fixed_confidence");
        const char *budget = needs_budget || has_flag(p, "regret") ? "60" : "null";

        if (needs_budget)
            create_invalid("goal.budget",
                           "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                           "\"goal\":{\"epsilon\":%s,\"budget\":null}%s}",
                           name, eps, target);
        if (has_flag(p, "needs_target_arm"))
            create_invalid("target_arm",
                           "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                           "\"goal\":{\"epsilon\":%s,\"budget\":%s}}",
                           name, eps, budget);
        if (has_flag(p, "needs_epsilon"))
            create_invalid("goal.epsilon",
                           "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                           "\"goal\":{\"epsilon\":0,\"budget\":%s}%s}",
                           name, budget, target);
        /* m must be below the number of arms, and 1 for a best-arm policy. */
        create_invalid("goal.m",
                       "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                       "\"goal\":{\"m\":3,\"epsilon\":%s,\"budget\":%s}%s}",
                       name, eps, budget, target);
        if (!has_flag(p, "top_m"))
            create_invalid("goal.m",
                           "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                           "\"goal\":{\"m\":2,\"epsilon\":%s,\"budget\":%s}%s}",
                           name, eps, budget, target);
        if (!has_flag(p, "own_stop"))
            create_invalid("stop_rule",
                           "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                           "\"stop_rule\":\"policy\",%s}",
                           name, fields);
        /* A budget below one pull per arm. */
        create_invalid("goal.budget",
                       "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\"},"
                       "\"goal\":{\"epsilon\":%s,\"budget\":2}%s}",
                       name, eps, target);
        create_invalid("policy.params.no_such_param",
                       "{\"arms\":[\"lo\",\"mid\",\"hi\"],\"policy\":{\"name\":\"%s\",\"params\":"
                       "{\"no_such_param\":1}},%s}",
                       name, fields);
        size_t k;
        json_t *q;
        json_array_foreach(json_object_get(p, "params"), k, q) invalid_params(name, fields, q);
    }
}

/* Constraints that cannot hold together, and the Beta prior. */
static void test_invalid_constraints_and_prior(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *field;
    } cases[] = {
        /* K f ≥ 1: nothing left for the policy */
        {"\"constraints\":{\"min_prob\":0.34}", "constraints.min_prob"},
        /* the floor comes on top of the control share */
        {"\"constraints\":{\"min_prob\":0.2,\"control\":{\"arm\":\"lo\",\"share\":0.5}}",
         "constraints.min_prob"},
        {"\"constraints\":{\"control\":{\"share\":0.2}}", "constraints.control.arm"},
        {"\"constraints\":{\"control\":{\"arm\":\"lo\"}}", "constraints.control.share"},
        {"\"constraints\":{\"control\":{\"arm\":\"lo\",\"share\":0}}", "constraints.control.share"},
        {"\"constraints\":{\"control\":\"lo\"}", "constraints.control"},
        {"\"constraints\":{\"burn_in\":1.5}", "constraints.burn_in"},
        {"\"constraints\":{\"min_prob\":\"0.1\"}", "constraints.min_prob"},
        {"\"prior\":5", "prior"},
        {"\"prior\":{\"alpha\":0}", "prior.alpha"},
        {"\"prior\":{\"beta\":-1}", "prior.beta"},
        {"\"prior\":{\"alpha\":1e7}", "prior.alpha"},
        {"\"prior\":{\"beta\":\"1\"}", "prior.beta"},
        {"\"prior\":{\"alpha\":1,\"gamma\":1}", "prior.gamma"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        create_invalid(cases[i].field, "{\"arms\":[\"lo\",\"mid\",\"hi\"],%s}", cases[i].extra);
    /* Control arm missing from one bandit. */
    create_invalid("constraints.control.arm",
                   "{\"bandits\":[{\"id\":\"x\",\"arms\":[\"ctl\",\"b\"]},{\"id\":\"y\","
                   "\"arms\":[\"a\",\"b\"]}],\"constraints\":{\"control\":{\"arm\":\"ctl\","
                   "\"share\":0.2}}}");
}

/* The prior is stored explicitly, survives a restart, and is what the
 * posterior means start from. */
static void test_prior(void **state)
{
    (void)state;
    json_t *x =
        texp_create(tgroup_d, "{\"id\":\"prior\",\"arms\":[\"a\",\"b\"],\"policy\":{\"name\":"
                              "\"uniform\"},\"prior\":{\"alpha\":3,\"beta\":1}}");
    assert_true(tjson_num(x, "prior.alpha") == 3 && tjson_num(x, "prior.beta") == 1);
    json_decref(x);
    x = texp_create(tgroup_d, "{\"id\":\"noprior\",\"arms\":[\"a\",\"b\"]}");
    assert_true(tjson_num(x, "prior.alpha") == 1 && tjson_num(x, "prior.beta") == 1);
    json_decref(x);
    json_t *s = texp_status(tgroup_d, "prior");
    assert_true(fabs(tjson_num(s, "bandits[0].arms[0].posterior_mean") - 0.75) < 1e-12);
    json_decref(s);
    /* One failure: Beta(3, 2), mean 3/5. */
    json_t *a = texp_assign(tgroup_d, "prior", "{\"bandit\":\"default\"}");
    const char *arm = tjson_str(a, "[0].arm");
    assert_string_equal(texp_reward(tgroup_d, "prior", tjson_str(a, "[0].id"), 0), "accepted");
    s = texp_status(tgroup_d, "prior");
    const char *path = strcmp(arm, "a") == 0 ? "bandits[0].arms[0].posterior_mean"
                                             : "bandits[0].arms[1].posterior_mean";
    assert_true(fabs(tjson_num(s, path) - 0.6) < 1e-12);
    json_decref(s);
    json_decref(a);
    assert_int_equal(tdaemon_stop(tgroup_d), 0);
    assert_int_equal(tdaemon_restart(tgroup_d), 0);
    struct tresp *r = treq(tgroup_d, "GET", "/v1/experiments/prior", NULL, NULL);
    assert_status(r, 200);
    assert_true(tjson_num(r->json, "prior.alpha") == 3);
    tresp_free(r);
    s = texp_status(tgroup_d, "prior");
    assert_true(fabs(tjson_num(s, path) - 0.6) < 1e-12);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_matches_simulator),
        cmocka_unit_test(test_every_policy_serves),
        cmocka_unit_test(test_invalid_combinations),
        cmocka_unit_test(test_stop_rules_agree),
        cmocka_unit_test(test_invalid_constraints_and_prior),
        cmocka_unit_test(test_prior),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
