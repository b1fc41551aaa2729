"""A run's judge quality: its agreement with people's labels, or the shipped figure for its judge.

Where the run's suite has people's labels (its ``human:`` fields, its labels file), the run
is measured against them on the spot (:func:`judge.core.stats.agreement.compare_runs`, the
statistic ``judge judges agreement`` reports as ``aiAll``; no bootstrap, one pass over the run's
results). Otherwise the figure shipped for the run's judge, if any (the embedded judge's,
:mod:`judge.llm.measured`). A panel has no single judge to measure: none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...core.formats.models import RunInfo
from ...core.formats.rubric import Rubric
from ...core.formats.suite import HumanLabel
from ...core.scoring.panel import headline_of
from ...core.stats.agreement import compare_runs
from ...core.stats.judge_quality import MeasuredAgreement, for_judge
from ...core.text.errors import JudgeError
from ...core.text.seals import Sealer
from ...llm.measured import shipped_quality
from ..workspace.workspace import Workspace
from .comparing import judge_results, labels_file_labels, run_bands, suite_human_labels

__all__ = ["MIN_LABELLED", "run_quality", "suite_labels"]

MIN_LABELLED = 3
"""Labelled scores below which a run is not measured here (a rank correlation of two
points says nothing); the shipped figure, if any, is shown instead."""


def suite_labels(inline: Mapping[str, HumanLabel], suite_file: Path, rubric: Rubric,
                 sealer: Sealer) -> dict[str, HumanLabel]:
    """The people's labels of a suite: its cases' ``human:`` fields, its labels file over them.

    An unreadable labels file gives none from it (the run's own errors name such a file).
    """
    try:
        return {**inline, **labels_file_labels(suite_file, rubric, sealer)}
    except JudgeError:
        return dict(inline)


def _measured_here(workspace: Workspace, run: RunInfo, model: str,
                   labels: Mapping[str, HumanLabel]) -> MeasuredAgreement | None:
    notes: list[str] = []
    with workspace.open_store() as store:
        results = judge_results(list(store.iter_results(run.id)), model)
    (human,) = compare_runs({model: results}, run_bands(run, workspace, notes),
                            human=labels).human
    stats = human.ai_all
    if stats.n < MIN_LABELLED:
        return None
    return MeasuredAgreement(model=model, template_id=run.template_id, rubric=run.rubric,
                             rho=stats.spearman_rho, n=stats.n, suite=run.suite,
                             measured_at=run.created_at[:10],
                             source=f"this run's {human.labelled} labelled cases")


def run_quality(workspace: Workspace, run: RunInfo,
                labels: Mapping[str, HumanLabel] | None = None) -> MeasuredAgreement | None:
    """The run's judge's measured agreement with people: here, else shipped, else None.

    ``labels``: the suite's people's labels when the caller has them (a run gathers them
    while it validates the suite); None reads them from the run's suite file.
    """
    model = headline_of(run)[0]
    if model is None or model.startswith("panel:"):
        return None
    if labels is None:
        labels = suite_human_labels([run], None, workspace, [])
    measured = _measured_here(workspace, run, model, labels) if labels else None
    return measured or for_judge(shipped_quality(), model, run.template_id)
