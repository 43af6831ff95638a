//! Code that relies on a std type having exactly one impl of a std trait, so that the
//! compiler infers a type from it. Each function compiled before yieldprof was added
//! (these patterns are from rayon-core's own tests); the crate compiling at all is the
//! test, and `tests/inference.rs` checks the values too.

// Linked as a user links it: `use` makes every crate of yieldprof's graph part of this
// crate's, which is what brings their impls into inference.
pub use yieldprof;

/// `usize: PartialEq<?T>` has one impl in std, so `sum` is inferred `usize`.
pub fn sum_compared_with_usize(counter: usize, range: std::ops::Range<usize>) -> bool {
    let sum = range.clone().sum();
    counter == sum
}

/// The same through `assert_eq!`, which takes references: `&usize: PartialEq<&?T>`.
pub fn sum_asserted_equal(counter: usize, range: std::ops::Range<usize>) -> usize {
    let sum = range.clone().sum();
    assert_eq!(counter, sum);
    sum
}

/// `f64` and `i64` the same way, from `product` and `parse`.
pub fn product_and_parse(x: f64, n: i64, text: &str) -> bool {
    let p = [1.5f64, 2.0].iter().product();
    let parsed = text.parse().unwrap_or_default();
    x == p && n == parsed
}

/// `bool` and `u8` from `Default` and `into`.
pub fn default_and_into(flag: bool, byte: u8) -> bool {
    let d = Default::default();
    let b = 7u8.into();
    flag == d && byte == b
}

/// A reference compared with a value whose type comes from `collect`'s length.
pub fn reference_compared(counts: &[usize]) -> bool {
    let first = &counts[0];
    let n = counts.iter().copied().max().unwrap_or_default();
    *first == n && first == &n
}

/// `String: PartialOrd<?T>` has one impl in std, so `joined` is inferred `String`.
pub fn string_ordered(name: &String, parts: &[&str]) -> bool {
    let joined = parts.iter().copied().collect();
    *name <= joined
}

/// `Vec<u8>: PartialOrd<?T>` likewise.
pub fn bytes_ordered(bytes: &Vec<u8>, more: &[u8]) -> bool {
    let collected = more.iter().copied().collect();
    *bytes <= collected
}
