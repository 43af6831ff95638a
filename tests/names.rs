//! Names the host chooses (threads, `frame!`s) are written so that yieldprof reads its
//! own files back: blank names get a stand-in, `;` and line breaks cannot split a
//! stack, and a name like `[work]` never passes for one of yieldprof's own frames.
//! (Own test binary: the report holds every thread of the process.)

use std::path::Path;
use yieldprof::report::{diff, json, parse_folded, Metric};

const NAMES: [&str; 10] = [
    "",
    "   ",
    "[work]",
    "[spin]",
    "a;b",
    "tab\there",
    "line\nbreak",
    "ünïcode",
    "x 5",
    "[",
];

#[yieldprof::instrument_wait]
fn poll() {
    std::thread::yield_now();
}

fn record_with_odd_names() -> yieldprof::Profile {
    let session = yieldprof::Session::start();
    for name in NAMES {
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(|| {
                yieldprof::frame!("");
                yieldprof::frame!("[work]");
                poll();
            })
            .unwrap()
            .join()
            .unwrap();
    }
    session.finish()
}

fn stacks(path: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    parse_folded(&text).unwrap_or_else(|bad| panic!("{}: {bad:?}\n{text}", path.display()))
}

#[test]
fn everything_written_with_odd_names_reads_back() {
    let report = record_with_odd_names();
    let dir = std::env::temp_dir().join(format!("yieldprof-names-{}", std::process::id()));
    let paths = report
        .write(&dir, "names")
        .unwrap_or_else(|e| panic!("{e}"));
    let folded = dir.join("names.folded");
    assert!(paths.contains(&folded), "{paths:?}");
    let read = stacks(&folded);
    // One stack per thread ends in the poll's yield: ten threads, ten stacks.
    let polls: Vec<&String> = read
        .iter()
        .map(|(s, _)| s)
        .filter(|s| s.ends_with("poll;[yield]"))
        .collect();
    assert_eq!(polls.len(), NAMES.len(), "{polls:#?}");
    // Only yieldprof's own frames are written in brackets, and only as leaves.
    for (stack, _) in &read {
        let frames: Vec<&str> = stack.split(';').collect();
        for f in &frames[..frames.len() - 1] {
            assert!(!(f.starts_with('[') && f.ends_with(']')), "{stack}");
        }
    }
    assert!(
        read.iter().any(|(s, _)| s.starts_with("(work);")),
        "{read:#?}"
    );
    // The frame with a blank name goes by where it was opened.
    assert!(
        read.iter().any(|(s, _)| s.contains(";tests/names.rs:")),
        "{read:#?}"
    );
    // Both readers of folded stacks take every file written.
    for view in [Metric::Calls, Metric::Switches] {
        let lines = report.folded(view).join("\n");
        parse_folded(&lines).unwrap_or_else(|bad| panic!("{view:?}: {bad:?}"));
    }
    parse_folded(&report.folded_split(Metric::Wall).join("\n")).unwrap();
    diff(&folded, &folded, std::io::sink()).unwrap_or_else(|e| panic!("{e}"));
    // The JSON reads back whole, with the names as written in the stacks.
    let text = std::fs::read_to_string(dir.join("names.json")).unwrap();
    let doc: json::Document = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = doc.threads.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"(work)") && names.contains(&"(spin)"),
        "{names:?}"
    );
    assert!(names.iter().all(|n| !n.trim().is_empty()), "{names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
