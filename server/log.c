/*
 * log.c — leveled diagnostics to stderr. One write(2) per line so lines
 * from concurrent threads never interleave.
 */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level g_level = LOG_INFO;

void log_set_level(enum log_level l)
{
    g_level = l;
}

void log_msg(enum log_level l, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    if (l < g_level)
        return;
    char buf[1024];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s: ", names[l]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : (n + (size_t)m >= sizeof buf - 1 ? sizeof buf - 2 : n + (size_t)m);
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, n);
    (void)w;
}

void log_line(const char *line)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}
