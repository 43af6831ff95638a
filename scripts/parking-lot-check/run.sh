#!/usr/bin/env bash
# What yieldprof costs and shows on a lock we did not write: parking_lot 0.12 and its
# parking_lot_core 0.9 with their wait loops annotated as a user would (docs/locks.md,
# "Tried on parking_lot"). Copies both crates from the cargo registry into DIR/raw and
# DIR/annotated (outside this repository: their code is not ours to commit), annotates
# the second against REPO's yieldprof (default settings), then, raw and annotated in
# turn: parking_lot's own tests (release, timed without the build) and the throughput of
# bench.rs; prints the ratios, then one annotated suite run that writes its reports, and
# the tests that fail annotated only.
# Usage: scripts/parking-lot-check/run.sh [DIR] [REPO]   (default /tmp/parking-lot-check,
# this checkout). ROUNDS (suite, default 3) and BENCH_ROUNDS (default 5) rounds of each.
# Needs the registry (or its cache) and minutes: not part of the tests or .ci/run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=lock-bench
# shellcheck source=../check-lib.sh
. "$here/../check-lib.sh"
check_args /tmp/parking-lot-check "$@"

lot=$(registry_src parking_lot 0.12) core=$(registry_src parking_lot_core 0.9)
echo "parking_lot: $lot; parking_lot_core: $core; yieldprof: $repo ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'))"
rm -rf "$dir/raw" "$dir/annotated" "$dir/core-raw" "$dir/core-annotated" "$dir/out" "$dir/logs"
for v in raw annotated; do
    cp -r "$lot" "$dir/$v" && cp -r "$core" "$dir/core-$v" && chmod -R u+w "$dir/$v" "$dir/core-$v"
    # Each variant's parking_lot on its own copy of the core, built alike.
    printf '\n[patch.crates-io]\nparking_lot_core = { path = "../core-%s" }\n\n[workspace]\n' "$v" >> "$dir/$v/Cargo.toml"
done
for c in annotated core-annotated; do
    printf '\n[dependencies.yieldprof]\npath = "%s/yieldprof"\n' "$repo" >> "$dir/$c/Cargo.toml"
done

# The waits of a contended lock: each slow path (spin, then park), its spins and yields,
# and the futex wait they park in.
lot_at() { annotate_in "$dir/annotated" "$@"; }
core_at() { annotate_in "$dir/core-annotated" "$@"; }
lot_at raw_mutex.rs '    fn lock_slow(&self, timeout: Option<Instant>) -> bool {'
lot_at raw_rwlock.rs '    fn lock_exclusive_slow(&self, timeout: Option<Instant>) -> bool {'
lot_at raw_rwlock.rs '    fn lock_shared_slow(&self, recursive: bool, timeout: Option<Instant>) -> bool {'
lot_at raw_rwlock.rs '    fn lock_upgradable_slow(&self, timeout: Option<Instant>) -> bool {'
lot_at raw_rwlock.rs '    fn wait_for_readers(&self, timeout: Option<Instant>, prev_value: usize) -> bool {'
lot_at condvar.rs '    fn wait_until_internal(&self, mutex: &RawMutex, timeout: Option<Instant>) -> WaitTimeoutResult {'
lot_at once.rs '    fn call_once_slow(&self, ignore_poison: bool, f: &mut dyn FnMut(OnceState)) {'
# parking_lot_core: the bucket lock of its parking table, the spin and yield steps of
# SpinWait, and the futex wait, marked by hand: a raw syscall no rule can know.
core_at word_lock.rs '    fn lock_slow(&self) {'
core_at spinwait.rs 'fn cpu_relax(iterations: u32) {'
core_at thread_parker/linux.rs 'pub fn thread_yield() {'
f="$dir/core-annotated/src/thread_parker/linux.rs"
sed -i 's#^\( *\)self\.futex_wait(\(None\|Some(ts)\));#\1yieldprof::wait!(park, self.futex_wait(\2));#' "$f"
[ "$(grep -c 'yieldprof::wait!(park' "$f")" = 2 ] || { echo "$f: the futex waits were not marked" >&2; exit 1; }
sites=$(cat "$dir"/annotated/src/*.rs "$dir"/core-annotated/src/*.rs "$dir"/core-annotated/src/*/*.rs |
    grep -c 'yieldprof::instrument_wait\|yieldprof::wait!')
[ "$sites" = 12 ] || { echo "expected 12 annotations, made $sites" >&2; exit 1; }
# Every test binary writes its report at its exit when YIELDPROF_WRITE_AT_EXIT=on: the
# lib's unit tests (most of parking_lot's tests) and the integration tests.
printf '\n#[cfg(test)]\nmod yieldprof_guard {' >> "$dir/annotated/src/lib.rs"
append_init_guard "$dir/annotated/src/lib.rs"
echo '}' >> "$dir/annotated/src/lib.rs"
for t in "$dir"/annotated/tests/*.rs; do append_init_guard "$t"; done

for v in raw annotated; do
    build_variant "$v" "$(printf '[dependencies]\nparking_lot = { path = "../%s" }\n\n[patch.crates-io]\nparking_lot_core = { path = "../core-%s" }' "$v" "$v")" "$here/bench.rs"
done
echo "test binaries: $(wc -l < "$dir/bins-raw") raw, $(wc -l < "$dir/bins-annotated") annotated; $sites sites annotated"

compare op/s
report_and_failures
