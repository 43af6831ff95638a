//! A pool's workers that start and exit together. An exiting thread leaves its
//! recording uncopied (its copy would cost the pool's start); a report copies it, or
//! the exit of a thread past 64 such ones copies the oldest. These tests check that a
//! copy made that late is the same as one made at the exit.

use std::time::{Duration, Instant};

#[yieldprof::instrument_wait]
fn worker_first_wait() {
    std::thread::yield_now();
}

#[yieldprof::instrument_wait]
fn churned_wait() {
    std::thread::yield_now();
}

#[test]
fn an_exited_workers_life_ends_at_its_exit_not_at_the_report() {
    let t = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("start-life-{i}"))
                .spawn(worker_first_wait)
                .unwrap()
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    let pool_life = t.elapsed();
    // Time after every worker's exit, which no worker's life may hold.
    let after = (pool_life * 2).max(Duration::from_millis(200));
    std::thread::sleep(after);
    let p = yieldprof::snapshot();
    let workers: Vec<_> = p
        .threads()
        .into_iter()
        .filter(|t| t.name.starts_with("start-life-"))
        .collect();
    assert_eq!(workers.len(), 4, "every worker is in the report");
    // The report's clock is scaled by its own calibration: 5 % of room for it.
    let bound = pool_life.as_nanos() as u64 * 21 / 20;
    for w in workers {
        assert!(w.exited, "{} exited", w.name);
        assert!(
            w.wall_ns <= bound,
            "{}: life {} ns in a report read {} ns after the workers, \
             spawned and joined in {} ns",
            w.name,
            w.wall_ns,
            after.as_nanos(),
            pool_life.as_nanos()
        );
    }
}

#[test]
fn more_exited_threads_than_are_kept_uncopied_are_each_reported_once() {
    const THREADS: usize = 100;
    const EPISODES: usize = 3;
    for i in 0..THREADS {
        std::thread::Builder::new()
            .name(format!("start-churn-{i}"))
            .spawn(|| (0..EPISODES).for_each(|_| churned_wait()))
            .unwrap()
            .join()
            .unwrap();
    }
    let p = yieldprof::snapshot();
    let threads: Vec<_> = p
        .threads()
        .into_iter()
        .filter(|t| t.name.starts_with("start-churn-"))
        .collect();
    assert_eq!(threads.len(), THREADS, "each exited thread once");
    assert!(threads.iter().all(|t| t.exited));
    let mut names: Vec<_> = threads.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), THREADS, "no thread twice");
    let site = p
        .sites()
        .into_iter()
        .find(|s| s.name.ends_with("churned_wait"))
        .expect("the site");
    assert_eq!(
        site.episodes + site.returned_without_waiting,
        (THREADS * EPISODES) as u64,
        "every episode of every exited thread, copied at its exit or later"
    );
}
