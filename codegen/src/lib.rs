//! The generator behind the acp-inject wire types: canonical JSON Schema in, Rust tokens out.
//!
//! The pipeline, in order:
//! 1. [`model`] reads the schema and classifies each definition (plain types, tagged unions,
//!    string enums, hand-written envelope types). It is the one reading of the schema: xtask's
//!    upstream-diff and the wire crate's drift test read schemas with it too.
//! 2. A pre-pass prepares the plain definitions and the synthesised union bodies for typify
//!    0.8: `const` becomes a one-value `enum` (typify drops `const`), `if`/`then` is dropped
//!    (it is validation only), `$defs` references become `definitions` references, and types
//!    this generator writes itself are registered as typify replacements.
//! 3. typify generates the structs and newtypes.
//! 4. A syn post-pass (module `post`) restores the schema's member order (typify sorts members
//!    alphabetically), applies `x-tristate` and `x-aliases`, strips typify's schema dumps from
//!    the docs and derives `SerializeFields` for every struct.
//! 5. The `unions` module writes the tagged unions (tag-first streaming decode with an open `Other`
//!    branch that keeps the raw object) and the open string enums, which typify cannot express.
//!
//! Callers: `cargo xtask codegen` (which writes the formatted expansion into
//! `crates/wire/src/generated.rs`, checked in, the value model's codec from [`values`] into
//! `crates/ffi/src/generated_values.rs` and each language's value types, and the protocol reference and the TypeScript package into
//! `generated/`) and the `wire_types!` proc-macro (the same expansion, for a crate that
//! generates at build time).
//!
//! The renderers that are not Rust tokens, `docs` (the protocol reference) and `typescript`
//! (the TypeScript package), use askama templates from `codegen/templates/`. They sit behind the
//! `render` feature, which only xtask enables, so the proc-macro never compiles askama.

pub mod assemble;
#[cfg(feature = "render")]
pub mod docs;
pub mod model;
mod post;
#[cfg(feature = "render")]
pub mod typescript;
mod unions;
pub mod values;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value};

use model::{Body, DefKind, Spec, DEFS};

/// What went wrong while generating.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The schema is not valid JSON.
    #[error("the schema is not valid JSON: {0}")]
    Json(String),
    /// The schema breaks one of the generator's conventions.
    #[error("schema definition `{def}`: {message}")]
    Schema { def: String, message: String },
    /// typify rejected the prepared schema.
    #[error("typify rejected the schema: {0}")]
    Typify(String),
    /// The generated code did not parse (a generator bug).
    #[error("generated code does not parse (generator bug): {0}")]
    Syntax(String),
    /// The protocol reference template failed to render.
    #[error("rendering the protocol reference failed: {0}")]
    Render(String),
}

/// The support code every expansion starts with (see `runtime.rs`).
const RUNTIME: &str = include_str!("runtime.rs");

/// Generates the wire types for the schema text.
pub fn generate(schema_text: &str) -> Result<TokenStream, Error> {
    generate_with(schema_text, None)
}

/// Like [`generate`]; with `shared_runtime` (a module path such as `crate`), the expansion
/// re-exports that module's runtime items (`RequestId`, `Patch`, `Unknown`,
/// `SerializeFields`, `IntoOption`, `__de`) instead of writing its own copy: a second schema expanded beside
/// the first (the wire crate's `v1` module) shares them.
pub fn generate_with(schema_text: &str, shared_runtime: Option<&str>) -> Result<TokenStream, Error> {
    let spec = Spec::parse(schema_text)?;
    let runtime: TokenStream = match shared_runtime {
        None => RUNTIME.parse().map_err(|e| Error::Syntax(format!("runtime.rs: {e}")))?,
        Some(path) => {
            let path: syn::Path = syn::parse_str(path).map_err(|e| Error::Syntax(format!("runtime path {path:?}: {e}")))?;
            quote! { pub use #path::{__de, IntoOption, Patch, RequestId, SerializeFields, Unknown}; }
        }
    };

    let inline = inline_defs(&spec);
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".to_owned());
    let mut typify_defs: Vec<(String, schemars::schema::Schema)> = Vec::new();
    // Member order and annotations of every struct typify will emit, by type name.
    let mut structs: Vec<(String, Value)> = Vec::new();

    for def in &spec.defs {
        match &def.kind {
            DefKind::Envelope | DefKind::StringEnum(_) => {
                // Written by hand (runtime) or by `unions`; typify only references them.
                settings.with_replacement(&def.name, &def.name, std::iter::empty());
                typify_defs.push((def.name.clone(), to_schemars(&def.name, &Value::Object(Map::new()))?));
            }
            DefKind::Inline => {}
            DefKind::TaggedUnion(u) => {
                settings.with_replacement(&def.name, &def.name, std::iter::empty());
                typify_defs.push((def.name.clone(), to_schemars(&def.name, &Value::Object(Map::new()))?));
                for v in &u.variants {
                    if let Body::Inline(body) = &v.body {
                        let prepared = prepare(body, &inline);
                        structs.push((v.body_name().to_owned(), with_inline_markers(body, &inline)));
                        typify_defs.push((v.body_name().to_owned(), to_schemars(v.body_name(), &prepared)?));
                    }
                }
            }
            DefKind::Plain => {
                let prepared = prepare(&def.schema, &inline);
                if def.schema.get("type") == Some(&Value::from("object")) {
                    structs.push((def.name.clone(), with_inline_markers(&def.schema, &inline)));
                }
                typify_defs.push((def.name.clone(), to_schemars(&def.name, &prepared)?));
            }
        }
    }

    let mut space = typify::TypeSpace::new(&settings);
    // typify panics on some malformed input instead of returning an error; keep that a
    // typed error so the proc-macro can report it as `compile_error!`.
    let added = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| space.add_ref_types(typify_defs)));
    match added {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Error::Typify(e.to_string())),
        Err(panic) => return Err(Error::Typify(panic_message(&panic))),
    }
    let typified =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| space.to_stream())).map_err(|p| Error::Typify(panic_message(&p)))?;
    let string_enums: Vec<String> =
        spec.defs.iter().filter(|d| matches!(d.kind, DefKind::StringEnum(_))).map(|d| d.name.clone()).collect();
    let typified = post::rework(typified, &structs, &string_enums)?;
    let unions = unions::generate(&spec);
    let methods = methods(&spec);

    Ok(quote! {
        #runtime
        #typified
        #unions
        #methods
    })
}

/// Generates and formats the wire types as a reviewable Rust file (without a preamble).
pub fn generate_formatted(schema_text: &str) -> Result<String, Error> {
    generate_formatted_with(schema_text, None)
}

/// [`generate_with`], formatted as [`generate_formatted`] formats.
pub fn generate_formatted_with(schema_text: &str, shared_runtime: Option<&str>) -> Result<String, Error> {
    let tokens = generate_with(schema_text, shared_runtime)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| Error::Syntax(e.to_string()))?;
    Ok(prettyplease::unparse(&file))
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "typify panicked".to_owned())
}

/// The `x-deserialize-*` markers of a member that references an inlined definition (`_meta`
/// refers to `Meta`) are the inlined definition's: copy them onto the member, so the post-pass
/// sees every marker on the member it applies to.
fn with_inline_markers(schema: &Value, inline: &[(String, Value)]) -> Value {
    let mut schema = schema.clone();
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else { return schema };
    for prop in props.values_mut() {
        let Some(target) = prop.get("$ref").and_then(Value::as_str).map(str::to_owned) else { continue };
        let Some((_, def)) = inline.iter().find(|(r, _)| *r == target) else { continue };
        let (Some(prop), Some(def)) = (prop.as_object_mut(), def.as_object()) else { continue };
        for (k, v) in def.iter().filter(|(k, _)| k.starts_with("x-deserialize-")) {
            prop.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    schema
}

/// Definitions inlined where they are referenced (`x-rust: inline`), with their schemas.
fn inline_defs(spec: &Spec) -> Vec<(String, Value)> {
    spec.defs
        .iter()
        .filter(|d| matches!(d.kind, DefKind::Inline))
        .map(|d| {
            let mut s = d.schema.as_object().cloned().unwrap_or_default();
            s.remove("x-rust");
            s.remove("description");
            (format!("{DEFS}{}", d.name), Value::Object(s))
        })
        .collect()
}

/// Rewrites a schema into the dialect typify 0.8 reads.
fn prepare(schema: &Value, inline: &[(String, Value)]) -> Value {
    match schema {
        Value::Object(obj) => {
            if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
                if let Some((_, s)) = inline.iter().find(|(r, _)| r == target) {
                    return prepare(s, inline);
                }
            }
            let mut out = Map::new();
            for (k, v) in obj {
                match k.as_str() {
                    // Validation-only keywords: typify cannot express them.
                    "if" | "then" | "else" | "not" | "contains" | "uniqueItems" | "contentEncoding" | "pattern" => {}
                    k if k.starts_with("x-") => {}
                    "const" => {
                        out.insert("enum".into(), Value::Array(vec![v.clone()]));
                    }
                    "$ref" => {
                        let r = v.as_str().unwrap_or_default().replace(DEFS, "#/definitions/");
                        out.insert("$ref".into(), Value::String(r));
                    }
                    "properties" => {
                        let props = v
                            .as_object()
                            .map(|p| p.iter().map(|(n, s)| (n.clone(), prepare(s, inline))).collect())
                            .unwrap_or_default();
                        out.insert(k.to_owned(), Value::Object(props));
                    }
                    _ => {
                        out.insert(k.to_owned(), prepare(v, inline));
                    }
                }
            }
            // A `$ref` with sibling keywords: keep the reference, drop the rest (2020-12 allows
            // siblings; schemars 0.8 would otherwise treat the object as a new anonymous type).
            if out.contains_key("$ref") {
                out.retain(|k, _| k == "$ref");
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| prepare(v, inline)).collect()),
        other => other.clone(),
    }
}

fn to_schemars(name: &str, schema: &Value) -> Result<schemars::schema::Schema, Error> {
    serde_json::from_value(schema.clone()).map_err(|e| model::schema_err(name, &format!("typify cannot read it: {e}")))
}

/// Method names and the `Method`/`Request`/`Notification` impls, from `x-method`.
fn methods(spec: &Spec) -> TokenStream {
    let mut consts = Vec::new();
    let mut impls = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut requests = Vec::new();
    let mut notifications = Vec::new();
    for def in &spec.defs {
        let Some(method) = &def.method else { continue };
        let ident = quote::format_ident!("{}", def.name);
        let const_name = quote::format_ident!("{}", method_const(method));
        if seen.insert(method.clone()) {
            let doc = format!("`{method}`");
            consts.push(quote! { #[doc = #doc] pub const #const_name: &str = #method; });
        }
        impls.push(quote! { impl Method for #ident { const METHOD: &'static str = methods::#const_name; } });
        if let Some(stem) = def.name.strip_suffix("Request") {
            let response = format!("{stem}Response");
            if spec.def(&response).is_some() {
                let response = quote::format_ident!("{}", response);
                impls.push(quote! { impl Request for #ident { type Response = #response; } });
                requests.push(quote! { #const_name });
            }
        } else if def.name.ends_with("Notification") {
            impls.push(quote! { impl Notification for #ident {} });
            notifications.push(quote! { #const_name });
        }
    }
    quote! {
        /// The protocol's method names.
        pub mod methods {
            #(#consts)*

            /// The methods sent as requests (they have a `*Request` params and a `*Response` type).
            pub const REQUESTS: &[&str] = &[#(#requests),*];

            /// The methods sent as notifications (their params type is a `*Notification`).
            pub const NOTIFICATIONS: &[&str] = &[#(#notifications),*];
        }

        /// A params or response type and the method it belongs to (`x-method`).
        pub trait Method {
            /// The JSON-RPC method name.
            const METHOD: &'static str;
        }

        /// The params of a request, and the type of its successful result.
        pub trait Request: Method + ::serde::Serialize + ::serde::de::DeserializeOwned {
            /// The `result` type of the response.
            type Response: Method + ::serde::Serialize + ::serde::de::DeserializeOwned;
        }

        /// The params of a notification.
        pub trait Notification: Method + ::serde::Serialize + ::serde::de::DeserializeOwned {}

        #(#impls)*
    }
}

/// `session/revoke_inject` → `SESSION_REVOKE_INJECT`, `$/cancel_request` → `CANCEL_REQUEST`,
/// the extension `_session/steering` → `SESSION_STEERING`.
pub fn method_const(method: &str) -> String {
    method
        .trim_start_matches("$/")
        .trim_start_matches('_')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
        .collect()
}
