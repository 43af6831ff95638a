//! The inference patterns of `src/lib.rs` give the values the user's code meant.

use yieldprof_inference_check::*;

#[test]
fn inferred_types_are_the_std_ones_and_compute_as_written() {
    assert!(sum_compared_with_usize(45, 0..10));
    assert_eq!(sum_asserted_equal(4950, 0..100), 4950);
    assert!(product_and_parse(3.0, 42, "42"));
    assert!(default_and_into(false, 7));
    assert!(reference_compared(&[5, 3, 5]));
    assert!(string_ordered(&"ab".to_string(), &["a", "b"]));
    assert!(bytes_ordered(&vec![1, 2], &[1, 2, 3]));
}
