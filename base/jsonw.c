/*
 * jsonw.c — the JSON text writer (see jsonw.h).
 */
#include "base/jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void jw_init(struct jw *w)
{
    buf_init_inline(&w->b, w->inl, sizeof w->inl, 0);
}

void jw_raw(struct jw *w, const char *s, size_t n)
{
    buf_put(&w->b, s, n);
}

void jw_append(struct jw *w, const struct jw *from)
{
    if (from->b.failed)
        w->b.failed = 1;
    else
        buf_put(&w->b, from->b.p, from->b.len);
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
    if (buf_reserve(&w->b, len * 6 + 2) != 0)
        return;
    char *o = w->b.p + w->b.len;
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
    *o = '\0';
    w->b.len = (size_t)(o - w->b.p);
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
    return buf_detach(&w->b, len);
}

void jw_free(struct jw *w)
{
    buf_free(&w->b);
}
