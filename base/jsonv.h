/*
 * jsonv.h — validating JSON input (jansson): the field checks every body
 * parser shares, and the error list they report into.
 *
 * Errors are a JSON array of {"field", "message"} objects, the shape
 * problem+json carries to the client (field names are API: clients match
 * on them). Unknown fields are errors, never silently ignored.
 */
#ifndef BANDITD_BASE_JSONV_H
#define BANDITD_BASE_JSONV_H

#include <stddef.h>

#include <jansson.h>

/* Append {"field": field, "message": printf(fmt, ...)} to errors (a JSON
 * array, borrowed). Returns 0, or −1 on out of memory. */
int jv_error(json_t *errors, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append an "unknown field" error ("<prefix>.<key>", or "<key>" with an
 * empty prefix) for every key of obj not in allowed (NULL-terminated).
 * Returns the number of unknown keys. */
int jv_unknown_keys(json_t *obj, const char *const *allowed, const char *prefix, json_t *errors);

/* A finite number (integer or real): 1 and *out, or 0. */
int jv_number(const json_t *v, double *out);

/* "field: message" of the first error of the list into buf (a problem's
 * one-line detail), with `suffix` appended (may be NULL). */
void jv_first_error(const json_t *errors, const char *suffix, char *buf, size_t len);

/* json_dumps(j, flags) for text that will be stored: jansson 2.14 returns
 * malformed text, without an error, when an allocation fails while it
 * writes a key (a key's characters are dropped: {":3644,...}), so the text
 * is read back and compared. New string (free), or NULL (out of memory). */
char *jv_dumps(const json_t *j, size_t flags);

#endif
