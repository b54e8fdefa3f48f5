#!/bin/sh
# Runs test binaries (cmocka, TAP output) and sums them: one line per suite
# (passed, failed and skipped), then one line "N passed, N failed" for
# everything. A binary that crashes or exits non-zero without reporting a
# failing test counts as one failure. A skipped test (cmocka's skip(): it
# prints "not ok N # SKIP name"; TAP's "ok N # SKIP" alike) is neither passed
# nor failed. A sanitizer or valgrind report anywhere in a suite's log (the
# suite's own, or a daemon's stderr the harness copied in — a daemon killed
# with SIGKILL never gets to change an exit status) fails the suite too.
# TEST_WRAPPER, when set, is a command each binary runs under (valgrind).
# Exit status: 0 only when nothing failed.
set -u
out_dir=${TEST_OUT:-tests/out}
mkdir -p "$out_dir"
total_pass=0
total_fail=0
total_skip=0
reports='ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|==[0-9]+== (Invalid (read|write|free)|Conditional jump|Use of uninitialised|Syscall param|Mismatched free|Source and destination overlap|[0-9,]+ bytes in [0-9,]+ blocks are (definitely|indirectly) lost)'
for t in "$@"; do
    name=$(echo "$t" | sed 's|^build/[a-z]*/tests/||; s|^build/tests/||')
    log="$out_dir/$(echo "$name" | tr '/' '_').log"
    start=$(date +%s)
    # shellcheck disable=SC2086 # TEST_WRAPPER is a command line (make valgrind)
    CMOCKA_MESSAGE_OUTPUT=TAP ${TEST_WRAPPER:-} "$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    skip=$(grep -c '^\(not \)\{0,1\}ok [0-9]* *# *SKIP' "$log")
    pass=$(grep '^ok ' "$log" | grep -vc '^ok [0-9]* *# *SKIP')
    fail=$(grep '^not ok ' "$log" | grep -vc '^not ok [0-9]* *# *SKIP')
    if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
        fail=1
        echo "  $name: exited with status $rc (see $log)"
    fi
    if grep -qE "$reports" "$log" && [ "$fail" -eq 0 ]; then
        fail=1
        echo "  $name: sanitizer or valgrind report (see $log)"
    fi
    if [ "$fail" -gt 0 ]; then
        grep -A3 '^not ok ' "$log" | grep -v '# *SKIP' | sed 's/^/    /'
        grep -E "$reports" "$log" | head -5 | sed 's/^/    /'
    fi
    printf '%-40s %4d passed, %d failed, %d skipped  (%ss)\n' "$name" "$pass" "$fail" "$skip" \
        "$secs"
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    total_skip=$((total_skip + skip))
done
[ "$total_skip" -gt 0 ] && echo "($total_skip skipped: see the suites above)"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
