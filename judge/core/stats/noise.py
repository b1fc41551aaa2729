"""A judge's noise, measured and kept: the between-ask spread of its scores.

A :class:`NoiseModel` belongs to one judge model, one rubric (hash) and one template (hash):
its key names all three, so a change of any of them finds no model (invalidated by
construction, never silently reused). It is measured from the samples of a ``--samples K``
run (every case asked K times with seeds ``seed..seed+K-1``) or from a probe (a ``--samples
K`` run over a seeded subset of N cases): per case the K overall, final and AI scores; the
spread is the pooled within-case standard deviation, with ``sum(K_i - 1)`` degrees of
freedom and a 95 % chi-square interval (Wilson-Hilferty; within 1 % of the exact bound from
10 degrees of freedom).

A judgment replayed from the cache on both sides of a comparison has no noise; one re-asked
on a side has one ask's variance there (:func:`case_variance`). A ``--samples K`` headline
(the median of K) is counted as one ask: conservative, it over-states the noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Final, Literal

from pydantic import Field

from ..formats.models import CaseResult
from ..text.canonical import sha256_hex
from ..text.frozen import Frozen
from .intervals import Interval

__all__ = [
    "FDR",
    "MIN_DF",
    "GateTest",
    "NoiseEstimate",
    "NoiseModel",
    "Rule",
    "SideNoise",
    "case_variance",
    "judgment_key",
    "measure_noise",
    "noise_key",
    "same_judgment",
]

MIN_DF: Final = 2
"""Fewer degrees of freedom than this is no estimate (one case asked twice is one df)."""


class NoiseEstimate(Frozen):
    """One spread: a standard deviation in points with its 95 % interval."""

    sd: float = Field(ge=0)
    low: float = Field(ge=0)
    high: float = Field(ge=0)
    df: int = Field(ge=1)
    """Degrees of freedom: the sum over cases of (asks - 1)."""


class NoiseModel(Frozen):
    """A judge's measured noise for one rubric and template, and what it was measured on."""

    version: Literal[1] = 1
    key: str
    """:func:`noise_key` of model, rubric hash and template hash."""
    model: str
    rubric_hash: str = Field(alias="rubricHash")
    template_id: str = Field(alias="templateId")
    template_hash: str = Field(alias="templateHash")
    overall: NoiseEstimate
    """Spread of one ask's overall score."""
    final: dict[str, NoiseEstimate] = {}
    """Per category, the spread of the final score."""
    ai: dict[str, NoiseEstimate] = {}
    """Per category, the spread of the judge's AI score."""
    cases: int
    """Cases asked more than once."""
    asks: int
    """Judgments the estimate is over (cases times samples)."""
    source: str
    """Where it came from: ``samples of run <id>`` or ``probe run <id>``."""
    suite: str
    runs: tuple[str, ...]


def noise_key(model: str, rubric_hash: str, template_hash: str) -> str:
    """The key of a judge's noise model: a change of any part is another key."""
    return sha256_hex({"model": model, "rubricHash": rubric_hash,
                       "templateHash": template_hash})[:16]


def _chi2_ppf(q: float, df: int) -> float:
    """Wilson-Hilferty approximation of the chi-square quantile."""
    z = NormalDist().inv_cdf(q)
    h = 2 / (9 * df)
    return float(df * (1 - h + z * math.sqrt(h)) ** 3)


def _estimate(groups: Iterable[Sequence[int]]) -> NoiseEstimate | None:
    squares = 0.0
    df = 0
    for values in groups:
        if len(values) < 2:
            continue
        mean = math.fsum(values) / len(values)
        squares += math.fsum((v - mean) ** 2 for v in values)
        df += len(values) - 1
    if df < MIN_DF:
        return None
    sd = math.sqrt(squares / df)
    low = math.sqrt(squares / _chi2_ppf(0.975, df))
    high = math.sqrt(squares / max(_chi2_ppf(0.025, df), 1e-12))
    return NoiseEstimate(sd=sd, low=low, high=high, df=df)


def measure_noise(results: Iterable[CaseResult], *, model: str, rubric_hash: str,
                  template_id: str, template_hash: str, suite: str, source: str,
                  runs: Sequence[str]) -> NoiseModel | None:
    """The noise model of ``model`` from its individual samples (``sample >= 0``).

    None when no case was asked at least twice (nothing to measure).
    """
    overall: dict[str, list[int]] = {}
    final: dict[str, dict[str, list[int]]] = {}
    ai: dict[str, dict[str, list[int]]] = {}
    asks = 0
    for r in results:
        if (r.judge is None or r.judge.model != model or r.judge.sample < 0
                or r.status != "scored" or r.overall_score is None):
            continue
        asks += 1
        overall.setdefault(r.id, []).append(r.overall_score)
        for c in r.category_scores:
            if c.final_score is not None:
                final.setdefault(c.category, {}).setdefault(r.id, []).append(c.final_score)
            if c.ai_score is not None:
                ai.setdefault(c.category, {}).setdefault(r.id, []).append(c.ai_score)
    head = _estimate(overall.values())
    if head is None:
        return None
    per_final = {k: e for k, v in sorted(final.items()) if (e := _estimate(v.values()))}
    per_ai = {k: e for k, v in sorted(ai.items()) if (e := _estimate(v.values()))}
    return NoiseModel(key=noise_key(model, rubric_hash, template_hash), model=model,
                      rubric_hash=rubric_hash, template_id=template_id,
                      template_hash=template_hash, overall=head, final=per_final, ai=per_ai,
                      cases=sum(1 for v in overall.values() if len(v) > 1), asks=asks,
                      source=source, suite=suite, runs=tuple(runs))


def judgment_key(result: CaseResult) -> str | None:
    """What identifies the judgment behind ``result``; None without a judge.

    Its cache key; for an aggregate (a ``--samples K`` median, no cache entry of its own)
    the model, template, seed and members it combined.
    """
    judge = result.judge
    if judge is None:
        return None
    if judge.cache_key:
        return judge.cache_key
    if not judge.members:
        return None
    return "aggregate:" + sha256_hex({"model": judge.model, "templateHash": judge.template_hash,
                                      "seed": judge.seed, "members": list(judge.members),
                                      "aggregate": judge.aggregate})[:32]


def same_judgment(result: CaseResult, recorded_key: str | None) -> bool:
    """The result replays the very judgment the baseline recorded, or has no judge.

    Such a score cannot carry the judge's noise.
    """
    if result.judge is None:
        return True
    return (recorded_key is not None and result.judge.cached
            and judgment_key(result) == recorded_key)


def case_variance(result: CaseResult, recorded_key: str | None,
                  sds: Mapping[str, float]) -> float | None:
    """Variance (points²) of ``before - after`` for one case explained by the judge's noise.

    0 for the same judgment, else one ask on each side. ``sds`` has the per-ask sd of the
    overall score under keys ``"before"`` and ``"after"``; None when one is unknown.
    """
    if same_judgment(result, recorded_key):
        return 0.0
    before, after = sds.get("before"), sds.get("after")
    if before is None or after is None:
        return None
    return before * before + after * after


FDR: Final = 0.05
"""False-discovery rate of the case list (Benjamini-Hochberg)."""

Rule = Literal["statistical", "paired", "exact-replay"]


class SideNoise(Frozen):
    """The judge's per-ask spread of the overall score on one side, and where it came from."""

    sd: float
    df: int
    source: str


class GateTest(Frozen):
    """How the gate decided: the mean drop with its interval, the test and the noise assumed."""

    rule: Rule
    """``statistical`` (with the judge's noise model); ``paired`` (re-asked cases and no
    noise model: the suite's paired test alone, no case listed alone); ``exact-replay``
    (every compared case is the same judgment on both sides: exact, no noise)."""
    mean_drop: float = Field(alias="meanDrop")
    """``previous - current`` over the compared cases, in points (positive: a drop)."""
    interval: Interval | None
    """Two-sided 95 % t interval of the mean drop (None under an exact rule)."""
    lower_bound: float | None = Field(alias="lowerBound")
    """One-sided 95 % lower bound of the mean drop."""
    p_value: float | None = Field(alias="pValue")
    """One-sided p-value of "the mean dropped" (paired t test)."""
    test: str
    """The test, in words."""
    noise_before: SideNoise | None = Field(None, alias="noiseBefore")
    noise_after: SideNoise | None = Field(None, alias="noiseAfter")
    exact_cases: int = Field(0, alias="exactCases")
    """Compared cases that reuse the same judgment on both sides (no noise)."""
    noisy_cases: int = Field(0, alias="noisyCases")
    """Compared cases re-asked on at least one side."""
    fdr: float = FDR
    within_noise: tuple[str, ...] = Field((), alias="withinNoise")
    """Dropped by more than the threshold, but not beyond what the noise explains."""
    warning: str | None = None
