/*
 * cors.c — the allowed origins (cors.h): a short list compared exactly,
 * as browsers send an origin serialised (lower-case scheme and host, the
 * default port left out).
 */
#include "http/cors.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static struct {
    int any;
    size_t n;
    char origins[CORS_MAX_ORIGINS][CORS_ORIGIN_MAX];
} g;

/* 0 when o (len bytes) is an origin as a browser serialises it. */
static int check_origin(const char *o, size_t len, char *err, size_t errlen)
{
    const char *sep = len > 3 ? strstr(o, "://") : NULL;
    if (len == 0 || len >= CORS_ORIGIN_MAX || sep == NULL || sep >= o + len) {
        snprintf(err, errlen,
                 "--cors-origins: \"%.*s\" is not an origin (scheme://host[:port], e.g. "
                 "https://shop.example)",
                 (int)(len < 80 ? len : 80), o);
        return -1;
    }
    for (const char *p = o; p < o + len; p++) {
        unsigned char c = (unsigned char)*p;
        if (isupper(c) || c <= ' ' || c == 0x7f ||
            (p > sep + 2 && (c == '/' || c == '?' || c == '#'))) {
            snprintf(err, errlen,
                     "--cors-origins: \"%.*s\": an origin is lower-case, with no path, query or "
                     "trailing slash (scheme://host[:port])",
                     (int)(len < 80 ? len : 80), o);
            return -1;
        }
    }
    if (sep + 3 == o + len || sep == o) {
        snprintf(err, errlen, "--cors-origins: \"%.*s\" lacks a scheme or a host",
                 (int)(len < 80 ? len : 80), o);
        return -1;
    }
    return 0;
}

int cors_configure(const char *list, char *err, size_t errlen)
{
    char origins[CORS_MAX_ORIGINS][CORS_ORIGIN_MAX];
    size_t n = 0;
    int any = 0;
    for (const char *p = list != NULL ? list : ""; *p != '\0';) {
        p += strspn(p, " \t,");
        size_t len = strcspn(p, ",");
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0)
            break;
        if (len == 1 && p[0] == '*') {
            any = 1;
        } else {
            if (check_origin(p, len, err, errlen) != 0)
                return -1;
            if (n == CORS_MAX_ORIGINS) {
                snprintf(err, errlen, "--cors-origins: more than %d origins", CORS_MAX_ORIGINS);
                return -1;
            }
            memcpy(origins[n], p, len);
            origins[n][len] = '\0';
            n++;
        }
        p += len;
        p += strcspn(p, ",");
    }
    g.any = any;
    g.n = n;
    memcpy(g.origins, origins, sizeof origins);
    return 0;
}

int cors_enabled(void)
{
    return g.any || g.n > 0;
}

int cors_any(void)
{
    return g.any;
}

int cors_allowed(const char *origin)
{
    if (origin == NULL || origin[0] == '\0')
        return 0;
    if (g.any)
        return 1;
    for (size_t i = 0; i < g.n; i++)
        if (strcmp(g.origins[i], origin) == 0)
            return 1;
    return 0;
}
