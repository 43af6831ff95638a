//! The static half of false-sharing detection: a layout check a test runs with no
//! threads, so removed padding fails CI before it costs throughput.

use std::fmt::Write;

/// The unit [`assert_separate_lines!`](crate::assert_separate_lines) keeps fields apart
/// by: two 64-B lines, because the adjacent-line prefetcher of current x86 and aarch64
/// cores moves aligned pairs of lines together (what `crossbeam_utils::CachePadded`
/// pads to on those targets).
pub const SEPARATE_LINE_BYTES: usize = 128;

/// A field as the macro passes it: name, offset, size.
#[doc(hidden)]
pub type FieldLayout = (&'static str, usize, usize);

/// The size of the field `field` selects; the closure is never called.
#[doc(hidden)]
pub fn size_of_field<T, F>(_field: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// Pairs of fields (by index) that can share a `unit`-sized block, with the smallest
/// start of the value inside a block (a multiple of `align`) at which they do.
fn collisions(align: usize, fields: &[FieldLayout], unit: usize) -> Vec<(usize, usize, usize)> {
    let step = align.clamp(1, unit);
    let blocks = |start: usize, (_, off, size): FieldLayout| {
        (start + off) / unit..=(start + off + size - 1) / unit
    };
    let mut out = Vec::new();
    for i in 0..fields.len() {
        for j in i + 1..fields.len() {
            // A zero-sized field holds no data to share.
            if fields[i].2 == 0 || fields[j].2 == 0 {
                continue;
            }
            let at = (0..unit).step_by(step).find(|&start| {
                let (a, b) = (blocks(start, fields[i]), blocks(start, fields[j]));
                a.start() <= b.end() && b.start() <= a.end()
            });
            if let Some(start) = at {
                out.push((i, j, start));
            }
        }
    }
    out
}

/// `Err` with the message of `assert_separate_lines!` when two fields can share a
/// [`SEPARATE_LINE_BYTES`] block.
#[doc(hidden)]
pub fn check_separate_lines(ty: &str, align: usize, fields: &[FieldLayout]) -> Result<(), String> {
    let unit = SEPARATE_LINE_BYTES;
    let bad = collisions(align, fields, unit);
    if bad.is_empty() {
        return Ok(());
    }
    let mut m = format!("assert_separate_lines!({ty}): fields can share a {unit}-B line\n");
    for (i, j, start) in bad {
        let (a, b) = (fields[i], fields[j]);
        let _ = write!(
            m,
            "  `{}` (offset {}, {} B) and `{}` (offset {}, {} B)",
            a.0, a.1, a.2, b.0, b.1, b.2
        );
        if start == 0 {
            let _ = writeln!(m);
        } else {
            let _ = writeln!(
                m,
                " when the value starts {start} B into a {unit}-B line \
                 (align_of::<{ty}>() = {align} allows it)"
            );
        }
    }
    let _ = write!(
        m,
        "  fix: put each in its own {unit}-B aligned block, e.g. \
         `crossbeam_utils::CachePadded`, or #[repr(align({unit}))] on a wrapper"
    );
    Err(m)
}

/// The body of `assert_separate_lines!`.
#[doc(hidden)]
#[track_caller]
pub fn assert_separate_lines(ty: &str, align: usize, fields: &[FieldLayout]) {
    if let Err(message) = check_separate_lines(ty, align, fields) {
        panic!("{message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_separate_aligned_blocks_pass() {
        let fields = [("head", 0, 8), ("tail", 128, 8)];
        assert_eq!(check_separate_lines("Padded", 128, &fields), Ok(()));
    }

    #[test]
    fn neighbours_fail_with_names_offsets_and_the_line_size() {
        let err = check_separate_lines("Packed", 8, &[("head", 0, 8), ("tail", 8, 8)]);
        let err = err.unwrap_err();
        assert!(
            err.contains("`head` (offset 0, 8 B) and `tail` (offset 8, 8 B)"),
            "{err}"
        );
        assert!(err.contains("share a 128-B line"), "{err}");
    }

    #[test]
    fn a_low_alignment_lets_fields_128_bytes_apart_straddle_a_line() {
        // 8-aligned: the value may start anywhere in a line, and 0..16 and 128..144
        // then straddle one boundary together.
        let fields = [("a", 0, 16), ("b", 128, 16)];
        let err = check_separate_lines("Loose", 8, &fields).unwrap_err();
        assert!(
            err.contains("when the value starts 120 B into a 128-B line"),
            "{err}"
        );
        assert!(err.contains("align_of::<Loose>() = 8"), "{err}");
        assert_eq!(check_separate_lines("Tight", 128, &fields), Ok(()));
    }

    #[test]
    fn zero_sized_fields_never_collide() {
        assert_eq!(
            check_separate_lines("Z", 1, &[("a", 0, 0), ("b", 0, 8)]),
            Ok(())
        );
    }
}
