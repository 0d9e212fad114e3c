//! The Swift side of the value model: `generated/swift/Values.swift`, compiled into the public
//! `AcpInject` module (bindings/swift/Sources/AcpInject/Values.swift is a symlink to it).
//!
//! Every type is a plain Swift value, `Sendable, Hashable, Codable` by construction:
//!
//! - a struct type or a class with fields is a `struct` of `let` lowerCamel properties with a
//!   public memberwise `init` whose arguments default as the model says;
//! - a union is an `enum` with a lowerCamel case per variant, holding the class's struct
//!   (`case agentMessageChunk(AgentMessageChunk)`), nothing for a class without fields
//!   (`case closed`), the single value of a tuple class (`case startTurn([UserInput])`), the
//!   inner enum for a wire union it holds (`case stateUpdate(StateUpdate)`), and `case
//!   other(tag:raw:)` for a wire union's open branch; a described union it holds is inlined
//!   (`SessionActivity` reads one level: `.update`, `.item`, `.violation`, `.closed`,
//!   `.tolerated`, `.permissionRequested`); the error union (`AcpError`) holds its fields as
//!   labelled values (`.disconnected(detail:)`);
//! - a closed enum is a `String` enum with lowerCamel cases, an open one a `RawRepresentable`
//!   struct with a constant per known value, keeping any other string;
//! - a newtype is a `typealias`; integers are `Int`, floats `Double`, JSON `JSONValue`.
//!
//! Each type reads and writes the boundary encoding (`docs/encoding.md`) through
//! `BoundaryCodable` (`init(boundary:)`, `encode(boundary:)`), on the hand-written MessagePack
//! reader and writer of bindings/swift/Sources/AcpInject/MessagePack.swift. Its `Codable` form
//! is ACP's wire JSON for the wire types (member names and union tags from
//! [`super::Model::wire_json`]) and, for the library's own types, objects keyed by the Swift
//! property names, a union as an object with one member named after its case.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use heck::ToLowerCamelCase;

use super::{Class, Default, Field, Kind, Model, Origin, Payload, Ty, TypeDef, Union};
use crate::Error;

/// The file's text, after `preamble` (a comment line).
pub fn render(model: &Model, preamble: &str) -> Result<String, Error> {
    let mut out = format!("// {preamble}\n// Source: spec/values.json and the wire types it reaches (codegen/src/values/swift.rs).\n");
    out += HEADER;
    out += "\n// MARK: - Newtypes\n";
    for t in &model.types {
        if let Kind::Newtype(inner) = &t.kind {
            let _ = write!(out, "\n{}public typealias {} = {}\n", doc(&t.doc, ""), t.name, swift_type(inner));
        }
    }
    out += "\n// MARK: - Enums\n";
    for t in &model.types {
        if let Kind::Enum(e) = &t.kind {
            out += &if e.open.is_some() { open_enum(t, e) } else { closed_enum(t, e) };
        }
    }
    out += "\n// MARK: - Structs\n";
    let structs = struct_classes(model);
    for class in model.classes() {
        if structs.contains(class.name) {
            out += &struct_def(model, &class)?;
        }
    }
    out += "\n// MARK: - Unions\n";
    for t in &model.types {
        if let Kind::Union(u) = &t.kind {
            out += &union_def(model, t, u)?;
        }
    }
    Ok(out)
}

const HEADER: &str = r#"//
// The values of acp-inject as Swift values: every struct, enum and union the library hands over
// or takes (ACP's wire types and the library's own events, state, options and errors), generated
// from the one value model the Rust library and the Python and Kotlin bindings are generated
// from (codegen/src/values/).
//
// - Every type is `Sendable, Hashable, Codable`. Structs have `let` properties and a memberwise
//   `init` whose arguments default as the model says (`Usage(totalTokens: 150)`).
// - A union is an `enum`: a case per variant holding the variant's struct, nothing (a variant
//   without fields), its one value, or the inner enum of a wire union it holds
//   (`SessionUpdate.stateUpdate(.idle(IdleStateUpdate))`); a wire union keeps a variant this
//   version does not know as `.other(tag:raw:)`. A session's activity reads one level deep:
//   `SessionActivity.update(_:)`, `.item(_:)`, `.violation(_:)`, `.closed`, `.tolerated(_:)`,
//   `.permissionRequested(_:)`.
// - A closed enum is a `String` enum; an open one (`StopReason`, `ToolKind`, …) a struct with a
//   constant per known value that keeps any other string (`StopReason(rawValue: "_vendor")`).
// - `Codable`: the wire types encode as ACP's JSON (`JSONEncoder().encode(update)` is the
//   `update` of a `session/update` notification: camelCase members, the wire's tag member and
//   values); the library's own types as objects keyed by their Swift property names, a union as
//   an object with one member named after its case (`{"update": {…}}`, `{"closed": {}}`; an
//   error's case holds its fields: `{"disconnected": {"detail": "…"}}`).
// - `BoundaryCodable` reads and writes the boundary encoding (docs/encoding.md), the
//   MessagePack form in which values cross between this package and the Rust library
//   (`Boundary.encode(_:)`, `Boundary.decode(_:from:)`).
import Foundation
"#;

/// Swift's reserved words that need backticks as a declared name.
const RESERVED: &[&str] = &[
    "associatedtype",
    "class",
    "deinit",
    "enum",
    "extension",
    "fileprivate",
    "func",
    "import",
    "init",
    "inout",
    "internal",
    "let",
    "operator",
    "private",
    "precedencegroup",
    "protocol",
    "public",
    "rethrows",
    "static",
    "struct",
    "subscript",
    "typealias",
    "var",
    "break",
    "case",
    "catch",
    "continue",
    "default",
    "defer",
    "do",
    "else",
    "fallthrough",
    "for",
    "guard",
    "if",
    "in",
    "repeat",
    "return",
    "throw",
    "switch",
    "where",
    "while",
    "Any",
    "as",
    "await",
    "false",
    "is",
    "nil",
    "self",
    "Self",
    "super",
    "throws",
    "true",
    "try",
    "Type",
];

/// A name as declared (`` `protocol` ``).
fn decl(name: &str) -> String {
    if RESERVED.contains(&name) {
        format!("`{name}`")
    } else {
        name.to_owned()
    }
}

/// A name as an argument label (only `inout`, `var` and `let` need backticks there).
fn label(name: &str) -> String {
    if ["inout", "var", "let"].contains(&name) {
        format!("`{name}`")
    } else {
        name.to_owned()
    }
}

/// A field's or a case's Swift name (`total_tokens` → `totalTokens`, `AgentMessageChunk` →
/// `agentMessageChunk`).
pub fn member(name: &str) -> String {
    name.to_lower_camel_case()
}

/// A Swift string literal.
fn lit(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            '\n' => out += "\\n",
            c => out.push(c),
        }
    }
    out + "\""
}

/// Doc comment lines (`///`) at `indent`.
fn doc(text: &str, indent: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    text.lines()
        .map(|l| if l.trim().is_empty() { format!("{indent}///\n") } else { format!("{indent}/// {}\n", l.trim_end()) })
        .collect()
}

/// The Swift type of `ty`.
pub fn swift_type(ty: &Ty) -> String {
    match ty {
        Ty::Bool => "Bool".into(),
        Ty::Int(_) | Ty::NonZero => "Int".into(),
        Ty::Float => "Double".into(),
        Ty::String => "String".into(),
        Ty::Json => "JSONValue".into(),
        Ty::JsonObject => "[String: JSONValue]".into(),
        Ty::RequestId => "RequestId".into(),
        Ty::Named(n) => n.clone(),
        Ty::Option(t) => format!("{}?", swift_type(t)),
        Ty::List(t) => format!("[{}]", swift_type(t)),
        Ty::Patch(t) => format!("Patch<{}>", swift_type(t)),
    }
}

// ----- enums -----

fn closed_enum(t: &TypeDef, e: &super::Enum) -> String {
    let mut out = format!("\n{}public enum {}: String, Sendable, Hashable, Codable, CaseIterable {{\n", doc(&t.doc, ""), t.name);
    for v in &e.values {
        let _ = writeln!(out, "{}    case {} = {}", doc(&v.doc, "    "), decl(&member(v.variant())), lit(&v.wire));
    }
    let _ = write!(
        out,
        "}}\n\nextension {name}: BoundaryCodable {{\n    public init(boundary r: inout BoundaryReader) throws {{\n        let value = try r.readString()\n        guard let known = {name}(rawValue: value) else {{ throw BoundaryError.unknownValue({name_lit}, value) }}\n        self = known\n    }}\n\n    public func encode(boundary w: inout BoundaryWriter) {{ w.writeString(rawValue) }}\n}}\n",
        name = t.name,
        name_lit = lit(&t.name),
    );
    out
}

fn open_enum(t: &TypeDef, e: &super::Enum) -> String {
    let name = &t.name;
    let mut out = format!(
        "\n{}///\n/// Open: a value this version does not know is kept (`{name}(rawValue: \"…\")`), so what the\n/// other side sent is never lost.\npublic struct {name}: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {{\n    /// The wire string.\n    public let rawValue: String\n\n    /// The value whose wire string is `rawValue`, known or not.\n    public init(rawValue: String) {{ self.rawValue = rawValue }}\n",
        doc(&t.doc, "")
    );
    for v in &e.values {
        let _ = write!(
            out,
            "\n{}    public static let {} = {name}(rawValue: {})\n",
            doc(&v.doc, "    "),
            decl(&member(v.variant())),
            lit(&v.wire)
        );
    }
    let known: Vec<String> = e.values.iter().map(|v| format!(".{}", member(v.variant()))).collect();
    let names: Vec<String> = e.values.iter().map(|v| format!("{}: {}", lit(&v.wire), lit(&member(v.variant())))).collect();
    let _ = write!(
        out,
        r#"
    /// The values this version knows, in the schema's order.
    public static let knownValues: [{name}] = [{known}]

    /// Whether this version knows the value.
    public var isKnown: Bool {{ Self.knownValues.contains(self) }}

    /// The Swift names of the known values, by wire string.
    private static let names: [String: String] = [{names}]

    /// The Swift name of a known value (`endTurn`), else the wire string.
    public var description: String {{ Self.names[rawValue] ?? rawValue }}

    public init(from decoder: Decoder) throws {{
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }}

    public func encode(to encoder: Encoder) throws {{
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }}
}}

extension {name}: BoundaryCodable {{
    public init(boundary r: inout BoundaryReader) throws {{ self.init(rawValue: try r.readString()) }}

    public func encode(boundary w: inout BoundaryWriter) {{ w.writeString(rawValue) }}
}}
"#,
        known = known.join(", "),
        names = names.join(", "),
    );
    out
}

// ----- structs -----

/// The classes that are Swift structs: every struct type, and every variant class with fields
/// except the error union's (its cases hold the fields) and the tuple classes of one field (the
/// case holds the value).
fn struct_classes(model: &Model) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    for t in &model.types {
        match &t.kind {
            Kind::Struct(_) => {
                out.insert(t.name.as_str());
            }
            Kind::Union(u) if !u.error => {
                for v in &u.variants {
                    if let Payload::Class { class, fields, tuple } = &v.payload {
                        // A tuple class of one field is held as its value.
                        let single_value = *tuple && fields.len() == 1;
                        if !fields.is_empty() && !single_value {
                            out.insert(class.as_str());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The Swift expression of a field's default.
fn default_expr(model: &Model, f: &Field, d: &Default) -> Result<String, Error> {
    Ok(match d {
        Default::Null => "nil".into(),
        Default::Unset => ".absent".into(),
        Default::Bool(b) => b.to_string(),
        Default::Int(i) => i.to_string(),
        Default::EmptyList => "[]".into(),
        Default::Enum(wire) => {
            let Ty::Named(n) = &f.ty else { return Err(super::model_err(&f.name, "an enum default of no enum")) };
            match model.get(n).map(|t| &t.kind) {
                Some(Kind::Enum(e)) => match e.values.iter().find(|v| &v.wire == wire) {
                    Some(v) => format!(".{}", member(v.variant())),
                    None => return Err(super::model_err(n, &format!("has no value `{wire}`"))),
                },
                _ => return Err(super::model_err(&f.name, "an enum default of no enum")),
            }
        }
        Default::Struct => {
            let Ty::Named(n) = &f.ty else { return Err(super::model_err(&f.name, "a struct default of no struct")) };
            format!("{n}()")
        }
    })
}

/// The JSON member of a field in the `Codable` form: the wire's for a wire struct, else the
/// Swift name.
fn json_key(model: &Model, owner: &str, origin: Origin, f: &Field) -> String {
    match origin {
        Origin::Wire => model.wire_json.members.get(&(owner.to_owned(), f.name.clone())).cloned().unwrap_or_else(|| f.name.clone()),
        Origin::Described => member(&f.name),
    }
}

fn struct_def(model: &Model, c: &Class<'_>) -> Result<String, Error> {
    let name = c.name;
    let origin = c.struct_type.map_or(Origin::Described, |t| t.origin);
    let mut out = format!("\n{}public struct {name}: Sendable, Hashable, Codable {{\n", doc(c.doc, ""));
    for f in c.fields {
        let _ = writeln!(out, "{}    public let {}: {}", doc(&f.doc, "    "), decl(&member(&f.name)), swift_type(&f.ty));
    }
    // The memberwise init.
    let mut params = Vec::new();
    for f in c.fields {
        let mut p = format!("{}: {}", label(&member(&f.name)), swift_type(&f.ty));
        if let Some(d) = &f.default {
            p += &format!(" = {}", default_expr(model, f, d)?);
        }
        params.push(p);
    }
    let assigns: String = c.fields.iter().map(|f| format!("        self.{0} = {0}\n", decl(&member(&f.name)))).collect();
    let _ = write!(out, "\n    /// A value with these fields.\n    public init({}) {{\n{assigns}    }}\n", params.join(", "));

    // Codable.
    if c.fields.is_empty() {
        out += "\n    public init(from decoder: Decoder) throws { self.init() }\n\n    public func encode(to encoder: Encoder) throws { _ = encoder.container(keyedBy: AnyCodingKey.self) }\n";
    } else {
        out += "\n    private enum CodingKeys: String, CodingKey {\n";
        for f in c.fields {
            let _ = writeln!(out, "        case {} = {}", decl(&member(&f.name)), lit(&json_key(model, name, origin, f)));
        }
        out += "    }\n\n    public init(from decoder: Decoder) throws {\n        let c = try decoder.container(keyedBy: CodingKeys.self)\n        self.init(\n";
        let args: Vec<String> = c
            .fields
            .iter()
            .map(|f| {
                Ok(format!(
                    "            {}: {}",
                    label(&member(&f.name)),
                    codable_read(model, f, "c", &format!(".{}", decl(&member(&f.name))))?
                ))
            })
            .collect::<Result<_, Error>>()?;
        out += &args.join(",\n");
        out += "\n        )\n    }\n\n    public func encode(to encoder: Encoder) throws {\n        var c = encoder.container(keyedBy: CodingKeys.self)\n";
        for f in c.fields {
            out += &codable_write(f, "c", &decl(&member(&f.name)), &format!(".{}", decl(&member(&f.name))), "        ");
        }
        out += "    }\n";
    }
    out += "}\n";

    // The boundary encoding.
    let values: Vec<String> = c.fields.iter().map(|f| decl(&member(&f.name))).collect();
    let (header, take_tag) = if c.tagged {
        ("var n", format!("        try r.expectTag({})\n        n -= 1\n", lit(name)))
    } else {
        ("let n", String::new())
    };
    let _ = write!(
        out,
        "\nextension {name}: BoundaryCodable {{\n    public init(boundary r: inout BoundaryReader) throws {{\n        {header} = try r.readMapHeader()\n{take_tag}        try self.init(boundaryFields: &r, count: n)\n    }}\n\n    /// The value from the `count` remaining pairs of its map.\n    init(boundaryFields r: inout BoundaryReader, count: Int) throws {{\n{read}    }}\n\n    public func encode(boundary w: inout BoundaryWriter) {{\n{write}    }}\n}}\n",
        read = read_fields(model, name, c.fields, |values| format!("self.init({})", init_args(c.fields, values)), "        ")?,
        write = write_fields(name, c.tagged, c.fields, &values, "        "),
    );
    Ok(out)
}

/// `a: <value>, b: <value>` for the fields' values.
fn init_args(fields: &[Field], values: &[String]) -> String {
    fields.iter().zip(values).map(|(f, v)| format!("{}: {v}", label(&member(&f.name)))).collect::<Vec<_>>().join(", ")
}

/// The local a field is read into.
fn local(f: &Field) -> String {
    format!("_{}", member(&f.name))
}

/// Reads a class's fields from `count` pairs of `r` into locals, then runs `finish` (which
/// names them by [`local`]).
fn read_fields(
    model: &Model,
    class: &str,
    fields: &[Field],
    finish: impl Fn(&[String]) -> String,
    indent: &str,
) -> Result<String, Error> {
    let mut out = String::new();
    for f in fields {
        let ty = swift_type(&f.ty);
        let _ = match &f.ty {
            Ty::Option(_) => writeln!(out, "{indent}var {}: {ty} = nil", local(f)),
            Ty::Patch(_) => writeln!(out, "{indent}var {}: {ty} = .absent", local(f)),
            _ => writeln!(out, "{indent}var {}: {ty}? = nil", local(f)),
        };
    }
    let _ = writeln!(out, "{indent}for _ in 0..<count {{");
    let _ = writeln!(out, "{indent}    let key = try r.readString()");
    let _ = writeln!(out, "{indent}    switch key {{");
    for f in fields {
        let read = match &f.ty {
            Ty::Patch(inner) => format!("r.readNil() ? .null : .value(try {}(boundary: &r))", swift_type(inner)),
            Ty::NonZero => "try r.readCount()".to_owned(),
            other => format!("try {}(boundary: &r)", boundary_type(other)),
        };
        let _ = writeln!(out, "{indent}    case {}: {} = try at({}) {{ {read} }}", lit(&f.name), local(f), lit(&f.name));
    }
    let _ = writeln!(out, "{indent}    default: throw BoundaryError.unknownField({}, key)", lit(class));
    let _ = writeln!(out, "{indent}    }}");
    let _ = writeln!(out, "{indent}}}");
    let mut values = Vec::new();
    for f in fields {
        if matches!(f.ty, Ty::Option(_) | Ty::Patch(_)) {
            values.push(local(f));
            continue;
        }
        match &f.default {
            None => {
                let _ = writeln!(
                    out,
                    "{indent}guard let {l} = {l} else {{ throw BoundaryError.missing({}, {}) }}",
                    lit(class),
                    lit(&f.name),
                    l = local(f)
                );
                values.push(local(f));
            }
            Some(d) => values.push(format!("{} ?? {}", local(f), default_expr(model, f, d)?)),
        }
    }
    let _ = writeln!(out, "{indent}{}", finish(&values));
    Ok(out)
}

/// The type whose `init(boundary:)` reads `ty` (`[ContentBlock]`, `Int?`): as written, with
/// optionals spelled out (a `T?` in an expression is an optional chain).
fn boundary_type(ty: &Ty) -> String {
    match ty {
        Ty::Option(t) => format!("Optional<{}>", boundary_type(t)),
        Ty::List(t) => format!("Array<{}>", boundary_type(t)),
        Ty::JsonObject => "Dictionary<String, JSONValue>".into(),
        other => swift_type(other),
    }
}

/// Writes a class's map: its tag when `tagged`, then each field from `values` (expressions,
/// one per field), leaving out absent optional and patch fields.
fn write_fields(class: &str, tagged: bool, fields: &[Field], values: &[String], indent: &str) -> String {
    let always = fields.iter().filter(|f| !matches!(f.ty, Ty::Option(_) | Ty::Patch(_))).count() + usize::from(tagged);
    let omittable: Vec<(&Field, &String)> =
        fields.iter().zip(values).filter(|(f, _)| matches!(f.ty, Ty::Option(_) | Ty::Patch(_))).collect();
    let mut out = String::new();
    if omittable.is_empty() {
        let _ = writeln!(out, "{indent}w.writeMapHeader({always})");
    } else {
        let _ = writeln!(out, "{indent}var n = {always}");
        for (f, v) in &omittable {
            let _ = match f.ty {
                Ty::Patch(_) => writeln!(out, "{indent}if !{v}.isAbsent {{ n += 1 }}"),
                _ => writeln!(out, "{indent}if {v} != nil {{ n += 1 }}"),
            };
        }
        let _ = writeln!(out, "{indent}w.writeMapHeader(n)");
    }
    if tagged {
        let _ = writeln!(out, "{indent}w.writeTag({})", lit(class));
    }
    for (f, v) in fields.iter().zip(values) {
        let key = lit(&f.name);
        let _ = match &f.ty {
            Ty::Option(_) => writeln!(out, "{indent}if let v = {v} {{ w.writeString({key}); v.encode(boundary: &w) }}"),
            Ty::Patch(_) => writeln!(
                out,
                "{indent}switch {v} {{\n{indent}case .absent: break\n{indent}case .null: w.writeString({key}); w.writeNil()\n{indent}case let .value(v): w.writeString({key}); v.encode(boundary: &w)\n{indent}}}"
            ),
            _ => writeln!(out, "{indent}w.writeString({key}); {v}.encode(boundary: &w)"),
        };
    }
    out
}

/// The `Codable` read of a field from keyed container `c` at `key` (an expression).
fn codable_read(model: &Model, f: &Field, c: &str, key: &str) -> Result<String, Error> {
    let ty = swift_type(&f.ty);
    Ok(match (&f.ty, &f.default) {
        (Ty::Option(inner), _) => format!("try {c}.decodeIfPresent({}.self, forKey: {key})", swift_type(inner)),
        (Ty::Patch(inner), _) => format!("try {c}.decodePatch({}.self, forKey: {key})", swift_type(inner)),
        (_, None) => format!("try {c}.decode({ty}.self, forKey: {key})"),
        (_, Some(d)) => format!("try {c}.decodeIfPresent({ty}.self, forKey: {key}) ?? {}", default_expr(model, f, d)?),
    })
}

/// The `Codable` write of `value` (a field's) into keyed container `c` at `key`.
fn codable_write(f: &Field, c: &str, value: &str, key: &str, indent: &str) -> String {
    match &f.ty {
        Ty::Option(_) => format!("{indent}try {c}.encodeIfPresent({value}, forKey: {key})\n"),
        Ty::Patch(_) => format!("{indent}try {c}.encodePatch({value}, forKey: {key})\n"),
        _ => format!("{indent}try {c}.encode({value}, forKey: {key})\n"),
    }
}

// ----- unions -----

/// What one case of a Swift union holds.
#[derive(Debug, Clone)]
enum Holds<'a> {
    /// A struct (a struct type, or a variant class with fields).
    Struct(String),
    /// Nothing: a class without fields.
    Unit,
    /// A tuple class's one value.
    Value(&'a Field),
    /// A wire union's enum (its classes are this union's).
    Union(String),
    /// The wire's open branch: `other(tag:raw:)`.
    Other,
    /// The error union's fields, as labelled values.
    Fields(&'a [Field]),
}

/// One case of a Swift union.
#[derive(Debug, Clone)]
struct Case<'a> {
    /// The case's name (`agentMessageChunk`).
    name: String,
    doc: String,
    /// The class its values carry as their tag (`$`); `None` for a held union.
    class: Option<String>,
    /// The Rust variant (for the wire tag).
    rust: String,
    holds: Holds<'a>,
}

/// The cases of union `t`: one per variant, a described union it holds inlined (its cases are
/// this union's), the open branch last.
fn cases<'a>(model: &'a Model, u: &'a Union) -> Result<Vec<Case<'a>>, Error> {
    let mut out = Vec::new();
    for v in &u.variants {
        let name = member(&v.rust);
        let doc = v.doc.clone();
        let rust = v.rust.clone();
        match &v.payload {
            Payload::Struct { ty, .. } => {
                out.push(Case { name, doc, class: Some(ty.clone()), rust, holds: Holds::Struct(ty.clone()) })
            }
            Payload::Like { class } => {
                out.push(Case { name, doc, class: Some(class.clone()), rust, holds: Holds::Struct(class.clone()) })
            }
            Payload::Class { class, fields, tuple } => {
                let holds = if u.error {
                    Holds::Fields(fields)
                } else if fields.is_empty() {
                    Holds::Unit
                } else if *tuple && fields.len() == 1 {
                    Holds::Value(&fields[0])
                } else {
                    Holds::Struct(class.clone())
                };
                out.push(Case { name, doc, class: Some(class.clone()), rust, holds });
            }
            Payload::Union { ty, .. } => {
                let inner = model.get(ty).ok_or_else(|| super::model_err(ty, "is not in the model"))?;
                match (&inner.kind, inner.origin) {
                    (Kind::Union(iu), Origin::Described) => out.extend(cases(model, iu)?),
                    (Kind::Union(_), Origin::Wire) => out.push(Case { name, doc, class: None, rust, holds: Holds::Union(ty.clone()) }),
                    _ => return Err(super::model_err(ty, "is held as a union but is none")),
                }
            }
        }
    }
    if let Some(o) = &u.other {
        out.push(Case {
            name: "other".into(),
            doc: super::OTHER_DOC.into(),
            class: Some(o.class.clone()),
            rust: "Other".into(),
            holds: Holds::Other,
        });
    }
    let mut seen = BTreeSet::new();
    for c in &out {
        if !seen.insert(c.name.clone()) {
            return Err(super::model_err(&c.name, "is the name of two cases of one Swift union"));
        }
    }
    Ok(out)
}

/// The case's declaration (after `case `).
fn case_decl(c: &Case<'_>) -> String {
    let name = decl(&c.name);
    match &c.holds {
        Holds::Struct(s) => format!("{name}({s})"),
        Holds::Union(u) => format!("{name}({u})"),
        Holds::Unit => name,
        Holds::Value(f) => format!("{name}({})", swift_type(&f.ty)),
        Holds::Other => format!("{name}(tag: String, raw: [String: JSONValue])"),
        Holds::Fields(fields) => {
            format!(
                "{name}({})",
                fields.iter().map(|f| format!("{}: {}", member(&f.name), swift_type(&f.ty))).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

/// The pattern binding a case's payload: `let .name(v)`, `.name`, `let .name(a, b)`.
fn case_pattern(c: &Case<'_>) -> String {
    match &c.holds {
        Holds::Unit => format!(".{}", c.name),
        Holds::Other => format!("let .{}(tag, raw)", c.name),
        Holds::Fields(fields) => {
            format!("let .{}({})", c.name, fields.iter().map(|f| format!("_{}", member(&f.name))).collect::<Vec<_>>().join(", "))
        }
        _ => format!("let .{}(v)", c.name),
    }
}

fn union_def(model: &Model, t: &TypeDef, u: &Union) -> Result<String, Error> {
    let name = &t.name;
    let cases = cases(model, u)?;
    let conformances = if u.error { "Error, Sendable, Hashable, Codable" } else { "Sendable, Hashable, Codable" };
    let mut out = format!("\n{}public enum {name}: {conformances} {{\n", doc(&t.doc, ""));
    for c in &cases {
        let mut d = c.doc.clone();
        if let Holds::Fields(fields) = &c.holds {
            for f in fields.iter() {
                let first = f.doc.lines().next().unwrap_or("");
                let _ = write!(d, "\n- {}: {first}", member(&f.name));
            }
        }
        let _ = writeln!(out, "{}    case {}", doc(&d, "    "), case_decl(c));
    }
    out += &match (t.origin, model.wire_json.tags.get(name)) {
        (Origin::Wire, Some(tag)) => wire_tagged_codable(&cases, &tag.member, &tag.values, name)?,
        (Origin::Wire, None) => untagged_codable(&cases, name),
        (Origin::Described, _) => keyed_codable(model, &cases, name)?,
    };
    out += "}\n";
    out += &union_boundary(model, name, &cases)?;
    Ok(out)
}

/// `Codable` as the wire writes the union: the tag member beside the variant's own members.
fn wire_tagged_codable(
    cases: &[Case<'_>],
    member_name: &str,
    values: &std::collections::BTreeMap<String, String>,
    union: &str,
) -> Result<String, Error> {
    let key = format!("AnyCodingKey({})", lit(member_name));
    let mut dec = String::new();
    let mut enc = String::new();
    for c in cases {
        match &c.holds {
            Holds::Struct(ty) | Holds::Union(ty) => {
                let tag =
                    values.get(&c.rust).ok_or_else(|| super::model_err(union, &format!("variant {} has no wire tag", c.rust)))?;
                let _ = writeln!(dec, "        case {}: self = .{}(try {ty}(from: decoder))", lit(tag), c.name);
                let _ = writeln!(
                    enc,
                    "        case let .{}(v):\n            var c = encoder.container(keyedBy: AnyCodingKey.self)\n            try c.encode({}, forKey: {key})\n            try v.encode(to: encoder)",
                    c.name,
                    lit(tag)
                );
            }
            Holds::Other => {
                let _ = writeln!(enc, "        case let .other(_, raw): try raw.encode(to: encoder)");
            }
            _ => return Err(super::model_err(union, "a wire union holds only structs and unions")),
        }
    }
    let fallback = if cases.iter().any(|c| matches!(c.holds, Holds::Other)) {
        "        default: self = .other(tag: tag, raw: try [String: JSONValue](from: decoder))\n".to_owned()
    } else {
        format!("        default: throw DecodingError.dataCorruptedError(forKey: {key}, in: c, debugDescription: \"not a kind of {union}: \\(tag)\")\n")
    };
    Ok(format!(
        "\n    public init(from decoder: Decoder) throws {{\n        let c = try decoder.container(keyedBy: AnyCodingKey.self)\n        let tag = try c.decode(String.self, forKey: {key})\n        switch tag {{\n{dec}{fallback}        }}\n    }}\n\n    public func encode(to encoder: Encoder) throws {{\n        switch self {{\n{enc}        }}\n    }}\n"
    ))
}

/// `Codable` for an untagged wire union: the first variant that reads the value.
fn untagged_codable(cases: &[Case<'_>], union: &str) -> String {
    let mut dec = String::new();
    let mut enc = String::new();
    for c in cases {
        if let Holds::Struct(ty) | Holds::Union(ty) = &c.holds {
            let _ = writeln!(dec, "        if let v = try? {ty}(from: decoder) {{ self = .{}(v); return }}", c.name);
            let _ = writeln!(enc, "        case let .{}(v): try v.encode(to: encoder)", c.name);
        }
    }
    format!(
        "\n    public init(from decoder: Decoder) throws {{\n{dec}        throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: \"not a {union}\"))\n    }}\n\n    public func encode(to encoder: Encoder) throws {{\n        switch self {{\n{enc}        }}\n    }}\n"
    )
}

/// `Codable` for the library's own unions: an object with one member, the case's name.
fn keyed_codable(model: &Model, cases: &[Case<'_>], union: &str) -> Result<String, Error> {
    let mut dec = String::new();
    let mut enc = String::new();
    for c in cases {
        let key = format!("AnyCodingKey({})", lit(&c.name));
        match &c.holds {
            Holds::Struct(ty) | Holds::Union(ty) => {
                let _ = writeln!(dec, "        case {}: self = .{}(try c.decode({ty}.self, forKey: key))", lit(&c.name), c.name);
                let _ = writeln!(enc, "        case let .{}(v): try c.encode(v, forKey: {key})", c.name);
            }
            Holds::Value(f) => {
                let _ = writeln!(
                    dec,
                    "        case {}: self = .{}(try c.decode({}.self, forKey: key))",
                    lit(&c.name),
                    c.name,
                    swift_type(&f.ty)
                );
                let _ = writeln!(enc, "        case let .{}(v): try c.encode(v, forKey: {key})", c.name);
            }
            Holds::Unit => {
                let _ = writeln!(dec, "        case {}: self = .{}", lit(&c.name), c.name);
                let _ = writeln!(enc, "        case .{}: _ = c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: {key})", c.name);
            }
            Holds::Other => {
                let _ = writeln!(
                    dec,
                    "        case \"other\":\n            let f = try c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key)\n            self = .other(tag: try f.decode(String.self, forKey: AnyCodingKey(\"tag\")), raw: try f.decode([String: JSONValue].self, forKey: AnyCodingKey(\"raw\")))"
                );
                let _ = writeln!(
                    enc,
                    "        case let .other(tag, raw):\n            var f = c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: {key})\n            try f.encode(tag, forKey: AnyCodingKey(\"tag\"))\n            try f.encode(raw, forKey: AnyCodingKey(\"raw\"))"
                );
            }
            Holds::Fields(fields) => {
                let args: Vec<String> = fields
                    .iter()
                    .map(|f| {
                        Ok(format!(
                            "{}: {}",
                            member(&f.name),
                            codable_read(model, f, "f", &format!("AnyCodingKey({})", lit(&member(&f.name))))?
                        ))
                    })
                    .collect::<Result<_, Error>>()?;
                let _ = writeln!(
                    dec,
                    "        case {}:\n            let f = try c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key)\n            self = .{}({})",
                    lit(&c.name),
                    c.name,
                    args.join(", ")
                );
                let mut writes = String::new();
                for f in fields.iter() {
                    writes += &codable_write(
                        f,
                        "f",
                        &format!("_{}", member(&f.name)),
                        &format!("AnyCodingKey({})", lit(&member(&f.name))),
                        "            ",
                    );
                }
                let _ = writeln!(
                    enc,
                    "        case {}:\n            var f = c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: {key})\n{}",
                    case_pattern(c),
                    writes.trim_end()
                );
            }
        }
    }
    Ok(format!(
        "\n    public init(from decoder: Decoder) throws {{\n        let c = try decoder.container(keyedBy: AnyCodingKey.self)\n        guard c.allKeys.count == 1, let key = c.allKeys.first else {{\n            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: \"{union}: an object with one member, its case\"))\n        }}\n        switch key.stringValue {{\n{dec}        default: throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: \"not a case of {union}\")\n        }}\n    }}\n\n    public func encode(to encoder: Encoder) throws {{\n        var c = encoder.container(keyedBy: AnyCodingKey.self)\n        switch self {{\n{enc}        }}\n    }}\n"
    ))
}

/// The boundary encoding of a union: its class's map, the class name first.
fn union_boundary(model: &Model, name: &str, cases: &[Case<'_>]) -> Result<String, Error> {
    let mut dispatch = String::new();
    let mut nested = String::new();
    let mut enc = String::new();
    for c in cases {
        let class = c.class.as_deref().unwrap_or("");
        match &c.holds {
            Holds::Struct(ty) => {
                let _ =
                    writeln!(dispatch, "        case {}: return .{}(try {ty}(boundaryFields: &r, count: count))", lit(class), c.name);
                let _ = writeln!(enc, "        case let .{}(v): v.encode(boundary: &w)", c.name);
            }
            Holds::Union(ty) => {
                let _ = writeln!(
                    nested,
                    "            if let v = try {ty}.boundaryTagged(tag, &r, count: count) {{ return .{}(v) }}",
                    c.name
                );
                let _ = writeln!(enc, "        case let .{}(v): v.encode(boundary: &w)", c.name);
            }
            Holds::Unit => {
                let _ = writeln!(
                    dispatch,
                    "        case {}:\n            try r.skipFields({}, count: count)\n            return .{}",
                    lit(class),
                    lit(class),
                    c.name
                );
                let _ = writeln!(
                    enc,
                    "        case .{}:\n            w.writeMapHeader(1)\n            w.writeTag({})",
                    c.name,
                    lit(class)
                );
            }
            Holds::Value(f) => {
                let read = read_fields(
                    model,
                    class,
                    std::slice::from_ref(*f),
                    |values| format!("return .{}({})", c.name, values[0]),
                    "            ",
                )?;
                let _ = write!(dispatch, "        case {}:\n{read}", lit(class));
                let _ = write!(
                    enc,
                    "        case let .{}(v):\n{}",
                    c.name,
                    write_fields(class, true, std::slice::from_ref(*f), &["v".to_owned()], "            ")
                );
            }
            Holds::Fields(fields) => {
                let read = read_fields(
                    model,
                    class,
                    fields,
                    |values| format!("return .{}({})", c.name, init_args(fields, values)),
                    "            ",
                )?;
                let _ = write!(dispatch, "        case {}:\n{read}", lit(class));
                let values: Vec<String> = fields.iter().map(|f| format!("_{}", member(&f.name))).collect();
                let _ =
                    write!(enc, "        case {}:\n{}", case_pattern(c), write_fields(class, true, fields, &values, "            "));
            }
            Holds::Other => {
                let _ = writeln!(dispatch, "        case {}:\n            let (tag, raw) = try r.readOther(count: count)\n            return .other(tag: tag, raw: raw)", lit(class));
                let _ = writeln!(enc, "        case let .other(tag, raw): w.writeOther(class: {}, tag: tag, raw: raw)", lit(class));
            }
        }
    }
    Ok(format!(
        "\nextension {name}: BoundaryCodable {{\n    public init(boundary r: inout BoundaryReader) throws {{\n        let n = try r.readMapHeader()\n        let tag = try r.readTag()\n        guard let value = try {name}.boundaryTagged(tag, &r, count: n - 1) else {{ throw BoundaryError.unknownClass({}, tag) }}\n        self = value\n    }}\n\n    /// The value of class `tag` when it is one of this union's (`count` pairs of its map left).\n    static func boundaryTagged(_ tag: String, _ r: inout BoundaryReader, count: Int) throws -> {name}? {{\n        switch tag {{\n{dispatch}        default:\n{nested}            return nil\n        }}\n    }}\n\n    public func encode(boundary w: inout BoundaryWriter) {{\n        switch self {{\n{enc}        }}\n    }}\n}}\n",
        lit(name)
    ))
}
