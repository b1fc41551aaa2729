r"""One grammar for JSON text: what a JSONL suite line, a rubric and a YAML suite agree on.

``json.loads`` alone changes values silently or crashes where YAML refuses: a duplicate key
keeps the last value (``{"id":"a","id":"b"}`` became case ``b``), ``NaN`` is a number, a
5,000-digit integer raises a bare ``ValueError`` (exit 70), and ``"\\ud800"`` builds a lone
surrogate that breaks the first UTF-8 write. :func:`loads_strict` refuses each of them with
a :class:`JsonProblem` saying what and how to fix it; :func:`text_problem` is the check of
strings and integers that the YAML loader shares. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .limits import MAX_INT_DIGITS

__all__ = ["JsonProblem", "int_problem", "loads_strict", "string_problem", "text_problem",
           "text_problem_at"]

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


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


def loads_strict(text: str) -> Any:
    """``json.loads`` under the grammar; JsonProblem or json.JSONDecodeError when refused."""
    value = json.loads(text, object_pairs_hook=_pairs, parse_int=_int,
                       parse_constant=_constant)
    if _ESCAPED_SURROGATE.search(text) or (not text.isascii() and string_problem(text)):
        why = text_problem(value)
        if why is not None:
            raise JsonProblem(why, "write the character itself, or a valid surrogate pair")
    return value
