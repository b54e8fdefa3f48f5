#!/bin/sh
# Runs test binaries (cmocka, TAP output) and sums them: one line per suite,
# then one line "N passed, N failed" for everything. A binary that crashes or
# exits non-zero without reporting a failing test counts as one failure.
# Exit status: 0 only when nothing failed.
set -u
out_dir=${TEST_OUT:-tests/out}
mkdir -p "$out_dir"
total_pass=0
total_fail=0
for t in "$@"; do
    name=$(echo "$t" | sed 's|^build/asan/tests/||; s|^build/tests/||')
    log="$out_dir/$(echo "$name" | tr '/' '_').log"
    start=$(date +%s)
    CMOCKA_MESSAGE_OUTPUT=TAP "$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    pass=$(grep -c '^ok ' "$log")
    fail=$(grep -c '^not ok ' "$log")
    if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
        fail=1
        echo "  $name: exited with status $rc (see $log)"
    fi
    if [ "$fail" -gt 0 ]; then
        grep -A3 '^not ok ' "$log" | sed 's/^/    /'
        grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$log" | head -5 | sed 's/^/    /'
    fi
    printf '%-40s %4d passed, %d failed  (%ss)\n' "$name" "$pass" "$fail" "$secs"
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
