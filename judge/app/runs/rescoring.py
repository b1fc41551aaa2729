"""Re-score a stored run under another rubric and store it as a new run: no model call.

The pure arithmetic is :func:`judge.core.scoring.rescore.rescore_result`; this operation reads the
source run, re-scores every result, and stores the new run only when every result could be
re-scored (a rubric with other categories stores nothing). A case *moved* by
:mod:`judge.core.scoring.result_changes`' rule (status, score, band or pass/fail), counted over the
run's headline results, as ``judge diff`` counts between the two runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from ...core.formats.models import CaseResult, RunCalibration, RunInfo
from ...core.formats.rubric import Rubric, rubric_hash
from ...core.outcomes.summary import Summary, SummaryBuilder
from ...core.scoring.calibration import check_judge
from ...core.scoring.panel import headline_of
from ...core.scoring.rescore import RescoreError, rescore_result
from ...core.scoring.result_changes import case_changed
from ...core.text.errors import UsageError
from ...system.clock import new_run_id, utc_now
from ..workspace.workspace import Workspace

__all__ = ["BATCH", "EXACT_NOTE", "MoveJson", "RescoreJson", "RescoreReport", "RescoredMove",
           "rescore_run"]

EXACT_NOTE = ("exact arithmetic over the stored judgments: no model call, so no judge noise; "
              "every movement is the rubric's")

BATCH = 500
"""Results written per store transaction."""


class MoveJson(TypedDict):
    """A moved case in ``judge rescore --json``: before and after of each value."""

    id: str
    overall: list[int | None]
    band: list[str | None]
    passed: list[bool | None]


class RescoreJson(TypedDict):
    """``judge rescore --json``: the new run, where it came from, what moved."""

    run: dict[str, Any]
    """The new run, as its model writes it."""
    rescoredFrom: str
    modelCalls: int
    casesMoved: int
    exact: bool
    noise: str
    moved: list[MoveJson]
    summary: dict[str, Any]


@dataclass(frozen=True)
class RescoreReport:
    """The new run, the run it was re-scored from, how many cases moved, the new summary."""

    run: RunInfo
    source: RunInfo
    rubric: str
    cases_moved: int
    summary: Summary
    moves: tuple[RescoredMove, ...] = ()
    """The cases that moved, by id: what ``judge rescore`` lists."""

    def public(self) -> RescoreJson:
        """The JSON ``judge rescore --json`` prints."""
        return {"run": self.run.model_dump(mode="json"), "rescoredFrom": self.source.id,
                "modelCalls": 0, "casesMoved": self.cases_moved, "exact": True,
                "noise": EXACT_NOTE, "moved": [m.public() for m in self.moves],
                "summary": self.summary.model_dump(mode="json")}


@dataclass(frozen=True)
class RescoredMove:
    """One case that moved under the new rubric: overall, band and pass, before and after."""

    id: str
    overall: tuple[int | None, int | None]
    band: tuple[str | None, str | None]
    passed: tuple[bool | None, bool | None]

    @classmethod
    def of(cls, old: CaseResult, new: CaseResult) -> RescoredMove:
        """The move from ``old`` to ``new``."""
        return cls(id=old.id, overall=(old.overall_score, new.overall_score),
                   band=(old.band, new.band), passed=(old.passed, new.passed))

    def public(self) -> MoveJson:
        """Its JSON: ``{"id", "overall": [a, b], "band": [a, b], "passed": [a, b]}``."""
        return {"id": self.id, "overall": list(self.overall), "band": list(self.band),
                "passed": list(self.passed)}


def rescore_run(workspace: Workspace, run_id: str, rubric: str, *,
                now: Callable[[], str] = utc_now) -> RescoreReport:
    """Recompute a stored run's finals under ``rubric`` (id or path); stores a new run."""
    rub = workspace.rubric(rubric)
    with workspace.open_store() as store:
        source = store.get_run(run_id)
        head = headline_of(source)
        _check_calibration(rub, source)
        try:
            pairs = [(old, rescore_result(old, rub)) for old in store.iter_results(source.id)]
        except RescoreError as exc:
            raise UsageError(str(exc), fix="re-score under a rubric with the same categories") \
                from None
        created = now()
        info = source.model_copy(update={
            "id": new_run_id(created), "rubric": rub.id, "rubric_hash": rubric_hash(rub),
            "created_at": created, "status": "running",
            "settings": source.settings.model_copy(update={
                "rescored_from": source.id, "calls": 0, "calibration": _calibration(rub)})})
        builder = SummaryBuilder()
        moved = 0
        moves: list[RescoredMove] = []
        for old, new in pairs:
            if _is_headline(new, head):
                builder.add(new)
                if case_changed(old, new):
                    moved += 1
                    moves.append(RescoredMove.of(old, new))
        store.create_run(info)
        try:
            for start in range(0, len(pairs), BATCH):
                store.add_results(info.id, [new for _, new in pairs[start:start + BATCH]])
            summary = builder.build()
            totals = source.totals.model_copy(update={
                "calls": 0, "cases": summary.cases, "scored": summary.scored,
                "unscored": summary.unscored, "cache_hits": 0, "prompt_tokens": 0,
                "completion_tokens": 0, "cost_usd": 0.0, "wall_seconds": 0.0})
            final = store.finish_run(info.id, totals=totals, status="complete")
        except BaseException:
            store.delete_run(info.id)  # no half-stored run left behind
            raise
    return RescoreReport(run=final, source=source, rubric=rub.id, cases_moved=moved,
                         summary=summary, moves=tuple(sorted(moves, key=lambda m: m.id)))


def _check_calibration(rubric: Rubric, source: RunInfo) -> None:
    """Refuse a calibration of another judge's scores (core.scoring.calibration's check_judge)."""
    if rubric.calibrated is None:
        return
    for model in source.models:
        check_judge(rubric.calibrated[2], model, f"run {source.id}")


def _calibration(rubric: Rubric) -> RunCalibration | None:
    """What the new run records of the calibration it was scored with (None: not calibrated)."""
    if rubric.calibrated is None:
        return None
    return RunCalibration(file=rubric.calibration, sha256=rubric.calibrated[1])


def _is_headline(result: CaseResult, head: tuple[str | None, int]) -> bool:
    """A deterministic result, or the headline judge's headline sample."""
    return result.judge is None or (result.judge.model, result.judge.sample) == head
