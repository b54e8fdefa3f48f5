#!/bin/sh
# valgrind-banditd.sh — banditd under valgrind's memcheck, for the HTTP
# harness (BANDITD_BIN=tests/support/valgrind-banditd.sh; `make valgrind`).
# The daemon is $BANDITD_VG_BIN (default build/banditd, the optimised build
# with -g: valgrind cannot run a sanitizer build). Options come from
# VALGRIND_OPTS (valgrind reads it itself), e.g. --error-exitcode=1
# --leak-check=full: an error or a leak then makes the exit status non-zero,
# which the harness's tdaemon_stop reports to the test.
exec valgrind -q "${BANDITD_VG_BIN:-build/banditd}" "$@"
