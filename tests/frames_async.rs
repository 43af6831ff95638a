//! `frame!` in async code, on a single-threaded executor (a frame's guard is not `Send`,
//! so only such executors can hold one across `.await`): frames closed out of order
//! leave no stale frame on the thread, and `frame!(name, future)` keeps a frame to its
//! own future's polls. (Own test binary: each test reads its thread's stacks.)

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use yieldprof::report::Metric;

/// Pending once, then ready: the executor polls the other tasks in between.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn yield_once() -> YieldOnce {
    YieldOnce(false)
}

/// Polls every task in turn, in order, until all are done.
fn run_all(mut tasks: Vec<Pin<Box<dyn Future<Output = ()>>>>) {
    let mut cx = Context::from_waker(Waker::noop());
    while !tasks.is_empty() {
        tasks.retain_mut(|t| t.as_mut().poll(&mut cx).is_pending());
    }
}

#[yieldprof::instrument_wait]
fn poll() {
    std::thread::yield_now();
}

/// This thread's folded stacks that end in `poll;[yield]`, without the thread name.
fn poll_stacks() -> Vec<String> {
    let me = std::thread::current().name().unwrap().to_string();
    yieldprof::snapshot()
        .folded(Metric::Calls)
        .into_iter()
        .filter_map(|l| {
            let stack = l.rsplit_once(' ')?.0.to_string();
            let rest = stack.strip_prefix(&format!("{me};"))?.to_string();
            rest.ends_with("poll;[yield]").then_some(rest)
        })
        .collect()
}

#[test]
fn frames_held_across_await_and_closed_out_of_order_leave_no_stale_frame() {
    // `a` opens, then `b` inside it (another task, while `a` waits); `a` ends first.
    run_all(vec![
        Box::pin(async {
            yieldprof::frame!("a");
            yield_once().await;
        }),
        Box::pin(async {
            yieldprof::frame!("b");
            yield_once().await;
            yield_once().await;
        }),
    ]);
    // Both tasks are done: this thread is in no frame.
    poll();
    assert_eq!(poll_stacks(), ["frames_async::poll;[yield]"]);
}

#[test]
fn a_frame_over_a_future_holds_only_that_futures_polls() {
    run_all(vec![
        Box::pin(yieldprof::frame!("served", async {
            poll();
            yield_once().await;
            poll();
        })),
        // Polled while `served` waits: not inside it.
        Box::pin(async { poll() }),
    ]);
    let mut stacks = poll_stacks();
    stacks.sort();
    assert_eq!(
        stacks,
        [
            "frames_async::poll;[yield]",
            "served;frames_async::poll;[yield]"
        ]
    );
    let served = yieldprof::snapshot()
        .folded(Metric::Calls)
        .into_iter()
        .find(|l| l.ends_with(";served;frames_async::poll;[yield] 2"));
    assert!(served.is_some(), "both polls inside `served` are counted");
}
