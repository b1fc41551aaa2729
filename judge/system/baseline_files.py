"""Baseline files on disk: where they live, reading them, writing them atomically.

The logic is in :mod:`judge.core.baseline` and works on strings; this module only moves text.
"""

from __future__ import annotations

from pathlib import Path

from ..core.baseline import Baseline, baseline_text, parse_baseline
from ..core.errors import ConfigError, UsageError
from .atomic_files import write_atomic

__all__ = [
    "BASELINE_DIR",
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


def load_baseline(path: Path, *, check_digest: bool = True) -> Baseline:
    """Read and validate a baseline file; ConfigError naming the file on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read baseline: {exc}", file=str(path),
                          fix="check the path, or record one with `judge baseline record`") \
            from None
    return parse_baseline(text, str(path), check_digest=check_digest)


def save_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path`` whole: a reader sees the old file or the new one."""
    try:
        write_atomic(path, baseline_text(baseline))
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path}: {exc}",
                         fix="check the folder's permissions and free space") from None


def list_baselines(directory: Path) -> dict[str, Path]:
    """Baseline files in ``directory`` by file stem (the suite id), sorted; {} if no folder."""
    if not directory.is_dir():
        return {}
    return {p.stem: p for p in sorted(directory.glob("*.json")) if not p.name.startswith(".")}
