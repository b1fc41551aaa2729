"""The production monitor over a file: read judged live records, sample, check the pass rate.

The sampling and the verdict are :mod:`judge.core.outcomes.monitor`'s (pure); this module reads the
records, one JSON object a line, and names the file and line of the first bad one. Lines
are read one at a time, so a large log is never held in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...core.formats.limits import MAX_JSONL_LINE_CHARS, MAX_JSONL_SUITE_BYTES
from ...core.outcomes.monitor import MonitorConfig, MonitorStatus, evaluate, outcome
from ...core.text.errors import ConfigError
from ...core.text.strict_json import loads_strict
from ...system.input_files import input_lines
from ..workspace.workspace import Workspace

__all__ = ["monitor_file", "read_records"]


def read_records(path: Path, pass_score: int | None,
                 shown_as: str | None = None) -> Iterator[dict[str, Any]]:
    """Yield the file's JSON objects, one a line; ConfigError naming the line on a bad one.

    Each record's outcome is checked as it is read (``pass_score`` as the monitor uses it),
    so a malformed ``passed`` or ``overallScore`` is an error here, not a silent unscored.
    """
    name = shown_as or str(path)
    # Bounded and typed (judge.system.input_files): a FIFO or a device is refused, unread.
    lines = input_lines(path, ConfigError, MAX_JSONL_SUITE_BYTES, 4 * MAX_JSONL_LINE_CHARS)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads_strict(line)
        except (ValueError, RecursionError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else \
                "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise ConfigError(f"invalid JSON: {msg}", file=name, where=f"line {lineno}",
                              fix="one JSON object per line") from None
        if not isinstance(record, dict):
            raise ConfigError("a record is a JSON object", file=name,
                              where=f"line {lineno}", fix="one JSON object per line")
        try:
            outcome(record, pass_score)
        except ValueError as exc:
            raise ConfigError(str(exc), file=name, where=f"line {lineno}",
                              fix="passed is true/false/null, overallScore a number") from None
        yield record


def monitor_file(workspace: Workspace, path: Path, config: MonitorConfig) -> MonitorStatus:
    """Sample the records of ``path`` (relative to the workspace) and judge their pass rate."""
    records = read_records(workspace.path(path), config.pass_score, shown_as=str(path))
    return evaluate(records, config)
