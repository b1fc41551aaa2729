"""One clear line from a pydantic ValidationError: the place and the message that matter.

Its own small module so that loading settings (every command's first step) does not pay
for the rubric's import.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

__all__ = ["format_validation_error", "primary_error"]


def primary_error(exc: ValidationError) -> Any:
    """The error to report: an unknown key before the "missing" it causes, else the first."""
    # A misspelt key gives two errors, "missing 'weight'" and "unknown 'wieght'"; the
    # unknown key is the cause, so it is the one reported.
    errors = exc.errors()
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def format_validation_error(exc: ValidationError) -> tuple[str, str]:
    """The main pydantic error as (dotted place, message), for one clear line."""
    err = primary_error(exc)
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = f"unknown key {err['loc'][-1]!r}"
    elif err["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
    return where, msg
