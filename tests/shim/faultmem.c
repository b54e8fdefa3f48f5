/*
 * faultmem.c — an LD_PRELOAD shim that fails the Nth allocation of a window
 * the test opens (SQLite's DO_OS_MALLOC_TEST and curl's `runtests -t`, from
 * outside the daemon). While the control block's m_armed is set, every
 * malloc, calloc, realloc (with a size), posix_memalign and aligned_alloc
 * counts (glibc's strdup and the like allocate through malloc; ASan's own
 * strdup interceptor does not, so under ASan it is not counted); the one that makes m_count equal
 * m_target returns NULL with errno ENOMEM, once. Everything else goes on to the allocator next in
 * line — ASan's when the daemon is the sanitizer build (load this shim first:
 * ASAN_OPTIONS=verify_asan_link_order=0), glibc's otherwise.
 *
 * dlsym itself may allocate before the real functions are known: those few
 * bytes come from a static arena and are never freed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/shim/faultctl.h"

static void *(*r_malloc)(size_t);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void (*r_free)(void *);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);

static struct fault_ctl *g_ctl;
static int g_state; /* 0 unresolved, 1 resolving, 2 ready */

/* Allocations made while dlsym resolves the real functions. */
static _Alignas(max_align_t) unsigned char g_arena[8192];
static size_t g_arena_used;

static void *arena_alloc(size_t n)
{
    size_t a = (n + 15u) & ~(size_t)15u;
    size_t at = __atomic_fetch_add(&g_arena_used, a, __ATOMIC_ACQ_REL);
    if (a > sizeof g_arena || at > sizeof g_arena - a)
        return NULL;
    return g_arena + at;
}

static int in_arena(const void *p)
{
    return (const unsigned char *)p >= g_arena &&
           (const unsigned char *)p < g_arena + sizeof g_arena;
}

#define RESOLVE(name) (*(void **)(&r_##name) = dlsym(RTLD_NEXT, #name))

static void resolve(void)
{
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == 2)
        return;
    int expect = 0;
    if (!__atomic_compare_exchange_n(&g_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* being resolved (dlsym allocating, on this thread): the arena serves */
    RESOLVE(malloc);
    RESOLVE(calloc);
    RESOLVE(realloc);
    RESOLVE(free);
    RESOLVE(posix_memalign);
    RESOLVE(aligned_alloc);
    __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
}

/* Map the control block. Raw system calls: the first allocation can come
 * while ASan initialises, before its open and mmap interceptors work. */
static struct fault_ctl *ctl(void)
{
    static int tried, looked;
    if (g_ctl != NULL || __atomic_load_n(&tried, __ATOMIC_ACQUIRE))
        return g_ctl;
    /* Under ASan the first allocations come before the environment is set
     * up: look again, a bounded number of times. */
    const char *cp = getenv(FAULT_CTL_ENV);
    if (cp == NULL || cp[0] == '\0') {
        if (__atomic_add_fetch(&looked, 1, __ATOMIC_ACQ_REL) > 100000)
            __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    if (__atomic_exchange_n(&tried, 1, __ATOMIC_ACQ_REL))
        return g_ctl;
    long fd = syscall(SYS_openat, AT_FDCWD, cp, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    long m = syscall(SYS_mmap, NULL, sizeof *g_ctl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    syscall(SYS_close, fd);
    if (m != -1 && ((struct fault_ctl *)m)->magic == FAULT_CTL_MAGIC)
        __atomic_store_n(&g_ctl, (struct fault_ctl *)m, __ATOMIC_RELEASE);
    return g_ctl;
}

/* Where the failed allocation was called from: the object's file name. */
static void note_caller(struct fault_ctl *c, const void *ret)
{
    Dl_info info;
    const char *name = "?";
    if (ret != NULL && dladdr(ret, &info) != 0 && info.dli_fname != NULL) {
        const char *slash = strrchr(info.dli_fname, '/');
        name = slash != NULL ? slash + 1 : info.dli_fname;
    }
    size_t n = strlen(name);
    if (n >= sizeof c->m_where)
        n = sizeof c->m_where - 1;
    memcpy(c->m_where, name, n);
    c->m_where[n] = '\0';
}

/* 1 when this allocation is the one to fail (ret: the caller's address). */
static int fault_at(const void *ret)
{
    struct fault_ctl *c = ctl();
    if (c == NULL || !__atomic_load_n(&c->m_armed, __ATOMIC_ACQUIRE))
        return 0;
    int64_t n = __atomic_add_fetch(&c->m_count, 1, __ATOMIC_ACQ_REL);
    if (n != __atomic_load_n(&c->m_target, __ATOMIC_ACQUIRE))
        return 0;
    note_caller(c, ret);
    __atomic_store_n(&c->m_hit, n, __ATOMIC_RELEASE);
    errno = ENOMEM;
    return 1;
}

#define fault() fault_at(__builtin_return_address(0))

void *malloc(size_t n)
{
    resolve();
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2)
        return arena_alloc(n);
    return fault() ? NULL : r_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    resolve();
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) {
        if (size != 0 && n > SIZE_MAX / size)
            return NULL;
        return arena_alloc(n * size); /* static: already zero */
    }
    return fault() ? NULL : r_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    resolve();
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2 || in_arena(p)) {
        void *q = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == 2 ? r_malloc(n) : arena_alloc(n);
        if (q != NULL && p != NULL)
            memcpy(q, p, n); /* the arena is larger than any block in it */
        return q;
    }
    if (n != 0 && fault())
        return NULL;
    return r_realloc(p, n);
}

void free(void *p)
{
    if (p == NULL || in_arena(p))
        return;
    resolve();
    r_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    resolve();
    if (fault())
        return ENOMEM;
    return r_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    resolve();
    return fault() ? NULL : r_aligned_alloc(align, n);
}
