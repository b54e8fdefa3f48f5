/*
 * cli.h — the daemon binary's offline subcommands, run instead of serving:
 *
 *   banditd keys create --db PATH --scope SCOPE[,SCOPE] [--name NAME]
 *   banditd keys list --db PATH [--json]
 *   banditd keys revoke ID --db PATH
 *   banditd backup --db PATH --to FILE
 *   banditd audit verify --db PATH [ID]   (exp/audit.c: exit 0, 1 broken, 2 unreadable)
 *
 * Each also takes --config FILE (its `db` setting). They open the database
 * next to a running daemon (SQLite WAL: one writer at a time, the busy
 * timeout covers the overlap); a running daemon picks key changes up for
 * its next request (api/auth.h).
 */
#ifndef BANDITD_SERVER_CLI_H
#define BANDITD_SERVER_CLI_H

/* 1 when argv[0] names a subcommand. */
int cli_is_command(const char *arg);
/* Run the subcommand argv[0] with its arguments; returns the exit status
 * (0 done, 1 failed, 2 usage error). Messages go to stderr; the new key and
 * listings to stdout. */
int cli_main(int argc, char **argv);

#endif
