"""Deterministic checks (a suite's fixtures) turned into per-category signals."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ..formats.evidence import structured_text
from ..formats.models import CheckResult
from ..formats.rubric import Rubric
from ..formats.suite import Case, Check
from .exact import round_half_up

__all__ = ["deterministic_signals", "output_text", "run_check"]


def output_text(output: Any) -> str:
    """The judged output as text: a string as is, a mapping's ``text``/``content``, else JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        for key in ("text", "content", "answer", "output"):
            if isinstance(output.get(key), str):
                return str(output[key])
    if output is None:
        return ""
    return structured_text(output)


def run_check(check: Check, output: Any) -> CheckResult:
    """Run one check against the case output."""
    text = output_text(output)
    fields = output if isinstance(output, Mapping) else {}
    passed: bool
    if check.type in {"contains", "not_contains"}:
        found = str(check.value).lower() in text.lower()
        passed = found if check.type == "contains" else not found
        detail = f"{'found' if found else 'not found'}: {check.value!r}"
    elif check.type == "min_confidence":
        conf = fields.get("confidence")
        passed = (isinstance(conf, int | float) and not isinstance(conf, bool)
                  and float(conf) >= float(check.value))
        detail = f"confidence {conf!r} vs minimum {check.value}"
    else:
        mode = fields.get("mode")
        passed = mode == check.value
        detail = f"mode {mode!r} vs expected {check.value!r}"
    return CheckResult(type=check.type, value=check.value, category=check.category,
                       passed=passed, detail=detail)


def deterministic_signals(case: Case, rubric: Rubric) -> tuple[dict[str, int | None],
                                                                list[CheckResult]]:
    """Per-category deterministic scores: given signals win; else the share of checks passed."""
    results = [run_check(check, case.output) for check in case.checks]
    signals: dict[str, int | None] = {}
    for cat in rubric.categories:
        if cat.id in case.deterministic:
            signals[cat.id] = case.deterministic[cat.id]
            continue
        relevant = [r for r in results if r.category in (None, cat.id)]
        passed = sum(r.passed for r in relevant)
        signals[cat.id] = round_half_up(Fraction(passed * 100, len(relevant))) if relevant else None
    return signals, results
