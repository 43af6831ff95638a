#!/usr/bin/env bash
# rayon-core with its wait loops annotated, read against truth (docs/thread-pools.md).
# Copies rayon-core 1.13 from the cargo registry into DIR (outside this repository: its
# code is not ours to commit), inserts the annotations, builds main.rs against it with
# [patch.crates-io] and runs it; reports and flame graphs go to DIR/out.
# Then the bench: each workload (outside threads blocking on the pool with `install`, and
# the three phases), annotated rayon-core against the registry's (a second build without
# the patch), 7 trials each alternating.
# Usage: [FRAMES=0] scripts/rayon-check/run.sh [DIR]   (default /tmp/rayon-check)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=${1:-/tmp/rayon-check}
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/rayon-core-1.13.* | head -1)
rm -rf "$dir/rayon-core" && mkdir -p "$dir/check/src" "$dir/raw/src" && cp -r "$src" "$dir/rayon-core"
cd "$dir/rayon-core"
# yieldprof as a dependency, then one attribute (or frame) per wait loop.
sed -i "0,/^\[dependencies.crossbeam-deque\]/s||[dependencies.yieldprof]\npath = \"$repo/yieldprof\"\n\n&|" Cargo.toml
sed -i 's|^    unsafe fn wait_until_cold(|    #[yieldprof::instrument_wait]\n&|' src/registry.rs
# FRAMES=0: the jobs left without a frame (their time is the wait's `[unmarked work]`).
if [ "${FRAMES:-1}" != 0 ]; then
    sed -i 's|^        job.execute();|        yieldprof::frame!("rayon job");\n&|' src/registry.rs
fi
sed -i 's|^    pub(super) fn no_work_found(|    #[yieldprof::instrument_wait]\n&|; s|^    fn sleep(|    #[yieldprof::instrument_wait]\n&|' src/sleep/mod.rs
sed -i 's|^    pub(super) fn wait_and_reset(&self) {|    #[yieldprof::instrument_wait]\n&|; s|^    pub(super) fn wait(&self) {|    #[yieldprof::instrument_wait]\n&|' src/latch.rs
n=$(grep -c 'yieldprof::' src/registry.rs src/sleep/mod.rs src/latch.rs | awk -F: '{s+=$2} END {print s}')
want=$((5 + (${FRAMES:-1} != 0)))
[ "$n" = "$want" ] || { echo "expected $want annotations, made $n: rayon-core changed?" >&2; exit 1; }
cd "$dir/check"
cp "$here/main.rs" src/main.rs
cat > Cargo.toml <<TOML
[package]
name = "rayon-check"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
rayon = "=1.12.0"
yieldprof = { path = "$repo/yieldprof" }
# The leaves' CPU clock (truth on the CPU, beside the wall).
libc = "0.2"

[patch.crates-io]
rayon-core = { path = "../rayon-core" }

[profile.release]
debug = 1

[workspace]
TOML
cargo build --release --offline
OUT="$dir/out" ./target/release/rayon-check
# The raw build: the same program against the registry's rayon-core.
cp src/main.rs "$dir/raw/src/main.rs"
sed '/^\[patch.crates-io\]/,/^rayon-core/d' Cargo.toml > "$dir/raw/Cargo.toml"
(cd "$dir/raw" && cargo build --release --offline)
for w in install join-tree par-iter serial-then-parallel; do
    for _ in 1 2 3 4 5 6 7; do
        echo "annotated $(./target/release/rayon-check bench $w)"
        echo "raw $("$dir/raw/target/release/rayon-check" bench $w)"
    done | sort -k1,1 -k2n | awk -v w="$w" '{v[$1]=v[$1]" "$2; n[$1]++; a[$1, n[$1]]=$2}
        END {m1=a["annotated",4]; m2=a["raw",4];
             printf "%s, ns, 7 trials: annotated%s; raw%s\nmedians %d / %d ns: %.2fx (raw/annotated %.3fx)\n",
                    w, v["annotated"], v["raw"], m1, m2, m1/m2, m2/m1}'
done
