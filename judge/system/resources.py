"""Where shipped defaults and a workspace's own rubrics and prompts are found, and loading them.

Lookup order for a rubric or template name: the workspace's folder first (so a team can
override a shipped default), then the copy shipped with judgeflow. A value that names an
existing file is used as a path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import zlib
from array import array
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..core.formats.limits import (
    MAX_CALIBRATION_BYTES,
    MAX_JSONL_LINE_CHARS,
    MAX_JSONL_SUITE_BYTES,
    MAX_RUBRIC_CHARS,
    MAX_SUITE_CHARS,
)
from ..core.formats.rubric import Rubric, parse_rubric
from ..core.formats.suite import (
    Case,
    Suite,
    SuiteLine,
    check_suite_id,
    compile_suite,
    iter_jsonl_checked,
    parse_suite,
)
from ..core.scoring.calibration import attach_calibration, parse_calibration
from ..core.text.canonical import canonical_json
from ..core.text.errors import RubricError, SuiteError
from ..core.text.seals import NO_SECRET, Sealer
from .atomic_files import write_atomic_bytes
from .input_files import input_lines, not_utf8, open_input, read_input, read_input_bytes

__all__ = [
    "COMPILED_FORMAT",
    "KEPT_CLEAN",
    "SuiteSource",
    "find_rubric",
    "line_crc",
    "list_rubrics",
    "load_rubric",
    "load_suite",
    "open_suite",
    "read_suite_text",
    "shipped_dir",
    "suite_file_id",
    "utf8_lines",
]


COMPILED_FORMAT = 1
"""The layout of a compiled YAML suite (see :class:`SuiteSource`)."""
KEPT_CLEAN = 2
"""The mark (in :meth:`SuiteSource.items`'s ``kept``; any other non-zero one: kept) of a
kept case whose line the first pass found nothing to mask in: given as a ``clean``
:class:`SuiteLine` when the second pass reads the same text (its CRC-32 matches)."""


def shipped_dir(kind: str) -> Path:
    """The shipped ``rubrics`` or ``prompts`` folder (inside the wheel, or the source checkout)."""
    here = Path(__file__).resolve().parents[1]
    packaged = here / "_data" / kind
    if packaged.is_dir():
        return packaged
    return here.parent / kind


def _search_dirs(kind: str, workspace: Path | None) -> list[Path]:
    dirs = []
    if workspace is not None:
        dirs.append(workspace / kind)
    dirs.append(shipped_dir(kind))
    return dirs


def find_rubric(name: str, workspace: Path | None = None) -> Path:
    """The file for a rubric id or path; a clear error listing what exists if there is none."""
    as_path = Path(name)
    if as_path.suffix in {".yaml", ".yml"} or "/" in name:
        if as_path.is_file():
            return as_path
        raise RubricError(f"no rubric file at {name}", fix="check the path")
    if len(name) > 200:
        raise RubricError(f"rubric id of {len(name):,} characters: no rubric file can have it",
                          fix="give a rubric id (task-evaluation) or a path to a .yaml")
    for folder in _search_dirs("rubrics", workspace):
        for suffix in (".yaml", ".yml"):
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    known = ", ".join(sorted(list_rubrics(workspace))) or "(none)"
    raise RubricError(f"unknown rubric {name!r}", fix=f"use one of: {known}, or a path to a .yaml")


def list_rubrics(workspace: Path | None = None) -> dict[str, Path]:
    """Every rubric id visible from the workspace, the workspace's copy winning."""
    found: dict[str, Path] = {}
    for folder in reversed(_search_dirs("rubrics", workspace)):
        if folder.is_dir():
            for path in sorted(folder.glob("*.y*ml")):
                found[path.stem] = path
    return found


def load_rubric(name: str | Path, workspace: Path | None = None, *,
                sealer: Sealer = NO_SECRET) -> Rubric:
    """Load and validate a rubric by id or path.

    ``sealer``: the team secret's (``Workspace.sealer``), which its calibration must be
    sealed with.
    """
    path = find_rubric(str(name), workspace)
    rubric = _parsed_rubric(read_input(path, RubricError, 4 * MAX_RUBRIC_CHARS), str(path))
    return rubric if rubric.calibration is None else _calibrated(rubric, path, sealer)


@functools.lru_cache(maxsize=32)
def _parsed_rubric(text: str, source: str) -> Rubric:
    """:func:`parse_rubric`, once per text and file.

    The file is read every time, so an edit is never missed; a rubric is a frozen value
    whose derived parts (the scoring plan, the schema) stay with it. A run reads its rubric
    twice (the cases, the report), and the warm worker's parent parses the ones its children
    will read.
    """
    return parse_rubric(text, source)


def _calibrated(rubric: Rubric, path: Path, sealer: Sealer) -> Rubric:
    """The rubric with its calibration file (relative to the rubric file) attached."""
    file = path.parent / str(rubric.calibration)
    try:
        text = read_input(file, RubricError, MAX_CALIBRATION_BYTES,
                          "give the path of a `judge judges calibrate` file, relative to the "
                          "rubric")
    except RubricError as exc:
        raise RubricError(f"its calibration {str(file)!r}: {exc.message}", file=str(path),
                          where="calibration", fix=exc.fix) from None
    return attach_calibration(rubric, parse_calibration(text, str(file), sealer), str(file))


def load_suite(path: str | Path, values: re.Pattern[str] | None = None) -> Suite:
    """Load and validate a suite file (``.yaml``/``.yml``/``.jsonl``); id defaults to the stem.

    ``values``: secret values masked in its cases besides the shapes (the caller's credentials).
    """
    file = Path(path)
    return parse_suite(read_suite_text(file), str(file), default_id=suite_file_id(file),
                       values=values)


def read_suite_text(file: Path) -> str:
    """The text of a suite file, bounded by its kind's limit (:func:`read_input`)."""
    limit = MAX_JSONL_SUITE_BYTES if file.suffix == ".jsonl" else 4 * MAX_SUITE_CHARS
    return read_input(file, SuiteError, limit)


def utf8_lines(file: Path) -> Iterator[str]:
    """The lines of a JSONL suite, decoded one at a time (:func:`input_lines`)."""
    return input_lines(file, SuiteError, MAX_JSONL_SUITE_BYTES, 4 * MAX_JSONL_LINE_CHARS)


def line_crc(text: str) -> int:
    """The CRC-32 of a suite line's text, to tell that a second pass read the same line."""
    return zlib.crc32(text.encode("utf-8"))


def suite_file_id(file: Path) -> str:
    """The id of a suite file that declares none (every JSONL suite): the one computation.

    The file's stem, or its folder's name for ``suite.*`` and ``cases.*``, read on the
    absolute path: ``suite.jsonl`` named from inside its folder is that folder's suite, as it
    is when named from anywhere else (every command and door calls this).
    """
    path = file.absolute()
    return path.stem if path.stem not in {"suite", "cases"} else path.parent.name or path.stem


@dataclass(frozen=True)
class SuiteSource:
    """A suite file that can be read more than once; a JSONL file streams, case by case.

    ``judge run`` reads a large JSONL suite twice (validate everything, then judge) rather
    than holding every case in memory: 10,000 cases of evidence are ~300 MB as objects.

    A YAML suite cannot stream, and parsing 30 MB of it takes far longer than judging it
    from the cache. So :func:`open_suite` can keep a *compiled form* of it beside the
    cache: its cases as the JSON lines :func:`judge.core.formats.suite.compile_suite` makes (each
    read back by :class:`SuiteLine`, so a replay finds its judgments by the line's digest as
    for a JSONL suite). A compiled form is named by a sha256 of the YAML file's bytes, the
    code that compiled it (any change to judgeflow's source makes another name) and the
    default suite id; its first line holds the sha256 of the rest, checked on every read
    and read as absent when it does not match (the YAML is then parsed again and the form
    rewritten). It is held in memory once read (bounded by the suite's size limit), so
    the two passes of a run read the bytes that were checked. Like every cache file it is
    checked against flipped bits, not signed: whoever can write the cache directory can
    write a matching digest.
    """

    path: Path
    id: str
    rubric: str | None
    loaded: Suite | None
    """The whole suite for YAML files that have no compiled form; None otherwise."""
    lines: tuple[str, ...] | None = None
    """A YAML suite's cases as validated JSON lines (its compiled form)."""
    unsaved: tuple[Path, bytes] | None = None
    """A compiled form made by this read, to write with :meth:`save_compiled`."""
    values: re.Pattern[str] | None = None
    """Secret values masked in the cases besides the shapes (the caller's credentials)."""

    def items(self, kept: bytes | bytearray,
              crcs: array[int] | None = None) -> Iterator[Case | SuiteLine]:
        """The cases at the positions ``kept`` marks (non-zero), in file order.

        A YAML suite gives its cases (or its compiled lines); a JSONL suite gives each case
        as its line, unparsed (:class:`SuiteLine`), for a run whose first pass has
        validated the file. A line marked :data:`KEPT_CLEAN` whose text still has the
        CRC-32 in ``crcs`` (see :func:`line_crc`) is given ``clean``: the file may have
        changed between the passes, and a changed line is masked again.
        """
        source = str(self.path)
        if self.loaded is not None:
            yield from (c for c, k in zip(self.loaded.cases, kept, strict=False) if k)
            return
        with contextlib.closing(self._lines()) as lines:
            position = 0
            for line in lines:
                text = line.strip()
                if not text:
                    continue  # as iter_jsonl: blank lines hold no case
                mark = kept[position] if position < len(kept) else 0
                if mark:
                    clean = mark == KEPT_CLEAN and crcs is not None \
                        and crcs[position] == line_crc(text)
                    yield self._item(SuiteLine(text, source, clean=clean, values=self.values))
                position += 1

    def _item(self, line: SuiteLine) -> Case | SuiteLine:
        """``line``, or its case when one of :attr:`values` is in it.

        A replay finds a line's judgments by the digest of its text; the text of a case
        masked by a value depends on the values held, so it is found by its masked case.
        """
        if self.values is None or line.clean or self.values.search(line.text) is None:
            return line
        return line.case()

    def cases(self) -> Iterator[Case]:
        """The validated cases, in file order."""
        return (case for case, _ in self.checked())

    def checked(self) -> Iterator[tuple[Case, SuiteLine | None]]:
        """The validated cases, each with its line (None: a YAML suite read whole)."""
        if self.loaded is not None:
            yield from ((case, None) for case in self.loaded.cases)
            return
        with contextlib.closing(self._lines()) as lines:
            yield from iter_jsonl_checked(lines, str(self.path), self.values)

    def _lines(self) -> Generator[str]:
        if self.lines is not None:
            yield from self.lines
        else:
            yield from utf8_lines(self.path)

    def save_compiled(self) -> bool:
        """Write the compiled form this read made, atomically, into an existing cache folder.

        Derived data: a folder that cannot take it just goes without (False).
        """
        if self.unsaved is None:
            return False
        target, data = self.unsaved
        if not target.parent.parent.is_dir():
            return False  # no cache folder: a compiled form alone is not worth creating one
        try:
            write_atomic_bytes(target, data)
        except OSError:
            return False
        return True


def _compiled_name(data: bytes, salt: bytes, default_id: str) -> str:
    digest = hashlib.sha256(b"judgeflow compiled suite %d\0" % COMPILED_FORMAT)
    digest.update(salt + b"\0" + default_id.encode("utf-8") + b"\0")
    digest.update(data)
    return digest.hexdigest() + ".jsonl"


def _compiled_bytes(suite: Suite, lines: tuple[str, ...]) -> bytes:
    header = canonical_json({"cases": len(lines), "description": suite.description,
                             "id": suite.id, "rubric": suite.rubric})
    body = "".join([header, "\n", *(line + "\n" for line in lines)]).encode("utf-8")
    head = canonical_json({"compiledSuite": COMPILED_FORMAT,
                           "digest": hashlib.sha256(body).hexdigest()})
    return head.encode("utf-8") + b"\n" + body


def _read_compiled(target: Path) -> tuple[Suite, tuple[str, ...]] | None:
    """The suite header and case lines of a compiled form; None when absent or unsound."""
    try:
        raw = target.read_bytes()
    except OSError:
        return None
    first, _, body = raw.partition(b"\n")
    try:
        head = json.loads(first)
        if not isinstance(head, dict) or head.get("compiledSuite") != COMPILED_FORMAT \
                or head.get("digest") != hashlib.sha256(body).hexdigest():
            return None
        text = body.decode("utf-8")
        del raw, body
        header_line, _, rest = text.partition("\n")
        header = json.loads(header_line)
        lines = tuple(rest.split("\n"))
        if lines[-1] != "" or len(lines) - 1 != header["cases"]:
            return None
        suite = Suite(id=header["id"], description=header["description"],
                      rubric=header["rubric"], cases=())
    except (ValueError, KeyError, TypeError, RecursionError, ValidationError):
        return None
    return suite, lines[:-1]


def open_suite(path: str | Path, *, compiled_dir: Path | None = None,
               salt: bytes | None = None, values: re.Pattern[str] | None = None) -> SuiteSource:
    """A suite ready to iterate; YAML is loaded and validated here, JSONL when iterated.

    With ``compiled_dir`` and ``salt`` (a digest of the code) a YAML suite is read from its
    compiled form there when it has a sound one, and otherwise parsed and compiled
    (:meth:`SuiteSource.save_compiled` writes it, once a run may create files).
    ``values``: secret values masked in its cases besides the shapes; a YAML suite holding
    one is loaded whole, never compiled (a compiled form would keep the masked text under
    a name that does not depend on the values).
    """
    file = Path(path)
    if file.suffix != ".jsonl":
        if compiled_dir is None or salt is None:
            suite = load_suite(file, values)
            return SuiteSource(path=file, id=suite.id, rubric=suite.rubric, loaded=suite)
        return _open_yaml(file, compiled_dir, salt, values)
    open_input(file, SuiteError, MAX_JSONL_SUITE_BYTES).close()  # a regular file, or refused
    return SuiteSource(path=file, id=check_suite_id(suite_file_id(file), str(file)), rubric=None,
                       loaded=None, values=values)


def _open_yaml(file: Path, compiled_dir: Path, salt: bytes,
               values: re.Pattern[str] | None) -> SuiteSource:
    data = read_input_bytes(file, SuiteError, 4 * MAX_SUITE_CHARS)
    if values is not None and values.search(data.decode("utf-8", "replace")):
        suite = load_suite(file, values)
        return SuiteSource(path=file, id=suite.id, rubric=suite.rubric, loaded=suite)
    default_id = suite_file_id(file)
    target = compiled_dir / _compiled_name(data, salt, default_id)
    found = _read_compiled(target)
    if found is not None:
        header, lines = found
        return SuiteSource(path=file, id=header.id, rubric=header.rubric, loaded=None,
                           lines=lines)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(file, data, exc, SuiteError) from None
    del data
    suite, compiled = compile_suite(text, str(file), default_id)
    if compiled is None:
        return SuiteSource(path=file, id=suite.id, rubric=suite.rubric, loaded=suite)
    return SuiteSource(path=file, id=suite.id, rubric=suite.rubric, loaded=None,
                       lines=compiled, unsaved=(target, _compiled_bytes(suite, compiled)))
