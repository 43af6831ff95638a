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
mkdir -p "${1:-/tmp/crossbeam-check}"
dir=$(cd "${1:-/tmp/crossbeam-check}" && pwd)
repo=$(cd "${2:-$here/../..}" && pwd)
rounds=${ROUNDS:-3}
bench_rounds=${BENCH_ROUNDS:-5}
[ -f "$repo/yieldprof/Cargo.toml" ] || { echo "no yieldprof crate under $repo" >&2; exit 1; }
# The timed runs use yieldprof's defaults, whatever the caller's environment says.
for v in $(env | grep -o '^YIELDPROF[A-Z_]*' || true); do unset "$v"; done

find_src() { ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/crossbeam-channel-0.5.* 2>/dev/null | sort -V | tail -1 || true; }
src=$(find_src)
if [ -z "$src" ]; then
    mkdir -p "$dir/fetch/src" && echo 'fn main() {}' > "$dir/fetch/src/main.rs"
    printf '[package]\nname = "fetch"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ncrossbeam-channel = "0.5"\n\n[workspace]\n' > "$dir/fetch/Cargo.toml"
    (cd "$dir/fetch" && cargo fetch)
    src=$(find_src)
fi
echo "crossbeam-channel: $src; yieldprof: $repo ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'))"
rm -rf "$dir/raw" "$dir/annotated" "$dir/out" "$dir/logs"
cp -r "$src" "$dir/raw" && cp -r "$src" "$dir/annotated" && chmod -R u+w "$dir/raw" "$dir/annotated"
printf '\n[workspace]\n' >> "$dir/raw/Cargo.toml"
cat >> "$dir/annotated/Cargo.toml" <<TOML

[dependencies.yieldprof]
path = "$repo/yieldprof"

# The summary's advice for a dev build; release optimises it anyway.
[profile.dev.package.yieldprof]
opt-level = 3
debug-assertions = false

[workspace]
TOML

# One attribute above the line that starts with $2 (indentation included) in src/$1.
annotate() {
    local f="$dir/annotated/src/$1" before after
    [ "$(grep -c "^$2" "$f")" = 1 ] || { echo "src/$1: '$2' does not match one line: crossbeam-channel changed?" >&2; exit 1; }
    before=$(grep -c 'yieldprof::instrument_wait' "$f" || true)
    sed -i "s|^\( *\)$2|\1#[yieldprof::instrument_wait]\n&|" "$f"
    after=$(grep -c 'yieldprof::instrument_wait' "$f")
    [ "$after" = $((before + 1)) ] || { echo "src/$1: sed did not annotate '$2'" >&2; exit 1; }
}
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
sites=$(cat "$dir"/annotated/src/*.rs "$dir"/annotated/src/flavors/*.rs | grep -c 'yieldprof::instrument_wait')
[ "$sites" = 22 ] || { echo "expected 22 annotations, made $sites" >&2; exit 1; }
# Each test binary holds a guard from before main, so YIELDPROF_WRITE_AT_EXIT=on writes
# its report when the binary exits (libtest has no hook of its own). Not in a file that
# forbids unsafe code (select_macro.rs): `link_section` is unsafe, and its tests stay as
# written; that binary records and writes nothing.
for t in "$dir"/annotated/tests/*.rs; do
    grep -q 'forbid(unsafe_code)' "$t" && continue
    cat >> "$t" <<'RS'

#[used]
#[link_section = ".init_array"]
static YIELDPROF_GUARD: extern "C" fn() = {
    extern "C" fn init() {
        std::mem::forget(yieldprof::Options::from_env().init());
    }
    init
};
RS
done

# The builds, before anything is timed: test binaries (listed) and the bench.
for v in raw annotated; do
    (cd "$dir/$v" && CARGO_TARGET_DIR="$dir/target-$v" cargo test --release --tests --no-run >"$dir/build-$v.log" 2>&1) ||
        { echo "the $v test build failed against $repo: $dir/build-$v.log" >&2; grep -A12 '^error' "$dir/build-$v.log" >&2; exit 1; }
    (cd "$dir/$v" && CARGO_TARGET_DIR="$dir/target-$v" cargo test --release --tests --no-run --message-format=json 2>/dev/null) |
        grep -o '"executable":"[^"]*"' | cut -d'"' -f4 > "$dir/bins-$v"
    mkdir -p "$dir/bench-$v/src" && cp "$here/bench.rs" "$dir/bench-$v/src/main.rs"
    printf '[package]\nname = "xbeam-bench"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n[dependencies]\ncrossbeam-channel = { path = "../%s" }\n\n[workspace]\n' "$v" \
        > "$dir/bench-$v/Cargo.toml"
    (cd "$dir/bench-$v" && CARGO_TARGET_DIR="$dir/target-$v" cargo build --release 2>>"$dir/build-$v.log") \
        || { echo "the $v bench build failed: $dir/build-$v.log" >&2; exit 1; }
done
echo "test binaries: $(wc -l < "$dir/bins-raw") raw, $(wc -l < "$dir/bins-annotated") annotated; $sites sites annotated"

# Every test binary of variant $1, in turn, from the crate's folder as cargo runs them;
# logs in $2, "wall user sys" in $2/time.
suite() {
    mkdir -p "$2"
    /usr/bin/time -f "%e %U %S" -o "$2/time" bash -c 'cd "$1"; out=$2; shift 2
        for b; do "$b" > "$out/$(basename "$b").log" 2>&1 || true; done' _ "$dir/$1" "$2" $(cat "$dir/bins-$1")
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
load_start=$(load)
for r in $(seq "$rounds"); do
    for v in raw annotated; do
        suite "$v" "$dir/logs/$v-$r"
        echo "suite $v round $r: wall user sys $(cat "$dir/logs/$v-$r/time")"
    done
done
for r in $(seq "$bench_rounds"); do
    for v in raw annotated; do
        "$dir/target-$v/release/xbeam-bench" | sed "s/^/$v\t/" >> "$dir/bench.tsv"
    done
done
load_end=$(load)

# Medians of the suite's wall and CPU (user + sys), and of each case's messages/s.
med() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
wall() { cat "$dir"/logs/"$1"-*/time | awk '{print $1}' | med; }
cpu() { cat "$dir"/logs/"$1"-*/time | awk '{print $2 + $3}' | med; }
echo
echo "load average (1, 5, 15 min): $load_start at the start, $load_end at the end"
printf '%-34s %12s %12s %8s\n' "median of $rounds suite / $bench_rounds bench rounds" raw annotated ratio
for what in wall cpu; do
    raw=$($what raw) ann=$($what annotated)
    printf '%-34s %11.1fs %11.1fs %7.2fx\n' "test suite $what (s)" "$raw" "$ann" "$(echo "$ann $raw" | awk '{print $1 / $2}')"
done
cut -f2 "$dir/bench.tsv" | awk '!seen[$0]++' | while IFS= read -r case; do
    raw=$(awk -F'\t' -v c="$case" '$1 == "raw" && $2 == c {print $3}' "$dir/bench.tsv" | med)
    ann=$(awk -F'\t' -v c="$case" '$1 == "annotated" && $2 == c {print $3}' "$dir/bench.tsv" | med)
    printf '%-34s %12.0f %12.0f %7.2fx\n' "$case (msg/s)" "$raw" "$ann" "$(echo "$ann $raw" | awk '{print $1 / $2}')"
done

# One more annotated run that writes each test binary's report at its exit.
YIELDPROF_WRITE_AT_EXIT=on YIELDPROF_OUT="$dir/out" suite annotated "$dir/logs/report"
grep -ho 'yieldprof: wrote .*' "$dir"/logs/report/*.log > "$dir/logs/wrote" || true
sizes=$(grep -o '[0-9.]* MB in [0-9.]* s' "$dir/logs/wrote" || true)
echo
echo "reports written by one annotated suite run (wall user sys $(cat "$dir/logs/report/time")):" \
    "$(wc -l < "$dir/logs/wrote") binaries, $(echo "$sizes" | awk '{mb += $1; s += $4} END {printf "%.1f MB in %.2f s", mb, s}')" \
    "(largest: $(echo "$sizes" | sort -g | tail -1)); files in $dir/out"

# Tests that failed in some round, by binary, and those failing annotated only.
failed() { grep -H ' \.\.\. FAILED$' "$@" 2>/dev/null |
    sed 's|.*/\([^/-]*\)-[0-9a-f]*\.log:test \(.*\) \.\.\. FAILED|\1::\2|' | sort | uniq -c || true; }
nores() { for l in "$@"; do grep -q '^test result:' "$l" || echo "  no result line: $l"; done; }
counts() { for d in "$@"; do printf '  %s: %s\n' "$(basename "$d")" "$(grep -h '^test result' "$d"/*.log |
    awk '{p += $4; f += $6} END {print p " passed, " f " failed"}')"; done; }
echo "tests per run:"; counts "$dir"/logs/raw-* "$dir"/logs/annotated-* "$dir/logs/report"
echo "failed raw (times, over $rounds rounds):"
failed "$dir"/logs/raw-*/*.log; nores "$dir"/logs/raw-*/*.log
echo "failed annotated (times, over $rounds rounds and the report run):"
failed "$dir"/logs/annotated-*/*.log "$dir"/logs/report/*.log; nores "$dir"/logs/annotated-*/*.log "$dir"/logs/report/*.log
echo "failing annotated only: $(comm -13 <(failed "$dir"/logs/raw-*/*.log | awk '{print $2}' | sort) \
    <(failed "$dir"/logs/annotated-*/*.log "$dir"/logs/report/*.log | awk '{print $2}' | sort) | tr '\n' ' ')"
