"""Reading an artefact named by a flag: one clear error naming the file, the flag and a fix."""

from __future__ import annotations

from pathlib import Path

from ..core.formats.limits import MAX_COLLECTED_BYTES
from ..core.text.errors import UsageError
from ..system.input_files import read_input

__all__ = ["read_source"]


def read_source(path: Path, flag: str, what: str) -> str:
    """The UTF-8 text of ``path``; UsageError (exit 2) naming it and ``flag`` otherwise."""
    try:
        return read_input(path, UsageError, MAX_COLLECTED_BYTES)
    except UsageError as exc:
        reason = exc.message.removeprefix("cannot read: ")
        message = f"the {what}: {reason}" if reason == exc.message else \
            f"cannot read the {what}: {reason}"
        raise UsageError(message, file=exc.file,
                         where=f"{flag}, {exc.where}" if exc.where else flag,
                         fix=exc.fix) from None
