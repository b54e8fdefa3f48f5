/*
 * raw.c — HTTP over a plain socket, every answer checked for form (raw.h).
 */
#include "tests/support/raw.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct rawc {
    int fd;
    char *buf; /* read, not yet consumed */
    size_t len, cap;
    int eof;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct rawc *rawc_dial(uint16_t port, const char *src)
{
    int six = src != NULL && strchr(src, ':') != NULL;
    int fd = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    int ok;
    if (six) {
        struct sockaddr_in6 sa;
        memset(&sa, 0, sizeof sa);
        sa.sin6_family = AF_INET6;
        sa.sin6_port = htons(port);
        ok = inet_pton(AF_INET6, src, &sa.sin6_addr) == 1 &&
             connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    } else {
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        ok = 1;
        if (src != NULL) {
            ok = inet_pton(AF_INET, src, &sa.sin_addr) == 1 &&
                 bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        }
        sa.sin_port = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ok = ok && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    }
    struct rawc *c = ok ? calloc(1, sizeof *c) : NULL;
    if (c == NULL) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    return c;
}

void rawc_close(struct rawc *c)
{
    if (c == NULL)
        return;
    close(c->fd);
    free(c->buf);
    free(c);
}

int rawc_fd(const struct rawc *c)
{
    return c->fd;
}

int rawc_send_n(struct rawc *c, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int rawc_send(struct rawc *c, const char *s)
{
    return rawc_send_n(c, s, strlen(s));
}

/* Read what arrives before the deadline (absolute, now_s). 1: some bytes;
 * 0: none in time; −1: the peer closed (c->eof set). */
static int fill(struct rawc *c, double deadline)
{
    if (c->eof)
        return -1;
    for (;;) {
        double left = deadline - now_s();
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        /* polled once even when the deadline is past: a check, no wait */
        int rc = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return 0;
        if (c->cap - c->len < 4096) {
            size_t cap = c->cap ? c->cap * 2 : 16384;
            char *b = realloc(c->buf, cap + 1);
            if (b == NULL)
                return -1;
            c->buf = b;
            c->cap = cap;
        }
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            c->eof = 1;
            return -1;
        }
        c->len += (size_t)n;
        c->buf[c->len] = '\0';
        return 1;
    }
}

int rawc_closed_within(struct rawc *c, double secs)
{
    double end = now_s() + secs;
    for (;;) {
        c->len = 0; /* dropped */
        int rc = fill(c, end);
        if (rc < 0)
            return 1;
        if (rc == 0)
            return 0;
    }
}

size_t rawc_pending(const struct rawc *c)
{
    return c->len;
}

static void consume(struct rawc *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
    if (c->buf != NULL)
        c->buf[c->len] = '\0';
}

/* Wait for n bytes in the buffer. 0, or −1 (closed or late). */
static int need(struct rawc *c, size_t n, double deadline)
{
    while (c->len < n)
        if (fill(c, deadline) <= 0)
            return -1;
    return 0;
}

static char *find_crlf(struct rawc *c, size_t from, double deadline)
{
    for (;;) {
        if (c->len > from) {
            char *e = memmem(c->buf + from, c->len - from, "\r\n", 2);
            if (e != NULL)
                return e;
        }
        if (fill(c, deadline) <= 0)
            return NULL;
    }
}

char *rawr_header(const struct rawr *r, const char *name)
{
    if (r->head == NULL)
        return NULL;
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
        const char *f = p + 2;
        if (strncasecmp(f, name, nl) == 0 && f[nl] == ':') {
            const char *v = f + nl + 1;
            v += strspn(v, " \t");
            size_t vl = strcspn(v, "\r");
            while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                vl--;
            return strndup(v, vl);
        }
    }
    return NULL;
}

static int is_tchar(int ch)
{
    return isalnum(ch) || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Check the status line and the fields of r->head; the framing into *cl
 * (−1: none) and *chunked. */
static void check_head(struct rawr *r, long long *cl, int *chunked)
{
    const char *h = r->head;
    *cl = -1;
    *chunked = 0;
    if (strncmp(h, "HTTP/1.1 ", 9) != 0 || !isdigit((unsigned char)h[9]) ||
        !isdigit((unsigned char)h[10]) || !isdigit((unsigned char)h[11]) || h[12] != ' ') {
        snprintf(r->error, sizeof r->error, "bad status line");
        return;
    }
    r->status = (int)strtol(h + 9, NULL, 10);
    int lengths = 0;
    for (const char *p = strstr(h, "\r\n"); p != NULL && p[2] != '\0'; p = strstr(p + 2, "\r\n")) {
        const char *f = p + 2, *e = strstr(f, "\r\n");
        size_t n = e != NULL ? (size_t)(e - f) : strlen(f);
        size_t name = 0;
        while (name < n && is_tchar((unsigned char)f[name]))
            name++;
        if (name == 0 || name == n || f[name] != ':') {
            snprintf(r->error, sizeof r->error, "bad header line \"%.*s\"", (int)n, f);
            return;
        }
        for (size_t i = name; i < n; i++)
            if (((unsigned char)f[i] < 0x20 && f[i] != '\t') || f[i] == 0x7f) {
                snprintf(r->error, sizeof r->error, "control character in \"%.*s\"", (int)n, f);
                return;
            }
        if (name == 14 && strncasecmp(f, "Content-Length", 14) == 0) {
            lengths++;
            *cl = strtoll(f + 15, NULL, 10);
        }
    }
    char *te = rawr_header(r, "Transfer-Encoding");
    *chunked = te != NULL && strcasecmp(te, "chunked") == 0;
    if (te != NULL && !*chunked)
        snprintf(r->error, sizeof r->error, "Transfer-Encoding %s", te);
    free(te);
    if (lengths > 1 || (lengths == 1 && *chunked))
        snprintf(r->error, sizeof r->error, "ambiguous framing");
    char *conn = rawr_header(r, "Connection");
    r->closes = conn != NULL && strcasecmp(conn, "close") == 0;
    free(conn);
}

/* An error answer must be problem+json (RFC 9457), of the same status. */
static void check_problem(struct rawr *r)
{
    if (r->status < 400 || r->error[0] != '\0')
        return;
    char *ct = rawr_header(r, "Content-Type");
    int ok = ct != NULL && strncmp(ct, "application/problem+json", 24) == 0;
    free(ct);
    if (!ok) {
        snprintf(r->error, sizeof r->error, "an error that is not application/problem+json");
        return;
    }
    const json_t *j = r->json;
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "type")) ||
        !json_is_string(json_object_get(j, "title")) ||
        !json_is_string(json_object_get(j, "detail")) ||
        json_integer_value(json_object_get(j, "status")) != r->status)
        snprintf(r->error, sizeof r->error, "not an RFC 9457 problem of status %d", r->status);
}

static struct rawr *read_one(struct rawc *c, double secs, int head_only)
{
    double deadline = now_s() + secs;
    struct rawr *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    /* the end of the header block */
    char *end = NULL;
    for (;;) {
        end = c->len >= 4 ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        if (end != NULL)
            break;
        int rc = fill(c, deadline);
        if (rc <= 0) {
            snprintf(r->error, sizeof r->error, "%s",
                     c->len == 0 ? (rc < 0 ? "closed" : "timeout") : "truncated header block");
            return r;
        }
    }
    size_t hl = (size_t)(end - c->buf) + 2; /* keep the last field's CRLF */
    r->head = strndup(c->buf, hl);
    consume(c, hl + 2);
    long long cl;
    int chunked;
    check_head(r, &cl, &chunked);
    if (r->error[0] != '\0')
        return r;
    int bodiless = head_only || r->status < 200 || r->status == 204 || r->status == 304;
    struct {
        char *p;
        size_t n;
    } body = {NULL, 0};
    if (bodiless) {
        /* nothing */
    } else if (chunked) {
        for (;;) {
            char *e = find_crlf(c, 0, deadline);
            if (e == NULL) {
                snprintf(r->error, sizeof r->error, "truncated chunk size");
                break;
            }
            char *x;
            unsigned long long n = strtoull(c->buf, &x, 16);
            if (x == c->buf) {
                snprintf(r->error, sizeof r->error, "bad chunk size");
                break;
            }
            consume(c, (size_t)(e - c->buf) + 2);
            if (need(c, (size_t)n + 2, deadline) != 0 || memcmp(c->buf + n, "\r\n", 2) != 0) {
                snprintf(r->error, sizeof r->error, "truncated chunk");
                break;
            }
            char *nb = realloc(body.p, body.n + (size_t)n + 1);
            if (nb == NULL)
                break;
            body.p = nb;
            memcpy(body.p + body.n, c->buf, (size_t)n);
            body.n += (size_t)n;
            consume(c, (size_t)n + 2);
            if (n == 0)
                break;
        }
    } else if (cl >= 0) {
        if (need(c, (size_t)cl, deadline) != 0) {
            snprintf(r->error, sizeof r->error, "body shorter than Content-Length %lld", cl);
        } else {
            body.p = malloc((size_t)cl + 1);
            if (body.p != NULL) {
                memcpy(body.p, c->buf, (size_t)cl);
                body.n = (size_t)cl;
            }
            consume(c, (size_t)cl);
        }
    } else {
        snprintf(r->error, sizeof r->error, "neither Content-Length nor chunked");
    }
    if (body.p == NULL)
        body.p = calloc(1, 1);
    else
        body.p[body.n] = '\0';
    r->body = body.p;
    r->len = body.n;
    if (r->len > 0)
        r->json = json_loadb(r->body, r->len, 0, NULL);
    check_problem(r);
    return r;
}

struct rawr *rawc_read(struct rawc *c, double secs)
{
    return read_one(c, secs, 0);
}

struct rawr *rawc_read_head(struct rawc *c, double secs)
{
    return read_one(c, secs, 1);
}

void rawr_free(struct rawr *r)
{
    if (r == NULL)
        return;
    free(r->head);
    free(r->body);
    json_decref(r->json);
    free(r);
}
