"""Result values: the advisory score the judge gives and the authoritative scores the core computes.

Field names of the persisted payload are the seed's (``deterministicScore``, ``finalScore``...),
so stored rows and ``--json`` output read the same as the contract.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

__all__ = [
    "AdvisoryScore",
    "CaseScore",
    "CategoryScore",
    "Rule",
    "Score",
]

Score = Annotated[StrictInt, Field(ge=0, le=100)]
"""An integer score 0..100; floats, bools and strings are rejected, not coerced."""

Rule = Literal["blend", "ai_only", "deterministic_only", "unscored"]
"""Which rule produced a category's final score."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AdvisoryScore(_Frozen):
    """What the judge said about one category: advisory input to the core, never final."""

    score: Score
    """The judge's 0..100 score (for a levels rubric: the chosen level's value x 100)."""
    level: str | None = None
    """The level the judge named (levels rubrics only)."""
    rationale: str = ""
    """The judge's reasons, bounded."""
    evidence: tuple[str, ...] = ()
    """Evidence IDs the judge cited; each is in the case's bundle."""


class CategoryScore(_Frozen):
    """The persisted per-category payload (seed 000), plus the rule that produced the final."""

    category: str
    deterministicScore: Score | None = None
    aiScore: Score | None = None
    finalScore: Score | None = None
    """Authoritative: computed by the core from the two inputs above."""
    weight: float = Field(gt=0, le=1)
    band: str | None = None
    rationale: str = ""
    evidence: tuple[str, ...] = ()
    """IDs of the evidence items the judge cited for this category."""
    rule: Rule = "blend"
    level: str | None = None


class CaseScore(_Frozen):
    """The authoritative score of one case under one rubric."""

    status: Literal["scored", "unscored"]
    overallScore: Score | None = None
    band: str | None = None
    passed: bool | None = None
    categoryScores: tuple[CategoryScore, ...] = ()
    reason: str | None = None
    """Why the case is unscored, when it is."""
