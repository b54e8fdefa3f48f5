/*
 * oc_md.c — the operating-characteristics report as Markdown
 * (sim_oc_markdown): read from the JSON report alone, so the command line
 * and the endpoint print the same page for the same figures.
 */
#include "sim/oc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"

static double num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

/* "0.0480 ± 0.0048"; at 0 or 1, where the SE is 0, the one-sided 95%
 * bound of bounds ("upper95"/"lower95") instead: "0.0000 (≤ 0.0015)". */
static void prob(struct buf *b, double p, double se, const json_t *bounds)
{
    if (json_is_number(json_object_get(bounds, "upper95")))
        buf_printf(b, "%.4f (≤ %.4f)", p, num(bounds, "upper95"));
    else if (json_is_number(json_object_get(bounds, "lower95")))
        buf_printf(b, "%.4f (≥ %.4f)", p, num(bounds, "lower95"));
    else
        buf_printf(b, "%.4f ± %.4f", p, se);
}

/* "0.0480 ± 0.0048" of a {"estimate", "mc_se"} object; "—" for null. */
static void est(struct buf *b, const json_t *o)
{
    if (!json_is_object(o)) {
        buf_puts(b, "—");
        return;
    }
    prob(b, num(o, "estimate"), num(o, "mc_se"), o);
}

static void means(struct buf *b, const json_t *tm)
{
    size_t i, k;
    json_t *arms, *x;
    json_array_foreach(tm, i, arms)
    {
        buf_puts(b, i > 0 ? "; " : "");
        json_array_foreach(arms, k, x)
            buf_printf(b, "%s%g", k > 0 ? ", " : "", json_number_value(x));
    }
}

static void provenance(struct buf *b, const json_t *r)
{
    const json_t *d = json_object_get(r, "design");
    const json_t *sw = json_object_get(r, "software");
    buf_printf(b, "| | |\n| --- | --- |\n| Software | %s %s |\n", str(sw, "name"),
               str(sw, "version"));
    if (json_is_string(json_object_get(r, "experiment")))
        buf_printf(b, "| Experiment | `%s` |\n", str(r, "experiment"));
    buf_printf(b, "| Design hash (SHA-256) | `%s` |\n",
               json_is_string(json_object_get(r, "design_hash")) ? str(r, "design_hash")
                                                                 : "(none)");
    buf_printf(b, "| Seed | %.0f |\n| Runs per scenario | %.0f", num(r, "seed"), num(r, "runs"));
    if (num(r, "runs") != num(r, "runs_asked"))
        buf_printf(b, " (of %.0f asked: the time bound)", num(r, "runs_asked"));
    buf_printf(b, " |\n| Cap on pulls per run | %.0f |\n", num(d, "max_pulls"));
    if (json_is_string(json_object_get(r, "command")))
        buf_printf(b, "| Made by | `%s` |\n", str(r, "command"));
    buf_puts(b, "\n");

    buf_puts(b, "## Design\n\n");
    if (strcmp(str(d, "goal"), "control") == 0)
        buf_printf(b,
                   "Goal `control`: each arm against the control, superior when it beats it by "
                   "more than Δ = %g; policy `%s`, stop rule `%s` (bound `%s`), δ = %g, ",
                   num(d, "margin"), str(d, "policy"), str(d, "stop_rule"), str(d, "bound"),
                   num(d, "delta"));
    else
        buf_printf(
            b, "Goal `%s`: policy `%s`, stop rule `%s` (bound `%s`), m = %.0f, δ = %g, ε = %g, ",
            str(d, "goal"), str(d, "policy"), str(d, "stop_rule"), str(d, "bound"), num(d, "m"),
            num(d, "delta"), num(d, "epsilon"));
    if (json_is_integer(json_object_get(d, "budget")))
        buf_printf(b, "budget %.0f", num(d, "budget"));
    else
        buf_puts(b, "no budget");
    const json_t *rw = json_object_get(d, "reward");
    buf_printf(b, ", rewards in [%g, %g]", num(rw, "min"), num(rw, "max"));
    if (!isnan(num(d, "burn_in")))
        buf_printf(b, ", burn-in %.0f pulls per arm", num(d, "burn_in"));
    if (!isnan(num(d, "min_prob")))
        buf_printf(b, ", allocation floor %g", num(d, "min_prob"));
    if (!isnan(num(d, "control_share")))
        buf_printf(b, ", control share %g", num(d, "control_share"));
    buf_puts(b, ".\n\n");
    if (!isnan(num(d, "scale")))
        buf_printf(b,
                   "**Unproven rule**: every bound's width is scaled by %g (goal.scale; 1 is the "
                   "proven rule); so are the intervals status shows and whose coverage is "
                   "reported below. Its error rates are this simulation's, not a proof's "
                   "(docs/stop-rules.md, `control`).\n\n",
                   num(d, "scale"));
    size_t i;
    json_t *bj;
    json_array_foreach(json_object_get(d, "bandits"), i, bj)
    {
        buf_printf(b, "- bandit `%s`: arms ", str(bj, "id"));
        size_t k;
        json_t *a;
        json_array_foreach(json_object_get(bj, "arms"), k, a)
        {
            const char *name = json_string_value(a);
            int ctl = strcmp(name, str(bj, "control")) == 0;
            buf_printf(b, "%s`%s`%s", k > 0 ? ", " : "", name, ctl ? " (control)" : "");
        }
        buf_puts(b, "\n");
    }
    buf_puts(b, "\n");
}

static void definitions(struct buf *b, const json_t *r)
{
    const json_t *g = json_object_get(r, "goal");
    /* A scaled design's intervals are narrowed with its bounds: the proven
     * level δ/(2K) per side does not hold for them. */
    double scale = num(json_object_get(r, "design"), "scale");
    char interval[256];
    if (!isnan(scale))
        snprintf(interval, sizeof interval,
                 "the one status reports, its width scaled by %g like every bound of this "
                 "design: it carries no coverage guarantee, the coverage below is only this "
                 "simulation's",
                 scale);
    else
        snprintf(interval, sizeof interval,
                 "the one status reports: each side at δ/(2K), all K together at 1 − δ");
    buf_printf(b,
               "## Definitions (goal `%s`)\n\n"
               "- **Claim**: %s.\n"
               "- **Type I error** (null scenarios): %s.\n"
               "- **Power** (other scenarios): %s.\n"
               "- **Sample size N**: the pulls (patients randomised) handed out until the stop, "
               "or until the cap.\n"
               "- **Bias**: the mean over runs of the final estimate of an arm's mean minus its "
               "true mean (runs where the arm has data); **coverage**: the share of runs whose "
               "final interval (%s) holds the true mean.\n"
               "- Every figure is followed by its Monte Carlo standard error (± MC SE; at 0 or 1, "
               "where it is 0, the one-sided 95%% bound instead), formulas at the end.\n\n",
               str(g, "name"), str(g, "claim"), str(g, "type_i_error"), str(g, "power"), interval);
}

static void headline(struct buf *b, const json_t *r)
{
    buf_puts(b, "## Headline\n\n| Scenario | True means | Type I error / power | P(claim) | "
                "E[N] | N 5% | N 25% | N 50% | N 75% | N 95% |\n"
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(r, "scenarios"), i, s)
    {
        int null = json_is_true(json_object_get(s, "null"));
        buf_printf(b, "| %s%s | ", str(s, "name"), null ? " (null)" : "");
        means(b, json_object_get(s, "true_means"));
        buf_puts(b, null ? " | α = " : " | power = ");
        est(b, json_object_get(s, null ? "type_i_error" : "power"));
        buf_puts(b, " | ");
        est(b, json_object_get(s, "claim"));
        const json_t *n = json_object_get(s, "sample_size");
        buf_printf(b, " | %.1f ± %.1f", num(n, "mean"), num(n, "mean_mc_se"));
        size_t k;
        json_t *q;
        json_array_foreach(json_object_get(n, "quantiles"), k, q)
            buf_printf(b, " | %.0f ± %.0f", num(q, "value"), num(q, "mc_se"));
        buf_puts(b, " |\n");
    }
    buf_puts(b, "\n");
}

static void calibration(struct buf *b, const json_t *r)
{
    const json_t *c = json_object_get(r, "calibration");
    if (!json_is_object(c))
        return;
    /* δ, or goal.scale for goal control (a report without "parameter": δ) */
    const char *key =
        json_is_string(json_object_get(c, "parameter")) ? str(c, "parameter") : "delta";
    int by_scale = strcmp(key, "scale") == 0;
    const char *sym = by_scale ? "goal.scale" : "δ";
    /* Several nulls: the type I error is the largest over them; the
     * binding one is named (older reports: one scenario). */
    const json_t *nulls = json_object_get(c, "nulls");
    int many = json_array_size(nulls) > 1;
    buf_printf(
        b,
        "## Calibration\n\n%s = %.6g holds the type I error at %.4f ± %.4f (target %g) "
        "under %s`%s` (%.0f runs, seed %.0f; %s). The figures below are those of "
        "the design with this %s (%s; the design as given had `%s`, "
        "`calibration.original_design_hash`).\n\n",
        sym, num(c, key), num(c, "type_i_error"), num(c, "type_i_error_mc_se"), num(c, "target"),
        many ? "the least favourable of the null scenarios, the binding one being " : "scenario ",
        str(c, "scenario"), num(c, "runs"), num(c, "seed"), str(c, "method"), sym,
        /* The daemon's calibrated design is no stored one: it has no hash. */
        json_is_string(json_object_get(r, "design_hash")) ? "its hash above"
                                                          : "not a stored design: no hash",
        str(c, "original_design_hash"));
    if (json_is_false(json_object_get(c, "bracketed")))
        buf_printf(b,
                   "**Not a root**: even %s = %g, the loose end of the range searched, keeps the "
                   "type I error under the target; the design is conservative here by more than "
                   "%s can trade.\n\n",
                   sym, num(c, key), sym);
    size_t i;
    json_t *st;
    if (many) {
        buf_printf(b,
                   "At %s = %.6g (calibration runs):\n\n| null | type I error |\n"
                   "| --- | --- |\n",
                   sym, num(c, key));
        json_array_foreach(nulls, i, st)
        {
            buf_printf(b, "| %s | ", str(st, "scenario"));
            prob(b, num(st, "type_i_error"), num(st, "type_i_error_mc_se"), st);
            buf_puts(b, " |\n");
        }
        buf_puts(b, "\n");
        buf_printf(b,
                   "| %s tried | type I error (largest) | binding null |\n"
                   "| --- | --- | --- |\n",
                   sym);
        json_array_foreach(json_object_get(c, "steps"), i, st) buf_printf(
            b, "| %.6g | %.4f | %s |\n", num(st, key), num(st, "type_i_error"), str(st, "binding"));
    } else {
        buf_printf(b, "| %s tried | type I error |\n| --- | --- |\n", sym);
        json_array_foreach(json_object_get(c, "steps"), i, st)
            buf_printf(b, "| %.6g | %.4f |\n", num(st, key), num(st, "type_i_error"));
    }
    buf_puts(b, "\n");
}

static void histogram(struct buf *b, const json_t *n)
{
    const json_t *h = json_object_get(n, "histogram");
    const json_t *edges = json_object_get(h, "edges"), *counts = json_object_get(h, "counts");
    double most = 0;
    size_t i;
    json_t *c;
    json_array_foreach(counts, i, c) most = fmax(most, json_number_value(c));
    buf_puts(b, "```\nN (pulls)            runs\n");
    json_array_foreach(counts, i, c)
    {
        double lo = json_number_value(json_array_get(edges, i));
        double hi = json_number_value(json_array_get(edges, i + 1));
        int bar = most > 0 ? (int)lround(40.0 * json_number_value(c) / most) : 0;
        buf_printf(b, "%8.0f – %-8.0f %6.0f |", lo, hi, json_number_value(c));
        for (int k = 0; k < bar; k++)
            buf_puts(b, "#");
        buf_puts(b, "\n");
    }
    buf_puts(b, "```\n\n");
}

static void scenario(struct buf *b, const json_t *s)
{
    buf_printf(b, "## Scenario `%s`%s\n\nTrue means: ", str(s, "name"),
               json_is_true(json_object_get(s, "null")) ? " (null)" : "");
    means(b, json_object_get(s, "true_means"));
    buf_printf(b, ". %.0f runs. Claims: ", num(s, "runs"));
    est(b, json_object_get(s, "claim"));
    buf_puts(b, "; wrong claims: ");
    est(b, json_object_get(s, "wrong_claim"));
    buf_puts(b, ".\n\n| Stop reason | Probability |\n| --- | --- |\n");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(s, "stop_reasons"), i, x)
    {
        buf_printf(b, "| `%s` | ", str(x, "reason"));
        est(b, x);
        buf_puts(b, " |\n");
    }
    buf_puts(b, "\n| Bandit | Arm | True mean | P(recommended) | Mean estimate | Bias | RMSE | "
                "Coverage |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    json_array_foreach(json_object_get(s, "arms"), i, x)
    {
        buf_printf(b, "| %s | %s%s | %g | ", str(x, "bandit"), str(x, "arm"),
                   json_is_true(json_object_get(x, "control")) ? " (control)" : "",
                   num(x, "true_mean"));
        est(b, json_object_get(x, "recommended"));
        if (json_is_number(json_object_get(x, "bias")))
            buf_printf(b, " | %.4f | %+.4f ± %.4f | %.4f | ", num(x, "mean_estimate"),
                       num(x, "bias"), num(x, "bias_mc_se"), num(x, "rmse"));
        else
            buf_puts(b, " | — | — | — | ");
        est(b, json_object_get(x, "coverage"));
        buf_puts(b, " |\n");
    }
    int header = 0;
    json_array_foreach(json_object_get(s, "arms"), i, x)
    {
        const json_t *v = json_object_get(x, "vs_control");
        if (!json_is_object(v))
            continue;
        if (!header)
            buf_puts(b, "\nComparisons with the control (difference = arm − control):\n\n"
                        "| Bandit | Arm | True difference | P(declared superior) | "
                        "P(declared futile) | P(undecided) | Mean difference | Bias | "
                        "Coverage |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        header = 1;
        buf_printf(b, "| %s | %s | %+g (%s) | ", str(x, "bandit"), str(x, "arm"),
                   num(v, "true_difference"), str(v, "truth"));
        est(b, json_object_get(v, "declared_superior"));
        buf_puts(b, " | ");
        est(b, json_object_get(v, "declared_futile"));
        buf_puts(b, " | ");
        est(b, json_object_get(v, "open"));
        if (json_is_number(json_object_get(v, "bias")))
            buf_printf(b, " | %+.4f | %+.4f ± %.4f | ", num(v, "mean_estimate"), num(v, "bias"),
                       num(v, "bias_mc_se"));
        else
            buf_puts(b, " | — | — | ");
        est(b, json_object_get(v, "coverage"));
        buf_puts(b, " |\n");
    }
    buf_puts(b, "\nAll intervals together held the true means in ");
    est(b, json_object_get(s, "simultaneous_coverage"));
    buf_puts(b, " of the runs (the design promises at least 1 − δ).\n\nSample size:\n\n");
    histogram(b, json_object_get(s, "sample_size"));
}

static const char formulas[] =
    "## Monte Carlo standard errors\n\n"
    "With n runs per scenario (run i seeded by (seed, i), the same i in every scenario):\n\n"
    "- a probability p̂ = k/n (type I error, power, a stop reason, coverage, "
    "P(recommended)): √(p̂(1 − p̂)/n); the JSON adds the 95% Wilson interval (`ci95`), "
    "which stays inside [0, 1] when k is 0 or n. When k is 0 or n the SE is 0, which is not "
    "certainty: the cell shows instead the exact one-sided 95% bound, 1 − 0.05^(1/n) "
    "(≈ 3/n, the rule of three) for k = 0 (\"0.0000 (≤ 0.0015)\" at n = 2000) and "
    "0.05^(1/n) for k = n (`upper95`, `lower95` in the JSON);\n"
    "- the mean sample size: s/√n, s the sample standard deviation of N;\n"
    "- the q-quantile of N: half the distance between the order statistics of ranks "
    "nq − √(nq(1 − q)) and nq + √(nq(1 − q)) (±1 binomial SE of the count below the "
    "quantile; no assumption on N's distribution);\n"
    "- the bias of an arm: s/√m, s the standard deviation of (estimate − truth) over the m "
    "runs where the arm has data; RMSE = √(bias² + (m − 1)s²/m).\n\n"
    "A difference between two scenarios shares their runs' seeds (common random numbers), "
    "so it is more precise than the two SEs suggest.\n";

char *sim_oc_markdown(const json_t *report)
{
    struct buf b;
    buf_init(&b, 0);
    const char *exp = json_string_value(json_object_get(report, "experiment"));
    const char *name =
        json_string_value(json_object_get(json_object_get(report, "design"), "name"));
    buf_printf(&b, "# Operating characteristics%s%s%s%s%s\n\n", exp ? " of `" : "", exp ? exp : "",
               exp ? "`" : "", name && (!exp || strcmp(name, exp) != 0) ? ": " : "",
               name && (!exp || strcmp(name, exp) != 0) ? name : "");
    provenance(&b, report);
    definitions(&b, report);
    calibration(&b, report);
    headline(&b, report);
    if (json_is_string(json_object_get(report, "figure")))
        buf_printf(&b, "![The sample size N of every scenario](%s)\n\n", str(report, "figure"));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(report, "scenarios"), i, s) scenario(&b, s);
    buf_puts(&b, formulas);
    size_t len;
    return buf_detach(&b, &len);
}
