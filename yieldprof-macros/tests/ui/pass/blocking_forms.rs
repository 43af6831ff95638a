// Every blocking form the macro recognises, each timed (counted, when awaited) as its
// kind. Types that only share the method names (parking_lot's, crossbeam's, tokio's)
// are matched the same way: the rules are names and argument counts.

use std::sync::{mpsc, Barrier, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};
use yieldprof::Kind;

/// parking_lot's shapes: `lock()` without a `Result`, `wait(&mut guard)`.
mod parking_lot {
    pub struct Mutex<T>(pub std::sync::Mutex<T>);
    impl<T> Mutex<T> {
        pub fn lock(&self) -> std::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap()
        }
    }
    pub struct RwLock<T>(pub std::sync::RwLock<T>);
    impl<T> RwLock<T> {
        pub fn upgradable_read(&self) -> std::sync::RwLockReadGuard<'_, T> {
            self.0.read().unwrap()
        }
    }
    pub struct Condvar;
    impl Condvar {
        pub fn wait_for<G>(&self, _guard: &mut G, _d: std::time::Duration) {}
        pub fn wait_until<G>(&self, _guard: &mut G, _t: std::time::Instant) {}
    }
}

/// crossbeam-channel's shapes, and its `select!` (here a stand-in that picks the
/// first arm).
mod crossbeam_channel {
    pub struct Sender<T>(pub std::sync::mpsc::SyncSender<T>);
    impl<T> Sender<T> {
        pub fn send_timeout(&self, v: T, _d: std::time::Duration) -> Result<(), T> {
            self.0.try_send(v).map_err(|_| unreachable!())
        }
    }
    pub struct Receiver<T>(pub std::sync::mpsc::Receiver<T>);
    impl<T> Receiver<T> {
        pub fn recv_deadline(&self, _t: std::time::Instant) -> Option<T> {
            self.0.try_recv().ok()
        }
    }
    #[macro_export]
    macro_rules! select {
        (recv($r:expr) -> $v:ident => $body:expr) => {{
            let $v = $r.0.try_recv();
            $body
        }};
    }
}

/// crossbeam_utils' `Backoff`.
mod crossbeam_utils {
    pub struct Backoff;
    impl Backoff {
        pub fn new() -> Self {
            Backoff
        }
        pub fn spin(&self) {}
        pub fn snooze(&self) {}
    }
}

#[yieldprof::instrument_wait]
fn sync_forms() -> u32 {
    // A first wait opens the episode: a free lock before it would not be a wait.
    std::thread::yield_now();
    let m = Mutex::new(1u32);
    let rw = RwLock::new(2u32);
    let cv = Condvar::new();
    let mut n = *m.lock().unwrap();
    n += *rw.read().unwrap();
    *rw.write().unwrap() += 1;
    let g = m.lock().unwrap();
    let (g, _) = cv.wait_timeout(g, Duration::ZERO).unwrap();
    let g = cv.wait_while(g, |_| false).unwrap();
    let (g, _) = cv
        .wait_timeout_while(g, Duration::ZERO, |_| false)
        .unwrap();
    drop(g);
    let (tx, rx) = mpsc::sync_channel(2);
    tx.send(1).unwrap();
    n += rx.recv().unwrap();
    n += rx.recv_timeout(Duration::ZERO).unwrap_or(0);
    n += std::thread::spawn(|| 1).join().unwrap();
    std::thread::scope(|s| s.spawn(|| ()).join().unwrap());
    Barrier::new(1).wait();
    n
}

#[yieldprof::instrument_wait]
fn lookalike_crates() -> u32 {
    std::thread::yield_now();
    let m = parking_lot::Mutex(Mutex::new(1u32));
    let rw = parking_lot::RwLock(RwLock::new(1u32));
    let mut g = m.lock();
    parking_lot::Condvar.wait_for(&mut g, Duration::ZERO);
    parking_lot::Condvar.wait_until(&mut g, Instant::now());
    let n = *g + *rw.upgradable_read();
    drop(g);
    let (tx, rx) = mpsc::sync_channel(1);
    let tx = crossbeam_channel::Sender(tx);
    let rx = crossbeam_channel::Receiver(rx);
    tx.send_timeout(2, Duration::ZERO).unwrap();
    let got = select! { recv(rx) -> v => v.unwrap_or(0) };
    let none = rx.recv_deadline(Instant::now()).unwrap_or(0);
    let backoff = crossbeam_utils::Backoff::new();
    backoff.spin();
    backoff.snooze();
    n + got + none
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// tokio's shapes: futures from `lock()`, `notified()`, `recv()`, `send(v)`, `wait()`.
struct Tokio;
impl Tokio {
    async fn lock(&self) {}
    async fn notified(&self) {}
    async fn recv(&self) -> Option<u32> {
        Some(1)
    }
    async fn send(&self, _v: u32) {}
    async fn wait(&self) {}
}

#[yieldprof::instrument_wait]
async fn awaited_forms(t: &Tokio) -> Option<u32> {
    t.lock().await;
    t.notified().await;
    t.send(1).await;
    t.wait().await;
    t.recv().await
}

fn main() {
    assert_eq!(sync_forms(), 5);
    assert_eq!(lookalike_crates(), 4);
    assert_eq!(block_on(awaited_forms(&Tokio)), Some(1));
    let p = yieldprof::snapshot();

    let s = p.site("sync_forms").unwrap();
    let kinds = |s: &yieldprof::report::SiteStats| {
        [Kind::Lock, Kind::Condvar, Kind::Channel, Kind::Join, Kind::Barrier, Kind::Backoff]
            .map(|k| s.calls_of(k))
    };
    assert_eq!(kinds(&s), [4, 3, 3, 2, 1, 0], "{:?}", s.calls);

    let s = p.site("lookalike_crates").unwrap();
    assert_eq!(kinds(&s), [2, 2, 3, 0, 0, 2]);

    let s = p.site("awaited_forms").unwrap();
    assert_eq!(kinds(&s), [1, 1, 2, 0, 1, 0]);
    assert!(s.calls.iter().all(|c| c.ns == 0), "awaited: counted, not timed");
}
