#![no_implicit_prelude]
#![deny(warnings)]

// Every budget key, under no prelude: the declared limits reach the runtime and
// `check_declared` checks them.

#[::yieldprof::instrument_wait(
    name = "bounded",
    budget(
        max_episodes = 3,
        max_spins = 6,
        max_yields = 3,
        max_sleeps = 0,
        max_parks = 0,
        max_async_yields = 0,
        max_spins_per_episode = 2,
        max_yields_per_episode = 1.0,
        max_sleeps_per_episode = 0,
        max_parks_per_episode = 0,
        max_async_yields_per_episode = 0,
        max_wall_share = 1,
    )
)]
fn bounded() {
    ::std::hint::spin_loop();
    ::std::hint::spin_loop();
    ::std::thread::yield_now();
}

#[::yieldprof::instrument_wait(budget(max_episodes = 1))]
async fn once() {}

fn main() {
    use ::std::future::Future;
    let session = ::yieldprof::Session::this_thread();
    for _ in 0..3 {
        bounded();
    }
    let mut fut = ::std::pin::pin!(once());
    let mut cx = ::std::task::Context::from_waker(::std::task::Waker::noop());
    ::std::assert!(fut.as_mut().poll(&mut cx).is_ready());
    let report = session.finish();
    ::std::assert_eq!(report.site("bounded").unwrap().budget.len(), 12);
    ::std::assert!(report.check_declared().is_ok());

    let session = ::yieldprof::Session::this_thread();
    for _ in 0..4 {
        bounded();
    }
    let err = session.finish().check_declared().unwrap_err();
    // 4 episodes, 8 spins, 4 yields.
    ::std::assert_eq!(err.violations.len(), 3);
}
