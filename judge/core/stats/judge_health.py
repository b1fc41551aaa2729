"""Is the judge saying anything? A health check over a run's AI verdicts.

A judge can answer every case validly and still carry no information: SmolLM2-135M gave
0 to 40 of 42 category scores and copied the template's ``<one to three sentences>`` into
9 rationales, and nothing said so. These checks run on every run's LLM-judged results
and name what they found; the doors print it (summary, ``--json``, the report's banner,
the canary). A check needs enough verdicts to mean anything (:data:`MIN_SCORES`).

- **constant scores**: one AI score value for every category score of the run;
  **near-constant**: the most common value holds at least :data:`NEAR_CONSTANT` of them.
- **template text**: a rationale with a placeholder's shape (``<...>``) or that is a piece
  of the prompt template's own text (``template_text``, the template's source: trusted).
- **short rationales**: fewer than :data:`MIN_WORDS` words, in at least :data:`SHARE`.
- **citations only**: a rationale of evidence IDs and punctuation, no words, in at least
  :data:`SHARE`.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import Field

from ..formats.models import CaseResult
from ..text.frozen import Frozen

__all__ = ["MIN_SCORES", "MIN_WORDS", "NEAR_CONSTANT", "SHARE", "HealthBuilder", "JudgeHealth"]

MIN_SCORES = 5
"""AI category scores below which no check is made (too few to tell)."""
NEAR_CONSTANT = 0.8
"""Share of the most common AI score at which the scores count as near-constant."""
MIN_WORDS = 4
"""A rationale with fewer words than this is short."""
SHARE = 0.25
"""Share of rationales at which short or citation-only ones are reported."""

_PLACEHOLDER = re.compile(r"<[^<>\n]{1,80}>")
_WORD = re.compile(r"[^\W\d_]{2,}")


class JudgeHealth(Frozen):
    """What the health check saw in a run's AI verdicts, and the problems it names."""

    scores: int
    """AI category scores looked at (LLM-judged, scored cases)."""
    distinct_scores: int = Field(alias="distinctScores")
    top_score: int | None = Field(None, alias="topScore")
    """The most common AI score."""
    top_share: float = Field(0.0, alias="topShare")
    """Its share of the scores, 0..1 (4 places)."""
    rationales: int = 0
    template_text: int = Field(0, alias="templateText")
    """Rationales that repeat the template (a placeholder's shape, or its own text)."""
    short_rationales: int = Field(0, alias="shortRationales")
    citations_only: int = Field(0, alias="citationsOnly")
    problems: tuple[str, ...] = ()
    """One line per problem found; empty when the judge looks healthy."""

    @property
    def degenerate(self) -> bool:
        """Whether any problem was found."""
        return bool(self.problems)


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


class HealthBuilder:
    """Accumulates the AI verdicts of a run one result at a time (bounded memory)."""

    def __init__(self, template_text: str = "") -> None:
        self.template = _normal(template_text)
        self.values: Counter[int] = Counter()
        self.rationales = 0
        self.template_text = 0
        self.short = 0
        self.citations = 0

    def add(self, result: CaseResult) -> None:
        """Count one result's AI scores and rationales (LLM-judged, scored ones only)."""
        if result.judged_by != "llm" or result.status != "scored":
            return
        ids = {e.id for e in result.evidence}
        for cat in result.category_scores:
            if cat.ai_score is None:
                continue
            self.values[cat.ai_score] += 1
            self._rationale(cat.rationale or "", ids | set(cat.evidence))

    def _rationale(self, text: str, ids: set[str]) -> None:
        self.rationales += 1
        norm = _normal(text)
        if _PLACEHOLDER.search(text) or (len(norm) >= 12 and norm in self.template):
            self.template_text += 1
        rest = text
        for i in sorted(ids, key=len, reverse=True):
            rest = rest.replace(i, " ")
        words = _WORD.findall(rest)
        if text.strip() and not words:
            self.citations += 1
        elif len(_WORD.findall(text)) < MIN_WORDS:
            self.short += 1

    def build(self) -> JudgeHealth | None:
        """The check's result; None when the run had no AI score (nothing to judge)."""
        total = sum(self.values.values())
        if not total:
            return None
        top, count = self.values.most_common(1)[0]
        share = round(count / total, 4)
        problems: list[str] = []
        if total >= MIN_SCORES:
            if len(self.values) == 1:
                problems.append(f"constant AI scores: all {total} are {top}")
            elif share >= NEAR_CONSTANT:
                problems.append(f"near-constant AI scores: {count} of {total} are {top}")
            if self.template_text:
                problems.append(f"{self.template_text} of {self.rationales} rationales repeat "
                                "the prompt template (placeholder or instruction text)")
            if self.short >= SHARE * self.rationales:
                problems.append(f"{self.short} of {self.rationales} rationales are shorter "
                                f"than {MIN_WORDS} words")
            if self.citations >= SHARE * self.rationales:
                problems.append(f"{self.citations} of {self.rationales} rationales are "
                                "citations only, no words")
        return JudgeHealth(scores=total, distinct_scores=len(self.values), top_score=top,
                           top_share=share, rationales=self.rationales,
                           template_text=self.template_text, short_rationales=self.short,
                           citations_only=self.citations, problems=tuple(problems))
