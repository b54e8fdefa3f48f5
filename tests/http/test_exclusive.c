/*
 * test_exclusive.c — one daemon per SQLite file (issue 14): a second
 * daemon started on a file another one serves refuses to start, with a
 * message naming the first and exit status 1, and changes nothing; the
 * tools (keys list) still run beside the daemon; once the first stops, a
 * daemon starts on the file again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/harness.h"

static void test_second_daemon_refused(void **state)
{
    (void)state;
    struct tdaemon *a = tdaemon_start(NULL);
    assert_non_null(a);
    json_decref(texp_create(a, "{\"id\":\"one\",\"arms\":[\"a\",\"b\"]}"));

    struct tdaemon *b = tdaemon_new();
    assert_non_null(b);
    const char *extra[] = {"--db", tdaemon_db_path(a), NULL};
    int rc = tdaemon_launch(b, extra, 0);
    assert_int_equal(rc, 1000 + 1);
    char *err = tdaemon_stderr(b);
    assert_non_null(err);
    if (strstr(err, "served by another banditd") == NULL)
        fail_msg("refusal does not say why: %s", err);
    free(err);

    /* the first goes on; the tools run beside it */
    json_t *as = texp_assign(a, "one", "{}");
    json_decref(as);
    char out[4096], cerr[1024];
    const char *args[] = {"keys", "list", "--db", tdaemon_db_path(a), NULL};
    assert_int_equal(tdaemon_cli(a, args, NULL, out, sizeof out, cerr, sizeof cerr), 0);

    /* once it stops, the file can be served again (by the second) */
    assert_int_equal(tdaemon_stop(a), 0);
    assert_int_equal(tdaemon_launch(b, extra, 0), 0);
    json_t *st = texp_status(b, "one");
    assert_int_equal(tjson_int(st, "pending"), 1);
    json_decref(st);
    assert_int_equal(tdaemon_stop(b), 0);
    tdaemon_free(b);
    tdaemon_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_daemon_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
