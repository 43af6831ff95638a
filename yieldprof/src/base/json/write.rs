//! A `serde::Serializer` writing JSON text, compact or indented by two spaces.

use std::fmt;
use std::io::{self, Write};

use serde::ser::{self, Serialize};

/// Writes `value` as one line of JSON.
pub(crate) fn to_writer<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> io::Result<()> {
    write_json(out, value, false)
}

/// Writes `value` as JSON indented by two spaces, as `serde_json`'s pretty printer does.
pub(crate) fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(
    out: W,
    value: &T,
) -> io::Result<()> {
    write_json(out, value, true)
}

/// `value` as indented JSON text.
pub(crate) fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    // Writing into a Vec fails only where a `Serialize` impl fails, and the callers'
    // types are plain data.
    to_writer_pretty(&mut out, value).expect("plain data serialises");
    String::from_utf8(out).expect("the writer writes UTF-8")
}

fn write_json<W: Write, T: Serialize + ?Sized>(out: W, value: &T, pretty: bool) -> io::Result<()> {
    let mut json = Json {
        out,
        pretty,
        depth: 0,
    };
    value.serialize(&mut json).map_err(|e| match e {
        Error::Io(e) => e,
        Error::Custom(m) => io::Error::new(io::ErrorKind::InvalidData, m),
    })
}

/// Why writing failed: the writer's error, or a `Serialize` impl's.
#[derive(Debug)]
pub(crate) enum Error {
    Io(io::Error),
    Custom(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => e.fmt(f),
            Error::Custom(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::Custom(msg.to_string())
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

struct Json<W> {
    out: W,
    pretty: bool,
    depth: usize,
}

impl<W: Write> Json<W> {
    fn raw(&mut self, s: &str) -> Result<(), Error> {
        Ok(self.out.write_all(s.as_bytes())?)
    }

    fn string(&mut self, s: &str) -> Result<(), Error> {
        self.raw("\"")?;
        let mut start = 0;
        for (i, c) in s.char_indices() {
            let escaped = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                '\n' => "\\n",
                '\r' => "\\r",
                '\t' => "\\t",
                '\u{8}' => "\\b",
                '\u{c}' => "\\f",
                c if (c as u32) < 0x20 => "",
                _ => continue,
            };
            self.raw(&s[start..i])?;
            if escaped.is_empty() {
                write!(self.out, "\\u{:04x}", c as u32)?;
            } else {
                self.raw(escaped)?;
            }
            start = i + c.len_utf8();
        }
        self.raw(&s[start..])?;
        self.raw("\"")
    }

    fn float(&mut self, v: f64) -> Result<(), Error> {
        // `{:?}` is the shortest text that reads back as the same f64 ("1.0", "1e-7").
        if v.is_finite() {
            Ok(write!(self.out, "{v:?}")?)
        } else {
            self.raw("null")
        }
    }

    fn newline(&mut self) -> Result<(), Error> {
        if self.pretty {
            self.raw("\n")?;
            for _ in 0..self.depth {
                self.raw("  ")?;
            }
        }
        Ok(())
    }

    fn open(&mut self, bracket: &str) -> Result<Compound<'_, W>, Error> {
        self.raw(bracket)?;
        self.depth += 1;
        Ok(Compound {
            json: self,
            first: true,
            variant: false,
        })
    }

    /// `{"variant": ` before a variant's content, closed by [`Compound::close`].
    fn variant(&mut self, variant: &str, bracket: &str) -> Result<Compound<'_, W>, Error> {
        self.raw("{")?;
        self.depth += 1;
        self.newline()?;
        self.string(variant)?;
        self.raw(if self.pretty { ": " } else { ":" })?;
        let mut c = self.open(bracket)?;
        c.variant = true;
        Ok(c)
    }
}

/// An array or object being written.
struct Compound<'a, W> {
    json: &'a mut Json<W>,
    first: bool,
    /// Inside `{"variant": …}`, which closes too.
    variant: bool,
}

impl<W: Write> Compound<'_, W> {
    fn element(&mut self) -> Result<(), Error> {
        if !self.first {
            self.json.raw(",")?;
        }
        self.first = false;
        self.json.newline()
    }

    /// A key already written as a JSON string, then the colon.
    fn key(&mut self, quoted: &str) -> Result<(), Error> {
        self.element()?;
        self.json.raw(quoted)?;
        self.json.raw(if self.json.pretty { ": " } else { ":" })
    }

    fn close(self, bracket: &str) -> Result<(), Error> {
        self.json.depth -= 1;
        if !self.first {
            self.json.newline()?;
        }
        self.json.raw(bracket)?;
        if self.variant {
            self.json.depth -= 1;
            self.json.newline()?;
            self.json.raw("}")?;
        }
        Ok(())
    }
}

macro_rules! display {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<(), Error> {
            Ok(write!(self.out, "{v}")?)
        }
    )*};
}

impl<'a, W: Write> ser::Serializer for &'a mut Json<W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, W>;
    type SerializeTuple = Compound<'a, W>;
    type SerializeTupleStruct = Compound<'a, W>;
    type SerializeTupleVariant = Compound<'a, W>;
    type SerializeMap = Compound<'a, W>;
    type SerializeStruct = Compound<'a, W>;
    type SerializeStructVariant = Compound<'a, W>;

    display!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        if v.is_finite() {
            Ok(write!(self.out, "{v:?}")?)
        } else {
            self.raw("null")
        }
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        v.iter().try_for_each(|b| seq.serialize_element(b))?;
        seq.end()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.raw("null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.raw("null")
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.raw("null")
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let mut map = self.open("{")?;
        ser::SerializeMap::serialize_entry(&mut map, variant, value)?;
        map.close("}")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a, W>, Error> {
        self.open("[")
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a, W>, Error> {
        self.open("[")
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a, W>, Error> {
        self.open("[")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a, W>, Error> {
        self.variant(variant, "[")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a, W>, Error> {
        self.open("{")
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a, W>, Error> {
        self.open("{")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a, W>, Error> {
        self.variant(variant, "{")
    }
}

impl<W: Write> ser::SerializeSeq for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element()?;
        value.serialize(&mut *self.json)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "]")
    }
}

impl<W: Write> ser::SerializeTuple for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "]")
    }
}

impl<W: Write> ser::SerializeTupleStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "]")
    }
}

impl<W: Write> ser::SerializeTupleVariant for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "]")
    }
}

impl<W: Write> ser::SerializeMap for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        // JSON keys are strings: a number or bool key is written quoted, as
        // `serde_json` does.
        let mut text = Json {
            out: Vec::new(),
            pretty: false,
            depth: 0,
        };
        key.serialize(&mut text)?;
        let text = String::from_utf8(text.out).map_err(|e| Error::Custom(e.to_string()))?;
        if text.starts_with('"') {
            self.key(&text)
        } else if text.starts_with(['{', '[', 'n']) {
            Err(Error::Custom(format!(
                "a JSON key must be a string, not {text}"
            )))
        } else {
            self.key(&format!("\"{text}\""))
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.json)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "}")
    }
}

impl<W: Write> ser::SerializeStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        ser::SerializeMap::serialize_entry(self, key, value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "}")
    }
}

impl<W: Write> ser::SerializeStructVariant for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        ser::SerializeMap::serialize_entry(self, key, value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::close(self, "}")
    }
}
