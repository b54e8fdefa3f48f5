/*
 * error.h — the error of the policies layer: which field of a configuration
 * is wrong and why, as two strings, so that the daemon puts them in a
 * problem+json's {"field", "message"} and the simulator on its command line
 * without parsing one out of the other.
 *
 * Field names are the HTTP API's (goal.m, policy.params.cap, stop_rule...):
 * clients match on them; the simulator maps them to its options.
 */
#ifndef BANDITD_POLICIES_ERROR_H
#define BANDITD_POLICIES_ERROR_H

#include <stddef.h>

enum policy_err {
    POLICY_ERR_NONE = 0,
    POLICY_ERR_INVALID, /* the configuration is refused: field and message say why */
    POLICY_ERR_NOMEM,   /* out of memory: nothing wrong with the configuration */
};

struct policy_error {
    enum policy_err code;
    char field[96];    /* "" when no one field is at fault */
    char message[256]; /* without the field */
};

/* Set e to POLICY_ERR_INVALID on field with printf(fmt, ...) as message
 * (both truncated to fit). */
void policy_error_set(struct policy_error *e, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Set e to POLICY_ERR_NOMEM. */
void policy_error_nomem(struct policy_error *e);

/* A policy's init reports "field: message" into a string (policy.h,
 * policy_ops.init); this is the one place that string becomes an error:
 * the text before the first ": " is the field when it names one (no
 * blank in it), "out of memory" is POLICY_ERR_NOMEM. */
void policy_error_from_text(struct policy_error *e, const char *text);

/* "field: message" (the message alone without a field) into buf, for
 * people: the simulator's stderr, logs, test failures. */
void policy_error_text(const struct policy_error *e, char *buf, size_t len);

#endif
