/*
 * test_pending.c — pending assignments answered out of order survive a
 * crash and a restart from a snapshot (exp/table.c's expiry FIFO, which lets
 * go of answered assignments while an old one is still pending, and
 * exp/snapshot.c's walk of it). One assignment is left pending while
 * hundreds after it are rewarded at once, every 37th also left pending; the
 * daemon (--snapshot-every 20) is killed with SIGKILL and restarted from its
 * latest snapshot and the tail of its log (its load line says so). Its
 * pending count must be the same, each pending assignment must still take
 * its reward, and each rewarded one must be a duplicate, not pending again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

#define STEPS 300
#define KEEP 37

static long long pending(struct tdaemon *d)
{
    json_t *st = texp_status(d, "p");
    long long n = tjson_int(st, "pending");
    json_decref(st);
    return n;
}

static void test_restart_keeps_pending(void **state)
{
    (void)state;
    const char *const extra[] = {"--snapshot-every", "20", NULL};
    struct tdaemon *d = tdaemon_start(extra);
    assert_non_null(d);
    json_decref(texp_create(d, "{\"id\":\"p\",\"arms\":[\"a\",\"b\",\"c\"],\"policy\":{\"name\":"
                               "\"uniform\"},\"stop_rule\":\"none\",\"seed\":3,"
                               "\"assignment_ttl_s\":3600}"));
    static char kept[STEPS][64], answered[STEPS][64];
    size_t nk = 0, na = 0;
    for (int i = 0; i <= STEPS; i++) {
        json_t *list = texp_assign(d, "p", "{}");
        const char *id = tjson_str(json_array_get(list, 0), "id");
        assert_non_null(id);
        if (i % KEEP == 0) {
            snprintf(kept[nk++], sizeof kept[0], "%s", id);
        } else {
            assert_string_equal(texp_reward(d, "p", id, 1.0), "accepted");
            snprintf(answered[na++], sizeof answered[0], "%s", id);
        }
        json_decref(list);
    }
    assert_int_equal(pending(d), (long long)nk);

    assert_int_equal(tdaemon_kill(d), 0);
    assert_int_equal(tdaemon_restart(d), 0);
    char *log = tdaemon_stderr(d);
    int from_snapshot = log != NULL && strstr(log, "(1 from a snapshot)") != NULL;
    free(log);
    if (!from_snapshot)
        fail_msg("the restart did not load from a snapshot (see its log)");

    assert_int_equal(pending(d), (long long)nk);
    for (size_t i = 0; i < na; i += 25)
        assert_string_equal(texp_reward(d, "p", answered[i], 1.0), "duplicate");
    for (size_t i = 0; i < nk; i++)
        assert_string_equal(texp_reward(d, "p", kept[i], 1.0), "accepted");
    assert_int_equal(pending(d), 0);
    assert_int_equal(tdaemon_stop(d), 0);
    tdaemon_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_keeps_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
