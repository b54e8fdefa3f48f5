/*
 * test_blocks.c — a block of assignments on a fresh experiment (count = K,
 * no reward back yet) covers K distinct arms, for every policy the daemon
 * lists and several seeds (issue 12, defect 7: adapt gave a, a, c and left
 * b unsampled, as ttts and thompson did: an arm with its first pull pending
 * got the next one too).
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

static int has_flag(json_t *policy, const char *flag)
{
    json_t *flags = json_object_get(policy, "flags");
    for (size_t i = 0; i < json_array_size(flags); i++)
        if (strcmp(json_string_value(json_array_get(flags, i)), flag) == 0)
            return 1;
    return 0;
}

static void test_fresh_block_distinct(void **state)
{
    (void)state;
    json_t *list = tcall(tgroup_d, "GET", "/v1/policies", NULL, 200);
    json_t *policies = json_object_get(list, "policies");
    assert_true(json_array_size(policies) > 10);
    int n = 0;
    for (size_t p = 0; p < json_array_size(policies); p++) {
        json_t *pol = json_array_get(policies, p);
        const char *name = tjson_str(pol, "name");
        for (int seed = 1; seed <= 8; seed++) {
            char id[64];
            snprintf(id, sizeof id, "blk-%s-%d", name, seed);
            json_decref(texp_create(
                tgroup_d,
                "{\"id\":\"%s\",\"policy\":{\"name\":\"%s\"},\"arms\":[\"a\",\"b\",\"c\",\"d\"],"
                "\"goal\":{%s\"epsilon\":%s,\"budget\":%s}%s,\"seed\":%d}",
                id, name, has_flag(pol, "control") ? "\"type\":\"control\",\"control\":\"a\"," : "",
                has_flag(pol, "needs_epsilon") ? "0.1" : "0",
                has_flag(pol, "fixed_budget") ? "400" : "null",
                has_flag(pol, "needs_target_arm") ? ",\"target_arm\":\"a\"" : "", seed));
            json_t *a = texp_assign(tgroup_d, id, "{\"count\":4}");
            assert_int_equal(json_array_size(a), 4);
            int seen[4] = {0};
            for (size_t i = 0; i < 4; i++) {
                long long k = tjson_int(json_array_get(a, i), "arm_index");
                assert_true(k >= 0 && k < 4);
                if (seen[k]++)
                    fail_msg("%s (seed %d): arm %lld twice in a fresh block of 4", name, seed, k);
            }
            json_decref(a);
            n++;
        }
    }
    assert_true(n >= 80);
    json_decref(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_block_distinct),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
