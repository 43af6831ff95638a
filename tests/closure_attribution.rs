//! A wait written in a closure or async block of an annotated function is charged to
//! that function's site wherever the closure runs: a scoped thread, an iterator drained
//! after the function returned, a future polled on another thread. The site's episodes
//! stay one per call. (Own test binary: it reads whole folded stacks.)

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use yieldprof::report::Metric;

#[yieldprof::instrument_wait]
fn fan_out(workers: usize) {
    std::thread::scope(|s| {
        for i in 0..workers {
            std::thread::Builder::new()
                .name(format!("scoped-{i}"))
                .spawn_scoped(s, || std::thread::sleep(Duration::from_millis(1)))
                .unwrap();
        }
    });
}

#[yieldprof::instrument_wait]
fn lazy_yields(n: u32) -> impl Iterator<Item = u32> {
    (0..n).map(|i| {
        std::thread::yield_now();
        i
    })
}

#[yieldprof::instrument_wait]
fn make_task() -> impl Future<Output = u32> {
    async move {
        std::thread::sleep(Duration::from_millis(1));
        7
    }
}

/// `count` of each folded stack (calls metric) that ends in `tail`, by its thread.
fn stacks_ending(tail: &str) -> Vec<(String, u64)> {
    yieldprof::snapshot()
        .folded(Metric::Calls)
        .into_iter()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            stack.ends_with(tail).then(|| {
                (
                    stack.split(';').next().unwrap().to_string(),
                    n.parse().unwrap(),
                )
            })
        })
        .collect()
}

#[test]
fn a_scoped_threads_waits_are_the_sites() {
    fan_out(2);
    let mut got = stacks_ending("closure_attribution::fan_out;[sleep]");
    got.sort();
    assert_eq!(
        got,
        [("scoped-0".to_string(), 1), ("scoped-1".to_string(), 1)]
    );
    assert_eq!(yieldprof::snapshot().site("fan_out").unwrap().episodes, 1);
}

#[test]
fn an_iterator_drained_after_the_call_charges_the_site() {
    let me = std::thread::current().name().unwrap().to_string();
    let sum: u32 = lazy_yields(5).sum();
    assert_eq!(sum, 10);
    assert_eq!(
        stacks_ending("closure_attribution::lazy_yields;[yield]"),
        [(me, 5)]
    );
    assert_eq!(
        yieldprof::snapshot().site("lazy_yields").unwrap().episodes,
        1
    );
}

#[test]
fn a_future_polled_on_another_thread_charges_the_site() {
    let task = make_task();
    let out = std::thread::Builder::new()
        .name("poller".into())
        .spawn(move || {
            let mut task = pin!(task);
            let mut cx = Context::from_waker(Waker::noop());
            loop {
                if let Poll::Ready(v) = task.as_mut().poll(&mut cx) {
                    return v;
                }
            }
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out, 7);
    assert_eq!(
        stacks_ending("closure_attribution::make_task;[sleep]"),
        [("poller".to_string(), 1)]
    );
    assert_eq!(yieldprof::snapshot().site("make_task").unwrap().episodes, 1);
}
