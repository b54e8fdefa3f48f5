/*
 * main.c — bandit-sim, the offline simulator's command line (docs/contract.md,
 * "bandit-sim"): reads a problem file, runs a policy on it many times with
 * the daemon's engine and prints one JSON object on stdout.
 *
 * Bad input ends with one line on stderr, "bandit-sim: <what>", and exit
 * status 2 (usage) or 1 (the simulation itself failed).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/describe.h"
#include "policies/goal.h"
#include "sim/cli.h"
#include "sim/cli_oc.h"
#include "sim/sim.h"

#define MAX_PARAM_ARGS 64

static const char usage_text[] =
    "usage: bandit-sim --problem FILE.json --policy NAME [options]\n"
    "       bandit-sim --list-policies\n"
    "       bandit-sim oc --design FILE --scenarios FILE [options]   (oc --help)\n"
    "\n"
    "  --problem FILE      problem file (docs/contract.md, \"Simulator problem file\"); - for "
    "stdin\n"
    "  --policy NAME       a policy of --list-policies\n"
    "  --param KEY=VALUE   a policy parameter (repeatable)\n"
    "  --runs N            independent runs (default 1000)\n"
    "  --seed S            run i is seeded by (S, i) only (default 1)\n"
    "  --delay D           each reward comes back D pulls later (default 0)\n"
    "  --block B           assignments leased B at a time and served one per visitor,\n"
    "                      the last block whole (default 1)\n"
    "  --budget N          budget (fixed-budget policies) or cap on pulls (others)\n"
    "  --threads N         worker threads (default: all cores; results do not depend on it)\n"
    "  --stop RULE         default|policy|delta_c|glr|glr-heuristic|rho|none (default: the\n"
    "                      policy's own rule if proven, else glr; fixed-budget runs: the\n"
    "                      budget; policy: its own rule only); --list-policies describes each\n"
    "  --bound B           anytime|fixed: overrides the problem's bound\n"
    "  --delta X, --epsilon X, --m N   override the problem's goal (epsilon in reward units)\n"
    "  --margin X          override a control goal's margin Δ (reward units)\n"
    "  --per-run FILE      goal control: one JSON line per run (pulls, stop reason, the arms\n"
    "                      declared superior and futile per bandit) into FILE\n"
    "  --burn-in N         clinical burn-in: pulls per arm before the policy takes over\n"
    "  --min-prob F        clinical floor on each arm's allocation probability\n"
    "  --control I         clinical control arm: its index, the same in every bandit\n"
    "  --control-share S   fixed share of pulls for the control arm, in (0, 1)\n"
    "  --max-pulls N       absolute cap on pulls per run (default 1e8; capped runs are counted)\n"
    "  --trace N           add \"trace\": δᶜ, ρ̄, NSS, error rates, completed bandits averaged\n"
    "                      over runs at N log-spaced pull counts per decade (1 to 100)\n"
    "  --pretty            indent the JSON output\n"
    "  --no-progress       no progress bar (it is drawn only on a terminal anyway)\n"
    "  --list-policies     every policy with its flags and parameters, as JSON\n";

static int print_json(json_t *j, size_t flags)
{
    if (j == NULL)
        cli_die(1, "out of memory");
    int rc = json_dumpf(j, stdout, flags | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (rc != 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        cli_die(1, "cannot write the output");
    return 0;
}

enum {
    OPT_PROBLEM = 256,
    OPT_POLICY,
    OPT_PARAM,
    OPT_RUNS,
    OPT_SEED,
    OPT_DELAY,
    OPT_BLOCK,
    OPT_BUDGET,
    OPT_THREADS,
    OPT_STOP,
    OPT_BOUND,
    OPT_DELTA,
    OPT_EPSILON,
    OPT_M,
    OPT_BURN_IN,
    OPT_MIN_PROB,
    OPT_CONTROL,
    OPT_CONTROL_SHARE,
    OPT_MAX_PULLS,
    OPT_MARGIN,
    OPT_PER_RUN,
    OPT_TRACE,
    OPT_PRETTY,
    OPT_NO_PROGRESS,
    OPT_LIST,
    OPT_HELP,
};

static const struct option long_opts[] = {
    {"problem", required_argument, NULL, OPT_PROBLEM},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"param", required_argument, NULL, OPT_PARAM},
    {"runs", required_argument, NULL, OPT_RUNS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"delay", required_argument, NULL, OPT_DELAY},
    {"block", required_argument, NULL, OPT_BLOCK},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"stop", required_argument, NULL, OPT_STOP},
    {"bound", required_argument, NULL, OPT_BOUND},
    {"delta", required_argument, NULL, OPT_DELTA},
    {"epsilon", required_argument, NULL, OPT_EPSILON},
    {"m", required_argument, NULL, OPT_M},
    {"burn-in", required_argument, NULL, OPT_BURN_IN},
    {"min-prob", required_argument, NULL, OPT_MIN_PROB},
    {"control", required_argument, NULL, OPT_CONTROL},
    {"margin", required_argument, NULL, OPT_MARGIN},
    {"per-run", required_argument, NULL, OPT_PER_RUN},
    {"control-share", required_argument, NULL, OPT_CONTROL_SHARE},
    {"max-pulls", required_argument, NULL, OPT_MAX_PULLS},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"pretty", no_argument, NULL, OPT_PRETTY},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"list-policies", no_argument, NULL, OPT_LIST},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* Every --param against the policy's declared parameters: unknown names and
 * bad values are errors naming the parameter; unset ones keep the default. */
static void parse_params(const struct policy_ops *ops, char **args, size_t n,
                         struct policy_params *out)
{
    policy_params_defaults(ops, out);
    unsigned char seen[POLICY_MAX_PARAMS] = {0};
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(args[i], '=');
        if (eq == NULL || eq == args[i])
            cli_die(2, "--param %s: must be KEY=VALUE", args[i]);
        *eq = '\0';
        const char *key = args[i], *val = eq + 1;
        int idx = policy_param_index(ops, key);
        if (idx < 0) {
            char names[256] = "";
            size_t len = 0;
            for (int k = 0; ops->params != NULL && k < POLICY_MAX_PARAMS &&
                            ops->params[k].name != NULL && len < sizeof names;
                 k++)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "",
                                        ops->params[k].name);
            cli_die(2, "--param %s: policy %s has no such parameter (%s%s)", key, ops->name,
                    *names ? "it has: " : "it has none", names);
        }
        if (seen[idx])
            cli_die(2, "--param %s: given twice", key);
        seen[idx] = 1;
        char err[256];
        double v;
        if (policy_param_parse(&ops->params[idx], val, &v, err, sizeof err) != 0)
            cli_die(2, "--param %s: %s (got \"%s\")", key, err, val);
        out->values[idx] = v;
    }
}

/* The engine names fields as the HTTP API does (goal.epsilon,
 * policy.params.cap); say them as this command spells them. */
static const char *cli_field(const char *err, char *buf, size_t len)
{
    static const char *const map[][2] = {
        {"goal.budget", "budget"},
        {"goal.epsilon", "epsilon"},
        {"goal.delta", "delta"},
        {"goal.m", "m"},
        {"goal.margin", "margin"},
        {"goal.control", "control"},
        {"policy.params.", "--param "},
        {"constraints.min_prob", "--min-prob"},
        {"constraints.control.arm", "--control"},
        {"constraints.control.share", "--control-share"},
        {"constraints.", "--"},
        {"stop_rule", "--stop"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t n = strlen(map[i][0]);
        if (strncmp(err, map[i][0], n) == 0) {
            snprintf(buf, len, "%s%s", map[i][1], err + n);
            return buf;
        }
    }
    return err;
}

/* --per-run: run i as one JSON line {"run", "pulls", "stop_reason",
 * "superior": [[arms of bandit 0], ...], "futile": [...]}. */
static void write_runs(const char *path, const struct sim_problem *p, const struct sim_result *r)
{
    static const char *const reasons[] = {
        [ENGINE_RUNNING] = NULL,
        [ENGINE_STOPPED_CONFIDENCE] = "confidence",
        [ENGINE_STOPPED_BUDGET] = "budget",
        [ENGINE_STOPPED_MANUAL] = "manual",
        [ENGINE_STOPPED_POLICY] = "policy",
        [ENGINE_STOPPED_SUPERIORITY] = "superiority",
        [ENGINE_STOPPED_FUTILITY] = "futility",
    };
    FILE *f = fopen(path, "w");
    if (f == NULL)
        cli_die(1, "--per-run: cannot open %s: %s", path, strerror(errno));
    for (uint64_t i = 0; i < r->runs; i++) {
        const unsigned char *v = r->run_verdicts + i * r->n_verdicts;
        json_t *sup = json_array(), *fut = json_array();
        for (size_t b = 0; b < p->n_bandits; b++) {
            json_t *bs = json_array(), *bf = json_array();
            for (size_t a = 0; a < p->n_arms[b]; a++, v++) {
                if (*v == POLICY_SUPERIOR)
                    json_array_append_new(bs, json_integer((json_int_t)a));
                else if (*v == POLICY_FUTILE)
                    json_array_append_new(bf, json_integer((json_int_t)a));
            }
            json_array_append_new(sup, bs);
            json_array_append_new(fut, bf);
        }
        const char *why = reasons[r->run_reason[i]];
        json_t *j =
            json_pack("{s:I,s:I,s:o,s:o,s:o}", "run", (json_int_t)i, "pulls",
                      (json_int_t)r->run_pulls[i], "stop_reason",
                      why != NULL ? json_string(why) : json_null(), "superior", sup, "futile", fut);
        if (j == NULL || json_dumpf(j, f, JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF)
            cli_die(1, "--per-run: cannot write %s", path);
        json_decref(j);
    }
    if (fclose(f) != 0)
        cli_die(1, "--per-run: cannot write %s", path);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "oc") == 0)
        return cli_oc_main(argc - 1, argv + 1);
    const char *problem_path = NULL, *policy_name = NULL, *margin = NULL, *per_run = NULL;
    char *param_args[MAX_PARAM_ARGS];
    size_t n_params = 0;
    struct sim_options o;
    memset(&o, 0, sizeof o);
    o.runs = 1000;
    o.seed = 1;
    o.progress = 1;
    o.stop = ENGINE_RULE_DEFAULT;
    enum stats_bound bound = STATS_BOUND_ANYTIME;
    int has_bound = 0;
    const char *delta = NULL, *epsilon = NULL, *m = NULL;
    int pretty = 0, list = 0, has_control = 0;

    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_PROBLEM:
            problem_path = optarg;
            break;
        case OPT_POLICY:
            policy_name = optarg;
            break;
        case OPT_PARAM:
            if (n_params == MAX_PARAM_ARGS)
                cli_die(2, "--param: at most %d", MAX_PARAM_ARGS);
            param_args[n_params++] = optarg;
            break;
        case OPT_RUNS:
            o.runs = cli_u64("--runs", optarg, 1, SIM_MAX_RUNS);
            break;
        case OPT_SEED:
            o.seed = cli_u64("--seed", optarg, 0, INT64_MAX); /* printed as a JSON integer */
            break;
        case OPT_DELAY:
            o.delay = cli_u64("--delay", optarg, 0, SIM_MAX_DELAY);
            break;
        case OPT_BLOCK:
            o.block = cli_u64("--block", optarg, 1, SIM_MAX_BLOCK);
            break;
        case OPT_BUDGET:
            o.budget = cli_u64("--budget", optarg, 1, UINT64_C(1) << 53);
            break;
        case OPT_THREADS:
            o.threads = (unsigned)cli_u64("--threads", optarg, 0, SIM_MAX_THREADS);
            break;
        case OPT_STOP: {
            const struct stop_rule_info *rule = stop_rule_find(optarg);
            if (rule == NULL) {
                char names[256];
                stop_rule_names(names, sizeof names);
                cli_die(2, "--stop: must be %s (got \"%s\")", names, optarg);
            }
            o.stop = rule->rule;
            break;
        }
        case OPT_BOUND:
            if (stop_rule_bound_find(optarg, &bound) != 0)
                cli_die(2, "--bound: must be " STOP_RULE_BOUNDS " (got \"%s\")", optarg);
            has_bound = 1;
            break;
        case OPT_DELTA:
            delta = optarg;
            break;
        case OPT_EPSILON:
            epsilon = optarg;
            break;
        case OPT_M:
            m = optarg;
            break;
        case OPT_BURN_IN:
            o.burn_in = (uint32_t)cli_u64("--burn-in", optarg, 0, UINT32_MAX);
            break;
        case OPT_MIN_PROB:
            o.min_prob = cli_double("--min-prob", optarg);
            if (!(o.min_prob >= 0 && o.min_prob < 1))
                cli_die(2, "--min-prob: must be in [0, 1) (got \"%s\")", optarg);
            break;
        case OPT_CONTROL:
            o.control_arm = (unsigned)cli_u64("--control", optarg, 0, ENGINE_MAX_ARMS - 1);
            has_control = 1;
            break;
        case OPT_CONTROL_SHARE:
            o.control_share = cli_double("--control-share", optarg);
            if (!(o.control_share > 0 && o.control_share < 1))
                cli_die(2, "--control-share: must be in (0, 1) (got \"%s\")", optarg);
            break;
        case OPT_MARGIN:
            margin = optarg;
            break;
        case OPT_PER_RUN:
            per_run = optarg;
            break;
        case OPT_MAX_PULLS:
            o.max_pulls = cli_u64("--max-pulls", optarg, 1, UINT64_MAX);
            break;
        case OPT_TRACE:
            o.trace_per_decade = (unsigned)cli_u64("--trace", optarg, 1, SIM_TRACE_MAX_PER_DECADE);
            break;
        case OPT_PRETTY:
            pretty = 1;
            break;
        case OPT_NO_PROGRESS:
            o.progress = 0;
            break;
        case OPT_LIST:
            list = 1;
            break;
        case OPT_HELP:
            fputs(usage_text, stdout);
            return 0;
        default:
            if (optopt != 0)
                cli_die(2, "%s: needs a value (see --help)", argv[optind - 1]);
            cli_die(2, "%s: unknown option (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_die(2, "%s: unexpected argument (see --help)", argv[optind]);
    if (list)
        return print_json(describe_policies(), JSON_INDENT(2));
    if (has_control != (o.control_share > 0))
        cli_die(2, "--control and --control-share go together");
    if (problem_path == NULL)
        cli_die(2, "--problem: required (see --help)");
    if (policy_name == NULL)
        cli_die(2, "--policy: required (see --list-policies)");
    o.policy = policy_find(policy_name);
    if (o.policy == NULL)
        cli_die(2, "--policy: unknown policy \"%s\" (see --list-policies)", policy_name);
    parse_params(o.policy, param_args, n_params, &o.params);

    struct sim_problem p;
    char err[512];
    if (sim_problem_load(problem_path, &p, err, sizeof err) != 0)
        cli_die(2, "%s", err);
    if (has_bound)
        p.bound = bound;
    /* The overrides are checked as the problem file's goal is (goal.h):
     * each on its own, so that an error names its option. */
    struct goal g = {.type = p.goal,
                     .m = p.m,
                     .epsilon = p.epsilon,
                     .delta = p.delta,
                     .budget = p.budget,
                     .margin = p.margin,
                     .scale = p.scale};
    struct policy_error gerr;
    if (delta != NULL) {
        p.delta = g.delta = cli_double("--delta", delta);
        if (goal_check(&g, p.reward_max - p.reward_min, "--", &gerr) != 0)
            cli_die(2, "%s: %s (got \"%s\")", gerr.field, gerr.message, delta);
    }
    if (epsilon != NULL) {
        p.epsilon = g.epsilon = cli_double("--epsilon", epsilon);
        if (goal_check(&g, p.reward_max - p.reward_min, "--", &gerr) != 0)
            cli_die(2, "%s: %s (got \"%s\")", gerr.field, gerr.message, epsilon);
    }
    if (m != NULL) {
        p.m = (unsigned)cli_u64("--m", m, 1, GOAL_MAX_M);
        if (goal_check_arms(p.m, p.n_arms, p.n_bandits, "--", &gerr) != 0)
            cli_die(2, "%s: %s", gerr.field, gerr.message);
    }

    if (margin != NULL) {
        if (p.goal != ENGINE_GOAL_CONTROL)
            cli_die(2, "--margin: only for a problem of type \"control\"");
        p.margin = g.margin = cli_double("--margin", margin);
        if (goal_check(&g, p.reward_max - p.reward_min, "--", &gerr) != 0)
            cli_die(2, "%s: %s (got \"%s\")", gerr.field, gerr.message, margin);
    }
    if (p.goal == ENGINE_GOAL_CONTROL && has_control && (int)o.control_arm != p.control)
        cli_die(2, "--control: must be the problem's control arm (%d)", p.control);
    if (per_run != NULL && p.goal != ENGINE_GOAL_CONTROL)
        cli_die(2, "--per-run: only for a problem of type \"control\"");
    o.keep_runs = per_run != NULL;

    struct sim_result r;
    if (sim_run(&p, &o, &r, err, sizeof err) != 0) {
        char buf[600];
        sim_problem_free(&p);
        cli_die(1, "%s", cli_field(err, buf, sizeof buf));
    }
    if (per_run != NULL)
        write_runs(per_run, &p, &r);
    json_t *j = sim_result_json(&p, &o, &r);
    sim_result_free(&r);
    sim_problem_free(&p);
    return print_json(j, pretty ? JSON_INDENT(2) : 0);
}
