/*
 * buf.h — growable memory: the one doubling rule every array and text
 * buffer of the daemon grows by, and a byte buffer with a size cap.
 *
 * Growth doubles from a small first capacity (a few elements: glibc
 * consolidates its fast bins before every request of 1 KiB or more, which
 * showed at 1–2% of a request when buffers started large). Every buffer has
 * a cap (STYLE.md: every growable thing has one); a failed growth leaves
 * the buffer as it was.
 */
#ifndef BANDITD_BASE_BUF_H
#define BANDITD_BASE_BUF_H

#include <stddef.h>
#include <stdint.h>

/* Make the array *p (of *cap elements of `size` bytes, possibly NULL/0)
 * hold at least `need` elements, doubling from `first`. Returns 0, or −1 on
 * out of memory or overflow, with *p and *cap unchanged. */
int buf_grow(void **p, size_t *cap, size_t need, size_t size, size_t first);

/* A byte buffer, NUL-terminated whenever len > 0. It may start in storage
 * of the caller's (buf_init_inline: no allocation until it outgrows it).
 * Errors are sticky: once an append fails (out of memory, or past max)
 * every later append is ignored and b->failed stays set. */
struct buf {
    char *p;
    size_t len, cap;
    size_t max; /* most bytes it may hold (0: SIZE_MAX / 2) */
    int failed;
    char *inl; /* the caller's storage p started in, or NULL */
    size_t inl_size;
};

/* The most bytes b may hold (its max, or SIZE_MAX / 2 when 0). */
static inline size_t buf_limit(const struct buf *b)
{
    return b->max ? b->max : SIZE_MAX / 2;
}

/* Whether n more bytes (and the NUL) fit in b's storage as it is, so that
 * a writer may store them at p + len itself (base/ser.c's fast path: a
 * snapshot appends millions of small fields). */
static inline int buf_fits(const struct buf *b, size_t n)
{
    return !b->failed && b->p != NULL && b->cap - b->len > n && n <= buf_limit(b) - b->len;
}

void buf_init(struct buf *b, size_t max);
/* Start in heap storage p of cap bytes (malloc'd; stolen: b frees it, or
 * buf_detach hands it on), to append into pages already in use. */
void buf_init_owned(struct buf *b, char *p, size_t cap, size_t max);
/* Start in storage (borrowed, size bytes, outliving b's use). */
void buf_init_inline(struct buf *b, char *storage, size_t size, size_t max);
/* Room for n more bytes plus a NUL: 0, or −1 (and failed set). */
int buf_reserve(struct buf *b, size_t n);
int buf_put(struct buf *b, const void *s, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The bytes as a new malloc'd NUL-terminated string (*len without the NUL),
 * or NULL when an append failed or on out of memory; b is reset either
 * way. */
char *buf_detach(struct buf *b, size_t *len);
/* Drop the bytes and reset (the storage of buf_init_inline stays in use). */
void buf_free(struct buf *b);

#endif
