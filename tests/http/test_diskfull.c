/*
 * test_diskfull.c — storage trouble (issue 5): a full disk or a failing
 * commit answers 503 with problem+json and records nothing, reads keep
 * being served with exactly what was acknowledged (nothing half-applied in
 * memory), and writes recover when space returns. A database locked by
 * another process is waited for, never a 500.
 *
 *   - injected: BANDITD_STORE_FAIL_COMMITS=K+N makes commits K+1…K+N fail
 *     as if the disk were full (store_test.h);
 *   - real: the database on a 16 MiB tmpfs, filled with a file until
 *     writes fail, then the file removed (needs root to mount; without it
 *     the test says so and checks nothing else). 16 MiB, not less: the
 *     WAL is checkpointed when it reaches 1000 pages (4 MiB), and the
 *     database must be able to grow then;
 *   - busy: another connection holds the write lock for a while.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/support/harness.h"

#define EXP "/v1/experiments/disk"

/* What the clients were told was recorded. */
struct acked {
    long pulls[2];
    long sum[2];
};

static void create(struct tdaemon *d)
{
    json_decref(texp_create(d, "{\"id\":\"disk\",\"policy\":{\"name\":\"uniform\"},"
                               "\"goal\":{\"budget\":100000},\"arms\":[\"a\",\"b\"],\"seed\":3}"));
}

/* One assignment: 201 and its id/arm, or the status. */
static long assign(struct tdaemon *d, char *id, size_t idlen, int *arm)
{
    struct tresp *r = treq(d, "POST", EXP "/assignments", "{}", NULL);
    long st = r->status;
    if (st == 201) {
        snprintf(id, idlen, "%s", tjson_str(r->json, "assignments[0].id"));
        *arm = (int)tjson_int(r->json, "assignments[0].arm_index");
    } else {
        assert_problem(r, 503);
        printf("# assignment: %ld %s\n", st, tjson_str(r->json, "detail"));
    }
    tresp_free(r);
    return st;
}

/* One reward: 200 (with the item's status name copied to out) or 503. */
static long reward(struct tdaemon *d, const char *id, int value, char *out, size_t outlen)
{
    struct tresp *r =
        treqf(d, "POST", EXP "/rewards", "{\"assignment_id\":\"%s\",\"reward\":%d}", id, value);
    long st = r->status;
    if (st == 200)
        snprintf(out, outlen, "%s", tjson_str(r->json, "results[0].status"));
    else
        assert_problem(r, 503);
    if (st != 200)
        printf("# reward: %ld %s\n", st, tjson_str(r->json, "detail"));
    tresp_free(r);
    return st;
}

static void ack(struct acked *a, int arm, int value)
{
    a->pulls[arm]++;
    a->sum[arm] += value;
}

/* status (must be 200) shows exactly the acknowledged rewards. */
static void check_stats(struct tdaemon *d, const struct acked *a)
{
    json_t *st = texp_status(d, "disk");
    for (int arm = 0; arm < 2; arm++) {
        char path[64];
        snprintf(path, sizeof path, "bandits[0].arms[%d].pulls", arm);
        long got = (long)tjson_int(st, path);
        if (got != a->pulls[arm])
            fail_msg("arm %d: %ld pulls in status, %ld acknowledged", arm, got, a->pulls[arm]);
        if (a->pulls[arm] > 0) {
            snprintf(path, sizeof path, "bandits[0].arms[%d].mean", arm);
            double want = (double)a->sum[arm] / (double)a->pulls[arm];
            if (fabs(tjson_num(st, path) - want) > 1e-12)
                fail_msg("arm %d: mean %g in status, %g acknowledged", arm, tjson_num(st, path),
                         want);
        }
    }
    json_decref(st);
}

/* --- injected failures ------------------------------------------------------ */

/* A test's daemon lives in *state so that a failed assertion does not leave
 * it running. */
static int teardown(void **state)
{
    tdaemon_free(*state);
    *state = NULL;
    return 0;
}

static void test_injected_commit_failures(void **state)
{
    /* Commits: 1 create, 5 × (assign, reward), 2 assignments kept for
     * later = 13 that succeed; the next 4 fail. Requests are sequential,
     * so each write is one commit. */
    setenv("BANDITD_STORE_FAIL_COMMITS", "13+4", 1);
    struct tdaemon *d = *state = tdaemon_start(NULL);
    unsetenv("BANDITD_STORE_FAIL_COMMITS");
    assert_non_null(d);
    struct acked a = {{0}, {0}};
    char id[64], kept[2][64], st[32];
    int arm, kept_arm[2];
    create(d);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(assign(d, id, sizeof id, &arm), 201);
        assert_int_equal(reward(d, id, i % 2, st, sizeof st), 200);
        assert_string_equal(st, "accepted");
        ack(&a, arm, i % 2);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(assign(d, kept[i], sizeof kept[i], &kept_arm[i]), 201);
    check_stats(d, &a);

    /* four failing commits: every kind of write answers 503 */
    assert_int_equal(reward(d, kept[0], 1, st, sizeof st), 503);
    check_stats(d, &a); /* reads served, the failed reward not in memory */
    assert_int_equal(reward(d, kept[0], 1, st, sizeof st), 503);
    assert_int_equal(assign(d, id, sizeof id, &arm), 503);
    struct tresp *r = treq(d, "POST", EXP "/observations", "{\"arm\":\"a\",\"reward\":1}", NULL);
    assert_problem(r, 503);
    assert_non_null(tresp_header(r, "Retry-After"));
    tresp_free(r);
    check_stats(d, &a);

    /* recovered: the reward that failed twice is new, not a duplicate */
    assert_int_equal(reward(d, kept[0], 1, st, sizeof st), 200);
    assert_string_equal(st, "accepted");
    ack(&a, kept_arm[0], 1);
    assert_int_equal(reward(d, kept[1], 0, st, sizeof st), 200);
    assert_string_equal(st, "accepted");
    ack(&a, kept_arm[1], 0);
    assert_int_equal(reward(d, kept[0], 1, st, sizeof st), 200);
    assert_string_equal(st, "duplicate");
    check_stats(d, &a);

    /* and the disk agrees: restart, same figures */
    assert_int_equal(tdaemon_restart(d), 0);
    check_stats(d, &a);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* --- a real full disk ----------------------------------------------------------- */

struct fs {
    char dir[64];
    int mounted;
    struct tdaemon *d;
};

static int fs_setup(void **state)
{
    struct fs *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/banditd-full.XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    f->mounted = mount("tmpfs", f->dir, "tmpfs", 0, "size=16m") == 0;
    *state = f;
    return 0;
}

static int fs_teardown(void **state)
{
    struct fs *f = *state;
    tdaemon_free(f->d); /* removes its directory, on the tmpfs */
    if (f->mounted)
        umount2(f->dir, MNT_DETACH);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Fill the file system with path; returns the bytes written. */
static long fill(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    long total = 0;
    for (;;) {
        ssize_t n = write(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        total += n;
    }
    /* the last partial block too */
    while (write(fd, buf, 1) == 1)
        total++;
    close(fd);
    return total;
}

static void test_real_full_disk(void **state)
{
    struct fs *f = *state;
    if (!f->mounted) {
        printf("# cannot mount a tmpfs (%s): not root? real disk-full case not run\n",
               strerror(errno));
        return;
    }
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", f->dir, 1);
    f->d = tdaemon_start(NULL);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    assert_non_null(f->d);
    struct tdaemon *d = f->d;
    struct acked a = {{0}, {0}};
    char id[64], st[32], filler[128];
    int arm;
    create(d);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(assign(d, id, sizeof id, &arm), 201);
        assert_int_equal(reward(d, id, i % 3 == 0, st, sizeof st), 200);
        ack(&a, arm, i % 3 == 0);
    }
    snprintf(filler, sizeof filler, "%s/filler", f->dir);
    long filled = fill(filler);
    printf("# filled the tmpfs with %ld bytes\n", filled);

    /* Write until the disk says no (the WAL may still have room for a few). */
    long failures = 0, i;
    for (i = 0; i < 5000 && failures == 0; i++) {
        if (assign(d, id, sizeof id, &arm) != 201) {
            failures++;
            break;
        }
        int v = (int)(i % 2);
        if (reward(d, id, v, st, sizeof st) != 200) {
            failures++;
            break;
        }
        assert_string_equal(st, "accepted");
        ack(&a, arm, v);
    }
    printf("# first 503 after %ld more writes on the full disk\n", i);
    assert_int_equal(failures, 1);
    /* Not ready while writes fail: a load balancer takes the daemon out. */
    struct tresp *rz = treq(d, "GET", "/readyz", NULL, NULL);
    assert_problem(rz, 503);
    tresp_free(rz);
    check_stats(d, &a); /* reads served, nothing half-applied */
    for (int k = 0; k < 5; k++) {
        long s = assign(d, id, sizeof id, &arm);
        if (s == 201) {
            /* a commit may squeeze into a freed WAL frame: then reward it */
            if (reward(d, id, 1, st, sizeof st) == 200) {
                assert_string_equal(st, "accepted");
                ack(&a, arm, 1);
            }
        }
        check_stats(d, &a);
    }

    /* space returns: ready again without any write of a client (the
     * readiness check probes the disk), and writes succeed */
    assert_int_equal(unlink(filler), 0);
    long ready = 0;
    for (int k = 0; k < 100 && ready != 200; k++) {
        rz = treq(d, "GET", "/readyz", NULL, NULL);
        ready = rz->status;
        tresp_free(rz);
        if (ready != 200)
            tsleep_ms(100);
    }
    assert_int_equal(ready, 200);
    int recovered = 0;
    for (int k = 0; k < 10 && !recovered; k++) {
        if (assign(d, id, sizeof id, &arm) != 201)
            continue;
        assert_int_equal(reward(d, id, 1, st, sizeof st), 200);
        assert_string_equal(st, "accepted");
        ack(&a, arm, 1);
        recovered = 1;
    }
    assert_true(recovered);
    for (int k = 0; k < 20; k++) {
        assert_int_equal(assign(d, id, sizeof id, &arm), 201);
        assert_int_equal(reward(d, id, k % 2, st, sizeof st), 200);
        ack(&a, arm, k % 2);
    }
    check_stats(d, &a);
    assert_int_equal(tdaemon_restart(d), 0);
    check_stats(d, &a);
    assert_int_equal(tdaemon_stop(d), 0);
}

/* --- busy: another process holds the write lock ------------------------------------ */

struct late {
    struct tdaemon *d;
    const char *id;
    long status;
    char st[32];
};

static void *late_reward(void *arg)
{
    struct late *l = arg;
    struct tclient *c = tclient_new(l->d);
    char body[128];
    snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":1}", l->id);
    struct tresp *r = tclient_req(c, "POST", EXP "/rewards", body, NULL);
    l->status = r->status;
    if (r->status == 200)
        snprintf(l->st, sizeof l->st, "%s", tjson_str(r->json, "results[0].status"));
    tresp_free(r);
    tclient_free(c);
    return NULL;
}

struct reader {
    struct tdaemon *d;
    long status;
    long long pulls;
};

static void *read_status(void *arg)
{
    struct reader *rd = arg;
    struct tclient *c = tclient_new(rd->d);
    struct tresp *r = tclient_req(c, "GET", EXP "/status", NULL, NULL);
    rd->pulls = r->status == 200 ? tjson_int(r->json, "pulls") : -1;
    rd->status = r->status;
    tresp_free(r);
    tclient_free(c);
    return NULL;
}

static void test_busy_database_waited_for(void **state)
{
    struct tdaemon *d = *state = tdaemon_start(NULL);
    assert_non_null(d);
    struct acked a = {{0}, {0}};
    char id[64], st[32];
    int arm;
    create(d);
    assert_int_equal(assign(d, id, sizeof id, &arm), 201);

    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(tdaemon_db_path(d), &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    struct late l = {.d = d, .id = id};
    struct reader rd = {.d = d};
    pthread_t t, tr;
    assert_int_equal(pthread_create(&t, NULL, late_reward, &l), 0);
    struct timespec ts = {0, 400 * 1000000L};
    nanosleep(&ts, NULL);
    /* The reward is applied in memory and waits for its commit. A read of
     * the experiment shows it only once it is on disk: the status waits
     * too (a crash now would take the reward back). The daemon itself is
     * not blocked: health answers. */
    assert_int_equal(pthread_create(&tr, NULL, read_status, &rd), 0);
    nanosleep(&ts, NULL);
    struct tresp *h = treq(d, "GET", "/healthz", NULL, NULL);
    assert_int_equal(h->status, 200);
    tresp_free(h);
    assert_int_equal(l.status, 0);  /* the reward still waits for its commit */
    assert_int_equal(rd.status, 0); /* and so does the read that would show it */
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    pthread_join(t, NULL);
    pthread_join(tr, NULL);
    sqlite3_close(db);
    assert_int_equal(l.status, 200);
    assert_string_equal(l.st, "accepted");
    assert_int_equal(rd.status, 200);
    assert_int_equal(rd.pulls, 1);
    ack(&a, arm, 1);
    check_stats(d, &a);
    assert_int_equal(reward(d, id, 1, st, sizeof st), 200);
    assert_string_equal(st, "duplicate");
    assert_int_equal(tdaemon_stop(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_injected_commit_failures, teardown),
        cmocka_unit_test_setup_teardown(test_real_full_disk, fs_setup, fs_teardown),
        cmocka_unit_test_teardown(test_busy_database_waited_for, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
