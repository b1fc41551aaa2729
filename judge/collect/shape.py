"""Reading a source's JSON by the types its tool documents: a wrong type is named, never guessed.

``gh`` output and agent logs are untrusted files. Each field a collector reads is read through
:class:`Fields`, which answers the value only when it has the documented type (absent and
``null`` are "not there") and otherwise raises :class:`ShapeError` naming the path of the bad
value (``reviews[2].author``) and what was expected, so ``reviews: 5`` is a clear exit 2, not a
crash and not a silent skip. :func:`load_json` reads by the one strict grammar
(:mod:`judge.core.text.strict_json`: a duplicate key, ``NaN``, an integer of 31 digits are refused
where they are, never kept or carried into the case) and bounds depth before anything is built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.formats.limits import MAX_DEPTH, nesting_depth
from ..core.text.strict_json import JsonProblem, loads_strict, refused_place

__all__ = ["Fields", "ShapeError", "load_json"]


class ShapeError(ValueError):
    """A value of the wrong type (or a document nested too deeply), with where it is."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'the document'}: {message}")
        self.path = path


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else "null"


def load_json(text: str) -> Any:
    """The JSON value of ``text``; ShapeError if it is invalid or nests over MAX_DEPTH."""
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise ShapeError(f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except JsonProblem as exc:
        place = refused_place(text)  # one line of a JSON-lines file: its caller names the line
        raise ShapeError(place if "\n" in text else place.removeprefix("line 1, "),
                         exc.problem) from None
    except RecursionError:
        raise ShapeError("", f"nested deeper than {MAX_DEPTH} levels") from None
    # Cheap filter first: only a text with many brackets can nest too deeply.
    if text.count("[") + text.count("{") > MAX_DEPTH and nesting_depth(value) > MAX_DEPTH:
        raise ShapeError("", f"nested deeper than {MAX_DEPTH} levels")
    return value


class Fields:
    """The fields of one JSON object, each read with the type it must have."""

    def __init__(self, data: Any, path: str = "") -> None:
        if not isinstance(data, Mapping):
            raise ShapeError(path, f"expected an object, got {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self.path = path

    def where(self, key: str) -> str:
        """The path of ``key`` in this object."""
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        """Whether the object holds ``key`` at all (even as null)."""
        return key in self.data

    def _typed(self, key: str, types: tuple[type, ...], expected: str) -> Any:
        value = self.data.get(key)
        if value is None:
            return None
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise ShapeError(self.where(key), f"expected {expected}, got {_kind(value)}")
        return value

    def text(self, key: str) -> str | None:
        """A string field ("" reads as absent)."""
        value: str | None = self._typed(key, (str,), "a string")
        return value or None

    def integer(self, key: str) -> int | None:
        """An integer field (not a boolean)."""
        value: int | None = self._typed(key, (int,), "an integer")
        return value

    def flag(self, key: str) -> bool | None:
        """A boolean field."""
        value: bool | None = self._typed(key, (bool,), "a boolean")
        return value

    def ident(self, key: str) -> str | None:
        """An id: a string or an integer, as text."""
        value = self._typed(key, (str, int), "a string or an integer id")
        return None if value is None or value == "" else str(value)

    def obj(self, key: str) -> Fields | None:
        """A nested object."""
        value = self._typed(key, (Mapping,), "an object")
        return None if value is None else Fields(value, self.where(key))

    def objects(self, key: str) -> list[Fields]:
        """A list of objects (absent or null: empty)."""
        value = self._typed(key, (list,), "a list")
        where = self.where(key)
        return [Fields(item, f"{where}[{n}]") for n, item in enumerate(value or [])]

    def login(self, key: str) -> str | None:
        """A person: ``{"login": ...}`` (or ``{"name": ...}``) or a plain string."""
        value = self.data.get(key)
        if isinstance(value, Mapping):
            person = Fields(value, self.where(key))
            return person.text("login") or person.text("name")
        return self.text(key)
