//! The wire's open string enums (`StopReason`, `ToolCallStatus`, …: known values plus
//! `Other(String)` for values this version does not know) as each language's own value type.
//!
//! UniFFI would export them as data-carrying enums, which Python renders as nested classes
//! (`StopReason.END_TURN()`, a call, never equal to the class `StopReason.END_TURN`). So the FFI
//! crate exports them as custom types over their wire string ([`crate::ffi`]), and each binding
//! lifts that string into a type this module renders from the same expansion: a `str` enum in
//! Python (`StopReason.END_TURN == "end_turn"`, unknown values kept as pseudo-members), a
//! sealed class in Kotlin (`StopReason.EndTurn`, `StopReason.Other("_x")`) and an enum in Swift
//! (`.endTurn`, `.other("_x")`): the shapes UniFFI gives Kotlin and Swift, now also Python's.
//! The bindings' `uniffi.toml` sections naming the lift and lower of each are rendered here too.

use heck::{ToLowerCamelCase, ToShoutySnakeCase};
use syn::{Fields, Item};

use crate::Error;

/// One open string enum of the wire expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenEnum {
    /// The Rust (and binding) type name, `StopReason`.
    pub name: String,
    /// The type's doc text, lines joined with `\n`.
    pub doc: String,
    /// The known values, in schema order.
    pub values: Vec<OpenValue>,
    /// The variant holding any other value (`Other`, or `Unknown` where `other` is a known
    /// value, as in `ToolKind`).
    pub catch_all: String,
}

impl OpenEnum {
    /// The catch-all variant's Swift case name (`other`, `unknown`).
    pub fn swift_catch_all(&self) -> String {
        lower_first(&self.catch_all)
    }
}

/// One known value of an [`OpenEnum`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenValue {
    /// The Rust variant name, `EndTurn`.
    pub variant: String,
    /// The wire spelling, `end_turn`.
    pub wire: String,
    /// The variant's doc text.
    pub doc: String,
}

impl OpenValue {
    /// `END_TURN`: the Python member name (UniFFI's spelling of variant names in Python).
    pub fn python(&self) -> String {
        self.variant.to_shouty_snake_case()
    }

    /// `endTurn`: the Swift case name.
    pub fn swift(&self) -> String {
        lower_first(&self.variant)
    }
}

/// UniFFI's Swift spelling of a case: `endTurn`.
fn lower_first(name: &str) -> String {
    name.to_lower_camel_case()
}

fn doc_text(attrs: &[syn::Attribute]) -> String {
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
    // Comment delimiters would end (or nest) the block comments Kotlin and Swift docs use.
    let text = text.replace("/*", "/ *").replace("*/", "* /");
    text.lines().map(str::trim_end).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect::<Vec<_>>().join("\n").trim().to_owned()
}

/// Whether `e` is an open string enum: unit variants, then a last variant holding a `String`
/// (`Other(String)`; `Unknown(String)` where `other` is a known value).
pub(crate) fn is_open(e: &syn::ItemEnum) -> bool {
    let Some(last) = e.variants.last() else { return false };
    let other = matches!(&last.fields, Fields::Unnamed(u) if u.unnamed.len() == 1
            && matches!(type_text(&u.unnamed[0].ty).as_str(), "String" | "::std::string::String" | "std::string::String"));
    other && e.variants.len() > 1 && e.variants.iter().rev().skip(1).all(|v| matches!(v.fields, Fields::Unit))
}

/// `ty` as written, without spaces (`::std::string::String`).
fn type_text(ty: &syn::Type) -> String {
    quote::ToTokens::to_token_stream(ty).to_string().replace(' ', "")
}

/// The open string enums of `expansion` (the formatted output of
/// [`crate::generate_formatted`]), in file order, with their wire spellings (the `KNOWN`
/// constant the expansion gives each, in variant order).
pub fn open_enums(expansion: &str) -> Result<Vec<OpenEnum>, Error> {
    let file: syn::File = syn::parse_str(expansion).map_err(|e| Error::Syntax(e.to_string()))?;
    let mut known: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for item in &file.items {
        if let Item::Impl(i) = item {
            let syn::Type::Path(p) = &*i.self_ty else { continue };
            let Some(name) = p.path.get_ident() else { continue };
            for member in &i.items {
                if let syn::ImplItem::Const(c) = member {
                    if c.ident == "KNOWN" {
                        let values = string_literals(&c.expr);
                        known.insert(name.to_string(), values);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for item in &file.items {
        let Item::Enum(e) = item else { continue };
        if !is_open(e) {
            continue;
        }
        let name = e.ident.to_string();
        let wires = known.get(&name).ok_or_else(|| Error::Syntax(format!("open enum `{name}` has no `KNOWN` constant")))?;
        let units: Vec<&syn::Variant> = e.variants.iter().filter(|v| matches!(v.fields, Fields::Unit)).collect();
        if units.len() != wires.len() {
            return Err(Error::Syntax(format!("open enum `{name}`: {} variants, {} known values", units.len(), wires.len())));
        }
        let values = units
            .iter()
            .zip(wires)
            .map(|(v, wire)| OpenValue { variant: v.ident.to_string(), wire: wire.clone(), doc: doc_text(&v.attrs) })
            .collect();
        let catch_all = e.variants.last().map(|v| v.ident.to_string()).unwrap_or_default();
        out.push(OpenEnum { name, doc: doc_text(&e.attrs), values, catch_all });
    }
    Ok(out)
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
        _ => Vec::new(),
    }
}

/// The rendered files: the Python module, the Kotlin file, the Swift file and the `uniffi.toml`
/// custom-type sections, each beginning with `preamble` as a comment.
#[cfg(feature = "render")]
pub struct Rendered {
    /// `acp_inject/enums.py`.
    pub python: String,
    /// `dev/acpinject/OpenEnums.kt`.
    pub kotlin: String,
    /// `OpenEnums.swift`.
    pub swift: String,
    /// The `[bindings.*.custom_types.*]` tables of `crates/ffi/uniffi.toml`.
    pub uniffi_toml: String,
}

/// Renders `enums` (from [`open_enums`]) for every binding.
#[cfg(feature = "render")]
pub fn render(enums: &[OpenEnum], preamble: &str) -> Result<Rendered, Error> {
    use askama::Template;
    let render = |r: Result<String, askama::Error>| {
        r.map(|t| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n").map_err(|e| Error::Render(e.to_string()))
    };
    let e = enums;
    Ok(Rendered {
        python: render(Python { preamble, enums: e }.render())?,
        kotlin: render(Kotlin { preamble, enums: e }.render())?,
        swift: render(Swift { preamble, enums: e }.render())?,
        uniffi_toml: render(Toml { enums: e }.render())?,
    })
}

/// `text` as a block comment's lines (`/**` … `*/`), each line after `indent`.
#[cfg(feature = "render")]
fn block_comment(text: &str, indent: &str) -> String {
    let mut out = format!("{indent}/**\n");
    for line in text.lines() {
        out += &if line.is_empty() { format!("{indent} *\n") } else { format!("{indent} * {line}\n") };
    }
    out + &format!("{indent} */")
}

/// `text` as `///` lines after `indent`.
#[cfg(feature = "render")]
fn slash_comment(text: &str, indent: &str) -> String {
    text.lines().map(|l| if l.is_empty() { format!("{indent}///") } else { format!("{indent}/// {l}") }).collect::<Vec<_>>().join("\n")
}

/// `text` as a Python docstring after `indent`.
#[cfg(feature = "render")]
fn docstring(text: &str, indent: &str) -> String {
    let text = text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\"\"");
    let lines: Vec<String> = text.lines().map(|l| if l.is_empty() { String::new() } else { format!("{indent}{l}") }).collect();
    format!("{indent}\"\"\"{}\"\"\"", lines.join("\n").trim_start())
}

#[cfg(feature = "render")]
impl OpenEnum {
    fn kdoc(&self) -> String {
        block_comment(&format!("{}\n\nOpen: a value this version does not know is kept as [{}].", self.doc, self.catch_all), "")
    }
    fn sdoc(&self) -> String {
        slash_comment(
            &format!("{}\n\nOpen: a value this version does not know is kept as ``{}(_:)``.", self.doc, self.swift_catch_all()),
            "",
        )
    }
    fn pydoc(&self) -> String {
        docstring(&format!("{}\n\nOpen: a value this version does not know is kept, as ``{}(\"_x\")``.", self.doc, self.name), "    ")
    }
}

#[cfg(feature = "render")]
impl OpenValue {
    fn kdoc(&self) -> String {
        block_comment(&self.doc, "    ")
    }
    fn sdoc(&self) -> String {
        slash_comment(&self.doc, "    ")
    }
    fn pydoc(&self) -> String {
        docstring(&self.doc, "    ")
    }
}

#[cfg(feature = "render")]
#[derive(askama::Template)]
#[template(path = "open-enums/enums.py", escape = "none")]
struct Python<'a> {
    preamble: &'a str,
    enums: &'a [OpenEnum],
}

#[cfg(feature = "render")]
#[derive(askama::Template)]
#[template(path = "open-enums/OpenEnums.kt", escape = "none")]
struct Kotlin<'a> {
    preamble: &'a str,
    enums: &'a [OpenEnum],
}

#[cfg(feature = "render")]
#[derive(askama::Template)]
#[template(path = "open-enums/OpenEnums.swift", escape = "none")]
struct Swift<'a> {
    preamble: &'a str,
    enums: &'a [OpenEnum],
}

#[cfg(feature = "render")]
#[derive(askama::Template)]
#[template(path = "open-enums/custom-types.toml", escape = "none")]
struct Toml<'a> {
    enums: &'a [OpenEnum],
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPANSION: &str = r#"
        /// Why a turn ended.
        pub enum StopReason {
            ///`end_turn`: The model finished.
            EndTurn,
            ///`max_tokens`: The limit.
            MaxTokens,
            /// A value this version does not know.
            Other(String),
        }
        impl StopReason {
            pub const KNOWN: &'static [&'static str] = &["end_turn", "max_tokens"];
        }
        pub enum ToolKind { Read, Other, Unknown(String) }
        impl ToolKind { pub const KNOWN: &'static [&'static str] = &["read", "other"]; }
        pub enum ContentBlock { Text(Box<TextContent>), Other(String) }
        pub enum Closed { A, B }
    "#;

    #[test]
    fn finds_the_open_string_enums_with_their_wire_spellings() {
        let found = open_enums(EXPANSION).unwrap();
        let names: Vec<(&str, &str)> = found.iter().map(|e| (e.name.as_str(), e.catch_all.as_str())).collect();
        assert_eq!(names, [("StopReason", "Other"), ("ToolKind", "Unknown")]);
        let stop = &found[0];
        assert_eq!(stop.doc, "Why a turn ended.");
        let values: Vec<(String, &str, String)> = stop.values.iter().map(|v| (v.python(), v.wire.as_str(), v.swift())).collect();
        assert_eq!(
            values,
            [("END_TURN".into(), "end_turn", "endTurn".into()), ("MAX_TOKENS".into(), "max_tokens", "maxTokens".into())]
        );
        assert_eq!(found[1].swift_catch_all(), "unknown");
    }

    #[test]
    fn an_open_enum_without_its_known_values_is_an_error() {
        let e = open_enums("pub enum Role { User, Other(String) }").unwrap_err();
        assert!(e.to_string().contains("`Role` has no `KNOWN`"), "{e}");
        let e = open_enums("pub enum Role { User, Other(String) } impl Role { pub const KNOWN: &'static [&'static str] = &[]; }")
            .unwrap_err();
        assert!(e.to_string().contains("1 variants, 0 known values"), "{e}");
    }

    #[cfg(feature = "render")]
    #[test]
    fn renders_each_language_and_the_uniffi_tables() {
        let r = render(&open_enums(EXPANSION).unwrap(), "GENERATED").unwrap();
        assert!(r.python.starts_with("# GENERATED\n"));
        assert!(r.python.contains("class StopReason(_Open):\n    \"\"\"Why a turn ended."));
        assert!(r.python.contains("    END_TURN = \"end_turn\"\n    \"\"\"`end_turn`: The model finished.\"\"\""));
        assert!(r.python.contains("    OTHER = \"other\""), "ToolKind's known `other`");
        assert!(r.kotlin.contains("public sealed class StopReason(\n"));
        assert!(r.kotlin.contains("    public object EndTurn : StopReason(\"end_turn\")"));
        assert!(r.kotlin.contains("    public class Unknown(value: String) : ToolKind(value)"));
        assert!(r.kotlin.contains("                \"other\" -> Other\n                else -> Unknown(value)"));
        assert!(r.swift.contains("public enum ToolKind: RawRepresentable, Hashable, Sendable {"));
        assert!(r.swift.contains("        case \"end_turn\": self = .endTurn\n"));
        assert!(r.swift.contains("        case .unknown(let value): return value"));
        assert_eq!(r.uniffi_toml.matches("imports = [\"acp_inject.enums\"]").count(), 1, "{}", r.uniffi_toml);
        assert!(r.uniffi_toml.contains("[bindings.kotlin.custom_types.ToolKind]\nlift = \"ToolKind.of({})\"\nlower = \"{}.value\""));
        assert!(r.uniffi_toml.contains("lift = \"acp_inject.enums.StopReason({})\""));
    }
}
