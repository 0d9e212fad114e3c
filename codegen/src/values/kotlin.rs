//! The Kotlin side of the value model: `generated/kotlin/dev/acpinject/Values.kt`.
//!
//! Every class is an immutable `data class` (`data object` when it has no fields) with
//! camelCase `val`s, the model's defaults as default arguments (optional fields default to
//! `null`, patch fields to `Patch.Absent`) and KDoc from the model's docs. A union is a `sealed
//! interface`; a class implements every union it is a variant of, and a union held by another
//! union's variant is a sealed sub-interface of it (`sealed interface StateUpdate :
//! SessionUpdate`), so a `when` over a union lists the flat classes, exhaustively, with no
//! wrapper to unwrap. Closed enums are `enum class`es carrying their wire string; open enums
//! are `@JvmInline value class`es over the wire string with the known values as constants, so a
//! value this version does not know is kept. Both spell their constants in UPPER_SNAKE. The
//! error union (`AcpError`) is `sealed class AcpException`, one subclass per class.
//!
//! Beside each type it writes an internal codec object (`UsageCodec`, on the runtime of the
//! hand-written `bindings/kotlin/src/main/kotlin/dev/acpinject/Codec.kt`: `ValueCodec`,
//! `ValueReader`, `ValueWriter` over msgpack-core) that reads and writes the boundary encoding
//! (`docs/encoding.md`): a class as a map keyed by the model's snake_case field names, its class
//! name first under `"$"` when it is a union's variant; optional fields left out when absent;
//! missing fields with defaults filled in; unknown keys and classes refused, naming where. The
//! public entry points are `Values.encode` and `Values.decode` (by type, through the registry
//! at the end of the file).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use heck::{ToLowerCamelCase, ToShoutySnakeCase};

use super::{Class, Default, Field, Kind, Model, Payload, Ty, TypeDef};
use crate::Error;

/// The file's text, after `preamble` (a comment line).
pub fn render(model: &Model, preamble: &str) -> Result<String, Error> {
    let mut out =
        format!("// {preamble}\n// Source: spec/values.json and the wire types it reaches (codegen/src/values/kotlin.rs).\n");
    out += HEADER;
    let parents = parents(model);
    let mut registry: Vec<(String, String)> = Vec::new();
    for t in &model.types {
        match &t.kind {
            Kind::Enum(e) => {
                out += &if e.open.is_some() { open_enum(t, e) } else { closed_enum(t, e) };
                registry.push((t.name.clone(), codec(&t.name)));
            }
            Kind::Newtype(inner) => {
                let _ = write!(out, "\n{}public typealias {} = {}\n", kdoc(&t.doc, ""), t.name, kotlin_type(model, inner));
            }
            Kind::Union(u) if u.error => {
                out += &error_union(model, t)?;
                registry.push(("AcpException".into(), "AcpExceptionCodec".into()));
                for class in model.members(&t.name) {
                    registry.push((format!("AcpException.{class}"), error_codec(&class)));
                }
            }
            Kind::Union(_) => {
                out += &union(model, t, parents.get(t.name.as_str()).map(Vec::as_slice).unwrap_or_default());
                registry.push((t.name.clone(), codec(&t.name)));
            }
            Kind::Struct(_) => {}
        }
    }
    for class in model.classes() {
        if class.error {
            continue;
        }
        out += &class_def(model, &class);
        out += &class_codec(model, &class, class.name, &codec(class.name));
        registry.push((class.name.to_owned(), codec(class.name)));
    }
    out += "\n/** The codec of every type of the model, by its class (`Values.codec`). */\ninternal val VALUE_CODECS: Map<KClass<*>, ValueCodec<*>> = mapOf(\n";
    for (name, codec) in &registry {
        let _ = writeln!(out, "    {name}::class to {codec},");
    }
    out += ")\n";
    Ok(out)
}

const HEADER: &str = r#"
// The values of acp-inject as Kotlin values: every class, enum and union the library hands over
// or takes (the wire types of ACP and the library's own events, state and options), generated
// from the one model the Rust library and the Python and Swift bindings are generated from, with
// their codec of the boundary encoding (docs/encoding.md; the runtime is Codec.kt).

@file:Suppress("RedundantVisibilityModifier", "MemberVisibilityCanBePrivate", "unused", "NAME_SHADOWING", "UNUSED_PARAMETER")

package dev.acpinject

import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlin.reflect.KClass
"#;

/// The codec object of a type or class.
fn codec(name: &str) -> String {
    format!("{name}Codec")
}

/// Each union's parents: the unions holding it through a flattened variant (`SessionUpdate`
/// is held by `SessionEvent`, `RuntimeEvent` and `HistoryEntry`).
fn parents(model: &Model) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in &model.types {
        if let Kind::Union(u) = &t.kind {
            for v in &u.variants {
                if let Payload::Union { ty, .. } = &v.payload {
                    let list = out.entry(ty.as_str()).or_default();
                    if !list.contains(&t.name.as_str()) {
                        list.push(&t.name);
                    }
                }
            }
        }
    }
    out
}

/// A KDoc comment of `doc` (nothing when empty), each line indented by `indent`. `*/` and `/*`
/// inside the text would end or nest the comment: their slash is written as an entity.
fn kdoc(doc: &str, indent: &str) -> String {
    let doc = doc.trim();
    if doc.is_empty() {
        return String::new();
    }
    let body = doc.replace("*/", "*&#47;").replace("/*", "&#47;*");
    let lines: Vec<&str> = body.lines().collect();
    if let [one] = lines.as_slice() {
        return format!("{indent}/** {one} */\n");
    }
    let mut out = format!("{indent}/**\n");
    for l in lines {
        if l.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {l}");
        }
    }
    out + &format!("{indent} */\n")
}

/// A Kotlin string literal of `s`.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out += "\\\\",
            '"' => out += "\\\"",
            '$' => out += "\\$",
            '\n' => out += "\\n",
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A field's Kotlin name (`total_tokens` is `totalTokens`), in backticks when it is a keyword.
fn property(name: &str) -> String {
    let camel = name.to_lower_camel_case();
    const HARD: &str = "as break class continue do else false for fun if in interface is null object package return super this throw \
                        true try typealias typeof val var when while";
    if HARD.split_whitespace().any(|k| k == camel) {
        format!("`{camel}`")
    } else {
        camel
    }
}

/// An enum value's constant (`END_TURN`).
pub fn constant(variant: &str) -> String {
    variant.to_shouty_snake_case()
}

/// The Kotlin type of `ty`. No unsigned types: a `u64` or `i64` is a `Long`, a `u32`, `u16`,
/// `i32` or a count that is never 0 an `Int`.
pub fn kotlin_type(model: &Model, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "Boolean".into(),
        Ty::Int("u64" | "i64") => "Long".into(),
        Ty::Int(_) | Ty::NonZero => "Int".into(),
        Ty::Float => "Double".into(),
        Ty::String => "String".into(),
        Ty::Json => "JsonElement".into(),
        Ty::JsonObject => "JsonObject".into(),
        Ty::RequestId => "RequestId".into(),
        Ty::Named(n) => {
            let _ = model;
            n.clone()
        }
        Ty::Option(t) => format!("{}?", kotlin_type(model, t)),
        Ty::List(t) => format!("List<{}>", kotlin_type(model, t)),
        Ty::Patch(t) => format!("Patch<{}>", kotlin_type(model, t)),
    }
}

/// A field's Kotlin type: an optional field is nullable whatever the model's default says.
fn field_type(model: &Model, f: &Field) -> String {
    kotlin_type(model, &f.ty)
}

/// The expression reading a value of `ty` from the reader `r`.
fn read(model: &Model, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "r.bool()".into(),
        Ty::Int(t) => format!("r.{t}()"),
        Ty::NonZero => "r.nonZero()".into(),
        Ty::Float => "r.double()".into(),
        Ty::String => "r.string()".into(),
        Ty::Json => "r.json()".into(),
        Ty::JsonObject => "r.jsonObject()".into(),
        Ty::RequestId => "r.requestId()".into(),
        Ty::Named(n) => match model.get(n).map(|t| &t.kind) {
            Some(Kind::Newtype(inner)) => read(model, inner),
            Some(Kind::Union(u)) if u.error => "AcpExceptionCodec.read(r)".into(),
            _ => format!("{}.read(r)", codec(n)),
        },
        Ty::Option(t) => format!("(if (r.takeNil()) null else {})", read(model, t)),
        Ty::List(t) => format!("r.list {{ {} }}", read(model, t)),
        Ty::Patch(t) => format!("(if (r.takeNil()) Patch.Null else Patch.Value({}))", read(model, t)),
    }
}

/// The statement writing `v` (an expression of type `ty`) to the writer `w`; `depth` names the
/// lambdas' parameters apart.
fn write(model: &Model, ty: &Ty, v: &str, depth: usize) -> String {
    match ty {
        Ty::Bool => format!("w.bool({v})"),
        Ty::Int("u64" | "i64") => format!("w.long({v})"),
        Ty::Int(_) | Ty::NonZero => format!("w.int({v})"),
        Ty::Float => format!("w.double({v})"),
        Ty::String => format!("w.string({v})"),
        Ty::Json | Ty::JsonObject => format!("w.json({v})"),
        Ty::RequestId => format!("w.requestId({v})"),
        Ty::Named(n) => match model.get(n).map(|t| &t.kind) {
            Some(Kind::Newtype(inner)) => write(model, inner, v, depth),
            Some(Kind::Union(u)) if u.error => format!("AcpExceptionCodec.write(w, {v})"),
            _ => format!("{}.write(w, {v})", codec(n)),
        },
        Ty::Option(t) => {
            let x = format!("x{depth}");
            format!("{v}.let {{ {x} -> if ({x} == null) w.nil() else {} }}", write(model, t, &x, depth + 1))
        }
        Ty::List(t) => {
            let x = format!("x{depth}");
            format!("w.list({v}) {{ {x} -> {} }}", write(model, t, &x, depth + 1))
        }
        Ty::Patch(t) => {
            let x = format!("x{depth}");
            format!("{v}.let {{ {x} -> if ({x} is Patch.Value) {} else w.nil() }}", write(model, t, &format!("{x}.value"), depth + 1))
        }
    }
}

/// Whether a Kotlin value of `ty` is a JVM primitive (a required one is tracked with a flag
/// rather than a nullable box while decoding).
fn primitive(model: &Model, ty: &Ty) -> bool {
    match ty {
        Ty::Bool | Ty::Int(_) | Ty::NonZero | Ty::Float => true,
        Ty::Named(n) => matches!(model.get(n).map(|t| &t.kind), Some(Kind::Newtype(inner)) if primitive(model, inner)),
        _ => false,
    }
}

/// The zero of a primitive type, for the decoder's local before the field is read.
fn zero(model: &Model, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "false".into(),
        Ty::Int("u64" | "i64") => "0L".into(),
        Ty::Float => "0.0".into(),
        Ty::Named(n) => match model.get(n).map(|t| &t.kind) {
            Some(Kind::Newtype(inner)) => zero(model, inner),
            _ => "0".into(),
        },
        _ => "0".into(),
    }
}

/// Whether a field may be left out by the encoder: an optional or a patch field.
fn optional(f: &Field) -> bool {
    matches!(f.ty, Ty::Option(_) | Ty::Patch(_))
}

/// The Kotlin default argument of a field (`None`: required).
fn default_expr(model: &Model, f: &Field) -> Option<String> {
    match (&f.ty, &f.default) {
        (Ty::Option(_), _) => Some("null".into()),
        (Ty::Patch(_), _) => Some("Patch.Absent".into()),
        (_, None) => None,
        (_, Some(d)) => Some(match d {
            Default::Null => "null".into(),
            Default::Unset => "Patch.Absent".into(),
            Default::Bool(b) => b.to_string(),
            Default::Int(i) => match f.ty {
                Ty::Int("u64" | "i64") => format!("{i}L"),
                _ => i.to_string(),
            },
            Default::EmptyList => "emptyList()".into(),
            Default::Enum(wire) => {
                let Ty::Named(n) = &f.ty else { return None };
                match model.get(n).map(|t| &t.kind) {
                    Some(Kind::Enum(e)) => {
                        let v = e.values.iter().find(|v| &v.wire == wire)?;
                        format!("{n}.{}", constant(v.variant()))
                    }
                    _ => return None,
                }
            }
            Default::Struct => {
                let Ty::Named(n) = &f.ty else { return None };
                match model.class(n) {
                    Some(c) if c.fields.is_empty() => n.clone(),
                    _ => format!("{n}()"),
                }
            }
        }),
    }
}

/// The fields in constructor order: required first (as the model has them), then those with
/// defaults, so a positional call names the required ones only.
pub fn ordered<'a>(model: &Model, fields: &'a [Field]) -> Vec<&'a Field> {
    let required = fields.iter().filter(|f| default_expr(model, f).is_none());
    required.chain(fields.iter().filter(|f| default_expr(model, f).is_some())).collect()
}

fn closed_enum(t: &TypeDef, e: &super::Enum) -> String {
    let name = &t.name;
    let mut out =
        format!("\n{}public enum class {name}(\n    /** The wire string. */\n    public val value: String,\n) {{\n", kdoc(&t.doc, ""));
    for (i, v) in e.values.iter().enumerate() {
        let end = if i + 1 == e.values.len() { ";" } else { "," };
        let _ = writeln!(out, "{}    {}({}){end}", kdoc(&v.doc, "    "), constant(v.variant()), string(&v.wire));
    }
    out += "}\n";
    let arms: String = e.values.iter().map(|v| format!("        {} -> {name}.{}\n", string(&v.wire), constant(v.variant()))).collect();
    let _ = write!(
        out,
        "\ninternal object {codec} : ValueCodec<{name}>() {{\n    override fun read(r: ValueReader): {name} = when (val s = r.string()) {{\n{arms}        else -> throw DecodeException.unknownValue({n}, s)\n    }}\n\n    override fun write(w: ValueWriter, value: {name}) = w.string(value.value)\n}}\n",
        codec = codec(name),
        n = string(name),
    );
    out
}

fn open_enum(t: &TypeDef, e: &super::Enum) -> String {
    let name = &t.name;
    let doc = format!(
        "{}\n\nAn open set: a value this version does not know is kept as it is (`{name}(\"…\")`, [known] false); the known ones are the constants of the companion object.",
        t.doc
    );
    let known: Vec<String> = e.values.iter().map(|v| string(&v.wire)).collect();
    let mut out = format!(
        "\n{}@JvmInline\npublic value class {name}(\n    /** The wire string. */\n    public val value: String,\n) {{\n    /** Whether this version knows the value. */\n    public val known: Boolean\n        get() = when (value) {{\n            {} -> true\n            else -> false\n        }}\n\n    /** The wire string. */\n    override fun toString(): String = value\n\n    public companion object {{\n",
        kdoc(&doc, ""),
        known.join(", ")
    );
    for (i, v) in e.values.iter().enumerate() {
        if i > 0 {
            out += "\n";
        }
        let _ = writeln!(
            out,
            "{}        public val {}: {name} = {name}({})",
            kdoc(&v.doc, "        "),
            constant(v.variant()),
            string(&v.wire)
        );
    }
    out += "    }\n}\n";
    let _ = write!(
        out,
        "\ninternal object {codec} : ValueCodec<{name}>() {{\n    override fun read(r: ValueReader): {name} = {name}(r.string())\n\n    override fun write(w: ValueWriter, value: {name}) = w.string(value.value)\n}}\n",
        codec = codec(name)
    );
    out
}

fn union(model: &Model, t: &TypeDef, parents: &[&str]) -> String {
    let name = &t.name;
    let members = model.members(name);
    let mut doc = t.doc.clone();
    let _ = write!(doc, "\n\nOne of: {}.", members.iter().map(|m| format!("[{m}]")).collect::<Vec<_>>().join(", "));
    let supers = if parents.is_empty() { String::new() } else { format!(" : {}", parents.join(", ")) };
    let mut out = format!("\n{}public sealed interface {name}{supers}\n", kdoc(&doc, ""));
    let reads: String = members.iter().map(|m| format!("            {} -> {}.fields(r, n - 1)\n", string(m), codec(m))).collect();
    let writes: String = members.iter().map(|m| format!("        is {m} -> {}.write(w, value)\n", codec(m))).collect();
    let _ = write!(
        out,
        "\ninternal object {codec} : ValueCodec<{name}>() {{\n    override fun read(r: ValueReader): {name} {{\n        val n = r.mapHeader()\n        return when (val tag = r.tag(n)) {{\n{reads}            else -> throw DecodeException.unknownClass({n}, tag)\n        }}\n    }}\n\n    override fun write(w: ValueWriter, value: {name}) = when (value) {{\n{writes}    }}\n}}\n",
        codec = codec(name),
        n = string(name),
    );
    out
}

/// A class's declaration: a data class, or a data object when it has no fields.
fn class_def(model: &Model, c: &Class<'_>) -> String {
    let supers = if c.unions.is_empty() { String::new() } else { format!(" : {}", c.unions.join(", ")) };
    let doc = kdoc(c.doc, "");
    if c.fields.is_empty() {
        return format!("\n{doc}public data object {}{supers}\n", c.name);
    }
    let mut out = format!("\n{doc}public data class {}(\n", c.name);
    for f in ordered(model, c.fields) {
        let default = default_expr(model, f).map(|d| format!(" = {d}")).unwrap_or_default();
        let _ = writeln!(out, "{}    public val {}: {}{default},", kdoc(&f.doc, "    "), property(&f.name), field_type(model, f));
    }
    out + &format!("){supers}\n")
}

/// A class's codec object: `read` (with its tag when it is a union's variant), `fields` (the
/// remaining `n` pairs of its map, for the unions' decoders) and `write`. `kotlin` is the
/// class's Kotlin name (`AcpException.Disconnected` for the error classes).
fn class_codec(model: &Model, c: &Class<'_>, kotlin: &str, codec: &str) -> String {
    let tag = string(c.name);
    let read_body = if c.tagged {
        "        val n = r.mapHeader()\n        r.expectTag(n, TAG)\n        return fields(r, n - 1)\n".to_owned()
    } else {
        "        return fields(r, r.mapHeader())\n".to_owned()
    };
    // fields(): one local per field, then the constructor call.
    let mut locals = String::new();
    let mut arms = String::new();
    let mut args = String::new();
    for (i, f) in c.fields.iter().enumerate() {
        let ty = field_type(model, f);
        let key = string(&f.name);
        let local = format!("f{i}");
        let value = read(model, &f.ty);
        match (optional(f), default_expr(model, f)) {
            (true, Some(d)) | (false, Some(d)) => {
                let _ = writeln!(locals, "        var {local}: {ty} = {d}");
                let _ = writeln!(arms, "                {key} -> {local} = r.field(key) {{ {value} }}");
                let _ = writeln!(args, "            {} = {local},", property(&f.name));
            }
            (_, None) if primitive(model, &f.ty) => {
                let _ = writeln!(locals, "        var {local}: {ty} = {}\n        var has{i} = false", zero(model, &f.ty));
                let _ = writeln!(arms, "                {key} -> {{\n                    {local} = r.field(key) {{ {value} }}\n                    has{i} = true\n                }}");
                let _ = writeln!(
                    args,
                    "            {} = if (has{i}) {local} else throw DecodeException.missing(TAG, {key}),",
                    property(&f.name)
                );
            }
            (_, None) => {
                let _ = writeln!(locals, "        var {local}: {ty}? = null");
                let _ = writeln!(arms, "                {key} -> {local} = r.field(key) {{ {value} }}");
                let _ = writeln!(args, "            {} = {local} ?: throw DecodeException.missing(TAG, {key}),", property(&f.name));
            }
        }
    }
    let built = if c.fields.is_empty() { kotlin.to_owned() } else { format!("{kotlin}(\n{args}        )") };
    let fields_fn = if c.fields.is_empty() {
        format!(
            "    fun fields(r: ValueReader, n: Int): {kotlin} {{\n        if (n > 0) throw DecodeException.unknownField(TAG, r.key())\n        return {built}\n    }}\n"
        )
    } else {
        format!(
            "    fun fields(r: ValueReader, n: Int): {kotlin} {{\n{locals}        for (i in 0 until n) {{\n            when (val key = r.key()) {{\n{arms}                else -> throw DecodeException.unknownField(TAG, key)\n            }}\n        }}\n        return {built}\n    }}\n"
        )
    };
    // write(): the count of pairs, the tag, then each field (an absent optional one left out).
    let mut count = (c.fields.iter().filter(|f| !optional(f)).count() + usize::from(c.tagged)).to_string();
    let mut binds = String::new();
    let mut writes = String::new();
    if c.tagged {
        writes += "        w.tag(TAG)\n";
    }
    for (i, f) in c.fields.iter().enumerate() {
        let key = string(&f.name);
        let get = format!("value.{}", property(&f.name));
        match &f.ty {
            Ty::Option(inner) => {
                let _ = writeln!(binds, "        val f{i} = {get}");
                count += &format!(" + (if (f{i} != null) 1 else 0)");
                let _ = writeln!(
                    writes,
                    "        if (f{i} != null) {{\n            w.key({key})\n            {}\n        }}",
                    write(model, inner, &format!("f{i}"), 0)
                );
            }
            Ty::Patch(inner) => {
                let _ = writeln!(binds, "        val f{i} = {get}");
                count += &format!(" + (if (f{i} is Patch.Absent) 0 else 1)");
                let _ = writeln!(
                    writes,
                    "        when (f{i}) {{\n            is Patch.Absent -> {{}}\n            is Patch.Null -> {{\n                w.key({key})\n                w.nil()\n            }}\n            is Patch.Value -> {{\n                w.key({key})\n                {}\n            }}\n        }}",
                    write(model, inner, &format!("f{i}.value"), 0)
                );
            }
            ty => {
                let _ = writeln!(writes, "        w.key({key})\n        {}", write(model, ty, &get, 0));
            }
        }
    }
    format!(
        "\ninternal object {codec} : ValueCodec<{kotlin}>() {{\n    private const val TAG = {tag}\n\n    override fun read(r: ValueReader): {kotlin} {{\n{read_body}    }}\n\n{fields_fn}\n    override fun write(w: ValueWriter, value: {kotlin}) {{\n{binds}        w.map({count})\n{writes}    }}\n}}\n"
    )
}

/// The error union: `sealed class AcpException`, one subclass per class (with `equals` and
/// `hashCode` by its fields), and its codec.
fn error_union(model: &Model, t: &TypeDef) -> Result<String, Error> {
    let Kind::Union(u) = &t.kind else { return Ok(String::new()) };
    let classes: Vec<Class<'_>> = u
        .variants
        .iter()
        .filter_map(|v| if let Payload::Class { class, .. } = &v.payload { model.class(class) } else { None })
        .collect();
    let mut doc = t.doc.clone();
    let _ =
        write!(doc, "\n\nOne of: {}.", classes.iter().map(|c| format!("[AcpException.{}]", c.name)).collect::<Vec<_>>().join(", "));
    let mut out = format!("\n{}public sealed class AcpException(message: String) : Exception(message) {{\n", kdoc(&doc, ""));
    for c in &classes {
        let fields = ordered(model, c.fields);
        let message = if fields.iter().any(|f| f.name == "detail") {
            "detail".to_owned()
        } else {
            fields.first().map(|f| format!("{}.toString()", property(&f.name))).unwrap_or_else(|| string(c.name))
        };
        let _ = writeln!(out, "{}    public class {}(", kdoc(c.doc, "    "), c.name);
        for f in &fields {
            let default = default_expr(model, f).map(|d| format!(" = {d}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}        public val {}: {}{default},",
                kdoc(&f.doc, "        "),
                property(&f.name),
                field_type(model, f)
            );
        }
        let names: Vec<String> = fields.iter().map(|f| property(&f.name)).collect();
        let equal: String = names.iter().map(|n| format!(" && {n} == other.{n}")).collect();
        let _ = write!(
            out,
            "    ) : AcpException({message}) {{\n        override fun equals(other: Any?): Boolean = other is {class}{equal}\n\n        override fun hashCode(): Int = listOf<Any?>({class:?}, {list}).hashCode()\n    }}\n\n",
            class = c.name,
            list = names.join(", "),
        );
    }
    out.truncate(out.trim_end().len());
    out += "\n}\n";
    let reads: String =
        classes.iter().map(|c| format!("            {} -> {}.fields(r, n - 1)\n", string(c.name), error_codec(c.name))).collect();
    let writes: String =
        classes.iter().map(|c| format!("        is AcpException.{} -> {}.write(w, value)\n", c.name, error_codec(c.name))).collect();
    let _ = write!(
        out,
        "\ninternal object AcpExceptionCodec : ValueCodec<AcpException>() {{\n    override fun read(r: ValueReader): AcpException {{\n        val n = r.mapHeader()\n        return when (val tag = r.tag(n)) {{\n{reads}            else -> throw DecodeException.unknownClass({n}, tag)\n        }}\n    }}\n\n    override fun write(w: ValueWriter, value: AcpException) = when (value) {{\n{writes}    }}\n}}\n",
        n = string(&t.name),
    );
    for c in &classes {
        out += &class_codec(model, c, &format!("AcpException.{}", c.name), &error_codec(c.name));
    }
    Ok(out)
}

fn error_codec(class: &str) -> String {
    format!("AcpException{class}Codec")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered() -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let schema = std::fs::read_to_string(root.join("spec/acp-inject.schema.json")).expect("the canonical schema");
        let described = std::fs::read_to_string(root.join("spec/values.json")).expect("the described values");
        let expansion = crate::generate_formatted(&schema).expect("generates");
        render(&Model::build(&described, &expansion).expect("the model builds"), "preamble").expect("renders")
    }

    #[test]
    fn unions_are_sealed_interfaces_nested_as_the_model_flattens_them() {
        let kt = rendered();
        for line in [
            "public sealed interface SessionActivity\n",
            "public sealed interface SessionEvent : SessionActivity\n",
            "public sealed interface SessionUpdate : SessionEvent, RuntimeEvent, HistoryEntry\n",
            "public sealed interface StateUpdate : SessionUpdate\n",
            ") : Event, SessionActivity\n",
            "public data object SessionClosed : SessionEvent\n",
            "@JvmInline\npublic value class StopReason(\n",
            "        public val END_TURN: StopReason = StopReason(\"end_turn\")\n",
            "    QUEUE(\"queue\"),\n",
            "public sealed class AcpException(message: String) : Exception(message) {\n",
            "    public val totalTokens: Long,\n",
            "    public val inputTokens: Long = 0L,\n",
            "    public val content: Patch<List<ContentBlock>> = Patch.Absent,\n",
            "public data class OtherSessionUpdate(\n",
        ] {
            assert!(kt.contains(line), "no {line:?} in the Kotlin values");
        }
        for unsigned in ["ULong", "UInt", "UShort", ".v1"] {
            assert!(!kt.contains(unsigned), "{unsigned} in the Kotlin values");
        }
    }

    #[test]
    fn docs_cannot_end_their_comment_and_strings_are_escaped() {
        assert_eq!(kdoc("a */ b /* c", ""), "/** a *&#47; b &#47;* c */\n");
        assert_eq!(kdoc("one\n\ntwo", "  "), "  /**\n   * one\n   *\n   * two\n   */\n");
        assert_eq!(kdoc("", ""), "");
        assert_eq!(string("$ \"x\" \\"), "\"\\$ \\\"x\\\" \\\\\"");
        assert_eq!(property("total_tokens"), "totalTokens");
        assert_eq!(property("in"), "`in`");
        assert_eq!(constant("EndTurn"), "END_TURN");
    }
}
