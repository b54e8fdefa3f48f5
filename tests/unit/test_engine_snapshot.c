/*
 * test_engine_snapshot.c — engine_snap (policies/engine.h): for every
 * policy of the registry, an engine saved at a random point of a run and
 * loaded into a fresh engine continues exactly as the engine that ran the
 * whole sequence (the daemon's full replay): the same next assignments,
 * the same statistics and status, and the same serialized state at the end,
 * bit for bit. A state of another shape, policy or a truncated one is
 * refused. Every seed is fixed.
 *
 * The run mixes what the daemon feeds an engine: assignments (bandit
 * chosen by the engine or named), rewards returned out of order and late,
 * releases (expiries), observations, pauses and a budget edit.
 *
 * A state that parses but whose fields disagree (a reward count changed,
 * a tie-break rank out of range or repeated, a flag neither 0 nor 1) is
 * refused too, for every policy; and no single damaged byte of a state
 * crashes a load (ASan and UBSan watch): it loads or is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "base/buf.h"
#include "base/ser.h"
#include "policies/engine.h"
#include "policies/rng.h"
#include "tests/support/tbytes.h"

#define MAX_PENDING 4096

/* What the run's driver keeps besides the engine: its own generator and the
 * pulls waiting for a reward. Copied at the snapshot so that both engines
 * see the same tail. */
struct driver {
    gsl_rng *rng;
    struct engine_pull pend[MAX_PENDING];
    size_t npend;
    int paused;
};

static void driver_copy(struct driver *dst, const struct driver *src)
{
    *dst = *src;
    dst->rng = gsl_rng_clone(src->rng);
    assert_non_null(dst->rng);
}

/* One step of the run on e. Returns the pull when it assigned one. */
static void step(struct engine *e, struct driver *d, size_t nb, const size_t *k, uint64_t budget)
{
    double u = gsl_rng_uniform(d->rng);
    if (u < 0.55 || d->npend == 0) {
        int bandit = gsl_rng_uniform(d->rng) < 0.3 ? (int)rng_index(d->rng, nb) : -1;
        struct engine_pull p;
        assert_int_equal(engine_assign(e, bandit, &p), 0);
        if (!p.exploit && d->npend < MAX_PENDING)
            d->pend[d->npend++] = p;
        return;
    }
    if (u < 0.90) {
        /* A reward, mostly of an old pull: out of order. */
        size_t i = rng_index(d->rng, d->npend < 4 ? d->npend : 4);
        struct engine_pull p = d->pend[i];
        d->pend[i] = d->pend[--d->npend];
        double mu = (double)(p.arm + 1) / (double)(k[p.bandit] + 1);
        engine_reward(e, p.bandit, p.arm, gsl_rng_uniform(d->rng) < mu ? 1.0 : 0.0);
        return;
    }
    if (u < 0.94) {
        struct engine_pull p = d->pend[0];
        d->pend[0] = d->pend[--d->npend];
        engine_release(e, p.bandit, p.arm);
        return;
    }
    if (u < 0.98) {
        size_t b = rng_index(d->rng, nb);
        engine_observe(e, b, rng_index(d->rng, k[b]), gsl_rng_uniform(d->rng));
        return;
    }
    if (u < 0.99) {
        d->paused = !d->paused;
        engine_set_paused(e, d->paused);
        return;
    }
    if (budget > 0) {
        struct policy_error err;
        (void)engine_set_budget(e, engine_budget(e) + 50, &err); /* refused by some: fine */
    }
}

/* e's serialized state (new, in *out). */
static void save(struct engine *e, struct buf *out)
{
    buf_init(out, 0);
    struct ser s;
    ser_writer(&s, out);
    engine_snap(e, &s);
    assert_true(ser_ok(&s));
    assert_true(out->len > 0);
}

static struct engine *make(const struct engine_config *c)
{
    struct policy_error err;
    struct engine *e = engine_create(c, &err);
    if (e == NULL)
        fail_msg("%s: %s: %s", c->policy->name, err.field, err.message);
    return e;
}

/* Load p[0..len) into a fresh engine of c: the engine, or NULL when refused. */
static struct engine *load(const struct engine_config *c, const void *p, size_t len)
{
    struct engine *e = make(c);
    struct ser s;
    ser_reader(&s, p, len);
    engine_snap(e, &s);
    if (!ser_end(&s)) {
        engine_free(e);
        return NULL;
    }
    return e;
}

static void same_status(struct engine *a, struct engine *b)
{
    assert_int_equal(engine_stop_reason(a), engine_stop_reason(b));
    assert_true(engine_pulls(a) == engine_pulls(b));
    assert_true(engine_pending(a) == engine_pending(b));
    assert_true(engine_handed_out(a) == engine_handed_out(b));
    for (size_t bd = 0; bd < engine_n_bandits(a); bd++) {
        size_t k = engine_n_arms(a, bd);
        assert_memory_equal(engine_arms(a, bd), engine_arms(b, bd), k * sizeof(struct stats_arm));
        unsigned char ha[64], hb[64];
        struct engine_bandit_status sa, sb;
        engine_bandit_status(a, bd, ha, &sa);
        engine_bandit_status(b, bd, hb, &sb);
        assert_memory_equal(ha, hb, k);
        /* field by field, bit for bit (the struct has padding) */
        assert_memory_equal(&sa.delta_c, &sb.delta_c, sizeof sa.delta_c);
        assert_memory_equal(&sa.cutoff, &sb.cutoff, sizeof sa.cutoff);
        assert_memory_equal(&sa.rho, &sb.rho, sizeof sa.rho);
        assert_memory_equal(&sa.glr, &sb.glr, sizeof sa.glr);
        assert_int_equal(sa.done, sb.done);
    }
}

/* Run `total` steps; save at step `at`, load into a fresh engine, run the
 * tail on both; compare. */
static void snapshot_case(const struct engine_config *c, uint64_t seed, size_t at, size_t total)
{
    struct engine *full = make(c);
    struct driver d = {.rng = gsl_rng_alloc(rng_xoshiro256ss)};
    assert_non_null(d.rng);
    rng_seed64(d.rng, seed);
    for (size_t i = 0; i < at; i++)
        step(full, &d, c->n_bandits, c->n_arms, c->budget);
    struct buf snap;
    save(full, &snap);
    struct engine *part = load(c, snap.p, snap.len);
    if (part == NULL)
        fail_msg("%s: its own snapshot refused", c->policy->name);
    /* Loaded, it saves the very same bytes. */
    struct buf again;
    save(part, &again);
    assert_int_equal(snap.len, again.len);
    assert_memory_equal(snap.p, again.p, snap.len);
    buf_free(&again);
    /* A truncated state, or one of another policy, is refused. */
    assert_null(load(c, snap.p, snap.len - 1));
    struct engine_config other = *c;
    other.policy = policy_find(strcmp(c->policy->name, "uniform") == 0 ? "thompson" : "uniform");
    other.budget = 0;
    other.epsilon = 0;
    other.target_arm = -1;
    other.goal = ENGINE_GOAL_TOP;
    other.control_arm = NULL;
    other.control_share = 0;
    other.margin = 0;
    policy_params_defaults(other.policy, &other.params);
    assert_null(load(&other, snap.p, snap.len));
    buf_free(&snap);

    struct driver d2;
    driver_copy(&d2, &d);
    for (size_t i = at; i < total; i++) {
        step(full, &d, c->n_bandits, c->n_arms, c->budget);
        step(part, &d2, c->n_bandits, c->n_arms, c->budget);
    }
    same_status(full, part);
    /* The next assignments, the bandit chosen by the engine and named. */
    for (int i = 0; i < 40; i++) {
        struct engine_pull pa, pb;
        int bandit = i % 3 == 0 ? (int)((size_t)i % c->n_bandits) : -1;
        assert_int_equal(engine_assign(full, bandit, &pa), 0);
        assert_int_equal(engine_assign(part, bandit, &pb), 0);
        if (pa.bandit != pb.bandit || pa.arm != pb.arm || pa.exploit != pb.exploit)
            fail_msg("%s (seed %llu, at %zu): assignment %d differs: %zu/%zu vs %zu/%zu",
                     c->policy->name, (unsigned long long)seed, at, i, pa.bandit, pa.arm, pb.bandit,
                     pb.arm);
    }
    struct buf fa, fb;
    save(full, &fa);
    save(part, &fb);
    assert_int_equal(fa.len, fb.len);
    assert_memory_equal(fa.p, fb.p, fa.len);
    buf_free(&fa);
    buf_free(&fb);
    engine_free(full);
    engine_free(part);
    gsl_rng_free(d.rng);
    gsl_rng_free(d2.rng);
}

static struct engine_config config_for(const struct policy_ops *p, size_t nb, const size_t *k,
                                       unsigned m)
{
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = nb;
    c.n_arms = k;
    c.m = m;
    c.delta = 0.1;
    c.tau = NAN;
    c.target_arm = (p->flags & POLICY_F_NEEDS_TARGET) ? 1 : -1;
    c.seed = 2026 + nb + m;
    c.policy = p;
    if (p->flags & POLICY_F_NEEDS_EPSILON)
        c.epsilon = 0.2;
    if ((p->flags & POLICY_F_FIXED_BUDGET) && !(p->flags & POLICY_F_FIXED_CONFIDENCE))
        c.budget = 600;
    if (p->flags & POLICY_F_CONTROL) { /* arm 0 the control of every bandit */
        static const int control[3] = {0, 0, 0};
        c.goal = ENGINE_GOAL_CONTROL;
        c.control_arm = control;
        c.margin = 0.05;
    }
    policy_params_defaults(p, &c.params);
    return c;
}

/* Every policy of the registry: one bandit (m = 1, and m = 2 where
 * supported) and three bandits, each at a few split points. */
static void test_every_policy(void **state)
{
    (void)state;
    size_t k1[] = {5}, k3[] = {3, 4, 5};
    size_t n = 0;
    gsl_rng *pick = gsl_rng_alloc(rng_xoshiro256ss);
    assert_non_null(pick);
    rng_seed64(pick, 7);
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++, n++) {
        const struct policy_ops *p = *pp;
        assert_non_null(p->snap);
        /* one bandit with m = 1, with m = 2, three bandits */
        for (unsigned i = 0; i < 3; i++) {
            if (i == 1 && !((p->flags & POLICY_F_TOPM) && !(p->flags & POLICY_F_CONTROL)))
                continue;
            struct engine_config c =
                config_for(p, i == 2 ? 3 : 1, i == 2 ? k3 : k1, i == 1 ? 2 : 1);
            struct policy_error err;
            if (engine_validate(&c, &err) != 0)
                fail_msg("%s: %s: %s", p->name, err.field, err.message);
            snapshot_case(&c, 11 + i, 0, 150);
            for (int j = 0; j < 3; j++)
                snapshot_case(&c, 100 * n + (uint64_t)j, 1 + rng_index(pick, 500), 600);
        }
    }
    gsl_rng_free(pick);
    assert_true(n >= 20);
}

/* The constraints' state (burn-in blocks, a control share, a floor) and a
 * retired arm ride the snapshot too. */
static void test_constraints(void **state)
{
    (void)state;
    size_t k[] = {4, 4};
    int control[] = {0, 0};
    struct engine_config c = config_for(policy_find("adapt"), 2, k, 1);
    c.burn_in = 6;
    c.burn_in_blocks[0] = 1;
    c.burn_in_blocks[1] = 2;
    c.n_burn_in_blocks = 2;
    c.control_arm = control;
    c.control_share = 0.2;
    c.min_prob = 0.05;
    for (uint64_t seed = 1; seed <= 4; seed++)
        snapshot_case(&c, seed, 20 * seed, 400);
    struct engine *e = make(&c);
    struct policy_error err;
    assert_int_equal(engine_retire_arm(e, 1, 3, &err), 0);
    struct buf b;
    save(e, &b);
    struct engine *l = load(&c, b.p, b.len);
    assert_non_null(l);
    assert_true(engine_arm_retired(l, 1, 3));
    buf_free(&b);
    engine_free(e);
    engine_free(l);
}

/* Where engine_snap puts the first arm's reward count and the first rank
 * (its layout: format, policy name, bandits, instances, each bandit's arm
 * count, the arms' statistics of 11 fields, then the ranks' count and the
 * ranks). */
static size_t off_arm0(const struct engine_config *c)
{
    return 8 + 8 + strlen(c->policy->name) + 8 + 8 + 8 * c->n_bandits;
}

static size_t off_rank0(const struct engine_config *c)
{
    size_t total = 0;
    for (size_t b = 0; b < c->n_bandits; b++)
        total += c->n_arms[b];
    return off_arm0(c) + total * 11 * 8 + 8;
}

/* Load copy of b with `n` bytes at `off` set to v: refused. */
static void refused(const struct engine_config *c, const struct buf *b, size_t off, int n,
                    uint64_t v, const char *what)
{
    unsigned char *copy = malloc(b->len);
    assert_non_null(copy);
    memcpy(copy, b->p, b->len);
    tbytes_put_le(copy + off, n, v);
    struct engine *l = load(c, copy, b->len);
    if (l != NULL)
        fail_msg("%s: a state with %s loaded", c->policy->name, what);
    free(copy);
}

static void test_damaged_state(void **state)
{
    (void)state;
    size_t k3[] = {3, 4, 5};
    size_t n = 0;
    for (const struct policy_ops *const *pp = policy_all(); *pp != NULL; pp++, n++) {
        struct engine_config c = config_for(*pp, 3, k3, 1);
        struct engine *e = make(&c);
        struct driver d = {.rng = gsl_rng_alloc(rng_xoshiro256ss)};
        assert_non_null(d.rng);
        rng_seed64(d.rng, 300 + n);
        for (int t = 0; t < 200; t++)
            step(e, &d, 3, k3, c.budget);
        struct buf b;
        save(e, &b);
        struct engine *l = load(&c, b.p, b.len); /* the layout is where expected */
        assert_non_null(l);
        assert_int_equal(tbytes_get_le((const unsigned char *)b.p + off_arm0(&c), 8),
                         engine_arms(e, 0)[0].n);
        engine_free(l);
        size_t a0 = off_arm0(&c), r0 = off_rank0(&c);
        uint64_t arm0 = tbytes_get_le((const unsigned char *)b.p + a0, 8);
        uint32_t rank0 = (uint32_t)tbytes_get_le((const unsigned char *)b.p + r0, 4);
        refused(&c, &b, a0, 8, arm0 + 1, "a reward count one too many");
        refused(&c, &b, a0 + 8, 8, tbytes_get_le((const unsigned char *)b.p + a0 + 8, 8) + 1,
                "a pending count one too many");
        /* lead rewards (the 8th field) beyond the arm's rewards, a pool
         * share (the 10th) beyond its cap */
        refused(&c, &b, a0 + (size_t)7 * 8, 8, arm0 + 1, "more lead rewards than rewards");
        refused(&c, &b, a0 + (size_t)9 * 8, 8, STATS_LEAD_POOLED + 1,
                "a pool share beyond its cap");
        refused(&c, &b, r0, 4, 3, "a rank out of range");
        refused(&c, &b, r0, 4, rank0 == 0 ? 1 : 0, "a rank twice");
        /* every 5th byte XORed: loads or is refused, never a crash */
        unsigned char *copy = malloc(b.len);
        assert_non_null(copy);
        for (size_t i = 0; i < b.len; i += 5) {
            memcpy(copy, b.p, b.len);
            copy[i] ^= (unsigned char)(0x5a + i);
            struct engine *x = load(&c, copy, b.len);
            if (x != NULL) {
                struct engine_pull p;
                (void)engine_assign(x, -1, &p);
                engine_free(x);
            }
        }
        free(copy);
        buf_free(&b);
        engine_free(e);
        gsl_rng_free(d.rng);
    }
    assert_true(n >= 20);
}

/* The codec's narrowed readers (base/ser.h): flags, indices, ranks. */
/* ser_varint and ser_zigzag (exp/snapshot.c's pending assignments): the
 * extremes come back as written, in the lengths LEB128 gives; a reader
 * refuses a form longer than needed, one over 64 bits and a cut one. */
static void test_ser_varints(void **state)
{
    (void)state;
    static const uint64_t u[] = {0, 1, 127, 128, 16383, 16384, UINT64_MAX / 2, UINT64_MAX};
    static const size_t ulen[] = {1, 1, 1, 2, 2, 3, 9, 10};
    static const int64_t z[] = {0, -1, 1, -64, 63, 64, INT64_MIN, INT64_MAX};
    static const size_t zlen[] = {1, 1, 1, 1, 1, 2, 10, 10};
    struct buf b;
    struct ser s;
    buf_init(&b, 0);
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        size_t at = b.len;
        uint64_t v = u[i];
        ser_writer(&s, &b);
        ser_varint(&s, &v);
        assert_int_equal(b.len - at, ulen[i]);
        int64_t w = z[i];
        at = b.len;
        ser_zigzag(&s, &w);
        assert_int_equal(b.len - at, zlen[i]);
        assert_true(ser_ok(&s));
    }
    ser_reader(&s, b.p, b.len);
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        uint64_t v = 0;
        int64_t w = 0;
        ser_varint(&s, &v);
        ser_zigzag(&s, &w);
        assert_true(v == u[i]);
        assert_true(w == z[i]);
    }
    assert_true(ser_end(&s));
    buf_free(&b);
    static const unsigned char overlong[] = {0x81, 0x00}, wide[] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                                                    0xff, 0xff, 0xff, 0xff, 0x02},
                               cut[] = {0x80};
    const unsigned char *bad[] = {overlong, wide, cut};
    size_t badlen[] = {sizeof overlong, sizeof wide, sizeof cut};
    for (size_t i = 0; i < 3; i++) {
        uint64_t v = 0;
        ser_reader(&s, bad[i], badlen[i]);
        ser_varint(&s, &v);
        assert_false(ser_ok(&s));
    }
}

static void test_ser_checks(void **state)
{
    (void)state;
    unsigned char f[3] = {0, 1, 0}, g[3];
    size_t ix[3] = {2, 0, 1}, iy[3];
    uint32_t perm[4] = {3, 0, 2, 1}, dup[4] = {3, 0, 3, 1};
    struct buf b;
    struct ser s;
    buf_init(&b, 0);
    ser_writer(&s, &b);
    ser_flags(&s, f, 3);
    ser_indices(&s, ix, 3, 3);
    assert_true(ser_ok(&s));
    ser_reader(&s, b.p, b.len);
    ser_flags(&s, g, 3);
    ser_indices(&s, iy, 3, 3);
    assert_true(ser_end(&s));
    assert_memory_equal(f, g, 3);
    assert_memory_equal(ix, iy, sizeof ix);
    ser_reader(&s, b.p, b.len);
    ser_flags(&s, g, 3);
    ser_indices(&s, iy, 3, 2); /* a 2 where 2 is out of range */
    assert_false(ser_ok(&s));
    ((unsigned char *)b.p)[8 + 1] = 2; /* a flag of 2 */
    ser_reader(&s, b.p, b.len);
    ser_flags(&s, g, 3);
    assert_false(ser_ok(&s));
    ser_reader(&s, b.p, b.len);
    ser_check_perm(&s, perm, 4);
    assert_true(ser_ok(&s));
    ser_check_perm(&s, dup, 4);
    assert_false(ser_ok(&s));
    ser_reader(&s, b.p, b.len);
    ser_check(&s, 0);
    assert_false(ser_ok(&s));
    ser_writer(&s, &b); /* a writer ignores the checks */
    ser_check(&s, 0);
    ser_check_perm(&s, dup, 4);
    assert_true(ser_ok(&s));
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_policy),  cmocka_unit_test(test_constraints),
        cmocka_unit_test(test_damaged_state), cmocka_unit_test(test_ser_checks),
        cmocka_unit_test(test_ser_varints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
