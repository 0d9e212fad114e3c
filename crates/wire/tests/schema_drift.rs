//! Reverse drift check: the JSON Schema that schemars emits from the generated Rust types
//! (feature `schemars`) against the canonical `spec/acp-inject.schema.json`.
//!
//! Both sides are read by the codegen model (`acp_inject_codegen::model`, the reading the
//! generator itself uses) and normalised to comparable *facts*, one per definition and one per
//! member:
//!
//! - `Def` → the kind: `object`, `union tag=… [open]`, `enum open|closed`, `anyOf A|B`;
//! - `Def.member` → `required|optional`, the coarse JSON types (a named object/union/enum is
//!   written by name, scalars such as `SessionId` are inlined, arrays as `array<items>`,
//!   `null` is dropped from optional members because Rust's `Option` accepts it either way),
//!   and `minItems`/`uniqueItems`;
//! - `Union|value` → the body type of the variant; `Enum|value` → the value.
//!
//! Inline variant bodies of the spec's tagged unions count as definitions named by their
//! `title`. Every difference must be listed in `schema_drift.allow.json` with a reason; a new
//! difference fails, and so does an allowlist entry that no longer matches anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use acp_inject_codegen::model::{self, Body, Definition, JsonType, Schema, Shape, Type};
use acp_inject_wire::*;
use serde_json::{json, Map, Value};

type Facts = BTreeMap<String, String>;

/// Rust types whose schema name differs from the spec's definition name.
const RENAMED: &[(&str, &str)] = &[("ErrorObject", "Error")];

// ---------------------------------------------------------------------------------------------
// The two sides
// ---------------------------------------------------------------------------------------------

fn spec_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/acp-inject.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("schema JSON")
}

/// The spec's definitions, plus the inline bodies of its tagged-union variants (by `title`).
fn spec_defs(schema: &Value) -> Schema {
    let spec = Schema::read(schema).expect("the spec reads");
    let mut defs: Map<String, Value> = spec.defs.iter().map(|d| (d.name.clone(), d.schema.clone())).collect();
    // Envelope definitions are validation-only: their branches are not Rust bodies.
    for def in spec.defs.iter().filter(|d| !d.is_envelope()) {
        let Shape::TaggedUnion(u) = &def.shape else { continue };
        for v in &u.variants {
            if let (Body::Inline(body), Some(title)) = (&v.body, &v.title) {
                defs.insert(title.clone(), body.clone());
            }
        }
    }
    Schema::from_defs(&defs).expect("the spec's definitions read")
}

/// Every definition schemars emits when asked for each params, result and error type; the
/// rest of the wire types are reached through them.
fn rust_defs() -> Map<String, Value> {
    let mut generator = schemars::gen::SchemaSettings::draft2019_09().into_generator();
    macro_rules! roots {
        ($($t:ty),* $(,)?) => { $( generator.subschema_for::<$t>(); )* };
    }
    roots!(
        InitializeRequest,
        InitializeResponse,
        NewSessionRequest,
        NewSessionResponse,
        ListSessionsRequest,
        ListSessionsResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        PromptRequest,
        PromptResponse,
        InjectRequest,
        InjectResponse,
        RevokeInjectRequest,
        RevokeInjectResponse,
        ReplaceInjectRequest,
        ReplaceInjectResponse,
        SteeringRequest,
        SteeringResponse,
        LoginAuthRequest,
        LoginAuthResponse,
        LogoutAuthRequest,
        LogoutAuthResponse,
        CloseSessionRequest,
        CloseSessionResponse,
        SessionStatusRequest,
        SessionStatusResponse,
        RequestPermissionRequest,
        RequestPermissionResponse,
        CancelSessionNotification,
        CancelRequestNotification,
        UpdateSessionNotification,
        ErrorObject,
        ErrorData,
        UnsupportedProtocolVersionErrorData,
        RequestId,
    );
    let mut defs = Map::new();
    for (name, schema) in generator.definitions() {
        let name = RENAMED.iter().find(|(r, _)| r == name).map_or(name.as_str(), |(_, s)| s);
        defs.insert(name.to_owned(), serde_json::to_value(schema).expect("schemas encode"));
    }
    defs
}

// ---------------------------------------------------------------------------------------------
// Normalisation (the same code for both sides)
// ---------------------------------------------------------------------------------------------

/// Named definitions (objects, unions, enums, unions of references); scalars are inlined.
fn is_named(def: &Definition) -> bool {
    match &def.shape {
        Shape::Object(_) | Shape::TaggedUnion(_) | Shape::Enum(_) => true,
        Shape::Other => alternatives(def).is_some(),
    }
}

/// The definitions an `anyOf` of references names, sorted.
fn alternatives(def: &Definition) -> Option<Vec<&str>> {
    let bs = model::branches(&def.schema);
    let mut refs: Vec<&str> = bs.iter().map(model::ref_name).collect::<Option<_>>()?;
    refs.sort();
    (!bs.is_empty()).then_some(refs)
}

/// The coarse JSON types of a type, named definitions by name and the rest inlined.
fn types(schema: &Schema, t: &Type) -> BTreeSet<String> {
    let one = |s: &str| BTreeSet::from([s.to_owned()]);
    match t {
        Type::Any => one("any"),
        Type::Never => one("never"),
        Type::Ref(name) => match schema.def(name) {
            Some(def) if def.is_inline() || !is_named(def) => types(schema, &Type::of(&def.schema)),
            Some(_) => one(name),
            None => one(&format!("missing-def:{name}")),
        },
        Type::AnyOf(ts) => ts.iter().flat_map(|t| types(schema, t)).collect(),
        Type::Const(c) => one(&format!("const {c}")),
        Type::Enum(values) => one(&format!("enum {}", Value::Array(values.clone()))),
        Type::Json(ts) => ts
            .iter()
            .map(|t| match t {
                JsonType::Array(items) => format!("array<{}>", types(schema, items).into_iter().collect::<Vec<_>>().join("|")),
                JsonType::Named { name, .. } => name.clone(),
            })
            .collect(),
    }
}

fn member(schema: &Schema, prop: &Value, required: bool) -> String {
    let mut types = types(schema, &Type::of(prop));
    if !required {
        types.remove("null");
    }
    let mut out = format!("{} {}", if required { "required" } else { "optional" }, types.into_iter().collect::<Vec<_>>().join("|"));
    if let Some(n) = prop.get("minItems") {
        out.push_str(&format!(" minItems={n}"));
    }
    if prop.get("uniqueItems") == Some(&Value::Bool(true)) {
        out.push_str(" uniqueItems");
    }
    out
}

fn facts(schema: &Schema) -> Facts {
    let mut facts = Facts::new();
    for def in schema.defs.iter().filter(|d| !d.is_inline() && is_named(d)) {
        let name = &def.name;
        match &def.shape {
            Shape::TaggedUnion(u) => {
                facts.insert(name.clone(), format!("union tag={}{}", u.tag, if u.is_open() { " open" } else { "" }));
                for v in &u.variants {
                    facts.insert(format!("{name}|{}", v.value), v.body_name().to_owned());
                }
            }
            Shape::Enum(e) => {
                facts.insert(name.clone(), format!("enum {}", if e.is_open() { "open" } else { "closed" }));
                for (v, _) in &e.values {
                    facts.insert(format!("{name}|{v}"), v.clone());
                }
            }
            Shape::Other => {
                facts.insert(name.clone(), format!("anyOf {}", alternatives(def).unwrap_or_default().join("|")));
            }
            Shape::Object(members) => {
                facts.insert(name.clone(), "object".to_owned());
                for (m, prop) in &members.properties {
                    facts.insert(format!("{name}.{m}"), member(schema, prop, members.required.contains(m)));
                }
            }
        }
    }
    facts
}

fn spec_facts(schema: &Value) -> Facts {
    facts(&spec_defs(schema))
}

fn rust_facts() -> Facts {
    facts(&Schema::from_defs(&rust_defs()).expect("schemars' definitions read"))
}

// ---------------------------------------------------------------------------------------------
// The allowlist and the comparison
// ---------------------------------------------------------------------------------------------

#[derive(serde::Deserialize)]
struct Allowlist {
    /// Spec definitions with no Rust counterpart at all (every fact of theirs is spec-only).
    definitions: Vec<AllowedDefinition>,
    /// Single facts that differ: the exact value on each side (`null`: absent on that side).
    facts: Vec<AllowedFact>,
}

#[derive(serde::Deserialize)]
struct AllowedDefinition {
    name: String,
    reason: String,
}

#[derive(serde::Deserialize)]
struct AllowedFact {
    fact: String,
    spec: Option<String>,
    rust: Option<String>,
    reason: String,
}

fn allowlist() -> Allowlist {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema_drift.allow.json");
    let list: Allowlist = serde_json::from_str(&std::fs::read_to_string(&path).expect("allowlist")).expect("allowlist JSON");
    for reason in list.definitions.iter().map(|d| &d.reason).chain(list.facts.iter().map(|f| &f.reason)) {
        assert!(reason.trim().len() >= 20, "every allowlist entry needs a reason: {reason:?}");
    }
    list
}

fn belongs_to(fact: &str, def: &str) -> bool {
    fact == def || fact.strip_prefix(def).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('|'))
}

/// Everything wrong with `spec` vs `rust` under `allow`; empty when they agree.
fn compare(mut spec: Facts, rust: &Facts, allow: &Allowlist) -> Vec<String> {
    let mut problems = Vec::new();
    for d in &allow.definitions {
        let before = spec.len();
        spec.retain(|k, _| !belongs_to(k, &d.name));
        if before == spec.len() {
            problems.push(format!("stale allowlist definition {:?}: the spec has no such definition", d.name));
        }
        if rust.keys().any(|k| belongs_to(k, &d.name)) {
            problems.push(format!("stale allowlist definition {:?}: the Rust side now has it; compare it instead", d.name));
        }
    }
    let keys: BTreeSet<&String> = spec.keys().chain(rust.keys()).collect();
    let mut used = BTreeSet::new();
    for key in keys {
        let (s, r) = (spec.get(key), rust.get(key));
        if s == r {
            continue;
        }
        let allowed = allow.facts.iter().position(|a| a.fact == *key && a.spec.as_ref() == s && a.rust.as_ref() == r);
        match allowed {
            Some(i) => {
                used.insert(i);
            }
            None => problems.push(format!(
                "new difference (fix the generator or the schema, or allowlist with a reason): {}",
                json!({ "fact": key, "spec": s, "rust": r, "reason": "…" })
            )),
        }
    }
    for (i, a) in allow.facts.iter().enumerate() {
        if !used.contains(&i) {
            problems.push(format!(
                "stale allowlist fact {:?} (spec {:?}, rust {:?}): no longer differs like this",
                a.fact, a.spec, a.rust
            ));
        }
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn rust_types_match_the_schema_up_to_the_allowlist() {
    let problems = compare(spec_facts(&spec_schema()), &rust_facts(), &allowlist());
    assert!(problems.is_empty(), "{} schema drift problem(s):\n{}", problems.len(), problems.join("\n"));
}

/// The normalisation sees what it must, so the comparison is not vacuous.
#[test]
fn both_sides_produce_the_expected_facts() {
    let spec = spec_facts(&spec_schema());
    let rust = rust_facts();
    for facts in [&spec, &rust] {
        assert!(facts.len() > 250, "only {} facts", facts.len());
        assert_eq!(facts["SessionUpdate"], "union tag=sessionUpdate open");
        assert_eq!(facts["SessionUpdate|state_update"], "StateUpdate");
        assert_eq!(facts["StateUpdate|idle"], "IdleStateUpdate");
        assert_eq!(facts["InjectMode"], "enum closed");
        assert_eq!(facts["StopReason"], "enum open");
        assert_eq!(facts["UserMessage.messageId"], "required string");
        assert_eq!(facts["UserMessage.content"], "optional array<ContentBlock>");
        assert_eq!(facts["RequestPermissionRequest.options"], "required array<PermissionOption> minItems=1");
        assert_eq!(facts["Error.code"], "required integer");
        assert_eq!(facts["CancelRequestNotification.requestId"], "required integer|null|string");
    }
}

/// A property added to the schema (not in the Rust types) is caught, and so is one the
/// generator drops.
#[test]
fn an_added_or_dropped_property_is_a_new_difference() {
    let allow = allowlist();
    let rust = rust_facts();

    let mut schema = spec_schema();
    schema["$defs"]["PromptRequest"]["properties"]["priority"] = json!({ "type": "integer" });
    let problems = compare(spec_facts(&schema), &rust, &allow);
    assert!(problems.iter().any(|p| p.contains("PromptRequest.priority")), "{problems:?}");

    let mut dropped = rust.clone();
    dropped.remove("InjectRequest.mode").expect("the fact exists");
    let problems = compare(spec_facts(&spec_schema()), &dropped, &allow);
    assert!(problems.iter().any(|p| p.contains("InjectRequest.mode")), "{problems:?}");

    let mut changed = rust.clone();
    changed.insert("PermissionOption.optionId".into(), "optional string".into());
    let problems = compare(spec_facts(&spec_schema()), &changed, &allow);
    assert!(problems.iter().any(|p| p.contains("PermissionOption.optionId")), "{problems:?}");

    // A union variant the Rust decoder does not know.
    let mut schema = spec_schema();
    let variants = schema["$defs"]["StateUpdate"]["anyOf"].as_array_mut().unwrap();
    variants.insert(0, json!({ "title": "PausedStateUpdate", "type": "object", "properties": { "state": { "const": "paused" } }, "required": ["state"] }));
    let problems = compare(spec_facts(&schema), &rust, &allow);
    assert!(problems.iter().any(|p| p.contains("StateUpdate|paused")), "{problems:?}");
}
