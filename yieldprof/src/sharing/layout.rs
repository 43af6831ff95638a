//! The static half of false-sharing detection: a layout check that needs no thread, run
//! by a test or, in a `const`, by the compiler, so removed padding fails the build or CI
//! before it costs throughput.
//!
//! Everything here is a `const fn` (the message is built in a fixed buffer), so one body
//! serves both: a panic at run time, a compile error in a `const`.

/// The unit [`assert_separate_lines!`](crate::assert_separate_lines) keeps fields apart
/// by: two 64-B lines, because the adjacent-line prefetcher of current x86 and aarch64
/// cores moves aligned pairs of lines together (what `crossbeam_utils::CachePadded`
/// pads to on those targets).
pub const SEPARATE_LINE_BYTES: usize = 128;

/// A field as the macro passes it: an array field (`count` elements of `size` bytes,
/// `size` apart) when written `name[..]`, else one value (`count` 1).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct FieldLayout {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    pub count: usize,
}

impl FieldLayout {
    /// The bytes it spans: all its elements for an array.
    const fn span(&self) -> usize {
        if self.count == 0 {
            0
        } else {
            self.size * self.count
        }
    }
}

/// The size of the field `field` selects; the closure is never called.
#[doc(hidden)]
pub const fn size_of_field<T, F>(_field: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// The element size and length of the array field `field` selects; the closure is never
/// called. Anything but an array (a `Vec`, a slice) does not compile.
#[doc(hidden)]
pub const fn array_of_field<T, E, const N: usize>(_field: fn(&T) -> &[E; N]) -> (usize, usize) {
    (std::mem::size_of::<E>(), N)
}

/// The smallest start of the value inside a `unit` block (a multiple of `align`) at
/// which `[a, a + a_size)` and `[b, b + b_size)` touch one block, if any.
const fn shared_at(
    align: usize,
    unit: usize,
    a: (usize, usize),
    b: (usize, usize),
) -> Option<usize> {
    // A zero-sized field holds no data to share.
    if a.1 == 0 || b.1 == 0 {
        return None;
    }
    let step = if align == 0 {
        1
    } else if align > unit {
        unit
    } else {
        align
    };
    let mut start = 0;
    while start < unit {
        let (a0, a1) = ((start + a.0) / unit, (start + a.0 + a.1 - 1) / unit);
        let (b0, b1) = ((start + b.0) / unit, (start + b.0 + b.1 - 1) / unit);
        if a0 <= b1 && b0 <= a1 {
            return Some(start);
        }
        start += step;
    }
    None
}

const CAPACITY: usize = 2048;

/// A message built in a `const fn`: bytes, by value (no `&mut` in a `const fn` before
/// Rust 1.83), cut off with `…` when full.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Message {
    buf: [u8; CAPACITY],
    len: usize,
}

impl Message {
    const fn new() -> Message {
        Message {
            buf: [0; CAPACITY],
            len: 0,
        }
    }

    const fn str(mut self, s: &str) -> Message {
        if self.len == CAPACITY {
            // Full, and already ends with `…`.
            return self;
        }
        let bytes = s.as_bytes();
        let mut i = 0;
        // Room is kept for the `…` (3 bytes).
        while i < bytes.len() && self.len < CAPACITY - 3 {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        if i < bytes.len() {
            self.buf[self.len] = 0xe2;
            self.buf[self.len + 1] = 0x80;
            self.buf[self.len + 2] = 0xa6;
            self.len = CAPACITY;
        }
        self
    }

    const fn num(self, mut n: usize) -> Message {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let (_, used) = digits.split_at(at);
        match std::str::from_utf8(used) {
            Ok(s) => self.str(s),
            Err(_) => self,
        }
    }

    /// The text; a name cut inside a character ends before it.
    pub const fn as_str(&self) -> &str {
        let (used, _) = self.buf.split_at(self.len);
        match std::str::from_utf8(used) {
            Ok(s) => s,
            Err(e) => match std::str::from_utf8(used.split_at(e.valid_up_to()).0) {
                Ok(s) => s,
                Err(_) => "",
            },
        }
    }

    /// `` `name` (offset 8, 4 B)``, `` `locks[1]` ``… for element `index` of an array.
    const fn field(self, name: &str, index: Option<usize>, offset: usize, size: usize) -> Message {
        let mut m = self.str("`").str(name);
        if let Some(i) = index {
            m = m.str("[").num(i).str("]");
        }
        m.str("` (offset ")
            .num(offset)
            .str(", ")
            .num(size)
            .str(" B)")
    }
}

/// The message of `assert_separate_lines!` when two fields (or two elements of an array
/// field) can share a [`SEPARATE_LINE_BYTES`] block; `None` when none can.
#[doc(hidden)]
pub const fn separate_lines_message(
    ty: &str,
    align: usize,
    fields: &[FieldLayout],
) -> Option<Message> {
    let unit = SEPARATE_LINE_BYTES;
    let mut m = Message::new()
        .str("assert_separate_lines!(")
        .str(ty)
        .str("): fields can share a ")
        .num(unit)
        .str("-B line\n");
    let mut bad = false;
    let mut arrays = false;
    let mut i = 0;
    while i < fields.len() {
        let f = fields[i];
        // Neighbouring elements are the closest: if they cannot share, no two can.
        if f.count >= 2 {
            let second = f.offset + f.size;
            if let Some(start) = shared_at(align, unit, (f.offset, f.size), (second, f.size)) {
                m = m
                    .str("  ")
                    .field(f.name, Some(0), f.offset, f.size)
                    .str(" and ");
                m = m.field(f.name, Some(1), second, f.size).str(": elements ");
                m = starting(m.num(f.size).str(" B apart"), ty, align, unit, start);
                bad = true;
                arrays = true;
            }
        }
        let mut j = i + 1;
        while j < fields.len() {
            let g = fields[j];
            let (a, b) = ((f.offset, f.span()), (g.offset, g.span()));
            if let Some(start) = shared_at(align, unit, a, b) {
                m = m.str("  ").field(f.name, None, a.0, a.1).str(" and ");
                m = starting(m.field(g.name, None, b.0, b.1), ty, align, unit, start);
                bad = true;
            }
            j += 1;
        }
        i += 1;
    }
    if !bad {
        return None;
    }
    m = m
        .str("  fix: put each in its own ")
        .num(unit)
        .str("-B aligned block, e.g. `crossbeam_utils::CachePadded`, or #[repr(align(")
        .num(unit)
        .str("))] on a wrapper");
    if arrays {
        m = m
            .str(" (for an array: on its element type, so that the stride is a multiple of ")
            .num(unit)
            .str(" B)");
    }
    Some(m)
}

/// Ends a pair's line: where the value must start for them to share.
const fn starting(m: Message, ty: &str, align: usize, unit: usize, start: usize) -> Message {
    if start == 0 {
        return m.str("\n");
    }
    m.str(" when the value starts ")
        .num(start)
        .str(" B into a ")
        .num(unit)
        .str("-B line (align_of::<")
        .str(ty)
        .str(">() = ")
        .num(align)
        .str(" allows it)\n")
}

/// The body of `assert_separate_lines!`: a panic at run time, a compile error when
/// evaluated in a `const`.
#[doc(hidden)]
#[track_caller]
pub const fn assert_separate_lines(ty: &str, align: usize, fields: &[FieldLayout]) {
    if let Some(m) = separate_lines_message(ty, align, fields) {
        panic!("{}", m.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &'static str, offset: usize, size: usize) -> FieldLayout {
        FieldLayout {
            name,
            offset,
            size,
            count: 1,
        }
    }

    fn check(ty: &str, align: usize, fields: &[FieldLayout]) -> Result<(), String> {
        match separate_lines_message(ty, align, fields) {
            None => Ok(()),
            Some(m) => Err(m.as_str().to_string()),
        }
    }

    #[test]
    fn fields_in_separate_aligned_blocks_pass() {
        let fields = [field("head", 0, 8), field("tail", 128, 8)];
        assert_eq!(check("Padded", 128, &fields), Ok(()));
    }

    #[test]
    fn neighbours_fail_with_names_offsets_and_the_line_size() {
        let err = check("Packed", 8, &[field("head", 0, 8), field("tail", 8, 8)]);
        assert_eq!(
            err.unwrap_err(),
            "assert_separate_lines!(Packed): fields can share a 128-B line\n  `head` (offset 0, \
             8 B) and `tail` (offset 8, 8 B)\n  fix: put each in its own 128-B aligned block, \
             e.g. `crossbeam_utils::CachePadded`, or #[repr(align(128))] on a wrapper"
        );
    }

    #[test]
    fn a_low_alignment_lets_fields_128_bytes_apart_straddle_a_line() {
        // 8-aligned: the value may start anywhere in a line, and 0..16 and 128..144
        // then straddle one boundary together.
        let fields = [field("a", 0, 16), field("b", 128, 16)];
        let err = check("Loose", 8, &fields).unwrap_err();
        assert!(
            err.contains("when the value starts 120 B into a 128-B line"),
            "{err}"
        );
        assert!(err.contains("align_of::<Loose>() = 8"), "{err}");
        assert_eq!(check("Tight", 128, &fields), Ok(()));
    }

    #[test]
    fn zero_sized_fields_never_collide() {
        assert_eq!(check("Z", 1, &[field("a", 0, 0), field("b", 0, 8)]), Ok(()));
    }

    #[test]
    fn array_elements_closer_than_a_block_fail_and_spans_count_against_fields() {
        let locks = FieldLayout {
            name: "locks",
            offset: 0,
            size: 4,
            count: 16,
        };
        let err = check("Table", 4, &[locks]).unwrap_err();
        assert!(
            err.contains(
                "`locks[0]` (offset 0, 4 B) and `locks[1]` (offset 4, 4 B): elements 4 B apart\n"
            ),
            "{err}"
        );
        assert!(
            err.ends_with("so that the stride is a multiple of 128 B)"),
            "{err}"
        );
        let padded = FieldLayout { size: 128, ..locks };
        assert_eq!(check("Table", 128, &[padded]), Ok(()));
        let after = field("count", 2048, 8);
        assert_eq!(check("Table", 128, &[padded, after]), Ok(()));
        let err = check("Table", 8, &[padded, after]).unwrap_err();
        assert!(
            err.contains("`locks` (offset 0, 2048 B) and `count` (offset 2048, 8 B) when"),
            "{err}"
        );
    }

    #[test]
    fn a_message_too_long_for_the_buffer_ends_with_an_ellipsis() {
        let names: Vec<FieldLayout> = (0..200)
            .map(|i| field("a_rather_long_field_name", i * 8, 8))
            .collect();
        let err = check("Many", 8, &names).unwrap_err();
        assert!(err.ends_with('…'), "{err}");
        assert!(err.len() <= CAPACITY);
    }
}
