//! Top-level examples and tests of yieldprof live in examples/ and tests/.
