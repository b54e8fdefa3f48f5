/*
 * targets.c — fuzz target bodies (targets.h).
 *
 * The request-body targets validate against one fixed experiment with two
 * bandits of three arms and a reward range of [-1, 5], created once through
 * exp_config_parse, so that every path of the item validators (bandit and
 * arm lookups, range checks) is reachable.
 */
#include "tests/fuzz/targets.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "exp/exp.h"
#include "api/parse.h"
#include "base/digest.h"
#include "http/http.h"
#include "store/store.h"
#include "policies/engine.h"
#include "sim/sim.h"

static struct exp_config g_cfg;
static int g_ready;

/* Limits as the daemon's defaults (server/config.c). */
static void init_once(void)
{
    if (g_ready)
        return;
    struct exp_limits lim = {.max_experiments = 10000,
                             .max_bandits = 256,
                             .max_arms = 1024,
                             .max_batch = 1000,
                             .max_count = 100,
                             .max_pending = 1000000,
                             .history_points = 256};
    exp_registry_init(NULL, &lim);
    json_t *j = json_loads("{\"id\":\"fz\",\"policy\":{\"name\":\"uniform\"},"
                           "\"goal\":{\"budget\":1000},\"reward\":{\"min\":-1,\"max\":5},"
                           "\"bandits\":[{\"id\":\"x\",\"arms\":[\"a\",\"b\",\"c\"]},"
                           "{\"id\":\"y\",\"arms\":[\"d\",\"e\",\"f\"]}]}",
                           0, NULL);
    json_t *errors = json_array();
    if (j == NULL || errors == NULL || exp_config_parse(j, exp_limits(), &g_cfg, errors) != 0)
        abort(); /* the fixture itself must be valid */
    json_decref(j);
    json_decref(errors);
    g_ready = 1;
}

/* The body as http_req_json reads it; NULL when it is not JSON. */
static json_t *load(const uint8_t *data, size_t size)
{
    json_error_t err;
    return json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
}

int fuzz_expconfig(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    json_t *errors = json_array();
    struct exp_config cfg;
    int rc = exp_config_parse(body, exp_limits(), &cfg, errors);
    if (rc == 0) {
        /* what creation does next: build the engine and serialise */
        struct policy_error err;
        cfg.engine.n_arms = cfg.n_arms;
        cfg.engine.control_arm = cfg.control_arm;
        struct engine *e = engine_create(&cfg.engine, &err);
        if (e != NULL) {
            struct engine_pull p;
            engine_assign(e, -1, &p);
            engine_free(e);
        }
        char *text = json_dumps(cfg.json, JSON_COMPACT | JSON_SORT_KEYS);
        free(text);
    }
    exp_config_free(&cfg);
    json_decref(errors);
    json_decref(body);
    return 0;
}

int fuzz_assignment(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_assign_req req;
    int rc = api_parse_assignment(body, &g_cfg, 100, &req, api_errors_init(&e));
    if (rc == 0 && (req.count < 1 || req.count > 100 || req.bandit >= 2))
        abort();
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_rewards(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_reward_item *items = NULL;
    size_t n = 0;
    int batch = 0;
    int rc = api_parse_rewards(body, &g_cfg, 1000, &items, &n, &batch, api_errors_init(&e));
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (items[i].assignment_id == NULL || !(items[i].value >= -1 && items[i].value <= 5))
            abort(); /* accepted out of contract */
    free(items);
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_observations(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_observation_item *items = NULL;
    size_t n = 0;
    int rc = api_parse_observations(body, &g_cfg, 1000, &items, &n, api_errors_init(&e));
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (items[i].bandit < 0 || items[i].bandit > 1 || items[i].arm < 0 || items[i].arm > 2 ||
            !(items[i].value >= -1 && items[i].value <= 5))
            abort();
    free(items);
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_corrections(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_correction_item *items = NULL;
    size_t n = 0;
    int batch = 0;
    int rc = api_parse_corrections(body, &g_cfg, 1000, &items, &n, &batch, api_errors_init(&e));
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (items[i].assignment_id == NULL || items[i].reason == NULL ||
            items[i].reason[0] == '\0' || !(items[i].value >= -1 && items[i].value <= 5))
            abort(); /* accepted out of contract */
    free(items);
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_patch(const uint8_t *data, size_t size)
{
    init_once();
    json_t *body = load(data, size);
    if (body == NULL)
        return 0;
    struct api_errors e;
    struct api_patch_req req;
    int rc = api_parse_patch(body, &g_cfg, &req, api_errors_init(&e));
    /* What a valid PATCH names exists: a retired arm of the fixture's
     * bandits, a TTL and a budget in range. */
    if (rc == 0 &&
        (req.edit.retire_bandit > 1 || req.edit.retire_arm > 2 ||
         (req.edit.retire_bandit >= 0) != (req.edit.retire_arm >= 0) || req.edit.ttl_s < 0 ||
         (req.edit.set_budget && req.edit.budget == 0 &&
          !json_is_null(json_object_get(json_object_get(body, "goal"), "budget")))))
        abort();
    api_errors_free(&e);
    json_decref(body);
    return 0;
}

int fuzz_simproblem(const uint8_t *data, size_t size)
{
    json_t *j = load(data, size);
    if (j == NULL)
        return 0;
    struct sim_problem p;
    char err[256];
    memset(&p, 0, sizeof p);
    if (sim_problem_parse(j, &p, err, sizeof err) == 0)
        sim_problem_free(&p);
    json_decref(j);
    return 0;
}

/* --- replay of a stored event log (issue 13: corrupt rows) ------------------ */

/* Values a stored reward may hold, sane or not. */
static const double g_values[] = {0,     1,   0.5,      -1,        5,    -1e308,
                                  1e308, NAN, INFINITY, -INFINITY, 3.25, 7};
static const char *const g_texts[] = {"running", "paused", "stopped", "bogus", NULL, ""};
static const char *const g_units[] = {NULL, "u1", "u2", ""};

#define REPLAY_EVENT_BYTES 10
#define REPLAY_MAX_EVENTS 48

static char g_replay_dir[512];

static struct store *g_replay_store;

/* At exit: the store closes, its files and their directory go. */
static void replay_cleanup(void)
{
    store_close(g_replay_store);
    static const char *const sfx[] = {"/replay.db", "/replay.db-wal", "/replay.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[640];
        snprintf(p, sizeof p, "%s%s", g_replay_dir, sfx[i]);
        (void)unlink(p);
    }
    (void)rmdir(g_replay_dir);
}

/* A database in a directory of its own, made once per process. */
static const char *replay_db(void)
{
    static char path[600];
    if (path[0] == '\0') {
        /* memory-backed when there is one: a store per input */
        const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        char dir[512];
        snprintf(dir, sizeof dir, "%s/banditd-fuzz.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL)
            abort();
        snprintf(g_replay_dir, sizeof g_replay_dir, "%s", dir);
        (void)atexit(replay_cleanup);
        snprintf(path, sizeof path, "%s/replay.db", dir);
    }
    static const char *const sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[640];
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        (void)unlink(p);
    }
    return path;
}

/* The store of the stored-data targets: one for the process, each input
 * an experiment of its own, deleted afterwards (opening a store per input
 * is 30 times slower). */
static struct store *replay_store(void)
{
    char err[256];
    if (g_replay_store == NULL &&
        (g_replay_store = store_open(replay_db(), STORE_SYNC_NORMAL, err, sizeof err)) == NULL)
        abort();
    return g_replay_store;
}

/* The end of a stored-data target: the registry loads st as a start does;
 * experiment id, when served, is read as the status endpoint would and its
 * engine asked for `assigns` assignments (nothing written); then the
 * registry is freed, the experiment (rowid) deleted and the registry set
 * back to parsing only, for the other targets. */
static void load_read_forget(struct store *st, const char *id, int64_t rowid, int assigns)
{
    char err[256];
    struct exp_limits lim = *exp_limits();
    exp_registry_init(st, &lim);
    struct exp *x = NULL;
    if (exp_registry_load(err, sizeof err) == 0 && (x = exp_get(id)) != NULL) {
        exp_lock(x);
        struct engine *e = exp_engine(x);
        unsigned char high[ENGINE_MAX_ARMS];
        for (size_t b = 0; b < exp_cfg(x)->n_bandits; b++) {
            struct engine_bandit_status bs;
            engine_bandit_status(e, b, high, &bs);
        }
        for (int k = 0; k < assigns; k++) {
            struct engine_pull p;
            (void)engine_assign(e, k % 3 - 1, &p);
        }
        (void)exp_pending_count(x);
        exp_unlock(x);
        exp_put(x);
    }
    exp_registry_free();
    struct store_op del = {.kind = STORE_OP_EXP_DELETE, .exp = rowid};
    if (store_write_sync(st, &del, 1) != STORE_OK)
        abort();
    exp_registry_init(NULL, &lim);
}

/* The input as event rows (REPLAY_EVENT_BYTES each: kind, bandit, arm,
 * flags, value, ref, seq step, state text, unit, expiry) of one experiment
 * (the fixture: two bandits of three arms, rewards in [-1, 5]), written
 * straight into a store; then the registry loads it — replay — and the
 * experiment, if it is served, is read as the status endpoint would. */
int fuzz_replay(const uint8_t *data, size_t size)
{
    init_once();
    struct store *st = replay_store();
    int64_t rowid = 0;
    char *config = json_dumps(g_cfg.json, JSON_COMPACT | JSON_SORT_KEYS);
    struct store_op op = {.kind = STORE_OP_EXP_CREATE,
                          .id = "fz",
                          .config_json = config,
                          .created_ms = 1,
                          .rowid_out = &rowid};
    if (config == NULL || store_write_sync(st, &op, 1) != STORE_OK)
        abort();
    free(config);
    struct store_op evs[REPLAY_MAX_EVENTS];
    size_t nev = 0;
    int64_t seq = 0;
    for (size_t i = 0; i + REPLAY_EVENT_BYTES <= size && nev < REPLAY_MAX_EVENTS;
         i += REPLAY_EVENT_BYTES) {
        const uint8_t *b = data + i;
        unsigned step = b[6] % 16u;
        seq += step == 0 ? 2 : step == 1 ? 0 : 1; /* a gap, a repeat, or the next */
        struct store_op *ev = &evs[nev++];
        memset(ev, 0, sizeof *ev);
        ev->kind = STORE_OP_EVENT;
        ev->ev.exp = rowid;
        ev->ev.seq = seq;
        ev->ev.kind = b[0] % 8; /* 0 and 7: no such kind */
        ev->ev.bandit = (int8_t)b[1] % 4;
        ev->ev.arm = (int8_t)b[2] % 5;
        ev->ev.flags = b[3] & 3u;
        ev->ev.value = g_values[b[4] % (sizeof g_values / sizeof g_values[0])];
        ev->ev.ref = b[5] == 255 ? 999 : seq - 1 - (int64_t)(b[5] % 8);
        ev->ev.ts_ms = 1000 + seq;
        ev->ev.expires_ms = b[9] % 2 ? 5000 + seq : 0;
        ev->ev.text = ev->ev.kind == STORE_EV_STATE ? g_texts[b[7] % 6] : NULL;
        ev->ev.unit = ev->ev.kind == STORE_EV_ASSIGN ? g_units[b[8] % 4] : NULL;
    }
    /* One commit; when a repeated seq or unit refuses it, row by row
     * (the refused rows left out). */
    if (nev > 0 && store_write_sync(st, evs, nev) != STORE_OK)
        for (size_t i = 0; i < nev; i++)
            (void)store_write_sync(st, &evs[i], 1);
    load_read_forget(st, "fz", rowid, 0);
    return 0;
}

/* --- a stored snapshot's state (exp/snapshot.c, engine_snap) ------------------ */

/* The experiment whose snapshot is damaged: two bandits of three arms,
 * ttts (a policy with ranks and index arrays of its own). */
static const char *const g_snap_config = "{\"id\":\"fs\",\"policy\":{\"name\":\"ttts\"},\"seed\":3,"
                                         "\"bandits\":[{\"id\":\"x\",\"arms\":[\"a\",\"b\",\"c\"]},"
                                         "{\"id\":\"y\",\"arms\":[\"d\",\"e\",\"f\"]}]}";

/* A valid snapshot of it, made once: its row's labels and its bytes. */
static struct {
    int ready;
    int64_t seq;
    int format;
    char software[64], design[80];
    unsigned char *state;
    size_t len;
} g_snap;

static void flag_done(void *arg, int err)
{
    *(int *)arg = err == STORE_OK ? 1 : -1;
}

/* The first snapshot read (store_load_snapshots' callback). */
static int keep_snapshot(void *arg, const struct store_snapshot *sn)
{
    (void)arg;
    g_snap.seq = sn->seq;
    g_snap.format = sn->format;
    snprintf(g_snap.software, sizeof g_snap.software, "%s", sn->software);
    snprintf(g_snap.design, sizeof g_snap.design, "%s", sn->design);
    g_snap.state = malloc(sn->len);
    if (g_snap.state == NULL)
        abort();
    memcpy(g_snap.state, sn->state, sn->len);
    g_snap.len = sn->len;
    return 1;
}

/* Create experiment fs in the registry (initialised on a store) and wait
 * for its commit: a new reference. */
static struct exp *snap_create(void)
{
    json_t *j = json_loads(g_snap_config, 0, NULL), *errors = json_array();
    struct exp_config cfg;
    struct exp *x = NULL;
    int done = 0;
    if (j == NULL || errors == NULL || exp_config_parse(j, exp_limits(), &cfg, errors) != 0 ||
        exp_create(&cfg, NULL, NULL, flag_done, &done, &x) != EXP_OK)
        abort();
    while (done == 0)
        usleep(100);
    json_decref(j);
    json_decref(errors);
    if (done < 0)
        abort();
    return x;
}

/* Make g_snap: experiment fs served for a while (assignments, most
 * rewarded, some pending) with a snapshot every 7 events; the latest kept. */
static void snap_make(struct store *st)
{
    struct exp_limits lim = *exp_limits();
    lim.snapshot_every = 7;
    exp_registry_init(st, &lim);
    struct exp *x = snap_create();
    int64_t now = 1700000000000, pend[64];
    size_t n = 0;
    for (int t = 0; t < 60; t++, now += 10) {
        struct exp_batch b;
        const struct exp_assignment *a = NULL;
        int done = 0;
        exp_batch_init(&b);
        exp_lock(x);
        if (exp_prepare_locked(x, now) != EXP_OK ||
            exp_ev_assign(x, &b, -1, NULL, now, &a) != EXP_OK)
            abort();
        if (a->status == EXP_A_PENDING && n < 64)
            pend[n++] = a->seq;
        if (t % 3 != 2 && n > 2)
            (void)exp_ev_reward(x, &b, pend[n - 3], (double)(t % 2), now);
        if (exp_submit_locked(x, &b, flag_done, &done) != STORE_OK)
            abort();
        exp_unlock(x);
        while (done == 0)
            usleep(100);
        exp_batch_free(&b);
    }
    int64_t rowid = exp_rowid(x);
    exp_put(x);
    exp_registry_free();
    if (store_load_snapshots(st, rowid, INT64_MAX, keep_snapshot, NULL) != 1)
        abort();
    struct store_op del = {.kind = STORE_OP_EXP_DELETE, .exp = rowid};
    if (store_write_sync(st, &del, 1) != STORE_OK)
        abort();
    g_snap.ready = 1;
}

/* The input as damage to a valid snapshot of experiment fs: three bytes
 * at a time, an offset (two bytes, little-endian, modulo the length) and a
 * value XORed there; a last lone byte b, when there is one, truncates the
 * state to b/256 of its length. The state's checksum is redone, so the
 * decoder's own checks are all that stand between the bytes and the
 * engine. The experiment (no event in its log: the snapshot is all of it)
 * is loaded as a start does and, when served, read as the status endpoint
 * would, and its engine asked for a few assignments. */
int fuzz_snapshot(const uint8_t *data, size_t size)
{
    init_once();
    struct store *st = replay_store();
    if (!g_snap.ready)
        snap_make(st);
    struct exp_limits lim = *exp_limits();
    exp_registry_init(st, &lim);
    struct exp *x = snap_create();
    int64_t rowid = exp_rowid(x);
    exp_put(x);
    exp_registry_free();

    unsigned char *state = malloc(g_snap.len);
    if (state == NULL)
        abort();
    memcpy(state, g_snap.state, g_snap.len);
    size_t len = g_snap.len, i = 0;
    for (; i + 3 <= size; i += 3)
        state[(data[i] | (size_t)data[i + 1] << 8) % g_snap.len] ^= data[i + 2];
    if (i < size)
        len = len * data[i] / 256;
    char sum[DIGEST_SHA256_HEX + 1];
    const void *pieces[1] = {state};
    size_t lens[1] = {len};
    if (digest_sha256_hex(pieces, lens, 1, sum) != 0)
        abort();
    struct store_snapshot sn = {.exp = rowid,
                                .seq = g_snap.seq,
                                .format = g_snap.format,
                                .software = g_snap.software,
                                .design = g_snap.design,
                                .checksum = sum,
                                .created_ms = 1,
                                .state = state,
                                .len = len};
    struct store_op op = {.kind = STORE_OP_SNAPSHOT, .snap = &sn};
    if (store_write_sync(st, &op, 1) != STORE_OK)
        abort();
    free(state);

    load_read_forget(st, "fs", rowid, 4);
    return 0;
}

/* --- If-None-Match against an ETag (http/problem.c) ---------------------------- */

/* The input split at its first NUL: the header's value, then the ETag. */
int fuzz_etag(const uint8_t *data, size_t size)
{
    char *a = malloc(size + 2);
    if (a == NULL)
        return 0;
    memcpy(a, data, size);
    a[size] = '\0';
    a[size + 1] = '\0';
    const char *etag = a + strlen(a) + 1;
    (void)http_etag_matches(a, etag);
    free(a);
    return 0;
}
