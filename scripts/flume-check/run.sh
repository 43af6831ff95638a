#!/usr/bin/env bash
# What yieldprof costs on code we did not write: flume 0.11 with its wait paths annotated.
# Copies the crate from the cargo registry into DIR/raw and DIR/annotated (outside this
# repository: its code is not ours to commit), annotates the second against REPO's
# yieldprof (default settings), then, raw and annotated in turn: the crate's own test
# suite (release, timed without the build) and the throughput of crossbeam-check's
# bench.rs (made flume's); prints the ratios, then one annotated suite run that writes
# its reports (size and time to write), and the tests that fail annotated only.
# Usage: scripts/flume-check/run.sh [DIR] [REPO]   (default /tmp/flume-check, this
# checkout). ROUNDS (suite, default 3) and BENCH_ROUNDS (default 5) rounds of each;
# FLUME_SPIN=on builds both copies with flume's `spin` feature (its own yield/sleep lock
# loop in `wait_lock` instead of std's Mutex).
# Needs the registry (or its cache) and minutes: not part of the tests or .ci/run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=flume-bench
# shellcheck source=../check-lib.sh
. "$here/../check-lib.sh"
check_args /tmp/flume-check "$@"

src=$(registry_src flume 0.11)
copy_crate flume "$src"
if [ "${FLUME_SPIN:-off}" = on ]; then
    for v in raw annotated; do
        grep -q '^default = \[$' "$dir/$v/Cargo.toml" || { echo "flume's Cargo.toml has no default features list" >&2; exit 1; }
        sed -i 's/^default = \[$/&\n    "spin",/' "$dir/$v/Cargo.toml"
    done
fi

# crossbeam-check's bench, on flume (the same API for what it calls).
sed 's/crossbeam_channel::/flume::/; s/crossbeam-channel/flume/' "$here/../crossbeam-check/bench.rs" > "$dir/bench.rs"

annotate() { annotate_in "$dir/annotated" "$@"; }
# The channel's lock: std's Mutex by default; with the `spin` feature, try_lock ten times
# with a yield between, then sleep 2^i ns (at most ~1 ms) and again.
annotate lib.rs "fn wait_lock<T>(lock: &Spinlock<T>) -> SpinlockGuard<T> {"
annotate lib.rs "fn wait_lock<'a, T>(lock: &'a Mutex<T>) -> MutexGuard<'a, T> {"
# The blocking paths: take the channel's lock, then (queue empty / full) push a hook and
# wait on it in the do_block closure (Hook::wait_*), which parks in SyncSignal.
annotate lib.rs '    fn send<S: Signal, R: From<Result<(), TrySendTimeoutError<T>>>>('
annotate lib.rs '    fn recv<S: Signal, R: From<Result<T, TryRecvTimeoutError>>>('
# A hook's wait: lock its slot, check, park on its signal, again; rendezvous sends and
# receives wait here for the other side.
annotate lib.rs '    pub fn wait_recv(&self, abort: &AtomicBool) -> Option<T> {'
annotate lib.rs '    pub fn wait_deadline_recv(&self, abort: &AtomicBool, deadline: Instant) -> Result<T, bool> {'
annotate lib.rs '    pub fn wait_send(&self, abort: &AtomicBool) {'
annotate lib.rs '    pub fn wait_deadline_send(&self, abort: &AtomicBool, deadline: Instant) -> Result<(), bool> {'
# The park itself.
annotate signal.rs '    pub fn wait(&self) { thread::park(); }'
annotate signal.rs '    pub fn wait_timeout(&self, dur: Duration) { thread::park_timeout(dur); }'
# Selector: park (with a deadline or not), then the spinlock on the signalled tokens.
annotate select.rs '    fn wait_inner(mut self, deadline: Option<Instant>) -> Option<T> {'
run_check 11 flume "$dir/bench.rs" "$dir"/annotated/src/*.rs
