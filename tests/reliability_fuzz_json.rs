//! Bad input to the JSON report's reader (`report::json::Document` with `serde_json`):
//! a report written by yieldprof, then cut short, overwritten in places, stripped of a
//! field or replaced by junk, is read without a panic, and every refusal says where
//! (line and column). 256 cases per property by default; the long run sets
//! `PROPTEST_CASES=100000` (docs/reliability.md).

use proptest::prelude::*;
use std::sync::LazyLock;
use yieldprof::report::json::Document;
use yieldprof::report::Costs;

#[yieldprof::instrument_wait]
fn poll() {
    std::hint::spin_loop();
    std::thread::yield_now();
}

/// A report as yieldprof writes it, with a thread, a wait site and its counters.
static WRITTEN: LazyLock<String> = LazyLock::new(|| {
    std::thread::spawn(|| {
        yieldprof::frame!("serve");
        poll();
    })
    .join()
    .unwrap();
    let doc = yieldprof::snapshot().json(&Costs::current());
    serde_json::to_string_pretty(&doc).unwrap()
});

/// Reads `text`: a document, or an error that says where.
fn read(text: &str) -> Result<(), TestCaseError> {
    match serde_json::from_str::<Document>(text) {
        Ok(doc) => prop_assert!(!doc.schema.is_empty()),
        Err(e) => {
            let shown = e.to_string();
            prop_assert!(
                shown.contains("line") && shown.contains("column"),
                "{}",
                shown
            );
        }
    }
    Ok(())
}

#[test]
fn the_report_written_reads_back() {
    let doc: Document = serde_json::from_str(&WRITTEN).unwrap();
    assert_eq!(doc.schema, yieldprof::report::json::SCHEMA);
}

proptest! {
    #[test]
    fn a_report_cut_short_is_refused_with_where(at in 0..1_000_000usize) {
        let text = &*WRITTEN;
        let mut at = at % text.len();
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        read(&text[..at])?;
    }

    #[test]
    fn a_report_overwritten_in_places_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = WRITTEN.clone().into_bytes();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        read(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn a_report_without_a_line_never_panics(line in any::<prop::sample::Index>()) {
        let lines: Vec<&str> = WRITTEN.lines().collect();
        let drop = line.index(lines.len());
        let text: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != drop)
            .map(|(_, l)| *l)
            .collect();
        read(&text.join("\n"))?;
    }

    #[test]
    fn junk_never_panics(text in "\\PC{0,200}") {
        read(&text)?;
    }
}
