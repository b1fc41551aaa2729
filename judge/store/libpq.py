"""A minimal binding of libpq (ctypes) for reading the run store: queries with text results.

``import psycopg`` costs ~0.15 s of CPU (its adapters for every type, asyncio, ssl, its
hundreds of error classes), a third of a whole ``judge history``. The store reader needs a
connection, parameterised queries whose results are text and integers, and a server-side
cursor (plain SQL): libpq itself gives those. The library is the one psycopg's binary
package bundles (what the full store's psycopg uses), else the system's libpq;
:func:`connect` returns None when neither loads, and the caller reads with psycopg.

Parameters go as text with no type (the server infers it, as psycopg sends a ``str``);
results come back as text: integer columns as ``int``, booleans as ``bool``, NULL as None.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Connection", "ConninfoError", "PgError", "connect", "library"]

_CONNECTION_OK = 0
_COMMAND_OK, _TUPLES_OK = 1, 2
_INTEGERS = frozenset({20, 21, 23})  # int8, int2, int4
_BOOL = 16
_SYSTEM_NAMES = {"darwin": ("libpq.5.dylib", "libpq.dylib"),
                 "win32": ("libpq.dll",)}.get(sys.platform, ("libpq.so.5", "libpq.so"))

Row = tuple[Any, ...]


class PgError(Exception):
    """An error libpq or the server reported (its message as libpq gives it)."""


class ConninfoError(PgError):
    """A connection string libpq does not parse."""


class Connection:
    """One libpq connection in autocommit: each statement is its own transaction."""

    def __init__(self, lib: ctypes.CDLL, handle: int) -> None:
        """Wrap a connected ``PGconn``; :func:`connect` makes one."""
        self._lib = lib
        self._handle: int | None = handle

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """Run ``sql`` (placeholders ``$1``, ``$2``, ...) and return its rows."""
        if self._handle is None:
            raise PgError("the connection is closed")
        values = (ctypes.c_char_p * max(1, len(params)))(*(_param(p) for p in params))
        result = self._lib.PQexecParams(self._handle, sql.encode(), len(params), None, values,
                                        None, None, 0)
        if not result:
            raise PgError(_text(self._lib.PQerrorMessage(self._handle)))
        try:
            status = self._lib.PQresultStatus(result)
            if status not in (_COMMAND_OK, _TUPLES_OK):
                raise PgError(_text(self._lib.PQresultErrorMessage(result))
                              or _text(self._lib.PQerrorMessage(self._handle)))
            return self._rows(result)
        finally:
            self._lib.PQclear(result)

    def close(self) -> None:
        """Close the connection (again: nothing)."""
        if self._handle is not None:
            self._lib.PQfinish(self._handle)
            self._handle = None

    def _rows(self, result: int) -> list[Row]:
        lib = self._lib
        columns = range(lib.PQnfields(result))
        kinds = [lib.PQftype(result, c) for c in columns]
        rows: list[Row] = []
        for r in range(lib.PQntuples(result)):
            rows.append(tuple(
                None if lib.PQgetisnull(result, r, c)
                else _value(lib.PQgetvalue(result, r, c), kinds[c]) for c in columns))
        return rows


def connect(conninfo: str) -> Connection | None:
    """A connection to ``conninfo`` (a ``postgresql://`` URL or ``key=value`` pairs).

    None when no libpq loads. ConninfoError for a string libpq does not parse, PgError when
    the server cannot be reached or refuses. The client encoding is UTF-8 whatever it says.
    """
    lib = library()
    if lib is None:
        return None
    error = ctypes.c_char_p()
    options = lib.PQconninfoParse(conninfo.encode(), ctypes.byref(error))
    if not options:
        message = _text(error.value) or "invalid connection string"
        if error.value is not None:
            lib.PQfreemem(ctypes.cast(error, ctypes.c_void_p))
        raise ConninfoError(message)
    lib.PQconninfoFree(options)
    # dbname is expanded (the URL's parts); the keyword after it overrides the URL's own.
    keys = (ctypes.c_char_p * 3)(b"dbname", b"client_encoding", None)
    values = (ctypes.c_char_p * 3)(conninfo.encode(), b"UTF8", None)
    handle = lib.PQconnectdbParams(keys, values, 1)
    if not handle:
        raise PgError("out of memory")
    if lib.PQstatus(handle) != _CONNECTION_OK:
        message = _text(lib.PQerrorMessage(handle))
        lib.PQfinish(handle)
        raise PgError(message)
    return Connection(lib, handle)


@cache
def library() -> ctypes.CDLL | None:
    """libpq: psycopg-binary's own copy, else the system's; None when none loads."""
    for candidate in (*_bundled(), *_SYSTEM_NAMES):
        try:
            lib = ctypes.CDLL(candidate)
        except OSError:
            continue
        _declare(lib)
        return lib
    return None


def _bundled() -> list[str]:
    """The libpq files of the installed psycopg-binary wheel (found, not imported)."""
    try:
        spec = importlib.util.find_spec("psycopg_binary")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    package = Path(next(iter(spec.submodule_search_locations)))
    found: list[Path] = []
    for folder, pattern in ((package.parent / "psycopg_binary.libs", "libpq*"),
                            (package / ".dylibs", "libpq*.dylib")):
        if folder.is_dir():
            found += sorted(folder.glob(pattern))
    return [str(p) for p in found]


def _declare(lib: ctypes.CDLL) -> None:
    """The C signatures of the functions used (pointers as c_void_p: never truncated)."""
    ptr, text, num = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "PQconninfoParse": (ptr, [text, ctypes.POINTER(text)]),
        "PQconninfoFree": (None, [ptr]),
        "PQfreemem": (None, [ptr]),
        "PQconnectdbParams": (ptr, [ctypes.POINTER(text), ctypes.POINTER(text), num]),
        "PQstatus": (num, [ptr]),
        "PQerrorMessage": (text, [ptr]),
        "PQfinish": (None, [ptr]),
        "PQexecParams": (ptr, [ptr, text, num, ptr, ctypes.POINTER(text), ptr, ptr, num]),
        "PQresultStatus": (num, [ptr]),
        "PQresultErrorMessage": (text, [ptr]),
        "PQntuples": (num, [ptr]),
        "PQnfields": (num, [ptr]),
        "PQftype": (ctypes.c_uint, [ptr, num]),
        "PQgetisnull": (num, [ptr, num, num]),
        "PQgetvalue": (text, [ptr, num, num]),
        "PQclear": (None, [ptr]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes


def _param(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, (int, str)):
        return str(value).encode()
    raise TypeError(f"no text form for a {type(value).__name__} parameter")


def _value(raw: bytes, kind: int) -> Any:
    if kind in _INTEGERS:
        return int(raw)
    if kind == _BOOL:
        return raw == b"t"
    return raw.decode()


def _text(raw: bytes | None) -> str:
    return (raw or b"").decode(errors="replace").strip()
