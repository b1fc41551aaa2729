"""The measured quality shipped with judgeflow: its embedded judge's agreement with labels.

The figures live in ``measured_quality.json`` beside this module, each with its provenance
(what was measured, on which suite, when, and where the measurement is written up), so a
run of that judge says plainly how far its scores follow people's labels.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import TypeAdapter

from ..core.stats.judge_quality import MeasuredAgreement
from ..core.text.strict_json import loads_strict

__all__ = ["SHIPPED_FILE", "shipped_quality"]

SHIPPED_FILE = Path(__file__).with_name("measured_quality.json")


@functools.cache
def shipped_quality() -> tuple[MeasuredAgreement, ...]:
    """The shipped figures, read once."""
    data = loads_strict(SHIPPED_FILE.read_text(encoding="utf-8"))
    return tuple(TypeAdapter(list[MeasuredAgreement]).validate_python(data))
