//! `watch()` and `Watched<A>`: the data the false-sharing detector looks at.
//!
//! [`Watched<A>`] wraps a std atomic with the same layout (`repr(transparent)`), so
//! swapping `AtomicU64` for `Watched<AtomicU64>` keeps every offset, and reports each
//! access by the calling thread: loads and failed compare-exchanges as reads; stores,
//! swaps, `fetch_*` and successful compare-exchanges as writes. [`watch`] names an
//! address range; only accesses to lines that some `watch` covers are tracked, so an
//! unwatched `Watched` costs one relaxed load per access.

#[cfg(feature = "enabled")]
use crate::sharing;
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::atomic::{
    AtomicBool, AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicIsize, AtomicPtr, AtomicU16,
    AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

/// Registers the memory of `value` under `name` for false-sharing detection: the report
/// names the fields on each suspicious line with it. Call it once the value is at its
/// final address (inside an `Arc`, a `Box` or a `static`); a later `watch` that
/// overlaps the range replaces it, since that memory then holds a new object. Dropping
/// a [`Watched`] ends the watch of its bytes; the counts stay in the report.
///
/// ```
/// use std::sync::atomic::Ordering;
/// use yieldprof::Watched;
///
/// struct Ring {
///     head: Watched<std::sync::atomic::AtomicU64>,
///     tail: Watched<std::sync::atomic::AtomicU64>,
/// }
/// let ring = std::sync::Arc::new(Ring { head: Watched::new(0), tail: Watched::new(0) });
/// yieldprof::watch(&ring.head, "head");
/// yieldprof::watch(&ring.tail, "tail");
/// ring.tail.store(1, Ordering::Release);
/// let lines = yieldprof::snapshot().sharing();
/// let line = lines.iter().find(|l| l.words.iter().any(|w| w.name == "tail")).unwrap();
/// assert_eq!(line.words.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["head", "tail"]);
/// ```
pub fn watch<T: ?Sized>(value: &T, name: &str) {
    // Without `enabled` nothing is tracked: the value is only named.
    #[cfg(not(feature = "enabled"))]
    let _ = (value, name);
    #[cfg(feature = "enabled")]
    sharing::register(
        value as *const T as *const u8 as usize,
        std::mem::size_of_val(value),
        name,
        std::any::type_name::<T>(),
    );
}

/// A std atomic whose accesses the false-sharing detector sees once its memory is
/// [`watch`]ed. Same size, alignment and methods as the atomic it wraps.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use yieldprof::Watched;
///
/// let n: Watched<AtomicU64> = Watched::new(5);
/// assert_eq!(n.fetch_add(1, Ordering::Relaxed), 5);
/// assert_eq!(n.compare_exchange(6, 7, Ordering::AcqRel, Ordering::Acquire), Ok(6));
/// assert_eq!(n.load(Ordering::Acquire), 7);
/// assert_eq!(std::mem::size_of::<Watched<AtomicU64>>(), 8);
/// ```
#[repr(transparent)]
pub struct Watched<A> {
    inner: A,
}

impl<A> Watched<A> {
    /// Wraps an atomic.
    pub const fn from_atomic(inner: A) -> Self {
        Watched { inner }
    }

    /// The wrapped atomic; accesses through it are not tracked.
    pub fn unwatched(&self) -> &A {
        &self.inner
    }

    /// Unwraps the atomic, ending the watch of its bytes.
    pub fn into_atomic(self) -> A {
        let this = ManuallyDrop::new(self);
        this.forget();
        // SAFETY: `this` is never used or dropped again, so `inner` is moved out once.
        unsafe { std::ptr::read(&this.inner) }
    }

    #[inline(always)]
    fn read(&self) {
        #[cfg(feature = "enabled")]
        sharing::record_access(
            self as *const Self as usize,
            std::mem::size_of::<A>(),
            false,
        );
    }

    #[inline(always)]
    fn write(&self) {
        #[cfg(feature = "enabled")]
        sharing::record_access(self as *const Self as usize, std::mem::size_of::<A>(), true);
    }

    #[inline(always)]
    fn exchanged<T>(&self, r: Result<T, T>) -> Result<T, T> {
        #[cfg(feature = "enabled")]
        sharing::record_access(
            self as *const Self as usize,
            std::mem::size_of::<A>(),
            r.is_ok(),
        );
        r
    }

    fn forget(&self) {
        #[cfg(feature = "enabled")]
        sharing::forget(self as *const Self as usize, std::mem::size_of::<A>());
    }
}

impl<A> Drop for Watched<A> {
    fn drop(&mut self) {
        self.forget();
    }
}

impl<A: Default> Default for Watched<A> {
    fn default() -> Self {
        Watched::from_atomic(A::default())
    }
}

impl<A: fmt::Debug> fmt::Debug for Watched<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl<A> From<A> for Watched<A> {
    fn from(inner: A) -> Self {
        Watched::from_atomic(inner)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A std atomic that [`Watched`] can wrap. Sealed: implemented for `AtomicBool`, the
/// integer atomics and `AtomicPtr<T>`.
pub trait WatchableAtomic: sealed::Sealed {
    /// The value it holds: `u64` for `AtomicU64`, `*mut T` for `AtomicPtr<T>`.
    type Value: Copy;
    #[doc(hidden)]
    fn new(v: Self::Value) -> Self;
    #[doc(hidden)]
    fn load(&self, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn store(&self, v: Self::Value, order: Ordering);
    #[doc(hidden)]
    fn swap(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn compare_exchange(
        &self,
        current: Self::Value,
        new: Self::Value,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Self::Value, Self::Value>;
    #[doc(hidden)]
    fn compare_exchange_weak(
        &self,
        current: Self::Value,
        new: Self::Value,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Self::Value, Self::Value>;
    #[doc(hidden)]
    fn fetch_update<F: FnMut(Self::Value) -> Option<Self::Value>>(
        &self,
        set_order: Ordering,
        fetch_order: Ordering,
        f: F,
    ) -> Result<Self::Value, Self::Value>;
    #[doc(hidden)]
    fn get_mut(&mut self) -> &mut Self::Value;
    #[doc(hidden)]
    fn into_inner(self) -> Self::Value;
}

/// A watchable atomic with bitwise `fetch_*` operations (`AtomicBool` and integers).
pub trait WatchableBits: WatchableAtomic {
    #[doc(hidden)]
    fn fetch_and(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn fetch_nand(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn fetch_or(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn fetch_xor(&self, v: Self::Value, order: Ordering) -> Self::Value;
}

/// A watchable integer atomic with arithmetic `fetch_*` operations.
pub trait WatchableInteger: WatchableBits {
    #[doc(hidden)]
    fn fetch_add(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn fetch_sub(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn fetch_max(&self, v: Self::Value, order: Ordering) -> Self::Value;
    #[doc(hidden)]
    fn fetch_min(&self, v: Self::Value, order: Ordering) -> Self::Value;
}

/// Forwards trait methods to the std type's inherent ones of the same name.
macro_rules! forward {
    ($atomic:ty, $v:ty; $($op:ident),*) => {$(
        fn $op(&self, v: $v, order: Ordering) -> $v {
            <$atomic>::$op(self, v, order)
        }
    )*};
}

macro_rules! watchable {
    ([$($generics:tt)*] $atomic:ty, $v:ty) => {
        impl<$($generics)*> sealed::Sealed for $atomic {}

        impl<$($generics)*> WatchableAtomic for $atomic {
            type Value = $v;
            fn new(v: $v) -> Self {
                <$atomic>::new(v)
            }
            fn load(&self, order: Ordering) -> $v {
                <$atomic>::load(self, order)
            }
            fn store(&self, v: $v, order: Ordering) {
                <$atomic>::store(self, v, order)
            }
            forward!($atomic, $v; swap);
            fn compare_exchange(
                &self,
                current: $v,
                new: $v,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$v, $v> {
                <$atomic>::compare_exchange(self, current, new, success, failure)
            }
            fn compare_exchange_weak(
                &self,
                current: $v,
                new: $v,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$v, $v> {
                <$atomic>::compare_exchange_weak(self, current, new, success, failure)
            }
            fn fetch_update<F: FnMut($v) -> Option<$v>>(
                &self,
                set_order: Ordering,
                fetch_order: Ordering,
                f: F,
            ) -> Result<$v, $v> {
                <$atomic>::fetch_update(self, set_order, fetch_order, f)
            }
            fn get_mut(&mut self) -> &mut $v {
                <$atomic>::get_mut(self)
            }
            fn into_inner(self) -> $v {
                <$atomic>::into_inner(self)
            }
        }
    };
}

macro_rules! bits {
    ($atomic:ty, $v:ty) => {
        watchable!([] $atomic, $v);
        impl WatchableBits for $atomic {
            forward!($atomic, $v; fetch_and, fetch_nand, fetch_or, fetch_xor);
        }
    };
}

macro_rules! integers {
    ($($atomic:ty, $v:ty);* $(;)?) => {$(
        bits!($atomic, $v);
        impl WatchableInteger for $atomic {
            forward!($atomic, $v; fetch_add, fetch_sub, fetch_max, fetch_min);
        }
    )*};
}

integers!(
    AtomicU8, u8;
    AtomicU16, u16;
    AtomicU32, u32;
    AtomicU64, u64;
    AtomicUsize, usize;
    AtomicI8, i8;
    AtomicI16, i16;
    AtomicI32, i32;
    AtomicI64, i64;
    AtomicIsize, isize;
);
bits!(AtomicBool, bool);
watchable!([T] AtomicPtr<T>, *mut T);

impl<A: WatchableAtomic> Watched<A> {
    /// Creates the atomic holding `v`, like the std type's `new`. (In a `static`, use
    /// the `const` [`Watched::from_atomic`].)
    pub fn new(v: A::Value) -> Self {
        Watched::from_atomic(A::new(v))
    }

    /// Loads the value: a read.
    #[inline]
    pub fn load(&self, order: Ordering) -> A::Value {
        let v = self.inner.load(order);
        self.read();
        v
    }

    /// Stores `v`: a write.
    #[inline]
    pub fn store(&self, v: A::Value, order: Ordering) {
        self.inner.store(v, order);
        self.write();
    }

    /// Swaps in `v`, returning the previous value: a write.
    #[inline]
    pub fn swap(&self, v: A::Value, order: Ordering) -> A::Value {
        let old = self.inner.swap(v, order);
        self.write();
        old
    }

    /// Compare-and-exchange: a write when it succeeds, a read when it fails.
    #[inline]
    pub fn compare_exchange(
        &self,
        current: A::Value,
        new: A::Value,
        success: Ordering,
        failure: Ordering,
    ) -> Result<A::Value, A::Value> {
        self.exchanged(self.inner.compare_exchange(current, new, success, failure))
    }

    /// Weak compare-and-exchange (may fail spuriously): as `compare_exchange`.
    #[inline]
    pub fn compare_exchange_weak(
        &self,
        current: A::Value,
        new: A::Value,
        success: Ordering,
        failure: Ordering,
    ) -> Result<A::Value, A::Value> {
        self.exchanged(
            self.inner
                .compare_exchange_weak(current, new, success, failure),
        )
    }

    /// Read-modify-write with `f` in a compare-exchange loop: a write when `f` returns
    /// `Some`, a read when it returns `None`.
    #[inline]
    pub fn fetch_update<F>(
        &self,
        set_order: Ordering,
        fetch_order: Ordering,
        f: F,
    ) -> Result<A::Value, A::Value>
    where
        F: FnMut(A::Value) -> Option<A::Value>,
    {
        self.exchanged(self.inner.fetch_update(set_order, fetch_order, f))
    }

    /// A mutable reference to the value (no other thread can see the access).
    pub fn get_mut(&mut self) -> &mut A::Value {
        self.inner.get_mut()
    }

    /// Consumes the atomic and returns the value.
    pub fn into_inner(self) -> A::Value {
        self.into_atomic().into_inner()
    }
}

/// `fetch_*` operations, each a write.
macro_rules! fetch {
    ($($op:ident),*) => {$(
        #[doc = concat!("`", stringify!($op), "` on the value, returning the previous one: a write.")]
        #[inline]
        pub fn $op(&self, v: A::Value, order: Ordering) -> A::Value {
            let old = self.inner.$op(v, order);
            self.write();
            old
        }
    )*};
}

impl<A: WatchableBits> Watched<A> {
    fetch!(fetch_and, fetch_nand, fetch_or, fetch_xor);
}

impl<A: WatchableInteger> Watched<A> {
    fetch!(fetch_add, fetch_sub, fetch_max, fetch_min);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_atomics_keep_the_layout_of_the_std_ones() {
        assert_eq!(std::mem::size_of::<Watched<AtomicU8>>(), 1);
        assert_eq!(std::mem::align_of::<Watched<AtomicU64>>(), 8);
        assert_eq!(std::mem::size_of::<[Watched<AtomicU32>; 4]>(), 16);
    }

    #[test]
    fn every_operation_returns_what_the_std_atomic_returns() {
        use Ordering::*;
        let n: Watched<AtomicI32> = Watched::new(3);
        assert_eq!(n.swap(4, AcqRel), 3);
        assert_eq!(n.fetch_sub(1, AcqRel), 4);
        assert_eq!(n.fetch_max(9, AcqRel), 3);
        assert_eq!(n.fetch_min(2, AcqRel), 9);
        assert_eq!(n.compare_exchange(5, 6, AcqRel, Acquire), Err(2));
        assert_eq!(n.fetch_update(AcqRel, Acquire, |v| Some(v * 10)), Ok(2));
        assert_eq!(n.into_inner(), 20);

        let b: Watched<AtomicBool> = Watched::default();
        assert!(!b.fetch_or(true, AcqRel));
        assert!(b.load(Acquire));

        let mut x = 1u8;
        let p: Watched<AtomicPtr<u8>> = Watched::new(std::ptr::null_mut());
        p.store(&mut x, Release);
        assert_eq!(p.load(Acquire), &mut x as *mut u8);
    }
}
