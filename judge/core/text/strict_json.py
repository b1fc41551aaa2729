r"""One grammar for JSON text: what a JSONL suite line, a rubric and a YAML suite agree on.

``json.loads`` alone changes values silently or crashes where YAML refuses: a duplicate key
keeps the last value (``{"id":"a","id":"b"}`` became case ``b``), ``NaN`` is a number, a
5,000-digit integer raises a bare ``ValueError`` (exit 70), and ``"\\ud800"`` builds a lone
surrogate that breaks the first UTF-8 write, and ``1e999`` is infinity. :func:`loads_strict`
refuses each of them with a :class:`JsonProblem` saying what and how to fix it;
:func:`text_problem` is the check of strings and integers that the YAML loader shares.

A file a person edits or a tool hands over (a labels file, a baseline, a noise model, a
calibration) is read by :func:`strict_document` (the grammar, a depth limit, and the place of
a refusal: line and column) and :func:`strict_model` (the types its schema says, as JSON
has them: ``true`` is not a score, ``"50"`` is not a number). Pure: no I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..formats.limits import MAX_DEPTH, MAX_INT_DIGITS, nesting_depth
from .canonical import canonical_json
from .errors import ConfigError
from .validation_text import format_validation_error

__all__ = [
    "JsonProblem",
    "int_problem",
    "loads_strict",
    "refused_place",
    "strict_document",
    "strict_model",
    "string_problem",
    "text_problem",
    "text_problem_at",
]

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_Model = TypeVar("_Model", bound=BaseModel)


class JsonProblem(ValueError):
    """A JSON text the grammar refuses; ``fix`` says what to write instead."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


def int_problem(digits: str) -> str | None:
    """Why the integer written ``digits`` is refused (too many digits), or None."""
    count = len(digits.lstrip("+-").lstrip("0")) or 1
    if count > MAX_INT_DIGITS:
        return f"integer of {count:,} digits (the limit is {MAX_INT_DIGITS})"
    return None


def string_problem(text: str) -> str | None:
    """Why ``text`` cannot be a string of ours (a lone UTF-16 surrogate), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"a lone surrogate \\u{ord(text[exc.start]):04x} (not a character) at "
                f"offset {exc.start}")
    return None


def text_problem(value: Any) -> str | None:
    """Where and why the first string (key or value) of ``value`` is refused, or None.

    ``output: a lone surrogate …``; the place is left out for ``value`` itself.
    """
    found = text_problem_at(value)
    if found is None:
        return None
    where, why = found
    return f"{where}: {why}" if where else why


def text_problem_at(value: Any) -> tuple[str, str] | None:
    """Where and why :func:`string_problem` refuses a string of ``value``, or None.

    The first such string in document order; its place as ``case.evidence.commits[0].excerpt``
    (a key: the path of its mapping).
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            why = string_problem(item)
            if why is not None:
                return where, why
        elif isinstance(item, dict):
            for key in item:
                why = string_problem(key) if isinstance(key, str) else None
                if why is not None:
                    return where, f"a key holds {why}"
            stack.extend((f"{where}.{key}" if where else str(key), sub)
                         for key, sub in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", item[i]) for i in reversed(range(len(item))))
    return None


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON door: one parsed object, refused when a key repeats (``object_pairs_hook``)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonProblem(f"duplicate key {key!r}",
                              "keep one of them: JSON would silently use the last")
        out[key] = value
    return out


def _int(digits: str) -> int:
    why = int_problem(digits)
    if why is not None:
        raise JsonProblem(why, "write a smaller number, or quote it as a string")
    return int(digits)


def _constant(name: str) -> Any:
    raise JsonProblem(f"{name} is not a JSON number", "write a number, or null")


def _float(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise JsonProblem(f"number {digits[:40]} is beyond the range of a number (it would be "
                          f"infinity)", "write a smaller number")
    return value


def loads_strict(text: str, *, surrogates: bool = False) -> Any:
    """``json.loads`` under the grammar; JsonProblem or json.JSONDecodeError when refused.

    ``surrogates``: lone surrogates are the caller's to replace (a trace reader that turns
    every broken character into U+FFFD), not refused.
    """
    value = json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float,
                       parse_constant=_constant)
    if surrogates:
        return value
    if _ESCAPED_SURROGATE.search(text) or (not text.isascii() and string_problem(text)):
        why = text_problem(value)
        if why is not None:
            raise JsonProblem(why, "write the character itself, or a valid surrogate pair")
    return value


_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?'
                    r'|[{}\[\]:,]|true|false|null|NaN|-?Infinity)')


def _refused_token(token: str, keys: set[str] | None) -> bool:
    """Whether the grammar refuses ``token`` (``keys``: its object's keys so far, if a key)."""
    if token[0] == '"':
        text = json.loads(token)  # one string of a text the parser read whole already
        if keys is not None:
            if text in keys:
                return True
            keys.add(text)
        return string_problem(text) is not None
    if token in ("NaN", "Infinity", "-Infinity"):
        return True
    if token[0] in "-0123456789":
        if any(c in token for c in ".eE"):
            return not math.isfinite(float(token))
        return int_problem(token) is not None
    return False


def _problem_at(text: str) -> int | None:
    """Where in ``text`` (valid JSON the grammar refused) the refused key or value starts.

    Walked token by token, only when a text was refused: the C parser reports no place.
    """
    stack: list[set[str] | None] = []
    expect_key = False
    at = 0
    while (match := _TOKEN.match(text, at)) is not None:
        token, at = match.group(1), match.end()
        top = stack[-1] if stack else None
        if _refused_token(token, top if expect_key else None):
            return match.start(1)
        expect_key = False
        if token in ("{", "["):
            stack.append(set() if token == "{" else None)
            expect_key = token == "{"
        elif token in ("}", "]"):
            stack.pop()
        elif token == ",":
            expect_key = top is not None
    return None


def _place(text: str, at: int | None, line: int | None) -> str | None:
    """``line L, column C`` of offset ``at`` (``line``: the text is that line of a file)."""
    if at is None:
        return None if line is None else f"line {line}"
    column = at - text.rfind("\n", 0, at)
    return f"line {line or text.count(chr(10), 0, at) + 1}, column {column}"


def refused_place(text: str) -> str:
    """``line L, column C`` where the grammar refused ``text`` (valid JSON), or ``""``."""
    return _place(text, _problem_at(text), None) or ""


def strict_document(text: str, source: str, error: type[ConfigError], fix: str, *,
                    line: int | None = None) -> Any:
    """The JSON value of ``text`` under the grammar, nested at most MAX_DEPTH levels.

    Anything else raises ``error`` (exit 2) naming ``source``, the place (line and column;
    ``line`` when the text is that line of a JSON-lines file) and a fix: the grammar's for
    what it refuses, else ``fix``.
    """
    too_deep = f"nested deeper than {MAX_DEPTH} levels"
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise error(f"invalid JSON: {exc.msg}", file=source, fix=fix,
                    where=_place(text, exc.pos, line)) from None
    except JsonProblem as exc:
        raise error(exc.problem, file=source, where=_place(text, _problem_at(text), line),
                    fix=exc.fix) from None
    except RecursionError:
        raise error(too_deep, file=source, where=_place(text, None, line), fix=fix) from None
    # Cheap filter first: only a text with many brackets can nest too deeply.
    if text.count("[") + text.count("{") > MAX_DEPTH and nesting_depth(value) > MAX_DEPTH:
        raise error(too_deep, file=source, where=_place(text, None, line), fix=fix)
    return value


def strict_model(model: type[_Model], data: Any, source: str, error: type[ConfigError],
                 fix: str, *, line: int | None = None) -> _Model:
    """``data`` (a value :func:`strict_document` read) as ``model``, typed as JSON types it.

    Strict: a boolean is not a number, a string of digits is not one either; an array is a
    tuple. Anything else raises ``error`` naming ``source``, the field and ``fix``.
    """
    try:
        return model.model_validate_json(canonical_json(data), strict=True)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise error(msg, file=source, where=where if line is None else f"line {line}: {where}",
                    fix=fix) from None
