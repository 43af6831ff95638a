//! The hot path closes a common episode (its first wait a direct spin or a timed call,
//! its calls at one site, no switch in it) with one record that its thread folds into
//! the tree in batches of 64. A report from another thread still counts every episode
//! the thread closed, folded or not: its episodes, calls, durations and timeline
//! entries equal the counts the test arranged, while the thread is alive with records
//! waiting, and after it exits; one still open counts as open up to the report. A call
//! the fast path began keeps its counts when something else happens in its episode.

mod rusage;

use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};
use yieldprof::report::SiteStats;

/// Spins per episode, each one counted.
const SPINS: u64 = 3;
/// Episodes each thread keeps in its timeline here.
const KEPT: u32 = 100;

#[yieldprof::instrument_wait]
fn hot_spin(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// Spins, then yields: the yield, a timed call, turns the episode opened on the fast
/// path into an ordinary frame.
#[yieldprof::instrument_wait]
fn spin_then_yield() {
    for _ in 0..SPINS {
        std::hint::spin_loop();
    }
    std::thread::yield_now();
}

/// Spins, then runs an episode that spins: the inner one's first wait finds the outer
/// open on the fast path and makes it a frame first.
#[yieldprof::instrument_wait]
fn outer_spin() {
    std::hint::spin_loop();
    inner_spin();
}

/// As `hot_spin`, for the test of its own (tests run at once, sites are per process).
#[yieldprof::instrument_wait]
fn inner_spin() {
    for _ in 0..SPINS {
        std::hint::spin_loop();
    }
}

thread_local! {
    /// The receiving thread's channel: each episode's message is sent just before it.
    static READY: (Sender<u64>, Receiver<u64>) = channel();
}

/// One receive of a message already sent: a timed call that does not block, the
/// episode's one wait.
#[yieldprof::instrument_wait]
fn ready_recv(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

fn one_ready_recv() {
    READY.with(|(tx, rx)| {
        tx.send(1).unwrap();
        ready_recv(rx);
    });
}

/// Three receives of messages already sent: each but the last goes into the tree as
/// the next opens, the episode still closed with one record.
#[yieldprof::instrument_wait]
fn three_recvs(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap() + rx.recv().unwrap() + rx.recv().unwrap()
}

fn three_ready_recvs() {
    READY.with(|(tx, rx)| {
        for i in 0..3 {
            tx.send(i).unwrap();
        }
        three_recvs(rx);
    });
}

/// Spins, then receives a message already sent.
#[yieldprof::instrument_wait]
fn spin_then_recv(rx: &Receiver<u64>) -> u64 {
    for _ in 0..SPINS {
        std::hint::spin_loop();
    }
    rx.recv().unwrap()
}

/// Two receives: the second finds the first kept on the fast path and makes the
/// episode a frame.
#[yieldprof::instrument_wait]
fn two_recvs(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap() + rx.recv().unwrap()
}

/// A receive whose argument runs an episode that waits: the receive is running when
/// the inner episode's wait makes the outer one a frame.
#[yieldprof::instrument_wait]
fn recv_around(rx: &Receiver<u64>) -> u64 {
    rx.recv_timeout(inner_yield()).unwrap()
}

#[yieldprof::instrument_wait]
fn inner_yield() -> Duration {
    std::thread::yield_now();
    Duration::from_secs(10)
}

/// Runs `k` episodes of `episode` for each `k` it receives, says when done, and exits
/// when the sender goes.
fn worker(
    name: &str,
    episode: fn(),
    batches: Receiver<u64>,
    done: Sender<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            for k in batches {
                for _ in 0..k {
                    episode();
                }
                done.send(()).unwrap();
            }
        })
        .unwrap()
}

/// What a report says of `site` on the thread `track`: its episodes, calls, durations
/// and timed calls' durations recorded; the thread's timeline: recorded, kept, and the
/// calls of each kept episode.
fn seen(site: &str, track: &str) -> (u64, u64, u64, u64, u64, Vec<u64>) {
    let p = yieldprof::snapshot();
    let s = p.site(site).expect("the site");
    let calls: u64 = s.calls.iter().map(|c| c.calls).sum();
    let timed: u64 = s.call_durations.iter().map(|(_, h)| h.count()).sum();
    let mut text = Vec::new();
    p.write_trace(&mut text).unwrap();
    let trace: Value = serde_json::from_slice(&text).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let meta = events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == track)
        .expect("the worker's track");
    let each = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == meta["tid"])
        .map(|e| e["args"]["calls"].as_u64().unwrap())
        .collect();
    let recorded = meta["args"]["episodes_recorded"].as_u64().unwrap();
    (
        s.episodes,
        calls,
        s.durations.count(),
        timed,
        recorded,
        each,
    )
}

/// Runs batches of 10, 150 and 3 episodes on a worker (none folded yet; two folds of
/// 64 and 32 waiting; 3 more left at the thread's exit), each making `per` calls of
/// which `timed` are timed, and checks every count after each and after the exit.
fn every_episode_counted(site: &str, episode: fn(), per: u64, timed: u64) {
    let (tx, batches) = channel();
    let (done, finished) = channel();
    let track = format!("hot-{site}");
    let w = worker(&track, episode, batches, done);
    let mut total = 0;
    for k in [10, 150, 3] {
        tx.send(k).unwrap();
        finished.recv().unwrap();
        total += k;
        let (episodes, calls, durations, call_durations, recorded, each) = seen(site, &track);
        eprintln!("after {total}: {episodes} episodes, {calls} calls, {recorded} in the timeline");
        assert_eq!(episodes, total, "episodes");
        assert_eq!(calls, total * per, "calls");
        assert_eq!(durations, total, "durations");
        assert_eq!(call_durations, total * timed, "timed calls");
        assert_eq!(recorded, total, "timeline recorded");
        assert_eq!(each.len() as u64, total.min(u64::from(KEPT)), "kept");
        assert!(each.iter().all(|&c| c == per), "{each:?}");
    }
    drop(tx);
    w.join().unwrap();
    let (episodes, calls, durations, call_durations, recorded, each) = seen(site, &track);
    assert_eq!(
        (episodes, calls, durations, call_durations, recorded),
        (total, total * per, total, total * timed, total),
        "after the thread's exit"
    );
    assert_eq!(each.len() as u64, u64::from(KEPT));
}

#[test]
fn reports_count_every_episode_closed_on_the_hot_path_folded_or_not() {
    let dir = std::env::temp_dir().join(format!("yieldprof-hot-{}", std::process::id()));
    let guard = yieldprof::Options::from_env()
        .timeline(KEPT)
        .out_dir(&dir)
        .name("hot")
        .init();
    every_episode_counted("hot_spin", || hot_spin(SPINS), SPINS, 0);
    every_episode_counted("ready_recv", one_ready_recv, 1, 1);
    every_episode_counted("three_recvs", three_ready_recvs, 3, 3);
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn episodes_opened_on_the_hot_path_keep_their_counts_when_something_else_happens_in_them() {
    const N: u64 = 100;
    let before = yieldprof::snapshot();
    std::thread::spawn(|| {
        for _ in 0..N {
            spin_then_yield();
            outer_spin();
        }
    })
    .join()
    .unwrap();
    let d = yieldprof::snapshot().since(&before);
    let kinds = |name| counts(&d, name, yieldprof::Kind::Yield);
    assert_eq!(kinds("spin_then_yield"), (N, N * SPINS, N, N, N));
    assert_eq!(kinds("outer_spin"), (N, N, 0, 0, N));
    // Only the calls made directly in it: the inner episode's spins are its own.
    assert_eq!(kinds("inner_spin"), (N, N * SPINS, 0, 0, N));
}

/// A site's episodes, spins, calls of `kind`, timed calls and episode durations in `d`.
fn counts(d: &yieldprof::Profile, name: &str, kind: yieldprof::Kind) -> (u64, u64, u64, u64, u64) {
    let s = d.site(name).expect("the site");
    let spins = s.calls_of(yieldprof::Kind::Spin);
    let timed: u64 = s.call_durations.iter().map(|(_, h)| h.count()).sum();
    (
        s.episodes,
        spins,
        s.calls_of(kind),
        timed,
        s.durations.count(),
    )
}

#[test]
fn a_call_begun_on_the_hot_path_keeps_its_counts_when_something_else_happens_in_it() {
    const N: u64 = 100;
    let before = yieldprof::snapshot();
    let walls = std::thread::spawn(|| {
        let (tx, rx) = channel();
        let mut walls = Vec::new();
        for _ in 0..N {
            tx.send(1).unwrap();
            spin_then_recv(&rx);
            tx.send(1).unwrap();
            tx.send(2).unwrap();
            two_recvs(&rx);
            tx.send(3).unwrap();
            let t = Instant::now();
            recv_around(&rx);
            walls.push(t.elapsed());
        }
        walls
    })
    .join()
    .unwrap();
    let d = yieldprof::snapshot().since(&before);
    let kinds = |name| counts(&d, name, yieldprof::Kind::Channel);
    assert_eq!(kinds("spin_then_recv"), (N, N * SPINS, N, N, N));
    assert_eq!(kinds("two_recvs"), (N, 0, 2 * N, 2 * N, N));
    assert_eq!(kinds("recv_around"), (N, 0, N, N, N));
    let inner = d.site("inner_yield").expect("the inner site");
    let yields = inner.calls_of(yieldprof::Kind::Yield);
    assert_eq!((inner.episodes, yields), (N, N));
    // The receive's own time and the inner episode's, never counted twice, fit in
    // the caller's clock around each; each receive is timed whole, inner one included.
    let s = d.site("recv_around").expect("the site");
    let c = s
        .calls
        .iter()
        .find(|c| c.site.kind == yieldprof::Kind::Channel)
        .unwrap();
    let walls_ns: Vec<u64> = walls.iter().map(|w| w.as_nanos() as u64).collect();
    let wall: u64 = walls_ns.iter().sum();
    assert!(
        c.ns + inner.wall_ns <= wall,
        "{} + {} ns in {wall} ns",
        c.ns,
        inner.wall_ns
    );
    let (_, h) = s
        .call_durations
        .iter()
        .find(|(k, _)| *k == yieldprof::Kind::Channel)
        .unwrap();
    let longest = *walls_ns.iter().max().unwrap();
    // Bucketed: the longest receive's bucket may reach a few % past it.
    assert!(
        h.max().unwrap() <= longest + longest / 8,
        "{:?} > {longest}",
        h.max()
    );
    assert!(h.min().unwrap() > 0);
}

static STARTED: AtomicBool = AtomicBool::new(false);
static RELEASE: AtomicBool = AtomicBool::new(false);

/// Spins until `release`, saying in `started` that it spins: open on the hot path (its
/// first spin) for as long as the test holds it.
#[yieldprof::instrument_wait]
fn held_spin(started: &AtomicBool, release: &AtomicBool) {
    loop {
        std::hint::spin_loop();
        started.store(true, SeqCst);
        if release.load(SeqCst) {
            break;
        }
    }
}

#[test]
fn a_report_counts_an_episode_open_on_the_hot_path_up_to_the_report() {
    let worker = std::thread::spawn(|| {
        // Its first episodes add the site's node and set up the thread's counters: the
        // held one opens on the hot path unless the thread was switched just before.
        let (warm, released) = (AtomicBool::new(false), AtomicBool::new(true));
        for _ in 0..100 {
            held_spin(&warm, &released);
        }
        let begun = Instant::now();
        held_spin(&STARTED, &RELEASE);
        begun
    });
    while !STARTED.load(SeqCst) {
        std::thread::yield_now();
    }
    // The episode is open from before `open` (its first spin) to after the report.
    let open = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    let before = open.elapsed().as_nanos() as u64;
    let p = yieldprof::snapshot();
    let s = p.site("held_spin").expect("the site");
    RELEASE.store(true, SeqCst);
    let begun = worker.join().unwrap();
    let most = begun.elapsed().as_nanos() as u64;
    eprintln!("open {} ns, at least {before}, at most {most}", s.open_ns);
    // The clock's ns are within 1e-5 of the test's once calibrated: 1 % leaves room.
    assert!(
        s.open_ns >= before - before / 100,
        "{} < {before}",
        s.open_ns
    );
    assert!(s.open_ns <= most + most / 100, "{} > {most}", s.open_ns);
    assert_eq!(s.episodes, 100, "the held one not closed yet");
    let after = yieldprof::snapshot();
    let s = after.site("held_spin").expect("the site");
    assert_eq!((s.episodes, s.open_ns), (101, 0), "closed");
}

/// Receives once: blocked until the test sends.
#[yieldprof::instrument_wait]
fn blocked_recv(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

/// The same, at a site of its own.
#[yieldprof::instrument_wait]
fn blocked_after_a_switch(rx: &Receiver<u64>) -> u64 {
    rx.recv().unwrap()
}

/// What [`blocked_at_a_report`] saw: the report's site, whether the episode before the
/// blocked one switched, and the thread's reads of its switch figures from before
/// that episode to after the blocked one.
struct Blocked {
    site: SiteStats,
    switched: bool,
    reads: u64,
}

/// A thread runs 100 episodes of `site` (they add its node and set up the thread's
/// counters), the last of them receiving a message sent `late` after it began (or a
/// ready one; a sender that ran late ends after it), then one blocked until a report made here has seen it open 40 ms (a
/// loaded machine may start it late).
fn blocked_at_a_report(
    name: &str,
    site: fn(&Receiver<u64>) -> u64,
    late: Option<Duration>,
) -> Blocked {
    let before = yieldprof::snapshot();
    let (tx, rx) = channel();
    let (started, begun) = channel();
    let worker = std::thread::spawn(move || {
        for i in 0..99 {
            tx.send(i).unwrap();
            site(&rx);
        }
        let sender = std::thread::spawn(move || {
            if let Some(late) = late {
                std::thread::sleep(late);
            }
            tx.send(99).unwrap();
        });
        // On time: the message waits before the call; late: the call waits for it.
        let sender = match late {
            None => sender.join().map(|()| None).unwrap(),
            Some(_) => Some(sender),
        };
        let (r0, s0) = (yieldprof::__private::switch_reads(), rusage::switches());
        site(&rx);
        let switched = rusage::switches() != s0;
        let (tx2, rx2) = channel();
        started.send(tx2).unwrap();
        site(&rx2);
        let reads = yieldprof::__private::switch_reads() - r0;
        // Joined last: a join that blocks would be a switch in the arrangement.
        if let Some(s) = sender {
            s.join().unwrap();
        }
        (switched, reads)
    });
    let release = begun.recv().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let p = loop {
        std::thread::sleep(Duration::from_millis(50));
        let p = yieldprof::snapshot();
        let open = p.site(name).map_or(0, |s| s.open_ns);
        if open >= 40_000_000 || Instant::now() > deadline {
            break p;
        }
    };
    release.send(7).unwrap();
    let (switched, reads) = worker.join().unwrap();
    let site = p.since(&before).site(name).expect("the site");
    let off = site.time.off_cpu_ns.value().unwrap_or(0);
    eprintln!(
        "{name}: open {} ns, off-CPU {off} ns, time {:?}; the episode before it switched: \
         {switched}, {reads} reads",
        site.open_ns, site.time
    );
    Blocked {
        site,
        switched,
        reads,
    }
}

/// Blocked all but a few µs of its open part: off the CPU, as a closed one reads.
fn assert_off_the_cpu(s: &SiteStats) {
    let off = s.time.off_cpu_ns.value().unwrap_or(0);
    assert!(s.open_ns >= 40_000_000, "{} ns open", s.open_ns);
    assert!(
        off >= s.open_ns * 9 / 10,
        "{off} ns off the CPU of {} open ({:?})",
        s.open_ns,
        s.time
    );
}

#[test]
fn a_report_splits_an_episode_blocked_in_its_first_call_up_to_the_report() {
    let b = blocked_at_a_report("blocked_recv", blocked_recv, None);
    assert_off_the_cpu(&b.site);
}

/// An episode that opens right after one that switched (its figures not read yet)
/// continues it unread (`record::deferred`): its start's off-CPU clock is bounded from
/// the last read, and a report splits its open part all the same. It read 50 ms
/// open on the CPU, 0 off, before (CI, 1 run in ~10 of this test's first form).
#[test]
fn a_report_splits_an_episode_opened_unread_after_a_switch_up_to_the_report() {
    for attempt in 1..=3 {
        let late = Some(Duration::from_micros(20));
        let b = blocked_at_a_report("blocked_after_a_switch", blocked_after_a_switch, late);
        // Arranged: the episode before switched, and one read (at the blocked one's
        // close, 40 ms long) covered both.
        if b.switched && b.reads == 1 {
            assert_off_the_cpu(&b.site);
            return;
        }
        eprintln!("attempt {attempt}: not arranged, run again");
    }
    eprintln!("inconclusive: the episode before the blocked one was read or did not switch");
}
