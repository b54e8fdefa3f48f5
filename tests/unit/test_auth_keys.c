/*
 * test_auth_keys.c — API keys below HTTP: SHA-256 against the FIPS 180-2
 * vectors, key format and uniqueness, scope lists, the Authorization header
 * parser, loading from a real store, reload detecting changes, revocation,
 * and the rule that revoking every key never reopens the API.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "store/store.h"
#include "tests/support/tstore.h"

static int setup(void **state)
{
    *state = tstore_new("k.db");
    return 0;
}

static int teardown(void **state)
{
    struct tstore *f = *state;
    auth_free();
    return tstore_free(f);
}

/* Insert a new key with scopes; returns its rowid, the key in key. */
static int64_t add_key(struct tstore *f, const char *scopes, char *key, size_t len)
{
    char hex[AUTH_HASH_HEX_LEN + 1];
    int64_t id = 0;
    assert_int_equal(auth_new_key(key, len), 0);
    assert_int_equal(auth_hash_hex(key, strlen(key), hex, sizeof hex), 0);
    assert_int_equal(store_key_insert(f->s, "t", scopes, hex, NULL, 1, NULL, NULL, &id), STORE_OK);
    return id;
}

static unsigned scopes_of(const char *key, int *known)
{
    char h[AUTH_MAX_KEY_LEN + 16];
    snprintf(h, sizeof h, "Bearer %s", key);
    return auth_scopes(h, known, NULL);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[AUTH_HASH_HEX_LEN + 1];
    assert_int_equal(auth_hash_hex("abc", 3, hex, sizeof hex), 0);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(auth_hash_hex("", 0, hex, sizeof hex), 0);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(auth_hash_hex(m, strlen(m), hex, sizeof hex), 0);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    assert_int_equal(auth_hash_hex("abc", 3, hex, AUTH_HASH_HEX_LEN), -1);
}

static void test_key_format(void **state)
{
    (void)state;
    enum { N = 64 };
    static char keys[N][AUTH_KEY_LEN + 1];
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(auth_new_key(keys[i], sizeof keys[i]), 0);
        assert_int_equal(strlen(keys[i]), AUTH_KEY_LEN);
        assert_memory_equal(keys[i], "bd_", 3);
        for (const char *p = keys[i] + 3; *p; p++)
            assert_true(isalnum((unsigned char)*p) || *p == '-' || *p == '_');
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(keys[i], keys[j]);
    }
    /* 43 base64url characters carry 258 bits; the last holds 4 random bits
     * and 2 zero bits, so it is one of 16 characters (A, E, I, ... multiples
     * of 4 in the alphabet). */
    static const char ok_last[] = "AEIMQUYcgkosw048";
    for (size_t i = 0; i < N; i++)
        assert_non_null(strchr(ok_last, keys[i][AUTH_KEY_LEN - 1]));
    char small[AUTH_KEY_LEN];
    assert_int_equal(auth_new_key(small, sizeof small), -1);
}

static void test_scope_lists(void **state)
{
    (void)state;
    unsigned s = 0;
    char bad[32], buf[64];
    assert_int_equal(auth_parse_scopes("read", &s, bad, sizeof bad), 0);
    assert_int_equal(s, API_SCOPE_READ);
    assert_int_equal(auth_parse_scopes(" report , assign", &s, bad, sizeof bad), 0);
    assert_int_equal(s, API_SCOPE_REPORT | API_SCOPE_ASSIGN);
    assert_int_equal(auth_parse_scopes("read,read,admin", &s, bad, sizeof bad), 0);
    assert_int_equal(s, API_SCOPE_READ | API_SCOPE_ADMIN);
    assert_int_equal(auth_parse_scopes("read,write", &s, bad, sizeof bad), -1);
    assert_string_equal(bad, "write");
    assert_int_equal(auth_parse_scopes("", &s, bad, sizeof bad), -1);
    assert_int_equal(auth_parse_scopes(",", &s, bad, sizeof bad), -1);
    assert_int_equal(auth_parse_scopes("Admin", &s, bad, sizeof bad), -1);
    assert_int_equal(auth_parse_scopes(NULL, &s, bad, sizeof bad), -1);
    auth_format_scopes(API_SCOPE_READ | API_SCOPE_ADMIN | API_SCOPE_REPORT, buf, sizeof buf);
    assert_string_equal(buf, "admin,report,read");
    auth_format_scopes(API_SCOPE_ASSIGN, buf, sizeof buf);
    assert_string_equal(buf, "assign");
}

static void test_open_without_keys(void **state)
{
    struct tstore *f = *state;
    int known = 1;
    assert_int_equal(auth_init(f->s), STORE_OK);
    assert_int_equal(auth_enabled(), 0);
    assert_int_equal(auth_active_keys(), 0);
    assert_int_equal(auth_scopes("Bearer bd_nothing", &known, NULL), 0);
    assert_int_equal(known, 0);
    assert_int_equal(auth_reload(), 0); /* nothing changed */
}

static void test_lookup_and_header_forms(void **state)
{
    struct tstore *f = *state;
    char kr[64], ka[64], kx[64];
    int known;
    int64_t idr = add_key(f, "read", kr, sizeof kr);
    int64_t ida = add_key(f, "assign,report", ka, sizeof ka);
    add_key(f, "admin", kx, sizeof kx);
    assert_int_equal(auth_init(f->s), STORE_OK);
    assert_int_equal(auth_enabled(), 1);
    assert_int_equal(auth_active_keys(), 3);
    assert_int_equal(scopes_of(kr, &known), API_SCOPE_READ);
    assert_int_equal(known, 1);
    assert_int_equal(scopes_of(ka, &known), API_SCOPE_ASSIGN | API_SCOPE_REPORT);
    assert_int_equal(scopes_of(kx, &known), API_SCOPE_ADMIN);

    char h[128];
    int64_t id = -1;
    snprintf(h, sizeof h, "Bearer %s", ka);
    assert_int_equal(auth_scopes(h, &known, &id), API_SCOPE_ASSIGN | API_SCOPE_REPORT);
    assert_int_equal(id, ida);
    snprintf(h, sizeof h, "Bearer %s", kr);
    auth_scopes(h, &known, &id);
    assert_int_equal(id, idr);
    assert_int_equal(auth_scopes("Bearer bd_unknown", &known, &id), 0);
    assert_int_equal(id, 0);
    snprintf(h, sizeof h, "bearer   %s  ", kr); /* scheme case-insensitive, spaces */
    assert_int_equal(auth_scopes(h, &known, NULL), API_SCOPE_READ);
    assert_int_equal(known, 1);
    static const char *const bad[] = {NULL,        "",          "Bearer",    "Bearer ",
                                      "Basic abc", "Bearerx y", "Bearer a b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        known = 1;
        assert_int_equal(auth_scopes(bad[i], &known, NULL), 0);
        assert_int_equal(known, 0);
    }
    snprintf(h, sizeof h, "%s", kr);
    assert_int_equal(auth_scopes(h, &known, NULL), 0); /* no scheme */
    /* A key differing in its last character, or a prefix, is unknown. */
    char near[64];
    snprintf(near, sizeof near, "%s", kr);
    near[strlen(near) - 1] = near[strlen(near) - 1] == 'A' ? 'E' : 'A';
    assert_int_equal(scopes_of(near, &known), 0);
    assert_int_equal(known, 0);
    near[strlen(near) - 1] = '\0';
    assert_int_equal(scopes_of(near, &known), 0);
    /* Too long: refused before hashing. */
    char longkey[AUTH_MAX_KEY_LEN + 2];
    memset(longkey, 'a', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    assert_int_equal(scopes_of(longkey, &known), 0);
}

static void test_reload_and_revoke(void **state)
{
    struct tstore *f = *state;
    char k1[64], k2[64];
    int known;
    int64_t id1 = add_key(f, "read", k1, sizeof k1);
    assert_int_equal(auth_init(f->s), STORE_OK);
    assert_int_equal(auth_reload(), 0);
    scopes_of(k1, &known);
    assert_int_equal(known, 1);

    /* A key created after start is unknown until the reload. */
    int64_t id2 = add_key(f, "report", k2, sizeof k2);
    scopes_of(k2, &known);
    assert_int_equal(known, 0);
    assert_int_equal(auth_reload(), 1);
    assert_int_equal(scopes_of(k2, &known), API_SCOPE_REPORT);
    assert_int_equal(known, 1);
    assert_int_equal(auth_active_keys(), 2);

    assert_int_equal(store_key_revoke(f->s, id1, NULL, NULL), STORE_OK);
    assert_int_equal(auth_reload(), 1);
    scopes_of(k1, &known);
    assert_int_equal(known, 0);
    assert_int_equal(auth_active_keys(), 1);

    /* Every key revoked: still closed, nothing gets in. */
    assert_int_equal(store_key_revoke(f->s, id2, NULL, NULL), STORE_OK);
    assert_int_equal(auth_reload(), 1);
    assert_int_equal(auth_active_keys(), 0);
    assert_int_equal(auth_enabled(), 1);
    scopes_of(k2, &known);
    assert_int_equal(known, 0);
    assert_int_equal(auth_reload(), 0);
}

static void test_bad_rows_ignored(void **state)
{
    struct tstore *f = *state;
    char good[64];
    int64_t id;
    int known;
    assert_int_equal(store_key_insert(f->s, "x", "read", "not-hex", NULL, 1, NULL, NULL, &id),
                     STORE_OK);
    assert_int_equal(
        store_key_insert(f->s, "y", "superuser",
                         "0000000000000000000000000000000000000000000000000000000000000000", NULL,
                         1, NULL, NULL, &id),
        STORE_OK);
    add_key(f, "read", good, sizeof good);
    assert_int_equal(auth_init(f->s), STORE_OK);
    assert_int_equal(auth_active_keys(), 1);
    assert_int_equal(auth_enabled(), 1);
    assert_int_equal(scopes_of(good, &known), API_SCOPE_READ);
}

/* Many keys: every one found with its own scopes (probing, table growth). */
static void test_many_keys(void **state)
{
    struct tstore *f = *state;
    enum { N = 300 };
    static char keys[N][64];
    static const char *const sc[] = {"read", "assign", "report", "admin"};
    static const unsigned bits[] = {API_SCOPE_READ, API_SCOPE_ASSIGN, API_SCOPE_REPORT,
                                    API_SCOPE_ADMIN};
    for (size_t i = 0; i < N; i++)
        add_key(f, sc[i % 4], keys[i], sizeof keys[i]);
    assert_int_equal(auth_init(f->s), STORE_OK);
    assert_int_equal(auth_active_keys(), N);
    for (size_t i = 0; i < N; i++) {
        int known = 0;
        assert_int_equal(scopes_of(keys[i], &known), bits[i % 4]);
        assert_int_equal(known, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_key_format),
        cmocka_unit_test(test_scope_lists),
        cmocka_unit_test_setup_teardown(test_open_without_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_and_header_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_and_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_rows_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_keys, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
