/*
 * faultctl.h — the control block shared by the fault-injection shims
 * (tests/shim/faultfs.c, tests/shim/faultmem.c, both LD_PRELOADed into the
 * daemon) and the tests that drive them (tests/support/faults.h).
 *
 * The block lives in a small file (FAULT_CTL_ENV names it) that the test
 * creates and both processes map MAP_SHARED: the test arms a fault, sends a
 * request, disarms and reads what the shim did, without any signal or pipe
 * between them. Every field is read and written with __atomic builtins
 * (two processes, several threads in the daemon).
 *
 * Counting: while `armed` is set, each call the shim watches (I/O calls on
 * the database's files whose op is in `ops`; for faultmem, every
 * malloc/calloc/realloc) increments `count`; the call that makes `count`
 * equal to `target` fails (errno `err`, or NULL) instead of running, and
 * `hit` records that count. One fault per arming: a later call runs.
 */
#ifndef BANDITD_TESTS_SHIM_FAULTCTL_H
#define BANDITD_TESTS_SHIM_FAULTCTL_H

#include <stdint.h>

#define FAULT_CTL_ENV "FAULTFS_CTL" /* path of the control file */
#define FAULT_DB_ENV "FAULTFS_DB"   /* the database path: it, -wal, -journal, -shm watched */
#define FAULT_DURABLE_SUFFIX ".durable"

/* Calls faultfs counts and can fail (ops mask). */
enum {
    FAULT_OP_OPEN = 1u << 0,  /* open, open64, openat, openat64 */
    FAULT_OP_WRITE = 1u << 1, /* write, pwrite, pwrite64 */
    FAULT_OP_SYNC = 1u << 2,  /* fsync, fdatasync */
    FAULT_OP_TRUNC = 1u << 3, /* ftruncate, ftruncate64 */
};

/* Which files faultfs counts (kinds mask; 0: all of them). */
enum {
    FAULT_FILE_DB = 1u << 0,
    FAULT_FILE_WAL = 1u << 1,
    FAULT_FILE_JOURNAL = 1u << 2,
    FAULT_FILE_SHM = 1u << 3,
};

/* pagecache flags (faultfs): emulate a page cache that a power cut drops. */
enum {
    FAULT_PC_ON = 1u << 0,          /* keep DB.durable copies: a sync makes writes durable */
    FAULT_PC_REAL_SYNC = 1u << 1,   /* also call the real fsync (default: skipped, faster) */
    FAULT_PC_KEEP_FAILED = 1u << 2, /* a failed sync keeps its writes pending (not Linux) */
};

struct fault_ctl {
    uint32_t magic;
    uint32_t pagecache; /* FAULT_PC_*: read once when a file is first opened */
    /* I/O faults (faultfs) */
    int32_t armed;
    uint32_t ops;    /* FAULT_OP_* counted while armed */
    uint32_t kinds;  /* FAULT_FILE_* counted (0: every file) */
    uint32_t die;    /* non-zero: the process exits (_exit(70)) right after the failed call */
    int64_t target;  /* fail the call whose count reaches this (≤ 0: none) */
    int32_t err;     /* errno of the failed call */
    int32_t hit_op;  /* FAULT_OP_* of the failed call */
    int64_t count;   /* calls counted since armed */
    int64_t hit;     /* count of the failed call, 0 if none */
    int32_t stall;   /* non-zero: writes and syncs of the database block meanwhile */
    int32_t stalled; /* calls blocked by stall right now */
    int64_t syncs;   /* syncs of the database's files (all time) */
    int64_t dropped; /* ranges dropped by a failed sync (never durable) */
    /* allocation faults (faultmem) */
    int32_t m_armed;
    int32_t m_pad;
    int64_t m_target;
    int64_t m_count;
    int64_t m_hit;
    char m_where[64]; /* the object that called the failed allocation (dladdr) */
};

/* Set by the test last; a shim built from another version of this header
 * (another size) ignores the block rather than misread it. */
#define FAULT_CTL_MAGIC ((uint32_t)(0x66740000u + sizeof(struct fault_ctl)))

#endif
