/*
 * jsonv.c — JSON parsing and field checks (jsonv.h).
 */
#include "base/jsonv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Allocations jansson could not get, on this thread. */
static _Thread_local unsigned long t_failed;

static void *counting_malloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL)
        t_failed++;
    return p;
}

/* Installed before main, while the process has one thread: setting
 * jansson's allocator later would race with threads already using it. An
 * object allocated by plain malloc before this is freed by plain free, so
 * the switch is seamless. */
__attribute__((constructor)) static void install_counting_malloc(void)
{
    json_set_alloc_funcs(counting_malloc, free);
}

json_t *jv_loadb(const char *buf, size_t len, size_t flags, json_error_t *err, int *oom)
{
    json_error_t local;
    if (err == NULL)
        err = &local;
    unsigned long before = t_failed;
    json_t *j = json_loadb(buf, len, flags, err);
    *oom = t_failed != before || (j == NULL && json_error_code(err) == json_error_out_of_memory);
    if (*oom) {
        json_decref(j); /* whatever it made of the text is not the text */
        j = NULL;
    }
    return j;
}

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

int jv_object(json_t *v, const char *const *allowed, const char *field, json_t *errors)
{
    if (json_is_object(v))
        return jv_unknown_keys(v, allowed, field, errors);
    char shape[256] = "";
    size_t len = 0;
    for (size_t i = 0; allowed[i] != NULL && len < sizeof shape; i++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s\"%s\"", i ? ", " : "",
                                allowed[i]);
    jv_error(errors, field, "must be an object {%s}", shape);
    return -1;
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

json_t *jv_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

int jv_count(const json_t *v, uint64_t max, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x > max)
            return 0;
        *out = (uint64_t)x;
        return 1;
    }
    double x;
    if (!jv_number(v, &x) || x < 0 || x != floor(x) || x > (double)max)
        return 0;
    *out = (uint64_t)x;
    return 1;
}

int jv_int_member(const json_t *obj, const char *key, const char *field, json_int_t lo,
                  json_int_t hi, uint64_t *out, json_t *errors)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        jv_error(errors, field != NULL ? field : key, "must be an integer from %lld to %lld",
                 (long long)lo, (long long)hi);
        return 1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int jv_bool_member(const json_t *obj, const char *key, const char *field, int *out, json_t *errors)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return 0;
    if (!json_is_boolean(v)) {
        jv_error(errors, field != NULL ? field : key, "must be a boolean");
        return 1;
    }
    *out = json_is_true(v);
    return 0;
}

char *jv_dumps(const json_t *j, size_t flags)
{
    unsigned long before = t_failed;
    char *text = json_dumps(j, flags);
    if (text != NULL && t_failed != before) {
        free(text);
        text = NULL;
    }
    return text;
}

unsigned long jv_alloc_failures(void)
{
    return t_failed;
}

void jv_first_error(const json_t *errors, const char *suffix, char *buf, size_t len)
{
    const json_t *first = json_array_get(errors, 0);
    const char *field = json_string_value(json_object_get(first, "field"));
    const char *msg = json_string_value(json_object_get(first, "message"));
    snprintf(buf, len, "%s: %s%s", field ? field : "", msg ? msg : "invalid", suffix ? suffix : "");
}
