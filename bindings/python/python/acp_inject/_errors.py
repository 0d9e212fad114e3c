"""How the library's errors reach Python: every call into the library goes through :func:`call`
or :func:`acall`, which turn the error that crosses the FFI (``FfiError.Failed``: a message and
the encoded error) into the library's own :class:`AcpError` exception it encodes, and a wrong
argument into :class:`InvalidArgument`.

:class:`InvalidArgument` is an ``AcpError.InvalidInput`` (what ``except AcpError`` catches) and a
``TypeError`` and ``ValueError`` as well, for code that catches those.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Awaitable, Callable, NoReturn, TypeVar

import msgspec

from .acp_inject_ffi import acp_inject_ffi as _ffi
from .values import AcpError, _AcpErrorInvalidInput, decode_error, encode, encode_error

T = TypeVar("T")


class InvalidArgument(_AcpErrorInvalidInput, TypeError, ValueError):
    """An argument of the wrong type or out of range, refused before the call reached the
    library (nothing changed). Its ``detail`` names the call and the problem."""


_MISMATCHES = (TypeError, ValueError, AttributeError, OverflowError, msgspec.EncodeError)


def raise_from(e: BaseException, what: str) -> NoReturn:
    """Raises what ``e`` (raised by a call into the library named ``what``) means."""
    if isinstance(e, _ffi.FfiError.Failed):
        raise decode_error(e.error) from None
    raise InvalidArgument(f"{what}: {e}") from e


def call(what: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, a call into the library named ``what``, with its errors as :class:`AcpError`."""
    try:
        return fn(*args)
    except _ffi.FfiError.Failed as e:
        raise decode_error(e.error) from None
    except _MISMATCHES as e:
        raise_from(e, what)


async def acall(what: str, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await fn(*args)``, like :func:`call`."""
    try:
        awaitable = fn(*args)
    except _ffi.FfiError.Failed as e:
        raise decode_error(e.error) from None
    except _MISMATCHES as e:
        raise_from(e, what)
    try:
        return await awaitable
    except _ffi.FfiError.Failed as e:
        raise decode_error(e.error) from None


def arg(value: Any) -> bytes:
    """``value`` encoded for the library; a value that is none of the library's (an object of
    another class somewhere inside it) is an :class:`InvalidArgument`."""
    try:
        return encode(value)
    except _MISMATCHES as e:
        raise InvalidArgument(f"{type(value).__name__} cannot be sent: {e}") from None


def to_ffi(e: BaseException) -> BaseException:
    """What a runtime's error becomes for the library: an :class:`AcpError` crosses as itself;
    anything else is the runtime's failure (``Internal``), its text kept."""
    error = e if isinstance(e, AcpError) else AcpError.Internal(f"{type(e).__name__}: {e}")
    return _ffi.FfiError.Failed(str(error), encode_error(error))  # type: ignore[no-any-return]


F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def _checked(fn: F, label: str) -> F:
    """``fn``, with a wrong argument (a Python ``TypeError``, ``ValueError`` or
    ``AttributeError`` raised while its arguments are taken apart) raised as
    :class:`InvalidArgument` naming ``label``."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except AcpError:
                raise
            except _MISMATCHES as e:
                raise InvalidArgument(f"{label}: {e}") from e

        return checked_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def checked_sync(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AcpError:
            raise
        except _MISMATCHES as e:
            raise InvalidArgument(f"{label}: {e}") from e

    return checked_sync  # type: ignore[return-value]


def checked(cls: C) -> C:
    """Class decorator for the package's own classes: each public method (and ``__init__``) the
    class defines raises :class:`InvalidArgument` for a wrong argument. Async generators and
    methods marked :func:`checks_itself` (hot paths that check their arguments) are left as
    they are."""
    for attr, raw in list(vars(cls).items()):
        if attr.startswith("_") and attr != "__init__":
            continue
        label = cls.__name__ if attr == "__init__" else f"{cls.__name__}.{attr}"
        if isinstance(raw, classmethod):
            setattr(cls, attr, classmethod(_checked(raw.__func__, label)))
        elif inspect.isfunction(raw) and not inspect.isasyncgenfunction(raw) and not getattr(raw, "_checks_itself", False):
            setattr(cls, attr, _checked(raw, label))
    return cls


def checks_itself(fn: F) -> F:
    """Marks a method that raises :class:`InvalidArgument` itself (a hot path that should not
    pay for a second wrapper): :func:`checked` leaves it alone."""
    fn._checks_itself = True  # type: ignore[attr-defined]
    return fn
