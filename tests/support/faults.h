/*
 * faults.h — the test side of the fault-injection shims (tests/shim/):
 * power cuts, failing I/O calls, failing allocations and stalled writes in
 * the real daemon, driven from a black-box test (STYLE §15).
 *
 *   struct tdaemon *d = tdaemon_new();
 *   struct tfault *f = tfault_attach(d, TFAULT_FS, TFAULT_PAGECACHE);
 *   tdaemon_up(d, (const char *[]){"--sync", "full", NULL}, 0);
 *   ... load ...
 *   tfault_powercut(f, d);          // SIGKILL, files back to what was synced
 *   tdaemon_up(d, ...);             // restart on the durable state
 *   tfault_arm(f, FAULT_OP_SYNC, 1, EIO);   // the next fsync fails
 *   ... one request ...
 *   int64_t hit = tfault_disarm(f); // 1 if it did
 *   tfault_detach(f);               // before tdaemon_free
 *
 * - tfault_attach makes the control file in the daemon's directory and sets
 *   the environment the next launches inherit: LD_PRELOAD (the shims, found
 *   next to the test binary: build/…/tests/shim/, or in
 *   $BANDITD_SHIM_DIR), FAULTFS_CTL, FAULTFS_DB, and ASAN_OPTIONS with
 *   verify_asan_link_order=0 (the shim is loaded before ASan's runtime).
 *   tfault_detach undoes the environment and unmaps. One attachment at a
 *   time per test process.
 * - With TFAULT_PAGECACHE the daemon's database writes are durable only once
 *   synced (faultfs.c says what is assumed); tfault_powercut kills the
 *   daemon and puts the durable state in place of the files.
 * - Arming counts the calls of `ops` (FAULT_OP_*) on the database's files
 *   from now on and fails the target-th with errno err, once; disarm stops
 *   counting and returns the count of the failed call (0: none was failed,
 *   i.e. the request ran to its end in fewer calls). tfault_marm and
 *   tfault_mdisarm do the same for allocations (TFAULT_MEM).
 * - tfault_stall(f, 1) blocks every write and sync of the database inside
 *   the daemon (the writer thread stops mid-commit, readers go on) until
 *   tfault_stall(f, 0); tfault_wait_stalled waits until some call is
 *   blocked.
 *
 * Known bugs: tknown_bug(fmt, ...) marks a defect that a test found and
 * that is not fixed yet: the test is skipped with "KNOWN BUG: ..." on the
 * TAP line (run.sh counts it as skipped), unless BANDITD_STRICT=1, where it
 * fails. Fix the bug, then remove the call.
 */
#ifndef BANDITD_TESTS_SUPPORT_FAULTS_H
#define BANDITD_TESTS_SUPPORT_FAULTS_H

#include <stdint.h>

#include "tests/shim/faultctl.h"
#include "tests/support/harness.h"

enum { TFAULT_FS = 1u << 0, TFAULT_MEM = 1u << 1 };
enum { TFAULT_PAGECACHE = 1u << 0 };

struct tfault;

/* Attach to d (not running yet); fails the test if the shims are missing. */
struct tfault *tfault_attach(struct tdaemon *d, unsigned shims, unsigned flags);
void tfault_detach(struct tfault *f);
/* The shared block (counters the shims keep: syncs, dropped…). */
struct fault_ctl *tfault_ctl(struct tfault *f);

void tfault_arm(struct tfault *f, unsigned ops, int64_t target, int err);
/* Count only calls on these files (FAULT_FILE_*; 0, the default: all) from
 * the next arming on. */
void tfault_only_files(struct tfault *f, unsigned kinds);
/* The count of the failed call so far, without disarming (0: none yet). */
int64_t tfault_hit(struct tfault *f);
int64_t tfault_disarm(struct tfault *f);
/* The op that failed at the last arming (FAULT_OP_*), 0 if none. */
unsigned tfault_hit_op(struct tfault *f);
/* Calls counted at the last arming so far. */
int64_t tfault_count(struct tfault *f);

void tfault_marm(struct tfault *f, int64_t target);
int64_t tfault_mdisarm(struct tfault *f);
int64_t tfault_mcount(struct tfault *f);
/* The file name of the object (program or library) whose allocation was
 * failed at the last arming, "" if none. */
const char *tfault_mwhere(struct tfault *f);

void tfault_stall(struct tfault *f, int on);
/* Wait up to ms for a stalled call: 1 if one is blocked, 0 otherwise. */
int tfault_wait_stalled(struct tfault *f, unsigned ms);

/* Sanitizer reports of the daemons launched from now on go to files
 * DIR/asan.PID instead of their stderr, and no longer change their exit
 * status: a suite that expects reports (leaks on paths a fault opened)
 * reads them with tfault_asan_reports and decides. */
void tfault_asan_to_files(struct tfault *f);
/* Every report so far, concatenated (new; free it), "" if none. */
char *tfault_asan_reports(struct tfault *f);

/* SIGKILL d and replace its database files by their durable copies (a file
 * never synced disappears). The daemon is not restarted. */
void tfault_powercut(struct tfault *f, struct tdaemon *d);

/* PRAGMA integrity_check on the database at path, read-only: 0 when "ok"
 * (the first problem, if any, goes to msg). */
int tdb_integrity(const char *path, char *msg, size_t len);

/* 1 when BANDITD_STRICT=1: known bugs fail instead of skipping. */
int tstrict(void);
#define tknown_bug(...)                                                                            \
    do {                                                                                           \
        if (tstrict())                                                                             \
            fail_msg("KNOWN BUG " __VA_ARGS__);                                                    \
        print_message("# KNOWN BUG " __VA_ARGS__);                                                 \
        print_message("\n");                                                                       \
        skip();                                                                                    \
    } while (0)

#endif
