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

from ..formats.models import AdvisoryScore
from ..text.frozen import Frozen
from .judge_health import JudgeHealth

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
    cached_overall: int | None = Field(None, alias="cachedOverall")
    fresh_overall: int | None = Field(None, alias="freshOverall")
    cached_band: str | None = Field(None, alias="cachedBand")
    fresh_band: str | None = Field(None, alias="freshBand")
    cached_model: str | None = Field(None, alias="cachedModel")
    fresh_model: str | None = Field(None, alias="freshModel")
    cached_fingerprint: str | None = Field(None, alias="cachedFingerprint")
    fresh_fingerprint: str | None = Field(None, alias="freshFingerprint")

    @property
    def band_flip(self) -> bool:
        """The case's band changed."""
        return self.status == "compared" and self.cached_band != self.fresh_band


class CategoryDrift(Frozen):
    """One category over every compared item."""

    category: str
    compared: int
    mean_abs_diff: float = Field(alias="meanAbsDiff")
    mean_diff: float = Field(alias="meanDiff")
    max_abs_diff: int = Field(alias="maxAbsDiff")
    tolerance: Tolerance
    drifted: bool


class DriftSummary(Frozen):
    """The canary's verdict over its sample."""

    sampled: int
    compared: int
    failed: int
    exact_match_rate: float | None = Field(alias="exactMatchRate")
    band_flips: int = Field(alias="bandFlips")
    categories: tuple[CategoryDrift, ...]
    models_cached: tuple[str, ...] = Field(alias="modelsCached")
    models_fresh: tuple[str, ...] = Field(alias="modelsFresh")
    fingerprints_cached: tuple[str, ...] = Field(alias="fingerprintsCached")
    fingerprints_fresh: tuple[str, ...] = Field(alias="fingerprintsFresh")
    drifted: bool
    reasons: tuple[str, ...]
    """Why it drifted (empty when not)."""
    notices: tuple[str, ...] = ()
    """What changed without being drift (a new model id or fingerprint), and what the
    judge-health check found in the fresh verdicts."""
    judge_health: JudgeHealth | None = Field(None, alias="judgeHealth")
    """The health check over the fresh verdicts (:mod:`judge.core.stats.judge_health`)."""


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
            category=name, compared=len(diffs), mean_abs_diff=round(mean_abs, 2),
            mean_diff=round(sum(diffs) / len(diffs), 2), max_abs_diff=max(abs(d) for d in diffs),
            tolerance=tol, drifted=drifted))
        if drifted:
            reasons.append(f"{name}: fresh AI scores differ from the cached ones by "
                           f"{mean_abs:.2f} points on average, beyond the tolerance of "
                           f"{tol.points:g} ({tol.source})")
    before = _seen([i.cached_model for i in compared])
    after = _seen([i.fresh_model for i in compared])
    fp_before = _seen([i.cached_fingerprint for i in compared])
    fp_after = _seen([i.fresh_fingerprint for i in compared])
    notices = []
    if before and after and before != after:
        notices.append(f"the provider reports another model: {', '.join(before)} → "
                       f"{', '.join(after)}")
    if fp_before != fp_after and (fp_before or fp_after):
        notices.append(f"the provider's system fingerprint changed: "
                       f"{', '.join(fp_before) or '—'} → {', '.join(fp_after) or '—'}")
    return DriftSummary(
        sampled=len(items), compared=len(compared), failed=len(items) - len(compared),
        exact_match_rate=round(sum(i.exact for i in compared) / len(compared), 4)
        if compared else None,
        band_flips=sum(i.band_flip for i in compared), categories=tuple(categories),
        models_cached=before, models_fresh=after, fingerprints_cached=fp_before,
        fingerprints_fresh=fp_after, drifted=bool(reasons), reasons=tuple(reasons),
        notices=tuple(notices))
