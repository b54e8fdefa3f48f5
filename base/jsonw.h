/*
 * jsonw.h — a small append-only JSON text writer for the hot replies
 * (assignments, rewards, observations, status).
 *
 * Why not jansson there: building a json_t tree with json_pack and
 * serialising it with json_dumps cost about a third of an assignment
 * request's instructions (callgrind: 130k Ir per request, ~45k in jansson),
 * for documents whose shape is fixed. The writer appends text to one buffer
 * (inline for small replies, so usually one malloc: the final copy handed
 * to libmicrohttpd) and produces exactly what json_dumps(JSON_COMPACT |
 * JSON_REAL_PRECISION(15)) would: same escaping, same number format.
 *
 * Structure (commas, braces) is the caller's: keys and punctuation are
 * literals appended with jw_lit. Errors (out of memory) are sticky and
 * reported by jw_finish. The text lives in a struct buf (base/buf.h) that
 * starts in the writer's inline storage.
 */
#ifndef BANDITD_BASE_JSONW_H
#define BANDITD_BASE_JSONW_H

#include <stddef.h>
#include <string.h>

#include "base/buf.h"

#define JW_INLINE 1024

struct jw {
    struct buf b;
    char inl[JW_INLINE];
};

void jw_init(struct jw *w);
/* Append n raw bytes (already valid JSON text). */
void jw_raw(struct jw *w, const char *s, size_t n);
/* Append a string literal (punctuation, quoted keys). */
#define jw_lit(w, s) jw_raw((w), (s), sizeof(s) - 1)
/* A JSON string: quotes and escapes (", \, control characters). NULL → null. */
void jw_str(struct jw *w, const char *s);
void jw_int(struct jw *w, long long v);
/* A real as jansson writes it with JSON_REAL_PRECISION(15) (%.15g, ".0"
 * added to integral values); non-finite → null (jansson has no NaN). */
void jw_real(struct jw *w, double v);
void jw_bool(struct jw *w, int v);

/* The text (new malloc'd, NUL-terminated; *len without the NUL) or NULL on
 * out of memory. The writer is reset either way. */
char *jw_finish(struct jw *w, size_t *len);
/* Drop the text. */
void jw_free(struct jw *w);
/* Append what another writer holds (its failure carries over). */
void jw_append(struct jw *w, const struct jw *from);

#endif
