"""The span tree as the report and the review page draw it (judge.report.transcripts)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from judge.core.formats.models import CaseResult
from judge.core.formats.suite import Case
from judge.report.transcripts import INDENT_LIMIT, transcripts


def _case(depths: list[int]) -> Case:
    items = [{"id": f"span-{n:016x}", "title": f"s{n}", "text": "", "spanId": f"{n:016x}",
              "seq": n, "depth": d} for n, d in enumerate(depths, start=1)]
    return Case.model_validate({"id": "c", "evidence": {"runAudit": items},
                                "metadata": {"collected": {"sources": [{"kind": "otel"}]}}})


def _rows(depths: list[int], cited: set[int]) -> list[Any]:
    result = CaseResult.model_validate({
        "id": "c", "status": "scored", "categoryScores": [{
            "category": "x", "deterministicScore": None, "aiScore": 50, "finalScore": 50,
            "weight": 1, "rule": "blend",
            "evidence": [f"runAudit:span-{n:016x}" for n in sorted(cited)]}]})
    return list(transcripts([_case(depths)], [result])["c"].spans)


def test_rows_nest_under_the_nearest_shallower_row_and_cited_paths_open() -> None:
    # depth 3 follows depth 1 (the caps dropped its parent): it nests one level under it
    rows = _rows([1, 2, 3, 2, 1, 3, 4, 1], cited={3, 7})
    assert [r.level for r in rows] == [0, 1, 2, 1, 0, 1, 2, 0]
    assert [r.cited for r in rows] == [False, False, True, False, False, False, True, False]
    assert [r.open for r in rows] == [True, True, True, False, True, True, True, False]


def test_nesting_stops_at_the_indent_limit_whatever_the_depth() -> None:
    rows = _rows(list(range(1, 10_001)), cited={10_000})
    assert max(r.level for r in rows) == INDENT_LIMIT
    assert [r.level for r in rows[:INDENT_LIMIT + 3]] == [*range(INDENT_LIMIT + 1),
                                                          INDENT_LIMIT, INDENT_LIMIT]
    # each row's level is at most one more than the one before: the pages' stack holds
    assert all(b.level <= a.level + 1 for a, b in pairwise(rows))
    assert rows[-1].cited and rows[-1].depth == 10_000
    assert [r.open for r in rows].count(True) == INDENT_LIMIT + 1  # the path drawn to it
