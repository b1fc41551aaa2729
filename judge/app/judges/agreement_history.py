"""Agreement with people's labels, tracked run by run (``judge judges agreement``, the report).

Each stored run of a suite is set against the people's labels (the suite's ``human:`` fields
and its ``<suite>.labels.jsonl``, with the labels the review page saved in the run store for
the cases neither holds; or a labels file given); each judge of the run makes one
row, keyed by judge model, rubric (id and digest) and template (id and digest), so a reader
sees whether a template edit or a judge swap moved agreement. The statistics are those of
``judge compare`` (:func:`judge.core.stats.agreement.compare_runs` with seeded bootstrap
intervals): nothing is computed twice.

Decisions where the issue is silent:

- The runs are ordered oldest first (newest last); without run ids, the newest
  :data:`HISTORY_RUNS` runs of the suite (of the newest run's suite without ``--suite``).
- A run none of whose labelled cases was scored is left out, with a note.
- A movement between consecutive rows is called *beyond the interval* when the later
  estimate lies outside the earlier row's 95 % bootstrap interval: a reading aid, not a
  test (the two runs share cases, so a paired test would be sharper; ``judge compare A B``
  gives it as ``humanPairs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Final

from pydantic import Field

from ...core.formats.labels import Label, human_labels
from ...core.formats.models import RunInfo
from ...core.formats.suite import HumanLabel
from ...core.scoring.panel import headline_of
from ...core.stats.agreement import (
    HumanAgreement,
    PairStats,
    StatIntervals,
    compare_runs,
    judged_cases,
)
from ...core.stats.intervals import Interval
from ...core.stats.raters import PeopleCategory, people_agreement
from ...core.text.errors import ConfigError, UsageError
from ...core.text.frozen import Frozen, wire_value
from ...report.review_page import review_link
from ...store.labels import LabelStore
from ..runs.gate import headline_results
from ..workspace.workspace import Workspace
from .comparing import judge_results, run_bands, suite_grouping, suite_human_labels
from .reviewing import labels_path, read_labels, run_suite_file

__all__ = ["HISTORY_RUNS", "AgreementHistory", "AgreementRow", "RunAgreement", "StatisticMove",
           "agreement_op", "people_labels", "stored_agreement"]

HISTORY_RUNS: Final = 20
"""Runs read when none is given: the newest of the suite."""

NO_LABELS_FIX: Final = ("label cases with `judge review RUN`, give `human:` fields in the suite, "
                        "or pass --labels FILE / --suite FILE")


class AgreementRow(Frozen):
    """One judge of one run against the people."""

    run_id: str = Field(alias="runId")
    created_at: str = Field(alias="createdAt")
    model: str
    rubric: str
    rubric_hash: str = Field(alias="rubricHash")
    template_id: str = Field(alias="templateId")
    template_hash: str = Field(alias="templateHash")
    agreement: HumanAgreement
    people: tuple[PeopleCategory, ...] = ()
    """With two or more reviewers of a category: their own agreement, and the judge among
    them (:mod:`judge.core.stats.raters`)."""
    review_page: str = Field("", alias="reviewPage")
    """The run's review page as ``judge review RUN`` serves it; a case's place on it is
    ``#case=ID&category=CAT`` (:func:`judge.report.review_page.review_link`)."""


class StatisticMove(Frozen):
    """How a statistic of the overall scores moved from one row to the next."""

    from_run: str = Field(alias="fromRun")
    to_run: str = Field(alias="toRun")
    from_model: str = Field(alias="fromModel")
    to_model: str = Field(alias="toModel")
    statistic: str
    """``weightedKappa``, ``meanAbsDiff``, ``spearmanRho`` or ``exactBandAgreement``."""
    before: float | None
    after: float | None
    change: float | None
    beyond_interval: bool | None = Field(alias="beyondInterval")
    """The later estimate lies outside the earlier row's 95 % interval (None: unknown)."""
    changed: tuple[str, ...]
    """What differs between the rows' keys: ``model``, ``rubric``, ``template``."""


class AgreementHistory(Frozen):
    """Agreement with people over the runs of one suite, oldest first."""

    suite: str
    labelled: int
    """Cases the people labelled."""
    rows: tuple[AgreementRow, ...]
    movements: tuple[StatisticMove, ...]
    notes: tuple[str, ...] = ()


TRACKED: Final = ("weightedKappa", "meanAbsDiff", "spearmanRho", "exactBandAgreement")


def people_labels(infos: Sequence[RunInfo], suite_file: Path | None, workspace: Workspace,
                  notes: list[str]) -> dict[str, HumanLabel]:
    """The people's labels by case: the suite's and its labels file's, then the run store's.

    The labels the review page saved in the store count for the cases the suite and its
    labels file leave unlabelled: what is committed is the record; a label not yet exported
    still counts.
    """
    stored = _stored_labels(infos, workspace)
    found = suite_human_labels(infos, suite_file, workspace, notes)
    return {**(human_labels(stored, workspace.run_rubric(infos[0])) if stored else {}), **found}


def _labels(infos: Sequence[RunInfo], labels_file: Path | None, suite_file: Path | None,
            workspace: Workspace, notes: list[str]) -> dict[str, HumanLabel]:
    if labels_file is None:
        return people_labels(infos, suite_file, workspace, notes)
    labels = read_labels(labels_file, "give a labels file written by `judge review RUN --export`",
                         workspace.sealer)
    return human_labels(labels, workspace.rubric(infos[0].rubric))


def _reviewer_labels(infos: Sequence[RunInfo], labels_file: Path | None,
                     suite_file: Path | None, workspace: Workspace) -> list[Label]:
    """Each reviewer's own labels: the file given, else the one beside the suite."""
    if labels_file is not None:
        return read_labels(labels_file, "give a labels file written by `judge review RUN "
                                        "--export`", workspace.sealer)
    path = suite_file or next((p for i in infos if (p := run_suite_file(i, workspace))), None)
    if path is None or not labels_path(path).is_file():
        return _stored_labels(infos, workspace)
    return read_labels(labels_path(path), "check the file", workspace.sealer)


def _stored_labels(infos: Sequence[RunInfo], workspace: Workspace) -> list[Label]:
    """The labels the review page saved in the run store for the runs' suite."""
    with workspace.open_store() as store:
        return LabelStore(store).of_suite(infos[0].suite)


def _runs(workspace: Workspace, run_ids: Sequence[str], suite_file: Path | None,
          ) -> list[RunInfo]:
    with workspace.open_store() as store:
        if run_ids:
            infos = [store.get_run(r) for r in run_ids]
        else:
            suite_id = None
            if suite_file is not None:
                from ...system.resources import open_suite
                suite_id = open_suite(suite_file).id
            else:
                newest = store.list_runs(limit=1)
                if not newest:
                    raise UsageError("the store has no run", fix="judge a suite first "
                                     "(judge run SUITE), then judge judges agreement")
                suite_id = newest[0].suite
            infos = store.list_runs(suite=suite_id, limit=HISTORY_RUNS)
            if not infos:
                raise UsageError(f"no stored run of suite {suite_id!r}",
                                 fix="judge the suite first (judge run SUITE)")
    suites = {i.suite for i in infos}
    if len(suites) > 1:
        raise UsageError("the runs are from different suites: " + ", ".join(
            f"{i.id} judged {i.suite!r}" for i in infos),
            fix="give runs of one suite; `judge runs list SUITE` lists them")
    if len({i.id for i in infos}) < len(infos):
        raise UsageError("a run is given twice", fix="give each run once")
    return sorted(infos, key=lambda i: (i.created_at, i.id))


def _interval(stats: PairStats, name: str) -> Interval | None:
    return wire_value(stats.intervals, name) if stats.intervals is not None else None


def _movements(rows: Sequence[AgreementRow]) -> list[StatisticMove]:
    found: list[StatisticMove] = []
    for a, b in pairwise(rows):
        changed = tuple(what for what, differs in (
            ("model", a.model != b.model),
            ("rubric", (a.rubric, a.rubric_hash) != (b.rubric, b.rubric_hash)),
            ("template", (a.template_id, a.template_hash) != (b.template_id, b.template_hash)))
            if differs)
        for name in TRACKED:
            before = wire_value(a.agreement.overall, name)
            after = wire_value(b.agreement.overall, name)
            ci = _interval(a.agreement.overall, name)
            beyond = None
            if after is not None and ci is not None and ci.low is not None \
                    and ci.high is not None:
                beyond = not ci.low <= after <= ci.high
            found.append(StatisticMove(
                from_run=a.run_id, to_run=b.run_id, from_model=a.model, to_model=b.model,
                statistic=name, before=before, after=after,
                change=None if before is None or after is None else after - before,
                beyond_interval=beyond, changed=changed))
    return found


def agreement_op(workspace: Workspace, run_ids: Sequence[str] = (), *,
                 labels_file: Path | None = None, suite_file: Path | None = None,
                 group_by: str | None = None,
                 system_by: str | None = None) -> AgreementHistory:
    """Each judge of each run against the people's labels, oldest run first.

    ``group_by``/``system_by`` add the group and system levels (case fields of the suite).
    UsageError (exit 2, nothing written) when there are no labels, or no run scored a
    labelled case.
    """
    infos = _runs(workspace, run_ids, suite_file)
    notes: list[str] = []
    labels = _labels(infos, labels_file, suite_file, workspace, notes)
    grouping = suite_grouping(infos, suite_file, workspace, group_by, system_by)
    reviewers = _reviewer_labels(infos, labels_file, suite_file, workspace)
    suite = infos[0].suite
    if not labels:
        raise UsageError(f"no people's labels for suite {suite!r}"
                         + (f" ({'; '.join(notes)})" if notes else ""), fix=NO_LABELS_FIX)
    rows: list[AgreementRow] = []
    with workspace.open_store() as store:
        for info in infos:
            results = list(store.iter_results(info.id))
            bands = run_bands(info, workspace, notes)
            for model in info.models:
                mine = judge_results(results, model)
                comparison = compare_runs({model: mine}, bands,
                                          human=labels, intervals=True, grouping=grouping)
                (human,) = comparison.human
                if human.labelled == 0:
                    notes.append(f"run {info.id} ({model}) scored no labelled case: left out")
                    continue
                rows.append(AgreementRow(
                    run_id=info.id, created_at=info.created_at, model=model,
                    rubric=info.rubric, rubric_hash=info.rubric_hash,
                    template_id=info.template_id, template_hash=info.template_hash,
                    agreement=human, review_page=review_link(info.id),
                    people=people_agreement(reviewers, workspace.run_rubric(info),
                                            judged_cases(mine), grouping)
                    if reviewers else ()))
    if not rows:
        raise UsageError(f"no run of suite {suite!r} scored a labelled case "
                         f"({len(labels)} labelled)",
                         fix="judge the suite (judge run SUITE) or label cases it judges")
    return AgreementHistory(suite=suite, labelled=len(labels), rows=tuple(rows),
                            movements=tuple(_movements(rows)), notes=tuple(notes))


class RunAgreement(Frozen):
    """A run's headline results against the people's labels in the store (``history --agreement``).

    On the overall scores, each with the seeded bootstrap 95 % interval ``judge judges agreement``
    gives the same run and labels (the same :func:`judge.core.stats.agreement.compare_runs`).
    """

    run_id: str = Field(alias="runId")
    judge: str
    """The run's headline judge (a model, or the panel's aggregate)."""
    labelled: int
    """Cases of the suite the store holds people's labels for."""
    n: int
    """Of them, the cases this run scored."""
    weighted_kappa: float | None = Field(alias="weightedKappa")
    mean_abs_diff: float | None = Field(alias="meanAbsDiff")
    exact_band_agreement: float | None = Field(alias="exactBandAgreement")
    spearman_rho: float | None = Field(alias="spearmanRho")
    intervals: StatIntervals | None = None
    """The statistics' bootstrap intervals over cases (None where one is undefined)."""


def stored_agreement(workspace: Workspace, infos: Sequence[RunInfo],
                     ) -> dict[str, RunAgreement | None]:
    """Each run's headline judge against its suite's labels in the run store, by run id.

    None for a run whose suite has no stored label, no model judged, or whose rubric is gone
    (the labels are read on its scale). One read of the labels per suite, one of the
    results per run, and the bootstrap of the overall scores only (``intervals="overall"``:
    the values ``judge judges agreement`` gives, without its per-category intervals: ~0.25 s of
    CPU a run, where every statistic's bootstrap measured 38.9 s over 20 runs).
    """
    out: dict[str, RunAgreement | None] = {}
    with workspace.open_store() as store:
        by_suite: dict[str, list[Label]] = {}
        for info in infos:
            labels = by_suite.get(info.suite)
            if labels is None:
                labels = by_suite[info.suite] = LabelStore(store).of_suite(info.suite)
            if not labels:
                out[info.id] = None
                continue
            try:
                rubric = workspace.run_rubric(info)
            except ConfigError:
                out[info.id] = None
                continue
            human = human_labels(labels, rubric)
            judge = headline_of(info)[0]
            if judge is None:  # no model judged the run: nothing to set against the people
                out[info.id] = None
                continue
            comparison = compare_runs({judge: headline_results(store, info)}, rubric.bands,
                                      human=human, intervals="overall")
            (h,) = comparison.human
            s = h.overall
            out[info.id] = RunAgreement(
                run_id=info.id, judge=judge, labelled=len(human), n=s.n,
                weighted_kappa=s.weighted_kappa, mean_abs_diff=s.mean_abs_diff,
                exact_band_agreement=s.exact_band_agreement, spearman_rho=s.spearman_rho,
                intervals=s.intervals)
    return out
