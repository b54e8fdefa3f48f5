/*
 * web.c — the dashboard. GET / and GET /experiments/{id} answer the same
 * HTML shell (the script in it reads the path and draws the list or one
 * experiment); GET /static/{name} answers the scripts, styles and icons.
 * Everything comes from the binary (api/web_assets.h, generated from
 * web/dist at build time): no files to find at run time, no network.
 *
 * The routes are open: the shell holds no data, and the page fetches
 * everything from the public API with the key its user typed in. Assets
 * have content-hashed names, so they are cached for good; the shell is
 * revalidated on every load (ETag), so a new build is seen at once.
 */
#include "api/api.h"

#include <string.h>
#include <strings.h>

#include "api/web_assets.h"

#define WEB_SHELL "index.html"

/* The shell may run only our own scripts and styles, talk only to us, and
 * not be framed. */
#define WEB_CSP                                                                                    \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "                   \
    "frame-ancestors 'none'"

static const struct web_asset *find(const char *name)
{
    for (const struct web_asset *a = web_assets; a->name != NULL; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

/* Whether an Accept-Encoding value admits gzip: "gzip" with a q other than
 * 0, or else "*" with a q other than 0 (an explicit gzip;q=0 wins over *). */
static int accepts_gzip(const char *ae)
{
    if (ae == NULL)
        return 0;
    int gzip = -1, star = -1; /* -1 unnamed, 0 refused, 1 accepted */
    const char *p = ae;
    while (*p) {
        p += strspn(p, " \t,");
        size_t tok = strcspn(p, " \t;,");
        const char *end = p + strcspn(p, ",");
        int *which = tok == 4 && strncasecmp(p, "gzip", 4) == 0 ? &gzip
                     : tok == 1 && *p == '*'                    ? &star
                                                                : NULL;
        if (which != NULL) {
            /* q=0, q=0.0, q=0.000 refuse; any other q accepts. */
            const char *q = strstr(p, "q=");
            int zero = 0;
            if (q != NULL && q < end) {
                q += 2;
                zero = *q == '0';
                for (q++; zero && q < end && *q != ' ' && *q != ';'; q++)
                    zero = *q == '.' || *q == '0';
            }
            *which = !zero;
        }
        p = end;
    }
    return gzip >= 0 ? gzip : star == 1;
}

/* Send asset a (or its gzip twin), or 304 when the client has it. */
static int serve(struct http_req *r, const struct web_asset *a, int shell)
{
    int gz = a->gz != NULL && accepts_gzip(http_req_header(r, "Accept-Encoding"));
    const char *etag = gz ? a->gz_etag : a->etag;
    http_reply_header(r, "ETag", etag);
    http_reply_header(r, "Cache-Control",
                      shell ? "no-cache" : "public, max-age=31536000, immutable");
    if (a->gz != NULL)
        http_reply_header(r, "Vary", "Accept-Encoding");
    http_reply_header(r, "X-Content-Type-Options", "nosniff");
    if (shell) {
        http_reply_header(r, "Content-Security-Policy", WEB_CSP);
        http_reply_header(r, "Referrer-Policy", "no-referrer");
    }
    if (http_etag_matches(http_req_header(r, "If-None-Match"), etag))
        return http_reply_empty(r, 304);
    if (gz) {
        http_reply_header(r, "Content-Encoding", "gzip");
        return http_reply_static(r, 200, a->content_type, a->gz, a->gz_len);
    }
    return http_reply_static(r, 200, a->content_type, a->data, a->len);
}

int api_web_page(struct http_req *r)
{
    const struct web_asset *a = find(WEB_SHELL);
    if (a == NULL)
        return http_reply_problem(r, 404, "this build has no dashboard (web/dist was empty)", NULL);
    return serve(r, a, 1);
}

int api_web_static(struct http_req *r)
{
    const char *name = http_req_id(r);
    /* The shell has its own addresses; a stale hashed name is simply gone. */
    const struct web_asset *a = name != NULL && strcmp(name, WEB_SHELL) != 0 ? find(name) : NULL;
    if (a == NULL)
        return http_reply_problem(r, 404, "no such file", NULL);
    return serve(r, a, 0);
}
