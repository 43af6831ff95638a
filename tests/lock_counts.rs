//! A lock's figure says what it counts: of 1 001 `lock()` calls the code ran, the one
//! arranged to block is recorded, free ones that would open an episode are not (unless
//! slowed past ~1 µs: a preempted thread), and the summary labels the figure
//! "recorded" with what it leaves out, never "calls". (Own test
//! binary: the report holds every thread of the process.)

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use yieldprof::Kind;

#[yieldprof::instrument_wait]
fn take_then_yield(m: &Mutex<u64>) {
    *m.lock().unwrap() += 1;
    std::thread::yield_now();
}

#[test]
fn a_lock_figure_counts_blocked_acquisitions_and_says_so() {
    let m = Arc::new(Mutex::new(0));
    let session = yieldprof::Session::start();
    for _ in 0..1000 {
        take_then_yield(&m);
    }
    // One arranged block: a holder takes the lock and keeps it 20 ms.
    let (held, is_held) = mpsc::channel();
    let holder = {
        let m = Arc::clone(&m);
        std::thread::spawn(move || {
            let g = m.lock().unwrap();
            held.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            let released = Instant::now();
            drop(g);
            released
        })
    };
    is_held.recv().unwrap();
    let asked = Instant::now();
    take_then_yield(&m);
    let released = holder.join().unwrap();
    // Ground truth on the test's clock: the lock was out of reach from `asked` to
    // `released` (a late wake-up shortens it, never lengthens it).
    let blocked = released.saturating_duration_since(asked).as_nanos() as u64;
    let profile = session.finish();
    assert_eq!(*m.lock().unwrap(), 1001);
    let s = profile.site("lock_counts::take_then_yield").unwrap();
    assert_eq!(s.episodes, 1001);
    let recorded = s.calls_of(Kind::Lock);
    println!("lock() ran 1001 times, {recorded} recorded");
    assert!((1..=1001).contains(&recorded), "{:#?}", s.calls);
    // The arranged block is among them.
    assert!(
        s.ns_of(Kind::Lock) >= blocked * 9 / 10,
        "{blocked} ns: {:#?}",
        s.calls
    );
    let summary = profile.summary();
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("lock ") && l.contains("lock_counts.rs"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(line.contains(&format!(" {recorded} recorded ")), "{line}");
    assert!(!line.contains(" calls "), "{line}");
    assert!(summary.contains("a quick one that would open the episode is not counted"));
}
