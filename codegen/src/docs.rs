//! The protocol reference (`generated/docs/protocol.md`), rendered from the schema with askama.
//!
//! One section per method and per session update, each with its members (from the schema)
//! and its example (from `spec/examples/valid/`, by the file naming convention).

use askama::Template;
use serde_json::Value;

use crate::model::{Body, DefKind, Spec};
use crate::Error;

/// One row of a members table.
pub struct Member {
    pub name: String,
    pub ty: String,
    pub required: bool,
    pub description: String,
}

pub struct Section {
    pub title: String,
    pub anchor: String,
    pub description: String,
    pub members: Vec<Member>,
    pub result: Option<(String, Vec<Member>)>,
    pub examples: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "protocol.md", escape = "none")]
struct Reference<'a> {
    title: &'a str,
    description: &'a str,
    methods: Vec<Section>,
    updates: Vec<Section>,
    types: Vec<Section>,
}

/// Renders the reference. `examples` are `(file name, JSON text)` pairs of valid examples.
pub fn render(schema_text: &str, examples: &[(String, String)]) -> Result<String, Error> {
    let spec = Spec::parse(schema_text)?;
    let mut methods = Vec::new();
    let mut seen = Vec::new();
    for def in &spec.defs {
        let Some(method) = &def.method else { continue };
        if seen.contains(method) {
            continue;
        }
        seen.push(method.clone());
        let stem = method.replace("$/", "$.").replace('/', ".");
        let response = spec.defs.iter().find(|d| d.method.as_ref() == Some(method) && d.name.ends_with("Response"));
        methods.push(Section {
            title: format!("`{method}`"),
            anchor: stem.replace(['.', '$', '_'], "-"),
            description: def.description.clone().unwrap_or_default(),
            members: members(&def.schema),
            result: response.map(|r| (r.name.clone(), members(&r.schema))),
            examples: pick(examples, |f| f.starts_with(&format!("{stem}.")) && !f[stem.len() + 1..].starts_with("error")),
        });
    }
    let mut updates = Vec::new();
    if let Some(DefKind::TaggedUnion(u)) = spec.def("SessionUpdate").map(|d| &d.kind) {
        for v in &u.variants {
            let schema = match &v.body {
                Body::Inline(s) => s.clone(),
                _ => spec.def(v.body_name()).map(|d| d.schema.clone()).unwrap_or(Value::Null),
            };
            let mut description = v.description.clone().unwrap_or_default();
            if !v.aliases.is_empty() {
                description.push_str(&format!(" Also accepted on input as {}.", quoted(&v.aliases)));
            }
            updates.push(Section {
                title: format!("`{}`", v.value),
                anchor: v.value.replace('_', "-"),
                description,
                members: members(&schema),
                result: None,
                examples: pick(examples, |f| f.starts_with(&format!("session.update.notification.{}", v.value))),
            });
        }
    }
    let mut types = Vec::new();
    for def in &spec.defs {
        if def.method.is_some() || def.name == "SessionUpdate" {
            continue;
        }
        let mut description = def.description.clone().unwrap_or_default();
        match &def.kind {
            DefKind::StringEnum(e) => {
                let values: Vec<String> = e.values.iter().map(|(v, _)| v.clone()).collect();
                description.push_str(&format!(" Values: {}", quoted(&values)));
                if e.is_open() {
                    description.push_str(", or any other string (open)");
                }
                description.push('.');
            }
            DefKind::TaggedUnion(u) => {
                let values: Vec<String> = u.variants.iter().map(|v| format!("{} ({})", v.value, v.body_name())).collect();
                description.push_str(&format!(" Tagged by `{}`: {}.", u.tag, values.join(", ")));
            }
            _ => {}
        }
        types.push(Section {
            title: format!("`{}`", def.name),
            anchor: def.name.to_lowercase(),
            description,
            members: members(&def.schema),
            result: None,
            examples: pick(examples, |f| def.name == "Error" && f.contains(".error.")),
        });
    }
    Reference { title: &spec.title, description: &spec.description, methods, updates, types }
        .render()
        .map_err(|e| Error::Render(e.to_string()))
}

fn quoted(values: &[String]) -> String {
    values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
}

fn pick(examples: &[(String, String)], keep: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    examples.iter().filter(|(f, _)| keep(f)).cloned().collect()
}

fn members(schema: &Value) -> Vec<Member> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| Member {
            name: name.clone(),
            ty: type_of(p),
            required: required.contains(&name.as_str()),
            description: p.get("description").and_then(Value::as_str).unwrap_or("").replace('\n', " "),
        })
        .collect()
}

fn type_of(p: &Value) -> String {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[`{name}`](#{})", name.to_lowercase());
    }
    if let Some(c) = p.get("const") {
        return format!("`{c}`");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = p.get(key).and_then(Value::as_array) {
            return branches.iter().map(type_of).collect::<Vec<_>>().join(" \\| ");
        }
    }
    let item = || p.get("items").map(type_of).unwrap_or_else(|| "any".into());
    match p.get("type") {
        Some(Value::String(t)) if t == "array" => format!("{}[]", item()),
        Some(Value::String(t)) => format!("`{t}`"),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(|t| if t == "array" { format!("{}[]", item()) } else { format!("`{t}`") })
            .collect::<Vec<_>>()
            .join(" \\| "),
        _ => "any".into(),
    }
}
