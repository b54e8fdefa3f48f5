# Sourced by the browser suites (test_dashboard.sh, test_page.sh) with
# $here (this folder) and $root set: installs what they need (Debian's
# chromium, chromium-driver, fonts, Node.js and npm when missing, through
# scripts/install-deps.sh --test; playwright-core from the committed
# lockfile, only when node_modules does not already hold that version).
# A failed install is one failing test, said in TAP, not a silent pass.
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
    # installs without the network. Two suites may install at once: npm
    # ci removes node_modules first, so one at a time (flock).
    if ! flock "$here/package-lock.json" \
        npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2; then
        echo "not ok 1 - npm ci in tests/web (playwright-core $want)"
        exit 1
    fi
fi
