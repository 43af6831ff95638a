//! Who makes a thread wait: a queue whose workers hold its lock for different times,
//! a flush that takes two locks in the opposite order of the workers (never at the
//! same time, so it never deadlocks), and a consumer woken through a condvar.
//!
//! `cargo run --release --example locks` writes `target/yieldprof/locks.*` (folded
//! stacks, flame graph, JSON, summary) and prints the summary's lock part.

use std::sync::Arc;
use std::thread;
use std::time::Duration;
use yieldprof::sync::{Condvar, Mutex};

struct Queue {
    items: Mutex<Vec<u64>>,
    stats: Mutex<u64>,
    ready: Condvar,
}

fn worker(q: &Queue, hold: Duration, rounds: u64) {
    for i in 0..rounds {
        let mut items = q.items.lock().unwrap();
        items.push(i);
        // Work done while holding the lock: the wait it causes is charged here.
        thread::sleep(hold);
        let mut stats = q.stats.lock().unwrap();
        *stats += 1;
        drop(stats);
        drop(items);
        q.ready.notify_one();
        thread::sleep(Duration::from_millis(1));
    }
}

fn flush(q: &Queue) {
    // The opposite order of `worker`: a potential deadlock, reported though this run
    // takes it once, after the workers are done.
    let stats = q.stats.lock().unwrap();
    let mut items = q.items.lock().unwrap();
    items.clear();
    drop(items);
    drop(stats);
}

fn consumer(q: &Queue, want: usize) {
    let mut items = q.items.lock().unwrap();
    while items.len() < want {
        items = q.ready.wait(items).unwrap();
    }
}

fn main() {
    let _guard = yieldprof::init();
    let q = Arc::new(Queue {
        items: Mutex::new(Vec::new()),
        stats: Mutex::new(0),
        ready: Condvar::new(),
    });
    let holds = [Duration::from_millis(1), Duration::from_millis(3)];
    let workers: Vec<_> = holds
        .into_iter()
        .map(|hold| {
            let q = q.clone();
            thread::spawn(move || worker(&q, hold, 40))
        })
        .collect();
    let c = {
        let q = q.clone();
        thread::spawn(move || consumer(&q, 60))
    };
    for w in workers {
        w.join().unwrap();
    }
    c.join().unwrap();
    flush(&q);
    println!("{}", yieldprof::snapshot().locks());
}
