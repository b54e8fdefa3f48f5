/*
 * faults.c — the test side of the fault-injection shims: the shared control
 * block, the environment that loads the shims into the daemon, power cuts.
 * See faults.h for the contract and tests/shim/faultfs.c for what a power
 * cut assumes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/faults.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

struct tfault {
    char dir[512];
    char ctl_path[640];
    char db[600];
    struct fault_ctl *c;
    char *old_asan; /* ASAN_OPTIONS before attach (owned), NULL if unset */
};

int tstrict(void)
{
    const char *v = getenv("BANDITD_STRICT");
    return v != NULL && strcmp(v, "1") == 0;
}

/* The directory holding the shims: $BANDITD_SHIM_DIR, else ../shim next
 * to this test binary (build/asan/tests/http/x → build/asan/tests/shim). */
static void shim_dir(char *out, size_t len)
{
    const char *env = getenv("BANDITD_SHIM_DIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(out, len, "%s", env);
        return;
    }
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(out, len, "build/asan/tests/shim");
        return;
    }
    exe[n] = '\0';
    char *dir = dirname(exe); /* …/tests/http */
    snprintf(out, len, "%s/../shim", dir);
}

struct tfault *tfault_attach(struct tdaemon *d, unsigned shims, unsigned flags)
{
    struct tfault *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "%s", tdaemon_dir(d));
    snprintf(f->ctl_path, sizeof f->ctl_path, "%s/faultctl", tdaemon_dir(d));
    snprintf(f->db, sizeof f->db, "%s", tdaemon_db_path(d));
    int fd = open(f->ctl_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)sizeof *f->c), 0);
    void *m = mmap(NULL, sizeof *f->c, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(m != MAP_FAILED);
    f->c = m;
    memset(f->c, 0, sizeof *f->c);
    f->c->pagecache = (flags & TFAULT_PAGECACHE) ? FAULT_PC_ON : 0;
    __atomic_store_n(&f->c->magic, FAULT_CTL_MAGIC, __ATOMIC_RELEASE);

    char dir[512], preload[1200] = "";
    shim_dir(dir, sizeof dir);
    static const char *const names[] = {"faultfs.so", "faultmem.so"};
    for (int i = 0; i < 2; i++) {
        if (!(shims & (1u << i)))
            continue;
        char p[700];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (access(p, R_OK) != 0)
            fail_msg("shim %s missing (make builds it with the tests)", p);
        size_t used = strlen(preload);
        snprintf(preload + used, sizeof preload - used, "%s%s", used ? ":" : "", p);
    }
    const char *asan = getenv("ASAN_OPTIONS");
    f->old_asan = asan != NULL ? strdup(asan) : NULL;
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", asan ? asan : "",
             asan && asan[0] ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    setenv("LD_PRELOAD", preload, 1);
    setenv(FAULT_CTL_ENV, f->ctl_path, 1);
    setenv(FAULT_DB_ENV, f->db, 1);
    return f;
}

void tfault_detach(struct tfault *f)
{
    if (f == NULL)
        return;
    unsetenv("LD_PRELOAD");
    unsetenv(FAULT_CTL_ENV);
    unsetenv(FAULT_DB_ENV);
    if (f->old_asan != NULL)
        setenv("ASAN_OPTIONS", f->old_asan, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(f->old_asan);
    munmap(f->c, sizeof *f->c);
    free(f);
}

struct fault_ctl *tfault_ctl(struct tfault *f)
{
    return f->c;
}

void tfault_arm(struct tfault *f, unsigned ops, int64_t target, int err)
{
    struct fault_ctl *c = f->c;
    __atomic_store_n(&c->armed, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->count, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->hit, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->hit_op, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->ops, ops, __ATOMIC_RELEASE);
    __atomic_store_n(&c->err, err, __ATOMIC_RELEASE);
    __atomic_store_n(&c->target, target, __ATOMIC_RELEASE);
    __atomic_store_n(&c->armed, 1, __ATOMIC_RELEASE);
}

void tfault_only_files(struct tfault *f, unsigned kinds)
{
    __atomic_store_n(&f->c->kinds, kinds, __ATOMIC_RELEASE);
}

int64_t tfault_hit(struct tfault *f)
{
    return __atomic_load_n(&f->c->hit, __ATOMIC_ACQUIRE);
}

int64_t tfault_disarm(struct tfault *f)
{
    __atomic_store_n(&f->c->armed, 0, __ATOMIC_RELEASE);
    return __atomic_load_n(&f->c->hit, __ATOMIC_ACQUIRE);
}

unsigned tfault_hit_op(struct tfault *f)
{
    return (unsigned)__atomic_load_n(&f->c->hit_op, __ATOMIC_ACQUIRE);
}

int64_t tfault_count(struct tfault *f)
{
    return __atomic_load_n(&f->c->count, __ATOMIC_ACQUIRE);
}

void tfault_marm(struct tfault *f, int64_t target)
{
    struct fault_ctl *c = f->c;
    __atomic_store_n(&c->m_armed, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->m_count, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->m_hit, 0, __ATOMIC_RELEASE);
    memset(c->m_where, 0, sizeof c->m_where);
    __atomic_store_n(&c->m_target, target, __ATOMIC_RELEASE);
    __atomic_store_n(&c->m_armed, 1, __ATOMIC_RELEASE);
}

int64_t tfault_mdisarm(struct tfault *f)
{
    __atomic_store_n(&f->c->m_armed, 0, __ATOMIC_RELEASE);
    return __atomic_load_n(&f->c->m_hit, __ATOMIC_ACQUIRE);
}

int64_t tfault_mcount(struct tfault *f)
{
    return __atomic_load_n(&f->c->m_count, __ATOMIC_ACQUIRE);
}

const char *tfault_mwhere(struct tfault *f)
{
    return f->c->m_where;
}

void tfault_stall(struct tfault *f, int on)
{
    __atomic_store_n(&f->c->stall, on, __ATOMIC_RELEASE);
}

int tfault_wait_stalled(struct tfault *f, unsigned ms)
{
    for (unsigned waited = 0; waited <= ms; waited += 5) {
        if (__atomic_load_n(&f->c->stalled, __ATOMIC_ACQUIRE) > 0)
            return 1;
        tsleep_ms(5);
    }
    return 0;
}

void tfault_asan_to_files(struct tfault *f)
{
    const char *cur = getenv("ASAN_OPTIONS");
    char opts[1600];
    snprintf(opts, sizeof opts, "%s:log_path=%s/asan:exitcode=0", cur != NULL ? cur : "", f->dir);
    setenv("ASAN_OPTIONS", opts, 1);
}

char *tfault_asan_reports(struct tfault *f)
{
    size_t cap = 1, len = 0;
    char *out = calloc(1, cap);
    DIR *dir = opendir(f->dir);
    struct dirent *e;
    while (out != NULL && dir != NULL && (e = readdir(dir)) != NULL) {
        if (strncmp(e->d_name, "asan.", 5) != 0)
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
        FILE *in = fopen(path, "r");
        if (in == NULL)
            continue;
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
            char *grown = realloc(out, cap + n);
            if (grown == NULL)
                break;
            out = grown;
            memcpy(out + len, chunk, n);
            len += n;
            cap += n;
            out[len] = '\0';
        }
        (void)fclose(in);
    }
    if (dir != NULL)
        closedir(dir);
    return out;
}

/* Copy src over dst (truncated to src's length). 0 or −1. */
static int copy_over(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = out < 0 ? -1 : 0;
    char buf[65536];
    ssize_t n;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    close(in);
    if (out >= 0 && close(out) != 0)
        rc = -1;
    return rc;
}

void tfault_powercut(struct tfault *f, struct tdaemon *d)
{
    /* Nothing runs in the daemon after this: its page cache is gone. */
    if (tdaemon_running(d))
        assert_int_equal(tdaemon_kill(d), 0);
    if (getenv("FAULTFS_DEBUG") != NULL) {
        char cmd[800];
        snprintf(cmd, sizeof cmd, "ls -la %s >&2", tdaemon_dir(d));
        (void)!system(cmd);
    }
    static const char *const sfx[] = {"", "-wal", "-journal"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        char path[700], durable[720];
        snprintf(path, sizeof path, "%s%s", f->db, sfx[i]);
        snprintf(durable, sizeof durable, "%s%s", path, FAULT_DURABLE_SUFFIX);
        if (access(durable, F_OK) == 0) {
            if (copy_over(durable, path) != 0)
                fail_msg("power cut: cannot restore %s: %s", path, strerror(errno));
        } else if (unlink(path) != 0 && errno != ENOENT) {
            fail_msg("power cut: cannot remove %s: %s", path, strerror(errno));
        }
    }
}

int tdb_integrity(const char *path, char *msg, size_t len)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int ok = -1;
    snprintf(msg, len, "cannot open");
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        goto out;
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) {
        snprintf(msg, len, "%s", sqlite3_errmsg(db));
        goto out;
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        snprintf(msg, len, "%s", t ? t : "");
        ok = t != NULL && strcmp(t, "ok") == 0 ? 0 : -1;
    } else {
        snprintf(msg, len, "%s", sqlite3_errmsg(db));
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}
