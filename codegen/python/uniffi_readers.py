"""Writes flat readers for a UniFFI-generated Python module.

UniFFI's generated Python decodes a returned value through one converter class per type:
every field is a ``Converter.read(buf)`` call, every number a method call on a stream object,
every record an ``__init__`` with keyword arguments. For a streaming client that decodes one
agent line's events at a time, that is most of the cost of the line.

This script reads the generated module (its source, with :mod:`ast`), recognises each
converter's ``read`` by its shape (a number, a string, an alias, an optional, a sequence, a
map, a record, an enum) and writes, for each one, a function ``r_<Converter>(data, offset)``
that does the same decoding over a ``bytes`` object with a local offset: numbers with
precompiled ``struct`` readers, strings in one slice, optionals and strings inline, objects
built with ``object.__new__`` and their attributes set directly (only where the class's
``__init__`` does nothing but set those attributes; otherwise it is called). A converter of any
other shape keeps its generated ``read``, called on a stream over the same bytes. The values
are the generated classes' own instances, equal to what the generated readers return.

``install()`` in the written module replaces each recognised converter's ``read`` with its
flat reader (over the stream ``acp_inject._fastpath`` installs, whose data is ``bytes``);
``uninstall()`` puts them back. Run by ``cargo xtask codegen``:
``python3 uniffi_readers.py MODULE.py > _readers.py``.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

# How many levels deep a reader builds nested records and enum values in place instead of
# calling their reader (each level removes a Python call per value, and adds code).
INLINE_DEPTH = 4

# The module-level name of each struct format's reader in the written module.
FORMAT_NAMES = {">b": "_I8", ">B": "_U8", ">h": "_I16", ">H": "_U16", ">i": "_I32", ">I": "_U32", ">q": "_I64", ">Q": "_U64", ">f": "_F32", ">d": "_F64"}

# struct formats of the generated stream's number readers.
NUMBERS = {
    "read_i8": (">b", 1), "read_u8": (">B", 1), "read_i16": (">h", 2), "read_u16": (">H", 2),
    "read_i32": (">i", 4), "read_u32": (">I", 4), "read_i64": (">q", 8), "read_u64": (">Q", 8),
    "read_float": (">f", 4), "read_double": (">d", 8),
}


@dataclass
class Number:
    method: str


@dataclass
class Bool:
    pass


@dataclass
class String:
    pass


@dataclass
class Alias:
    target: str


@dataclass
class Optional_:
    inner: str


@dataclass
class Sequence:
    inner: str


@dataclass
class Map:
    key: str
    value: str


@dataclass
class Build:
    """An object built from fields read in order: ``cls`` (a dotted name in the module) and
    either the attribute each field goes to (``attrs``, set on ``object.__new__(cls)``), the
    tuple of a tuple variant (``tuple_values``), or a call of the class (positional, or with
    the keywords ``keywords``)."""

    cls: str
    fields: List[str]
    attrs: Optional[List[str]] = None
    tuple_values: bool = False
    keywords: Optional[List[str]] = None


@dataclass
class Record:
    build: Build


@dataclass
class Enum:
    # variant number -> a constant (a unit variant of a plain enum) or an object built
    variants: Dict[int, Union[str, Build]] = field(default_factory=dict)


Kind = Union[Number, Bool, String, Alias, Optional_, Sequence, Map, Record, Enum]


def dotted(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def converter_call(node: ast.expr) -> Optional[str]:
    """``X.read(buf)`` -> ``X``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "read"
        and isinstance(node.func.value, ast.Name)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "buf"
        and not node.keywords
    ):
        return node.func.value.id
    return None


class Classes:
    """The module's classes (nested ones by dotted name) and what their ``__init__`` does."""

    def __init__(self, tree: ast.Module) -> None:
        self.defs: Dict[str, ast.ClassDef] = {}

        def walk(body: List[ast.stmt], prefix: str) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    name = prefix + node.name
                    self.defs[name] = node
                    walk(node.body, name + ".")

        walk(tree.body, "")

    def plain_init(self, cls: str) -> Optional[Tuple[str, List[str]]]:
        """``("attrs", params)`` when ``__init__`` only sets ``self.p = p`` for each parameter,
        ``("tuple", [])`` for a tuple variant's ``__init__(self, *values)``; else ``None``."""
        node = self.defs.get(cls)
        if node is None:
            return None
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is None:
            return None
        if any(isinstance(b, ast.FunctionDef) and b.name in ("__post_init__", "__setattr__") for b in node.body):
            return None
        args = init.args
        body = [b for b in init.body if not isinstance(b, ast.Pass) and not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        if args.vararg is not None and args.vararg.arg == "values" and not args.kwonlyargs and len(args.args) == 1:
            text = ast.unparse(ast.Module(body=body, type_ignores=[]))
            if re.fullmatch(r"if len\(values\) != \d+:\n    raise TypeError\(.*\)\nself\._values = values", text, re.S):
                return ("tuple", [])
            return None
        if args.vararg or args.kwarg or args.defaults or args.kw_defaults and any(d is not None for d in args.kw_defaults):
            return None
        params = [a.arg for a in args.args[1:]] + [a.arg for a in args.kwonlyargs]
        if len(body) != len(params):
            return None
        for stmt, p in zip(body, params):
            ok = (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Attribute)
                and isinstance(stmt.targets[0].value, ast.Name)
                and stmt.targets[0].value.id == "self"
                and stmt.targets[0].attr == p
                and isinstance(stmt.value, ast.Name)
                and stmt.value.id == p
            )
            if not ok:
                return None
        return ("attrs", params)


def all_converters(nodes: List[ast.expr]) -> Optional[List[str]]:
    """The converters of ``X.read(buf), …``; ``None`` when any is something else."""
    names = [converter_call(n) for n in nodes]
    return [n for n in names if n is not None] if None not in names else None


def build_of(call: ast.Call, classes: Classes) -> Optional[Build]:
    cls = dotted(call.func)
    if cls is None or (call.args and call.keywords):
        return None
    init = classes.plain_init(cls)
    if call.keywords:
        names = [k.arg for k in call.keywords if k.arg is not None]
        fields = all_converters([k.value for k in call.keywords])
        if fields is None or len(names) != len(call.keywords):
            return None
        plain = init is not None and init[0] == "attrs" and sorted(init[1]) == sorted(names)
        return Build(cls, fields, attrs=names if plain else None, keywords=None if plain else names)
    fields = all_converters(call.args)
    if fields is None:
        return None
    if init is not None and init[0] == "tuple":
        return Build(cls, fields, tuple_values=True)
    if init is not None and init[0] == "attrs" and len(init[1]) == len(fields):
        return Build(cls, fields, attrs=init[1])
    return Build(cls, fields)


def classify(name: str, read: ast.FunctionDef, classes: Classes, module: Dict[str, ast.ClassDef]) -> Optional[Kind]:
    body = [b for b in read.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    text = ast.unparse(ast.Module(body=body, type_ignores=[]))
    m = re.fullmatch(r"return buf\.(read_\w+)\(\)", text)
    if m and m.group(1) in NUMBERS:
        return Number(m.group(1))
    if name == "_UniffiFfiConverterBoolean" and text == "return cls.lift(buf.read_u8())":
        lift = next((f for f in module[name].body if isinstance(f, ast.FunctionDef) and f.name == "lift"), None)
        if lift is not None and ast.unparse(lift.body[-1]) == "return value != 0":
            return Bool()
        return None
    if text == (
        "size = buf.read_i32()\nif size < 0:\n    raise InternalError('Unexpected negative string length')\n"
        "utf8_bytes = buf.read(size)\nreturn utf8_bytes.decode('utf-8')"
    ):
        return String()
    m = re.fullmatch(r"return (\w+)\.read\(buf\)", text)
    if m:
        return Alias(m.group(1))
    m = re.fullmatch(
        r"flag = buf\.read_u8\(\)\nif flag == 0:\n    return None\nelif flag == 1:\n    return (\w+)\.read\(buf\)\n"
        r"else:\n    raise InternalError\('Unexpected flag byte for optional type'\)",
        text,
    )
    if m:
        return Optional_(m.group(1))
    m = re.fullmatch(
        r"count = buf\.read_i32\(\)\nif count < 0:\n    raise InternalError\('Unexpected negative sequence length'\)\n"
        r"return \[(\w+)\.read\(buf\) for i in range\(count\)\]",
        text,
    )
    if m:
        return Sequence(m.group(1))
    m = re.fullmatch(
        r"count = buf\.read_i32\(\)\nif count < 0:\n    raise InternalError\('Unexpected negative map size'\)\nd = \{\}\n"
        r"for i in range\(count\):\n    key = (\w+)\.read\(buf\)\n    val = (\w+)\.read\(buf\)\n    d\[key\] = val\nreturn d",
        text,
    )
    if m:
        return Map(m.group(1), m.group(2))
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call):
        b = build_of(body[0].value, classes)
        return Record(b) if b else None
    if body and ast.unparse(body[0]) == "variant = buf.read_i32()" and ast.unparse(body[-1]).startswith("raise InternalError("):
        enum = Enum()
        for stmt in body[1:-1]:
            if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Return)):
                return None
            m = re.fullmatch(r"variant == (\d+)", ast.unparse(stmt.test))
            value = stmt.body[0].value
            if not m or value is None:
                return None
            if isinstance(value, ast.Call):
                b = build_of(value, classes)
                if b is None:
                    return None
                enum.variants[int(m.group(1))] = b
            else:
                constant = dotted(value)
                if constant is None:
                    return None
                enum.variants[int(m.group(1))] = constant
        return enum
    return None


class Writer:
    def __init__(self, kinds: Dict[str, Kind]) -> None:
        self.kinds = kinds
        self.lines: List[str] = []
        self.constants: Dict[str, str] = {}  # dotted module name -> local alias
        self.formats: Dict[str, str] = {}  # struct format -> local alias

    def const(self, dotted_name: str) -> str:
        if dotted_name not in self.constants:
            self.constants[dotted_name] = f"_K{len(self.constants)}"
        return self.constants[dotted_name]

    def fmt(self, f: str) -> str:
        self.formats[f] = FORMAT_NAMES[f]
        return FORMAT_NAMES[f]

    def read(self, conv: str, target: str, ind: str, out: List[str], depth: int = 0) -> None:
        """Statements that read a value of converter ``conv`` at ``o`` into ``target``. A record
        is built in place (no call) down to ``INLINE_DEPTH`` records deep."""
        k = self.kinds.get(conv)
        if isinstance(k, Alias):
            self.read(k.target, target, ind, out, depth)
        elif isinstance(k, Record) and depth < INLINE_DEPTH:
            var = f"w{depth}"
            self.build(k.build, ind, out, var, depth + 1)
            out.append(f"{ind}{target} = {var}")
        elif isinstance(k, Enum) and depth < INLINE_DEPTH:
            tag, var = f"t{depth}", f"w{depth}"
            out.append(f"{ind}{tag} = {self.fmt('>i')}(d, o)[0]")
            out.append(f"{ind}o += 4")
            for i, (number, variant) in enumerate(sorted(k.variants.items())):
                out.append(f"{ind}{'if' if i == 0 else 'elif'} {tag} == {number}:")
                if isinstance(variant, str):
                    out.append(f"{ind}    {target} = {self.const(variant)}")
                else:
                    self.build(variant, ind + "    ", out, var, depth + 1)
                    out.append(f"{ind}    {target} = {var}")
            out.append(f"{ind}else:")
            out.append(f"{ind}    raise _InternalError(\"Raw enum value doesn't match any cases\")")
        elif isinstance(k, Number):
            f, size = NUMBERS[k.method]
            out.append(f"{ind}{target} = {self.fmt(f)}(d, o)[0]")
            out.append(f"{ind}o += {size}")
        elif isinstance(k, Bool):
            out.append(f"{ind}{target} = d[o] != 0")
            out.append(f"{ind}o += 1")
        elif isinstance(k, String):
            # An unsigned length: a negative one reads past the end, and the caller's final
            # offset check (or the next read) fails.
            out.append(f"{ind}n = {self.fmt('>I')}(d, o)[0] + 4")
            out.append(f"{ind}{target} = d[o + 4:o + n].decode()")
            out.append(f"{ind}o += n")
        elif isinstance(k, Optional_):
            # Inline even around a call: most optionals are absent, and then no call is made.
            out.append(f"{ind}f = d[o]")
            out.append(f"{ind}o += 1")
            out.append(f"{ind}if f == 1:")
            self.read(k.inner, target, ind + "    ", out, depth)
            out.append(f"{ind}elif f == 0:")
            out.append(f"{ind}    {target} = None")
            out.append(f"{ind}else:")
            out.append(f"{ind}    raise _InternalError('Unexpected flag byte for optional type')")
        elif k is None:
            out.append(f"{ind}{target}, o = _generated_read({self.const(conv)}, d, o)")
        else:
            out.append(f"{ind}{target}, o = r{conv[len('_UniffiFfiConverter'):]}(d, o)")

    def build(self, b: Build, ind: str, out: List[str], var: str, depth: int = 0) -> None:
        cls = self.const(b.cls)
        if b.attrs is not None:
            out.append(f"{ind}{var} = _new({cls})")
            for conv, attr in zip(b.fields, b.attrs):
                self.read(conv, f"{var}.{attr}", ind, out, depth)
            return
        names = [f"a{depth}_{i}" for i in range(len(b.fields))]
        for conv, n in zip(b.fields, names):
            self.read(conv, n, ind, out, depth)
        if b.tuple_values:
            out.append(f"{ind}{var} = _new({cls})")
            out.append(f"{ind}{var}._values = ({', '.join(names)}{',' if len(names) == 1 else ''})")
        elif b.keywords is not None:
            out.append(f"{ind}{var} = {cls}({', '.join(f'{k}={n}' for k, n in zip(b.keywords, names))})")
        else:
            out.append(f"{ind}{var} = {cls}({', '.join(names)})")

    def function(self, conv: str) -> None:
        k = self.kinds[conv]
        name = f"r{conv[len('_UniffiFfiConverter'):]}"
        out = [f"def {name}(d: Buffer, o: int) -> Tuple[Any, int]:"]
        if isinstance(k, Sequence):
            out.append(f"    c = {self.fmt('>I')}(d, o)[0]")
            out.append("    o += 4")
            out.append("    items = []")
            out.append("    append = items.append")
            out.append("    for _ in range(c):")
            self.read(k.inner, "v", "        ", out)
            out.append("        append(v)")
            out.append("    return items, o")
        elif isinstance(k, Map):
            out.append(f"    c = {self.fmt('>I')}(d, o)[0]")
            out.append("    o += 4")
            out.append("    items = {}")
            out.append("    for _ in range(c):")
            self.read(k.key, "key", "        ", out)
            self.read(k.value, "v", "        ", out)
            out.append("        items[key] = v")
            out.append("    return items, o")
        elif isinstance(k, Record):
            self.build(k.build, "    ", out, "v")
            out.append("    return v, o")
        elif isinstance(k, Enum):
            out.append(f"    t = {self.fmt('>i')}(d, o)[0]")
            out.append("    o += 4")
            for i, (number, variant) in enumerate(sorted(k.variants.items())):
                out.append(f"    {'if' if i == 0 else 'elif'} t == {number}:")
                if isinstance(variant, str):
                    out.append(f"        return {self.const(variant)}, o")
                else:
                    self.build(variant, "        ", out, "v")
                    out.append("        return v, o")
            out.append("    raise _InternalError(\"Raw enum value doesn't match any cases\")")
        else:
            # Numbers, strings, aliases and optionals: the same statements as inline.
            self.read(conv, "v", "    ", out)
            out.append("    return v, o")
        self.lines.extend(out)
        self.lines.append("")
        self.lines.append("")


def main() -> None:
    path = sys.argv[1]
    source = open(path, "rb").read()
    tree = ast.parse(source.decode("utf-8"))
    classes = Classes(tree)
    module = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    kinds: Dict[str, Kind] = {}
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name.startswith("_UniffiFfiConverter")):
            continue
        read = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "read"), None)
        if read is None:
            continue
        kind = classify(node.name, read, classes, module)
        if kind is not None:
            kinds[node.name] = kind
    # An alias of a converter that is not recognised is not recognised either.
    changed = True
    while changed:
        changed = False
        for name, k in list(kinds.items()):
            if isinstance(k, Alias) and k.target not in kinds:
                del kinds[name]
                changed = True
    writer = Writer(kinds)
    for conv in sorted(kinds):
        writer.function(conv)
    consts = [f"{alias} = _g.{name}" for name, alias in sorted(writer.constants.items(), key=lambda kv: int(kv[1][2:]))]
    formats = [f"{alias} = struct.Struct({f!r}).unpack_from" for f, alias in sorted(writer.formats.items(), key=lambda kv: kv[1])]
    table = ",\n".join(f"    {conv!r}: r{conv[len('_UniffiFfiConverter'):]}" for conv in sorted(kinds))
    print(HEADER.format(module="acp_inject_ffi", sha256=hashlib.sha256(source).hexdigest()))
    print("\n".join(formats))
    print()
    print("\n".join(consts))
    print("\n")
    print("\n".join(writer.lines).rstrip())
    print("\n")
    print(f"READERS: Dict[str, Callable[[Buffer, int], Tuple[Any, int]]] = {{\n{table},\n}}")
    print(FOOTER)


HEADER = '''"""Flat readers for the generated module's converters (written by
``codegen/python/uniffi_readers.py`` from the generated source; see there). Each
``r<Converter>(d, o)`` decodes what ``<Converter>.read`` decodes, from ``bytes`` ``d`` at
offset ``o``, and returns the value and the offset after it."""

# mypy: ignore-errors
# ruff: noqa

from __future__ import annotations

import hashlib
import struct
from typing import Any, Callable, Dict, Tuple, Union

from .acp_inject_ffi import {module} as _g

#: What the readers read from: the bytes of a value, or a buffer the library wrote them into.
Buffer = Union[bytes, bytearray]

# The generated module these readers were written from: they are installed only over that one.
SOURCE_SHA256 = "{sha256}"

_new = object.__new__
_InternalError = _g.InternalError
_Stream = _g._UniffiRustBufferStream


def _generated_read(converter: Any, d: Buffer, o: int) -> Tuple[Any, int]:
    """A converter with no flat reader: its generated ``read`` on a stream over ``d``."""
    s = _Stream.__new__(_Stream)
    s.data, s.len, s.offset = bytes(d), len(d), o
    v = converter.read(s)
    return v, s.offset
'''

FOOTER = '''

_ORIGINAL: Dict[str, Any] = {}

#: Whether the flat readers are installed (``acp_inject._lines`` calls them directly then).
ACTIVE = False


def _wrap(flat: Callable[[Buffer, int], Tuple[Any, int]]) -> Any:
    def read(buf: Any) -> Any:
        try:
            v, o = flat(buf.data, buf.offset)
        except (struct.error, IndexError, UnicodeDecodeError) as e:
            raise _InternalError(f"read past end of rust buffer ({e})") from None
        if o > buf.len:
            raise _InternalError("read past end of rust buffer")
        buf.offset = o
        return v

    return staticmethod(read)


def _same_source() -> bool:
    try:
        with open(_g.__file__, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == SOURCE_SHA256
    except (OSError, TypeError):
        return False


def install() -> bool:
    """Every recognised converter's ``read`` becomes its flat reader. Needs a stream whose
    ``data`` is ``bytes`` (``acp_inject._fastpath``'s). ``False`` (nothing changed) when the
    generated module is not the one these readers were written from."""
    global ACTIVE
    if _ORIGINAL:
        return True
    if not _same_source():
        return False
    for name, flat in READERS.items():
        converter = getattr(_g, name)
        _ORIGINAL[name] = converter.__dict__["read"]
        converter.read = _wrap(flat)
    ACTIVE = True
    return True


def uninstall() -> None:
    """Puts the generated readers back."""
    global ACTIVE
    ACTIVE = False
    for name, read in _ORIGINAL.items():
        setattr(getattr(_g, name), "read", read)
    _ORIGINAL.clear()'''


if __name__ == "__main__":
    main()
