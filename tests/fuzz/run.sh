#!/bin/sh
# run.sh SECONDS TARGET... — run each libFuzzer target (build/fuzz/fuzz/fuzz_T)
# for SECONDS on a working corpus (build/fuzz/corpus/T, seeded from
# tests/fuzz/corpus/T) and report executions and coverage (libFuzzer's cov:
# covered edges, ft: features) per target in build/fuzz/report.md.
# A crash, leak or timeout is kept in build/fuzz/artifacts/ and makes the
# exit status 1.
set -u
secs=$1
shift
out=build/fuzz
mkdir -p "$out/artifacts"
report="$out/report.md"
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
    echo "## Fuzzing (make fuzz)"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); ${secs} s per target; load average $load."
    echo
    echo "| target | executions | exec/s | cov (edges) | ft (features) | corpus | result |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
} > "$report"
failed=0
for t in "$@"; do
    bin="$out/fuzz/fuzz_$t"
    work="$out/corpus/$t"
    seeds="tests/fuzz/corpus/$t"
    mkdir -p "$work"
    log="$out/$t.log"
    # -max_len: request bodies are capped at 1 MiB by the daemon; 64 KiB
    # explores the same code faster. -rss_limit_mb: a shared machine.
    "$bin" -max_total_time="$secs" -print_final_stats=1 -max_len=65536 -rss_limit_mb=1024 \
        -timeout=10 -dict=tests/fuzz/json.dict -artifact_prefix="$out/artifacts/$t-" \
        "$work" "$seeds" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
    result=ok
    if [ "$rc" -ne 0 ]; then
        result="FAILED (see $log)"
        failed=1
    fi
    echo "| $t | ${execs:-?} | ${eps:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $result |" >> "$report"
    echo "fuzz_$t: ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}: $result"
done
echo >> "$report"
cat "$report"
exit $failed
