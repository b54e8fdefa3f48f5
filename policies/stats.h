/*
 * stats.h — the statistics every policy and the status endpoint share.
 *
 * Rewards are rescaled to [0, 1] before they reach this module (b = 1 in the
 * papers' notation). An arm is summarised by `struct stats_arm`; from it we
 * derive one-sided confidence bounds (Hoeffding, empirical Bernstein, the
 * tightest of the two, each either at a fixed n or time-uniform), their
 * inverses (the error probability at which a bound has a given width), the
 * aggregate δᶜ of Kalyanakrishnan & Stone (2010, §4) at the optimised cutoff,
 * Bachman & Precup's Bayesian confidence ρ̄ (2013, eq. 3), Bernoulli KL
 * bounds and the GLR (Chernoff) statistic of Garivier & Kaufmann (2016).
 *
 * One header, four source files, one per family (the sections below name
 * theirs): stats_bounds.c (arms, bounds, KL), stats_dc.c (δᶜ), stats_rho.c
 * (ρ̄), stats_glr.c (GLR). One header because the families share one type
 * (struct stats_arm) and one prefix, build on each other (δᶜ on the bounds,
 * the GLR on the KL and the normal mixture), and most callers use two or
 * more: split headers would each include the bounds' one anyway. What the
 * source files share beyond this contract is in stats_impl.h, which no
 * policy includes.
 *
 * All functions are pure: no allocation, no global state, thread-safe.
 */
#ifndef BANDITD_POLICIES_STATS_H
#define BANDITD_POLICIES_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Which family of bounds a policy or the status endpoint uses. */
enum stats_bound {
    /* Time-uniform (Howard, Ramdas, McAuliffe & Sekhon 2021: a one-sided
     * normal mixture for Hoeffding, polynomial stitching for empirical
     * Bernstein): holds for all n at once, so it survives continuous
     * monitoring. The default. */
    STATS_BOUND_ANYTIME = 0,
    /* The papers' bounds for a fixed sample size n. */
    STATS_BOUND_FIXED = 1,
};

/* --- arms (stats_bounds.c) ------------------------------------------------- */

/* Sufficient statistics of one arm; rewards in [0, 1]. */
struct stats_arm {
    uint64_t n;       /* pulls with a reward received */
    uint64_t pending; /* pulls handed out and not answered yet */
    double mean;      /* running mean (Welford) */
    double m2;        /* sum of squared deviations from the mean (Welford) */
    double ebv;       /* Σ (x_i − x̂_{i−1})², x̂ the mean before x_i (x̂_0 = 1/2):
                       * the predictable variance process of Howard et al.'s
                       * empirical-Bernstein confidence sequence */
    double alpha;     /* Beta posterior, prior included */
    double beta;
    /* The rewards that arrived while this arm was its bandit's leader
     * (stats_arm_lead), what the proven rule's leader product weighs: the
     * first STATS_LEAD_POOLED of them go to the bandit's pool (pool_n,
     * pool_sum: this arm's share of it), the rest to the arm's own factor
     * (lead_n, lead_sum). */
    uint64_t lead_n;
    double lead_sum;
    uint64_t pool_n;
    double pool_sum;
};

/* Reset an arm to no data with a Beta(a, b) prior. */
void stats_arm_init(struct stats_arm *a, double prior_alpha, double prior_beta);

/* Add one reward x ∈ [0, 1] to the frequentist statistics (n, mean, m2, ebv).
 * The Beta posterior is updated separately (stats_arm_add_bayes) because the
 * Bernoulli trick needs a random draw. */
void stats_arm_add(struct stats_arm *a, double x);

/* Before stats_arm_add(&arms[arm], x): if arm is the leader of arms[0..k)
 * (the largest mean among arms with a reward, the lowest index on a tie),
 * x counts in its pool_n and pool_sum while pool_n < STATS_LEAD_POOLED,
 * in its lead_n and lead_sum after that (stats_lead.c). Decided on the
 * rewards before x, so the leader product's factors stay supermartingales. */
#define STATS_LEAD_POOLED 32
void stats_arm_lead(struct stats_arm *arms, size_t k, size_t arm, double x);
/* The parts of stats_arm_lead, for a caller that keeps the leader between
 * rewards (the engine): the leader of arms[0..k) (k when no arm has a
 * reward), and x counted as a lead reward of a. */
size_t stats_arms_leader(const struct stats_arm *arms, size_t k);
void stats_arm_lead_add(struct stats_arm *a, double x);

/* Add a success (s = 1) or failure (s = 0) to the Beta posterior. */
void stats_arm_add_bayes(struct stats_arm *a, int s);

/* Unbiased sample variance; 0 when n < 2. */
double stats_arm_var(const struct stats_arm *a);

/* --- one-sided bounds (stats_bounds.c) ---------------------------------------
 * At error probability d, for n samples in [0, 1]:
 * width functions return +INFINITY when no finite width holds (n == 0, or
 * n < 2 for Bernstein); confidence functions return the error probability d
 * at which the bound has width w, in (0, 1], and 1 when w <= 0 or n == 0. */

/* Hoeffding, fixed n: sqrt(ln(1/d) / (2n)); inverse exp(−2 n w²). */
double stats_hoeffding_width(double n, double d);
double stats_hoeffding_conf(double n, double w);

/* Empirical Bernstein (Audibert et al. 2007 / Maurer & Pontil 2009), fixed n:
 * sqrt(2 var ln(2/d) / n) + 7 ln(2/d) / (3 (n − 1)); the inverse is closed
 * form (quadratic in sqrt(ln(2/d))). */
double stats_bernstein_width(double n, double var, double d);
double stats_bernstein_conf(double n, double var, double w);

/* Howard et al.'s polynomial-stitched boundary (s = 1.4, η = 2) for a
 * sub-gamma process with scale c and intrinsic time v ≥ v_min:
 *   ℓ = s ln ln(η v / v_min) + ln(ζ(s) / ln(η)^s) + ln(1/d)
 *   u = sqrt(k1² v ℓ + (k2 c ℓ)²) + k2 c ℓ.
 * stats_stitched_boundary returns u; stats_stitched_conf inverts it (the d at
 * which u equals the given value). */
double stats_stitched_boundary(double v, double v_min, double c, double d);
double stats_stitched_conf(double v, double v_min, double c, double u);

/* Time-uniform Hoeffding: S_n sub-Gaussian with variance process V = n/4,
 * bounded by the one-sided normal mixture (Howard et al. 2021, §3.2) with a
 * fixed ρ (stats_impl.h): u solves 2 sqrt(ρ/(V+ρ)) e^{u²/(2(V+ρ))} Φ(u/sqrt(V+ρ))
 * = 1/d, width u/n; the inverse d = 1/(that expression at u = wn) is
 * closed form. Valid for every n >= 1 at once. */
double stats_anytime_hoeffding_width(double n, double d);
double stats_anytime_hoeffding_conf(double n, double w);

/* Time-uniform empirical Bernstein: S_n sub-exponential with scale 1 and
 * variance process ebv (Howard et al. 2021, Theorem 4). */
double stats_anytime_bernstein_width(double n, double ebv, double d);
double stats_anytime_bernstein_conf(double n, double ebv, double w);

/* The tightest applicable bound of the family (what makes ADAPT "π4").
 * `extra` pending pulls are counted as if they had returned the arm's
 * current mean (n grows, mean and variance do not change). For the anytime
 * family the union of the two bounds is paid for (d split in half); the fixed
 * family takes the plain minimum, as Kalyanakrishnan & Stone do. */
double stats_width(enum stats_bound b, const struct stats_arm *a, uint64_t extra, double d);
double stats_conf(enum stats_bound b, const struct stats_arm *a, uint64_t extra, double w);

/* Hoeffding only, of the family (π3). */
double stats_width_hoeffding(enum stats_bound b, const struct stats_arm *a, uint64_t extra,
                             double d);
double stats_conf_hoeffding(enum stats_bound b, const struct stats_arm *a, uint64_t extra,
                            double w);

/* --- δᶜ (Kalyanakrishnan & Stone 2010, §4; stats_dc.c) ----------------------
 * high[i] != 0 marks the arms of the returned set (usually the empirical top
 * m). For a cutoff c: δᶜ_h = d(n_h, μ̂_h + ε − c) for h ∈ High,
 * δᶜ_l = d(n_l, c − μ̂_l) for l ∈ Low, δᶜ = 1 − Π (1 − δᶜ_i).
 * `hoeffding_only` selects π3's bounds instead of the tightest. */
struct stats_dc_opts {
    enum stats_bound bound;
    double epsilon;     /* in [0, 1] units */
    int hoeffding_only; /* 0: tightest bounds */
    int count_pending;  /* 1: widths use n + pending (index policies) */
};

/* δᶜ at a given cutoff c; per_arm (may be NULL) receives each δᶜ_i. */
double stats_delta_c_at(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        const struct stats_dc_opts *o, double c, double *per_arm);

/* The paper's cutoff ĉ: divides (min_High μ̂, max_Low μ̂ ...) in proportion to
 * the standard errors of arms (m+1) and (m). */
double stats_cutoff_hat(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        double epsilon);

/* δᶜ at the optimised cutoff c* = argmin over I = (max_Low μ̂, min_High μ̂ + ε)
 * (a coarse scan, then golden section). When I is empty (the High set is not the
 * empirical top), the search runs over the reversed interval and δᶜ comes out
 * large, as it should. c_out and per_arm may be NULL. With k < 2 or an empty
 * High or Low set, returns 0 (nothing to distinguish). */
double stats_delta_c(const struct stats_arm *arms, size_t k, const unsigned char *high,
                     const struct stats_dc_opts *o, double *c_out, double *per_arm);

/* stats_delta_c with a workspace of stats_dc_ws_size(k) bytes (suitably
 * aligned: from malloc) made ready once by stats_dc_ws_init, or NULL: the
 * same result bit for bit, about three times faster with the anytime
 * bounds, whose per-arm logarithms are then computed once per search
 * instead of once per cutoff tried, and kept for the next search while the
 * arm's n, pending count and ebv stay the same (any arms of k entries may
 * be passed with the same workspace: the key is the values). For callers on
 * a hot path (a policy's select()) that own the memory. */
size_t stats_dc_ws_size(size_t k);
void stats_dc_ws_init(void *ws, size_t k);
double stats_delta_c_ws(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        const struct stats_dc_opts *o, double *c_out, double *per_arm, void *ws);

/* The cutoff tracked from one call to the next (ADAPT's select()): *cut
 * is where the previous call on the same workspace left it (NaN: none).
 * When it can be trusted (every δᶜ_i below 1 there, ln(1 − δᶜ) concave)
 * per_arm (not NULL) receives each δᶜ_i at *cut (to rounding with the
 * anytime bounds, bit for bit with the fixed-n ones), and *cut moves one
 * Newton step on ln(1 − δᶜ(c)) for the next call: returns 1, after one
 * pass over the arms. Where δᶜ is 1 at every cutoff of I (some arm's bound
 * vacuous at each: known from each arm's vacuous width, cached; with the
 * fixed-n bounds only an arm without rewards is), per_arm is taken at ĉ,
 * the full search's answer there, and *cut = ĉ: returns 2. With the
 * fixed-n bounds, where δᶜ is within rounding of 1 at the cutoff tried (the
 * full search sees 1 everywhere and answers ĉ), a call without a usable
 * *cut starts from ĉ and a step too long is damped: returns 1, per_arm at
 * the cutoff used. Otherwise stats_delta_c_ws's full search
 * (c* into *cut, per_arm there): returns 0. Near a minimum the cutoff used
 * lags the minimiser by the change one call makes; unit tests: δᶜ within
 * 10⁻⁶ relative of the full search's after a few calls. */
int stats_delta_c_track(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        const struct stats_dc_opts *o, double *cut, double *per_arm, void *ws);

/* --- Bayesian confidence ρ̄ (Bachman & Precup 2013, eq. 3; stats_rho.c) -------
 * r̄_j = α_j/(α_j+β_j), γ̄ = (r̄_(m) + r̄_(m+1))/2, σ̄_j = sqrt(r̄_j (1 − r̄_j)),
 * ρ̄ = max(0, 1 − Σ_j [1 − Φ(√t_j |r̄_j − γ̄| / σ̄_j)]), t_j = pulls of arm j.
 * Returns 0 when some arm has no data, 1 when k ≤ m. */
double stats_rho(const struct stats_arm *arms, size_t k, unsigned m);

/* --- Bernoulli KL and its bounds (stats_bounds.c) --------------------------- */

/* The one clamp of the Bernoulli KL: p moved into [margin, 1 − margin], NaN
 * to margin. stats_kl_bern reads both arguments at STATS_KL_EPS, so that
 * means of exactly 0 or 1 stay finite; code that takes a derivative of kl in
 * a mean (w*(μ) in tas.c, the ε-GLR's search) reads the means at the coarser
 * STATS_KL_MU_CLAMP, where the weights are continuous and the derivative's
 * 1/(q(1 − q)) stays moderate. */
#define STATS_KL_EPS 1e-15
#define STATS_KL_MU_CLAMP 1e-10
double stats_kl_clamp(double p, double margin);

double stats_kl_bern(double p, double q);
/* max{q ≥ p : kl(p, q) ≤ level} and min{q ≤ p : kl(p, q) ≤ level}. */
double stats_kl_upper(double p, double level);
double stats_kl_lower(double p, double level);

/* --- GLR (Chernoff) statistic (stats_glr.c) ---------------------------------
 * Z = min over pairs (i ∈ High, j ∈ Low, μ̂_i ≥ μ̂_j) of
 * n_i d(μ̂_i, μ̂_ij) + n_j d(μ̂_j, μ̂_ij); +INFINITY when no pair counts...
 * except that a High arm below a Low arm gives Z = 0. Arms with n = 0 give 0. */
double stats_glr(const struct stats_arm *arms, size_t k, const unsigned char *high);

/* The statistic that arm `best` is ε-best (High = {best}), on rewarded pulls:
 *   Z = min_{j ≠ best} inf_{λ: λ_j ≥ λ_best + ε} n_best d(μ̂_best, λ_best) + n_j d(μ̂_j, λ_j)
 * (Bernoulli d, valid for any rewards in [0, 1]); ε = 0 (or below) is
 * stats_glr with High = {best}. 0 when some arm has no reward or some
 * μ̂_j > μ̂_best + ε; +INFINITY when k < 2. If best is not ε-best, the true
 * means lie in the set the infimum runs over, so Z is at most the deviation
 * n_best d(μ̂_best, μ_best) + n_j d(μ̂_j, μ_j) of one pair: the thresholds of
 * stats_glr_threshold (m = 1) apply unchanged. */
double stats_glr_best(const struct stats_arm *arms, size_t k, size_t best, double eps);

enum stats_glr_threshold {
    /* ln((ln t + 1)/δ): Garivier & Kaufmann's code, a heuristic. */
    STATS_GLR_HEURISTIC = 0,
    /* A rule with a proof (stats_glr.c, stats_lead.c): with one best arm of
     * K ≥ 3 and ε = 0 every challenger's leader product
     * (stats_glr_lead_evidence) > ln(1/δ); otherwise every pair (i ∈ High,
     * j ∈ Low) has stats_glr_pair_evidence > ln(m(K−m)/δ): at each null point a fixed
     * mixture, weight w(c), of the Jeffreys (Krichevsky–Trofimov) mixtures'
     * e-value (Garivier & Kaufmann 2016's, regrets r_a =
     * stats_kt_regret(N_a, μ̂_a) exact) and the one-sided normal mixtures'
     * one, the infimum over the pair's null taken of the mixture: an
     * e-value valid for any [0, 1] rewards and any sampling rule. */
    STATS_GLR_PROVEN = 1,
    /* The proven rule with pairs only, never the leader product: rule
     * revision 1 (engine_config.glr_revision), what an experiment created
     * before the leader product keeps. */
    STATS_GLR_PROVEN_PAIRS = 2,
};
/* The part of the rule every pair shares: ln((ln t + 1)/δ) for the
 * heuristic, ln(P/δ) for the proven one, P = stats_glr_union(...):
 * m(K−m) pairs, K − 1 when m = 1, and 1 for the leader product (m = 1,
 * ε = 0, K ≥ 3). +INFINITY when δ <= 0. */
double stats_glr_threshold(enum stats_glr_threshold kind, double t, size_t k, unsigned m,
                           double eps, double delta);
/* ln sup_θ L(θ) − ln ∫ L(θ) Beta(½, ½)(dθ) for n rewards of mean `mean`
 * (L(θ) = θ^S (1−θ)^(n−S), S = n·mean, real S allowed): ≥ 0, at most
 * ½ ln n + ln 2, about ½ ln(πn/2) for means inside (0, 1). 0 when n <= 0. */
double stats_kt_regret(double n, double mean);
/* A lower bound on inf over c ∈ [0, 1 − ε] of ln M_i(c) + ln M_j(c + ε),
 * M_i(c) arm i's one-sided normal mixture for "μ_i ≤ c" (deviation
 * n_i(μ̂_i − c), V = n_i/4, ρ four times the anytime bound's: i is the
 * returned arm, the leader) and M_j(y) arm j's for "μ_j ≥ y" (the anytime
 * bound's ρ): the log e-value of the pair's null μ_j ≥ μ_i + ε. Within
 * 1e-11 relative plus the bracket's 1e-13 in c of the infimum, never above
 * it. An arm with n <= 0 contributes M = 1 (ln 0): both empty give 0. */
double stats_pair_mixture(double ni, double mi, double nj, double mj, double eps);
/* The proven rule's weights at the High arm's null mean c (a fixed
 * function, piecewise constant; stats_glr.c) on the four products of the
 * two arms' e-values, arm i's first: KT·KT, KT·N, N·KT, N·N (KT the
 * Jeffreys mixture, N the one-sided normal mixture); their logs into ln_w
 * (−∞ for 0). Either may be NULL. */
void stats_glr_pair_weights(double c, double w[4], double ln_w[4]);
/* A pair's evidence, to compare with stats_glr_threshold: z itself for the
 * heuristic; for the proven rule (z unused) a lower bound, within 1e-11
 * relative plus the bracket's 4e-14 in c, on
 *   ln inf_{c ∈ [0, 1 − ε]} Σ_s w_s(c) e^{x_s(c)},
 * w = stats_glr_pair_weights and x_s the sum of arm i's log e-value at c
 * (N_i kl(μ̂_i, c) − r_i, or ln M_i(c) as in stats_pair_mixture) and arm
 * j's at max(c + ε, μ̂_j) (KT) or c + ε (normal mixture). */
double stats_glr_pair_evidence(enum stats_glr_threshold kind, const struct stats_arm *ai,
                               const struct stats_arm *aj, double z, double eps);
/* A lower bound on stats_glr_pair_evidence without its search (Pinsker on
 * the weighted KT part; the heuristic: Pinsker on z), −∞ for the heuristic
 * when the Low arm is ahead: what the minimum over pairs skips on. */
double stats_glr_pair_evidence_lower(enum stats_glr_threshold kind, const struct stats_arm *ai,
                                     const struct stats_arm *aj, double eps);
/* stats_glr_pair_evidence(kind, ai, aj, z, eps) > beta, usually without the
 * search (stats_glr.c): what the stop rules call per pair. */
int stats_glr_pair_passes(enum stats_glr_threshold kind, const struct stats_arm *ai,
                          const struct stats_arm *aj, double z, double eps, double beta);
/* The GLR stop: every pair's evidence, the pair's statistic for "μ_i ≥
 * μ_j + ε" (ε ≥ 0: the ε-GLR; ε = 0 the Chernoff statistic), exceeds the
 * threshold (so the heuristic with ε = 0 is exactly stats_glr(...) >
 * stats_glr_threshold(...)); t is the sum of the arms' n. 0 while some arm
 * has no reward or a Low arm is above a High one's mean + ε; with an empty
 * High or Low set, 1 (δ > 0). A wrong top-m set has a High arm h and a Low
 * arm l with μ_l > μ_h + ε, so the pairs' union covers it at every m. */
int stats_glr_stop(const struct stats_arm *arms, size_t k, const unsigned char *high,
                   enum stats_glr_threshold kind, unsigned m, double eps, double delta);
/* What stats_glr_stop_memo keeps between checks of one bandit's arms: the
 * pair that failed last and each arm's KT regret with the (n, μ̂) it was
 * computed for. The caller owns both; the arm array holds k entries. */
/* One cached value of a pure function of (c, its piece, two inputs). */
struct stats_glr_memo_cache {
    double c, x, y, v;
    int piece;
};
struct stats_glr_memo_arm {
    uint64_t n;
    double mean, regret;
    uint64_t lead_n; /* the leader product's: the lead rewards' regret */
    double lead_sum, lead_regret;
    /* the normal mixtures' constants (V + ρ, its root, ln 2 + ½ ln(ρ/(V + ρ))):
     * the arm's own with ρ, its lead rewards' with ρ_H */
    double vr, sq, c0, lead_vr, lead_sq, lead_c0;
    size_t next;  /* the next arm with lead rewards (k: none), per check */
    size_t order; /* entry i: the arm of i-th largest mean, as last sorted */
    /* the leader product's factors at the last cutoff they were taken at:
     * this arm's lead factor, its own as a challenger, its challenger's pool */
    struct stats_glr_memo_cache as_lead, as_challenger, pool;
};
struct stats_glr_memo {
    size_t k;
    size_t wi, wj; /* the last failing pair; wi == wj: none */
    struct stats_glr_memo_arm *arm;
    double wc; /* the leader product: the cutoff the witness last failed at (NAN: none) */
};
/* An empty memo for k arms over arm[0..k) (borrowed, must outlive it). */
void stats_glr_memo_init(struct stats_glr_memo *memo, struct stats_glr_memo_arm *arm, size_t k);
/* stats_glr_stop, the same answer bit for bit, for a caller that checks the
 * same arms again and again (the engine, at every reward): the proven rule
 * tries the pair that failed last first and reuses the regrets of arms
 * that did not change, about O(1) per check away from a stop instead of a
 * regret per arm (stats_glr.c, "the memo"). memo == NULL, another k or the
 * heuristic: stats_glr_stop itself. */
int stats_glr_stop_memo(const struct stats_arm *arms, size_t k, const unsigned char *high,
                        enum stats_glr_threshold kind, unsigned m, double eps, double delta,
                        struct stats_glr_memo *memo);
/* One pair's statistic Z_ij for "μ_i ≥ μ_j + ε" (both arms with data,
 * μ̂_j ≤ μ̂_i + ε): the pooled Bernoulli KL form at ε = 0, the infimum over
 * λ_j ≥ λ_i + ε for ε > 0. */
double stats_glr_pair_z(const struct stats_arm *ai, const struct stats_arm *aj, double eps);
/* The same stop on stats_glr_best's pairs, with the caller's threshold
 * beta = stats_glr_threshold(kind, t, k, 1, δ): every j ≠ best has evidence
 * stats_glr_pair_evidence(kind, best, j, Z_j, eps) > beta (the heuristic:
 * stats_glr_best > beta). 0 where stats_glr_best is 0 for want of evidence.
 * Both stops run one loop (stats_glr.c). */
int stats_glr_stop_best(const struct stats_arm *arms, size_t k, size_t best, double eps,
                        enum stats_glr_threshold kind, double beta);
/* stats_glr_stop_best with a memo, as stats_glr_stop_memo: the same answer. */
int stats_glr_stop_best_memo(const struct stats_arm *arms, size_t k, size_t best, double eps,
                             enum stats_glr_threshold kind, double beta,
                             struct stats_glr_memo *memo);

/* --- the leader product (stats_lead.c) --------------------------------------
 * The proven rule for one returned arm with ε = 0 and K ≥ 3 arms: for each
 * arm a other than the returned one, a lower bound (1e-11 relative, the
 * bracket's 4e-14 in c) on
 *   ln inf_{c ∈ [0, 1]} F_a(c) · Π_{h ≠ a} G_h(c),
 * F_a a fixed mixture (weights by c) of a's KT e-value at max(c, μ̂_a) and
 * its one-sided normal mixture for "μ_a ≥ c"; G_h = p₀ + (1 − p₀)·(the same
 * for "μ_h ≤ c") on the rewards h received while it led (stats_arm_lead),
 * 1 for an arm that never led. Under "a is a best arm" it is bounded by a
 * test supermartingale, so every challenger's evidence above ln(1/δ) errs
 * with probability at most δ, with no union over the challengers
 * (docs/stop-rules.md, "The leader product"). */
int stats_glr_uses_lead(enum stats_glr_threshold kind, size_t k, unsigned m, double eps);
/* How many e-values the proven rule's error is a union over: 1 for the
 * leader product, m(K − m) pairs otherwise (1 when either set is empty). */
double stats_glr_union(enum stats_glr_threshold kind, size_t k, unsigned m, double eps);
/* The least evidence over the challengers a ≠ best (+∞ when there is none);
 * −∞ when out of memory (k regrets are allocated). */
double stats_glr_lead_evidence(const struct stats_arm *arms, size_t k, size_t best);
/* Every challenger's evidence > beta: the same answer as the evidence's,
 * usually without its search. memo (may be NULL: k regrets allocated, no
 * stop when out of memory) keeps the regrets and the last failing
 * challenger between checks. */
int stats_glr_lead_stop(const struct stats_arm *arms, size_t k, size_t best, double beta,
                        struct stats_glr_memo *memo);
/* The weights at the null mean c: a's factor (KT, normal mixture) and a
 * lead factor's (KT, normal mixture, the atom), each summing to 1. */
void stats_glr_lead_weights(double c, double w_a[2], double w_h[3]);

/* --- literature thresholds (stats_kk.c) ------------------------------------
 * Kaufmann & Koolen (2021, JMLR 22(246), "Mixture martingales revisited";
 * Theorem 14 of arXiv 1811.11419v1, where 𝒞_exp is called 𝒯): for a pair,
 * P(∃t: N_i kl(μ̂_i, μ_i) + N_j kl(μ̂_j, μ_j) − 3 ln(1 + ln N_i)
 * − 3 ln(1 + ln N_j) > 2𝒞_exp(x/2)) ≤ e^{−x}. No stop rule uses it: it is
 * the literature's proven threshold our own is compared with
 * (docs/stop-rules.md, "Literature thresholds", which says where the
 * statement was checked). */

/* The lower branch W_{−1}(x) of the Lambert W function, x ∈ [−1/e, 0): the
 * root w ≤ −1 of w e^w = x, to a few ulps. NAN outside the domain. */
double stats_lambert_wm1(double x);
/* 𝒞_exp(x) = 2 h̃_{3/2}((h⁻¹(1 + x) + ln(2ζ(2)))/2), h(u) = u − ln u
 * (u ≥ 1), h̃_z(y) = e^{1/h⁻¹(y)} h⁻¹(y) for y ≥ h⁻¹(1/ln z), z(y − ln ln z)
 * below; x ≥ 0 (NAN otherwise). About x + 3 ln x + 2.8 for large x,
 * 10.67 at x = 1.7. */
double stats_kk_cexp(double x);
/* The pair threshold on Z_ij of the rule built on it, at level δ/P
 * (P = m(K − m), K − 1 when m = 1): 2𝒞_exp(ln(P/δ)/2) + 3 ln(1 + ln N_i) +
 * 3 ln(1 + ln N_j) (ln N read as 0 below N = 1). +INFINITY when δ <= 0. */
double stats_kk_pair_threshold(double ni, double nj, size_t k, unsigned m, double delta);

/* --- the normal tail (stats_bounds.c) -------------------------------------- */

/* Standard normal upper tail 1 − Φ(x). */
double stats_normal_sf(double x);

#endif
