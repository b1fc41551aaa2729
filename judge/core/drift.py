"""Drift between a cached verdict and a fresh one for the same request: a canary's arithmetic.

A canary re-asks cached judgments with the very same request (model, messages, seed,
temperature). A judge that did not change answers the same, or within its own noise; a
different model behind the same name answers differently. Per category the canary
measures the AI score difference (fresh - cached); a category has drifted when the mean
absolute difference exceeds its tolerance: the judge's measured noise (the mean per-case
spread of a ``--samples K`` run) where there is one, else the configured threshold.
A changed model id or fingerprint is reported; by itself it is not drift (a new serving
stack may answer exactly as before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from .frozen import Frozen
from .judge_health import JudgeHealth
from .models import AdvisoryScore

__all__ = ["CanaryItem", "CategoryDrift", "DriftSummary", "Tolerance", "compare_verdicts",
           "summarize"]


class Tolerance(Frozen):
    """How far one category's mean absolute difference may go before it counts as drift."""

    points: float
    source: str
    """``measured noise (run R, K samples)``, ``threshold`` or ``flag``."""


class CanaryItem(Frozen):
    """One re-asked judgment: the cached verdict against the fresh one."""

    case: str
    model: str
    sample: int
    key: str
    status: str
    """``compared``, or ``failed`` (the fresh call gave no valid verdict: ``reason``)."""
    reason: str | None = None
    exact: bool = False
    """Every category got the same score (and level) as cached."""
    diffs: dict[str, int] = Field(default_factory=dict)
    """Per category: fresh AI score - cached AI score."""
    cachedOverall: int | None = None
    freshOverall: int | None = None
    cachedBand: str | None = None
    freshBand: str | None = None
    cachedModel: str | None = None
    freshModel: str | None = None
    cachedFingerprint: str | None = None
    freshFingerprint: str | None = None

    @property
    def band_flip(self) -> bool:
        """The case's band changed."""
        return self.status == "compared" and self.cachedBand != self.freshBand


class CategoryDrift(Frozen):
    """One category over every compared item."""

    category: str
    compared: int
    meanAbsDiff: float
    meanDiff: float
    maxAbsDiff: int
    tolerance: Tolerance
    drifted: bool


class DriftSummary(Frozen):
    """The canary's verdict over its sample."""

    sampled: int
    compared: int
    failed: int
    exactMatchRate: float | None
    bandFlips: int
    categories: tuple[CategoryDrift, ...]
    modelsCached: tuple[str, ...]
    modelsFresh: tuple[str, ...]
    fingerprintsCached: tuple[str, ...]
    fingerprintsFresh: tuple[str, ...]
    drifted: bool
    reasons: tuple[str, ...]
    """Why it drifted (empty when not)."""
    notices: tuple[str, ...] = ()
    """What changed without being drift (a new model id or fingerprint), and what the
    judge-health check found in the fresh verdicts."""
    judgeHealth: JudgeHealth | None = None
    """The health check over the fresh verdicts (:mod:`judge.core.judge_health`)."""


def compare_verdicts(cached: Mapping[str, AdvisoryScore],
                     fresh: Mapping[str, AdvisoryScore]) -> tuple[bool, dict[str, int]]:
    """``(exact, fresh - cached per category)`` over the categories both verdicts scored."""
    diffs = {c: fresh[c].score - cached[c].score for c in cached if c in fresh}
    exact = cached.keys() == fresh.keys() and all(
        cached[c].score == fresh[c].score and cached[c].level == fresh[c].level for c in cached)
    return exact, diffs


def _seen(values: Sequence[str | None]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if v}))


def summarize(items: Sequence[CanaryItem], tolerances: Mapping[str, Tolerance],
              default: Tolerance) -> DriftSummary:
    """The drift verdict of ``items`` under per-category tolerances (``default`` for others)."""
    compared = [i for i in items if i.status == "compared"]
    categories: list[CategoryDrift] = []
    reasons: list[str] = []
    names = list(dict.fromkeys(c for i in compared for c in i.diffs))
    for name in names:
        diffs = [i.diffs[name] for i in compared if name in i.diffs]
        mean_abs = sum(abs(d) for d in diffs) / len(diffs)
        tol = tolerances.get(name, default)
        drifted = mean_abs > tol.points
        categories.append(CategoryDrift(
            category=name, compared=len(diffs), meanAbsDiff=round(mean_abs, 2),
            meanDiff=round(sum(diffs) / len(diffs), 2), maxAbsDiff=max(abs(d) for d in diffs),
            tolerance=tol, drifted=drifted))
        if drifted:
            reasons.append(f"{name}: fresh AI scores differ from the cached ones by "
                           f"{mean_abs:.2f} points on average, beyond the tolerance of "
                           f"{tol.points:g} ({tol.source})")
    before = _seen([i.cachedModel for i in compared])
    after = _seen([i.freshModel for i in compared])
    fp_before = _seen([i.cachedFingerprint for i in compared])
    fp_after = _seen([i.freshFingerprint for i in compared])
    notices = []
    if before and after and before != after:
        notices.append(f"the provider reports another model: {', '.join(before)} → "
                       f"{', '.join(after)}")
    if fp_before != fp_after and (fp_before or fp_after):
        notices.append(f"the provider's system fingerprint changed: "
                       f"{', '.join(fp_before) or '—'} → {', '.join(fp_after) or '—'}")
    return DriftSummary(
        sampled=len(items), compared=len(compared), failed=len(items) - len(compared),
        exactMatchRate=round(sum(i.exact for i in compared) / len(compared), 4)
        if compared else None,
        bandFlips=sum(i.band_flip for i in compared), categories=tuple(categories),
        modelsCached=before, modelsFresh=after, fingerprintsCached=fp_before,
        fingerprintsFresh=fp_after, drifted=bool(reasons), reasons=tuple(reasons),
        notices=tuple(notices))
