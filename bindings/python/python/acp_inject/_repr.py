"""A ``repr`` that shows the fields, for the generated records and enum variants.

UniFFI's Python output decorates every record and enum variant with ``@dataclass`` but
declares no annotated fields, so the ``repr`` the decorator writes lists none: ``Usage()``.
UniFFI's one hook for a ``repr`` is exporting Rust's ``Debug``, which would spell values the
Rust way (``Usage { total_tokens: 150, .. }``) and would also replace Kotlin's data-class
``toString`` and Swift's printing, which already show the fields. So this package gives each
of those classes a ``repr`` written the Python way, from the class's public surface only: the
parameters of its constructor (records, variants with named fields) or the values it holds
(tuple variants). The generated module is not edited. Should UniFFI one day declare the
fields, ``dataclasses.fields`` finds them and the decorator's own ``repr`` is kept.

    >>> Usage(total_tokens=150)
    Usage(total_tokens=150, input_tokens=0, output_tokens=0, thought_tokens=None, ...)

The text evaluates back to an equal value where every field's ``repr`` does.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType
from typing import Any, Callable, Iterator, Tuple


def _fields(cls: type) -> Tuple[str, ...]:
    """The constructor's named parameters; none for a tuple variant (``*values``)."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(p.name for p in parameters if p.kind in named)


def _repr_for(cls: type) -> Callable[[Any], str]:
    fields = _fields(cls)

    def __repr__(self: Any) -> str:
        values = self.__dict__.get("_values")
        if isinstance(values, tuple):  # a tuple variant: SessionEvent.ITEM(PendingItem(...))
            arguments = ", ".join(repr(value) for value in values)
        else:
            arguments = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields)
        return f"{type(self).__name__}({arguments})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    setattr(__repr__, "_shows_fields", True)
    return __repr__


def _classes(module: ModuleType) -> Iterator[type]:
    """The module's public classes and, inside each enum, its variant classes."""
    for name, value in vars(module).items():
        if name.startswith("_") or not isinstance(value, type) or value.__module__ != module.__name__:
            continue
        yield value
        for inner in vars(value).values():
            if isinstance(inner, type) and issubclass(inner, value) and inner is not value:
                yield inner


def _has_empty_dataclass_repr(cls: type) -> bool:
    return (
        dataclasses.is_dataclass(cls)
        and not dataclasses.fields(cls)
        and not getattr(cls.__repr__, "_shows_fields", False)
    )


def install(*modules: ModuleType) -> int:
    """Gives every record and variant class of ``modules`` whose ``repr`` is the decorator's
    empty one a ``repr`` that shows its fields; how many classes it changed."""
    changed = 0
    for module in modules:
        for cls in _classes(module):
            if _has_empty_dataclass_repr(cls):
                setattr(cls, "__repr__", _repr_for(cls))
                changed += 1
    return changed
