/*
 * pgserver.c — a throwaway PostgreSQL server for tests and benchmarks
 * (pgserver.h).
 */
#include "tests/support/pgserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[64];     /* the server's directory; "" until started */
static char g_bin[256];    /* its binaries */
static unsigned g_port;    /* its TCP port on 127.0.0.1 */
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
 * owning process ended), then stops the server and removes its directory. */
static void watchdog(int rfd, char *pg_ctl, char *data)
{
    char c, log[128];
    /* a fresh process group: a test killing its own group leaves us be */
    setsid();
    while (read(rfd, &c, 1) != 0 && errno == EINTR)
        ;
    char *stop[] = {pg_ctl, "stop", "-D", data, "-m", "immediate", "-w", NULL};
    snprintf(log, sizeof log, "%s/stop.log", g_dir);
    run_as_pg(stop, log);
    char *rm[] = {"/bin/rm", "-rf", g_dir, NULL};
    execv(rm[0], rm);
    _exit(0);
}

/* The last 600 bytes of the file at path appended to err. */
static void tail_log(const char *path, char *err, size_t errlen)
{
    char buf[601];
    size_t n = 0;
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fseek(f, -600, SEEK_END) != 0)
            rewind(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        (void)fclose(f); /* read only */
    }
    buf[n] = '\0';
    snprintf(err + strlen(err), errlen - strlen(err), ": %s", buf);
}

/* A TCP port of 127.0.0.1 free now (the kernel's choice), or 0. */
static unsigned free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t len = sizeof a;
    unsigned port = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Append text to the file at path; 0 or −1 with err. For pg_hba.conf the
 * line goes first instead (its first matching line decides). */
static int conf_add(const char *path, const char *text, int first, char *err, size_t errlen)
{
    char old[16384] = "";
    FILE *f;
    if (first && (f = fopen(path, "r")) != NULL) {
        size_t n = fread(old, 1, sizeof old - 1, f);
        (void)fclose(f); /* read only */
        old[n] = '\0';
    }
    f = fopen(path, first ? "w" : "a");
    int ok = f != NULL && fputs(text, f) >= 0 && fputs(old, f) >= 0;
    int saved = errno;
    if (f != NULL && fclose(f) != 0 && ok) { /* closed on every path */
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, errlen, "%s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

static int start_locked(char *err, size_t errlen)
{
    char data[96], log[96], conf[128], hba[128], initdb[300], pg_ctl[300], text[512];
    const char *tmp = getenv("TMPDIR");
    int pfd[2];

    err[0] = '\0';
    if (find_bin(g_bin, sizeof g_bin) != 0) {
        snprintf(err, errlen,
                 "no PostgreSQL under /usr/lib/postgresql (make test-deps installs it)");
        return -1;
    }
    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 32)
        tmp = "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/banditd-pg.XXXXXX", tmp);
    if (mkdtemp(g_dir) == NULL) {
        snprintf(err, errlen, "mkdtemp %s: %s", g_dir, strerror(errno));
        return -1;
    }
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
    /* the socket in our directory, and a port of 127.0.0.1 (chosen now: a
     * race with another process taking it is possible, and fails the start) */
    g_port = free_port();
    snprintf(conf, sizeof conf, "%s/postgresql.conf", data);
    snprintf(text, sizeof text,
             "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nport = %u\n"
             "max_connections = 300\nshared_buffers = 32MB\nfsync = on\n"
             "synchronous_commit = on\npassword_encryption = 'scram-sha-256'\n",
             g_dir, g_port);
    snprintf(hba, sizeof hba, "%s/pg_hba.conf", data);
    if (g_port == 0 || conf_add(conf, text, 0, err, errlen) != 0 ||
        conf_add(hba, "host all " PGSERVER_PW_ROLE " 127.0.0.1/32 scram-sha-256\n", 1, err,
                 errlen) != 0) {
        if (err[0] == '\0')
            snprintf(err, errlen, "no free TCP port");
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

int pgserver_start(char *err, size_t errlen)
{
    pthread_mutex_lock(&g_mu);
    int rc = g_started ? 0 : start_locked(err, errlen);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

unsigned pgserver_tcp_port(void)
{
    return g_port;
}

static void uri_of(const char *db, char *uri, size_t len)
{
    snprintf(uri, len, "postgresql://banditd@/%s?host=%s&port=%u", db, g_dir, g_port);
}

int pgserver_new_db(char *uri, size_t len, char *err, size_t errlen)
{
    char admin[160], sql[64], name[32];
    if (pgserver_start(err, errlen) != 0)
        return -1;
    pthread_mutex_lock(&g_mu);
    snprintf(name, sizeof name, "t%u_%ld", ++g_next_db, (long)getpid());
    pthread_mutex_unlock(&g_mu);
    uri_of("postgres", admin, sizeof admin);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (pgserver_exec(admin, sql) != 0) {
        snprintf(err, errlen, "cannot create database %s", name);
        return -1;
    }
    uri_of(name, uri, len);
    return 0;
}

int pgserver_password_role(const char *db_uri, const char *pw)
{
    char sql[256];
    PGconn *c = PQconnectdb(db_uri);
    int rc = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        char *lit = PQescapeLiteral(c, pw, strlen(pw));
        if (lit != NULL) {
            snprintf(sql, sizeof sql,
                     "DROP ROLE IF EXISTS " PGSERVER_PW_ROLE "; CREATE ROLE " PGSERVER_PW_ROLE
                     " LOGIN PASSWORD %s; GRANT CREATE ON SCHEMA public TO " PGSERVER_PW_ROLE,
                     lit);
            PQfreemem(lit);
            rc = 0;
        }
    }
    PQfinish(c);
    return rc == 0 ? pgserver_exec(db_uri, sql) : -1;
}

int pgserver_exec(const char *uri, const char *sql)
{
    PGconn *c = PQconnectdb(uri);
    int rc = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        ExecStatusType st = PQresultStatus(r);
        rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
        if (rc != 0)
            fprintf(stderr, "pgserver: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
    } else {
        fprintf(stderr, "pgserver: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    return rc;
}
