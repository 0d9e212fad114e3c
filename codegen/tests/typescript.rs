//! The TypeScript renderer on its own: what it emits for the schema conventions, and the errors
//! it reports. (The emitted package is compiled and run by `cargo xtask typescript`.)

use acp_inject_codegen::typescript::render;
use acp_inject_codegen::Error;
use serde_json::json;

const PREAMBLE: &str = "Generated for a test.";

fn canonical() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/acp-inject.schema.json");
    std::fs::read_to_string(path).expect("the canonical schema")
}

fn file(files: &[(String, String)], name: &str) -> String {
    files.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name}")).1.clone()
}

#[test]
fn every_file_starts_with_the_preamble_and_renders_deterministically() {
    let a = render(&canonical(), PREAMBLE).expect("renders");
    let b = render(&canonical(), PREAMBLE).expect("renders");
    assert_eq!(a, b);
    for (name, text) in &a {
        let head: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
        assert!(head.contains(PREAMBLE), "{name} lacks the preamble");
    }
    let package: serde_json::Value = serde_json::from_str(&file(&a, "package.json")).expect("package.json is JSON");
    assert_eq!(package["type"], "module");
    assert_eq!(package["devDependencies"]["typescript"], acp_inject_codegen::typescript::TYPESCRIPT_VERSION);
}

#[test]
fn unions_enums_tristate_and_aliases_follow_the_schema() {
    let files = render(&canonical(), PREAMBLE).unwrap();
    let types = file(&files, "src/types.ts");
    let validators = file(&files, "src/validators.ts");
    // A discriminated union with an open branch and its `Known…` form.
    assert!(types.contains("| ({ sessionUpdate: \"user_message\" } & UserMessage)"), "{types}");
    assert!(types.contains("export interface SessionUpdateOther {\n  sessionUpdate: UnknownTag;"));
    assert!(types.contains("export type KnownSessionUpdate = Exclude<SessionUpdate, SessionUpdateOther>;"));
    // Tristate, optional and nullable members.
    assert!(types.contains("content?: Patch<ContentBlock[]>;"));
    assert!(types.contains("messageId?: MessageId | null;"));
    // Open and closed enums.
    assert!(types.contains("| (string & {});"));
    assert!(types.contains("export type InjectMode =\n"));
    // Aliases only in the validators.
    assert!(!types.contains("state_change") && !types.contains("steer_in_stream"));
    assert!(validators.contains("{ \"agent_message_clear\": \"_agent_message_clear\", \"state_change\": \"state_update\" }"));
    assert!(validators.contains("aliases: [\"steer_in_stream\"]"));
    // The `if`/`then` rule of InjectCapabilities.
    assert!(validators.contains("{ member: \"modes\", contains: \"steer\", require: [\"steerInStream\"] }"));
}

#[test]
fn tolerant_members_are_marked_in_the_validators() {
    let schema = json!({ "$defs": { "Thing": { "type": "object", "properties": {
        "items": { "type": ["array", "null"], "items": { "type": "string" },
                   "x-deserialize-default-on-error": true, "x-deserialize-skip-invalid-items": true },
        "name": { "type": ["string", "null"], "x-deserialize-default-on-error": true }
    } } } });
    let files = render(&schema.to_string(), PREAMBLE).expect("renders");
    let validators = file(&files, "src/validators.ts");
    assert!(
        validators.contains("items: { decode: d.nullable(d.array(d.string())), defaultOnError: true, skipInvalidItems: true, items: { decode: d.string(), rules: {} } }"),
        "{validators}"
    );
    assert!(validators.contains("name: { decode: d.nullable(d.string()), defaultOnError: true }"));
}

#[test]
fn unsupported_shapes_are_errors_naming_the_definition() {
    let cases = [
        json!({ "$defs": { "Thing": { "type": "object", "properties": { "inner": { "type": "object", "properties": { "a": {} } } } } } }),
        json!({ "$defs": { "Thing": { "type": "object", "properties": { "a": {} }, "if": { "properties": { "a": { "minimum": 1 } } }, "then": {} } } }),
        json!({ "$defs": { "Thing": { "x-rust": "envelope", "type": "object" } } }),
    ];
    for schema in cases {
        match render(&schema.to_string(), PREAMBLE) {
            Err(Error::Schema { def, .. }) => assert_eq!(def, "Thing"),
            other => panic!("expected a schema error, got {other:?}"),
        }
    }
    assert!(matches!(render("{ not json", PREAMBLE), Err(Error::Json(_))));
}
