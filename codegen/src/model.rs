//! Reads the canonical schema and sorts its definitions into the kinds the generator knows.
//!
//! This module owns the schema conventions (documented in `spec/README.md`); it produces no
//! code. Everything it rejects is an [`Error::Schema`] naming the definition and the problem.

use serde_json::{Map, Value};

use crate::Error;

/// The `$defs` prefix of every reference in the canonical schema.
pub const DEFS: &str = "#/$defs/";

/// One definition of the schema, classified.
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
    /// An object tagged by one member, one variant per tag value, maybe with an open branch.
    TaggedUnion(TaggedUnion),
    /// A string with known values and, when open, an `other` branch for any other string.
    StringEnum(StringEnum),
    /// Anything else: handed to typify.
    Plain,
}

#[derive(Debug, Clone)]
pub struct TaggedUnion {
    pub tag: String,
    pub variants: Vec<Variant>,
    pub open: bool,
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub value: String,
    pub aliases: Vec<String>,
    /// The Rust type of the variant's members (the variant's `title`).
    pub body: String,
    pub description: Option<String>,
    /// The variant's members are written inline (a body definition is synthesised); otherwise
    /// `body` is another definition (a nested tagged union sharing the object).
    pub inline: Option<Value>,
}

#[derive(Debug, Clone)]
pub struct StringEnum {
    pub values: Vec<(String, Option<String>)>,
    /// The `title` of the open branch (`other`, or `unknown` where `other` is a known value).
    pub open: Option<String>,
}

/// The parsed schema.
#[derive(Debug, Clone)]
pub struct Spec {
    pub title: String,
    pub description: String,
    pub defs: Vec<Def>,
}

impl Spec {
    pub fn parse(text: &str) -> Result<Spec, Error> {
        let root: Value = serde_json::from_str(text).map_err(|e| Error::Json(e.to_string()))?;
        let root = root.as_object().ok_or_else(|| schema_err("(root)", "the schema is not a JSON object"))?;
        let defs =
            root.get("$defs").and_then(Value::as_object).ok_or_else(|| schema_err("(root)", "the schema has no `$defs` object"))?;
        let mut out = Vec::with_capacity(defs.len());
        for (name, schema) in defs {
            if !is_type_name(name) {
                return Err(schema_err(name, "a definition name must be a PascalCase Rust identifier"));
            }
            let obj = schema.as_object().ok_or_else(|| schema_err(name, "the definition is not an object"))?;
            let kind = classify(name, obj)?;
            out.push(Def {
                name: name.clone(),
                description: str_member(obj, "description"),
                kind,
                method: str_member(obj, "x-method"),
                schema: schema.clone(),
            });
        }
        let spec = Spec {
            title: root.get("title").and_then(Value::as_str).unwrap_or("").to_owned(),
            description: root.get("description").and_then(Value::as_str).unwrap_or("").to_owned(),
            defs: out,
        };
        spec.check_refs(&Value::Object(root.clone()), "(root)")?;
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

fn str_member(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn is_type_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

fn classify(name: &str, obj: &Map<String, Value>) -> Result<DefKind, Error> {
    match obj.get("x-rust").and_then(Value::as_str) {
        Some("envelope") => return Ok(DefKind::Envelope),
        Some("inline") => return Ok(DefKind::Inline),
        Some(other) => return Err(schema_err(name, &format!("unknown `x-rust` value {other:?}"))),
        None => {}
    }
    let branches = obj.get("anyOf").or_else(|| obj.get("oneOf")).and_then(Value::as_array);
    let Some(branches) = branches else { return Ok(DefKind::Plain) };
    if branches.iter().all(|b| b.get("const").is_some() || is_other(b) && b.get("type") == Some(&Value::from("string"))) {
        return string_enum(name, branches).map(DefKind::StringEnum);
    }
    if branches.iter().any(|b| b.get("type") == Some(&Value::from("object"))) {
        return tagged_union(name, branches).map(DefKind::TaggedUnion);
    }
    Ok(DefKind::Plain)
}

fn is_other(branch: &Value) -> bool {
    matches!(branch.get("title").and_then(Value::as_str), Some("other" | "unknown"))
}

fn string_enum(name: &str, branches: &[Value]) -> Result<StringEnum, Error> {
    let mut values = Vec::new();
    let mut open = None;
    for b in branches {
        if let Some(c) = b.get("const") {
            let v = c.as_str().ok_or_else(|| schema_err(name, "an enum `const` must be a string"))?;
            values.push((v.to_owned(), b.get("description").and_then(Value::as_str).map(str::to_owned)));
        } else if open.is_some() {
            return Err(schema_err(name, "more than one open branch"));
        } else {
            open = b.get("title").and_then(Value::as_str).map(str::to_owned);
        }
    }
    Ok(StringEnum { values, open })
}

fn tagged_union(name: &str, branches: &[Value]) -> Result<TaggedUnion, Error> {
    let mut tag: Option<String> = None;
    let mut variants = Vec::new();
    let mut open = false;
    for (i, b) in branches.iter().enumerate() {
        let at = format!("{name} (branch {i})");
        let obj = b.as_object().ok_or_else(|| schema_err(&at, "a union branch must be an object schema"))?;
        if obj.get("type") != Some(&Value::from("object")) {
            return Err(schema_err(&at, "a tagged-union branch must have `\"type\": \"object\"`"));
        }
        let props = obj
            .get("properties")
            .and_then(Value::as_object)
            .ok_or_else(|| schema_err(&at, "a tagged-union branch needs `properties` holding the tag"))?;
        if is_other(b) {
            if open {
                return Err(schema_err(&at, "more than one open branch"));
            }
            open = true;
            continue;
        }
        // The tag is the one property with a `const` value.
        let tagged: Vec<(&String, &Value)> = props.iter().filter(|(_, p)| p.get("const").is_some()).collect();
        let [(tag_name, tag_schema)] = tagged[..] else {
            return Err(schema_err(&at, "a tagged-union variant needs exactly one property with a `const` value (the tag)"));
        };
        match &tag {
            None => tag = Some(tag_name.to_string()),
            Some(t) if t != tag_name => return Err(schema_err(&at, &format!("variants disagree on the tag: {t:?} and {tag_name:?}"))),
            _ => {}
        }
        let value = tag_schema["const"].as_str().ok_or_else(|| schema_err(&at, "the tag's `const` must be a string"))?.to_owned();
        let body = obj
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| is_type_name(t))
            .ok_or_else(|| schema_err(&at, "a tagged-union variant needs a PascalCase `title` naming its Rust type"))?
            .to_owned();
        let aliases = tag_schema
            .get("x-aliases")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let description = obj.get("description").and_then(Value::as_str).map(str::to_owned);
        let inline = match obj.get("allOf").and_then(Value::as_array) {
            Some(all) => {
                let [one] = &all[..] else {
                    return Err(schema_err(&at, "a referencing variant needs `allOf` with exactly one `$ref`"));
                };
                let target = one.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(DEFS));
                if target != Some(body.as_str()) {
                    return Err(schema_err(&at, "a referencing variant's `title` must equal the referenced definition's name"));
                }
                if props.len() != 1 {
                    return Err(schema_err(&at, "a referencing variant may only declare the tag property"));
                }
                None
            }
            None => {
                // The body: the variant without its tag.
                let mut body_schema = obj.clone();
                body_schema.shift_remove("title");
                let mut props = props.clone();
                props.shift_remove(tag_name.as_str());
                body_schema.insert("properties".into(), Value::Object(props));
                if let Some(Value::Array(req)) = body_schema.get_mut("required") {
                    req.retain(|r| r.as_str() != Some(tag_name.as_str()));
                }
                Some(Value::Object(body_schema))
            }
        };
        variants.push(Variant { value, aliases, body, description, inline });
    }
    let tag = tag.ok_or_else(|| schema_err(name, "a tagged union needs at least one variant"))?;
    Ok(TaggedUnion { tag, variants, open })
}
