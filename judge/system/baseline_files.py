"""Baseline files on disk: where they live, reading them, writing them atomically.

The logic is in :mod:`judge.core.outcomes.baseline` and works on strings; this module only moves
text: a regular file within MAX_BASELINE_BYTES, sealed with the team secret's sealer when one is
set.
"""

from __future__ import annotations

from pathlib import Path

from ..core.formats.limits import MAX_BASELINE_BYTES
from ..core.outcomes.baseline import Baseline, baseline_text, parse_baseline
from ..core.text.errors import ConfigError, UsageError
from ..core.text.seals import Sealer
from .atomic_files import write_atomic
from .input_files import read_input

__all__ = [
    "BASELINE_DIR",
    "baseline_file_text",
    "baseline_path",
    "list_baselines",
    "load_baseline",
    "save_baseline",
]

BASELINE_DIR = "baselines"
"""Default folder, relative to the workspace (setting ``baselines_dir``); committed."""


def baseline_path(folder: Path, suite: str) -> Path:
    """``<folder>/<suite>.json``; ``folder`` is the baselines folder (``<workspace>/baselines``)."""
    if not suite or "/" in suite or "\\" in suite or suite in {".", ".."}:
        raise UsageError(f"suite id {suite!r} cannot name a baseline file",
                         fix="suite ids are letters, digits, . _ -")
    return folder / f"{suite}.json"


def baseline_file_text(path: Path) -> str:
    """The text of a baseline file: a regular file within MAX_BASELINE_BYTES, or ConfigError."""
    return read_input(path, ConfigError, MAX_BASELINE_BYTES,
                      "check the path, or record one with `judge baseline record`")


def load_baseline(path: Path, *, sealer: Sealer, check_digest: bool = True) -> Baseline:
    """Read and validate a baseline file; ConfigError naming the file on any problem."""
    return parse_baseline(baseline_file_text(path), str(path), sealer,
                          check_digest=check_digest)


def save_baseline(path: Path, baseline: Baseline, *, sealer: Sealer) -> None:
    """Write ``baseline`` to ``path`` whole: a reader sees the old file or the new one."""
    try:
        write_atomic(path, baseline_text(baseline, sealer))
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path}: {exc}",
                         fix="check the folder's permissions and free space") from None


def list_baselines(directory: Path) -> dict[str, Path]:
    """Baseline files in ``directory`` by file stem (the suite id), sorted; {} if no folder."""
    if not directory.is_dir():
        return {}
    return {p.stem: p for p in sorted(directory.glob("*.json")) if not p.name.startswith(".")}
