/*
 * batch.c — many runs over threads (sim_run): each run seeded from (seed, index)
 * only, tallies summed as integers, so the result does not depend on the
 * thread count; progress on a terminal; the quantiles and trace means.
 */
#include "sim/internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* Integer tallies: sums of integers do not depend on the order in which the
 * threads add them, which is what makes the output thread-count independent. */
struct tally {
    uint64_t errors, pac, regret, stopped, capped, wrong, completed, pulls;
    uint64_t any_sup, false_sup, false_fut, sup_stops, fut_stops; /* goal control */
};

struct job {
    const struct sim_problem *p;
    const struct sim_options *o;
    const struct sim_truth *t;
    uint64_t *pulls;     /* per run, by index */
    const uint64_t *pts; /* trace checkpoints (npts = 0: no trace) */
    size_t npts;
    atomic_uint_fast64_t next, done;
    atomic_int failed;
    pthread_mutex_t lock; /* guards the fields below */
    pthread_cond_t cond;
    unsigned finished; /* threads that have returned */
    struct tally sum;
    struct sim_trace_acc tr;     /* the threads' trace sums, added up (fx, ct owned by sim_run) */
    size_t nv;                   /* goal control: arms in all bandits (0: another goal) */
    uint64_t *arm_sup, *arm_fut; /* nv each: the threads' per-arm counts, added up */
    struct sim_result *keep;     /* options.keep_runs: the per-run arrays to fill */
    char err[256];
};

/* Goal control: run i's decisions into the thread's tallies (and, kept,
 * into the result's per-run arrays: each run writes its own slots). */
static void tally_vs_control(struct job *j, const struct sim_scratch *s, uint64_t i,
                             const struct sim_run_result *r, struct tally *mine, uint64_t *sup,
                             uint64_t *fut)
{
    mine->any_sup += r->superior > 0;
    mine->false_sup += (uint64_t)r->false_superior;
    mine->false_fut += (uint64_t)r->false_futile;
    mine->sup_stops += r->reason == ENGINE_STOPPED_SUPERIORITY;
    mine->fut_stops += r->reason == ENGINE_STOPPED_FUTILITY;
    for (size_t a = 0; a < j->nv; a++) {
        sup[a] += s->verdicts[a] == POLICY_SUPERIOR;
        fut[a] += s->verdicts[a] == POLICY_FUTILE;
    }
    if (j->keep != NULL) {
        j->keep->run_pulls[i] = r->pulls;
        j->keep->run_reason[i] = (unsigned char)r->reason;
        memcpy(j->keep->run_verdicts + i * j->nv, s->verdicts, j->nv);
    }
}

static void *worker(void *arg)
{
    struct job *j = arg;
    struct tally mine = {0};
    struct sim_scratch s;
    char err[256] = "";
    int failed = sim_scratch_init(&s, j->p, j->o->delay, j->o->block, j->pts, j->npts) != 0;
    uint64_t *sup = calloc(j->nv + 1, sizeof *sup), *fut = calloc(j->nv + 1, sizeof *fut);
    failed |= sup == NULL || fut == NULL;
    if (failed)
        snprintf(err, sizeof err, "out of memory");
    while (!failed && !atomic_load(&j->failed)) {
        uint64_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->o->runs)
            break;
        struct sim_run_result r;
        if (sim_run_in(j->p, j->o, j->t, &s, j->o->first_run + i, &r, err, sizeof err) != 0) {
            failed = 1;
            break;
        }
        j->pulls[i] = r.pulls;
        mine.errors += (uint64_t)r.error;
        mine.pac += (uint64_t)r.pac_error;
        mine.regret += (uint64_t)r.regret_error;
        mine.stopped += (uint64_t)r.stopped;
        mine.capped += (uint64_t)r.capped;
        mine.wrong += r.wrong;
        mine.completed += r.completed;
        mine.pulls += r.pulls;
        if (j->nv > 0)
            tally_vs_control(j, &s, i, &r, &mine, sup, fut);
        atomic_fetch_add(&j->done, 1);
    }
    pthread_mutex_lock(&j->lock);
    if (failed && !atomic_load(&j->failed)) {
        atomic_store(&j->failed, 1);
        snprintf(j->err, sizeof j->err, "%s", err);
    }
    j->sum.errors += mine.errors;
    j->sum.pac += mine.pac;
    j->sum.regret += mine.regret;
    j->sum.stopped += mine.stopped;
    j->sum.capped += mine.capped;
    j->sum.wrong += mine.wrong;
    j->sum.completed += mine.completed;
    j->sum.pulls += mine.pulls;
    j->sum.any_sup += mine.any_sup;
    j->sum.false_sup += mine.false_sup;
    j->sum.false_fut += mine.false_fut;
    j->sum.sup_stops += mine.sup_stops;
    j->sum.fut_stops += mine.fut_stops;
    for (size_t a = 0; !failed && a < j->nv; a++) {
        j->arm_sup[a] += sup[a];
        j->arm_fut[a] += fut[a];
    }
    /* s.tr.n == j->tr.n (both npts); bounded by the worker's own so that
     * npts = 0 (no trace arrays) visibly reads nothing */
    for (size_t k = 0; !failed && k < TRF_N * s.tr.n; k++)
        j->tr.fx[k] += s.tr.fx[k];
    for (size_t k = 0; !failed && k < TRC_N * s.tr.n; k++)
        j->tr.ct[k] += s.tr.ct[k];
    if (!failed && s.tr.longest > j->tr.longest)
        j->tr.longest = s.tr.longest;
    j->finished++;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    sim_scratch_free(&s);
    free(sup);
    free(fut);
    return NULL;
}

static double now_s(void)
{
    return (double)clock_mono_ns() * 1e-9;
}

/* "[#####.....]  52%  5200/10000 runs  3.1 s, about 2.9 s left" on one line. */
static void progress_draw(uint64_t done, uint64_t total, double elapsed)
{
    enum { W = 30 };
    char bar[W + 1];
    size_t fill = total ? (size_t)((double)W * (double)done / (double)total) : W;
    for (size_t i = 0; i < W; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[W] = '\0';
    double left = done > 0 ? elapsed * (double)(total - done) / (double)done : 0.0;
    fprintf(stderr, "\r[%s] %3d%%  %llu/%llu runs  %.1f s, about %.1f s left ", bar,
            (int)(100.0 * (double)done / (double)(total ? total : 1)), (unsigned long long)done,
            (unsigned long long)total, elapsed, left);
    (void)fflush(stderr); /* a progress bar: nothing to do if it fails */
}

int sim_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

double sim_quantile(const uint64_t *x, uint64_t n, double q)
{
    if (n == 0)
        return 0.0;
    double h = (double)(n - 1) * q;
    uint64_t i = (uint64_t)floor(h);
    if (i + 1 >= n)
        return (double)x[n - 1];
    return (double)x[i] + (h - (double)i) * ((double)x[i + 1] - (double)x[i]);
}

void sim_pull_quantiles(uint64_t *pulls, uint64_t n, double *median, double *p90)
{
    qsort(pulls, n, sizeof *pulls, sim_cmp_u64);
    *median = sim_quantile(pulls, n, 0.5);
    *p90 = sim_quantile(pulls, n, 0.9);
}

static int check_options(const struct sim_problem *p, const struct sim_options *o, char *err,
                         size_t errlen)
{
    if (o->policy == NULL && o->design == NULL) {
        snprintf(err, errlen, "policy: required");
        return -1;
    }
    if (o->runs < 1 || o->runs > SIM_MAX_RUNS) {
        snprintf(err, errlen, "runs: must be in [1, %llu]", (unsigned long long)SIM_MAX_RUNS);
        return -1;
    }
    if (sim_check_run_sizes(o, err, errlen) != 0)
        return -1;
    if (o->threads > SIM_MAX_THREADS) {
        snprintf(err, errlen, "threads: at most %d", SIM_MAX_THREADS);
        return -1;
    }
    if (o->trace_per_decade > SIM_TRACE_MAX_PER_DECADE) {
        snprintf(err, errlen, "trace: at most %d points per decade", SIM_TRACE_MAX_PER_DECADE);
        return -1;
    }
    /* The engine's own checks (policy flags against the goal), once, before
     * any thread starts. */
    struct engine_config c;
    int ctl[ENGINE_MAX_BANDITS];
    sim_engine_cfg(p, o, 0, &c, ctl);
    struct policy_error perr;
    if (engine_validate(&c, &perr) != 0) {
        policy_error_text(&perr, err, errlen);
        return -1;
    }
    return 0;
}

/* Means from the trace sums: the checkpoints up to the first one that no run
 * went past (it shows every run's final answer). 0, or −1 (out of memory,
 * nothing left allocated in out). */
static int trace_finish(const struct sim_problem *p, const struct sim_options *o,
                        const struct sim_trace_acc *acc, struct sim_trace *out)
{
    size_t n = 0;
    while (n < acc->n && acc->pts[n] < acc->longest)
        n++;
    n = n < acc->n ? n + 1 : acc->n;
    memset(out, 0, sizeof *out);
    out->n = n;
    out->per_decade = o->trace_per_decade;
    out->pulls = calloc(n, sizeof *out->pulls);
    double **fx[TRF_N] = {&out->delta_c, &out->rho, &out->nss};
    double **ct[TRC_N] = {&out->error_rate, &out->pac_error_rate,   &out->regret_error_rate,
                          &out->completed,  &out->completed_target, &out->running};
    int fail = out->pulls == NULL;
    for (int q = 0; q < TRF_N; q++)
        fail |= (*fx[q] = calloc(n, sizeof(double))) == NULL;
    for (int q = 0; q < TRC_N; q++) {
        if (q == TRC_TARGET && p->target_arm < 0)
            continue;
        fail |= (*ct[q] = calloc(n, sizeof(double))) == NULL;
    }
    if (fail) {
        struct sim_result r = {.trace = *out};
        sim_result_free(&r);
        memset(out, 0, sizeof *out);
        return -1;
    }
    const double runs = (double)o->runs;
    for (size_t k = 0; k < n; k++) {
        out->pulls[k] = acc->pts[k];
        for (int q = 0; q < TRF_N; q++)
            (*fx[q])[k] = (double)acc->fx[q * acc->n + k] / TRACE_FX / runs;
        for (int q = 0; q < TRC_N; q++)
            if (*ct[q] != NULL)
                (*ct[q])[k] = (double)acc->ct[q * acc->n + k] / runs;
    }
    return 0;
}

int sim_run(const struct sim_problem *p, const struct sim_options *o, struct sim_result *out,
            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_options(p, o, err, errlen) != 0)
        return -1;
    double t0 = now_s();
    struct sim_truth t;
    if (sim_truth_build(p, &t) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint64_t *pulls = calloc(o->runs, sizeof *pulls);
    pthread_t *tid = NULL;
    unsigned nt = o->threads;
    if (nt == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        nt = ncpu > 0 ? (unsigned)ncpu : 1;
        if (nt > SIM_MAX_THREADS)
            nt = SIM_MAX_THREADS;
    }
    if (nt > o->runs)
        nt = (unsigned)o->runs;
    tid = calloc(nt, sizeof *tid);
    int rc = -1;
    uint64_t *pts = NULL;
    struct sim_trace_acc tr = {0};
    if (pulls == NULL || tid == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (o->trace_per_decade > 0) {
        uint64_t limit = sim_effective_budget(p, o);
        if (limit == 0)
            limit = o->max_pulls > 0 ? o->max_pulls : SIM_SAFETY_PULLS;
        pts = calloc(TRACE_MAX_POINTS, sizeof *pts);
        if (pts == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        tr.n = sim_trace_points(o->trace_per_decade, limit, pts, TRACE_MAX_POINTS);
        tr.pts = pts;
        tr.fx = calloc(TRF_N * tr.n, sizeof *tr.fx);
        tr.ct = calloc(TRC_N * tr.n, sizeof *tr.ct);
        if (tr.fx == NULL || tr.ct == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }

    struct job j = {.p = p, .o = o, .t = &t, .pulls = pulls, .pts = pts, .npts = tr.n, .tr = tr};
    if (p->goal == ENGINE_GOAL_CONTROL) {
        for (size_t b = 0; b < p->n_bandits; b++)
            j.nv += p->n_arms[b];
        out->n_verdicts = j.nv;
        out->arm_superior = j.arm_sup = calloc(j.nv, sizeof *j.arm_sup);
        out->arm_futile = j.arm_fut = calloc(j.nv, sizeof *j.arm_fut);
        int bad = j.arm_sup == NULL || j.arm_fut == NULL;
        if (o->keep_runs) {
            out->run_pulls = calloc(o->runs, sizeof *out->run_pulls);
            out->run_reason = calloc(o->runs, 1);
            out->run_verdicts = calloc(o->runs, j.nv);
            bad |= !out->run_pulls || !out->run_reason || !out->run_verdicts;
            j.keep = out;
        }
        if (bad) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.lock, NULL);
    pthread_cond_init(&j.cond, NULL);
    unsigned started = 0;
    for (; started < nt; started++) {
        if (pthread_create(&tid[started], NULL, worker, &j) != 0)
            break;
    }
    if (started == 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        pthread_cond_destroy(&j.cond);
        pthread_mutex_destroy(&j.lock);
        goto out;
    }
    /* Wait for the workers; redraw the progress bar every 0.2 s once the
     * simulation has lasted a second (and only on a terminal). */
    int show = o->progress && isatty(2);
    int drawn = 0;
    pthread_mutex_lock(&j.lock);
    while (j.finished < started) {
        if (!show) {
            pthread_cond_wait(&j.cond, &j.lock);
            continue;
        }
        struct timespec ts = clock_deadline(CLOCK_REALTIME, 200);
        pthread_cond_timedwait(&j.cond, &j.lock, &ts);
        double el = now_s() - t0;
        if (el > 1.0 && j.finished < started) {
            progress_draw(atomic_load(&j.done), o->runs, el);
            drawn = 1;
        }
    }
    pthread_mutex_unlock(&j.lock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (drawn)
        fprintf(stderr, "\r\033[K");
    pthread_cond_destroy(&j.cond);
    pthread_mutex_destroy(&j.lock);
    if (atomic_load(&j.failed)) {
        snprintf(err, errlen, "%s", j.err);
        goto out;
    }

    /* Aggregate, in index order where order could matter. */
    double n = (double)o->runs;
    out->runs = o->runs;
    out->errors = j.sum.errors;
    out->pac_errors = j.sum.pac;
    out->regret_errors = j.sum.regret;
    out->stopped = j.sum.stopped;
    out->capped = j.sum.capped;
    out->total_pulls = j.sum.pulls;
    out->error_rate = (double)j.sum.errors / n;
    out->pac_error_rate = (double)j.sum.pac / n;
    out->regret_error_rate = (double)j.sum.regret / n;
    out->stopped_rate = (double)j.sum.stopped / n;
    out->mean_bandit_error_rate = (double)j.sum.wrong / ((double)p->n_bandits * n);
    out->mean_completed = (double)j.sum.completed / n;
    out->mean_pulls = (double)j.sum.pulls / n;
    out->any_superior = j.sum.any_sup;
    out->false_superior = j.sum.false_sup;
    out->false_futile = j.sum.false_fut;
    out->superiority_stops = j.sum.sup_stops;
    out->futility_stops = j.sum.fut_stops;
    double ss = 0.0;
    for (uint64_t i = 0; i < o->runs; i++) {
        double d = (double)pulls[i] - out->mean_pulls;
        ss += d * d;
    }
    out->sd_pulls = o->runs > 1 ? sqrt(ss / (n - 1.0)) : 0.0;
    qsort(pulls, o->runs, sizeof *pulls, sim_cmp_u64);
    out->median_pulls = sim_quantile(pulls, o->runs, 0.5);
    out->p90_pulls = sim_quantile(pulls, o->runs, 0.9);
    if (j.tr.n > 0 && trace_finish(p, o, &j.tr, &out->trace) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    out->wall_s = now_s() - t0;
    rc = 0;
out:
    if (rc != 0)
        sim_result_free(out);
    free(tid);
    free(pulls);
    free(pts);
    free(tr.fx);
    free(tr.ct);
    sim_truth_free(&t);
    return rc;
}

void sim_result_free(struct sim_result *r)
{
    struct sim_trace *t = &r->trace;
    free(t->pulls);
    free(t->delta_c);
    free(t->rho);
    free(t->nss);
    free(t->error_rate);
    free(t->pac_error_rate);
    free(t->regret_error_rate);
    free(t->completed);
    free(t->completed_target);
    free(t->running);
    free(r->arm_superior);
    free(r->arm_futile);
    free(r->run_pulls);
    free(r->run_reason);
    free(r->run_verdicts);
    memset(r, 0, sizeof *r);
}
