/*
 * test_cluster.c — the cluster of deploy/haproxy.cfg for real (issue 14): a
 * PostgreSQL server (tests/support/tpg.h), three daemons on one database
 * of it, and HAProxy (Debian's haproxy) running that very file in front.
 *
 * Client threads assign and reward through the proxy; the active daemon
 * (the one that answers for the experiment: the others name it in a 503)
 * is killed with SIGKILL CLUSTER_KILLS times (2 in `make test`), each time
 * at a random moment (seeded), and started again (it comes back owning
 * nothing; the proxy does not fail back to it). Then, with zero tolerance:
 * every reward the proxy answered "accepted" is in the log exactly once
 * with its value (one whose answer was lost is sent again and must come
 * back "accepted" or "duplicate"), the status's pulls and means are the
 * acknowledged ones, and requests never got an answer other than 2xx or a
 * 503 (a daemon asked for what another owns while the proxy moves). The
 * time from each kill to the first 2xx through the proxy is printed (the
 * failover time), and must stay under FAILOVER_MAX_MS.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <libpq-fe.h>

#include "tests/support/harness.h"
#include "tests/support/tpg.h"

#define DAEMONS 3
#define THREADS 3
#define MAX_RECORDS 100000
#define FAILOVER_MAX_MS 10000

struct record {
    char id[48];
    int64_t seq;
    int arm, value, exploit, acked;
};

struct cluster {
    char uri[256];
    struct tdaemon *d[DAEMONS];
    pid_t proxy;
    unsigned front;
    pthread_mutex_t mu;
    struct record *recs;
    size_t nrecs;
    long odd; /* answers neither 2xx nor 503 */
    volatile int stop;
};

/* --- a small client of the proxy ------------------------------------------------ */

struct body {
    char *p;
    size_t n;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct body *b = arg;
    char *q = realloc(b->p, b->n + size * n + 1);
    if (q == NULL)
        return 0;
    memcpy(q + b->n, p, size * n);
    b->n += size * n;
    q[b->n] = '\0';
    b->p = q;
    return size * n;
}

/* POST (body non-NULL) or GET path through the proxy: the status (0: no
 * answer) and the parsed body (new reference, or NULL). */
static long call(CURL *c, unsigned port, const char *method, const char *path, const char *body,
                 json_t **out)
{
    char url[256];
    struct body b = {NULL, 0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    long status = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body != NULL)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (out != NULL)
        *out = b.p != NULL ? json_loads(b.p, 0, NULL) : NULL;
    free(b.p);
    return status;
}

/* --- the proxy ------------------------------------------------------------------- */

/* A port free now (bound to 0, read, released): the proxy binds it next. */
static unsigned free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void proxy_start(struct cluster *c)
{
    char front[32], addr[DAEMONS][32];
    c->front = free_port();
    snprintf(front, sizeof front, "127.0.0.1:%u", c->front);
    for (int i = 0; i < DAEMONS; i++)
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%u", (unsigned)tdaemon_port(c->d[i]));
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
        if (getppid() != parent)
            _exit(126);
        setenv("BANDITD_FRONT", front, 1);
        setenv("BANDITD_1", addr[0], 1);
        setenv("BANDITD_2", addr[1], 1);
        setenv("BANDITD_3", addr[2], 1);
        execl("/usr/sbin/haproxy", "haproxy", "-db", "-q", "-f", "deploy/haproxy.cfg",
              (char *)NULL);
        _exit(127);
    }
    c->proxy = pid;
    /* up, and its checks found the daemons */
    CURL *h = curl_easy_init();
    for (int i = 0; i < 300 && call(h, c->front, "GET", "/readyz", NULL, NULL) != 200; i++)
        tsleep_ms(20);
    curl_easy_cleanup(h);
}

static void proxy_stop(struct cluster *c)
{
    if (c->proxy > 0) {
        kill(c->proxy, SIGTERM);
        while (waitpid(c->proxy, NULL, 0) < 0 && errno == EINTR)
            ;
        c->proxy = 0;
    }
}

/* --- clients --------------------------------------------------------------------- */

static void add_record(struct cluster *c, const char *id, int arm, int exploit, int value,
                       int acked)
{
    pthread_mutex_lock(&c->mu);
    if (c->nrecs < MAX_RECORDS) {
        struct record *r = &c->recs[c->nrecs++];
        snprintf(r->id, sizeof r->id, "%s", id);
        r->seq = tassignment_seq(id, NULL, 0);
        r->arm = arm;
        r->exploit = exploit;
        r->value = value;
        r->acked = acked;
    }
    pthread_mutex_unlock(&c->mu);
}

static void odd_answer(struct cluster *c, long status)
{
    if (status / 100 == 2 || status == 503 || status == 0)
        return;
    pthread_mutex_lock(&c->mu);
    c->odd++;
    pthread_mutex_unlock(&c->mu);
}

struct worker {
    struct cluster *c;
    struct trng rng;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct cluster *c = w->c;
    CURL *h = curl_easy_init();
    while (!c->stop) {
        json_t *a = NULL;
        long st = call(h, c->front, "POST", "/v1/experiments/cl/assignments", "{}", &a);
        if (st != 201) {
            odd_answer(c, st);
            json_decref(a);
            continue;
        }
        char id[48];
        snprintf(id, sizeof id, "%s", tjson_str(a, "assignments[0].id"));
        int arm = (int)tjson_int(a, "assignments[0].arm_index");
        int exploit = json_is_true(tjson_get(a, "assignments[0].exploit"));
        json_decref(a);
        int v = trng_bernoulli(&w->rng, arm == 0 ? 0.4 : 0.6);
        char body[128];
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", id, v);
        json_t *r = NULL;
        st = call(h, c->front, "POST", "/v1/experiments/cl/rewards", body, &r);
        const char *s = st == 200 ? tjson_str(r, "results[0].status") : NULL;
        if (s != NULL && strcmp(s, "accepted") == 0)
            add_record(c, id, arm, exploit, v, 1);
        else
            add_record(c, id, arm, exploit, v, 0); /* unknown: resolved at the end */
        odd_answer(c, st);
        json_decref(r);
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* --- the test -------------------------------------------------------------------- */

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v != NULL && *v ? strtol(v, NULL, 10) : def;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The daemon that owns the experiment: the one answering its status (the
 * others answer 503 naming it). −1 when none answers. */
static int active_daemon(struct cluster *c)
{
    for (int i = 0; i < DAEMONS; i++) {
        struct tresp *r = treq(c->d[i], "GET", "/v1/experiments/cl/status", NULL, NULL);
        long st = r->status;
        tresp_free(r);
        if (st == 200)
            return i;
    }
    return -1;
}

static int cmp_seq(const void *a, const void *b)
{
    const struct record *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int setup(void **state)
{
    struct cluster *c = calloc(1, sizeof *c);
    if (c == NULL || (c->recs = calloc(MAX_RECORDS, sizeof *c->recs)) == NULL) {
        free(c);
        return -1;
    }
    pthread_mutex_init(&c->mu, NULL);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct cluster *c = *state;
    proxy_stop(c);
    for (int i = 0; i < DAEMONS; i++)
        tdaemon_free(c->d[i]);
    pthread_mutex_destroy(&c->mu);
    free(c->recs);
    free(c);
    return 0;
}

static void test_kill_the_active_daemon(void **state)
{
    struct cluster *c = *state;
    long kills = env_long("CLUSTER_KILLS", 2);
    struct trng rng;
    int64_t fail_ms[64];
    CURL *h = curl_easy_init();

    trng_seed(&rng, (uint64_t)env_long("CLUSTER_SEED", 20261127));
    tpg_new_db(c->uri, sizeof c->uri);
    /* fixed ports: a daemon started again is where the proxy expects it */
    char listen[DAEMONS][32];
    for (int i = 0; i < DAEMONS; i++) {
        snprintf(listen[i], sizeof listen[i], "127.0.0.1:%u", free_port());
        const char *extra[] = {"--db", c->uri, "--listen", listen[i], NULL};
        c->d[i] = tdaemon_new();
        assert_non_null(c->d[i]);
        tdaemon_up(c->d[i], extra, TDAEMON_OWN_LISTEN);
    }
    proxy_start(c);
    json_t *x = NULL;
    assert_int_equal(call(h, c->front, "POST", "/v1/experiments",
                          "{\"id\":\"cl\",\"policy\":{\"name\":\"adapt\"},"
                          "\"goal\":{\"delta\":0.001},\"arms\":[\"a\",\"b\"],\"seed\":9}",
                          &x),
                     201);
    json_decref(x);

    for (long k = 0; k < kills && k < 64; k++) {
        pthread_t t[THREADS];
        struct worker w[THREADS];
        c->stop = 0;
        for (int i = 0; i < THREADS; i++) {
            w[i].c = c;
            trng_seed(&w[i].rng, trng_next(&rng));
            assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
        }
        tsleep_ms(100 + (unsigned)(trng_uniform(&rng) * 500));
        int victim = active_daemon(c);
        assert_true(victim >= 0);
        assert_int_equal(tdaemon_kill(c->d[victim]), 0);
        int64_t t0 = now_ms();
        long st = 0;
        while ((st = call(h, c->front, "POST", "/v1/experiments/cl/assignments", "{}", NULL)) !=
                   201 &&
               now_ms() - t0 < FAILOVER_MAX_MS)
            tsleep_ms(10);
        fail_ms[k] = now_ms() - t0;
        tsleep_ms(200);
        c->stop = 1;
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        assert_int_equal(st, 201); /* an assignment nobody rewards: pending */
        assert_int_equal(tdaemon_restart(c->d[victim]), 0); /* back, owning nothing */
        printf("# kill %ld: daemon %d, first 2xx through the proxy %lld ms later; %zu rewards "
               "so far\n",
               k + 1, victim + 1, (long long)fail_ms[k], c->nrecs);
    }

    /* the answers the kills swallowed: sent again, accepted or duplicate */
    for (size_t i = 0; i < c->nrecs; i++) {
        struct record *r = &c->recs[i];
        if (r->acked)
            continue;
        char body[128];
        json_t *j = NULL;
        snprintf(body, sizeof body, "{\"assignment_id\":\"%s\",\"reward\":%d}", r->id, r->value);
        assert_int_equal(call(h, c->front, "POST", "/v1/experiments/cl/rewards", body, &j), 200);
        const char *s = tjson_str(j, "results[0].status");
        if (s == NULL || (strcmp(s, "accepted") != 0 && strcmp(s, "duplicate") != 0))
            fail_msg("reward for %s sent again: %s", r->id, s ? s : "?");
        json_decref(j);
        r->acked = 1;
    }
    assert_int_equal(c->odd, 0);
    assert_true(c->nrecs > 0);

    /* exactly once in the log, with its value */
    qsort(c->recs, c->nrecs, sizeof *c->recs, cmp_seq);
    assert_int_equal(tpg_count(c->uri, "SELECT count(*) FROM events WHERE kind = 2"),
                     (int64_t)c->nrecs);
    assert_int_equal(tpg_count(c->uri, "SELECT count(*) FROM (SELECT ref FROM events WHERE"
                                       " kind = 2 GROUP BY ref HAVING count(*) > 1) d"),
                     0);
    long pulls[2] = {0, 0}, sum[2] = {0, 0};
    PGconn *db = PQconnectdb(c->uri);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    PGresult *rows = PQexec(db, "SELECT ref, value FROM events WHERE kind = 2 ORDER BY ref");
    assert_int_equal(PQresultStatus(rows), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(rows), (int)c->nrecs);
    for (size_t i = 0; i < c->nrecs; i++) {
        int64_t ref = strtoll(PQgetvalue(rows, (int)i, 0), NULL, 10);
        double v = strtod(PQgetvalue(rows, (int)i, 1), NULL);
        if (ref != c->recs[i].seq || v != (double)c->recs[i].value)
            fail_msg("reward of %s (%d) not in the log as acknowledged (seq %lld: %g)",
                     c->recs[i].id, c->recs[i].value, (long long)ref, v);
        if (!c->recs[i].exploit) {
            pulls[c->recs[i].arm]++;
            sum[c->recs[i].arm] += c->recs[i].value;
        }
    }
    PQclear(rows);
    PQfinish(db);
    json_t *st = NULL;
    assert_int_equal(call(h, c->front, "GET", "/v1/experiments/cl/status", NULL, &st), 200);
    texp_assert_acknowledged(st, 2, pulls, sum);
    json_decref(st);
    curl_easy_cleanup(h);
    proxy_stop(c);
    for (int i = 0; i < DAEMONS; i++)
        assert_int_equal(tdaemon_stop(c->d[i]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill_the_active_daemon, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
