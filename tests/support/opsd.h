/*
 * opsd.h — a small black-box harness for the operations tests (keys, TLS,
 * metrics, limits): start the real daemon (BANDITD_BIN, default
 * build/asan/banditd) on a throwaway database, talk to it with libcurl, run
 * the `banditd keys|backup` subcommands, stop it and check it exits 0.
 *
 * Everything a test needs to see is kept: the daemon's stderr goes to a
 * file in the test's directory (opsd_stderr reads it back), a reply keeps
 * its status, body and headers.
 *
 * Beside harness.h (the shared HTTP harness), this one covers what the
 * access and operations tests need and harness.h does not: a database
 * prepared before the start (keys created first), the exit status of a
 * start the daemon refuses, a start without the default --listen, HTTPS
 * with a CA file, and the `keys`/`backup` subcommands with standard input.
 * A daemon dies with its test process (PR_SET_PDEATHSIG).
 */
#ifndef BANDITD_TESTS_OPSD_H
#define BANDITD_TESTS_OPSD_H

#include <stddef.h>
#include <sys/types.h>

struct opsd {
    char dir[128];    /* temporary directory, removed by opsd_cleanup */
    char db[512];     /* dir/banditd.db unless given */
    char errlog[512]; /* daemon stderr */
    const char *bin;
    pid_t pid; /* 0 when not running */
    unsigned port;
    int tls; /* talk https, verify against cafile */
    char cafile[512];
};

struct opsd_reply {
    long status; /* 0: transport failure (see curl_error) */
    char *body;  /* NUL-terminated, owned */
    size_t len;
    char *headers; /* raw header block, owned */
    char curl_error[256];
};

/* A fresh directory and database path (no daemon yet). 0 or −1. */
int opsd_init(struct opsd *d);
/* Start the daemon with --listen 127.0.0.1:0 --db d->db plus args
 * (NULL-terminated, may be NULL); waits for "listening on". Returns 0, or the
 * daemon's exit status + 1000 when it exited instead (then d->pid = 0), or −1. */
int opsd_start(struct opsd *d, const char *const *args);
/* Like opsd_start but without the default --listen (the args give one). */
int opsd_start_raw(struct opsd *d, const char *const *args);
/* SIGTERM and wait; returns the exit status (−1 when killed by a signal). */
int opsd_stop(struct opsd *d);
/* Send a signal to the running daemon. */
void opsd_signal(struct opsd *d, int sig);
/* Stop if running, remove the directory. */
void opsd_cleanup(struct opsd *d);

/* One request. key: API key or NULL; body: JSON text or NULL (sent as
 * application/json). extra_header: one "Name: value" line or NULL. Fills r
 * (free with opsd_reply_free). Returns r->status. */
long opsd_request(struct opsd *d, const char *method, const char *path, const char *key,
                  const char *body, const char *extra_header, struct opsd_reply *r);
void opsd_reply_free(struct opsd_reply *r);
/* Value of header name in r (case-insensitive), copied into buf; 1 found. */
int opsd_reply_header(const struct opsd_reply *r, const char *name, char *buf, size_t len);

/* Run `banditd ARGS...` (NULL-terminated) to completion, stdout captured into
 * out (NUL-terminated, truncated to outlen), stderr into err. Returns the
 * exit status, or −1. */
int opsd_run(const struct opsd *d, const char *const *args, char *out, size_t outlen, char *err,
             size_t errlen);
/* Same, with input as standard input (empty when NULL; opsd_run's is empty). */
int opsd_run_input(const struct opsd *d, const char *const *args, const char *input, char *out,
                   size_t outlen, char *err, size_t errlen);
/* `banditd keys create --db d->db --scope SCOPE`: the key into key (≥ 64
 * bytes). 0 or −1. */
int opsd_create_key(const struct opsd *d, const char *scope, char *key, size_t len);

/* The daemon's stderr so far (new buffer, NUL-terminated). */
char *opsd_stderr(const struct opsd *d);

#endif
