/*
 * auth.c — API keys: the in-memory table of key hashes, the Authorization
 * check on every request, and the helpers the keys CLI shares (key
 * generation, hashing, scope lists). See auth.h for the model.
 *
 * The table is an open-addressing hash set of SHA-256 digests, rebuilt
 * whole on each reload and swapped under a read-write lock, so a request
 * costs one SHA-256 of the presented key (~0.3 µs), a read lock and a probe
 * or two. Digests are compared in constant time. The probe position is taken
 * from the digest of the key the client sent, so timing can at most tell a
 * client whether some stored digest shares a 64-bit prefix with the digest of
 * a key it chose: that reveals nothing about any stored key.
 *
 * Revocation takes effect for the next request (auth_watch). Per request
 * that needs a key, the thread first asks whether anything at all was
 * committed to the database since it last looked, and only then looks at
 * the key table itself (its row count, revoked count and highest id: one
 * scan of a small table), reloading the table in memory when those differ.
 * "Anything committed" is read from the WAL-index header, the first 96
 * bytes of the database's -shm file, as SQLite itself maps it: two copies of a
 * header that every commit rewrites (frame count, salts, checksums), the
 * second first, so that equal copies are a consistent read. That costs two
 * loads of 48 bytes. Its layout is part of SQLite's file format
 * (sqlite.org/walformat.html, 2.1), shared by processes of different
 * SQLite versions, so it does not change under us; and it is only a
 * filter: whenever it cannot be read, or differs, the thread asks its own
 * read-only connection (PRAGMA data_version, then the key table). That
 * connection alone would do (the fallback), at two fcntl calls per request
 * — 10-20% of a small authenticated GET (auth.h has the figures).
 */
#include "api/auth.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/digest.h"
#include "base/hash.h"
#include "base/log.h"
#include "exp/config.h"

#define DIGEST_LEN DIGEST_SHA256_LEN

struct slot {
    uint8_t digest[DIGEST_LEN];
    unsigned scopes; /* 0: empty slot */
    int64_t id;      /* the key's rowid (request logs name it) */
    char *name;      /* its name (the audit trail's actor), owned; NULL: none */
    /* the experiments the key is limited to, comma-separated ids (owned
     * by the table); NULL: every experiment */
    char *experiments;
};

struct table {
    struct slot *slots; /* owned, with their experiments; cap a power of two, at most half full */
    size_t cap;
    size_t active;        /* unrevoked keys with at least one scope */
    size_t rows;          /* rows seen, revoked included */
    uint64_t fingerprint; /* of every row: detects any change on reload */
    /* with rows, what the watch compares (auth_watch): what `keys create`
     * and `keys revoke` change */
    int64_t revoked, max_id;
};

static struct store *g_store;
static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct table g_table; /* under g_lock */
static atomic_int g_enabled;
static atomic_size_t g_active;

static const char *const scope_names[] = {"admin", "assign", "report", "read", "unblinded"};
static const unsigned scope_bits[] = {API_SCOPE_ADMIN, API_SCOPE_ASSIGN, API_SCOPE_REPORT,
                                      API_SCOPE_READ, API_SCOPE_UNBLINDED};
#define N_SCOPES (sizeof scope_names / sizeof scope_names[0])

/* --- helpers ----------------------------------------------------------------- */

/* Equal in time independent of where the inputs differ. */
static int ct_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    volatile uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

static int digest(const char *key, size_t len, uint8_t out[DIGEST_LEN])
{
    return digest_sha256(key, len, out);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int unhex(const char *hex, uint8_t out[DIGEST_LEN])
{
    if (hex == NULL || strlen(hex) != 2 * (size_t)DIGEST_LEN)
        return -1;
    for (size_t i = 0; i < DIGEST_LEN; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int auth_parse_scopes(const char *list, unsigned *out, char *bad, size_t badlen)
{
    unsigned bits = 0;
    const char *p = list;
    if (bad != NULL && badlen > 0)
        bad[0] = '\0';
    if (list == NULL)
        return -1;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        const char *s = p;
        size_t len = n;
        while (len > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        size_t i;
        for (i = 0; i < N_SCOPES; i++)
            if (strlen(scope_names[i]) == len && strncmp(s, scope_names[i], len) == 0)
                break;
        if (i == N_SCOPES) {
            if (bad != NULL && badlen > 0)
                snprintf(bad, badlen, "%.*s", (int)len, s);
            return -1;
        }
        bits |= scope_bits[i];
        p += n;
        if (*p == ',')
            p++;
    }
    if (bits == 0)
        return -1;
    *out = bits;
    return 0;
}

void auth_format_scopes(unsigned scopes, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < N_SCOPES; i++) {
        if (!(scopes & scope_bits[i]))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", scope_names[i]);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}

int auth_new_key(char *key, size_t len)
{
    static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t raw[33] = {0}; /* 32 random bytes + 1 zero byte to round to 3s */
    size_t got = 0;
    if (len < AUTH_KEY_LEN + 1)
        return -1;
    while (got < 32) {
        ssize_t n = getrandom(raw + got, 32 - got, 0);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    char *o = key;
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result): a prefix; key[AUTH_KEY_LEN] ends it
    memcpy(o, "bd_", 3);
    o += 3;
    for (size_t i = 0; i < 33; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
        *o++ = b64url[(v >> 18) & 63];
        *o++ = b64url[(v >> 12) & 63];
        *o++ = b64url[(v >> 6) & 63];
        *o++ = b64url[v & 63];
    }
    /* 44 characters encode 33 bytes; the last one only the padding byte. */
    key[AUTH_KEY_LEN] = '\0';
    explicit_bzero(raw, sizeof raw); /* not optimised away */
    return 0;
}

int auth_hash_hex(const char *key, size_t keylen, char *hex, size_t hexlen)
{
    uint8_t d[DIGEST_LEN];
    if (hexlen < AUTH_HASH_HEX_LEN + 1 || digest(key, keylen, d) != 0)
        return -1;
    for (size_t i = 0; i < DIGEST_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* --- the table ------------------------------------------------------------------ */

static size_t slot_of(const uint8_t d[DIGEST_LEN], size_t cap)
{
    uint64_t h;
    memcpy(&h, d, sizeof h);
    return (size_t)h & (cap - 1);
}

struct loading {
    struct table t;
    uint8_t (*digests)[DIGEST_LEN]; /* owned */
    unsigned *scopes;               /* owned */
    int64_t *ids;                   /* owned */
    char **experiments;             /* owned, each NULL or owned */
    char **names;                   /* owned, each NULL or owned */
    size_t n, cap;
    int failed;
};

static int load_row(void *arg, const struct store_key_row *row)
{
    struct loading *l = arg;
    l->t.rows++;
    if (row->revoked)
        l->t.revoked++;
    if (row->rowid > l->t.max_id)
        l->t.max_id = row->rowid;
    l->t.fingerprint = hash_fnv1a(l->t.fingerprint, &row->rowid, sizeof row->rowid);
    l->t.fingerprint = hash_fnv1a(l->t.fingerprint, &row->revoked, sizeof row->revoked);
    if (row->scopes != NULL)
        l->t.fingerprint = hash_fnv1a(l->t.fingerprint, row->scopes, strlen(row->scopes));
    if (row->hash != NULL)
        l->t.fingerprint = hash_fnv1a(l->t.fingerprint, row->hash, strlen(row->hash));
    if (row->experiments != NULL)
        l->t.fingerprint =
            hash_fnv1a(l->t.fingerprint, row->experiments, strlen(row->experiments) + 1);
    if (row->revoked)
        return 0;
    uint8_t d[DIGEST_LEN];
    unsigned scopes = 0;
    char bad[32];
    if (unhex(row->hash, d) != 0) {
        log_warn("API key %lld: stored hash is not a hex SHA-256; ignored", (long long)row->rowid);
        return 0;
    }
    if (auth_parse_scopes(row->scopes, &scopes, bad, sizeof bad) != 0) {
        log_warn("API key %lld: unknown scope \"%s\"; key ignored", (long long)row->rowid, bad);
        return 0;
    }
    /* Ignored rather than widened: a key whose list cannot be read must
     * not pass for one over every experiment. */
    if (row->experiments != NULL &&
        (auth_check_experiments(row->experiments, bad, sizeof bad) != 0 ||
         (scopes & API_SCOPE_ADMIN))) {
        log_warn("API key %lld: bad experiment list (\"%s\"); key ignored", (long long)row->rowid,
                 (scopes & API_SCOPE_ADMIN) ? "with admin" : bad);
        return 0;
    }
    if (l->n == AUTH_MAX_KEYS) {
        log_warn("more than %d API keys; key %lld and later ones ignored", AUTH_MAX_KEYS,
                 (long long)row->rowid);
        return 0;
    }
    /* five parallel arrays, grown in step */
    size_t cd = l->cap, cs = cd, ci = cs, ce = cs, cn = cs;
    char *exps = NULL, *name = NULL;
    if (buf_grow((void **)&l->digests, &cd, l->n + 1, sizeof *l->digests, 16) != 0 ||
        buf_grow((void **)&l->scopes, &cs, l->n + 1, sizeof *l->scopes, 16) != 0 ||
        buf_grow((void **)&l->ids, &ci, l->n + 1, sizeof *l->ids, 16) != 0 ||
        buf_grow((void **)&l->experiments, &ce, l->n + 1, sizeof *l->experiments, 16) != 0 ||
        buf_grow((void **)&l->names, &cn, l->n + 1, sizeof *l->names, 16) != 0 ||
        (row->experiments != NULL && (exps = strdup(row->experiments)) == NULL) ||
        (row->name != NULL && (name = strdup(row->name)) == NULL)) {
        free(exps);
        l->failed = 1;
        return STORE_ERR_NOMEM;
    }
    l->cap = cd;
    memcpy(l->digests[l->n], d, DIGEST_LEN);
    l->scopes[l->n] = scopes;
    l->ids[l->n] = row->rowid;
    l->experiments[l->n] = exps; /* moved to the loading */
    l->names[l->n] = name;       /* same */
    l->n++;
    return 0;
}

/* Build l->t's hash set from the collected digests. */
static int build(struct loading *l)
{
    size_t cap = 16;
    while (cap < 2 * l->n)
        cap *= 2;
    l->t.slots = calloc(cap, sizeof *l->t.slots);
    if (l->t.slots == NULL)
        return STORE_ERR_NOMEM;
    l->t.cap = cap;
    for (size_t i = 0; i < l->n; i++) {
        size_t s = slot_of(l->digests[i], cap);
        while (l->t.slots[s].scopes != 0 &&
               memcmp(l->t.slots[s].digest, l->digests[i], DIGEST_LEN) != 0)
            s = (s + 1) & (cap - 1);
        /* The same digest twice cannot happen (UNIQUE); if so, the later
         * row wins whole (merging could widen a limited key). */
        memcpy(l->t.slots[s].digest, l->digests[i], DIGEST_LEN);
        if (l->t.slots[s].scopes == 0)
            l->t.active++;
        l->t.slots[s].scopes = l->scopes[i];
        l->t.slots[s].id = l->ids[i];
        free(l->t.slots[s].experiments);
        l->t.slots[s].experiments = l->experiments[i]; /* moved to the table */
        l->experiments[i] = NULL;
        free(l->t.slots[s].name);
        l->t.slots[s].name = l->names[i]; /* same */
        l->names[i] = NULL;
    }
    return STORE_OK;
}

/* Free a table's slots with what they own. */
static void table_free_slots(struct slot *slots, size_t cap)
{
    for (size_t i = 0; slots != NULL && i < cap; i++) {
        free(slots[i].experiments);
        free(slots[i].name);
    }
    free(slots);
}

/* The store_keys_epoch the table was last loaded at (epoch_check). */
static atomic_uint_fast64_t g_epoch_seen;

/* One reload at a time: the signal loop's and the watch's. */
static pthread_mutex_t g_reload_mu = PTHREAD_MUTEX_INITIALIZER;

static int reload_locked(void);

int auth_reload(void)
{
    pthread_mutex_lock(&g_reload_mu);
    int rc = reload_locked();
    pthread_mutex_unlock(&g_reload_mu);
    return rc;
}

static int reload_locked(void)
{
    struct loading l;
    int rc;
    memset(&l, 0, sizeof l);
    l.t.fingerprint = HASH_FNV1A_BASIS;
    if (g_store == NULL)
        return -STORE_ERR_CLOSED;
    rc = store_load_keys(g_store, load_row, &l);
    if (rc == STORE_OK)
        rc = build(&l);
    free(l.digests);
    free(l.scopes);
    free(l.ids);
    for (size_t i = 0; i < l.n; i++) {
        free(l.experiments[i]);
        free(l.names[i]);
    }
    free(l.experiments);
    free(l.names);
    if (rc != STORE_OK) {
        table_free_slots(l.t.slots, l.t.cap);
        return -rc;
    }
    pthread_rwlock_wrlock(&g_lock);
    int changed =
        l.t.rows != g_table.rows || l.t.fingerprint != g_table.fingerprint || g_table.slots == NULL;
    struct table old = g_table;
    if (changed) {
        g_table = l.t;
        atomic_store(&g_enabled, g_table.rows > 0);
        atomic_store(&g_active, g_table.active);
    }
    pthread_rwlock_unlock(&g_lock);
    if (changed) {
        table_free_slots(old.slots, old.cap);
        return 1;
    }
    table_free_slots(l.t.slots, l.t.cap);
    return 0;
}

int auth_init(struct store *st)
{
    g_store = st;
    atomic_store(&g_epoch_seen, store_keys_epoch(st));
    int rc = auth_reload();
    if (rc < 0) {
        /* Closed until a reload succeeds. */
        atomic_store(&g_enabled, 1);
        return -rc;
    }
    return STORE_OK;
}

/* --- the watch: revocations for the next request ------------------------------- */

#define WAL_HDR ((size_t)48)   /* one copy of the WAL-index header */
#define WAL_INDEX_REGION 32768 /* the size of SQLite's -shm regions (WALINDEX_PGSZ) */

struct watch {
    sqlite3 *db; /* read-only, this thread's */
    sqlite3_stmt *version, *stamp;
    const volatile uint32_t *shm; /* the -shm file's first page, as db maps it; NULL: not yet */
    sqlite3_int64 seen;           /* data_version when the table was last found current */
    uint32_t hdr[WAL_HDR / 4];    /* the WAL-index header then, when have_hdr */
    int have_hdr;
    int broken; /* could not open or read: no watch on this thread */
};

static char *g_watch_path; /* NULL: no watch */
static pthread_key_t g_watch_key;
static pthread_once_t g_watch_once = PTHREAD_ONCE_INIT;
static atomic_int g_watch_warned;

static void watch_free(void *p)
{
    struct watch *w = p;
    sqlite3_finalize(w->version);
    sqlite3_finalize(w->stamp);
    sqlite3_close_v2(w->db);
    free(w);
}

static void watch_key_init(void)
{
    if (pthread_key_create(&g_watch_key, watch_free) != 0)
        abort(); /* only with no key left at all (PTHREAD_KEYS_MAX) */
}

int auth_watch(const char *db_path)
{
    pthread_once(&g_watch_once, watch_key_init);
    char *p = NULL;
    if (db_path != NULL && (p = strdup(db_path)) == NULL)
        return STORE_ERR_NOMEM;
    free(g_watch_path);
    g_watch_path = p;
    return STORE_OK;
}

/* The -shm file's first page through SQLite's own mapping of it (the VFS's
 * xShmMap on w's connection, the region size SQLite's WAL uses), once w's
 * connection has read (its WAL, and so the -shm, is open). Never through
 * a descriptor of ours: closing any descriptor of a file drops every
 * POSIX lock the process holds on it, SQLite's included ("How To Corrupt
 * An SQLite Database File", 2.2). The -shm's lost shared lock let another
 * process (`banditd keys revoke`, a backup, the sqlite3 shell) take the
 * database for unused, truncate and rebuild the WAL index under the
 * running daemon: SIGBUS in its checkpoint (test_auth
 * test_shm_lock_kept). */
static void watch_map(struct watch *w)
{
    sqlite3_file *f = NULL;
    void volatile *p = NULL;
    if (sqlite3_file_control(w->db, "main", SQLITE_FCNTL_FILE_POINTER, &f) == SQLITE_OK &&
        f != NULL && f->pMethods != NULL && f->pMethods->iVersion >= 2 &&
        f->pMethods->xShmMap != NULL &&
        f->pMethods->xShmMap(f, 0, WAL_INDEX_REGION, 0, &p) == SQLITE_OK)
        w->shm = p;
}

/* A consistent read of the WAL-index header into out: copy 1, then copy 2
 * (SQLite writes copy 2 first); −1 when they differ (a commit is writing
 * it) or there is no mapping. */
static int shm_header(const struct watch *w, uint32_t out[WAL_HDR / 4])
{
    const volatile uint32_t *m = w->shm;
    if (m == NULL)
        return -1;
    uint32_t second[WAL_HDR / 4];
    /* acquire: no load of copy 2 moves before these (what SQLite's own
     * readers do with a barrier) */
    for (size_t i = 0; i < WAL_HDR / 4; i++)
        out[i] = __atomic_load_n(&m[i], __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < WAL_HDR / 4; i++)
        second[i] = __atomic_load_n(&m[WAL_HDR / 4 + i], __ATOMIC_RELAXED);
    return memcmp(out, second, WAL_HDR) == 0 ? 0 : -1;
}

/* This thread's watch, opened on first use; NULL when there is none. */
static struct watch *watch_get(void)
{
    struct watch *w = pthread_getspecific(g_watch_key);
    if (w != NULL)
        return w->broken ? NULL : w;
    w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->seen = -1;
    int rc =
        sqlite3_open_v2(g_watch_path, &w->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(w->db, 1000);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(w->db, "PRAGMA data_version", -1, &w->version, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(w->db,
                                "SELECT count(*), coalesce(sum(revoked != 0), 0), "
                                "coalesce(max(rowid), 0) FROM api_keys",
                                -1, &w->stamp, NULL);
    if (rc != SQLITE_OK) {
        if (!atomic_exchange(&g_watch_warned, 1))
            log_warn("API keys: cannot watch %s (%s); revocations take effect at the next "
                     "re-read (--key-refresh, SIGHUP)",
                     g_watch_path, w->db != NULL ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
        w->broken = 1;
    }
    if (pthread_setspecific(g_watch_key, w) != 0) {
        watch_free(w);
        return NULL;
    }
    return w->broken ? NULL : w;
}

/* Reload the table when another connection changed it since this thread
 * last looked (see the top of this file). */
static void watch_check(void)
{
    if (g_watch_path == NULL)
        return;
    struct watch *w = watch_get();
    if (w == NULL)
        return;
    /* read before the key table, so that a commit in between is seen
     * next time rather than missed */
    uint32_t hdr[WAL_HDR / 4];
    int have_hdr = shm_header(w, hdr) == 0;
    if (have_hdr && w->have_hdr && memcmp(hdr, w->hdr, WAL_HDR) == 0)
        return; /* nothing committed since the table was found current */
    sqlite3_int64 version = -1;
    if (sqlite3_step(w->version) == SQLITE_ROW)
        version = sqlite3_column_int64(w->version, 0);
    sqlite3_reset(w->version);
    if (version < 0 || (!have_hdr && version == w->seen))
        return; /* nothing committed elsewhere (or no answer: as before) */
    if (sqlite3_step(w->stamp) != SQLITE_ROW) {
        sqlite3_reset(w->stamp);
        return;
    }
    int64_t rows = sqlite3_column_int64(w->stamp, 0), revoked = sqlite3_column_int64(w->stamp, 1),
            max_id = sqlite3_column_int64(w->stamp, 2);
    sqlite3_reset(w->stamp);
    if (w->shm == NULL)
        watch_map(w); /* it has read: its -shm is open */
    pthread_rwlock_rdlock(&g_lock);
    int current = (int64_t)g_table.rows == rows && g_table.revoked == revoked &&
                  g_table.max_id == max_id && g_table.slots != NULL;
    pthread_rwlock_unlock(&g_lock);
    if (!current) {
        int rc = auth_reload();
        if (rc < 0)
            return; /* the previous table stays; try again next request */
        if (rc == 1)
            log_info("API keys changed: %zu usable, API %s", auth_active_keys(),
                     auth_enabled() ? "closed (keys required)" : "open");
    }
    w->seen = version;
    memcpy(w->hdr, hdr, WAL_HDR);
    w->have_hdr = have_hdr;
}

/* A key written through another daemon (store_keys_epoch: PostgreSQL's
 * notifications) reloads the table before the next request that needs a
 * key, without waiting for --key-refresh (epoch_check). */

static void epoch_check(void)
{
    struct store *st = g_store;
    if (st == NULL)
        return;
    /* read before the key table: a change in between is seen next time */
    uint64_t e = store_keys_epoch(st);
    if (e == atomic_load(&g_epoch_seen))
        return;
    int rc = auth_reload();
    if (rc < 0)
        return; /* the previous table stays; try again next request */
    atomic_store(&g_epoch_seen, e);
    if (rc == 1)
        log_info("API keys changed: %zu usable, API %s", auth_active_keys(),
                 auth_enabled() ? "closed (keys required)" : "open");
}

void auth_free(void)
{
    pthread_rwlock_wrlock(&g_lock);
    table_free_slots(g_table.slots, g_table.cap);
    memset(&g_table, 0, sizeof g_table);
    pthread_rwlock_unlock(&g_lock);
    atomic_store(&g_enabled, 0);
    atomic_store(&g_active, 0);
    g_store = NULL;
    free(g_watch_path);
    g_watch_path = NULL;
}

int auth_enabled(void)
{
    return atomic_load(&g_enabled);
}

size_t auth_active_keys(void)
{
    return atomic_load(&g_active);
}

/* What a key grants, as found in the table. */
struct grant {
    unsigned scopes; /* 0: unknown or revoked */
    int64_t id;
    char name[HTTP_CALLER_NAME_MAX + 1]; /* "" when none */
    int limited;                         /* limited to named experiments */
    int allowed;                         /* limited: the experiment asked about is one of them */
};

/* The key named by the token bytes p[0..len), checked against experiment
 * exp_id (NULL: an endpoint about no one experiment, which a limited key
 * never reaches). */
static struct grant lookup(const char *p, size_t len, const char *exp_id)
{
    struct grant g = {0};
    uint8_t d[DIGEST_LEN];
    if (len == 0 || len > AUTH_MAX_KEY_LEN || digest(p, len, d) != 0)
        return g;
    pthread_rwlock_rdlock(&g_lock);
    if (g_table.cap > 0) {
        size_t s = slot_of(d, g_table.cap);
        for (size_t probes = 0; probes < g_table.cap && g_table.slots[s].scopes != 0; probes++) {
            const struct slot *sl = &g_table.slots[s];
            if (ct_equal(sl->digest, d, DIGEST_LEN)) {
                g.scopes = sl->scopes;
                g.id = sl->id;
                snprintf(g.name, sizeof g.name, "%s", sl->name != NULL ? sl->name : "");
                g.limited = sl->experiments != NULL;
                g.allowed = g.limited && exp_id != NULL && auth_list_has(sl->experiments, exp_id);
                break;
            }
            s = (s + 1) & (g_table.cap - 1);
        }
    }
    pthread_rwlock_unlock(&g_lock);
    return g;
}

/* The token of an Authorization value "Bearer TOKEN" (scheme
 * case-insensitive) into *tok and *len; −1 when malformed. */
static int bearer(const char *authorization, const char **tok, size_t *len)
{
    if (authorization == NULL)
        return -1;
    const char *p = authorization;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return -1;
    p += 6;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, " \t\r\n");
    for (const char *t = p + n; *t != '\0'; t++)
        if (*t != ' ' && *t != '\t')
            return -1;
    *tok = p;
    *len = n;
    return 0;
}

unsigned auth_scopes(const char *authorization, int *known, int64_t *key_id)
{
    const char *tok;
    size_t len;
    struct grant g = {0};
    if (bearer(authorization, &tok, &len) == 0)
        g = lookup(tok, len, NULL);
    *known = g.scopes != 0;
    if (key_id != NULL)
        *key_id = g.id;
    return g.scopes;
}

int auth_list_has(const char *list, const char *id)
{
    size_t idlen = strlen(id);
    for (const char *p = list; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == idlen && strncmp(p, id, n) == 0)
            return 1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

int auth_check_experiments(const char *list, char *bad, size_t badlen)
{
    size_t count = 0;
    if (bad != NULL && badlen > 0)
        bad[0] = '\0';
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ",");
        char id[HTTP_ID_MAX + 2];
        snprintf(id, sizeof id, "%.*s", (int)(n < sizeof id - 1 ? n : sizeof id - 1), p);
        if (n >= sizeof id - 1 || !exp_id_valid(id) || ++count > AUTH_MAX_EXPERIMENTS) {
            if (bad != NULL && badlen > 0)
                snprintf(bad, badlen, "%s", count > AUTH_MAX_EXPERIMENTS ? "too many" : id);
            return -1;
        }
        p += n;
        if (*p == '\0')
            return 0;
    }
}

/* --- admission of requests (the transport's admit hook) ------------------------------ */

static atomic_int g_metrics_need_key;

void auth_set_metrics_need_key(int on)
{
    atomic_store(&g_metrics_need_key, on);
}

/* The name of one scope bit, from the table above. */
static const char *scope_name(unsigned bit)
{
    for (size_t i = 0; i < N_SCOPES; i++)
        if (scope_bits[i] == bit)
            return scope_names[i];
    return "admin";
}

void auth_challenge_scope(struct http_req *r, unsigned need)
{
    char challenge[96];
    snprintf(challenge, sizeof challenge,
             "Bearer realm=\"banditd\", error=\"insufficient_scope\", scope=\"%s\"",
             scope_name(need));
    http_reply_header(r, "WWW-Authenticate", challenge);
}

int auth_admit(struct http_req *r, const struct http_route *route)
{
    unsigned need = route != NULL ? route->need : API_SCOPE_NONE;
    int optional = 0;
    if ((need & API_SCOPE_IF_CONFIGURED) && !atomic_load(&g_metrics_need_key)) {
        need = API_SCOPE_NONE;
        optional = 1;
    }
    need &= ~(unsigned)API_SCOPE_IF_CONFIGURED;
    if (need == API_SCOPE_NONE) {
        /* Open here (/metrics without --metrics-need-key), but a key sent
         * still counts: it may see blinded experiments in full (blind.c).
         * An unknown one is no one, not refused. */
        const char *tok;
        size_t toklen;
        if (optional)
            watch_check();
        if (optional && auth_enabled() &&
            bearer(http_req_header(r, "Authorization"), &tok, &toklen) == 0) {
            struct grant g = lookup(tok, toklen, NULL);
            if (!g.limited) {
                http_req_set_caller(r, g.id, g.name);
                http_req_set_grant(r, g.scopes);
            }
        }
        return 0;
    }
    /* before auth_enabled: the first key created closes an open API for
     * the next request too */
    watch_check();
    epoch_check();
    if (!auth_enabled())
        return 0;
    /* A key limited to experiments may come as ?access_token= (RFC 6750
     * 2.3): navigator.sendBeacon cannot set a header. Such a key is
     * public anyway (it ships in a page); any other key is refused
     * there, since URLs end up in logs and histories. */
    const char *hdr = http_req_header(r, "Authorization");
    const char *query = hdr == NULL ? http_req_query(r, "access_token") : NULL;
    const char *tok = query;
    size_t toklen = query != NULL ? strlen(query) : 0;
    struct grant g = {0};
    if (query != NULL || bearer(hdr, &tok, &toklen) == 0)
        g = lookup(tok, toklen, http_req_id(r));
    unsigned scopes = g.scopes;
    if (scopes & API_SCOPE_UNBLINDED) /* reads in full: reads */
        scopes |= API_SCOPE_READ;
    http_req_set_caller(r, g.id, g.name);
    http_req_set_grant(r, scopes);
    /* Challenges as RFC 6750 section 3 words them. */
    if (scopes == 0 || (query != NULL && !g.limited)) {
        int none = hdr == NULL && query == NULL;
        http_reply_header(r, "WWW-Authenticate",
                          none ? "Bearer realm=\"banditd\""
                               : "Bearer realm=\"banditd\", error=\"invalid_token\"");
        http_req_refuse(r, 401,
                        none ? "send Authorization: Bearer KEY with an API key"
                        : scopes != 0
                            ? "only a key limited to experiments (keys create --experiments) may "
                              "come as access_token; send this one as Authorization: Bearer KEY"
                            : "the API key is unknown or revoked");
        return -1;
    }
    if (!(scopes & API_SCOPE_ADMIN) && !(scopes & need)) {
        const char *name = scope_name(need);
        char detail[128];
        auth_challenge_scope(r, need);
        if (need == API_SCOPE_ADMIN)
            snprintf(detail, sizeof detail, "this endpoint needs an API key with scope admin");
        else
            snprintf(detail, sizeof detail,
                     "this endpoint needs an API key with scope %s (or admin)", name);
        http_req_refuse(r, 403, detail);
        return -1;
    }
    if (g.limited && !g.allowed) {
        http_reply_header(r, "WWW-Authenticate",
                          "Bearer realm=\"banditd\", error=\"insufficient_scope\"");
        http_req_refuse(r, 403,
                        http_req_id(r) != NULL
                            ? "this API key is limited to other experiments"
                            : "this API key is limited to named experiments; this endpoint is not "
                              "about one experiment");
        return -1;
    }
    return 0;
}
