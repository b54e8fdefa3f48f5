/*
 * jsonutil.c — JSON helpers shared by the endpoint files.
 */
#include "api/jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int api_json_unknown_keys(json_t *obj, const char *const *allowed, const char *prefix,
                          json_t *errors)
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
        json_array_append_new(errors, json_pack("{s:s,s:s}", "field", field, "message",
                                                "unknown field"));
        unknown++;
    }
    return unknown;
}

int api_valid_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

int api_json_number(const json_t *v, double *out)
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

void api_format_time(long long ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03lldZ", base, ms % 1000);
}
