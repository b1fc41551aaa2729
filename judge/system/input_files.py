"""Reading a file a person or a tool hands us: a regular file, bounded, UTF-8, or a clear error.

The one reader behind every suite, rubric, labels, calibration, noise, baseline and collected
file. Refused by type before a byte is read: a folder, a FIFO (a blocking open would wait for
a writer for ever), a character or block device (``/dev/zero`` never ends), a socket. The file
is opened without blocking and its type and size are read from the open descriptor, so a
path swapped between a check and the read is checked too. Over the limit: refused by its
size, and never read past ``limit + 1`` bytes (a file growing while read is refused as well).
Not UTF-8: the line and column of the first bad byte. Every refusal is the caller's
:class:`~judge.core.text.errors.ConfigError` subclass (exit 2) naming the file and the fix.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..core.text.errors import ConfigError

__all__ = ["input_lines", "not_utf8", "open_input", "read_input", "read_input_bytes"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _too_large(file: Path, size: int, limit: int, error: type[ConfigError],
               fix: str | None = None) -> ConfigError:
    return error(f"file too large: {size:,} bytes or more, the limit is {limit:,} bytes",
                 file=str(file), fix=fix or "split it into smaller files, or pass a smaller "
                                            "excerpt")


def open_input(file: Path, error: type[ConfigError], limit: int,
               fix: str | None = None) -> BinaryIO:
    """``file`` opened for reading, once known to be a regular file of at most ``limit`` bytes.

    Anything else raises ``error`` (exit 2) naming the file, with ``fix`` when given; the
    descriptor is then closed.
    """
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        what = "it is a folder, not a file" if file.is_dir() else exc.strerror or str(exc)
        raise error(f"cannot read: {what}", file=str(file),
                    fix=fix or "give the path of a readable file") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"cannot read: it is {_kind(info.st_mode)}, not a regular file",
                        file=str(file), fix=fix or "give the path of a regular file")
        if info.st_size > limit:
            raise _too_large(file, info.st_size, limit, error, fix)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(file: Path, error: type[ConfigError], limit: int,
                     fix: str | None = None) -> bytes:
    """The bytes of ``file`` (see :func:`open_input`); never more than ``limit`` are kept."""
    with open_input(file, error, limit, fix) as stream:
        try:
            data = stream.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read: {exc.strerror or exc}", file=str(file),
                        fix=fix or "give the path of a readable file") from None
    if len(data) > limit:
        raise _too_large(file, len(data), limit, error, fix)
    return data


def not_utf8(file: Path, data: bytes, exc: UnicodeDecodeError, error: type[ConfigError],
             first_line: int = 1) -> ConfigError:
    """``error`` naming the line and column of the byte that is not UTF-8."""
    line = data.count(b"\n", 0, exc.start) + first_line
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    return error(f"not UTF-8: byte 0x{data[exc.start]:02x} cannot start or continue a "
                 f"character", file=str(file), where=f"line {line}, column {column}",
                 fix="save the file as UTF-8 (iconv -f LATIN1 -t UTF-8, or your editor's "
                     "'save with encoding')")


def read_input(file: Path, error: type[ConfigError], limit: int, fix: str | None = None) -> str:
    """The UTF-8 text of ``file``: a regular file of at most ``limit`` bytes."""
    data = read_input_bytes(file, error, limit, fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(file, data, exc, error) from None


def input_lines(file: Path, error: type[ConfigError], limit: int,
                line_limit: int) -> Iterator[str]:
    """The lines of ``file``, decoded one at a time.

    None longer than ``line_limit`` bytes, at most ``limit`` bytes in all; ``error`` naming
    the line otherwise.
    """
    read = 0
    with open_input(file, error, limit) as stream:
        for lineno, raw in enumerate(iter(lambda: stream.readline(line_limit + 1), b""),
                                     start=1):
            read += len(raw)
            if len(raw) > line_limit:
                raise error(f"line longer than {line_limit:,} bytes", file=str(file),
                            where=f"line {lineno}", fix="split the record, or shorten it")
            if read > limit:
                raise _too_large(file, read, limit, error)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise not_utf8(file, raw, exc, error, lineno) from None
