/*
 * cli.c — bandit-sim's shared option readers and its error exit (cli.h).
 */
#include "sim/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void cli_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bandit-sim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

uint64_t cli_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end = NULL;
    errno = 0;
    /* strtoull accepts "-1" (as 2^64 − 1); a count never starts with '-'. */
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *s == '+' || end == s || *end != '\0' || errno != 0 || v < min ||
        v > max)
        cli_die(2, "%s: must be an integer in [%llu, %llu] (got \"%s\")", opt,
                (unsigned long long)min, (unsigned long long)max, s);
    return v;
}

double cli_double(const char *opt, const char *s)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v))
        cli_die(2, "%s: must be a number (got \"%s\")", opt, s);
    return v;
}
