/*
 * test_stat_bayes.c — Bachman & Precup (2013)'s empirical claims for greedy
 * confidence pursuit, reproduced at small scale through the engine the
 * daemon serves:
 *
 *   §4, Fig. 1–2: Bayesian top-m selection (gcp, Alg. 2) reaches ρ̄ ≥ τ with
 *     fewer trials than uniform allocation, with instant and with delayed
 *     feedback;
 *   §6, Fig. 4a: with one easy bandit (gap 0.1) among hard ones (0.01 in the
 *     paper, 0.03 here so a run fits the time budget), GCP's bandit
 *     selection (Alg. 3) completes more bandits within the budget than
 *     uniform bandit selection with the same arm selection (the paper's
 *     Uni-* baseline, `gcp` with bandits=uniform);
 *   §6.1, Fig. 5a: the targeted variant (Alg. 4) completes more of the
 *     bandits whose target arm is best, and spends more of the budget there,
 *     than untargeted GCP.
 *
 * Method, as the paper's: every run draws a fresh instance with the paper's
 * generator, and both policies of a comparison see matching sequences of
 * trial outcomes (the t-th pull of arm j of bandit b in run r returns the
 * same draw whoever pulls it: a hash of (r, b, j, t)). Each claim is a
 * one-sided paired z-test at level 0.01 over the runs (the paired
 * differences are sums of many pulls' effects; 40+ runs make the normal
 * approximation adequate). Seeds are fixed; figures are printed as TAP
 * comments. No simulator dependency: the engine is driven directly.
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

#include "policies/engine.h"
#include "tests/support/drive.h"

#define MB 16
#define MK 16
#define Z_99 2.3263 /* one-sided normal quantile at level 0.01 */
#define TAU 0.95

/* ---- instances and outcome streams ----------------------------------------- */

struct inst {
    size_t nb, k;
    double p[MB][MK]; /* Bernoulli means */
    int target_best[MB];
};

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The t-th outcome of arm j of bandit b in run r, uniform in [0, 1). */
static double stream(uint64_t r, size_t b, size_t j, uint64_t t)
{
    uint64_t h = mix64(mix64(mix64(mix64(r) ^ b) ^ j) ^ t);
    return (double)(h >> 11) * 0x1.0p-53;
}

/* §4: K returns uniform in [0.1, 0.9], redrawn until the gap between the
 * m-th and (m+1)-th largest lies in [gmin, gmax]. */
static void gen_topm(gsl_rng *g, size_t k, unsigned m, double gmin, double gmax, struct inst *in)
{
    assert_true(m >= 1 && m < k && k <= MK); /* s[m] below is one of the k drawn */
    memset(in, 0, sizeof *in);
    in->nb = 1;
    in->k = k;
    for (;;) {
        double s[MK] = {0};
        for (size_t j = 0; j < k; j++)
            s[j] = in->p[0][j] = 0.1 + 0.8 * gsl_rng_uniform(g);
        /* insertion sort, descending */
        for (size_t i = 1; i < k; i++)
            for (size_t j = i; j > 0 && s[j] > s[j - 1]; j--) {
                double t = s[j];
                s[j] = s[j - 1];
                s[j - 1] = t;
            }
        double gap = s[m - 1] - s[m];
        if (gap >= gmin && gap <= gmax)
            return;
    }
}

/* §6: the best arm returns 0.5 + gap, the others are uniform in [0, 0.5]
 * shifted so that the second best returns 0.5. `best` < 0: a random arm. */
static void gen_bandit(gsl_rng *g, size_t k, double gap, int best, double *p)
{
    assert_true(k >= 2 && k <= MK && best < (int)k); /* v[q] below is one of the k − 1 drawn */
    double v[MK] = {0}, mx = -1;
    for (size_t j = 0; j + 1 < k; j++) {
        v[j] = 0.5 * gsl_rng_uniform(g);
        if (v[j] > mx)
            mx = v[j];
    }
    size_t b = best >= 0 ? (size_t)best : (size_t)gsl_rng_uniform_int(g, k);
    for (size_t j = 0, q = 0; j < k; j++)
        p[j] = j == b ? 0.5 + gap : v[q++] + 0.5 - mx;
}

/* ---- one run ------------------------------------------------------------------- */

struct outcome {
    uint64_t pulls;          /* handed out until the stop or the budget */
    int correct;             /* single bandit: the returned set is the true top m */
    size_t completed;        /* bandits with ρ̄ ≥ τ at the end */
    size_t completed_target; /* ... among those whose target arm is best */
    uint64_t pulls_target;   /* pulls spent in those bandits */
};

struct policy_choice {
    const char *name;
    const char *bandits; /* gcp's `bandits` param, or NULL */
    enum engine_stop_rule rule;
    int target;
};

static void simulate(const struct inst *in, const struct policy_choice *pc, unsigned m,
                     uint64_t budget, uint64_t delay, uint64_t cap, uint64_t run,
                     struct outcome *out)
{
    size_t na[MB];
    for (size_t b = 0; b < in->nb; b++)
        na[b] = in->k;
    struct engine_config c;
    memset(&c, 0, sizeof c);
    c.n_bandits = in->nb;
    c.n_arms = na;
    c.m = m;
    c.delta = 1 - TAU;
    c.tau = TAU;
    c.budget = budget;
    c.stop_rule = pc->rule;
    c.target_arm = pc->target;
    c.seed = run + 1;
    c.policy = policy_find(pc->name);
    assert_non_null(c.policy);
    policy_params_defaults(c.policy, &c.params);
    if (pc->bandits != NULL) {
        int i = policy_param_index(c.policy, "bandits");
        assert_true(i >= 0);
        char err[128];
        assert_int_equal(policy_param_parse(&c.policy->params[i], pc->bandits, &c.params.values[i],
                                            err, sizeof err),
                         0);
    }
    struct engine *e = tengine_create(&c);

    static uint64_t count[MB][MK];
    memset(count, 0, sizeof count);
    /* Delayed feedback: a FIFO of answered-but-not-delivered pulls. */
    struct fb {
        size_t b, j;
        double r;
    };
    static struct fb fifo[1024];
    assert_true(delay < 1024);
    size_t head = 0, n = 0;
    memset(out, 0, sizeof *out);
    while (!engine_stopped(e) && out->pulls < cap) {
        struct engine_pull pl;
        engine_assign(e, -1, &pl);
        if (pl.exploit)
            break;
        out->pulls++;
        if (in->target_best[pl.bandit])
            out->pulls_target++;
        double r =
            stream(run, pl.bandit, pl.arm, count[pl.bandit][pl.arm]++) < in->p[pl.bandit][pl.arm];
        fifo[(head + n) % 1024] = (struct fb){pl.bandit, pl.arm, r};
        n++;
        while (n > delay) {
            struct fb f = fifo[head];
            head = (head + 1) % 1024;
            n--;
            engine_reward(e, f.b, f.j, f.r);
        }
    }
    for (size_t b = 0; b < in->nb; b++) {
        unsigned char high[MK];
        struct engine_bandit_status st;
        engine_bandit_status(e, b, high, &st);
        if (st.rho >= TAU) {
            out->completed++;
            out->completed_target += in->target_best[b] != 0;
        }
        if (in->nb == 1) {
            /* the true top m: the m largest means (continuous draws, no ties) */
            int ok = 1;
            for (size_t j = 0; j < in->k; j++) {
                size_t above = 0;
                for (size_t i = 0; i < in->k; i++)
                    above += in->p[b][i] > in->p[b][j];
                ok &= (above < m) == (high[j] != 0);
            }
            out->correct = ok;
        }
    }
    engine_free(e);
}

/* ---- paired statistics ------------------------------------------------------------ */

struct paired {
    double n, sa, sb, sd, sd2;
};

static void paired_add(struct paired *p, double a, double b)
{
    p->n++;
    p->sa += a;
    p->sb += b;
    p->sd += a - b;
    p->sd2 += (a - b) * (a - b);
}

/* z of the mean paired difference a − b. */
static double paired_z(const struct paired *p)
{
    double md = p->sd / p->n;
    double var = (p->sd2 - p->n * md * md) / (p->n - 1);
    if (!(var > 0))
        return md > 0 ? INFINITY : md < 0 ? -INFINITY : 0;
    return md / sqrt(var / p->n);
}

/* ---- §4: top-m selection ---------------------------------------------------------- */

/* Mean trials to ρ̄ ≥ τ, gcp against uniform (stopped by the same ρ̄ rule:
 * the paper's, gcp's own, opt-in since its default is the proven GLR). */
static void topm_case(size_t k, unsigned m, uint64_t delay, int runs)
{
    const struct policy_choice gcp = {"gcp", NULL, ENGINE_RULE_POLICY, -1};
    const struct policy_choice uni = {"uniform", NULL, ENGINE_RULE_RHO, -1};
    const uint64_t cap = 400000;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 1000 + k * 10 + m + delay);
    struct paired p = {0};
    int correct_gcp = 0, correct_uni = 0;
    for (int r = 0; r < runs; r++) {
        struct inst in;
        gen_topm(g, k, m, 0.05, 0.15, &in);
        struct outcome a, b;
        simulate(&in, &gcp, m, 0, delay, cap, (uint64_t)r, &a);
        simulate(&in, &uni, m, 0, delay, cap, (uint64_t)r, &b);
        if (a.pulls >= cap || b.pulls >= cap)
            fail_msg("run %d hit the cap of %llu trials", r, (unsigned long long)cap);
        paired_add(&p, (double)b.pulls, (double)a.pulls); /* uniform − gcp */
        correct_gcp += a.correct;
        correct_uni += b.correct;
    }
    double z = paired_z(&p);
    print_message("# top-m K=%zu m=%u delay=%llu runs=%d: trials to rho>=%.2f gcp %.0f, "
                  "uniform %.0f (ratio %.2f, paired z %.1f); correct set gcp %d/%d, "
                  "uniform %d/%d\n",
                  k, m, (unsigned long long)delay, runs, TAU, p.sb / p.n, p.sa / p.n, p.sb / p.sa,
                  z, correct_gcp, runs, correct_uni, runs);
    if (!(z > Z_99))
        fail_msg("gcp is not faster than uniform to rho >= tau (z = %.2f)", z);
    gsl_rng_free(g);
}

static void test_topm_best_arm(void **state)
{
    (void)state;
    topm_case(10, 1, 0, 40);
}

static void test_topm_m3(void **state)
{
    (void)state;
    topm_case(10, 3, 0, 40);
}

static void test_topm_delayed(void **state)
{
    (void)state;
    topm_case(10, 3, 100, 40); /* Fig. 2b's delay of 100 trials */
}

/* ---- §6: greedy confidence pursuit over many bandits ------------------------------- */

static void test_multi_easy_among_hard(void **state)
{
    (void)state;
    const size_t nb = 8, k = 5;
    const uint64_t budget = 5000;
    const int runs = 60;
    const struct policy_choice gcp = {"gcp", "cost", ENGINE_RULE_POLICY, -1};
    const struct policy_choice uni_sel = {"gcp", "uniform", ENGINE_RULE_POLICY, -1};
    const struct policy_choice uni = {"uniform", NULL, ENGINE_RULE_RHO, -1};
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 4242);
    struct paired p = {0};
    double all_uniform = 0, easy_gcp = 0, easy_uni = 0;
    for (int r = 0; r < runs; r++) {
        struct inst in;
        memset(&in, 0, sizeof in);
        in.nb = nb;
        in.k = k;
        for (size_t b = 0; b < nb; b++)
            gen_bandit(g, k, b == 0 ? 0.1 : 0.03, -1, in.p[b]);
        in.target_best[0] = 1; /* here: marks the easy bandit */
        struct outcome a, b, c;
        simulate(&in, &gcp, 1, budget, 0, budget, (uint64_t)r, &a);
        simulate(&in, &uni_sel, 1, budget, 0, budget, (uint64_t)r, &b);
        simulate(&in, &uni, 1, budget, 0, budget, (uint64_t)r, &c);
        paired_add(&p, (double)a.completed, (double)b.completed);
        all_uniform += (double)c.completed;
        easy_gcp += (double)a.completed_target;
        easy_uni += (double)b.completed_target;
    }
    double z = paired_z(&p);
    print_message("# multi-bandit M=%zu K=%zu gaps 0.1/0.03 budget=%llu runs=%d: bandits "
                  "completed gcp %.2f, uniform bandit selection %.2f (paired z %.1f), uniform "
                  "policy %.2f; easy bandit completed gcp %.0f/%d, uniform selection %.0f/%d\n",
                  nb, k, (unsigned long long)budget, runs, p.sa / p.n, p.sb / p.n, z,
                  all_uniform / runs, easy_gcp, runs, easy_uni, runs);
    if (!(z > Z_99))
        fail_msg("gcp does not complete more bandits than uniform selection (z = %.2f)", z);
    gsl_rng_free(g);
}

/* ---- §6.1: the targeted variant ----------------------------------------------------- */

static void test_targeted(void **state)
{
    (void)state;
    const size_t nb = 8, k = 5, n_target = 2;
    const uint64_t budget = 3000;
    const int runs = 40;
    const struct policy_choice tgt = {"gcp-targeted", NULL, ENGINE_RULE_POLICY, 0};
    const struct policy_choice gcp = {"gcp", "cost", ENGINE_RULE_POLICY, -1};
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 777);
    struct paired done = {0}, share = {0}, all = {0};
    for (int r = 0; r < runs; r++) {
        struct inst in;
        memset(&in, 0, sizeof in);
        in.nb = nb;
        in.k = k;
        for (size_t b = 0; b < nb; b++) {
            /* the target (arm 0) is best in the first n_target bandits, some
             * other arm elsewhere; gaps uniform in [0.05, 0.1] (the paper's
             * [0.01, 0.1], scaled) */
            double gap = 0.05 + 0.05 * gsl_rng_uniform(g);
            int best = b < n_target ? 0 : 1 + (int)gsl_rng_uniform_int(g, k - 1);
            gen_bandit(g, k, gap, best, in.p[b]);
            in.target_best[b] = b < n_target;
        }
        struct outcome a, b;
        simulate(&in, &tgt, 1, budget, 0, budget, (uint64_t)r, &a);
        simulate(&in, &gcp, 1, budget, 0, budget, (uint64_t)r, &b);
        paired_add(&done, (double)a.completed_target, (double)b.completed_target);
        paired_add(&share, (double)a.pulls_target / (double)a.pulls,
                   (double)b.pulls_target / (double)b.pulls);
        paired_add(&all, (double)a.completed, (double)b.completed);
    }
    double zd = paired_z(&done), zs = paired_z(&share);
    print_message("# targeted M=%zu K=%zu (%zu target-best) budget=%llu runs=%d: target-best "
                  "bandits completed gcp-targeted %.2f, gcp %.2f (paired z %.1f); share of "
                  "pulls there %.2f vs %.2f (z %.1f); all bandits completed %.2f vs %.2f\n",
                  nb, k, n_target, (unsigned long long)budget, runs, done.sa / done.n,
                  done.sb / done.n, zd, share.sa / share.n, share.sb / share.n, zs, all.sa / all.n,
                  all.sb / all.n);
    if (!(zd > Z_99))
        fail_msg("gcp-targeted does not complete more target-best bandits (z = %.2f)", zd);
    if (!(zs > Z_99))
        fail_msg("gcp-targeted does not favour target-best bandits (z = %.2f)", zs);
    gsl_rng_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topm_best_arm), cmocka_unit_test(test_topm_m3),
        cmocka_unit_test(test_topm_delayed),  cmocka_unit_test(test_multi_easy_among_hard),
        cmocka_unit_test(test_targeted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
