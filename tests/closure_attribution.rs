//! A wait written in a closure or async block of an annotated function is charged to
//! that function's site wherever the closure runs: a scoped thread, an iterator drained
//! after the function returned, a future polled on another thread, rayon's workers. The
//! site's episodes stay one per call. An `#[async_trait]` method is an async episode like
//! an `async fn`. (Own test binary: it reads whole folded stacks.)

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

#[yieldprof::instrument_wait]
fn parallel_naps(pool: &rayon::ThreadPool, items: u32) {
    use rayon::prelude::*;
    pool.install(|| {
        (0..items)
            .into_par_iter()
            .for_each(|_| std::thread::sleep(Duration::from_millis(1)))
    });
}

#[async_trait::async_trait]
trait Inbox {
    async fn next(&self, pending: u32) -> u32;
}

struct Slow;

#[async_trait::async_trait]
impl Inbox for Slow {
    #[yieldprof::instrument_wait]
    async fn next(&self, pending: u32) -> u32 {
        PendingFor(pending).await;
        std::thread::sleep(Duration::from_millis(1));
        pending
    }
}

/// Pending `self.0` times, then ready.
struct PendingFor(u32);

impl Future for PendingFor {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        Poll::Pending
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

#[test]
fn rayons_workers_charge_the_site() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("rayon-{i}"))
        .build()
        .unwrap();
    parallel_naps(&pool, 8);
    let got = stacks_ending("closure_attribution::parallel_naps;[sleep]");
    assert_eq!(got.iter().map(|(_, n)| n).sum::<u64>(), 8, "{got:?}");
    assert!(got.iter().all(|(t, _)| t.starts_with("rayon-")), "{got:?}");
    assert_eq!(
        yieldprof::snapshot()
            .site("parallel_naps")
            .unwrap()
            .episodes,
        1
    );
}

#[test]
fn an_async_trait_method_is_an_async_episode() {
    let me = std::thread::current().name().unwrap().to_string();
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0;
    let mut task = Slow.next(3);
    let out = loop {
        polls += 1;
        if let Poll::Ready(v) = task.as_mut().poll(&mut cx) {
            break v;
        }
    };
    assert_eq!((out, polls), (3, 4));
    assert_eq!(
        stacks_ending("closure_attribution::next;[sleep]"),
        [(me, 1)]
    );
    let profile = yieldprof::snapshot();
    let site = profile.site("next").unwrap();
    // One episode over its four polls, not one per poll, nor a constructor's instant.
    assert_eq!(site.episodes, 1);
    assert!(site.durations.min().unwrap() >= 1_000_000);
    let sleeps = &site.calls;
    assert!(
        sleeps.iter().any(|c| c.site.in_async),
        "the sleep is a blocking call in async code: {sleeps:?}"
    );
}
