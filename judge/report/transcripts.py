"""What the report shows of a case's conversation and trace, beside its scores (issue 31).

A stored result keeps only the items the judge cited; the page shows the whole
conversation (each turn under its id) and the whole span tree of a case collected from an
OpenTelemetry trace (its spans in tree order, each a collapsible node holding its
children), read from the suite the run judged, with the cited turns and spans highlighted
and every span on the way to a cited one open. Turns are bounded
as the judge saw them (:func:`judge.core.conversation.bound_conversation`); spans are the
evidence items as stored in the suite, already capped and truncated. Every string is
escaped by the page's template; nothing here is markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from ..core.conversation import bound_conversation
from ..core.frozen import Frozen
from ..core.models import CaseResult
from ..core.suite import Case

__all__ = ["INDENT_LIMIT", "SpanRow", "Transcript", "TurnRow", "transcripts"]

INDENT_LIMIT = 12
"""Deepest nesting drawn (a span 10,000 deep is drawn at this level, its depth said): the
pages nest a node per level, and a hand-written suite may hold any depth."""


class TurnRow(Frozen):
    """One turn as shown."""

    id: str
    role: str
    label: str
    text: str
    cited: bool


class SpanRow(Frozen):
    """One span as shown: its evidence id, labels, timings and bounded text."""

    id: str
    group: str
    title: str
    text: str
    kind: str
    status: str
    depth: int
    level: int
    """Nesting in the tree as shown (0: top), at most INDENT_LIMIT. A span sits under the
    nearest earlier shown span of smaller depth: the caps may have left its parent out."""
    duration_ms: int | None = Field(alias="durationMs")
    refs: dict[str, Any]
    cited: bool
    open: bool
    """Cited, or holding a cited span: drawn expanded."""


class Transcript(Frozen):
    """A case's turns and span tree (either may be empty) and what the caps left out."""

    turns: tuple[TurnRow, ...] = ()
    turns_not_shown: int = Field(0, alias="turnsNotShown")
    spans: tuple[SpanRow, ...] = ()


def _cited(results: Iterable[CaseResult]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in results:
        ids = out.setdefault(r.id, set())
        for cat in r.category_scores:
            ids.update(cat.evidence)
    return out


def _is_otel(case: Case) -> bool:
    sources = case.metadata.get("collected", {}).get("sources", []) \
        if isinstance(case.metadata.get("collected"), Mapping) else []
    return any(isinstance(s, Mapping) and s.get("kind") == "otel" for s in sources)


def _span_rows(case: Case, cited: set[str]) -> tuple[SpanRow, ...]:
    rows = []
    for group, items in case.evidence.items():
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, Mapping) or "spanId" not in item:
                continue
            raw_depth = item.get("depth")
            item_id = f"{group}:{item.get('id')}"
            seq = item.get("seq")
            rows.append((seq if isinstance(seq, int) else 0, {
                "id": item_id, "group": group, "title": str(item.get("title") or ""),
                "text": str(item.get("text") or ""), "kind": str(item.get("kind") or ""),
                "status": str(item.get("status") or ""),
                "depth": raw_depth if isinstance(raw_depth, int) else 0,
                "durationMs": item.get("durationMs")
                if isinstance(item.get("durationMs"), int) else None,
                "refs": {k: v for k, v in item.items()
                         if k not in {"id", "title", "text", "spanId", "seq", "depth", "kind",
                                      "status", "durationMs"}
                         and not isinstance(v, list | dict)},
                "cited": item_id in cited, "open": item_id in cited}))
    rows.sort(key=lambda r: r[0])
    return tuple(SpanRow.model_validate(row) for row in _nested([r for _, r in rows]))


def _nested(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set each row's ``level`` and ``open`` (cited, or an ancestor of a cited row).

    A row sits under the nearest earlier row of smaller depth, at most INDENT_LIMIT deep.
    """
    stack: list[dict[str, Any]] = []
    for row in rows:
        while stack and stack[-1]["depth"] >= row["depth"]:
            stack.pop()
        del stack[INDENT_LIMIT:]
        row["level"] = len(stack)
        if row["cited"]:
            for above in stack:
                above["open"] = True
        stack.append(row)
    return rows


def transcripts(cases: Iterable[Case], results: Iterable[CaseResult]) -> dict[str, Transcript]:
    """The transcript of every case with a conversation or a collected trace, by case id."""
    cited = _cited(results)
    out: dict[str, Transcript] = {}
    for case in cases:
        ids = cited.get(case.id, set())
        turns: tuple[TurnRow, ...] = ()
        dropped = 0
        if case.conversation:
            view = bound_conversation(case.conversation)
            turns = tuple(TurnRow(id=t.id, role=t.role, label=t.label, text=t.text,
                                  cited=t.id in ids) for t in view.turns)
            dropped = view.dropped
        spans = _span_rows(case, ids) if _is_otel(case) else ()
        if turns or spans:
            out[case.id] = Transcript(turns=turns, turns_not_shown=dropped, spans=spans)
    return out
