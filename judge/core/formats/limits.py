"""Size and shape limits on what judgeflow reads: the one place they are set and explained.

Each limit is far above any real suite or rubric (the largest shipped example is a few
kilobytes; a generated 10,000-case JSONL suite has lines of ~2 KB) and far below what would
exhaust memory or the stack. Crossing one is a configuration error (exit 2) naming the file,
the place and the limit, never a crash.

=====================  ==============  ==================================================
limit                  value           why
=====================  ==============  ==================================================
MAX_SUITE_CHARS        64 Mi chars     a YAML suite is loaded whole (JSONL streams)
MAX_RUBRIC_CHARS       1 Mi chars      a rubric is configuration, a few KB
MAX_TEMPLATE_CHARS     1 Mi chars      a prompt template (the shipped ones are a few KB)
MAX_SETTINGS_BYTES     4 MiB           ``judge.toml`` or ``pyproject.toml``: a few lines
MAX_JSONL_LINE_CHARS   16 Mi chars     one case of a JSONL suite
MAX_JSONL_SUITE_BYTES  4 GiB           a JSONL suite streams, but a source that never ends
                                       (a growing log, a mistaken device) must stop
MAX_DEPTH              64 levels       nested lists/mappings in a YAML document or JSON line
MAX_ALIAS_NODES        100,000 nodes   nodes reached through YAML aliases, every use counted
MAX_SUITE_ID           128 chars       ``baselines/<id>.json`` must fit a file name (255)
MAX_PROMPT_CHARS       33 Mi chars     what a workspace template may build for one case: two
                                       JSONL lines' worth and 1 Mi of template text
MAX_INT_DIGITS         19 digits       an integer in a suite or config fits 64 bits (a
                                       5,000-digit one used to crash the int parser)
MAX_RECORDED_BYTES     256 MiB         judgments recorded elsewhere (``judge judges import``) are
                                       read whole and checked before any is stored

MAX_LABELS_BYTES       16 MiB          a labels file: ~60,000 labels of ~250 bytes (a team
                                       labels tens to thousands of cases); a 2,000,000-line
                                       file is refused by its size before a byte is read
MAX_CALIBRATION_BYTES  4 MiB           a calibration: 101 integers and a few statistics per
                                       category, ~2 KB each
MAX_NOISE_BYTES        1 MiB           a noise model: three spreads per category, ~1 KB
MAX_BASELINE_BYTES     256 MiB         a baseline: ~400 bytes a case with its judgment key,
                                       so 100,000 cases are ~40 MB
MAX_COLLECTED_BYTES    64 MiB          an artefact ``judge suite collect`` reads (gh JSON, a
                                       JUnit report, a log): beyond it is a blob, not evidence
=====================  ==============  ==================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_BASELINE_BYTES",
    "MAX_CALIBRATION_BYTES",
    "MAX_COLLECTED_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_JSONL_LINE_CHARS",
    "MAX_JSONL_SUITE_BYTES",
    "MAX_LABELS_BYTES",
    "MAX_NOISE_BYTES",
    "MAX_PROMPT_CHARS",
    "MAX_RECORDED_BYTES",
    "MAX_RUBRIC_CHARS",
    "MAX_SETTINGS_BYTES",
    "MAX_SUITE_CHARS",
    "MAX_SUITE_ID",
    "MAX_TEMPLATE_CHARS",
    "SUITE_ID_PATTERN",
    "nesting_depth",
]

MAX_SUITE_CHARS = 64 * 1024 * 1024
"""Characters in a YAML suite file (a suite of 10,000 rich cases is ~30 MB)."""
MAX_RUBRIC_CHARS = 1024 * 1024
"""Characters in a rubric file."""
MAX_TEMPLATE_CHARS = 1024 * 1024
"""Characters in one prompt template file (what :data:`MAX_PROMPT_CHARS` allows for)."""
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
"""Bytes in a settings file (``judge.toml``, ``pyproject.toml``)."""
MAX_JSONL_LINE_CHARS = 16 * 1024 * 1024
"""Characters in one line (one case) of a JSONL suite."""
MAX_JSONL_SUITE_BYTES = 4 * 1024 ** 3
"""Bytes in a JSONL suite (100,000 cases of 2 KB are 200 MB)."""
MAX_PROMPT_CHARS = 2 * MAX_JSONL_LINE_CHARS + 1024 * 1024
"""Characters a workspace template may build while rendering one case (judge.render.prompts)."""
MAX_DEPTH = 64
"""Nesting of lists and mappings in a YAML document or a JSON line (real cases: under 10)."""
MAX_ALIAS_NODES = 100_000
"""Nodes a YAML document may reach through aliases, counting every use of an alias in full.

Sharing an evidence block between a few hundred cases stays far below it; a 555-byte
"billion laughs" document (nine levels of nine aliases) reaches 10^9 and is refused while it
is read, before anything is built from it.
"""
MAX_INT_DIGITS = 19
"""Digits in an integer of a suite, rubric or JSON line (``2**63`` has 19): larger is refused."""
MAX_RECORDED_BYTES = 256 * 1024 * 1024
"""Bytes in a file of recorded judgments (SummEval's 1,600 summaries x 20 samples: ~1 MB)."""

MAX_LABELS_BYTES = 16 * 1024 * 1024
"""Bytes in a labels file (``judge review --export``)."""
MAX_CALIBRATION_BYTES = 4 * 1024 * 1024
"""Bytes in a calibration file (``judge judges calibrate``)."""
MAX_NOISE_BYTES = 1024 * 1024
"""Bytes in a noise model file (``baselines/noise/<key>.json``)."""
MAX_BASELINE_BYTES = 256 * 1024 * 1024
"""Bytes in a baseline file (``baselines/<suite>.json``)."""
MAX_COLLECTED_BYTES = 64 * 1024 * 1024
"""Bytes in an artefact ``judge suite collect`` reads (gh JSON, a JUnit report, a log...)."""
MAX_SUITE_ID = 128
"""Characters in a suite id; it names ``baselines/<id>.json``, so it must fit a file name."""
SUITE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""What a suite id may hold: safe in a file name on every platform, no path separator."""


def nesting_depth(value: Any) -> int:
    """Deepest nesting of lists and mappings in ``value``, walked without recursion.

    The walk stops once it is past :data:`MAX_DEPTH`: the answer is then "too deep".
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        if level > deepest:
            deepest = level
            if deepest > MAX_DEPTH:
                break
        stack.extend((child, level) for child in children)
    return deepest
