use std::pin::Pin;
use std::rc::Rc;

struct Waiter(u32);

impl Waiter {
    #[yieldprof::instrument_wait]
    fn by_value(self) -> u32 {
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    fn by_mut_value(mut self) -> u32 {
        self.0 += 1;
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    fn by_ref(&self) -> u32 {
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    fn by_mut(&mut self) {
        self.0 += 1;
        std::hint::spin_loop();
    }

    #[yieldprof::instrument_wait]
    fn boxed(self: Box<Self>) -> u32 {
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    fn pinned(self: Pin<&mut Self>) -> u32 {
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    fn rc(self: Rc<Self>) -> u32 {
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    fn associated() -> Self {
        std::hint::spin_loop();
        Self(7)
    }

    #[yieldprof::instrument_wait]
    async fn async_ref(&self) -> u32 {
        std::hint::spin_loop();
        self.0
    }

    #[yieldprof::instrument_wait]
    async fn async_mut_value(mut self) -> u32 {
        self.0 += 1;
        self.0
    }
}

trait Wait {
    fn wait(&self) -> u32;

    #[yieldprof::instrument_wait]
    fn provided(&self) -> u32 {
        std::hint::spin_loop();
        self.wait()
    }
}

impl Wait for Waiter {
    #[yieldprof::instrument_wait]
    fn wait(&self) -> u32 {
        std::hint::spin_loop();
        self.0
    }
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

fn main() {
    assert_eq!(Waiter(1).by_value(), 1);
    assert_eq!(Waiter(1).by_mut_value(), 2);
    let mut w = Waiter(1);
    assert_eq!(w.by_ref(), 1);
    w.by_mut();
    assert_eq!(Box::new(Waiter(3)).boxed(), 3);
    assert_eq!(Pin::new(&mut w).pinned(), 2);
    assert_eq!(Rc::new(Waiter(4)).rc(), 4);
    assert_eq!(Waiter::associated().0, 7);
    assert_eq!(block_on(w.async_ref()), 2);
    assert_eq!(block_on(Waiter(5).async_mut_value()), 6);
    assert_eq!(w.provided(), 2);

    let profile = yieldprof::snapshot();
    for name in [
        "by_value",
        "by_mut_value",
        "by_ref",
        "by_mut",
        "boxed",
        "pinned",
        "rc",
        "associated",
        "async_ref",
        "provided",
        "wait",
    ] {
        let s = profile
            .site(name)
            .unwrap_or_else(|| panic!("no site {name}"));
        assert_eq!(s.calls_of(yieldprof::Kind::Spin), 1, "{name}");
    }
}
