use std::sync::{Mutex, Barrier};
use std::thread;
use std::time::Duration;
#[yieldprof::instrument_wait]
fn take(m: &Mutex<u32>) -> u32 { *m.lock().unwrap() }
#[yieldprof::instrument_wait]
fn busy(flag: &std::sync::atomic::AtomicBool) { while !flag.load(std::sync::atomic::Ordering::Relaxed) {} }
#[yieldprof::instrument_wait]
fn spinny(flag: &std::sync::atomic::AtomicBool) { while !flag.load(std::sync::atomic::Ordering::Relaxed) { std::hint::spin_loop() } }
fn main() {
    let m = Mutex::new(1);
    let b = Barrier::new(2);
    let flag = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| { let _g = m.lock().unwrap(); b.wait(); thread::sleep(Duration::from_millis(100)); });
        b.wait();
        for _ in 0..3 { take(&m); }
        s.spawn(|| busy(&flag));
        s.spawn(|| spinny(&flag));
        thread::sleep(Duration::from_millis(100));
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let p = yieldprof::snapshot();
    println!("{}", p.summary());
    for l in p.folded(yieldprof::report::Metric::Wall) { println!("{l}"); }
}
