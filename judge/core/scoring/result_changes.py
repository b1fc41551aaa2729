"""What "changed" means between two results of one case: one rule for rescore, diff and reports.

A case *changed* when its outcome differs: status, overall score, band or pass/fail. A move
of a category's AI or final score that leaves the outcome as it was is *detail*: ``judge
diff`` shows it per category and counts it apart, but it is not a changed case. A rationale
alone is never a change (the same scores in other words).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..formats.models import CaseResult, CategoryScore

__all__ = ["CaseChange", "case_change", "case_changed", "category_moved"]


@dataclass(frozen=True)
class CaseChange:
    """Which parts of a case's result differ between two results of it."""

    status: bool
    score: bool
    band: bool
    passed: bool
    categories: tuple[str, ...]
    """Categories whose AI or final score moved (in the order the results list them)."""

    @property
    def changed(self) -> bool:
        """The outcome differs: status, overall score, band or pass/fail."""
        return self.status or self.score or self.band or self.passed

    @property
    def detail_only(self) -> bool:
        """Only category scores moved; the outcome is the same."""
        return not self.changed and bool(self.categories)


def category_moved(a: CategoryScore | None, b: CategoryScore | None) -> bool:
    """A category's AI or final score differs (a category on one side only counts as moved)."""
    ai = (a.ai_score if a else None, b.ai_score if b else None)
    final = (a.final_score if a else None, b.final_score if b else None)
    return ai[0] != ai[1] or final[0] != final[1]


def case_change(a: CaseResult, b: CaseResult) -> CaseChange:
    """How ``b`` differs from ``a`` (two results of one case)."""
    cats_a = {c.category: c for c in a.category_scores}
    cats_b = {c.category: c for c in b.category_scores}
    moved = tuple(name for name in dict.fromkeys([*cats_a, *cats_b])
                  if category_moved(cats_a.get(name), cats_b.get(name)))
    return CaseChange(status=a.status != b.status, score=a.overall_score != b.overall_score,
                      band=a.band != b.band, passed=a.passed != b.passed, categories=moved)


def case_changed(a: CaseResult, b: CaseResult) -> bool:
    """Whether the case's outcome differs: status, overall score, band or pass/fail."""
    return (a.status, a.overall_score, a.band, a.passed) != (b.status, b.overall_score, b.band,
                                                            b.passed)
