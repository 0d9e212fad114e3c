//! The syn pass over typify's output: where typify's choices differ from what the wire needs.
//!
//! - typify sorts struct members alphabetically; serde writes members in declaration order,
//!   so the schema's order is restored (messages read naturally: `sessionId` first).
//! - `x-tristate` members (absent ≠ `null`) become `Patch<T>` instead of `Option<T>`.
//! - Optional arrays where `[]` is valid become `Option<Vec<T>>` (typify's `Vec<T>`, skipped
//!   when empty, would re-encode `[]` as absent).
//! - `x-aliases` on a member become `#[serde(alias = …)]` (RFD prose spellings).
//! - typify's JSON-schema dumps are removed from the docs (the schema is one click away).
//! - Every named-field struct gets a `SerializeFields` impl, so tagged unions can write the
//!   tag and the variant's members into one object without buffering.
//! - `minItems` (which typify drops) is enforced on decode through `__de::min_items`, so an
//!   empty `modes` or `options` fails with the member's path.
//! - `x-deserialize-default-on-error` / `x-deserialize-skip-invalid-items` (upstream's tolerant
//!   decoding markers) become `__de::default_on_error` / `__de::skip_invalid_items` /
//!   `__de::tolerant_items`, which record what they tolerated.
//! - Every type typify emits derives `schemars::JsonSchema` behind the `schemars` feature of the
//!   crate that expands the types; the wire crate's reverse drift test compares that schema
//!   (emitted from the Rust types) with the canonical one.
//! - Every named-field struct is `#[non_exhaustive]` and gets `new(required members…)` plus a `#[must_use]`
//!   setter per optional member, the way the official ACP schema crate shapes its types: code
//!   outside the crate builds values through them, so a member added upstream is not a
//!   breaking change for it.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;
use syn::{parse_quote, Attribute, Fields, Item, ItemStruct, LitStr, Type};

use crate::Error;

/// `string_enums`: the definitions that are string enums (a tolerant member of one of those is
/// a scalar, read in place).
pub fn rework(tokens: TokenStream, structs: &[(String, Value)], string_enums: &[String]) -> Result<TokenStream, Error> {
    let mut file: syn::File = syn::parse2(tokens).map_err(|e| Error::Syntax(e.to_string()))?;
    let mut extra = Vec::new();
    for item in &mut file.items {
        strip_schema_docs(item);
        derive_json_schema(item);
        if let Item::Struct(s) = item {
            let schema = structs.iter().find(|(n, _)| s.ident == n).map(|(_, schema)| schema);
            if let Some(schema) = schema {
                reorder_and_annotate(s, schema, string_enums, &mut extra)?;
            }
            if let Some(imp) = serialize_fields(s) {
                extra.push(imp);
            }
            if let Some(imp) = builder(s, schema)? {
                mark_non_exhaustive(s);
                extra.push(imp);
            }
        }
    }
    let items = &file.items;
    Ok(quote! { #(#items)* #(#extra)* })
}

fn derive_json_schema(item: &mut Item) {
    let attrs = match item {
        Item::Struct(s) => &mut s.attrs,
        Item::Enum(e) => &mut e.attrs,
        _ => return,
    };
    attrs.push(parse_quote!(#[cfg_attr(feature = "schemars", derive(::schemars::JsonSchema))]));
}

fn strip_schema_docs(item: &mut Item) {
    let attrs: &mut Vec<Attribute> = match item {
        Item::Struct(s) => &mut s.attrs,
        Item::Enum(e) => &mut e.attrs,
        Item::Type(t) => &mut t.attrs,
        Item::Mod(m) => &mut m.attrs,
        _ => return,
    };
    attrs.retain(|a| !(a.path().is_ident("doc") && doc_text(a).is_some_and(|t| t.contains("<details>"))));
    // typify emits an empty doc line between the description and the dump.
    while attrs.last().is_some_and(|a| a.path().is_ident("doc") && doc_text(a).is_some_and(|t| t.trim().is_empty())) {
        attrs.pop();
    }
    // Same for the blank doc line that may now end the doc block before the derives.
    let mut i = 0;
    while i < attrs.len() {
        let blank = attrs[i].path().is_ident("doc") && doc_text(&attrs[i]).is_some_and(|t| t.trim().is_empty());
        let next_is_doc = attrs.get(i + 1).is_some_and(|a| a.path().is_ident("doc"));
        if blank && !next_is_doc {
            attrs.remove(i);
        } else {
            i += 1;
        }
    }
}

fn doc_text(attr: &Attribute) -> Option<String> {
    match &attr.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// The wire name of a field: its `#[serde(rename = "…")]`, or the field's own name.
fn wire_name(field: &syn::Field) -> String {
    let mut name = field.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let s: LitStr = meta.value()?.parse()?;
                name = s.value();
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    name
}

/// Whether a field carries `#[serde(default)]` (with or without a path).
fn has_default(field: &syn::Field) -> bool {
    let mut found = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                found = true;
            }
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

/// The `skip_serializing_if` path of a field, if any.
fn skip_if(field: &syn::Field) -> Option<syn::Path> {
    let mut path = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip_serializing_if") {
                let s: LitStr = meta.value()?.parse()?;
                path = s.parse::<syn::Path>().ok();
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    path
}

fn reorder_and_annotate(
    s: &mut ItemStruct,
    schema: &Value,
    string_enums: &[String],
    extra: &mut Vec<TokenStream>,
) -> Result<(), Error> {
    let Fields::Named(named) = &mut s.fields else { return Ok(()) };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    let order: Vec<&String> = props.keys().collect();
    let mut fields: Vec<syn::Field> = std::mem::take(&mut named.named).into_iter().collect();
    fields.sort_by_key(|f| order.iter().position(|k| **k == wire_name(f)).unwrap_or(usize::MAX));
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for field in &mut fields {
        let wire = wire_name(field);
        let Some(prop) = props.get(&wire) else { continue };
        // The rewrites below replace the field's serde attributes; aliases are added after them.
        if prop.get("x-tristate") == Some(&Value::Bool(true)) {
            let inner = option_inner(&field.ty).ok_or_else(|| {
                crate::model::schema_err(&s.ident.to_string(), "an `x-tristate` member must be optional and nullable")
            })?;
            field.ty = parse_quote!(Patch<#inner>);
            field.attrs.retain(|a| !a.path().is_ident("serde"));
            field.attrs.push(parse_quote!(#[serde(rename = #wire, default, skip_serializing_if = "Patch::is_absent")]));
        } else if !required.contains(&wire.as_str())
            && is_vec(&field.ty)
            && prop.get("minItems").and_then(Value::as_u64).unwrap_or(0) == 0
        {
            // typify gives an optional array `Vec<T>` with `default` and skips it when empty,
            // so `[]` would re-encode as absent. Where `[]` is valid, keep the difference.
            // (With `minItems` ≥ 1 an empty array cannot be sent: `Vec` is lossless there.)
            let ty = field.ty.clone();
            field.ty = parse_quote!(::std::option::Option<#ty>);
            field.attrs.retain(|a| !a.path().is_ident("serde"));
            field.attrs.push(parse_quote!(#[serde(rename = #wire, default, skip_serializing_if = "::std::option::Option::is_none")]));
        }
        if let Some(aliases) = prop.get("x-aliases").and_then(Value::as_array) {
            for alias in aliases.iter().filter_map(Value::as_str) {
                field.attrs.push(parse_quote!(#[serde(alias = #alias)]));
            }
        }
        // On a tolerant member (`x-deserialize-*`) `minItems` is validation only: decoding drops
        // what it cannot read, so what is left may be shorter, and that is the point.
        let tolerant = ["x-deserialize-default-on-error", "x-deserialize-skip-invalid-items"]
            .iter()
            .any(|k| prop.get(*k) == Some(&Value::Bool(true)));
        if let Some(min) = prop.get("minItems").filter(|_| !tolerant) {
            min_items(&s.ident, field, min)?;
        }
        extra.extend(tolerance(&s.ident, field, prop, string_enums)?);
    }
    named.named = fields.into_iter().collect();
    Ok(())
}

/// Enforces `minItems` on decode and declares it to schemars.
fn min_items(owner: &syn::Ident, field: &mut syn::Field, min: &Value) -> Result<(), Error> {
    let wire = wire_name(field);
    let err = |m: &str| crate::model::schema_err(&owner.to_string(), &format!("member `{wire}`: {m}"));
    let min = min.as_u64().ok_or_else(|| err("`minItems` must be a non-negative integer"))?;
    if min == 0 {
        return Ok(());
    }
    let optional = match wrapped_inner(&field.ty) {
        Some(inner) if is_vec(&inner) => true,
        None if is_vec(&field.ty) => false,
        _ => return Err(err("`minItems` is only supported on array members")),
    };
    let min_lit = proc_macro2::Literal::usize_unsuffixed(min as usize);
    let with = format!("__de::min_items::<_, _, {min_lit}>");
    field.attrs.push(parse_quote!(#[serde(deserialize_with = #with)]));
    // With `deserialize_with`, serde no longer treats a missing `Option` member as `None`.
    if optional && !has_default(field) {
        field.attrs.push(parse_quote!(#[serde(default)]));
    }
    field.attrs.push(parse_quote!(#[cfg_attr(feature = "schemars", schemars(length(min = #min_lit)))]));
    Ok(())
}

/// Upstream's tolerant-decoding markers. `x-deserialize-default-on-error`: a member whose value
/// does not decode takes its default (absent) instead of failing the whole message;
/// `x-deserialize-skip-invalid-items`: array items that do not decode are dropped. Either way
/// the decoder records what it tolerated (`__de::tolerated`), so callers can surface it.
/// How a default-on-error value is tried depends on the member's type ([`default_on_error_helper`]).
fn tolerance(owner: &syn::Ident, field: &mut syn::Field, prop: &Value, string_enums: &[String]) -> Result<Option<TokenStream>, Error> {
    let flag = |k: &str| prop.get(k) == Some(&Value::Bool(true));
    let (default_on_error, skip_items) = (flag("x-deserialize-default-on-error"), flag("x-deserialize-skip-invalid-items"));
    if !default_on_error && !skip_items {
        return Ok(None);
    }
    let wire = wire_name(field);
    let err = |m: &str| crate::model::schema_err(&owner.to_string(), &format!("member `{wire}`: {m}"));
    let helper = match (default_on_error, skip_items) {
        (true, false) => {
            if wrapped_inner(&field.ty).is_none() && !is_vec(&field.ty) {
                return Err(err("`x-deserialize-default-on-error` needs an optional member"));
            }
            default_on_error_helper(&field.ty, string_enums)
        }
        (skip_default, true) => {
            let inner = wrapped_inner(&field.ty).unwrap_or_else(|| field.ty.clone());
            if !is_vec(&inner) {
                return Err(err("`x-deserialize-skip-invalid-items` is only supported on array members"));
            }
            if skip_default {
                quote!(__de::tolerant_items)
            } else {
                quote!(__de::skip_invalid_items)
            }
        }
        (false, false) => unreachable!("returned above"),
    };
    // One small function per member, so what was tolerated is reported with its member's name.
    let field_ident = field.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
    let fn_name = quote::format_ident!("__tolerant_{}_{}", owner.to_string().to_lowercase(), field_ident.trim_start_matches("r#"));
    let member = format!("{owner}.{wire}");
    let ty = &field.ty;
    let path = fn_name.to_string();
    field.attrs.push(parse_quote!(#[serde(deserialize_with = #path)]));
    // With `deserialize_with`, a missing member is no longer `None` by itself; a member that
    // defaults on error also defaults when it is missing.
    if !has_default(field) && (default_on_error || wrapped_inner(&field.ty).is_some()) {
        field.attrs.push(parse_quote!(#[serde(default)]));
    }
    Ok(Some(quote! {
        fn #fn_name<'de, D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<#ty, D::Error> {
            #helper(deserializer, #member)
        }
    }))
}

/// The `x-deserialize-default-on-error` helper for a member of type `ty` (`Option<T>`,
/// `Patch<T>` or `Vec<T>`). A structured `T` (an object, a union, an array) can fail half-way
/// through its value, so the value is held and read again (`__de::default_on_error`); the
/// others are read once, in place: a scalar `T` (a string, a number, a boolean, a string enum)
/// through `__de::scalar_on_error`, a free-form object (`Option<Map<String, Value>>`) through
/// `__de::object_on_error`, any JSON value (`Option<Value>`) through `__de::value_on_error`.
fn default_on_error_helper(ty: &Type, string_enums: &[String]) -> TokenStream {
    const SCALARS: &[&str] = &["String", "bool", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64"];
    let Some(inner) = wrapped_inner(ty) else { return quote!(__de::default_on_error) };
    let optional = option_inner(ty).is_some();
    match last_ident(&inner).as_deref() {
        Some(name) if SCALARS.contains(&name) || string_enums.iter().any(|e| e == name) => quote!(__de::scalar_on_error),
        Some("Map") if optional => quote!(__de::object_on_error),
        Some("Value") if optional => quote!(__de::value_on_error),
        _ => quote!(__de::default_on_error),
    }
}

/// The last segment of a type path (`Option` for `::std::option::Option<T>`).
fn last_ident(ty: &Type) -> Option<String> {
    let Type::Path(p) = ty else { return None };
    p.path.segments.last().map(|s| s.ident.to_string())
}

fn is_vec(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

fn option_inner(ty: &Type) -> Option<Type> {
    generic_inner(ty, "Option")
}

/// The `T` of `Option<T>` or `Patch<T>`.
fn wrapped_inner(ty: &Type) -> Option<Type> {
    generic_inner(ty, "Option").or_else(|| generic_inner(ty, "Patch"))
}

fn generic_inner(ty: &Type, wrapper: &str) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first()? {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    }
}

fn serialize_fields(s: &ItemStruct) -> Option<TokenStream> {
    let Fields::Named(named) = &s.fields else { return None };
    let ident = &s.ident;
    let entries = named.named.iter().map(|f| {
        let name = wire_name(f);
        let field = f.ident.as_ref().expect("named field");
        match skip_if(f) {
            Some(skip) => quote! {
                if !#skip(&self.#field) { map.serialize_entry(#name, &self.#field)?; }
            },
            None => quote! { map.serialize_entry(#name, &self.#field)?; },
        }
    });
    Some(quote! {
        impl SerializeFields for #ident {
            fn serialize_fields<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                #(#entries)*
                Ok(())
            }
        }
    })
}

/// `#[non_exhaustive]`: outside the defining crate a struct is built through `new` and its
/// setters (the FFI crate's decoders too), so a member added upstream breaks no caller.
fn mark_non_exhaustive(s: &mut ItemStruct) {
    s.attrs.push(parse_quote!(#[non_exhaustive]));
}

/// Scalars a constructor or setter takes as they are: with `impl Into<u64>` an integer literal
/// would not infer.
fn is_plain_scalar(ty: &Type) -> bool {
    const PLAIN: &[&str] =
        &["bool", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64"];
    last_ident(ty).is_some_and(|n| PLAIN.contains(&n.as_str()) || n.starts_with("NonZero"))
}

/// The `default = "path"` of a field's serde attributes: `Some(Some(path))`; a bare
/// `#[serde(default)]`: `Some(None)`; no default (a required member): `None`.
fn serde_default(field: &syn::Field) -> Option<Option<syn::Path>> {
    let mut found = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                if meta.input.peek(syn::Token![=]) {
                    let s: LitStr = meta.value()?.parse()?;
                    found = Some(s.parse::<syn::Path>().ok());
                } else if found.is_none() {
                    found = Some(None);
                }
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

/// How a constructor or setter takes a member of type `ty`, and how it stores the argument
/// `arg`: `Option<T>` takes `impl IntoOption<T>` (a `T`, a `&str` for a `String`, or an
/// `Option<T>`), `Patch<T>` takes `impl Into<Patch<T>>` (a `T` sets the value, `Patch::Null`
/// clears it), scalars are taken as they are, anything else as `impl Into<T>`.
fn argument(ty: &Type, arg: &syn::Ident) -> (TokenStream, TokenStream) {
    if let Some(inner) = option_inner(ty) {
        (quote!(impl IntoOption<#inner>), quote!(IntoOption::into_option(#arg)))
    } else if is_plain_scalar(ty) {
        (quote!(#ty), quote!(#arg))
    } else {
        (quote!(impl ::std::convert::Into<#ty>), quote!(::std::convert::Into::into(#arg)))
    }
}

/// The field's doc attributes.
fn doc_attrs(field: &syn::Field) -> Vec<Attribute> {
    field.attrs.iter().filter(|a| a.path().is_ident("doc")).cloned().collect()
}

/// `new(required members…)` and a `#[must_use]` setter per optional member, for a struct with
/// named fields. The required members are the schema's `required` (for a struct typify made up
/// without a definition of ours: the members serde gives no default); the constructor takes
/// them in schema order and starts the others absent (`None`, `Patch::Absent`) or at their
/// serde default.
fn builder(s: &ItemStruct, schema: Option<&Value>) -> Result<Option<TokenStream>, Error> {
    let Fields::Named(named) = &s.fields else { return Ok(None) };
    let required: Option<Vec<&str>> = schema.map(|schema| {
        schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
    });
    let ident = &s.ident;
    let mut params = Vec::new();
    let mut inits = Vec::new();
    let mut required_names = Vec::new();
    let mut setters = Vec::new();
    for field in &named.named {
        let name = field.ident.as_ref().expect("named field");
        if name == "new" {
            return Err(crate::model::schema_err(&ident.to_string(), "a member named `new` would clash with the constructor"));
        }
        let wire = wire_name(field);
        let ty = &field.ty;
        let is_required = match &required {
            Some(required) => required.contains(&wire.as_str()),
            None => serde_default(field).is_none(),
        };
        if is_required {
            let (param_ty, store) = argument(ty, name);
            params.push(quote!(#name: #param_ty));
            // `Self { total_tokens, .. }` rather than `total_tokens: total_tokens`.
            inits.push(if *name == store.to_string() { quote!(#name) } else { quote!(#name: #store) });
            required_names.push(format!("`{wire}`"));
        } else {
            let value = match serde_default(field) {
                Some(Some(path)) => quote!(#path()),
                _ => quote!(::std::default::Default::default()),
            };
            inits.push(quote!(#name: #value));
            let (param_ty, store) = match generic_inner(ty, "Patch") {
                Some(inner) => (quote!(impl ::std::convert::Into<Patch<#inner>>), quote!(::std::convert::Into::into(#name))),
                None => argument(ty, name),
            };
            let mut docs = doc_attrs(field);
            let how = if option_inner(ty).is_some() {
                format!(" Sets the optional `{wire}` member (`None` leaves it absent).")
            } else if generic_inner(ty, "Patch").is_some() {
                format!(" Sets the optional `{wire}` member: a value replaces, `Patch::Null` clears, `Patch::Absent` leaves it out.")
            } else {
                format!(" Sets the optional `{wire}` member.")
            };
            if !docs.is_empty() {
                docs.push(parse_quote!(#[doc = ""]));
            }
            docs.push(parse_quote!(#[doc = #how]));
            setters.push(quote! {
                #(#docs)*
                #[must_use]
                pub fn #name(mut self, #name: #param_ty) -> Self {
                    self.#name = #store;
                    self
                }
            });
        }
    }
    let new_doc = if required_names.is_empty() {
        format!(" Builds [`{ident}`] with every member absent (or at its default); set them with the setters.")
    } else {
        format!(
            " Builds [`{ident}`] from its required members ({}); the optional ones start absent (or at their default) and are set with the setters.",
            required_names.join(", ")
        )
    };
    Ok(Some(quote! {
        impl #ident {
            #[doc = #new_doc]
            #[must_use]
            pub fn new(#(#params),*) -> Self {
                Self { #(#inits),* }
            }
            #(#setters)*
        }
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn wire_name_reads_rename() {
        let f: syn::FieldsNamed = syn::parse_quote!({
            #[serde(rename = "_meta", skip_serializing_if = "::std::option::Option::is_none")]
            pub meta: Option<u8>,
            #[serde(rename = "messageId")]
            pub message_id: String,
        });
        let names: Vec<String> = f.named.iter().map(super::wire_name).collect();
        assert_eq!(names, ["_meta", "messageId"]);
    }
}
