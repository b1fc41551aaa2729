"""What moved between two stored runs (``judge diff``) and across a run's samples (``stability``).

Both read stored runs only: no model call, no cache. Each run contributes one result per
case, its headline (:func:`judge.app.runs.gate.headline_results`): the panel with several judges,
a judge's aggregate of its samples with ``--samples K``, else the judge's judgment. Whether a
case *changed* is :mod:`judge.core.scoring.result_changes`' rule, the one ``judge rescore``
counts by too.

Each movement of an overall score is marked beyond or within the judge's noise
(:func:`judge.core.stats.significance.classify_movements`, Benjamini-Hochberg at 5 % over the
compared cases), from each run's noise model (:func:`judge.app.runs.gate.noise_of_run`); the
same cached judgment on both sides is ``exact``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from ...core.formats.models import CaseResult, CaseStatus, RunInfo
from ...core.scoring.panel import StabilityReport
from ...core.scoring.panel import stability as measure_stability
from ...core.scoring.result_changes import case_change
from ...core.stats.noise import SideNoise
from ...core.stats.significance import Movement, classify_movements
from ...core.text.errors import UsageError
from ...core.text.frozen import Frozen, wire_value
from ..workspace.workspace import Workspace
from .gate import headline_results, noise_of_run, side_noise

__all__ = [
    "RUN_FIELDS",
    "CaseDiff",
    "CategoryDiff",
    "RunDiff",
    "RunSide",
    "RunStability",
    "StabilityJson",
    "build_diff",
    "diff_runs",
    "rationale_cases",
    "run_stability",
]

RUN_FIELDS = ("suite", "rubric", "rubricHash", "templateId", "templateHash", "models",
              "panel", "seed", "samples", "temperature")
"""What the diff header compares between the two runs."""


class RunSide(Frozen):
    """One side of a diff: the run's id and the settings the header compares."""

    id: str
    suite: str
    rubric: str
    rubric_hash: str = Field(alias="rubricHash")
    template_id: str = Field(alias="templateId")
    template_hash: str = Field(alias="templateHash")
    models: tuple[str, ...]
    panel: str | None
    seed: int | None
    samples: int
    temperature: float

    @classmethod
    def of(cls, run: RunInfo) -> RunSide:
        """The side of ``run``."""
        return cls(id=run.id, **{name: wire_value(run, name) for name in RUN_FIELDS})


class CategoryDiff(Frozen):
    """One category of a case, run A then run B (None where a side has no such category)."""

    category: str
    ai: tuple[int | None, int | None]
    final: tuple[int | None, int | None]
    rationale: tuple[str | None, str | None]
    changed: bool
    """The AI or final score moved (detail: not by itself a changed case)."""


class CaseDiff(Frozen):
    """One case both runs scored, A then B."""

    id: str
    changed: bool
    """Status, overall score, band or pass/fail differ (see ``result_changes.case_change``)."""
    status: tuple[CaseStatus, CaseStatus]
    overall: tuple[int | None, int | None]
    band: tuple[str | None, str | None]
    passed: tuple[bool | None, bool | None]
    delta: int | None
    """B − A of the overall score, when both have one."""
    rationale_changed: bool = Field(alias="rationaleChanged")
    categories: tuple[CategoryDiff, ...]
    movement: Movement | None = None
    """The overall score's movement, beyond or within the judge's noise (with the interval
    the noise explains); None when a side has no score."""


class RunDiff(Frozen):
    """What moved from run A to run B; ``model_dump(mode="json")`` is ``judge diff --json``."""

    a: RunSide
    b: RunSide
    differs: dict[str, tuple[Any, Any]]
    """The header fields that differ, A then B (JSON values)."""
    compared: int
    """Cases both runs hold."""
    changed: int
    band_changed: int = Field(alias="bandChanged")
    rationale_changed: int = Field(alias="rationaleChanged")
    category_only: int = Field(alias="categoryOnly")
    """Cases whose outcome is the same but a category's AI or final score moved."""
    only_a: tuple[str, ...] = Field(alias="onlyA")
    only_b: tuple[str, ...] = Field(alias="onlyB")
    cases: tuple[CaseDiff, ...]
    """The changed cases (every shared case when asked for all), by case id."""
    beyond_noise: int = Field(0, alias="beyondNoise")
    """Overall scores that moved beyond the judge's noise (BH at 5 % over the cases)."""
    within_noise: int = Field(0, alias="withinNoise")
    """Overall scores that moved within what the judge's noise explains."""
    exact_moves: int = Field(0, alias="exactMoves")
    """Moved with the same judgment on both sides: exact, all of it real."""
    unknown_noise: int = Field(0, alias="unknownNoise")
    """Moved, re-asked, with no noise estimate on either side."""
    noise_sources: tuple[str | None, str | None] = Field((None, None), alias="noiseSources")
    """The noise assumed for A and for B, and where it came from."""
    rationale_cases: dict[str, tuple[str, ...]] = Field({}, alias="rationaleCases")
    """Cases whose rationale changed, each with its categories: what ``rationaleChanged``
    counts, listed."""


class StabilityJson(StabilityReport):
    """``judges noise --json``'s ``stability``: the run (id, suite, samples, judges), its report."""

    run: str
    suite: str
    samples: int
    judges: tuple[str, ...]


class RunStability(Frozen):
    """A ``--samples K`` run's stability report, with the run it measures."""

    run: RunInfo
    report: StabilityReport

    def public(self) -> StabilityJson:
        """What ``judges noise --json`` holds as ``stability``: the run, its report's fields."""
        return StabilityJson.model_validate({
            **self.report.model_dump(), "run": self.run.id, "suite": self.run.suite,
            "samples": self.run.samples, "judges": self.run.models})


def _case_diff(a: CaseResult, b: CaseResult) -> CaseDiff:
    change = case_change(a, b)
    cats_a = {c.category: c for c in a.category_scores}
    cats_b = {c.category: c for c in b.category_scores}
    categories = []
    for name in dict.fromkeys([*cats_a, *cats_b]):
        ca, cb = cats_a.get(name), cats_b.get(name)
        categories.append(CategoryDiff(
            category=name, ai=(ca.ai_score if ca else None, cb.ai_score if cb else None),
            final=(ca.final_score if ca else None, cb.final_score if cb else None),
            rationale=(ca.rationale if ca else None, cb.rationale if cb else None),
            changed=name in change.categories))
    return CaseDiff(
        id=a.id, changed=change.changed, status=(a.status, b.status),
        overall=(a.overall_score, b.overall_score), band=(a.band, b.band),
        passed=(a.passed, b.passed),
        delta=None if a.overall_score is None or b.overall_score is None
        else b.overall_score - a.overall_score,
        rationale_changed=any(c.rationale[0] != c.rationale[1] for c in categories),
        categories=tuple(categories))


def build_diff(run_a: RunInfo, results_a: Iterable[CaseResult], run_b: RunInfo,
               results_b: Iterable[CaseResult], *, everything: bool = False,
               noise_a: SideNoise | None = None, noise_b: SideNoise | None = None) -> RunDiff:
    """What moved from run A to run B, case by case (one result per case on each side)."""
    a_by = {r.id: r for r in results_a}
    b_by = {r.id: r for r in results_b}
    side_a, side_b = RunSide.of(run_a), RunSide.of(run_b)
    da, db = side_a.model_dump(mode="json"), side_b.model_dump(mode="json")
    differs = {name: (da[name], db[name]) for name in RUN_FIELDS if da[name] != db[name]}
    shared = sorted(set(a_by) & set(b_by))
    moves = classify_movements({i: (a_by[i], b_by[i]) for i in shared}, noise_a, noise_b,
                               rescored=_rescored(run_a, run_b))
    rows = [_case_diff(a_by[i], b_by[i]).model_copy(update={"movement": moves.get(i)})
            for i in shared]
    moved = [m for m in moves.values() if m.delta != 0]
    return RunDiff(
        beyond_noise=sum(m.noise == "beyond" for m in moved),
        within_noise=sum(m.noise == "within" for m in moved),
        exact_moves=sum(m.noise == "exact" for m in moved),
        unknown_noise=sum(m.noise == "unknown" for m in moved),
        noise_sources=(noise_a.source if noise_a else None, noise_b.source if noise_b else None),
        a=side_a, b=side_b, differs=differs, compared=len(shared),
        changed=sum(r.changed for r in rows),
        band_changed=sum(r.band[0] != r.band[1] for r in rows),
        rationale_changed=sum(r.rationale_changed for r in rows),
        category_only=sum(not r.changed and any(c.changed for c in r.categories) for r in rows),
        only_a=tuple(sorted(set(a_by) - set(b_by))), only_b=tuple(sorted(set(b_by) - set(a_by))),
        cases=tuple(rows if everything else [r for r in rows if r.changed]),
        rationale_cases=rationale_cases(rows))


def rationale_cases(rows: Iterable[CaseDiff]) -> dict[str, tuple[str, ...]]:
    """Each case whose rationale changed, with the categories where it did."""
    return {r.id: tuple(c.category for c in r.categories if c.rationale[0] != c.rationale[1])
            for r in rows if r.rationale_changed}


def _rescored(run_a: RunInfo, run_b: RunInfo) -> bool:
    """One run is a ``judge rescore`` of the other: the same judgments, exact arithmetic."""
    return run_b.settings.rescored_from == run_a.id or run_a.settings.rescored_from == run_b.id


def diff_runs(workspace: Workspace, run_a: str, run_b: str, *,
              everything: bool = False) -> RunDiff:
    """Diff two stored runs (ids or unique prefixes); StoreError when one is unknown."""
    with workspace.open_store() as store:
        info_a, info_b = store.get_run(run_a), store.get_run(run_b)
        results_a, results_b = headline_results(store, info_a), headline_results(store, info_b)
    return build_diff(info_a, results_a, info_b, results_b, everything=everything,
                      noise_a=side_noise(noise_of_run(workspace, info_a)),
                      noise_b=side_noise(noise_of_run(workspace, info_b)))


def run_stability(workspace: Workspace, run_id: str, *, keep_all: bool = False) -> RunStability:
    """The cases whose band differs between the samples of a ``--samples K`` run."""
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        if run.samples < 2:
            raise UsageError(f"run {run.id} judged each case once: stability needs samples",
                             fix="judge the suite with --samples K (K >= 2), e.g. "
                                 "`judge run SUITE --samples 3`")
        return RunStability(run=run, report=measure_stability(store.iter_results(run.id),
                                                             keep_all=keep_all))
