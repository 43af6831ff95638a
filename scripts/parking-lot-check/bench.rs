//! Lock throughput, built twice by run.sh: against parking_lot with its wait loops
//! annotated and against the same copy untouched. Prints `case operations-per-second`,
//! one line a case. Nothing is written: the annotated build records and exits.
use parking_lot::{Condvar, Mutex, RwLock};
use std::thread;
use std::time::Instant;

/// Threads each taking a `Mutex<u64>` `per_thread` times around an increment.
fn mutex(threads: usize, per_thread: u64) -> f64 {
    let total = Mutex::new(0u64);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..per_thread {
                    *total.lock() += 1;
                }
            });
        }
    });
    assert_eq!(*total.lock(), threads as u64 * per_thread);
    (threads as u64 * per_thread) as f64 / start.elapsed().as_secs_f64()
}

/// Readers summing a vector beside one writer pushing to it; operations of both.
fn rwlock(readers: usize, per_thread: usize) -> f64 {
    let data = RwLock::new(vec![0u64; 64]);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..readers {
            s.spawn(|| {
                let mut sum = 0u64;
                for _ in 0..per_thread {
                    sum = sum.wrapping_add(data.read().iter().sum::<u64>());
                }
                std::hint::black_box(sum);
            });
        }
        s.spawn(|| {
            for i in 0..per_thread {
                let mut v = data.write();
                let n = v.len();
                v[i % n] += 1;
            }
        });
    });
    ((readers + 1) * per_thread) as f64 / start.elapsed().as_secs_f64()
}

/// Two threads passing a turn through a `Mutex<bool>` and a `Condvar`; turns per second.
fn condvar_ping_pong(turns: usize) -> f64 {
    let state = (Mutex::new(false), Condvar::new());
    let start = Instant::now();
    thread::scope(|s| {
        for mine in [false, true] {
            let (m, cv) = (&state.0, &state.1);
            s.spawn(move || {
                for _ in 0..turns {
                    let mut turn = m.lock();
                    while *turn != mine {
                        cv.wait(&mut turn);
                    }
                    *turn = !mine;
                    cv.notify_one();
                }
            });
        }
    });
    (2 * turns) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    println!("Mutex, 2 threads\t{:.0}", mutex(2, 2_000_000));
    println!("Mutex, 4 threads\t{:.0}", mutex(4, 1_000_000));
    println!("RwLock, 3 readers + 1 writer\t{:.0}", rwlock(3, 200_000));
    println!("Condvar ping-pong\t{:.0}", condvar_ping_pong(20_000));
}
