//! The boundary encoding (`docs/encoding.md`): every value crosses the FFI as MessagePack, a
//! struct or a class as a map of its fields by name, a union's value as its class's map with
//! the class name first under `"$"`. This module is the runtime of the generated encoders and
//! decoders (`generated_values.rs`, from the value model): the [`Writer`] and [`Reader`], the
//! [`Encode`] and [`Decode`] traits with their impls for scalars, options, lists and JSON, and
//! the open branch of the wire's unions.
//!
//! Primitives are read and written with `rmp` (MessagePack's reference Rust implementation);
//! the reader borrows strings from the input. Decoding is strict: a wrong type, a missing
//! required field, an unknown field or class is a [`DecodeError`] naming where, which the FFI
//! returns as `AcpError::InvalidInput` (the bytes came from the caller's values).

use std::fmt;

use acp_inject_core::wire::{RequestId, Unknown};
use rmp::Marker;
use serde_json::{Map, Number, Value};

/// How deep JSON values may nest (as deep as serde_json reads them).
const MAX_DEPTH: usize = 128;

/// Writes the encoding into a buffer.
#[derive(Default)]
pub struct Writer {
    buf: Vec<u8>,
}

// Writing into a `Vec` cannot fail: the results of rmp's writers are dropped.
impl Writer {
    /// A writer appending to `buf` (a buffer reused from call to call).
    pub fn new(buf: Vec<u8>) -> Writer {
        Writer { buf }
    }

    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn map(&mut self, len: u32) {
        let _ = rmp::encode::write_map_len(&mut self.buf, len);
    }

    pub fn array(&mut self, len: usize) {
        let _ = rmp::encode::write_array_len(&mut self.buf, u32::try_from(len).unwrap_or(u32::MAX));
    }

    /// A map's key.
    pub fn key(&mut self, key: &str) {
        self.str(key);
    }

    /// The class tag, the first pair of a class's map.
    pub fn tag(&mut self, class: &str) {
        self.str("$");
        self.str(class);
    }

    pub fn str(&mut self, s: &str) {
        let _ = rmp::encode::write_str(&mut self.buf, s);
    }

    pub fn nil(&mut self) {
        let _ = rmp::encode::write_nil(&mut self.buf);
    }

    pub fn bool(&mut self, b: bool) {
        let _ = rmp::encode::write_bool(&mut self.buf, b);
    }

    pub fn uint(&mut self, n: u64) {
        let _ = rmp::encode::write_uint(&mut self.buf, n);
    }

    pub fn int(&mut self, n: i64) {
        if n >= 0 {
            self.uint(n as u64);
        } else {
            let _ = rmp::encode::write_sint(&mut self.buf, n);
        }
    }

    pub fn float(&mut self, f: f64) {
        let _ = rmp::encode::write_f64(&mut self.buf, f);
    }
}

/// Why bytes did not decode, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    message: String,
    /// The fields and items leading to the problem, outermost first.
    path: Vec<String>,
}

impl DecodeError {
    fn new(message: impl Into<String>) -> DecodeError {
        DecodeError { message: message.into(), path: Vec::new() }
    }

    /// The error, one level further out: inside field (or item) `at`.
    pub fn at(mut self, at: &str) -> DecodeError {
        self.path.insert(0, at.to_owned());
        self
    }

    pub fn missing(class: &str, field: &str) -> DecodeError {
        DecodeError::new(format!("{class} needs `{field}`"))
    }

    pub fn unknown_field(class: &str, field: &str) -> DecodeError {
        DecodeError::new(format!("{class} has no field `{field}`"))
    }

    pub fn unknown_class(union: &str, class: &str) -> DecodeError {
        DecodeError::new(format!("`{class}` is not a kind of {union}"))
    }

    pub fn unknown_value(enum_name: &str, value: &str) -> DecodeError {
        DecodeError::new(format!("{value:?} is not a value of {enum_name}"))
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path.join("."), self.message)
        }
    }
}

impl std::error::Error for DecodeError {}

/// Reads the encoding from a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
}

fn describe(m: Marker) -> &'static str {
    match m {
        Marker::Null => "null",
        Marker::True | Marker::False => "a boolean",
        Marker::FixPos(_)
        | Marker::FixNeg(_)
        | Marker::U8
        | Marker::U16
        | Marker::U32
        | Marker::U64
        | Marker::I8
        | Marker::I16
        | Marker::I32
        | Marker::I64 => "an integer",
        Marker::F32 | Marker::F64 => "a number",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "a string",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "a list",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "bytes",
        _ => "an extension value",
    }
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn peek(&self) -> Result<Marker, DecodeError> {
        self.buf.first().map(|&b| Marker::from_u8(b)).ok_or_else(|| DecodeError::new("the value ends early"))
    }

    fn expected(&self, what: &str) -> DecodeError {
        match self.peek() {
            Ok(m) => DecodeError::new(format!("expected {what}, found {}", describe(m))),
            Err(e) => e,
        }
    }

    pub fn map_len(&mut self) -> Result<u32, DecodeError> {
        match self.peek()? {
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {}
            _ => return Err(self.expected("a map")),
        }
        rmp::decode::read_map_len(&mut self.buf).map_err(|e| DecodeError::new(e.to_string()))
    }

    pub fn array_len(&mut self) -> Result<u32, DecodeError> {
        match self.peek()? {
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {}
            _ => return Err(self.expected("a list")),
        }
        rmp::decode::read_array_len(&mut self.buf).map_err(|e| DecodeError::new(e.to_string()))
    }

    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        match self.peek()? {
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {}
            _ => return Err(self.expected("a string")),
        }
        let len = rmp::decode::read_str_len(&mut self.buf).map_err(|e| DecodeError::new(e.to_string()))? as usize;
        if self.buf.len() < len {
            return Err(DecodeError::new("a string ends early"));
        }
        let (s, rest) = self.buf.split_at(len);
        self.buf = rest;
        std::str::from_utf8(s).map_err(|_| DecodeError::new("a string is not UTF-8"))
    }

    /// A map's key.
    pub fn key(&mut self) -> Result<&'a str, DecodeError> {
        self.str()
    }

    /// The class tag: the first pair of a class's map, `"$"` and the class name.
    pub fn tag(&mut self) -> Result<&'a str, DecodeError> {
        if self.str().map_err(|e| e.at("$"))? != "$" {
            return Err(DecodeError::new("a union's value names its class first, under \"$\""));
        }
        self.str().map_err(|e| e.at("$"))
    }

    /// The class tag, which must be `class`.
    pub fn expect_tag(&mut self, class: &str) -> Result<(), DecodeError> {
        let tag = self.tag()?;
        if tag == class {
            Ok(())
        } else {
            Err(DecodeError::new(format!("expected a {class}, found a {tag}")))
        }
    }

    /// Reads a `nil` when one is next.
    pub fn take_nil(&mut self) -> bool {
        if self.buf.first() == Some(&0xc0) {
            self.buf = &self.buf[1..];
            true
        } else {
            false
        }
    }

    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.peek()? {
            Marker::True | Marker::False => rmp::decode::read_bool(&mut self.buf).map_err(|e| DecodeError::new(e.to_string())),
            _ => Err(self.expected("a boolean")),
        }
    }

    fn is_int(m: Marker) -> bool {
        matches!(
            m,
            Marker::FixPos(_)
                | Marker::FixNeg(_)
                | Marker::U8
                | Marker::U16
                | Marker::U32
                | Marker::U64
                | Marker::I8
                | Marker::I16
                | Marker::I32
                | Marker::I64
        )
    }

    /// An integer of type `T` (out of its range is an error).
    pub fn int<T: num_traits::FromPrimitive>(&mut self, what: &str) -> Result<T, DecodeError> {
        if !Self::is_int(self.peek()?) {
            return Err(self.expected(what));
        }
        rmp::decode::read_int(&mut self.buf).map_err(|_| DecodeError::new(format!("expected {what}, found one out of range")))
    }

    /// A number (an integer is taken as its value).
    pub fn float(&mut self) -> Result<f64, DecodeError> {
        match self.peek()? {
            Marker::F64 => rmp::decode::read_f64(&mut self.buf).map_err(|e| DecodeError::new(e.to_string())),
            Marker::F32 => rmp::decode::read_f32(&mut self.buf).map(f64::from).map_err(|e| DecodeError::new(e.to_string())),
            Marker::U64 | Marker::U32 | Marker::U16 | Marker::U8 | Marker::FixPos(_) => Ok(self.int::<u64>("a number")? as f64),
            m if Self::is_int(m) => Ok(self.int::<i64>("a number")? as f64),
            _ => Err(self.expected("a number")),
        }
    }

    /// Any value, as JSON (a map's keys must be strings).
    pub fn json(&mut self) -> Result<Value, DecodeError> {
        self.json_at(0)
    }

    fn json_at(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::new("a JSON value nests too deep"));
        }
        Ok(match self.peek()? {
            Marker::Null => {
                self.take_nil();
                Value::Null
            }
            Marker::True | Marker::False => Value::Bool(self.bool()?),
            Marker::F32 | Marker::F64 => Number::from_f64(self.float()?).map(Value::Number).unwrap_or(Value::Null),
            Marker::FixNeg(_) | Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => Value::from(self.int::<i64>("an integer")?),
            m if Self::is_int(m) => Value::from(self.int::<u64>("an integer")?),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => Value::String(self.str()?.to_owned()),
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                let n = self.array_len()?;
                let mut items = Vec::with_capacity((n as usize).min(self.remaining()));
                for i in 0..n {
                    items.push(self.json_at(depth + 1).map_err(|e| e.at(&i.to_string()))?);
                }
                Value::Array(items)
            }
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => Value::Object(self.object_at(depth)?),
            _ => return Err(self.expected("a JSON value")),
        })
    }

    fn object_at(&mut self, depth: usize) -> Result<Map<String, Value>, DecodeError> {
        let n = self.map_len()?;
        let mut map = Map::new();
        for _ in 0..n {
            let key = self.str().map_err(|e| DecodeError::new(format!("a JSON object's key: {e}")))?.to_owned();
            let value = self.json_at(depth + 1).map_err(|e| e.at(&key))?;
            map.insert(key, value);
        }
        Ok(map)
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::new(format!("{} bytes follow the value", self.buf.len())))
        }
    }
}

/// A value written in the boundary encoding.
pub trait Encode {
    fn encode(&self, w: &mut Writer);
}

/// A value read from the boundary encoding.
pub trait Decode: Sized {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// `value`'s encoding.
pub fn encode<T: Encode + ?Sized>(value: &T) -> Vec<u8> {
    let mut w = Writer::default();
    value.encode(&mut w);
    w.into_bytes()
}

/// The value `bytes` encode, all of them.
pub fn decode<T: Decode>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut r = Reader::new(bytes);
    let v = T::decode(&mut r)?;
    r.finish()?;
    Ok(v)
}

impl Encode for bool {
    fn encode(&self, w: &mut Writer) {
        w.bool(*self);
    }
}

impl Decode for bool {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.bool()
    }
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encode(&self, w: &mut Writer) {
                w.uint(u64::from(*self));
            }
        }
        impl Decode for $t {
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                r.int(concat!("an integer (", stringify!($t), ")"))
            }
        }
    )*};
}
unsigned!(u16, u32, u64);

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encode(&self, w: &mut Writer) {
                w.int(i64::from(*self));
            }
        }
        impl Decode for $t {
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                r.int(concat!("an integer (", stringify!($t), ")"))
            }
        }
    )*};
}
signed!(i32, i64);

impl Encode for std::num::NonZeroU32 {
    fn encode(&self, w: &mut Writer) {
        w.uint(u64::from(self.get()));
    }
}

impl Decode for std::num::NonZeroU32 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        std::num::NonZeroU32::new(r.int("a count")?).ok_or_else(|| DecodeError::new("a count here is at least 1"))
    }
}

impl Encode for f64 {
    fn encode(&self, w: &mut Writer) {
        w.float(*self);
    }
}

impl Decode for f64 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.float()
    }
}

impl Encode for str {
    fn encode(&self, w: &mut Writer) {
        w.str(self);
    }
}

impl Encode for String {
    fn encode(&self, w: &mut Writer) {
        w.str(self);
    }
}

impl Decode for String {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.str().map(str::to_owned)
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, w: &mut Writer) {
        match self {
            Some(v) => v.encode(w),
            None => w.nil(),
        }
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if r.take_nil() {
            Ok(None)
        } else {
            T::decode(r).map(Some)
        }
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, w: &mut Writer) {
        self.as_slice().encode(w);
    }
}

impl<T: Encode> Encode for [T] {
    fn encode(&self, w: &mut Writer) {
        w.array(self.len());
        for v in self {
            v.encode(w);
        }
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.array_len()?;
        // Every item takes at least a byte: a hostile length cannot reserve more than the input.
        let mut items = Vec::with_capacity((n as usize).min(r.remaining()));
        for i in 0..n {
            items.push(T::decode(r).map_err(|e| e.at(&i.to_string()))?);
        }
        Ok(items)
    }
}

impl<T: Encode + ?Sized> Encode for Box<T> {
    fn encode(&self, w: &mut Writer) {
        (**self).encode(w);
    }
}

impl<T: Decode> Decode for Box<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        T::decode(r).map(Box::new)
    }
}

impl<T: Encode> Encode for &T {
    fn encode(&self, w: &mut Writer) {
        (**self).encode(w);
    }
}

impl Encode for Value {
    fn encode(&self, w: &mut Writer) {
        match self {
            Value::Null => w.nil(),
            Value::Bool(b) => w.bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    w.uint(u);
                } else if let Some(i) = n.as_i64() {
                    w.int(i);
                } else {
                    w.float(n.as_f64().unwrap_or(0.0));
                }
            }
            Value::String(s) => w.str(s),
            Value::Array(items) => items.encode(w),
            Value::Object(map) => map.encode(w),
        }
    }
}

impl Decode for Value {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.json()
    }
}

impl Encode for Map<String, Value> {
    fn encode(&self, w: &mut Writer) {
        w.map(u32::try_from(self.len()).unwrap_or(u32::MAX));
        for (k, v) in self {
            w.str(k);
            v.encode(w);
        }
    }
}

impl Decode for Map<String, Value> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.object_at(0)
    }
}

impl Encode for RequestId {
    fn encode(&self, w: &mut Writer) {
        match self {
            RequestId::Null => w.nil(),
            RequestId::Number(n) => w.int(*n),
            RequestId::Str(s) => w.str(s),
        }
    }
}

impl Decode for RequestId {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if r.take_nil() {
            return Ok(RequestId::Null);
        }
        match r.peek()? {
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => Ok(RequestId::Str(r.str()?.to_owned())),
            m if Reader::is_int(m) => Ok(RequestId::Number(r.int("a request id (an integer or a string)")?)),
            _ => Err(r.expected("a request id (an integer or a string)")),
        }
    }
}

/// The open branch of a wire union (`Other(Unknown)`): class `class`, the tag member's value
/// and the whole object.
pub fn enc_other(w: &mut Writer, class: &str, tag_member: &str, u: &Unknown) {
    w.map(3);
    w.tag(class);
    w.key("tag");
    w.str(u.tag(tag_member).unwrap_or(""));
    w.key("raw");
    u.object().encode(w);
}

/// The open branch read back: the object is what counts (its tag member is the tag).
pub fn dec_other(r: &mut Reader<'_>, n: u32) -> Result<Unknown, DecodeError> {
    let mut raw = None;
    for _ in 0..n {
        match r.key()? {
            "tag" => {
                r.str().map_err(|e| e.at("tag"))?;
            }
            "raw" => raw = Some(Map::<String, Value>::decode(r).map_err(|e| e.at("raw"))?),
            other => return Err(DecodeError::unknown_field("an unknown variant", other)),
        }
    }
    raw.map(Unknown::from).ok_or_else(|| DecodeError::missing("an unknown variant", "raw"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_round_trip_and_errors_say_where() {
        for v in [Value::Null, serde_json::json!({"a": [1, -2, 1.5, "x", true, {"b": null}], "big": u64::MAX})] {
            assert_eq!(decode::<Value>(&encode(&v)).unwrap(), v);
        }
        let bytes = encode(&vec![Some(1u64), None, Some(3)]);
        assert_eq!(decode::<Vec<Option<u64>>>(&bytes).unwrap(), vec![Some(1), None, Some(3)]);
        let e = decode::<Vec<String>>(&bytes).unwrap_err();
        assert_eq!(e.to_string(), "0: expected a string, found an integer");
        assert_eq!(decode::<u16>(&encode(&70_000u64)).unwrap_err().to_string(), "expected an integer (u16), found one out of range");
        assert!(decode::<u64>(&[0xcf, 0, 0]).is_err(), "a truncated integer");
        assert_eq!(decode::<String>(&[0xa2, 0xff, 0xfe]).unwrap_err().to_string(), "a string is not UTF-8");
        assert!(decode::<String>(&[0xa1, b'x', 0xc0]).unwrap_err().to_string().contains("follow"));
    }

    #[test]
    fn hostile_lengths_and_depth_are_refused_without_allocating() {
        // An array that claims 2^32-1 items, with none.
        assert!(decode::<Vec<u64>>(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        let deep: Vec<u8> = std::iter::repeat_n(0x91, 10_000).chain([0xc0]).collect();
        assert_eq!(decode::<Value>(&deep).unwrap_err().message, "a JSON value nests too deep");
    }

    #[test]
    fn request_ids() {
        for id in [RequestId::Null, RequestId::Number(-7), RequestId::Str("r1".into())] {
            assert_eq!(decode::<RequestId>(&encode(&id)).unwrap(), id);
        }
    }
}
