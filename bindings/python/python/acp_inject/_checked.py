"""Wrong argument types are the library's typed error, like every other refusal.

The generated module checks each argument before anything crosses into the library, and
raises whatever Python raises for the mismatch (``TypeError`` for a ``str`` that is not one,
``ValueError`` for an out-of-range integer or an unknown enum value, ``AttributeError`` for an
object that is not the record it should be). Every call of the library's objects and functions
is wrapped here so these become :class:`InvalidArgument`: an ``AcpError.InvalidInput`` (what
``except AcpError`` catches), and a ``TypeError`` and ``ValueError`` as well, for code that
catches those. Imported for its effect by the package's ``__init__``.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Tuple, Type

from . import acp_inject_ffi as _ffi
from .acp_inject_ffi import AcpError


class InvalidArgument(AcpError.InvalidInput, TypeError, ValueError):
    """An argument of the wrong type or out of range, refused before the call reached the
    library (nothing changed). ``detail`` names the call and the problem."""


_MISMATCHES: Tuple[Type[BaseException], ...] = (TypeError, ValueError, AttributeError)

# The generated objects whose calls are checked, and the module's functions. ``VectorRun`` is
# the conformance engine, present only in the test package (a test-only UniFFI component beside
# the shipped one); checked alike when it is there.
_OBJECTS = ("AgentCore", "ClientCore", "Connection", "Session", "AgentServer", "TurnContext", "VectorRun")
_FUNCTIONS = ("connect", "connect_url", "default_agent_config", "default_connect_options", "library_version", "shutdown_runtime")


def _checked(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except AcpError:
                raise
            except _MISMATCHES as e:
                raise InvalidArgument(f"{name}: {e}") from e

        return checked_async

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AcpError:
            raise
        except _MISMATCHES as e:
            raise InvalidArgument(f"{name}: {e}") from e

    return checked


def _install() -> None:
    for cls_name in _OBJECTS:
        cls = getattr(_ffi, cls_name, None)
        if cls is None:
            continue
        for attr, raw in list(vars(cls).items()):
            if attr.startswith("_") and attr != "__init__":
                continue
            label = f"{cls_name}.{attr}" if attr != "__init__" else cls_name
            if isinstance(raw, classmethod):
                setattr(cls, attr, classmethod(_checked(raw.__func__, label)))
            elif isinstance(raw, staticmethod):
                setattr(cls, attr, staticmethod(_checked(raw.__func__, label)))
            elif inspect.isfunction(raw):
                setattr(cls, attr, _checked(raw, label))
    for fn_name in _FUNCTIONS:
        setattr(_ffi, fn_name, _checked(getattr(_ffi, fn_name), fn_name))


_install()
