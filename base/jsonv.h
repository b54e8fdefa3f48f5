/*
 * jsonv.h — validating JSON input (jansson): parsing that tells out of
 * memory from bad input, the field checks every body parser shares, and
 * the error list they report into.
 *
 * Errors are a JSON array of {"field", "message"} objects, the shape
 * problem+json carries to the client (field names are API: clients match
 * on them). Unknown fields are errors, never silently ignored.
 */
#ifndef BANDITD_BASE_JSONV_H
#define BANDITD_BASE_JSONV_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Parse len bytes of buf as json_loadb(buf, len, flags, err) does, but
 * never trust a parse during which an allocation failed: jansson 2.14 then
 * drops one byte of the string it was reading and goes on (load.c:
 * lex_save ignores strbuffer_append_byte's failure), so an assignment id
 * or a name came back shorter and the request was answered 404 for the
 * server's memory (test_allocfaults). Returns a new reference; or NULL
 * with *oom = 1 when any allocation of the parse failed (the client may
 * retry), or NULL with *oom = 0 and err (may be NULL) filled when the
 * text is not JSON.
 * Safe from any thread: the count of failed allocations is per thread. */
json_t *jv_loadb(const char *buf, size_t len, size_t flags, json_error_t *err, int *oom);

/* json_dumps(j, flags), or NULL when any allocation of the dump failed:
 * jansson 2.14 then drops an object key (dump.c does not check
 * dump_string's result for keys) and goes on, so the text is not JSON
 * (a stored configuration read back as "':' expected near 'bandits'").
 * New, free it. */
char *jv_dumps(const json_t *j, size_t flags);

/* Allocations jansson could not get on this thread so far. Building a
 * document ignores some of jansson's failures (json_object_set_new's,
 * json_array_append_new's: the member is silently missing); compare the
 * count before and after building one that must be whole. */
unsigned long jv_alloc_failures(void);

/* Append {"field": field, "message": printf(fmt, ...)} to errors (a JSON
 * array, borrowed). Returns 0, or −1 on out of memory. */
int jv_error(json_t *errors, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append an "unknown field" error ("<prefix>.<key>", or "<key>" with an
 * empty prefix) for every key of obj not in allowed (NULL-terminated).
 * Returns the number of unknown keys. */
int jv_unknown_keys(json_t *obj, const char *const *allowed, const char *prefix, json_t *errors);

/* v must be an object whose keys are all in allowed (NULL-terminated).
 * Returns −1 when it is no object (appending {"field": field, "message":
 * "must be an object {\"k1\", \"k2\"...}"}), else the number of unknown
 * keys, each reported as jv_unknown_keys does (field as the prefix). */
int jv_object(json_t *v, const char *const *allowed, const char *field, json_t *errors);

/* A finite number (integer or real): 1 and *out, or 0. */
int jv_number(const json_t *v, double *out);

/* x as a JSON number, or JSON null when x is not finite: json_real
 * refuses NaN and ±inf (NULL), and a field set from it silently went
 * missing. A new reference (NULL only on out of memory). */
json_t *jv_real(double x);

/* A non-negative integer up to max, given as an integer or an integral
 * real (1e6): 1 and *out, or 0. */
int jv_count(const json_t *v, uint64_t max, uint64_t *out);

/* obj's member key, when present, an integer in [lo, hi] into *out (kept
 * when absent): 0, or 1 after appending "must be an integer from lo to hi"
 * under field (key when NULL). */
int jv_int_member(const json_t *obj, const char *key, const char *field, json_int_t lo,
                  json_int_t hi, uint64_t *out, json_t *errors);

/* obj's member key, when present, a boolean into *out (1 or 0; kept when
 * absent): 0, or 1 after appending "must be a boolean" under field (key
 * when NULL). */
int jv_bool_member(const json_t *obj, const char *key, const char *field, int *out, json_t *errors);

/* "field: message" of the first error of the list into buf (a problem's
 * one-line detail), with `suffix` appended (may be NULL). */
void jv_first_error(const json_t *errors, const char *suffix, char *buf, size_t len);

#endif
