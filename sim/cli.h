/*
 * cli.h — what bandit-sim's commands share (sim/main.c, sim/cli_oc.c): the
 * one-line error that ends the program, and option values read whole and
 * checked. Part of the program, not of the simulator library.
 */
#ifndef BANDITD_SIM_CLI_H
#define BANDITD_SIM_CLI_H

#include <stdint.h>

/* "bandit-sim: <what>" on stderr, then exit(code). */
void cli_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* A decimal unsigned integer, the whole string, within [min, max]; else
 * cli_die(2) naming opt. */
uint64_t cli_u64(const char *opt, const char *s, uint64_t min, uint64_t max);

/* A finite number, the whole string; else cli_die(2) naming opt. */
double cli_double(const char *opt, const char *s);

#endif
