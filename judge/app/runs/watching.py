"""Watch mode's eyes: which files a run depends on, and a debounced wait for the next save.

``judge run SUITE --watch`` re-runs when a file the run reads is saved:
the suite, the rubric (a workspace rubric or a path), the workspace's templates
(``prompts/``, every file: an included template counts) and rubrics (``rubrics/``), and the
settings file (``judge.toml``, ``pyproject.toml``). It polls their mtimes and sizes with the
standard library: a few dozen ``stat`` calls every quarter second cost nothing next to a
judge call, and need no new dependency (no measured need for inotify).

A burst of saves (an editor writing a temporary file, then renaming; a formatter on save)
is one rerun: after the first change the wait goes on until nothing changed for
``DEBOUNCE_S``, at most ``BURST_LIMIT_S``. What the run itself writes (``cache/``, the store,
``baselines/``) is not watched, so a rerun never triggers another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BURST_LIMIT_S",
    "DEBOUNCE_S",
    "MAX_FILES",
    "MAX_RERUNS",
    "MAX_WAIT_S",
    "POLL_S",
    "Snapshot",
    "Watcher",
    "watched_files",
]

POLL_S = 0.25
"""How often the files' mtimes are read."""
DEBOUNCE_S = 0.4
"""Quiet needed after a save before the rerun starts (a burst of saves is one rerun)."""
BURST_LIMIT_S = 10.0
"""A burst that goes on longer than this reruns anyway."""
MAX_RERUNS = 1000
"""Watch mode ends after this many reruns (a bound, never reached by hand)."""
MAX_WAIT_S = 8 * 3600.0
"""Watch mode ends after this long without a save."""
MAX_FILES = 5000
"""At most this many files under the watched folders are looked at (sorted, the first)."""

Snapshot = dict[Path, tuple[int, int] | None]
"""Each watched file's (mtime in ns, size), None when it does not exist."""


def watched_files(root: Path, suite: Path, rubrics: Iterable[str | None]) -> list[Path]:
    """The files a run of ``suite`` in the workspace ``root`` reads.

    ``rubrics``: the rubric names in play (the flag, the setting, the suite's own); one that
    is a path is watched too (a rubric by id is in ``rubrics/`` or shipped).
    """
    files = [suite, root / "judge.toml", root / "pyproject.toml"]
    for folder in (root / "prompts", root / "rubrics"):
        if folder.is_dir():
            files += sorted(p for p in folder.rglob("*") if p.is_file())[:MAX_FILES]
    for name in rubrics:
        if name and (name.endswith((".yaml", ".yml")) or "/" in name):
            path = Path(name)
            files.append(path if path.is_absolute() else root / path)
    return list(dict.fromkeys(files))


def snapshot(files: Iterable[Path]) -> Snapshot:
    """Each file's (mtime, size) now."""
    out: Snapshot = {}
    for path in files:
        try:
            st = path.stat()
        except OSError:
            out[path] = None
            continue
        out[path] = (st.st_mtime_ns, st.st_size)
    return out


@dataclass
class Watcher:
    """Waits for the next save of the files ``files()`` names.

    ``files`` is asked anew at each poll, so a template added to ``prompts/`` is seen;
    ``clock`` and ``sleep`` are the tests' seam.
    """

    files: Callable[[], list[Path]]
    poll_s: float = POLL_S
    debounce_s: float = DEBOUNCE_S
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    last: Snapshot = field(default_factory=dict)

    def mark(self) -> None:
        """Take the files as they are now as the state the next change is measured from."""
        self.last = snapshot(self.files())

    def changed(self) -> list[Path]:
        """The files that differ from the marked state (added, removed, saved)."""
        now = snapshot(self.files())
        return sorted(p for p in now.keys() | self.last.keys()
                      if now.get(p) != self.last.get(p))

    def wait(self, max_wait_s: float = MAX_WAIT_S) -> list[Path]:
        """The files saved, once a save is followed by ``debounce_s`` of quiet.

        A burst is waited out for at most ``BURST_LIMIT_S``; an empty list after
        ``max_wait_s`` without a save.
        """
        deadline = self.clock() + max_wait_s
        while not (moved := self.changed()):
            if self.clock() >= deadline:
                return []
            self.sleep(self.poll_s)
        seen = set(moved)
        burst_end = self.clock() + BURST_LIMIT_S
        quiet_since = self.clock()
        state = snapshot(self.files())
        while self.clock() - quiet_since < self.debounce_s and self.clock() < burst_end:
            self.sleep(min(self.poll_s, self.debounce_s))
            now = snapshot(self.files())
            if now != state:
                seen |= {p for p in now.keys() | state.keys() if now.get(p) != state.get(p)}
                state, quiet_since = now, self.clock()
        self.last = state
        return sorted(seen)
