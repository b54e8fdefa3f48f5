/*
 * faultfs.c — an LD_PRELOAD shim for the daemon's tests: a page cache that a
 * power cut can drop, I/O calls that fail on demand, and writes that stall.
 * SQLite's crash tests use a test VFS for this; a shim needs no change to
 * the store and sees exactly the calls the real unix VFS makes (open64,
 * pwrite64, fdatasync, ftruncate64, unlink, close in Debian's libsqlite3).
 *
 * Which files: FAULTFS_DB names the database; the shim watches it and its
 * -wal, -journal and -shm (the last for open faults only: the wal-index is
 * rebuilt after a crash, so its durability does not matter).
 *
 * The page cache (FAULT_PC_ON): a write goes to the real file as usual (the
 * real file is the page cache: every reader sees it) and its byte range is
 * remembered; fsync/fdatasync of a file copies its remembered ranges into
 * DB.durable (and -wal.durable…), which is thus what a disk would hold. At a
 * power cut the test kills the daemon and puts each file's durable copy in
 * its place (tests/support/faults.c). Assumptions, each the harsher or the
 * usual one: writes not yet synced are all lost (none reached the disk on
 * its own); a sync that fails loses the ranges it should have written, and
 * a later sync does not bring them back (Linux marks the pages clean after
 * a writeback error: PostgreSQL's fsync lesson); a new file exists on disk
 * from its first sync (SQLite syncs the directory then); an unlink is
 * durable at once. A file that existed before the daemon opened it without
 * a durable copy is taken as durable as it is.
 *
 * Faults and stalls are driven through the shared control block
 * (faultctl.h). The shim must not be built with a sanitizer: it is loaded
 * before ASan's runtime (ASAN_OPTIONS=verify_asan_link_order=0) and calls on
 * through it with dlsym(RTLD_NEXT).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "tests/shim/faultctl.h"

#define FD_MAX 65536
#define RANGES_MAX 8192 /* beyond, a file's ranges merge into one */
#define COPY_CHUNK 65536

enum kind { K_DB, K_WAL, K_JOURNAL, K_SHM, K_N };
static const char *const suffix[K_N] = {"", "-wal", "-journal", "-shm"};

struct range {
    int64_t off, end;
};

/* One watched file (by name: every descriptor of it shares the state, as
 * the kernel's page cache is per inode). */
struct ffile {
    char path[1024];
    char durable[1040];
    int seen;         /* opened once in this process */
    int64_t trunc_at; /* smallest size set by ftruncate since the last sync, −1 none */
    struct range *r;  /* written since the last sync */
    size_t n, cap;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fault_ctl *g_ctl;
static int g_active; /* FAULTFS_DB set */
static struct ffile g_files[K_N];
static signed char g_fd_kind[FD_MAX]; /* kind + 1; 0: not watched */

static int (*r_open)(const char *, int, ...);
static int (*r_open64)(const char *, int, ...);
static int (*r_openat)(int, const char *, int, ...);
static int (*r_openat64)(int, const char *, int, ...);
static ssize_t (*r_write)(int, const void *, size_t);
static ssize_t (*r_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*r_pwrite64)(int, const void *, size_t, off_t);
static int (*r_fsync)(int);
static int (*r_fdatasync)(int);
static int (*r_ftruncate)(int, off_t);
static int (*r_ftruncate64)(int, off_t);
static int (*r_close)(int);
static int (*r_unlink)(const char *);

#define RESOLVE(name) (*(void **)(&r_##name) = dlsym(RTLD_NEXT, #name))

static void init(void)
{
    RESOLVE(open);
    RESOLVE(open64);
    RESOLVE(openat);
    RESOLVE(openat64);
    RESOLVE(write);
    RESOLVE(pwrite);
    RESOLVE(pwrite64);
    RESOLVE(fsync);
    RESOLVE(fdatasync);
    RESOLVE(ftruncate);
    RESOLVE(ftruncate64);
    RESOLVE(close);
    RESOLVE(unlink);
    const char *db = getenv(FAULT_DB_ENV);
    const char *cp = getenv(FAULT_CTL_ENV);
    if (db == NULL || db[0] == '\0' || strlen(db) > 1000)
        return;
    for (int k = 0; k < K_N; k++) {
        snprintf(g_files[k].path, sizeof g_files[k].path, "%.1000s%s", db, suffix[k]);
        snprintf(g_files[k].durable, sizeof g_files[k].durable, "%.1016s%s", g_files[k].path,
                 FAULT_DURABLE_SUFFIX);
        g_files[k].trunc_at = -1;
    }
    if (cp != NULL && cp[0] != '\0') {
        int fd = r_open(cp, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            void *m = mmap(NULL, sizeof *g_ctl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            r_close(fd);
            if (m != MAP_FAILED && ((struct fault_ctl *)m)->magic == FAULT_CTL_MAGIC)
                g_ctl = m;
        }
    }
    g_active = 1;
}

static void ensure(void)
{
    pthread_once(&g_once, init);
}

static int kind_of_path(const char *path)
{
    if (!g_active || path == NULL)
        return -1;
    for (int k = 0; k < K_N; k++)
        if (strcmp(path, g_files[k].path) == 0)
            return k;
    return -1;
}

static int kind_of_fd(int fd)
{
    if (!g_active || fd < 0 || fd >= FD_MAX)
        return -1;
    return __atomic_load_n(&g_fd_kind[fd], __ATOMIC_ACQUIRE) - 1;
}

static int pagecache(void)
{
    return g_ctl != NULL && (__atomic_load_n(&g_ctl->pagecache, __ATOMIC_ACQUIRE) & FAULT_PC_ON);
}

/* Count a call of op on file k; 1 when it is the one to fail (errno set). */
static int fault(unsigned op, int k)
{
    struct fault_ctl *c = g_ctl;
    if (c == NULL || !__atomic_load_n(&c->armed, __ATOMIC_ACQUIRE) ||
        !(__atomic_load_n(&c->ops, __ATOMIC_ACQUIRE) & op))
        return 0;
    unsigned kinds = __atomic_load_n(&c->kinds, __ATOMIC_ACQUIRE);
    if (kinds != 0 && !(kinds & (1u << k)))
        return 0;
    int64_t n = __atomic_add_fetch(&c->count, 1, __ATOMIC_ACQ_REL);
    if (n != __atomic_load_n(&c->target, __ATOMIC_ACQUIRE))
        return 0;
    __atomic_store_n(&c->hit_op, (int32_t)op, __ATOMIC_RELEASE);
    __atomic_store_n(&c->hit, n, __ATOMIC_RELEASE);
    if (__atomic_load_n(&c->die, __ATOMIC_ACQUIRE))
        _exit(70); /* a daemon that stops at the first I/O error (PostgreSQL's PANIC) */
    errno = __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
    return 1;
}

/* Block while the test holds writes (a paused writer, seen from outside). */
static void stall(void)
{
    struct fault_ctl *c = g_ctl;
    if (c == NULL || !__atomic_load_n(&c->stall, __ATOMIC_ACQUIRE))
        return;
    __atomic_add_fetch(&c->stalled, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&c->stall, __ATOMIC_ACQUIRE)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    __atomic_sub_fetch(&c->stalled, 1, __ATOMIC_ACQ_REL);
}

/* Copy the whole of src (a path) into dst (created); 0 or −1. */
static int copy_file(const char *src, const char *dst)
{
    int in = r_open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = r_open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = out < 0 ? -1 : 0;
    char buf[COPY_CHUNK];
    ssize_t n;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (r_write(out, buf, (size_t)n) != n)
            rc = -1;
    r_close(in);
    if (out >= 0)
        r_close(out);
    return rc;
}

/* First open of a watched file in this process: one that exists without a
 * durable copy is durable as it is (it predates the daemon). Under g_mu. */
static void first_open(int k)
{
    struct ffile *f = &g_files[k];
    if (f->seen || k == K_SHM || !pagecache())
        return;
    f->seen = 1;
    struct stat st;
    if (stat(f->durable, &st) != 0 && stat(f->path, &st) == 0)
        (void)copy_file(f->path, f->durable);
}

static void add_range(int k, int64_t off, int64_t len)
{
    if (k == K_SHM || len <= 0 || !pagecache())
        return;
    struct ffile *f = &g_files[k];
    pthread_mutex_lock(&g_mu);
    if (f->n > 0 && f->r[f->n - 1].end == off) {
        f->r[f->n - 1].end = off + len; /* sequential: extend */
    } else if (f->n >= RANGES_MAX) {
        struct range all = {off, off + len};
        for (size_t i = 0; i < f->n; i++) {
            all.off = f->r[i].off < all.off ? f->r[i].off : all.off;
            all.end = f->r[i].end > all.end ? f->r[i].end : all.end;
        }
        f->r[0] = all;
        f->n = 1;
    } else {
        if (f->n == f->cap) {
            size_t ncap = f->cap ? f->cap * 2 : 64;
            struct range *nr = realloc(f->r, ncap * sizeof *nr);
            if (nr == NULL) {
                pthread_mutex_unlock(&g_mu);
                return;
            }
            f->r = nr;
            f->cap = ncap;
        }
        f->r[f->n].off = off;
        f->r[f->n].end = off + len;
        f->n++;
    }
    pthread_mutex_unlock(&g_mu);
}

/* A sync of fd (file k) succeeded: what was written since the last one is
 * durable now. */
static void make_durable(int k, int fd)
{
    struct ffile *f = &g_files[k];
    pthread_mutex_lock(&g_mu);
    struct stat st;
    int out = -1;
    if (fstat(fd, &st) != 0)
        goto out;
    out = r_open(f->durable, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (out < 0)
        goto out;
    if (f->trunc_at >= 0 && r_ftruncate(out, (off_t)f->trunc_at) != 0)
        goto out;
    char buf[COPY_CHUNK];
    for (size_t i = 0; i < f->n; i++) {
        for (int64_t o = f->r[i].off; o < f->r[i].end && o < st.st_size;) {
            size_t want = (size_t)(f->r[i].end - o);
            if (want > sizeof buf)
                want = sizeof buf;
            ssize_t got = pread(fd, buf, want, (off_t)o);
            if (got <= 0)
                break;
            if (r_pwrite(out, buf, (size_t)got, (off_t)o) != got)
                goto out;
            o += got;
        }
    }
    if (r_ftruncate(out, st.st_size) != 0)
        goto out;
    f->n = 0;
    f->trunc_at = -1;
    if (g_ctl != NULL)
        __atomic_add_fetch(&g_ctl->syncs, 1, __ATOMIC_ACQ_REL);
out:
    if (out >= 0)
        r_close(out);
    pthread_mutex_unlock(&g_mu);
}

/* A sync failed: the kernel marks the pages clean; their data never reaches
 * the disk unless written again. */
static void drop_ranges(int k)
{
    struct ffile *f = &g_files[k];
    pthread_mutex_lock(&g_mu);
    if (g_ctl != NULL)
        __atomic_add_fetch(&g_ctl->dropped, (int64_t)f->n, __ATOMIC_ACQ_REL);
    f->n = 0;
    pthread_mutex_unlock(&g_mu);
}

static int after_open(int fd, int k)
{
    if (fd >= 0 && fd < FD_MAX && k >= 0) {
        pthread_mutex_lock(&g_mu);
        first_open(k);
        pthread_mutex_unlock(&g_mu);
        __atomic_store_n(&g_fd_kind[fd], (signed char)(k + 1), __ATOMIC_RELEASE);
    }
    return fd;
}

/* --- open ------------------------------------------------------------------ */

static mode_t open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    ensure();
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    int k = kind_of_path(path);
    if (k >= 0 && fault(FAULT_OP_OPEN, k))
        return -1;
    return after_open(r_open(path, flags, mode), k);
}

int open64(const char *path, int flags, ...)
{
    ensure();
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    int k = kind_of_path(path);
    if (k >= 0 && fault(FAULT_OP_OPEN, k))
        return -1;
    return after_open((r_open64 ? r_open64 : r_open)(path, flags, mode), k);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    ensure();
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    int k = kind_of_path(path);
    if (k >= 0 && fault(FAULT_OP_OPEN, k))
        return -1;
    return after_open(r_openat(dirfd, path, flags, mode), k);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    ensure();
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    int k = kind_of_path(path);
    if (k >= 0 && fault(FAULT_OP_OPEN, k))
        return -1;
    return after_open((r_openat64 ? r_openat64 : r_openat)(dirfd, path, flags, mode), k);
}

int close(int fd)
{
    ensure();
    if (fd >= 0 && fd < FD_MAX)
        __atomic_store_n(&g_fd_kind[fd], 0, __ATOMIC_RELEASE);
    return r_close(fd);
}

int unlink(const char *path)
{
    ensure();
    int k = kind_of_path(path);
    int rc = r_unlink(path);
    if (rc == 0 && k >= 0 && k != K_SHM && pagecache()) {
        pthread_mutex_lock(&g_mu);
        g_files[k].n = 0;
        g_files[k].trunc_at = -1;
        (void)r_unlink(g_files[k].durable);
        pthread_mutex_unlock(&g_mu);
    }
    return rc;
}

/* --- writes ---------------------------------------------------------------- */

ssize_t write(int fd, const void *buf, size_t n)
{
    ensure();
    int k = kind_of_fd(fd);
    if (k < 0 || k == K_SHM)
        return r_write(fd, buf, n);
    stall();
    if (fault(FAULT_OP_WRITE, k))
        return -1;
    off_t at = lseek(fd, 0, SEEK_CUR);
    ssize_t rc = r_write(fd, buf, n);
    if (rc > 0 && at >= 0)
        add_range(k, (int64_t)at, (int64_t)rc);
    return rc;
}

static ssize_t do_pwrite(ssize_t (*real)(int, const void *, size_t, off_t), int fd, const void *buf,
                         size_t n, off_t off)
{
    int k = kind_of_fd(fd);
    if (k < 0 || k == K_SHM)
        return real(fd, buf, n, off);
    stall();
    if (fault(FAULT_OP_WRITE, k))
        return -1;
    ssize_t rc = real(fd, buf, n, off);
    if (rc > 0)
        add_range(k, (int64_t)off, (int64_t)rc);
    return rc;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    ensure();
    return do_pwrite(r_pwrite, fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    ensure();
    return do_pwrite(r_pwrite64 ? r_pwrite64 : r_pwrite, fd, buf, n, off);
}

static int do_truncate(int (*real)(int, off_t), int fd, off_t len)
{
    int k = kind_of_fd(fd);
    if (k < 0 || k == K_SHM)
        return real(fd, len);
    stall();
    if (fault(FAULT_OP_TRUNC, k))
        return -1;
    int rc = real(fd, len);
    if (rc == 0 && pagecache()) {
        pthread_mutex_lock(&g_mu);
        struct ffile *f = &g_files[k];
        if (f->trunc_at < 0 || (int64_t)len < f->trunc_at)
            f->trunc_at = (int64_t)len;
        pthread_mutex_unlock(&g_mu);
    }
    return rc;
}

int ftruncate(int fd, off_t len)
{
    ensure();
    return do_truncate(r_ftruncate, fd, len);
}

int ftruncate64(int fd, off_t len)
{
    ensure();
    return do_truncate(r_ftruncate64 ? r_ftruncate64 : r_ftruncate, fd, len);
}

/* --- syncs ----------------------------------------------------------------- */

static int do_sync(int (*real)(int), int fd)
{
    int k = kind_of_fd(fd);
    if (k < 0 || k == K_SHM)
        return real(fd);
    stall();
    if (fault(FAULT_OP_SYNC, k)) {
        int e = errno;
        if (pagecache() &&
            !(__atomic_load_n(&g_ctl->pagecache, __ATOMIC_ACQUIRE) & FAULT_PC_KEEP_FAILED))
            drop_ranges(k);
        errno = e;
        return -1;
    }
    if (!pagecache())
        return real(fd);
    if (__atomic_load_n(&g_ctl->pagecache, __ATOMIC_ACQUIRE) & FAULT_PC_REAL_SYNC) {
        int rc = real(fd);
        if (rc != 0)
            return rc;
    }
    make_durable(k, fd);
    return 0;
}

int fsync(int fd)
{
    ensure();
    return do_sync(r_fsync, fd);
}

int fdatasync(int fd)
{
    ensure();
    return do_sync(r_fdatasync, fd);
}
