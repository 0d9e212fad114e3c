//! `wire_types!("path/to/schema.json")`: expands the canonical schema into Rust wire types.
//!
//! The path is relative to the invoking crate's `Cargo.toml`. The expansion includes the
//! schema with `include_str!`, so editing the schema rebuilds the crate. Every generator
//! error becomes a `compile_error!` that names the schema definition and the problem.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, LitStr};

#[proc_macro]
pub fn wire_types(input: TokenStream) -> TokenStream {
    let path = parse_macro_input!(input as LitStr);
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let full = std::path::Path::new(&root).join(path.value());
    let text = match std::fs::read_to_string(&full) {
        Ok(text) => text,
        Err(e) => {
            // The literal path, not the resolved one, so the message reads the same on every machine.
            let message = format!("cannot read the schema {:?} (relative to the crate's Cargo.toml): {e}", path.value());
            return quote::quote_spanned!(path.span()=> compile_error!(#message);).into();
        }
    };
    match acp_inject_codegen::generate(&text) {
        Ok(tokens) => {
            let full = full.to_string_lossy().into_owned();
            quote! {
                const _: &str = include_str!(#full);
                #tokens
            }
            .into()
        }
        Err(e) => {
            let message = format!("{}: {e}", path.value());
            quote::quote_spanned!(path.span()=> compile_error!(#message);).into()
        }
    }
}
