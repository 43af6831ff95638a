// The durations sleep-like calls ask for pass through the runtime unchanged, each
// argument evaluated once where it was written, in every form the macro records:
// `sleep(d)`, `park_timeout(d)`, `usleep(us)`, `nanosleep(&req)`; a raw-pointer
// request compiles and is left as written.

use std::time::Duration;

#[yieldprof::instrument_wait]
fn sleeps(evaluated: &mut u32) {
    std::thread::sleep({
        *evaluated += 1;
        Duration::ZERO
    });
    std::thread::park_timeout({
        *evaluated += 1;
        Duration::from_nanos(1)
    });
    let req = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1,
    };
    let raw: *const libc::timespec = &req;
    // SAFETY: valid requests, no remainder.
    unsafe {
        libc::usleep({
            *evaluated += 1;
            1
        });
        libc::nanosleep(&req, std::ptr::null_mut());
        libc::nanosleep(raw, std::ptr::null_mut());
    }
}

fn main() {
    let mut evaluated = 0;
    sleeps(&mut evaluated);
    assert_eq!(evaluated, 3);
    let site = yieldprof::snapshot().site("sleeps").expect("the site");
    let asked: Vec<Option<u64>> = site.calls.iter().map(|c| c.asked.map(|a| a.mean_ns)).collect();
    assert_eq!(asked, [Some(0), Some(1), Some(1_000), Some(1), None]);
}
