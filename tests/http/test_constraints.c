/*
 * test_constraints.c — clinical-trial constraints over HTTP (issue 4 item 6;
 * docs/constraints.md): burn-in, the additive allocation floor min_prob and
 * the control arm's fixed share. The engine allocates
 *     p_i = s·[i = control] + f + (1 − s − K f) q_i
 * (q the policy's own choice), so the realised allocation is checked with
 * exact binomial tolerances at level 1e-6 per side, derived from the number
 * of pulls, never hand-tuned:
 * - burn-in: the first N·K assignments cover every arm exactly N times,
 *   also with every reward outstanding and across bandits;
 * - under `uniform` (which never picks an arm that is ahead of the least
 *   pulled one), at the steps where arm i is ahead, P(i) is exactly
 *   f + s·[i = control]: a two-sided binomial test per arm;
 * - under `thompson` on arms where the policy alone would starve the
 *   control and the weak arms, each arm still gets at least its floor and
 *   the control at least s + f (one-sided, against Binomial(n, f) and
 *   Binomial(n, s + f));
 * - forced pulls count in the budget.
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
#include "tests/support/stattest.h"

#define ALPHA 1e-6

/* The largest k with P(X ≤ k) ≤ alpha for X ~ Binomial(n, p), or −1 when
 * even k = 0 is likelier: the one-sided test of "rate ≥ p" rejects at k or
 * fewer. */
static long long binom_lower_critical(uint64_t n, double p, double alpha)
{
    long long k = -1;
    for (uint64_t j = 0; j <= n; j++) {
        double cdf = 1.0 - stattest_binom_sf(j + 1, n, p); /* P(X ≤ j) */
        if (cdf > alpha)
            break;
        k = (long long)j;
    }
    return k;
}

/* Check k successes of n at rate p on both sides. */
static void assert_binomial(const char *what, uint64_t k, uint64_t n, double p)
{
    long long lo = binom_lower_critical(n, p, ALPHA);
    uint64_t hi = stattest_binom_critical(n, p, ALPHA);
    if ((long long)k <= lo || k >= hi)
        fail_msg("%s: %llu of %llu, outside the level-%g acceptance region (%lld, %llu) of "
                 "Binomial(n, %g)",
                 what, (unsigned long long)k, (unsigned long long)n, ALPHA, lo,
                 (unsigned long long)hi, p);
    printf("# %s: %llu of %llu (p = %g; accepted %lld < k < %llu)\n", what, (unsigned long long)k,
           (unsigned long long)n, p, lo, (unsigned long long)hi);
}

static void assert_at_least(const char *what, uint64_t k, uint64_t n, double p)
{
    long long lo = binom_lower_critical(n, p, ALPHA);
    if ((long long)k <= lo)
        fail_msg("%s: %llu of %llu, at or below %lld, the level-%g lower critical value of "
                 "Binomial(n, %g)",
                 what, (unsigned long long)k, (unsigned long long)n, lo, ALPHA, p);
    printf("# %s: %llu of %llu (floor p = %g; lower critical %lld)\n", what, (unsigned long long)k,
           (unsigned long long)n, p, lo);
}

/* n assignments in batches of `count`, none rewarded; arms[i] receives
 * each one's arm index (bandit_of[i] its bandit index if not NULL). */
static void assign_batch(const char *id, int n, int count, int *arms, int *bandit_of,
                         const char *const *bandit_ids, int nb)
{
    int got = 0;
    while (got < n) {
        char body[64];
        int c = n - got < count ? n - got : count;
        snprintf(body, sizeof body, "{\"count\":%d}", c);
        json_t *list = texp_assign(tgroup_d, id, body);
        assert_int_equal(json_array_size(list), c);
        size_t i;
        json_t *a;
        json_array_foreach(list, i, a)
        {
            assert_false(json_is_true(json_object_get(a, "exploit")));
            arms[got] = (int)tjson_int(a, "arm_index");
            if (bandit_of != NULL) {
                bandit_of[got] = -1;
                for (int b = 0; b < nb; b++)
                    if (strcmp(tjson_str(a, "bandit"), bandit_ids[b]) == 0)
                        bandit_of[got] = b;
                assert_true(bandit_of[got] >= 0);
            }
            got++;
        }
        json_decref(list);
    }
}

/* --- burn-in ------------------------------------------------------------------------------ */

static void test_burn_in(void **state)
{
    (void)state;
    enum { N = 5, K = 3 };
    /* One bandit, adapt, every reward outstanding: exactly N per arm. */
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"burn\",\"arms\":[\"a\",\"b\",\"c\"],"
                            "\"policy\":{\"name\":\"adapt\"},\"seed\":5,"
                            "\"constraints\":{\"burn_in\":%d}}",
                            N));
    int arms[N * K];
    assign_batch("burn", N * K, 4, arms, NULL, NULL, 0);
    int count[K] = {0};
    for (int i = 0; i < N * K; i++)
        count[arms[i]]++;
    for (int k = 0; k < K; k++)
        assert_int_equal(count[k], N);
    json_t *s = texp_status(tgroup_d, "burn");
    for (int k = 0; k < K; k++) {
        char path[64];
        snprintf(path, sizeof path, "bandits[0].arms[%d].pending", k);
        assert_int_equal(tjson_int(s, path), N);
    }
    json_decref(s);

    /* Two bandits, gape choosing the bandit: every (bandit, arm) N times
     * in the first 2·K·N assignments, before the index takes over. */
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"burn2\",\"bandits\":[{\"id\":\"x\",\"arms\":[\"a\",\"b\","
                            "\"c\"]},{\"id\":\"y\",\"arms\":[\"a\",\"b\",\"c\"]}],"
                            "\"policy\":{\"name\":\"gape\"},\"goal\":{\"budget\":200},\"seed\":6,"
                            "\"constraints\":{\"burn_in\":%d}}",
                            N));
    static const char *const bids[2] = {"x", "y"};
    int arms2[2 * N * K], bof[2 * N * K];
    assign_batch("burn2", 2 * N * K, 7, arms2, bof, bids, 2);
    int c2[2][K] = {{0}};
    for (int i = 0; i < 2 * N * K; i++)
        c2[bof[i]][arms2[i]]++;
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < K; k++)
            assert_int_equal(c2[b][k], N);
}

/* --- floor and control share under uniform: exact rates ----------------------------------- */

static void test_floor_and_control_exact(void **state)
{
    (void)state;
    enum { K = 4, N = 2000, BUDGET = 2000 };
    const double s = 0.3, f = 0.05;
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"ctl-uniform\",\"arms\":[\"ctl\",\"a\",\"b\",\"c\"],"
                            "\"policy\":{\"name\":\"uniform\"},\"goal\":{\"budget\":%d},"
                            "\"seed\":17,\"constraints\":{\"min_prob\":%g,"
                            "\"control\":{\"arm\":\"ctl\",\"share\":%g}}}",
                            BUDGET, f, s));
    static int arms[N];
    assign_batch("ctl-uniform", N, 100, arms, NULL, NULL, 0);
    /* At a step where arm i has more pulls handed out than the least
     * pulled arm, uniform never picks it: only the constraints can, with
     * probability exactly f + s·[i = control]. */
    uint64_t handed[K] = {0}, ahead_n[K] = {0}, ahead_k[K] = {0}, total[K] = {0};
    for (int t = 0; t < N; t++) {
        uint64_t least = handed[0];
        for (int i = 1; i < K; i++)
            least = handed[i] < least ? handed[i] : least;
        for (int i = 0; i < K; i++)
            if (handed[i] > least) {
                ahead_n[i]++;
                ahead_k[i] += arms[t] == i;
            }
        handed[arms[t]]++;
        total[arms[t]]++;
    }
    for (int i = 0; i < K; i++) {
        char what[64];
        snprintf(what, sizeof what, "uniform, arm %d picked while ahead", i);
        assert_true(ahead_n[i] > N / 4); /* the test has something to test */
        assert_binomial(what, ahead_k[i], ahead_n[i], f + (i == 0 ? s : 0.0));
    }
    assert_at_least("uniform, control share", total[0], N, s + f);
    /* Forced pulls are pulls of the budget: it is spent, not exceeded. */
    json_t *st = texp_status(tgroup_d, "ctl-uniform");
    assert_int_equal(tjson_int(st, "handed_out"), BUDGET);
    assert_string_equal(tjson_str(st, "stop_reason"), "budget");
    json_decref(st);
    json_t *a = texp_assign(tgroup_d, "ctl-uniform", NULL);
    assert_true(json_is_true(tjson_get(a, "[0].exploit")));
    json_decref(a);
}

/* --- floor and control share against a policy that would starve them ---------------------- */

static void test_floor_and_control_thompson(void **state)
{
    (void)state;
    enum { K = 3, N = 400 };
    const double f = 0.08, s = 0.25;
    static const double p[K] = {0.05, 0.9, 0.1}; /* control worst; arm 1 best */
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"ctl-ts\",\"arms\":[\"ctl\",\"best\",\"weak\"],"
                            "\"policy\":{\"name\":\"thompson\"},\"goal\":{\"budget\":%d},"
                            "\"seed\":23,\"constraints\":{\"min_prob\":%g,"
                            "\"control\":{\"arm\":\"ctl\",\"share\":%g}}}",
                            N, f, s));
    /* The same policy without constraints, for contrast. */
    json_decref(texp_create(tgroup_d,
                            "{\"id\":\"free-ts\",\"arms\":[\"ctl\",\"best\",\"weak\"],"
                            "\"policy\":{\"name\":\"thompson\"},\"goal\":{\"budget\":%d},"
                            "\"seed\":23}",
                            N));
    static const char *const ids[2] = {"ctl-ts", "free-ts"};
    uint64_t count[2][K] = {{0}};
    for (int e = 0; e < 2; e++) {
        struct trng g;
        trng_seed(&g, 99);
        for (int t = 0; t < N; t++) {
            json_t *a = texp_assign(tgroup_d, ids[e], NULL);
            long long arm = tjson_int(a, "[0].arm_index");
            assert_false(json_is_true(tjson_get(a, "[0].exploit")));
            count[e][arm]++;
            assert_string_equal(
                texp_reward(tgroup_d, ids[e], tjson_str(a, "[0].id"), trng_bernoulli(&g, p[arm])),
                "accepted");
            json_decref(a);
        }
    }
    assert_at_least("thompson, control (share + floor)", count[0][0], N, s + f);
    assert_at_least("thompson, weak arm (floor)", count[0][2], N, f);
    assert_at_least("thompson, best arm (floor)", count[0][1], N, f);
    /* Without them the policy starves the control: the check above can
     * fail, it is the constraint that passes it. */
    assert_true((long long)count[1][0] <= binom_lower_critical(N, s + f, ALPHA));
    printf("# thompson without constraints: control %llu, best %llu, weak %llu of %d\n",
           (unsigned long long)count[1][0], (unsigned long long)count[1][1],
           (unsigned long long)count[1][2], N);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burn_in),
        cmocka_unit_test(test_floor_and_control_exact),
        cmocka_unit_test(test_floor_and_control_thompson),
    };
    return cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
}
