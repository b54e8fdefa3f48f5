/*
 * test_config.c — the daemon's settings: defaults, flags, the config file
 * (comments, spacing, flags without a value, unknown keys with their line),
 * flags winning over the file, range checks, --listen's forms (IPv6 in
 * brackets, names), --version and the CHANGELOG's latest release, and the
 * man page and --help naming every setting of the table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/version.h"
#include "server/config.h"
#include "tests/support/tstore.h"

static char g_dir[64];

static const char *write_conf(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Parse the arguments into c (after defaults). A macro over an array, not a
 * variadic function ending in NULL: va_arg(ap, const char *) reading a bare
 * NULL is undefined where NULL is a plain 0 (cppcheck varFuncNullUB). */
#define parse(c, err, errlen, ...)                                                                 \
    parse_args(c, err, errlen, (const char *const[]){__VA_ARGS__, NULL})

static int parse_args(struct config *c, char *err, size_t errlen, const char *const *args)
{
    char *argv[32];
    int argc = 0;
    for (; argc < 32 && args[argc] != NULL; argc++)
        argv[argc] = (char *)(uintptr_t)args[argc];
    config_defaults(c);
    err[0] = '\0';
    return config_parse_args(c, argc, argv, err, errlen);
}

static void test_defaults(void **state)
{
    (void)state;
    struct config c;
    config_defaults(&c);
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 8080);
    assert_string_equal(c.db, "var/banditd.db");
    assert_int_equal(c.sync, STORE_SYNC_FULL);
    assert_int_equal(c.insecure, 0);
    assert_int_equal(c.metrics_need_key, 0);
    assert_int_equal(c.key_refresh_s, 2);
    assert_int_equal(c.max_body, 1 << 20);
    assert_int_equal(c.max_connections, 1024);
    assert_int_equal(c.timeout_s, 30);
    assert_int_equal(c.limits.max_arms, 1024);
    assert_int_equal(c.limits.max_bandits, 256);
    assert_int_equal(c.limits.max_batch, 1000);
    assert_int_equal(c.limits.max_count, 100);
    assert_int_equal(c.limits.max_experiments, 10000);
    assert_int_equal(c.limits.max_pending, 1000000);
}

static void test_flags(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    assert_int_equal(parse(&c, err, sizeof err, "--listen", "0.0.0.0:9090", "--db", "/x/y.db",
                           "--sync=normal", "--insecure", "--max-arms", "7", "--timeout=5",
                           "--metrics-need-key", "--key-refresh", "0"),
                     0);
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.port, 9090);
    assert_string_equal(c.db, "/x/y.db");
    assert_int_equal(c.sync, STORE_SYNC_NORMAL);
    assert_int_equal(c.insecure, 1);
    assert_int_equal(c.metrics_need_key, 1);
    assert_int_equal(c.key_refresh_s, 0);
    assert_int_equal(c.limits.max_arms, 7);
    assert_int_equal(c.timeout_s, 5);
}

static void test_file_and_override(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    const char *path = write_conf("a.conf", "# comment\n"
                                            "\n"
                                            "  listen = 127.0.0.2:7000  \n"
                                            "db=/srv/b.db\n"
                                            "\tmax-batch\t=\t12\n"
                                            "log-requests\n"
                                            "insecure = no\n"
                                            "max-body = 4096\r\n"
                                            "sync = normal\n");
    assert_int_equal(parse(&c, err, sizeof err, "--config", path), 0);
    assert_string_equal(c.host, "127.0.0.2");
    assert_int_equal(c.port, 7000);
    assert_string_equal(c.db, "/srv/b.db");
    assert_int_equal(c.limits.max_batch, 12);
    assert_int_equal(c.log_requests, 1);
    assert_int_equal(c.insecure, 0);
    assert_int_equal(c.max_body, 4096);
    assert_int_equal(c.sync, STORE_SYNC_NORMAL);
    /* A flag wins over the file, wherever it stands on the command line. */
    assert_int_equal(parse(&c, err, sizeof err, "--max-batch", "3", "--config", path), 0);
    assert_int_equal(c.limits.max_batch, 3);
    assert_string_equal(c.db, "/srv/b.db");
}

static void test_file_errors(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    const char *path = write_conf("bad.conf", "max-arms = 4\nno-such-thing = 1\n");
    assert_int_equal(parse(&c, err, sizeof err, "--config", path), -1);
    assert_non_null(strstr(err, ":2:"));
    assert_non_null(strstr(err, "no-such-thing"));
    path = write_conf("novalue.conf", "db\n");
    assert_int_equal(parse(&c, err, sizeof err, "--config", path), -1);
    assert_non_null(strstr(err, "needs a value"));
    assert_int_equal(parse(&c, err, sizeof err, "--config", "/nonexistent/x.conf"), -1);
    assert_non_null(strstr(err, "/nonexistent/x.conf"));
    assert_int_equal(parse(&c, err, sizeof err, "--config"), -1);
}

static void test_bad_values(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    static const char *const bad[][2] = {
        {"--max-arms", "1"},
        {"--max-arms", "-3"},
        {"--max-arms", "x"},
        {"--max-bandits", "0"},
        {"--max-batch", "0"},
        {"--max-count", "0"},
        {"--max-pending", "0"},
        {"--max-experiments", "0"},
        {"--max-body", "10"},
        {"--max-connections", "0"},
        {"--timeout", "0"},
        {"--threads", "100000"},
        {"--sync", "sometimes"},
        {"--listen", "nohost"},
        {"--listen", "1.2.3.4:70000"},
        {"--listen", "::1:8080"}, /* ambiguous without brackets */
        {"--listen", "[::1]"},
        {"--listen", "[::1]8080"},
        {"--listen", "[:8080"},
        {"--listen", "[]:8080"},
        {"--listen", ":8080"},
        {"--listen", "host:-1"},
        {"--max-connections-per-ip", "-1"},
        {"--request-timeout", "100000"},
        {"--port", "1"},
        {"--max-arms", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(&c, err, sizeof err, bad[i][0], bad[i][1]);
        if (rc != -1)
            fail_msg("%s %s accepted", bad[i][0], bad[i][1]);
        assert_true(strlen(err) > 0);
    }
    assert_int_equal(parse(&c, err, sizeof err, "--max-arms"), -1);
    assert_int_equal(parse(&c, err, sizeof err, "stray"), -1);
    /* TLS needs both files. */
    assert_int_equal(parse(&c, err, sizeof err, "--tls-cert", "/a.pem"), -1);
    assert_non_null(strstr(err, "tls-key"));
    assert_int_equal(parse(&c, err, sizeof err, "--tls-cert", "/a.pem", "--tls-key", "/k.pem"), 0);
}

/* The whole of a file (a static buffer, overwritten by the next call). */
static const char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    static char text[1 << 18];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    (void)fclose(f);
    return text;
}

/* Parse args with standard output captured; the output (static buffer). */
static const char *parse_printing(struct config *c, int want_rc, const char *const *args)
{
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/stdout.txt", g_dir);
    (void)fflush(stdout);
    int saved = dup(1);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    dup2(fileno(f), 1);
    int rc = parse_args(c, err, sizeof err, args);
    assert_int_equal(fflush(stdout), 0);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rc, want_rc);
    return read_text(path);
}

static void test_help(void **state)
{
    (void)state;
    struct config c;
    const char *text =
        parse_printing(&c, 1, (const char *const[]){"--max-arms", "5", "--help", NULL});
    for (size_t i = 0; config_option_name(i) != NULL; i++) {
        char flag[80];
        snprintf(flag, sizeof flag, "--%s", config_option_name(i));
        if (strstr(text, flag) == NULL)
            fail_msg("--help does not mention %s", flag);
    }
    assert_non_null(strstr(text, "keys create"));
    assert_non_null(strstr(text, "backup"));
}

/* --listen: IPv4, IPv6 in brackets (kept without them), host names. */
static void test_listen_forms(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    static const struct {
        const char *arg, *host;
        unsigned port;
    } ok[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080},
        {"[::1]:8081", "::1", 8081},
        {"[::]:0", "::", 0},
        {"localhost:9000", "localhost", 9000},
        {"0.0.0.0:1", "0.0.0.0", 1},
        {"[fe80::1%lo]:80", "fe80::1%lo", 80},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (parse(&c, err, sizeof err, "--listen", ok[i].arg) != 0)
            fail_msg("--listen %s: %s", ok[i].arg, err);
        assert_string_equal(c.host, ok[i].host);
        assert_int_equal(c.port, ok[i].port);
    }
    assert_int_equal(parse(&c, err, sizeof err, "--listen", "::1:8080"), -1);
    assert_non_null(strstr(err, "[::1:8080]:PORT"));
}

/* The new settings of issue 13 and their defaults. */
static void test_transport_settings(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    config_defaults(&c);
    assert_int_equal(c.max_connections_per_ip, 64);
    assert_int_equal(c.request_timeout_s, 30);
    assert_string_equal(c.tls_priorities, "");
    assert_int_equal(parse(&c, err, sizeof err, "--max-connections-per-ip", "0",
                           "--request-timeout", "0", "--tls-priorities", "NORMAL:-VERS-TLS1.0"),
                     0);
    assert_int_equal(c.max_connections_per_ip, 0);
    assert_int_equal(c.request_timeout_s, 0);
    assert_string_equal(c.tls_priorities, "NORMAL:-VERS-TLS1.0");
}

/* Read a file of the repository (relative to its root) into a static buffer. */
static const char *repo_file(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strstr(path, "tests/unit/");
    assert_non_null(slash);
    snprintf(slash, sizeof path - (size_t)(slash - path), "%s", rel);
    return read_text(path);
}

/* --version prints BANDITD_VERSION, which is the latest release of the
 * CHANGELOG ("## [X.Y.Z]") once it has one. */
static void test_version(void **state)
{
    (void)state;
    struct config c;
    const char *line = parse_printing(&c, 1, (const char *const[]){"--version", NULL});
    assert_string_equal(line, "banditd " BANDITD_VERSION "\n");
    const char *log = repo_file("CHANGELOG.md");
    const char *rel = strstr(log, "\n## [");
    while (rel != NULL && !(rel[5] >= '0' && rel[5] <= '9'))
        rel = strstr(rel + 1, "\n## [");
    if (rel == NULL) {
        printf("# CHANGELOG.md names no release yet: nothing to compare\n");
        return;
    }
    char want[64];
    snprintf(want, sizeof want, "\n## [%s]", BANDITD_VERSION);
    if (strncmp(rel, want, strlen(want)) != 0)
        fail_msg("BANDITD_VERSION is %s, the CHANGELOG's latest release %.24s", BANDITD_VERSION,
                 rel + 1);
}

/* Every setting is in the man page (as a flag, escaped for troff). */
static void test_man_page_covers_every_setting(void **state)
{
    (void)state;
    const char *text = repo_file("docs/banditd.8");
    for (size_t i = 0; config_option_name(i) != NULL; i++) {
        char flag[80];
        /* troff writes a literal hyphen as \- */
        snprintf(flag, sizeof flag, "\\-\\-");
        for (const char *p = config_option_name(i); *p; p++) {
            size_t l = strlen(flag);
            if (*p == '-')
                snprintf(flag + l, sizeof flag - l, "\\-");
            else
                snprintf(flag + l, sizeof flag - l, "%c", *p);
        }
        if (strstr(text, flag) == NULL)
            fail_msg("docs/banditd.8 does not document %s", config_option_name(i));
    }
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/test_config.XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_file_and_override),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_man_page_covers_every_setting),
        cmocka_unit_test(test_listen_forms),
        cmocka_unit_test(test_transport_settings),
        cmocka_unit_test(test_version),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (ttree_remove(g_dir) != 0)
        rc = rc ? rc : 1;
    return rc;
}
