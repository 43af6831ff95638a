#![no_implicit_prelude]

// Generated code names only `::core::…` and `::yieldprof::__private::…`.

#[::yieldprof::instrument_wait]
fn sync_wait(n: u32) -> ::std::option::Option<u32> {
    ::std::hint::spin_loop();
    ::std::thread::yield_now();
    ::std::thread::sleep(::std::time::Duration::ZERO);
    ::std::thread::park_timeout(::std::time::Duration::ZERO);
    ::std::option::Option::Some(n)
}

#[::yieldprof::instrument_wait(name = "no prelude async")]
async fn async_wait(n: u32) -> u32 {
    ::std::hint::spin_loop();
    n
}

fn main() {
    use ::std::future::Future;
    ::std::assert_eq!(sync_wait(3), ::std::option::Option::Some(3));
    let mut fut = ::std::pin::pin!(async_wait(4));
    let mut cx = ::std::task::Context::from_waker(::std::task::Waker::noop());
    ::std::assert_eq!(fut.as_mut().poll(&mut cx), ::std::task::Poll::Ready(4));
    let s = ::yieldprof::snapshot().site("sync_wait").unwrap();
    ::std::assert_eq!(s.calls.len(), 4);
}
