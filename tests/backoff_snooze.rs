//! A backoff call (`.snooze()`) says how many of its calls spun and how many yielded:
//! checked against backoffs whose every step the test knows, a local one and
//! crossbeam's. (Own test binary: the split is per call line over the whole run.)

use std::cell::Cell;
use std::hint;

/// Spins `1 << step` times for its first `SPIN_STEPS` snoozes, then yields.
struct Steps(Cell<u32>);

const SPIN_STEPS: u32 = 4;

impl Steps {
    fn snooze(&self) {
        let step = self.0.get();
        if step < SPIN_STEPS {
            for _ in 0..1 << step {
                hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
        self.0.set(step + 1);
    }
}

#[yieldprof::instrument_wait]
fn local_backoff(snoozes: u32) {
    let b = Steps(Cell::new(0));
    for _ in 0..snoozes {
        b.snooze(); // @local-snooze
    }
}

/// crossbeam-utils 0.8's `Backoff::snooze` spins while its step is at most
/// `SPIN_LIMIT` (6: steps 0..=6, seven calls), then yields (src/backoff.rs).
const CROSSBEAM_SPINS: u32 = 7;

#[yieldprof::instrument_wait]
fn crossbeam_backoff(snoozes: u32) {
    let b = crossbeam_utils::Backoff::new();
    for _ in 0..snoozes {
        b.snooze(); // @crossbeam-snooze
    }
}

fn line_of(marker: &str) -> u32 {
    let src = include_str!("backoff_snooze.rs");
    let i = src
        .lines()
        .position(|l| l.ends_with(marker) && !l.contains("line_of"))
        .expect("marker");
    i as u32 + 1
}

fn split(profile: &yieldprof::Profile, site: &str, marker: &str) -> yieldprof::report::Snoozes {
    let line = line_of(marker);
    let s = profile.site(site).expect("the site");
    let c = s
        .calls
        .iter()
        .find(|c| c.site.line == line)
        .expect("the backoff call");
    assert_eq!(c.site.kind, yieldprof::Kind::Backoff);
    let b = c.backoff.expect("a backoff call is split");
    assert_eq!(
        b.spun + b.yielded,
        c.calls,
        "every call is one or the other"
    );
    // Every call's time is in one part; ticks become ns per figure (1 ns rounding each).
    assert!(
        (b.spun_ns + b.yielded_ns).abs_diff(c.ns) <= c.calls * 1_000,
        "{b:?} vs {} ns in the calls",
        c.ns
    );
    b
}

#[test]
fn each_backoff_call_is_counted_as_spun_or_yielded_as_the_test_arranged() {
    const EPISODES: u64 = 25;
    const SNOOZES: u32 = 12;
    for _ in 0..EPISODES {
        local_backoff(SNOOZES);
        crossbeam_backoff(SNOOZES);
    }
    let profile = yieldprof::snapshot();

    let local = split(&profile, "local_backoff", "// @local-snooze");
    assert_eq!(local.spun, EPISODES * SPIN_STEPS as u64, "{local:?}");
    assert_eq!(
        local.yielded,
        EPISODES * (SNOOZES - SPIN_STEPS) as u64,
        "{local:?}"
    );
    let crossbeam = split(&profile, "crossbeam_backoff", "// @crossbeam-snooze");
    assert_eq!(
        crossbeam.spun,
        EPISODES * CROSSBEAM_SPINS as u64,
        "{crossbeam:?}"
    );
    assert_eq!(
        crossbeam.yielded,
        EPISODES * (SNOOZES - CROSSBEAM_SPINS) as u64,
        "{crossbeam:?}"
    );
    println!("local {local:?}\ncrossbeam {crossbeam:?}");

    // The flame graph draws each backoff call's part under `[backoff]`: by count, the
    // arranged numbers exactly (one calling context, so the run's proportions are its).
    let folded = profile.folded(yieldprof::report::Metric::Calls);
    for (part, n) in [("[spun]", crossbeam.spun), ("[yielded]", crossbeam.yielded)] {
        let tail = format!("::crossbeam_backoff;[backoff];{part} {n}");
        assert!(
            folded.iter().any(|l| l.ends_with(&tail)),
            "{tail:?} not in {folded:#?}"
        );
    }
    assert!(
        !folded
            .iter()
            .any(|l| l.contains("::crossbeam_backoff;[backoff] ")),
        "nothing left on [backoff] itself: {folded:#?}"
    );
    let text = profile.summary();
    let want = format!(
        "      spun {} calls ({} mean), yielded {} ({} mean)",
        crossbeam.spun,
        yieldprof::report::text::duration(crossbeam.spun_ns / crossbeam.spun),
        crossbeam.yielded,
        yieldprof::report::text::duration(crossbeam.yielded_ns / crossbeam.yielded)
    );
    assert!(text.contains(&want), "{want:?} not in\n{text}");
    let doc = profile.json(&yieldprof::report::Costs::current());
    let line = line_of("// @crossbeam-snooze");
    let json = doc
        .sites
        .iter()
        .flat_map(|s| &s.calls)
        .find(|c| c.line == line)
        .and_then(|c| c.backoff.clone())
        .expect("backoff in the JSON");
    assert_eq!(
        (json.spun, json.yielded),
        (crossbeam.spun, crossbeam.yielded)
    );
}
