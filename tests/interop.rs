//! The files yieldprof writes load in the tools users already have:
//! - `protoc --decode perftools.profiles.Profile` (against the published schema,
//!   tests/interop/profile.proto) reads `<name>.pb.gz`, and its samples give exactly
//!   the stacks and values of `<name>.folded`, for wall time and for calls;
//! - `go tool pprof` (the parser Pyroscope's and Parca's ingestion use) reads it and
//!   sums to the same totals;
//! - `inferno-flamegraph` renders `<name>.folded` with every count;
//! - speedscope's own importer (npm `speedscope`, run headless under Node by
//!   tests/interop/speedscope-import.mjs) loads both files with the same totals;
//! - continuous-mode `.pb.gz` deltas decode and add up to the run's totals;
//! - speedscope's importer loads `<name>.trace.json` (the timeline) as trace events:
//!   one profile per thread, every episode's site a frame.
//!
//! Each test needs an outside tool, so each is `#[ignore]`d with the tool it needs:
//! `cargo test` lists them as ignored, never as passed. `.ci/run` installs the tools and
//! runs them with `cargo test --test interop -- --ignored`, where a missing tool fails
//! the test with the command that installs it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;
use yieldprof::report::Metric;
use yieldprof::{Kind, Session};

/// `program` if it runs (`probe` are arguments that make it print its version); a
/// failure that names the install command otherwise.
fn tool(program: &str, probe: &[&str], install: &str) -> PathBuf {
    let runs = Command::new(program)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(runs, "`{program}` does not run: {install}");
    PathBuf::from(program)
}

fn protoc() -> PathBuf {
    tool(
        "protoc",
        &["--version"],
        "apt-get install -y protobuf-compiler",
    )
}

/// Runs `cmd`, fails the test on a non-zero exit, returns stdout.
fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

#[yieldprof::instrument_wait]
fn interop_backoff(spins: u32) {
    for _ in 0..spins {
        std::hint::spin_loop();
    }
    std::thread::yield_now();
    std::thread::sleep(Duration::from_micros(20));
}

fn interop_serve(requests: u32) {
    yieldprof::frame!("interop_serve");
    for _ in 0..requests {
        interop_backoff(50);
    }
}

/// One run's files, written once for every test of this binary.
struct Run {
    dir: PathBuf,
    /// `<dir>/interop.folded`, as `Profile::write` (and so the guard) wrote it.
    folded: BTreeMap<String, u64>,
    /// Which pprof value the folded file carries (0 wall, 1 calls).
    folded_index: usize,
    /// The same profile's stacks by number of calls.
    calls: BTreeMap<String, u64>,
    episodes: u64,
    /// Counter totals of the run's threads, by pprof sample type name, for the
    /// counters they count; `exact` if no figure was estimated.
    counters: BTreeMap<&'static str, u64>,
    exact: bool,
}

fn folded_map(lines: &str) -> BTreeMap<String, u64> {
    yieldprof::report::parse_folded(lines)
        .expect("a well-formed folded file")
        .into_iter()
        .collect()
}

fn the_run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let session = Session::this_thread();
        session.scope(|s| {
            for n in [7, 11] {
                s.spawn(move || interop_serve(n));
            }
        });
        interop_backoff(3);
        let report = session.finish();
        let dir = std::env::temp_dir().join(format!("yieldprof-interop-{}", std::process::id()));
        let written = report
            .write(&dir, "interop")
            .expect("the profile is written");
        assert!(written.contains(&dir.join("interop.pb.gz")), "{written:?}");
        let text = std::fs::read_to_string(dir.join("interop.folded")).unwrap();
        let folded_index = match yieldprof::Options::from_env().metric {
            Metric::Calls => 1,
            _ => 0,
        };
        let calls = folded_map(&report.folded(Metric::Calls).join("\n"));
        let mut counters = BTreeMap::new();
        let mut exact = true;
        for t in report.threads() {
            for (name, count) in [
                ("voluntary_switches", t.counters.voluntary_switches),
                ("involuntary_switches", t.counters.involuntary_switches),
                ("cache_misses", t.counters.cache_misses),
            ] {
                if let Some(v) = count.value() {
                    *counters.entry(name).or_insert(0) += v;
                }
                exact &= !count.is_scaled();
            }
        }
        for s in report.sites() {
            exact &= ![
                s.counters.voluntary_switches,
                s.counters.involuntary_switches,
            ]
            .iter()
            .any(|c| c.is_scaled());
        }
        let site = report.site("interop_backoff").expect("the site ran");
        assert_eq!(
            (site.episodes, site.calls_of(Kind::Yield)),
            (7 + 11 + 1, 19)
        );
        Run {
            dir,
            folded: folded_map(&text),
            folded_index,
            calls,
            episodes: site.episodes,
            counters,
            exact,
        }
    })
}

fn gunzip(path: &Path) -> Vec<u8> {
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw)
        .expect("a gzip file");
    raw
}

/// One message of protoc's text format.
#[derive(Debug, Default)]
struct Msg {
    fields: Vec<(String, Field)>,
}

#[derive(Debug)]
enum Field {
    Scalar(String),
    Msg(Msg),
}

impl Msg {
    /// protoc writes one field per line: `name: value`, `name {` ... `}`.
    fn parse(text: &str) -> Msg {
        let mut stack = vec![(String::new(), Msg::default())];
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if line == "}" {
                let (name, msg) = stack.pop().expect("balanced braces");
                stack
                    .last_mut()
                    .unwrap()
                    .1
                    .fields
                    .push((name, Field::Msg(msg)));
            } else if let Some(name) = line.strip_suffix(" {") {
                stack.push((name.to_string(), Msg::default()));
            } else {
                let (name, value) = line.split_once(": ").expect("name: value");
                let field = Field::Scalar(value.to_string());
                stack
                    .last_mut()
                    .unwrap()
                    .1
                    .fields
                    .push((name.to_string(), field));
            }
        }
        assert_eq!(stack.len(), 1, "unbalanced braces");
        stack.pop().unwrap().1
    }

    fn msgs<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Msg> + 'a {
        self.fields.iter().filter_map(move |(n, f)| match f {
            Field::Msg(m) if n == name => Some(m),
            _ => None,
        })
    }

    fn scalars<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields.iter().filter_map(move |(n, f)| match f {
            Field::Scalar(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }

    /// An integer field; proto3 text leaves zeros out.
    fn int(&self, name: &str) -> i64 {
        self.scalars(name).next().map_or(0, |s| s.parse().unwrap())
    }

    fn ints(&self, name: &str) -> Vec<i64> {
        self.scalars(name).map(|s| s.parse().unwrap()).collect()
    }
}

/// A protoc text-format string literal's contents (`"..."`, C escapes).
fn unquote(s: &str) -> String {
    let inner = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .expect("a quoted string");
    let mut bytes = Vec::new();
    let mut it = inner.bytes().peekable();
    while let Some(b) = it.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match it.next().expect("an escape") {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            d @ b'0'..=b'7' => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    match it.peek() {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            it.next();
                        }
                        _ => break,
                    }
                }
                bytes.push(v as u8);
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).expect("UTF-8 string")
}

/// What protoc made of a `.pb.gz`.
struct Decoded {
    strings: Vec<String>,
    profile: Msg,
}

fn decode_with_protoc(protoc: &Path, pb_gz: &Path) -> Decoded {
    let raw = gunzip(pb_gz);
    let mut child = Command::new(protoc)
        .arg("--decode=perftools.profiles.Profile")
        .arg(format!("--proto_path={}", interop_dir().display()))
        .arg("profile.proto")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("protoc starts");
    child.stdin.take().unwrap().write_all(&raw).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "protoc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let profile = Msg::parse(&String::from_utf8(out.stdout).unwrap());
    let strings = profile.scalars("string_table").map(unquote).collect();
    Decoded { strings, profile }
}

/// A decoded sample.
struct Sample {
    /// Root first, as in a folded line.
    stack: String,
    values: Vec<i64>,
    /// `(key, value)` string labels.
    labels: Vec<(String, String)>,
}

impl Decoded {
    fn string(&self, i: i64) -> &str {
        &self.strings[i as usize]
    }

    fn samples(&self) -> Vec<Sample> {
        let functions: BTreeMap<i64, &str> = self
            .profile
            .msgs("function")
            .map(|f| (f.int("id"), self.string(f.int("name"))))
            .collect();
        let locations: BTreeMap<i64, Vec<&str>> = self
            .profile
            .msgs("location")
            .map(|l| {
                // Innermost line first; a folded stack reads outermost first.
                let mut names: Vec<&str> = l
                    .msgs("line")
                    .map(|ln| functions[&ln.int("function_id")])
                    .collect();
                names.reverse();
                (l.int("id"), names)
            })
            .collect();
        self.profile
            .msgs("sample")
            .map(|s| {
                let mut ids = s.ints("location_id");
                ids.reverse();
                let stack: Vec<&str> = ids.iter().flat_map(|id| locations[id].clone()).collect();
                let labels = s
                    .msgs("label")
                    .map(|l| {
                        (
                            self.string(l.int("key")).to_string(),
                            self.string(l.int("str")).to_string(),
                        )
                    })
                    .collect();
                Sample {
                    stack: stack.join(";"),
                    values: s.ints("value"),
                    labels,
                }
            })
            .collect()
    }

    /// Stacks summed by value `index`, zeros left out (as folded files do).
    fn stacks(&self, index: usize) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for s in self.samples() {
            if s.values[index] > 0 {
                *out.entry(s.stack).or_insert(0) += s.values[index] as u64;
            }
        }
        out
    }
}

#[test]
#[ignore = "needs protoc (apt-get install protobuf-compiler); .ci/run runs it"]
fn protoc_decodes_the_pprof_file_into_the_folded_stacks_and_totals() {
    let protoc = protoc();
    let run = the_run();
    let d = decode_with_protoc(&protoc, &run.dir.join("interop.pb.gz"));
    assert_eq!(d.strings[0], "", "string 0 must be empty");
    let mut unique = d.strings.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        d.strings.len(),
        "a string is in the table twice"
    );
    let types: Vec<(&str, &str)> = d
        .profile
        .msgs("sample_type")
        .map(|t| (d.string(t.int("type")), d.string(t.int("unit"))))
        .collect();
    assert_eq!(
        types[..3],
        [
            ("wall", "nanoseconds"),
            ("calls", "count"),
            ("episodes", "count")
        ]
    );
    // Then one type per counter the threads count, nothing for the others.
    let counter_types: Vec<&str> = types[3..].iter().map(|t| t.0).collect();
    let mut sorted = counter_types.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        run.counters.keys().copied().collect::<Vec<_>>(),
        "{types:?}"
    );
    for (k, name) in counter_types.iter().enumerate() {
        let sum: u64 = d.stacks(3 + k).values().sum();
        // Each frame holds its own share: the shares add up to the threads' totals
        // (more only where estimates of nested frames overlap).
        if run.exact {
            assert_eq!(sum, run.counters[name], "{name}");
        } else {
            assert!(sum >= run.counters[name], "{name}: {sum}");
        }
    }
    assert_eq!(d.string(d.profile.int("default_sample_type")), "wall");
    // Stack by stack, so the totals match too.
    assert_eq!(d.stacks(run.folded_index), run.folded);
    assert_eq!(d.stacks(1), run.calls);
    let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
    assert_eq!(total(&d.stacks(1)), total(&run.calls));
    assert_eq!(total(&d.stacks(2)), run.episodes);
    // Every sample is labelled with its thread and wait kind.
    let kinds: std::collections::BTreeSet<String> = d
        .samples()
        .into_iter()
        .map(|Sample { labels, .. }| {
            assert_eq!(labels.len(), 2, "{labels:?}");
            assert_eq!(labels[0].0, "thread");
            assert_eq!(labels[1].0, "kind");
            labels[1].1.clone()
        })
        .collect();
    // A wait frame preempted in an episode also has `[off-cpu]` own time: the
    // scheduler's doing, so allowed, never required; so is `[profiler]`, the profiler's
    // own time in a frame (its first node, a switch-figure read), as in the folded file.
    let mut kinds: Vec<String> = kinds.into_iter().collect();
    kinds.retain(|k| k != "off-cpu" && k != "profiler");
    assert_eq!(kinds, ["sleep", "spin", "work", "yield"]);
}

#[test]
#[ignore = "needs go (apt-get install golang-go); .ci/run runs it"]
fn go_tool_pprof_reads_the_pprof_file_with_the_same_totals() {
    let go = tool("go", &["version"], "apt-get install -y golang-go");
    let run = the_run();
    let pb = run.dir.join("interop.pb.gz");
    let raw = stdout_of(Command::new(&go).args(["tool", "pprof", "-raw"]).arg(&pb));
    // `-raw`: a header naming the sample types, then `v1 v2 v3 ...: loc ids` per sample.
    let samples = raw.split("\nSamples:\n").nth(1).expect("a Samples section");
    let mut lines = samples.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(
        header[..3],
        ["wall/nanoseconds[dflt]", "calls/count", "episodes/count"]
    );
    assert_eq!(header.len(), 3 + run.counters.len(), "{header:?}");
    let mut sums = vec![0u64; header.len()];
    for line in lines.take_while(|l| !l.starts_with("Locations")) {
        let Some((values, _)) = line.split_once(':') else {
            continue;
        };
        let values: Vec<u64> = match values.split_whitespace().map(str::parse).collect() {
            Ok(v) => v,
            Err(_) => continue, // a label line, `kind:[spin] thread:[...]`
        };
        for (sum, v) in sums.iter_mut().zip(values) {
            *sum += v;
        }
    }
    let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
    assert_eq!(sums[run.folded_index], total(&run.folded));
    assert_eq!(sums[1], total(&run.calls));
    assert_eq!(sums[2], run.episodes);
    let top = stdout_of(
        Command::new(&go)
            .args(["tool", "pprof", "-top", "-sample_index=calls"])
            .arg(&pb),
    );
    assert!(
        top.contains("[spin]") && top.contains("interop_backoff"),
        "{top}"
    );
}

#[test]
#[ignore = "needs inferno-flamegraph (cargo install inferno); .ci/run runs it"]
fn inferno_flamegraph_renders_the_folded_file_with_every_count() {
    let inferno = tool(
        "inferno-flamegraph",
        &["--help"],
        "cargo install inferno --version 0.12.8 --locked",
    );
    let run = the_run();
    let svg = stdout_of(Command::new(inferno).arg(run.dir.join("interop.folded")));
    assert!(svg.starts_with("<?xml"), "{}", &svg[..svg.len().min(200)]);
    let total: u64 = run.folded.values().sum();
    assert!(
        svg.contains(&format!("total_samples=\"{total}\"")),
        "total {total} not in the graph"
    );
    for frame in [
        "interop_serve",
        "interop::interop_backoff",
        "[spin]",
        "[yield]",
        "[sleep]",
        "[work]",
    ] {
        assert!(svg.contains(frame), "{frame} not in the graph");
    }
}

/// Node and the script that runs speedscope's importer on the files it is given.
fn speedscope() -> (PathBuf, PathBuf) {
    let node = tool("node", &["--version"], "apt-get install -y nodejs npm");
    if !interop_dir()
        .join("node_modules/speedscope/package.json")
        .exists()
    {
        panic!("speedscope is not installed: npm ci --prefix tests/interop");
    }
    (node, interop_dir().join("speedscope-import.mjs"))
}

#[test]
#[ignore = "needs node and speedscope (npm ci --prefix tests/interop); .ci/run runs it"]
fn speedscope_imports_the_folded_and_pprof_files_with_the_same_totals() {
    let (node, script) = speedscope();
    let run = the_run();
    let out = stdout_of(
        Command::new(node)
            .arg(script)
            .arg(run.dir.join("interop.folded"))
            .arg(run.dir.join("interop.pb.gz")),
    );
    let results: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON line per file"))
        .collect();
    assert_eq!(results.len(), 2, "{out}");
    let (folded, pprof) = (&results[0], &results[1]);
    assert_eq!(folded["format"], "Importing as collapsed stack format");
    assert_eq!(pprof["format"], "Importing as protobuf encoded pprof file");
    let total: u64 = run.folded.values().sum();
    for (r, unit) in [(folded, "none"), (pprof, "nanoseconds")] {
        let profile = &r["profiles"][0];
        assert_eq!(profile["unit"], unit, "{r}");
        // pprof's default sample type is wall, as is the folded file by default.
        if run.folded_index == 0 || unit == "none" {
            assert_eq!(profile["total"].as_u64(), Some(total), "{r}");
        }
        let frames = profile["frames"].as_object().expect("frames");
        for frame in [
            "interop_serve",
            "interop::interop_backoff",
            "[spin]",
            "[yield]",
            "[work]",
        ] {
            assert!(frames.contains_key(frame), "{frame} missing from {r}");
        }
    }
}

#[yieldprof::instrument_wait]
fn interop_nap() {
    std::thread::sleep(Duration::from_millis(1));
}

#[test]
#[ignore = "needs node and speedscope (npm ci --prefix tests/interop); .ci/run runs it"]
fn speedscope_imports_the_timeline_with_a_profile_per_thread_and_every_episode() {
    let (node, script) = speedscope();
    let naps = [("interop-tl-a", 3u64), ("interop-tl-b", 5)];
    for (name, n) in naps {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || (0..n).for_each(|_| interop_nap()))
            .unwrap()
            .join()
            .unwrap();
    }
    let dir = std::env::temp_dir().join(format!("yieldprof-interop-tl-{}", std::process::id()));
    let written = yieldprof::snapshot().write(&dir, "timeline").unwrap();
    let trace = dir.join("timeline.trace.json");
    assert!(written.contains(&trace), "{written:?}");
    let out = stdout_of(Command::new(node).arg(script).arg(&trace));
    let result: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(result["format"], "Importing as Trace Event Format profile");
    let profiles = result["profiles"].as_array().expect("profiles");
    for (name, n) in naps {
        let p = profiles
            .iter()
            .find(|p| p["name"].as_str().is_some_and(|s| s.contains(name)))
            .unwrap_or_else(|| panic!("no profile for {name}: {out}"));
        // speedscope names a trace event's frame by its name and args, so episodes
        // with different args are frames of one site.
        let frames = p["frames"].as_object().expect("frames");
        assert!(
            frames
                .keys()
                .all(|f| f.starts_with("interop::interop_nap {")
                    && f.contains(r#""kind":"sleep""#)
                    && f.contains(r#""calls":1"#)),
            "{name}: {p}"
        );
        // Weights in the trace's µs: each nap sleeps at least 1 ms.
        let naps: f64 = frames.values().filter_map(|w| w.as_f64()).sum();
        assert!(naps >= (n * 1000) as f64, "{name}: {p}");
        assert_eq!(p["unit"], "microseconds", "{name}: {p}");
        assert!(p["total"].as_f64().unwrap() >= naps, "{name}: {p}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[yieldprof::instrument_wait]
fn interop_snapshot_wait() {
    std::thread::yield_now();
}

#[test]
#[ignore = "needs protoc (apt-get install protobuf-compiler); .ci/run runs it"]
fn continuous_mode_pprof_deltas_decode_and_add_up_to_the_run() {
    let protoc = protoc();
    let dir = std::env::temp_dir().join(format!("yieldprof-interop-snap-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .out_dir(&dir)
        .name("snap")
        .snapshot_every(Duration::from_millis(30))
        .init();
    for _ in 0..10 {
        for _ in 0..10 {
            interop_snapshot_wait();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(guard);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pb.gz"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    // Other tests of this binary record at the same time: count this site only.
    let mut calls = 0;
    let mut windows = Vec::new();
    for f in &files {
        let d = decode_with_protoc(&protoc, f);
        for s in d.samples() {
            if s.stack.ends_with("interop::interop_snapshot_wait;[yield]") {
                calls += s.values[1];
            }
        }
        windows.push((d.profile.int("time_nanos"), d.profile.int("duration_nanos")));
    }
    assert_eq!(calls, 100);
    // Back to back: each delta starts where the previous one ended.
    assert!(
        windows.windows(2).all(|w| w[1].0 == w[0].0 + w[0].1),
        "{windows:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
