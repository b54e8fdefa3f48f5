/*
 * log.h — the daemon's diagnostics on stderr, one line each with a UTC
 * timestamp and a level. Request logs (one JSON line per request) are
 * written by http.c through log_request when enabled.
 */
#ifndef BANDITD_SERVER_LOG_H
#define BANDITD_SERVER_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

void log_set_level(enum log_level l);
void log_msg(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* One preformatted line (a JSON request record) to stderr, atomically. */
void log_line(const char *line);

#endif
