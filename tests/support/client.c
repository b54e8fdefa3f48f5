/*
 * client.c — the libcurl side of the harness: one request in, status,
 * headers and a parsed JSON body out; plus JSON path helpers, the seeded
 * generator and experiment shortcuts. See harness.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "tests/support/internal.h"
#include "tests/support/prom.h"

#define REQUEST_TIMEOUT_S 60L
#define MAX_RESPONSE (256u << 20) /* a test never needs more; a runaway stream stops here */

struct tclient {
    struct tdaemon *d;
    CURL *h;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void tharness_global_init(void)
{
    pthread_once(&g_once, global_init);
}

struct tclient *tclient_new(struct tdaemon *d)
{
    tharness_global_init();
    struct tclient *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->d = d;
    return c;
}

void tclient_disconnect(struct tclient *c)
{
    if (c != NULL && c->h != NULL) {
        curl_easy_cleanup(c->h);
        c->h = NULL;
    }
}

void tclient_free(struct tclient *c)
{
    if (c == NULL)
        return;
    tclient_disconnect(c);
    free(c);
}

void tresp_free(struct tresp *r)
{
    if (r == NULL)
        return;
    free(r->body);
    json_decref(r->json);
    for (size_t i = 0; i < r->nheaders; i++) {
        free(r->hname[i]);
        free(r->hvalue[i]);
    }
    free(r->hname);
    free(r->hvalue);
    free(r);
}

static void clear_headers(struct tresp *r)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        free(r->hname[i]);
        free(r->hvalue[i]);
    }
    r->nheaders = 0;
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
    struct tresp *r = arg;
    size_t len = size * n;
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        clear_headers(r); /* a new response (after 100 Continue, say) */
        return len;
    }
    const char *colon = memchr(buf, ':', len);
    if (colon == NULL)
        return len;
    size_t nl = (size_t)(colon - buf);
    const char *v = colon + 1, *end = buf + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    char **nn = realloc(r->hname, (r->nheaders + 1) * sizeof *nn);
    if (nn == NULL)
        return 0;
    r->hname = nn;
    char **nv = realloc(r->hvalue, (r->nheaders + 1) * sizeof *nv);
    if (nv == NULL)
        return 0;
    r->hvalue = nv;
    r->hname[r->nheaders] = strndup(buf, nl);
    r->hvalue[r->nheaders] = strndup(v, (size_t)(end - v));
    r->nheaders++;
    return len;
}

struct sink {
    struct tresp *r;
    size_t cap;
    const struct treq_opts *o;
};

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    if (s->r->len + len + 1 > MAX_RESPONSE)
        return 0;
    if (s->r->len + len + 1 > s->cap) {
        size_t ncap = s->cap ? s->cap : 4096;
        while (ncap < s->r->len + len + 1)
            ncap *= 2;
        char *nb = realloc(s->r->body, ncap);
        if (nb == NULL)
            return 0;
        s->r->body = nb;
        s->cap = ncap;
    }
    memcpy(s->r->body + s->r->len, buf, len);
    s->r->len += len;
    s->r->body[s->r->len] = '\0';
    if (s->o != NULL && s->o->on_body != NULL)
        s->o->on_body(s->o->arg, buf, len);
    return len;
}

static int names_header(const char *const *headers, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        if (strncasecmp(headers[i], name, n) == 0 && headers[i][n] == ':')
            return 1;
    return 0;
}

static int set_rcvbuf(void *arg, curl_socket_t fd, curlsocktype purpose)
{
    const struct treq_opts *o = arg;
    if (purpose == CURLSOCKTYPE_IPCXN)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof o->rcvbuf);
    return CURL_SOCKOPT_OK;
}

struct tresp *tclient_req(struct tclient *c, const char *method, const char *path, const char *body,
                          const char *const *headers)
{
    return tclient_req_opts(c, method, path, body, headers, NULL);
}

struct tresp *tclient_req_opts(struct tclient *c, const char *method, const char *path,
                               const char *body, const char *const *headers,
                               const struct treq_opts *o)
{
    struct tresp *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->body = strdup("");
    if (c->h == NULL)
        c->h = curl_easy_init();
    CURL *h = c->h;
    if (h == NULL || r->body == NULL) {
        snprintf(r->error, sizeof r->error, "curl_easy_init failed");
        return r;
    }
    curl_easy_reset(h); /* keeps the connection cache */
    char url[1024];
    const char *cafile = NULL;
    int https = tdaemon_https(c->d, &cafile);
    snprintf(url, sizeof url, "%s://127.0.0.1:%u%s", https ? "https" : "http",
             (unsigned)tdaemon_port(c->d), path);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        hl = curl_slist_append(hl, headers[i]);
    if (body != NULL && !names_header(headers, "Content-Type"))
        hl = curl_slist_append(hl, "Content-Type: application/json");
    if (!names_header(headers, "Expect"))
        hl = curl_slist_append(hl, "Expect:"); /* no 100-continue round trip */
    struct sink sink = {.r = r, .o = o};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    if (cafile != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, cafile);
    if (o != NULL && o->rcvbuf > 0) {
        curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, set_rcvbuf);
        curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, (void *)(uintptr_t)o);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (body != NULL || strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(hl);
    if (rc != CURLE_OK) {
        snprintf(r->error, sizeof r->error, "%s %s: %s", method, path, curl_easy_strerror(rc));
        /* a dead connection must not be reused by the next request */
        tclient_disconnect(c);
        return r;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->len > 0)
        r->json = json_loadb(r->body, r->len, 0, NULL);
    return r;
}

struct tresp *treq(struct tdaemon *d, const char *method, const char *path, const char *body,
                   const char *const *headers)
{
    return tclient_req(tdaemon_client(d), method, path, body, headers);
}

struct tresp *treq_key(struct tdaemon *d, const char *method, const char *path, const char *key,
                       const char *body)
{
    char auth[512];
    const char *headers[] = {auth, NULL};
    if (key == NULL)
        return treq(d, method, path, body, NULL);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
    return treq(d, method, path, body, headers);
}

struct tresp *treqf(struct tdaemon *d, const char *method, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = NULL;
    int n = vasprintf(&body, fmt, ap);
    va_end(ap);
    if (n < 0)
        return treq(d, method, path, "", NULL);
    struct tresp *r = treq(d, method, path, body, NULL);
    free(body);
    return r;
}

struct tresp *treq_json(struct tdaemon *d, const char *method, const char *path, const json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    struct tresp *r = treq(d, method, path, text ? text : "", NULL);
    free(text);
    return r;
}

const char *tresp_header(const struct tresp *r, const char *name)
{
    const char *v = NULL;
    for (size_t i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->hname[i], name) == 0)
            v = r->hvalue[i];
    return v;
}

json_t *tcall(struct tdaemon *d, const char *method, const char *path, const char *body, long want)
{
    struct tresp *r = treq(d, method, path, body, NULL);
    if (r->status != want)
        fail_msg("%s %s: %ld (expected %ld): %.300s %s", method, path, r->status, want, r->body,
                 r->error);
    json_t *j = json_incref(r->json);
    tresp_free(r);
    return j;
}

/* --- JSON helpers ------------------------------------------------------------ */

json_t *tjson_get(const json_t *j, const char *path)
{
    const json_t *cur = j;
    const char *p = path;
    while (cur != NULL && *p != '\0') {
        if (*p == '.') {
            p++;
            continue;
        }
        if (*p == '[') {
            char *end;
            long i = strtol(p + 1, &end, 10);
            if (*end != ']' || i < 0)
                return NULL;
            cur = json_array_get(cur, (size_t)i);
            p = end + 1;
            continue;
        }
        size_t n = strcspn(p, ".[");
        char key[128];
        if (n >= sizeof key)
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        cur = json_object_get(cur, key);
        p += n;
    }
    return (json_t *)(uintptr_t)cur;
}

const char *tjson_str(const json_t *j, const char *path)
{
    return json_string_value(tjson_get(j, path));
}

long long tjson_int(const json_t *j, const char *path)
{
    json_t *v = tjson_get(j, path);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

double tjson_num(const json_t *j, const char *path)
{
    json_t *v = tjson_get(j, path);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int tproblem_has_field(const struct tresp *r, const char *field)
{
    json_t *errs = json_object_get(r->json, "errors");
    size_t i;
    json_t *e;
    json_array_foreach(errs, i, e)
    {
        const char *f = json_string_value(json_object_get(e, "field"));
        if (f != NULL && strcmp(f, field) == 0 && json_is_string(json_object_get(e, "message")))
            return 1;
    }
    return 0;
}

/* --- the generator ------------------------------------------------------------- */

void trng_seed(struct trng *g, uint64_t seed)
{
    g->s = seed;
}

uint64_t trng_next(struct trng *g)
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double trng_uniform(struct trng *g)
{
    return (double)(trng_next(g) >> 11) * 0x1.0p-53;
}

int trng_bernoulli(struct trng *g, double p)
{
    return trng_uniform(g) < p;
}

/* --- experiment shortcuts ----------------------------------------------------------- */

json_t *texp_create(struct tdaemon *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = NULL;
    int n = vasprintf(&body, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    struct tresp *r = treq(d, "POST", "/v1/experiments", body, NULL);
    free(body);
    assert_status(r, 201);
    json_t *j = json_incref(r->json);
    tresp_free(r);
    assert_non_null(j);
    return j;
}

json_t *texp_assign(struct tdaemon *d, const char *exp, const char *body)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/experiments/%s/assignments", exp);
    struct tresp *r = treq(d, "POST", path, body ? body : "{}", NULL);
    if (r->status != 200)
        assert_status(r, 201);
    json_t *a = json_incref(json_object_get(r->json, "assignments"));
    tresp_free(r);
    assert_true(json_is_array(a));
    return a;
}

const char *texp_reward(struct tdaemon *d, const char *exp, const char *assignment_id,
                        double reward)
{
    static const char *const names[] = {"accepted", "duplicate", "conflict",
                                        "unknown",  "expired",   "error"};
    char path[256];
    snprintf(path, sizeof path, "/v1/experiments/%s/rewards", exp);
    struct tresp *r = treqf(d, "POST", path, "{\"assignment_id\":\"%s\",\"reward\":%.17g}",
                            assignment_id, reward);
    assert_status(r, 200);
    const char *st = tjson_str(r->json, "results[0].status");
    const char *out = NULL;
    for (size_t i = 0; st != NULL && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(st, names[i]) == 0)
            out = names[i];
    if (out == NULL)
        fail_msg("unexpected reward answer: %s", r->body);
    tresp_free(r);
    return out;
}

void tjson_must_equal(json_t *a, json_t *b, const char *what)
{
    if (!json_equal(a, b)) {
        char *ta = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
        char *tb = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("%s differs:\nbefore %s\nafter  %s", what, ta, tb);
    }
}

int64_t tassignment_seq(const char *id, char *tok, size_t len)
{
    const char *dash = id != NULL ? strchr(id, '-') : NULL;
    if (tok != NULL && len > 0)
        snprintf(tok, len, "%.*s", dash != NULL ? (int)(dash - id) : 0, id ? id : "");
    return dash != NULL ? strtoll(dash + 1, NULL, 10) : -1;
}

double tmetric(struct tdaemon *d, const char *name, const char *labels)
{
    struct tresp *r = treq(d, "GET", "/metrics", NULL, NULL);
    struct prom p;
    char err[256];
    assert_status(r, 200);
    if (prom_parse(r->body, "banditd_", &p, err, sizeof err) != 0)
        fail_msg("/metrics: %s", err);
    double v = prom_or0(&p, name, labels);
    prom_free(&p);
    tresp_free(r);
    return v;
}

json_t *texp_status(struct tdaemon *d, const char *exp)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/experiments/%s/status", exp);
    struct tresp *r = treq(d, "GET", path, NULL, NULL);
    assert_status(r, 200);
    json_t *j = json_incref(r->json);
    tresp_free(r);
    return j;
}

struct tresp *texp_req(struct tdaemon *d, const char *method, const char *exp, const char *tail,
                       const char *body)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/experiments/%s%s", exp, tail);
    return treq(d, method, path, body, NULL);
}

void texp_assert_acknowledged(const json_t *st, int k, const long *pulls, const long *sum)
{
    for (int a = 0; a < k; a++) {
        char path[64];
        snprintf(path, sizeof path, "bandits[0].arms[%d].pulls", a);
        long got = (long)tjson_int(st, path);
        if (got != pulls[a])
            fail_msg("arm %d: status says %ld pulls, %ld rewards were acknowledged", a, got,
                     pulls[a]);
        if (pulls[a] > 0) {
            snprintf(path, sizeof path, "bandits[0].arms[%d].mean", a);
            double mean = tjson_num(st, path), want = (double)sum[a] / (double)pulls[a];
            if (fabs(mean - want) > 1e-9)
                fail_msg("arm %d: mean %.12f, acknowledged %.12f", a, mean, want);
        }
    }
}
