use std::future::Future;

#[yieldprof::instrument_wait]
fn evens(limit: u32) -> impl Iterator<Item = u32> {
    std::thread::yield_now();
    (0..limit).filter(|n| n % 2 == 0)
}

// A plain fn returning a future: its episode is building the future, not polling it.
#[yieldprof::instrument_wait]
fn later(n: u32) -> impl Future<Output = u32> {
    std::hint::spin_loop();
    async move { n + 1 }
}

#[yieldprof::instrument_wait]
async fn shown() -> impl std::fmt::Display {
    std::hint::spin_loop();
    "done"
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

fn main() {
    assert_eq!(evens(5).collect::<Vec<_>>(), [0, 2, 4]);
    let fut = later(1);
    assert_eq!(yieldprof::snapshot().site("later").unwrap().episodes, 1);
    assert_eq!(block_on(fut), 2);
    assert_eq!(block_on(shown()).to_string(), "done");
    let profile = yieldprof::snapshot();
    assert_eq!(
        profile
            .site("evens")
            .unwrap()
            .calls_of(yieldprof::Kind::Yield),
        1
    );
    assert_eq!(
        profile
            .site("shown")
            .unwrap()
            .calls_of(yieldprof::Kind::Spin),
        1
    );
}
