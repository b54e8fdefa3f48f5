/*
 * jsonv.c — JSON field checks (jsonv.h).
 */
#include "base/jsonv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int jv_error(json_t *errors, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:s,s:s}", "field", field, "message", msg);
    if (e == NULL || json_array_append_new(errors, e) != 0)
        return -1;
    return 0;
}

int jv_unknown_keys(json_t *obj, const char *const *allowed, const char *prefix, json_t *errors)
{
    int unknown = 0;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        int ok = 0;
        for (size_t i = 0; allowed[i] != NULL && !ok; i++)
            ok = strcmp(allowed[i], key) == 0;
        if (ok)
            continue;
        char field[256];
        snprintf(field, sizeof field, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        jv_error(errors, field, "unknown field");
        unknown++;
    }
    return unknown;
}

int jv_number(const json_t *v, double *out)
{
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v) && isfinite(json_real_value(v))) {
        *out = json_real_value(v);
        return 1;
    }
    return 0;
}

void jv_first_error(const json_t *errors, const char *suffix, char *buf, size_t len)
{
    const json_t *first = json_array_get(errors, 0);
    const char *field = json_string_value(json_object_get(first, "field"));
    const char *msg = json_string_value(json_object_get(first, "message"));
    snprintf(buf, len, "%s: %s%s", field ? field : "", msg ? msg : "invalid", suffix ? suffix : "");
}

char *jv_dumps(const json_t *j, size_t flags)
{
    char *text = json_dumps(j, flags);
    json_t *back = text != NULL ? json_loads(text, 0, NULL) : NULL;
    int same = back != NULL && json_equal(back, j);
    json_decref(back);
    if (!same) {
        free(text);
        return NULL;
    }
    return text;
}
