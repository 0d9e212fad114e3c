//! The value model: every value that crosses the FFI, described once, in one language-neutral
//! form, and the renderers that turn it into each language's own value types and into the Rust
//! encoders and decoders of the boundary encoding (`docs/encoding.md`).
//!
//! Two sources feed it:
//!
//! - the wire types, read from the expansion of the canonical schema (the formatted output of
//!   [`crate::generate_formatted`], computed in memory from `spec/acp-inject.schema.json`):
//!   structs, newtypes, string enums and tagged unions, with their docs and the members their
//!   `new` takes;
//! - the values that are not wire types (the client's events and mirror, the agent core's actions
//!   and events, the bindings' options and errors), described in `spec/values.json`.
//!
//! Nothing here reads a crate the output is generated for: the generated Rust code names the
//! types each entry describes, so a description that drifts from its type fails to compile.
//!
//! The model is made of [`TypeDef`]s. Languages see it as *classes* ([`Model::classes`]): every
//! struct type, and every union variant that carries fields or none (a variant holding a struct
//! type *is* that struct's class, and a variant holding a union is flattened into its union).
//! A union is the set of its classes: `SessionUpdate` is `AgentMessageChunk | … |
//! IdleStateUpdate | …` (the state updates flattened in), and a session's activity is every
//! update, item change, violation and permission request, one level deep.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::Error;

mod described;
pub mod kotlin;
pub mod python;
pub mod rust;
pub mod swift;
mod wire;

/// The model: every type, wire types and described ones, in a stable order (described types
/// first, in file order, then the wire types they reach, in expansion order).
#[derive(Debug, Clone)]
pub struct Model {
    pub types: Vec<TypeDef>,
    index: BTreeMap<String, usize>,
    /// How the wire types are written in ACP's JSON (member names, union tags), for languages
    /// whose value types also read and write the wire's JSON (Swift's `Codable`).
    pub wire_json: WireJson,
}

/// How the wire types are written in ACP's JSON, read from the expansion's serde attributes
/// and its unions' `TAG` and `fn tag`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireJson {
    /// `(type, field)` → the JSON member (`("Usage", "total_tokens")` → `totalTokens`), for
    /// every named field of every wire struct.
    pub members: BTreeMap<(String, String), String>,
    /// Each tagged wire union's tag (`SessionUpdate` → `sessionUpdate`); an untagged union
    /// (`EmbeddedResourceResource`, told apart by its members) has none.
    pub tags: BTreeMap<String, WireTag>,
}

/// A tagged wire union's tag.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireTag {
    /// The JSON member holding it (`sessionUpdate`).
    pub member: String,
    /// Each variant's value, by the Rust variant's name (`AgentMessageChunk` →
    /// `agent_message_chunk`).
    pub values: BTreeMap<String, String>,
}

/// One type of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// The name every language gives it (`SessionUpdate`, `TurnPhase`).
    pub name: String,
    /// The Rust type it describes, as a path (`acp_inject_core::wire::Usage`).
    pub rust: String,
    /// Its doc text (plain text, Markdown code spans).
    pub doc: String,
    pub kind: Kind,
    /// Where it comes from.
    pub origin: Origin,
}

/// Where a type comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The wire schema.
    Wire,
    /// `spec/values.json`.
    Described,
}

/// What a type is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Named fields.
    Struct(Struct),
    /// One of several classes, told apart by the class name (`$`).
    Union(Union),
    /// One of several strings.
    Enum(Enum),
    /// A single value under another name (`MessageId` is a string).
    Newtype(Ty),
}

/// A struct type.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    pub fields: Vec<Field>,
    /// How Rust builds it.
    pub build: Build,
    /// It is an error (`AcpError`): each language raises it.
    pub error: bool,
}

/// How the generated Rust code builds a value of a struct type.
#[derive(Debug, Clone, PartialEq)]
pub enum Build {
    /// A struct literal with every field.
    Literal,
    /// `Type::new(required…)` with these fields in this order, the others assigned after: the
    /// wire structs are `#[non_exhaustive]`.
    New(Vec<String>),
}

/// A field of a struct or of a variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field's name in Rust and in the encoding (`total_tokens`); each language spells it
    /// its own way.
    pub name: String,
    pub ty: Ty,
    pub doc: String,
    /// What a language's constructor fills in when the field is not given, and what a decoder
    /// takes when the encoding leaves it out. `None`: required.
    pub default: Option<Default>,
    /// Rust holds it in a `Box`.
    pub boxed: bool,
}

/// A field's default.
#[derive(Debug, Clone, PartialEq)]
pub enum Default {
    /// Absent (an optional field).
    Null,
    /// Absent, as opposed to `null` (a patch field).
    Unset,
    Bool(bool),
    Int(i64),
    /// The empty list.
    EmptyList,
    /// An enum's value, by its wire string.
    Enum(String),
    /// A struct type whose fields all have defaults, with those defaults.
    Struct,
}

/// A field's type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ty {
    Bool,
    /// An integer, with its Rust type (`u64`, `i64`, `u32`, `u16`, `i32`).
    Int(&'static str),
    /// A count that is never zero (Rust `NonZeroU32`).
    NonZero,
    Float,
    String,
    /// Any JSON value.
    Json,
    /// A JSON object.
    JsonObject,
    /// A JSON-RPC request id: an integer, a string or null.
    RequestId,
    /// A type of the model, by name.
    Named(String),
    Option(Box<Ty>),
    List(Box<Ty>),
    /// Absent, `null` or a value, each meaning something else (`Patch<T>`).
    Patch(Box<Ty>),
}

impl Ty {
    /// The named types it refers to.
    pub fn names(&self, out: &mut BTreeSet<String>) {
        match self {
            Ty::Named(n) => {
                out.insert(n.clone());
            }
            Ty::Option(t) | Ty::List(t) | Ty::Patch(t) => t.names(out),
            _ => {}
        }
    }
}

/// A union.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    pub variants: Vec<Variant>,
    /// The wire's open branch (`Other(Unknown)`) for a tag this version does not know: the
    /// member name of the tag (`sessionUpdate`), and the class that carries it
    /// (`OtherSessionUpdate`, with the tag's value and the whole JSON object).
    pub other: Option<Other>,
    /// It is an error: each language raises it.
    pub error: bool,
}

/// A union's open branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Other {
    /// The JSON member whose value tells the variants apart on the wire (`sessionUpdate`).
    pub tag_member: String,
    /// The class name (`OtherSessionUpdate`).
    pub class: String,
}

/// A union's variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The Rust variant's name (`AgentMessageChunk`, `Failed`).
    pub rust: String,
    pub doc: String,
    pub payload: Payload,
}

/// What a variant holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// Its own class, with these fields (none for a unit variant). `tuple`: Rust holds the
    /// single field unnamed (`Tolerated(Vec<String>)`).
    Class { class: String, fields: Vec<Field>, tuple: bool },
    /// The class of another variant or of a struct type, whose fields Rust holds by name
    /// (`Sessions { sessions, next_cursor }` is a `SessionPage`).
    Like { class: String },
    /// A struct type, held whole (`Failed(ProtocolError)`, `Text(Box<TextContent>)`): the
    /// struct's class is the variant.
    Struct { ty: String, boxed: bool },
    /// A union, held whole (`StateUpdate(Box<StateUpdate>)`) or as the single named field
    /// `field`: its classes are this union's too.
    Union { ty: String, boxed: bool, field: Option<String> },
}

/// A string enum.
#[derive(Debug, Clone, PartialEq)]
pub struct Enum {
    pub values: Vec<EnumValue>,
    /// A value this version does not know is kept (the Rust variant holding it: `Other`, or
    /// `Unknown` where `other` is a known value).
    pub open: Option<String>,
}

/// One value of an [`Enum`].
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// The Rust variant, as a pattern (`EndTurn`, `InvalidArguments(_)`).
    pub rust: String,
    /// The Rust expression that builds it (`EndTurn`, `InvalidArguments(String::new())`).
    pub build: String,
    /// Its string (`end_turn`).
    pub wire: String,
    pub doc: String,
}

impl EnumValue {
    /// The Rust variant's name (`EndTurn`).
    pub fn variant(&self) -> &str {
        self.rust.split('(').next().unwrap_or(&self.rust)
    }
}

/// A class: what a language defines as one value type with named fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Class<'a> {
    pub name: &'a str,
    pub doc: &'a str,
    pub fields: &'a [Field],
    /// Its values carry their class name (`$`): it is a union's variant.
    pub tagged: bool,
    /// The unions it is a variant of, directly.
    pub unions: Vec<&'a str>,
    /// It is an error.
    pub error: bool,
    /// The struct type it is (`None` for a union variant's own class).
    pub struct_type: Option<&'a TypeDef>,
}

/// The fields of the open branch's class (`OtherSessionUpdate`): the tag's value and the whole
/// JSON object.
pub fn other_fields() -> Vec<Field> {
    vec![
        Field {
            name: "tag".into(),
            ty: Ty::String,
            doc: "The value of the tag member this version does not know.".into(),
            default: None,
            boxed: false,
        },
        Field {
            name: "raw".into(),
            ty: Ty::JsonObject,
            doc: "The whole JSON object, as received.".into(),
            default: None,
            boxed: false,
        },
    ]
}

impl Model {
    /// The model of the described values (`spec/values.json`'s text) and of the wire types of
    /// `expansion` they reach.
    pub fn build(described: &str, expansion: &str) -> Result<Model, Error> {
        let (described, also) = described::parse(described)?;
        let wire = wire::parse(expansion)?;
        let wire_index: BTreeMap<&str, &TypeDef> = wire.iter().map(|t| (t.name.as_str(), t)).collect();
        let mut types: Vec<TypeDef> = described.clone();
        let mut have: BTreeSet<String> = types.iter().map(|t| t.name.clone()).collect();
        // Every wire type a described type reaches, breadth first.
        let mut queue: Vec<String> = also;
        for t in &described {
            queue.extend(references(t));
        }
        while let Some(name) = queue.pop() {
            if have.contains(&name) {
                continue;
            }
            let Some(t) = wire_index.get(name.as_str()) else {
                return Err(model_err(&name, "is referred to but is neither described nor a wire type"));
            };
            have.insert(name.clone());
            queue.extend(references(t));
            types.push((*t).clone());
        }
        // Described first, then the wire types in expansion order.
        let wire_order: BTreeMap<&str, usize> = wire.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
        let n = described.len();
        types[n..].sort_by_key(|t| wire_order.get(t.name.as_str()).copied().unwrap_or(usize::MAX));
        settle(&mut types)?;
        let index = types.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        let wire_json = wire::json_forms(expansion)?;
        let model = Model { types, index, wire_json };
        model.check()?;
        Ok(model)
    }

    pub fn get(&self, name: &str) -> Option<&TypeDef> {
        self.index.get(name).map(|&i| &self.types[i])
    }

    fn expect(&self, name: &str) -> Result<&TypeDef, Error> {
        self.get(name).ok_or_else(|| model_err(name, "is not in the model"))
    }

    /// The classes of a union, flattened: its own variants' classes and those of the unions
    /// it holds, then the open branch's class.
    pub fn members(&self, union: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(TypeDef { kind: Kind::Union(u), .. }) = self.get(union) {
            for v in &u.variants {
                match &v.payload {
                    Payload::Class { class, .. } | Payload::Like { class } => out.push(class.clone()),
                    Payload::Struct { ty, .. } => out.push(ty.clone()),
                    Payload::Union { ty, .. } => out.extend(self.members(ty)),
                }
            }
            if let Some(o) = &u.other {
                out.push(o.class.clone());
            }
        }
        out
    }

    /// Every class, in model order: struct types in their place, a union's own classes (and
    /// its open branch's) after the union.
    pub fn classes(&self) -> Vec<Class<'_>> {
        let mut unions_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for t in &self.types {
            if let Kind::Union(u) = &t.kind {
                for v in &u.variants {
                    let class = match &v.payload {
                        Payload::Class { class, .. } | Payload::Like { class } => class.as_str(),
                        Payload::Struct { ty, .. } => ty.as_str(),
                        Payload::Union { .. } => continue,
                    };
                    let list = unions_of.entry(class).or_default();
                    if !list.contains(&t.name.as_str()) {
                        list.push(&t.name);
                    }
                }
                if let Some(o) = &u.other {
                    unions_of.entry(&o.class).or_default().push(&t.name);
                }
            }
        }
        let mut out = Vec::new();
        for t in &self.types {
            match &t.kind {
                Kind::Struct(s) => out.push(Class {
                    name: &t.name,
                    doc: &t.doc,
                    fields: &s.fields,
                    tagged: unions_of.contains_key(t.name.as_str()),
                    unions: unions_of.get(t.name.as_str()).cloned().unwrap_or_default(),
                    error: s.error,
                    struct_type: Some(t),
                }),
                Kind::Union(u) => {
                    for v in &u.variants {
                        if let Payload::Class { class, fields, .. } = &v.payload {
                            out.push(Class {
                                name: class,
                                doc: &v.doc,
                                fields,
                                tagged: true,
                                unions: unions_of.get(class.as_str()).cloned().unwrap_or_default(),
                                error: u.error,
                                struct_type: None,
                            });
                        }
                    }
                    if let Some(o) = &u.other {
                        out.push(Class {
                            name: &o.class,
                            doc: OTHER_DOC,
                            fields: other_fields_static(),
                            tagged: true,
                            unions: vec![&t.name],
                            error: false,
                            struct_type: None,
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Whether `class` is a union's open branch (`OtherSessionUpdate`).
    pub fn is_other(&self, class: &str) -> bool {
        self.types.iter().any(|t| matches!(&t.kind, Kind::Union(Union { other: Some(o), .. }) if o.class == class))
    }

    /// The class named `name`.
    pub fn class(&self, name: &str) -> Option<Class<'_>> {
        self.classes().into_iter().find(|c| c.name == name)
    }

    /// Checks what the renderers rely on: names are unique, every reference resolves, a
    /// `like` names a class with fields, flattened variants hold unions, defaults fit.
    fn check(&self) -> Result<(), Error> {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for t in &self.types {
            if !seen.insert(&t.name) {
                return Err(model_err(&t.name, "is defined twice"));
            }
        }
        let classes = self.classes();
        let mut class_names: BTreeSet<&str> = BTreeSet::new();
        for c in &classes {
            if !class_names.insert(c.name) {
                return Err(model_err(c.name, "is the name of two classes"));
            }
            if c.struct_type.is_none() && self.get(c.name).is_some() {
                return Err(model_err(c.name, "names a variant's class and a type"));
            }
        }
        for t in &self.types {
            for name in references(t) {
                self.expect(&name).map_err(|_| model_err(&t.name, &format!("refers to `{name}`, which is not in the model")))?;
            }
            if let Kind::Union(u) = &t.kind {
                let mut tags = BTreeSet::new();
                for class in self.members(&t.name) {
                    if !tags.insert(class.clone()) {
                        return Err(model_err(&t.name, &format!("has the class `{class}` twice")));
                    }
                }
                for v in &u.variants {
                    match &v.payload {
                        Payload::Like { class } => {
                            if !classes.iter().any(|c| c.name == class) {
                                return Err(model_err(&t.name, &format!("variant {} is like `{class}`, which is no class", v.rust)));
                            }
                        }
                        Payload::Struct { ty, .. } => {
                            if !matches!(self.expect(ty)?.kind, Kind::Struct(_)) {
                                return Err(model_err(&t.name, &format!("variant {} holds `{ty}`, which is no struct", v.rust)));
                            }
                        }
                        Payload::Union { ty, .. } => {
                            if !matches!(self.expect(ty)?.kind, Kind::Union(_)) {
                                return Err(model_err(&t.name, &format!("variant {} holds `{ty}`, which is no union", v.rust)));
                            }
                        }
                        Payload::Class { .. } => {}
                    }
                }
            }
            for f in fields_of(t) {
                self.check_default(&t.name, f)?;
            }
        }
        Ok(())
    }

    fn check_default(&self, owner: &str, f: &Field) -> Result<(), Error> {
        let bad = |what: &str| model_err(owner, &format!("field `{}`: {what}", f.name));
        match (&f.default, &f.ty) {
            (None, _) => Ok(()),
            (Some(Default::Null), Ty::Option(_)) | (Some(Default::Unset), Ty::Patch(_)) => Ok(()),
            (Some(Default::Bool(_)), Ty::Bool) | (Some(Default::Int(_)), Ty::Int(_)) => Ok(()),
            (Some(Default::EmptyList), Ty::List(_)) => Ok(()),
            (Some(Default::Enum(wire)), Ty::Named(n)) => match &self.expect(n)?.kind {
                Kind::Enum(e) if e.values.iter().any(|v| &v.wire == wire) => Ok(()),
                _ => Err(bad(&format!("the default `{wire}` is no value of `{n}`"))),
            },
            (Some(Default::Struct), Ty::Named(n)) => match &self.expect(n)?.kind {
                Kind::Struct(s) if s.fields.iter().all(|f| f.default.is_some()) => Ok(()),
                _ => Err(bad(&format!("`{n}` has required fields, so it has no default"))),
            },
            _ => Err(bad("the default does not fit the type")),
        }
    }
}

/// Tells the variants that hold a union from those that hold a struct (both are read as
/// `Payload::Struct` before every type is known).
fn settle(types: &mut [TypeDef]) -> Result<(), Error> {
    let unions: BTreeSet<String> = types.iter().filter(|t| matches!(t.kind, Kind::Union(_))).map(|t| t.name.clone()).collect();
    for t in types.iter_mut() {
        let Kind::Union(u) = &mut t.kind else { continue };
        for v in &mut u.variants {
            match &v.payload {
                Payload::Struct { ty, boxed } if unions.contains(ty) => {
                    v.payload = Payload::Union { ty: ty.clone(), boxed: *boxed, field: None };
                }
                Payload::Union { ty, field: Some(_), .. } if !unions.contains(ty) => {
                    return Err(model_err(&t.name, &format!("variant {} flattens `{ty}`, which is no union", v.rust)));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

const OTHER_DOC: &str =
    "A variant this version does not know, kept whole: the value of its tag member and the JSON object as received.";

fn other_fields_static() -> &'static [Field] {
    static FIELDS: std::sync::OnceLock<Vec<Field>> = std::sync::OnceLock::new();
    FIELDS.get_or_init(other_fields)
}

/// The fields a type defines (a struct's, its union's own classes').
fn fields_of(t: &TypeDef) -> Vec<&Field> {
    match &t.kind {
        Kind::Struct(s) => s.fields.iter().collect(),
        Kind::Union(u) => u
            .variants
            .iter()
            .flat_map(|v| match &v.payload {
                Payload::Class { fields, .. } => fields.iter().collect::<Vec<_>>(),
                _ => Vec::new(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The named types a type refers to.
fn references(t: &TypeDef) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in fields_of(t) {
        f.ty.names(&mut out);
    }
    match &t.kind {
        Kind::Union(u) => {
            for v in &u.variants {
                match &v.payload {
                    Payload::Struct { ty, .. } | Payload::Union { ty, .. } => {
                        out.insert(ty.clone());
                    }
                    // A `like` names a class (checked apart): a struct type it names is
                    // described, and another variant's class is no type.
                    Payload::Like { .. } | Payload::Class { .. } => {}
                }
            }
        }
        Kind::Newtype(ty) => ty.names(&mut out),
        _ => {}
    }
    out
}

pub(crate) fn model_err(def: &str, message: &str) -> Error {
    Error::Schema { def: def.to_owned(), message: message.to_owned() }
}

/// The doc text of `attrs`, lines joined with `\n`, trimmed.
pub(crate) fn doc_text(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                path,
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }),
                ..
            }) if path.is_ident("doc") => Some(text.value()),
            _ => None,
        })
        .collect();
    let text = lines.join("\n");
    text.lines().map(str::trim_end).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect::<Vec<_>>().join("\n").trim().to_owned()
}

/// A JSON value's string, for the description's errors.
pub(crate) fn as_str<'a>(v: &'a Value, owner: &str, what: &str) -> Result<&'a str, Error> {
    v.as_str().ok_or_else(|| model_err(owner, &format!("{what} is not a string")))
}
