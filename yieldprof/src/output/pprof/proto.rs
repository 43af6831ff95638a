//! The messages of pprof's `profile.proto`, declared by hand with the published field
//! numbers: only the fields yieldprof writes, so no `protoc` is needed at build time.
//!
//! Encoded here rather than with prost, which brings `bytes` into the default graph:
//! its `impl PartialOrd<Bytes> for String` (and `Vec<u8>`) makes a user's
//! `name <= parts.concat()`-style inference ambiguous (E0283; `tests/inference`). The
//! wire format needed is small: varints, packed repeated integers and length-delimited
//! messages and strings, fields in tag order with proto3 defaults left out, as prost
//! writes them. In tests the same structs derive `prost::Message`, and the tests check
//! the encoding against prost's byte for byte.

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Profile {
    #[cfg_attr(test, prost(message, repeated, tag = "1"))]
    pub(crate) sample_type: Vec<ValueType>,
    #[cfg_attr(test, prost(message, repeated, tag = "2"))]
    pub(crate) sample: Vec<Sample>,
    #[cfg_attr(test, prost(message, repeated, tag = "3"))]
    pub(crate) mapping: Vec<Mapping>,
    #[cfg_attr(test, prost(message, repeated, tag = "4"))]
    pub(crate) location: Vec<Location>,
    #[cfg_attr(test, prost(message, repeated, tag = "5"))]
    pub(crate) function: Vec<Function>,
    #[cfg_attr(test, prost(string, repeated, tag = "6"))]
    pub(crate) string_table: Vec<String>,
    #[cfg_attr(test, prost(int64, tag = "9"))]
    pub(crate) time_nanos: i64,
    #[cfg_attr(test, prost(int64, tag = "10"))]
    pub(crate) duration_nanos: i64,
    #[cfg_attr(test, prost(message, optional, tag = "11"))]
    pub(crate) period_type: Option<ValueType>,
    #[cfg_attr(test, prost(int64, tag = "12"))]
    pub(crate) period: i64,
    #[cfg_attr(test, prost(int64, repeated, tag = "13"))]
    pub(crate) comment: Vec<i64>,
    #[cfg_attr(test, prost(int64, tag = "14"))]
    pub(crate) default_sample_type: i64,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct ValueType {
    #[cfg_attr(test, prost(int64, tag = "1"))]
    pub(crate) r#type: i64,
    #[cfg_attr(test, prost(int64, tag = "2"))]
    pub(crate) unit: i64,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Sample {
    #[cfg_attr(test, prost(uint64, repeated, tag = "1"))]
    pub(crate) location_id: Vec<u64>,
    #[cfg_attr(test, prost(int64, repeated, tag = "2"))]
    pub(crate) value: Vec<i64>,
    #[cfg_attr(test, prost(message, repeated, tag = "3"))]
    pub(crate) label: Vec<Label>,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Label {
    #[cfg_attr(test, prost(int64, tag = "1"))]
    pub(crate) key: i64,
    #[cfg_attr(test, prost(int64, tag = "2"))]
    pub(crate) str: i64,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Mapping {
    #[cfg_attr(test, prost(uint64, tag = "1"))]
    pub(crate) id: u64,
    #[cfg_attr(test, prost(int64, tag = "5"))]
    pub(crate) filename: i64,
    #[cfg_attr(test, prost(bool, tag = "7"))]
    pub(crate) has_functions: bool,
    #[cfg_attr(test, prost(bool, tag = "8"))]
    pub(crate) has_filenames: bool,
    #[cfg_attr(test, prost(bool, tag = "9"))]
    pub(crate) has_line_numbers: bool,
    #[cfg_attr(test, prost(bool, tag = "10"))]
    pub(crate) has_inline_frames: bool,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Location {
    #[cfg_attr(test, prost(uint64, tag = "1"))]
    pub(crate) id: u64,
    #[cfg_attr(test, prost(uint64, tag = "2"))]
    pub(crate) mapping_id: u64,
    /// One entry: yieldprof inlines nothing.
    #[cfg_attr(test, prost(message, repeated, tag = "4"))]
    pub(crate) line: Vec<Line>,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Line {
    #[cfg_attr(test, prost(uint64, tag = "1"))]
    pub(crate) function_id: u64,
    #[cfg_attr(test, prost(int64, tag = "2"))]
    pub(crate) line: i64,
    #[cfg_attr(test, prost(int64, tag = "3"))]
    pub(crate) column: i64,
}

#[derive(Clone, PartialEq)]
#[cfg_attr(test, derive(prost::Message))]
#[cfg_attr(not(test), derive(Default, Debug))]
pub(crate) struct Function {
    #[cfg_attr(test, prost(uint64, tag = "1"))]
    pub(crate) id: u64,
    #[cfg_attr(test, prost(int64, tag = "2"))]
    pub(crate) name: i64,
    #[cfg_attr(test, prost(int64, tag = "3"))]
    pub(crate) system_name: i64,
    #[cfg_attr(test, prost(int64, tag = "4"))]
    pub(crate) filename: i64,
    #[cfg_attr(test, prost(int64, tag = "5"))]
    pub(crate) start_line: i64,
}

/// A protobuf wire type.
#[derive(Clone, Copy)]
enum Wire {
    Varint = 0,
    Delimited = 2,
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn key(buf: &mut Vec<u8>, tag: u32, wire: Wire) {
    varint(buf, u64::from(tag) << 3 | wire as u64);
}

/// A `uint64`, `int64` (negative as its two's complement, ten bytes) or `bool` field,
/// left out at its default of 0.
fn scalar(buf: &mut Vec<u8>, tag: u32, v: u64) {
    if v != 0 {
        key(buf, tag, Wire::Varint);
        varint(buf, v);
    }
}

/// A packed repeated integer field, left out when empty.
fn packed(buf: &mut Vec<u8>, tag: u32, values: impl Iterator<Item = u64> + Clone) {
    let len: usize = values.clone().map(varint_len).sum();
    if len > 0 {
        key(buf, tag, Wire::Delimited);
        varint(buf, len as u64);
        values.for_each(|v| varint(buf, v));
    }
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A length-delimited field whose body `body` writes: written in place, then its
/// length put before it (only the body moves, not what came before).
pub(super) fn delimited(buf: &mut Vec<u8>, tag: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(buf, tag, Wire::Delimited);
    let start = buf.len();
    body(buf);
    let mut len = Vec::with_capacity(10);
    varint(&mut len, (buf.len() - start) as u64);
    buf.splice(start..start, len);
}

impl Profile {
    /// This message's encoding, appended to `buf`.
    pub(crate) fn encode(&self, buf: &mut Vec<u8>) {
        for t in &self.sample_type {
            delimited(buf, 1, |b| t.encode(b));
        }
        for s in &self.sample {
            delimited(buf, 2, |b| s.encode(b));
        }
        for m in &self.mapping {
            delimited(buf, 3, |b| m.encode(b));
        }
        for l in &self.location {
            delimited(buf, 4, |b| l.encode(b));
        }
        for f in &self.function {
            delimited(buf, 5, |b| f.encode(b));
        }
        // Repeated strings are written even when empty: index 0 must be "".
        for s in &self.string_table {
            delimited(buf, 6, |b| b.extend_from_slice(s.as_bytes()));
        }
        scalar(buf, 9, self.time_nanos as u64);
        scalar(buf, 10, self.duration_nanos as u64);
        if let Some(t) = &self.period_type {
            delimited(buf, 11, |b| t.encode(b));
        }
        scalar(buf, 12, self.period as u64);
        packed(buf, 13, self.comment.iter().map(|&c| c as u64));
        scalar(buf, 14, self.default_sample_type as u64);
    }
}

impl ValueType {
    fn encode(&self, buf: &mut Vec<u8>) {
        scalar(buf, 1, self.r#type as u64);
        scalar(buf, 2, self.unit as u64);
    }
}

impl Sample {
    pub(crate) fn encode(&self, buf: &mut Vec<u8>) {
        packed(buf, 1, self.location_id.iter().copied());
        packed(buf, 2, self.value.iter().map(|&v| v as u64));
        for l in &self.label {
            delimited(buf, 3, |b| {
                scalar(b, 1, l.key as u64);
                scalar(b, 2, l.str as u64);
            });
        }
    }
}

impl Mapping {
    fn encode(&self, buf: &mut Vec<u8>) {
        scalar(buf, 1, self.id);
        scalar(buf, 5, self.filename as u64);
        scalar(buf, 7, u64::from(self.has_functions));
        scalar(buf, 8, u64::from(self.has_filenames));
        scalar(buf, 9, u64::from(self.has_line_numbers));
        scalar(buf, 10, u64::from(self.has_inline_frames));
    }
}

impl Location {
    fn encode(&self, buf: &mut Vec<u8>) {
        scalar(buf, 1, self.id);
        scalar(buf, 2, self.mapping_id);
        for l in &self.line {
            delimited(buf, 4, |b| {
                scalar(b, 1, l.function_id);
                scalar(b, 2, l.line as u64);
                scalar(b, 3, l.column as u64);
            });
        }
    }
}

impl Function {
    fn encode(&self, buf: &mut Vec<u8>) {
        scalar(buf, 1, self.id);
        scalar(buf, 2, self.name as u64);
        scalar(buf, 3, self.system_name as u64);
        scalar(buf, 4, self.filename as u64);
        scalar(buf, 5, self.start_line as u64);
    }
}
