#![deny(warnings)]
#![no_implicit_prelude]

// `yieldprof::wait!` in expression and statement position, with each kind, inside and
// outside an annotated function, with a trailing comma.

fn lock_through(f: fn(&::std::sync::Mutex<u32>) -> u32, m: &::std::sync::Mutex<u32>) -> u32 {
    f(m)
}

fn take(m: &::std::sync::Mutex<u32>) -> u32 {
    *m.lock().unwrap()
}

#[::yieldprof::instrument_wait]
fn marked(m: &::std::sync::Mutex<u32>) -> u32 {
    let v = ::yieldprof::wait!(lock, lock_through(take, m));
    ::yieldprof::wait!(condvar, ());
    ::yieldprof::wait!(channel, ());
    ::yieldprof::wait!(join, ());
    ::yieldprof::wait!(barrier, ());
    ::yieldprof::wait!(backoff, ());
    ::yieldprof::wait!(sleep, ());
    ::yieldprof::wait!(park, ());
    ::yieldprof::wait!(yield, (),);
    v
}

fn main() {
    let m = ::std::sync::Mutex::new(4);
    ::std::assert_eq!(marked(&m), 4);
    ::std::assert_eq!(::yieldprof::wait!(lock, take(&m)), 4);
    let s = ::yieldprof::snapshot().site("marked").unwrap();
    for k in [
        ::yieldprof::Kind::Lock,
        ::yieldprof::Kind::Condvar,
        ::yieldprof::Kind::Channel,
        ::yieldprof::Kind::Join,
        ::yieldprof::Kind::Barrier,
        ::yieldprof::Kind::Backoff,
        ::yieldprof::Kind::Sleep,
        ::yieldprof::Kind::Park,
        ::yieldprof::Kind::Yield,
    ] {
        ::std::assert_eq!(s.calls_of(k), 1, "{k:?}");
    }
}
