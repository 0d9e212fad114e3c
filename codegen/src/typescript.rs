//! The TypeScript package (`generated/typescript/`): types and runtime validators for every
//! schema definition, rendered with askama from `codegen/templates/typescript/`.
//!
//! # Validators: generated, dependency-free (not zod)
//!
//! zod is what most TypeScript ACP code uses, and was considered. The validators are generated
//! plain TypeScript on a ~300-line runtime instead, because the wire semantics need things zod
//! does not give directly:
//!
//! - **Open tagged unions.** `z.discriminatedUnion` has no catch-all branch for "any other tag"
//!   (R-WIRE-3); a plain `z.union` tries every branch and reports `invalid_union` at the union's
//!   own path. The generated decoder reads the tag first, like the Rust decoder, so an error
//!   inside a known variant names the member inside it (`params.update.messageId`), the same
//!   member the Rust error names (checked for every invalid example).
//! - **Decode-only aliases** (`x-aliases`: `state_change`, `steer_in_stream`) are rewritten to
//!   the schema's spelling, so decoded values match the output types, which never mention them.
//! - **Tolerant members** (`x-deserialize-default-on-error`, `x-deserialize-skip-invalid-items`)
//!   drop what does not decode and report it, as the Rust decoder does.
//! - **No runtime dependency**: the package ships nothing but its own code; `typescript` is its
//!   only (dev) dependency, pinned exactly.
//!
//! # Types
//!
//! - An object definition is an `interface`; optional members are `?:` (the package is built
//!   with `exactOptionalPropertyTypes`, so "absent" and "`undefined`" stay apart), nullable
//!   members `| null`, and `x-tristate` members `?: Patch<T>` (absent: unchanged; `null`: cleared;
//!   a value: replaced).
//! - A tagged union is a discriminated union of `{ tag: "value" } & Body` members plus the open
//!   branch `…Other`, whose tag is typed `UnknownTag` (a branded string). TypeScript cannot
//!   express "any string except these", so `===` on the tag cannot exclude the open branch by
//!   itself; each union therefore also gets `Known…` (the union without its open branch) and an
//!   `isKnown…` guard, after which `switch (u.tag)` narrows to each variant and is exhaustive.
//! - An open string enum is `"a" | "b" | (string & {})` (known values autocomplete, any string
//!   is accepted); a closed one is `"a" | "b"`.
//! - The JSON-RPC envelope (`ClientRequest`, …) is typed by method from `x-method`, so
//!   `message.method === "session/prompt"` narrows `params` to `PromptRequest`.

use std::collections::{BTreeMap, BTreeSet};

use askama::Template;
use serde_json::{Map, Value};

use crate::model::{schema_err, Body, DefKind, Enumeration, Spec, TaggedUnion, DEFS};
use crate::Error;

/// The TypeScript compiler the package is built and checked with (npm, pinned exactly).
pub const TYPESCRIPT_VERSION: &str = "7.0.2";

/// The npm package name.
pub const PACKAGE_NAME: &str = "@acp-inject/schema";

/// The envelope definitions that carry messages, by the method list they hold.
const MESSAGE_GROUPS: [(&str, bool, &str); 4] = [
    ("ClientRequest", true, "client"),
    ("ClientNotification", false, "client"),
    ("AgentRequest", true, "agent"),
    ("AgentNotification", false, "agent"),
];

/// Envelope definitions written by the templates rather than from their schema.
const TEMPLATE_ENVELOPES: [&str; 5] = ["ClientRequest", "ClientNotification", "AgentRequest", "AgentNotification", "JsonRpcResponse"];

/// Renders the package: `(path inside generated/typescript/, contents)` pairs. `preamble` is the
/// generated-file notice each file starts with.
pub fn render(schema_text: &str, preamble: &str) -> Result<Vec<(String, String)>, Error> {
    let spec = Spec::parse(schema_text)?;
    let package = Package::build(&spec)?;
    let render = |r: Result<String, askama::Error>| r.map(|t| tidy(&t)).map_err(|e| Error::Render(e.to_string()));
    let version = env!("CARGO_PKG_VERSION");
    Ok(vec![
        ("README.md".into(), render(Readme { preamble, package: &package, typescript: TYPESCRIPT_VERSION }.render())?),
        (
            "package.json".into(),
            render(PackageJson { preamble, name: PACKAGE_NAME, version, typescript: TYPESCRIPT_VERSION }.render())?,
        ),
        ("tsconfig.json".into(), render(TsConfig { preamble }.render())?),
        ("src/index.ts".into(), render(Index { preamble }.render())?),
        ("src/runtime.ts".into(), render(Runtime { preamble }.render())?),
        ("src/types.ts".into(), render(Types { preamble, p: &package }.render())?),
        ("src/validators.ts".into(), render(Validators { preamble, p: &package }.render())?),
        ("src/messages.ts".into(), render(Messages { preamble, p: &package }.render())?),
    ])
}

#[derive(Template)]
#[template(path = "typescript/README.md", escape = "none")]
struct Readme<'a> {
    preamble: &'a str,
    package: &'a Package,
    typescript: &'a str,
}

#[derive(Template)]
#[template(path = "typescript/package.json", escape = "none")]
struct PackageJson<'a> {
    preamble: &'a str,
    name: &'a str,
    version: &'a str,
    typescript: &'a str,
}

#[derive(Template)]
#[template(path = "typescript/tsconfig.json", escape = "none")]
struct TsConfig<'a> {
    preamble: &'a str,
}

#[derive(Template)]
#[template(path = "typescript/index.ts", escape = "none")]
struct Index<'a> {
    preamble: &'a str,
}

#[derive(Template)]
#[template(path = "typescript/runtime.ts", escape = "none")]
struct Runtime<'a> {
    preamble: &'a str,
}

#[derive(Template)]
#[template(path = "typescript/types.ts", escape = "none")]
struct Types<'a> {
    preamble: &'a str,
    p: &'a Package,
}

#[derive(Template)]
#[template(path = "typescript/validators.ts", escape = "none")]
struct Validators<'a> {
    preamble: &'a str,
    p: &'a Package,
}

#[derive(Template)]
#[template(path = "typescript/messages.ts", escape = "none")]
struct Messages<'a> {
    preamble: &'a str,
    p: &'a Package,
}

/// Everything the templates need, in schema order.
struct Package {
    /// Type declarations, in schema order.
    decls: Vec<Decl>,
    /// Decoder declarations, in dependency order.
    decoders: Vec<DecoderDecl>,
    /// Public `decode…` functions, in schema order: (TypeScript type, decoder constant).
    public: Vec<(String, String)>,
    methods: Vec<MethodEntry>,
    /// The message groups: (envelope def name, requests?, sender, methods).
    groups: Vec<Group>,
}

struct Group {
    name: String,
    request: bool,
    from: String,
    methods: Vec<String>,
}

impl Group {
    fn method_type(&self) -> String {
        format!("{}Method", self.name)
    }

    /// The methods as a union of string literals.
    fn method_union(&self) -> String {
        self.methods.iter().map(|m| json_string(m)).collect::<Vec<_>>().join(" | ")
    }
}

struct MethodEntry {
    method: String,
    constant: String,
    request: bool,
    params: String,
    /// The envelope's `if`/`then` for this method does not require `params` (`session/list`).
    params_optional: bool,
    result: Option<String>,
}

impl MethodEntry {
    fn literal(&self) -> String {
        json_string(&self.method)
    }
}

/// One exported type (or family of types, for unions).
enum Decl {
    Interface(Interface),
    Alias(Alias),
    Enum(Enum),
    Union(Union),
}

struct Alias {
    name: String,
    doc: String,
    ty: String,
}

impl Alias {
    fn doc_block(&self) -> String {
        jsdoc(&self.doc, "")
    }
}

struct Enum {
    name: String,
    doc: String,
    /// (JSON literal, doc).
    values: Vec<(String, String)>,
    open: bool,
}

impl Enum {
    fn doc_block(&self) -> String {
        jsdoc(&self.doc, "")
    }

    /// The values as a union type, one per line, each with its description.
    fn body(&self) -> String {
        let mut out = String::new();
        for (v, doc) in &self.values {
            out.push_str(&jsdoc(doc, "  "));
            out.push_str(&format!(
                "  | {v}
"
            ));
        }
        if self.open {
            out.push_str(&jsdoc("Any other value (open enum): newer peers may send values this version does not know.", "  "));
            out.push_str("  | (string & {})\n");
        }
        out.trim_end().to_owned()
    }
}

struct Interface {
    name: String,
    doc: String,
    fields: Vec<Field>,
}

struct Field {
    name: String,
    doc: String,
    optional: bool,
    ty: String,
}

struct Union {
    name: String,
    doc: String,
    tag: String,
    bodies: Vec<Interface>,
    variants: Vec<UnionVariant>,
    open: bool,
}

struct UnionVariant {
    /// The tag value as a JSON literal.
    literal: String,
    /// The TypeScript type of the variant's other members.
    body: String,
}

impl Union {
    fn tag_key(&self) -> String {
        member_key(&self.tag)
    }

    fn doc_block(&self) -> String {
        jsdoc(&self.doc, "")
    }
}

impl Interface {
    fn doc_block(&self) -> String {
        jsdoc(&self.doc, "")
    }
}

impl Field {
    fn doc_block(&self) -> String {
        jsdoc(&self.doc, "  ")
    }
}

/// One `export const X$: d.Decoder<X> = …;`.
struct DecoderDecl {
    constant: String,
    ty: String,
    expr: String,
    /// For tagged unions and enums: the tag/value list constant and, for unions, the guard.
    extra: Option<DecoderExtra>,
}

enum DecoderExtra {
    Enum {
        name: String,
        values: Vec<String>,
    },
    /// `tag` is a JSON literal.
    Union {
        name: String,
        tag: String,
        values: Vec<String>,
        open: bool,
    },
}

impl DecoderDecl {
    /// The enum values or union tags, as a list of JSON literals.
    fn extra_values(&self) -> String {
        let values = match &self.extra {
            Some(DecoderExtra::Enum { values, .. } | DecoderExtra::Union { values, .. }) => values.as_slice(),
            None => &[],
        };
        values.iter().map(|v| json_string(v)).collect::<Vec<_>>().join(", ")
    }
}

// ----------------------------------------------------------------------------------------------
// Building the model
// ----------------------------------------------------------------------------------------------

/// The TypeScript name of a definition (`Error` would shadow the global `Error` class).
fn ts_name(def: &str) -> String {
    if def == "Error" {
        "ErrorObject".into()
    } else {
        def.to_owned()
    }
}

fn json_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// A member name as an object key: bare when it is an identifier, quoted otherwise.
fn member_key(name: &str) -> String {
    let mut chars = name.chars();
    let ident = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        name.to_owned()
    } else {
        json_string(name)
    }
}

/// The width JSDoc text is wrapped at.
const WIDTH: usize = 100;

/// A JSDoc block for `text` at `indent`, wrapped at [`WIDTH`] (empty text: nothing).
fn jsdoc(text: &str, indent: &str) -> String {
    let text = text.trim().replace("*/", "*\\/");
    if text.is_empty() {
        return String::new();
    }
    if !text.contains('\n') && indent.len() + text.len() + 7 <= WIDTH {
        return format!("{indent}/** {text} */\n");
    }
    let mut out = format!("{indent}/**\n");
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && indent.len() + 3 + line.len() + 1 + word.len() > WIDTH {
                out.push_str(&format!("{indent} * {line}\n"));
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if line.is_empty() {
            out.push_str(&format!("{indent} *\n"));
        } else {
            out.push_str(&format!("{indent} * {line}\n"));
        }
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

fn description(schema: &Value) -> String {
    schema.get("description").and_then(Value::as_str).unwrap_or("").to_owned()
}

struct Builder<'a> {
    spec: &'a Spec,
    /// Definitions whose decoder constant is declared already (dependency order).
    emitted: BTreeSet<String>,
    /// Definitions being emitted (for cycles: referenced lazily).
    visiting: BTreeSet<String>,
    decoders: Vec<DecoderDecl>,
}

impl Package {
    fn build(spec: &Spec) -> Result<Package, Error> {
        let mut decls = Vec::new();
        let mut public = Vec::new();
        let mut b = Builder { spec, emitted: BTreeSet::new(), visiting: BTreeSet::new(), decoders: Vec::new() };
        for def in &spec.defs {
            if TEMPLATE_ENVELOPES.contains(&def.name.as_str()) {
                continue;
            }
            if matches!(def.kind, DefKind::Envelope) && !matches!(def.name.as_str(), "RequestId" | "Error") {
                return Err(schema_err(&def.name, "the TypeScript generator has no form for this envelope definition"));
            }
            decls.push(b.decl(&def.name)?);
            b.decoder(&def.name)?;
            public.push((ts_name(&def.name), format!("{}$", ts_name(&def.name))));
        }
        let (methods, groups) = methods(spec)?;
        Ok(Package { decls, decoders: b.decoders, public, methods, groups })
    }

    fn name(&self) -> &'static str {
        PACKAGE_NAME
    }

    /// The number of definitions, for the README.
    fn type_count(&self) -> usize {
        self.decls.len() + TEMPLATE_ENVELOPES.len()
    }

    fn union_names(&self) -> Vec<String> {
        self.decls.iter().filter_map(|d| if let Decl::Union(u) = d { u.open.then(|| u.name.clone()) } else { None }).collect()
    }

    fn requests(&self) -> Vec<&MethodEntry> {
        self.methods.iter().filter(|m| m.request).collect()
    }

    fn notifications(&self) -> Vec<&MethodEntry> {
        self.methods.iter().filter(|m| !m.request).collect()
    }
}

impl Builder<'_> {
    fn def_schema(&self, name: &str) -> Result<&Value, Error> {
        self.spec.def(name).map(|d| &d.schema).ok_or_else(|| schema_err(name, "no such definition"))
    }

    fn decl(&self, name: &str) -> Result<Decl, Error> {
        let def = self.spec.def(name).ok_or_else(|| schema_err(name, "no such definition"))?;
        let doc = def.description.clone().unwrap_or_default();
        let ty_name = ts_name(name);
        Ok(match &def.kind {
            DefKind::StringEnum(e) => Decl::Enum(Enum {
                name: ty_name,
                doc,
                values: e.values.iter().map(|(v, d)| (json_string(v), d.clone().unwrap_or_default())).collect(),
                open: e.is_open(),
            }),
            DefKind::TaggedUnion(u) => Decl::Union(self.union_decl(name, &doc, u)?),
            _ if is_object(&def.schema) => Decl::Interface(self.interface(&ty_name, &doc, &def.schema)?),
            _ => Decl::Alias(Alias { name: ty_name, doc, ty: self.ty(name, &def.schema)? }),
        })
    }

    fn union_decl(&self, name: &str, doc: &str, u: &TaggedUnion) -> Result<Union, Error> {
        let mut bodies = Vec::new();
        let mut variants = Vec::new();
        for v in &u.variants {
            let vdoc = v.description.clone().unwrap_or_default();
            let literal = json_string(&v.value);
            match &v.body {
                Body::Inline(body) => {
                    bodies.push(self.interface(v.body_name(), &vdoc, body)?);
                    variants.push(UnionVariant { literal, body: v.body_name().to_owned() });
                }
                _ => variants.push(UnionVariant { literal, body: ts_name(v.body_name()) }),
            }
        }
        Ok(Union { name: ts_name(name), doc: doc.to_owned(), tag: u.tag.clone(), bodies, variants, open: u.is_open() })
    }

    fn interface(&self, name: &str, doc: &str, schema: &Value) -> Result<Interface, Error> {
        let required = required_of(schema);
        let mut fields = Vec::new();
        for (member, prop) in properties_of(schema) {
            let tristate = prop.get("x-tristate") == Some(&Value::Bool(true));
            let ty = if tristate { format!("Patch<{}>", self.ty(name, &without_null(prop))?) } else { self.ty(name, prop)? };
            fields.push(Field { name: member_key(member), doc: description(prop), optional: !required.contains(member.as_str()), ty });
        }
        for member in required.iter().filter(|r| !properties_of(schema).iter().any(|(m, _)| m == *r)) {
            fields.push(Field { name: member_key(member), doc: String::new(), optional: false, ty: "unknown".into() });
        }
        Ok(Interface { name: name.to_owned(), doc: doc.to_owned(), fields })
    }

    /// The TypeScript type of a member or alias schema.
    fn ty(&self, owner: &str, s: &Value) -> Result<String, Error> {
        let obj = match s {
            Value::Bool(true) => return Ok("unknown".into()),
            Value::Object(o) => o,
            _ => return Err(schema_err(owner, &format!("unsupported member schema {s}"))),
        };
        if let Some(r) = obj.get("$ref") {
            return Ok(ts_name(ref_target(owner, r)?));
        }
        if let Some(c) = obj.get("const") {
            return Ok(c.to_string());
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            return Ok(values.iter().map(Value::to_string).collect::<Vec<_>>().join(" | "));
        }
        if let Some(branches) = branches_of(obj) {
            let tys: Result<Vec<String>, Error> = branches.iter().map(|b| self.ty(owner, b)).collect();
            return Ok(tys?.join(" | "));
        }
        if let Some(target) = single_all_of_ref(obj) {
            return Ok(ts_name(ref_target(owner, target)?));
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            None => return Ok("unknown".into()),
            Some(other) => return Err(schema_err(owner, &format!("unsupported `type` {other}"))),
        };
        let mut out = Vec::new();
        for t in types {
            out.push(match t {
                "string" => "string".to_owned(),
                "integer" | "number" => "number".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "object" => {
                    if obj.get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty())) {
                        return Err(schema_err(owner, "an inline object with members: give it a definition"));
                    }
                    "{ [member: string]: unknown }".to_owned()
                }
                "array" => {
                    let item = match obj.get("items") {
                        Some(items) => self.ty(owner, items)?,
                        None => "unknown".into(),
                    };
                    if item.contains(' ') {
                        format!("Array<{item}>")
                    } else {
                        format!("{item}[]")
                    }
                }
                other => return Err(schema_err(owner, &format!("unsupported type {other:?}"))),
            });
        }
        Ok(out.join(" | "))
    }

    /// Declares the decoder constant of a definition (after those it needs).
    fn decoder(&mut self, name: &str) -> Result<(), Error> {
        if self.emitted.contains(name) || self.visiting.contains(name) {
            return Ok(());
        }
        self.visiting.insert(name.to_owned());
        let schema = self.def_schema(name)?.clone();
        let def = self.spec.def(name).ok_or_else(|| schema_err(name, "no such definition"))?;
        let kind = def.kind.clone();
        let ty = ts_name(name);
        let (expr, extra) = match &kind {
            DefKind::StringEnum(e) => self.enum_decoder(&ty, e),
            DefKind::TaggedUnion(u) => self.union_decoder(name, u)?,
            _ if is_object(&schema) => (self.struct_decoder(name, &ty, &schema)?, None),
            _ => (self.expr(name, &schema, &format!("`{ty}`"))?, None),
        };
        self.visiting.remove(name);
        self.emitted.insert(name.to_owned());
        self.decoders.push(DecoderDecl { constant: format!("{ty}$"), ty, expr, extra });
        Ok(())
    }

    fn enum_decoder(&self, ty: &str, e: &Enumeration) -> (String, Option<DecoderExtra>) {
        let values: Vec<String> = e.values.iter().map(|(v, _)| v.clone()).collect();
        let expr = format!("d.stringEnum<T.{ty}>({}, {ty}Values, {})", json_string(ty), e.is_open());
        (expr, Some(DecoderExtra::Enum { name: ty.to_owned(), values }))
    }

    fn union_decoder(&mut self, name: &str, u: &TaggedUnion) -> Result<(String, Option<DecoderExtra>), Error> {
        let ty = ts_name(name);
        let mut variants = Vec::new();
        let mut aliases = Vec::new();
        for v in &u.variants {
            let body = v.body_name();
            let decoder = match &v.body {
                Body::Inline(schema) => {
                    let expr = self.struct_decoder(body, body, schema)?;
                    self.decoders.push(DecoderDecl { constant: format!("{body}$"), ty: body.to_owned(), expr, extra: None });
                    format!("{body}$")
                }
                _ => self.reference(body)?,
            };
            variants.push(format!("{}: {decoder}", json_string(&v.value)));
            for a in &v.aliases {
                aliases.push(format!("{}: {}", json_string(a), json_string(&v.value)));
            }
        }
        let aliases = if aliases.is_empty() { "{}".to_owned() } else { format!("{{ {} }}", aliases.join(", ")) };
        let expr = format!(
            "d.tagged<T.{ty}>(\n  {},\n  {},\n  {{\n    {},\n  }},\n  {aliases},\n  {},\n)",
            json_string(&ty),
            json_string(&u.tag),
            variants.join(",\n    "),
            u.is_open()
        );
        let extra = DecoderExtra::Union {
            name: ty.clone(),
            tag: json_string(&u.tag),
            values: u.variants.iter().map(|v| v.value.clone()).collect(),
            open: u.is_open(),
        };
        Ok((expr, Some(extra)))
    }

    /// A reference to another definition's decoder: by name once declared, lazily in a cycle.
    fn reference(&mut self, target: &str) -> Result<String, Error> {
        self.decoder(target)?;
        let constant = format!("{}$", ts_name(target));
        Ok(if self.emitted.contains(target) { constant } else { format!("d.lazy(() => {constant})") })
    }

    fn struct_decoder(&mut self, owner: &str, ty: &str, schema: &Value) -> Result<String, Error> {
        let required = required_of(schema);
        let mut members = Vec::new();
        for (member, prop) in properties_of(schema) {
            let decode = self.expr(owner, prop, &format!("`{member}`"))?;
            let mut parts = vec![format!("decode: {decode}")];
            if required.contains(member.as_str()) {
                parts.push("required: true".into());
            }
            if let Some(aliases) = prop.get("x-aliases").and_then(Value::as_array) {
                let list: Vec<String> = aliases.iter().filter_map(Value::as_str).map(json_string).collect();
                parts.push(format!("aliases: [{}]", list.join(", ")));
            }
            // A member referencing a definition that carries a marker (`_meta` → `Meta`) has it too.
            let target =
                prop.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(DEFS)).and_then(|name| self.spec.def(name));
            let flag = |k: &str| {
                prop.get(k) == Some(&Value::Bool(true)) || target.is_some_and(|d| d.schema.get(k) == Some(&Value::Bool(true)))
            };
            if flag("x-deserialize-default-on-error") {
                parts.push("defaultOnError: true".into());
            }
            if flag("x-deserialize-skip-invalid-items") {
                let items = prop.get("items").cloned().unwrap_or(Value::Bool(true));
                let item = self.expr(owner, &items, &format!("an item of `{member}`"))?;
                parts.push(format!("skipInvalidItems: true, items: {{ decode: {item}, rules: {} }}", array_rules(prop)));
            }
            members.push(format!("{}: {{ {} }}", member_key(member), parts.join(", ")));
        }
        for member in required.iter().filter(|r| !properties_of(schema).iter().any(|(m, _)| m == *r)) {
            members.push(format!("{}: {{ decode: d.unknown, required: true }}", member_key(member)));
        }
        let rules = self.rules(owner, schema)?;
        let rules = if rules.is_empty() { String::new() } else { format!(", [\n  {},\n]", rules.join(",\n  ")) };
        let members = if members.is_empty() { "{}".to_owned() } else { format!("{{\n  {},\n}}", members.join(",\n  ")) };
        Ok(format!("d.struct<T.{ty}>({}, {members}{rules})", json_string(ty)))
    }

    /// The `if`/`then` conditional requirements of an object definition.
    fn rules(&mut self, owner: &str, schema: &Value) -> Result<Vec<String>, Error> {
        let mut conditionals = Vec::new();
        if schema.get("if").is_some() {
            conditionals.push(schema.clone());
        }
        for part in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            if part.get("if").is_some() {
                conditionals.push(part.clone());
            } else {
                return Err(schema_err(owner, "an object's `allOf` may only hold `if`/`then` rules"));
            }
        }
        let mut out = Vec::new();
        for c in conditionals {
            let unsupported = || schema_err(owner, "unsupported `if`: expected one member with `const` or `contains: {const}`");
            let cond = c.get("if").and_then(|i| i.get("properties")).and_then(Value::as_object).ok_or_else(unsupported)?;
            let [(member, test)] = cond.iter().collect::<Vec<_>>()[..] else {
                return Err(unsupported());
            };
            let condition = if let Some(v) = test.get("const") {
                format!("equals: {v}")
            } else if let Some(v) = test.get("contains").and_then(|c| c.get("const")) {
                format!("contains: {v}")
            } else {
                return Err(unsupported());
            };
            let then = c.get("then").ok_or_else(|| schema_err(owner, "an `if` without `then`"))?;
            let mut parts = vec![format!("member: {}", json_string(member)), condition];
            let require: Vec<String> = then
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(json_string).collect())
                .unwrap_or_default();
            if !require.is_empty() {
                parts.push(format!("require: [{}]", require.join(", ")));
            }
            if let Some(props) = then.get("properties").and_then(Value::as_object) {
                let mut members = Vec::new();
                for (m, s) in props {
                    members.push(format!("{}: {}", member_key(m), self.expr(owner, s, &format!("`{m}`"))?));
                }
                parts.push(format!("members: {{ {} }}", members.join(", ")));
            }
            out.push(format!("{{ {} }}", parts.join(", ")));
        }
        Ok(out)
    }

    /// The decoder expression of a member or alias schema. `label` names it in union errors.
    fn expr(&mut self, owner: &str, s: &Value, label: &str) -> Result<String, Error> {
        let obj = match s {
            Value::Bool(true) => return Ok("d.unknown".into()),
            Value::Object(o) => o,
            _ => return Err(schema_err(owner, &format!("unsupported member schema {s}"))),
        };
        if let Some(r) = obj.get("$ref") {
            let target = ref_target(owner, r)?.to_owned();
            let reference = self.reference(&target)?;
            return Ok(match obj.get("required").and_then(Value::as_array) {
                Some(req) => {
                    let list: Vec<String> = req.iter().filter_map(Value::as_str).map(json_string).collect();
                    format!("d.requiring({reference}, [{}])", list.join(", "))
                }
                None => reference,
            });
        }
        if let Some(c) = obj.get("const") {
            return Ok(format!("d.constant({c})"));
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            let strings: Option<Vec<String>> = values.iter().map(|v| v.as_str().map(json_string)).collect();
            let strings = strings.ok_or_else(|| schema_err(owner, "only string `enum`s are supported"))?;
            return Ok(format!("d.stringEnum({}, [{}], false)", json_string(label), strings.join(", ")));
        }
        if let Some(branches) = branches_of(obj) {
            let nulls = branches.iter().filter(|b| is_null(b)).count();
            if branches.len() == 2 && nulls == 1 {
                let other = branches.iter().find(|b| !is_null(b)).expect("one non-null branch");
                return Ok(format!("d.nullable({})", self.expr(owner, other, label)?));
            }
            let mut decoders = Vec::new();
            for b in branches {
                decoders.push(self.expr(owner, b, label)?);
            }
            return Ok(format!("d.anyOf({}, [{}])", json_string(label), decoders.join(", ")));
        }
        if let Some(target) = single_all_of_ref(obj) {
            let target = ref_target(owner, target)?.to_owned();
            return self.reference(&target);
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            None => return Ok("d.unknown".into()),
            Some(other) => return Err(schema_err(owner, &format!("unsupported `type` {other}"))),
        };
        let nullable = types.contains(&"null") && types.len() > 1;
        let mut decoders = Vec::new();
        for t in types.iter().filter(|t| !(nullable && **t == "null")) {
            decoders.push(match *t {
                "string" => {
                    let pattern = obj.get("pattern").and_then(Value::as_str).map(|p| format!("new RegExp({})", json_string(p)));
                    let length = |k: &str| obj.get(k).and_then(Value::as_u64);
                    match (pattern, length("minLength"), length("maxLength")) {
                        (None, None, None) => "d.string()".into(),
                        (Some(p), None, None) => format!("d.string({p})"),
                        (p, min, max) => {
                            let or_undefined = |v: Option<String>| v.unwrap_or_else(|| "undefined".into());
                            format!(
                                "d.string({}, {}, {})",
                                or_undefined(p),
                                or_undefined(min.map(|n| n.to_string())),
                                or_undefined(max.map(|n| n.to_string()))
                            )
                        }
                    }
                }
                "integer" => {
                    let (min, max) = integer_bounds(obj);
                    format!("d.integer({})", bounds_args(min, max))
                }
                "number" => format!(
                    "d.number({})",
                    bounds_args(obj.get("minimum").and_then(Value::as_f64), obj.get("maximum").and_then(Value::as_f64))
                ),
                "boolean" => "d.boolean".into(),
                "null" => "d.nullValue".into(),
                "object" => "d.object".into(),
                "array" => {
                    let items = obj.get("items").cloned().unwrap_or(Value::Bool(true));
                    let item = self.expr(owner, &items, label)?;
                    let rules = array_rules(s);
                    if rules == "{}" {
                        format!("d.array({item})")
                    } else {
                        format!("d.array({item}, {rules})")
                    }
                }
                other => return Err(schema_err(owner, &format!("unsupported type {other:?}"))),
            });
        }
        let inner = match &decoders[..] {
            [one] => one.clone(),
            _ => format!("d.anyOf({}, [{}])", json_string(label), decoders.join(", ")),
        };
        Ok(if nullable { format!("d.nullable({inner})") } else { inner })
    }
}

fn is_object(schema: &Value) -> bool {
    schema.get("type") == Some(&Value::from("object"))
}

fn is_null(schema: &Value) -> bool {
    schema.get("type") == Some(&Value::from("null")) && schema.get("const").is_none()
}

fn branches_of(obj: &Map<String, Value>) -> Option<&Vec<Value>> {
    obj.get("anyOf").or_else(|| obj.get("oneOf")).and_then(Value::as_array)
}

fn single_all_of_ref(obj: &Map<String, Value>) -> Option<&Value> {
    match obj.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([one]) => one.get("$ref"),
        _ => None,
    }
}

fn ref_target<'v>(owner: &str, r: &'v Value) -> Result<&'v str, Error> {
    r.as_str().and_then(|r| r.strip_prefix(DEFS)).ok_or_else(|| schema_err(owner, &format!("`$ref` {r} does not point into `{DEFS}`")))
}

fn properties_of(schema: &Value) -> Vec<(&String, &Value)> {
    schema.get("properties").and_then(Value::as_object).map(|p| p.iter().collect()).unwrap_or_default()
}

fn required_of(schema: &Value) -> BTreeSet<&str> {
    schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// The schema without `null` in its `type` list (for `x-tristate`, where `null` is `Patch`'s).
fn without_null(schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Some(Value::Array(types)) = s.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            s["type"] = only;
        }
    }
    s
}

fn integer_bounds(obj: &Map<String, Value>) -> (Option<f64>, Option<f64>) {
    let (fmin, fmax) = match obj.get("format").and_then(Value::as_str) {
        Some("int32") => (Some(i32::MIN as f64), Some(i32::MAX as f64)),
        Some("uint16") => (Some(0.0), Some(u16::MAX as f64)),
        Some("uint32") => (Some(0.0), Some(u32::MAX as f64)),
        Some("uint64") => (Some(0.0), None),
        _ => (None, None),
    };
    (obj.get("minimum").and_then(Value::as_f64).or(fmin), obj.get("maximum").and_then(Value::as_f64).or(fmax))
}

fn bounds_args(min: Option<f64>, max: Option<f64>) -> String {
    let num = |v: f64| {
        if v.fract() == 0.0 {
            format!("{}", v as i64)
        } else {
            format!("{v}")
        }
    };
    match (min, max) {
        (None, None) => String::new(),
        (Some(a), None) => num(a),
        (None, Some(b)) => format!("undefined, {}", num(b)),
        (Some(a), Some(b)) => format!("{}, {}", num(a), num(b)),
    }
}

fn array_rules(schema: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(n) = schema.get("minItems").and_then(Value::as_u64) {
        parts.push(format!("minItems: {n}"));
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        parts.push("uniqueItems: true".into());
    }
    if parts.is_empty() {
        "{}".into()
    } else {
        format!("{{ {} }}", parts.join(", "))
    }
}

/// Methods from `x-method`, grouped as the envelope definitions list them.
fn methods(spec: &Spec) -> Result<(Vec<MethodEntry>, Vec<Group>), Error> {
    let mut groups = Vec::new();
    let mut methods = Vec::new();
    let mut seen = BTreeMap::new();
    for (name, request, from) in MESSAGE_GROUPS {
        let Some(def) = spec.def(name) else { continue };
        let list: Vec<String> = def
            .schema
            .pointer("/properties/method/anyOf")
            .and_then(Value::as_array)
            .and_then(|branches| branches.iter().find_map(|b| b.get("enum").and_then(Value::as_array)))
            .map(|e| e.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .ok_or_else(|| schema_err(name, "expected `properties.method.anyOf` with an `enum` of method names"))?;
        for m in &list {
            let (params, result) = method_defs(spec, m)
                .ok_or_else(|| schema_err(name, &format!("method {m:?} has no params definition (`x-method`)")))?;
            if request && result.is_none() {
                return Err(schema_err(name, &format!("request method {m:?} has no `*Response` definition")));
            }
            if seen.insert(m.clone(), name).is_some() {
                return Err(schema_err(name, &format!("method {m:?} is listed by two envelope definitions")));
            }
            methods.push(MethodEntry {
                method: m.clone(),
                constant: crate::method_const(m),
                request,
                params,
                params_optional: !params_required(&def.schema, m),
                result: if request { result } else { None },
            });
        }
        groups.push(Group { name: name.to_owned(), request, from: from.to_owned(), methods: list });
    }
    // The extension methods the schema defines (`_session/steering`): in no envelope's list,
    // checked like the others once named (a `*Response` makes one a request).
    let mut extensions: Vec<&str> =
        spec.defs.iter().filter_map(|d| d.method.as_deref()).filter(|m| m.starts_with('_') && !seen.contains_key(*m)).collect();
    extensions.sort_unstable();
    extensions.dedup();
    for m in extensions {
        let (params, result) =
            method_defs(spec, m).ok_or_else(|| schema_err(m, "extension method has no params definition (`x-method`)"))?;
        let request = result.is_some();
        methods.push(MethodEntry {
            method: m.to_owned(),
            constant: crate::method_const(m),
            request,
            params,
            params_optional: false,
            result,
        });
    }
    Ok((methods, groups))
}

/// The TypeScript names of a method's params definition and of its `*Response`, if any (the
/// definitions whose `x-method` is `method`); `None` without a params definition.
fn method_defs(spec: &Spec, method: &str) -> Option<(String, Option<String>)> {
    let with_method: Vec<&str> = spec.defs.iter().filter(|d| d.method.as_deref() == Some(method)).map(|d| d.name.as_str()).collect();
    let params = with_method.iter().find(|n| !n.ends_with("Response"))?;
    Some((ts_name(params), with_method.iter().find(|n| n.ends_with("Response")).map(|n| ts_name(n))))
}

/// Whether the envelope's `allOf` branch for `method` lists `params` as required (a method
/// without a branch, or whose branch does not say, takes its params as optional).
fn params_required(envelope: &Value, method: &str) -> bool {
    let branches = envelope.get("allOf").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    branches.iter().any(|b| {
        b.pointer("/if/properties/method/const").and_then(Value::as_str) == Some(method)
            && b.pointer("/then/required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|x| x == "params"))
    })
}

/// Trailing spaces off, runs of blank lines collapsed to one, one final newline.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}
