//! What a program keeps in production code, built with `default-features = false`:
//! every form compiles, runs as written, records nothing and writes nothing, and a
//! test's budget passes (nothing was measured).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use yieldprof::budget::{Budget, Limit};
use yieldprof::report::Metric;
use yieldprof::{Kind, Options, Session, Watched};

#[yieldprof::instrument_wait(budget(max_episodes = 1, max_yields_per_episode = 1))]
fn take(m: &Mutex<u64>, ready: &AtomicBool) -> u64 {
    while !ready.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
    std::thread::yield_now();
    std::thread::sleep(Duration::from_micros(1));
    let v = *m.lock().unwrap();
    v + 1
}

#[yieldprof::instrument_wait(name = "drain")]
fn drain(rx: &std::sync::mpsc::Receiver<u64>) -> u64 {
    let mut sum = 0;
    while let Ok(v) = rx.recv() {
        sum += v;
    }
    sum
}

#[yieldprof::instrument_wait]
async fn settle(n: u64) -> u64 {
    std::future::ready(()).await;
    n * 2
}

fn through(get: fn(&Mutex<u64>) -> u64, m: &Mutex<u64>) -> u64 {
    yieldprof::wait!(lock, get(m))
}

struct Ring {
    head: Watched<AtomicU64>,
    _pad: [u8; 120],
    tail: Watched<AtomicU64>,
}

const _: () = yieldprof::assert_separate_lines!(Ring, head, tail);

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn annotations_frames_and_waits_run_as_written() {
    assert!(!yieldprof::is_enabled());
    yieldprof::set_enabled(true);
    assert!(
        !yieldprof::is_enabled(),
        "no recording to turn on in this build"
    );

    yieldprof::frame!("business");
    let m = Mutex::new(41);
    assert_eq!(take(&m, &AtomicBool::new(true)), 42);
    let (tx, rx) = std::sync::mpsc::channel();
    (1..=3).for_each(|v| tx.send(v).unwrap());
    drop(tx);
    assert_eq!(drain(&rx), 6);
    assert_eq!(block_on(settle(4)), 8);
    assert_eq!(block_on(yieldprof::frame!("serve", settle(5))), 10);
    assert_eq!(through(|m| *m.lock().unwrap(), &m), 41);
    yieldprof::wait::spin();
    yieldprof::wait::yield_now();
    yieldprof::wait::sleep(Duration::from_micros(1));
    yieldprof::wait::park_timeout(Duration::from_micros(1));
    assert_eq!(Kind::Yield.name(), "yield");

    let p = yieldprof::snapshot();
    assert_eq!(p.folded(Metric::Wall), Vec::<String>::new());
    assert_eq!(p.folded_split(Metric::Calls), Vec::<String>::new());
    assert!(
        p.summary().contains("without its `enabled` feature"),
        "{}",
        p.summary()
    );
    assert_eq!(
        p.since(&yieldprof::snapshot()).folded(Metric::Calls).len(),
        0
    );
}

#[test]
fn sessions_and_budgets_pass_with_nothing_measured() {
    let session = Session::this_thread();
    let n = session.scope(|s| {
        let h = s.spawn(|| take(&Mutex::new(1), &AtomicBool::new(true)));
        h.join().unwrap()
    });
    assert_eq!(n, 2);
    let report = session.finish();
    assert_eq!(report.folded(Metric::Calls), Vec::<String>::new());
    let budget = Budget::new()
        .require_counters()
        .no_false_sharing()
        .site("take", |s| {
            s.max_episodes(0)
                .max_calls(Kind::Yield, 0)
                .max_calls_per_episode(Kind::Sleep, 0.0)
                .max_wall_share(0.0)
                .max_voluntary_switches_per_episode(0.0)
                .max_involuntary_switches_per_episode(0.0)
                .max_cache_misses_per_episode(0.0)
                .limit(Limit::Episodes(0))
        })
        .thread("main", |t| {
            t.max_involuntary_switches(0).max_wait_share(0.0)
        });
    report.check(&budget).unwrap();
    report.check_declared().unwrap();
    yieldprof::assert_budget!(report, budget);
    assert_eq!(Session::start().finish().folded(Metric::Wall).len(), 0);
}

#[test]
fn init_guard_and_flush_write_nothing() {
    let dir = std::env::temp_dir().join(format!("yp-disabled-{}", std::process::id()));
    let guard = Options::from_env()
        .out_dir(&dir)
        .name("prod")
        .metric(Metric::Calls)
        .view(Metric::Switches)
        .max_nodes(64)
        .timeline(0)
        .counters(yieldprof::counters::CounterSampling::Off)
        .fd_budget(8)
        .write_at_exit(true)
        .snapshot_every(Duration::from_secs(1))
        .keep_snapshots(2)
        .init()
        .snapshot_every(Duration::from_secs(2));
    assert_eq!(guard.options().name, "prod");
    assert_eq!(guard.write().unwrap(), Vec::<std::path::PathBuf>::new());
    assert_eq!(yieldprof::flush().unwrap().len(), 0);
    assert!(yieldprof::snapshot().write(&dir, "x").unwrap().is_empty());
    drop(guard);
    drop(yieldprof::init());
    assert!(!dir.exists(), "nothing may be written in this build");
}

#[test]
fn watched_atomics_are_plain_atomics() {
    let ring = Arc::new(Ring {
        head: Watched::new(0),
        _pad: [0; 120],
        tail: Watched::new(0),
    });
    yieldprof::watch(&ring.head, "head");
    yieldprof::watch(&*ring, "ring");
    ring.tail.store(3, Ordering::Release);
    assert_eq!(ring.head.fetch_add(1, Ordering::AcqRel), 0);
    assert_eq!(
        ring.tail
            .compare_exchange(3, 4, Ordering::AcqRel, Ordering::Acquire),
        Ok(3)
    );
    assert_eq!(ring.tail.load(Ordering::Acquire), 4);
    assert_eq!(std::mem::size_of::<Watched<AtomicU64>>(), 8);
    assert_eq!(yieldprof::sharing::SEPARATE_LINE_BYTES, 128);
    yieldprof::assert_separate_lines!(Ring, head, tail);
}

#[test]
fn sync_locks_are_std_types_when_the_feature_is_off() {
    // Not wrappers: the very types of std, so a swapped import costs nothing.
    let m: Mutex<u64> = yieldprof::sync::Mutex::new(1);
    let rw: std::sync::RwLock<u64> = yieldprof::sync::RwLock::new(2);
    let cv: std::sync::Condvar = yieldprof::sync::Condvar::new();
    let g = m.lock().unwrap();
    let (g, timeout) = cv.wait_timeout(g, Duration::from_micros(1)).unwrap();
    assert!(timeout.timed_out());
    assert_eq!(*g + *rw.read().unwrap(), 3);
}

/// A user's lock type, as `yieldprof::sync::Tracked` takes it.
struct Plain(Mutex<u64>);

impl yieldprof::sync::Lockable for Plain {
    type Guard<'a> = std::sync::MutexGuard<'a, u64>;
    fn lock(&self) -> Self::Guard<'_> {
        self.0.lock().unwrap()
    }
    fn try_lock(&self) -> Option<Self::Guard<'_>> {
        self.0.try_lock().ok()
    }
}

#[test]
fn a_tracked_lock_is_only_the_lock_when_the_feature_is_off() {
    let t = yieldprof::sync::Tracked::new(Plain(Mutex::new(1)));
    assert_eq!(std::mem::size_of_val(&t), std::mem::size_of::<Plain>());
    *t.lock() += 1;
    assert_eq!(*t.try_lock().unwrap(), 2);
}
