"""The workspace's suites by id: every suite file that the ``suites`` setting's patterns find.

A door that names suites by id (the HTTP API's ``/api/suites/{suite_id}/...``) turns an id
into a file only here, and only into a file found inside the workspace: an id is looked up,
never joined onto a path, so no id (``..``, ``/etc/x``, a symlink's target) can name a file
elsewhere. A file that cannot be read is still listed, under the id its name gives, with
its error, so that running it answers with the file and the place of the problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...core.formats.suite import PairSuiteGiven
from ...core.text.errors import ConfigError, SuiteError, UnknownSuiteError, UsageError
from ...system.resources import load_suite, suite_file_id, utf8_lines
from ..runs.pairwise_run import load_pair_suite
from .workspace import Workspace

__all__ = ["SUITE_ID_PATTERN", "SuiteEntry", "SuiteIndex"]

SUITE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
"""What a suite id may be: it also names the baseline file ``<id>.json``."""
_SUITE_ID = re.compile(SUITE_ID_PATTERN)
_SUFFIXES = (".yaml", ".yml", ".jsonl")


@dataclass(frozen=True)
class SuiteEntry:
    """One suite file of the workspace: its id, where it is, and what it holds (or its error)."""

    id: str
    path: Path
    """Relative to the workspace."""
    cases: int | None
    """Cases in the file (None when it cannot be read)."""
    rubric: str | None
    """The rubric the suite names, if any."""
    error: str | None = None
    """Why the file cannot be used: file, place and fix."""
    kind: str = "rubric"
    """``rubric`` (``judge run``) or ``pairwise`` (``judge judges pairwise``)."""


def _jsonl_cases(path: Path) -> int:
    return sum(1 for line in utf8_lines(path) if line.strip())


def _yaml_entry(path: Path, rel: Path) -> SuiteEntry:
    """A YAML suite's entry; a pair suite is listed as one, not as a broken rubric suite."""
    try:
        suite = load_suite(path)
    except PairSuiteGiven:
        pairs = load_pair_suite(path, str(rel))
        return SuiteEntry(id=pairs.id, path=rel, cases=len(pairs.cases), rubric=None,
                          kind="pairwise")
    return SuiteEntry(id=suite.id, path=rel, cases=len(suite.cases), rubric=suite.rubric)


class SuiteIndex:
    """The suites of one workspace, re-read only when a file changes (size or mtime)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._root = workspace.root.resolve()
        self._memo: dict[Path, tuple[tuple[int, int], SuiteEntry, ConfigError | None]] = {}

    def _files(self) -> Iterator[Path]:
        seen: set[Path] = set()
        for pattern in self.workspace.settings.suites:
            for path in sorted(self.workspace.root.glob(pattern)):
                # Not only regular files: a FIFO or a device named like a suite is listed
                # with its error (refused by type when read), not silently left out.
                if path.suffix not in _SUFFIXES or not path.exists() or path.is_dir() \
                        or path in seen:
                    continue
                seen.add(path)
                # A symlink out of the workspace is not one of its suites.
                if path.resolve().is_relative_to(self._root):
                    yield path

    def _entry(self, path: Path) -> SuiteEntry:
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        known = self._memo.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        rel = path.relative_to(self.workspace.root)
        problem: ConfigError | None = None
        try:
            if path.suffix == ".jsonl":
                entry = SuiteEntry(id=suite_file_id(path), path=rel, cases=_jsonl_cases(path),
                                   rubric=None)
            else:
                entry = _yaml_entry(path, rel)
        except (ConfigError, OSError, UnicodeDecodeError) as exc:
            problem = exc if isinstance(exc, ConfigError) else SuiteError(
                f"cannot read: {exc}", file=str(rel), fix="check the file")
            entry = SuiteEntry(id=suite_file_id(path), path=rel, cases=None, rubric=None,
                               error=problem.render())
        self._memo[path] = (stamp, entry, problem)
        return entry

    def entries(self) -> list[SuiteEntry]:
        """Every suite file, by id then path."""
        return sorted((self._entry(p) for p in self._files()), key=lambda e: (e.id, str(e.path)))

    def find(self, suite_id: str) -> SuiteEntry:
        """The suite with this id; UnknownSuiteError when none, UsageError when two files share it.

        A suite whose file is broken is returned too: running it raises the file's own error.
        """
        if not _SUITE_ID.match(suite_id):
            raise UnknownSuiteError(f"{suite_id!r} is not a suite id",
                                    fix="suite ids are letters, digits, '.', '_' and '-'")
        found = [e for e in self.entries() if e.id == suite_id]
        if not found:
            known = ", ".join(sorted({e.id for e in self.entries()})[:10]) or "(none)"
            raise UnknownSuiteError(f"no suite {suite_id!r} in the workspace",
                                    fix=f"known suites: {known}; the `suites` setting says "
                                        "where suites are")
        if len(found) > 1:
            raise UsageError(f"suite id {suite_id!r} is given by "
                             + " and ".join(str(e.path) for e in found),
                             fix="give each suite its own `id`")
        return found[0]

    def require(self, suite_id: str) -> SuiteEntry:
        """:meth:`find`, and the file's own error (SuiteError naming file and place) if broken."""
        entry = self.find(suite_id)
        known = self._memo.get(self.workspace.root / entry.path)
        if known is not None and known[2] is not None:
            e = known[2]
            raise type(e)(e.message, file=e.file, where=e.where, fix=e.fix)
        return entry
