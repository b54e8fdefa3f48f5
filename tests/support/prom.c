/*
 * prom.c — see prom.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/support/prom.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FAMILIES 256

struct family {
    char name[128];
    char type[16];
};

static int valid_name(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
            return 0;
    return 1;
}

/* label="value"(,label="value")* with escapes \\ \" \n in values. */
static int valid_labels(const char *s)
{
    const char *p = s;
    while (*p != '\0') {
        const char *eq = strchr(p, '=');
        if (eq == NULL || !valid_name(p, (size_t)(eq - p)) || eq[1] != '"')
            return 0;
        p = eq + 2;
        while (*p != '"') {
            if (*p == '\0' || *p == '\n')
                return 0;
            if (*p == '\\') {
                if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                    return 0;
                p++;
            }
            p++;
        }
        p++;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return 0;
    }
    return 1;
}

static const struct family *family_of(const struct family *f, size_t nf, const char *name)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count", NULL};
    for (size_t i = 0; i < nf; i++)
        if (strcmp(f[i].name, name) == 0)
            return &f[i];
    for (const char *const *s = suffixes; *s != NULL; s++) {
        size_t n = strlen(name), k = strlen(*s);
        if (n <= k || strcmp(name + n - k, *s) != 0)
            continue;
        for (size_t i = 0; i < nf; i++)
            if (strlen(f[i].name) == n - k && strncmp(f[i].name, name, n - k) == 0 &&
                (strcmp(f[i].type, "histogram") == 0 || strcmp(f[i].type, "summary") == 0))
                return &f[i];
    }
    return NULL;
}

/* labels without the le="..." pair (histogram series key). */
static void strip_le(const char *labels, char *out, size_t len, char *le, size_t lelen)
{
    out[0] = le[0] = '\0';
    const char *p = strstr(labels, "le=\"");
    if (p == NULL || (p != labels && p[-1] != ',')) {
        snprintf(out, len, "%s", labels);
        return;
    }
    const char *end = strchr(p + 4, '"');
    snprintf(le, lelen, "%.*s", (int)(end - p - 4), p + 4);
    size_t pre = (size_t)(p - labels);
    if (pre > 0 && labels[pre - 1] == ',')
        pre--;
    const char *post = end + 1;
    if (*post == ',' && pre == 0)
        post++;
    snprintf(out, len, "%.*s%s", (int)pre, labels, post);
}

static int check_histograms(const struct prom *p, const struct family *f, size_t nf, char *err,
                            size_t errlen)
{
    for (size_t i = 0; i < p->n; i++) {
        size_t n = strlen(p->s[i].name);
        if (n < 7 || strcmp(p->s[i].name + n - 7, "_bucket") != 0)
            continue;
        const struct family *fam = family_of(f, nf, p->s[i].name);
        if (fam == NULL || strcmp(fam->type, "histogram") != 0)
            continue;
        char key[256], le[32];
        strip_le(p->s[i].labels, key, sizeof key, le, sizeof le);
        if (le[0] == '\0') {
            snprintf(err, errlen, "%s{%s}: bucket without le", p->s[i].name, p->s[i].labels);
            return -1;
        }
        /* Is this the first bucket of its series? */
        int first = 1;
        for (size_t j = 0; j < i && first; j++) {
            char k2[256], le2[32];
            if (strcmp(p->s[j].name, p->s[i].name) != 0)
                continue;
            strip_le(p->s[j].labels, k2, sizeof k2, le2, sizeof le2);
            first = strcmp(k2, key) != 0;
        }
        if (!first)
            continue;
        double prev_le = -INFINITY, prev = 0;
        int saw_inf = 0;
        double inf_value = 0;
        for (size_t j = i; j < p->n; j++) {
            char k2[256], le2[32];
            if (strcmp(p->s[j].name, p->s[i].name) != 0)
                continue;
            strip_le(p->s[j].labels, k2, sizeof k2, le2, sizeof le2);
            if (strcmp(k2, key) != 0)
                continue;
            double b = strcmp(le2, "+Inf") == 0 ? INFINITY : strtod(le2, NULL);
            if (!(b > prev_le) || p->s[j].value < prev) {
                snprintf(err, errlen, "%s{%s}: buckets not increasing", p->s[j].name,
                         p->s[j].labels);
                return -1;
            }
            prev_le = b;
            prev = p->s[j].value;
            if (isinf(b)) {
                saw_inf = 1;
                inf_value = p->s[j].value;
            }
        }
        char count_name[140];
        snprintf(count_name, sizeof count_name, "%.*s_count", (int)(n - 7), p->s[i].name);
        int found = 0;
        double count = prom_get(p, count_name, key, &found);
        if (!saw_inf || !found || count != inf_value) {
            snprintf(err, errlen, "%s{%s}: no +Inf bucket equal to _count", p->s[i].name, key);
            return -1;
        }
    }
    return 0;
}

int prom_parse(const char *text, const char *prefix, struct prom *out, char *err, size_t errlen)
{
    struct family fams[MAX_FAMILIES];
    size_t nf = 0, cap = 0, lineno = 0;
    memset(out, 0, sizeof *out);
    for (const char *line = text; *line != '\0';) {
        const char *eol = strchr(line, '\n');
        if (eol == NULL) {
            snprintf(err, errlen, "the text does not end with a newline");
            goto fail;
        }
        char buf[1024];
        size_t len = (size_t)(eol - line);
        lineno++;
        if (len >= sizeof buf) {
            snprintf(err, errlen, "line %zu too long", lineno);
            goto fail;
        }
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = eol + 1;
        if (len == 0)
            continue;
        if (buf[0] == '#') {
            char kw[8], name[128], rest[256];
            if (sscanf(buf, "# %7s %127s %255[^\n]", kw, name, rest) < 2) {
                snprintf(err, errlen, "line %zu: bad comment: %s", lineno, buf);
                goto fail;
            }
            if (strcmp(kw, "TYPE") == 0) {
                if (strcmp(rest, "counter") != 0 && strcmp(rest, "gauge") != 0 &&
                    strcmp(rest, "histogram") != 0 && strcmp(rest, "summary") != 0 &&
                    strcmp(rest, "untyped") != 0) {
                    snprintf(err, errlen, "line %zu: unknown type %s", lineno, rest);
                    goto fail;
                }
                for (size_t i = 0; i < nf; i++)
                    if (strcmp(fams[i].name, name) == 0) {
                        snprintf(err, errlen, "line %zu: %s typed twice", lineno, name);
                        goto fail;
                    }
                if (nf == MAX_FAMILIES) {
                    snprintf(err, errlen, "too many families");
                    goto fail;
                }
                snprintf(fams[nf].name, sizeof fams[nf].name, "%s", name);
                snprintf(fams[nf].type, sizeof fams[nf].type, "%.15s", rest);
                nf++;
            }
            continue;
        }
        struct prom_sample s;
        memset(&s, 0, sizeof s);
        size_t nlen = strcspn(buf, "{ ");
        if (!valid_name(buf, nlen) || nlen >= sizeof s.name) {
            snprintf(err, errlen, "line %zu: bad metric name: %s", lineno, buf);
            goto fail;
        }
        memcpy(s.name, buf, nlen);
        const char *p = buf + nlen;
        if (*p == '{') {
            const char *close = strrchr(p, '}');
            if (close == NULL || (size_t)(close - p - 1) >= sizeof s.labels) {
                snprintf(err, errlen, "line %zu: unclosed labels", lineno);
                goto fail;
            }
            memcpy(s.labels, p + 1, (size_t)(close - p - 1));
            if (!valid_labels(s.labels)) {
                snprintf(err, errlen, "line %zu: bad labels {%s}", lineno, s.labels);
                goto fail;
            }
            p = close + 1;
        }
        if (*p != ' ') {
            snprintf(err, errlen, "line %zu: no value", lineno);
            goto fail;
        }
        char *end;
        s.value = strtod(p + 1, &end);
        if (end == p + 1 || (*end != '\0' && *end != ' ')) {
            snprintf(err, errlen, "line %zu: bad value: %s", lineno, p + 1);
            goto fail;
        }
        if (strncmp(s.name, prefix, strlen(prefix)) != 0) {
            snprintf(err, errlen, "line %zu: %s lacks the prefix %s", lineno, s.name, prefix);
            goto fail;
        }
        if (family_of(fams, nf, s.name) == NULL) {
            snprintf(err, errlen, "line %zu: %s has no # TYPE before it", lineno, s.name);
            goto fail;
        }
        int dup = 0;
        prom_get(out, s.name, s.labels, &dup);
        if (dup) {
            snprintf(err, errlen, "line %zu: series %s{%s} twice", lineno, s.name, s.labels);
            goto fail;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            struct prom_sample *ns = realloc(out->s, cap * sizeof *ns);
            if (ns == NULL) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            out->s = ns;
        }
        out->s[out->n++] = s;
    }
    out->families = nf;
    if (check_histograms(out, fams, nf, err, errlen) != 0)
        goto fail;
    return 0;
fail:
    prom_free(out);
    return -1;
}

double prom_get(const struct prom *p, const char *name, const char *labels, int *found)
{
    *found = 0;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->s[i].name, name) == 0 && strcmp(p->s[i].labels, labels ? labels : "") == 0) {
            *found = 1;
            return p->s[i].value;
        }
    return 0;
}

double prom_must(const struct prom *p, const char *name, const char *labels)
{
    int found = 0;
    double v = prom_get(p, name, labels, &found);
    if (!found)
        fail_msg("no series %s{%s}", name, labels ? labels : "");
    return v;
}

double prom_or0(const struct prom *p, const char *name, const char *labels)
{
    int found;
    return prom_get(p, name, labels, &found);
}

void prom_free(struct prom *p)
{
    free(p->s);
    memset(p, 0, sizeof *p);
}
