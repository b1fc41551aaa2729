"""Reading an artefact named by a flag: one clear error naming the file, the flag and a fix."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError

__all__ = ["MAX_BYTES", "read_source"]

MAX_BYTES = 64 * 1024 * 1024
"""Largest artefact read (64 MiB): a log beyond that is a blob, not evidence."""


def read_source(path: Path, flag: str, what: str) -> str:
    """The UTF-8 text of ``path``; UsageError (exit 2) naming it and ``flag`` otherwise."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise IsADirectoryError("not a file")
        if size > MAX_BYTES:
            raise UsageError(f"{what} is {size} bytes, over the {MAX_BYTES}-byte limit",
                             file=str(path), where=flag, fix="pass a smaller excerpt of it")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{what} is not UTF-8 text", file=str(path), where=flag,
                         fix=f"pass the {what} as UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read the {what}: {exc.strerror or exc}", file=str(path),
                         where=flag, fix="check the path") from None
