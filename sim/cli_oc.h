/*
 * cli_oc.h — `bandit-sim oc`: the operating characteristics of a design
 * file (a create body) on scenarios, as JSON or Markdown (docs/simulator.md,
 * "Operating characteristics"). Part of the bandit-sim program, not of the
 * simulator library: it reads the design with the daemon's own parser and
 * hashes it with the daemon's own function (exp/config.h, exp/exp.h), so the
 * program links exp/ while libsim stays below it.
 */
#ifndef BANDITD_SIM_CLI_OC_H
#define BANDITD_SIM_CLI_OC_H

/* argv[0] is "oc". Returns the exit status: 0, 2 (usage, bad input), 1 (the
 * simulation or the output failed). */
int cli_oc_main(int argc, char **argv);

#endif
