/*
 * mhderr.h — libmicrohttpd's own error answers made problem+json, inside
 * the transport (http.c uses it; nothing outside http/ does).
 *
 * libmicrohttpd 0.9.75 answers some requests itself, before any callback
 * of ours runs, with small HTML pages: a malformed request line or header
 * (400), no Host in HTTP/1.1 (400), a malformed Content-Length or chunked
 * body (400), a too large Content-Length or chunk size (413), a request
 * line or headers too large for its buffer (414, 431), an HTTP version it
 * does not speak (505), a buffer it could not grow (500). It offers no hook
 * to change them (connection.c, transmit_error_response_len). It does build
 * them through its own exported MHD_queue_response, called through its
 * PLT, so this module defines MHD_queue_response in the executable: calls
 * from libmicrohttpd land here and, once armed, their HTML is replaced by
 * the problem+json document of the same status. Our own replies go through
 * mhderr_queue, straight to the library's function, so every call reaching
 * MHD_queue_response is one of libmicrohttpd's own (its only other callers
 * are the basic and digest authentication helpers, which we do not use).
 * tests/http/test_smuggling.c sends each of those malformed requests and
 * fails if one answer is not problem+json, so a libmicrohttpd that stops
 * calling through its PLT is caught.
 */
#ifndef BANDITD_HTTP_MHDERR_H
#define BANDITD_HTTP_MHDERR_H

#include <stdarg.h>

#include <microhttpd.h>

/* libmicrohttpd's MHD_queue_response itself (our replies). */
enum MHD_Result mhderr_queue(struct MHD_Connection *conn, unsigned int status,
                             struct MHD_Response *resp);
/* From now on replace libmicrohttpd's own error answers; observe (may be
 * NULL) is told each one's status (metrics). Not armed: they pass as they
 * are (bench/bare.c links this library without starting the transport). */
void mhderr_arm(void (*observe)(unsigned status));
void mhderr_disarm(void);

/* MHD_OPTION_EXTERNAL_LOGGER: libmicrohttpd's messages as our log lines
 * ("libmicrohttpd: ..."), at most MHDERR_LOG_BURST per 10 s: a client can
 * make it write one per connection (every connection cut by the guard,
 * every malformed request), so under attack the rest are counted, and the
 * count said once the 10 s are over. */
#define MHDERR_LOG_BURST 20
/* fmt is libmicrohttpd's own format string: the attribute tells the compiler
 * so (clang's -Wformat-nonliteral otherwise refuses the vsnprintf). */
void mhderr_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
