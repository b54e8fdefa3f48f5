#!/bin/sh
# The dashboard suite for tests/run.sh: installs what it needs (Debian's
# chromium, chromium-driver, fonts, Node.js and npm when missing, through
# scripts/install-deps.sh --test; playwright-core from the committed
# lockfile, only when node_modules does not already hold that version),
# then runs dashboard.mjs, which prints TAP. A failed install is one
# failing test, said in TAP, not a silent pass.
#
# Env: BANDITD_BIN (the daemon to test; default build/banditd), TEST_OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! "$root/scripts/install-deps.sh" --test >&2; then
    echo "not ok 1 - install the browser test's packages (scripts/install-deps.sh --test)"
    exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 18 ]; then
    echo "not ok 1 - Node.js 18 or later is needed (found: $(node --version 2>&1))"
    exit 1
fi
cd "$here" || exit 1
want=$(node -p 'require("./package-lock.json").packages["node_modules/playwright-core"].version')
have=$(node -p 'require("./node_modules/playwright-core/package.json").version' 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    # --prefer-offline: the npm cache answers when it can, so a warm machine
    # installs without the network.
    if ! npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2; then
        echo "not ok 1 - npm ci in tests/web (playwright-core $want)"
        exit 1
    fi
fi
BANDITD_BIN=${BANDITD_BIN:-$root/build/banditd} TEST_OUT=${TEST_OUT:-$root/tests/out} \
    exec timeout -k 5 170 node "$here/dashboard.mjs"
