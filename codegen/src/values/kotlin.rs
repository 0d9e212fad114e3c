//! The Kotlin side of the value model (to be written).

use super::Model;
use crate::Error;

/// The file's text, after `preamble` (a comment line).
pub fn render(model: &Model, preamble: &str) -> Result<String, Error> {
    let _ = model;
    Ok(format!("// {preamble}\n// Source: spec/values.json and the wire types it reaches (codegen/src/values/kotlin.rs).\n"))
}
