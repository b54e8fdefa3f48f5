/*
 * log.h — diagnostics on stderr, one line each with a UTC timestamp and a
 * level; and log_line for preformatted records (the JSON request log). One
 * write(2) per line, so lines of concurrent threads never interleave.
 */
#ifndef BANDITD_BASE_LOG_H
#define BANDITD_BASE_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

void log_msg(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* One preformatted line (a JSON request record) to stderr, atomically. */
void log_line(const char *line);

#endif
