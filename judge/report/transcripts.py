"""What the report shows of a case's conversation and trace, beside its scores.

A stored result keeps only the items the judge cited; the page shows the whole
conversation (each turn under its id) and the whole span tree of a case collected from an
OpenTelemetry trace (its spans in tree order, each a collapsible node holding its
children), read from the suite the run judged, with the cited turns and spans highlighted
and every span on the way to a cited one open. Turns are bounded
as the judge saw them (:func:`judge.core.formats.conversation.bound_conversation`); spans are the
evidence items as stored in the suite, already capped and truncated. Every string is
escaped by the page's template; nothing here is markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from ..core.formats.conversation import bound_conversation
from ..core.formats.models import CaseResult
from ..core.formats.suite import Case
from ..core.text.frozen import Frozen

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


_SPAN_FIELDS = frozenset({"id", "title", "text", "spanId", "seq", "depth", "kind", "status",
                          "durationMs"})


def _span_items(case: Case) -> list[tuple[str, Mapping[str, Any]]]:
    """(group, item) of every span item of the case's evidence, in the trace's order."""
    found = [(group, item) for group, items in case.evidence.items()
             for item in (items if isinstance(items, list) else [])
             if isinstance(item, Mapping) and "spanId" in item]
    found.sort(key=lambda gi: seq if isinstance(seq := gi[1].get("seq"), int) else 0)
    return found


def _span_rows(case: Case, cited: set[str]) -> tuple[SpanRow, ...]:
    found = _span_items(case)
    ids = [f"{group}:{item.get('id')}" for group, item in found]
    depths = [d if isinstance(d := item.get("depth"), int) else 0 for _, item in found]
    levels, opened = _nested(depths, [i in cited for i in ids])
    return tuple(SpanRow(
        id=item_id, group=group, title=str(item.get("title") or ""),
        text=str(item.get("text") or ""), kind=str(item.get("kind") or ""),
        status=str(item.get("status") or ""), depth=depth, level=level,
        duration_ms=ms if isinstance(ms := item.get("durationMs"), int) else None,
        refs={k: v for k, v in item.items()
              if k not in _SPAN_FIELDS and not isinstance(v, list | dict)},
        cited=item_id in cited, open=open_)
        for (group, item), item_id, depth, level, open_
        in zip(found, ids, depths, levels, opened, strict=True))


def _nested(depths: Sequence[int], cited: Sequence[bool]) -> tuple[list[int], list[bool]]:
    """Each row's level, and whether it is drawn open (cited, or an ancestor of a cited row).

    A row sits under the nearest earlier row of smaller depth, at most INDENT_LIMIT deep.
    """
    levels: list[int] = []
    opened = list(cited)
    stack: list[int] = []
    for row, depth in enumerate(depths):
        while stack and depths[stack[-1]] >= depth:
            stack.pop()
        del stack[INDENT_LIMIT:]
        levels.append(len(stack))
        if cited[row]:
            for above in stack:
                opened[above] = True
        stack.append(row)
    return levels, opened


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
