//! The handoff finding: a rendezvous channel (`sync_channel(0)`) ping-pong, where every
//! send meets a receive, is named with the switches it pays and the remedies; a buffered
//! channel drained without waiting is not. Ground truth: the threads' own voluntary
//! switches in `/proc/thread-self/status` and the exchanges the test arranged. (Own
//! test binary: the session holds every thread of the process.)

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use yieldprof::report::{Costs, Rule};

const EXCHANGES: u64 = 2_000;

/// This thread's (voluntary, involuntary) switches so far.
fn switches() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find_map(|l| l.strip_prefix(name)).unwrap();
        line.trim().parse().unwrap()
    };
    (
        field("voluntary_ctxt_switches:"),
        field("nonvoluntary_ctxt_switches:"),
    )
}

/// One exchange: hand `v` over, then wait for the answer.
#[yieldprof::instrument_wait]
fn exchange(tx: &SyncSender<u64>, rx: &Receiver<u64>, v: u64) -> u64 {
    tx.send(v).unwrap();
    rx.recv().unwrap()
}

/// Runs the ping-pong; returns the profile and the voluntary and all switches /proc
/// counted on the thread that ran the `exchange` site while it exchanged.
fn ping_pong() -> (yieldprof::Profile, u64, u64) {
    let (to_b, from_a) = sync_channel(0);
    let (to_a, from_b) = sync_channel(0);
    let session = yieldprof::Session::start();
    let b = std::thread::spawn(move || {
        for _ in 0..EXCHANGES {
            let v = from_a.recv().unwrap();
            to_a.send(v + 1).unwrap();
        }
    });
    let before = switches();
    let mut v = 0;
    for _ in 0..EXCHANGES {
        v = exchange(&to_b, &from_b, v);
    }
    let after = switches();
    let (voluntary, all) = (after.0 - before.0, after.0 + after.1 - before.0 - before.1);
    b.join().unwrap();
    assert_eq!(v, EXCHANGES, "every exchange came back");
    (session.finish(), voluntary, all)
}

#[test]
fn a_rendezvous_ping_pong_is_named_a_handoff() {
    let costs = Costs::current();
    // Whether each exchange switched is the scheduler's to decide (a peer answering
    // while std's channel still spins is no switch): run until /proc shows the
    // exchanges switched, at most 3 times.
    for attempt in 1..=3 {
        let (profile, switched, all) = ping_pong();
        let site = profile.site("findings_handoff::exchange").unwrap();
        assert_eq!(site.episodes, EXCHANGES);
        let found: Vec<_> = profile
            .findings(&costs)
            .into_iter()
            .filter(|f| f.rule == Rule::Handoff)
            .collect();
        let per_exchange = switched as f64 / EXCHANGES as f64;
        if per_exchange < 0.9 {
            println!(
                "attempt {attempt}: /proc saw {switched} voluntary switches in {EXCHANGES} \
                 exchanges: not every exchange switched; {found:?}"
            );
            continue;
        }
        // The rule names a handoff whose switches cost at least 1 % of the threads' time
        // (`MATERIAL_SHARE`) at the machine's switch cost, a default 1 µs where not
        // measured: on a VM whose exchanges took 122 µs each they were 0.9 % of it, and
        // rightly not named (2026-12-06).
        let threads_ns: u64 = profile.threads().iter().map(|t| t.wall_ns).sum();
        if 2.0 * costs.switch_ns * (switched as f64) < 0.01 * threads_ns as f64 {
            println!(
                "attempt {attempt}: {switched} switches at {} ns are under 1 % of the threads' \
                 {threads_ns} ns: exchanges too slow here for them to matter",
                costs.switch_ns
            );
            continue;
        }
        // The evidence is there: the finding must name the site, at the call line.
        let f = found
            .iter()
            .find(|f| f.subject == "findings_handoff::exchange")
            .unwrap_or_else(|| {
                panic!(
                    "/proc: {switched} switches in {EXCHANGES} exchanges; the site's \
                     voluntary {:?} in {} timed episodes, {} ns of the threads' {} ns; \
                     {found:#?}",
                    site.counters.voluntary_switches,
                    site.timed_episodes(),
                    site.wall_ns,
                    profile.threads().iter().map(|t| t.wall_ns).sum::<u64>()
                )
            });
        // At the line of one of the site's channel calls.
        let calls: Vec<String> = include_str!("findings_handoff.rs")
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim() == "tx.send(v).unwrap();" || l.trim() == "rx.recv().unwrap()")
            .map(|(i, _)| format!("tests/findings_handoff.rs:{}", i + 1))
            .collect();
        assert!(
            calls.contains(f.location.as_ref().unwrap()),
            "{calls:?}: {f}"
        );
        assert!(
            f.evidence
                .starts_with(&format!("{EXCHANGES} episodes made ")),
            "{f}"
        );
        // The site's switches are the thread's own, within what /proc counted.
        let counted: u64 = f
            .evidence
            .split(" made ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // The switch count is exact; the voluntary part of one read late is apportioned
        // (seen under load: 2003 where /proc counted 2000 voluntary of 2000 + a few).
        assert!(
            counted <= all + 2,
            "{counted} > /proc's {all} switches: {f}"
        );
        assert!(f.fix.contains("buffered channel"), "{f}");
        println!("/proc: {switched} voluntary switches; {f}");
        return;
    }
    println!(
        "inconclusive: the exchanges did not switch every time, or too slowly for their \
         switches to matter, in 3 runs"
    );
}

#[yieldprof::instrument_wait]
fn take(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

#[test]
fn a_buffered_channel_drained_without_waiting_is_no_handoff() {
    let (tx, rx) = sync_channel(1_000);
    for v in 0..1_000 {
        tx.send(v).unwrap();
    }
    let session = yieldprof::Session::this_thread();
    let sum: u64 = (0..1_000).map(|_| take(&rx)).sum();
    let profile = session.finish();
    assert_eq!(sum, 999 * 1_000 / 2);
    let found: Vec<_> = profile
        .findings(&Costs::current())
        .into_iter()
        .filter(|f| f.rule == Rule::Handoff)
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}

#[yieldprof::instrument_wait]
fn wait_for_order(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

#[test]
fn a_handoff_per_long_wait_costs_nothing_and_is_not_named() {
    // 30 orders, 5 ms apart: every wait hands the thread off, as in a ping-pong, but the
    // switches it pays (~2 per wait) are a few µs in 150 ms of the thread's life.
    let (tx, rx) = sync_channel(0);
    let session = yieldprof::Session::this_thread();
    let producer = std::thread::spawn(move || {
        for v in 0..30 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            tx.send(v).unwrap();
        }
    });
    let before = switches();
    let sum: u64 = (0..30).map(|_| wait_for_order(&rx)).sum();
    let switched = switches().0 - before.0;
    producer.join().unwrap();
    let profile = session.finish();
    assert_eq!(sum, 29 * 30 / 2);
    let found: Vec<_> = profile
        .findings(&Costs::current())
        .into_iter()
        .filter(|f| f.rule == Rule::Handoff)
        .collect();
    // The pattern is there (the thread blocked at nearly every wait, /proc says) and
    // the finding holds back only because it costs nothing.
    if switched < 24 {
        println!("inconclusive: {switched} voluntary switches in 30 waits");
        return;
    }
    assert!(found.is_empty(), "{found:#?}");
}
