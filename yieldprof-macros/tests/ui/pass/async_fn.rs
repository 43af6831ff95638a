#![deny(warnings)]

use std::future::Future;
use std::num::ParseIntError;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn yield_now() -> YieldOnce {
    YieldOnce(false)
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

#[yieldprof::instrument_wait]
async fn parse_after_yields(text: &str, yields: u32) -> Result<u32, ParseIntError> {
    if text.is_empty() {
        return Ok(0);
    }
    for _ in 0..yields {
        yield_now().await;
    }
    let n: u32 = text.parse()?;
    Ok(n)
}

#[yieldprof::instrument_wait]
async fn unit_with_early_return(skip: bool) {
    if skip {
        return;
    }
    std::hint::spin_loop();
}

#[yieldprof::instrument_wait]
async fn boxed_error(text: &str) -> Result<u32, Box<dyn std::error::Error>> {
    // `?` converts into the fn's own error type.
    Ok(text.parse::<u32>()?)
}

#[yieldprof::instrument_wait]
async fn calls_other(text: String) -> Option<u32> {
    let n = parse_after_yields(&text, 1).await.ok()?;
    Some(n * 2)
}

fn main() {
    assert_eq!(block_on(parse_after_yields("12", 2)), Ok(12));
    assert!(block_on(parse_after_yields("x", 1)).is_err());
    assert_eq!(block_on(parse_after_yields("", 5)), Ok(0));
    block_on(unit_with_early_return(true));
    block_on(unit_with_early_return(false));
    assert!(block_on(boxed_error("nope")).is_err());
    assert_eq!(block_on(calls_other("4".to_string())), Some(8));

    let profile = yieldprof::snapshot();
    let s = profile.site("parse_after_yields").unwrap();
    assert_eq!(s.episodes, 4);
    assert_eq!(s.calls_of(yieldprof::Kind::AsyncYield), 4);
    assert_eq!(s.ns_of(yieldprof::Kind::Yield), 0);
    let s = profile.site("unit_with_early_return").unwrap();
    assert_eq!((s.episodes, s.calls_of(yieldprof::Kind::Spin)), (2, 1));
}
