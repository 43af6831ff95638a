//! `yieldprof::sync`: what the locks say about holders, lock order and wakers, checked
//! against what each test arranged and measured with its own clock.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use yieldprof::sync::{
    Condvar, LockReport, LockSite, Lockable, Mutex, RwLock, Tracked, TryLockError,
};

fn report() -> LockReport {
    yieldprof::snapshot().locks()
}

fn site(r: &LockReport, line: u32) -> Option<&LockSite> {
    r.sites
        .iter()
        .find(|s| s.site.file().ends_with("locks.rs") && s.site.line() == line)
}

/// Waited ns at `waiter`'s line, by holder line (0: handoff).
fn held_by(r: &LockReport, waiter: u32) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for h in site(r, waiter).map_or(&[][..], |s| &s.held_by) {
        *out.entry(h.holder.map_or(0, |l| l.line())).or_default() += h.waited_ns;
    }
    out
}

fn overlap(a: (Instant, Instant), b: (Instant, Instant)) -> u64 {
    let start = a.0.max(b.0);
    let end = a.1.min(b.1);
    end.saturating_duration_since(start).as_nanos() as u64
}

/// One run: each of three threads holds the lock for its own duration at its own
/// line, in turn, while one waiter waits for it. Returns, per holder line, the waited
/// ns the report charged to it and the overlap the threads measured themselves.
fn holders_run(rounds: usize) -> (u32, BTreeMap<u32, (u64, u64)>) {
    let m = Arc::new(Mutex::new(0u64));
    let (done_tx, done_rx) = mpsc::channel::<(u32, Instant, Instant)>();
    let mut holders = Vec::new();
    let mut to_holder = Vec::new();
    for (k, ms) in [2u64, 4, 6].into_iter().enumerate() {
        let (go_tx, go_rx) = mpsc::channel::<mpsc::Sender<()>>();
        to_holder.push(go_tx);
        let m = m.clone();
        let done = done_tx.clone();
        holders.push(thread::spawn(move || {
            for holding in go_rx {
                // Each holder takes the lock at a line of its own.
                let (g, line) = match k {
                    0 => (m.lock().unwrap(), line!()),
                    1 => (m.lock().unwrap(), line!()),
                    _ => (m.lock().unwrap(), line!()),
                };
                let t0 = Instant::now();
                holding.send(()).unwrap();
                thread::sleep(Duration::from_millis(ms));
                let t1 = Instant::now();
                drop(g);
                done.send((line, t0, t1)).unwrap();
            }
        }));
    }
    drop(done_tx);
    // The waiter is this thread: it waits once per round, once the holder holds.
    let before = report();
    let mut waits = Vec::new();
    let mut waiter_line = 0;
    for r in 0..rounds {
        let (holding_tx, holding_rx) = mpsc::channel();
        to_holder[r % 3].send(holding_tx).unwrap();
        holding_rx.recv().unwrap();
        let t0 = Instant::now();
        let (g, line) = (m.lock().unwrap(), line!());
        let t1 = Instant::now();
        drop(g);
        waiter_line = line;
        waits.push((t0, t1));
    }
    drop(to_holder);
    for h in holders {
        h.join().unwrap();
    }
    let after = report();
    let mut truth: BTreeMap<u32, u64> = BTreeMap::new();
    for (line, a, b) in done_rx {
        let o: u64 = waits.iter().map(|&w| overlap(w, (a, b))).sum();
        *truth.entry(line).or_default() += o;
    }
    let (b, a) = (held_by(&before, waiter_line), held_by(&after, waiter_line));
    let out = truth
        .into_iter()
        .map(|(line, t)| {
            let charged = a.get(&line).copied().unwrap_or(0) - b.get(&line).copied().unwrap_or(0);
            (line, (charged, t))
        })
        .collect();
    (waiter_line, out)
}

/// Within 5 % of the truth for every holder; the error is printed either way.
fn within(run: &BTreeMap<u32, (u64, u64)>, tolerance: f64) -> bool {
    run.values()
        .all(|&(charged, truth)| (charged as f64 - truth as f64).abs() <= tolerance * truth as f64)
}

#[test]
fn a_waiters_time_is_split_by_the_holders_that_made_it_wait_within_5_percent() {
    // Scheduling can put a delay between a thread's clock read and the lock call it
    // brackets; such runs are run again, up to five times.
    let mut last = BTreeMap::new();
    for attempt in 1..=5 {
        let (waiter, run) = holders_run(18);
        println!("attempt {attempt}: waiter line {waiter}, holder line → (charged ns, measured ns): {run:?}");
        assert_eq!(run.len(), 3, "three holder lines");
        if within(&run, 0.05) {
            let r = report();
            let s = site(&r, waiter).unwrap();
            // Every run made 18 acquisitions there; a round the holder ended before
            // the waiter's try did not wait.
            assert_eq!(s.acquisitions, 18 * attempt, "{s:?}");
            assert!((1..=s.acquisitions).contains(&s.contended), "{s:?}");
            return;
        }
        last = run;
    }
    // Never within 5 %: a fault of the books unless the load explains it; charges
    // that are off by more than a quarter are not load.
    assert!(
        within(&last, 0.25),
        "attribution off by more than 25 %: {last:?}"
    );
    println!("inconclusive: the machine was too loaded for a 5 % check in five runs");
}

#[test]
fn a_free_lock_is_counted_not_contended_and_its_first_hold_is_timed() {
    let m = Mutex::new(0);
    let line = line!() + 2;
    for _ in 0..1000 {
        *m.lock().unwrap() += 1;
    }
    let s = report();
    let s = site(&s, line).expect("the site is reported");
    assert_eq!((s.acquisitions, s.contended, s.waited_ns), (1000, 0, 0));
    // The first acquisition, then one in 16.
    let every = u64::from(yieldprof::sync::HOLD_SAMPLE_EVERY);
    assert_eq!(s.holds.count(), 1000_u64.div_ceil(every));

    // The hold lies between what the clock read inside it and around it.
    let held = Mutex::new(());
    let outer = Instant::now();
    let (g, line) = (held.lock().unwrap(), line!());
    let inner = Instant::now();
    thread::sleep(Duration::from_millis(5));
    let inside = inner.elapsed().as_nanos() as u64;
    drop(g);
    let around = outer.elapsed().as_nanos() as u64;
    let r = report();
    let max = site(&r, line).unwrap().holds.max().unwrap();
    assert!(
        (inside..=around).contains(&max),
        "hold {max} ns, measured inside {inside} ns, around {around} ns"
    );
}

#[test]
fn an_inverted_lock_order_is_reported_once_though_it_never_deadlocked() {
    let a = Arc::new(Mutex::new(()));
    let a_made = line!() - 1;
    let b = Arc::new(RwLock::new(()));
    let b_made = line!() - 1;
    let (a1, b1) = (a.clone(), b.clone());
    thread::spawn(move || {
        for _ in 0..3 {
            let _ga = a1.lock().unwrap();
            let _gb = b1.write().unwrap();
        }
    })
    .join()
    .unwrap();
    // One after the other: the two orders never overlap, so nothing deadlocks.
    for _ in 0..3 {
        let _gb = b.read().unwrap();
        let _ga = a.lock().unwrap();
    }
    let r = report();
    let ours: Vec<_> = r
        .cycles
        .iter()
        .filter(|c| {
            c.edges
                .iter()
                .any(|e| e.held.line() == a_made || e.held.line() == b_made)
        })
        .collect();
    assert_eq!(ours.len(), 1, "{:#?}", r.cycles);
    let edges = &ours[0].edges;
    assert_eq!(edges.len(), 2);
    let mut made: Vec<(u32, u32)> = edges
        .iter()
        .map(|e| (e.held.line(), e.taken.line()))
        .collect();
    made.sort();
    let mut want = vec![(a_made, b_made), (b_made, a_made)];
    want.sort();
    assert_eq!(made, want);
    // Each edge names where both locks were taken.
    for e in edges {
        assert!(
            e.held_at.line() > b_made && e.taken_at.line() > b_made,
            "{e:?}"
        );
        assert_ne!(e.held_at.line(), e.taken_at.line());
    }
    assert!(report().to_string().contains("Lock-order cycles"));
}

#[test]
fn locks_always_taken_in_one_order_report_no_cycle() {
    let c = Arc::new(Mutex::new(0));
    let c_made = line!() - 1;
    let d = Arc::new(Mutex::new(0));
    let d_made = line!() - 1;
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (c, d) = (c.clone(), d.clone());
            thread::spawn(move || {
                for _ in 0..200 {
                    let mut gc = c.lock().unwrap();
                    let mut gd = d.lock().unwrap();
                    *gc += 1;
                    *gd += 1;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(*c.lock().unwrap(), 400);
    let r = report();
    assert!(
        !r.cycles
            .iter()
            .flat_map(|c| &c.edges)
            .any(|e| [c_made, d_made].contains(&e.held.line())),
        "{:#?}",
        r.cycles
    );
}

#[test]
fn a_condvar_wait_names_the_notifying_line_and_a_timeout_without_notify() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p2 = pair.clone();
    let (tx, rx) = mpsc::channel();
    let notifier = thread::spawn(move || {
        rx.recv().unwrap();
        *p2.0.lock().unwrap() = true;
        let line = line!() + 1;
        p2.1.notify_one();
        line
    });
    let (m, cv) = &*pair;
    let g = m.lock().unwrap();
    tx.send(()).unwrap();
    let (g, waiter) = (cv.wait_while(g, |ready| !*ready).unwrap(), line!());
    let notify_line = notifier.join().unwrap();
    let timed = line!() + 1;
    let g = cv.wait_timeout(g, Duration::from_millis(2)).unwrap();
    assert!(g.1.timed_out());
    drop(g);
    let r = report();
    let woke = r
        .wakes
        .iter()
        .find(|w| w.waiter.line() == waiter && w.notifier.map(|n| n.line()) == Some(notify_line))
        .unwrap_or_else(|| panic!("{:#?}", r.wakes));
    assert_eq!(woke.wakes, 1);
    assert!(woke.latency_max_ns > 0 && woke.latency_mean_ns <= woke.latency_max_ns);
    let t = r.wakes.iter().find(|w| w.waiter.line() == timed).unwrap();
    assert_eq!((t.notifier, t.timed_out, t.wakes), (None, 1, 0));
}

#[test]
fn std_semantics_hold_try_lock_poisoning_into_inner_get_mut() {
    let m = Arc::new(Mutex::new(vec![1]));
    let g = m.lock().unwrap();
    assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
    drop(g);
    m.try_lock().unwrap().push(2);
    let m2 = m.clone();
    let _ = thread::spawn(move || {
        let _g = m2.lock().unwrap();
        panic!("poison it");
    })
    .join();
    assert!(m.is_poisoned());
    assert_eq!(*m.lock().unwrap_err().into_inner(), vec![1, 2]);
    m.clear_poison();
    let mut m = Arc::try_unwrap(m).unwrap();
    m.get_mut().unwrap().push(3);
    assert_eq!(m.into_inner().unwrap(), vec![1, 2, 3]);

    static STATIC: RwLock<u32> = RwLock::new(7);
    assert_eq!(*STATIC.read().unwrap(), 7);
    *STATIC.write().unwrap() += 1;
    assert!(STATIC.try_write().is_ok());
    let r = STATIC.read().unwrap();
    assert!(matches!(STATIC.try_write(), Err(TryLockError::WouldBlock)));
    assert_eq!(*r, 8);
}

#[test]
fn the_report_draws_holders_under_the_waiting_lock_and_budgets_check_them() {
    let m = Arc::new(Mutex::new(()));
    let (tx, rx) = mpsc::channel();
    let m2 = m.clone();
    let holder = thread::spawn(move || {
        let (g, line) = (m2.lock().unwrap(), line!());
        tx.send(line).unwrap();
        thread::sleep(Duration::from_millis(20));
        drop(g);
    });
    let holder_line = rx.recv().unwrap();
    let (g, waiter) = (m.lock().unwrap(), line!());
    drop(g);
    holder.join().unwrap();
    let p = yieldprof::snapshot();
    if site(&p.locks(), waiter).map_or(0, |s| s.contended) == 0 {
        // The holder's 20 ms ran out before this thread tried: no wait to draw.
        println!("inconclusive: the waiter was descheduled past the whole hold");
        return;
    }
    let frame = format!(";[lock];[held by locks.rs:{holder_line}] ");
    let folded = p.folded(yieldprof::report::Metric::Wall);
    let drawn: u64 = folded
        .iter()
        .filter(|l| l.contains(&frame))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let charged = held_by(&p.locks(), waiter)[&holder_line];
    assert!(
        drawn > 0 && drawn <= charged + 1,
        "drawn {drawn} ns, charged {charged} ns: {folded:#?}"
    );

    let doc = p.json(&yieldprof::report::Costs::current());
    let text = serde_json::to_string(&doc).unwrap();
    let back: yieldprof::report::json::Document = serde_json::from_str(&text).unwrap();
    let locks = back.locks.expect("locks in the JSON");
    let w = locks
        .sites
        .iter()
        .find(|s| s.site.starts_with(&format!("tests/locks.rs:{waiter}:")))
        .unwrap();
    assert!(w.held_by.iter().any(|h| h
        .holder
        .as_deref()
        .is_some_and(|s| s.starts_with(&format!("tests/locks.rs:{holder_line}:")))));
    assert!(p
        .summary()
        .contains(&format!("held by tests/locks.rs:{holder_line}")));

    use yieldprof::budget::Budget;
    let at = format!("locks.rs:{holder_line}");
    p.check(&Budget::new().max_hold(&at, Duration::from_secs(5)))
        .unwrap();
    let e = p
        .check(&Budget::new().max_hold(&at, Duration::from_millis(1)))
        .unwrap_err();
    assert_eq!(e.violations.len(), 1, "{e}");
    assert!(e.violations[0].measured >= 20e6, "{e}");
    assert!(p
        .check(&Budget::new().max_hold("nowhere.rs:1", Duration::from_secs(1)))
        .is_err());
}

#[test]
fn a_budget_without_lock_order_cycles_fails_on_an_inversion() {
    use yieldprof::budget::Budget;
    let x = Mutex::new(());
    let y = Mutex::new(());
    {
        let _gx = x.lock().unwrap();
        let _gy = y.lock().unwrap();
    }
    {
        let _gy = y.lock().unwrap();
        let _gx = x.lock().unwrap();
    }
    let e = yieldprof::snapshot()
        .check(&Budget::new().no_lock_order_cycle())
        .unwrap_err();
    assert!(!e.violations.is_empty(), "{e}");
}

/// A user's own lock: a test-and-set spinlock, recorded through `Tracked`.
struct SpinLock<T> {
    taken: std::sync::atomic::AtomicBool,
    value: std::cell::UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, which only the thread that set
// `taken` holds.
unsafe impl<T: Send> Sync for SpinLock<T> {}

struct SpinGuard<'a, T>(&'a SpinLock<T>);

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock.
        unsafe { &*self.0.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.0
            .taken
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

impl<T> Lockable for SpinLock<T> {
    type Guard<'a>
        = SpinGuard<'a, T>
    where
        T: 'a;

    fn lock(&self) -> SpinGuard<'_, T> {
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            thread::yield_now();
        }
    }

    fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        (self.taken.compare_exchange(false, true, Acquire, Relaxed)).ok()?;
        Some(SpinGuard(self))
    }
}

fn spin<T>(value: T) -> SpinLock<T> {
    SpinLock {
        taken: std::sync::atomic::AtomicBool::new(false),
        value: std::cell::UnsafeCell::new(value),
    }
}

#[test]
fn a_users_own_lock_in_tracked_reports_its_holder_within_5_percent_and_its_order() {
    let lock = Arc::new(Tracked::new(spin(7u32)));
    let lock_made = line!() - 1;
    let mut last = (0, 0);
    let mut truth = 0;
    for attempt in 1..=5 {
        let (holding_tx, holding_rx) = mpsc::channel();
        let held = lock.clone();
        let holder = thread::spawn(move || {
            let (g, line) = (held.lock(), line!());
            let t0 = Instant::now();
            holding_tx.send(line).unwrap();
            thread::sleep(Duration::from_millis(20));
            let t1 = Instant::now();
            drop(g);
            (t0, t1)
        });
        let holder_line = holding_rx.recv().unwrap();
        let w0 = Instant::now();
        let (g, wait_line) = (lock.lock(), line!());
        let w1 = Instant::now();
        assert_eq!(*g, 7, "the guard derefs to the lock's value");
        drop(g);
        let hold = holder.join().unwrap();
        // Both sums run over every attempt: one waiting line, one holding line.
        truth += overlap((w0, w1), hold);
        let charged = held_by(&report(), wait_line)
            .get(&holder_line)
            .copied()
            .unwrap_or(0);
        println!(
            "attempt {attempt}: charged {charged} ns to line {holder_line}, measured {truth} ns"
        );
        let r = report();
        let s = site(&r, wait_line).expect("the waiting line is reported");
        // A waiter descheduled past the 20 ms hold did not wait: counted, not contended.
        assert_eq!(s.acquisitions, attempt, "{s:?}");
        assert!(s.contended <= attempt, "{s:?}");
        last = (charged, truth);
        if truth > 0 && within(&BTreeMap::from([(holder_line, last)]), 0.05) {
            break;
        }
    }
    if !within(&BTreeMap::from([(0, last)]), 0.05) {
        // Off by more than a quarter is not load but a fault of the books.
        assert!(
            within(&BTreeMap::from([(0, last)]), 0.25),
            "attribution off by more than 25 %: {last:?}"
        );
        println!("inconclusive: the machine was too loaded for a 5 % check in five runs");
    }

    // Its class takes part in the lock-order graph with std-API locks.
    let m = Arc::new(Mutex::new(()));
    let m_made = line!() - 1;
    let (l1, m1) = (lock.clone(), m.clone());
    thread::spawn(move || {
        let _gl = l1.lock();
        let _gm = m1.lock().unwrap();
    })
    .join()
    .unwrap();
    {
        let _gm = m.lock().unwrap();
        let _gl = lock.try_lock().expect("free: the other thread is gone");
    }
    // `try_lock` cannot deadlock: no edge, no cycle yet.
    let ours = |r: &LockReport| {
        r.cycles
            .iter()
            .filter(|c| c.edges.iter().any(|e| e.held.line() == lock_made))
            .count()
    };
    assert_eq!(ours(&report()), 0);
    {
        let _gm = m.lock().unwrap();
        let _gl = lock.lock();
    }
    let r = report();
    assert_eq!(ours(&r), 1, "{:#?}", r.cycles);
    let c = r
        .cycles
        .iter()
        .find(|c| c.edges.iter().any(|e| e.held.line() == lock_made));
    let mut made: Vec<(u32, u32)> = c
        .unwrap()
        .edges
        .iter()
        .map(|e| (e.held.line(), e.taken.line()))
        .collect();
    made.sort();
    let mut want = vec![(lock_made, m_made), (m_made, lock_made)];
    want.sort();
    assert_eq!(made, want);
}
