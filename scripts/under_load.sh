#!/usr/bin/env bash
# The whole test suite under load (issue 26, item 9): runs the README's test command,
# `YIELDPROF_SELF_CHECK=on cargo test --workspace --no-fail-fast`, N times (default 3)
# while BUSY (default 4)
# busy-loop processes run alongside, and prints each run's passed/failed/ignored
# counts, summed over every test binary, and the binaries or tests that failed.
#
#   scripts/under_load.sh              # 3 runs, 4 busy loops
#   N=1 scripts/under_load.sh          # one run
#   BUSY=8 N=3 scripts/under_load.sh
#
# Each run's full output is kept in target/under-load/run-<i>.log. The busy loops are
# this script's own children, killed by their pids when it exits, however it exits.
# Exits non-zero when any run had a failure.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-3}
BUSY=${BUSY:-4}
LOGS="$ROOT/target/under-load"
mkdir -p "$LOGS"

pids=()
stop_busy() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null
    done
    pids=()
}
trap stop_busy EXIT
trap 'exit 130' INT TERM

# Build first, unloaded and untimed: the runs then measure the tests, not the compiler
# racing the busy loops (a cold build under 4 loops on 2 cores takes a long while).
(cd "$ROOT" && cargo test --workspace --no-run --quiet) || exit 1

for _ in $(seq "$BUSY"); do
    (while :; do :; done) &
    pids+=("$!")
done
echo "$(date -u '+%F %T') UTC: $BUSY busy loops (pids ${pids[*]}), $(nproc) cores, \
load $(cut -d' ' -f1-3 /proc/loadavg)"

failed_runs=0
for i in $(seq "$N"); do
    log="$LOGS/run-$i.log"
    start=$(date +%s)
    (cd "$ROOT" && YIELDPROF_SELF_CHECK=on cargo test --workspace --no-fail-fast) >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    # Each test binary prints one "test result:" line; sum them.
    read -r passed failed ignored < <(grep -E '^test result:' "$log" | awk '
        { for (i = 1; i <= NF; i++) {
              if ($(i) ~ /^passed;?$/) p += $(i - 1)
              if ($(i) ~ /^failed;?$/) f += $(i - 1)
              if ($(i) ~ /^ignored;?$/) g += $(i - 1) } }
        END { print p + 0, f + 0, g + 0 }')
    binaries=$(grep -cE '^test result:' "$log")
    echo "run $i/$N: exit $rc, $passed passed, $failed failed, $ignored ignored over \
$binaries test binaries, ${secs}s, load $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
        failed_runs=$((failed_runs + 1))
        grep -E '^test .* FAILED$|^error: test failed|^    [a-z_:]+$' "$log" | sed 's/^/  /' | head -40
    fi
done
stop_busy
echo "$failed_runs of $N runs had failures; logs in $LOGS"
[ "$failed_runs" -eq 0 ]
