//! Reading `spec/values.json`: the values that are not wire types.

use serde_json::{Map, Value};

use super::{as_str, model_err, Build, Default, Enum, EnumValue, Field, Kind, Origin, Payload, Struct, Ty, TypeDef, Union, Variant};
use crate::Error;

/// The types `text` describes, in file order, and the wire types it names as well (`wire`).
pub(super) fn parse(text: &str) -> Result<(Vec<TypeDef>, Vec<String>), Error> {
    let root: Value = serde_json::from_str(text).map_err(|e| Error::Json(format!("spec/values.json: {e}")))?;
    let types = root.get("types").and_then(Value::as_object).ok_or_else(|| model_err("spec/values.json", "has no `types` object"))?;
    let wire = match root.get("wire") {
        None => Vec::new(),
        Some(Value::Array(names)) => {
            names.iter().map(|n| as_str(n, "spec/values.json", "`wire`").map(str::to_owned)).collect::<Result<_, _>>()?
        }
        Some(_) => return Err(model_err("spec/values.json", "`wire` is not a list of names")),
    };
    Ok((types.iter().map(|(name, def)| type_def(name, def)).collect::<Result<_, _>>()?, wire))
}

fn object<'a>(v: &'a Value, owner: &str) -> Result<&'a Map<String, Value>, Error> {
    v.as_object().ok_or_else(|| model_err(owner, "is not an object"))
}

fn doc(def: &Map<String, Value>, owner: &str) -> Result<String, Error> {
    match def.get("doc") {
        Some(d) => Ok(as_str(d, owner, "`doc`")?.to_owned()),
        None => Err(model_err(owner, "has no `doc`")),
    }
}

fn type_def(name: &str, def: &Value) -> Result<TypeDef, Error> {
    let def = object(def, name)?;
    let rust = as_str(def.get("rust").ok_or_else(|| model_err(name, "has no `rust` path"))?, name, "`rust`")?.to_owned();
    let error = def.get("error").and_then(Value::as_bool).unwrap_or(false);
    let kind = if let Some(fields) = def.get("fields") {
        Kind::Struct(Struct { fields: fields_of(fields, name)?, build: Build::Literal, error })
    } else if let Some(inner) = def.get("newtype") {
        Kind::Newtype(ty(as_str(inner, name, "`newtype`")?, name)?)
    } else if let Some(values) = def.get("enum") {
        let values = object(values, name)?
            .iter()
            .map(|(variant, v)| {
                let owner = format!("{name}.{variant}");
                let v = object(v, &owner)?;
                let wire = as_str(v.get("wire").ok_or_else(|| model_err(&owner, "has no `wire` string"))?, &owner, "`wire`")?;
                let rust = v.get("rust").map(|r| as_str(r, &owner, "`rust`")).transpose()?.unwrap_or(variant);
                let build = v.get("build").map(|r| as_str(r, &owner, "`build`")).transpose()?.unwrap_or(variant);
                Ok(EnumValue { rust: rust.to_owned(), build: build.to_owned(), wire: wire.to_owned(), doc: doc(v, &owner)? })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Kind::Enum(Enum { values, open: None })
    } else if let Some(variants) = def.get("union") {
        let variants = object(variants, name)?.iter().map(|(rust, v)| variant(name, rust, v)).collect::<Result<Vec<_>, Error>>()?;
        Kind::Union(Union { variants, other: None, error })
    } else {
        return Err(model_err(name, "is none of `fields`, `newtype`, `enum`, `union`"));
    };
    Ok(TypeDef { name: name.to_owned(), rust, doc: doc(def, name)?, kind, origin: Origin::Described })
}

fn variant(union: &str, rust: &str, v: &Value) -> Result<Variant, Error> {
    let owner = format!("{union}.{rust}");
    let v = object(v, &owner)?;
    let text = |key: &str| v.get(key).map(|x| as_str(x, &owner, key)).transpose();
    let payload = if let Some(of) = text("of")? {
        // A struct or a union: which one is known once the whole model is read, so both are
        // recorded as a `Struct` here and settled by `settle`.
        let boxed = v.get("boxed").and_then(Value::as_bool).unwrap_or(false);
        match text("field")? {
            Some(field) => Payload::Union { ty: of.to_owned(), boxed, field: Some(field.to_owned()) },
            None => Payload::Struct { ty: of.to_owned(), boxed },
        }
    } else if let Some(like) = text("like")? {
        Payload::Like { class: like.to_owned() }
    } else if let Some(class) = text("class")? {
        let fields = match v.get("fields") {
            Some(f) => fields_of(f, &owner)?,
            None => Vec::new(),
        };
        let tuple = v.get("tuple").and_then(Value::as_bool).unwrap_or(false);
        if tuple && fields.len() != 1 {
            return Err(model_err(&owner, "a `tuple` variant has exactly one field"));
        }
        Payload::Class { class: class.to_owned(), fields, tuple }
    } else {
        return Err(model_err(&owner, "is none of `of`, `like`, `class`"));
    };
    Ok(Variant { rust: rust.to_owned(), doc: doc(v, &owner)?, payload })
}

fn fields_of(fields: &Value, owner: &str) -> Result<Vec<Field>, Error> {
    object(fields, owner)?
        .iter()
        .map(|(name, f)| {
            let owner = format!("{owner}.{name}");
            let f = object(f, &owner)?;
            let ty = ty(as_str(f.get("type").ok_or_else(|| model_err(&owner, "has no `type`"))?, &owner, "`type`")?, &owner)?;
            let default = match f.get("default") {
                None if matches!(ty, Ty::Option(_)) => Some(Default::Null),
                None => None,
                Some(Value::Bool(b)) => Some(Default::Bool(*b)),
                Some(Value::Number(n)) => {
                    Some(Default::Int(n.as_i64().ok_or_else(|| model_err(&owner, "a default number is an integer"))?))
                }
                Some(Value::String(s)) => Some(Default::Enum(s.clone())),
                Some(Value::Array(a)) if a.is_empty() => Some(Default::EmptyList),
                Some(Value::Object(o)) if o.is_empty() => Some(Default::Struct),
                Some(other) => return Err(model_err(&owner, &format!("cannot take the default {other}"))),
            };
            let boxed = f.get("boxed").and_then(Value::as_bool).unwrap_or(false);
            Ok(Field { name: name.clone(), ty, doc: doc(f, &owner)?, default, boxed })
        })
        .collect()
}

/// A type expression: `string`, `u64`, `T?`, `[T]`, a name.
fn ty(text: &str, owner: &str) -> Result<Ty, Error> {
    let text = text.trim();
    if let Some(inner) = text.strip_suffix('?') {
        return Ok(Ty::Option(Box::new(ty(inner, owner)?)));
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return Ok(Ty::List(Box::new(ty(inner, owner)?)));
    }
    Ok(match text {
        "string" => Ty::String,
        "bool" => Ty::Bool,
        "u64" => Ty::Int("u64"),
        "i64" => Ty::Int("i64"),
        "u32" => Ty::Int("u32"),
        "u16" => Ty::Int("u16"),
        "i32" => Ty::Int("i32"),
        "nonzero_u32" => Ty::NonZero,
        "f64" => Ty::Float,
        "json" => Ty::Json,
        "json_object" => Ty::JsonObject,
        "request_id" => Ty::RequestId,
        name if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && name.chars().all(|c| c.is_ascii_alphanumeric()) => {
            Ty::Named(name.to_owned())
        }
        other => return Err(model_err(owner, &format!("unknown type `{other}`"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_expressions() {
        assert_eq!(ty("[ContentBlock]?", "t").unwrap(), Ty::Option(Box::new(Ty::List(Box::new(Ty::Named("ContentBlock".into()))))));
        assert_eq!(ty("[[string]]", "t").unwrap(), Ty::List(Box::new(Ty::List(Box::new(Ty::String)))));
        assert!(ty("float", "t").is_err());
    }
}
