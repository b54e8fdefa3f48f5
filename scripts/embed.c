/*
 * embed.c — build-time generator: turns the dashboard's built files
 * (the files in web/dist) into a C source holding them as byte arrays, with their
 * content types and ETags, so that the daemon serves its dashboard from its
 * own binary (no files to install, no network at run time).
 *
 *   embed OUT.c FILE...
 *
 * A file NAME.gz beside NAME is NAME's gzip-encoded variant (the daemon
 * sends it to clients that accept gzip). The table is sorted by name (pass
 * the files sorted) and ends with a zeroed sentinel; its contract is
 * api/web_assets.h. The output is written to OUT.c.tmp and renamed, so an
 * interrupted build never leaves half a file behind. Unknown file types are
 * an error: every asset must go out with a deliberate Content-Type.
 *
 * Written in C (built by the Makefile with the host compiler) so that a
 * fresh machine needs nothing beyond the build's own packages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMBED_MAX_FILES 256
#define EMBED_MAX_FILE (16u << 20)  /* 16 MiB per asset */
#define EMBED_MAX_TOTAL (64u << 20) /* 64 MiB in all */
#define EMBED_MAX_NAME 128

struct file {
    char name[EMBED_MAX_NAME];
    unsigned char *data;
    size_t len;
    int is_gz_of; /* index of the file this one gzips, or -1 */
    int gz;       /* index of this file's gzip variant, or -1 */
};

static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
    {".gz", "application/gzip"},
};

/* Content type by extension, or NULL. */
static const char *type_of(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t e = strlen(types[i].ext);
        if (n > e && strcmp(name + n - e, types[i].ext) == 0)
            return types[i].type;
    }
    return NULL;
}

/* FNV-1a, 64 bits: a validator, not a defence (the content is ours). */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int name_ok(const char *s)
{
    if (*s == '\0' || *s == '.')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == '_'))
            return 0;
    return 1;
}

/* Reads path into f (data malloc'd, owned by f). 0 or -1 with a message. */
static int load(const char *path, struct file *f)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strlen(base) >= sizeof f->name || !name_ok(base)) {
        fprintf(stderr, "embed: %s: name must be [A-Za-z0-9._-], under %d characters\n", path,
                EMBED_MAX_NAME);
        return -1;
    }
    snprintf(f->name, sizeof f->name, "%s", base);
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        perror(path);
        return -1;
    }
    int rc = -1;
    size_t cap = 1 << 16;
    f->data = malloc(cap);
    f->len = 0;
    if (f->data == NULL)
        goto out;
    for (;;) {
        if (f->len == cap) {
            if (cap >= EMBED_MAX_FILE) {
                fprintf(stderr, "embed: %s is larger than %u bytes\n", path, EMBED_MAX_FILE);
                goto out;
            }
            unsigned char *nd = realloc(f->data, cap * 2);
            if (nd == NULL)
                goto out;
            f->data = nd;
            cap *= 2;
        }
        size_t n = fread(f->data + f->len, 1, cap - f->len, fp);
        f->len += n;
        if (n == 0)
            break;
    }
    if (ferror(fp)) {
        perror(path);
        goto out;
    }
    rc = 0;
out:
    fclose(fp);
    return rc;
}

static void emit_bytes(FILE *out, const char *sym, const struct file *f)
{
    /* A zero-length array is not C: an empty file still gets one byte. */
    fprintf(out, "static const unsigned char %s[%zu] = {", sym, f->len ? f->len : 1);
    if (f->len == 0)
        fputs("0", out);
    for (size_t i = 0; i < f->len; i++)
        fprintf(out, "%s0x%02x,", i % 16 == 0 ? "\n    " : "", f->data[i]);
    fputs("\n};\n", out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: embed OUT.c FILE...\n");
        return 2;
    }
    size_t n = (size_t)(argc - 2);
    if (n > EMBED_MAX_FILES) {
        fprintf(stderr, "embed: more than %d files\n", EMBED_MAX_FILES);
        return 1;
    }
    static struct file files[EMBED_MAX_FILES];
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (load(argv[i + 2], &files[i]) != 0)
            return 1;
        total += files[i].len;
        if (total > EMBED_MAX_TOTAL) {
            fprintf(stderr, "embed: more than %u bytes in all\n", EMBED_MAX_TOTAL);
            return 1;
        }
        files[i].is_gz_of = -1;
        files[i].gz = -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(files[j].name, files[i].name) == 0) {
                fprintf(stderr, "embed: two files named %s\n", files[i].name);
                return 1;
            }
        if (type_of(files[i].name) == NULL) {
            fprintf(stderr, "embed: %s: unknown file type (add it to scripts/embed.c)\n",
                    argv[i + 2]);
            return 1;
        }
    }
    /* Pair NAME.gz with NAME. */
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(files[i].name);
        if (l < 4 || strcmp(files[i].name + l - 3, ".gz") != 0)
            continue;
        for (size_t j = 0; j < n; j++)
            if (strlen(files[j].name) == l - 3 &&
                strncmp(files[j].name, files[i].name, l - 3) == 0) {
                files[i].is_gz_of = (int)j;
                files[j].gz = (int)i;
            }
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
        fprintf(stderr, "embed: output path too long\n");
        return 1;
    }
    FILE *out = fopen(tmp, "w");
    if (out == NULL) {
        perror(tmp);
        return 1;
    }
    fputs("/* Generated by scripts/embed.c from web/dist: do not edit. */\n"
          "#include \"api/web_assets.h\"\n\n",
          out);
    for (size_t i = 0; i < n; i++) {
        char sym[32];
        snprintf(sym, sizeof sym, "asset_%zu", i);
        emit_bytes(out, sym, &files[i]);
    }
    fprintf(out, "\nconst struct web_asset web_assets[%zu] = {\n", n + 1);
    for (size_t i = 0; i < n; i++) {
        if (files[i].is_gz_of >= 0)
            continue; /* served through its plain twin */
        const struct file *f = &files[i];
        fprintf(out, "    {\"%s\", \"%s\", asset_%zu, %zu, \"\\\"%016llx\\\"\", ", f->name,
                type_of(f->name), i, f->len, (unsigned long long)fnv1a(f->data, f->len));
        if (f->gz >= 0) {
            const struct file *g = &files[f->gz];
            /* A strong validator per representation (RFC 9110 8.8.3). */
            fprintf(out, "asset_%d, %zu, \"\\\"%016llx-gz\\\"\"},\n", f->gz, g->len,
                    (unsigned long long)fnv1a(f->data, f->len));
        } else {
            fputs("NULL, 0, NULL},\n", out);
        }
    }
    fputs("    {NULL, NULL, NULL, 0, NULL, NULL, 0, NULL},\n};\n", out);
    int bad = ferror(out);
    if (fclose(out) != 0 || bad) {
        perror(tmp);
        (void)remove(tmp);
        return 1;
    }
    if (rename(tmp, argv[1]) != 0) {
        perror(argv[1]);
        (void)remove(tmp);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        free(files[i].data);
    return 0;
}
