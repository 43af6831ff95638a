//! Timer slack, asked vs got (issue 26, item 6): the macro records what each
//! `sleep(d)`, `usleep(us)`, `nanosleep(&req)` and `park_timeout(d)` asked for, the
//! report sets it beside what the call took, and the slack finding fires on what was
//! asked (shorter than the slack, rounded up by at least half of it), never on a fixed
//! cut of the call's time, and never for `park()` without a timeout (no timer).
//! Ground truth: the durations the test asked for and its counts.

use std::time::Duration;
use yieldprof::report::{Costs, Rule, SiteStats};
use yieldprof::Kind;

const CALLS: u64 = 20;

#[yieldprof::instrument_wait]
fn short_sleeps() {
    for _ in 0..CALLS {
        std::thread::sleep(Duration::from_micros(1));
    }
}

#[yieldprof::instrument_wait]
fn libc_sleeps() {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 2_000,
    };
    for i in 0..CALLS {
        // SAFETY: plain libc sleeps, a valid request and no remainder.
        unsafe {
            libc::usleep(3 + (i % 2) as u32);
            libc::nanosleep(&ts, std::ptr::null_mut());
        }
    }
}

#[yieldprof::instrument_wait]
fn parks_with_timeout() {
    for _ in 0..CALLS {
        std::thread::park_timeout(Duration::from_micros(1));
    }
}

/// The same, for the finding (each test reads its own sites).
#[yieldprof::instrument_wait]
fn tiny_sleeps() {
    for _ in 0..CALLS {
        std::thread::sleep(Duration::from_micros(1));
    }
}

/// Sleeps longer than the slack: what the slack adds is a small part; no finding,
/// however long the calls take on a loaded machine.
#[yieldprof::instrument_wait]
fn long_sleeps() {
    for _ in 0..CALLS {
        std::thread::sleep(Duration::from_micros(150));
    }
}

#[yieldprof::instrument_wait]
fn parks_until_unparked() {
    std::thread::park();
}

/// Arguments with side effects, and a raw-pointer request (not read: it may be invalid).
#[yieldprof::instrument_wait]
fn side_effects(evaluated: &mut u32) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000,
    };
    let raw: *const libc::timespec = &ts;
    for _ in 0..CALLS {
        std::thread::sleep({
            *evaluated += 1;
            Duration::from_micros(1)
        });
        // SAFETY: `raw` points at `ts`, alive here.
        unsafe { libc::nanosleep(raw, std::ptr::null_mut()) };
    }
}

fn site(name: &str) -> SiteStats {
    yieldprof::snapshot().site(name).expect(name)
}

/// The calling thread's timer slack, ns.
fn slack_ns() -> u64 {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer.
    unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) as u64 }
}

#[test]
fn each_sleep_line_reports_what_it_asked_for_and_what_it_took() {
    short_sleeps();
    libc_sleeps();
    parks_with_timeout();
    let sleep = site("short_sleeps");
    let c = &sleep.calls[0];
    let asked = c.asked.expect("sleep(d) records d");
    assert_eq!(
        (asked.calls, asked.min_ns, asked.max_ns),
        (CALLS, 1_000, 1_000)
    );
    assert_eq!(asked.mean_ns, 1_000);
    // A sleep never returns early.
    assert!(c.ns >= CALLS * 1_000, "{c:?}");

    let libc = site("libc_sleeps");
    let by_line: Vec<_> = libc.calls.iter().map(|c| (c.site.kind, c.asked)).collect();
    let usleep = by_line[0].1.expect("usleep(us) records us");
    assert_eq!(
        (usleep.calls, usleep.min_ns, usleep.max_ns),
        (CALLS, 3_000, 4_000)
    );
    assert_eq!(usleep.mean_ns, 3_500);
    let nanosleep = by_line[1].1.expect("nanosleep(&req) records req");
    assert_eq!(
        (nanosleep.calls, nanosleep.min_ns, nanosleep.max_ns),
        (CALLS, 2_000, 2_000)
    );

    let park = site("parks_with_timeout");
    assert_eq!(park.calls[0].site.kind, Kind::Park);
    assert_eq!(park.calls[0].asked.map(|a| a.mean_ns), Some(1_000));

    // The summary says it on the call's own line, and the JSON carries it.
    let profile = yieldprof::snapshot();
    let text = profile.summary();
    assert!(text.contains("      asked 1.0 µs each, slept "), "{text}");
    assert!(
        text.contains("      asked 3.5 µs mean (3.0 µs–4.0 µs), slept "),
        "{text}"
    );
    assert!(text.contains("      asked 1.0 µs each, parked "), "{text}");
    let doc = profile.json(&Costs::current());
    let json = doc
        .sites
        .iter()
        .find(|s| s.name.ends_with("short_sleeps"))
        .unwrap();
    let a = json.calls[0].asked.as_ref().expect("asked in the JSON");
    assert_eq!((a.calls, a.mean_ns), (CALLS, 1_000));
}

#[test]
fn an_argument_is_evaluated_once_and_a_raw_request_is_left_unread() {
    let mut evaluated = 0;
    side_effects(&mut evaluated);
    assert_eq!(evaluated as u64, CALLS);
    let s = site("side_effects");
    let asked: Vec<_> = s
        .calls
        .iter()
        .map(|c| (c.calls, c.asked.map(|a| a.calls)))
        .collect();
    assert_eq!(asked, [(CALLS, Some(CALLS)), (CALLS, None)]);
}

#[test]
fn the_slack_finding_follows_what_was_asked_not_a_fixed_cut() {
    tiny_sleeps();
    long_sleeps();
    let waiter = std::thread::spawn(|| {
        for _ in 0..CALLS {
            parks_until_unparked();
        }
    });
    // Unpark it until it is done: each park() waits for an unpark, no timer.
    while !waiter.is_finished() {
        waiter.thread().unpark();
        std::thread::sleep(Duration::from_micros(30));
    }
    waiter.join().unwrap();
    let costs = Costs::current();
    let findings = yieldprof::snapshot().findings(&costs);
    let slack: Vec<_> = findings
        .iter()
        .filter(|f| f.rule == Rule::SleepRoundedToSlack)
        .collect();
    println!("timer slack here: {} ns; findings: {slack:#?}", slack_ns());
    assert!(
        !slack
            .iter()
            .any(|f| f.subject.ends_with("parks_until_unparked")),
        "park() sets no timer: {slack:#?}"
    );
    assert!(
        !slack.iter().any(|f| f.subject.ends_with("long_sleeps")),
        "150 µs asked is longer than the slack: {slack:#?}"
    );
    if costs.timer_slack_ns <= 2_000 {
        println!(
            "inconclusive: a timer slack of {} ns rounds nothing",
            costs.timer_slack_ns
        );
        return;
    }
    let short = slack
        .iter()
        .find(|f| f.subject.ends_with("tiny_sleeps"))
        .unwrap_or_else(|| {
            panic!(
                "1 µs asked under a {} ns slack: {findings:#?}",
                costs.timer_slack_ns
            )
        });
    // The call's own line, not the fn's.
    let line = site("tiny_sleeps").calls[0].site.line;
    assert!(
        short
            .location
            .as_deref()
            .unwrap()
            .ends_with(&format!("timer_slack.rs:{line}")),
        "{short:#?}"
    );
    assert!(
        short
            .evidence
            .starts_with(&format!("{CALLS} sleep calls: asked 1.0 µs each, slept ")),
        "{}",
        short.evidence
    );
    assert!(short.fix.contains("PR_SET_TIMERSLACK"), "{}", short.fix);
}
