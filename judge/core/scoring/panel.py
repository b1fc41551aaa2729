"""Aggregates of several judgments of one case: a judge's K samples, and a panel of judges.

Pure: plain data in, plain data out. The runner calls :func:`case_aggregates` once every
judgment of a case has arrived and stores what it returns beside the judgments themselves.

Two kinds of aggregate, both ordinary :class:`~judge.core.formats.models.CaseResult` rows whose
judge metadata says what they combine (``JudgeMeta.aggregate``, ``JudgeMeta.members``):

- **Sample aggregate** (``--samples K``, K >= 2): per judge, model ``<model>``, sample
  ``-1``, the *mean* (or the *median*, as the run says) of the K samples' AI scores per
  category, scored by the core. It keeps
  the measured noise: ``CategoryScore.spread`` (max - min of the K AI scores),
  ``CategoryScore.finalSpread`` (of the K finals) and ``CaseResult.spread`` (of the K overall
  scores).
- **Panel** (two or more judges): model ``panel:<method>`` (``median`` or ``mean``), sample
  0, over each judge's headline judgment (its sample aggregate with K >= 2, else sample 0).
  Its ``spread`` is the largest of its members' spreads, when they have one.

The combined AI score is exact: the median of an even count is the mean of the two middle
values and the mean is the exact mean, both rounded half up (``Math.round``), never through
a float. The core then scores it like any judge's advisory score.

An aggregate needs every member judgment: a member that is a cache miss makes the aggregate
a cache miss, a member left unscored makes it unscored (with the member's reason), rather
than silently aggregating fewer judgments than the run asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Literal

from pydantic import Field

from ..formats.models import (
    AdvisoryScore,
    CaseResult,
    CategoryScore,
    CitedEvidence,
    JudgeMeta,
    RunInfo,
)
from ..formats.rubric import Rubric
from ..text.frozen import Frozen, wire_value
from .exact import round_half_up
from .scoring import score_case

__all__ = [
    "METHODS",
    "SAMPLE_AGGREGATE",
    "CaseStability",
    "CategorySamples",
    "StabilityReport",
    "aggregate",
    "case_aggregates",
    "combine",
    "exact_median",
    "headline",
    "headline_of",
    "is_aggregate",
    "member_sample",
    "panel_model",
    "stability",
]

METHODS = ("median", "mean")
SAMPLE_AGGREGATE = -1
"""The ``sample`` of a judge's aggregate over its K samples."""

Method = Literal["median", "mean"]


def exact_median(values: Sequence[int]) -> Fraction:
    """The exact median: the middle value, or the mean of the two middle values."""
    if not values:
        raise ValueError("the median of no values is undefined")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return Fraction(ordered[mid])
    return Fraction(ordered[mid - 1] + ordered[mid], 2)


def combine(values: Sequence[int], method: str) -> int:
    """``values`` combined by ``median`` or ``mean``, exact, rounded half up."""
    if not values:
        raise ValueError(f"the {method} of no values is undefined")
    if method == "median":
        return round_half_up(exact_median(values))
    if method == "mean":
        return round_half_up(Fraction(sum(values), len(values)))
    raise ValueError(f"unknown aggregate method {method!r}; use one of {', '.join(METHODS)}")


def panel_model(method: str) -> str:
    """The model name a panel result is stored under: ``panel:median``."""
    return f"panel:{method}"


def member_sample(samples: int) -> int:
    """Which of a judge's results stands for it: its sample aggregate, or its only sample."""
    return SAMPLE_AGGREGATE if samples >= 2 else 0


def headline(models: Sequence[str], samples: int, panel: str | None) -> tuple[str, int]:
    """The (model, sample) of the result that heads a run: the panel, else the first judge."""
    if len(models) >= 2 and panel:
        return panel_model(panel), 0
    return (models[0] if models else ""), member_sample(samples)


def headline_of(run: RunInfo) -> tuple[str | None, int]:
    """:func:`headline` of a stored run (model None when the run had no judge model)."""
    if not run.models:
        return None, 0
    return headline(run.models, run.samples, run.panel)


def is_aggregate(result: CaseResult) -> bool:
    """Whether ``result`` combines other judgments rather than recording one."""
    return result.judge is not None and result.judge.aggregate is not None


def _sum_or_none(values: Iterable[int | float | None]) -> float | None:
    items = list(values)
    if any(v is None for v in items):
        return None
    return sum(v for v in items if v is not None)


def _meta(members: Sequence[CaseResult], base: JudgeMeta, *, model: str, sample: int,
          method: str) -> JudgeMeta:
    metas = [m.judge for m in members]
    known = [m for m in metas if m is not None]
    complete = len(known) == len(metas)
    modes = {m.output_mode for m in known}

    def total(name: str) -> float | None:
        return _sum_or_none(wire_value(m, name) for m in known) if complete else None

    prompt, completion = total("promptTokens"), total("completionTokens")
    cost, latency = total("costUsd"), total("latencyMs")
    cached, written = total("cachedTokens"), total("cacheWriteTokens")
    return base.model_copy(update={
        "model": model,
        "output_mode": modes.pop() if len(modes) == 1 else None,
        "sample": sample,
        "cache_key": "",
        "cached": complete and all(m.cached for m in known),
        "repair_turns": sum(m.repair_turns for m in known),
        "prompt_tokens": None if prompt is None else int(prompt),
        "completion_tokens": None if completion is None else int(completion),
        "cached_tokens": None if cached is None else int(cached),
        "cache_write_tokens": None if written is None else int(written),
        "cost_usd": None if cost is None else round(cost, 10),
        "latency_ms": None if latency is None else round(latency, 3),
        "finish_reason": None,
        "model_reported": None,
        "aggregate": method,
        "members": tuple(_label(m) for m in members),
    })


def _label(result: CaseResult) -> str:
    if result.judge is None:
        return f"?#{result.status}"
    return f"{result.judge.model}#{result.judge.sample}"


def _evidence(members: Sequence[CaseResult]) -> tuple[CitedEvidence, ...]:
    seen: dict[str, CitedEvidence] = {}
    for member in members:
        for item in member.evidence:
            seen.setdefault(item.id, item)
    return tuple(seen.values())


def _spread(values: Sequence[int | None]) -> int | None:
    if not values or any(v is None for v in values):
        return None
    present = [v for v in values if v is not None]
    return max(present) - min(present)


def _largest(values: Sequence[int | None]) -> int | None:
    if not values or any(v is None for v in values):
        return None
    return max(v for v in values if v is not None)


def _level(scores: Sequence[tuple[int, str | None]], value: int) -> str | None:
    levels = {level for _, level in scores}
    if len(levels) == 1:
        return levels.pop()
    return next((level for score, level in scores if score == value and level), None)


def aggregate(members: Sequence[tuple[str, CaseResult]], rubric: Rubric,
              signals: Mapping[str, int | None], base: JudgeMeta, *, model: str, sample: int,
              method: str, what: str, samples_spread: bool) -> CaseResult:
    """One aggregate result over ``members`` (named judgments of one case), scored by the core.

    ``members`` pairs each judgment with the name the rationale gives it (a judge model, or
    ``""`` for a sample). ``base`` supplies the metadata an aggregate shares with its
    members (template, rubric hash, temperature, seed). ``what`` names the members in the
    rationale (``"3 samples"``, ``"2 judges"``); ``samples_spread`` records the members'
    spread (a sample aggregate) instead of the largest member spread (a panel).
    """
    if not members:
        raise ValueError("an aggregate needs at least one member")
    if method not in METHODS:
        raise ValueError(f"unknown aggregate method {method!r}; use one of {', '.join(METHODS)}")
    results = [r for _, r in members]
    first = results[0]
    meta = _meta(results, base, model=model, sample=sample, method=method)
    failed = [r for r in results if r.status != "scored"]
    if failed:
        bad = failed[0]
        status: Literal["unscored", "cache_miss"] = \
            "cache_miss" if any(r.status == "cache_miss" for r in results) else "unscored"
        reason = f"{method} of {what}: {_label(bad)} is {bad.status}" + \
            (f" ({bad.reason})" if bad.reason else "")
        cats = () if status == "cache_miss" else tuple(
            CategoryScore(category=c.id, deterministic_score=signals.get(c.id),
                          weight=c.weight, rule="unscored") for c in rubric.categories)
        return first.model_copy(update={
            "status": status, "overall_score": None, "band": None, "passed": None,
            "category_scores": cats, "reason": reason, "judge": meta, "evidence": (),
            "spread": None})
    by_member = [{c.category: c for c in r.category_scores} for r in results]
    advisory: dict[str, AdvisoryScore] = {}
    spreads: dict[str, tuple[int | None, int | None]] = {}
    for cat in rubric.categories:
        rows = [b.get(cat.id) for b in by_member]
        if samples_spread:
            spreads[cat.id] = (_spread([r.ai_score if r else None for r in rows]),
                               _spread([r.final_score if r else None for r in rows]))
        else:
            spreads[cat.id] = (_largest([r.spread if r else None for r in rows]),
                               _largest([r.final_spread if r else None for r in rows]))
        given = [(name, r) for (name, _), r in zip(members, rows, strict=True)
                 if r is not None and r.ai_score is not None]
        if not given:
            continue
        scores = [(r.ai_score, r.level) for _, r in given if r.ai_score is not None]
        value = combine([s for s, _ in scores], method)
        listed = ", ".join(f"{name} {r.ai_score}" if name else str(r.ai_score)
                           for name, r in given)
        cited = dict.fromkeys(i for _, r in given for i in r.evidence)
        advisory[cat.id] = AdvisoryScore(
            score=value, level=_level(scores, value),
            rationale=f"{'' if samples_spread else 'panel '}{method} of {what}: {listed}",
            evidence=tuple(cited))
    score = score_case(rubric, signals, advisory)
    cats = tuple(c.model_copy(update={"spread": spreads[c.category][0],
                                      "final_spread": spreads[c.category][1]})
                 for c in score.category_scores)
    spread = _spread([r.overall_score for r in results]) if samples_spread \
        else _largest([r.spread for r in results])
    return first.model_copy(update={
        "status": score.status, "overall_score": score.overall_score, "band": score.band,
        "passed": score.passed, "category_scores": cats, "reason": score.reason,
        "judge": meta, "evidence": _evidence(results), "spread": spread})


def case_aggregates(judged: Mapping[tuple[str, int], CaseResult], rubric: Rubric,
                    signals: Mapping[str, int | None], base: JudgeMeta, *,
                    models: Sequence[str], samples: int,
                    panel: str | None, sample_method: str) -> list[CaseResult]:
    """The aggregates of one case's judgments (``judged[(model, sample)]``, all of them).

    None with one judge and one sample. First each judge's sample aggregate (K >= 2, by
    ``sample_method``: ``mean`` or ``median``), then the panel over the judges' headline
    results (two or more judges and ``panel`` set).
    """
    out: list[CaseResult] = []
    heads: list[tuple[str, CaseResult]] = []
    for model in models:
        if samples >= 2:
            agg = aggregate([("", judged[(model, s)]) for s in range(samples)], rubric,
                            signals, base, model=model, sample=SAMPLE_AGGREGATE,
                            method=sample_method, what=f"{samples} samples",
                            samples_spread=True)
            out.append(agg)
            heads.append((model, agg))
        else:
            heads.append((model, judged[(model, 0)]))
    if len(models) >= 2 and panel:
        out.append(aggregate(heads, rubric, signals, base, model=panel_model(panel), sample=0,
                             method=panel, what=f"{len(models)} judges",
                             samples_spread=False))
    return out


# -- stability across samples -------------------------------------------------------------

class CategorySamples(Frozen):
    """One category of one case across a judge's samples."""

    ai: tuple[int | None, ...]
    final: tuple[int | None, ...]
    spread: int | None
    """max - min of the AI scores (None when a sample has none)."""
    final_spread: int | None = Field(alias="finalSpread")


class CaseStability(Frozen):
    """One case under one judge across its K samples."""

    id: str
    judge: str
    bands: tuple[str, ...]
    """Each sample's band, or its status when it is not scored."""
    overall: tuple[int | None, ...]
    spread: int | None
    """max - min of the samples' overall scores."""
    stable: bool
    """Every sample landed in the same band."""
    categories: dict[str, CategorySamples]


class StabilityReport(Frozen):
    """Which cases keep their band across samples, and how far the judge's scores spread."""

    cases: int
    """Cases judged with two or more samples."""
    stable: int
    """Cases whose band is the same in every sample, under every judge."""
    median_spread: float | None = Field(alias="medianSpread")
    """Median of the per case and judge overall spreads, exact, rounded to 2 decimals."""
    unstable: tuple[CaseStability, ...]
    """Per case and judge, by case id then judge."""
    judged: tuple[CaseStability, ...] = ()
    """Every case and judge, when asked for."""


def stability(results: Iterable[CaseResult], *, keep_all: bool = False) -> StabilityReport:
    """Group a run's sample judgments (sample >= 0, not aggregates) by case and judge."""
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        if r.judge is None or r.judge.aggregate is not None or r.judge.sample < 0:
            continue
        groups.setdefault((r.id, r.judge.model), []).append(r)
    rows: list[CaseStability] = []
    for (case_id, model), items in sorted(groups.items()):
        if len(items) < 2:
            continue
        items.sort(key=lambda r: r.judge.sample if r.judge else 0)
        bands = tuple(r.band if r.status == "scored" and r.band else r.status for r in items)
        cats: dict[str, CategorySamples] = {}
        names = dict.fromkeys(c.category for r in items for c in r.category_scores)
        for name in names:
            per = [{c.category: c for c in r.category_scores}.get(name) for r in items]
            ai = tuple(c.ai_score if c else None for c in per)
            final = tuple(c.final_score if c else None for c in per)
            cats[name] = CategorySamples(ai=ai, final=final, spread=_spread(ai),
                                         final_spread=_spread(final))
        overall = tuple(r.overall_score if r.status == "scored" else None for r in items)
        rows.append(CaseStability(id=case_id, judge=model, bands=bands, overall=overall,
                                  spread=_spread(overall), stable=len(set(bands)) == 1,
                                  categories=cats))
    case_ids = {r.id for r in rows}
    unstable_ids = {r.id for r in rows if not r.stable}
    spreads = [r.spread for r in rows if r.spread is not None]
    median = None
    if spreads:
        median = float(Fraction(round_half_up(exact_median(spreads) * 100), 100))
    return StabilityReport(cases=len(case_ids), stable=len(case_ids - unstable_ids),
                           median_spread=median,
                           unstable=tuple(r for r in rows if not r.stable),
                           judged=tuple(rows) if keep_all else ())
