/*
 * jsonutil.h — small JSON helpers shared by the endpoint files.
 */
#ifndef BANDITD_API_JSONUTIL_H
#define BANDITD_API_JSONUTIL_H

#include <jansson.h>

/* Append {"field": "<prefix>.<key>", "message": ...} to errors for every key
 * of obj not in allowed (NULL-terminated). Returns the number of unknown
 * keys: unknown fields are errors, never silently ignored. */
int api_json_unknown_keys(json_t *obj, const char *const *allowed, const char *prefix,
                          json_t *errors);

/* 1 if s is a valid identifier: [A-Za-z0-9_.-]{1,64}. */
int api_valid_id(const char *s);

/* A finite number (integer or real) from v: 1 and *out, or 0. */
int api_json_number(const json_t *v, double *out);

/* RFC 3339 UTC time with milliseconds into buf (>= 32 bytes). */
void api_format_time(long long ms, char *buf, size_t len);

#endif
