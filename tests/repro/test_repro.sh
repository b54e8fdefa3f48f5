#!/bin/sh
# Smoke test of the reproduction driver (the package scripts/repro/ behind
# scripts/repro.py, `make reproduce`) for tests/run.sh, printing TAP: one
# tiny case end to end (two simulations, their JSON results, a rendered
# markdown table, a gnuplot PNG), the result cache on a rerun, and the
# driver's statistics against values known in closed form. The full
# reproduction is `make reproduce`, not part of `make test`.
#
# Env: BANDIT_SIM_BIN (default build/bandit-sim).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sim=${BANDIT_SIM_BIN:-$root/build/bandit-sim}
dir=$(mktemp -d /tmp/test_repro_XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
echo "1..7"

drive() {
    python3 "$root/scripts/repro.py" --smoke --sim "${1:-$sim}" --out "$dir/out" --doc "$dir/r.md" \
        --img "$dir/img" >"$dir/log" 2>&1
}

if drive; then
    echo "ok 1 - the driver runs one tiny case"
else
    echo "not ok 1 - the driver runs one tiny case"
    sed 's/^/# /' "$dir/log"
fi

# The table: a header, then rows "| name | 12.0% [a%, b%] |" with the interval around the rate.
if grep -q '^| algorithm | ℓ(n) \[95% CI\] |$' "$dir/r.md" 2>/dev/null &&
    awk -F'|' '/^\| (Uniform|GapE)/ { n++; gsub(/[%\[\],]/, " ", $3); split($3, v, " ");
               if (!(v[2] <= v[1] && v[1] <= v[3])) bad = 1 } END { exit !(n == 2 && !bad) }' "$dir/r.md"; then
    echo "ok 2 - it renders a markdown table with rates inside their intervals"
else
    echo "not ok 2 - it renders a markdown table with rates inside their intervals"
    sed 's/^/# /' "$dir/r.md" 2>/dev/null
fi

n=$(ls "$dir/out/results/"*.json 2>/dev/null | wc -l)
if [ "$n" -eq 2 ] && python3 -c 'import json, sys
for p in sys.argv[1:]:
    r = json.load(open(p)); assert r["runs"] == 50 and 0 <= r["error_rate"] <= 1' "$dir/out/results/"*.json; then
    echo "ok 3 - each simulation leaves its bandit-sim JSON in the results directory"
else
    echo "not ok 3 - each simulation leaves its bandit-sim JSON in the results directory (found $n)"
fi

# A rerun with the same binary reuses the results: nothing new, same table.
cp "$dir/r.md" "$dir/r1.md"
touch -d '2000-01-01' "$dir/out/results/"*.json
if drive && cmp -s "$dir/r.md" "$dir/r1.md" &&
    [ -z "$(find "$dir/out/results" -name '*.json' -newermt '2000-01-02')" ]; then
    echo "ok 4 - a rerun is served from the cache with the same output"
else
    echo "not ok 4 - a rerun is served from the cache with the same output"
fi

# Statistics of the driver: T*(μ) of Garivier & Kaufmann's instance (≈ 990,
# the weights equalise every challenger's rate), Wilson and exact binomial
# values computed by hand, and a PNG when gnuplot is installed.
if PYTHONPATH="$root/scripts" python3 -c '
import math, repro
ts, w = repro.t_star([0.5, 0.45, 0.43, 0.4])
assert 985 < ts < 995, ts
assert abs(repro.inv_t_star_at([0.5, 0.45, 0.43, 0.4], w) - 1 / ts) < 1e-9 / ts
assert abs(sum(w) - 1) < 1e-12
lo, hi = repro.wilson(0, 10)
assert lo == 0 and abs(hi - 3.8414588 / 13.8414588) < 1e-6, hi   # z²/(n + z²) at k = 0
assert abs(repro.binom_sf(1, 10, 0.1) - (1 - 0.9 ** 10)) < 1e-12
assert abs(repro.binom_sf(10, 10, 0.5) - 0.5 ** 10) < 1e-15
assert repro.binom_sf(0, 5, 0.3) == 1 and repro.binom_sf(6, 5, 0.3) == 0
assert abs(repro.kl_delta(0.1) - 0.8 * math.log(9)) < 1e-12
' 2>"$dir/py.err" && { ! command -v gnuplot >/dev/null || [ -s "$dir/img/smoke.png" ]; }; then
    echo "ok 5 - T*(μ), Wilson and binomial helpers match closed forms; the plot is drawn"
else
    echo "not ok 5 - T*(μ), Wilson and binomial helpers match closed forms; the plot is drawn"
    sed 's/^/# /' "$dir/py.err"
fi

# The cache is per binary: a changed bandit-sim (here the same program with a
# byte appended, so another sha256) reruns every simulation instead of
# reusing the old results.
cp "$sim" "$dir/sim2" && printf '\n' >>"$dir/sim2"
if drive "$dir/sim2" && [ "$(ls "$dir/out/results/"*.json 2>/dev/null | wc -l)" -eq 4 ] &&
    [ "$(find "$dir/out/results" -name '*.json' -newermt '2000-01-02' | wc -l)" -eq 2 ]; then
    echo "ok 6 - a changed binary reruns the simulations (the cache key is the binary's hash)"
else
    echo "not ok 6 - a changed binary reruns the simulations (the cache key is the binary's hash)"
    sed 's/^/# /' "$dir/log"
fi

# The fixed-confidence prose is computed from the rows: with the proven GLR
# stops as measured, a δᶜ stop is the best proven rule and beats Track-and-Stop
# with its proven GLR; with those stops 0.3 times as long (a tighter proven
# rule), Track-and-Stop's proven GLR becomes the best and the text says so.
if python3 "$here/fc_reading.py" 1 >"$dir/fc1.md" 2>"$dir/fc.err" &&
    python3 "$here/fc_reading.py" 0.3 >"$dir/fc03.md" 2>>"$dir/fc.err" &&
    grep -q 'Best proven rule, δ = 0.1:\* [A-Za-z (π4)-]* with δᶜ' "$dir/fc1.md" &&
    grep -q 'at equal guarantee our best policy beats Track-and-Stop' "$dir/fc1.md" &&
    ! grep -q 'nothing of ours beats it' "$dir/fc1.md" &&
    grep -q 'Best proven rule, δ = 0.1:\* Track-and-Stop with GLR, proven threshold' "$dir/fc03.md" &&
    grep -q 'nothing of ours beats it' "$dir/fc03.md" &&
    grep -q 'already acts at or below' "$dir/fc03.md" && grep -q 'Offer it' "$dir/fc1.md"; then
    echo "ok 7 - the fixed-confidence reading follows the numbers (two sets of proven-rule stop times)"
else
    echo "not ok 7 - the fixed-confidence reading follows the numbers (two sets of proven-rule stop times)"
    sed 's/^/# /' "$dir/fc.err"
fi
