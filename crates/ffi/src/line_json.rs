//! Events as JSON that names each value's Python class: the format of Python's per-line path.
//!
//! [`crate::lines`]'s `acp_inject_line_port_receive_json_into` writes a line's events in this
//! form, and Python's `ClientCore.receive_line` builds them with `json.loads` and the public
//! constructors of the generated module's classes (`bindings/python/python/acp_inject/_lines.py`).
//! Every exported value is an object whose `"$"` member names its class (`"Usage"`,
//! `"Event.IGNORED"`, or with a trailing `*` a variant taking its fields positionally,
//! keyed `"0"`, `"1"`, …) and whose other members are the constructor's keyword arguments;
//! an open string enum is its class called with its wire string (`{"$": "StopReason*", "0":
//! "end_turn"}`); `Option` is `null` or the value, `Vec` an array, `Box` its content. The format is ours and
//! documented here and in `codegen/src/line_json.rs`, which writes an [`Json`] impl for every
//! type the crate exports (`generated_line_json.rs`) from its declarations.
//!
//! Why not UniFFI's own serialization: reading it from Python means UniFFI's private runtime
//! (its buffer stream and converters), which a new UniFFI release may change; and the
//! generated readers are Python code, while `json.loads` reads this in C.

/// Writes JSON in the format above into a reused buffer.
#[derive(Default)]
pub struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// Starts the object of a value of class `tag`.
    pub fn begin(&mut self, tag: &str) {
        self.out.extend_from_slice(b"{\"$\":\"");
        self.out.extend_from_slice(tag.as_bytes());
        self.out.push(b'"');
    }

    /// Starts member `key` of the object begun last (`begin` wrote its first member).
    pub fn key(&mut self, key: &str) {
        self.out.extend_from_slice(b",\"");
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// Ends the object begun last.
    pub fn end(&mut self) {
        self.out.push(b'}');
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// A writer appending to `out` (a buffer reused from line to line).
    pub fn new(out: Vec<u8>) -> Self {
        Writer { out }
    }

    /// The buffer, handed back.
    pub fn into_bytes(self) -> Vec<u8> {
        self.out
    }
}

/// A value written in the format above; the value is consumed (nothing is cloned).
pub trait Json {
    /// Appends the value's JSON.
    fn write(self, w: &mut Writer);
}

/// Scalars as JSON has them, through serde_json (its escaping, its number formatting; a float
/// that is not finite, which parsed JSON never holds, is `null`).
macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Json for $t {
            fn write(self, w: &mut Writer) {
                // Writing into a Vec cannot fail, nor can serializing these.
                let _ = serde_json::to_writer(&mut w.out, &self);
            }
        }
    )*};
}
scalar!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, String);

impl<T: Json> Json for Option<T> {
    fn write(self, w: &mut Writer) {
        match self {
            Some(v) => v.write(w),
            None => w.raw(b"null"),
        }
    }
}

impl<T: Json> Json for Box<T> {
    fn write(self, w: &mut Writer) {
        (*self).write(w)
    }
}

impl<T: Json> Json for Vec<T> {
    fn write(self, w: &mut Writer) {
        w.out.push(b'[');
        for (i, v) in self.into_iter().enumerate() {
            if i > 0 {
                w.out.push(b',');
            }
            v.write(w);
        }
        w.out.push(b']');
    }
}

#[cfg(test)]
mod tests {
    use acp_inject_core::client::Event;
    use acp_inject_core::wire::{StopReason, Usage};

    use super::*;

    fn json(v: impl Json) -> serde_json::Value {
        let mut w = Writer::default();
        v.write(&mut w);
        serde_json::from_slice(&w.into_bytes()).expect("valid JSON")
    }

    #[test]
    fn values_name_their_python_class_and_constructor_arguments() {
        let usage = Usage::new(150, 100, 50);
        assert_eq!(
            json(usage),
            serde_json::json!({"$": "Usage", "total_tokens": 150, "input_tokens": 100, "output_tokens": 50, "thought_tokens": null,
                "cached_read_tokens": null, "cached_write_tokens": null, "meta": null})
        );
        // An open string enum is its Python class (a `str` enum) called with its wire string.
        assert_eq!(json(vec![Some(StopReason::EndTurn), None]), serde_json::json!([{"$": "StopReason*", "0": "end_turn"}, null]));
        assert_eq!(json(StopReason::Other("_x".into())), serde_json::json!({"$": "StopReason*", "0": "_x"}));
        assert_eq!(json("quote \" and \u{1F600}\n".to_owned()), serde_json::json!("quote \" and \u{1F600}\n"));
        assert_eq!(json(f64::NAN), serde_json::Value::Null);
    }

    #[test]
    fn an_event_with_a_tuple_variant_and_custom_types() {
        let event = Event::Ignored { detail: "x".into() };
        assert_eq!(json(event), serde_json::json!({"$": "Event.IGNORED", "detail": "x"}));
        let id = acp_inject_core::wire::RequestId::Number(7);
        assert_eq!(json(id), serde_json::json!({"$": "RequestId.NUMBER*", "0": 7}));
        let id = acp_inject_core::wire::MessageId("m1".into());
        assert_eq!(json(id), serde_json::json!("m1"));
    }
}
