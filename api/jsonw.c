/*
 * jsonw.c — the JSON text writer (see jsonw.h).
 */
#include "api/jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void jw_init(struct jw *w)
{
    w->p = w->inl;
    w->n = 0;
    w->cap = sizeof w->inl;
    w->oom = 0;
}

/* Room for n more bytes and a NUL. */
static int reserve(struct jw *w, size_t n)
{
    if (w->oom)
        return -1;
    if (w->n + n + 1 <= w->cap)
        return 0;
    size_t ncap = w->cap * 2;
    while (ncap < w->n + n + 1)
        ncap *= 2;
    char *np = w->p == w->inl ? malloc(ncap) : realloc(w->p, ncap);
    if (np == NULL) {
        w->oom = 1;
        return -1;
    }
    if (w->p == w->inl)
        memcpy(np, w->inl, w->n);
    w->p = np;
    w->cap = ncap;
    return 0;
}

void jw_raw(struct jw *w, const char *s, size_t n)
{
    if (reserve(w, n) != 0)
        return;
    memcpy(w->p + w->n, s, n);
    w->n += n;
}

void jw_str(struct jw *w, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    if (s == NULL) {
        jw_lit(w, "null");
        return;
    }
    size_t len = strlen(s);
    /* worst case: every byte a \u00XX escape */
    if (reserve(w, len * 6 + 2) != 0)
        return;
    char *o = w->p + w->n;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"':
            *o++ = '\\';
            *o++ = '"';
            break;
        case '\\':
            *o++ = '\\';
            *o++ = '\\';
            break;
        case '\b':
            *o++ = '\\';
            *o++ = 'b';
            break;
        case '\f':
            *o++ = '\\';
            *o++ = 'f';
            break;
        case '\n':
            *o++ = '\\';
            *o++ = 'n';
            break;
        case '\r':
            *o++ = '\\';
            *o++ = 'r';
            break;
        case '\t':
            *o++ = '\\';
            *o++ = 't';
            break;
        default:
            if (*c < 0x20) {
                *o++ = '\\';
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = hex[*c >> 4];
                *o++ = hex[*c & 15];
            } else {
                *o++ = (char)*c;
            }
        }
    }
    *o++ = '"';
    w->n = (size_t)(o - w->p);
}

void jw_int(struct jw *w, long long v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        tmp[--i] = '-';
    jw_raw(w, tmp + i, sizeof tmp - i);
}

void jw_real(struct jw *w, double v)
{
    if (!isfinite(v)) {
        jw_lit(w, "null");
        return;
    }
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.15g", v);
    if (n <= 0 || (size_t)n >= sizeof tmp - 3)
        return;
    /* as jansson's jsonp_dtostr: an integral-looking real gets ".0" so it
     * reads back as a real; the exponent loses its '+' and leading zeros */
    char *e = strchr(tmp, 'e');
    if (e == NULL && strchr(tmp, '.') == NULL) {
        tmp[n++] = '.';
        tmp[n++] = '0';
        tmp[n] = '\0';
    } else if (e != NULL) {
        char *d = e + 1, *src = e + 1;
        if (*src == '-')
            *d++ = *src++;
        else if (*src == '+')
            src++;
        while (*src == '0' && src[1] != '\0')
            src++;
        while (*src)
            *d++ = *src++;
        *d = '\0';
        n = (int)(d - tmp);
    }
    jw_raw(w, tmp, (size_t)n);
}

void jw_bool(struct jw *w, int v)
{
    if (v)
        jw_lit(w, "true");
    else
        jw_lit(w, "false");
}

char *jw_finish(struct jw *w, size_t *len)
{
    char *out = NULL;
    if (!w->oom) {
        if (w->p == w->inl) {
            out = malloc(w->n + 1);
            if (out != NULL)
                memcpy(out, w->inl, w->n);
        } else {
            out = w->p;
            w->p = w->inl;
        }
        if (out != NULL) {
            out[w->n] = '\0';
            *len = w->n;
        }
    }
    jw_free(w);
    return out;
}

void jw_free(struct jw *w)
{
    if (w->p != w->inl)
        free(w->p);
    jw_init(w);
}
