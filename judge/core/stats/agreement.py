"""Agreement statistics over aligned judgments, for deciding on a judge, template or rubric swap.

How far two or more judges (or a judge and the humans) agree.

What each statistic says (``a`` is the first judge or the humans, ``b`` the other):

- ``weightedKappa``: quadratic-weighted Cohen's κ on band indices; do the two put cases in
  the same band, with far-apart bands costing more than neighbours (1 = always the same band).
- ``pearsonR``: Pearson's r on scores; are the two linearly related (a judge that adds +15 to
  every score still has r = 1).
- ``spearmanRho``: Spearman's ρ on scores; do the two *rank* the cases alike, whatever their
  level (a judge that adds +15 to every score still has ρ near 1).
- ``kendallTau``: Kendall's τ-b on scores; the share of case pairs both order the same way
  minus the share they order differently; stricter than ρ and robust to a few outliers.
- ``meanAbsDiff``: mean absolute difference in points (0..100); how far apart a typical
  score is, in the unit a reader thinks in.
- ``meanDiff``: mean of ``b − a`` in points; a systematic bias (``+15``: b scores higher).
  Zero with a large ``meanAbsDiff`` means noise, not bias.
- ``exactBandAgreement``: share of cases both put in the same band.
- Krippendorff's α (three or more judges): agreement of the whole panel beyond chance, with
  missing judgments allowed (1 = perfect, 0 = chance, below 0 = systematic disagreement).

Tolerance guidance (rules of thumb, not laws). κ ≥ 0.80 reads as close agreement, 0.60-0.80
substantial, 0.40-0.60 moderate, below 0.40 the judges do not agree enough to swap one for the
other. Krippendorff suggests α ≥ 0.80 for conclusions and ≥ 0.667 for tentative ones. On the
0..100 scale a ``|meanDiff|`` under about 3 points is within a judge's own noise; 5 or more is a
bias worth knowing before a swap (it moves pass rates and trips the 5-point regression gate).
ρ and τ above about 0.9 mean the new judge ranks cases like the old one, so a bias can be
absorbed by re-recording the baseline. Final scores blend the AI score at the rubric's weight
(0.3 by default), so a judge bias shows there at about that fraction.

Statistics that are undefined for the data (fewer than two cases, a constant vector, every
case in one band) come out as ``None`` with a note saying why: never NaN, never a crash.
Every correlation and κ, point estimate and bootstrap alike, is one numpy kernel below (checked
against scipy and scikit-learn in the tests, never called here); Krippendorff's α is the
``krippendorff`` package. numpy and krippendorff are imported inside the functions, so importing
this module stays light. Nothing here touches files, the network or the clock.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field

from ..formats.models import CaseResult
from ..formats.rubric import DEFAULT_BANDS, Band
from ..formats.suite import HumanLabel
from ..scoring.panel import SAMPLE_AGGREGATE
from ..scoring.scoring import band_for
from ..text.frozen import Frozen
from .correlation import (
    kappa_rows,
    kendall_rows,
    kendall_tau_b,
    mean_rows,
    pearson_r,
    pearson_rows,
    quadratic_kappa,
    spearman_rho,
    spearman_rows,
)
from .intervals import (
    AGREEMENT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    bootstrap,
    bootstrap_many,
    paired_bootstrap,
)
from .levels import Grouping, Levels, levels

if TYPE_CHECKING:

    from .intervals import RowStatistic

__all__ = [
    "AlphaReport",
    "BandFlip",
    "CategoryAgreement",
    "Comparison",
    "ConfusionMatrix",
    "Disagreement",
    "HumanAgreement",
    "HumanPairComparison",
    "IntervalScope",
    "JudgeCounts",
    "PairComparison",
    "PairStats",
    "StatIntervals",
    "band_index",
    "compare_runs",
    "confusion_matrix",
    "human_pair_comparison",
    "judged_cases",
    "krippendorff_alpha",
    "pairwise_agreement",
    "verdict",
]

IntervalScope = bool | Literal["overall"]
"""Which statistics get bootstrap intervals: none, all, or the overall scores' only."""

HUMAN: Final = "human"
"""Name of the human side in human-agreement notes."""

BIAS_POINTS: Final = 5.0
"""A ``|meanDiff|`` at or above this many points is called a bias in the verdict."""

KAPPA_WORDS: Final = ((0.80, "agree closely"), (0.60, "agree substantially"),
                      (0.40, "agree moderately"))
"""κ thresholds of the verdict; below the last one the judges "disagree"."""


DISAGREEMENTS_KEPT: Final = 50
"""Disagreements with the people listed per judge, the largest first."""


class StatIntervals(Frozen):
    """Seeded percentile-bootstrap 95 % intervals over cases of a :class:`PairStats`."""

    weighted_kappa: Interval | None = Field(None, alias="weightedKappa")
    pearson_r: Interval | None = Field(None, alias="pearsonR")
    spearman_rho: Interval | None = Field(None, alias="spearmanRho")
    kendall_tau: Interval | None = Field(None, alias="kendallTau")
    mean_abs_diff: Interval | None = Field(None, alias="meanAbsDiff")
    exact_band_agreement: Interval | None = Field(None, alias="exactBandAgreement")


class PairStats(Frozen):
    """Agreement of two aligned score vectors; ``None`` where a statistic is undefined."""

    n: int
    intervals: StatIntervals | None = None
    """Bootstrap intervals (when asked for: ``judge compare`` does)."""
    """Cases both sides scored."""
    weighted_kappa: float | None = Field(None, alias="weightedKappa")
    """Quadratic-weighted Cohen's κ on band indices."""
    pearson_r: float | None = Field(None, alias="pearsonR")
    """Pearson's r on scores (item level: every aligned case)."""
    spearman_rho: float | None = Field(None, alias="spearmanRho")
    kendall_tau: float | None = Field(None, alias="kendallTau")
    mean_abs_diff: float | None = Field(None, alias="meanAbsDiff")
    """Mean |b − a| in points."""
    mean_diff: float | None = Field(None, alias="meanDiff")
    """Mean b − a in points: positive when b scores higher."""
    exact_band_agreement: float | None = Field(None, alias="exactBandAgreement")
    """Share of cases in the same band on both sides."""
    notes: tuple[str, ...] = ()
    """Why a statistic is None, when one is."""
    levels: Levels | None = None
    """The group and system levels' r, ρ and τ (when a grouping or a system is named)."""


class CategoryAgreement(Frozen):
    """One category's agreement on the AI scores (what the judges said) and on the finals."""

    category: str
    ai: PairStats
    final: PairStats


class BandFlip(Frozen):
    """A case whose overall band differs between two judges."""

    case_id: str = Field(alias="caseId")
    band_a: str = Field(alias="bandA")
    band_b: str = Field(alias="bandB")
    overall_a: int = Field(alias="overallA")
    overall_b: int = Field(alias="overallB")


class PairComparison(Frozen):
    """Everything about one pair of judges, ``judgeA`` first."""

    judge_a: str = Field(alias="judgeA")
    judge_b: str = Field(alias="judgeB")
    aligned: int
    """Cases both judges scored."""
    skipped: dict[str, int]
    """Cases left out, by reason: ``missing`` (one judge has no result), ``cache_miss``,
    ``unscored``; each case counted once, under the first reason in that order."""
    overall: PairStats
    """On ``overallScore`` (final, authoritative)."""
    ai_all: PairStats = Field(alias="aiAll")
    """On the AI scores of every category pooled: the judges' own agreement in one line."""
    categories: tuple[CategoryAgreement, ...]
    band_flips: tuple[BandFlip, ...] = Field(alias="bandFlips")
    """Cases whose overall band flipped, by case id."""
    verdict: str


class AlphaReport(Frozen):
    """Krippendorff's α across all judges (three or more)."""

    judges: tuple[str, ...]
    level: Literal["interval", "ordinal"]
    overall: float | None
    ai_all: float | None = Field(alias="aiAll")
    categories: dict[str, dict[str, float | None]]
    overall_interval: Interval | None = Field(None, alias="overallInterval")
    """Bootstrap interval over cases of ``overall`` (when asked for)."""
    """Per category: ``{"ai": α, "final": α}``."""
    notes: tuple[str, ...] = ()


class ConfusionMatrix(Frozen):
    """Bands of the people (rows) against a judge's (columns), lowest band first."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]


class Disagreement(Frozen):
    """One case where a judge and the people part, by how far (points)."""

    case_id: str = Field(alias="caseId")
    category: str
    """A category's AI score, or ``overall``."""
    human: int
    judge: int
    human_band: str = Field(alias="humanBand")
    judge_band: str = Field(alias="judgeBand")
    size: int


class HumanPairComparison(Frozen):
    """Is judge A closer to the people than judge B? Paired over the cases both scored."""

    judge_a: str = Field(alias="judgeA")
    judge_b: str = Field(alias="judgeB")
    n: int
    mad_difference: Interval | None = Field(alias="madDifference")
    """MAD(A, people) − MAD(B, people), points; below 0: A is closer."""
    share_a_farther: float | None = Field(alias="shareAFarther")
    """Share of bootstrap resamples in which A is not closer (a one-sided p-value of "A is
    closer")."""
    kappa_difference: Interval | None = Field(alias="kappaDifference")
    """κ(A, people) − κ(B, people)."""
    verdict: str


class HumanAgreement(Frozen):
    """One judge against the suite's human labels (``a`` = humans, ``b`` = the judge)."""

    judge: str
    labelled: int
    """Labelled cases this judge scored."""
    overall: PairStats
    ai_all: PairStats = Field(alias="aiAll")
    categories: tuple[CategoryAgreement, ...]
    verdict: str
    confusion: ConfusionMatrix | None = None
    """People's overall bands against the judge's."""
    category_confusion: dict[str, ConfusionMatrix] = Field({}, alias="categoryConfusion")
    """Per category, bands of the people's score against the judge's AI score."""
    disagreements: tuple[Disagreement, ...] = ()
    """The largest (by points) first, then by case id; at most :data:`DISAGREEMENTS_KEPT`."""


class JudgeCounts(Frozen):
    """What a judge's results held (its headline judgment of each case)."""

    name: str
    cases: int
    scored: int
    unscored: int
    cache_miss: int = Field(alias="cacheMiss")
    deterministic: int
    """Deterministic cases: not judged by a model, so left out of every statistic."""
    run_id: str | None = Field(None, alias="runId")
    """The run the judgments come from (set by ``judge compare``)."""
    model: str | None = None
    """The judge model (set by ``judge compare``)."""


class Comparison(Frozen):
    """Agreement of every pair of judges, the panel's α, and each judge against humans."""

    judges: tuple[JudgeCounts, ...]
    pairs: tuple[PairComparison, ...]
    alpha: AlphaReport | None = None
    """Present with three or more judges."""
    human_labelled: int = Field(0, alias="humanLabelled")
    """Suite cases with human labels."""
    human: tuple[HumanAgreement, ...] = ()
    human_pairs: tuple[HumanPairComparison, ...] = Field((), alias="humanPairs")
    """Every pair of judges, on their agreement with the people."""
    notes: tuple[str, ...] = ()


# -- statistics ----------------------------------------------------------------------------


def _ordered(rubric_bands: Sequence[Band]) -> list[Band]:
    return sorted(rubric_bands, key=lambda b: b.min)


def band_index(band: str, rubric_bands: Sequence[Band] = DEFAULT_BANDS) -> int:
    """Ordinal index of ``band`` on the scale (0 = the lowest band); ValueError if unknown."""
    for index, candidate in enumerate(_ordered(rubric_bands)):
        if candidate.name == band:
            return index
    names = ", ".join(b.name for b in _ordered(rubric_bands))
    raise ValueError(f"band {band!r} is not on the scale ({names})")


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _constant(values: Sequence[int]) -> bool:
    return len(set(values)) <= 1


def pairwise_agreement(a: Sequence[int], b: Sequence[int],
                       bands_a: Sequence[str] | None = None,
                       bands_b: Sequence[str] | None = None, *,
                       rubric_bands: Sequence[Band] = DEFAULT_BANDS,
                       rubric_bands_b: Sequence[Band] | None = None,
                       label_a: str = "A", label_b: str = "B",
                       intervals: bool = False) -> PairStats:
    """Agreement of scores ``a`` and ``b`` (aligned: item i is the same case on both sides).

    ``bands_a``/``bands_b`` are the cases' band names (as stored); None derives them from the
    scores. Bands are read on ``rubric_bands`` (``rubric_bands_b`` for side b when the two
    sides used rubrics with different scales); κ's labels are every band index of the scale.
    """
    if len(a) != len(b):
        raise ValueError(f"unaligned inputs: {len(a)} scores against {len(b)}")
    scale_a = _ordered(rubric_bands)
    scale_b = _ordered(rubric_bands_b) if rubric_bands_b is not None else scale_a
    names_a = list(bands_a) if bands_a is not None else [band_for(s, scale_a) for s in a]
    names_b = list(bands_b) if bands_b is not None else [band_for(s, scale_b) for s in b]
    if len(names_a) != len(a) or len(names_b) != len(b):
        raise ValueError("one band per score is needed")
    idx_a = [band_index(name, scale_a) for name in names_a]
    idx_b = [band_index(name, scale_b) for name in names_b]
    n = len(a)
    notes: list[str] = []
    if n == 0:
        return PairStats(n=0, notes=("no case scored on both sides: nothing to compare",))
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    mean_diff = float(Fraction(sum(diffs), n))
    mean_abs = float(Fraction(sum(abs(d) for d in diffs), n))
    same_band = float(Fraction(sum(x == y for x, y in zip(idx_a, idx_b, strict=True)), n))
    kappa = r = rho = tau = None
    if n < 2:
        notes.append(f"only {n} case: κ, r, ρ and τ need at least 2")
    else:
        kappa = _kappa(idx_a, idx_b, max(len(scale_a), len(scale_b)), notes,
                       names_a[0], names_b[0])
        constant = [f"{label} scores every case {v[0]}"
                    for label, v in ((label_a, a), (label_b, b)) if _constant(v)]
        if constant:
            notes.append(f"{' and '.join(constant)}: r, ρ and τ are undefined for a "
                         f"constant vector")
        else:
            r, rho, tau = _correlations(a, b, notes)
    found = None
    if intervals:
        found = _intervals(list(zip(a, b, idx_a, idx_b, strict=True)),
                           max(len(scale_a), len(scale_b)))
    return PairStats(n=n, weighted_kappa=kappa, pearson_r=r, spearman_rho=rho, kendall_tau=tau,
                     mean_abs_diff=mean_abs, mean_diff=mean_diff, exact_band_agreement=same_band,
                     notes=tuple(notes), intervals=found)


def _kappa(idx_a: list[int], idx_b: list[int], count: int, notes: list[str],
           first_a: str, first_b: str) -> float | None:
    if _constant(idx_a) and _constant(idx_b) and idx_a[0] == idx_b[0]:
        notes.append(f"every case is {first_a!r} on both sides: κ is undefined without "
                     f"variation in bands")
        return None
    value = quadratic_kappa(idx_a, idx_b, count)
    if value is None:
        notes.append(f"κ is undefined for these bands ({first_a!r}, {first_b!r}, ...)")
    return value


def _correlations(a: Sequence[int], b: Sequence[int],
                  notes: list[str]) -> tuple[float | None, float | None, float | None]:
    """Pearson's r, Spearman's ρ and Kendall's τ-b: the kernels on the whole sample."""
    r, rho, tau = pearson_r(a, b), spearman_rho(a, b), kendall_tau_b(a, b)
    if r is None or rho is None or tau is None:
        notes.append("a correlation is undefined for these scores")
    return r, rho, tau


def _alpha(matrix: Sequence[Sequence[int | None]],
           level: Literal["nominal", "interval", "ordinal"]) -> tuple[float | None, str | None]:
    """α and, when it is None, why."""
    if len(matrix) < 2:
        return None, "α needs at least two judges"
    width = len(matrix[0])
    if any(len(row) != width for row in matrix):
        raise ValueError("every judge's row needs one cell per case")
    pairable = [col for col in range(width)
                if sum(row[col] is not None for row in matrix) >= 2]
    if not pairable:
        return None, "no case was scored by two judges"
    values = {row[col] for row in matrix for col in pairable if row[col] is not None}
    if len(values) < 2:
        return None, f"every score is {values.pop()}: α is undefined without variation"
    import krippendorff
    import numpy as np

    data = np.asarray([[math.nan if (v := row[c]) is None else float(v) for c in pairable]
                       for row in matrix], dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = _finite(krippendorff.alpha(reliability_data=data,
                                               level_of_measurement=level))
        except (ValueError, ZeroDivisionError) as exc:
            return None, f"α is undefined here: {exc}"
    return value, None if value is not None else "α is undefined for these scores"


def krippendorff_alpha(matrix: Sequence[Sequence[int | None]],
                       level: Literal["nominal", "interval", "ordinal"] = "interval",
                       ) -> float | None:
    """Krippendorff's α; rows are judges, columns cases, ``None`` a missing judgment.

    Meant for three or more judges (two work too); None when undefined (no case scored
    by two judges, or no variation at all).
    """
    return _alpha(matrix, level)[0]


# -- runs ----------------------------------------------------------------------------------


def _usable(result: CaseResult) -> bool:
    """A judge's headline candidate: its first sample, or its aggregate of K samples."""
    return (result.judged_by == "llm" and result.judge is not None
            and result.judge.sample in (0, SAMPLE_AGGREGATE))


def _stored_band(stored: str | None, score: int, scale: Sequence[Band]) -> str:
    """The band as stored when it is on the scale, else the scale's band for the score."""
    if stored is not None and any(b.name == stored for b in scale):
        return stored
    return band_for(score, _ordered(scale))


class _Vectors:
    """Aligned score vectors for one statistic, with band names per side."""

    def __init__(self, grouping: Grouping | None = None) -> None:
        self.a: list[int] = []
        self.b: list[int] = []
        self.bands_a: list[str] = []
        self.bands_b: list[str] = []
        self.ids: list[str] = []
        self.grouping = grouping

    def add(self, case_id: str, x: int, y: int, band_x: str, band_y: str) -> None:
        self.ids.append(case_id)
        self.a.append(x)
        self.b.append(y)
        self.bands_a.append(band_x)
        self.bands_b.append(band_y)

    def stats(self, scale_a: Sequence[Band], scale_b: Sequence[Band], label_a: str,
              label_b: str, intervals: bool = False) -> PairStats:
        found = pairwise_agreement(self.a, self.b, self.bands_a, self.bands_b,
                                   rubric_bands=scale_a, rubric_bands_b=scale_b,
                                   label_a=label_a, label_b=label_b, intervals=intervals)
        if self.grouping is None or not self.a:
            return found
        return found.model_copy(update={"levels": levels(
            self.a, self.b, self.ids, self.grouping, intervals=intervals)})


class _Side:
    """One side's view of a case: overall and per-category AI and final scores, with bands."""

    def __init__(self, overall: tuple[int, str] | None, ai: dict[str, int],
                 final: dict[str, tuple[int, str]]) -> None:
        self.overall = overall
        self.ai = ai
        self.final = final

    @classmethod
    def of_result(cls, r: CaseResult, scale: Sequence[Band]) -> _Side:
        overall = None if r.overall_score is None else (
            r.overall_score, _stored_band(r.band, r.overall_score, scale))
        ai = {c.category: c.ai_score for c in r.category_scores if c.ai_score is not None}
        final = {c.category: (c.final_score, _stored_band(c.band, c.final_score, scale))
                 for c in r.category_scores if c.final_score is not None}
        return cls(overall, ai, final)

    @classmethod
    def of_human(cls, h: HumanLabel, scale: Sequence[Band]) -> _Side:
        overall = None if h.overall is None else (h.overall,
                                                  _stored_band(h.band, h.overall, scale))
        cats = dict(h.categories)
        return cls(overall, cats, {c: (s, band_for(s, _ordered(scale))) for c, s in cats.items()})


def _agreement(pairs: Sequence[tuple[_Side, _Side]], categories: Sequence[str],
               scale_a: Sequence[Band], scale_b: Sequence[Band], label_a: str, label_b: str,
               intervals: IntervalScope = False, *, ids: Sequence[str] = (),
               grouping: Grouping | None = None,
               ) -> tuple[PairStats, PairStats, tuple[CategoryAgreement, ...]]:
    """Overall, pooled-AI and per-category statistics over aligned sides.

    ``ids`` are the pairs' case ids; with ``grouping`` every statistic gets its levels.
    """
    overall, ai_all = _Vectors(grouping), _Vectors()
    ai = {c: _Vectors(grouping) for c in categories}
    final = {c: _Vectors(grouping) for c in categories}
    ordered_a, ordered_b = _ordered(scale_a), _ordered(scale_b)
    for case_id, (x, y) in zip(ids or [""] * len(pairs), pairs, strict=True):
        if x.overall is not None and y.overall is not None:
            overall.add(case_id, x.overall[0], y.overall[0], x.overall[1], y.overall[1])
        for c in categories:
            if c in x.ai and c in y.ai:
                args = (x.ai[c], y.ai[c], band_for(x.ai[c], ordered_a),
                        band_for(y.ai[c], ordered_b))
                ai[c].add(case_id, *args)
                ai_all.add(case_id, *args)
            if c in x.final and c in y.final:
                final[c].add(case_id, x.final[c][0], y.final[c][0], x.final[c][1],
                             y.final[c][1])
    stats = (scale_a, scale_b, label_a, label_b, intervals is True)
    cats = tuple(CategoryAgreement(category=c, ai=ai[c].stats(*stats),
                                   final=final[c].stats(*stats)) for c in categories)
    return (overall.stats(scale_a, scale_b, label_a, label_b, bool(intervals)),
            ai_all.stats(*stats), cats)


def _signed(value: float) -> str:
    return f"{value:+.1f}"


def verdict(stats: PairStats, name_a: str, name_b: str, *, what: str = "AI scores") -> str:
    """One line for a reader: how closely the two agree, and a bias when there is one."""
    if stats.n == 0:
        return f"no case scored by both {name_a} and {name_b}"
    diff = stats.mean_diff if stats.mean_diff is not None else 0.0
    kappa = stats.weighted_kappa
    words = "disagree"
    if kappa is not None:
        words = next((w for t, w in KAPPA_WORDS if kappa >= t), "disagree")
    elif stats.mean_abs_diff is not None and stats.mean_abs_diff < 1:
        words = "agree closely"
    k = "κ undefined" if kappa is None else f"κ {kappa:.2f}"
    rho = "" if stats.spearman_rho is None else f", ρ {stats.spearman_rho:.2f}"
    detail = f"({what}, {k}{rho}, n {stats.n})"
    if abs(diff) < BIAS_POINTS:
        return f"{name_a} and {name_b} {words}, mean diff {_signed(diff)} {detail}"
    bias = (f"{name_b} scores {abs(diff):.1f} points {'higher' if diff > 0 else 'lower'} "
            f"than {name_a}")
    if words in {"agree closely", "agree substantially"}:
        return f"{bias} on average; otherwise they {words} {detail}"
    return f"{name_a} and {name_b} {words}, and {bias} on average {detail}"


def _collect(name: str, results: Iterable[CaseResult],
             notes: list[str]) -> tuple[dict[str, CaseResult], JudgeCounts]:
    by_id: dict[str, CaseResult] = {}
    aggregated: set[str] = set()
    deterministic = 0
    for r in results:
        if r.judged_by == "deterministic" or r.judge is None:
            deterministic += 1
            continue
        if not _usable(r):
            continue
        if r.judge.sample == SAMPLE_AGGREGATE:  # the K samples' aggregate heads the judge
            aggregated.add(r.id)
            by_id[r.id] = r
            continue
        if r.id in aggregated:
            continue
        if r.id in by_id:
            first = by_id[r.id].judge
            notes.append(f"{name}: case {r.id!r} has several first-sample results (models "
                         f"{first.model if first else '?'} and {r.judge.model}); the first "
                         f"is used")
            continue
        by_id[r.id] = r
    statuses = [r.status for r in by_id.values()]
    counts = JudgeCounts(name=name, cases=len(by_id), scored=statuses.count("scored"),
                         unscored=statuses.count("unscored"),
                         cache_miss=statuses.count("cache_miss"), deterministic=deterministic)
    return by_id, counts


def judged_cases(results: Iterable[CaseResult]) -> dict[str, CaseResult]:
    """A judge's headline result per case id, as every statistic here reads the judge."""
    return _collect("", results, [])[0]


def _categories(judged: Sequence[Mapping[str, CaseResult]]) -> list[str]:
    seen: list[str] = []
    for by_id in judged:
        for r in by_id.values():
            for c in r.category_scores:
                if c.category not in seen:
                    seen.append(c.category)
    return seen


def _pair(name_a: str, name_b: str, a: Mapping[str, CaseResult], b: Mapping[str, CaseResult],
          categories: Sequence[str], scale_a: Sequence[Band],
          scale_b: Sequence[Band], intervals: IntervalScope = False,
          grouping: Grouping | None = None) -> PairComparison:
    skipped = {"missing": 0, "cache_miss": 0, "unscored": 0}
    pairs: list[tuple[_Side, _Side]] = []
    ids: list[str] = []
    flips: list[BandFlip] = []
    for case_id in sorted(set(a) | set(b)):
        ra, rb = a.get(case_id), b.get(case_id)
        if ra is None or rb is None:
            skipped["missing"] += 1
            continue
        if "cache_miss" in (ra.status, rb.status):
            skipped["cache_miss"] += 1
            continue
        if ra.status != "scored" or rb.status != "scored":
            skipped["unscored"] += 1
            continue
        x, y = _Side.of_result(ra, scale_a), _Side.of_result(rb, scale_b)
        pairs.append((x, y))
        ids.append(case_id)
        if x.overall is not None and y.overall is not None and (
                band_index(x.overall[1], scale_a) != band_index(y.overall[1], scale_b)):
            flips.append(BandFlip(case_id=case_id, band_a=x.overall[1], band_b=y.overall[1],
                                  overall_a=x.overall[0], overall_b=y.overall[0]))
    overall, ai_all, cats = _agreement(pairs, categories, scale_a, scale_b, name_a, name_b,
                                       intervals, ids=ids, grouping=grouping)
    line = verdict(ai_all, name_a, name_b) if ai_all.n else verdict(
        overall, name_a, name_b, what="overall scores")
    return PairComparison(judge_a=name_a, judge_b=name_b, aligned=len(pairs), skipped=skipped,
                          overall=overall, ai_all=ai_all, categories=cats,
                          band_flips=tuple(flips), verdict=line)


def _panel_alpha(names: Sequence[str], judged: Sequence[Mapping[str, CaseResult]],
                 categories: Sequence[str], level: Literal["interval", "ordinal"],
                 intervals: bool = False) -> AlphaReport:
    ids = sorted({i for by_id in judged for i, r in by_id.items() if r.status == "scored"})
    notes: list[str] = []

    def row(by_id: Mapping[str, CaseResult], cell: Cell) -> list[int | None]:
        cells: list[int | None] = []
        for case_id in ids:
            r = by_id.get(case_id)
            cells += cell(r if r is not None and r.status == "scored" else None)
        return cells

    def alpha(label: str, cell: Cell) -> float | None:
        value, why = _alpha([row(by_id, cell) for by_id in judged], level)
        if why:
            notes.append(f"{label}: {why}")
        return value

    def category_cell(category: str, part: Literal["ai", "final"]) -> Cell:
        return lambda r: [_category_score(r, category, part)]

    def pooled_ai(r: CaseResult | None) -> list[int | None]:
        # One column per (case, category).
        return [_category_score(r, c, "ai") for c in categories]

    overall = alpha("overall", lambda r: [None if r is None else r.overall_score])
    ai_all = alpha("AI scores, all categories", pooled_ai)
    cats = {c: {"ai": alpha(f"{c} (AI)", category_cell(c, "ai")),
                "final": alpha(f"{c} (final)", category_cell(c, "final"))}
            for c in categories}
    overall_interval = None
    if intervals and overall is not None:
        columns = [[None if (r := by_id.get(i)) is None or r.status != "scored"
                    else r.overall_score for by_id in judged] for i in ids]

        def resampled(cols: Sequence[list[int | None]]) -> float | None:
            return _alpha([[col[j] for col in cols] for j in range(len(judged))], level)[0]

        overall_interval = bootstrap(columns, resampled, resamples=AGREEMENT_RESAMPLES)
    return AlphaReport(judges=tuple(names), level=level, overall=overall, ai_all=ai_all,
                       categories=cats, notes=tuple(notes), overall_interval=overall_interval)


Cell = Callable[[CaseResult | None], list[int | None]]
"""The columns one case contributes to an α matrix row."""


def _category_score(r: CaseResult | None, category: str,
                    part: Literal["ai", "final"]) -> int | None:
    if r is None:
        return None
    for c in r.category_scores:
        if c.category == category:
            return c.ai_score if part == "ai" else c.final_score
    return None


def compare_runs(named_results: Mapping[str, Iterable[CaseResult]],
                 rubric_bands: Sequence[Band] = DEFAULT_BANDS, *,
                 human: Mapping[str, HumanLabel] | None = None,
                 judge_bands: Mapping[str, Sequence[Band]] | None = None,
                 alpha_level: Literal["interval", "ordinal"] = "interval",
                 intervals: IntervalScope = False,
                 grouping: Grouping | None = None) -> Comparison:
    """Compare judges: every pair, Krippendorff's α for three or more, each against humans.

    ``named_results`` maps a judge's name to its case results; each judge's headline
    judgment of a case counts (its sample aggregate with ``--samples K``, else its one
    judgment; deterministic cases are counted, never compared). ``grouping`` adds the group
    and system levels to every statistic. Cases align by id;
    a case unscored or missed by either judge of a pair is left out of that pair and
    counted. ``judge_bands`` overrides ``rubric_bands`` per judge (runs under rubrics with
    different band scales); human labels are read on ``rubric_bands``. ``intervals=True``
    adds seeded bootstrap intervals over cases to every statistic, and the paired comparison
    of each two judges' agreement with the people; ``"overall"`` adds them to the overall
    scores' statistics only: the same values, for an eighth of the resampling with three
    categories (``judge judges agreement``).
    """
    notes: list[str] = []
    names = list(named_results)
    collected = [_collect(name, named_results[name], notes) for name in names]
    judged = [c[0] for c in collected]
    categories = _categories(judged)
    scales = {n: (judge_bands or {}).get(n, rubric_bands) for n in names}
    pairs = tuple(
        _pair(names[i], names[j], judged[i], judged[j], categories, scales[names[i]],
              scales[names[j]], intervals, grouping)
        for i in range(len(names)) for j in range(i + 1, len(names)))
    if len(names) < 2 and not human:
        notes.append("fewer than two judges: no pair to compare")
    alpha = _panel_alpha(names, judged, categories, alpha_level, intervals is True) \
        if len(names) >= 3 else None
    labels = dict(human or {})
    humans: list[HumanAgreement] = []
    if labels:
        for name, by_id in zip(names, judged, strict=True):
            ids = [i for i, r in sorted(by_id.items()) if i in labels and r.status == "scored"]
            sides = [(_Side.of_human(labels[i], rubric_bands),
                      _Side.of_result(by_id[i], scales[name])) for i in ids]
            overall, ai_all, cats = _agreement(sides, categories, rubric_bands, scales[name],
                                               HUMAN, name, intervals, ids=ids,
                                               grouping=grouping)
            # Labels of the overall score only leave the AI side empty: the headline is then
            # the overall scores' (not "no case scored by both" above a table with n = 6).
            line = verdict(ai_all, "humans", name, what="AI scores vs human labels") \
                if ai_all.n else verdict(overall, "humans", name,
                                         what="overall scores vs human labels")
            humans.append(HumanAgreement(
                judge=name, labelled=len(sides), overall=overall, ai_all=ai_all,
                categories=cats, verdict=line,
                **_human_detail(ids, sides, categories, rubric_bands, scales[name])))
    human_pairs: tuple[HumanPairComparison, ...] = ()
    if labels and intervals is True:
        human_pairs = tuple(
            human_pair_comparison(names[i], names[j], judged[i], judged[j], labels)
            for i in range(len(names)) for j in range(i + 1, len(names)))
    return Comparison(judges=tuple(c[1] for c in collected), pairs=pairs, alpha=alpha,
                      human_labelled=len(labels), human=tuple(humans), human_pairs=human_pairs,
                      notes=tuple(notes))


Row = tuple[int, int, int, int]
"""One aligned case: score a, score b, band index a, band index b."""


def _intervals(rows: Sequence[Row], count: int) -> StatIntervals:
    """Bootstrap intervals of every statistic over the same resamples of ``rows``."""
    import numpy as np

    a, b, idx_a, idx_b = np.asarray(rows, dtype=np.int64).reshape(-1, 4).T
    apart, same = np.abs(b - a), (idx_a == idx_b).astype(np.int64)
    found = bootstrap_many(len(rows), {
        "weightedKappa": lambda s: kappa_rows(idx_a, idx_b, count, s),
        "pearsonR": lambda s: pearson_rows(a, b, s),
        "spearmanRho": lambda s: spearman_rows(a, b, s),
        "kendallTau": lambda s: kendall_rows(a, b, s),
        "meanAbsDiff": lambda s: mean_rows(apart, s),
        "exactBandAgreement": lambda s: mean_rows(same, s),
    }, seed=DEFAULT_SEED, resamples=AGREEMENT_RESAMPLES)
    return StatIntervals(**found)


def confusion_matrix(human: Sequence[str], judge: Sequence[str],
                     scale: Sequence[Band]) -> ConfusionMatrix:
    """Counts of (people's band, judge's band), rows and columns the scale low to high.

    The same as sklearn's ``confusion_matrix(human, judge, labels=...)``.
    """
    labels = tuple(b.name for b in _ordered(scale))
    at = {name: i for i, name in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    for h, j in zip(human, judge, strict=True):
        if h in at and j in at:
            counts[at[h]][at[j]] += 1
    return ConfusionMatrix(labels=labels, counts=tuple(tuple(r) for r in counts))


def _human_detail(ids: Sequence[str], sides: Sequence[tuple[_Side, _Side]],
                  categories: Sequence[str], scale_h: Sequence[Band],
                  scale_j: Sequence[Band]) -> dict[str, object]:
    """Confusion matrices and the ranked disagreements of one judge with the people."""
    overall_h: list[str] = []
    overall_j: list[str] = []
    per_cat: dict[str, tuple[list[str], list[str]]] = {c: ([], []) for c in categories}
    found: list[Disagreement] = []
    ordered_h, ordered_j = _ordered(scale_h), _ordered(scale_j)
    for case_id, (h, j) in zip(ids, sides, strict=True):
        if h.overall is not None and j.overall is not None:
            overall_h.append(h.overall[1])
            overall_j.append(j.overall[1])
            if h.overall[0] != j.overall[0]:
                found.append(Disagreement(case_id=case_id, category="overall",
                                          human=h.overall[0], judge=j.overall[0],
                                          human_band=h.overall[1], judge_band=j.overall[1],
                                          size=abs(h.overall[0] - j.overall[0])))
        for c in categories:
            if c in h.ai and c in j.ai:
                hb, jb = band_for(h.ai[c], ordered_h), band_for(j.ai[c], ordered_j)
                per_cat[c][0].append(hb)
                per_cat[c][1].append(jb)
                if h.ai[c] != j.ai[c]:
                    found.append(Disagreement(case_id=case_id, category=c, human=h.ai[c],
                                              judge=j.ai[c], human_band=hb, judge_band=jb,
                                              size=abs(h.ai[c] - j.ai[c])))
    found.sort(key=lambda d: (-d.size, d.case_id, d.category))
    return {
        "confusion": confusion_matrix(overall_h, overall_j, scale_h) if overall_h else None,
        "categoryConfusion": {c: confusion_matrix(hs, js, scale_h)
                              for c, (hs, js) in per_cat.items() if hs},
        "disagreements": tuple(found[:DISAGREEMENTS_KEPT]),
    }


def human_pair_comparison(name_a: str, name_b: str, a: Mapping[str, CaseResult],
                          b: Mapping[str, CaseResult],
                          labels: Mapping[str, HumanLabel]) -> HumanPairComparison:
    """Is A closer to the people than B, and how sure.

    A paired bootstrap over the cases both judges scored and people labelled (overall scores).
    """
    rows: list[tuple[int, int, int]] = []
    for case_id in sorted(set(a) & set(b) & set(labels)):
        ra, rb, h = a[case_id], b[case_id], labels[case_id].overall
        if (h is not None and ra.status == "scored" and rb.status == "scored"
                and ra.overall_score is not None and rb.overall_score is not None):
            rows.append((h, ra.overall_score, rb.overall_score))

    found = kappas = None
    if rows:
        import numpy as np

        scale = _ordered(DEFAULT_BANDS)
        scores = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        bands = np.asarray([[band_index(band_for(v, scale), scale) for v in r] for r in rows],
                           dtype=np.int64).reshape(-1, 3)

        def mad(k: int) -> RowStatistic:
            return lambda s: mean_rows(np.abs(scores[:, k] - scores[:, 0]), s)

        def kappa(k: int) -> RowStatistic:
            return lambda s: kappa_rows(bands[:, 0], bands[:, k], len(scale), s)

        found = paired_bootstrap(len(rows), mad(1), mad(2), resamples=AGREEMENT_RESAMPLES)
        kappas = paired_bootstrap(len(rows), kappa(1), kappa(2),
                                  resamples=AGREEMENT_RESAMPLES)
    if found is None:
        return HumanPairComparison(judge_a=name_a, judge_b=name_b, n=len(rows),
                                   mad_difference=None, share_a_farther=None,
                                   kappa_difference=None,
                                   verdict=f"no case labelled and scored by both {name_a} "
                                           f"and {name_b}")
    interval, p_not_greater = found
    share_a_farther = 1 - p_not_greater  # resamples with MAD_A - MAD_B > 0
    if len(rows) < 2:  # every resample of one case is that case: a zero-width interval
        line = (f"{name_a} and {name_b} are not told apart: one case labelled and scored by "
                f"both is too few for an interval (MAD difference {interval.estimate:+.1f})")
    elif interval.high is not None and interval.high < 0:
        line = (f"{name_a} is closer to the people than {name_b}: MAD {interval.estimate:+.1f}"
                f" points (95 % {interval.low:+.1f} to {interval.high:+.1f}, n {len(rows)})")
    elif interval.low is not None and interval.low > 0:
        line = (f"{name_b} is closer to the people than {name_a}: MAD {interval.estimate:+.1f}"
                f" points (95 % {interval.low:+.1f} to {interval.high:+.1f}, n {len(rows)})")
    else:
        line = (f"{name_a} and {name_b} are not told apart by their agreement with the "
                f"people: MAD difference {interval.estimate:+.1f} points, the 95 % interval "
                f"includes 0 (n {len(rows)})")
    return HumanPairComparison(judge_a=name_a, judge_b=name_b, n=len(rows),
                               mad_difference=interval, share_a_farther=share_a_farther,
                               kappa_difference=kappas[0] if kappas else None, verdict=line)
