/*
 * test_fuzz_corpus.c — replays the fuzz seed corpus (tests/fuzz/corpus/T/)
 * and every input that ever crashed a target (tests/fuzz/regress/T/, one
 * file per crash, named after what it found) through the fuzz target
 * bodies (tests/fuzz/targets.c), under ASan + UBSan in `make test`. A
 * crash found by `make fuzz` becomes a regression test by copying its
 * artifact into tests/fuzz/regress/T/.
 *
 * Also checks api/jsonw.c, which writes the hot replies, against jansson's
 * own output for the same values (same text, byte for byte), and the
 * hand-written RFC 3339 formatter against gmtime_r + strftime.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "exp/config.h"
#include "base/jsonw.h"
#include "tests/fuzz/targets.h"
#include "base/clock.h"

typedef int (*target_fn)(const uint8_t *, size_t);

/* Run every file of dir through fn; returns the number of files. */
static int replay_dir(const char *dir, target_fn fn)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        static uint8_t buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf, f);
        (void)fclose(f);
        /* a copy of exactly len bytes, so ASan sees any overread */
        uint8_t *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, buf, len);
        fn(copy, len);
        free(copy);
        n++;
    }
    closedir(d);
    return n;
}

static void replay(const char *name, target_fn fn, int want_seeds)
{
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", name);
    int seeds = replay_dir(dir, fn);
    snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", name);
    int regress = replay_dir(dir, fn);
    printf("# %s: %d seeds, %d regression inputs\n", name, seeds, regress);
    if (want_seeds)
        assert_true(seeds > 0); /* run from the repository root */
}

static void test_expconfig(void **s)
{
    (void)s;
    replay("expconfig", fuzz_expconfig, 1);
}
static void test_assignment(void **s)
{
    (void)s;
    replay("assignment", fuzz_assignment, 1);
}
static void test_rewards(void **s)
{
    (void)s;
    replay("rewards", fuzz_rewards, 1);
}
static void test_corrections(void **s)
{
    (void)s;
    replay("corrections", fuzz_corrections, 1);
}
static void test_replay(void **s)
{
    (void)s;
    replay("replay", fuzz_replay, 1);
}

static void test_snapshot(void **s)
{
    (void)s;
    replay("snapshot", fuzz_snapshot, 1);
}

static void test_etag(void **s)
{
    (void)s;
    replay("etag", fuzz_etag, 1);
}

static void test_observations(void **s)
{
    (void)s;
    replay("observations", fuzz_observations, 1);
}
static void test_patch(void **s)
{
    (void)s;
    replay("patch", fuzz_patch, 1);
}
static void test_simproblem(void **s)
{
    (void)s;
    replay("simproblem", fuzz_simproblem, 1);
}

/* --- jsonw against jansson ------------------------------------------------------- */

static void same_as_jansson(json_t *j, const char *text)
{
    char *want = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    assert_non_null(want);
    assert_string_equal(text, want);
    free(want);
    json_decref(j);
}

static void test_jsonw_matches_jansson(void **s)
{
    (void)s;
    /* strings: every byte 1..127 (controls, quotes, backslash, DEL) and UTF-8 */
    char str[200];
    size_t k = 0;
    for (int c = 1; c < 128; c++)
        str[k++] = (char)c;
    memcpy(str + k, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
    str[k + 9] = '\0';
    struct jw w;
    size_t len;
    jw_init(&w);
    jw_str(&w, str);
    char *t = jw_finish(&w, &len);
    assert_non_null(t);
    assert_int_equal(len, strlen(t));
    same_as_jansson(json_string(str), t);
    free(t);

    /* reals: specials of the format, then random bit patterns */
    const double fixed[] = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            0.1,
                            1e15,
                            1e16,
                            1e17,
                            1e21,
                            1e-7,
                            1e-5,
                            123.456,
                            2.5e-300,
                            1.7976931348623157e308,
                            5e-324,
                            3.0e10,
                            0.30000000000000004};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        jw_init(&w);
        jw_real(&w, fixed[i]);
        t = jw_finish(&w, &len);
        same_as_jansson(json_real(fixed[i]), t);
        free(t);
    }
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v))
            continue;
        jw_init(&w);
        jw_real(&w, v);
        t = jw_finish(&w, &len);
        same_as_jansson(json_real(v), t);
        free(t);
        long long iv = (long long)x;
        jw_init(&w);
        jw_int(&w, iv);
        t = jw_finish(&w, &len);
        same_as_jansson(json_integer(iv), t);
        free(t);
    }
    jw_init(&w);
    jw_int(&w, INT64_MIN);
    t = jw_finish(&w, &len);
    same_as_jansson(json_integer(INT64_MIN), t);
    free(t);

    /* a long document crosses the inline buffer */
    jw_init(&w);
    json_t *arr = json_array();
    jw_lit(&w, "[");
    for (int i = 0; i < 2000; i++) {
        if (i)
            jw_lit(&w, ",");
        jw_int(&w, i);
        json_array_append_new(arr, json_integer(i));
    }
    jw_lit(&w, "]");
    t = jw_finish(&w, &len);
    same_as_jansson(arr, t);
    free(t);
}

static void test_rfc3339_matches_strftime(void **s)
{
    (void)s;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* 1970 … 9999 */
        long long ms = (long long)(x % 253402300799999ULL);
        if (i < 4)
            ms = (long long[]){0, 951782400000LL, 4107542399999LL, 253402300799999LL}[i];
        char got[40], want[40], base[32];
        clock_format_rfc3339(ms, got, sizeof got);
        time_t secs = (time_t)(ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        assert_true(strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) > 0);
        snprintf(want, sizeof want, "%s.%03lldZ", base, ms % 1000);
        assert_string_equal(got, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expconfig),
        cmocka_unit_test(test_assignment),
        cmocka_unit_test(test_rewards),
        cmocka_unit_test(test_corrections),
        cmocka_unit_test(test_observations),
        cmocka_unit_test(test_patch),
        cmocka_unit_test(test_simproblem),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_etag),
        cmocka_unit_test(test_jsonw_matches_jansson),
        cmocka_unit_test(test_rfc3339_matches_strftime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
