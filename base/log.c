/*
 * log.c — leveled diagnostics to stderr (log.h).
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"

void log_msg(enum log_level l, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char buf[1024];
    clock_format_rfc3339(clock_wall_ms(), buf, sizeof buf);
    size_t n = strlen(buf);
    n += (size_t)snprintf(buf + n, sizeof buf - n, " %s: ", names[l]);
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
