#!/bin/sh
# The README's walkthrough ("One experiment in a minute") works when copied
# (tests/run.sh suite, TAP): its shell blocks run as they are written, in
# bash (the loop uses $RANDOM), against a daemon on a free port instead of
# localhost:8080. The reward of the first block must be accepted (a literal
# assignment id in the README gave 404). The simulation loop runs for at
# most LOOP_S seconds (default 30; each turn spawns five processes, which a
# loaded machine makes slow): every reward it sends must be accepted, and if
# it ends, it ends with the experiment stopped at its confidence target.
# Env: BANDITD_BIN (default build/banditd), TEST_OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BANDITD_BIN:-$root/build/banditd}
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
echo "1..4"

# The fenced sh blocks of the section, numbered: $work/block.N.
awk -v dir="$work" '
    /^## / { on = ($0 == "## One experiment in a minute") }
    on && /^```sh$/ { n++; f = dir "/block." n; inb = 1; next }
    inb && /^```$/ { inb = 0; next }
    inb { print > f }
' "$root/README.md"
if [ ! -s "$work/block.1" ] || [ ! -s "$work/block.2" ]; then
    echo "not ok 1 - README.md has the walkthrough's two sh blocks"
    exit 1
fi
echo "ok 1 - README.md has the walkthrough's two sh blocks"

mkfifo "$work/out"
"$bin" --listen 127.0.0.1:0 --db "$work/readme.db" >"$work/out" 2>"$work/stderr" &
pid=$!
read -r line <"$work/out"
addr=${line#listening on }
case $line in
listening\ on\ *) ;;
*)
    echo "not ok 2 - the daemon started ($line)"
    sed 's/^/# /' "$work/stderr"
    exit 1
    ;;
esac
# Keep reading its stdout so that it never blocks on a full pipe.
cat "$work/out" >/dev/null &

run() { # run block N with the daemon's address, for at most $2 s; output in $work/out.N
    sed "s/localhost:8080/$addr/g" "$work/block.$1" >"$work/run.$1"
    timeout "$2" bash "$work/run.$1" >"$work/out.$1" 2>&1
}
# A counter of /metrics: metric ($1, with its labels) value, 0 when absent.
metric() {
    curl -s "http://$addr/metrics" | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}

run 1 60
if grep -q '"status":"accepted"' "$work/out.1" && ! grep -q '"status":404' "$work/out.1"; then
    echo "ok 2 - the first block's reward is accepted"
else
    echo "not ok 2 - the first block's reward is accepted"
    sed 's/^/# /' "$work/out.1"
fi

before=$(metric 'banditd_rewards_total{result="accepted"}')
run 2 "${LOOP_S:-30}"
rc=$?
last=$(tail -n 1 "$work/out.2")
accepted=$(($(metric 'banditd_rewards_total{result="accepted"}') - before))
refused=0
for r in duplicate conflict unknown expired error; do
    refused=$((refused + $(metric "banditd_rewards_total{result=\"$r\"}")))
done
if [ "$rc" -eq 0 ] && printf '%s' "$last" | grep -q '"stopped":true' &&
    printf '%s' "$last" | grep -q '"stop_reason":"glr"' && [ "$refused" -eq 0 ]; then
    echo "ok 3 - the simulation loop ends with a confidence stop ($accepted rewards, all accepted)"
elif [ "$rc" -eq 124 ] && [ "$accepted" -ge 10 ] && [ "$refused" -eq 0 ]; then
    echo "ok 3 - the simulation loop's rewards are all accepted ($accepted; cut after ${LOOP_S:-30} s)"
else
    echo "not ok 3 - the simulation loop: exit $rc, $accepted rewards accepted, $refused refused"
    tail -n 5 "$work/out.2" | cut -c1-300 | sed 's/^/# /'
fi

kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
if [ "$rc" -eq 0 ]; then
    echo "ok 4 - the daemon exits 0 on SIGTERM"
else
    echo "not ok 4 - the daemon exits 0 on SIGTERM (exit $rc)"
fi
# The daemon's stderr, for tests/run.sh's sanitizer scan.
sed 's/^/# /' "$work/stderr" | grep -E 'Sanitizer|runtime error' || true
