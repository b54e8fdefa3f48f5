/*
 * prom.h — a strict reader of the Prometheus text exposition format (0.0.4)
 * for tests: every sample line parsed, names and labels checked, each family
 * declared by # TYPE before its samples, no series twice, histogram buckets
 * cumulative and ending at +Inf = _count.
 */
#ifndef BANDITD_TESTS_PROM_H
#define BANDITD_TESTS_PROM_H

#include <stddef.h>

struct prom_sample {
    char name[128];
    char labels[256]; /* as written between the braces; "" when none */
    double value;
};

struct prom {
    struct prom_sample *s; /* owned */
    size_t n;
    size_t families; /* # TYPE lines */
};

/* Parse and check text; every name must start with prefix. 0, or −1 with
 * the first problem (and its line) in err. */
int prom_parse(const char *text, const char *prefix, struct prom *out, char *err, size_t errlen);
/* The value of series name{labels}; *found = 0 (and 0 returned) if absent. */
double prom_get(const struct prom *p, const char *name, const char *labels, int *found);
/* The value of name{labels}; a series that is absent fails the test
 * (cmocka's fail_msg, naming it). */
double prom_must(const struct prom *p, const char *name, const char *labels);
/* The value, 0 when absent (a counter a scrape has not seen move yet). */
double prom_or0(const struct prom *p, const char *name, const char *labels);
void prom_free(struct prom *p);

#endif
