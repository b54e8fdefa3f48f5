/*
 * cli.c — `banditd keys create|list|revoke`, `banditd backup` and
 * `banditd audit verify`: the
 * operator's tools that work on the database file directly, alongside a
 * running daemon or without one. See cli.h.
 */
#include "server/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth.h"
#include "server/config.h"
#include "base/clock.h"

#define NAME_MAX_LEN 128

struct cli_args {
    char db[1024];
    const char *scope;
    const char *name;
    const char *to;
    const char *experiments; /* keys create --experiments */
    const char *id;
    int json;
    int from_stdin;
};

static void usage(void)
{
    fprintf(stderr, "usage: banditd keys create --db PATH --scope SCOPE[,SCOPE] [--name NAME] "
                    "[--experiments ID[,ID]] [--stdin]\n"
                    "       banditd keys list --db PATH [--json]\n"
                    "       banditd keys revoke ID --db PATH\n"
                    "       banditd backup --db PATH --to FILE\n"
                    "       banditd audit verify --db PATH [ID]\n"
                    "  (--config FILE may replace --db: its `db` setting is used)\n"
                    "  scopes: admin (everything), assign, report, read, unblinded (read, and\n"
                    "  blinded experiments in full)\n"
                    "  --experiments: the key works only for these experiments (a key for a\n"
                    "  web page: e.g. --scope assign,report --experiments checkout-button)\n"
                    "  --stdin: store the key read from standard input (made by an earlier\n"
                    "  keys create, e.g. for another shard) instead of making a new one\n");
}

int cli_is_command(const char *arg)
{
    return arg != NULL &&
           (strcmp(arg, "keys") == 0 || strcmp(arg, "backup") == 0 || strcmp(arg, "audit") == 0);
}

/* Parse the options after the subcommand words; positional → a->id. */
static int parse(struct cli_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char **dst = NULL;
        if (strcmp(o, "--json") == 0) {
            a->json = 1;
            continue;
        }
        if (strcmp(o, "--stdin") == 0) {
            a->from_stdin = 1;
            continue;
        }
        if (strcmp(o, "--db") == 0 || strcmp(o, "--config") == 0 || strcmp(o, "--scope") == 0 ||
            strcmp(o, "--name") == 0 || strcmp(o, "--to") == 0 || strcmp(o, "--experiments") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "banditd: %s needs a value\n", o);
                return -1;
            }
            char *v = argv[++i];
            if (strcmp(o, "--db") == 0) {
                if (strlen(v) >= sizeof a->db) {
                    fprintf(stderr, "banditd: --db: path too long\n");
                    return -1;
                }
                snprintf(a->db, sizeof a->db, "%s", v);
                continue;
            }
            if (strcmp(o, "--config") == 0) {
                /* Only the file's db setting matters here; --db wins. */
                struct config c;
                char err[512];
                char flag[] = "--config";
                char *cargv[] = {flag, v};
                config_defaults(&c);
                if (config_parse_args(&c, 2, cargv, err, sizeof err) != 0) {
                    fprintf(stderr, "banditd: %s\n", err);
                    return -1;
                }
                if (a->db[0] == '\0')
                    snprintf(a->db, sizeof a->db, "%s", c.db);
                continue;
            }
            dst = strcmp(o, "--scope") == 0         ? &a->scope
                  : strcmp(o, "--name") == 0        ? &a->name
                  : strcmp(o, "--experiments") == 0 ? &a->experiments
                                                    : &a->to;
            *dst = v;
            continue;
        }
        if (o[0] == '-') {
            fprintf(stderr, "banditd: unknown option %s\n", o);
            return -1;
        }
        if (a->id != NULL) {
            fprintf(stderr, "banditd: unexpected argument %s\n", o);
            return -1;
        }
        a->id = o;
    }
    if (a->db[0] == '\0') {
        fprintf(stderr, "banditd: --db PATH is required\n");
        return -1;
    }
    return 0;
}

static struct store *open_db(const char *path, int must_exist)
{
    char err[512];
    struct stat sb;
    if (must_exist && store_target_is_file(path) && stat(path, &sb) != 0) {
        fprintf(stderr, "banditd: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct store *st = store_open(path, STORE_SYNC_FULL, err, sizeof err);
    if (st == NULL)
        fprintf(stderr, "banditd: %s\n", err);
    return st;
}

/* One key of our format from stdin (surrounding whitespace ignored). */
static int read_key(char *key, size_t len)
{
    char line[AUTH_MAX_KEY_LEN + 2];
    if (fgets(line, sizeof line, stdin) == NULL)
        return -1;
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, " \t\r\n");
    if (n != AUTH_KEY_LEN || strncmp(p, "bd_", 3) != 0 || n + 1 > len)
        return -1;
    for (size_t i = 3; i < n; i++)
        if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z') ||
              (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '_'))
            return -1;
    memcpy(key, p, n);
    key[n] = '\0';
    explicit_bzero(line, sizeof line);
    return 0;
}

/* Who runs a keys command, for the audit log (store.h): the actor
 * "cli:<user>" (the effective user; "cli:uid <n>" without a name) and a
 * request id of its own, "cli-<pid>-<ms>", as the daemon's requests have. */
static void cli_caller(char *actor, size_t alen, char *rid, size_t rlen)
{
    const struct passwd *pw = getpwuid(geteuid());
    if (pw != NULL && pw->pw_name != NULL)
        snprintf(actor, alen, "cli:%s", pw->pw_name);
    else
        snprintf(actor, alen, "cli:uid %ld", (long)geteuid());
    snprintf(rid, rlen, "cli-%ld-%" PRId64, (long)getpid(), clock_wall_ms());
}

static int keys_create(const struct cli_args *a)
{
    unsigned scopes = 0;
    char bad[64], canon[64], key[AUTH_KEY_LEN + 1], hex[AUTH_HASH_HEX_LEN + 1];
    int64_t id = 0;
    if (a->scope == NULL) {
        fprintf(stderr, "banditd: keys create needs --scope SCOPE[,SCOPE]\n");
        return 2;
    }
    if (auth_parse_scopes(a->scope, &scopes, bad, sizeof bad) != 0) {
        char all[64]; /* the names from auth's one table: a new scope is listed */
        auth_format_scopes(~0u, all, sizeof all);
        fprintf(stderr, "banditd: --scope: unknown scope \"%s\" (one of %s)\n", bad, all);
        return 2;
    }
    if (a->experiments != NULL) {
        if (auth_check_experiments(a->experiments, bad, sizeof bad) != 0) {
            fprintf(stderr,
                    "banditd: --experiments: \"%s\" is not an experiment id (1 to %d ids, "
                    "[A-Za-z0-9_.-]{1,64}, comma-separated, no spaces)\n",
                    bad, AUTH_MAX_EXPERIMENTS);
            return 2;
        }
        if (scopes & API_SCOPE_ADMIN) {
            fprintf(stderr, "banditd: --experiments: admin grants everything; a key limited to "
                            "experiments takes assign, report or read\n");
            return 2;
        }
    }
    if (a->name != NULL) {
        size_t n = strlen(a->name);
        if (n == 0 || n > NAME_MAX_LEN) {
            fprintf(stderr, "banditd: --name: 1 to %d bytes\n", NAME_MAX_LEN);
            return 2;
        }
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)a->name[i] < 0x20 || a->name[i] == 0x7f) {
                fprintf(stderr, "banditd: --name: no control characters\n");
                return 2;
            }
    }
    auth_format_scopes(scopes, canon, sizeof canon);
    if (a->from_stdin) {
        if (read_key(key, sizeof key) != 0) {
            fprintf(stderr, "banditd: --stdin: expected one key made by `banditd keys create` "
                            "(bd_ and 43 base64url characters)\n");
            return 2;
        }
    } else if (auth_new_key(key, sizeof key) != 0) {
        fprintf(stderr, "banditd: cannot generate a key (getrandom failed)\n");
        return 1;
    }
    if (auth_hash_hex(key, strlen(key), hex, sizeof hex) != 0) {
        fprintf(stderr, "banditd: SHA-256 failed\n");
        return 1;
    }
    struct store *st = open_db(a->db, 0);
    if (st == NULL)
        return 1;
    char actor[160], rid[64];
    cli_caller(actor, sizeof actor, rid, sizeof rid);
    int rc =
        store_key_insert(st, a->name, canon, hex, a->experiments, clock_wall_ms(), actor, rid, &id);
    store_close(st);
    if (rc == STORE_ERR_EXISTS) {
        fprintf(stderr, "banditd: this key is already stored in %s\n", a->db);
        return 1;
    }
    if (rc != STORE_OK) {
        fprintf(stderr, "banditd: cannot store the key: %s\n", store_strerror(rc));
        return 1;
    }
    if (a->from_stdin) {
        fprintf(stderr, "stored key %" PRId64 " (%s) with scope %s.\n", id,
                a->name ? a->name : "no name", canon);
        explicit_bzero(key, sizeof key);
        return 0;
    }
    /* The key exists only in this output: a failed write (a closed pipe, a
     * full disk) must not pass for a created key. */
    printf("%s\n", key);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr,
                "banditd: key %" PRId64 " was stored but could not be printed (%s); revoke it: "
                "banditd keys revoke %" PRId64 " --db %s\n",
                id, strerror(errno), id, a->db);
        explicit_bzero(key, sizeof key);
        return 1;
    }
    fprintf(stderr,
            "created key %" PRId64 " (%s) with scope %s. It is shown only this once; a running "
            "daemon accepts it from its next request.\n",
            id, a->name ? a->name : "no name", canon);
    explicit_bzero(key, sizeof key);
    return 0;
}

struct list_ctx {
    json_t *rows; /* --json: array; else NULL */
    size_t n;
};

static int list_row(void *arg, const struct store_key_row *row)
{
    struct list_ctx *l = arg;
    char created[40];
    clock_format_rfc3339(row->created_ms, created, sizeof created);
    l->n++;
    if (l->rows != NULL) {
        json_t *scopes = json_array();
        const char *p = row->scopes ? row->scopes : "";
        while (*p != '\0') {
            size_t k = strcspn(p, ",");
            json_array_append_new(scopes, json_stringn(p, k));
            p += k + (p[k] == ',');
        }
        json_t *exps = json_null();
        for (const char *e = row->experiments; e != NULL && *e != '\0';) {
            size_t k = strcspn(e, ",");
            if (json_is_null(exps))
                exps = json_array();
            json_array_append_new(exps, json_stringn(e, k));
            e += k + (e[k] == ',');
        }
        json_array_append_new(l->rows,
                              json_pack("{s:I,s:s?,s:o,s:o,s:s,s:b}", "id", (json_int_t)row->rowid,
                                        "name", row->name, "scopes", scopes, "experiments", exps,
                                        "created", created, "revoked", row->revoked));
        return 0;
    }
    printf("%-6" PRId64 " %-24s %-26s %-25s %-7s %s\n", row->rowid, row->name ? row->name : "-",
           row->scopes ? row->scopes : "", created, row->revoked ? "yes" : "no",
           row->experiments ? row->experiments : "*");
    return 0;
}

static int keys_list(const struct cli_args *a)
{
    struct list_ctx l = {NULL, 0};
    struct store *st = open_db(a->db, 1);
    if (st == NULL)
        return 1;
    if (a->json)
        l.rows = json_array();
    else
        printf("%-6s %-24s %-26s %-25s %-7s %s\n", "ID", "NAME", "SCOPES", "CREATED", "REVOKED",
               "EXPERIMENTS");
    int rc = store_load_keys(st, list_row, &l);
    store_close(st);
    if (rc != STORE_OK) {
        json_decref(l.rows);
        fprintf(stderr, "banditd: cannot read the keys: %s\n", store_strerror(rc));
        return 1;
    }
    if (l.rows != NULL) {
        char *s = json_dumps(l.rows, JSON_INDENT(2));
        if (s != NULL)
            printf("%s\n", s);
        free(s);
        json_decref(l.rows);
    }
    return 0;
}

static int keys_revoke(const struct cli_args *a)
{
    char *end;
    if (a->id == NULL) {
        fprintf(stderr, "banditd: keys revoke needs the key's ID (see keys list)\n");
        return 2;
    }
    errno = 0;
    long long id = strtoll(a->id, &end, 10);
    if (errno != 0 || *end != '\0' || id <= 0) {
        fprintf(stderr, "banditd: not a key ID: %s\n", a->id);
        return 2;
    }
    struct store *st = open_db(a->db, 1);
    if (st == NULL)
        return 1;
    char actor[160], rid[64];
    cli_caller(actor, sizeof actor, rid, sizeof rid);
    int rc = store_key_revoke(st, id, actor, rid);
    store_close(st);
    if (rc == STORE_ERR_NOTFOUND) {
        fprintf(stderr, "banditd: no key %lld\n", id);
        return 1;
    }
    if (rc != STORE_OK) {
        fprintf(stderr, "banditd: cannot revoke key %lld: %s\n", id, store_strerror(rc));
        return 1;
    }
    fprintf(stderr, "revoked key %lld; a running daemon refuses it from its next request.\n", id);
    return 0;
}

static int backup(const struct cli_args *a)
{
    char err[512];
    struct stat sb;
    if (a->to == NULL || a->id != NULL) {
        usage();
        return 2;
    }
    if (stat(a->to, &sb) == 0) {
        fprintf(stderr, "banditd: %s exists; a backup never overwrites a file\n", a->to);
        return 1;
    }
    struct store *st = open_db(a->db, 1);
    if (st == NULL)
        return 1;
    int rc = store_backup(st, a->to, err, sizeof err);
    store_close(st);
    if (rc != STORE_OK) {
        fprintf(stderr, "banditd: %s\n", err);
        return 1;
    }
    fprintf(stderr, "backed up %s to %s\n", a->db, a->to);
    return 0;
}

/* Recompute the hash chain of each experiment's log (exp/audit.c): exit
 * 0 when every one verifies, 1 when one is broken (its first broken record
 * named), 2 when one cannot be read. */
static int audit_verify(const struct cli_args *a)
{
    struct store *st = open_db(a->db, 1);
    if (st == NULL)
        return 2;
    int rc = exp_audit_verify(st, a->id, stdout);
    store_close(st);
    return rc;
}

int cli_main(int argc, char **argv)
{
    struct cli_args a;
    if (argc < 1 || !cli_is_command(argv[0])) {
        usage();
        return 2;
    }
    if (strcmp(argv[0], "backup") == 0) {
        if (parse(&a, argc - 1, argv + 1) != 0) {
            usage();
            return 2;
        }
        return backup(&a);
    }
    if (strcmp(argv[0], "audit") == 0) {
        if (argc < 2 || strcmp(argv[1], "verify") != 0 || parse(&a, argc - 2, argv + 2) != 0) {
            usage();
            return 2;
        }
        return audit_verify(&a);
    }
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "create") != 0 && strcmp(sub, "list") != 0 && strcmp(sub, "revoke") != 0) {
        fprintf(stderr, "banditd: keys: unknown command %s\n", sub);
        usage();
        return 2;
    }
    if (parse(&a, argc - 2, argv + 2) != 0) {
        usage();
        return 2;
    }
    if (strcmp(sub, "revoke") != 0 && a.id != NULL) {
        fprintf(stderr, "banditd: unexpected argument %s\n", a.id);
        return 2;
    }
    if (strcmp(sub, "create") == 0)
        return keys_create(&a);
    if (strcmp(sub, "list") == 0)
        return keys_list(&a);
    return keys_revoke(&a);
}
