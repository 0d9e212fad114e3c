//! Assembles the canonical schema from the vendored upstream draft and this toolkit's overlay.
//!
//! `spec/acp-inject.schema.json` is not written by hand: `cargo xtask codegen` builds it from
//! two inputs and checks it in (`--check` fails when it is stale):
//!
//! - the upstream ACP v2 draft schema exactly as a release carries it
//!   (`spec/upstream/v2/schema.unstable.json`, pinned by `spec/upstream/manifest.json`);
//! - the overlay (`spec/overlay.json`): which upstream definitions this toolkit types, the
//!   changes it makes to them (RFC 6902 JSON Patch operations, applied with the `json-patch`
//!   crate), the definitions it adds (the inject extension, the pending-list extension, the
//!   JSON-RPC envelope) and the root.
//!
//! Between the two, every selected upstream definition is brought to the generator's
//! conventions (`spec/README.md`) by the same rules, so a bump of the upstream draft flows into
//! the canonical schema with no hand copy:
//!
//! - a reference written `{"allOf": [{"$ref": X}], …}` becomes `{"$ref": X, …}`;
//! - every `_meta` member becomes `{"$ref": "#/$defs/Meta"}` (the one inline `Meta`);
//! - `default`, `x-docs-ignore`, `additionalProperties: true` and the `format` of anything but
//!   an integer are dropped (typify would otherwise generate default functions and string
//!   newtypes the wire does not need);
//! - a reference to an upstream definition the overlay does not select that is a plain string
//!   (`MediaType`, `AbsolutePath`, …) is written as that string, and
//!   `anyOf: [<such a reference>, {"type": "null"}]` as `type: ["string", "null"]`; a reference
//!   to any other unselected definition is an error naming it;
//! - a tagged union the overlay lists `variants` for is written with inline variants: each
//!   listed upstream variant gets the members of the body it refers to, after its tag, and the
//!   overlay's `title` (the Rust body type's name); a variant whose body is itself a union
//!   (`state_update`) keeps its `allOf`; listed added variants are inserted where they are
//!   listed; every upstream variant not listed, and any future one, falls to the open branch,
//!   whose `not` is recomputed from the typed tags.
//!
//! The overlay's patches are applied after these rules, so their paths address the normalized
//! definition (a union variant's patches address the variant).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::DEFS;
use crate::Error;

/// The overlay file (`spec/overlay.json`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Overlay {
    #[serde(rename = "$comment", default)]
    _comment: Option<String>,
    /// The root of the assembled schema without `$defs`.
    root: Map<String, Value>,
    /// The definitions, in the order they are written.
    defs: Map<String, Value>,
}

/// One definition of the overlay.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DefSpec {
    /// A definition of this toolkit's own, written as is (no upstream definition is read).
    add: Option<Value>,
    /// For a tagged union: the typed variants, by tag value, in order.
    variants: Option<Map<String, Value>>,
    /// Changes to the normalized upstream definition.
    #[serde(default)]
    patch: json_patch::Patch,
}

/// One typed variant of a union.
#[derive(Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum VariantSpec {
    /// An upstream variant, named.
    Title(String),
    /// An upstream variant, named and changed.
    Patched { title: String, patch: json_patch::Patch },
    /// A variant of this toolkit's own, written as is.
    Added { add: Value },
}

/// Assembles the canonical schema from the upstream schema's text and the overlay's text.
pub fn assemble(upstream: &str, overlay: &str) -> Result<Value, Error> {
    let upstream: Value = serde_json::from_str(upstream).map_err(|e| Error::Json(format!("upstream schema: {e}")))?;
    let overlay: Overlay = serde_json::from_str(overlay).map_err(|e| Error::Json(format!("overlay: {e}")))?;
    let up = upstream
        .get("$defs")
        .and_then(Value::as_object)
        .ok_or_else(|| crate::model::schema_err("(upstream)", "the upstream schema has no `$defs` object"))?;
    let asm = Assembler { up, selected: &overlay.defs };

    let mut defs = Map::new();
    for (name, spec) in &overlay.defs {
        let spec: DefSpec = serde_json::from_value(spec.clone()).map_err(|e| overlay_err(name, &e.to_string()))?;
        let def = match (spec.add, spec.variants) {
            (Some(own), None) if spec.patch.0.is_empty() => own,
            (Some(_), _) => return Err(overlay_err(name, "`add` takes neither `variants` nor `patch`")),
            (None, variants) => {
                let upstream_def = up.get(name).ok_or_else(|| overlay_err(name, "upstream has no such definition; use `add`"))?;
                let mut def = match variants {
                    Some(variants) => asm.union(name, upstream_def, &variants)?,
                    None => asm.normalize(upstream_def),
                };
                json_patch::patch(&mut def, &spec.patch).map_err(|e| overlay_err(name, &format!("patch: {e}")))?;
                def
            }
        };
        defs.insert(name.clone(), def);
    }
    for (name, def) in &defs {
        for (target, _) in crate::model::references(def) {
            if !defs.contains_key(&target) {
                return Err(overlay_err(name, &format!("refers to `{target}`, which the overlay neither selects nor adds")));
            }
        }
    }
    let mut root = overlay.root;
    root.insert("$defs".into(), Value::Object(defs));
    Ok(Value::Object(root))
}

fn overlay_err(def: &str, message: &str) -> Error {
    crate::model::schema_err(&format!("{def} (spec/overlay.json)"), message)
}

struct Assembler<'a> {
    up: &'a Map<String, Value>,
    selected: &'a Map<String, Value>,
}

impl Assembler<'_> {
    /// An unselected upstream definition that is a plain string (a semantic alias such as
    /// `MediaType`), which is written as `{"type": "string"}` where it is referenced.
    fn string_alias(&self, reference: &Value) -> bool {
        let Some(name) = reference.as_str().and_then(|r| r.strip_prefix(DEFS)) else { return false };
        if self.selected.contains_key(name) {
            return false;
        }
        self.up.get(name).is_some_and(|d| {
            d.get("type") == Some(&Value::from("string"))
                && !["anyOf", "oneOf", "enum", "const", "properties"].iter().any(|k| d.get(*k).is_some())
        })
    }

    /// The generator's conventions, applied to a schema and everything inside it.
    fn normalize(&self, schema: &Value) -> Value {
        match schema {
            Value::Array(items) => Value::Array(items.iter().map(|s| self.normalize(s)).collect()),
            Value::Object(obj) => Value::Object(self.normalize_object(obj)),
            other => other.clone(),
        }
    }

    fn normalize_object(&self, obj: &Map<String, Value>) -> Map<String, Value> {
        let mut obj = obj.clone();
        // `allOf` with one reference and no members of its own: the reference itself.
        if obj.get("properties").is_none() {
            if let Some(Value::Array(all)) = obj.get("allOf") {
                if let [one] = all.as_slice() {
                    if let Some(r) = one.get("$ref").filter(|_| one.as_object().is_some_and(|o| o.len() == 1)).cloned() {
                        obj.shift_remove("allOf");
                        obj.shift_insert(0, "$ref".into(), r);
                    }
                }
            }
        }
        for key in ["default", "x-docs-ignore"] {
            obj.shift_remove(key);
        }
        if obj.get("additionalProperties") == Some(&Value::Bool(true)) {
            obj.shift_remove("additionalProperties");
        }
        let integer = match obj.get("type") {
            Some(Value::String(t)) => t == "integer",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
            _ => false,
        };
        if !integer {
            obj.shift_remove("format");
        }
        if obj.get("$ref").is_some_and(|r| self.string_alias(r)) {
            obj.shift_remove("$ref");
            obj.shift_insert(0, "type".into(), Value::from("string"));
        }
        if let Some(Value::Array(any)) = obj.get("anyOf") {
            if let [alias, null] = any.as_slice() {
                let alias_only =
                    alias.as_object().is_some_and(|o| o.len() == 1) && alias.get("$ref").is_some_and(|r| self.string_alias(r));
                if alias_only && *null == serde_json::json!({ "type": "null" }) {
                    obj.shift_remove("anyOf");
                    obj.shift_insert(0, "type".into(), serde_json::json!(["string", "null"]));
                }
            }
        }
        obj.into_iter()
            .map(|(key, value)| {
                let value = match key.as_str() {
                    "properties" => Value::Object(
                        value
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(member, s)| {
                                let s = if member == "_meta" {
                                    serde_json::json!({ "$ref": format!("{DEFS}Meta") })
                                } else {
                                    self.normalize(s)
                                };
                                (member.clone(), s)
                            })
                            .collect(),
                    ),
                    // Values, not schemas.
                    "const" | "enum" | "required" | "x-aliases" | "description" | "title" | "examples" => value,
                    _ => self.normalize(&value),
                };
                (key, value)
            })
            .collect()
    }

    /// A tagged union with inline variants: the overlay's typed variants, in its order, then
    /// the open branch.
    fn union(&self, name: &str, def: &Value, variants: &Map<String, Value>) -> Result<Value, Error> {
        let key = if def.get("anyOf").is_some() { "anyOf" } else { "oneOf" };
        let branches = def
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| overlay_err(name, "`variants` given, but upstream's definition is not a union"))?;
        let mut tag: Option<String> = None;
        let mut open: Option<&Value> = None;
        let mut by_value: Vec<(String, &Value)> = Vec::new();
        for branch in branches {
            let consts: Vec<(&String, &Value)> = branch
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter(|(_, s)| s.get("const").is_some())
                .collect();
            match consts.as_slice() {
                [] => open = Some(branch),
                [(member, s)] => {
                    tag = Some((*member).clone());
                    by_value.push((s["const"].as_str().unwrap_or_default().to_owned(), branch));
                }
                _ => return Err(overlay_err(name, "an upstream variant has more than one `const` member")),
            }
        }
        let tag = tag.ok_or_else(|| overlay_err(name, "upstream's union has no tagged variant"))?;

        let mut out = Vec::new();
        let mut typed = Vec::new();
        for (value, spec) in variants {
            let spec: VariantSpec = serde_json::from_value(spec.clone())
                .map_err(|_| overlay_err(name, &format!("variant `{value}`: expected a title, {{title, patch}} or {{add}}")))?;
            typed.push(Value::from(value.as_str()));
            let (title, patch) = match spec {
                VariantSpec::Added { add } => {
                    out.push(add);
                    continue;
                }
                VariantSpec::Title(title) => (title, json_patch::Patch(Vec::new())),
                VariantSpec::Patched { title, patch } => (title, patch),
            };
            let branch = by_value
                .iter()
                .find(|(v, _)| v == value)
                .map(|(_, b)| *b)
                .ok_or_else(|| overlay_err(name, &format!("upstream has no variant `{value}`")))?;
            let mut variant = self.inline_variant(&tag, value, &title, branch)?;
            json_patch::patch(&mut variant, &patch).map_err(|e| overlay_err(name, &format!("variant `{value}`: patch: {e}")))?;
            out.push(variant);
        }
        if let Some(open) = open {
            let mut branch = Map::new();
            branch.insert("title".into(), open.get("title").cloned().unwrap_or_else(|| Value::from("other")));
            if let Some(d) = open.get("description") {
                branch.insert("description".into(), d.clone());
            }
            branch.insert("type".into(), Value::from("object"));
            let tag_schema = serde_json::json!({ "type": "string", "not": { "enum": typed } });
            branch.insert("properties".into(), Value::Object(Map::from_iter([(tag.clone(), tag_schema)])));
            branch.insert("required".into(), serde_json::json!([tag]));
            out.push(Value::Object(branch));
        }
        let mut union = Map::new();
        for (k, v) in def.as_object().into_iter().flatten() {
            if k == key {
                union.insert(key.into(), Value::Array(std::mem::take(&mut out)));
            } else {
                union.insert(k.clone(), self.normalize(v));
            }
        }
        Ok(Value::Object(union))
    }

    /// An upstream variant (`{tag: const, allOf: [body]}`) written inline.
    fn inline_variant(&self, tag: &str, value: &str, title: &str, branch: &Value) -> Result<Value, Error> {
        let mut variant = Map::new();
        variant.insert("title".into(), Value::from(title));
        let body_name = crate::model::all_of_ref(branch);
        let body = body_name.and_then(|b| self.up.get(b));
        if body_name.is_some() && body.is_none() {
            return Err(overlay_err(title, "the upstream variant refers to a missing definition"));
        }
        if let Some(d) = branch.get("description").or_else(|| body.and_then(|b| b.get("description"))) {
            variant.insert("description".into(), d.clone());
        }
        variant.insert("type".into(), Value::from("object"));
        let mut properties = Map::from_iter([(tag.to_owned(), serde_json::json!({ "const": value }))]);
        let mut required = vec![Value::from(tag)];
        let members_of = |s: &Value| {
            let props = s.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let req = s.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            (props, req)
        };
        let union_body = body.is_some_and(|b| b.get("properties").is_none() && !crate::model::branches(b).is_empty());
        let (props, req) = match body {
            Some(b) if !union_body => members_of(b),
            _ => members_of(branch),
        };
        properties.extend(props.into_iter().filter(|(m, _)| m != tag));
        required.extend(req.into_iter().filter(|r| r.as_str() != Some(tag)));
        variant.insert("properties".into(), Value::Object(properties));
        variant.insert("required".into(), Value::Array(required));
        if union_body {
            variant.insert("allOf".into(), serde_json::json!([{ "$ref": format!("{DEFS}{}", body_name.unwrap_or_default()) }]));
        }
        Ok(self.normalize(&Value::Object(variant)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn upstream() -> Value {
        json!({ "$defs": {
            "Id": { "description": "An id.", "type": "string" },
            "MediaType": { "type": "string" },
            "Secret": { "type": "object", "properties": { "key": { "type": "string" } } },
            "Thing": {
                "type": "object",
                "properties": {
                    "id": { "description": "Its id.", "allOf": [{ "$ref": "#/$defs/Id" }] },
                    "mime": { "anyOf": [{ "$ref": "#/$defs/MediaType" }, { "type": "null" }] },
                    "when": { "type": "string", "format": "date-time", "default": "now" },
                    "count": { "type": "integer", "format": "uint64" },
                    "secret": { "$ref": "#/$defs/Secret" },
                    "_meta": { "type": ["object", "null"], "additionalProperties": true }
                },
                "required": ["id"]
            },
            "Said": { "description": "Body.", "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] },
            "State": { "anyOf": [{ "type": "object", "properties": { "state": { "const": "idle" } }, "required": ["state"] }] },
            "Update": { "anyOf": [
                { "type": "object", "properties": { "kind": { "type": "string", "const": "said" } }, "required": ["kind"], "allOf": [{ "$ref": "#/$defs/Said" }] },
                { "description": "Shouted.", "type": "object", "properties": { "kind": { "type": "string", "const": "shouted" } }, "required": ["kind"], "allOf": [{ "$ref": "#/$defs/Said" }] },
                { "type": "object", "properties": { "kind": { "type": "string", "const": "state" } }, "required": ["kind"], "allOf": [{ "$ref": "#/$defs/State" }] },
                { "title": "other", "type": "object", "properties": { "kind": { "type": "string" } }, "required": ["kind"], "not": { "anyOf": [] } }
            ] }
        } })
    }

    fn assemble_with(upstream: &Value, defs: Value) -> Result<Value, Error> {
        let mut all = json!({ "Meta": { "add": { "x-rust": "inline", "type": ["object", "null"] } } });
        all.as_object_mut().unwrap().extend(defs.as_object().unwrap().clone());
        let overlay = json!({ "root": { "title": "t" }, "defs": all });
        assemble(&upstream.to_string(), &overlay.to_string())
    }

    #[test]
    fn upstream_definitions_are_brought_to_the_conventions() {
        let defs = json!({ "Id": {}, "Thing": { "patch": [{ "op": "remove", "path": "/properties/secret" }] } });
        let out = assemble_with(&upstream(), defs).unwrap();
        assert_eq!(out["title"], "t");
        assert_eq!(
            out["$defs"]["Thing"],
            json!({
                "type": "object",
                "properties": {
                    "id": { "$ref": "#/$defs/Id", "description": "Its id." },
                    "mime": { "type": ["string", "null"] },
                    "when": { "type": "string" },
                    "count": { "type": "integer", "format": "uint64" },
                    "_meta": { "$ref": "#/$defs/Meta" }
                },
                "required": ["id"]
            })
        );
    }

    #[test]
    fn unions_type_the_listed_variants_and_open_the_rest() {
        let said = json!({ "title": "Said", "patch": [{ "op": "add", "path": "/properties/text/x-aliases", "value": ["words"] }] });
        let mine = json!({ "title": "Mine", "type": "object", "properties": { "kind": { "const": "_mine" } }, "required": ["kind"] });
        let defs = json!({ "State": { "variants": { "idle": "IdleState" } }, "Update": { "variants": { "said": said, "_mine": { "add": mine }, "state": "State" } } });
        let out = assemble_with(&upstream(), defs).unwrap();
        let update = &out["$defs"]["Update"]["anyOf"];
        assert_eq!(
            update[0],
            json!({ "title": "Said", "description": "Body.", "type": "object",
                    "properties": { "kind": { "const": "said" }, "text": { "type": "string", "x-aliases": ["words"] } },
                    "required": ["kind", "text"] })
        );
        assert_eq!(update[1], mine);
        assert_eq!(update[2]["allOf"], json!([{ "$ref": "#/$defs/State" }]), "a union body keeps its allOf");
        // `shouted` is not listed: it falls to the open branch, like any variant upstream adds.
        assert_eq!(
            update[3],
            json!({ "title": "other", "type": "object", "properties": { "kind": { "type": "string", "not": { "enum": ["said", "_mine", "state"] } } }, "required": ["kind"] })
        );
        assert_eq!(update.as_array().unwrap().len(), 4);
        // The assembly reads as a schema the generator accepts.
        crate::model::Spec::parse(&out.to_string()).unwrap();
    }

    #[test]
    fn a_member_upstream_adds_flows_in() {
        let mut newer = upstream();
        newer["$defs"]["Said"]["properties"]["lang"] = json!({ "type": ["string", "null"] });
        let out = assemble_with(&newer, json!({ "State": { "variants": {} }, "Update": { "variants": { "said": "Said" } } })).unwrap();
        assert_eq!(out["$defs"]["Update"]["anyOf"][0]["properties"]["lang"], json!({ "type": ["string", "null"] }));
    }

    #[test]
    fn what_cannot_be_assembled_is_an_error_naming_the_definition() {
        let cases = [
            (json!({ "Nope": {} }), "`Nope (spec/overlay.json)`: upstream has no such definition"),
            (json!({ "Thing": {}, "Id": {} }), "refers to `Secret`, which the overlay neither selects nor adds"),
            (json!({ "Update": { "variants": { "sung": "Sung" } } }), "upstream has no variant `sung`"),
            (json!({ "Id": { "patch": [{ "op": "remove", "path": "/properties/x" }] } }), "`Id (spec/overlay.json)`: patch:"),
            (json!({ "Id": { "add": {}, "patch": [{ "op": "remove", "path": "/x" }] } }), "`add` takes neither"),
            (json!({ "Id": { "replace": {} } }), "unknown field `replace`"),
            (json!({ "Id": { "variants": {} } }), "not a union"),
            (json!({ "Update": { "variants": { "said": 3 } } }), "variant `said`: expected a title"),
        ];
        for (defs, expected) in cases {
            let err = assemble_with(&upstream(), defs.clone()).unwrap_err().to_string();
            assert!(err.contains(expected), "{defs}: {err}");
        }
        assert!(matches!(assemble("{", "{}"), Err(Error::Json(_))));
        assert!(matches!(assemble("{}", "[]"), Err(Error::Json(_))));
    }
}
