/*
 * error.c — the policies layer's error (error.h).
 */
#include "policies/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void policy_error_set(struct policy_error *e, const char *field, const char *fmt, ...)
{
    e->code = POLICY_ERR_INVALID;
    snprintf(e->field, sizeof e->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

void policy_error_nomem(struct policy_error *e)
{
    e->code = POLICY_ERR_NOMEM;
    e->field[0] = '\0';
    snprintf(e->message, sizeof e->message, "out of memory");
}

void policy_error_from_text(struct policy_error *e, const char *text)
{
    if (strcmp(text, "out of memory") == 0) {
        policy_error_nomem(e);
        return;
    }
    const char *colon = strstr(text, ": ");
    size_t n = colon != NULL ? (size_t)(colon - text) : 0;
    if (colon == NULL || n == 0 || n >= sizeof e->field || memchr(text, ' ', n) != NULL) {
        policy_error_set(e, "", "%s", text);
        return;
    }
    policy_error_set(e, "", "%s", colon + 2);
    memcpy(e->field, text, n);
    e->field[n] = '\0';
}

void policy_error_text(const struct policy_error *e, char *buf, size_t len)
{
    if (e->field[0] != '\0')
        snprintf(buf, len, "%s: %s", e->field, e->message);
    else
        snprintf(buf, len, "%s", e->message);
}
