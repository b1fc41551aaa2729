"""What a report shows, as typed values, and the pure derivations behind them.

Built by :mod:`judge.app.runs.reporting`, drawn by :mod:`judge.report.html`, and (later) served by
``judge workspace serve`` from the same values.

The pure derivations live here too: the band distribution, the per-category score
distributions, each case's move against a reference (a baseline, or another run made into
one, so the regression marks are the gate's own rule, :func:`judge.core.outcomes.baseline.compare`),
and the points of an agreement scatter. Nothing here touches files, the clock or the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from ..core.formats.models import CaseResult, RunInfo
from ..core.formats.rubric import Band
from ..core.formats.suite import HumanLabel
from ..core.outcomes.baseline import Baseline
from ..core.outcomes.baseline import BaselineComparison as GateComparison
from ..core.stats.agreement import Comparison as Agreement
from ..core.stats.judge_quality import MeasuredAgreement
from ..core.stats.raters import PeopleCategory
from ..core.text.frozen import Frozen
from .samples import CaseSample
from .transcripts import Transcript

__all__ = [
    "AgainstView",
    "AgreementView",
    "BandCount",
    "CaseMove",
    "CategoryDistribution",
    "CategoryView",
    "Mark",
    "PairPoints",
    "PeopleDisagreement",
    "PeoplePoint",
    "QualityRow",
    "ReportData",
    "RubricView",
    "ScatterPoint",
    "band_counts",
    "case_moves",
    "category_distributions",
    "pair_points",
]

Mark = Literal["regressed", "newly_unscored", "noise", "improved", "steady", "missing", "new",
               "unscored"]
"""What a case's move means to the gate: ``regressed`` and ``newly_unscored`` block;
``noise`` dropped within the recorded spread; ``missing`` is in the reference only, ``new``
in the run only; ``unscored`` was unscored on both sides."""


class CategoryView(Frozen):
    """A rubric category as the report names it."""

    id: str
    weight: float


class RubricView(Frozen):
    """The run's rubric: id and the hash it was judged with, its bands and categories."""

    id: str
    hash: str
    current_hash: str | None = Field(alias="currentHash")
    """The hash of the rubric file today (None when the file is gone)."""
    bands: tuple[Band, ...]
    """Lowest band first."""
    categories: tuple[CategoryView, ...]


class BandCount(Frozen):
    """How many headline results fall in a band (or have a status without one)."""

    band: str
    count: int
    kind: Literal["band", "status"] = "band"


class CategoryDistribution(Frozen):
    """One category's scores over the scored cases: the inputs and the final, by case."""

    category: str
    case_ids: tuple[str, ...] = Field(alias="caseIds")
    deterministic: tuple[int | None, ...]
    ai: tuple[int | None, ...]
    final: tuple[int | None, ...]


class CaseMove(Frozen):
    """Where a case went from the reference to the run."""

    case_id: str = Field(alias="caseId")
    before: int | None
    after: int | None
    band_before: str | None = Field(alias="bandBefore")
    band_after: str | None = Field(alias="bandAfter")
    status_before: str | None = Field(alias="statusBefore")
    """None: the case is not in the reference."""
    status_after: str | None = Field(alias="statusAfter")
    """None: the case is not in the run."""
    delta: int | None
    band_flip: bool = Field(alias="bandFlip")
    mark: Mark

    @property
    def regression(self) -> bool:
        """The gate blocks on this case."""
        return self.mark in ("regressed", "newly_unscored")


class AgainstView(Frozen):
    """The run against another run or the suite's baseline."""

    kind: Literal["run", "baseline"]
    label: str
    """The other run's id, or the baseline's id."""
    run: RunInfo | None = None
    """The other run (``kind`` ``run``)."""
    baseline_path: str | None = Field(None, alias="baselinePath")
    comparison: GateComparison
    moves: tuple[CaseMove, ...]
    """By case id."""
    differs: dict[str, tuple[Any, Any]] = {}
    """Run settings that differ (rubric, template, judges, seed...): reference, run."""


class ScatterPoint(Frozen):
    """One case scored by both sides of a pair."""

    case_id: str = Field(alias="caseId")
    a: int
    b: int
    flip: bool


class PairPoints(Frozen):
    """The overall scores of two judges (or the humans and a judge), case by case."""

    judge_a: str = Field(alias="judgeA")
    judge_b: str = Field(alias="judgeB")
    points: tuple[ScatterPoint, ...]


class AgreementView(Frozen):
    """Judge swap or panel: the statistics and the scatter points behind them."""

    comparison: Agreement
    pairs: tuple[PairPoints, ...]
    human: tuple[PairPoints, ...] = ()
    """Humans (``judgeA``) against each judge, on the labelled cases."""


class PeoplePoint(Frozen):
    """One judge of one stored run of the suite against the people's labels (overall scores).

    Made by :func:`judge.app.judges.agreement_history.agreement_op`; the report plots κ over them.
    """

    run_id: str = Field(alias="runId")
    model: str
    rubric: str
    rubric_hash: str = Field(alias="rubricHash")
    template_id: str = Field(alias="templateId")
    template_hash: str = Field(alias="templateHash")
    n: int
    kappa: float | None
    kappa_low: float | None = Field(None, alias="kappaLow")
    kappa_high: float | None = Field(None, alias="kappaHigh")
    mad: float | None = None
    mad_low: float | None = Field(None, alias="madLow")
    mad_high: float | None = Field(None, alias="madHigh")
    same_band: float | None = Field(None, alias="sameBand")


class PeopleDisagreement(Frozen):
    """A case where a judge of the reported run and the people part most, with its link.

    ``link`` is the case's place on the review page (``judge review RUN`` on 127.0.0.1).
    """

    run_id: str = Field(alias="runId")
    model: str
    case_id: str = Field(alias="caseId")
    category: str
    human: int
    judge: int
    human_band: str = Field(alias="humanBand")
    judge_band: str = Field(alias="judgeBand")
    size: int
    link: str


class QualityRow(Frozen):
    """One score of the reported run's judge against the people: item-level r, ρ, τ and κ."""

    model: str
    scores: str
    """``overall (final)`` or a category's AI score."""
    n: int
    kappa: float | None
    pearson_r: float | None = Field(alias="pearsonR")
    spearman_rho: float | None = Field(alias="spearmanRho")
    kendall_tau: float | None = Field(alias="kendallTau")


class ReportData(Frozen):
    """Everything one report shows."""

    generated_at: str = Field(alias="generatedAt")
    version: str
    run: RunInfo
    rubric: RubricView
    headline: str | None
    """The model whose results are the run's headline (``panel:median`` for a panel)."""
    cases: tuple[CaseResult, ...]
    """The headline result of each case, by case id."""
    human: dict[str, HumanLabel] = {}
    bands: tuple[BandCount, ...]
    categories: tuple[CategoryDistribution, ...]
    against: AgainstView | None = None
    agreement: AgreementView | None = None
    notes: tuple[str, ...] = ()
    transcripts: dict[str, Transcript] = {}
    """Conversations and span trees of cases that have them, by case id."""
    samples: dict[str, CaseSample] = {}
    """Each case's bounded input and output and the prompt its judge saw, by case id (none
    when the suite file is gone)."""
    people: tuple[PeoplePoint, ...] = ()
    """Agreement with people over the suite's stored runs, oldest first (when labelled)."""
    people_disagreements: tuple[PeopleDisagreement, ...] = Field((), alias="peopleDisagreements")
    """The reported run's largest disagreements with the people, largest first."""
    quality: tuple[QualityRow, ...] = ()
    """The reported run's judges against the people: r, ρ, τ (and κ) per score."""
    reviewers: tuple[PeopleCategory, ...] = ()
    """With two or more reviewers: their own agreement and the judge among them."""
    judge_quality: MeasuredAgreement | None = None
    """The judge's measured agreement with people's labels (this run's, or the shipped
    figure for its judge)."""


def band_counts(results: Iterable[CaseResult], bands: Sequence[Band]) -> tuple[BandCount, ...]:
    """Cases per band, lowest band first, then cases without a band by status."""
    scored: dict[str, int] = {b.name: 0 for b in sorted(bands, key=lambda b: b.min)}
    other: dict[str, int] = {}
    for r in results:
        if r.status == "scored" and r.band is not None:
            scored[r.band] = scored.get(r.band, 0) + 1
        else:
            other[r.status] = other.get(r.status, 0) + 1
    return (*(BandCount(band=k, count=v) for k, v in scored.items()),
            *(BandCount(band=k, count=v, kind="status") for k, v in sorted(other.items())))


def category_distributions(results: Sequence[CaseResult],
                           order: Sequence[str] = ()) -> tuple[CategoryDistribution, ...]:
    """Each category's deterministic, AI and final scores over the scored cases."""
    names = list(order)
    for r in results:
        names += [c.category for c in r.category_scores if c.category not in names]
    out = []
    for name in names:
        ids: list[str] = []
        det: list[int | None] = []
        ai: list[int | None] = []
        final: list[int | None] = []
        for r in results:
            if r.status != "scored":
                continue
            for c in r.category_scores:
                if c.category == name:
                    ids.append(r.id)
                    det.append(c.deterministic_score)
                    ai.append(c.ai_score)
                    final.append(c.final_score)
        if ids:
            out.append(CategoryDistribution(category=name, case_ids=tuple(ids),
                                            deterministic=tuple(det), ai=tuple(ai),
                                            final=tuple(final)))
    return tuple(out)


def _mark(case_id: str, comparison: GateComparison, before: str | None,
          after: str | None) -> Mark:
    if case_id in comparison.regressed_cases:
        return "regressed"
    if case_id in comparison.newly_unscored:
        return "newly_unscored"
    if case_id in comparison.noise:
        return "noise"
    if case_id in comparison.improved_cases:
        return "improved"
    if after is None:
        return "missing"
    if before is None:
        return "new"
    if before != "scored" or after != "scored":
        return "unscored"
    return "steady"


def case_moves(reference: Baseline, results: Sequence[CaseResult],
               comparison: GateComparison) -> tuple[CaseMove, ...]:
    """Every case of the reference or the run with its move, marked as the gate reads it.

    ``comparison`` is :func:`judge.core.outcomes.baseline.compare` of ``results`` (one per case)
    against ``reference``.
    """
    now = {r.id: r for r in results}
    moves = []
    for case_id in sorted(set(reference.cases) | set(now)):
        was, r = reference.cases.get(case_id), now.get(case_id)
        before = was.overall_score if was is not None and was.status == "scored" else None
        after = r.overall_score if r is not None and r.status == "scored" else None
        band_before = was.band if was is not None and before is not None else None
        band_after = r.band if r is not None and after is not None else None
        status_before = was.status if was is not None else None
        status_after = r.status if r is not None else None
        moves.append(CaseMove(
            case_id=case_id, before=before, after=after, band_before=band_before,
            band_after=band_after, status_before=status_before, status_after=status_after,
            delta=None if before is None or after is None else after - before,
            band_flip=band_before is not None and band_after is not None
            and band_before != band_after,
            mark=_mark(case_id, comparison, status_before, status_after)))
    return tuple(moves)


def pair_points(name_a: str, a: Mapping[str, int], name_b: str, b: Mapping[str, int],
                flips: Iterable[str] = ()) -> PairPoints:
    """The cases both sides scored (overall scores by case id), flips marked."""
    flipped = set(flips)
    points = tuple(ScatterPoint(case_id=i, a=a[i], b=b[i], flip=i in flipped)
                   for i in sorted(set(a) & set(b)))
    return PairPoints(judge_a=name_a, judge_b=name_b, points=points)
