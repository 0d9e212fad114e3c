//! Reverse drift check: the JSON Schema that schemars emits from the generated Rust types
//! (feature `schemars`) against the canonical `spec/acp-inject.schema.json`.
//!
//! Both sides are normalised to comparable *facts*, one per definition and one per member:
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
fn spec_defs(schema: &Value) -> (Map<String, Value>, BTreeSet<String>) {
    let mut defs = Map::new();
    let mut inline = BTreeSet::new();
    for (name, def) in schema["$defs"].as_object().expect("$defs") {
        if def["x-rust"] == "inline" {
            inline.insert(name.clone());
        }
        defs.insert(name.clone(), def.clone());
        // Envelope definitions are validation-only: their branches are not Rust bodies.
        if def["x-rust"] == "envelope" {
            continue;
        }
        if let Some(u) = union_of(def) {
            for branch in branches(def) {
                let Some(title) = branch.get("title").and_then(Value::as_str) else { continue };
                if branch.get("allOf").is_some() || is_open_branch(branch, &u.tag) {
                    continue;
                }
                let mut body = branch.as_object().unwrap().clone();
                body.remove("title");
                if let Some(Value::Object(props)) = body.get_mut("properties") {
                    props.remove(&u.tag);
                }
                if let Some(Value::Array(req)) = body.get_mut("required") {
                    req.retain(|r| *r != u.tag.as_str());
                }
                defs.insert(title.to_owned(), Value::Object(body));
            }
        }
    }
    (defs, inline)
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

struct Union {
    tag: String,
    /// (tag value, body definition)
    variants: Vec<(String, String)>,
    open: bool,
}

fn branches(schema: &Value) -> &[Value] {
    schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The one property of a branch with a `const` value: (tag, value).
fn const_tag(branch: &Value) -> Option<(String, String)> {
    let props = branch.get("properties")?.as_object()?;
    let tagged: Vec<_> = props.iter().filter_map(|(k, p)| Some((k.clone(), p.get("const")?.as_str()?.to_owned()))).collect();
    match &tagged[..] {
        [one] => Some(one.clone()),
        _ => None,
    }
}

fn is_open_branch(branch: &Value, tag: &str) -> bool {
    branch.pointer(&format!("/properties/{tag}/type")) == Some(&json!("string"))
        && branch.pointer(&format!("/properties/{tag}/const")).is_none()
}

fn ref_name(schema: &Value) -> Option<&str> {
    let r = schema.get("$ref")?.as_str()?;
    r.strip_prefix("#/$defs/").or_else(|| r.strip_prefix("#/definitions/"))
}

fn union_of(schema: &Value) -> Option<Union> {
    let bs = branches(schema);
    let tag = bs.iter().find_map(const_tag)?.0;
    let mut variants = Vec::new();
    let mut open = false;
    for b in bs {
        if let Some((t, value)) = const_tag(b) {
            if t != tag {
                return None;
            }
            // The body: the referenced definition (`allOf: [{$ref}]`), else the variant's title.
            let body = b
                .get("allOf")
                .and_then(|a| a.get(0))
                .and_then(ref_name)
                .or_else(|| b.get("title").and_then(Value::as_str))
                .unwrap_or("?");
            variants.push((value, body.to_owned()));
        } else if is_open_branch(b, &tag) {
            open = true;
        } else {
            return None;
        }
    }
    Some(Union { tag, variants, open })
}

/// A string enum: (values, open).
fn enum_of(schema: &Value) -> Option<(Vec<String>, bool)> {
    let bs = branches(schema);
    if bs.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    let mut open = false;
    for b in bs {
        if let Some(c) = b.get("const").and_then(Value::as_str) {
            values.push(c.to_owned());
        } else if b.get("type") == Some(&json!("string")) && b.get("properties").is_none() {
            open = true;
        } else {
            return None;
        }
    }
    Some((values, open))
}

/// Named definitions (objects, unions, enums, unions of references); scalars are inlined.
fn is_named(def: &Value) -> bool {
    let bs = branches(def);
    if !bs.is_empty() {
        return enum_of(def).is_some() || union_of(def).is_some() || bs.iter().all(|b| ref_name(b).is_some());
    }
    def.get("properties").is_some() || def.get("type") == Some(&json!("object"))
}

struct Side<'a> {
    defs: &'a Map<String, Value>,
    inline: &'a BTreeSet<String>,
}

impl Side<'_> {
    fn types(&self, schema: &Value) -> BTreeSet<String> {
        let one = |s: &str| BTreeSet::from([s.to_owned()]);
        let Value::Object(o) = schema else {
            return one(if *schema == Value::Bool(false) { "never" } else { "any" });
        };
        if let Some(name) = ref_name(schema) {
            return match self.defs.get(name) {
                Some(def) if self.inline.contains(name) || !is_named(def) => self.types(def),
                Some(_) => one(name),
                None => one(&format!("missing-def:{name}")),
            };
        }
        let bs = branches(schema);
        if !bs.is_empty() {
            return bs.iter().flat_map(|b| self.types(b)).collect();
        }
        if let Some([only]) = o.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            if o.get("type").is_none() {
                return self.types(only);
            }
        }
        if let Some(c) = o.get("const") {
            return one(&format!("const {c}"));
        }
        if let Some(e) = o.get("enum") {
            return one(&format!("enum {e}"));
        }
        let listed: Vec<&str> = match o.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return one("any"),
        };
        listed
            .into_iter()
            .map(|t| match t {
                "array" => {
                    let items = o.get("items").map_or_else(|| one("any"), |i| self.types(i));
                    format!("array<{}>", items.into_iter().collect::<Vec<_>>().join("|"))
                }
                t => t.to_owned(),
            })
            .collect()
    }

    fn member(&self, prop: &Value, required: bool) -> String {
        let mut types = self.types(prop);
        if !required {
            types.remove("null");
        }
        let mut out =
            format!("{} {}", if required { "required" } else { "optional" }, types.into_iter().collect::<Vec<_>>().join("|"));
        if let Some(n) = prop.get("minItems") {
            out.push_str(&format!(" minItems={n}"));
        }
        if prop.get("uniqueItems") == Some(&Value::Bool(true)) {
            out.push_str(" uniqueItems");
        }
        out
    }

    fn facts(&self) -> Facts {
        let mut facts = Facts::new();
        for (name, def) in self.defs {
            if self.inline.contains(name) || !is_named(def) {
                continue;
            }
            if let Some(u) = union_of(def) {
                facts.insert(name.clone(), format!("union tag={}{}", u.tag, if u.open { " open" } else { "" }));
                for (value, body) in u.variants {
                    facts.insert(format!("{name}|{value}"), body);
                }
            } else if let Some((values, open)) = enum_of(def) {
                facts.insert(name.clone(), format!("enum {}", if open { "open" } else { "closed" }));
                for v in values {
                    facts.insert(format!("{name}|{v}"), v);
                }
            } else if !branches(def).is_empty() {
                let mut refs: Vec<&str> = branches(def).iter().filter_map(ref_name).collect();
                refs.sort();
                facts.insert(name.clone(), format!("anyOf {}", refs.join("|")));
            } else {
                facts.insert(name.clone(), "object".to_owned());
                let required: BTreeSet<&str> = def
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for (member, prop) in def.get("properties").and_then(Value::as_object).into_iter().flatten() {
                    facts.insert(format!("{name}.{member}"), self.member(prop, required.contains(member.as_str())));
                }
            }
        }
        facts
    }
}

fn spec_facts(schema: &Value) -> Facts {
    let (defs, inline) = spec_defs(schema);
    Side { defs: &defs, inline: &inline }.facts()
}

fn rust_facts() -> Facts {
    let defs = rust_defs();
    Side { defs: &defs, inline: &BTreeSet::new() }.facts()
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
    changed.insert("InjectCapabilities.steerInStream".into(), "optional array<SteerInStream>".into());
    let problems = compare(spec_facts(&spec_schema()), &changed, &allow);
    assert!(problems.iter().any(|p| p.contains("InjectCapabilities.steerInStream")), "{problems:?}");

    // A union variant the Rust decoder does not know.
    let mut schema = spec_schema();
    let variants = schema["$defs"]["StateUpdate"]["anyOf"].as_array_mut().unwrap();
    variants.insert(0, json!({ "title": "PausedStateUpdate", "type": "object", "properties": { "state": { "const": "paused" } }, "required": ["state"] }));
    let problems = compare(spec_facts(&schema), &rust, &allow);
    assert!(problems.iter().any(|p| p.contains("StateUpdate|paused")), "{problems:?}");
}
