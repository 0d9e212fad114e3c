//! The per-line path's JSON writers, for the FFI crate.
//!
//! Python's `ClientCore.receive_line` receives a line's events as JSON text that names, for
//! every value, the class of the generated Python module it is an instance of, with the
//! keyword arguments of that class's public constructor:
//!
//! - a record or a variant with named fields: `{"$": "Usage", "total_tokens": 150, …}`;
//! - a variant with unnamed fields: `{"$": "RequestId.NUMBER*", "0": 5}` (the `*` says the
//!   constructor takes them positionally, in order);
//! - a variant without fields: `{"$": "ItemStatus.PENDING"}`;
//! - an open string enum (a custom type the Python binding lifts into a `str` enum): its class
//!   called with its wire string, `{"$": "StopReason*", "0": "end_turn"}`;
//! - `Option`: `null` or the value; `Vec`: an array; `Box`: its content; a number, a string, a
//!   boolean as JSON has them;
//! - a custom type: what its `lower` makes of it, written as that type.
//!
//! The Python side turns each object into `Class(**fields)` with `json.loads`'s `object_hook`:
//! the public constructors, nothing private of the generated module (see
//! `bindings/python/python/acp_inject/_lines.py`).
//!
//! This pass reads the FFI crate's own declarations of what it exports (the
//! `#[uniffi::remote(…)]` and `#[derive(uniffi::…)]` items and the `custom_type!` calls of the
//! files it is given) and writes, for each, an `impl Json` that writes that shape. The writers
//! take their value by value and name every field and variant, so the compiler checks them
//! against the types as it checks the declarations themselves. Names follow UniFFI's Python
//! conventions: the type's name, its variants in `SHOUTY_SNAKE_CASE`, fields in `snake_case`
//! with a Python keyword escaped by a trailing `_`.

use heck::{ToShoutySnakeCase, ToSnakeCase};
use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use syn::{Attribute, Fields, Item};

use crate::Error;

/// One source file of the FFI crate: its path (for messages) and text.
pub struct Source<'a> {
    /// The file's path in the repository.
    pub path: &'a str,
    /// Its contents.
    pub text: &'a str,
    /// Its module in the FFI crate (`crate::wire`), through which the types it defines itself
    /// (derived, not remote) are named.
    pub module: &'a str,
}

/// Whether an item is exported to UniFFI as a record or an enum (`#[uniffi::remote(Record)]`,
/// `#[derive(…, uniffi::Enum)]`, …).
fn exported(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        let text = quote!(#a).to_string();
        text.contains("uniffi") && (text.contains("Record") || text.contains("Enum"))
    })
}

/// The import of a type the source defines itself (`#[derive(uniffi::…)]`, not a remote
/// declaration of a type defined elsewhere).
fn defined_here(attrs: &[Attribute], ident: &syn::Ident, source: &Source<'_>) -> Result<Option<TokenStream>, Error> {
    if !attrs.iter().any(|a| a.path().is_ident("derive")) {
        return Ok(None);
    }
    let module: syn::Path =
        syn::parse_str(source.module).map_err(|e| Error::Syntax(format!("{}: module {:?}: {e}", source.path, source.module)))?;
    Ok(Some(quote!(use #module::#ident;)))
}

/// A field's name as UniFFI's Python bindings spell it.
fn python_field(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else",
        "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
        "return", "try", "while", "with", "yield",
    ];
    let name = name.strip_prefix("r#").unwrap_or(name).to_snake_case();
    if KEYWORDS.contains(&name.as_str()) {
        format!("{name}_")
    } else {
        name
    }
}

/// The statements writing `value` (an expression) under `key`.
fn member(key: &str, value: TokenStream) -> TokenStream {
    quote! { w.key(#key); Json::write(#value, w); }
}

/// The top-level comma-separated parts of a token stream.
fn split_commas(tokens: TokenStream) -> Vec<TokenStream> {
    let mut parts = vec![TokenStream::new()];
    for tree in tokens {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(TokenStream::new()),
            _ => parts.last_mut().expect("one part at least").extend([tree]),
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// `uniffi::custom_type!(Remote, Builtin, { …, lower: CLOSURE, … })`: the writer lowers the
/// value with the same closure and writes what it gets; for a type the Python binding lifts
/// into a class of its own (`classes`: the open string enums), that class called with it
/// (`{"$": "StopReason*", "0": "end_turn"}`).
fn custom_type(mac: &syn::Macro, path: &str, classes: &[String]) -> Result<TokenStream, Error> {
    let bad = |what: &str| Error::Syntax(format!("{path}: custom_type!({}): {what}", mac.tokens));
    let parts = split_commas(mac.tokens.clone());
    let [remote, builtin, body] = parts.as_slice() else { return Err(bad("expected (Remote, Builtin, { … })")) };
    let body = match body.clone().into_iter().next() {
        Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Brace => g.stream(),
        _ => return Err(bad("expected a braced body")),
    };
    let lower = split_commas(body)
        .into_iter()
        .find_map(|part| {
            let mut trees = part.into_iter();
            match (trees.next(), trees.next()) {
                (Some(TokenTree::Ident(name)), Some(TokenTree::Punct(colon))) if name == "lower" && colon.as_char() == ':' => {
                    Some(trees.collect::<TokenStream>())
                }
                _ => None,
            }
        })
        .ok_or_else(|| bad("no `lower`"))?;
    let name = remote.to_string();
    let write = if classes.contains(&name) {
        let tag = format!("{name}*");
        let value = member("0", quote!(lower(self)));
        quote! { w.begin(#tag); #value w.end(); }
    } else {
        quote! { Json::write(lower(self), w); }
    };
    Ok(quote! {
        impl Json for #remote {
            fn write(self, w: &mut Writer) {
                let lower: fn(#remote) -> #builtin = #lower;
                #write
            }
        }
    })
}

fn record(s: &syn::ItemStruct, path: &str) -> Result<TokenStream, Error> {
    let ident = &s.ident;
    let tag = ident.to_string();
    let Fields::Named(named) = &s.fields else {
        return Err(Error::Syntax(format!("{path}: the record {ident} has no named fields")));
    };
    let members = named.named.iter().map(|f| {
        let name = f.ident.as_ref().expect("named");
        member(&python_field(&name.to_string()), quote!(self.#name))
    });
    Ok(quote! {
        impl Json for #ident {
            fn write(self, w: &mut Writer) {
                w.begin(#tag);
                #(#members)*
                w.end();
            }
        }
    })
}

fn enumeration(e: &syn::ItemEnum) -> TokenStream {
    let ident = &e.ident;
    let arms = e.variants.iter().map(|v| {
        let name = &v.ident;
        let variant = name.to_string().to_shouty_snake_case();
        match &v.fields {
            Fields::Unit => {
                let tag = format!("{ident}.{variant}");
                quote! { Self::#name => { w.begin(#tag); w.end(); } }
            }
            Fields::Named(named) => {
                let tag = format!("{ident}.{variant}");
                let names: Vec<_> = named.named.iter().map(|f| f.ident.clone().expect("named")).collect();
                let members = names.iter().map(|n| member(&python_field(&n.to_string()), quote!(#n)));
                quote! { Self::#name { #(#names),* } => { w.begin(#tag); #(#members)* w.end(); } }
            }
            Fields::Unnamed(unnamed) => {
                let tag = format!("{ident}.{variant}*");
                let names: Vec<_> = (0..unnamed.unnamed.len()).map(|i| quote::format_ident!("f{i}")).collect();
                let members = names.iter().enumerate().map(|(i, n)| member(&i.to_string(), quote!(#n)));
                quote! { Self::#name ( #(#names),* ) => { w.begin(#tag); #(#members)* w.end(); } }
            }
        }
    });
    quote! {
        impl Json for #ident {
            fn write(self, w: &mut Writer) {
                match self {
                    #(#arms)*
                }
            }
        }
    }
}

/// The writers of every exported record, enum and custom type of `sources`, as a formatted
/// Rust file (imports and type aliases of the sources copied, so every name resolves as there).
/// `classes` names the custom types the Python binding lifts into a class of its own (the open
/// string enums, [`crate::open_enums`]).
pub fn writers(sources: &[Source<'_>], classes: &[String]) -> Result<String, Error> {
    let mut imports: Vec<TokenStream> = Vec::new();
    let mut impls: Vec<TokenStream> = Vec::new();
    for source in sources {
        let file: syn::File = syn::parse_str(source.text).map_err(|e| Error::Syntax(format!("{}: {e}", source.path)))?;
        for item in &file.items {
            match item {
                Item::Use(u) => {
                    let mut u = u.clone();
                    u.attrs.clear();
                    imports.push(quote!(#u));
                }
                Item::Type(t) => {
                    let mut t = t.clone();
                    t.attrs.clear();
                    imports.push(quote!(#t));
                }
                Item::Struct(s) if exported(&s.attrs) => {
                    impls.push(record(s, source.path)?);
                    if let Some(import) = defined_here(&s.attrs, &s.ident, source)? {
                        imports.push(import);
                    }
                }
                Item::Enum(e) if exported(&e.attrs) => {
                    impls.push(enumeration(e));
                    if let Some(import) = defined_here(&e.attrs, &e.ident, source)? {
                        imports.push(import);
                    }
                }
                Item::Macro(m) if m.mac.path.segments.last().is_some_and(|s| s.ident == "custom_type") => {
                    impls.push(custom_type(&m.mac, source.path, classes)?);
                }
                _ => {}
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    imports.retain(|i| seen.insert(i.to_string()));
    let file = quote! {
        #(#imports)*
        use crate::line_json::{Json, Writer};
        #(#impls)*
    };
    let file: syn::File = syn::parse2(file).map_err(|e| Error::Syntax(format!("the line writers: {e}")))?;
    Ok(prettyplease::unparse(&file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_variants_and_custom_types_get_writers_in_pythons_names() {
        let text = r#"
            use acp_inject_core::wire::{Usage, StopReason, MessageId};
            #[uniffi::remote(Record)]
            pub struct Usage { pub total_tokens: u64, pub r#in: Option<u64> }
            #[uniffi::remote(Enum)]
            pub enum StopReason { EndTurn, Other(String, u32), Failed { detail: String } }
            uniffi::custom_type!(MessageId, ::std::string::String, { remote, lower: |v| v.0, try_lift: |v| Ok(MessageId(v)), });
            #[derive(uniffi::Object)]
            pub struct NotAValue { x: u8 }
        "#;
        let out = writers(&[Source { path: "x.rs", text, module: "crate::x" }], &[]).unwrap();
        for expected in [
            "use acp_inject_core::wire::{Usage, StopReason, MessageId};",
            "w.begin(\"Usage\");",
            "w.key(\"in_\");",
            "Self::EndTurn => {",
            "w.begin(\"StopReason.END_TURN\");",
            "w.begin(\"StopReason.OTHER*\");",
            "w.key(\"1\");",
            "w.begin(\"StopReason.FAILED\");",
            "let lower: fn(MessageId) -> ::std::string::String = |v| v.0;",
        ] {
            assert!(out.contains(expected), "{expected} missing from:\n{out}");
        }
        assert!(!out.contains("NotAValue"), "{out}");
    }

    #[test]
    fn an_open_enum_is_written_as_its_python_class_called_with_its_string() {
        let text = "uniffi::custom_type!(StopReason, ::std::string::String, { remote, lower: |v| v.as_str().to_owned(), try_lift: |v| Ok(v.parse::<StopReason>()?), });";
        let out = writers(&[Source { path: "x.rs", text, module: "crate::x" }], &["StopReason".into()]).unwrap();
        assert!(out.contains(r#"w.begin("StopReason*");"#), "{out}");
        assert!(out.contains(r#"w.key("0");"#), "{out}");
    }

    #[test]
    fn a_custom_type_without_lower_is_an_error() {
        let text = "uniffi::custom_type!(MessageId, String, { remote });";
        let e = writers(&[Source { path: "x.rs", text, module: "crate::x" }], &[]).unwrap_err();
        assert!(e.to_string().contains("no `lower`"), "{e}");
    }
}
