//! The type of a member, as the schema spells it, for tools that compare or print types.

use serde_json::Value;

use super::{all_of_ref, branches, ref_name};

/// The type a schema gives a value. References are kept by name, not followed: what a named
/// type stands for is the reader's choice (a comparison may inline scalar aliases, or
/// `x-rust: inline` definitions).
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// No constraint on the type (`true`, `{}`, or no `type`).
    Any,
    /// Nothing is valid (`false`).
    Never,
    /// A definition, by name: a `$ref`, or an `allOf` of one `$ref`.
    Ref(String),
    /// One value (`const`).
    Const(Value),
    /// One of the listed values (`enum`).
    Enum(Vec<Value>),
    /// Any of the branches (`anyOf`, else `oneOf`).
    AnyOf(Vec<Type>),
    /// The JSON types of `type` (one, or a list such as `["string", "null"]`).
    Json(Vec<JsonType>),
}

/// One JSON type of a `type` keyword.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonType {
    /// `array`, with the type of its `items` ([`Type::Any`] when absent).
    Array(Box<Type>),
    /// Any other type (`string`, `integer`, `number`, `boolean`, `object`, `null`), with the
    /// schema's `format`.
    Named { name: String, format: Option<String> },
}

impl Type {
    /// The type of a schema. Validation keywords (`minItems`, `pattern`, `if`/`then` …) are
    /// not part of it; an `allOf` of one schema stands for that schema.
    pub fn of(schema: &Value) -> Type {
        let Some(obj) = schema.as_object() else {
            return if *schema == Value::Bool(false) { Type::Never } else { Type::Any };
        };
        if let Some(name) = ref_name(schema).or_else(|| all_of_ref(schema)) {
            return Type::Ref(name.to_owned());
        }
        let bs = branches(schema);
        if !bs.is_empty() {
            return Type::AnyOf(bs.iter().map(Type::of).collect());
        }
        if let (Some([only]), None) = (obj.get("allOf").and_then(Value::as_array).map(Vec::as_slice), obj.get("type")) {
            return Type::of(only);
        }
        if let Some(c) = obj.get("const") {
            return Type::Const(c.clone());
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            return Type::Enum(values.clone());
        }
        let names: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return Type::Any,
        };
        let format = obj.get("format").and_then(Value::as_str);
        let json = names.into_iter().map(|name| match name {
            "array" => JsonType::Array(Box::new(obj.get("items").map_or(Type::Any, Type::of))),
            name => JsonType::Named { name: name.to_owned(), format: format.map(str::to_owned) },
        });
        Type::Json(json.collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn named(name: &str, format: Option<&str>) -> JsonType {
        JsonType::Named { name: name.to_owned(), format: format.map(str::to_owned) }
    }

    #[test]
    fn references_are_kept_by_name_in_either_spelling() {
        assert_eq!(Type::of(&json!({ "$ref": "#/$defs/SessionId" })), Type::Ref("SessionId".into()));
        assert_eq!(Type::of(&json!({ "$ref": "#/definitions/SessionId" })), Type::Ref("SessionId".into()));
        let wrapped = json!({ "allOf": [{ "$ref": "#/$defs/SessionId" }], "description": "upstream's form" });
        assert_eq!(Type::of(&wrapped), Type::Ref("SessionId".into()));
    }

    #[test]
    fn json_types_keep_items_and_format() {
        let t = Type::of(&json!({ "type": ["array", "null"], "items": { "type": "integer", "format": "int32" } }));
        assert_eq!(
            t,
            Type::Json(vec![JsonType::Array(Box::new(Type::Json(vec![named("integer", Some("int32"))]))), named("null", None)])
        );
        assert_eq!(Type::of(&json!({ "type": "array" })), Type::Json(vec![JsonType::Array(Box::new(Type::Any))]));
        assert_eq!(
            Type::of(&json!({ "anyOf": [{ "const": 1 }, { "enum": ["a"] }] })),
            Type::AnyOf(vec![Type::Const(json!(1)), Type::Enum(vec![json!("a")])])
        );
        assert_eq!(Type::of(&json!({ "allOf": [{ "type": "string" }] })), Type::Json(vec![named("string", None)]));
        assert_eq!((Type::of(&json!(true)), Type::of(&json!(false)), Type::of(&json!({}))), (Type::Any, Type::Never, Type::Any));
    }
}
