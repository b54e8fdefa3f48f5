/*
 * run.c — one run: the daemon's engine fed rewards drawn from the problem's arms,
 * each delivered `delay` pulls later, with the trace checkpoints it passes.
 */
#include "sim/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/rng.h"

/* A run that gets only exploit answers while the engine is not stopped and no
 * reward is in flight can make no progress; after this many such answers in a
 * row it ends (counted as capped). The engine never does this today: the
 * guard keeps a future policy bug from hanging a simulation. */
#define SIM_IDLE_MAX 1000

/* The key of run i: distinct runs of one seed get distinct keys (mix64 is a
 * bijection), and the engine and the reward draws take different streams. */
static uint64_t run_key(uint64_t seed, uint64_t i)
{
    return rng_mix64(rng_mix64(seed) + i);
}

void sim_scratch_free(struct sim_scratch *s)
{
    if (s->rng != NULL)
        gsl_rng_free(s->rng);
    free(s->fifo);
    free(s->blk);
    free(s->high);
    free(s->verdicts);
    free(s->tr.fx);
    free(s->tr.ct);
    memset(s, 0, sizeof *s);
}

int sim_scratch_init(struct sim_scratch *s, const struct sim_problem *p, uint64_t delay,
                     uint64_t block, const uint64_t *pts, size_t npts)
{
    memset(s, 0, sizeof *s);
    size_t kmax = 0;
    for (size_t b = 0; b < p->n_bandits; b++)
        kmax = p->n_arms[b] > kmax ? p->n_arms[b] : kmax;
    s->rng = gsl_rng_alloc(rng_xoshiro256ss);
    s->cap = (size_t)delay + 1;
    s->fifo = calloc(s->cap, sizeof *s->fifo);
    s->high = calloc(kmax, 1);
    if (s->rng == NULL || s->fifo == NULL || s->high == NULL)
        goto fail;
    if (p->goal == ENGINE_GOAL_CONTROL) {
        size_t total = 0;
        for (size_t b = 0; b < p->n_bandits; b++)
            total += p->n_arms[b];
        if ((s->verdicts = calloc(total, 1)) == NULL)
            goto fail;
    }
    if (block > 1) {
        s->bcap = (size_t)block;
        s->blk = calloc(s->bcap, sizeof *s->blk);
        if (s->blk == NULL)
            goto fail;
    }
    if (npts > 0) {
        s->tr.n = npts;
        s->tr.pts = pts;
        s->tr.fx = calloc(TRF_N * npts, sizeof *s->tr.fx);
        s->tr.ct = calloc(TRC_N * npts, sizeof *s->tr.ct);
        if (s->tr.fx == NULL || s->tr.ct == NULL)
            goto fail;
    }
    return 0;
fail:
    sim_scratch_free(s);
    return -1;
}

static void fifo_push(struct sim_scratch *s, size_t b, size_t arm, double r)
{
    struct sim_pending *x = &s->fifo[(s->head + s->len) % s->cap];
    x->bandit = (uint32_t)b;
    x->arm = (uint32_t)arm;
    x->r = r;
    s->len++;
}

static void fifo_deliver(struct sim_scratch *s, struct engine *e)
{
    struct sim_pending x = s->fifo[s->head];
    // NOLINTNEXTLINE(clang-analyzer-core.DivideZero): cap = delay + 1 >= 1 (sim_scratch_init)
    s->head = (s->head + 1) % s->cap;
    s->len--;
    engine_reward(e, x.bandit, x.arm, x.r);
}

/* The next visitor's pull: engine_assign itself, or with a block (--block)
 * the next pull of the leased block, leasing a new one (up to bcap pulls,
 * fewer when the engine stops, serves a recommendation or reaches cap)
 * when it is used up. */
static void next_pull(struct sim_scratch *s, struct engine *e, uint64_t cap,
                      struct engine_pull *out)
{
    if (s->bcap == 0) {
        engine_assign(e, -1, out);
        return;
    }
    if (s->bpos == s->blen) {
        s->bpos = s->blen = 0;
        while (s->blen < s->bcap && !engine_stopped(e) && engine_handed_out(e) < cap) {
            struct engine_pull q;
            engine_assign(e, -1, &q);
            if (q.exploit) {
                if (s->blen == 0) {
                    *out = q; /* nothing handed out: as without a block */
                    return;
                }
                break;
            }
            s->blk[s->blen++] = q;
        }
        if (s->blen == 0) { /* stopped or capped meanwhile: the caller sees it */
            engine_assign(e, -1, out);
            return;
        }
    }
    *out = s->blk[s->bpos++];
}

uint64_t sim_effective_budget(const struct sim_problem *p, const struct sim_options *o)
{
    return o->budget > 0 ? o->budget : p->budget;
}

void sim_engine_cfg(const struct sim_problem *p, const struct sim_options *o, uint64_t seed,
                    struct engine_config *c, int *ctl)
{
    if (o->design != NULL) {
        *c = *o->design;
        c->seed = seed;
        if (o->budget > 0)
            c->budget = o->budget;
        return;
    }
    memset(c, 0, sizeof *c);
    c->n_bandits = p->n_bandits;
    c->n_arms = p->n_arms;
    c->m = p->m;
    c->epsilon = p->epsilon / (p->reward_max - p->reward_min);
    c->delta = p->delta;
    c->budget = sim_effective_budget(p, o);
    c->bound = p->bound;
    c->stop_rule = o->stop;
    c->tau = p->tau;
    c->target_arm = p->target_arm;
    c->seed = seed;
    c->policy = o->policy;
    c->params = o->params;
    c->burn_in = o->burn_in;
    c->min_prob = o->min_prob;
    /* The goal's control arm is the control of a share too (bandit-sim
     * refuses --control naming another). */
    int control = p->goal == ENGINE_GOAL_CONTROL ? p->control
                  : o->control_share > 0         ? (int)o->control_arm
                                                 : -1;
    if (control >= 0) {
        for (size_t b = 0; b < p->n_bandits && b < ENGINE_MAX_BANDITS; b++)
            ctl[b] = control;
        c->control_arm = ctl;
        c->control_share = o->control_share;
    }
    c->goal = p->goal;
    c->margin = p->margin / (p->reward_max - p->reward_min);
    c->scale = p->scale;
}

int sim_vs_control_truth(const struct sim_problem *p, size_t b, size_t i)
{
    double d = p->arms[b][i].mean - p->arms[b][p->control].mean;
    return d > p->margin + 1e-12 ? 1 : d < p->margin - 1e-12 ? -1 : 0;
}

/* Goal control: each arm's verdict into s->verdicts, counted and judged
 * against the true means (sim_run_result, sim_vs_control_truth). */
static void judge_vs_control(const struct sim_problem *p, const struct engine *e,
                             struct sim_scratch *s, struct sim_run_result *out)
{
    size_t off = 0;
    for (size_t b = 0; b < p->n_bandits; b++) {
        for (size_t i = 0; i < p->n_arms[b]; i++, off++) {
            struct engine_vs_control v;
            s->verdicts[off] = POLICY_OPEN;
            if (engine_vs_control(e, b, i, &v) != 0)
                continue;
            s->verdicts[off] = (unsigned char)v.verdict;
            int truth = sim_vs_control_truth(p, b, i);
            if (v.verdict == POLICY_SUPERIOR) {
                out->superior++;
                out->false_superior |= truth <= 0;
            } else if (v.verdict == POLICY_FUTILE) {
                out->futile++;
                out->false_futile |= truth >= 0;
            }
        }
    }
    out->error = out->pac_error = out->regret_error = out->false_superior || out->false_futile;
    out->wrong = (size_t)out->error;
}

size_t sim_trace_points(unsigned per_decade, uint64_t limit, uint64_t *out, size_t cap)
{
    size_t n = 0;
    if (per_decade == 0 || limit == 0 || cap == 0)
        return 0;
    for (unsigned k = 0; n < cap; k++) {
        double x = floor(pow(10.0, (double)k / (double)per_decade) + 0.5);
        if (!(x < (double)limit))
            break;
        uint64_t t = (uint64_t)x;
        if (n == 0 || t > out[n - 1])
            out[n++] = t;
    }
    /* The limit itself closes the list: with a budget, the final answer. */
    if (n < cap && (n == 0 || out[n - 1] < limit))
        out[n++] = limit;
    return n;
}

/* Add the run's current state to the trace sums of checkpoints [from, to). */
static void trace_record(const struct sim_problem *p, const struct sim_truth *t, struct engine *e,
                         struct sim_scratch *s, size_t from, size_t to, int running)
{
    if (from >= to)
        return;
    const double tau = engine_config(e)->tau;
    double keep = 1.0, rho = 1.0, nss = 0.0;
    uint64_t err = 0, pac = 0, reg = 0, done = 0, target = 0;
    for (size_t b = 0; b < p->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(e, b, s->high, &st);
        int w, pw, rw;
        sim_judge(p, t, b, s->high, &w, &pw, &rw);
        err |= (uint64_t)w;
        pac |= (uint64_t)pw;
        reg |= (uint64_t)rw;
        keep *= 1.0 - st.delta_c;
        rho = st.rho < rho ? st.rho : rho;
        double sel = 0.0, span = t->top_sum[b] - t->bottom_sum[b];
        for (size_t i = 0; i < p->n_arms[b]; i++)
            sel += s->high[i] ? p->arms[b][i].mean : 0.0;
        nss += span > 0.0 ? sim_clip((sel - t->bottom_sum[b]) / span, 0.0, 1.0) : 1.0;
        if (st.rho >= tau) {
            done++;
            target += t->target_top[b];
        }
    }
    const double fx[TRF_N] = {sim_clip(1.0 - keep, 0.0, 1.0), sim_clip(rho, 0.0, 1.0),
                              nss / (double)p->n_bandits};
    const uint64_t ct[TRC_N] = {err, pac, reg, done, target, (uint64_t)running};
    for (size_t k = from; k < to; k++) {
        for (int q = 0; q < TRF_N; q++)
            s->tr.fx[q * s->tr.n + k] += (uint64_t)llround(fx[q] * TRACE_FX);
        for (int q = 0; q < TRC_N; q++)
            s->tr.ct[q * s->tr.n + k] += ct[q];
    }
}

int sim_run_in(const struct sim_problem *p, const struct sim_options *o, const struct sim_truth *t,
               struct sim_scratch *s, uint64_t i, struct sim_run_result *out, char *err,
               size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t key = run_key(o->seed, i);
    struct engine_config cfg;
    int ctl[ENGINE_MAX_BANDITS];
    sim_engine_cfg(p, o, rng_mix64(key ^ 0x656e67696e65ULL) /* "engine" */, &cfg, ctl);
    struct policy_error perr;
    struct engine *e = engine_create(&cfg, &perr);
    if (e == NULL) {
        policy_error_text(&perr, err, errlen);
        return -1;
    }
    rng_seed64(s->rng, rng_mix64(key ^ 0x647261777300ULL) /* "draws" */);
    s->head = s->len = 0;
    s->bpos = s->blen = 0;

    const double lo = p->reward_min, hi = p->reward_max, scale = 1.0 / (hi - lo);
    const uint64_t delay = o->delay;
    const uint64_t cap = o->max_pulls > 0 ? o->max_pulls : SIM_SAFETY_PULLS;
    unsigned idle = 0;
    size_t next = 0; /* next trace checkpoint */
    while (!engine_stopped(e)) {
        if (engine_handed_out(e) >= cap) {
            out->capped = 1;
            break;
        }
        struct engine_pull pull;
        next_pull(s, e, cap, &pull);
        if (pull.exploit) {
            /* Some bandits are done and the engine served a recommendation:
             * nothing was handed out. Let time pass: the oldest reward in
             * flight comes back. */
            if (engine_stopped(e))
                break;
            if (s->len > 0) {
                fifo_deliver(s, e);
            } else if (++idle > SIM_IDLE_MAX) {
                out->capped = 1;
                break;
            }
            continue;
        }
        idle = 0;
        double x = sim_clip(sim_arm_draw(&p->arms[pull.bandit][pull.arm], s->rng), lo, hi);
        double r = (x - lo) * scale;
        fifo_push(s, pull.bandit, pull.arm, r > 1.0 ? 1.0 : r);
        if (s->len > delay)
            fifo_deliver(s, e);
        /* A checkpoint the run ends on is recorded below, with its last
         * rewards in. */
        if (next < s->tr.n && engine_handed_out(e) >= s->tr.pts[next] && !engine_stopped(e) &&
            engine_handed_out(e) < cap) {
            size_t to = next;
            while (to < s->tr.n && engine_handed_out(e) >= s->tr.pts[to])
                to++;
            trace_record(p, t, e, s, next, to, 1);
            next = to;
        }
    }
    /* The rest of the block still goes to visitors: the client learns of
     * the stop only when it asks for its next block. Their rewards count,
     * as those in flight do: they are the cost of the block's staleness. */
    for (; s->bpos < s->blen; s->bpos++) {
        const struct engine_pull *q = &s->blk[s->bpos];
        double x = sim_clip(sim_arm_draw(&p->arms[q->bandit][q->arm], s->rng), lo, hi);
        double r = (x - lo) * scale;
        if (s->len == s->cap)
            fifo_deliver(s, e);
        fifo_push(s, q->bandit, q->arm, r > 1.0 ? 1.0 : r);
    }
    /* Every reward in flight arrives before the answer is read: the
     * recommendation uses all the data the run paid for. */
    while (s->len > 0)
        fifo_deliver(s, e);
    /* Later checkpoints see the final answer. */
    trace_record(p, t, e, s, next, s->tr.n, 0);
    if (engine_handed_out(e) > s->tr.longest)
        s->tr.longest = engine_handed_out(e);

    out->pulls = engine_handed_out(e);
    enum engine_stop_reason why = engine_stop_reason(e);
    out->reason = why;
    out->stopped =
        !out->capped && (why == ENGINE_STOPPED_CONFIDENCE || why == ENGINE_STOPPED_POLICY ||
                         why == ENGINE_STOPPED_SUPERIORITY || why == ENGINE_STOPPED_FUTILITY);
    const double tau = engine_config(e)->tau; /* resolved: 1 − δ when unset */
    for (size_t b = 0; b < p->n_bandits; b++) {
        struct engine_bandit_status st;
        engine_bandit_status(e, b, s->high, &st);
        int w, pw, rw;
        sim_judge(p, t, b, s->high, &w, &pw, &rw);
        out->wrong += (size_t)w;
        out->error |= w;
        out->pac_error |= pw;
        out->regret_error |= rw;
        out->completed += st.rho >= tau;
    }
    if (p->goal == ENGINE_GOAL_CONTROL)
        judge_vs_control(p, e, s, out);
    out->bandit_error = (double)out->wrong / (double)p->n_bandits;
    out->rewarded = engine_pulls(e);
    if (o->on_end != NULL)
        o->on_end(o->on_end_arg, i, e, out);
    engine_free(e);
    return 0;
}

int sim_check_run_sizes(const struct sim_options *o, char *err, size_t errlen)
{
    if (o->delay > SIM_MAX_DELAY) {
        snprintf(err, errlen, "delay: at most %llu", (unsigned long long)SIM_MAX_DELAY);
        return -1;
    }
    if (o->block > SIM_MAX_BLOCK) {
        snprintf(err, errlen, "block: at most %llu", (unsigned long long)SIM_MAX_BLOCK);
        return -1;
    }
    return 0;
}

int sim_run_one(const struct sim_problem *p, const struct sim_options *o, uint64_t i,
                struct sim_run_result *out, char *err, size_t errlen)
{
    struct sim_truth t;
    struct sim_scratch s;
    if (sim_check_run_sizes(o, err, errlen) != 0)
        return -1;
    if (sim_truth_build(p, &t) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (sim_scratch_init(&s, p, o->delay, o->block, NULL, 0) != 0) {
        sim_truth_free(&t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = sim_run_in(p, o, &t, &s, i, out, err, errlen);
    sim_scratch_free(&s);
    sim_truth_free(&t);
    return rc;
}
