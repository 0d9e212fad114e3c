//! Tagged unions and string enums: the shapes typify 0.8 cannot express with an open branch.
//!
//! A tagged union decodes tag-first: it reads members until it meets the tag (normally the
//! first member), then hands the rest of the object straight to the variant's derived decoder;
//! members met before the tag are buffered and replayed. An unknown tag (R-WIRE-3) keeps the
//! raw object in `Other(Unknown)` and re-encodes it unchanged. RFD prose spellings listed in
//! `x-aliases` decode to the same variant; encoding always writes the schema's spelling.
//!
//! Variants hold their body in a `Box`, so a union is two words wide: bodies reach hundreds of
//! bytes (a `ToolCallUpdate`, a `ResourceLink` with its annotations), and every layer of a
//! decode would otherwise move the whole value (a quarter of decode time went to `memmove`).
//!
//! Behind the expanding crate's `schemars` feature each type also gets a hand-built
//! `schemars::JsonSchema` impl, made from the same tag values and body types the decoder matches
//! (string enums: from `KNOWN`), so the wire crate's reverse drift test sees what the Rust side
//! actually accepts.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::model::{DefKind, Enumeration, Spec, TaggedUnion};

pub fn generate(spec: &Spec) -> TokenStream {
    let mut out = TokenStream::new();
    for def in &spec.defs {
        let doc = def.description.clone().unwrap_or_default();
        match &def.kind {
            DefKind::TaggedUnion(u) => out.extend(tagged_union(&def.name, &doc, u)),
            DefKind::StringEnum(e) => out.extend(string_enum(&def.name, &doc, e)),
            _ => {}
        }
    }
    out
}

/// `user_message` → `UserMessage`, `_x.dev/custom` → `XDevCustom`.
pub fn pascal(value: &str) -> String {
    value
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

fn tagged_union(name: &str, doc: &str, u: &TaggedUnion) -> TokenStream {
    let ty = format_ident!("{name}");
    let tag = &u.tag;
    let idents: Vec<Ident> = u.variants.iter().map(|v| format_ident!("{}", pascal(&v.value))).collect();
    let bodies: Vec<Ident> = u.variants.iter().map(|v| format_ident!("{}", v.body_name())).collect();
    let values: Vec<&String> = u.variants.iter().map(|v| &v.value).collect();
    let docs: Vec<String> =
        u.variants.iter().map(|v| format!("`{}`: {}", v.value, v.description.clone().unwrap_or_default())).collect();
    let patterns: Vec<TokenStream> = u
        .variants
        .iter()
        .map(|v| {
            let all = std::iter::once(&v.value).chain(v.aliases.iter());
            quote! { #(#all)|* }
        })
        .collect();
    let expecting = format!("a `{name}` object tagged by `{tag}`");

    let (other_variant, other_tag, other_fields, other_decode, other_whole) = if u.is_open() {
        (
            quote! {
                /// A variant this version does not know, kept whole (tag included) and re-encoded unchanged.
                Other(Unknown),
            },
            quote! { #ty::Other(u) => u.tag(Self::TAG).unwrap_or(""), },
            quote! { #ty::Other(u) => u.serialize_fields(map), },
            quote! { _ => __de::unknown(#tag, tag, buffered, map).map(#ty::Other), },
            // Written whole, as the text it came in, when it is not a member of another object.
            quote! {
                if let #ty::Other(u) = self {
                    return u.serialize(serializer);
                }
            },
        )
    } else {
        (
            quote! {},
            quote! {},
            quote! {},
            quote! { other => Err(::serde::de::Error::unknown_variant(other, &[#(#values),*])), },
            quote! {},
        )
    };

    let body_names: Vec<&str> = u.variants.iter().map(|v| v.body_name()).collect();
    let open_branch = if u.is_open() {
        quote! {
            branches.push(::serde_json::json!({
                "title": "other",
                "type": "object",
                "properties": { #tag: { "type": "string" } },
                "required": [#tag]
            }));
        }
    } else {
        quote! {}
    };
    let json_schema = quote! {
        #[cfg(feature = "schemars")]
        impl ::schemars::JsonSchema for #ty {
            fn schema_name() -> String {
                #name.to_owned()
            }

            fn json_schema(generator: &mut ::schemars::r#gen::SchemaGenerator) -> ::schemars::schema::Schema {
                let mut branches: Vec<::serde_json::Value> = Vec::new();
                #(
                    let body = generator.subschema_for::<#bodies>();
                    branches.push(::serde_json::json!({
                        "title": #body_names,
                        "type": "object",
                        "properties": { #tag: { "const": #values } },
                        "required": [#tag],
                        "allOf": [body]
                    }));
                )*
                #open_branch
                ::serde_json::from_value(::serde_json::json!({ "description": #doc, "anyOf": branches }))
                    .expect("a well-formed schema")
            }
        }
    };

    // `From<Body>` only where each body type appears once in this union.
    let froms = bodies.iter().zip(&idents).filter(|(b, _)| bodies.iter().filter(|x| x == b).count() == 1).map(|(body, ident)| {
        quote! {
            impl From<#body> for #ty {
                fn from(value: #body) -> Self { #ty::#ident(Box::new(value)) }
            }
        }
    });

    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq)]
        pub enum #ty {
            #( #[doc = #docs] #idents(Box<#bodies>), )*
            #other_variant
        }

        impl #ty {
            /// The member that tags this union.
            pub const TAG: &'static str = #tag;

            /// The tag value of this variant.
            pub fn tag(&self) -> &str {
                match self {
                    #( #ty::#idents(_) => #values, )*
                    #other_tag
                }
            }
        }

        #(#froms)*

        #json_schema

        impl SerializeFields for #ty {
            fn serialize_fields<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self {
                    #( #ty::#idents(body) => {
                        map.serialize_entry(Self::TAG, #values)?;
                        body.serialize_fields(map)
                    } )*
                    #other_fields
                }
            }
        }

        impl ::serde::Serialize for #ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                #other_whole
                let mut map = serializer.serialize_map(None)?;
                self.serialize_fields(&mut map)?;
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> ::serde::de::Visitor<'de> for Visitor {
                    type Value = #ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(#expecting)
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<#ty, A::Error> {
                        let (tag, buffered) = __de::read_tag(&mut map, #tag)?;
                        match &*tag {
                            // The body goes from the decoder's result straight into its box
                            // (`?` then `Box::new` would copy it once more on the way).
                            #( #patterns => __de::body(buffered, map).map(|body| #ty::#idents(Box::new(body))), )*
                            #other_decode
                        }
                    }
                }
                deserializer.deserialize_map(Visitor)
            }
        }
    }
}

fn string_enum(name: &str, doc: &str, e: &Enumeration) -> TokenStream {
    let ty = format_ident!("{name}");
    let idents: Vec<Ident> = e.values.iter().map(|(v, _)| format_ident!("{}", pascal(v))).collect();
    let values: Vec<&String> = e.values.iter().map(|(v, _)| v).collect();
    let docs: Vec<String> = e
        .values
        .iter()
        .map(|(v, d)| match d {
            Some(d) => format!("`{v}`: {d}"),
            None => format!("`{v}`"),
        })
        .collect();
    let expecting = format!("a `{name}` string");
    // The open branch's title names the variant for any other value (`Other`, `Unknown`).
    let open_title = e.open.first().and_then(|o| o.title.as_deref());
    let (open_variant, open_str, open_decode, derive_copy) = match open_title {
        Some(title) => {
            let other = format_ident!("{}", pascal(title));
            (
                quote! {
                    /// A value this version does not know (values starting with `_` are extensions).
                    #other(String),
                },
                quote! { #ty::#other(s) => s, },
                quote! { other => #ty::#other(other.to_owned()), },
                quote! {},
            )
        }
        None => (
            quote! {},
            quote! {},
            quote! { other => return Err(::serde::de::Error::unknown_variant(other, &[#(#values),*])), },
            quote! { Copy, },
        ),
    };
    let json_schema = {
        let (keyword, open_branch) = match open_title {
            Some(title) => ("anyOf", quote! { branches.push(::serde_json::json!({ "title": #title, "type": "string" })); }),
            None => ("oneOf", quote! {}),
        };
        let binding = if open_title.is_some() { quote!(mut branches) } else { quote!(branches) };
        quote! {
            #[cfg(feature = "schemars")]
            impl ::schemars::JsonSchema for #ty {
                fn schema_name() -> String {
                    #name.to_owned()
                }

                fn json_schema(_: &mut ::schemars::r#gen::SchemaGenerator) -> ::schemars::schema::Schema {
                    let #binding: Vec<::serde_json::Value> =
                        Self::KNOWN.iter().map(|v| ::serde_json::json!({ "const": v })).collect();
                    #open_branch
                    ::serde_json::from_value(::serde_json::json!({ "description": #doc, #keyword: branches }))
                        .expect("a well-formed schema")
                }
            }
        }
    };
    quote! {
        #[doc = #doc]
        #[derive(Clone, #derive_copy Debug, PartialEq, Eq, Hash)]
        pub enum #ty {
            #( #[doc = #docs] #idents, )*
            #open_variant
        }

        impl #ty {
            /// The known values, in schema order.
            pub const KNOWN: &'static [&'static str] = &[#(#values),*];

            /// The wire spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    #( #ty::#idents => #values, )*
                    #open_str
                }
            }

            fn from_wire<E: ::serde::de::Error>(value: &str) -> Result<Self, E> {
                Ok(match value {
                    #( #values => #ty::#idents, )*
                    #open_decode
                })
            }
        }

        impl ::std::fmt::Display for #ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for #ty {
            type Err = ::serde::de::value::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_wire(s)
            }
        }

        impl ::serde::Serialize for #ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> ::serde::de::Visitor<'de> for Visitor {
                    type Value = #ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(#expecting)
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<#ty, E> {
                        #ty::from_wire(v)
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }

        #json_schema
    }
}
