//! The canonical schema under the generator's conventions (`spec/README.md`): the kinds of
//! definition the generator knows, and an [`Error::Schema`] for everything it cannot express.
//!
//! This module owns the conventions; it produces no code. How the schema is read is the
//! [`Schema`]'s business, shared with the tools that compare schemas.

use serde_json::Value;

use super::{branches, Definition, Enumeration, OpenBranch, Schema, Shape, TaggedUnion};
use crate::Error;

/// The `$defs` prefix of every reference in the canonical schema.
pub const DEFS: &str = "#/$defs/";

/// One definition of the schema, classified for the generator.
#[derive(Debug, Clone)]
pub struct Def {
    pub name: String,
    pub description: Option<String>,
    pub kind: DefKind,
    /// The method named by `x-method`, for params and response types.
    pub method: Option<String>,
    pub schema: Value,
}

#[derive(Debug, Clone)]
pub enum DefKind {
    /// Validation-only definition; the Rust side is hand-written (`x-rust: envelope`).
    Envelope,
    /// Inlined where referenced (`x-rust: inline`).
    Inline,
    /// An object tagged by one member, one variant per tag value, maybe with an open branch
    /// (titled `other`). Every variant has a string tag value and a PascalCase `title` naming
    /// its Rust body type, so [`Variant::body_name`](super::Variant::body_name) is never empty.
    TaggedUnion(TaggedUnion),
    /// A string with known values and, when open, one string branch (titled `other`, or
    /// `unknown` where `other` is a known value) for any other string.
    StringEnum(Enumeration),
    /// Anything else: handed to typify.
    Plain,
}

/// The canonical schema, classified for the generator.
#[derive(Debug, Clone)]
pub struct Spec {
    pub title: String,
    pub description: String,
    pub defs: Vec<Def>,
}

impl Spec {
    pub fn parse(text: &str) -> Result<Spec, Error> {
        let root: Value = serde_json::from_str(text).map_err(|e| Error::Json(e.to_string()))?;
        let schema = Schema::read(&root)?;
        let mut defs = Vec::with_capacity(schema.defs.len());
        for def in schema.defs {
            if !is_type_name(&def.name) {
                return Err(schema_err(&def.name, "a definition name must be a PascalCase Rust identifier"));
            }
            let kind = classify(&def)?;
            let Definition { name, description, method, schema, .. } = def;
            defs.push(Def { name, description, kind, method, schema });
        }
        let spec = Spec { title: schema.title.unwrap_or_default(), description: schema.description.unwrap_or_default(), defs };
        spec.check_refs(&root, "(root)")?;
        Ok(spec)
    }

    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.iter().find(|d| d.name == name)
    }

    /// Every `$ref` must point at a definition of this schema.
    fn check_refs(&self, value: &Value, at: &str) -> Result<(), Error> {
        match value {
            Value::Object(obj) => {
                if let Some(r) = obj.get("$ref") {
                    let r = r.as_str().ok_or_else(|| schema_err(at, "`$ref` is not a string"))?;
                    let target =
                        r.strip_prefix(DEFS).ok_or_else(|| schema_err(at, &format!("`$ref` {r:?} does not point into `{DEFS}`")))?;
                    if self.def(target).is_none() {
                        return Err(schema_err(at, &format!("`$ref` {r:?} names no definition")));
                    }
                }
                for (k, v) in obj {
                    let at = if k == "$defs" {
                        at.to_owned()
                    } else if at == "(root)" {
                        k.clone()
                    } else {
                        at.to_owned()
                    };
                    self.check_refs(v, &at)?;
                }
                Ok(())
            }
            Value::Array(items) => items.iter().try_for_each(|v| self.check_refs(v, at)),
            _ => Ok(()),
        }
    }
}

pub fn schema_err(def: &str, message: &str) -> Error {
    Error::Schema { def: def.to_owned(), message: message.to_owned() }
}

fn is_type_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

/// The open branch of a union or enum is titled `other` (`unknown` where `other` is a value).
fn is_open_title(branch: &Value) -> bool {
    matches!(branch.get("title").and_then(Value::as_str), Some("other" | "unknown"))
}

fn branch_at(name: &str, branch: usize) -> String {
    format!("{name} (branch {branch})")
}

const NO_TAG: &str = "a tagged-union variant needs exactly one property with a `const` value (the tag)";

fn classify(def: &Definition) -> Result<DefKind, Error> {
    let name = def.name.as_str();
    match def.rust.as_deref() {
        Some("envelope") => return Ok(DefKind::Envelope),
        Some("inline") => return Ok(DefKind::Inline),
        Some(other) => return Err(schema_err(name, &format!("unknown `x-rust` value {other:?}"))),
        None => {}
    }
    match &def.shape {
        Shape::TaggedUnion(u) => check_union(name, u).map(|()| DefKind::TaggedUnion(u.clone())),
        Shape::Enum(e) if e.open.iter().all(is_open_string) => {
            check_enum(name, &def.schema, e).map(|()| DefKind::StringEnum(e.clone()))
        }
        // An open branch the generator has no form for (an integer, an untitled string).
        Shape::Enum(_) => Ok(DefKind::Plain),
        // Branches that are objects make a tagged union, and these have no tag.
        Shape::Other if branches(&def.schema).iter().any(|b| b.get("type") == Some(&Value::from("object"))) => {
            for (i, b) in branches(&def.schema).iter().enumerate() {
                check_object_branch(&branch_at(name, i), b)?;
                if !is_open_title(b) {
                    return Err(schema_err(&branch_at(name, i), NO_TAG));
                }
            }
            Err(schema_err(name, "a tagged union needs at least one variant"))
        }
        Shape::Object(_) | Shape::Other => Ok(DefKind::Plain),
    }
}

/// Every branch of a tagged union is an object schema with `properties`.
fn check_object_branch(at: &str, branch: &Value) -> Result<(), Error> {
    let obj = branch.as_object().ok_or_else(|| schema_err(at, "a union branch must be an object schema"))?;
    if obj.get("type") != Some(&Value::from("object")) {
        return Err(schema_err(at, "a tagged-union branch must have `\"type\": \"object\"`"));
    }
    if !obj.get("properties").is_some_and(Value::is_object) {
        return Err(schema_err(at, "a tagged-union branch needs `properties` holding the tag"));
    }
    Ok(())
}

fn check_union(name: &str, u: &TaggedUnion) -> Result<(), Error> {
    for o in &u.open {
        let at = branch_at(name, o.branch);
        check_object_branch(&at, &o.schema)?;
        if !is_open_title(&o.schema) {
            return Err(schema_err(&at, NO_TAG));
        }
    }
    if let Some(second) = u.open.get(1) {
        return Err(schema_err(&branch_at(name, second.branch), "more than one open branch"));
    }
    for v in &u.variants {
        let at = branch_at(name, v.branch);
        check_object_branch(&at, &v.schema)?;
        if !v.schema["properties"][&u.tag]["const"].is_string() {
            return Err(schema_err(&at, "the tag's `const` must be a string"));
        }
        let title = v.title.as_deref().filter(|t| is_type_name(t));
        let title = title.ok_or_else(|| schema_err(&at, "a tagged-union variant needs a PascalCase `title` naming its Rust type"))?;
        // A variant refers to another definition by `allOf` (a nested tagged union sharing the
        // object), named by its title; otherwise its members are written inline.
        if let Some(all) = v.schema.get("allOf") {
            let target = match all.as_array().map(Vec::as_slice) {
                Some([one]) => one.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(DEFS)),
                _ => return Err(schema_err(&at, "a referencing variant needs `allOf` with exactly one `$ref`")),
            };
            if target != Some(title) {
                return Err(schema_err(&at, "a referencing variant's `title` must equal the referenced definition's name"));
            }
            if v.schema["properties"].as_object().map_or(0, |p| p.len()) != 1 {
                return Err(schema_err(&at, "a referencing variant may only declare the tag property"));
            }
        }
    }
    Ok(())
}

/// The open branch of a string enum: a string titled `other` (or `unknown`).
fn is_open_string(o: &OpenBranch) -> bool {
    is_open_title(&o.schema) && o.schema.get("type") == Some(&Value::from("string"))
}

fn check_enum(name: &str, schema: &Value, e: &Enumeration) -> Result<(), Error> {
    if branches(schema).iter().any(|b| b.get("const").is_some_and(|c| !c.is_string())) {
        return Err(schema_err(name, "an enum `const` must be a string"));
    }
    if e.open.len() > 1 {
        return Err(schema_err(name, "more than one open branch"));
    }
    Ok(())
}
