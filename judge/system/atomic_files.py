"""Files written whole or not at all: the one atomic writer behind every file judgeflow writes.

A reader (or a crash) sees the old file or the new one, never half of one: the text goes to a
temporary file beside the destination, is flushed to disk, and is moved into place. The new
file keeps an existing file's permissions, else 0644 (``mkstemp`` makes 0600, but baselines,
suites and exports are meant to be committed and shared).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_writer", "write_atomic"]


@contextmanager
def atomic_writer(path: Path, *, replace: bool = True, newline: str = "\n",
                  parents: bool = False) -> Iterator[TextIO]:
    """A text stream whose content becomes ``path`` when the block ends without an error.

    ``replace=False`` never replaces an existing file, not even one created meanwhile
    (``FileExistsError``); ``parents`` creates missing folders. Any other failure is an
    ``OSError``; nothing is left behind.
    """
    if not replace and path.exists():
        raise FileExistsError(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # a hard link never replaces a file created since the check
            except FileExistsError:
                raise
            except OSError:  # no hard links on this filesystem
                if path.exists():
                    raise FileExistsError(path) from None
                os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_atomic(path: Path, text: str, *, replace: bool = True, parents: bool = True) -> None:
    """Write ``text`` to ``path`` whole, creating its folder (see :func:`atomic_writer`)."""
    with atomic_writer(path, replace=replace, parents=parents) as handle:
        handle.write(text)
