// What is rewritten inside an annotated body and what is left alone.

macro_rules! spin_twice {
    () => {
        std::hint::spin_loop();
        std::hint::spin_loop();
    };
}

#[yieldprof::instrument_wait(name = "custom")]
fn scoped() -> u32 {
    // Closures and async blocks are part of the body: rewritten.
    let spin = || std::hint::spin_loop();
    spin();
    spin();
    let nested_closure = |n: u32| (0..n).for_each(|_| std::thread::yield_now());
    nested_closure(3);

    // Nested items are functions of their own: left alone.
    fn nested() {
        std::hint::spin_loop();
    }
    struct Helper;
    impl Helper {
        fn spin(&self) {
            std::hint::spin_loop();
        }
    }
    mod inner {
        pub fn spin() {
            std::hint::spin_loop();
        }
    }
    const ZERO: u32 = 0;
    nested();
    Helper.spin();
    inner::spin();

    // Macro invocations keep their tokens: left alone.
    spin_twice!();
    assert_eq!(
        {
            std::hint::spin_loop();
            ZERO
        },
        0
    );

    // `yieldprof::wait::spin()` counts itself; it is not wrapped a second time.
    yieldprof::wait::spin();
    ZERO
}

fn main() {
    assert_eq!(scoped(), 0);
    let s = yieldprof::snapshot().site("custom").unwrap();
    assert_eq!(s.name, "custom");
    assert_eq!(s.episodes, 1);
    // 2 from the closure, 1 from `yieldprof::wait::spin()`.
    assert_eq!(s.calls_of(yieldprof::Kind::Spin), 3);
    assert_eq!(s.calls_of(yieldprof::Kind::Yield), 3);
    assert_eq!(s.calls.len(), 3);
}
