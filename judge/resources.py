"""Where shipped defaults and a workspace's own rubrics and prompts are found, and loading them.

Lookup order for a rubric or template name: the workspace's folder first (so a team can
override a shipped default), then the copy shipped with judgeflow. A value that names an
existing file is used as a path.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, RubricError, SuiteError
from .limits import MAX_RUBRIC_CHARS, MAX_SUITE_CHARS
from .rubric import Rubric, parse_rubric
from .suite import Case, Suite, SuiteLine, check_suite_id, iter_cases, iter_jsonl, parse_suite

__all__ = [
    "SuiteSource",
    "find_rubric",
    "list_rubrics",
    "load_rubric",
    "load_suite",
    "open_suite",
    "shipped_dir",
]


def shipped_dir(kind: str) -> Path:
    """The shipped ``rubrics`` or ``prompts`` folder (inside the wheel, or the source checkout)."""
    here = Path(__file__).resolve().parent
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


def _check_size(file: Path, limit: int, error: type[ConfigError]) -> None:
    # Before reading: a file far over the limit is refused without loading it into memory
    # (characters never outnumber UTF-8 bytes; the parser checks characters exactly).
    try:
        size = file.stat().st_size
    except OSError:
        return  # the read that follows reports it
    if size > 4 * limit:
        raise error(f"file too large: {size:,} bytes, the limit is {limit:,} characters",
                    file=str(file), fix="split it into smaller files")


def load_rubric(name: str | Path, workspace: Path | None = None) -> Rubric:
    """Load and validate a rubric by id or path."""
    path = find_rubric(str(name), workspace)
    _check_size(path, MAX_RUBRIC_CHARS, RubricError)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"cannot read: {exc}", file=str(path)) from None
    return parse_rubric(text, str(path))


def load_suite(path: str | Path) -> Suite:
    """Load and validate a suite file (``.yaml``/``.yml``/``.jsonl``); id defaults to the stem."""
    file = Path(path)
    if file.suffix != ".jsonl":
        _check_size(file, MAX_SUITE_CHARS, SuiteError)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read: {exc}", file=str(file), fix="check the path") from None
    return parse_suite(text, str(file), default_id=_default_id(file))


def _default_id(file: Path) -> str:
    return file.stem if file.stem not in {"suite", "cases"} else file.parent.name or file.stem


@dataclass(frozen=True)
class SuiteSource:
    """A suite file that can be read more than once; a JSONL file streams, case by case.

    ``judge run`` reads a large JSONL suite twice (validate everything, then judge) rather
    than holding every case in memory: 10,000 cases of evidence are ~300 MB as objects.
    """

    path: Path
    id: str
    rubric: str | None
    loaded: Suite | None
    """The whole suite for YAML files (they cannot stream); None for JSONL."""

    def items(self, kept: bytes | bytearray) -> Iterator[Case | SuiteLine]:
        """The cases at the positions ``kept`` marks (non-zero), in file order.

        A YAML suite gives its cases; a JSONL suite gives each case as its line, unparsed
        (:class:`SuiteLine`), for a run whose first pass has validated the file.
        """
        if self.loaded is not None:
            yield from (c for c, k in zip(self.loaded.cases, kept, strict=False) if k)
            return
        position = 0
        with self.path.open(encoding="utf-8") as lines:
            for line in lines:
                text = line.strip()
                if not text:
                    continue  # as iter_jsonl: blank lines hold no case
                if position < len(kept) and kept[position]:
                    yield SuiteLine(text, str(self.path))
                position += 1

    def cases(self) -> Iterator[Case]:
        """The validated cases, in file order."""
        if self.loaded is not None:
            yield from self.loaded.cases
            return
        with self.path.open(encoding="utf-8") as lines:
            yield from iter_cases(iter_jsonl(lines, str(self.path)), str(self.path))


def open_suite(path: str | Path) -> SuiteSource:
    """A suite ready to iterate; YAML is loaded and validated here, JSONL when iterated."""
    file = Path(path)
    if file.suffix != ".jsonl":
        suite = load_suite(file)
        return SuiteSource(path=file, id=suite.id, rubric=suite.rubric, loaded=suite)
    if not file.is_file():
        raise SuiteError("cannot read: no such file", file=str(file), fix="check the path")
    return SuiteSource(path=file, id=check_suite_id(_default_id(file), str(file)), rubric=None,
                       loaded=None)
