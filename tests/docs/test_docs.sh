#!/bin/sh
# The generated parts of docs/policies.md match the code (tests/run.sh
# suite, TAP): every registered policy has a section whose flags and
# parameter table are what `bandit-sim --list-policies` says, so the
# reference users read cannot drift from the registry. On failure: run
# `make docs-policies` (and write the prose of a new policy).
# Env: BANDIT_SIM_BIN (default build/bandit-sim), DOCS_TOOL_BIN (default
# build/scripts/docs-tool).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sim=${BANDIT_SIM_BIN:-$root/build/bandit-sim}
tool=${DOCS_TOOL_BIN:-$root/build/scripts/docs-tool}
echo "1..2"
if "$sim" --list-policies | "$tool" params "$root/docs/policies.md" --check 2>&1 | sed 's/^/# /'; then
    :
fi
if "$sim" --list-policies | "$tool" params "$root/docs/policies.md" --check 2>/dev/null; then
    echo "ok 1 - docs/policies.md parameter tables match bandit-sim --list-policies"
else
    echo "not ok 1 - docs/policies.md lags the policy registry: run make docs-policies"
fi
# The delay tables name every policy the registry has (make docs-delays).
missing=""
for p in $("$sim" --list-policies | "$tool" names); do
    grep -q "^| \`$p\` |" "$root/docs/policies.md" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "ok 2 - every policy has a row in the delay tables"
else
    echo "not ok 2 - no delay figures for:$missing (run make docs-delays)"
fi
