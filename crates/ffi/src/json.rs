//! Values that cross the FFI as JSON text: arbitrary JSON members (`_meta`, raw tool input and
//! output), the raw object of an unknown union member, and counts that cannot be zero.

use std::num::NonZeroU32;

use acp_inject_core::wire::Unknown;
use serde_json::{Map, Value};

/// A JSON object.
type JsonObject = Map<String, Value>;

uniffi::custom_type!(Value, String, {
    remote,
    lower: |v| v.to_string(),
    try_lift: |s| Ok(serde_json::from_str(&s)?),
});

uniffi::custom_type!(JsonObject, String, {
    remote,
    lower: |v| Value::Object(v).to_string(),
    try_lift: |s| Ok(serde_json::from_str(&s)?),
});

uniffi::custom_type!(Unknown, String, {
    remote,
    lower: |v| Value::Object(v.0).to_string(),
    try_lift: |s| Ok(Unknown(serde_json::from_str(&s)?)),
});

uniffi::custom_type!(NonZeroU32, u32, {
    remote,
    lower: |v| v.get(),
    try_lift: |v| NonZeroU32::new(v).ok_or_else(|| uniffi::deps::anyhow::anyhow!("a count here is at least 1")),
});
