//! Reading the wire types from the expansion of the canonical schema (what
//! [`crate::generate_formatted`] writes): the generator's own output, in memory.

use std::collections::BTreeMap;

use syn::{Fields, Item, Type};

use super::{
    doc_text, model_err, Build, Default, Enum, EnumValue, Field, Kind, Origin, Other, Payload, Struct, Ty, TypeDef, Union, Variant,
};
use crate::Error;

/// Items of the expansion that are support code, not wire types (`RequestId` is a builtin of
/// the model).
const SKIP: &[&str] = &["Patch", "Unknown", "RequestId"];

/// Required members every language's constructor fills in, beyond the optional ones: `(type,
/// member, default)`. A turn's usage needs only its total (`Usage(total_tokens=150)`); the
/// input and output counts an agent does not break down are 0.
const DEFAULTS: &[(&str, &str, i64)] = &[("Usage", "input_tokens", 0), ("Usage", "output_tokens", 0)];

/// Where the wire types are, for the generated Rust code.
const WIRE: &str = "acp_inject_core::wire";

/// Every wire type of `expansion`, in file order.
pub(super) fn parse(expansion: &str) -> Result<Vec<TypeDef>, Error> {
    let file: syn::File = syn::parse_str(expansion).map_err(|e| Error::Syntax(e.to_string()))?;
    let mut known: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut tags: BTreeMap<String, String> = BTreeMap::new();
    let mut new_params: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for item in &file.items {
        let Item::Impl(i) = item else { continue };
        if i.trait_.is_some() {
            continue;
        }
        let Type::Path(p) = &*i.self_ty else { continue };
        let Some(name) = p.path.get_ident().map(ToString::to_string) else { continue };
        for member in &i.items {
            match member {
                syn::ImplItem::Const(c) if c.ident == "KNOWN" => {
                    known.insert(name.clone(), string_literals(&c.expr));
                }
                syn::ImplItem::Const(c) if c.ident == "TAG" => {
                    if let Some(t) = string_literals(&c.expr).into_iter().next() {
                        tags.insert(name.clone(), t);
                    }
                }
                syn::ImplItem::Fn(f) if f.sig.ident == "new" => {
                    let params = f
                        .sig
                        .inputs
                        .iter()
                        .filter_map(|a| match a {
                            syn::FnArg::Typed(t) => match &*t.pat {
                                syn::Pat::Ident(id) => Some(id.ident.to_string()),
                                _ => None,
                            },
                            _ => None,
                        })
                        .collect();
                    new_params.insert(name.clone(), params);
                }
                _ => {}
            }
        }
    }

    let mut out = Vec::new();
    for item in &file.items {
        match item {
            Item::Struct(s) if !SKIP.contains(&s.ident.to_string().as_str()) => {
                let name = s.ident.to_string();
                let rust = format!("{WIRE}::{name}");
                match &s.fields {
                    Fields::Named(named) => {
                        let required = new_params.get(&name).cloned().unwrap_or_default();
                        let fields = named
                            .named
                            .iter()
                            .map(|f| {
                                let fname = f.ident.as_ref().map(ToString::to_string).unwrap_or_default();
                                let owner = format!("{name}.{fname}");
                                let ty = ty(&f.ty, &owner)?;
                                let given =
                                    DEFAULTS.iter().find(|(t, m, _)| *t == name && *m == fname).map(|(_, _, v)| Default::Int(*v));
                                let default = if required.contains(&fname) {
                                    given
                                } else {
                                    Some(given.map_or_else(|| default_of(&ty, &owner), Ok)?)
                                };
                                Ok(Field { name: fname, ty, doc: doc_text(&f.attrs), default, boxed: false })
                            })
                            .collect::<Result<Vec<_>, Error>>()?;
                        let kind = Kind::Struct(Struct { fields, build: Build::New(required), error: false });
                        out.push(TypeDef { name, rust, doc: doc_text(&s.attrs), kind, origin: Origin::Wire });
                    }
                    Fields::Unnamed(u) if u.unnamed.len() == 1 => {
                        let inner = ty(&u.unnamed[0].ty, &name)?;
                        out.push(TypeDef { name, rust, doc: doc_text(&s.attrs), kind: Kind::Newtype(inner), origin: Origin::Wire });
                    }
                    _ => {}
                }
            }
            Item::Enum(e) if !SKIP.contains(&e.ident.to_string().as_str()) && e.generics.params.is_empty() => {
                let name = e.ident.to_string();
                let rust = format!("{WIRE}::{name}");
                let kind = if e.variants.iter().all(|v| matches!(v.fields, Fields::Unit)) || is_open(e) {
                    string_enum(e, known.get(&name).ok_or_else(|| model_err(&name, "has no `KNOWN` constant"))?)?
                } else {
                    union(e, tags.get(&name))?
                };
                out.push(TypeDef { name, rust, doc: doc_text(&e.attrs), kind, origin: Origin::Wire });
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Whether `e` is an open string enum: unit variants, then a last variant holding a `String`
/// (`Other(String)`; `Unknown(String)` where `other` is a known value).
fn is_open(e: &syn::ItemEnum) -> bool {
    let Some(last) = e.variants.last() else { return false };
    let holds_string = matches!(&last.fields, Fields::Unnamed(u) if u.unnamed.len() == 1
        && last_ident(&u.unnamed[0].ty).as_deref() == Some("String"));
    holds_string && e.variants.len() > 1 && e.variants.iter().rev().skip(1).all(|v| matches!(v.fields, Fields::Unit))
}

fn string_enum(e: &syn::ItemEnum, known: &[String]) -> Result<Kind, Error> {
    let name = e.ident.to_string();
    let units: Vec<&syn::Variant> = e.variants.iter().filter(|v| matches!(v.fields, Fields::Unit)).collect();
    if units.len() != known.len() {
        return Err(model_err(&name, &format!("{} variants, {} known values", units.len(), known.len())));
    }
    let values = units
        .iter()
        .zip(known)
        .map(|(v, wire)| {
            let variant = v.ident.to_string();
            EnumValue { rust: variant.clone(), build: variant, wire: wire.clone(), doc: doc_text(&v.attrs) }
        })
        .collect();
    let open = e.variants.iter().find(|v| !matches!(v.fields, Fields::Unit)).map(|v| v.ident.to_string());
    Ok(Kind::Enum(Enum { values, open }))
}

fn union(e: &syn::ItemEnum, tag: Option<&String>) -> Result<Kind, Error> {
    let name = e.ident.to_string();
    let mut variants = Vec::new();
    let mut other = None;
    for v in &e.variants {
        let owner = format!("{name}::{}", v.ident);
        let Fields::Unnamed(u) = &v.fields else {
            return Err(model_err(&owner, "a union variant of the wire holds one value"));
        };
        if u.unnamed.len() != 1 {
            return Err(model_err(&owner, "a union variant of the wire holds one value"));
        }
        let (inner, boxed) = unbox(&u.unnamed[0].ty);
        let inner_name = last_ident(inner).ok_or_else(|| model_err(&owner, "holds an unnamed type"))?;
        if inner_name == "Unknown" {
            let tag_member = tag.ok_or_else(|| model_err(&name, "has an open branch and no `TAG`"))?;
            other = Some(Other { tag_member: tag_member.clone(), class: format!("Other{name}") });
            continue;
        }
        // Struct or union: settled once the whole model is read (`Model::build`).
        variants.push(Variant {
            rust: v.ident.to_string(),
            doc: doc_text(&v.attrs),
            payload: Payload::Struct { ty: inner_name, boxed },
        });
    }
    Ok(Kind::Union(Union { variants, other, error: false }))
}

fn unbox(ty: &Type) -> (&Type, bool) {
    if let Some((seg, args)) = segment(ty) {
        if seg == "Box" {
            if let Some(inner) = args.into_iter().next() {
                return (inner, true);
            }
        }
    }
    (ty, false)
}

fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// The last path segment's name and its type arguments.
fn segment(ty: &Type) -> Option<(String, Vec<&Type>)> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    let args = match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((seg.ident.to_string(), args))
}

fn ty(t: &Type, owner: &str) -> Result<Ty, Error> {
    let (name, args) = segment(t).ok_or_else(|| model_err(owner, "has a type that is not a path"))?;
    let one = |args: &[&Type]| -> Result<Ty, Error> {
        match args {
            [inner] => ty(inner, owner),
            _ => Err(model_err(owner, &format!("`{name}` takes one type"))),
        }
    };
    Ok(match name.as_str() {
        "Option" => Ty::Option(Box::new(one(&args)?)),
        "Vec" => Ty::List(Box::new(one(&args)?)),
        "Patch" => Ty::Patch(Box::new(one(&args)?)),
        "String" => Ty::String,
        "bool" => Ty::Bool,
        "u64" => Ty::Int("u64"),
        "i64" => Ty::Int("i64"),
        "u32" => Ty::Int("u32"),
        "u16" => Ty::Int("u16"),
        "i32" => Ty::Int("i32"),
        "f64" => Ty::Float,
        "Value" => Ty::Json,
        "Map" => Ty::JsonObject,
        "RequestId" => Ty::RequestId,
        other if args.is_empty() => Ty::Named(other.to_owned()),
        other => return Err(model_err(owner, &format!("has the generic type `{other}`, which the model does not know"))),
    })
}

/// The default a wire field not taken by `new` starts with (`Default::default()` of its type).
fn default_of(ty: &Ty, owner: &str) -> Result<Default, Error> {
    Ok(match ty {
        Ty::Option(_) => Default::Null,
        Ty::Patch(_) => Default::Unset,
        Ty::List(_) => Default::EmptyList,
        Ty::Bool => Default::Bool(false),
        Ty::Int(_) => Default::Int(0),
        _ => return Err(model_err(owner, "is optional, and the model knows no default for its type")),
    })
}

fn string_literals(expr: &syn::Expr) -> Vec<String> {
    match expr {
        syn::Expr::Reference(r) => string_literals(&r.expr),
        syn::Expr::Array(a) => a
            .elems
            .iter()
            .filter_map(|e| match e {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            })
            .collect(),
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => vec![s.value()],
        _ => Vec::new(),
    }
}

/// How the wire types of `expansion` are written in ACP's JSON: each struct field's member name
/// (`#[serde(rename = "totalTokens")]`, else the field's own name) and each tagged union's tag
/// member and variant tags (`TAG` and `fn tag`), for languages whose value types also read and
/// write the wire's JSON.
pub(super) fn json_forms(expansion: &str) -> Result<super::WireJson, Error> {
    let file: syn::File = syn::parse_str(expansion).map_err(|e| Error::Syntax(e.to_string()))?;
    let mut out = super::WireJson::default();
    for item in &file.items {
        match item {
            Item::Struct(s) if !SKIP.contains(&s.ident.to_string().as_str()) => {
                let Fields::Named(named) = &s.fields else { continue };
                for f in &named.named {
                    let Some(field) = f.ident.as_ref().map(ToString::to_string) else { continue };
                    let member = serde_rename(&f.attrs).unwrap_or_else(|| field.clone());
                    out.members.insert((s.ident.to_string(), field), member);
                }
            }
            Item::Impl(i) if i.trait_.is_none() => {
                let Type::Path(p) = &*i.self_ty else { continue };
                let Some(name) = p.path.get_ident().map(ToString::to_string) else { continue };
                let mut member = None;
                let mut values = BTreeMap::new();
                for it in &i.items {
                    match it {
                        syn::ImplItem::Const(c) if c.ident == "TAG" => member = string_literals(&c.expr).into_iter().next(),
                        syn::ImplItem::Fn(f) if f.sig.ident == "tag" => {
                            for stmt in &f.block.stmts {
                                let syn::Stmt::Expr(syn::Expr::Match(m), _) = stmt else { continue };
                                for arm in &m.arms {
                                    let syn::Pat::TupleStruct(t) = &arm.pat else { continue };
                                    let Some(variant) = t.path.segments.last().map(|s| s.ident.to_string()) else { continue };
                                    if let Some(tag) = string_literals(&arm.body).into_iter().next() {
                                        values.insert(variant, tag);
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(member) = member {
                    out.tags.insert(name, super::WireTag { member, values });
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The `rename` of a field's `#[serde(…)]` attributes, if any.
fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut found = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let lit: syn::LitStr = meta.value()?.parse()?;
                found = Some(lit.value());
            } else if meta.input.peek(syn::Token![=]) {
                // Another `key = value`: skip its value.
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}
