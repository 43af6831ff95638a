# Shared by scripts/*-check/run.sh: a crate we did not write, raw and annotated, run in
# turn (its test suite, then a bench), and what the annotated runs showed. The caller
# sets bench (the bench's binary name; its source is bench.rs beside the caller), calls
# check_args, copies and annotates each variant v (raw, annotated) into $dir/$v, and
# calls build_variant for each: its test binaries are then listed one a line in
# $dir/bins-$v, the bench is $dir/target-$v/release/$bench, which prints
# `case<TAB>rate` a line.
lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The arguments, [DIR] [REPO] (DIR defaults to $1, REPO to this checkout), and the rounds
# (ROUNDS suite rounds, default 3; BENCH_ROUNDS bench rounds, default 5).
check_args() {
    local default=$1
    shift
    mkdir -p "${1:-$default}"
    dir=$(cd "${1:-$default}" && pwd)
    repo=$(cd "${2:-$lib_dir/..}" && pwd)
    rounds=${ROUNDS:-3}
    bench_rounds=${BENCH_ROUNDS:-5}
    [ -f "$repo/yieldprof/Cargo.toml" ] || { echo "no yieldprof crate under $repo" >&2; exit 1; }
}

# The newest source of crate $1 at version $2.x in the cargo registry, fetched first
# through a crate of one dependency where the registry has none.
registry_src() {
    newest() { ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$1"-"$2".* 2>/dev/null | sort -V | tail -1 || true; }
    if [ -z "$(newest "$1" "$2")" ]; then
        mkdir -p "$dir/fetch-$1/src" && echo 'fn main() {}' > "$dir/fetch-$1/src/main.rs"
        printf '[package]\nname = "fetch"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n%s = "%s"\n\n[workspace]\n' "$1" "$2" \
            > "$dir/fetch-$1/Cargo.toml"
        (cd "$dir/fetch-$1" && cargo fetch >&2)
    fi
    newest "$1" "$2"
}

# copy_crate NAME SRC: copies the crate at SRC into $dir/raw and $dir/annotated (the
# previous run's copies, reports and logs gone), each its own workspace; the second
# depends on $repo's yieldprof with default settings.
copy_crate() {
    echo "$1: $2; yieldprof: $repo ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    rm -rf "$dir/raw" "$dir/annotated" "$dir/out" "$dir/logs"
    cp -r "$2" "$dir/raw" && cp -r "$2" "$dir/annotated" && chmod -R u+w "$dir/raw" "$dir/annotated"
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
}

# run_check SITES CRATE BENCH FILES...: checks that FILES (the annotated copy's sources)
# hold SITES annotations, gives each test file that allows unsafe code a guard from
# before main (so YIELDPROF_WRITE_AT_EXIT=on writes its report when the binary exits:
# libtest has no hook of its own), builds both variants against CRATE with the bench
# source BENCH, then runs the rounds and the report.
run_check() {
    local expected=$1 crate=$2 bench_src=$3 sites t v
    shift 3
    sites=$(cat "$@" | grep -c 'yieldprof::instrument_wait')
    [ "$sites" = "$expected" ] || { echo "expected $expected annotations, made $sites" >&2; exit 1; }
    for t in "$dir"/annotated/tests/*.rs; do
        grep -q 'forbid(unsafe_code)' "$t" || append_init_guard "$t"
    done
    for v in raw annotated; do
        build_variant "$v" "$(printf '[dependencies]\n%s = { path = "../%s" }' "$crate" "$v")" "$bench_src"
    done
    echo "test binaries: $(wc -l < "$dir/bins-raw") raw, $(wc -l < "$dir/bins-annotated") annotated; $sites sites annotated"
    compare msg/s
    report_and_failures
}

# Builds variant $1 before anything is timed: its test binaries (listed) and the bench,
# whose Cargo.toml takes $2 as its dependency sections; $3 is the bench's source.
build_variant() {
    local v=$1
    (cd "$dir/$v" && CARGO_TARGET_DIR="$dir/target-$v" cargo test --release --tests --no-run >"$dir/build-$v.log" 2>&1) ||
        { echo "the $v test build failed against $repo: $dir/build-$v.log" >&2; grep -A12 '^error' "$dir/build-$v.log" >&2; exit 1; }
    (cd "$dir/$v" && CARGO_TARGET_DIR="$dir/target-$v" cargo test --release --tests --no-run --message-format=json 2>/dev/null) |
        grep -o '"executable":"[^"]*"' | cut -d'"' -f4 > "$dir/bins-$v"
    mkdir -p "$dir/bench-$v/src" && cp "$3" "$dir/bench-$v/src/main.rs"
    printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n%s\n\n[workspace]\n' "$bench" "$2" \
        > "$dir/bench-$v/Cargo.toml"
    (cd "$dir/bench-$v" && CARGO_TARGET_DIR="$dir/target-$v" cargo build --release 2>>"$dir/build-$v.log") \
        || { echo "the $v bench build failed: $dir/build-$v.log" >&2; exit 1; }
}

# The timed runs use yieldprof's defaults, whatever the caller's environment says.
for v in $(env | grep -o '^YIELDPROF[A-Z_]*' || true); do unset "$v"; done

# Every test binary of variant $1, in turn, from the crate's folder as cargo runs them;
# logs in $2, "wall user sys" in $2/time.
suite() {
    mkdir -p "$2"
    /usr/bin/time -f "%e %U %S" -o "$2/time" bash -c 'cd "$1"; out=$2; shift 2
        for b; do "$b" > "$out/$(basename "$b").log" 2>&1 || true; done' _ "$dir/$1" "$2" $(cat "$dir/bins-$1")
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
med() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# The rounds, raw and annotated in turn, then the medians and their ratios; $1 names
# the bench's unit (msg/s, op/s).
compare() {
    local unit=$1 load_start load_end r v raw ann
    load_start=$(load)
    : > "$dir/bench.tsv"
    for r in $(seq "$rounds"); do
        for v in raw annotated; do
            suite "$v" "$dir/logs/$v-$r"
            echo "suite $v round $r: wall user sys $(cat "$dir/logs/$v-$r/time")"
        done
    done
    for r in $(seq "$bench_rounds"); do
        for v in raw annotated; do
            "$dir/target-$v/release/$bench" | sed "s/^/$v\t/" >> "$dir/bench.tsv"
        done
    done
    load_end=$(load)
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
        printf '%-34s %12.0f %12.0f %7.2fx\n' "$case ($unit)" "$raw" "$ann" "$(echo "$ann $raw" | awk '{print $1 / $2}')"
    done
}

# One more annotated run that writes each test binary's report at its exit, then the
# tests that failed in some round and those failing annotated only.
report_and_failures() {
    local sizes
    # Checked as the tests check theirs: a report that contradicts itself is not
    # written, and says why on stderr (shown below).
    YIELDPROF_WRITE_AT_EXIT=on YIELDPROF_SELF_CHECK=on YIELDPROF_OUT="$dir/out" \
        suite annotated "$dir/logs/report"
    grep -h 'contradicts itself' "$dir"/logs/report/*.log || true
    grep -ho 'yieldprof: wrote .*' "$dir"/logs/report/*.log > "$dir/logs/wrote" || true
    sizes=$(grep -o '[0-9.]* MB in [0-9.]* s' "$dir/logs/wrote" || true)
    echo
    echo "reports written by one annotated suite run (wall user sys $(cat "$dir/logs/report/time")):" \
        "$(wc -l < "$dir/logs/wrote") binaries, $(echo "$sizes" | awk '{mb += $1; s += $4} END {printf "%.1f MB in %.2f s", mb, s}')" \
        "(largest: $(echo "$sizes" | sort -g | tail -1)); files in $dir/out"
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
}

# The guard that makes a test binary write its report at exit (libtest has no hook of
# its own): a constructor that initialises from the environment, appended to file $1.
append_init_guard() {
    cat >> "$1" <<'RS'

#[used]
#[link_section = ".init_array"]
static YIELDPROF_GUARD: extern "C" fn() = {
    extern "C" fn init() {
        std::mem::forget(yieldprof::Options::from_env().init());
    }
    init
};
RS
}

# One attribute above the line that starts with $3 (indentation included) in $1/src/$2.
annotate_in() {
    local f="$1/src/$2" before after
    [ "$(grep -c "^$3" "$f")" = 1 ] || { echo "src/$2: '$3' does not match one line: the crate changed?" >&2; exit 1; }
    before=$(grep -c 'yieldprof::instrument_wait' "$f" || true)
    sed -i "s|^\( *\)$3|\1#[yieldprof::instrument_wait]\n&|" "$f"
    after=$(grep -c 'yieldprof::instrument_wait' "$f")
    [ "$after" = $((before + 1)) ] || { echo "src/$2: sed did not annotate '$3'" >&2; exit 1; }
}
