// With `crate = path`, every runtime item is looked up under `path::__private`: this
// stand-in runtime counts what the generated code calls.

mod fake {
    pub mod __private {
        use std::sync::atomic::{AtomicU32, Ordering};

        pub static ENTERED: AtomicU32 = AtomicU32::new(0);
        pub static CALLED: AtomicU32 = AtomicU32::new(0);
        pub static COUNTED: AtomicU32 = AtomicU32::new(0);
        pub static SPUN: AtomicU32 = AtomicU32::new(0);
        pub static ASKED: AtomicU32 = AtomicU32::new(0);

        pub struct AskedSite;
        impl AskedSite {
            pub const fn new(_file: &'static str, _line: u32, _column: u32) -> Self {
                AskedSite
            }
        }

        pub fn asked(_site: &'static AskedSite, d: std::time::Duration) -> std::time::Duration {
            assert_eq!(d, std::time::Duration::ZERO);
            ASKED.fetch_add(1, Ordering::Relaxed);
            d
        }

        pub struct EpisodeSite(pub Option<&'static str>, pub &'static str);
        impl EpisodeSite {
            pub const fn new(
                name: Option<&'static str>,
                _module: &'static str,
                function: &'static str,
                _file: &'static str,
                _line: u32,
            ) -> Self {
                EpisodeSite(name, function)
            }

            pub const fn within(self, _owner: fn() -> &'static str) -> Self {
                self
            }

            pub const fn with_budget(self, budget: &'static [Limit]) -> Self {
                assert!(matches!(budget, [Limit::Calls(Kind::Yield, 1)]));
                self
            }
        }

        pub enum Limit {
            Calls(Kind, u64),
        }

        pub enum Kind {
            Spin,
            Yield,
            Sleep,
            Park,
            AsyncYield,
        }

        pub struct CallSite(pub Kind);
        impl CallSite {
            pub const fn new(kind: Kind, _file: &'static str, _line: u32, _column: u32) -> Self {
                CallSite(kind)
            }
        }

        pub fn enter(site: &'static EpisodeSite) {
            assert_eq!(site.0, Some("fake"));
            assert!(site.1 == "waits" || site.1 == "waits_async", "{}", site.1);
            ENTERED.fetch_add(1, Ordering::Relaxed);
        }

        pub fn enter_fn(site: &'static EpisodeSite) {
            enter(site)
        }

        pub fn call_fn(site: &'static CallSite) {
            assert!(matches!(
                site.0,
                Kind::Spin | Kind::Yield | Kind::Sleep | Kind::Park
            ));
            CALLED.fetch_add(1, Ordering::Relaxed);
        }

        pub struct SpinCounts<const N: usize>;
        impl<const N: usize> SpinCounts<N> {
            pub fn new(_episode: (), sites: &'static [CallSite; N]) -> Self {
                assert!(sites.iter().all(|s| matches!(s.0, Kind::Spin)));
                SpinCounts
            }

            pub fn hit(&self, i: usize) {
                assert!(i < N);
                SPUN.fetch_add(1, Ordering::Relaxed);
            }
        }

        pub fn timed_fn<T>(_guard: (), value: T) -> T {
            value
        }

        pub fn count(site: &'static CallSite) {
            assert!(matches!(site.0, Kind::AsyncYield));
            COUNTED.fetch_add(1, Ordering::Relaxed);
        }

        pub fn instrument<F: std::future::Future>(site: &'static EpisodeSite, inner: F) -> F {
            enter(site);
            inner
        }
    }
}

#[yieldprof::instrument_wait(crate = fake, name = "fake", budget(max_yields = 1))]
fn waits() {
    std::hint::spin_loop();
    std::thread::yield_now();
    std::thread::sleep(std::time::Duration::ZERO);
}

mod task {
    pub async fn yield_now() {}
}

#[yieldprof::instrument_wait(name = "fake", crate = crate::fake)]
async fn r#waits_async() {
    task::yield_now().await;
}

fn main() {
    use std::sync::atomic::Ordering::Relaxed;
    waits();
    let mut fut = std::pin::pin!(waits_async());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(std::future::Future::poll(fut.as_mut(), &mut cx).is_ready());
    assert_eq!(fake::__private::ENTERED.load(Relaxed), 2);
    assert_eq!(fake::__private::CALLED.load(Relaxed), 2);
    assert_eq!(fake::__private::SPUN.load(Relaxed), 1);
    assert_eq!(fake::__private::COUNTED.load(Relaxed), 1);
    assert_eq!(fake::__private::ASKED.load(Relaxed), 1);
    assert!(yieldprof::snapshot().sites().is_empty());
}
