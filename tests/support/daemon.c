/*
 * daemon.c — the banditd process of a black-box test: start it on a fresh
 * database in a temporary directory, learn its port from its first stdout
 * line, stop it (SIGTERM, expecting exit 0), kill it (SIGKILL), restart it
 * on the same database, and copy its stderr into the test log. See
 * harness.h for the contract.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/support/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/internal.h"
#include "tests/support/tstore.h"

#define START_TIMEOUT_MS 30000
#define STOP_TIMEOUT_MS 60000
#define MAX_EXTRA 32
#define MAX_LIVE 64

struct tdaemon {
    char dir[512];
    char db[600];
    char out_path[600];
    char err_path[600];
    char *extra[MAX_EXTRA + 1]; /* owned copies */
    pid_t pid;                  /* 0: not running */
    uint16_t port;
    off_t err_copied; /* bytes of the stderr file already copied to the log */
    unsigned flags;   /* TDAEMON_* of the last launch */
    int https;        /* requests go to https:// (tdaemon_use_tls) */
    char cafile[600]; /* ... verified against this CA ("" = the system's) */
    int live;         /* registered for the at-exit clean-up */
    struct tclient *client;
};

/* Daemons not yet freed: a failed assertion jumps out of a test before
 * its tdaemon_free, so the process's exit kills and removes them. (The
 * daemon also dies with the test process itself: PR_SET_PDEATHSIG.) */
static struct tdaemon *g_live[MAX_LIVE];
static pthread_mutex_t g_live_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_live_once = PTHREAD_ONCE_INIT;

static void kill_leftovers(void)
{
    pthread_mutex_lock(&g_live_mu);
    for (size_t i = 0; i < MAX_LIVE; i++) {
        struct tdaemon *d = g_live[i];
        g_live[i] = NULL;
        if (d == NULL)
            continue;
        pthread_mutex_unlock(&g_live_mu);
        tdaemon_free(d);
        pthread_mutex_lock(&g_live_mu);
    }
    pthread_mutex_unlock(&g_live_mu);
}

static void register_atexit(void)
{
    atexit(kill_leftovers);
}

static void live_add(struct tdaemon *d)
{
    pthread_once(&g_live_once, register_atexit);
    pthread_mutex_lock(&g_live_mu);
    for (size_t i = 0; i < MAX_LIVE; i++)
        if (g_live[i] == NULL) {
            g_live[i] = d;
            break;
        }
    pthread_mutex_unlock(&g_live_mu);
}

static void live_remove(struct tdaemon *d)
{
    pthread_mutex_lock(&g_live_mu);
    for (size_t i = 0; i < MAX_LIVE; i++)
        if (g_live[i] == d)
            g_live[i] = NULL;
    pthread_mutex_unlock(&g_live_mu);
}

void tsleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static const char *binary(void)
{
    const char *b = getenv("BANDITD_BIN");
    return b != NULL && b[0] != '\0' ? b : "build/asan/banditd";
}

/* Copy the stderr written since the last copy into ours, "# banditd: "
 * before each line. */
static void copy_stderr(struct tdaemon *d)
{
    FILE *f = fopen(d->err_path, "r");
    if (f == NULL)
        return;
    if (fseeko(f, d->err_copied, SEEK_SET) != 0) {
        fclose(f);
        return;
    }
    char line[4096];
    int at_start = 1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (at_start)
            fputs("# banditd: ", stderr);
        fputs(line, stderr);
        at_start = strchr(line, '\n') != NULL;
    }
    if (!at_start)
        fputc('\n', stderr);
    d->err_copied = ftello(f);
    fclose(f);
    fflush(stderr);
}

/* Wait for the child, up to timeout_ms. Returns its wait status, or −1. */
static int wait_for(pid_t pid, unsigned timeout_ms)
{
    for (unsigned waited = 0;; waited += 10) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return -1;
        if (waited >= timeout_ms)
            return -1;
        tsleep_ms(10);
    }
}

static int status_code(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

/* Read "listening on HOST:PORT" from the stdout file. 0 when found. */
static int read_port(struct tdaemon *d)
{
    FILE *f = fopen(d->out_path, "r");
    if (f == NULL)
        return -1;
    char line[256];
    int rc = -1;
    if (fgets(line, sizeof line, f) != NULL && strchr(line, '\n') != NULL) {
        const char *colon = strrchr(line, ':');
        long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;
        if (strncmp(line, "listening on ", 13) == 0 && port > 0 && port < 65536) {
            d->port = (uint16_t)port;
            rc = 0;
        } else {
            rc = -2; /* an unexpected first line */
            fprintf(stderr, "# harness: unexpected first line from banditd: %s", line);
        }
    }
    fclose(f);
    return rc;
}

static int spawn(struct tdaemon *d)
{
    /* Truncate stdout: the port of this run is on its first line. */
    int out = open(d->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = open(d->err_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (out < 0 || err < 0) {
        fprintf(stderr, "# harness: cannot open output files in %s: %s\n", d->dir,
                strerror(errno));
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        return -1;
    }
    const char *argv[8 + MAX_EXTRA];
    size_t n = 0;
    argv[n++] = binary();
    if (!(d->flags & TDAEMON_OWN_LISTEN)) {
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
    }
    argv[n++] = "--db";
    argv[n++] = d->db;
    argv[n++] = "--sync";
    argv[n++] = "normal";
    for (size_t i = 0; d->extra[i] != NULL; i++)
        argv[n++] = d->extra[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(out);
        close(err);
        return -1;
    }
    if (pid == 0) {
        /* Never outlive the test, whatever happens to it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        /* The test may block signals; the daemon must see SIGTERM. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out);
    close(err);
    d->pid = pid;
    d->port = 0;
    for (unsigned waited = 0; waited < START_TIMEOUT_MS; waited += 10) {
        int rc = read_port(d);
        if (rc == 0)
            return 0;
        int st;
        if (rc == -2 || waitpid(pid, &st, WNOHANG) == pid) {
            if (rc == -2) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
            }
            fprintf(stderr, "# harness: banditd (%s) did not start: status %d\n", argv[0],
                    status_code(st));
            d->pid = 0;
            copy_stderr(d);
            return rc != -2 && WIFEXITED(st) ? 1000 + WEXITSTATUS(st) : -1;
        }
        tsleep_ms(10);
    }
    fprintf(stderr, "# harness: banditd did not print its port within %d ms\n", START_TIMEOUT_MS);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    d->pid = 0;
    copy_stderr(d);
    return -1;
}


struct tdaemon *tdaemon_new(void)
{
    tharness_global_init();
    struct tdaemon *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/banditd-test.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(d->dir) == NULL) {
        fprintf(stderr, "# harness: mkdtemp %s: %s\n", d->dir, strerror(errno));
        free(d);
        return NULL;
    }
    snprintf(d->db, sizeof d->db, "%s/test.db", d->dir);
    snprintf(d->out_path, sizeof d->out_path, "%s/stdout", d->dir);
    snprintf(d->err_path, sizeof d->err_path, "%s/stderr", d->dir);
    d->client = tclient_new(d);
    if (d->client == NULL) {
        tdaemon_free(d);
        return NULL;
    }
    live_add(d);
    d->live = 1;
    return d;
}

int tdaemon_launch(struct tdaemon *d, const char *const *extra, unsigned flags)
{
    if (d == NULL || d->pid != 0)
        return -1;
    for (size_t i = 0; i < MAX_EXTRA && d->extra[i] != NULL; i++) {
        free(d->extra[i]);
        d->extra[i] = NULL;
    }
    for (size_t i = 0; extra != NULL && extra[i] != NULL && i < MAX_EXTRA; i++)
        d->extra[i] = strdup(extra[i]);
    d->flags = flags;
    tclient_disconnect(d->client); /* a connection to an earlier run is dead */
    return spawn(d);
}

void tdaemon_up(struct tdaemon *d, const char *const *extra, unsigned flags)
{
    int rc = tdaemon_launch(d, extra, flags);
    if (rc != 0) {
        char *e = tdaemon_stderr(d);
        fail_msg("banditd did not start (%d): %s", rc, e ? e : "");
    }
}

struct tdaemon *tdaemon_start(const char *const *extra)
{
    struct tdaemon *d = tdaemon_new();
    if (d != NULL && tdaemon_launch(d, extra, 0) != 0) {
        tdaemon_free(d);
        return NULL;
    }
    return d;
}

void tdaemon_use_tls(struct tdaemon *d, int https, const char *cafile)
{
    d->https = https;
    snprintf(d->cafile, sizeof d->cafile, "%s", cafile != NULL ? cafile : "");
    tclient_disconnect(d->client);
}

int tdaemon_https(const struct tdaemon *d, const char **cafile)
{
    *cafile = d->cafile[0] != '\0' ? d->cafile : NULL;
    return d->https;
}

int tdaemon_cli(const struct tdaemon *d, const char *const *args, const char *input, char *out,
                size_t outlen, char *err, size_t errlen)
{
    const char *argv[2 + MAX_EXTRA];
    char opath[640], epath[640], ipath[640];
    size_t n = 0;
    argv[n++] = binary();
    for (size_t i = 0; args[i] != NULL && i < MAX_EXTRA; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    snprintf(opath, sizeof opath, "%s/cli.out", d->dir);
    snprintf(epath, sizeof epath, "%s/cli.err", d->dir);
    snprintf(ipath, sizeof ipath, "%s/cli.in", d->dir);
    FILE *in = fopen(ipath, "w");
    if (in == NULL)
        return -1;
    fputs(input != NULL ? input : "", in);
    fclose(in);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int ofd = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int efd = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int ifd = open(ipath, O_RDONLY);
        if (ofd < 0 || efd < 0 || ifd < 0)
            _exit(126);
        dup2(ifd, STDIN_FILENO);
        dup2(ofd, STDOUT_FILENO);
        dup2(efd, STDERR_FILENO);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    int st = wait_for(pid, STOP_TIMEOUT_MS);
    if (st == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    tread_file(opath, out, outlen);
    tread_file(epath, err, errlen);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tdaemon_create_key(const struct tdaemon *d, const char *scope, char *key, size_t len)
{
    char err[1024];
    const char *args[] = {"keys", "create", "--db", d->db, "--scope", scope, NULL};
    if (tdaemon_cli(d, args, NULL, key, len, err, sizeof err) != 0) {
        fprintf(stderr, "# harness: keys create: %s", err);
        return -1;
    }
    key[strcspn(key, "\n")] = '\0';
    return key[0] != '\0' ? 0 : -1;
}

int tdaemon_signal(struct tdaemon *d, int sig)
{
    if (d == NULL || d->pid == 0)
        return -1;
    return kill(d->pid, sig) == 0 ? 0 : -1;
}

int tdaemon_stop(struct tdaemon *d)
{
    if (d == NULL || d->pid == 0)
        return -1;
    tclient_disconnect(d->client);
    kill(d->pid, SIGTERM);
    return tdaemon_wait(d);
}

int tdaemon_wait(struct tdaemon *d)
{
    if (d == NULL || d->pid == 0)
        return -1;
    int st = wait_for(d->pid, STOP_TIMEOUT_MS);
    int code;
    if (st == -1) {
        fprintf(stderr, "# harness: banditd did not exit within %d ms; killing it\n",
                STOP_TIMEOUT_MS);
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        code = -1;
    } else {
        code = status_code(st);
    }
    d->pid = 0;
    copy_stderr(d);
    if (code != 0)
        fprintf(stderr, "# harness: banditd exited with status %d\n", code);
    return code;
}

int tdaemon_kill(struct tdaemon *d)
{
    if (d == NULL || d->pid == 0)
        return -1;
    tclient_disconnect(d->client);
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
    copy_stderr(d);
    return 0;
}

int tdaemon_restart(struct tdaemon *d)
{
    if (d == NULL)
        return -1;
    if (d->pid != 0 && tdaemon_stop(d) != 0)
        return -1;
    return spawn(d) == 0 ? 0 : -1;
}

void tdaemon_free(struct tdaemon *d)
{
    if (d == NULL)
        return;
    if (d->live)
        live_remove(d);
    if (d->pid != 0)
        tdaemon_kill(d);
    tclient_free(d->client);
    for (size_t i = 0; i < MAX_EXTRA && d->extra[i] != NULL; i++)
        free(d->extra[i]);
    const char *keep = getenv("BANDITD_TEST_KEEP");
    if (keep != NULL && keep[0] != '\0')
        fprintf(stderr, "# harness: kept %s\n", d->dir);
    else
        ttree_remove(d->dir);
    free(d);
}

uint16_t tdaemon_port(const struct tdaemon *d)
{
    return d->port;
}

int tdaemon_running(const struct tdaemon *d)
{
    return d->pid != 0;
}

const char *tdaemon_db_path(const struct tdaemon *d)
{
    return d->db;
}

const char *tdaemon_dir(const struct tdaemon *d)
{
    return d->dir;
}

char *tdaemon_stderr(const struct tdaemon *d)
{
    FILE *f = fopen(d->err_path, "r");
    if (f == NULL)
        return strdup("");
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL)
        buf[len] = '\0';
    return buf;
}

struct tclient *tdaemon_client(struct tdaemon *d)
{
    return d->client;
}

/* --- one daemon for a whole test group ---------------------------------------- */

struct tdaemon *tgroup_d;

int tgroup_start(const char *const *extra)
{
    tgroup_d = tdaemon_start(extra);
    return tgroup_d == NULL ? -1 : 0;
}

int tgroup_setup(void **state)
{
    (void)state;
    return tgroup_start(NULL);
}

int tgroup_teardown(void **state)
{
    (void)state;
    int rc = tdaemon_stop(tgroup_d);
    tdaemon_free(tgroup_d);
    tgroup_d = NULL;
    return rc == 0 ? 0 : -1;
}

/* --- a daemon of its own for each test ------------------------------------------ */

int tfresh_setup(void **state)
{
    struct tdaemon *d = tdaemon_new();
    *state = d;
    return d == NULL ? -1 : 0;
}

int tfresh_teardown(void **state)
{
    tdaemon_free(*state);
    *state = NULL;
    return 0;
}
