#!/usr/bin/env bash
# What yieldprof costs on code we did not write: crossbeam-channel 0.5 with its wait loops
# annotated (docs/cost.md, "Tried on crossbeam-channel"). Copies the crate from the cargo
# registry into DIR/raw and DIR/annotated (outside this repository: its code is not ours
# to commit), annotates the second against REPO's yieldprof (default settings), then,
# raw and annotated in turn: the crate's own test suite (release, timed without the
# build) and the throughput of bench.rs; prints the ratios, then one annotated suite run
# that writes its reports (size and time to write), and the tests that fail annotated only.
# Usage: scripts/crossbeam-check/run.sh [DIR] [REPO]   (default /tmp/crossbeam-check, this
# checkout). ROUNDS (suite, default 3) and BENCH_ROUNDS (default 5) rounds of each.
# Needs the registry (or its cache) and minutes: not part of the tests or .ci/run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=xbeam-bench
# shellcheck source=../check-lib.sh
. "$here/../check-lib.sh"
check_args /tmp/crossbeam-check "$@"

src=$(registry_src crossbeam-channel 0.5)
copy_crate crossbeam-channel "$src"

annotate() { annotate_in "$dir/annotated" "$@"; }
# Backoff loops on a contended slot or a block being installed or written.
annotate flavors/array.rs '    fn start_send(&self, token: &mut Token) -> bool {'
annotate flavors/array.rs '    fn start_recv(&self, token: &mut Token) -> bool {'
annotate flavors/list.rs '    fn wait_write(&self) {'
annotate flavors/list.rs '    fn wait_next(&self) -> \*mut Block<T> {'
annotate flavors/list.rs '    fn start_send(&self, token: &mut Token) -> bool {'
annotate flavors/list.rs '    fn start_recv(&self, token: &mut Token) -> bool {'
annotate flavors/zero.rs '    fn wait_ready(&self) {'
annotate context.rs '    pub fn wait_packet(&self) -> \*mut () {'
# The blocking paths: snooze, then register and park in Context::wait_until.
annotate flavors/array.rs '    pub(crate) fn send('
annotate flavors/array.rs '    pub(crate) fn recv(&self, deadline: Option<Instant>)'
annotate flavors/list.rs '    pub(crate) fn recv(&self, deadline: Option<Instant>)'
annotate flavors/zero.rs '    pub(crate) fn send('
annotate flavors/zero.rs '    pub(crate) fn recv(&self, deadline: Option<Instant>)'
annotate context.rs '    pub fn wait_until(&self, deadline: Option<Instant>) -> Selected {'
annotate select.rs 'fn run_select('
annotate select.rs 'fn run_ready('
# Timers: at and tick sleep themselves; never (and at without a deadline) in sleep_until.
annotate flavors/at.rs '    pub(crate) fn recv(&self, deadline: Option<Instant>)'
annotate flavors/tick.rs '    pub(crate) fn recv(&self, deadline: Option<Instant>)'
annotate utils.rs 'pub(crate) fn sleep_until('
# SyncWaker's lock, taken by every blocking operation and by a send that finds waiters.
annotate waker.rs '    pub(crate) fn register(&self, oper: Operation, cx: &Context) {'
annotate waker.rs '    pub(crate) fn unregister(&self, oper: Operation) -> Option<Entry> {'
annotate waker.rs '    pub(crate) fn notify(&self) {'
# No guard in a file that forbids unsafe code (select_macro.rs): `link_section` is
# unsafe, and its tests stay as written; that binary records and writes nothing.
run_check 22 crossbeam-channel "$here/bench.rs" "$dir"/annotated/src/*.rs "$dir"/annotated/src/flavors/*.rs
