"""Wrong argument types are the library's typed error, like every other refusal.

The generated module checks each argument before anything crosses into the library, and
raises whatever Python raises for the mismatch (``TypeError`` for a ``str`` that is not one,
``ValueError`` for an out-of-range integer or an unknown enum value, ``AttributeError`` for an
object that is not the record it should be). The package's own classes (:class:`AgentCore`,
:class:`ClientCore`, :class:`Client`, :class:`Session`, :class:`Turn`, …) turn these into
:class:`InvalidArgument`: an ``AcpError.InvalidInput`` (what ``except AcpError`` catches), and a
``TypeError`` and ``ValueError`` as well, for code that catches those.

Only the package's own classes are wrapped (:func:`checked_methods` on a class defined here,
which may subclass a generated one); the generated module itself is left exactly as UniFFI
wrote it, and called directly (``acp_inject.acp_inject_ffi``) raises what it raises.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Tuple, Type, TypeVar

from .acp_inject_ffi import AcpError


class InvalidArgument(AcpError.InvalidInput, TypeError, ValueError):
    """An argument of the wrong type or out of range, refused before the call reached the
    library (nothing changed). Its detail attribute names the call and the problem."""


_MISMATCHES: Tuple[Type[BaseException], ...] = (TypeError, ValueError, AttributeError)

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def checked(fn: F, name: str) -> F:
    """``fn``, with an argument mismatch raised as :class:`InvalidArgument` naming ``name``."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except AcpError:
                raise
            except _MISMATCHES as e:
                raise InvalidArgument(f"{name}: {e}") from e

        return checked_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def checked_sync(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AcpError:
            raise
        except _MISMATCHES as e:
            raise InvalidArgument(f"{name}: {e}") from e

    return checked_sync  # type: ignore[return-value]


def checked_methods(cls: C) -> C:
    """Class decorator for the package's own classes: each public method the class defines, or
    inherits from a generated base and does not override, is set on ``cls`` itself wrapped by
    :func:`checked` (the base is not touched). A method marked :func:`checks_itself` is left
    as it is, and so are async generators (their arguments are checked by the calls inside)."""
    name = cls.__name__
    seen = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        for attr, raw in list(vars(klass).items()):
            if attr in seen or (attr.startswith("_") and attr != "__init__"):
                continue
            seen.add(attr)
            label = name if attr == "__init__" else f"{name}.{attr}"
            if isinstance(raw, classmethod):
                setattr(cls, attr, classmethod(checked(raw.__func__, label)))
            elif isinstance(raw, staticmethod):
                setattr(cls, attr, staticmethod(checked(raw.__func__, label)))
            elif inspect.isfunction(raw) and not inspect.isasyncgenfunction(raw) and not getattr(raw, "_checks_itself", False):
                setattr(cls, attr, checked(raw, label))
    return cls


def checks_itself(fn: F) -> F:
    """Marks a method that raises :class:`InvalidArgument` itself (a hot path that should not
    pay for a second wrapper): :func:`checked_methods` leaves it alone."""
    fn._checks_itself = True  # type: ignore[attr-defined]
    return fn
