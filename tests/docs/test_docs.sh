#!/bin/sh
# The generated parts of the docs match the code (tests/run.sh suite, TAP):
# every registered policy has a section in docs/policies.md whose flags and
# parameter table are what `bandit-sim --list-policies` says, so the
# reference users read cannot drift from the registry, and a row in each
# late-reward table of docs/measurements.md that applies to it. On failure:
# run `make docs-policies` (and write the prose of a new policy) or
# `make docs-delays` (`make docs-blocks`).
# Env: BANDIT_SIM_BIN (default build/bandit-sim), DOCS_TOOL_BIN (default
# build/scripts/docs-tool).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sim=${BANDIT_SIM_BIN:-$root/build/bandit-sim}
tool=${DOCS_TOOL_BIN:-$root/build/scripts/docs-tool}
policies=$root/docs/policies.md
measurements=$root/docs/measurements.md
echo "1..3"
if "$sim" --list-policies | "$tool" params "$policies" --check 2>&1 | sed 's/^/# /'; then
    :
fi
if "$sim" --list-policies | "$tool" params "$policies" --check 2>/dev/null; then
    echo "ok 1 - docs/policies.md parameter tables match bandit-sim --list-policies"
else
    echo "not ok 1 - docs/policies.md lags the policy registry: run make docs-policies"
fi

# block NAME: the text of <!-- generated:NAME --> ... <!-- /generated --> in
# docs/measurements.md (empty when there is none).
block() {
    awk -v b="<!-- generated:$1 -->" '$0 == b { on = 1; next } /^<!-- \/generated -->/ { on = 0 } on' \
        "$measurements"
}

# Each late-reward table names every policy docs_delays.sh would measure in
# it (the same flags), and only inside its generated block: rows of the
# hand-measured tables elsewhere in the file do not count.
list=$(mktemp)
trap 'rm -f "$list" "$list.md"' EXIT INT TERM
"$sim" --list-policies >"$list" 2>/dev/null
names() { "$tool" names "$@" <"$list"; }
missing=""
for tag in delays blocks; do
    fc=$(block $tag-fc)
    for p in $(names fixed_confidence '!control'); do
        printf '%s\n' "$fc" | grep -q "^| \`$p\` |" || missing="$missing $p ($tag, fixed confidence)"
    done
    fb=$(block $tag-fb)
    for p in $(names fixed_budget) $(names '!fixed_confidence' '!fixed_budget'); do
        printf '%s\n' "$fb" | grep -q "^| \`$p\` |" || missing="$missing $p ($tag, fixed budget)"
    done
done
if [ -n "$(names)" ] && [ -z "$missing" ]; then
    echo "ok 2 - every policy has its rows in the late-reward and block tables of docs/measurements.md"
else
    echo "not ok 2 - no late-reward or block figures for:$missing (run make docs-delays, docs-blocks)"
fi

# The generators can splice their tables in: docs-tool finds each block
# (they would stop on a missing one, minutes into their measurements). Tried
# on a copy.
absent=""
cp "$measurements" "$list.md"
for b in delays-fc delays-fb blocks-fc blocks-fb constraints-fc constraints-fb; do
    echo "table" | "$tool" splice "$list.md" "$b" 2>/dev/null || absent="$absent $b"
done
if [ -z "$absent" ]; then
    echo "ok 3 - docs/measurements.md has the blocks make docs-delays, docs-blocks and docs-constraints write"
else
    echo "not ok 3 - docs/measurements.md has no generated block:$absent"
fi
