"""How the library's errors reach Python: every call into the library goes through :func:`call`
or :func:`acall`, which turn the error that crosses the FFI (``FfiError.Failed``: a message and
the encoded error) into the library's own :class:`AcpError` exception it encodes, and a wrong
argument into :class:`InvalidArgument`.

:class:`InvalidArgument` is an ``AcpError.InvalidInput`` (what ``except AcpError`` catches) and a
``TypeError`` and ``ValueError`` as well, for code that catches those.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, NoReturn, TypeVar

import msgspec

from .acp_inject_ffi import acp_inject_ffi as _ffi
from .values import AcpError, _AcpErrorInvalidInput, decode_error, encode_error

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


def to_ffi(e: BaseException) -> BaseException:
    """What a runtime's error becomes for the library: an :class:`AcpError` crosses as itself;
    anything else is the runtime's failure (``Internal``), its text kept."""
    error = e if isinstance(e, AcpError) else AcpError.Internal(f"{type(e).__name__}: {e}")
    return _ffi.FfiError.Failed(str(error), encode_error(error))  # type: ignore[no-any-return]
