/*
 * tpg.c — a throwaway PostgreSQL server for the tests (tpg.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/support/tpg.h"
#include "tests/support/tstore.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[64];     /* the server's directory; "" until started */
static char g_bin[256];    /* its binaries */
static int g_started;      /* under g_mu */
static unsigned g_next_db; /* databases made so far, under g_mu */

/* The newest installed PostgreSQL's bin directory into out. */
static int find_bin(char *out, size_t len)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/pg_ctl", 0, NULL, &g) != 0 || g.gl_pathc == 0)
        return -1;
    /* the versions sort as strings: good enough for 10…99 */
    snprintf(out, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    char *slash = strrchr(out, '/');
    if (slash != NULL)
        *slash = '\0';
    return 0;
}

/* Run argv (as the postgres user when we are root), output to log; its
 * exit status, or −1. */
static int run_as_pg(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (geteuid() == 0) {
            char *args[32];
            size_t n = 0;
            args[n++] = "runuser";
            args[n++] = "-u";
            args[n++] = "postgres";
            args[n++] = "--";
            for (size_t i = 0; argv[i] != NULL && n < 31; i++)
                args[n++] = argv[i];
            args[n] = NULL;
            execvp("runuser", args);
        } else {
            execv(argv[0], argv);
        }
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The watchdog: blocks until every write end of the pipe is closed (the
 * test process ended), then stops the server and removes its directory. */
static void watchdog(int rfd, char *pg_ctl, char *data)
{
    char c;
    /* a fresh process group: a test killing its own group leaves us be */
    setsid();
    while (read(rfd, &c, 1) != 0 && errno == EINTR)
        ;
    char *stop[] = {pg_ctl, "stop", "-D", data, "-m", "immediate", "-w", NULL};
    char log[128];
    snprintf(log, sizeof log, "%s/stop.log", g_dir);
    run_as_pg(stop, log);
    ttree_remove(g_dir);
    _exit(0);
}

static void tail_log(const char *path, char *err, size_t errlen)
{
    char buf[4096];
    tread_file(path, buf, sizeof buf);
    size_t n = strlen(buf);
    snprintf(err + strlen(err), errlen - strlen(err), ": %s", n > 600 ? buf + n - 600 : buf);
}

static int start_locked(char *err, size_t errlen)
{
    char data[96], log[96], conf[128], initdb[300], pg_ctl[300];
    int pfd[2];

    err[0] = '\0';
    if (find_bin(g_bin, sizeof g_bin) != 0) {
        snprintf(err, errlen,
                 "no PostgreSQL under /usr/lib/postgresql (make test-deps installs it)");
        return -1;
    }
    ttmpdir(g_dir, sizeof g_dir);
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (pw == NULL || chown(g_dir, pw->pw_uid, pw->pw_gid) != 0) {
            snprintf(err, errlen, "no postgres user to run the server as");
            return -1;
        }
    }
    chmod(g_dir, 0755);
    snprintf(data, sizeof data, "%s/data", g_dir);
    snprintf(log, sizeof log, "%s/server.log", g_dir);
    snprintf(initdb, sizeof initdb, "%s/initdb", g_bin);
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", g_bin);
    char *init[] = {initdb,    "-D", data,   "-A",         "trust",     "-U",
                    "banditd", "-E", "UTF8", "--locale=C", "--no-sync", NULL};
    char ilog[128];
    snprintf(ilog, sizeof ilog, "%s/initdb.log", g_dir);
    if (run_as_pg(init, ilog) != 0) {
        snprintf(err, errlen, "initdb failed");
        tail_log(ilog, err, errlen);
        return -1;
    }
    /* the socket in our directory only; no TCP */
    snprintf(conf, sizeof conf, "%s/postgresql.conf", data);
    FILE *f = fopen(conf, "a");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", conf, strerror(errno));
        return -1;
    }
    fprintf(f,
            "listen_addresses = ''\nunix_socket_directories = '%s'\nport = 5432\n"
            "max_connections = 300\nshared_buffers = 32MB\nfsync = on\n"
            "synchronous_commit = on\n",
            g_dir);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: %s", conf, strerror(errno));
        return -1;
    }
    /* the watchdog first: from here on the server never outlives us */
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(pfd[1]);
        watchdog(pfd[0], pg_ctl, data);
    }
    close(pfd[0]); /* pfd[1] stays open (close-on-exec) until we exit */
    char *start[] = {pg_ctl, "start", "-D", data, "-l", log, "-w", "-t", "60", NULL};
    char slog[128];
    snprintf(slog, sizeof slog, "%s/start.log", g_dir);
    if (run_as_pg(start, slog) != 0) {
        snprintf(err, errlen, "pg_ctl start failed");
        tail_log(log, err, errlen);
        return -1;
    }
    g_started = 1;
    return 0;
}

int tpg_start(char *err, size_t errlen)
{
    pthread_mutex_lock(&g_mu);
    int rc = g_started ? 0 : start_locked(err, errlen);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

static void uri_of(const char *db, char *uri, size_t len)
{
    snprintf(uri, len, "postgresql://banditd@/%s?host=%s", db, g_dir);
}

void tpg_new_db(char *uri, size_t len)
{
    char err[1024], admin[160], sql[64], name[32];
    if (tpg_start(err, sizeof err) != 0)
        fail_msg("PostgreSQL: %s", err);
    pthread_mutex_lock(&g_mu);
    snprintf(name, sizeof name, "t%u_%ld", ++g_next_db, (long)getpid());
    pthread_mutex_unlock(&g_mu);
    uri_of("postgres", admin, sizeof admin);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (tpg_exec(admin, sql) != 0)
        fail_msg("PostgreSQL: cannot create database %s", name);
    uri_of(name, uri, len);
}

int tpg_exec(const char *uri, const char *sql)
{
    PGconn *c = PQconnectdb(uri);
    int rc = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        ExecStatusType st = PQresultStatus(r);
        rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
        if (rc != 0)
            fprintf(stderr, "tpg: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
    } else {
        fprintf(stderr, "tpg: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    return rc;
}

int64_t tpg_count(const char *uri, const char *sql)
{
    PGconn *c = PQconnectdb(uri);
    int64_t n = -1;
    if (PQstatus(c) != CONNECTION_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
        PQfinish(c);
        fail_msg("tpg: %s", msg);
    }
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        fail_msg("tpg: %s", msg);
    }
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return n;
}
