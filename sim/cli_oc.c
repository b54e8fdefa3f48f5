/*
 * cli_oc.c — `bandit-sim oc` (cli_oc.h): reads a design (the create body of
 * POST /v1/experiments, or the configuration GET returns) and scenarios,
 * optionally calibrates δ under a null scenario, and prints the report.
 */
#include "sim/cli_oc.h"

#include "sim/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonv.h"
#include "exp/exp.h"
#include "sim/oc.h"

static const char usage_text[] =
    "usage: bandit-sim oc --design FILE --scenarios FILE [options]\n"
    "\n"
    "  --design FILE        the experiment as created (POST /v1/experiments body)\n"
    "  --scenarios FILE     {\"scenarios\": [{\"name\": ..., \"arms\": [...]}, ...]}: true\n"
    "                       reward distributions per arm (a bare number is a Bernoulli p)\n"
    "  --runs N             runs per scenario (default 1000)\n"
    "  --seed S             run i is seeded by (S, i) in every scenario (default 1)\n"
    "  --threads N          worker threads (default: all cores; results do not depend on it)\n"
    "  --max-pulls N        cap per run of a design without a budget (default 10000)\n"
    "  --calibrate ALPHA    first find the largest delta (goal control: the smallest\n"
    "                       goal.scale, an unproven rule) whose type I error, the\n"
    "                       largest over the null scenarios, is at most ALPHA, then\n"
    "                       report at that value\n"
    "  --null NAME          calibrate on that null only (default: every null)\n"
    "  --delta-range LO,HI  calibration's search interval for delta (default 1e-6,0.5)\n"
    "  --scale-range LO,HI  for goal.scale, goal control (default 0.05,1; 1 is proven)\n"
    "  --iterations N       calibration's bisection steps (default 12)\n"
    "  --format F           json (default) or markdown\n"
    "  --markdown FILE      also write the Markdown report to FILE\n"
    "  --svg FILE           also write the sample sizes as an SVG figure (linked from the\n"
    "                       Markdown, relative to its folder)\n"
    "  --pretty             indent the JSON\n"
    "  --no-progress        no progress bar\n";

enum {
    O_DESIGN = 256,
    O_SCENARIOS,
    O_RUNS,
    O_SEED,
    O_THREADS,
    O_MAX_PULLS,
    O_CALIBRATE,
    O_NULL,
    O_RANGE,
    O_SCALE_RANGE,
    O_ITER,
    O_FORMAT,
    O_MARKDOWN,
    O_SVG,
    O_PRETTY,
    O_NO_PROGRESS,
    O_HELP,
};

static const struct option opts[] = {
    {"design", required_argument, NULL, O_DESIGN},
    {"scenarios", required_argument, NULL, O_SCENARIOS},
    {"runs", required_argument, NULL, O_RUNS},
    {"seed", required_argument, NULL, O_SEED},
    {"threads", required_argument, NULL, O_THREADS},
    {"max-pulls", required_argument, NULL, O_MAX_PULLS},
    {"calibrate", required_argument, NULL, O_CALIBRATE},
    {"null", required_argument, NULL, O_NULL},
    {"delta-range", required_argument, NULL, O_RANGE},
    {"scale-range", required_argument, NULL, O_SCALE_RANGE},
    {"iterations", required_argument, NULL, O_ITER},
    {"format", required_argument, NULL, O_FORMAT},
    {"markdown", required_argument, NULL, O_MARKDOWN},
    {"svg", required_argument, NULL, O_SVG},
    {"pretty", no_argument, NULL, O_PRETTY},
    {"no-progress", no_argument, NULL, O_NO_PROGRESS},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static json_t *load(const char *what, const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (j != NULL)
        return j;
    if (je.line > 0)
        fprintf(stderr, "bandit-sim: oc: %s %s:%d:%d: %s\n", what, path, je.line, je.column,
                je.text);
    else
        fprintf(stderr, "bandit-sim: oc: %s %s\n", what, je.text);
    return j;
}

/* Parse the design into cfg and its hash: 0, or −1 after a message. */
static int design_parse(json_t *body, struct exp_config *cfg, char hash[65])
{
    static const struct exp_limits lim = {.max_bandits = ENGINE_MAX_BANDITS,
                                          .max_arms = ENGINE_MAX_ARMS};
    json_t *errors = json_array();
    int rc = errors != NULL ? exp_config_parse(body, &lim, cfg, errors) : -1;
    if (rc > 0) {
        char msg[512];
        jv_first_error(errors, NULL, msg, sizeof msg);
        fprintf(stderr, "bandit-sim: oc: --design: %s\n", msg);
    } else if (rc < 0) {
        fprintf(stderr, "bandit-sim: oc: out of memory\n");
    } else if (exp_design_hash_of(cfg, hash) != 0) {
        fprintf(stderr, "bandit-sim: oc: out of memory\n");
        rc = -1;
    }
    json_decref(errors);
    return rc == 0 ? 0 : -1;
}

static void design_view(const struct exp_config *cfg, const char *hash, struct sim_oc_design *d)
{
    memset(d, 0, sizeof *d);
    d->engine = &cfg->engine;
    d->reward_min = cfg->reward_min;
    d->reward_max = cfg->reward_max;
    d->bandit_ids = (const char *const *)cfg->bandit_ids;
    d->arms = (const char *const *const *)cfg->arm_names;
    d->hash = hash;
    d->name = cfg->name;
}

/* text into the file path, or on stdout when path is NULL: 0 or −1. */
static int write_text(const char *path, const char *text)
{
    if (path == NULL)
        return fputs(text, stdout) == EOF || fflush(stdout) != 0 ? -1 : 0;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    int bad = fputs(text, f) == EOF;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* LO,HI from arg into *lo, *hi: 0 < LO < HI < 1 (HI ≤ 1 when to_one), or exit 2. */
static void range_of(const char *opt, char *arg, int to_one, double *lo, double *hi)
{
    char *comma = strchr(arg, ',');
    if (comma == NULL)
        cli_die(2, "%s: must be LO,HI (got \"%s\")", opt, arg);
    *comma = '\0';
    *lo = cli_double(opt, arg);
    *hi = cli_double(opt, comma + 1);
    if (!(*lo > 0 && *lo < *hi && (to_one ? *hi <= 1 : *hi < 1)))
        cli_die(2, "%s: must be LO,HI with 0 < LO < HI %s 1", opt, to_one ? "<=" : "<");
}

int cli_oc_main(int argc, char **argv)
{
    const char *design_path = NULL, *scen_path = NULL, *null_name = NULL, *md_path = NULL,
               *svg_path = NULL;
    struct sim_oc_options o = {.runs = 1000, .seed = 1, .progress = 1};
    double alpha = NAN, dlo = SIM_OC_DELTA_LO, dhi = SIM_OC_DELTA_HI, slo = SIM_OC_SCALE_LO,
           shi = SIM_OC_SCALE_HI;
    uint64_t iterations = 12;
    int pretty = 0, markdown = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DESIGN:
            design_path = optarg;
            break;
        case O_SCENARIOS:
            scen_path = optarg;
            break;
        case O_RUNS:
            o.runs = cli_u64("--runs", optarg, 1, SIM_OC_MAX_RUNS);
            break;
        case O_SEED:
            o.seed = cli_u64("--seed", optarg, 0, INT64_MAX);
            break;
        case O_THREADS:
            o.threads = (unsigned)cli_u64("--threads", optarg, 0, 256);
            break;
        case O_MAX_PULLS:
            o.max_pulls = cli_u64("--max-pulls", optarg, 1, UINT64_C(1) << 40);
            break;
        case O_CALIBRATE:
            alpha = cli_double("--calibrate", optarg);
            if (!(alpha > 0 && alpha < 1))
                cli_die(2, "--calibrate: must be a type I error in (0, 1) (got \"%s\")", optarg);
            break;
        case O_NULL:
            null_name = optarg;
            break;
        case O_RANGE:
            range_of("--delta-range", optarg, 0, &dlo, &dhi);
            break;
        case O_SCALE_RANGE:
            range_of("--scale-range", optarg, 1, &slo, &shi);
            break;
        case O_ITER:
            iterations = cli_u64("--iterations", optarg, 1, 60);
            break;
        case O_FORMAT:
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "markdown") != 0)
                cli_die(2, "--format: must be json or markdown (got \"%s\")", optarg);
            markdown = strcmp(optarg, "markdown") == 0;
            break;
        case O_MARKDOWN:
            md_path = optarg;
            break;
        case O_SVG:
            svg_path = optarg;
            break;
        case O_PRETTY:
            pretty = 1;
            break;
        case O_NO_PROGRESS:
            o.progress = 0;
            break;
        case O_HELP:
            fputs(usage_text, stdout);
            return 0;
        default:
            cli_die(2, "oc: %s: unknown option or missing value (see oc --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_die(2, "oc: %s: unexpected argument (see oc --help)", argv[optind]);
    if (design_path == NULL || scen_path == NULL)
        cli_die(2, "oc: --design and --scenarios are required (see oc --help)");

    int rc = 2;
    struct exp_config cfg, cal;
    memset(&cfg, 0, sizeof cfg);
    memset(&cal, 0, sizeof cal);
    struct sim_oc_scenarios *sc = NULL;
    json_t *report = NULL, *calib = NULL;
    char *md = NULL, err[512], hash[65], cal_hash[65];
    json_t *body = load("--design", design_path), *sj = load("--scenarios", scen_path);
    if (body == NULL || sj == NULL || design_parse(body, &cfg, hash) != 0)
        goto out;
    if (json_object_get(body, "id") == NULL || json_object_get(body, "seed") == NULL)
        fprintf(stderr, "bandit-sim: oc: warning: the design names no id or no seed: its hash "
                        "covers the ones drawn here (give both to get the daemon's hash)\n");
    struct sim_oc_design d;
    design_view(&cfg, hash, &d);
    if (sim_oc_scenarios_parse(sj, &d, &sc, err, sizeof err) != 0) {
        fprintf(stderr, "bandit-sim: oc: --scenarios: %s\n", err);
        goto out;
    }
    if (!isnan(alpha)) {
        /* Without --null: every null, the least favourable binding. */
        int null = -1;
        if (null_name != NULL) {
            json_t *list = json_is_array(sj) ? sj : json_object_get(sj, "scenarios");
            for (size_t i = 0; i < json_array_size(list); i++)
                if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "name")),
                           null_name) == 0)
                    null = (int)i;
        }
        if (null < 0 && (null_name != NULL || sim_oc_scenarios_null(&d, sc) < 0)) {
            fprintf(stderr, "bandit-sim: oc: --calibrate: %s\n",
                    null_name ? "no scenario of that name" : "no null scenario to calibrate on");
            goto out;
        }
        double value;
        const char *param = sim_oc_calibrated(d.engine);
        int by_scale = strcmp(param, "scale") == 0;
        if (sim_oc_calibrate(&d, sc, null, &o, alpha, by_scale ? slo : dlo, by_scale ? shi : dhi,
                             (unsigned)iterations, &value, &calib, err, sizeof err) != 0) {
            fprintf(stderr, "bandit-sim: oc: %s\n", err);
            rc = 1;
            goto out;
        }
        /* The calibrated design is the design with goal.delta = δ (or
         * goal.scale): parsed and hashed as the daemon would the create body. */
        json_t *goal = json_object_get(body, "goal");
        if (goal == NULL) {
            goal = json_object();
            json_object_set_new(body, "goal", goal);
        }
        json_object_set_new(goal, param, json_real(value));
        if (design_parse(body, &cal, cal_hash) != 0)
            goto out;
        design_view(&cal, cal_hash, &d);
        json_object_set_new(calib, "design_hash", json_string(cal_hash));
        json_object_set_new(calib, "original_design_hash", json_string(hash));
    }
    rc = 1;
    report = sim_oc_run(&d, sc, &o, err, sizeof err);
    if (report == NULL) {
        fprintf(stderr, "bandit-sim: oc: %s\n", err);
        goto out;
    }
    if (calib != NULL) {
        json_object_set_new(report, "calibration", calib);
        calib = NULL;
    }
    /* The command that made it, for a protocol's appendix. */
    char cmd[2048] = "bandit-sim";
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(cmd);
        /* quoted when it holds a space, so that the line can be run again */
        snprintf(cmd + len, sizeof cmd - len, strchr(argv[i], ' ') ? " \"%s\"" : " %s", argv[i]);
    }
    json_object_set_new(report, "command", json_string(cmd));
    if (svg_path != NULL) {
        char *svg = sim_oc_svg(report);
        int bad = svg == NULL || write_text(svg_path, svg) != 0;
        free(svg);
        if (bad) {
            fprintf(stderr, "bandit-sim: oc: --svg %s: cannot write it\n", svg_path);
            goto out;
        }
        /* The link in the Markdown: relative to the Markdown's folder. */
        const char *slash = md_path != NULL ? strrchr(md_path, '/') : NULL;
        size_t dir = slash != NULL ? (size_t)(slash - md_path) + 1 : 0;
        const char *link =
            dir > 0 && strncmp(svg_path, md_path, dir) == 0 ? svg_path + dir : svg_path;
        json_object_set_new(report, "figure", json_string(link));
    }
    md = sim_oc_markdown(report);
    if (md == NULL) {
        fprintf(stderr, "bandit-sim: oc: out of memory\n");
        goto out;
    }
    if (md_path != NULL && write_text(md_path, md) != 0) {
        fprintf(stderr, "bandit-sim: oc: --markdown %s: %s\n", md_path, strerror(errno));
        goto out;
    }
    if (markdown) {
        if (write_text(NULL, md) != 0)
            goto out;
    } else {
        /* Full precision: the figures read back are the endpoint's, bit
         * for bit. */
        size_t flags = JSON_PRESERVE_ORDER | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
        if (json_dumpf(report, stdout, flags) != 0 || fputc('\n', stdout) == EOF ||
            fflush(stdout) != 0)
            goto out;
    }
    rc = 0;
out:
    free(md);
    json_decref(report);
    json_decref(calib);
    json_decref(body);
    json_decref(sj);
    sim_oc_scenarios_free(sc);
    exp_config_free(&cal);
    exp_config_free(&cfg);
    return rc;
}
