/*
 * ser.c — the snapshot codec (ser.h): fixed-width little-endian fields,
 * sticky failure.
 */
#include "base/ser.h"

#include <stdlib.h>
#include <string.h>

void ser_writer(struct ser *s, struct buf *out)
{
    memset(s, 0, sizeof *s);
    s->out = out;
}

void ser_reader(struct ser *s, const void *p, size_t len)
{
    memset(s, 0, sizeof *s);
    s->reading = 1;
    s->p = p;
    s->len = len;
}

int ser_ok(const struct ser *s)
{
    return !s->failed && !(s->out != NULL && s->out->failed);
}

int ser_end(struct ser *s)
{
    if (s->reading && s->pos != s->len)
        s->failed = 1;
    return ser_ok(s);
}

void ser_fail(struct ser *s)
{
    s->failed = 1;
}

/* Write or read n bytes of little-endian w. */
static void word(struct ser *s, uint64_t *w, size_t n)
{
    if (!ser_ok(s))
        return;
    if (!s->reading) {
        unsigned char b[8], *to = b;
        struct buf *o = s->out;
        int direct = buf_fits(o, n); /* no call per field: a snapshot has millions */
        if (direct)
            to = (unsigned char *)o->p + o->len;
        for (size_t i = 0; i < n; i++)
            to[i] = (unsigned char)(*w >> (8 * i));
        if (direct) {
            o->len += n;
            o->p[o->len] = '\0';
        } else if (buf_put(o, b, n) != 0) {
            s->failed = 1;
        }
        return;
    }
    if (s->len - s->pos < n) {
        s->failed = 1;
        return;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)s->p[s->pos + i] << (8 * i);
    s->pos += n;
    *w = v;
}

void ser_u64(struct ser *s, uint64_t *v)
{
    word(s, v, 8);
}

void ser_i64(struct ser *s, int64_t *v)
{
    uint64_t w = (uint64_t)*v;
    word(s, &w, 8);
    if (s->reading && ser_ok(s))
        *v = (int64_t)w;
}

void ser_u32(struct ser *s, uint32_t *v)
{
    uint64_t w = *v;
    word(s, &w, 4);
    if (s->reading && ser_ok(s))
        *v = (uint32_t)w;
}

void ser_int(struct ser *s, int *v)
{
    uint64_t w = (uint32_t)*v;
    word(s, &w, 4);
    if (s->reading && ser_ok(s))
        *v = (int)(int32_t)(uint32_t)w;
}

void ser_uint(struct ser *s, unsigned *v)
{
    uint64_t w = *v;
    word(s, &w, 4);
    if (s->reading && ser_ok(s))
        *v = (unsigned)w;
}

void ser_size(struct ser *s, size_t *v)
{
    uint64_t w = *v;
    word(s, &w, 8);
    if (s->reading && ser_ok(s)) {
        if (w > SIZE_MAX)
            s->failed = 1;
        else
            *v = (size_t)w;
    }
}

void ser_varint(struct ser *s, uint64_t *v)
{
    if (!ser_ok(s))
        return;
    if (!s->reading) {
        unsigned char b[10];
        size_t n = 0;
        uint64_t w = *v;
        do {
            b[n] = (unsigned char)(w & 0x7f);
            w >>= 7;
            b[n] |= w != 0 ? 0x80 : 0;
            n++;
        } while (w != 0);
        if (buf_fits(s->out, n)) { /* as word(): no call per field */
            memcpy(s->out->p + s->out->len, b, n);
            s->out->len += n;
            s->out->p[s->out->len] = '\0';
        } else if (buf_put(s->out, b, n) != 0) {
            s->failed = 1;
        }
        return;
    }
    uint64_t w = 0;
    for (unsigned shift = 0;; shift += 7) {
        /* at most 10 bytes, the tenth holding bit 63 alone: no overlong
         * form, nothing shifted out */
        if (s->pos == s->len || shift > 63) {
            s->failed = 1;
            return;
        }
        unsigned char c = s->p[s->pos++];
        if (shift == 63 && c > 1) {
            s->failed = 1;
            return;
        }
        w |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            if (c == 0 && shift > 0) { /* a trailing zero: another form of a shorter one */
                s->failed = 1;
                return;
            }
            break;
        }
    }
    *v = w;
}

void ser_zigzag(struct ser *s, int64_t *v)
{
    uint64_t u = (uint64_t)*v, w = (u << 1) ^ (*v < 0 ? UINT64_MAX : 0);
    ser_varint(s, &w);
    if (s->reading && ser_ok(s))
        *v = (int64_t)((w >> 1) ^ (0 - (w & 1)));
}

void ser_f64(struct ser *s, double *v)
{
    uint64_t w;
    memcpy(&w, v, sizeof w);
    word(s, &w, 8);
    if (s->reading && ser_ok(s))
        memcpy(v, &w, sizeof w);
}

void ser_enum(struct ser *s, int *v, int max)
{
    int x = *v;
    ser_int(s, &x);
    if (s->reading && ser_ok(s)) {
        if (x < 0 || x > max)
            s->failed = 1;
        else
            *v = x;
    }
}

void ser_expect(struct ser *s, uint64_t v)
{
    uint64_t w = v;
    word(s, &w, 8);
    if (s->reading && ser_ok(s) && w != v)
        s->failed = 1;
}

void ser_bytes(struct ser *s, unsigned char *v, size_t n)
{
    ser_expect(s, n);
    if (!ser_ok(s) || n == 0)
        return;
    if (!s->reading) {
        if (buf_put(s->out, v, n) != 0)
            s->failed = 1;
        return;
    }
    if (s->len - s->pos < n) {
        s->failed = 1;
        return;
    }
    memcpy(v, s->p + s->pos, n);
    s->pos += n;
}

void ser_u64s(struct ser *s, uint64_t *v, size_t n)
{
    ser_expect(s, n);
    for (size_t i = 0; i < n && ser_ok(s); i++)
        ser_u64(s, &v[i]);
}

void ser_u32s(struct ser *s, uint32_t *v, size_t n)
{
    ser_expect(s, n);
    for (size_t i = 0; i < n && ser_ok(s); i++)
        ser_u32(s, &v[i]);
}

void ser_sizes(struct ser *s, size_t *v, size_t n)
{
    ser_expect(s, n);
    for (size_t i = 0; i < n && ser_ok(s); i++)
        ser_size(s, &v[i]);
}

void ser_f64s(struct ser *s, double *v, size_t n)
{
    ser_expect(s, n);
    for (size_t i = 0; i < n && ser_ok(s); i++)
        ser_f64(s, &v[i]);
}

void ser_uints(struct ser *s, unsigned *v, size_t n)
{
    ser_expect(s, n);
    for (size_t i = 0; i < n && ser_ok(s); i++)
        ser_uint(s, &v[i]);
}

void ser_flags(struct ser *s, unsigned char *v, size_t n)
{
    ser_bytes(s, v, n);
    for (size_t i = 0; s->reading && i < n && ser_ok(s); i++)
        if (v[i] > 1)
            s->failed = 1;
}

void ser_indices(struct ser *s, size_t *v, size_t n, size_t bound)
{
    ser_sizes(s, v, n);
    for (size_t i = 0; s->reading && i < n && ser_ok(s); i++)
        if (v[i] >= bound)
            s->failed = 1;
}

void ser_check(struct ser *s, int ok)
{
    if (s->reading && ser_ok(s) && !ok)
        s->failed = 1;
}

void ser_check_perm(struct ser *s, const uint32_t *v, size_t n)
{
    if (!s->reading || !ser_ok(s))
        return;
    /* each value below n, none twice */
    unsigned char *seen = calloc(n ? n : 1, 1);
    if (seen == NULL) {
        s->failed = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i] >= n || seen[v[i]]) {
            s->failed = 1;
            break;
        }
        seen[v[i]] = 1;
    }
    free(seen);
}

void ser_str(struct ser *s, char **v, size_t max)
{
    if (!s->reading) {
        uint64_t n = *v != NULL ? strlen(*v) + 1 : 0; /* 0: none */
        word(s, &n, 8);
        if (n > 0 && ser_ok(s) && buf_put(s->out, *v, (size_t)n - 1) != 0)
            s->failed = 1;
        return;
    }
    uint64_t n = 0;
    word(s, &n, 8);
    if (!ser_ok(s))
        return;
    if (n == 0) {
        *v = NULL;
        return;
    }
    size_t len = (size_t)(n - 1);
    if (n - 1 > max || s->len - s->pos < len) {
        s->failed = 1;
        return;
    }
    char *c = malloc(len + 1);
    if (c == NULL) {
        s->failed = 1;
        return;
    }
    memcpy(c, s->p + s->pos, len);
    c[len] = '\0';
    s->pos += len;
    *v = c;
}
