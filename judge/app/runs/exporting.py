"""A run's case results as JSON lines or CSV, written to a text stream as they are read.

JSON lines are the canonical JSON of each stored result, so an export is byte-comparable
with the store. CSV has one row per result and four columns per category (deterministic,
AI, final, band), for a spreadsheet.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, TextIO

from ...core.formats.models import CaseResult, RunInfo
from ...core.text.canonical import canonical_json

__all__ = ["CSV_HEAD", "ExportFormat", "write_csv", "write_export", "write_jsonl"]

CSV_HEAD = ("run_id", "case_id", "model", "sample", "status", "overallScore", "band", "passed",
            "reason")
"""The CSV columns before the per-category ones."""


class ExportFormat(StrEnum):
    """What an export writes."""

    jsonl = "jsonl"
    csv = "csv"


def write_export(info: RunInfo, results: Iterable[CaseResult], fmt: ExportFormat,
                 sink: TextIO) -> int:
    """Write ``results`` of run ``info`` to ``sink`` in ``fmt``; returns how many."""
    if fmt is ExportFormat.jsonl:
        return write_jsonl(results, sink)
    return write_csv(info, results, sink)


def write_jsonl(results: Iterable[CaseResult], sink: TextIO) -> int:
    """One canonical JSON line per result."""
    count = 0
    for result in results:
        sink.write(canonical_json(result.model_dump(mode="json")) + "\n")
        count += 1
    return count


def write_csv(info: RunInfo, results: Iterable[CaseResult], sink: TextIO) -> int:
    """One row per result; category columns come from the first result that has scores.

    Results before that one (unscored cases carry no categories) are held back until it
    arrives, so the stream is only buffered as far as it must be.
    """
    writer = csv.writer(sink, lineterminator="\n")
    categories: list[str] | None = None
    held: list[CaseResult] = []
    count = 0

    def start(cats: list[str]) -> None:
        writer.writerow([*CSV_HEAD, *(f"{c}.{part}" for c in cats
                                      for part in ("deterministic", "ai", "final", "band"))])
        for r in held:
            writer.writerow(_csv_row(info, r, cats))
        held.clear()

    for result in results:
        count += 1
        if categories is not None:
            writer.writerow(_csv_row(info, result, categories))
            continue
        held.append(result)
        if result.category_scores:
            categories = [c.category for c in result.category_scores]
            start(categories)
    if categories is None:
        start([])
    return count


def _csv_row(info: RunInfo, r: CaseResult, categories: list[str]) -> list[str]:
    by_cat = {c.category: c for c in r.category_scores}
    row = [info.id, r.id, r.judge.model if r.judge else "", str(r.judge.sample if r.judge else 0),
           r.status, _cell(r.overall_score), _cell(r.band), _cell(r.passed), _cell(r.reason)]
    for name in categories:
        c = by_cat.get(name)
        row += ["", "", "", ""] if c is None else [
            _cell(c.deterministic_score), _cell(c.ai_score), _cell(c.final_score), _cell(c.band)]
    return row


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
