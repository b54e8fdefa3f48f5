/*
 * engine.c — one experiment's allocation state machine (see engine.h).
 *
 * The engine wraps a policy with what every policy shares: statistics,
 * pending pulls, budgets, stop rules and clinical constraints. Policies that
 * handle several bandits themselves (POLICY_F_MULTI) get one instance over
 * the whole experiment; any other policy gets one instance per bandit, each
 * with its share of the budget, and the engine chooses the bandit when the
 * request does not name one (the unfinished bandit with the fewest pulls
 * handed out).
 */
#include "policies/engine.h"
#include "policies/order.h"

#include "policies/goal.h"
#include "policies/rng.h"
#include "policies/stop.h"
#include "policies/stop_rule.h"

#include "base/ser.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct engine {
    struct engine_config cfg;
    size_t nb;
    size_t *k; /* arms per bandit */
    size_t kmax;
    struct stats_arm *store; /* all arms, bandit after bandit */
    struct stats_arm **arms; /* arms[b] points into store */
    uint32_t **rank;         /* per bandit: random tie-break rank of each arm */
    uint32_t *rank_store;
    int *control;        /* per bandit control arm or −1 */
    unsigned char *done; /* per bandit */
    uint64_t *used;      /* per bandit: rewarded + pending pulls (budget count) */
    uint64_t *handed;    /* per bandit: pulls ever handed out */
    uint64_t pulls, pending, handed_total;
    uint64_t used_total; /* Σ used */
    enum engine_stop_reason reason;
    enum engine_stop_rule rule; /* resolved (never DEFAULT) */
    int paused;
    gsl_rng *rng;
    /* policy instances: one (multi) or one per bandit */
    size_t ninst;
    struct policy_ctx *ctx;
    void **pstate;
    uint64_t *inst_budget;
    uint32_t *block_left;           /* all arms: pulls left in the current permuted block */
    unsigned char *scratch_high;    /* kmax entries, stop checks */
    struct engine_stop_eval *fired; /* per bandit: the rule's figures when it fired */
    unsigned char *retired;         /* all arms, bandit after bandit (engine_retire_arm) */
    /* goal control: each arm's enum policy_verdict and the bandit's
     * rewarded pulls when it was decided, bandit after bandit; verdict[b]
     * points into verdict_store (NULL for another goal) */
    unsigned char *verdict_store;
    unsigned char **verdict;
    uint64_t *verdict_at;
    uint64_t *rewarded; /* per bandit: rewarded pulls (verdict_at's clock) */
    /* The proven GLR rule's memo per bandit (stats_glr_stop_memo), over
     * glr_memo_arm (all arms, bandit after bandit); NULL for other rules. */
    struct stats_glr_memo *glr_memo;
    struct stats_glr_memo_arm *glr_memo_arm;
    /* per bandit: its leader (stats_arms_leader), k[b] when to be found
     * again; a cache of the arms, not state (a loaded engine starts it
     * empty) */
    size_t *lead;
};

/* The proven GLR rule of the experiment's revision (engine_config). */
static enum stats_glr_threshold glr_proven_kind(const struct engine_config *c)
{
    return c->glr_revision == 1 ? STATS_GLR_PROVEN_PAIRS : STATS_GLR_PROVEN;
}

static int is_multi(const struct engine *e)
{
    return (e->cfg.policy->flags & POLICY_F_MULTI) != 0 || e->nb == 1;
}

static size_t inst_of(const struct engine *e, size_t b)
{
    return e->ninst == 1 ? 0 : b;
}

enum engine_stop_rule engine_resolve_rule(const struct engine_config *c)
{
    const struct policy_ops *p = c->policy;
    if (c->stop_rule != ENGINE_RULE_DEFAULT)
        return c->stop_rule;
    /* A comparison with control is decided arm by arm (engine_validate
     * keeps the goal and the sampler together). */
    if (c->goal == ENGINE_GOAL_CONTROL || (p->flags & POLICY_F_CONTROL))
        return ENGINE_RULE_CONTROL;
    if (p->flags & POLICY_F_OWN_STOP) {
        /* An own rule without a proof under the policy's defaults (gcp's
         * ρ̄) is opt-in: the default is a proven rule. A parameter the user
         * set to an unproven variant (threshold=heuristic) is their choice. */
        struct policy_params d;
        policy_params_defaults(p, &d);
        return policy_own_stop_proven(p, &d) ? ENGINE_RULE_POLICY : ENGINE_RULE_GLR;
    }
    if (p->flags & POLICY_F_REGRET)
        return ENGINE_RULE_NONE;
    /* A fixed-budget run stops at its budget; a fixed-confidence policy
     * given a budget treats it as a cap and still stops on its rule. */
    if ((p->flags & POLICY_F_FIXED_BUDGET) &&
        (c->budget > 0 || !(p->flags & POLICY_F_FIXED_CONFIDENCE)))
        return ENGINE_RULE_NONE;
    /* The proven GLR rule: with every sampling rule measured it stops
     * sooner than δᶜ (docs/measurements.md, "The default": adapt 3.7× the
     * lower bound against 6.7× on μ1 at δ = 0.1). */
    return ENGINE_RULE_GLR;
}

int engine_rule_proven(const struct engine_config *c, enum engine_stop_rule r)
{
    switch (r) {
    case ENGINE_RULE_DELTA_C:
        return c->bound == STATS_BOUND_ANYTIME;
    case ENGINE_RULE_CONTROL:
        /* a calibrated width trades the proof for power */
        return c->bound == STATS_BOUND_ANYTIME && !engine_calibrated(c);
    case ENGINE_RULE_GLR:
        return 1;
    case ENGINE_RULE_POLICY:
        return policy_own_stop_proven(c->policy, &c->params);
    default:
        return 0;
    }
}

/* The goal "control" and what goes with it: a control arm in every bandit,
 * a sampler made for it (and it only for that goal), its own stop rule, and
 * the anytime bound its proof rests on. */
static int validate_control(const struct engine_config *c, struct policy_error *err)
{
    const struct policy_ops *p = c->policy;
    if (c->goal != ENGINE_GOAL_CONTROL) {
        if (p->flags & POLICY_F_CONTROL) {
            policy_error_set(err, "policy.name",
                             "policy %s compares arms with a control: it needs goal.type "
                             "\"control\"",
                             p->name);
            return -1;
        }
        if (c->stop_rule == ENGINE_RULE_CONTROL) {
            policy_error_set(err, "stop_rule", "\"control\" needs goal.type \"control\"");
            return -1;
        }
        if (engine_calibrated(c)) {
            policy_error_set(err, "goal.scale", GOAL_CONTROL_ONLY);
            return -1;
        }
        return 0;
    }
    if (!goal_scale_valid(c->scale)) {
        policy_error_set(err, "goal.scale", GOAL_SCALE_RULE);
        return -1;
    }
    for (size_t b = 0; b < c->n_bandits; b++)
        if (c->control_arm == NULL || c->control_arm[b] < 0) {
            policy_error_set(err, "goal.control", "must name an arm of every bandit (bandit %zu)",
                             b);
            return -1;
        }
    if (!(p->flags & POLICY_F_CONTROL)) {
        policy_error_set(err, "policy.name",
                         "goal.type \"control\" needs a policy made for comparisons with "
                         "control (vs-control); %s looks for the best arm",
                         p->name);
        return -1;
    }
    if (c->stop_rule != ENGINE_RULE_DEFAULT && c->stop_rule != ENGINE_RULE_CONTROL) {
        policy_error_set(err, "stop_rule",
                         "goal.type \"control\" stops on the rule \"control\" (or give none)");
        return -1;
    }
    if (c->bound != STATS_BOUND_ANYTIME) {
        policy_error_set(err, "bound",
                         "goal.type \"control\" needs the anytime bound: its proof rests on it");
        return -1;
    }
    return 0;
}

int engine_validate(const struct engine_config *c, struct policy_error *err)
{
    const struct policy_ops *p = c->policy;
    if (p == NULL) {
        policy_error_set(err, "policy.name", "unknown policy");
        return -1;
    }
    if (c->n_bandits < 1 || c->n_bandits > ENGINE_MAX_BANDITS) {
        policy_error_set(err, "bandits", "need 1 to %d bandits", ENGINE_MAX_BANDITS);
        return -1;
    }
    for (size_t b = 0; b < c->n_bandits; b++) {
        if (c->n_arms[b] < 2 || c->n_arms[b] > ENGINE_MAX_ARMS) {
            char field[48];
            snprintf(field, sizeof field, "bandits[%zu].arms", b);
            policy_error_set(err, field, "need 2 to %d arms", ENGINE_MAX_ARMS);
            return -1;
        }
        if (c->control_arm != NULL && c->control_arm[b] >= (int)c->n_arms[b]) {
            policy_error_set(err, "constraints.control.arm", "no such arm in bandit %zu", b);
            return -1;
        }
        if (c->min_prob * (double)c->n_arms[b] >= 1.0) {
            policy_error_set(err, "constraints.min_prob",
                             "times the number of arms (%zu) must be below 1", c->n_arms[b]);
            return -1;
        }
    }
    if (c->glr_revision > ENGINE_GLR_REVISION) {
        policy_error_set(err, "rule_revision", "must be from 1 to %d", ENGINE_GLR_REVISION);
        return -1;
    }
    /* The goal on its own (in [0, 1] units: ε and Δ against a range of 1). */
    struct goal g = {.type = c->goal,
                     .m = c->m,
                     .epsilon = c->epsilon,
                     .delta = c->delta,
                     .budget = c->budget,
                     .margin = c->margin};
    if (goal_check(&g, 1.0, "goal.", err) != 0)
        return -1;
    if (goal_check_arms(c->m, c->n_arms, c->n_bandits, "goal.", err) != 0)
        return -1;
    if (c->m > 1 && !(p->flags & POLICY_F_TOPM)) {
        policy_error_set(err, "goal.m", "policy %s finds the best arm only (m = 1)", p->name);
        return -1;
    }
    if ((p->flags & POLICY_F_NEEDS_EPSILON) && c->epsilon <= 0) {
        policy_error_set(err, "goal.epsilon", "policy %s needs epsilon > 0", p->name);
        return -1;
    }
    if ((p->flags & POLICY_F_FIXED_BUDGET) && !(p->flags & POLICY_F_FIXED_CONFIDENCE) &&
        c->budget == 0) {
        policy_error_set(err, "goal.budget",
                         "policy %s is a fixed-budget policy and needs a budget", p->name);
        return -1;
    }
    if (c->budget > 0) {
        uint64_t arms = 0;
        for (size_t b = 0; b < c->n_bandits; b++)
            arms += c->n_arms[b];
        if (c->budget < arms) {
            policy_error_set(err, "goal.budget", "must be at least the number of arms (%llu)",
                             (unsigned long long)arms);
            return -1;
        }
        /* One instance per bandit splits the budget evenly (engine_create);
         * every share must cover its bandit's arms, or phase policies
         * compute their phases from N − K < 0. */
        if (!(p->flags & POLICY_F_MULTI) && c->n_bandits > 1) {
            for (size_t b = 0; b < c->n_bandits; b++) {
                uint64_t share = c->budget / c->n_bandits + (b < c->budget % c->n_bandits);
                if (share < c->n_arms[b]) {
                    policy_error_set(err, "goal.budget",
                                     "policy %s splits it evenly between the %zu bandits; "
                                     "bandit %zu would get %llu pulls for %zu arms",
                                     p->name, c->n_bandits, b, (unsigned long long)share,
                                     c->n_arms[b]);
                    return -1;
                }
            }
        }
    }
    if (p->flags & POLICY_F_NEEDS_TARGET) {
        if (c->target_arm < 0) {
            policy_error_set(err, "target_arm", "policy %s needs a target arm", p->name);
            return -1;
        }
    }
    if (c->target_arm >= 0) {
        for (size_t b = 0; b < c->n_bandits; b++)
            if ((size_t)c->target_arm >= c->n_arms[b]) {
                policy_error_set(err, "target_arm", "no such arm in bandit %zu", b);
                return -1;
            }
    }
    if (!(c->tau == 0 || goal_tau_valid(c->tau))) { /* 0: 1 − δ too */
        policy_error_set(err, "tau", GOAL_TAU_RULE);
        return -1;
    }
    if (c->stop_rule == ENGINE_RULE_POLICY && !(p->flags & POLICY_F_OWN_STOP)) {
        policy_error_set(err, "stop_rule", "policy %s has no stop rule of its own", p->name);
        return -1;
    }
    if (!(c->min_prob >= 0 && c->min_prob < 1)) {
        policy_error_set(err, "constraints.min_prob", "must be in [0, 1)");
        return -1;
    }
    if (c->n_burn_in_blocks > ENGINE_MAX_BLOCKS || (c->n_burn_in_blocks > 0 && c->burn_in == 0)) {
        policy_error_set(err, "constraints.burn_in.blocks", "at most %d sizes, with pulls > 0",
                         ENGINE_MAX_BLOCKS);
        return -1;
    }
    for (size_t i = 0; i < c->n_burn_in_blocks; i++)
        if (c->burn_in_blocks[i] < 1 || c->burn_in_blocks[i] > ENGINE_MAX_BLOCK_MULT) {
            policy_error_set(err, "constraints.burn_in.blocks", "sizes from 1 to %d",
                             ENGINE_MAX_BLOCK_MULT);
            return -1;
        }
    if (!(c->control_share >= 0 && c->control_share < 1)) {
        policy_error_set(err, "constraints.control.share", "must be in [0, 1)");
        return -1;
    }
    if (c->control_share > 0 && c->control_arm == NULL) {
        policy_error_set(err, "constraints.control.arm", "a control share needs a control arm");
        return -1;
    }
    /* The floor comes on top of the control share (see constrained_pick):
     * together they must leave the policy some probability. */
    for (size_t b = 0; c->control_arm != NULL && b < c->n_bandits; b++) {
        if (c->control_arm[b] >= 0 && c->control_share > 0 &&
            c->control_share + c->min_prob * (double)c->n_arms[b] >= 1.0) {
            policy_error_set(err, "constraints.min_prob",
                             "times the number of arms (%zu), plus the control "
                             "share, must be below 1",
                             c->n_arms[b]);
            return -1;
        }
    }
    /* NaN and infinity would pass a plain `< 0` test and poison every
     * posterior draw. */
    if (!(c->prior_alpha >= 0 && isfinite(c->prior_alpha)) ||
        !(c->prior_beta >= 0 && isfinite(c->prior_beta))) {
        policy_error_set(err, "prior", "must be a finite positive number");
        return -1;
    }
    /* Last: a field wrong on its own is named before the goal's pairing. */
    return validate_control(c, err);
}

void engine_free(struct engine *e)
{
    if (e == NULL)
        return;
    if (e->pstate != NULL && e->cfg.policy->fini != NULL)
        for (size_t i = 0; i < e->ninst; i++)
            if (e->pstate[i] != NULL)
                e->cfg.policy->fini(e->pstate[i]);
    if (e->rng != NULL)
        gsl_rng_free(e->rng);
    free(e->pstate);
    free(e->ctx);
    free(e->inst_budget);
    free(e->scratch_high);
    free(e->fired);
    free(e->retired);
    free(e->glr_memo);
    free(e->glr_memo_arm);
    free(e->block_left);
    free(e->verdict_store);
    free(e->verdict);
    free(e->verdict_at);
    free(e->rewarded);
    free(e->lead);
    free(e->k);
    free(e->store);
    free(e->arms);
    free(e->rank);
    free(e->rank_store);
    free(e->control);
    free(e->done);
    free(e->used);
    free(e->handed);
    free(e);
}

struct engine *engine_create(const struct engine_config *cfg, struct policy_error *err)
{
    if (engine_validate(cfg, err) != 0)
        return NULL;
    struct engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        goto nomem;
    e->cfg = *cfg;
    e->nb = cfg->n_bandits;
    e->k = calloc(e->nb, sizeof *e->k);
    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, one per bandit
    e->arms = calloc(e->nb, sizeof *e->arms);
    e->rank = calloc(e->nb, sizeof *e->rank);
    e->control = calloc(e->nb, sizeof *e->control);
    e->done = calloc(e->nb, 1);
    e->used = calloc(e->nb, sizeof *e->used);
    e->handed = calloc(e->nb, sizeof *e->handed);
    if (!e->k || !e->arms || !e->rank || !e->control || !e->done || !e->used || !e->handed)
        goto nomem;
    size_t total = 0;
    for (size_t b = 0; b < e->nb; b++) {
        e->k[b] = cfg->n_arms[b];
        total += e->k[b];
        if (e->k[b] > e->kmax)
            e->kmax = e->k[b];
        e->control[b] = cfg->control_arm != NULL ? cfg->control_arm[b] : -1;
    }
    e->cfg.n_arms = e->k;
    e->cfg.control_arm = NULL; /* use e->control */
    if (isnan(e->cfg.tau) || e->cfg.tau == 0)
        e->cfg.tau = 1 - e->cfg.delta;
    if (e->cfg.prior_alpha == 0)
        e->cfg.prior_alpha = 1;
    if (e->cfg.prior_beta == 0)
        e->cfg.prior_beta = 1;
    e->store = calloc(total, sizeof *e->store);
    e->rank_store = calloc(total, sizeof *e->rank_store);
    e->scratch_high = calloc(e->kmax, 1);
    e->fired = calloc(e->nb, sizeof *e->fired);
    e->retired = calloc(total, 1);
    e->block_left = calloc(total, sizeof *e->block_left);
    if (!e->store || !e->rank_store || !e->scratch_high || !e->fired || !e->retired ||
        !e->block_left)
        goto nomem;
    e->rng = gsl_rng_alloc(rng_xoshiro256ss);
    if (e->rng == NULL)
        goto nomem;
    rng_seed64(e->rng, rng_mix64(cfg->seed + 0x9e3779b97f4a7c15ULL));

    size_t off = 0;
    for (size_t b = 0; b < e->nb; b++) {
        e->arms[b] = e->store + off;
        e->rank[b] = e->rank_store + off;
        for (size_t i = 0; i < e->k[b]; i++)
            stats_arm_init(&e->arms[b][i], e->cfg.prior_alpha, e->cfg.prior_beta);
        /* A random permutation per bandit: the status endpoint's tie-break,
         * fair to every arm and stable between calls. */
        order_rank_draw(e->rng, e->rank[b], e->k[b]);
        off += e->k[b];
    }
    e->rule = engine_resolve_rule(&e->cfg);
    e->rewarded = calloc(e->nb, sizeof *e->rewarded);
    e->lead = malloc(e->nb * sizeof *e->lead);
    if (e->rewarded == NULL || e->lead == NULL)
        goto nomem;
    for (size_t b = 0; b < e->nb; b++)
        e->lead[b] = e->k[b];
    if (e->cfg.goal == ENGINE_GOAL_CONTROL) {
        e->verdict_store = calloc(total, 1);
        e->verdict_at = calloc(total, sizeof *e->verdict_at);
        // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, one per bandit
        e->verdict = calloc(e->nb, sizeof *e->verdict);
        if (!e->verdict_store || !e->verdict_at || !e->verdict)
            goto nomem;
        for (size_t b = 0; b < e->nb; b++)
            e->verdict[b] = e->verdict_store + (e->arms[b] - e->store);
    }
    if (e->rule == ENGINE_RULE_GLR) {
        e->glr_memo = calloc(e->nb, sizeof *e->glr_memo);
        e->glr_memo_arm = calloc(total, sizeof *e->glr_memo_arm);
        if (!e->glr_memo || !e->glr_memo_arm)
            goto nomem;
        for (size_t b = 0; b < e->nb; b++)
            stats_glr_memo_init(&e->glr_memo[b], e->glr_memo_arm + (e->arms[b] - e->store),
                                e->k[b]);
    }

    e->ninst = is_multi(e) ? 1 : e->nb;
    e->ctx = calloc(e->ninst, sizeof *e->ctx);
    e->pstate = calloc(e->ninst, sizeof *e->pstate);
    e->inst_budget = calloc(e->ninst, sizeof *e->inst_budget);
    if (!e->ctx || !e->pstate || !e->inst_budget)
        goto nomem;
    for (size_t i = 0; i < e->ninst; i++) {
        struct policy_ctx *c = &e->ctx[i];
        size_t b0 = e->ninst == 1 ? 0 : i;
        c->n_bandits = e->ninst == 1 ? e->nb : 1;
        c->n_arms = &e->k[b0];
        c->arms = &e->arms[b0];
        c->bandit_done = &e->done[b0];
        c->m = e->cfg.m;
        c->epsilon = e->cfg.epsilon;
        c->delta = e->cfg.delta;
        c->glr_proven = glr_proven_kind(&e->cfg);
        if (e->cfg.budget > 0) {
            /* Split the budget between per-bandit instances; the first
             * budget % M bandits get one pull more. */
            e->inst_budget[i] =
                e->ninst == 1 ? e->cfg.budget : e->cfg.budget / e->nb + (i < e->cfg.budget % e->nb);
        }
        c->budget = e->inst_budget[i];
        c->bound = e->cfg.bound;
        c->tau = e->cfg.tau;
        c->target_arm = e->cfg.target_arm;
        c->params = &e->cfg.params;
        c->rng = e->rng;
        if (e->verdict != NULL) {
            c->control = &e->control[b0];
            c->verdict = (const unsigned char *const *)&e->verdict[b0];
            c->margin = e->cfg.margin;
        }
        char text[sizeof err->field + sizeof err->message] = "";
        if (e->cfg.policy->init(&e->pstate[i], c, text, sizeof text) != 0) {
            policy_error_from_text(err, text);
            e->pstate[i] = NULL;
            engine_free(e);
            return NULL;
        }
    }
    return e;
nomem:
    policy_error_nomem(err);
    engine_free(e);
    return NULL;
}

/* --- stopping ------------------------------------------------------------- */

/* Goal control: the superior arm of highest mean, else the control arm
 * (what a trial serves once it stops: no arm beat control). */
static void recommend_vs_control(const struct engine *e, size_t b, unsigned char *high)
{
    size_t best = (size_t)e->control[b];
    int found = 0;
    memset(high, 0, e->k[b]);
    for (size_t i = 0; i < e->k[b]; i++)
        if (e->verdict[b][i] == POLICY_SUPERIOR &&
            (!found || e->arms[b][i].mean > e->arms[b][best].mean)) {
            best = i;
            found = 1;
        }
    high[best] = 1;
}

static void recommend(const struct engine *e, size_t b, unsigned char *high)
{
    const struct policy_ops *p = e->cfg.policy;
    if (e->verdict != NULL) {
        recommend_vs_control(e, b, high);
        return;
    }
    if (p->recommend != NULL) {
        size_t i = inst_of(e, b);
        memset(high, 0, e->k[b]);
        p->recommend(e->pstate[i], &e->ctx[i], e->ninst == 1 ? b : 0, high);
        return;
    }
    order_top_m(e->arms[b], e->k[b], e->cfg.m, e->rank[b], high);
}

/* δᶜ with the split of δ fixed in advance (stop.h): the δᶜ rule's error
 * bound, and what the status shows as δᶜ. */
static double delta_c_of(const struct engine *e, size_t b, const unsigned char *high, double *cut)
{
    return stop_delta_c(e->arms[b], e->k[b], high, e->cfg.bound, e->cfg.epsilon, cut);
}

static int any_unpulled(const struct engine *e, size_t b)
{
    for (size_t i = 0; i < e->k[b]; i++)
        if (e->arms[b][i].n == 0)
            return 1;
    return 0;
}

/* Arm i's interval on its difference with the control, from the two
 * arms' status intervals ([lc, hc]: the control's): each side at δ/(2K), so
 * that the 2K one-sided bounds of a bandit (both sides of each arm, the
 * control's included) hold together with probability ≥ 1 − δ
 * (docs/stop-rules.md, `control`). The status's per-arm intervals are thus
 * exactly those the decisions rest on. */
static void vs_control_interval(const struct engine *e, size_t b, size_t i, double lc, double hc,
                                double *lo, double *hi)
{
    double li, hi_i;
    engine_arm_status_interval(e, b, i, &li, &hi_i);
    *lo = li - hc;
    *hi = hi_i - lc;
}

/* Decide what the interval now proves of arm i (open only): superior when
 * its lower end is above Δ, futile when its upper end is below. A verdict
 * is kept: the intervals hold at every time at once, so the first time one
 * clears Δ is as good as any. */
static void vs_control_decide_arm(struct engine *e, size_t b, size_t i, double lc, double hc)
{
    if (e->verdict[b][i] != POLICY_OPEN || (int)i == e->control[b])
        return;
    double lo, hi;
    vs_control_interval(e, b, i, lc, hc, &lo, &hi);
    size_t at = (size_t)(e->arms[b] - e->store) + i;
    if (lo > e->cfg.margin)
        e->verdict[b][i] = POLICY_SUPERIOR;
    else if (hi < e->cfg.margin)
        e->verdict[b][i] = POLICY_FUTILE;
    else
        return;
    e->verdict_at[at] = e->rewarded[b];
}

/* A reward of arm moved its interval, and the control's moves every
 * comparison (its own interval computed once: K + 1 widths, not 2K). */
static void vs_control_decide(struct engine *e, size_t b, size_t arm)
{
    if (e->verdict == NULL || e->reason != ENGINE_RUNNING || e->done[b])
        return;
    double lc, hc;
    engine_arm_status_interval(e, b, (size_t)e->control[b], &lc, &hc);
    if ((int)arm != e->control[b]) {
        vs_control_decide_arm(e, b, arm, lc, hc);
        return;
    }
    for (size_t i = 0; i < e->k[b]; i++)
        vs_control_decide_arm(e, b, i, lc, hc);
}

/* Comparisons of bandit b still open. */
static size_t vs_control_open(const struct engine *e, size_t b)
{
    size_t n = 0;
    for (size_t i = 0; i < e->k[b]; i++)
        n += (int)i != e->control[b] && e->verdict[b][i] == POLICY_OPEN;
    return n;
}

/* Does bandit b meet the experiment's confidence rule now? */
static int rule_met(struct engine *e, size_t b)
{
    if (e->rule == ENGINE_RULE_NONE)
        return 0;
    if (e->rule == ENGINE_RULE_CONTROL)
        return e->verdict != NULL && vs_control_open(e, b) == 0;
    if (e->rule == ENGINE_RULE_POLICY) {
        size_t i = inst_of(e, b);
        const struct policy_ops *p = e->cfg.policy;
        return p->done != NULL && p->done(e->pstate[i], &e->ctx[i], e->ninst == 1 ? b : 0);
    }
    if (any_unpulled(e, b))
        return 0;
    unsigned char *high = e->scratch_high;
    recommend(e, b, high);
    switch (e->rule) {
    case ENGINE_RULE_DELTA_C:
        return stop_delta_c_met(e->arms[b], e->k[b], high, e->cfg.bound, e->cfg.epsilon,
                                e->cfg.delta);
    case ENGINE_RULE_GLR:
    case ENGINE_RULE_GLR_HEURISTIC: {
        enum stats_glr_threshold kind =
            e->rule == ENGINE_RULE_GLR ? glr_proven_kind(&e->cfg) : STATS_GLR_HEURISTIC;
        return stats_glr_stop_memo(e->arms[b], e->k[b], high, kind, e->cfg.m, e->cfg.epsilon,
                                   e->cfg.delta, e->glr_memo != NULL ? &e->glr_memo[b] : NULL);
    }
    case ENGINE_RULE_RHO:
        return stats_rho(e->arms[b], e->k[b], e->cfg.m) >= e->cfg.tau;
    default:
        return 0;
    }
}

static void finish_if_all_done(struct engine *e, enum engine_stop_reason why)
{
    for (size_t b = 0; b < e->nb; b++)
        if (!e->done[b])
            return;
    if (e->reason == ENGINE_RUNNING)
        e->reason = why;
}

static void mark_done(struct engine *e, size_t b, enum engine_stop_reason why)
{
    if (e->done[b])
        return;
    e->done[b] = 1;
    finish_if_all_done(e, why);
}

/* Goal control: superiority when some arm of some bandit was proven
 * superior, futility when every comparison ended futile. */
static enum engine_stop_reason rule_reason(const struct engine *e)
{
    if (e->rule == ENGINE_RULE_CONTROL && e->verdict != NULL) {
        for (size_t b = 0; b < e->nb; b++)
            for (size_t i = 0; i < e->k[b]; i++)
                if (e->verdict[b][i] == POLICY_SUPERIOR)
                    return ENGINE_STOPPED_SUPERIORITY;
        return ENGINE_STOPPED_FUTILITY;
    }
    return e->rule == ENGINE_RULE_POLICY ? ENGINE_STOPPED_POLICY : ENGINE_STOPPED_CONFIDENCE;
}

static void stop_eval(const struct engine *e, size_t b, unsigned char *high,
                      struct engine_stop_eval *out);

static void check_stop(struct engine *e, size_t b)
{
    if (e->reason != ENGINE_RUNNING || e->done[b])
        return;
    if (rule_met(e, b)) {
        /* The figures of the moment the rule fired: later rewards (of
         * pulls pending at the stop) move them, and the status must show
         * what the stop rested on. */
        struct engine_stop_eval *f = &e->fired[b];
        stop_eval(e, b, e->scratch_high, f);
        f->fired = 1;
        /* A paper's own rule shows no figures; its proof bounds the error
         * of the stop by δ. */
        if ((f->rule == ENGINE_RULE_POLICY || f->rule == ENGINE_RULE_CONTROL) && f->proven &&
            isnan(f->error_bound))
            f->error_bound = e->cfg.delta;
        mark_done(e, b, rule_reason(e));
    }
}

/* --- assignment ------------------------------------------------------------ */

/* The unfinished bandit with the fewest pulls handed out (ties at random);
 * −1 if every bandit is done. */
static int least_served_bandit(struct engine *e)
{
    size_t best = (size_t)-1, ties = 0;
    for (size_t b = 0; b < e->nb; b++) {
        if (e->done[b])
            continue;
        if (best == (size_t)-1 || e->used[b] < e->used[best]) {
            best = b;
            ties = 1;
        } else if (e->used[b] == e->used[best]) {
            ties++;
            if (gsl_rng_uniform_int(e->rng, (unsigned long)ties) == 0)
                best = b;
        }
    }
    return best == (size_t)-1 ? -1 : (int)best;
}

static unsigned char *retired_of(const struct engine *e, size_t b)
{
    return e->retired + (e->arms[b] - e->store);
}

/* A pull given to a retired arm goes to the bandit's arm of fewest pulls
 * handed out that is not retired, ties by rank: no draw, so a replay
 * re-selects it. */
static size_t unretired(const struct engine *e, size_t b, size_t arm)
{
    const unsigned char *r = retired_of(e, b);
    if (!r[arm])
        return arm;
    size_t best = arm;
    for (size_t i = 0; i < e->k[b]; i++) {
        if (r[i])
            continue;
        uint64_t h = e->arms[b][i].n + e->arms[b][i].pending;
        uint64_t hb = best == arm ? UINT64_MAX : e->arms[b][best].n + e->arms[b][best].pending;
        if (h < hb || (h == hb && e->rank[b][i] < e->rank[b][best]))
            best = i;
    }
    return best;
}

static void exploit(struct engine *e, int bandit, struct engine_pull *out)
{
    size_t b = bandit >= 0 ? (size_t)bandit : rng_index(e->rng, e->nb);
    unsigned char *high = e->scratch_high;
    recommend(e, b, high);
    /* A retired arm is served only when every recommended arm is retired. */
    const unsigned char *r = retired_of(e, b);
    int kept = 0;
    for (size_t i = 0; i < e->k[b]; i++)
        kept |= high[i] && !r[i];
    for (size_t i = 0; kept && i < e->k[b]; i++)
        high[i] = high[i] && !r[i];
    /* Serve one of the recommended arms, uniformly. */
    size_t count = 0;
    for (size_t i = 0; i < e->k[b]; i++)
        count += high[i] != 0;
    size_t pick = rng_index(e->rng, count ? count : e->k[b]);
    size_t arm = 0;
    for (size_t i = 0; i < e->k[b]; i++) {
        if (count && !high[i])
            continue;
        if (pick-- == 0) {
            arm = i;
            break;
        }
    }
    out->bandit = b;
    out->arm = arm;
    out->exploit = 1;
}

static void record_pull(struct engine *e, size_t b, size_t arm)
{
    e->arms[b][arm].pending++;
    e->pending++;
    e->used[b]++;
    e->used_total++;
    e->handed[b]++;
    e->handed_total++;
    e->ctx[inst_of(e, b)].handed_out = e->ninst == 1 ? e->handed_total : e->handed[b];
}

/* Is the budget of bandit b's policy instance (or of the experiment, for a
 * single instance) handed out? Counted in rewarded plus pending pulls. */
static int budget_spent(const struct engine *e, size_t b)
{
    if (e->cfg.budget == 0)
        return 0;
    if (e->ninst == 1)
        return e->used_total >= e->cfg.budget;
    return e->used[b] >= e->inst_budget[b];
}

static void stop_on_budget(struct engine *e, size_t b)
{
    if (e->ninst != 1) {
        mark_done(e, b, ENGINE_STOPPED_BUDGET);
        return;
    }
    for (size_t j = 0; j < e->nb; j++)
        mark_done(e, j, ENGINE_STOPPED_BUDGET);
}

/* The arm with the fewest pulls handed out below the burn-in, in bandit b or
 * (b < 0) in any unfinished bandit; 0 if none. */
static int burn_in_pick(struct engine *e, int b, struct policy_pick *pick)
{
    uint64_t best_h = 0;
    size_t ties = 0;
    for (size_t j = 0; j < e->nb; j++) {
        if ((b >= 0 && j != (size_t)b) || e->done[j])
            continue;
        for (size_t i = 0; i < e->k[j]; i++) {
            uint64_t h = e->arms[j][i].n + e->arms[j][i].pending;
            if (h >= e->cfg.burn_in || e->retired[e->arms[j] - e->store + i])
                continue; /* a retired arm never completes its burn-in */
            if (ties == 0 || h < best_h) {
                best_h = h;
                ties = 1;
                pick->bandit = j;
                pick->arm = i;
            } else if (h == best_h && gsl_rng_uniform_int(e->rng, (unsigned long)++ties) == 0) {
                pick->bandit = j;
                pick->arm = i;
            }
        }
    }
    return ties > 0;
}

/* Arm i of bandit b still in its burn-in (and not retired)? */
static int in_burn_in(const struct engine *e, size_t b, size_t i)
{
    return e->arms[b][i].n + e->arms[b][i].pending < e->cfg.burn_in &&
           !e->retired[e->arms[b] - e->store + i];
}

/* Burn-in by permuted blocks, in the bandit burn_in_pick chose: the arm is
 * drawn from what is left of the current block (each left pull equally
 * likely: a uniformly random order of the block), a new block started
 * when it is spent — m pulls of every arm still in its burn-in, m drawn
 * from the configured sizes, cut to what each arm still needs. Unlike the
 * least-served order, a site that saw the last allocations cannot tell
 * the next one: block ends are not at fixed places. */
static void block_pick(struct engine *e, struct policy_pick *pick)
{
    size_t b = pick->bandit;
    uint32_t *left = e->block_left + (e->arms[b] - e->store);
    uint64_t total = 0;
    for (size_t i = 0; i < e->k[b]; i++)
        total += in_burn_in(e, b, i) ? left[i] : 0;
    if (total == 0) {
        const struct engine_config *c = &e->cfg;
        uint32_t m = c->burn_in_blocks[rng_index(e->rng, c->n_burn_in_blocks)];
        for (size_t i = 0; i < e->k[b]; i++) {
            uint64_t h = e->arms[b][i].n + e->arms[b][i].pending;
            left[i] = in_burn_in(e, b, i) ? (uint32_t)(h + m > c->burn_in ? c->burn_in - h : m) : 0;
            total += left[i];
        }
    }
    /* burn_in_pick found an arm of b in its burn-in: total > 0 */
    uint64_t u = rng_index(e->rng, (size_t)total);
    for (size_t i = 0; i < e->k[b]; i++) {
        uint64_t l = in_burn_in(e, b, i) ? left[i] : 0;
        if (u < l) {
            pick->arm = i;
            left[i]--;
            return;
        }
        u -= l;
    }
}

/* Clinical constraints, applied before the policy: burn-in first; then, in
 * the bandit bb the pull goes to, one coin: with probability s_b the control
 * arm (s_b = the control share, 0 in a bandit without a control arm), with
 * probability K_b·f an arm uniformly at random, else the policy. So
 *   p_i = s_b·[i = control] + f + (1 − s_b − K_b f) q_i,
 * q the policy's own distribution: every arm keeps its floor f whatever the
 * control share, and the control arm at least s_b (validated: s_b + K_b f < 1).
 * Returns 1 and fills pick when a constraint decides the pull. */
static int constrained_pick(struct engine *e, int b, struct policy_pick *pick)
{
    const struct engine_config *c = &e->cfg;
    if (c->burn_in > 0 && burn_in_pick(e, b, pick)) {
        if (c->n_burn_in_blocks > 0)
            block_pick(e, pick);
        return 1;
    }
    if (c->control_share <= 0 && c->min_prob <= 0)
        return 0;
    int bb = b >= 0 ? b : least_served_bandit(e);
    if (bb < 0)
        return 0;
    double share = e->control[bb] >= 0 ? c->control_share : 0.0;
    double floor_all = c->min_prob * (double)e->k[bb];
    double u = gsl_rng_uniform(e->rng);
    if (u < share)
        pick->arm = (size_t)e->control[bb];
    else if (u < share + floor_all)
        pick->arm = rng_index(e->rng, e->k[bb]);
    else
        return 0;
    pick->bandit = (size_t)bb;
    return 1;
}

int engine_assign(struct engine *e, int bandit, struct engine_pull *out)
{
    if (bandit >= (int)e->nb)
        return -1;
    if (e->reason != ENGINE_RUNNING || e->paused || (bandit >= 0 && e->done[bandit])) {
        exploit(e, bandit, out);
        return 0;
    }
    const struct policy_ops *p = e->cfg.policy;
    /* Each pass that does not hand out a pull marks a bandit done, so the
     * loop ends after at most M + 1 passes. */
    for (;;) {
        struct policy_pick pick = {0, 0};
        int b = bandit;
        int policy_chooses = b < 0 && e->ninst == 1 && e->nb > 1;
        if (b < 0 && !policy_chooses) {
            b = least_served_bandit(e);
            if (b < 0)
                break;
        }
        size_t bs = b >= 0 ? (size_t)b : 0;
        if (budget_spent(e, bs)) {
            stop_on_budget(e, bs);
            if (bandit >= 0 || e->reason != ENGINE_RUNNING)
                break;
            continue;
        }
        if (!constrained_pick(e, b, &pick)) {
            size_t i = b >= 0 ? inst_of(e, bs) : 0;
            int local = b < 0 ? -1 : (e->ninst == 1 ? b : 0);
            if (p->select(e->pstate[i], &e->ctx[i], local, &pick) == POLICY_DONE) {
                if (b >= 0)
                    mark_done(e, bs, ENGINE_STOPPED_POLICY);
                else
                    for (size_t j = 0; j < e->nb; j++)
                        mark_done(e, j, ENGINE_STOPPED_POLICY);
                if (bandit >= 0 || e->reason != ENGINE_RUNNING)
                    break;
                continue;
            }
            if (e->ninst != 1)
                pick.bandit = bs;
        }
        if (pick.bandit >= e->nb || pick.arm >= e->k[pick.bandit] || e->done[pick.bandit])
            abort(); /* a policy answered outside its scope: a bug, fail loudly */
        pick.arm = unretired(e, pick.bandit, pick.arm);
        record_pull(e, pick.bandit, pick.arm);
        out->bandit = pick.bandit;
        out->arm = pick.arm;
        out->exploit = 0;
        if (budget_spent(e, pick.bandit))
            stop_on_budget(e, pick.bandit); /* that was the budget's last pull */
        return 0;
    }
    exploit(e, bandit, out);
    return 0;
}

void engine_record_pull(struct engine *e, size_t bandit, size_t arm)
{
    /* a pull recorded (not chosen) still fills its place in the block */
    uint32_t *left = &e->block_left[e->arms[bandit] - e->store + arm];
    if (*left > 0)
        (*left)--;
    record_pull(e, bandit, arm);
    if (budget_spent(e, bandit))
        stop_on_budget(e, bandit);
}

/* --- outcomes --------------------------------------------------------------- */

/* Adds reward r to arm's statistics, counting it as a lead reward first if
 * arm leads (stats_arm_lead, with the leader kept between rewards: found
 * again only when the leader's own mean fell). */
static void learn_lead(struct engine *e, size_t b, size_t arm, double r)
{
    struct stats_arm *arms = e->arms[b], *a = &arms[arm];
    size_t k = e->k[b], lead = e->lead[b];
    if (lead >= k)
        lead = stats_arms_leader(arms, k);
    if (lead == arm)
        stats_arm_lead_add(a, r);
    double before = a->mean;
    stats_arm_add(a, r);
    if (lead >= k || (lead == arm && a->mean < before))
        lead = k;
    else if (lead != arm &&
             (a->mean > arms[lead].mean || (a->mean == arms[lead].mean && arm < lead)))
        lead = arm;
    e->lead[b] = lead;
}

static void learn(struct engine *e, size_t b, size_t arm, double r, enum policy_event ev)
{
    struct stats_arm *a = &e->arms[b][arm];
    /* A NaN reward carries no information: stats_arm_add would ignore it
     * while the posterior and the pull count took it as a failure. An
     * observation of NaN is dropped; a pull answered with NaN is released. */
    if (isnan(r) && ev != POLICY_EV_RELEASE) {
        if (ev == POLICY_EV_OBSERVATION)
            return;
        ev = POLICY_EV_RELEASE;
    }
    int was_pending = ev != POLICY_EV_OBSERVATION && a->pending > 0;
    if (was_pending) {
        a->pending--;
        e->pending--;
        e->used[b]--;
        e->used_total--;
    }
    if (ev == POLICY_EV_RELEASE) {
        /* The pull is neither rewarded nor pending any more: it frees its
         * place in the budget. */
    } else {
        if (r < 0)
            r = 0;
        if (r > 1)
            r = 1;
        learn_lead(e, b, arm, r);
        /* Bernoulli trick (Agrawal & Goyal): a reward in (0, 1) updates the
         * Beta posterior as a success with probability r. 0 and 1 need no
         * draw, so Bernoulli experiments keep their random stream. */
        int s = r >= 1 ? 1 : r <= 0 ? 0 : gsl_rng_uniform(e->rng) < r;
        stats_arm_add_bayes(a, s);
        e->pulls++;
        e->rewarded[b]++;
        if (was_pending) {
            /* A rewarded pull keeps its place in the budget; observations
             * were never handed out and take none. */
            e->used[b]++;
            e->used_total++;
        }
    }
    const struct policy_ops *p = e->cfg.policy;
    size_t i = inst_of(e, b);
    if (p->update != NULL)
        p->update(e->pstate[i], &e->ctx[i], e->ninst == 1 ? b : 0, arm, ev, r);
    if (ev != POLICY_EV_RELEASE) {
        vs_control_decide(e, b, arm);
        check_stop(e, b);
    }
    /* A multi-bandit policy's own rule can settle other bandits too (pooled
     * SAR accepts arms across bandits): ask about each. */
    if (e->rule == ENGINE_RULE_POLICY && e->ninst == 1)
        for (size_t j = 0; j < e->nb; j++)
            if (j != b)
                check_stop(e, j);
}

void engine_reward(struct engine *e, size_t bandit, size_t arm, double r)
{
    learn(e, bandit, arm, r, POLICY_EV_REWARD);
}

void engine_release(struct engine *e, size_t bandit, size_t arm)
{
    learn(e, bandit, arm, 0, POLICY_EV_RELEASE);
}

void engine_observe(struct engine *e, size_t bandit, size_t arm, double r)
{
    learn(e, bandit, arm, r, POLICY_EV_OBSERVATION);
}

void engine_stop(struct engine *e)
{
    for (size_t b = 0; b < e->nb; b++)
        e->done[b] = 1;
    if (e->reason == ENGINE_RUNNING)
        e->reason = ENGINE_STOPPED_MANUAL;
}

void engine_set_paused(struct engine *e, int paused)
{
    e->paused = paused != 0;
}

/* --- status ------------------------------------------------------------------ */

enum engine_stop_reason engine_stop_reason(const struct engine *e)
{
    return e->reason;
}

int engine_stopped(const struct engine *e)
{
    return e->reason != ENGINE_RUNNING;
}

size_t engine_n_bandits(const struct engine *e)
{
    return e->nb;
}

size_t engine_n_arms(const struct engine *e, size_t bandit)
{
    return e->k[bandit];
}

const struct stats_arm *engine_arms(const struct engine *e, size_t bandit)
{
    return e->arms[bandit];
}

uint64_t engine_pulls(const struct engine *e)
{
    return e->pulls;
}

uint64_t engine_pending(const struct engine *e)
{
    return e->pending;
}

uint64_t engine_handed_out(const struct engine *e)
{
    return e->handed_total;
}

int engine_bandit_done(const struct engine *e, size_t bandit)
{
    return e->done[bandit];
}

size_t engine_bandits_done(const struct engine *e)
{
    size_t n = 0;
    for (size_t b = 0; b < e->nb; b++)
        n += e->done[b];
    return n;
}

void engine_bandit_status(const struct engine *e, size_t b, unsigned char *high,
                          struct engine_bandit_status *st)
{
    recommend(e, b, high);
    st->delta_c = delta_c_of(e, b, high, &st->cutoff);
    if (any_unpulled(e, b))
        st->delta_c = 1;
    st->rho = stats_rho(e->arms[b], e->k[b], e->cfg.m);
    st->glr = stats_glr(e->arms[b], e->k[b], high);
    st->done = e->done[b];
}

static double total_pulls(const struct engine *e, size_t b)
{
    double t = 0.0;
    for (size_t i = 0; i < e->k[b]; i++)
        t += (double)e->arms[b][i].n;
    return t;
}

static void glr_eval(const struct engine *e, size_t b, const unsigned char *high,
                     enum stats_glr_threshold kind, unsigned m, struct engine_stop_eval *out)
{
    out->evidence = stop_glr_evidence(e->arms[b], e->k[b], high, kind, e->cfg.epsilon);
    out->threshold =
        stats_glr_threshold(kind, total_pulls(e, b), e->k[b], m, e->cfg.epsilon, e->cfg.delta);
    out->fires = ENGINE_FIRES_ABOVE;
    if (kind != STATS_GLR_HEURISTIC)
        out->error_bound = stop_glr_error_bound(kind, out->evidence, e->k[b], m, e->cfg.epsilon);
}

static void rho_eval(const struct engine *e, size_t b, struct engine_stop_eval *out)
{
    out->evidence = stats_rho(e->arms[b], e->k[b], e->cfg.m);
    out->threshold = e->cfg.tau;
    out->fires = ENGINE_FIRES_AT_LEAST;
}

/* The figures of bandit b's rule now; high is scratch (k entries). */
static void stop_eval(const struct engine *e, size_t b, unsigned char *high,
                      struct engine_stop_eval *out)
{
    const struct policy_ops *p = e->cfg.policy;
    out->rule = e->rule;
    out->proven = engine_rule_proven(&e->cfg, e->rule);
    out->fires = ENGINE_FIRES_NONE;
    out->evidence = out->threshold = out->error_bound = NAN;
    out->fired = 0;
    recommend(e, b, high);
    switch (e->rule) {
    case ENGINE_RULE_DELTA_C:
        out->fires = ENGINE_FIRES_AT_MOST;
        out->evidence = delta_c_of(e, b, high, NULL);
        out->threshold = e->cfg.delta;
        if (out->proven)
            out->error_bound = out->evidence;
        break;
    case ENGINE_RULE_GLR:
        glr_eval(e, b, high, glr_proven_kind(&e->cfg), e->cfg.m, out);
        break;
    case ENGINE_RULE_GLR_HEURISTIC:
        glr_eval(e, b, high, STATS_GLR_HEURISTIC, e->cfg.m, out);
        break;
    case ENGINE_RULE_RHO:
        rho_eval(e, b, out);
        break;
    case ENGINE_RULE_CONTROL:
        /* the comparisons still open, against none */
        out->fires = ENGINE_FIRES_AT_MOST;
        out->evidence = e->verdict != NULL ? (double)vs_control_open(e, b) : NAN;
        out->threshold = 0;
        break;
    case ENGINE_RULE_POLICY:
        if (p->flags & POLICY_F_GLR_STOP)
            glr_eval(e, b, high, out->proven ? glr_proven_kind(&e->cfg) : STATS_GLR_HEURISTIC, 1,
                     out);
        if (p->flags & POLICY_F_RHO_STOP)
            rho_eval(e, b, out);
        break;
    default:
        break;
    }
    if (!isfinite(out->evidence) && !isnan(out->evidence))
        out->evidence = out->evidence > 0 ? DBL_MAX : -DBL_MAX; /* nothing to distinguish */
}

void engine_bandit_stop(const struct engine *e, size_t b, struct engine_stop_eval *out)
{
    if (e->fired[b].fired) {
        *out = e->fired[b];
        return;
    }
    unsigned char high[ENGINE_MAX_ARMS];
    stop_eval(e, b, high, out);
    /* A paper's own rule shows no figures; when it stopped the bandit its
     * proof bounds the error by δ. */
    if (e->rule == ENGINE_RULE_POLICY && e->done[b] && e->reason == ENGINE_STOPPED_POLICY &&
        out->proven && isnan(out->error_bound))
        out->error_bound = e->cfg.delta;
}

/* engine_arm_interval with the width multiplied by scale. */
static void arm_interval(const struct engine *e, size_t bandit, size_t arm, double d, double scale,
                         double *lo, double *hi)
{
    const struct stats_arm *a = &e->arms[bandit][arm];
    double w = scale * stats_width(e->cfg.bound, a, 0, d);
    if (a->n == 0 || !isfinite(w)) {
        *lo = 0;
        *hi = 1;
        return;
    }
    *lo = a->mean - w < 0 ? 0 : a->mean - w;
    *hi = a->mean + w > 1 ? 1 : a->mean + w;
}

void engine_arm_interval(const struct engine *e, size_t bandit, size_t arm, double d, double *lo,
                         double *hi)
{
    arm_interval(e, bandit, arm, d, 1.0, lo, hi); /* 1 · w == w: bit-identical */
}

int engine_vs_control(const struct engine *e, size_t b, size_t arm, struct engine_vs_control *out)
{
    if (e->verdict == NULL || (int)arm == e->control[b])
        return -1;
    const struct stats_arm *a = &e->arms[b][arm], *c = &e->arms[b][e->control[b]];
    out->diff = a->n > 0 && c->n > 0 ? a->mean - c->mean : NAN;
    double lc, hc;
    engine_arm_status_interval(e, b, (size_t)e->control[b], &lc, &hc);
    vs_control_interval(e, b, arm, lc, hc, &out->lower, &out->upper);
    out->verdict = (enum policy_verdict)e->verdict[b][arm];
    out->at = e->verdict_at[(size_t)(e->arms[b] - e->store) + arm];
    return 0;
}

int engine_control_arm(const struct engine *e, size_t b)
{
    return e->control[b];
}

void engine_arm_status_interval(const struct engine *e, size_t bandit, size_t arm, double *lo,
                                double *hi)
{
    double d = e->cfg.delta / (2.0 * (double)e->k[bandit]);
    arm_interval(e, bandit, arm, d, engine_calibrated(&e->cfg) ? e->cfg.scale : 1.0, lo, hi);
}

const char *engine_stop_reason_name(const struct engine *e)
{
    switch (e->reason) {
    case ENGINE_STOPPED_CONFIDENCE:
        return stop_rule_name(e->rule); /* the rule that fired */
    case ENGINE_STOPPED_BUDGET:
        return "budget";
    case ENGINE_STOPPED_MANUAL:
        return "manual";
    case ENGINE_STOPPED_POLICY:
        return "policy";
    case ENGINE_STOPPED_SUPERIORITY:
        return "superiority";
    case ENGINE_STOPPED_FUTILITY:
        return "futility";
    default:
        return NULL;
    }
}

const struct engine_config *engine_config(const struct engine *e)
{
    return &e->cfg;
}

enum engine_stop_rule engine_rule(const struct engine *e)
{
    return e->rule;
}

/* --- edits ------------------------------------------------------------------- */

uint64_t engine_budget(const struct engine *e)
{
    return e->cfg.budget;
}

uint64_t engine_budget_used(const struct engine *e)
{
    return e->used_total;
}

/* Instance i's share of budget, as engine_create splits it. */
static uint64_t budget_share(const struct engine *e, uint64_t budget, size_t i)
{
    if (budget == 0)
        return 0;
    return e->ninst == 1 ? budget : budget / e->nb + (i < budget % e->nb);
}

int engine_set_budget(struct engine *e, uint64_t budget, struct policy_error *err)
{
    const struct policy_ops *p = e->cfg.policy;
    if (e->reason != ENGINE_RUNNING) {
        policy_error_set(err, "goal.budget", "the experiment has stopped; a stop is final");
        return -1;
    }
    if (budget != 0 && budget < e->used_total) {
        policy_error_set(err, "goal.budget",
                         "%llu pulls are already used (rewarded or pending); the budget "
                         "cannot fall below them",
                         (unsigned long long)e->used_total);
        return -1;
    }
    struct engine_config c = e->cfg;
    c.budget = budget;
    c.control_arm = e->control; /* e->cfg's is NULL once built */
    if (engine_validate(&c, err) != 0)
        return -1;
    if (engine_resolve_rule(&c) != e->rule) {
        policy_error_set(err, "goal.budget",
                         "policy %s is a fixed-budget policy: its budget can change but "
                         "not be removed",
                         p->name);
        return -1;
    }
    if ((p->flags & POLICY_F_FIXED_BUDGET) && p->rebudget == NULL) {
        policy_error_set(err, "goal.budget",
                         "policy %s plans its allocation from the budget at creation and "
                         "cannot plan again",
                         p->name);
        return -1;
    }
    /* Every instance must accept its share before any changes. */
    for (int check = 1; check >= 0; check--) {
        for (size_t i = 0; i < e->ninst; i++) {
            struct policy_ctx *ctx = &e->ctx[i];
            uint64_t old = ctx->budget;
            ctx->budget = budget_share(e, budget, i);
            char text[256];
            int rc =
                p->rebudget != NULL ? p->rebudget(e->pstate[i], ctx, check, text, sizeof text) : 0;
            if (rc != 0)
                policy_error_from_text(err, text);
            if (check)
                ctx->budget = old;
            else
                e->inst_budget[i] = ctx->budget;
            if (rc != 0 && check)
                return -1;
        }
    }
    e->cfg.budget = budget;
    /* A cut to what is used ends the bandits whose share is used up. */
    for (size_t b = 0; b < e->nb && e->reason == ENGINE_RUNNING; b++)
        if (!e->done[b] && budget_spent(e, b))
            stop_on_budget(e, b);
    return 0;
}

int engine_arm_retired(const struct engine *e, size_t bandit, size_t arm)
{
    return retired_of(e, bandit)[arm];
}

int engine_retire_arm(struct engine *e, size_t b, size_t arm, struct policy_error *err)
{
    unsigned char *r = retired_of(e, b);
    if (r[arm])
        return 0;
    if (e->reason != ENGINE_RUNNING || e->done[b]) {
        policy_error_set(err, "retire", "the bandit has concluded; a stop is final");
        return -1;
    }
    if (e->cfg.policy->flags & POLICY_F_PHASES) {
        policy_error_set(err, "retire",
                         "policy %s ends a phase only once every active arm has its samples; "
                         "an arm without pulls would hold it forever",
                         e->cfg.policy->name);
        return -1;
    }
    if (e->control[b] == (int)arm && e->cfg.control_share > 0) {
        policy_error_set(err, "retire", "the control arm keeps its share of pulls (constraints)");
        return -1;
    }
    if (e->control[b] == (int)arm && e->verdict != NULL) {
        policy_error_set(err, "retire", "every comparison needs the control arm (goal.control)");
        return -1;
    }
    size_t left = 0;
    for (size_t i = 0; i < e->k[b]; i++)
        left += !r[i] && i != arm;
    if (left < (size_t)e->cfg.m + 1) {
        policy_error_set(err, "retire", "at least %u arms must keep getting pulls (m + 1)",
                         e->cfg.m + 1);
        return -1;
    }
    r[arm] = 1;
    return 0;
}

void engine_retire_undo(struct engine *e, size_t b, size_t arm)
{
    retired_of(e, b)[arm] = 0;
}

/* --- snapshots ------------------------------------------------------------ */

static void snap_arm(struct ser *s, struct stats_arm *a)
{
    ser_u64(s, &a->n);
    ser_u64(s, &a->pending);
    ser_f64(s, &a->mean);
    ser_f64(s, &a->m2);
    ser_f64(s, &a->ebv);
    ser_f64(s, &a->alpha);
    ser_f64(s, &a->beta);
    ser_u64(s, &a->lead_n);
    ser_f64(s, &a->lead_sum);
    ser_u64(s, &a->pool_n);
    ser_f64(s, &a->pool_sum);
}

static void snap_eval(struct ser *s, struct engine_stop_eval *f)
{
    int rule = (int)f->rule, fires = (int)f->fires;
    ser_enum(s, &rule, ENGINE_RULE_LAST);
    ser_int(s, &f->proven);
    ser_enum(s, &fires, ENGINE_FIRES_LAST);
    ser_f64(s, &f->evidence);
    ser_f64(s, &f->threshold);
    ser_f64(s, &f->error_bound);
    ser_int(s, &f->fired);
    f->rule = (enum engine_stop_rule)rule;
    f->fires = (enum engine_fires)fires;
}

/* A loaded state's fields against each other (a reader only): the counts
 * that add up (each bandit's rewarded pulls are its arms' counts, its
 * pending pulls count in its budget count, which counts in what it handed
 * out; the totals are the sums), flags 0 or 1, each bandit's tie-break
 * ranks a permutation, the statistics finite and in range. A checksum
 * cannot catch a state written wrong, or edited with its checksum redone;
 * this does, and the load falls back to the log. */
static void snap_check(struct engine *e, struct ser *s)
{
    uint64_t pulls = 0, pending = 0, used = 0, handed = 0;
    size_t off = 0; /* bandit b's first arm in the arrays of all arms */
    for (size_t b = 0; b < e->nb && ser_ok(s); off += e->k[b], b++) {
        uint64_t n = 0, pend = 0;
        for (size_t i = 0; i < e->k[b]; i++) {
            const struct stats_arm *a = &e->arms[b][i];
            n += a->n;
            pend += a->pending;
            /* rewards are in [0, 1]: the mean too (an ulp of slack) */
            ser_check(
                s, isfinite(a->mean) && a->mean >= -1e-9 && a->mean <= 1 + 1e-9 &&
                       (a->n > 0 || a->mean == 0) && isfinite(a->m2) && a->m2 >= -1e-9 &&
                       isfinite(a->ebv) && a->ebv >= 0 && isfinite(a->alpha) && a->alpha > 0 &&
                       isfinite(a->beta) && a->beta > 0 && a->pool_n <= STATS_LEAD_POOLED &&
                       (a->lead_n == 0 || a->pool_n == STATS_LEAD_POOLED) &&
                       a->lead_n <= a->n - a->pool_n && isfinite(a->lead_sum) && a->lead_sum >= 0 &&
                       a->lead_sum <= (double)a->lead_n * (1 + 1e-9) && isfinite(a->pool_sum) &&
                       a->pool_sum >= 0 && a->pool_sum <= (double)a->pool_n * (1 + 1e-9));
            if (e->verdict_store != NULL)
                ser_check(s, e->verdict[b][i] <= POLICY_FUTILE &&
                                 e->verdict_at[off + i] <= e->rewarded[b]);
        }
        ser_check_perm(s, e->rank[b], e->k[b]);
        ser_check(s, n == e->rewarded[b] && pend <= e->used[b] && e->used[b] <= e->handed[b]);
        if (e->ninst > 1)
            ser_check(s, e->ctx[b].handed_out == e->handed[b]);
        pulls += n;
        pending += pend;
        used += e->used[b];
        handed += e->handed[b];
    }
    ser_check(s, pulls == e->pulls && pending == e->pending && used == e->used_total &&
                     handed == e->handed_total && (e->paused == 0 || e->paused == 1));
    if (e->ninst == 1)
        ser_check(s, e->ctx[0].handed_out == e->handed_total);
}

void engine_snap(struct engine *e, struct ser *s)
{
    const struct policy_ops *p = e->cfg.policy;
    if (p->snap == NULL) {
        ser_fail(s);
        return;
    }
    /* The shape: a reader fails on any other experiment's state. */
    ser_expect(s, ENGINE_SNAPSHOT_FORMAT);
    char own[64];
    snprintf(own, sizeof own, "%s", p->name);
    char *name = own;
    ser_str(s, &name, sizeof own);
    if (s->reading && ser_ok(s)) {
        if (name == NULL || strcmp(name, own) != 0)
            ser_fail(s);
        free(name);
    }
    ser_expect(s, e->nb);
    ser_expect(s, e->ninst);
    size_t total = 0;
    for (size_t b = 0; b < e->nb; b++) {
        ser_expect(s, e->k[b]);
        total += e->k[b];
    }
    for (size_t i = 0; i < total && ser_ok(s); i++)
        snap_arm(s, &e->store[i]);
    ser_u32s(s, e->rank_store, total);
    ser_flags(s, e->done, e->nb);
    ser_u64s(s, e->used, e->nb);
    ser_u64s(s, e->handed, e->nb);
    ser_u64(s, &e->pulls);
    ser_u64(s, &e->pending);
    ser_u64(s, &e->handed_total);
    ser_u64(s, &e->used_total);
    int reason = (int)e->reason;
    ser_enum(s, &reason, ENGINE_STOPPED_LAST);
    e->reason = (enum engine_stop_reason)reason;
    ser_int(s, &e->paused);
    rng_snap(e->rng, s);
    ser_u64(s, &e->cfg.budget);
    ser_u64s(s, e->inst_budget, e->ninst);
    ser_u32s(s, e->block_left, total);
    for (size_t b = 0; b < e->nb && ser_ok(s); b++)
        snap_eval(s, &e->fired[b]);
    ser_flags(s, e->retired, total);
    /* goal control: the verdicts and when they fell; the GLR memo is a
     * cache of answers that do not depend on it (stats.h): a loaded engine
     * starts it empty */
    ser_u64s(s, e->rewarded, e->nb);
    ser_expect(s, e->verdict_store != NULL);
    if (e->verdict_store != NULL) {
        ser_bytes(s, e->verdict_store, total);
        ser_u64s(s, e->verdict_at, total);
    }
    for (size_t i = 0; i < e->ninst && ser_ok(s); i++) {
        ser_u64(s, &e->ctx[i].budget);
        ser_u64(s, &e->ctx[i].handed_out);
        p->snap(e->pstate[i], &e->ctx[i], s);
    }
    if (s->reading) {
        snap_check(e, s);
        for (size_t b = 0; b < e->nb; b++)
            e->lead[b] = e->k[b];
    }
}
