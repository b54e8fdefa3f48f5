/*
 * raw.h — HTTP over a plain socket, for the tests that must send what no
 * HTTP client library would (malformed request lines, ambiguous framing,
 * pipelined requests, requests trickled a byte at a time) and check every
 * answer byte by byte: that it is one well-formed HTTP/1.1 response, and a
 * problem+json document whenever it is an error.
 *
 *   struct rawc *c = rawc_dial(tdaemon_port(d), NULL);
 *   rawc_send(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
 *   struct rawr *r = rawc_read(c, 10.0);
 *   assert_raw_ok(r);                 // well formed (problem+json if an error)
 *   assert_int_equal(r->status, 200);
 *   rawr_free(r);
 *   rawc_close(c);
 *
 * A connection keeps the bytes it read past one response, so pipelined
 * answers are read one after the other.
 */
#ifndef BANDITD_TESTS_SUPPORT_RAW_H
#define BANDITD_TESTS_SUPPORT_RAW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct rawc;

/* A TCP connection to 127.0.0.1:port, from the local address src when not
 * NULL (any of 127.0.0.0/8: another client address on loopback), or to
 * [::1]:port when src is "::1". NULL when it cannot connect. */
struct rawc *rawc_dial(uint16_t port, const char *src);
void rawc_close(struct rawc *c);
int rawc_fd(const struct rawc *c);
/* Send s (NUL-terminated) or n bytes. 0, or −1 when the peer is gone. */
int rawc_send(struct rawc *c, const char *s);
int rawc_send_n(struct rawc *c, const void *data, size_t n);
/* 1 when the peer closed (end of stream or reset) within secs, the bytes
 * before it dropped; 0 when it is still open. */
int rawc_closed_within(struct rawc *c, double secs);
/* Bytes read and not yet taken by rawc_read (after an answer that closes
 * the connection: whatever the server sent beyond it). */
size_t rawc_pending(const struct rawc *c);

struct rawr {
    int status; /* 0: none (see error) */
    char *head; /* the status line and header fields (owned) */
    char *body; /* NUL-terminated (owned) */
    size_t len;
    json_t *json;    /* body parsed, or NULL (owned) */
    int closes;      /* Connection: close */
    char error[256]; /* why it is not a well-formed answer; "" when it is */
};

/* Read the next response within secs (its body framed by Content-Length or
 * chunked; a HEAD answer has none when head is set). Never NULL: no answer
 * at all is status 0 with error "closed" or "timeout". */
struct rawr *rawc_read(struct rawc *c, double secs);
struct rawr *rawc_read_head(struct rawc *c, double secs);
void rawr_free(struct rawr *r);
/* A header's value (new string) or NULL. */
char *rawr_header(const struct rawr *r, const char *name);

/* One well-formed HTTP/1.1 response; an error one is problem+json with the
 * members of RFC 9457 and the same status. */
#define assert_raw_ok(r)                                                                           \
    do {                                                                                           \
        if ((r)->error[0] != '\0')                                                                 \
            fail_msg("bad answer (%s): %s%s", (r)->error, (r)->head ? (r)->head : "",              \
                     (r)->body ? (r)->body : "");                                                  \
    } while (0)

#endif
