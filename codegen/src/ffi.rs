//! UniFFI declarations of the wire types, for the FFI crate.
//!
//! The FFI crate exports the wire types themselves (not copies): for each struct and enum of
//! the expansion this pass writes a `#[uniffi::remote(Record)]` / `#[uniffi::remote(Enum)]`
//! declaration with the same fields, and for each newtype (`MessageId(String)`) a remote
//! `custom_type!` to its inner type. Members whose absence and `null` differ (`Patch<T>`) get
//! one FFI enum per payload type (`ContentBlockListPatch { Absent, Null, Value(..) }`). The
//! declarations are checked by the compiler against the real types, so they cannot drift.
//!
//! An open string enum (`StopReason`: known values and `Other(String)`) is a remote
//! `custom_type!` over its wire string, which each binding lifts into its own enum type
//! ([`crate::open_enums`]).
//!
//! Not emitted: the support types the FFI crate maps by hand (`Unknown` and `serde_json`
//! values travel as JSON strings), traits, impls and helper modules.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::VisitMut;
use syn::{Fields, Item, Type};

use crate::Error;

/// Items written by hand in the FFI crate (or not exported).
const SKIP: &[&str] = &["Patch", "Unknown"];

/// Required members given a default in every language's constructor, beyond the optional ones
/// (which default to absent): `(type, member, default)`. A turn's usage needs only its total
/// (`Usage(total_tokens=150)`); the input and output counts an agent does not break down are 0.
const DEFAULTS: &[(&str, &str, i64)] = &[("Usage", "input_tokens", 0), ("Usage", "output_tokens", 0)];

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) => p.path.segments.last(),
        _ => None,
    }
}

fn generic_args(seg: &syn::PathSegment) -> Vec<Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A readable name for a type, for the patch enums: `Vec<ContentBlock>` → `ContentBlockList`.
fn name_of(ty: &Type) -> String {
    let Some(seg) = last_segment(ty) else { return "Value".into() };
    let args = generic_args(seg);
    match (seg.ident.to_string().as_str(), args.first()) {
        ("Vec", Some(inner)) => format!("{}List", name_of(inner)),
        ("Option", Some(inner)) => format!("Optional{}", name_of(inner)),
        (other, _) => other.to_owned(),
    }
}

/// Finds every `Patch<T>` used by a field.
#[derive(Default)]
struct Patches(BTreeMap<String, Type>);

impl VisitMut for Patches {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Some(seg) = last_segment(ty) {
            if seg.ident == "Patch" {
                if let Some(inner) = generic_args(seg).into_iter().next() {
                    self.0.insert(format!("{}Patch", name_of(&inner)), inner);
                }
            }
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }
}

/// The doc attributes, made safe for the bindings' block comments. UniFFI copies docs into
/// Kotlin and Swift `/** … */` comments, which nest: an upstream description that says
/// `session/*` would open a comment that never closes and swallow the rest of the file. A
/// space between the two characters (`session/ *`, `* /`) keeps the text readable in every
/// language.
fn docs(attrs: &[syn::Attribute]) -> Vec<syn::Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }), ..
            }) if text.value().contains("/*") || text.value().contains("*/") => {
                let safe = text.value().replace("/*", "/ *").replace("*/", "* /");
                syn::parse_quote!(#[doc = #safe])
            }
            _ => a.clone(),
        })
        .collect()
}

/// The UniFFI declarations of the wire types in `expansion` (the formatted output of
/// [`crate::generate_formatted`]), as a formatted Rust file body.
pub fn remote_declarations(expansion: &str) -> Result<String, Error> {
    let file: syn::File = syn::parse_str(expansion).map_err(|e| Error::Syntax(e.to_string()))?;
    let mut out: Vec<TokenStream> = Vec::new();
    let mut patches = Patches::default();
    for item in file.items {
        match item {
            Item::Struct(mut s) if !SKIP.contains(&s.ident.to_string().as_str()) => {
                let ident = &s.ident;
                let doc = docs(&s.attrs);
                match &mut s.fields {
                    Fields::Named(named) => {
                        let fields = named.named.iter_mut().map(|f| {
                            patches.visit_type_mut(&mut f.ty);
                            let (name, ty, fdoc) = (&f.ident, &f.ty, docs(&f.attrs));
                            // An optional member defaults to absent in every language's
                            // constructor (`Usage(total_tokens=…, input_tokens=…,
                            // output_tokens=…)`, no trailing `None`s).
                            let optional = last_segment(ty).is_some_and(|seg| seg.ident == "Option");
                            let given = DEFAULTS.iter().find(|(t, m, _)| ident == t && name.as_ref().is_some_and(|n| n == m));
                            let default = match given {
                                Some((_, _, value)) => {
                                    let value = proc_macro2::Literal::i64_unsuffixed(*value);
                                    Some(quote!(#[uniffi(default = #value)]))
                                }
                                None => optional.then(|| quote!(#[uniffi(default)])),
                            };
                            quote! { #(#fdoc)* #default pub #name: #ty }
                        });
                        let fields: Vec<TokenStream> = fields.collect();
                        out.push(quote! {
                            #(#doc)*
                            #[uniffi::remote(Record)]
                            pub struct #ident { #(#fields),* }
                        });
                    }
                    Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1 => {
                        let inner = &unnamed.unnamed[0].ty;
                        out.push(quote! {
                            uniffi::custom_type!(#ident, #inner, {
                                remote,
                                lower: |v| v.0,
                                try_lift: |v| Ok(#ident(v)),
                            });
                        });
                    }
                    _ => {}
                }
            }
            Item::Enum(e) if crate::open_enums::is_open(&e) => {
                // An open string enum crosses as its wire string; each binding lifts it into a
                // type of its own (`crate::open_enums`, configured in `crates/ffi/uniffi.toml`).
                let ident = &e.ident;
                out.push(quote! {
                    uniffi::custom_type!(#ident, ::std::string::String, {
                        remote,
                        lower: |v| v.as_str().to_owned(),
                        try_lift: |v| Ok(v.parse::<#ident>()?),
                    });
                });
            }
            Item::Enum(mut e) if !SKIP.contains(&e.ident.to_string().as_str()) && e.generics.params.is_empty() => {
                let ident = &e.ident;
                let doc = docs(&e.attrs);
                let variants: Vec<TokenStream> = e
                    .variants
                    .iter_mut()
                    .map(|v| {
                        let (name, vdoc) = (&v.ident, docs(&v.attrs));
                        match &mut v.fields {
                            Fields::Unit => quote! { #(#vdoc)* #name },
                            Fields::Unnamed(u) => {
                                let tys: Vec<&Type> = u.unnamed.iter().map(|f| &f.ty).collect();
                                quote! { #(#vdoc)* #name(#(#tys),*) }
                            }
                            Fields::Named(n) => {
                                let fs = n.named.iter().map(|f| {
                                    let (fname, fty) = (&f.ident, &f.ty);
                                    quote! { #fname: #fty }
                                });
                                quote! { #(#vdoc)* #name { #(#fs),* } }
                            }
                        }
                    })
                    .collect();
                out.push(quote! {
                    #(#doc)*
                    #[uniffi::remote(Enum)]
                    pub enum #ident { #(#variants),* }
                });
            }
            _ => {}
        }
    }
    for (name, inner) in &patches.0 {
        // `custom_type!` takes a single identifier: name the instantiation.
        let alias = format_ident!("{name}Member");
        let name = format_ident!("{name}");
        let doc = format!(
            " A `{}` member whose absence and `null` mean different things: `Absent` leaves the current value, `Null` clears it, `Value` replaces it.",
            inner.to_token_stream().to_string().replace(' ', "")
        );
        out.push(quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, PartialEq, uniffi::Enum)]
            pub enum #name {
                /// The member is absent: leave the current value.
                Absent,
                /// The member is `null`: clear the current value.
                Null,
                /// The member has a value: replace the current value.
                Value { value: #inner },
            }

            type #alias = Patch<#inner>;

            uniffi::custom_type!(#alias, #name, {
                remote,
                lower: |p| match p {
                    Patch::Absent => #name::Absent,
                    Patch::Null => #name::Null,
                    Patch::Value(value) => #name::Value { value },
                },
                try_lift: |v| Ok(match v {
                    #name::Absent => Patch::Absent,
                    #name::Null => Patch::Null,
                    #name::Value { value } => Patch::Value(value),
                }),
            });
        });
    }
    let tokens = quote! { #(#out)* };
    let file: syn::File = syn::parse2(tokens).map_err(|e| Error::Syntax(format!("FFI declarations: {e}")))?;
    Ok(prettyplease::unparse(&file))
}
