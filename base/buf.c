/*
 * buf.c — growable arrays and byte buffers (buf.h).
 */
#include "base/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int buf_grow(void **p, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : (first ? first : 4);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    if (size != 0 && ncap > SIZE_MAX / size)
        return -1;
    void *n = realloc(*p, ncap * size);
    if (n == NULL)
        return -1;
    *p = n;
    *cap = ncap;
    return 0;
}

void buf_init(struct buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

void buf_init_owned(struct buf *b, char *p, size_t cap, size_t max)
{
    buf_init(b, max);
    b->p = p;
    b->cap = p != NULL ? cap : 0;
}

void buf_init_inline(struct buf *b, char *storage, size_t size, size_t max)
{
    buf_init(b, max);
    b->p = b->inl = storage;
    b->cap = b->inl_size = size;
}

int buf_reserve(struct buf *b, size_t n)
{
    if (b->failed)
        return -1;
    if (n > buf_limit(b) || b->len > buf_limit(b) - n) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    char *np = b->p == b->inl ? malloc(ncap) : realloc(b->p, ncap);
    if (np == NULL) {
        b->failed = 1;
        return -1;
    }
    if (b->p == b->inl && b->len > 0)
        memcpy(np, b->inl, b->len);
    b->p = np;
    b->cap = ncap;
    return 0;
}

int buf_put(struct buf *b, const void *s, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return -1;
    if (n > 0)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_put(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return -1;
    }
    if (buf_reserve(b, (size_t)n) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
    char *out = NULL;
    if (!b->failed) {
        if (b->p == NULL || b->p == b->inl) {
            out = malloc(b->len + 1);
            if (out != NULL && b->p != NULL) /* NULL: nothing appended, len 0 */
                memcpy(out, b->p, b->len);
        } else {
            out = b->p;
            b->p = b->inl;
        }
        if (out != NULL) {
            out[b->len] = '\0';
            *len = b->len;
        }
    }
    buf_free(b);
    return out;
}

void buf_free(struct buf *b)
{
    if (b->p != b->inl)
        free(b->p);
    if (b->inl != NULL)
        buf_init_inline(b, b->inl, b->inl_size, b->max);
    else
        buf_init(b, b->max);
}
