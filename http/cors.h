/*
 * cors.h — cross-origin requests from browsers (the Fetch standard's CORS
 * protocol), inside the transport (http.c uses it; nothing outside http/
 * does). No origin is allowed unless configured (--cors-origins): a page
 * of another origin then cannot read any answer, and its preflights are
 * refused.
 *
 * An allowed origin gets Access-Control-Allow-Origin on every answer
 * (errors included, so a page can read the problem+json) and the headers
 * a client needs exposed (ETag, Retry-After, Location, Banditd-Next-After).
 * Credentials (cookies) are never allowed: the API takes keys in
 * Authorization, which a page sends explicitly. Whenever origins are
 * configured (and not "*"), every answer carries Vary: Origin, since it
 * depends on the Origin header, even the ones to a request without one
 * (a shared cache must not serve them to a page that sends one).
 */
#ifndef BANDITD_HTTP_CORS_H
#define BANDITD_HTTP_CORS_H

#include <stddef.h>

/* Most origins in the list, and the longest one. */
#define CORS_MAX_ORIGINS 32
#define CORS_ORIGIN_MAX 256

/* The headers a page may read (Access-Control-Expose-Headers). */
#define CORS_EXPOSE "ETag, Retry-After, Location, Banditd-Next-After"
/* The request headers a page may send (Access-Control-Allow-Headers). */
#define CORS_ALLOW_HEADERS "Authorization, Content-Type, If-None-Match"
/* Seconds a browser may keep a preflight's answer. */
#define CORS_MAX_AGE "600"

/* Set the allowed origins from list: "" or NULL for none, "*" for any, or
 * comma-separated origins "scheme://host[:port]" (spaces around commas
 * allowed; no path, no trailing slash). 0, or −1 with a message in err (the
 * previous list stays). */
int cors_configure(const char *list, char *err, size_t errlen);
/* Whether any origin is allowed. */
int cors_enabled(void);
/* Whether every origin is ("*": answers do not vary by origin). */
int cors_any(void);
/* Whether origin (a request's Origin header, may be NULL) is allowed. */
int cors_allowed(const char *origin);

#endif
