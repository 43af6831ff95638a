//! JSON text read into any `Deserialize` type: parsed into a [`Value`] tree, which
//! serde's own value deserializers then walk.

use std::collections::BTreeMap;

use serde::de::value::{Error, MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserialize, Error as _, IntoDeserializer, Visitor};

/// Reads `text` as one JSON value of type `T`; anything after it but white space is
/// an error.
pub(crate) fn from_str<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, Error> {
    let mut p = Parser {
        text: text.as_bytes(),
        at: 0,
    };
    let value = p.value(0)?;
    p.space();
    if p.at != p.text.len() {
        return Err(p.error("trailing characters"));
    }
    T::deserialize(value)
}

/// One parsed JSON value. Integers keep their exact value; other numbers are f64.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    Object(BTreeMap<String, Value>),
}

/// Nesting deeper than this is refused: the recursion must not overflow the stack
/// on a malformed file.
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> Error {
        if self.at >= self.text.len() {
            Error::custom(format!("unexpected end of the text ({what})"))
        } else {
            Error::custom(format!("{what} at byte {}", self.at))
        }
    }

    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        let found = self.text[self.at..].starts_with(word.as_bytes());
        if found {
            self.at += word.len();
        }
        found
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.space();
        match self.text.get(self.at) {
            Some(b'n') if self.eat("null") => Ok(Value::Null),
            Some(b't') if self.eat("true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat("false") => Ok(Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.close(b']') {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if self.separator(b']')? {
                            break;
                        }
                    }
                }
                Ok(Value::Array(items))
            }
            Some(b'{') => {
                self.at += 1;
                let mut map = BTreeMap::new();
                if !self.close(b'}') {
                    loop {
                        self.space();
                        if self.text.get(self.at) != Some(&b'"') {
                            return Err(self.error("expected a key"));
                        }
                        let key = self.string()?;
                        self.space();
                        if !self.eat(":") {
                            return Err(self.error("expected ':'"));
                        }
                        map.insert(key, self.value(depth + 1)?);
                        if self.separator(b'}')? {
                            break;
                        }
                    }
                }
                Ok(Value::Object(map))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("expected a value")),
        }
    }

    /// Whether the next non-space byte is `close` (then taken).
    fn close(&mut self, close: u8) -> bool {
        self.space();
        let found = self.text.get(self.at) == Some(&close);
        self.at += usize::from(found);
        found
    }

    /// After an element: `,` (false: more follow) or `close` (true).
    fn separator(&mut self, close: u8) -> Result<bool, Error> {
        if self.close(close) {
            Ok(true)
        } else if self.eat(",") {
            Ok(false)
        } else {
            Err(self.error("expected ',' or a closing bracket"))
        }
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
        {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.text[start..self.at]).expect("ASCII");
        let integer = !text.contains(['.', 'e', 'E']);
        if let (true, Ok(v)) = (integer, text.parse::<u64>()) {
            return Ok(Value::Unsigned(v));
        }
        if let (true, Ok(v)) = (integer, text.parse::<i64>()) {
            return Ok(Value::Signed(v));
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Value::Float(v)),
            _ => Err(Error::custom(format!(
                "{text:?} is not a number at byte {start}"
            ))),
        }
    }

    fn string(&mut self) -> Result<String, Error> {
        self.at += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.text.get(self.at) else {
                return Err(self.error("unterminated string"));
            };
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.text.get(self.at) else {
                        return Err(self.error("unterminated string"));
                    };
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.escaped_char()?,
                        _ => return Err(self.error("unknown escape")),
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                b if b < 0x20 => return Err(self.error("control character in a string")),
                b => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| self.error("invalid UTF-8"))
    }

    /// The character of `\uXXXX`, or of a surrogate pair `\uD8XX\uDCXX`.
    fn escaped_char(&mut self) -> Result<char, Error> {
        let high = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&high) {
            if !self.eat("\\u") {
                return Err(self.error("lone surrogate"));
            }
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(self.error("lone surrogate"));
            }
            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        } else {
            high
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let digits = self.text.get(self.at..self.at + 4);
        let code = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("invalid \\u escape"))?;
        self.at += 4;
        Ok(code)
    }
}

impl<'de> IntoDeserializer<'de, Error> for Value {
    type Deserializer = Value;
    fn into_deserializer(self) -> Value {
        self
    }
}

impl<'de> de::Deserializer<'de> for Value {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Unsigned(v) => visitor.visit_u64(v),
            Value::Signed(v) => visitor.visit_i64(v),
            Value::Float(v) => visitor.visit_f64(v),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.into_iter());
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            Value::Object(map) => {
                let mut map = MapDeserializer::new(map.into_iter());
                let v = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(v)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Value::Null => visitor.visit_none(),
            v => visitor.visit_some(v),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            v => v
                .deserialize_any(visitor)
                .map_err(|_| Error::unknown_variant(name, variants)),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json::to_string_pretty;
    use serde::Serialize;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Sample {
        name: String,
        count: u64,
        delta: i64,
        share: f64,
        missing: Option<f64>,
        list: Vec<u32>,
        nested: BTreeMap<String, bool>,
    }

    fn sample() -> Sample {
        Sample {
            name: "quote \" back\\slash\nnew line \u{1} é 😀".into(),
            count: u64::MAX,
            delta: -42,
            share: 0.1 + 0.2,
            missing: None,
            list: vec![],
            nested: [("a".to_string(), true), ("b".to_string(), false)].into(),
        }
    }

    #[test]
    fn what_is_written_reads_back_equal_bit_for_bit() {
        let text = to_string_pretty(&sample());
        let read: Sample = from_str(&text).unwrap();
        assert_eq!(read, sample());
        assert_eq!(read.share.to_bits(), (0.1f64 + 0.2).to_bits());
    }

    #[test]
    fn written_text_is_what_serde_json_writes_and_reads() {
        let ours = to_string_pretty(&sample());
        let theirs = serde_json::to_string_pretty(&sample()).unwrap();
        assert_eq!(ours, theirs);
        let mut compact = Vec::new();
        crate::base::json::to_writer(&mut compact, &sample()).unwrap();
        assert_eq!(
            String::from_utf8(compact).unwrap(),
            serde_json::to_string(&sample()).unwrap()
        );
        // Exponents are written "1e300" where serde_json writes "1e+300": both are
        // JSON, and both read back to the same bits.
        let floats = [1.0, 1e-7, 1e300, -0.0, 123.456, 5e-324, f64::MAX];
        let theirs: Vec<f64> = serde_json::from_str(&to_string_pretty(&floats)).unwrap();
        let ours: Vec<f64> = from_str(&to_string_pretty(&floats)).unwrap();
        let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&theirs), bits(&floats));
        assert_eq!(bits(&ours), bits(&floats));
        assert_eq!(
            to_string_pretty(&[f64::NAN, f64::INFINITY]),
            "[\n  null,\n  null\n]"
        );
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        for bad in [
            "",
            "{",
            "[1,",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "\"\\x\"",
            "\"\\ud800\"",
            "01x",
            "1e999",
            "[1] 2",
            "nul",
            "\"a\u{1}\"",
        ] {
            assert!(from_str::<de::IgnoredAny>(bad).is_err(), "{bad:?} was read");
        }
        let deep = "[".repeat(10_000);
        assert!(from_str::<Vec<()>>(&deep).is_err());
    }
}
