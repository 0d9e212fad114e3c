//! Values that cross the FFI as JSON text: arbitrary JSON members (`_meta`, raw tool input and
//! output), the raw object of an unknown union member, and counts that cannot be zero.
//!
//! A value that does not lift is the caller's mistake: its error is [`AcpError::InvalidInput`],
//! which UniFFI hands back as the called function's own error (every function taking these
//! returns `Result<_, AcpError>`) instead of an internal error.

use std::num::NonZeroU32;

use acp_inject_core::wire::Unknown;
use serde_json::{Map, Value};
use uniffi::deps::anyhow;

use crate::AcpError;

/// A JSON object.
type JsonObject = Map<String, Value>;

/// The lift error for JSON text that does not parse as `what`.
fn invalid(what: &'static str) -> impl Fn(serde_json::Error) -> anyhow::Error {
    move |e| AcpError::invalid(format!("{what} is not valid: {e}")).into()
}

uniffi::custom_type!(Value, String, {
    remote,
    lower: |v| v.to_string(),
    try_lift: |s| serde_json::from_str(&s).map_err(invalid("a JSON value")),
});

uniffi::custom_type!(JsonObject, String, {
    remote,
    lower: |v| Value::Object(v).to_string(),
    try_lift: |s| serde_json::from_str(&s).map_err(invalid("a JSON object")),
});

uniffi::custom_type!(Unknown, String, {
    remote,
    lower: |v| v.json().to_owned(),
    try_lift: |s| Unknown::from_json(&s).map_err(invalid("the JSON object of an unknown member")),
});

uniffi::custom_type!(NonZeroU32, u32, {
    remote,
    lower: |v| v.get(),
    try_lift: |v| NonZeroU32::new(v).ok_or_else(|| AcpError::invalid("a count here is at least 1").into()),
});

#[cfg(test)]
mod tests {
    use super::*;

    /// The lift error downcasts to the typed error, which is what makes UniFFI return it.
    #[test]
    fn json_that_does_not_parse_is_invalid_input() {
        let e = serde_json::from_str::<JsonObject>("[1, 2").map_err(invalid("a JSON object")).unwrap_err();
        match e.downcast::<AcpError>() {
            Ok(AcpError::InvalidInput { detail }) => assert!(detail.starts_with("a JSON object is not valid: "), "{detail}"),
            other => panic!("{other:?}"),
        }
    }
}
