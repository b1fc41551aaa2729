"""Files written whole or not at all: the one atomic writer behind every file judgeflow writes.

A reader (or a crash) sees the old file or the new one, never half of one: the content goes
to a temporary file beside the destination, is flushed to disk, and is moved into place. The
new file keeps an existing file's permissions, else 0644 (``mkstemp`` makes 0600, but
baselines, suites, reports and exports are meant to be committed and shared).

Text (:func:`atomic_writer`, :func:`write_atomic`), bytes (:func:`write_atomic_bytes`) and a
file another program fills (:func:`atomic_path`: a converter run as a child process) all go
through :func:`atomic_path`. ``tests/system/test_atomic_files.py`` fails when a module
elsewhere renames, replaces or writes a file of its own.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_path", "atomic_writer", "write_atomic", "write_atomic_bytes"]


def _sync(path: Path) -> None:
    """Flush ``path``'s content to disk (whoever wrote it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _place(tmp: Path, path: Path, *, replace: bool) -> None:
    """Move ``tmp`` to ``path``; without ``replace``, never over a file that exists."""
    if replace:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # a hard link never replaces a file created since the check
    except FileExistsError:
        raise
    except OSError:  # no hard links on this filesystem
        if path.exists():
            raise FileExistsError(path) from None
        os.replace(tmp, path)


@contextmanager
def atomic_path(path: Path, *, replace: bool = True, parents: bool = False) -> Iterator[Path]:
    """A temporary file beside ``path`` that becomes ``path`` when the block ends without error.

    The block (or a program it runs) writes the temporary file. ``replace=False`` never
    replaces an existing file, not even one created meanwhile (``FileExistsError``);
    ``parents`` creates missing folders. Any other failure is an ``OSError``; nothing is
    left behind.
    """
    if not replace and path.exists():
        raise FileExistsError(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        yield tmp
        _sync(tmp)
        _place(tmp, path, replace=replace)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_writer(path: Path, *, replace: bool = True, newline: str = "\n",
                  parents: bool = False) -> Iterator[TextIO]:
    """A UTF-8 text stream whose content becomes ``path`` when the block ends without error.

    The options are :func:`atomic_path`'s; ``newline`` is the stream's.
    """
    with atomic_path(path, replace=replace, parents=parents) as tmp, \
            open(tmp, "w", encoding="utf-8", newline=newline) as handle:
        yield handle


def write_atomic(path: Path, text: str, *, replace: bool = True, parents: bool = True) -> None:
    """Write ``text`` to ``path`` whole, creating its folder (see :func:`atomic_path`)."""
    with atomic_writer(path, replace=replace, parents=parents) as handle:
        handle.write(text)


def write_atomic_bytes(path: Path, data: bytes, *, replace: bool = True,
                       parents: bool = True) -> None:
    """Write ``data`` to ``path`` whole, creating its folder (see :func:`atomic_path`)."""
    with atomic_path(path, replace=replace, parents=parents) as tmp:
        tmp.write_bytes(data)
