/*
 * opsd.c — see opsd.h: spawn the daemon, read its "listening on" line, make
 * requests with libcurl, run its subcommands.
 */
#include "tests/support/opsd.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 30000 /* a sanitizer build on a loaded machine */
#define MAX_ARGS 64

static const char *bin_path(void)
{
    const char *b = getenv("BANDITD_BIN");
    return b != NULL && b[0] != '\0' ? b : "build/asan/banditd";
}

int opsd_init(struct opsd *d)
{
    memset(d, 0, sizeof *d);
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/opsd.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(d->dir) == NULL)
        return -1;
    snprintf(d->db, sizeof d->db, "%s/banditd.db", d->dir);
    snprintf(d->errlog, sizeof d->errlog, "%s/stderr.log", d->dir);
    d->bin = bin_path();
    static int curl_ready;
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        curl_ready = 1;
    }
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int spawn(struct opsd *d, const char *const *args, int with_listen)
{
    const char *argv[MAX_ARGS];
    size_t n = 0;
    int pfd[2];
    argv[n++] = d->bin;
    if (with_listen) {
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
    }
    argv[n++] = "--db";
    argv[n++] = d->db;
    for (size_t i = 0; args != NULL && args[i] != NULL && n < MAX_ARGS - 1; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        /* Dies with the test (a failed assertion may skip our cleanup). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int efd = open(d->errlog, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(pfd[1], 1);
        if (efd >= 0)
            dup2(efd, 2);
        close(pfd[0]);
        close(pfd[1]);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    close(pfd[1]);
    d->pid = pid;
    /* Read the first line: "listening on HOST:PORT". */
    char line[256];
    size_t len = 0;
    int64_t deadline = now_ms() + START_TIMEOUT_MS;
    while (len < sizeof line - 1) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t got = read(pfd[0], line + len, 1);
        if (got <= 0)
            break;
        if (line[len] == '\n')
            break;
        len++;
    }
    line[len] = '\0';
    close(pfd[0]);
    const char *colon = strrchr(line, ':');
    if (strncmp(line, "listening on ", 13) == 0 && colon != NULL) {
        d->port = (unsigned)strtoul(colon + 1, NULL, 10);
        return 0;
    }
    /* It did not start: collect its exit status. */
    int status = 0;
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            d->pid = 0;
            return WIFEXITED(status) ? 1000 + WEXITSTATUS(status) : -1;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    d->pid = 0;
    return -1;
}

int opsd_start(struct opsd *d, const char *const *args)
{
    return spawn(d, args, 1);
}

int opsd_start_raw(struct opsd *d, const char *const *args)
{
    return spawn(d, args, 0);
}

void opsd_signal(struct opsd *d, int sig)
{
    if (d->pid > 0)
        kill(d->pid, sig);
}

int opsd_stop(struct opsd *d)
{
    int status = 0;
    if (d->pid <= 0)
        return -1;
    kill(d->pid, SIGTERM);
    if (waitpid(d->pid, &status, 0) != d->pid)
        status = -1;
    d->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void opsd_cleanup(struct opsd *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
    }
    if (d->dir[0] != '\0')
        nftw(d->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    d->dir[0] = '\0';
}

/* --- requests ------------------------------------------------------------------ */

struct sink {
    char *p;
    size_t len;
};

static size_t sink_write(char *data, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t add = size * n;
    char *np = realloc(s->p, s->len + add + 1);
    if (np == NULL)
        return 0;
    memcpy(np + s->len, data, add);
    s->p = np;
    s->len += add;
    s->p[s->len] = '\0';
    return add;
}

long opsd_request(struct opsd *d, const char *method, const char *path, const char *key,
                  const char *body, const char *extra_header, struct opsd_reply *r)
{
    char url[512], auth[512];
    struct sink b = {NULL, 0}, h = {NULL, 0};
    struct curl_slist *hdrs = NULL;
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    if (c == NULL)
        return 0;
    snprintf(url, sizeof url, "%s://127.0.0.1:%u%s", d->tls ? "https" : "http", d->port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->curl_error);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (d->tls && d->cafile[0] != '\0')
        curl_easy_setopt(c, CURLOPT_CAINFO, d->cafile);
    if (key != NULL) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        hdrs = curl_slist_append(hdrs, auth);
    }
    if (extra_header != NULL)
        hdrs = curl_slist_append(hdrs, extra_header);
    if (body != NULL) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    r->body = b.p != NULL ? b.p : strdup("");
    r->len = b.len;
    r->headers = h.p != NULL ? h.p : strdup("");
    return r->status;
}

void opsd_reply_free(struct opsd_reply *r)
{
    free(r->body);
    free(r->headers);
    r->body = r->headers = NULL;
}

int opsd_reply_header(const struct opsd_reply *r, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = r->headers; p != NULL && *p != '\0';) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            size_t vl = ll - (size_t)(v - p);
            while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                vl--;
            snprintf(buf, len, "%.*s", (int)vl, v);
            return 1;
        }
        p = eol ? eol + 1 : NULL;
    }
    return 0;
}

/* --- subcommands ----------------------------------------------------------------- */

static void read_file(const char *path, char *out, size_t len)
{
    if (out == NULL || len == 0)
        return;
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
}

int opsd_run(const struct opsd *d, const char *const *args, char *out, size_t outlen, char *err,
             size_t errlen)
{
    return opsd_run_input(d, args, NULL, out, outlen, err, errlen);
}

int opsd_run_input(const struct opsd *d, const char *const *args, const char *input, char *out,
                   size_t outlen, char *err, size_t errlen)
{
    const char *argv[MAX_ARGS];
    char opath[256], epath[256], ipath[256];
    size_t n = 0;
    argv[n++] = d->bin;
    for (size_t i = 0; args[i] != NULL && n < MAX_ARGS - 1; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    snprintf(opath, sizeof opath, "%s/run.out", d->dir);
    snprintf(epath, sizeof epath, "%s/run.err", d->dir);
    snprintf(ipath, sizeof ipath, "%s/run.in", d->dir);
    FILE *in = fopen(ipath, "w");
    if (in == NULL)
        return -1;
    fputs(input != NULL ? input : "", in);
    fclose(in);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int ofd = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int efd = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int ifd = open(ipath, O_RDONLY);
        if (ofd < 0 || efd < 0 || ifd < 0)
            _exit(126);
        dup2(ifd, 0);
        dup2(ofd, 1);
        dup2(efd, 2);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    read_file(opath, out, outlen);
    read_file(epath, err, errlen);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int opsd_create_key(const struct opsd *d, const char *scope, char *key, size_t len)
{
    char err[1024];
    const char *args[] = {"keys", "create", "--db", d->db, "--scope", scope, NULL};
    if (opsd_run(d, args, key, len, err, sizeof err) != 0)
        return -1;
    key[strcspn(key, "\n")] = '\0';
    return key[0] != '\0' ? 0 : -1;
}

char *opsd_stderr(const struct opsd *d)
{
    FILE *f = fopen(d->errlog, "r");
    if (f == NULL)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (buf == NULL) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}
