"""Writes a type stub (.pyi) for a UniFFI-generated Python module.

UniFFI's Python output makes each variant of a data-carrying enum a subclass of the enum at
run time (``C.V = type("C.V", (C.V, C), {})``) and redefines error enums after their
variants, so type checkers see variants that are not of their enum's type. The stub states
what the run time does: every variant class derives from its enum (errors from the error
base), function bodies are elided (``async`` ones stay ``async``), unannotated parameters
are typed ``Any``, and the module's public type aliases (``MessageId = str``) are kept, those
naming a class of another module (``StopReason = acp_inject.enums.StopReason``) as imports. Run by
``cargo xtask codegen``: ``python3 uniffi_stub.py MODULE.py > MODULE.pyi``.
"""

from __future__ import annotations

import ast
import sys
from typing import Dict, List, Set, Union


def variant_links(tree: ast.Module) -> Dict[str, Set[str]]:
    """``{"C": {"V", …}}`` from ``C.V = type("C.V", (C.V, C), {})`` statements."""
    links: Dict[str, Set[str]] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "type"
        ):
            links.setdefault(node.targets[0].value.id, set()).add(node.targets[0].attr)
    return links


def public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def stub_function(fn: Union[ast.FunctionDef, ast.AsyncFunctionDef], indent: str) -> List[str]:
    args = fn.args
    star = [a for a in (args.vararg, args.kwarg) if a is not None]
    for a in args.posonlyargs + args.args + args.kwonlyargs + star:
        if a.annotation is None and a.arg not in ("self", "cls"):
            a.annotation = ast.Name("typing.Any")
    if fn.returns is None:
        fn.returns = ast.Name("None") if fn.name == "__init__" else ast.Name("typing.Any")
    decorators = [f"{indent}@{ast.unparse(d)}" for d in fn.decorator_list if ast.unparse(d) in ("staticmethod", "classmethod")]
    fn.decorator_list = []
    fn.body = [ast.Expr(ast.Constant(...))]
    head = ast.unparse(fn).splitlines()[0]
    return decorators + [f"{indent}{head} ..."]


def stub_class(cls: ast.ClassDef, indent: str, bases: List[str], variants: Set[str], error_base: str) -> List[str]:
    lines = [f"{indent}class {cls.name}({', '.join(bases)}):" if bases else f"{indent}class {cls.name}:"]
    body: List[str] = []
    fields: Dict[str, str] = {}
    constants: List[str] = []
    for node in cls.body:
        if isinstance(node, ast.ClassDef) and public(node.name):
            sub_bases = [cls.name] if node.name in variants else [ast.unparse(b) for b in node.bases]
            if error_base and node.name in variants:
                sub_bases = [error_base]
            body += stub_class(node, indent + "    ", sub_bases, set(), "")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and public(node.name):
            if node.name == "__init__":
                params = {a.arg: a.annotation for a in node.args.args[1:] + node.args.kwonlyargs}
                # Records and variants store their parameters: `self.x = x`.
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
                        t = sub.targets[0]
                        if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                                and public(t.attr) and isinstance(sub.value, ast.Name) and sub.value.id in params):
                            ann = params[sub.value.id]
                            fields[t.attr] = ast.unparse(ann) if ann is not None else "typing.Any"
            body += stub_function(node, indent + "    ")
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and public(node.target.id):
            fields[node.target.id] = ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and public(t.id) and isinstance(node.value, ast.Constant):
                    constants.append(f"{indent}    {t.id} = {node.value.value!r}")
    field_lines = [f"{indent}    {k}: {v}" for k, v in fields.items()]
    return lines + (constants + field_lines + body or [f"{indent}    ..."])


def main(path: str) -> str:
    tree = ast.parse(open(path, encoding="utf-8").read())
    links = variant_links(tree)
    out = [
        f"# Type stub for {path.rsplit('/', 1)[-1]}, written by codegen/python/uniffi_stub.py.",
        "import asyncio",
        "import typing",
        "import enum",
        "from dataclasses import dataclass",
        "",
    ]
    seen: Set[str] = set()
    error_classes: Set[str] = set()
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    # An error enum is a class defined twice: first `class E(Exception)`, then the variants.
    counts: Dict[str, int] = {}
    for c in classes:
        counts[c.name] = counts.get(c.name, 0) + 1
    for c in classes:
        if counts[c.name] > 1:
            error_classes.add(c.name)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and public(node.name):
            if node.name in error_classes:
                if node.name in seen:
                    # The second definition holds the variants: each derives from the error.
                    variants = {n.name for n in node.body if isinstance(n, ast.ClassDef)}
                    body = stub_class(node, "", [], variants, node.name)[1:]
                    out += body
                    continue
                seen.add(node.name)
                out.append(f"class {node.name}(Exception):")
                continue
            bases = [ast.unparse(b) for b in node.bases]
            out += stub_class(node, "", bases, links.get(node.name, set()), "")
            out.append("")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and public(node.name):
            out += stub_function(node, "")
            out.append("")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
            if not public(name):
                continue
            if isinstance(value, ast.Name) and public(value.id):
                # A public type alias (`MessageId = str`, `StringPatchMember = StringPatch`).
                out += [f"{name} = {value.id}", ""]
            elif isinstance(value, ast.Attribute) and value.attr == name:
                # A custom type lifted into a class of another module
                # (`StopReason = acp_inject.enums.StopReason`): re-exported from there.
                out += [f"from {ast.unparse(value.value)} import {name} as {name}", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1]))
