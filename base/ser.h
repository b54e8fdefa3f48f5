/*
 * ser.h — a bounds-checked binary codec for state snapshots (exp/snapshot.c,
 * policies' ops->snap, the engine's).
 *
 * One function per field serves both directions: a `struct ser` is either a
 * writer (appends to a struct buf) or a reader (consumes a byte string), and
 * ser_u64(s, &x) writes x or reads into x. A state's layout is therefore
 * written down once, and saving and loading cannot drift apart. Numbers are
 * little-endian, doubles by their bits (a load is bit for bit). Arrays carry
 * their length, which a reader checks against the array it fills: a
 * snapshot of another shape fails instead of reading past its end.
 *
 * Errors are sticky: after a short read, a length mismatch, an out-of-range
 * value or a failed append, s->failed is set, every later call does nothing
 * (a reader leaves its targets untouched from then on: the caller discards
 * what it loaded), and ser_ok() says 0.
 */
#ifndef BANDITD_BASE_SER_H
#define BANDITD_BASE_SER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct ser {
    int reading;            /* 1: fill the fields from p; 0: append them to out */
    struct buf *out;        /* writer: borrowed */
    const unsigned char *p; /* reader: borrowed */
    size_t len, pos;        /* reader */
    int failed;
};

/* A writer appending to out (borrowed, initialised by the caller). */
void ser_writer(struct ser *s, struct buf *out);
/* A reader of p[0..len) (borrowed for s's life). */
void ser_reader(struct ser *s, const void *p, size_t len);
/* 1 while nothing failed; a reader must also have consumed every byte
 * (ser_end) for a load to count. */
int ser_ok(const struct ser *s);
/* Reader: fail unless every byte was read. Returns ser_ok(s). */
int ser_end(struct ser *s);
/* Mark s failed (a caller's own check). */
void ser_fail(struct ser *s);

void ser_u64(struct ser *s, uint64_t *v);
void ser_i64(struct ser *s, int64_t *v);
void ser_u32(struct ser *s, uint32_t *v);
void ser_int(struct ser *s, int *v);
void ser_uint(struct ser *s, unsigned *v);
void ser_size(struct ser *s, size_t *v);
void ser_f64(struct ser *s, double *v);
/* An unsigned number in 1 to 10 bytes, 7 bits each, low bits first, the
 * high bit set on all but the last (LEB128): small numbers in few bytes.
 * A reader fails on a form longer than needed or over 64 bits. */
void ser_varint(struct ser *s, uint64_t *v);
/* A signed number as ser_varint of its zigzag form (0, −1, 1, −2, … as 0,
 * 1, 2, 3, …): small differences of either sign in few bytes. */
void ser_zigzag(struct ser *s, int64_t *v);
/* An enum or small code (stored as an int): a reader fails outside [0, max]. */
void ser_enum(struct ser *s, int *v, int max);

/* A value the reader must find equal to *v (a shape: a count, a version):
 * written as is; read and compared, failing on a difference. */
void ser_expect(struct ser *s, uint64_t v);

/* Arrays of n elements (n is written, and checked on read). */
void ser_bytes(struct ser *s, unsigned char *v, size_t n);
void ser_u64s(struct ser *s, uint64_t *v, size_t n);
void ser_u32s(struct ser *s, uint32_t *v, size_t n);
void ser_sizes(struct ser *s, size_t *v, size_t n);
void ser_f64s(struct ser *s, double *v, size_t n);
void ser_uints(struct ser *s, unsigned *v, size_t n);

/* The same layouts as ser_bytes and ser_sizes, with what a reader accepts
 * narrowed: flags each 0 or 1; indices each below bound (they index an
 * array of that length once loaded). */
void ser_flags(struct ser *s, unsigned char *v, size_t n);
void ser_indices(struct ser *s, size_t *v, size_t n, size_t bound);

/* A reader's check of what it loaded (ok 0: fail s); a writer ignores it.
 * For the consistency of fields with each other: counts that must add up,
 * an index below a count read earlier. */
void ser_check(struct ser *s, int ok);
/* A reader's check that v[0..n) is a permutation of 0..n-1 (tie-break
 * ranks: a repeated or out-of-range one would break the order they make). */
void ser_check_perm(struct ser *s, const uint32_t *v, size_t n);

/* A string: writer from *v (NULL allowed); reader into a new malloc'd
 * string in *v (NULL when none was written), which the caller owns and
 * must free, at most max bytes. */
void ser_str(struct ser *s, char **v, size_t max);

#endif
