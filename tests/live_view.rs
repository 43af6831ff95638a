//! The live view (feature `http`, `YIELDPROF_HTTP`): the page and its parts over plain
//! HTTP, a pprof delta profile, the stop when the guard drops; then the page as
//! headless Chromium loads it and the profile as `go tool pprof` fetches it. Those two
//! need the tools: `#[ignore]`d here, run by `.ci/run` with `--ignored`.

use pprof::Message;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[yieldprof::instrument_wait]
fn on_page(yields: u32) {
    for _ in 0..yields {
        std::thread::yield_now();
    }
}

#[yieldprof::instrument_wait]
fn before_request(yields: u32) {
    for _ in 0..yields {
        std::thread::yield_now();
    }
}

#[yieldprof::instrument_wait]
fn during_request(yields: u32) {
    for _ in 0..yields {
        std::thread::yield_now();
    }
}

/// A guard serving the live view on a free loopback port, writing into a folder of
/// the test's own.
fn live(test: &str) -> (yieldprof::Guard, SocketAddr, PathBuf) {
    let dir = std::env::temp_dir().join(format!("yieldprof-live-{test}-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .out_dir(&dir)
        .name(test)
        .http("127.0.0.1:0".parse().unwrap())
        .init();
    let addr = guard.http_addr().expect("the live view is up");
    (guard, addr, dir)
}

/// `GET path` over HTTP/1.0: status, headers, body. A minute at most, should the
/// server hang.
fn get(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("the live view accepts");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).expect("a whole response");
    let at = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("headers end");
    let head = String::from_utf8(response[..at].to_vec()).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, response[at + 4..].to_vec())
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

/// Enough of pprof's `profile.proto` to sum a sample type by function.
mod pprof {
    pub use prost::Message;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        string_table: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct ValueType {
        #[prost(int64, tag = "1")]
        kind: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        value: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Location {
        #[prost(uint64, tag = "1")]
        id: u64,
        #[prost(message, repeated, tag = "4")]
        line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Line {
        #[prost(uint64, tag = "1")]
        function_id: u64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Function {
        #[prost(uint64, tag = "1")]
        id: u64,
        #[prost(int64, tag = "2")]
        name: i64,
    }

    impl Profile {
        /// The `calls` of the samples with a function whose name ends with `name` on
        /// their stack; `None` without such a sample.
        pub fn calls_under(&self, name: &str) -> Option<i64> {
            let text = |i: i64| self.string_table[i as usize].as_str();
            let calls = self
                .sample_type
                .iter()
                .position(|t| text(t.kind) == "calls")?;
            let named = |location: u64| {
                let l = self.location.iter().find(|l| l.id == location).unwrap();
                l.line.iter().any(|line| {
                    let f = self
                        .function
                        .iter()
                        .find(|f| f.id == line.function_id)
                        .unwrap();
                    text(f.name).ends_with(name)
                })
            };
            let under = self
                .sample
                .iter()
                .filter(|s| s.location_id.iter().any(|&l| named(l)));
            under.map(|s| s.value[calls]).reduce(|a, b| a + b)
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Names of this process's threads (`comm`: the first 15 bytes).
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim_end().to_string())
        .collect()
}

#[test]
fn the_page_holds_the_flame_graph_the_summary_and_the_findings() {
    let (guard, addr, dir) = live("page");
    on_page(3);
    let (status, head, body) = get(addr, "/");
    let page = String::from_utf8(body).unwrap();
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("text/html"), "{head}");
    assert!(page.contains("<meta http-equiv=\"refresh\" content=\"5\">"));
    let svg = page
        .find("<div id=\"flamegraph\"><svg")
        .expect("the graph inline");
    assert!(page[svg..].contains("on_page"), "{page}");
    assert!(
        page.contains("<pre id=\"summary\">yieldprof summary: "),
        "{page}"
    );
    assert!(page.contains("\nFindings ("), "{page}");
    // Stopped: no reload, and the page does not claim one.
    let (_, _, body) = get(addr, "/?refresh=0");
    let stopped = String::from_utf8(body).unwrap();
    assert!(!stopped.contains("http-equiv"));
    assert!(
        stopped.contains("not reloading") && !stopped.contains("every 5 s"),
        "{stopped}"
    );

    let (status, head, svg) = get(addr, "/flamegraph.svg");
    assert_eq!(status, 200);
    assert!(
        head.contains("image/svg+xml") && contains(&svg, "<svg"),
        "{head}"
    );
    let (status, _, json) = get(addr, "/report.json");
    assert_eq!(status, 200);
    let doc: yieldprof::report::json::Document = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        doc.site("on_page")
            .map(|s| s.calls_of(yieldprof::Kind::Yield)),
        Some(3)
    );
    let threads: Vec<&str> = doc.threads.iter().map(|t| t.name.as_str()).collect();
    assert!(
        !threads.iter().any(|t| t.starts_with("yieldprof")),
        "the live view records nothing itself: {threads:?}"
    );
    let (status, _, text) = get(addr, "/summary.txt");
    assert_eq!(status, 200);
    assert!(contains(&text, "Wait sites (by wall time)"));
    assert_eq!(get(addr, "/nothing-here").0, 404);
    assert_eq!(get(addr, "/debug/pprof/profile?seconds=-3").0, 400);
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_profile_request_holds_what_was_recorded_while_it_waited_and_stops_with_the_guard() {
    let (guard, addr, dir) = live("delta");
    before_request(3);
    // An hour: the guard's drop ends the wait, and the answer covers what came before.
    let client = std::thread::spawn(move || get(addr, "/debug/pprof/profile?seconds=3600"));
    // The request's thread (`yieldprof-http-profile`, cut to 15 bytes) starts once its
    // first snapshot is taken; the minute only stops a broken server hanging the test.
    let asked = std::time::Instant::now();
    while !threads().iter().any(|t| t == "yieldprof-http-") {
        assert!(
            asked.elapsed() < Duration::from_secs(60),
            "no profile thread"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    during_request(5);
    drop(guard);
    let (status, head, gz) = client.join().unwrap();
    assert_eq!(status, 200, "{head}");
    let profile = pprof::Profile::decode(&gunzip(&gz)[..]).expect("a pprof profile");
    assert_eq!(profile.calls_under("during_request"), Some(5));
    // Its calls came before the request. (Its frame may still carry a nanosecond or
    // so: each snapshot converts ticks to ns, and two conversions' difference rounds.)
    assert_eq!(
        profile.calls_under("before_request").unwrap_or(0),
        0,
        "not in the delta"
    );
    // Stopped: no profile thread left (other tests' views run beside), and the
    // listener closes (tiny_http's accept thread lets go of it just after the drop).
    let dropped = std::time::Instant::now();
    while TcpStream::connect(addr).is_ok() {
        assert!(
            dropped.elapsed() < Duration::from_secs(60),
            "still listening"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !threads().iter().any(|t| t == "yieldprof-http-"),
        "{:?}",
        threads()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `wait` episodes on a thread until the returned flag is set.
fn keep_waiting() -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("waiter".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                during_request(2);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .unwrap();
    (stop, thread)
}

#[test]
#[ignore = "needs chromium / go; .ci/run runs it"]
fn chromium_loads_the_live_page_with_its_flame_graph() {
    let (guard, addr, dir) = live("chromium");
    let (stop, waiter) = keep_waiting();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium").display()
        ))
        .arg(format!("http://{addr}/?refresh=0"))
        .output()
        .expect("chromium runs: apt-get install chromium");
    stop.store(true, Ordering::Relaxed);
    waiter.join().unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let graph = dom
        .find("<div id=\"flamegraph\"><svg")
        .expect("the flame graph SVG");
    assert!(dom[graph..].contains("live_view::during_request"), "{dom}");
    assert!(
        dom.contains("[yield]") && dom.contains("Findings ("),
        "{dom}"
    );
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs chromium / go; .ci/run runs it"]
fn go_tool_pprof_fetches_a_delta_profile_from_the_live_view() {
    let (guard, addr, dir) = live("pprof");
    let (stop, waiter) = keep_waiting();
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(format!("http://{addr}/debug/pprof/profile?seconds=2"))
        .env("PPROF_TMPDIR", &dir)
        .output()
        .expect("go runs: apt-get install golang-go");
    stop.store(true, Ordering::Relaxed);
    waiter.join().unwrap();
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples = raw.split("\nSamples:\n").nth(1).expect("a Samples section");
    let header: Vec<&str> = samples.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header[..3],
        ["wall/nanoseconds[dflt]", "calls/count", "episodes/count"]
    );
    assert!(
        raw.contains("live_view::during_request") && raw.contains("[yield]"),
        "{raw}"
    );
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_page_names_who_held_the_lock_a_thread_waited_for() {
    let (guard, addr, dir) = live("locks");
    let lock = Arc::new(yieldprof::sync::Mutex::new(0u32));
    // A waiter descheduled past the whole hold did not wait: tried again, five times.
    for attempt in 1..=5 {
        let (holding_tx, holding_rx) = std::sync::mpsc::channel();
        let held = lock.clone();
        let holder = std::thread::spawn(move || {
            let (g, line) = (held.lock().unwrap(), line!());
            holding_tx.send(line).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            drop(g);
        });
        let holder_line = holding_rx.recv().unwrap();
        let asked = std::time::Instant::now();
        let (g, wait_line) = (lock.lock().unwrap(), line!());
        let waited = asked.elapsed();
        drop(g);
        holder.join().unwrap();
        let (status, _, body) = get(addr, "/?refresh=0");
        assert_eq!(status, 200);
        let page = String::from_utf8(body).unwrap();
        let summary = &page[page.find("<pre id=\"summary\">").expect("the summary")..];
        let site = format!("tests/live_view.rs:{wait_line}");
        let holder = format!("held by tests/live_view.rs:{holder_line}");
        // Far past the lock's 2 µs spin: the wait is timed and split by holder.
        if waited >= Duration::from_millis(5) {
            assert!(
                summary.contains(&site) && summary.contains(&holder),
                "{summary}"
            );
            // The graph draws the holder under the waiting lock too.
            let svg = &page[page.find("<div id=\"flamegraph\">").unwrap()..];
            let frame = format!("[held by live_view.rs:{holder_line}]");
            assert!(svg.contains(&frame), "{svg}");
            break;
        }
        println!("attempt {attempt}: waited only {waited:?} for line {holder_line}");
        if attempt == 5 {
            println!("inconclusive: never waited in five tries on this loaded machine");
        }
    }
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[yieldprof::instrument_wait]
fn on_many_threads(yields: u32) {
    for _ in 0..yields {
        std::thread::yield_now();
    }
}

#[test]
fn the_live_view_lists_threads_as_the_written_report_does() {
    let dir = std::env::temp_dir().join(format!("yieldprof-live-many-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .out_dir(&dir)
        .name("many")
        .report_threads(Some(2))
        .http("127.0.0.1:0".parse().unwrap())
        .init();
    let addr = guard.http_addr().expect("the live view is up");
    for i in 0..6 {
        std::thread::Builder::new()
            .name(format!("live-many-{i}"))
            .spawn(|| on_many_threads(2))
            .unwrap()
            .join()
            .unwrap();
    }
    let (status, _, json) = get(addr, "/report.json");
    assert_eq!(status, 200);
    let doc: yieldprof::report::json::Document = serde_json::from_slice(&json).unwrap();
    let names: Vec<&str> = doc.threads.iter().map(|t| t.name.as_str()).collect();
    // Two one by one, the rest (at least the six here, and the test's own) merged.
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[2].ends_with("other threads]"), "{names:?}");
    // Every call still counted.
    assert_eq!(
        doc.site("on_many_threads")
            .map(|s| s.calls_of(yieldprof::Kind::Yield)),
        Some(12)
    );
    let (_, _, text) = get(addr, "/summary.txt");
    assert!(contains(&text, "other threads]"));
    drop(guard);
    std::fs::remove_dir_all(&dir).unwrap();
}
