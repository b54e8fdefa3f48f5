/*
 * harness.h — black-box test support shared by every HTTP test
 * (tests/http/test_*.c): start the real banditd on a throwaway SQLite file,
 * talk to it with libcurl, stop it and prove it shut down cleanly.
 *
 * THE DAEMON (tdaemon_*)
 *
 *   struct tdaemon *d = tdaemon_start(NULL);            // or extra flags
 *   struct tresp *r = treq(d, "POST", "/v1/experiments", "{\"arms\":[\"a\",\"b\"]}", NULL);
 *   assert_int_equal(r->status, 201);
 *   tresp_free(r);
 *   assert_int_equal(tdaemon_stop(d), 0);               // SIGTERM, exit status 0
 *   tdaemon_free(d);
 *
 * - Binary: $BANDITD_BIN, else build/asan/banditd (relative to the current
 *   directory: `make test` runs from the repository root).
 * - Each tdaemon_start makes a fresh directory under $TMPDIR (or /tmp),
 *   named banditd-test.XXXXXX, holding the database (`test.db`), and runs
 *   `banditd --listen 127.0.0.1:0 --db DIR/test.db --sync normal EXTRA...`.
 *   `--sync normal` is what a kill -9 needs (the WAL is written at each
 *   commit; only a power loss could lose the last commits) and keeps the
 *   suites fast; pass "--sync", "full" in extra to override (the last flag
 *   wins). extra is a NULL-terminated argv list, copied; NULL for none.
 * - The port is read from the daemon's first stdout line, "listening on
 *   127.0.0.1:PORT". stdout and stderr go to files in the directory.
 * - tdaemon_stop sends SIGTERM and waits; it returns the exit status (0 for
 *   a clean shutdown), 128 + signal if it died of one, or −1 if it did not
 *   exit within the timeout (it is then killed). A sanitizer report makes
 *   the status non-zero (ASan exits 1; UBSan aborts under
 *   -fno-sanitize-recover), so asserting 0 proves a clean shutdown.
 * - tdaemon_signal sends a signal and returns at once; tdaemon_wait then
 *   waits for the exit like tdaemon_stop (for a test that keeps talking to
 *   the daemon while it shuts down).
 * - The daemon inherits the test's environment: set
 *   BANDITD_STORE_FAIL_COMMITS=K+N (store_test.h) before tdaemon_start to
 *   inject failing commits, and unset it before a restart.
 * - tdaemon_kill sends SIGKILL (a crash: nothing is flushed) and reaps it.
 * - tdaemon_restart starts the daemon again on the same database with the
 *   same flags (after a stop or a kill); the port usually changes, and
 *   treq follows it. Returns 0, or −1 if it did not come up.
 * - Everything the daemon wrote to stderr is copied into the test's own
 *   stderr (which tests/run.sh keeps in the suite's log) each time it
 *   exits, every line prefixed "# banditd: " so the TAP stream stays valid
 *   and run.sh still finds sanitizer reports in it.
 * - tdaemon_free kills a daemon still running, and removes the directory
 *   unless $BANDITD_TEST_KEEP is set. A test that fails jumps past its
 *   tdaemon_free: every daemon not freed is killed and removed when the
 *   test process exits, and a daemon dies with its test process anyway
 *   (PR_SET_PDEATHSIG: start and restart daemons from the test's main
 *   thread, since the signal follows the thread that forked), so no run
 *   leaves a daemon behind.
 * - A test that prepares the database first (API keys created before the
 *   start, a config file in the directory) or expects the start to fail
 *   uses tdaemon_new (directory and database path, no process) and then
 *   tdaemon_launch(d, extra, flags): 0 once the daemon listens, 1000 + its
 *   exit status when it exits instead (a refused start: tdaemon_stderr says
 *   why), −1 otherwise. It can launch the same daemon again after a stop
 *   with other flags. TDAEMON_OWN_LISTEN leaves out the default --listen
 *   (extra gives one, e.g. "0.0.0.0:0"; the port is still read from the
 *   first stdout line).
 * - tdaemon_use_tls(d, 1, ca) makes the requests HTTPS, verified against
 *   the CA file ca (a daemon run with --tls-cert/--tls-key).
 * - tdaemon_cli runs `banditd ARGS...` (the keys and backup subcommands) to
 *   completion with a given standard input and returns its exit status;
 *   tdaemon_create_key is `keys create --db DB --scope S`.
 * - Waiting is bounded by generous timeouts only (30 s to come up, 60 s to
 *   shut down, 60 s per request): nothing depends on the machine's speed
 *   except through them.
 *
 * THE CLIENT (treq*, tresp)
 *
 * treq(d, method, path, body, headers) sends one request and returns the
 * response (never NULL; a transport failure is status 0 with the curl error
 * in ->error). body is sent verbatim (NULL: none) — malformed JSON and
 * oversized bodies are sent exactly as given; a body gets
 * "Content-Type: application/json" unless headers names another.
 * headers is a NULL-terminated list of "Name: value" strings, or NULL.
 * The response keeps the status, every header (tresp_header, case-
 * insensitive; shortcuts for Content-Type, ETag, Location, Allow), the raw
 * body, and the body parsed with jansson (->json, NULL when the body is not
 * JSON). treqf formats the body printf-style; treq_json sends a json_t.
 * One connection per daemon is kept alive between requests (as a real
 * client would); the client is not thread-safe: use tclient_new for a
 * thread of its own.
 *
 * ASSERTIONS AND HELPERS
 *
 * assert_problem(r, status) checks a problem+json answer: the status, the
 * media type application/problem+json, and the RFC 9457 members type,
 * title, status (equal to the HTTP status) and detail.
 * tproblem_has_field(r, field) tells whether errors[] names field.
 * tjson_get(j, "bandits[0].arms[2].pulls") reads a path in a document.
 * trng_* is a small seeded generator (SplitMix64) for driving rewards, so
 * a test's outcomes are reproducible and independent of the daemon's RNG.
 */
#ifndef BANDITD_TESTS_SUPPORT_HARNESS_H
#define BANDITD_TESTS_SUPPORT_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* --- the daemon ----------------------------------------------------------- */

struct tdaemon;

/* Start banditd on a fresh database (extra: NULL-terminated flags or NULL).
 * Returns NULL (with the reason on stderr) if it did not come up. */
struct tdaemon *tdaemon_start(const char *const *extra);
/* SIGTERM, wait: the exit status (0 = clean), 128+sig, or −1 (timeout). */
int tdaemon_stop(struct tdaemon *d);
/* SIGKILL and reap. Returns 0, or −1 if it was not running. */
int tdaemon_kill(struct tdaemon *d);
/* Send sig without waiting (e.g. SIGTERM while a request streams; then
 * tdaemon_wait). 0, or −1 if it is not running. */
int tdaemon_signal(struct tdaemon *d, int sig);
/* Wait for the daemon to exit by itself (after tdaemon_signal): the same
 * result as tdaemon_stop. */
int tdaemon_wait(struct tdaemon *d);
/* Start again on the same database, same flags. 0 or −1. */
int tdaemon_restart(struct tdaemon *d);
/* Kill if still running, remove the directory, free. NULL is a no-op. */
void tdaemon_free(struct tdaemon *d);

/* A daemon not started yet (see THE DAEMON); NULL if out of memory. */
struct tdaemon *tdaemon_new(void);
#define TDAEMON_OWN_LISTEN 1u /* no default --listen 127.0.0.1:0: extra has one */
/* Start d (new or stopped) with extra flags (copied; they replace the last
 * launch's). 0, 1000 + exit status of a refused start, or −1. */
int tdaemon_launch(struct tdaemon *d, const char *const *extra, unsigned flags);
/* Requests to d over HTTPS (https != 0) verified against cafile (NULL: the
 * system's CAs), or plain HTTP again. Drops the kept-alive connection. */
void tdaemon_use_tls(struct tdaemon *d, int https, const char *cafile);
/* Run `banditd ARGS...` to completion: input as standard input (NULL:
 * empty), stdout and stderr into out and err (NUL-terminated, truncated;
 * NULL: dropped). The exit status, or −1. */
int tdaemon_cli(const struct tdaemon *d, const char *const *args, const char *input, char *out,
                size_t outlen, char *err, size_t errlen);
/* `banditd keys create --db DB --scope scope`: the new key into key (≥ 64
 * bytes). 0 or −1. */
int tdaemon_create_key(const struct tdaemon *d, const char *scope, char *key, size_t len);

uint16_t tdaemon_port(const struct tdaemon *d);
int tdaemon_running(const struct tdaemon *d);
const char *tdaemon_db_path(const struct tdaemon *d);
const char *tdaemon_dir(const struct tdaemon *d);
/* The daemon's stderr so far, as one string (new; free it). */
char *tdaemon_stderr(const struct tdaemon *d);

/* --- one daemon for a whole test group ---------------------------------------- */

/* Most suites share one daemon between their tests:
 *   cmocka_run_group_tests(tests, tgroup_setup, tgroup_teardown);
 * and every test talks to tgroup_d. A group that needs flags has its own
 * setup calling tgroup_start(extra). The teardown stops the daemon and fails
 * the group unless it shut down cleanly (exit status 0). */
extern struct tdaemon *tgroup_d;
int tgroup_start(const char *const *extra); /* 0, or −1 if it did not come up */
int tgroup_setup(void **state);
int tgroup_teardown(void **state);

/* A daemon of its own for each test, not started (tdaemon_new: the test
 * prepares and launches it):
 *   cmocka_unit_test_setup_teardown(test, tfresh_setup, tfresh_teardown)
 * puts the struct tdaemon * in the test's *state; the teardown frees it. */
int tfresh_setup(void **state);
int tfresh_teardown(void **state);

/* --- the client --------------------------------------------------------------- */

struct tresp {
    long status;     /* 0: no answer (error says why) */
    char error[256]; /* transport error, "" when answered */
    char *body;      /* raw body, NUL-terminated (owned) */
    size_t len;
    json_t *json; /* parsed body or NULL (owned) */
    size_t nheaders;
    char **hname, **hvalue; /* owned */
};

struct tclient;

/* A client of its own (for a second thread); free with tclient_free. */
struct tclient *tclient_new(struct tdaemon *d);
void tclient_free(struct tclient *c);
struct tresp *tclient_req(struct tclient *c, const char *method, const char *path, const char *body,
                          const char *const *headers);

/* Options for one request (tclient_req_opts). */
struct treq_opts {
    /* Called with each piece of the body as it arrives (the body is kept
     * in the response all the same): a test can act in the middle of a
     * streamed answer. NULL: none. */
    void (*on_body)(void *arg, const char *data, size_t len);
    void *arg;
    /* > 0: SO_RCVBUF of a new connection, in bytes, so that a client that
     * reads slowly makes the server wait (use a fresh tclient: a kept-alive
     * connection keeps its buffer). */
    int rcvbuf;
};
struct tresp *tclient_req_opts(struct tclient *c, const char *method, const char *path,
                               const char *body, const char *const *headers,
                               const struct treq_opts *o);

/* Requests on d's own client. */
struct tresp *treq(struct tdaemon *d, const char *method, const char *path, const char *body,
                   const char *const *headers);
/* With "Authorization: Bearer key" (key NULL: no header). */
struct tresp *treq_key(struct tdaemon *d, const char *method, const char *path, const char *key,
                       const char *body);
struct tresp *treqf(struct tdaemon *d, const char *method, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* body borrowed (serialised compactly). */
struct tresp *treq_json(struct tdaemon *d, const char *method, const char *path,
                        const json_t *body);
void tresp_free(struct tresp *r);

/* Header value (borrowed, last one of that name) or NULL. */
const char *tresp_header(const struct tresp *r, const char *name);
#define tresp_content_type(r) tresp_header((r), "Content-Type")
#define tresp_etag(r) tresp_header((r), "ETag")
#define tresp_location(r) tresp_header((r), "Location")
#define tresp_allow(r) tresp_header((r), "Allow")

/* --- JSON helpers -------------------------------------------------------------- */

/* Borrowed value at a dotted path with [i] indexes ("a.b[2].c"), or NULL. */
json_t *tjson_get(const json_t *j, const char *path);
/* Shortcuts: the string (borrowed) / integer / number at path; a missing
 * value reads as NULL / −1 / NaN. */
const char *tjson_str(const json_t *j, const char *path);
long long tjson_int(const json_t *j, const char *path);
double tjson_num(const json_t *j, const char *path);
/* Fail the test (showing both, keys sorted) unless a and b are equal. */
void tjson_must_equal(json_t *a, json_t *b, const char *what);

/* 1 if the problem document's errors[] has an entry with this field. */
int tproblem_has_field(const struct tresp *r, const char *field);

/* cmocka-side checks (macros so failures point at the test's line). */
#define assert_status(r, want)                                                                     \
    do {                                                                                           \
        if ((r)->status != (want))                                                                 \
            fail_msg("HTTP %ld, expected %d%s%s: %s", (r)->status, (int)(want),                    \
                     (r)->error[0] ? " — " : "", (r)->error, (r)->body ? (r)->body : "");          \
    } while (0)

#define assert_problem(r, want)                                                                    \
    do {                                                                                           \
        assert_status((r), (want));                                                                \
        const char *ct_ = tresp_content_type(r);                                                   \
        assert_non_null(ct_);                                                                      \
        assert_true(strncmp(ct_, "application/problem+json", 24) == 0);                            \
        assert_non_null((r)->json);                                                                \
        assert_true(json_is_string(json_object_get((r)->json, "type")));                           \
        assert_true(json_is_string(json_object_get((r)->json, "title")));                          \
        assert_true(json_is_string(json_object_get((r)->json, "detail")));                         \
        assert_int_equal(json_integer_value(json_object_get((r)->json, "status")), (want));        \
    } while (0)

/* A validation problem (400) naming field in errors[]. */
#define assert_invalid(r, field)                                                                   \
    do {                                                                                           \
        assert_problem((r), 400);                                                                  \
        if (!tproblem_has_field((r), (field)))                                                     \
            fail_msg("errors[] does not name \"%s\": %s", (field), (r)->body);                     \
    } while (0)

/* tdaemon_launch that fails the test (with the daemon's stderr) unless the
 * daemon comes up. */
void tdaemon_up(struct tdaemon *d, const char *const *extra, unsigned flags);

/* One request that must answer `want` (the test fails with the body
 * otherwise); the body parsed as JSON (new reference; NULL when it is not
 * JSON). */
json_t *tcall(struct tdaemon *d, const char *method, const char *path, const char *body, long want);

/* Sleep ms milliseconds (nanosleep, resumed after signals). */
void tsleep_ms(unsigned ms);

/* --- a seeded generator for rewards --------------------------------------------- */

struct trng {
    uint64_t s;
};
void trng_seed(struct trng *g, uint64_t seed);
uint64_t trng_next(struct trng *g);
double trng_uniform(struct trng *g); /* [0, 1) */
int trng_bernoulli(struct trng *g, double p);

/* --- experiment shortcuts (fail the test on an unexpected status) ----------------- */

/* POST /v1/experiments with body (printf format); asserts 201; returns the
 * created experiment (new reference). */
json_t *texp_create(struct tdaemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* POST assignments {body}; asserts 201 (or 200 for a sticky unit); returns
 * the "assignments" array (new reference). */
json_t *texp_assign(struct tdaemon *d, const char *exp, const char *body);
/* POST one reward; asserts 200; returns the item's status name
 * ("accepted", "duplicate"...; static storage). */
const char *texp_reward(struct tdaemon *d, const char *exp, const char *assignment_id,
                        double reward);
/* GET status; asserts 200; new reference. */
json_t *texp_status(struct tdaemon *d, const char *exp);
/* method on /v1/experiments/{exp}{tail} (tail "" or "/amendments"...) with
 * body (may be NULL); asserts nothing: the caller owns and frees the answer. */
struct tresp *texp_req(struct tdaemon *d, const char *method, const char *exp, const char *tail,
                       const char *body);
/* Bandit 0 of status st shows exactly what was acknowledged: for each of
 * k arms, pulls[a] rewards summing to sum[a] (its mean within 1e-9); fails
 * naming the arm otherwise. The crash, failover and cluster suites' check
 * that every acknowledged reward counts once. */
void texp_assert_acknowledged(const json_t *st, int k, const long *pulls, const long *sum);
/* One series of GET /metrics (name{labels}, labels NULL for none), 0 when
 * absent: the decision counters move when a request is applied, before its
 * commit, so they show that a request reached the daemon while reads of
 * the experiment (which wait for its writes) cannot. */
double tmetric(struct tdaemon *d, const char *name, const char *labels);
/* The seq of an assignment id ("<token>-<seq>-<check>", or "<token>-<seq>"
 * before 0.6), −1 when it has none; the token into tok (len bytes). Ids
 * are opaque to clients: only tests that compare them with the log read
 * them. */
int64_t tassignment_seq(const char *id, char *tok, size_t len);

#endif
