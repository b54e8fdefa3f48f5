#!/bin/sh
# The JavaScript client (clients/js) for tests/run.sh: its .d.ts and
# operations against docs/openapi.json, and every operation against the
# real daemon (BANDITD_BIN), under Node's own test runner (TAP). Needs
# Node.js 18+ and npm (npm pack); nothing is downloaded (the client has no
# dependencies).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 18 ]; then
    echo "not ok 1 - Node.js 18 or later is needed (found: $(node --version 2>&1))"
    exit 1
fi
cd "$root/clients/js" || exit 1
BANDITD_BIN=${BANDITD_BIN:-$root/build/asan/banditd} \
    exec timeout -k 5 300 node --test --test-reporter=tap test/*.test.mjs
