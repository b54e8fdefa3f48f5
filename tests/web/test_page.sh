#!/bin/sh
# The JavaScript client in a page of another origin, in Chromium, for
# tests/run.sh: installs what it needs (prepare.sh), then runs page.mjs,
# which prints TAP. Chromium runs with --no-sandbox (CI runs as root).
#
# Env: BANDITD_BIN (the daemon to test; default build/banditd).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/prepare.sh"
BANDITD_BIN=${BANDITD_BIN:-$root/build/banditd} exec timeout -k 5 140 node "$here/page.mjs"
