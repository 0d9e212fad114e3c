//! The schema model: what a JSON Schema of the protocol says, read in one place.
//!
//! Three tools read a schema, and all of them read it through this module, so how a tagged
//! union, an open enum, a member or a reference is spelled is decided here once:
//!
//! - the generator (the rest of this crate) turns the canonical schema into Rust, TypeScript and
//!   the protocol reference, through [`Spec`];
//! - `cargo xtask upstream-diff` (`tools/upstream/src/diff.rs`) compares the canonical schema
//!   with an upstream ACP schema, through [`Schema`];
//! - the wire crate's reverse drift test (`crates/wire/tests/schema_drift.rs`) compares the
//!   canonical schema with the schema schemars emits from the generated Rust types, through
//!   [`Schema`].
//!
//! It has two layers:
//!
//! - [`Schema`] reads *any* schema with `$defs` (ours, upstream's, the `definitions` schemars
//!   emits) and judges no convention; it fails only on what it cannot read (a definition that
//!   is not an object, union variants that disagree on the tag, a variant that refers to a
//!   missing definition). Each [`Definition`] gets a [`Shape`] (an object with its
//!   [`Members`], a [`TaggedUnion`] with its [`Variant`]s and open branches, an [`Enumeration`]
//!   of `const` values, or something else) and its `x-*` annotations, and [`Type`] describes the
//!   type of a member. It understands both ways of writing a variant: ours, written inline and
//!   named by its `title`, and upstream's, which refers to a body definition through
//!   `allOf: [{"$ref": …}]`.
//! - [`Spec`] is the canonical schema under the generator's conventions (`spec/README.md`): it
//!   reads a [`Schema`] and rejects what the generator cannot express, with an
//!   [`Error::Schema`] naming the definition and the problem.
//!
//! ```
//! use acp_inject_codegen::model::{Schema, Shape};
//!
//! let schema = Schema::parse(r#"{ "$defs": { "Mode": { "oneOf": [{ "const": "queue" }, { "const": "steer" }] } } }"#)?;
//! let Shape::Enum(mode) = &schema.def("Mode").unwrap().shape else { panic!() };
//! assert_eq!(mode.values.len(), 2);
//! assert!(!mode.is_open());
//! # Ok::<(), acp_inject_codegen::Error>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::Error;

mod spec;
mod types;

pub use spec::{schema_err, Def, DefKind, Spec, DEFS};
pub use types::{JsonType, Type};

/// A schema's definitions, each read into a [`Shape`].
#[derive(Debug, Clone)]
pub struct Schema {
    pub title: Option<String>,
    pub description: Option<String>,
    /// The root schema without `$defs` (ours: the `anyOf` of the message kinds).
    pub root: Map<String, Value>,
    /// The definitions, in the schema's order.
    pub defs: Vec<Definition>,
    /// Definition name → index in `defs`.
    index: BTreeMap<String, usize>,
}

/// One definition of a schema.
#[derive(Debug, Clone)]
pub struct Definition {
    pub name: String,
    /// The definition as written.
    pub schema: Value,
    pub shape: Shape,
    pub description: Option<String>,
    /// `x-method`: the method whose params or result this is.
    pub method: Option<String>,
    /// `x-side`: the side that handles the method (`agent`, `client`, `protocol`).
    pub side: Option<String>,
    /// `x-rust`: how the generator treats it (`envelope`, `inline`); `None` for a generated type.
    pub rust: Option<String>,
}

/// What a definition is, structurally.
#[derive(Debug, Clone)]
pub enum Shape {
    /// An object: `properties`, or `"type": "object"` without branches.
    Object(Members),
    /// An `anyOf`/`oneOf` of objects told apart by the `const` value of one member.
    TaggedUnion(TaggedUnion),
    /// An `anyOf`/`oneOf` of `const` values, perhaps with a string or integer branch for any
    /// other value.
    Enum(Enumeration),
    /// Anything else: a scalar, an array, an alias, an `anyOf` without a tag.
    Other,
}

/// The members of an object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Members {
    /// Each member's schema, in the schema's order.
    pub properties: Map<String, Value>,
    /// The names listed in `required` (a name may have no schema in `properties`).
    pub required: BTreeSet<String>,
}

/// A tagged union: one variant per value of the tag member.
#[derive(Debug, Clone)]
pub struct TaggedUnion {
    /// The member whose `const` value tells the variants apart.
    pub tag: String,
    /// The branches with a tag value, in the schema's order.
    pub variants: Vec<Variant>,
    /// The branches without one. Ours has at most one, the open branch (`title: "other"`) for
    /// any other tag; upstream also writes a default variant this way, referring to a body whose
    /// tag may be left out.
    pub open: Vec<OpenBranch>,
}

/// A branch of a [`TaggedUnion`] with a tag value.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The branch's position in the `anyOf`/`oneOf`.
    pub branch: usize,
    /// The tag's value (a `const` that is not a string: its JSON text).
    pub value: String,
    /// Other spellings of the value accepted on input (`x-aliases` on the tag).
    pub aliases: Vec<String>,
    /// The branch's `title` (ours: the name of the body type of an inline variant).
    pub title: Option<String>,
    pub description: Option<String>,
    /// Where the variant's members are written.
    pub body: Body,
    /// The variant's members without the tag: its own, and those of the object definition it
    /// refers to ([`Body::Definition`]).
    pub members: Members,
    /// The branch as written.
    pub schema: Value,
}

/// Where a [`Variant`]'s members are written.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// In the branch itself (our convention). The value is the body as a definition of its own:
    /// the branch without its `title` and without the tag.
    Inline(Value),
    /// In an object definition the branch refers to through `allOf` (upstream's convention).
    Definition(String),
    /// In another union the branch refers to through `allOf`, whose tag lives in the same object
    /// (ours: `state_update` is a `StateUpdate`, tagged by `state`).
    Union(String),
}

/// A branch of a [`TaggedUnion`] or an [`Enumeration`] without a known value.
#[derive(Debug, Clone)]
pub struct OpenBranch {
    /// The branch's position in the `anyOf`/`oneOf`.
    pub branch: usize,
    pub title: Option<String>,
    /// The members it declares besides the tag; `None` when it declares no `properties`.
    pub members: Option<Members>,
    /// The branch as written.
    pub schema: Value,
}

/// An enumeration of `const` values.
#[derive(Debug, Clone)]
pub struct Enumeration {
    /// The known values (a value that is not a string: its JSON text), each with its
    /// description.
    pub values: Vec<(String, Option<String>)>,
    /// The branches that accept any other value (ours: at most one, a string titled `other`).
    pub open: Vec<OpenBranch>,
}

impl Schema {
    /// Reads a schema from its text.
    pub fn parse(text: &str) -> Result<Schema, Error> {
        let root: Value = serde_json::from_str(text).map_err(|e| Error::Json(e.to_string()))?;
        Schema::read(&root)
    }

    /// Reads a schema document: a JSON object with a `$defs` object.
    pub fn read(root: &Value) -> Result<Schema, Error> {
        let root = root.as_object().ok_or_else(|| schema_err("(root)", "the schema is not a JSON object"))?;
        let defs =
            root.get("$defs").and_then(Value::as_object).ok_or_else(|| schema_err("(root)", "the schema has no `$defs` object"))?;
        let mut schema = Schema::from_defs(defs)?;
        schema.title = str_member(root, "title");
        schema.description = str_member(root, "description");
        schema.root = root.iter().filter(|(k, _)| *k != "$defs").map(|(k, v)| (k.clone(), v.clone())).collect();
        Ok(schema)
    }

    /// Reads bare definitions, by name (the `definitions` schemars emits, say), with no root.
    /// References may point into `#/$defs/` or `#/definitions/`.
    pub fn from_defs(defs: &Map<String, Value>) -> Result<Schema, Error> {
        if let Some((name, _)) = defs.iter().find(|(_, d)| !d.is_object()) {
            return Err(schema_err(name, "the definition is not an object"));
        }
        let mut out = Vec::with_capacity(defs.len());
        for (name, schema) in defs {
            let annotation = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
            out.push(Definition {
                name: name.clone(),
                shape: shape_of(name, schema, defs)?,
                description: annotation("description"),
                method: annotation("x-method"),
                side: annotation("x-side"),
                rust: annotation("x-rust"),
                schema: schema.clone(),
            });
        }
        let index = out.iter().enumerate().map(|(i, d)| (d.name.clone(), i)).collect();
        Ok(Schema { title: None, description: None, root: Map::new(), defs: out, index })
    }

    /// The definition called `name`.
    pub fn def(&self, name: &str) -> Option<&Definition> {
        self.index.get(name).map(|&i| &self.defs[i])
    }
}

impl Definition {
    /// Inlined where it is referenced, not a type of its own (`x-rust: inline`; ours: `Meta`).
    pub fn is_inline(&self) -> bool {
        self.rust.as_deref() == Some("inline")
    }

    /// Validation only, implemented by hand on the Rust side (`x-rust: envelope`).
    pub fn is_envelope(&self) -> bool {
        self.rust.as_deref() == Some("envelope")
    }
}

impl Shape {
    /// A name for the kind of shape: `object`, `tagged union`, `enum` or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            Shape::Object(_) => "object",
            Shape::TaggedUnion(_) => "tagged union",
            Shape::Enum(_) => "enum",
            Shape::Other => "other",
        }
    }
}

impl Members {
    /// The `properties` and `required` of an object schema (empty for anything else).
    pub fn of(schema: &Value) -> Members {
        Members {
            properties: schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default(),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
        }
    }

    fn without(mut self, member: &str) -> Members {
        self.properties.shift_remove(member);
        self.required.remove(member);
        self
    }
}

impl TaggedUnion {
    /// Whether some branch has no tag value (ours: the union keeps any other tag).
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }
}

impl Variant {
    /// The name of the body type: the definition the variant refers to, else its `title`
    /// (empty when it has neither, which the generator rejects).
    pub fn body_name(&self) -> &str {
        match &self.body {
            Body::Definition(name) | Body::Union(name) => name,
            Body::Inline(_) => self.title.as_deref().unwrap_or_default(),
        }
    }
}

impl Enumeration {
    /// Whether some branch accepts values beyond the known ones.
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }
}

/// The branches of an `anyOf` (else a `oneOf`); empty when there are none.
pub fn branches(schema: &Value) -> &[Value] {
    schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The definition a schema's `$ref` names (`#/$defs/X` or `#/definitions/X`: `X`; a reference
/// elsewhere: as written).
pub fn ref_name(schema: &Value) -> Option<&str> {
    schema.get("$ref").and_then(Value::as_str).map(ref_target)
}

/// The definition named by an `allOf` holding one `$ref` (upstream writes a reference with a
/// description that way).
pub fn all_of_ref(schema: &Value) -> Option<&str> {
    match schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([one]) => ref_name(one),
        _ => None,
    }
}

/// Every `$ref` in a schema, in order, with the member it is inside: the first `properties` key
/// on the way down (`None` outside any member).
pub fn references(schema: &Value) -> Vec<(String, Option<String>)> {
    fn walk(v: &Value, member: Option<&str>, out: &mut Vec<(String, Option<String>)>) {
        match v {
            Value::Object(o) => {
                if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                    out.push((ref_target(r).to_owned(), member.map(str::to_owned)));
                }
                for (k, x) in o {
                    match (k.as_str(), x.as_object()) {
                        ("properties", Some(props)) if member.is_none() => {
                            props.iter().for_each(|(name, s)| walk(s, Some(name), out));
                        }
                        _ => walk(x, member, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, member, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, None, &mut out);
    out
}

fn ref_target(r: &str) -> &str {
    r.strip_prefix(DEFS).or_else(|| r.strip_prefix("#/definitions/")).unwrap_or(r)
}

fn str_member(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A `const` value as text: a string as itself, anything else as JSON.
fn value_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

fn shape_of(name: &str, def: &Value, defs: &Map<String, Value>) -> Result<Shape, Error> {
    let bs = branches(def);
    if def.get("properties").is_some() || def.get("type") == Some(&Value::from("object")) && bs.is_empty() {
        return Ok(Shape::Object(Members::of(def)));
    }
    if bs.is_empty() {
        return Ok(Shape::Other);
    }
    if let Some(e) = enumeration(bs) {
        return Ok(Shape::Enum(e));
    }
    if !bs.iter().any(|b| !tag_candidates(b).is_empty()) {
        return Ok(Shape::Other);
    }
    tagged_union(name, bs, defs).map(Shape::TaggedUnion)
}

/// An enumeration: every branch is a `const`, or a string or integer with no `properties` (the
/// open branch), and at least one is a `const`.
fn enumeration(bs: &[Value]) -> Option<Enumeration> {
    let is_const = |b: &Value| b.get("const").is_some();
    let is_open = |b: &Value| {
        !is_const(b) && b.get("properties").is_none() && matches!(b.get("type").and_then(Value::as_str), Some("string" | "integer"))
    };
    if !bs.iter().all(|b| is_const(b) || is_open(b)) || !bs.iter().any(is_const) {
        return None;
    }
    let values = bs
        .iter()
        .filter_map(|b| Some((value_text(b.get("const")?), b.get("description").and_then(Value::as_str).map(str::to_owned))))
        .collect();
    let open = bs
        .iter()
        .enumerate()
        .filter(|(_, b)| is_open(b))
        .map(|(i, b)| OpenBranch {
            branch: i,
            title: b.get("title").and_then(Value::as_str).map(str::to_owned),
            members: None,
            schema: b.clone(),
        })
        .collect();
    Some(Enumeration { values, open })
}

/// The members of a branch with a `const` value: exactly one of them is the tag of a variant.
fn tag_candidates(branch: &Value) -> Vec<(&String, &Value)> {
    let props = branch.get("properties").and_then(Value::as_object);
    props.map(|p| p.iter().filter(|(_, v)| v.get("const").is_some()).collect()).unwrap_or_default()
}

fn tagged_union(name: &str, bs: &[Value], defs: &Map<String, Value>) -> Result<TaggedUnion, Error> {
    let mut tag: Option<String> = None;
    let mut variants = Vec::new();
    let mut untagged = Vec::new();
    for (i, b) in bs.iter().enumerate() {
        let at = format!("{name} (branch {i})");
        let candidates = tag_candidates(b);
        let [(tag_name, tag_schema)] = candidates[..] else {
            if candidates.is_empty() {
                untagged.push((i, b));
                continue;
            }
            return Err(schema_err(&at, "a tagged-union variant needs exactly one property with a `const` value (the tag)"));
        };
        match &tag {
            None => tag = Some(tag_name.clone()),
            Some(t) if t != tag_name => return Err(schema_err(&at, &format!("variants disagree on the tag: {t:?} and {tag_name:?}"))),
            _ => {}
        }
        let own = Members::of(b).without(tag_name);
        let (body, members) = match all_of_ref(b) {
            Some(target) => {
                let referenced = defs.get(target).ok_or_else(|| {
                    let r = b["allOf"][0]["$ref"].as_str().unwrap_or(target);
                    schema_err(name, &format!("`$ref` {r:?} names no definition"))
                })?;
                if !branches(referenced).is_empty() && referenced.get("properties").is_none() {
                    (Body::Union(target.to_owned()), own)
                } else {
                    // The referenced body's members join the variant's own (its tag schema too,
                    // when it repeats it; the tag is never required of the body).
                    let mut members = own;
                    let body = Members::of(referenced);
                    members.properties.extend(body.properties);
                    members.required.extend(body.required);
                    members.required.remove(tag_name.as_str());
                    (Body::Definition(target.to_owned()), members)
                }
            }
            None => (Body::Inline(inline_body(b, tag_name)), own),
        };
        variants.push(Variant {
            branch: i,
            value: value_text(&tag_schema["const"]),
            aliases: tag_schema
                .get("x-aliases")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            title: b.get("title").and_then(Value::as_str).map(str::to_owned),
            description: b.get("description").and_then(Value::as_str).map(str::to_owned),
            body,
            members,
            schema: b.clone(),
        });
    }
    // A union has a tagged branch, so the tag is known; the untagged branches' members are
    // read without it.
    let tag = tag.unwrap_or_default();
    let open = untagged
        .into_iter()
        .map(|(i, b)| OpenBranch {
            branch: i,
            title: b.get("title").and_then(Value::as_str).map(str::to_owned),
            members: b.get("properties").and_then(Value::as_object).map(|_| Members::of(b).without(&tag)),
            schema: b.clone(),
        })
        .collect();
    Ok(TaggedUnion { tag, variants, open })
}

/// An inline variant's body as a definition of its own: the branch without its `title` and
/// without the tag.
fn inline_body(branch: &Value, tag: &str) -> Value {
    let mut body = branch.as_object().cloned().unwrap_or_default();
    body.shift_remove("title");
    if let Some(Value::Object(props)) = body.get_mut("properties") {
        props.shift_remove(tag);
    }
    if let Some(Value::Array(req)) = body.get_mut("required") {
        req.retain(|r| r.as_str() != Some(tag));
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn union(schema: &Schema, name: &str) -> TaggedUnion {
        match &schema.def(name).expect("defined").shape {
            Shape::TaggedUnion(u) => u.clone(),
            other => panic!("{name} is {}", other.kind()),
        }
    }

    /// Ours: inline variants named by `title`, a nested union by `allOf`, an open `other` branch.
    #[test]
    fn our_convention() {
        let schema = Schema::read(&json!({ "$defs": {
            "Update": { "anyOf": [
                { "title": "Said", "type": "object", "required": ["kind", "text"],
                  "properties": { "kind": { "const": "said", "x-aliases": ["spoke"] }, "text": { "type": "string" } } },
                { "title": "State", "type": "object", "allOf": [{ "$ref": "#/$defs/State" }], "properties": { "kind": { "const": "state" } } },
                { "title": "other", "type": "object", "properties": { "kind": { "type": "string" } } }
            ] },
            "State": { "anyOf": [{ "title": "Idle", "type": "object", "properties": { "state": { "const": "idle" } } }] }
        } }))
        .unwrap();
        let u = union(&schema, "Update");
        assert_eq!((u.tag.as_str(), u.variants.len(), u.open.len()), ("kind", 2, 1));
        let said = &u.variants[0];
        assert_eq!((said.value.as_str(), said.body_name(), &said.aliases[..]), ("said", "Said", &["spoke".to_owned()][..]));
        let body = json!({ "type": "object", "required": ["text"], "properties": { "text": { "type": "string" } } });
        assert_eq!(said.body, Body::Inline(body));
        assert_eq!(said.members.required, BTreeSet::from(["text".to_owned()]));
        assert_eq!(u.variants[1].body, Body::Union("State".into()));
        assert_eq!(u.open[0].members, Some(Members::default()));
    }

    /// Upstream's: variants refer to body definitions, a default variant has no tag, enums of
    /// integers are open with an integer branch; schemars' `#/definitions/` references resolve.
    #[test]
    fn upstream_convention() {
        let defs = json!({
            "Update": { "oneOf": [
                { "allOf": [{ "$ref": "#/definitions/Said" }], "properties": { "kind": { "const": "said" } }, "required": ["kind"] },
                { "title": "default", "allOf": [{ "$ref": "#/definitions/Said" }] }
            ] },
            "Said": { "type": "object", "required": ["text", "kind"], "properties": { "text": { "$ref": "#/definitions/Text" } } },
            "Text": { "type": "string" },
            "Code": { "anyOf": [{ "const": -32700, "title": "Parse error" }, { "title": "Other", "type": "integer" }] }
        });
        let schema = Schema::from_defs(defs.as_object().unwrap()).unwrap();
        let u = union(&schema, "Update");
        assert_eq!((u.variants[0].body.clone(), u.variants[0].body_name()), (Body::Definition("Said".into()), "Said"));
        assert_eq!(u.variants[0].members.required, BTreeSet::from(["text".to_owned()]));
        assert_eq!((u.open.len(), u.open[0].title.as_deref(), u.open[0].members.is_none()), (1, Some("default"), true));
        let Shape::Enum(code) = &schema.def("Code").unwrap().shape else { panic!("Code is an enum") };
        assert_eq!((code.values[0].0.as_str(), code.is_open()), ("-32700", true));
        assert!(matches!(schema.def("Text").unwrap().shape, Shape::Other));
        let refs = references(&schema.def("Said").unwrap().schema);
        assert_eq!(refs, [("Text".to_owned(), Some("text".to_owned()))]);
    }

    #[test]
    fn a_union_needs_one_tag() {
        let two = json!({ "$defs": { "U": { "anyOf": [
            { "type": "object", "properties": { "a": { "const": "x" } } },
            { "type": "object", "properties": { "b": { "const": "y" } } }
        ] } } });
        let err = Schema::read(&two).unwrap_err().to_string();
        assert!(err.contains("U (branch 1)") && err.contains("disagree on the tag"), "{err}");
    }
}
