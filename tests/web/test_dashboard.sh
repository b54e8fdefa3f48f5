#!/bin/sh
# The dashboard suite for tests/run.sh: installs what it needs (prepare.sh),
# then runs dashboard.mjs, which prints TAP.
#
# Env: BANDITD_BIN (the daemon to test; default build/banditd), TEST_OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/prepare.sh"
BANDITD_BIN=${BANDITD_BIN:-$root/build/banditd} TEST_OUT=${TEST_OUT:-$root/tests/out} \
    exec timeout -k 5 170 node "$here/dashboard.mjs"
