//! Watched fields: a registered range with its name and type, and the names of its parts
//! on a line (array elements, offsets into a larger value).

use super::{GRANULE, MAX_ACCESS};

#[derive(Clone, Debug)]
pub(super) struct Field {
    pub(super) addr: usize,
    pub(super) size: usize,
    pub(super) name: String,
    /// The value's type without paths, e.g. `[Watched<AtomicU32>; 16]`.
    pub(super) ty: String,
    /// An array's or slice's element type and size, when known.
    pub(super) element: Option<(String, usize)>,
    /// Its value was dropped; the name stays while a line it was on is live.
    pub(super) gone: bool,
}

/// The piece of a field on one line: the whole field, an element, or (in a larger
/// value whose inside is unknown) one granule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Part {
    /// Absolute addresses, clipped to the line.
    pub(super) start: usize,
    pub(super) end: usize,
    /// `head`, `locks[3]`, `ring+8`.
    pub(super) name: String,
    /// The type of the field or element; empty for a piece of a larger value.
    pub(super) ty: String,
    /// Its full size (an element's or field's, not clipped).
    pub(super) size: usize,
    /// Offset of the field or element from the start of the line (negative: it starts
    /// on an earlier line).
    pub(super) offset: isize,
    /// The array's name and element size, for an element.
    pub(super) array: Option<(String, usize)>,
    /// A granule of a larger value, or bytes outside every field: named by offset only.
    pub(super) opaque: bool,
}

impl Field {
    pub(super) fn new(addr: usize, size: usize, name: &str, type_name: &str) -> Field {
        let ty = short_type(type_name);
        let element = element_of(&ty, size);
        Field {
            addr,
            size,
            name: name.to_string(),
            ty,
            element,
            gone: false,
        }
    }

    pub(super) fn overlaps(&self, addr: usize, size: usize) -> bool {
        self.addr < addr + size && addr < self.addr + self.size
    }

    /// Its pieces within the line at `line`: each element of an array, the whole of a
    /// value no wider than one access, else one piece per granule (named by offset).
    pub(super) fn parts(&self, line: usize, line_size: usize) -> Vec<Part> {
        let from = self.addr.max(line);
        let to = (self.addr + self.size).min(line + line_size);
        if from >= to {
            return Vec::new();
        }
        let piece = |start: usize, size: usize, name: String, ty: &str, array| Part {
            start: start.max(from),
            end: (start + size).min(to),
            name,
            ty: ty.to_string(),
            size,
            offset: start as isize - line as isize,
            opaque: ty.is_empty(),
            array,
        };
        match &self.element {
            Some((ty, es)) => {
                let first = (from - self.addr) / es;
                let last = (to - 1 - self.addr) / es;
                (first..=last)
                    .map(|i| {
                        let name = format!("{}[{i}]", self.name);
                        let array = Some((self.name.clone(), *es));
                        piece(self.addr + i * es, *es, name, ty, array)
                    })
                    .collect()
            }
            None if self.size <= MAX_ACCESS => {
                vec![piece(
                    self.addr,
                    self.size,
                    self.name.clone(),
                    &self.ty,
                    None,
                )]
            }
            None => {
                let start = from - (from - self.addr) % GRANULE;
                (start..to)
                    .step_by(GRANULE)
                    .map(|g| {
                        let name = format!("{}+{}", self.name, g - self.addr);
                        piece(g, GRANULE, name, "", None)
                    })
                    .collect()
            }
        }
    }
}

/// `core::sync::atomic::AtomicU32` → `AtomicU32`, inside generics and arrays too.
pub(super) fn short_type(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut segment = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            segment.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            segment.clear();
        } else {
            out.push_str(&segment);
            segment.clear();
            out.push(c);
        }
    }
    out.push_str(&segment);
    out
}

/// The element type and size of `[E; N]` (from the value's size) or `[E]` (when `E`
/// is a primitive or a watched atomic).
fn element_of(ty: &str, size: usize) -> Option<(String, usize)> {
    let inner = ty.strip_prefix('[')?.strip_suffix(']')?;
    // The last top-level `; N`: the element type may hold arrays of its own.
    let mut depth = 0i32;
    let mut split = None;
    for (i, c) in inner.char_indices() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth -= 1,
            ';' if depth == 0 => split = Some(i),
            _ => {}
        }
    }
    match split {
        Some(i) => {
            let n: usize = inner[i + 1..].trim().parse().ok()?;
            (n > 0 && size % n == 0).then(|| (inner[..i].trim().to_string(), size / n))
        }
        None => primitive_size(inner).map(|s| (inner.to_string(), s)),
    }
}

fn primitive_size(ty: &str) -> Option<usize> {
    let ty = ty
        .strip_prefix("Watched<")
        .and_then(|t| t.strip_suffix('>'))
        .unwrap_or(ty);
    let ty = ty.strip_prefix("Atomic").map_or(ty.to_string(), |t| {
        // `AtomicU32` holds a `u32`, `AtomicPtr<T>` a pointer.
        if t.starts_with("Ptr") {
            "usize".to_string()
        } else {
            t.to_lowercase()
        }
    });
    Some(match ty.as_str() {
        "u8" | "i8" | "bool" => 1,
        "u16" | "i16" => 2,
        "u32" | "i32" | "f32" | "char" => 4,
        "u64" | "i64" | "f64" => 8,
        "u128" | "i128" => 16,
        "usize" | "isize" => std::mem::size_of::<usize>(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_lose_their_paths_and_arrays_give_their_elements() {
        let f = Field::new(
            0,
            64,
            "locks",
            "[yieldprof::sharing::watch::Watched<core::sync::atomic::AtomicU32>; 16]",
        );
        assert_eq!(f.ty, "[Watched<AtomicU32>; 16]");
        assert_eq!(f.element, Some(("Watched<AtomicU32>".into(), 4)));
        let slice = Field::new(0, 24, "v", "[u64]");
        assert_eq!(slice.element, Some(("u64".into(), 8)));
        let nested = Field::new(0, 96, "m", "[[u32; 3]; 8]");
        assert_eq!(nested.element, Some(("[u32; 3]".into(), 12)));
        assert_eq!(Field::new(0, 8, "x", "[Foo]").element, None);
    }

    #[test]
    fn a_line_names_elements_whole_fields_and_granules_of_larger_values() {
        let locks = Field::new(4096 + 56, 16, "locks", "[Watched<AtomicU32>; 4]");
        let names: Vec<String> = locks.parts(4096, 64).into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["locks[0]", "locks[1]"]);
        let next = locks.parts(4160, 64);
        assert_eq!(next[0].name, "locks[2]");
        assert_eq!(
            (next[0].start, next[0].end, next[0].offset),
            (4160, 4164, 0)
        );
        let head = Field::new(4104, 8, "head", "Watched<AtomicU64>");
        assert_eq!(head.parts(4096, 64)[0].offset, 8);
        let ring = Field::new(4096, 24, "ring", "Ring");
        let names: Vec<String> = ring.parts(4096, 64).into_iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            ["ring+0", "ring+4", "ring+8", "ring+12", "ring+16", "ring+20"]
        );
    }
}
