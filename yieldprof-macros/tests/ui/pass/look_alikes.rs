#![deny(warnings)]

// Calls that share a name with a wait but not its shape are left alone, and a call the
// rules take for a wait by mistake still compiles and keeps its value.

use std::future::Future;
use std::io::Read;

struct Text(String);

impl Text {
    // A `join` without arguments that returns a borrow: matched as a join by the
    // rules, which must keep the borrow valid.
    fn join(&self) -> &str {
        &self.0
    }
    // `lock` and `wait` with arguments the rules do not expect.
    fn lock(&self, n: usize) -> &str {
        &self.0[..n]
    }
    fn wait_timeout(&self, _d: std::time::Duration) -> usize {
        self.0.len()
    }
}

fn sleep(n: u32) -> u32 {
    n + 1
}

fn park() -> u32 {
    7
}

fn make() -> std::sync::Mutex<Vec<u32>> {
    std::sync::Mutex::new(vec![1, 2, 3])
}

macro_rules! select {
    ($e:expr) => {
        $e
    };
}

#[yieldprof::instrument_wait]
fn left_alone() -> usize {
    let mut buf = [0u8; 8];
    let read = std::io::Cursor::new(b"abc").read(&mut buf).unwrap(); // io::Read::read(&mut buf)
    let joined = ["a", "b"].join(","); // slice.join(",")
    let t = Text("hello".into());
    let locked = t.lock(2); // a user's own `lock` with an argument
    let timed = t.wait_timeout(std::time::Duration::ZERO); // one argument: not a condvar
    let own = sleep(1) + park(); // bare names, not imported from std::thread
    read + joined.len() + locked.len() + timed + own as usize
}

#[yieldprof::instrument_wait]
async fn async_select() -> u32 {
    // In async code a bare `select!` is tokio's or futures': not a blocking wait.
    select!(5)
}

#[yieldprof::instrument_wait]
fn misfires_still_compile() -> usize {
    let t = Text("borrowed".into());
    let s: &str = t.join(); // taken for a JoinHandle::join: timed, borrow kept
    // A temporary receiver lives to the end of the statement, as unwrapped.
    let n = make().lock().unwrap().len();
    s.len() + n
}

fn main() {
    assert_eq!(left_alone(), 3 + 3 + 2 + 5 + 9);
    let mut fut = std::pin::pin!(async_select());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert_eq!(fut.as_mut().poll(&mut cx), std::task::Poll::Ready(5));
    assert_eq!(misfires_still_compile(), 8 + 3);

    let p = yieldprof::snapshot();
    assert!(p.site("left_alone").unwrap().calls.is_empty());
    assert!(p.site("async_select").unwrap().calls.is_empty());
    let m = p.site("misfires_still_compile").unwrap();
    assert_eq!(m.calls_of(yieldprof::Kind::Join), 1);
    assert_eq!(m.calls_of(yieldprof::Kind::Lock), 1);
}
