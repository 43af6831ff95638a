use std::fmt::Debug;
use std::sync::atomic::{AtomicU32, Ordering};

#[yieldprof::instrument_wait]
fn spin_until<T, F>(value: &T, mut done: F) -> u32
where
    T: Debug + ?Sized,
    F: FnMut(&T) -> bool,
{
    let mut spins = 0;
    while !done(value) {
        std::hint::spin_loop();
        spins += 1;
    }
    spins
}

#[yieldprof::instrument_wait]
fn lifetimes<'a, 'b: 'a, const N: usize>(a: &'a [u8; N], _b: &'b str) -> &'a [u8] {
    std::hint::spin_loop();
    &a[..]
}

fn main() {
    let left = AtomicU32::new(3);
    let spins = spin_until("str", |_| left.fetch_sub(1, Ordering::Relaxed) == 0);
    assert_eq!(spins, 3);
    assert_eq!(spin_until(&[1u8, 2][..], |v| v.len() == 2), 0);
    assert_eq!(lifetimes(&[1, 2, 3], "x"), [1, 2, 3]);

    let s = yieldprof::snapshot().site("spin_until").unwrap();
    assert_eq!(s.episodes, 2);
    assert_eq!(s.calls_of(yieldprof::Kind::Spin), 3);
}
