//! The Python side of the value model: `acp_inject/values.py`.
//!
//! Every class is a frozen `msgspec.Struct` (typed fields with defaults, `__match_args__`, `==`
//! and `hash` by value, an eval-able `repr`; `msgspec.structs.asdict` and `replace` work), so
//! msgspec reads the boundary encoding (MessagePack) in C straight into the classes and writes
//! it back. A class that is a union's variant carries its name as its tag (`"$"`); a union is a
//! `typing.Union` of its classes (flattened), so `isinstance(x, SessionUpdate)` and `match`
//! on the classes work and mypy checks every field. Enums are `str` enums (`InjectMode.QUEUE ==
//! "queue"`), open ones keeping values they do not know as members of their own. The error union
//! (`AcpError`) is an exception hierarchy (`AcpError.Disconnected`), with private structs that
//! carry it across.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use heck::ToShoutySnakeCase;

use super::{Class, Default, Field, Kind, Model, Payload, Ty, TypeDef};
use crate::Error;

/// The module's text, after `preamble` (a comment line).
pub fn render(model: &Model, preamble: &str) -> Result<String, Error> {
    let mut out = format!("# {preamble}\n# Source: spec/values.json and the wire types it reaches (codegen/src/values/python.rs).\n");
    out += HEADER;
    // Enums and newtypes first: defaults name enum members.
    for t in &model.types {
        match &t.kind {
            Kind::Enum(e) => out += &enum_class(t, e),
            Kind::Newtype(inner) => {
                let _ = write!(out, "\n{} = {}\n{}\n", t.name, annotation(model, inner), docstring_after(&t.doc));
            }
            _ => {}
        }
    }
    for class in model.classes() {
        if class.error {
            continue;
        }
        out += &class_def(model, &class);
    }
    out += "\n\n# The unions: each the classes it may be (one level: nested unions are flattened in), as\n# `A | B` so that `isinstance(x, SessionUpdate)` type-checks too.\n";
    for t in &model.types {
        if let Kind::Union(u) = &t.kind {
            if u.error {
                continue;
            }
            let members = model.members(&t.name);
            let _ = write!(out, "\n{} = {}\n{}\n", t.name, members.join(" | "), docstring_after(&t.doc));
        }
    }
    for t in &model.types {
        if let Kind::Union(u) = &t.kind {
            if u.error {
                out += &error_classes(model, t);
            }
        }
    }
    out += &exports(model);
    Ok(out)
}

const HEADER: &str = r#"
"""The values of acp-inject, as Python values: every class, enum and union the library hands
over or takes (the wire types of ACP and the library's own events, state and options), generated
from the one model the Rust library and the Kotlin and Swift bindings are generated from.

Classes are frozen ``msgspec.Struct`` values: construct them with keywords (or positionally, required
fields first), compare and hash them by value, ``match`` on them, copy with
``msgspec.structs.replace``, turn into a dict with ``msgspec.structs.asdict``. A union
(``SessionUpdate``, ``ContentBlock``, ``SessionActivity``, …) is a ``typing.Union`` of its classes.
Enums are ``str`` enums. The library's errors are :class:`AcpError` and its subclasses.

:func:`encode` and :func:`decode` read and write the boundary encoding (``docs/encoding.md``).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Dict, List, Optional, Tuple, Type, TypeVar, Union

import msgspec
from msgspec import UNSET, UnsetType

__all__: List[str] = ["Record", "Variant", "WireEnum", "OpenWireEnum"]


class Record(msgspec.Struct, frozen=True, omit_defaults=True):
    """The base of every value of the model that is no union's variant (``Usage``,
    ``SessionInfo``, …): a frozen ``msgspec.Struct``, equal and hashed by value."""


class Variant(msgspec.Struct, frozen=True, omit_defaults=True, tag_field="$", tag=True):
    """The base of every class of a union (``AgentMessageChunk``, ``TextContent``, …): a frozen
    ``msgspec.Struct`` whose values carry the class name (``"$"``) when encoded."""


class WireEnum(str, enum.Enum):
    """A string enum: each member is its wire string (``InjectMode.QUEUE == "queue"``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        if self._name_ in type(self).__members__:
            return f"{type(self).__name__}.{self._name_}"
        return f"{type(self).__name__}({self.value!r})"


class OpenWireEnum(WireEnum):
    """A string enum that keeps a value it does not know, as a member of its own
    (``StopReason("_x")``), so what an agent sends is never lost."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, str):
            return None
        member = str.__new__(cls, value)
        member._name_ = value
        member._value_ = value
        return member

    @property
    def known(self) -> bool:
        """Whether this version knows the value."""
        return self._name_ in type(self).__members__
"#;

/// A Python string literal's body for a docstring.
fn doc_body(doc: &str) -> String {
    doc.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

fn docstring(doc: &str, indent: &str) -> String {
    let body = doc_body(doc);
    let lines: Vec<&str> = body.lines().collect();
    match lines.as_slice() {
        [] => format!("{indent}\"\"\"\"\"\"\n"),
        [one] => format!("{indent}\"\"\"{one}\"\"\"\n"),
        [first, rest @ ..] => {
            let mut out = format!("{indent}\"\"\"{first}\n");
            for l in rest {
                if l.is_empty() {
                    out += "\n";
                } else {
                    let _ = writeln!(out, "{indent}{l}");
                }
            }
            out + &format!("{indent}\"\"\"\n")
        }
    }
}

/// A module-level docstring for the name just assigned (an alias).
fn docstring_after(doc: &str) -> String {
    docstring(doc, "")
}

/// The Python annotation of `ty`.
pub fn annotation(model: &Model, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "bool".into(),
        Ty::Int(_) | Ty::NonZero => "int".into(),
        Ty::Float => "float".into(),
        Ty::String => "str".into(),
        Ty::Json => "Any".into(),
        Ty::JsonObject => "Dict[str, Any]".into(),
        Ty::RequestId => "RequestId".into(),
        Ty::Named(n) => {
            let _ = model;
            n.clone()
        }
        Ty::Option(t) => format!("Optional[{}]", annotation(model, t)),
        Ty::List(t) => format!("List[{}]", annotation(model, t)),
        Ty::Patch(t) => format!("Union[{}, None, UnsetType]", annotation(model, t)),
    }
}

/// A member's Python name (`END_TURN`).
pub fn member(variant: &str) -> String {
    variant.to_shouty_snake_case()
}

fn enum_class(t: &TypeDef, e: &super::Enum) -> String {
    let base = if e.open.is_some() { "OpenWireEnum" } else { "WireEnum" };
    let mut out = format!("\n\nclass {}({base}):\n{}", t.name, docstring(&t.doc, "    "));
    for v in &e.values {
        let _ = writeln!(out, "\n    {} = {:?}", member(v.variant()), v.wire);
        out += &docstring(&v.doc, "    ");
    }
    let _ = writeln!(out, "\n\n__all__.append({:?})", t.name);
    out
}

fn default_expr(model: &Model, f: &Field, d: &Default) -> String {
    match d {
        Default::Null => "None".into(),
        Default::Unset => "UNSET".into(),
        Default::Bool(b) => if *b { "True" } else { "False" }.into(),
        Default::Int(i) => i.to_string(),
        Default::EmptyList => "msgspec.field(default_factory=list)".into(),
        Default::Enum(wire) => {
            let Ty::Named(n) = &f.ty else { return "None".into() };
            match model.get(n).map(|t| &t.kind) {
                Some(Kind::Enum(e)) => {
                    let v = e.values.iter().find(|v| &v.wire == wire).map(|v| member(v.variant())).unwrap_or_default();
                    format!("{n}.{v}")
                }
                _ => "None".into(),
            }
        }
        Default::Struct => {
            let Ty::Named(n) = &f.ty else { return "None".into() };
            format!("msgspec.field(default_factory=lambda: {n}())")
        }
    }
}

/// The fields in constructor order: required first (as the model has them), then those with
/// defaults.
pub fn ordered(fields: &[Field]) -> Vec<&Field> {
    fields.iter().filter(|f| f.default.is_none()).chain(fields.iter().filter(|f| f.default.is_some())).collect()
}

fn class_def(model: &Model, c: &Class<'_>) -> String {
    let base = if c.tagged { "Variant" } else { "Record" };
    let mut doc = c.doc.to_owned();
    if !c.fields.is_empty() {
        doc += "\n\nAttributes:";
        for f in ordered(c.fields) {
            let fdoc = f.doc.split("\n\n").next().unwrap_or("").replace('\n', " ");
            let _ = write!(doc, "\n    {}: {}", f.name, fdoc);
        }
    }
    // `frozen=True` again on each class: type checkers read each class statement on its own.
    let mut out = format!("\n\nclass {}({base}, frozen=True):\n{}", c.name, docstring(&doc, "    "));
    if !c.fields.is_empty() {
        out += "\n";
    }
    for f in ordered(c.fields) {
        let ann = annotation(model, &f.ty);
        match &f.default {
            None => {
                let _ = writeln!(out, "    {}: {ann}", f.name);
            }
            Some(d) => {
                let _ = writeln!(out, "    {}: {ann} = {}", f.name, default_expr(model, f, d));
            }
        }
    }
    let _ = writeln!(out, "\n\n__all__.append({:?})", c.name);
    out
}

/// The error union as exceptions: `AcpError` and one subclass per class, reached as
/// `AcpError.<Class>`; private structs carry each across.
fn error_classes(model: &Model, t: &TypeDef) -> String {
    let Kind::Union(u) = &t.kind else { return String::new() };
    let name = &t.name;
    let classes: Vec<Class<'_>> = u
        .variants
        .iter()
        .filter_map(|v| if let Payload::Class { class, .. } = &v.payload { model.class(class) } else { None })
        .collect();
    let mut out = format!("\n\nclass {name}(Exception):\n{}", docstring(&t.doc, "    "));
    out += "\n    _fields: ClassVar[Tuple[str, ...]] = ()\n";
    for c in &classes {
        let _ = writeln!(out, "    {}: ClassVar[Type[_{name}{}]]", c.name, c.name);
    }
    let _ = write!(
        out,
        r#"
    def __repr__(self) -> str:
        fields = ", ".join(f"{{k}}={{getattr(self, k)!r}}" for k in self._fields)
        return f"{name}.{{type(self).__name__}}({{fields}})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(getattr(self, k) == getattr(other, k) for k in self._fields)

    def __hash__(self) -> int:
        return hash((type(self), tuple(repr(getattr(self, k)) for k in self._fields)))


__all__.append({name:?})
"#
    );
    for c in &classes {
        let fields = ordered(c.fields);
        let params: String = fields
            .iter()
            .map(|f| match &f.default {
                None => format!(", {}: {}", f.name, annotation(model, &f.ty)),
                Some(d) => format!(", {}: {} = {}", f.name, annotation(model, &f.ty), default_expr(model, f, d)),
            })
            .collect();
        let message = if fields.iter().any(|f| f.name == "detail") {
            "detail".to_owned()
        } else if let Some(f) = fields.iter().find(|f| matches!(&f.ty, Ty::Named(n) if n == "ProtocolError")) {
            // The agent's error as a person reads it: `-32000 Authentication required: …`.
            format!("f\"{{{0}.code}} {{{0}.message}}\" + (f\": {{{0}.detail}}\" if {0}.detail else \"\")", f.name)
        } else {
            fields.first().map(|f| format!("str({})", f.name)).unwrap_or_else(|| "\"\"".into())
        };
        let assigns: String = fields.iter().map(|f| format!("        self.{0} = {0}\n", f.name)).collect();
        let names: String = fields.iter().map(|f| format!("{:?}, ", f.name)).collect();
        let _ = write!(
            out,
            "\n\nclass _{name}{class}({name}):\n{doc}\n    _fields = ({names})\n\n    def __init__(self{params}) -> None:\n        super().__init__({message})\n{assigns}\n\n_{name}{class}.__name__ = {class:?}\n_{name}{class}.__qualname__ = \"{name}.{class}\"\n{name}.{class} = _{name}{class}\n",
            class = c.name,
            doc = docstring(c.doc, "    "),
        );
        // The struct that carries it across.
        let fields_decl: String = fields
            .iter()
            .map(|f| match &f.default {
                None => format!("    {}: {}\n", f.name, annotation(model, &f.ty)),
                Some(d) => format!("    {}: {} = {}\n", f.name, annotation(model, &f.ty), default_expr(model, f, d)),
            })
            .collect();
        let body = if fields_decl.is_empty() { "    pass\n".to_owned() } else { fields_decl };
        let _ = write!(out, "\n\nclass _{name}{class}Value(Variant, frozen=True, tag={class:?}):\n{body}", class = c.name);
    }
    let values: Vec<String> = classes.iter().map(|c| format!("_{name}{}Value", c.name)).collect();
    let _ = write!(
        out,
        r#"

_{name}Value = {values}
_{name}_decoder = msgspec.msgpack.Decoder(_{name}Value)


def decode_error(data: bytes) -> {name}:
    """The error ``data`` encodes (what ``FfiError.Failed`` carries)."""
    value = _{name}_decoder.decode(data)
    cls: Type[{name}] = getattr({name}, type(value).__name__[len("_{name}"):-len("Value")])
    return cls(**msgspec.structs.asdict(value))


def encode_error(error: {name}) -> bytes:
    """``error``, encoded (for ``FfiError.Failed``)."""
    carrier = globals()["_{name}" + type(error).__name__ + "Value"]
    return _encoder.encode(carrier(**{{k: getattr(error, k) for k in error._fields}}))
"#,
        values = values.join(" | ")
    );
    out
}

fn exports(model: &Model) -> String {
    let names: BTreeSet<&str> =
        model.types.iter().filter(|t| matches!(t.kind, Kind::Union(_) | Kind::Newtype(_))).map(|t| t.name.as_str()).collect();
    let mut out =
        String::from("\n\nRequestId = int | str | None\n\"\"\"A JSON-RPC request id: an integer, a string or null.\"\"\"\n\n");
    let list: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let _ = write!(
        out,
        r#"__all__ += ["RequestId", {list}]

_encoder = msgspec.msgpack.Encoder()
_decoders: Dict[Any, "msgspec.msgpack.Decoder[Any]"] = {{}}

T = TypeVar("T")


def encode(value: Any) -> bytes:
    """``value`` in the boundary encoding."""
    return _encoder.encode(value)


def decode(type: Any, data: bytes) -> Any:
    """The value of ``type`` (a class, a union, ``List[...]``, ``Optional[...]``) that ``data``
    encodes. Raises ``msgspec.ValidationError`` when it is not one."""
    decoder = _decoders.get(type)
    if decoder is None:
        decoder = _decoders[type] = msgspec.msgpack.Decoder(type)
    return decoder.decode(data)

"#,
        list = list.join(", ")
    );
    out
}
