/*
 * stats_glr.c — the GLR (Chernoff) statistic and stop rule (stats.h,
 * "GLR"): the pair statistic Z_ij (ε = 0: the pooled Bernoulli KL; ε > 0: its
 * ε-version for "i is ε-better than j"), the minimum over the pairs of a
 * returned set, the heuristic and the proven thresholds, each pair's
 * evidence (the KT mixtures' and the normal mixtures' e-values, mixed per
 * null point) and the stop loop over pairs. One implementation serves both
 * kinds of returned set: a top-m set given as a mask (the engine's stop
 * rules, the status endpoint) and one certified arm with ε (ttts and
 * track-and-stop).
 *
 * No allocation and no state but the caller's memo (stats_glr_stop_memo),
 * except in the leader product's stop without a memo (stats_lead.c).
 */
#include "policies/stats.h"

#include <math.h>

#include "policies/stats_impl.h"

/* The pairs a GLR statistic weighs: (i ∈ High, j ∉ High) for the claim
 * "μ_i ≥ μ_j + ε" (ε = 0: the usual order). High is the mask `high`, or the
 * single arm `best` when high is NULL. */
struct glr_set {
    const unsigned char *high;
    size_t best;
    double eps;
    unsigned m; /* the m the threshold was computed for (1 with best) */
    int lead;   /* the leader product may apply (STATS_GLR_PROVEN) */
};

static int glr_in_high(const struct glr_set *s, size_t i)
{
    return s->high != NULL ? s->high[i] != 0 : i == s->best;
}

/* What the statistic and the stop check before weighing pairs: −1 when there
 * is nothing to distinguish (k < 2, empty High or Low), 0 when there is no
 * evidence yet (an arm without data, or a Low arm above a High arm's mean
 * + ε), 1 when every pair can be weighed. */
static int glr_ready(const struct stats_arm *arms, size_t k, const struct glr_set *s)
{
    int got_h = 0, got_l = 0, empty = 0;
    double lo_high = 0.0, hi_low = 0.0;
    for (size_t i = 0; i < k; i++) {
        double m = arms[i].mean;
        if (arms[i].n == 0)
            empty = 1;
        if (glr_in_high(s, i)) {
            if (!got_h || m < lo_high)
                lo_high = m;
            got_h = 1;
        } else {
            if (!got_l || m > hi_low)
                hi_low = m;
            got_l = 1;
        }
    }
    if (!got_h || !got_l)
        return -1;
    if (empty || hi_low > lo_high + s->eps)
        return 0;
    return 1;
}

/* inf over x of nb d(mb, x) + nj d(mj, x + ε): convex in x, so bisect on the
 * sign of the derivative nb (x − mb)/V(x) + nj (x + ε − mj)/V(x + ε) over
 * [max(mj − ε, 0), min(mb, 1 − ε)], where it goes from ≤ 0 to ≥ 0. The
 * derivative reads the means through the coarser clamp STATS_KL_MU_CLAMP. */
static double pair_eps(double nb, double mb, double nj, double mj, double eps)
{
    double lo = mj - eps > 0 ? mj - eps : 0.0;
    double hi = mb < 1.0 - eps ? mb : 1.0 - eps;
    for (int it = 0; it < 64 && hi - lo > 1e-15; it++) {
        double x = 0.5 * (lo + hi);
        double u = stats_kl_clamp(x, STATS_KL_MU_CLAMP);
        double v = stats_kl_clamp(x + eps, STATS_KL_MU_CLAMP);
        double h = nb * (u - mb) / (u * (1 - u)) + nj * (v - mj) / (v * (1 - v));
        if (h > 0)
            hi = x;
        else
            lo = x;
    }
    double x = 0.5 * (lo + hi);
    return nb * stats_kl_bern(mb, x) + nj * stats_kl_bern(mj, x + eps);
}

/* Z_ij of one pair (both arms with data). ε = 0: n_i kl(μ̂_i, μ̂_ij) +
 * n_j kl(μ̂_j, μ̂_ij), μ̂_ij the pooled mean; ε > 0: the infimum over
 * λ_j ≥ λ_i + ε (pair_eps). Bernoulli KL: for rewards in [0, 1] the Bernoulli
 * log-MGF dominates every distribution with the same mean (convexity of
 * e^{λx}), so the Bernoulli GLR and its thresholds are valid for any [0, 1]
 * rewards. */
double stats_glr_pair_z(const struct stats_arm *ai, const struct stats_arm *aj, double eps)
{
    double ni = (double)ai->n, mi = ai->mean;
    double nj = (double)aj->n, mj = aj->mean;
    if (eps > 0)
        return pair_eps(ni, mi, nj, mj, eps);
    double mij = (ni * mi + nj * mj) / (ni + nj);
    return ni * stats_kl_bern(mi, mij) + nj * stats_kl_bern(mj, mij);
}

/* Pinsker (d(p, q) ≥ 2(p − q)²) bounds a pair's statistic from below by the
 * quadratic problem's value 2 (n_i n_j/(n_i + n_j)) (μ̂_i + ε − μ̂_j)². */
static double glr_pair_pinsker(const struct stats_arm *ai, const struct stats_arm *aj, double eps)
{
    double ni = (double)ai->n, nj = (double)aj->n;
    double g = ai->mean + eps - aj->mean;
    return 2.0 * ni * nj / (ni + nj) * g * g;
}

/* The minimum of Z_ij over the set's pairs. Pairs whose Pinsker bound
 * already reaches the smallest exact value so far are skipped, the pair of
 * least bound being computed first: only the minimum's value matters, so
 * skipping is exact. At K = 1000 this leaves a handful of logarithms instead
 * of 4000. Cost O(|High| · |Low|) bounds. */
static double glr_min(const struct stats_arm *arms, size_t k, const struct glr_set *s)
{
    int ready = glr_ready(arms, k, s);
    if (ready <= 0)
        return ready < 0 ? INFINITY : 0.0;
    size_t si = k, sj = k;
    double seed_lb = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (!glr_in_high(s, i))
            continue;
        for (size_t j = 0; j < k; j++) {
            if (glr_in_high(s, j))
                continue;
            double lb = glr_pair_pinsker(&arms[i], &arms[j], s->eps);
            if (lb < seed_lb) {
                seed_lb = lb;
                si = i;
                sj = j;
            }
        }
    }
    double z = si < k ? stats_glr_pair_z(&arms[si], &arms[sj], s->eps) : INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (!glr_in_high(s, i))
            continue;
        for (size_t j = 0; j < k; j++) {
            if (glr_in_high(s, j) || (i == si && j == sj))
                continue;
            if (glr_pair_pinsker(&arms[i], &arms[j], s->eps) >= z)
                continue;
            double zij = stats_glr_pair_z(&arms[i], &arms[j], s->eps);
            if (zij < z)
                z = zij;
        }
    }
    return z;
}

double stats_glr(const struct stats_arm *arms, size_t k, const unsigned char *high)
{
    struct glr_set s = {high, 0, 0.0, 0, 0};
    return glr_min(arms, k, &s);
}

double stats_glr_best(const struct stats_arm *arms, size_t k, size_t best, double eps)
{
    struct glr_set s = {NULL, best, eps > 0 ? eps : 0.0, 1, 0};
    return glr_min(arms, k, &s);
}

/* --- the proven threshold: Jeffreys (Krichevsky–Trofimov) mixtures --------
 *
 * For one arm with N rewards summing to S, write L(θ) = θ^S (1 − θ)^(N−S)
 * and KT = ∫ L(θ) Beta(1/2, 1/2)(dθ) = B(S + 1/2, N − S + 1/2) / π.
 * (a) Under the arm's true mean μ, KT/L(μ) is a nonnegative supermartingale
 *     with initial value 1: each reward x ∈ [0, 1] multiplies L(θ)/L(μ) by
 *     (θ/μ)^x ((1−θ)/(1−μ))^(1−x), a convex function of x, whose mean is at
 *     most its Bernoulli(μ) mean, 1 (so Bernoulli KL applies to any [0, 1]
 *     rewards); a fixed mixture over θ keeps the property, and pulls chosen
 *     on the past (or rewards returned late) do not break it.
 * (b) ln L(μ̂) − ln L(λ) = N kl(μ̂, λ) exactly, for every λ.
 * So N kl(μ̂, μ) = ln(KT/L(μ)) + r with r = ln L(μ̂) − ln KT ≥ 0, the
 * mixture's regret, computable from (N, S) alone.
 * If a returned set is wrong, some pair (i ∈ High, j ∈ Low) is truly ordered
 * the other way (μ_i ≤ μ_j; with ε > 0 too, see stats_glr_best), the truth is in the
 * set Z_ij minimises over, and
 *   Z_ij ≤ N_i kl(μ̂_i, μ_i) + N_j kl(μ̂_j, μ_j) = ln(M_i M_j) + r_i + r_j,
 * M_a = KT_a/L_a(μ_a). The product of independent arms' supermartingales is
 * one (only one arm moves per reward), so by Ville's inequality
 * P(∃t: M_i M_j ≥ P/δ) ≤ δ/P; a union over the P = m(K − m) pairs (truly
 * Low, truly High) that can be wrong gives: stopping when every pair has
 *   Z_ij > ln(P/δ) + r_i + r_j
 * errs with probability at most δ, for any sampling rule.
 * This is the proof of Garivier & Kaufmann (2016, COLT, §3, Chernoff's
 * stopping rule: for Bernoulli bandits β(t, δ) = ln(2t(K − 1)/δ) is δ-PAC,
 * by the KT mixture and its regret bound r ≤ ½ ln N + ln 2) with the
 * regret computed exactly instead of bounded: since r_i + r_j ≤
 * ½ ln(N_i N_j) + 2 ln 2 ≤ ln(2(N_i + N_j)), this is never above their
 * threshold (m = 1), and about 0.47 nats per arm below it in the interior
 * (r → ½ ln(πN/2)). Kaufmann & Koolen (2021)'s 2𝒯(ln(P/δ)/2) +
 * 6 ln(1 + ln(t/2)), the threshold before, is 2.5–3 times larger at the
 * sample sizes we serve: its ln ln N terms only win beyond N ≈ 10¹⁶ per
 * arm, so a minimum of the two (each at δ/2) would never pay.
 *
 * The proven rule (stats_glr_stop, stats_glr_stop_best) mixes this e-value
 * with a second one for the same pair, the product of the two arms'
 * one-sided normal mixtures (stats_pair_mixture, below), and with the two
 * cross products, at each point of the pair's null, and takes the
 * infimum of the mixture (below stats_pair_mixture). The mixture's regret
 * is ½ ln(1 + V/ρ) per arm instead of ½ ln(πN/2) (its prior sits on the
 * null instead of spreading over [0, 1]), which on means near 1/2 needs
 * about 40% fewer samples; far from 1/2, or for an arm far from the
 * cutoff, the KT factor carries the evidence. */

/* ln Γ(x + 1/2) − (x ln x − x + ½ ln 2π), x ≥ 0: Stirling's remainder,
 * by its asymptotic series beyond x = 100 (the next term is below 1e-13
 * there) because the difference of two numbers near x ln x loses every
 * digit at large x. */
static double stirling_half(double x)
{
    if (x < 100.0)
        return lgamma(x + 0.5) - (x > 0.0 ? x * log(x) : 0.0) + x - 0.5 * log(2.0 * M_PI);
    double x2 = x * x;
    return -1.0 / (24.0 * x) + 7.0 / (2880.0 * x * x2);
}

/* ln Γ(N + 1) − (N ln N − N + ½ ln 2πN), N ≥ 1, likewise. */
static double stirling_one(double n)
{
    if (n < 100.0)
        return lgamma(n + 1.0) - n * log(n) + n - 0.5 * log(2.0 * M_PI * n);
    double n2 = n * n;
    return 1.0 / (12.0 * n) - 1.0 / (360.0 * n * n2);
}

/* r = S ln μ̂ + F ln(1 − μ̂) − ln B(S + ½, F + ½) + ln π with F = N − S,
 * μ̂ = S/N; Stirling's formula cancels the large terms exactly:
 * r = ½ ln(πN/2) − ρ(S) − ρ(F) + ρ₁(N), ρ and ρ₁ the remainders above.
 * F is N(1 − μ̂), not N − S: N − S loses S's rounding (half an ulp of N,
 * 6e-5 at N = 10^12) against a small F, and ρ(F) moves by ln(1/F) times
 * that: 1.4e-10 nats at N = 3.3·10^6, F = 0.09, above the pair e-value's
 * 1e-11 relative margin. 1 − μ̂ is exact for μ̂ ≥ ½ (Sterbenz). */
double stats_kt_regret(double n, double mean)
{
    if (!(n > 0.0))
        return 0.0;
    if (!(mean > 0.0))
        mean = 0.0;
    else if (mean > 1.0)
        mean = 1.0;
    double s = n * mean, f = n * (1.0 - mean);
    return 0.5 * log(M_PI * n / 2.0) - stirling_half(s) - stirling_half(f) + stirling_one(n);
}

/* --- the second e-value of the proven rule: per-arm normal mixtures --------
 * The pair's null (recommending i over j is wrong) is μ_j ≥ μ_i + ε, ε ≥ 0.
 * For a cutoff c ∈ [0, 1 − ε], arm i's one-sided normal mixture M_i(c)
 * (λ ≥ 0 on the deviation S = Σ(x − c), as in stats_anytime_hoeffding_conf)
 * is a nonnegative supermartingale whenever μ_i ≤ c (by Hoeffding's lemma
 * each λ-factor has conditional mean e^{λ(μ_i − c)} ≤ 1), and arm j's
 * lower mixture M_j(c + ε) (λ ≥ 0 on Σ(c + ε − x)) whenever μ_j ≥ c + ε.
 * Under the null c* = μ_i lies in [0, 1 − ε] (μ_i + ε ≤ μ_j ≤ 1) and both
 * hold, so
 *   inf_{c ∈ [0, 1−ε]} M_i(c) M_j(c + ε) ≤ M_i(c*) M_j(c* + ε),
 * and the right side is a test supermartingale on the filtration of all
 * rewards: each reward moves one factor only, its arm chosen on the past
 * (with delays, the reward is independent of what arrived in between), and
 * mixing the two λ's over a product prior keeps the property (Fubini).
 * The KT e-value is bounded by a test martingale on the same filtration
 * (stats_kt_regret's mixture over the likelihood at the true means); how
 * the rule mixes the two is below stats_pair_mixture. (Robbins 1970; Howard et al. 2021 §3.2 for
 * the mixture; the infimum over the null as in Kaufmann & Koolen 2021's GLR with mixtures.)
 *
 * The infimum: ln M is convex and increasing in the deviation (a log of a
 * mixture of exponentials of it, λ ≥ 0), so A(c) = ln M_i(c) falls,
 * B(c) = ln M_j(c + ε) rises, and A + B is convex in c. Golden section
 * keeps the minimiser in its bracket [a, b] (in exact arithmetic), and on
 * [a, b] A ≥ A(b), B ≥ B(a): A(b) + B(a) is a lower bound on the infimum,
 * the bracket's width only making it lower. Rounding can misorder two
 * points only when their values agree to rounding, and convexity bounds
 * what such a misstep can hide (1.62 times that difference: the slope
 * beyond the points is at least their secant's), so a margin of 1e-11
 * relative (against errors of 1e-13 at most) makes the value a lower bound
 * whatever rounding did. Sub-Gaussian (variance 1/4): as sharp as Bernoulli
 * KL near p = 1/2, loose far from it, where the KT part of the evidence
 * carries it. */

/* One pair's mixture problem: A(c) + B(c) above. */
struct pair_mix {
    double ni, mi, vi, si, ci;
    double nj, mj, vj, sj, cj;
    double eps;
};

static void pair_mix_init(struct pair_mix *p, double ni, double mi, double nj, double mj,
                          double eps)
{
    p->ni = ni > 0.0 ? ni : 0.0;
    p->nj = nj > 0.0 ? nj : 0.0;
    p->mi = mi;
    p->mj = mj;
    p->eps = eps > 0.0 ? eps : 0.0;
    p->vi = p->ni / 4.0 + PAIR_RHO_HIGH;
    p->si = sqrt(p->vi);
    p->ci = M_LN2 + 0.5 * log(PAIR_RHO_HIGH / p->vi);
    p->vj = p->nj / 4.0 + MIX_RHO;
    p->sj = sqrt(p->vj);
    p->cj = mix_c0(p->vj);
}

/* Arm j's null mean c + ε rounded down to a double (at most 1), and the top
 * of the null's range of c, 1 − ε rounded up: both factors of arm j grow
 * with c + ε, so a sum rounded down only lowers them, and a range a half
 * ulp too wide only adds points. Rounded to nearest instead, a c just
 * below 1 − ε read c + ε as 1 (arm j's KT factor +∞ where it is finite:
 * ε = 0.85 made the middle piece [0.15, 1 − ε] one ulp wide and lost it,
 * 0.78 nats too much at N_i = 10^10), and 1 − ε rounded down dropped the
 * range's top (ε = 0.15: the last piece's only point). Exact for ε = 0. */
static double null_sum(double c, double eps)
{
    double s = c + eps, e = s - c;
    if ((c - (s - e)) + (eps - e) < 0.0) /* TwoSum: the rounding error */
        s = nextafter(s, -INFINITY);
    return s < 1.0 ? s : 1.0;
}

static double null_top(double eps)
{
    double hi = 1.0 - eps;
    if (!(hi > 0.0))
        return 0.0;
    return 1.0 - hi > eps ? nextafter(hi, 2.0) : hi; /* 1 − hi is exact (Sterbenz) */
}

static double pair_a(const struct pair_mix *p, double c)
{
    return mix_logm_lower(p->ni * (p->mi - c), p->vi, p->si, p->ci);
}

static double pair_b(const struct pair_mix *p, double c)
{
    return mix_logm_lower(p->nj * (null_sum(c, p->eps) - p->mj), p->vj, p->sj, p->cj);
}

#define PAIR_GOLDEN 64 /* 0.618^64 < 1e-13 on [0, 1] */

static double pair_mix_sum(void *ctx, double c)
{
    const struct pair_mix *p = ctx;
    return pair_a(p, c) + pair_b(p, c);
}

static double pair_mix_lower(struct pair_mix *p)
{
    double a = 0.0, b = null_top(p->eps);
    if (!(b > a)) /* ε ≥ 1: at most the point c = 0 is in the null */
        return pair_a(p, 0.0) + pair_b(p, 0.0);
    golden_section(pair_mix_sum, p, &a, &b, PAIR_GOLDEN, -1.0);
    double v = pair_a(p, b) + pair_b(p, a);
    return v - 1e-11 * (1.0 + fabs(v));
}

double stats_pair_mixture(double ni, double mi, double nj, double mj, double eps)
{
    struct pair_mix p;
    pair_mix_init(&p, ni, mi, nj, mj, eps);
    return pair_mix_lower(&p);
}

/* --- the proven rule's pair e-value: four products, mixed per null point ---
 * The pair's null is a point (c, c') with c' ≥ c + ε, c ∈ [0, 1 − ε]
 * (μ_i = c, μ_j = c'). For each arm two e-processes for its mean, both
 * bounded by test supermartingales at the true mean: the KT mixture's
 * KT_a/L_a(θ) (stats_kt_regret, above) and the one-sided normal mixture
 * (pair_a, pair_b). The product of one of arm i's with one of arm j's is
 * bounded by a test supermartingale on the filtration of all rewards (each
 * reward moves one factor), so for weights w_s(c) ≥ 0 summing to 1, fixed
 * before any data, on the four products s ∈ {KT·KT, KT·N, N·KT, N·N}
 * (arm i's factor first),
 *   E(c, c') = Σ_s w_s(c) X_s(c, c')
 * at the true point is one too (a mean of e-processes with fixed weights:
 * Vovk & Wang 2021), and inf over the null of E is an e-value for the
 * pair, to which Ville's inequality and the union over the P pairs apply.
 * For a fixed c, arm j's KT factor e^{N_j kl(μ̂_j, c') − r_j} is least over
 * c' ≥ c + ε at max(c + ε, μ̂_j), and its normal mixture grows with c', so
 *   inf_{c' ≥ c+ε} E(c, c') ≥ f(c) = Σ_s w_s(c) e^{x_s(c)},
 * x_s the sum of the two factors' logs: for arm i
 *   K_i(c) = N_i kl(μ̂_i, c) − r_i   or   N_i(c) = pair_a(c),
 * for arm j
 *   K_j(c) = N_j kl(μ̂_j, max(c + ε, μ̂_j)) − r_j   or   N_j(c) = pair_b(c).
 * Each is convex in c (kl(p, ·) is convex with its minimum 0 at p, so
 * kl(p, max(x, p)) is convex in x; ln M is convex, its deviation affine in
 * c), so each e^{x_s} and any positive combination of them is log-convex.
 *
 * The weights are piecewise constant on a fixed partition of [0, 1]
 * (PAIR_W). On a piece, f_k is log-convex: golden section keeps its
 * minimiser in the bracket [a, b] (in exact arithmetic). Each factor is a
 * nonincreasing part plus a nondecreasing one (K_i: N_i kl(μ̂_i, min(c,
 * μ̂_i)) − r_i and N_i kl(μ̂_i, max(c, μ̂_i)); N_i nonincreasing; K_j, N_j
 * nondecreasing), so on [a, b] f_k ≥ Σ_s w_s e^{D_s(b) + I_s(a)}: at the
 * final bracket a lower bound on the piece's infimum (the bracket's width
 * only making it lower), at a whole piece a cheap first test. The pieces'
 * closed intervals cover [0, 1 − ε], so the least of their bounds is a
 * lower bound on inf_c f. Rounding: as for the normal mixtures alone
 * (above), a margin of 1e-11 relative. With weights ½ on KT·KT and N·N this
 * is never below the mean of the two separate infima, the rule before:
 * the infimum of a sum is at least the sum of the infima. */

/* The weights: a fixed function of the High arm's null mean c, piecewise
 * constant. The cost of a weight w on the product that carries the
 * evidence is ln(1/w). N·N is sharp near c = ½, where the normal mixtures'
 * regret ½ ln(1 + V/ρ) is far below the KT one ½ ln(πN/2) and the
 * sub-Gaussian variance ¼ is nearly c(1 − c); KT·KT near 0 and 1, where
 * c(1 − c) ≪ ¼ makes the KT exponent the larger; N·KT where the Low arm is
 * far from c with few samples (a challenger of a top-two sampler): the
 * normal mixture's regret ρλ*²/2 grows with the square of the arm's
 * deviation, the KT one does not. ln w is kept with w (the unit tests
 * recompute it). The table is candidate D of docs/stop-rules.md ("Four
 * products and their weights"), chosen by the rule that chose ρ_H: the
 * smallest worst ratio to the best of five candidates (the rule before
 * among them) in paired runs, 1.013 against 1.135 for the rule before. Any
 * table fixed before the data keeps the proof. */
#define PAIR_W_MAX 8
#define PAIR_TERMS 4 /* KT·KT, KT·N, N·KT, N·N: arm i's factor first */
struct pair_w {
    int n;                             /* pieces */
    double edge[PAIR_W_MAX + 1];       /* 0 = edge[0] < … < edge[n] = 1 */
    double w[PAIR_W_MAX][PAIR_TERMS];  /* on [edge[k], edge[k + 1]] */
    double lw[PAIR_W_MAX][PAIR_TERMS]; /* ln w (−∞ for 0) */
};

static const struct pair_w PAIR_W = {
    3,
    {0.0, 0.15, 0.85, 1.0},
    {
        {0.75, 0.0625, 0.125, 0.0625},
        {0.015625, 0.0078125, 0.125, 0.8515625},
        {0.75, 0.0625, 0.125, 0.0625},
    },
    {
        {-0.2876820724517809, -2.772588722239781, -2.0794415416798357, -2.772588722239781},
        {-4.1588830833596715, -4.852030263919617, -2.0794415416798357, -0.16068238169047347},
        {-0.2876820724517809, -2.772588722239781, -2.0794415416798357, -2.772588722239781},
    },
};

/* The piece that holds c (the first, at an edge). */
static int pair_w_piece(const struct pair_w *t, double c)
{
    int k = 0;
    while (k + 1 < t->n && c > t->edge[k + 1])
        k++;
    return k;
}

void stats_glr_pair_weights(double c, double w[4], double ln_w[4])
{
    const struct pair_w *t = &PAIR_W;
    int k = pair_w_piece(t, c);
    for (int s = 0; s < PAIR_TERMS; s++) {
        if (w != NULL)
            w[s] = t->w[k][s];
        if (ln_w != NULL)
            ln_w[s] = t->lw[k][s];
    }
}

/* One pair's problem: the normal mixtures', the KT ones' (counts, means,
 * regrets), and the current piece's ln weights. */
struct pair_ev {
    struct pair_mix mix;
    double ni, mi, nj, mj, eps, hi; /* hi = null_top(ε): the null's c range */
    double ri, rj;
    const double *lw;
};

static void pair_ev_init(struct pair_ev *e, const struct stats_arm *ai, const struct stats_arm *aj,
                         double eps, double ri, double rj)
{
    e->ni = (double)ai->n;
    e->nj = (double)aj->n;
    e->mi = unit_clamp(ai->mean);
    e->mj = unit_clamp(aj->mean);
    e->eps = eps > 0.0 ? eps : 0.0;
    e->hi = null_top(e->eps);
    e->ri = ri;
    e->rj = rj;
    e->lw = PAIR_W.lw[0];
    pair_mix_init(&e->mix, e->ni, ai->mean, e->nj, aj->mean, e->eps);
}

/* K_i's nonincreasing part, with −r_i. */
static double ev_ki_dec(const struct pair_ev *e, double c)
{
    return (e->ni > 0.0 && c < e->mi ? e->ni * kl_exact(e->mi, c) : 0.0) - e->ri;
}

/* K_i's nondecreasing part. */
static double ev_ki_inc(const struct pair_ev *e, double c)
{
    return e->ni > 0.0 && c > e->mi ? e->ni * kl_exact(e->mi, c) : 0.0;
}

/* K_j (nondecreasing). */
static double ev_kj(const struct pair_ev *e, double c)
{
    double cj = null_sum(c, e->eps);
    return (e->nj > 0.0 && cj > e->mj ? e->nj * kl_exact(e->mj, cj) : 0.0) - e->rj;
}

/* ln Σ_s w_s e^{x_s} from the four factors' logs. */
static double ev_combine(const struct pair_ev *e, double ki, double ni, double kj, double nj)
{
    double x[PAIR_TERMS] = {ki + kj, ki + nj, ni + kj, ni + nj};
    double hi = -INFINITY;
    for (int s = 0; s < PAIR_TERMS; s++) {
        /* a weight 0 drops its product, even an infinite one */
        x[s] = e->lw[s] == -INFINITY ? -INFINITY : e->lw[s] + x[s];
        hi = x[s] > hi ? x[s] : hi;
    }
    if (hi == -INFINITY || hi == INFINITY || hi != hi)
        return hi;
    double sum = 0.0;
    for (int s = 0; s < PAIR_TERMS; s++)
        sum += exp(x[s] - hi);
    return hi + log(sum);
}

/* ln f_k(c) with the current piece's weights. */
static double ev_f(void *ctx, double c)
{
    const struct pair_ev *e = ctx;
    return ev_combine(e, ev_ki_dec(e, c) + ev_ki_inc(e, c), pair_a(&e->mix, c), ev_kj(e, c),
                      pair_b(&e->mix, c));
}

/* The lower bound on ln f_k over [a, b] from the monotone parts, less the
 * rounding margin. +∞ stays +∞: the margin's ∞ − ∞ would be a NaN, which
 * failed every pair whose last piece is the single point c = 1 − ε (ε =
 * 0.15: 1 − ε is the edge 0.85), where arm j's KT factor is infinite. */
static double ev_bound(const struct pair_ev *e, double a, double b)
{
    double v = ev_combine(e, ev_ki_dec(e, b) + ev_ki_inc(e, a), pair_a(&e->mix, b), ev_kj(e, a),
                          pair_b(&e->mix, a));
    return v == INFINITY ? v : v - 1e-11 * (1.0 + fabs(v));
}

/* Piece k ∩ [0, hi] as [*a, *b], its weights current; 0 when the piece
 * lies beyond hi. */
static int ev_piece(struct pair_ev *e, const struct pair_w *t, int k, double *a, double *b)
{
    *a = t->edge[k];
    *b = t->edge[k + 1] < e->hi ? t->edge[k + 1] : e->hi;
    if (*a > *b)
        return 0;
    e->lw = t->lw[k];
    return 1;
}

#define PAIR_TOL 4e-14 /* golden section's final bracket: 0.618^64 on [0, 1] */

/* Where the Gaussian approximation of the normal mixtures is least: a
 * point near the minimiser of f, whose value bounds the infimum above. */
static double ev_guess(const struct pair_ev *e)
{
    double n = e->ni + e->nj;
    double c = n > 0.0 ? (e->ni * e->mi + e->nj * (e->mj - e->eps)) / n : 0.0;
    return c < 0.0 ? 0.0 : c > e->hi ? e->hi : c;
}

/* ln of the pair's e-value as computed: the least bound over the pieces. */
static double pair_ev_lower(const struct stats_arm *ai, const struct stats_arm *aj, double eps,
                            double ri, double rj)
{
    const struct pair_w *t = &PAIR_W;
    struct pair_ev e;
    pair_ev_init(&e, ai, aj, eps, ri, rj);
    double v = INFINITY;
    for (int k = 0; k < t->n; k++) {
        double a, b;
        if (!ev_piece(&e, t, k, &a, &b))
            continue;
        golden_section(ev_f, &e, &a, &b, PAIR_GOLDEN, PAIR_TOL);
        double x = ev_bound(&e, a, b);
        if (x != x) /* never an overstatement, whatever went wrong */
            x = -INFINITY;
        v = x < v ? x : v;
    }
    return v;
}

/* A lower bound on pair_ev_lower without any search: f ≥ w_KT·KT e^{K_i +
 * K_j}, and Pinsker (kl(p, q) ≥ 2(p − q)²) bounds K_i + K_j + r_i + r_j
 * below by 2N_i(μ̂_i − c)₊² + 2N_j(c + ε − μ̂_j)₊², a convex function of c
 * least, on a piece, at its unconstrained minimiser clamped into the piece.
 * Less a margin of 1e-9 for rounding in the search's kl. −∞ when the
 * weights put nothing on KT·KT. */
static double pair_ev_pinsker(const struct stats_arm *ai, const struct stats_arm *aj, double eps,
                              double ri, double rj)
{
    const struct pair_w *t = &PAIR_W;
    double ni = (double)ai->n, nj = (double)aj->n, mi = ai->mean, mj = aj->mean;
    eps = eps > 0.0 ? eps : 0.0;
    double hi = null_top(eps);
    double n = ni + nj;
    double cs = n > 0.0 ? (ni * mi + nj * (mj - eps)) / n : 0.0;
    double v = INFINITY;
    for (int k = 0; k < t->n; k++) {
        double a = t->edge[k], b = t->edge[k + 1] < hi ? t->edge[k + 1] : hi;
        if (a > b)
            break;
        double c = cs < a ? a : cs > b ? b : cs;
        double gi = mi - c > 0.0 ? mi - c : 0.0, gj = c + eps - mj > 0.0 ? c + eps - mj : 0.0;
        double x = t->lw[k][0] + 2.0 * ni * gi * gi + 2.0 * nj * gj * gj;
        v = x < v ? x : v;
    }
    v -= ri + rj;
    return v - 1e-9 * (1.0 + fabs(v));
}

double stats_glr_pair_evidence(enum stats_glr_threshold kind, const struct stats_arm *ai,
                               const struct stats_arm *aj, double z, double eps)
{
    if (kind == STATS_GLR_HEURISTIC)
        return z;
    return pair_ev_lower(ai, aj, eps, stats_kt_regret((double)ai->n, ai->mean),
                         stats_kt_regret((double)aj->n, aj->mean));
}

double stats_glr_pair_evidence_lower(enum stats_glr_threshold kind, const struct stats_arm *ai,
                                     const struct stats_arm *aj, double eps)
{
    double g = ai->mean + (eps > 0.0 ? eps : 0.0) - aj->mean;
    if (kind == STATS_GLR_HEURISTIC) {
        double ni = (double)ai->n, nj = (double)aj->n;
        return g > 0.0 ? 2.0 * ni * nj / (ni + nj) * g * g : -INFINITY;
    }
    return pair_ev_pinsker(ai, aj, eps, stats_kt_regret((double)ai->n, ai->mean),
                           stats_kt_regret((double)aj->n, aj->mean));
}

/* Shortcuts decide most calls without a search: f at one cutoff (an upper
 * bound on the infimum) at or below beta fails, and a piece whose bound at
 * its ends clears beta needs none. Each is implied by the exact
 * comparison, so the answer is that of pair_ev_lower(...) > beta (up to the
 * 1e-11 margin). */
static int pair_passes_r(const struct stats_arm *ai, const struct stats_arm *aj, double eps,
                         double beta, double ri, double rj)
{
    const struct pair_w *t = &PAIR_W;
    struct pair_ev e;
    pair_ev_init(&e, ai, aj, eps, ri, rj);
    double c0 = ev_guess(&e);
    int k0 = pair_w_piece(t, c0);
    double a, b;
    if (ev_piece(&e, t, k0, &a, &b) && !(ev_f(&e, c0) > beta))
        return 0;
    for (int i = 0; i < t->n; i++) {
        int k = i == 0 ? k0 : i <= k0 ? i - 1 : i; /* k0 first, then the others in order */
        if (!ev_piece(&e, t, k, &a, &b))
            continue;
        if (ev_bound(&e, a, b) > beta)
            continue;
        golden_section(ev_f, &e, &a, &b, PAIR_GOLDEN, PAIR_TOL);
        if (!(ev_bound(&e, a, b) > beta))
            return 0;
    }
    return 1;
}

int stats_glr_pair_passes(enum stats_glr_threshold kind, const struct stats_arm *ai,
                          const struct stats_arm *aj, double z, double eps, double beta)
{
    if (kind == STATS_GLR_HEURISTIC)
        return z > beta;
    return pair_passes_r(ai, aj, eps, beta, stats_kt_regret((double)ai->n, ai->mean),
                         stats_kt_regret((double)aj->n, aj->mean));
}

/* HEURISTIC: Garivier & Kaufmann's experiments (and tensorzero's
 * Track-and-Stop) use ln((ln t + 1)/δ); it has no proof.
 * PROVEN: the part of the pair threshold shared by all pairs, ln(P/δ),
 * P = m(K − m) (K − 1 when m = 1), see the proof above; ln(1/δ) for the
 * leader product (stats_lead.c). */
double stats_glr_threshold(enum stats_glr_threshold kind, double t, size_t k, unsigned m,
                           double eps, double delta)
{
    if (!(delta > 0.0))
        return INFINITY;
    if (kind == STATS_GLR_HEURISTIC) {
        double lt = t > 1.0 ? log(t) : 0.0;
        return log((lt + 1.0) / delta);
    }
    return log(stats_glr_union(kind, k, m, eps) / delta);
}

/* Does pair (i, j) fail the proven rule? r_i, r_j its arms' KT regrets. A
 * pair whose Pinsker bound on the KT part alone (weighted) clears beta
 * passes without a search: far challengers cost two regrets and a few
 * products. */
static int pair_fails(const struct stats_arm *ai, const struct stats_arm *aj, double eps,
                      double beta, double ri, double rj)
{
    if (pair_ev_pinsker(ai, aj, eps, ri, rj) > beta)
        return 0;
    return !pair_passes_r(ai, aj, eps, beta, ri, rj);
}

/* The stop loop. The heuristic compares the minimum itself, so its stops are
 * exactly glr_min > beta; the proven rule weighs each pair, in index order,
 * the first that fails ending the check (most checks, before the stop). A
 * pair whose KT part alone, from the Pinsker bound on Z_ij, clears
 * beta + ln 2 passes without its exact statistic or the mixture's search:
 * far challengers cost two regrets; the rest go to stats_glr_pair_passes. */
/* The returned arm when High is one arm (k when it is not). */
static size_t glr_single(const struct glr_set *s, size_t k)
{
    if (s->high == NULL)
        return s->best;
    size_t one = k;
    for (size_t i = 0; i < k; i++) {
        if (!s->high[i])
            continue;
        if (one != k)
            return k;
        one = i;
    }
    return one;
}

/* The proven rule's loops: the leader product where it applies (m = 1,
 * ε = 0, K ≥ 3: stats_lead.c), the pairs otherwise. Both wait, as the
 * minimum does, for every arm's first reward and for the Low arms to be
 * below the High ones. */
static int glr_stop_pairs(const struct stats_arm *arms, size_t k, const struct glr_set *s,
                          enum stats_glr_threshold kind, double beta)
{
    if (kind == STATS_GLR_HEURISTIC)
        return glr_min(arms, k, s) > beta;
    int ready = glr_ready(arms, k, s);
    if (ready <= 0) /* nothing to distinguish: stop as the minimum's +∞ would */
        return ready < 0 ? beta < INFINITY : 0;
    /* the leader product only where the threshold is its ln(1/δ): the
     * caller's m is 1 and High one arm */
    size_t one = glr_single(s, k);
    if (one < k && s->lead && stats_glr_uses_lead(STATS_GLR_PROVEN, k, s->m, s->eps))
        return stats_glr_lead_stop(arms, k, one, beta, NULL);
    for (size_t i = 0; i < k; i++) {
        if (!glr_in_high(s, i))
            continue;
        double ri = stats_kt_regret((double)arms[i].n, arms[i].mean);
        for (size_t j = 0; j < k; j++) {
            if (glr_in_high(s, j))
                continue;
            double rj = stats_kt_regret((double)arms[j].n, arms[j].mean);
            if (pair_fails(&arms[i], &arms[j], s->eps, beta, ri, rj))
                return 0;
        }
    }
    return 1;
}

/* --- the memo: the same stop, checked cheaply at every reward --------------
 * The stop is "every pair passes", so its answer does not depend on the
 * order in which pairs are tried, and one failing pair settles a 0. Between
 * two rewards one arm changes: the pair that failed last time (the
 * witness) almost always fails again, and its test costs a few logarithms
 * where the loop costs a regret (lgamma) per arm and a Pinsker bound per
 * pair. Each pair is tested by pair_fails, the loop's own test, on regrets
 * that are the same function of the same (n, μ̂) (a memo per arm), so every
 * answer is the loop's, bit for bit: the stop happens at the same reward.
 * When the witness passes, the pair of least lower bound is tried next
 * (the likeliest to fail, a good next witness), then the loop's order. */

void stats_glr_memo_init(struct stats_glr_memo *memo, struct stats_glr_memo_arm *arm, size_t k)
{
    memo->k = k;
    memo->wi = memo->wj = 0; /* i == j: no witness */
    memo->arm = arm;
    memo->wc = NAN;
    for (size_t i = 0; i < k; i++) {
        arm[i].n = UINT64_MAX; /* never an arm's count: the first use computes */
        arm[i].mean = 0.0;
        arm[i].regret = 0.0;
        arm[i].lead_n = UINT64_MAX;
        arm[i].lead_sum = 0.0;
        arm[i].lead_regret = 0.0;
        arm[i].order = i;
        arm[i].as_lead.c = arm[i].as_challenger.c = arm[i].pool.c = NAN; /* never equal */
    }
}

/* stats_kt_regret of arm i, from the memo when its (n, μ̂) are unchanged. */
static double memo_regret(struct stats_glr_memo *memo, const struct stats_arm *arms, size_t i)
{
    struct stats_glr_memo_arm *x = &memo->arm[i];
    if (x->n != arms[i].n || x->mean != arms[i].mean)
        memo_arm_own(x, &arms[i]);
    return x->regret;
}

static int memo_fails(struct stats_glr_memo *memo, const struct stats_arm *arms,
                      const struct glr_set *s, size_t i, size_t j, double beta)
{
    return pair_fails(&arms[i], &arms[j], s->eps, beta, memo_regret(memo, arms, i),
                      memo_regret(memo, arms, j));
}

static int glr_stop_memo(const struct stats_arm *arms, size_t k, const struct glr_set *s,
                         double beta, struct stats_glr_memo *memo)
{
    /* The witness first. A valid pair (i ∈ High, j ∉ High) means both sets
     * are non-empty; if some arm lacks data the loop answers 0 as well. */
    size_t wi = memo->wi, wj = memo->wj;
    int lead =
        s->lead && stats_glr_uses_lead(STATS_GLR_PROVEN, k, s->m, s->eps) && glr_single(s, k) < k;
    if (!lead && wi != wj && wi < k && wj < k && glr_in_high(s, wi) && !glr_in_high(s, wj) &&
        memo_fails(memo, arms, s, wi, wj, beta))
        return 0;
    int ready = glr_ready(arms, k, s);
    if (ready <= 0)
        return ready < 0 ? beta < INFINITY : 0;
    size_t one = glr_single(s, k);
    if (one < k && s->lead && stats_glr_uses_lead(STATS_GLR_PROVEN, k, s->m, s->eps))
        return stats_glr_lead_stop(arms, k, one, beta, memo);
    /* The pair of least lower bound on its KT evidence. */
    size_t si = k, sj = k;
    double least = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (!glr_in_high(s, i))
            continue;
        double ri = memo_regret(memo, arms, i);
        for (size_t j = 0; j < k; j++) {
            if (glr_in_high(s, j))
                continue;
            double lb =
                glr_pair_pinsker(&arms[i], &arms[j], s->eps) - ri - memo_regret(memo, arms, j);
            if (si == k || lb < least) {
                least = lb;
                si = i;
                sj = j;
            }
        }
    }
    if (si < k && memo_fails(memo, arms, s, si, sj, beta)) {
        memo->wi = si;
        memo->wj = sj;
        return 0;
    }
    for (size_t i = 0; i < k; i++) {
        if (!glr_in_high(s, i))
            continue;
        for (size_t j = 0; j < k; j++) {
            if (glr_in_high(s, j) || (i == si && j == sj))
                continue;
            if (memo_fails(memo, arms, s, i, j, beta)) {
                memo->wi = i;
                memo->wj = j;
                return 0;
            }
        }
    }
    return 1;
}

int stats_glr_stop(const struct stats_arm *arms, size_t k, const unsigned char *high,
                   enum stats_glr_threshold kind, unsigned m, double eps, double delta)
{
    double t = 0.0;
    for (size_t i = 0; i < k; i++)
        t += (double)arms[i].n;
    struct glr_set s = {high, 0, eps > 0 ? eps : 0.0, m, kind == STATS_GLR_PROVEN};
    return glr_stop_pairs(arms, k, &s, kind, stats_glr_threshold(kind, t, k, m, eps, delta));
}

int stats_glr_stop_memo(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        enum stats_glr_threshold kind, unsigned m, double eps, double delta,
                        struct stats_glr_memo *memo)
{
    if (memo == NULL || memo->k != k || kind == STATS_GLR_HEURISTIC)
        return stats_glr_stop(arms, k, high, kind, m, eps, delta);
    double t = 0.0;
    for (size_t i = 0; i < k; i++)
        t += (double)arms[i].n;
    struct glr_set s = {high, 0, eps > 0 ? eps : 0.0, m, kind == STATS_GLR_PROVEN};
    return glr_stop_memo(arms, k, &s, stats_glr_threshold(kind, t, k, m, eps, delta), memo);
}

int stats_glr_stop_best_memo(const struct stats_arm *arms, size_t k, size_t best, double eps,
                             enum stats_glr_threshold kind, double beta,
                             struct stats_glr_memo *memo)
{
    if (memo == NULL || memo->k != k || kind == STATS_GLR_HEURISTIC)
        return stats_glr_stop_best(arms, k, best, eps, kind, beta);
    struct glr_set s = {NULL, best, eps > 0 ? eps : 0.0, 1, kind == STATS_GLR_PROVEN};
    return glr_stop_memo(arms, k, &s, beta, memo);
}

int stats_glr_stop_best(const struct stats_arm *arms, size_t k, size_t best, double eps,
                        enum stats_glr_threshold kind, double beta)
{
    struct glr_set s = {NULL, best, eps > 0 ? eps : 0.0, 1, kind == STATS_GLR_PROVEN};
    return glr_stop_pairs(arms, k, &s, kind, beta);
}
