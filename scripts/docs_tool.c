/*
 * docs_tool.c — keeps the generated parts of the docs in step with the code
 * (docs/policies.md's parameter tables, docs/measurements.md's tables).
 * Everything it knows comes from `bandit-sim` output on stdin, so the
 * documentation is generated from the very registry the daemon serves.
 *
 *   bandit-sim --list-policies | docs-tool names [FLAG | !FLAG]...
 *       policy names, one a line, having every FLAG and no !FLAG
 *   bandit-sim --list-policies | docs-tool params FILE [--check]
 *       rewrite (or, with --check, verify) every block
 *         <!-- generated:params NAME --> ... <!-- /generated -->
 *       of FILE: the policy's flags and its parameter table (name, type,
 *       default, range or choices, and the doc line with the paper and
 *       equation it comes from). A registered policy without a block, or a
 *       block that differs, fails --check with exit status 1.
 *   docs-tool splice FILE NAME < TEXT
 *       replace the block <!-- generated:NAME --> ... <!-- /generated -->
 *       of FILE with TEXT (the tables of `make docs-delays` and
 *       `make docs-constraints`)
 *   bandit-sim ... | docs-tool cell fc|fb
 *       one table cell from a bandit-sim result: for fixed confidence the
 *       mean samples to stop ± a 95% half-width and the errors; for fixed
 *       budget the error rate with its 95% Wilson interval
 *
 * Written in C (built by the Makefile) so a fresh machine needs nothing but
 * the build's own packages. Files are rewritten through FILE.tmp + rename.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define DOC_MAX (4u << 20) /* every page of docs/ is far below this */
#define BEGIN_PREFIX "<!-- generated:"
#define END_MARK "<!-- /generated -->"

/* A growable string (out of memory is fatal: a build tool). */
struct buf {
    char *s;
    size_t len, cap;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("docs-tool: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void put(struct buf *b, const char *s, size_t n)
{
    if (n > SIZE_MAX / 4 - b->len) /* (len + n + 1) * 2 below must not wrap */
        die("%s", "text too large");
    if (b->len + n + 1 > b->cap) {
        size_t ncap = (b->len + n + 1) * 2;
        char *p = realloc(b->s, ncap);
        if (p == NULL)
            die("%s", "out of memory");
        b->s = p;
        b->cap = ncap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
    char tmp[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        die("%s", "format error");
    put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static char *read_all(FILE *f, const char *what)
{
    struct buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        put(&b, chunk, n);
        if (b.len > DOC_MAX)
            die("%s: too large", what);
    }
    if (ferror(f))
        die("%s: read error", what);
    if (b.s == NULL)
        put(&b, "", 0);
    return b.s;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        die("cannot open %s", path);
    char *s = read_all(f, path);
    (void)fclose(f);
    return s;
}

static void write_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fputs(text, f) == EOF || fclose(f) != 0)
        die("cannot write %s", tmp);
    if (rename(tmp, path) != 0)
        die("cannot rename to %s", path);
}

static json_t *read_json_stdin(void)
{
    char *text = read_all(stdin, "stdin");
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    free(text);
    if (j == NULL)
        die("stdin: not JSON (%s)", e.text);
    return j;
}

static json_t *policies_of(json_t *list)
{
    json_t *p = json_object_get(list, "policies");
    if (!json_is_array(p))
        die("%s", "stdin: no \"policies\" array (pipe bandit-sim --list-policies)");
    return p;
}

static json_t *find_policy(json_t *policies, const char *name)
{
    size_t i;
    json_t *p;
    json_array_foreach(policies, i, p) if (strcmp(json_string_value(json_object_get(p, "name")),
                                                  name) == 0) return p;
    return NULL;
}

static int has_flag(json_t *p, const char *flag)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(p, "flags"), i,
                       f) if (strcmp(json_string_value(f), flag) == 0) return 1;
    return 0;
}

/* --- names --------------------------------------------------------------- */

static int cmd_names(int argc, char **argv)
{
    json_t *list = read_json_stdin();
    size_t i;
    json_t *p;
    json_array_foreach(policies_of(list), i, p)
    {
        int keep = 1;
        for (int a = 0; a < argc; a++) {
            int neg = argv[a][0] == '!';
            if (has_flag(p, argv[a] + neg) == neg)
                keep = 0;
        }
        if (keep)
            printf("%s\n", json_string_value(json_object_get(p, "name")));
    }
    json_decref(list);
    return 0;
}

/* --- parameter tables -------------------------------------------------------- */

static const struct {
    const char *flag, *text;
} flag_text[] = {
    {"fixed_confidence", "fixed confidence (stops on a confidence rule)"},
    {"fixed_budget", "fixed budget (spends `goal.budget`)"},
    {"multi_bandit", "multi-bandit (chooses the bandit when a request names none)"},
    {"top_m", "top-m (`goal.m` > 1)"},
    {"needs_epsilon", "needs `goal.epsilon` > 0"},
    {"own_stop", "own stop rule (`stop_rule: \"policy\"`"}, /* closed by own_stop_default() */
    {"bayesian", "Bayesian (reads the Beta posteriors: `prior`)"},
    {"needs_target_arm", "needs `target_arm`"},
    {"regret", "regret-minimising (no stop of its own)"},
    {"control", "comparisons with control (`goal.type: \"control\"`, and only that goal)"},
};

/* Whether the own rule is also the default: not for gcp and gcp-targeted,
 * whose own rule (ρ̄) has no proof and whose default is the proven GLR. */
static void own_stop_default(struct buf *b, json_t *p)
{
    const char *def = json_string_value(json_object_get(p, "default_stop"));
    if (def == NULL || strcmp(def, "policy") == 0)
        puts_(b, ", its default)");
    else
        putf(b, "; the default is `%s`)", def);
}

/* A number as a person writes it: integers without a point, 1e-06 as such. */
static void fmt_num(struct buf *b, json_t *v)
{
    if (json_is_integer(v)) {
        putf(b, "%lld", (long long)json_integer_value(v));
        return;
    }
    double x = json_number_value(v);
    char t[64];
    if (x == floor(x) && fabs(x) < 1e9)
        snprintf(t, sizeof t, "%.0f", x);
    else
        snprintf(t, sizeof t, "%g", x);
    /* 1e+12 reads better as 1e12 */
    char *plus = strstr(t, "e+");
    if (plus != NULL)
        memmove(plus + 1, plus + 2, strlen(plus + 2) + 1);
    puts_(b, t);
}

/* Table cells must not break the row. */
static void put_cell(struct buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            puts_(b, "\\|");
        else if (*s == '\n')
            puts_(b, " ");
        else
            put(b, s, 1);
    }
}

static void params_block(struct buf *b, json_t *p, const char *name)
{
    puts_(b, "\n");
    if (p == NULL) {
        putf(b,
             "*`%s` is not registered in this build: run `make docs-policies` after merging "
             "it.*\n\n",
             name);
        return;
    }
    puts_(b, "Flags: ");
    int first = 1;
    for (size_t i = 0; i < sizeof flag_text / sizeof flag_text[0]; i++) {
        if (!has_flag(p, flag_text[i].flag))
            continue;
        putf(b, "%s%s", first ? "" : "; ", flag_text[i].text);
        if (strcmp(flag_text[i].flag, "own_stop") == 0)
            own_stop_default(b, p);
        first = 0;
    }
    puts_(b, first ? "none.\n\n" : ".\n\n");
    json_t *params = json_object_get(p, "params");
    if (json_array_size(params) == 0) {
        puts_(b, "Parameters: none.\n\n");
        return;
    }
    puts_(b, "| parameter | type | default | range | meaning and source |\n"
             "| --- | --- | --- | --- | --- |\n");
    size_t i;
    json_t *q;
    json_array_foreach(params, i, q)
    {
        const char *type = json_string_value(json_object_get(q, "type"));
        putf(b, "| `%s` | %s | ", json_string_value(json_object_get(q, "name")), type);
        json_t *def = json_object_get(q, "default");
        if (json_is_string(def)) {
            putf(b, "`%s` | ", json_string_value(def));
            size_t k;
            json_t *c;
            json_array_foreach(json_object_get(q, "choices"), k, c)
                putf(b, "%s`%s`", k ? ", " : "", json_string_value(c));
        } else {
            fmt_num(b, def);
            puts_(b, " | ");
            fmt_num(b, json_object_get(q, "min"));
            puts_(b, " – ");
            fmt_num(b, json_object_get(q, "max"));
        }
        puts_(b, " | ");
        put_cell(b, json_string_value(json_object_get(q, "doc")));
        puts_(b, " |\n");
    }
    puts_(b, "\n");
}

/* Walk FILE's generated blocks; for each, gen(name, kind) supplies the new
 * content. Returns the new text (new). kind is the word after
 * "generated:", name what follows it. */
struct walk {
    json_t *policies;
    int check, bad;
    unsigned char *seen; /* per registered policy */
    const char *splice_name, *splice_text;
    int spliced;
};

static char *rewrite(const char *text, struct walk *w)
{
    struct buf out = {0};
    const char *p = text;
    for (;;) {
        const char *beg = strstr(p, BEGIN_PREFIX);
        if (beg == NULL) {
            puts_(&out, p);
            break;
        }
        const char *close = strstr(beg, "-->");
        const char *end = close ? strstr(close, END_MARK) : NULL;
        if (close == NULL || end == NULL)
            die("%s", "a generated block has no end marker");
        close += 3;
        put(&out, p, (size_t)(close - p)); /* up to the begin marker's end */
        char head[256];
        size_t hl = (size_t)(close - 3 - beg - strlen(BEGIN_PREFIX));
        if (hl >= sizeof head)
            die("%s", "generated block header too long");
        memcpy(head, beg + strlen(BEGIN_PREFIX), hl);
        head[hl] = '\0';
        while (hl > 0 && head[hl - 1] == ' ')
            head[--hl] = '\0';
        struct buf gen = {0};
        if (w->splice_name != NULL) {
            /* splice: only the named block changes */
            if (strcmp(head, w->splice_name) == 0) {
                puts_(&gen, "\n");
                puts_(&gen, w->splice_text);
                puts_(&gen, "\n");
                w->spliced = 1;
            } else {
                put(&gen, close, (size_t)(end - close));
            }
        } else if (strncmp(head, "params ", 7) == 0) {
            const char *name = head + 7;
            json_t *pol = find_policy(w->policies, name);
            if (pol != NULL) {
                size_t i;
                json_t *q;
                json_array_foreach(w->policies, i, q) if (q == pol) w->seen[i] = 1;
            }
            params_block(&gen, pol, name);
        } else {
            put(&gen, close, (size_t)(end - close)); /* not ours: keep */
        }
        if (w->check &&
            ((size_t)(end - close) != gen.len || memcmp(close, gen.s ? gen.s : "", gen.len) != 0)) {
            fprintf(stderr, "docs-tool: block \"%s\" is out of date\n", head);
            w->bad = 1;
        }
        if (gen.s != NULL)
            puts_(&out, gen.s);
        free(gen.s);
        p = end;
    }
    return out.s;
}

static int cmd_params(int argc, char **argv)
{
    if (argc < 1)
        die("%s", "params FILE [--check]");
    const char *path = argv[0];
    int check = argc > 1 && strcmp(argv[1], "--check") == 0;
    json_t *list = read_json_stdin();
    struct walk w = {.policies = policies_of(list), .check = check};
    w.seen = calloc(json_array_size(w.policies) + 1, 1);
    char *text = read_file(path);
    char *out = rewrite(text, &w);
    size_t i;
    json_t *p;
    json_array_foreach(w.policies, i, p) if (!w.seen[i])
    {
        fprintf(stderr, "docs-tool: policy %s has no <!-- generated:params %s --> block in %s\n",
                json_string_value(json_object_get(p, "name")),
                json_string_value(json_object_get(p, "name")), path);
        w.bad = 1;
    }
    if (check) {
        if (w.bad)
            fprintf(stderr,
                    "docs-tool: %s lags the policy registry: run `make docs-policies` "
                    "(and write the prose of a new policy)\n",
                    path);
    } else if (strcmp(out, text) != 0) {
        write_file(path, out);
    }
    int rc = check && w.bad ? 1 : 0;
    free(text);
    free(out);
    free(w.seen);
    json_decref(list);
    return rc;
}

static int cmd_splice(int argc, char **argv)
{
    if (argc != 2)
        die("%s", "splice FILE NAME < TEXT");
    char *content = read_all(stdin, "stdin");
    size_t n = strlen(content);
    while (n > 0 && content[n - 1] == '\n')
        content[--n] = '\0';
    json_t *empty = json_array();
    struct walk w = {.policies = empty, .splice_name = argv[1], .splice_text = content};
    w.seen = calloc(1, 1);
    char *text = read_file(argv[0]);
    char *out = rewrite(text, &w);
    if (!w.spliced)
        die("no <!-- generated:%s --> block", argv[1]);
    if (strcmp(out, text) != 0)
        write_file(argv[0], out);
    free(text);
    free(out);
    free(content);
    free(w.seen);
    json_decref(empty);
    return 0;
}

/* Digits in groups of three with a thin space, as the rest of the docs. */
static void fmt_count(char *dst, size_t len, double x)
{
    char raw[64];
    snprintf(raw, sizeof raw, "%.0f", x);
    size_t n = strlen(raw), o = 0;
    for (size_t i = 0; i < n && o + 4 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0 && n > 4) {
            memcpy(dst + o, "\u2009", 3);
            o += 3;
        }
        dst[o++] = raw[i];
    }
    dst[o] = '\0';
}

static int cmd_cell(int argc, char **argv)
{
    if (argc != 1 || (strcmp(argv[0], "fc") != 0 && strcmp(argv[0], "fb") != 0))
        die("%s", "cell fc|fb < bandit-sim output");
    json_t *r = read_json_stdin();
    double runs = json_number_value(json_object_get(r, "runs"));
    double errors = json_number_value(json_object_get(r, "errors"));
    json_t *ci = json_object_get(r, "error_rate_ci");
    double lo = json_number_value(json_array_get(ci, 0));
    double hi = json_number_value(json_array_get(ci, 1));
    double capped = json_number_value(json_object_get(r, "capped_runs"));
    if (strcmp(argv[0], "fc") == 0) {
        char mean[64], half[64];
        fmt_count(mean, sizeof mean, json_number_value(json_object_get(r, "mean_pulls")));
        fmt_count(half, sizeof half, 1.96 * json_number_value(json_object_get(r, "mean_pulls_se")));
        double stopped = json_number_value(json_object_get(r, "stopped_rate"));
        printf("%s ± %s (%.0f/%.0f wrong", mean, half, errors, runs);
        if (stopped < 1)
            printf(", %.0f%% stopped by the cap", 100 * (1 - stopped));
        printf(")");
    } else {
        printf("%.3f [%.3f, %.3f]", errors / runs, lo, hi);
        double pulls = json_number_value(json_object_get(r, "mean_pulls"));
        double budget = json_number_value(json_object_get(r, "budget"));
        if (budget > 0 && pulls < budget - 0.5) {
            char p[64];
            fmt_count(p, sizeof p, pulls);
            printf(", %s pulls", p);
        }
    }
    if (capped > 0)
        printf(" (%.0f capped)", capped);
    printf("\n");
    json_decref(r);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("%s", "usage: docs-tool names|params|splice|cell ... (see scripts/docs_tool.c)");
    errno = 0;
    if (strcmp(argv[1], "names") == 0)
        return cmd_names(argc - 2, argv + 2);
    if (strcmp(argv[1], "params") == 0)
        return cmd_params(argc - 2, argv + 2);
    if (strcmp(argv[1], "splice") == 0)
        return cmd_splice(argc - 2, argv + 2);
    if (strcmp(argv[1], "cell") == 0)
        return cmd_cell(argc - 2, argv + 2);
    die("unknown command %s", argv[1]);
}
