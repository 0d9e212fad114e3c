//! The Rust side of the boundary encoding: an encoder and a decoder for every type of the
//! model, written for the FFI crate (`crates/ffi/src/generated_values.rs`).
//!
//! The generated code uses the FFI crate's codec runtime (`crate::codec`: `Writer`, `Reader`,
//! the `Encode` and `Decode` traits and their impls for scalars, lists, options and JSON) and
//! names the types the model describes by their Rust paths. Per class it writes `enc_<Class>`
//! (the class's fields, by reference, into one map) and `dec_<Class>` (the map's remaining
//! pairs into a tuple of the fields); per type, `Encode` and `Decode` impls built on them; per
//! union, `tagged_<Union>` (the value of a class, when the class is one of the union's). A wire
//! struct is built with `new` and its other fields assigned (the wire structs are
//! `#[non_exhaustive]`); the others with a struct literal.

use std::fmt::Write as _;

use super::{Build, Class, Default, Field, Kind, Model, Payload, Ty, TypeDef};
use crate::Error;

const WIRE: &str = "acp_inject_core::wire";

/// The generated Rust source (formatted, without a preamble).
pub fn render(model: &Model) -> Result<String, Error> {
    let mut out = String::new();
    out += "use crate::codec::{Decode, DecodeError, Encode, Reader, Writer};\n\n";
    // The open branches' classes are written by the runtime (`enc_other`, `dec_other`).
    for class in model.classes().into_iter().filter(|c| !model.is_other(c.name)) {
        out += &enc_class(model, &class);
        out += &dec_class(model, &class);
    }
    for t in &model.types {
        out += &match &t.kind {
            Kind::Struct(_) => struct_impls(model, t),
            Kind::Union(_) => union_impls(model, t),
            Kind::Enum(_) => enum_impls(t),
            Kind::Newtype(inner) => newtype_impls(model, t, inner),
        };
    }
    let file: syn::File = syn::parse_file(&out).map_err(|e| Error::Syntax(format!("the value codec: {e}")))?;
    Ok(prettyplease::unparse(&file))
}

/// The Rust type of `ty`.
pub fn rust_type(model: &Model, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "bool".into(),
        Ty::Int(t) => (*t).into(),
        Ty::NonZero => "::std::num::NonZeroU32".into(),
        Ty::Float => "f64".into(),
        Ty::String => "::std::string::String".into(),
        Ty::Json => "::serde_json::Value".into(),
        Ty::JsonObject => "::serde_json::Map<::std::string::String, ::serde_json::Value>".into(),
        Ty::RequestId => format!("{WIRE}::RequestId"),
        Ty::Named(n) => model.get(n).map(|t| t.rust.clone()).unwrap_or_else(|| n.clone()),
        Ty::Option(t) => format!("::std::option::Option<{}>", rust_type(model, t)),
        Ty::List(t) => format!("::std::vec::Vec<{}>", rust_type(model, t)),
        Ty::Patch(t) => format!("{WIRE}::Patch<{}>", rust_type(model, t)),
    }
}

fn field_type(model: &Model, f: &Field) -> String {
    rust_type(model, &f.ty)
}

/// `enc_<Class>(w, fields…)`: the class's map, its tag first when it has one.
fn enc_class(model: &Model, c: &Class<'_>) -> String {
    let params: String = c.fields.iter().map(|f| format!(", {}: &{}", ident(&f.name), field_type(model, f))).collect();
    let mut count = format!("{}", c.fields.iter().filter(|f| !omittable(f)).count() + usize::from(c.tagged));
    for f in c.fields.iter().filter(|f| omittable(f)) {
        let name = ident(&f.name);
        count += &match f.ty {
            Ty::Patch(_) => format!(" + u32::from(!matches!({name}, {WIRE}::Patch::Absent))"),
            _ => format!(" + u32::from({name}.is_some())"),
        };
    }
    let mut body = format!("w.map({count});\n");
    if c.tagged {
        let _ = writeln!(body, "w.tag({:?});", c.name);
    }
    for f in c.fields {
        let (name, key) = (ident(&f.name), &f.name);
        body += &match f.ty {
            Ty::Option(_) => format!("if let Some(v) = {name} {{ w.key({key:?}); v.encode(w); }}\n"),
            Ty::Patch(_) => format!(
                "match {name} {{ {WIRE}::Patch::Absent => {{}}, {WIRE}::Patch::Null => {{ w.key({key:?}); w.nil(); }}, {WIRE}::Patch::Value(v) => {{ w.key({key:?}); v.encode(w); }} }}\n"
            ),
            _ => format!("w.key({key:?}); {name}.encode(w);\n"),
        };
    }
    format!("#[allow(non_snake_case)]\npub(crate) fn enc_{}(w: &mut Writer{params}) {{\n{body}}}\n\n", c.name)
}

/// Fields an encoder leaves out when they are absent.
fn omittable(f: &Field) -> bool {
    matches!(f.ty, Ty::Option(_) | Ty::Patch(_))
}

/// `dec_<Class>(r, n)`: the `n` remaining pairs of the class's map, as a tuple of its fields.
fn dec_class(model: &Model, c: &Class<'_>) -> String {
    let types: Vec<String> = c.fields.iter().map(|f| field_type(model, f)).collect();
    let tuple = format!("({})", types.iter().map(|t| format!("{t},")).collect::<String>());
    let mut body = String::new();
    for (f, t) in c.fields.iter().zip(&types) {
        let name = ident(&f.name);
        body += &match f.ty {
            Ty::Option(_) => format!("let mut {name}: {t} = None;\n"),
            Ty::Patch(_) => format!("let mut {name}: {t} = {WIRE}::Patch::Absent;\n"),
            _ => format!("let mut {name}: ::std::option::Option<{t}> = None;\n"),
        };
    }
    let mut arms = String::new();
    for f in c.fields {
        let (name, key) = (ident(&f.name), &f.name);
        let read = format!("Decode::decode(r).map_err(|e| e.at({key:?}))?");
        arms += &match f.ty {
            Ty::Option(_) => format!("{key:?} => {name} = {read},\n"),
            Ty::Patch(_) => {
                format!("{key:?} => {name} = if r.take_nil() {{ {WIRE}::Patch::Null }} else {{ {WIRE}::Patch::Value({read}) }},\n")
            }
            _ => format!("{key:?} => {name} = Some({read}),\n"),
        };
    }
    let _ = writeln!(
        body,
        "for _ in 0..n {{ let key = r.key()?; match key {{ {arms} other => return Err(DecodeError::unknown_field({:?}, other)), }} }}",
        c.name
    );
    let values: Vec<String> = c
        .fields
        .iter()
        .map(|f| {
            let name = ident(&f.name);
            match (&f.ty, &f.default) {
                (Ty::Option(_) | Ty::Patch(_), _) => name,
                (_, None) => format!("{name}.ok_or_else(|| DecodeError::missing({:?}, {:?}))?", c.name, f.name),
                (_, Some(d)) => format!("match {name} {{ Some(v) => v, None => {} }}", default_expr(model, f, d)),
            }
        })
        .collect();
    let _ = write!(body, "Ok(({}))", values.iter().map(|v| format!("{v},")).collect::<String>());
    let unused = if c.fields.is_empty() { "let _ = &mut *r;\n" } else { "" };
    format!(
        "#[allow(non_snake_case, unused_mut)]\npub(crate) fn dec_{}(r: &mut Reader<'_>, n: u32) -> Result<{tuple}, DecodeError> {{\n{unused}{body}\n}}\n\n",
        c.name
    )
}

/// The Rust value of a field's default.
fn default_expr(model: &Model, f: &Field, d: &Default) -> String {
    match d {
        Default::Null => "None".into(),
        Default::Unset => format!("{WIRE}::Patch::Absent"),
        Default::Bool(b) => b.to_string(),
        Default::Int(i) => format!("{i}"),
        Default::EmptyList => "::std::vec::Vec::new()".into(),
        Default::Enum(wire) => {
            let Ty::Named(n) = &f.ty else { return "compile_error!(\"an enum default of a non-enum\")".into() };
            match model.get(n).map(|t| (&t.rust, &t.kind)) {
                Some((rust, Kind::Enum(e))) => {
                    e.values.iter().find(|v| &v.wire == wire).map(|v| format!("{rust}::{}", v.build)).unwrap_or_default()
                }
                _ => "compile_error!(\"an enum default of a non-enum\")".into(),
            }
        }
        // The struct whose fields all take their defaults: the decoding of an empty map.
        Default::Struct => "Decode::decode(&mut Reader::new(&[0x80]))?".into(),
    }
}

/// The expression building a struct type's value from its fields (in scope by name).
fn build_struct(model: &Model, t: &TypeDef) -> String {
    let Kind::Struct(s) = &t.kind else { return String::new() };
    let value = |f: &Field| if f.boxed { format!("::std::boxed::Box::new({})", ident(&f.name)) } else { ident(&f.name) };
    match &s.build {
        Build::Literal => {
            let fields: String = s.fields.iter().map(|f| format!("{}: {}, ", ident(&f.name), value(f))).collect();
            format!("{} {{ {fields} }}", t.rust)
        }
        Build::New(required) => {
            let args: Vec<String> = required.iter().map(|r| ident(r)).collect();
            let mut out = format!("{{ let mut v = {}::new({});\n", t.rust, args.join(", "));
            for f in s.fields.iter().filter(|f| !required.contains(&f.name)) {
                let _ = writeln!(out, "v.{} = {};", ident(&f.name), value(f));
            }
            let _ = model;
            out + "v }"
        }
    }
}

fn bindings(fields: &[Field]) -> String {
    fields.iter().map(|f| format!("{},", ident(&f.name))).collect()
}

fn struct_impls(model: &Model, t: &TypeDef) -> String {
    let Kind::Struct(s) = &t.kind else { return String::new() };
    let class = model.class(&t.name).unwrap_or_else(|| unreachable!("every struct type is a class"));
    let refs: String = s.fields.iter().map(|f| format!(", &self.{}", ident(&f.name))).collect();
    let take_tag = if class.tagged { format!("r.expect_tag({:?})?;\nlet n = n - 1;\n", t.name) } else { String::new() };
    format!(
        "impl Encode for {rust} {{\nfn encode(&self, w: &mut Writer) {{ enc_{name}(w{refs}); }}\n}}\n\n\
         impl Decode for {rust} {{\nfn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {{\nlet n = r.map_len()?;\n{take_tag}let ({b}) = dec_{name}(r, n)?;\nOk(build_{name}({b}))\n}}\n}}\n\n\
         #[allow(non_snake_case, clippy::too_many_arguments)]\nfn build_{name}({params}) -> {rust} {{ {build} }}\n\n",
        rust = t.rust,
        name = t.name,
        b = bindings(&s.fields),
        params = s.fields.iter().map(|f| format!("{}: {}", ident(&f.name), field_type(model, f))).collect::<Vec<_>>().join(", "),
        build = build_struct(model, t),
    )
}

fn union_impls(model: &Model, t: &TypeDef) -> String {
    let Kind::Union(u) = &t.kind else { return String::new() };
    let rust = &t.rust;
    let mut enc = String::new();
    let mut dec = String::new();
    let mut nested = String::new();
    for v in &u.variants {
        let path = format!("{rust}::{}", v.rust);
        match &v.payload {
            Payload::Struct { ty, boxed } => {
                let _ = writeln!(enc, "{path}(v) => v.encode(w),");
                let inner = model.get(ty).map(|t| bindings(struct_fields(t))).unwrap_or_default();
                let built = format!("build_{ty}({inner})");
                let built = if *boxed { format!("::std::boxed::Box::new({built})") } else { built };
                let _ = writeln!(dec, "{ty:?} => {{ let ({inner}) = dec_{ty}(r, n)?; {path}({built}) }}");
            }
            Payload::Union { ty, boxed, field } => {
                let pattern = match field {
                    Some(f) => format!("{path} {{ {}: v }}", ident(f)),
                    None => format!("{path}(v)"),
                };
                let _ = writeln!(enc, "{pattern} => v.encode(w),");
                let value = if *boxed { "::std::boxed::Box::new(v)" } else { "v" };
                let built = match field {
                    Some(f) => format!("{path} {{ {}: {value} }}", ident(f)),
                    None => format!("{path}({value})"),
                };
                let _ = writeln!(nested, "if let Some(v) = tagged_{ty}(tag, r, n)? {{ return Ok(Some({built})); }}");
            }
            Payload::Class { class, fields, tuple } => {
                let b = bindings(fields);
                let (pattern, built) = if fields.is_empty() {
                    (path.clone(), path.clone())
                } else if *tuple {
                    (format!("{path}({b})"), format!("{path}({})", values(fields)))
                } else {
                    (format!("{path} {{ {b} }}"), format!("{path} {{ {} }}", named_values(fields)))
                };
                let _ = writeln!(enc, "{pattern} => enc_{class}(w{}),", args(fields));
                let _ = writeln!(dec, "{class:?} => {{ let ({b}) = dec_{class}(r, n)?; {built} }}");
            }
            Payload::Like { class } => {
                let Some(c) = model.class(class) else { continue };
                let b = bindings(c.fields);
                let _ = writeln!(enc, "{path} {{ {b} }} => enc_{class}(w{}),", args(c.fields));
                let _ = writeln!(dec, "{class:?} => {{ let ({b}) = dec_{class}(r, n)?; {path} {{ {} }} }}", named_values(c.fields));
            }
        }
    }
    if let Some(o) = &u.other {
        let _ = writeln!(enc, "{rust}::Other(v) => crate::codec::enc_other(w, {:?}, {:?}, v),", o.class, o.tag_member);
        let _ = writeln!(dec, "{:?} => {rust}::Other(crate::codec::dec_other(r, n)?),", o.class);
    }
    format!(
        "impl Encode for {rust} {{\nfn encode(&self, w: &mut Writer) {{\nmatch self {{\n{enc}}}\n}}\n}}\n\n\
         impl Decode for {rust} {{\nfn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {{\nlet n = r.map_len()?;\nlet tag = r.tag()?;\n\
         tagged_{name}(tag, r, n - 1)?.ok_or_else(|| DecodeError::unknown_class({name:?}, tag))\n}}\n}}\n\n\
         /// The value of class `tag` when it is one of this union's (`n` pairs of its map left).\n\
         #[allow(non_snake_case)]\npub(crate) fn tagged_{name}(tag: &str, r: &mut Reader<'_>, n: u32) -> Result<Option<{rust}>, DecodeError> {{\n\
         Ok(Some(match tag {{\n{dec}_ => {{\n{nested}return Ok(None);\n}}\n}}))\n}}\n\n",
        name = t.name,
    )
}

fn struct_fields(t: &TypeDef) -> &[Field] {
    match &t.kind {
        Kind::Struct(s) => &s.fields,
        _ => &[],
    }
}

fn args(fields: &[Field]) -> String {
    fields.iter().map(|f| format!(", {}", ident(&f.name))).collect()
}

fn values(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| if f.boxed { format!("::std::boxed::Box::new({})", ident(&f.name)) } else { ident(&f.name) })
        .collect::<Vec<_>>()
        .join(", ")
}

fn named_values(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| {
            let name = ident(&f.name);
            if f.boxed {
                format!("{name}: ::std::boxed::Box::new({name})")
            } else {
                name
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn enum_impls(t: &TypeDef) -> String {
    let Kind::Enum(e) = &t.kind else { return String::new() };
    let rust = &t.rust;
    let mut enc = String::new();
    let mut dec = String::new();
    for v in &e.values {
        let _ = writeln!(enc, "{rust}::{} => {:?},", v.rust, v.wire);
        let _ = writeln!(dec, "{:?} => {rust}::{},", v.wire, v.build);
    }
    let (enc_other, dec_other) = match &e.open {
        Some(other) => (format!("{rust}::{other}(s) => s.as_str(),\n"), format!("other => {rust}::{other}(other.to_owned()),\n")),
        None => (String::new(), format!("other => return Err(DecodeError::unknown_value({:?}, other)),\n", t.name)),
    };
    format!(
        "impl Encode for {rust} {{\nfn encode(&self, w: &mut Writer) {{\nw.str(match self {{\n{enc}{enc_other}}});\n}}\n}}\n\n\
         impl Decode for {rust} {{\nfn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {{\nOk(match r.str()? {{\n{dec}{dec_other}}})\n}}\n}}\n\n"
    )
}

fn newtype_impls(model: &Model, t: &TypeDef, inner: &Ty) -> String {
    let rust = &t.rust;
    let inner_rust = rust_type(model, inner);
    // A wire newtype's value is public (`MessageId(pub String)`); a described one is reached
    // through `AsRef` and built with `From` (`ConnId`).
    let (get, build) = match t.origin {
        super::Origin::Wire => ("self.0.encode(w)".to_owned(), format!("{rust}(Decode::decode(r)?)")),
        super::Origin::Described => (
            "<Self as ::std::convert::AsRef<str>>::as_ref(self).encode(w)".to_owned(),
            format!("<{rust} as ::std::convert::From<{inner_rust}>>::from(Decode::decode(r)?)"),
        ),
    };
    format!(
        "impl Encode for {rust} {{\nfn encode(&self, w: &mut Writer) {{ {get}; }}\n}}\n\n\
         impl Decode for {rust} {{\nfn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {{ Ok({build}) }}\n}}\n\n"
    )
}

/// A field's name as a Rust identifier (`type` is `r#type`).
fn ident(name: &str) -> String {
    match name {
        "type" | "match" | "ref" | "mod" | "use" | "fn" | "impl" | "in" | "loop" | "move" | "self" | "static" | "struct" | "trait" => {
            format!("r#{name}")
        }
        _ => name.to_owned(),
    }
}
