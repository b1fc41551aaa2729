"""Baseline files on disk: where they live, reading them, writing them atomically.

The logic is in :mod:`judge.baseline` and works on strings; this module only moves text.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .baseline import Baseline, baseline_text, parse_baseline
from .errors import ConfigError, UsageError

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


def load_baseline(path: Path) -> Baseline:
    """Read and validate a baseline file; ConfigError naming the file on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read baseline: {exc}", file=str(path),
                          fix="check the path, or record one with `judge baseline record`") \
            from None
    return parse_baseline(text, str(path))


def save_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path`` atomically: a temp file in the same folder, then replace.

    A reader (or a crash) sees the old file or the new one, never half of one.
    """
    text = baseline_text(baseline)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UsageError(f"cannot write baseline: {exc}", fix="check the folder's permissions") \
            from None
    try:
        # mkstemp makes the file 0600; a committed file should read like its neighbours.
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write baseline {path}: {exc}",
                         fix="check the folder's permissions and free space") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def list_baselines(directory: Path) -> dict[str, Path]:
    """Baseline files in ``directory`` by file stem (the suite id), sorted; {} if no folder."""
    if not directory.is_dir():
        return {}
    return {p.stem: p for p in sorted(directory.glob("*.json")) if not p.name.startswith(".")}
