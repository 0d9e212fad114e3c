//! The generator library on its own (the macro's compile tests are in codegen/macro/tests/):
//! what the post-pass adds to typify's output, and the errors it reports.

use acp_inject_codegen::{generate, generate_formatted, Error};
use serde_json::json;

fn canonical() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/acp-inject.schema.json");
    std::fs::read_to_string(path).expect("the canonical schema")
}

/// A schema with one object definition `Thing` holding `properties`/`required`.
fn thing(properties: serde_json::Value, required: &[&str]) -> String {
    json!({ "$defs": { "Thing": { "type": "object", "properties": properties, "required": required } } }).to_string()
}

/// The formatted struct `name` (from its `pub struct` line to the closing brace).
fn struct_text(code: &str, name: &str) -> String {
    let start = [" ", "("]
        .iter()
        .find_map(|next| code.find(&format!("pub struct {name}{next}")))
        .unwrap_or_else(|| panic!("no struct {name}"));
    let end = ["\n}", ";\n"].iter().filter_map(|e| code[start..].find(e)).min().expect("end of struct") + start;
    // Include the attributes above the struct.
    let attrs = code[..start].rfind("\n///").unwrap_or(start);
    code[attrs..end].to_owned()
}

#[test]
fn the_canonical_schema_generates_deterministically() {
    let a = generate_formatted(&canonical()).expect("generates");
    let b = generate_formatted(&canonical()).expect("generates");
    assert_eq!(a, b);
}

#[test]
fn min_items_is_enforced_by_the_post_pass() {
    let code = generate_formatted(&canonical()).unwrap();
    let attrs_of = |ty: &str, field: &str| {
        let s = struct_text(&code, ty);
        let at = s.find(&format!("pub {field}:")).unwrap_or_else(|| panic!("{ty}.{field}"));
        s[s[..at].rfind("///").unwrap_or(0)..at].to_owned()
    };
    for (ty, field) in [("PromptRequest", "prompt"), ("RequestPermissionRequest", "options")] {
        let attrs = attrs_of(ty, field);
        assert!(attrs.contains("__de::min_items::<_, _, 1>"), "{ty}.{field}: {attrs}");
        assert!(attrs.contains("schemars(length(min = 1))"), "{ty}.{field}: {attrs}");
    }
    // On a tolerant member (`x-deserialize-*`) it is validation only: decoding drops what it
    // cannot read, which may leave fewer items.
    for (ty, field) in [("InjectCapabilities", "modes"), ("InjectCapabilities", "steer_in_stream")] {
        let attrs = attrs_of(ty, field);
        assert!(!attrs.contains("__de::min_items"), "{ty}.{field}: {attrs}");
        assert!(attrs.contains("__tolerant_"), "{ty}.{field} is tolerant: {attrs}");
    }
}

#[test]
fn min_items_on_an_optional_array_keeps_it_optional() {
    let code =
        generate_formatted(&thing(json!({ "tags": { "type": "array", "items": { "type": "string" }, "minItems": 2 } }), &[])).unwrap();
    let s = struct_text(&code, "Thing");
    assert!(s.contains("__de::min_items::<_, _, 2>"), "{s}");
    assert!(s.contains("default"), "a missing member must still decode: {s}");
}

#[test]
fn min_items_on_a_non_array_is_a_schema_error() {
    let err = generate(&thing(json!({ "count": { "type": "integer", "minItems": 1 } }), &["count"])).unwrap_err();
    let text = err.to_string();
    assert!(matches!(&err, Error::Schema { def, .. } if def == "Thing"), "{err:?}");
    assert!(text.contains("`count`") && text.contains("minItems"), "{text}");
}

#[test]
fn an_optional_array_keeps_empty_apart_from_absent() {
    let code = generate_formatted(&canonical()).unwrap();
    let s = struct_text(&code, "NewSessionRequest");
    assert!(s.contains("pub mcp_servers: ::std::option::Option<::std::vec::Vec<"), "{s}");
    assert!(!s.contains("Vec::is_empty"), "{s}");
}

#[test]
fn every_type_can_derive_json_schema_behind_the_feature() {
    let code = generate_formatted(&canonical()).unwrap();
    for ty in ["InjectCapabilities", "UserMessage", "MessageId", "ErrorData"] {
        let s = struct_text(&code, ty);
        assert!(s.contains(r#"#[cfg_attr(feature = "schemars", derive(::schemars::JsonSchema))]"#), "{ty}: {s}");
    }
    for ty in ["SessionUpdate", "StateUpdate", "ContentBlock", "StopReason", "InjectMode", "RequestId"] {
        assert!(code.contains(&format!("impl ::schemars::JsonSchema for {ty} {{")), "{ty} has no JsonSchema impl");
    }
    assert!(code.contains("impl<T: ::schemars::JsonSchema> ::schemars::JsonSchema for Patch<T>"));
}

#[test]
fn method_lists_follow_x_method() {
    let code = generate_formatted(&canonical()).unwrap();
    assert!(code.contains("pub const NOTIFICATIONS: &[&str] = &[SESSION_CANCEL, CANCEL_REQUEST, SESSION_UPDATE];"), "notifications");
    for m in ["INITIALIZE", "SESSION_INJECT", "SESSION_STATUS", "SESSION_REQUEST_PERMISSION"] {
        let requests = &code[code.find("pub const REQUESTS").expect("REQUESTS")..];
        assert!(requests[..requests.find(';').unwrap()].contains(m), "{m} is not a request");
    }
}

#[test]
fn schema_errors_name_the_definition() {
    assert!(matches!(generate("{ not json"), Err(Error::Json(_))));
    let no_title = json!({ "$defs": { "Shape": { "anyOf": [
        { "type": "object", "properties": { "shape": { "const": "circle" } }, "required": ["shape"] }
    ] } } });
    let err = generate(&no_title.to_string()).unwrap_err();
    assert!(matches!(&err, Error::Schema { def, message } if def == "Shape (branch 0)" && message.contains("title")), "{err:?}");
    let missing = thing(json!({ "body": { "$ref": "#/$defs/Body" } }), &["body"]);
    let err = generate(&missing).unwrap_err();
    assert!(err.to_string().contains("#/$defs/Body"), "{err}");
    let tristate = thing(json!({ "label": { "type": "string", "x-tristate": true } }), &["label"]);
    let err = generate(&tristate).unwrap_err();
    assert!(err.to_string().contains("x-tristate"), "{err}");
}
