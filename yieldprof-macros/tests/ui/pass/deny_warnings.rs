#![deny(warnings)]
#![forbid(unsafe_op_in_unsafe_fn)]

use std::thread;
use std::time::Duration;

// Safe stand-ins named like the libc calls, so the rewritten calls sit in every
// expression position (libc's own need an `unsafe` block around them).
fn sched_yield() -> i32 {
    0
}

struct Slept(u32);

impl Slept {
    fn check(self) -> u32 {
        self.0
    }
}

fn usleep(us: u32) -> Slept {
    Slept(us)
}

#[yieldprof::instrument_wait]
fn positions(spins: u32) -> i32 {
    #![allow(clippy::all)]
    let mut n = 0;
    // A statement whose value is not `()`, and a call leftmost in a statement.
    sched_yield();
    usleep(1).check();
    // Operand, condition, scrutinee, `let .. else`.
    n += sched_yield() + 1;
    while sched_yield() != 0 {}
    if sched_yield() == 0 {
        n += 1;
    }
    match sched_yield() {
        0 => n += 1,
        _ => thread::yield_now(),
    }
    let 0 = sched_yield() else {
        return -1;
    };
    // Arguments, closures, unit values, libc.
    drop(usleep(2));
    let unit: () = thread::park_timeout(Duration::ZERO);
    let () = unit;
    (0..spins).for_each(|_| std::hint::spin_loop());
    n += unsafe { libc::sched_yield() };
    n += unsafe { libc::usleep(0) } as i32;
    n
}

#[yieldprof::instrument_wait]
unsafe fn unsafe_wait(p: *const u32) -> u32 {
    std::hint::spin_loop();
    // SAFETY: the caller passes a valid pointer.
    unsafe { *p }
}

#[yieldprof::instrument_wait]
pub extern "C" fn extern_wait(n: u32) -> u32 {
    std::hint::spin_loop();
    n
}

#[yieldprof::instrument_wait]
pub(crate) fn never_spins(_unused: u32) {}

fn main() {
    assert_eq!(positions(3), 3);
    let x = 9;
    // SAFETY: `x` is a valid u32.
    assert_eq!(unsafe { unsafe_wait(&x) }, 9);
    assert_eq!(extern_wait(2), 2);
    never_spins(0);

    let s = yieldprof::snapshot().site("positions").unwrap();
    assert_eq!(s.calls_of(yieldprof::Kind::Yield), 7);
    assert_eq!(s.calls_of(yieldprof::Kind::Sleep), 3);
    assert_eq!(s.calls_of(yieldprof::Kind::Spin), 3);
    assert_eq!(s.calls_of(yieldprof::Kind::Park), 1);
}
