"""The review loop's operations: the page's data, labels saved, exported, imported, what next.

Every door (``judge review``, ``judge workspace serve``) calls
these; they print nothing.

Labels live in the run store (:class:`judge.store.labels.LabelStore`) and in the labels
file beside the suite (:func:`labels_path`), which ``judge compare`` and ``judge judges calibrate``
read as the suite's human labels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from ...core.formats.labels import (
    GivenLabel,
    Label,
    LabelsError,
    check_label,
    dump_labels,
    parse_labels,
    pick_next,
    reviewer_alpha,
)
from ...core.formats.limits import MAX_LABELS_BYTES
from ...core.formats.models import CaseResult, RunInfo
from ...core.formats.rubric import Rubric
from ...core.outcomes.baseline import pick_primary
from ...core.scoring.panel import SAMPLE_AGGREGATE, headline_of, member_sample
from ...core.stats.raters import people_agreement
from ...core.text.errors import UsageError
from ...core.text.seals import Sealer
from ...report.transcripts import transcripts
from ...store.labels import LabelStore
from ...store.runs import RunStore
from ...system.atomic_files import write_atomic
from ...system.clock import utc_now
from ...system.input_files import read_input
from ...system.resources import open_suite
from ..workspace.workspace import Workspace

__all__ = [
    "export_labels",
    "import_labels",
    "labels_path",
    "next_cases",
    "read_labels",
    "review_page_data",
    "run_suite_file",
    "save_labels",
]


def labels_path(suite_file: Path) -> Path:
    """The labels file beside a suite: ``<suite stem>.labels.jsonl``."""
    return suite_file.with_name(f"{suite_file.stem}.labels.jsonl")


def read_labels(path: Path, fix: str, sealer: Sealer | None) -> list[Label]:
    """The labels of the file at ``path``; UsageError (with ``fix``) when it cannot be read.

    A regular file within MAX_LABELS_BYTES, strict JSON lines, its seals checked
    (:func:`judge.core.formats.labels.parse_labels`; not with ``sealer`` None).
    """
    try:
        text = read_input(path, UsageError, MAX_LABELS_BYTES)
    except UsageError as exc:
        place = f" ({exc.where})" if exc.where else ""
        raise UsageError(f"cannot read labels file {path}: "
                         f"{exc.message.removeprefix('cannot read: ')}{place}", fix=fix) from None
    return parse_labels(text, str(path), sealer)


def run_suite_file(info: RunInfo, workspace: Workspace) -> Path | None:
    """The run's suite file where it still is (relative: the cwd, then the workspace)."""
    if not info.suite_path:
        return None
    path = Path(info.suite_path)
    for candidate in [path] if path.is_absolute() else [Path.cwd() / path,
                                                        workspace.root / path]:
        if candidate.is_file():
            return candidate
    return None


def _headline(info: RunInfo, results: Sequence[CaseResult]) -> tuple[list[CaseResult],
                                                                      dict[str, CaseResult]]:
    """The run's headline results, and by case the other judge that differs most.

    The headline is what the gate compares (:func:`pick_primary`): the panel, else the judge's
    sample aggregate of a ``--samples`` run, else its one judgment. The other judges stand
    by their own headline (their sample aggregate with K samples).
    """
    model = headline_of(info)[0]
    head = pick_primary(results, model)
    by_id = {r.id: r for r in head}
    sample = member_sample(info.samples)
    other: dict[str, CaseResult] = {}
    for r in results:
        if r.judge is None or r.judge.model == model or r.judge.sample != sample \
                or r.overall_score is None or r.id not in by_id:
            continue
        mine = by_id[r.id].overall_score
        best = other.get(r.id)
        if mine is not None and (best is None or abs(r.overall_score - mine)
                                 > abs((best.overall_score or 0) - mine)):
            other[r.id] = r
    return head, other


class _Combined(TypedDict):
    """What a headline result combines: ``mean`` of 3 ``samples``, ``median`` of 2 ``judges``."""

    method: str
    of: str
    count: int


def _combined(result: CaseResult) -> _Combined | None:
    judge = result.judge
    if judge is None or judge.aggregate is None:
        return None
    return {"method": judge.aggregate, "count": len(judge.members),
            "of": "samples" if judge.sample == SAMPLE_AGGREGATE else "judges"}


class _Band(TypedDict):
    name: str
    min: int
    max: int


class _Level(TypedDict):
    name: str
    value: float


class _Category(TypedDict):
    id: str
    definition: str


class _Scale(TypedDict):
    """What the review page draws its scale from."""

    style: str
    bands: list[_Band]
    levels: list[_Level]
    categories: list[_Category]


def _scale(rubric: Rubric) -> _Scale:
    return {"style": rubric.style,
            "bands": [{"name": b.name, "min": b.min, "max": b.max} for b in rubric.bands],
            "levels": [{"name": lv.name, "value": lv.value} for lv in rubric.levels],
            "categories": [{"id": c.id, "definition": c.definition}
                           for c in rubric.categories]}


def review_page_data(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """What the review page shows of a run: the scale, every case, the labels so far.

    JSON door: the document the page's script reads (``GET /api/review/RUN``).
    """
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        results = list(store.iter_results(info.id))
        labels = LabelStore(store).of_suite(info.suite)
    rubric = workspace.run_rubric(info)
    head, other = _headline(info, results)
    suite_file = run_suite_file(info, workspace)
    source = open_suite(suite_file, values=workspace.secret_pattern) if suite_file else None
    cases = {c.id: c for c in source.cases()} if source is not None else {}
    shown = transcripts((cases[r.id] for r in head if r.id in cases), head)
    rows = []
    for r in head:
        case = cases.get(r.id)
        o = other.get(r.id)
        seen = shown.get(r.id)
        rows.append({
            "id": r.id, "status": r.status, "overallScore": r.overall_score, "band": r.band,
            "combined": _combined(r), "spread": r.spread,
            "input": case.input if case else None, "output": case.output if case else None,
            "evidence": [e.model_dump(mode="json") for e in r.evidence],
            "categories": [c.model_dump(mode="json") for c in r.category_scores],
            "transcript": None if seen is None else seen.model_dump(mode="json"),
            "other": None if o is None else {
                "model": o.judge.model if o.judge else None, "overallScore": o.overall_score,
                "categories": {c.category: c.ai_score for c in o.category_scores}},
        })
    return {"run": {"id": info.id, "suite": info.suite, "rubric": info.rubric,
                    "models": list(info.models)},
            "scale": _scale(rubric), "cases": rows,
            "labels": [lb.model_dump(mode="json") for lb in labels],
            "alpha": reviewer_alpha(labels, rubric),
            "people": [p.model_dump(mode="json") for p in people_agreement(
                labels, rubric, {r.id: r for r in head if r.judge is not None})]}


def save_labels(workspace: Workspace, run_id: str, given: Sequence[GivenLabel], *,
                reviewer: str, now: Callable[[], str] = utc_now) -> list[Label]:
    """Store labels the page sent for cases of ``run_id``; each carries who and when."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        rubric = workspace.run_rubric(info)
        cases = store.case_ids(info.id)
        at = now()
        labels = []
        for item in given:
            label = Label.model_validate({**item.model_dump(), "suite": info.suite,
                                          "reviewer": reviewer, "at": at, "run": info.id})
            check_label(label, rubric, "<review page>")
            _check_case(label, cases, info, "<review page>")
            labels.append(label)
        LabelStore(store).save(labels)
    return labels


def _check_case(label: Label, cases: set[str], info: RunInfo, source: str) -> None:
    """Refuse a label of a case the run (or its suite) does not have."""
    if label.case not in cases:
        raise LabelsError(f"case {label.case!r} is not a case of suite {info.suite!r} "
                          f"(run {info.id})", file=source, where=f"case {label.case!r}",
                          fix="label the cases of the run under review; check the case id")


def _suite_file_of(workspace: Workspace, info: RunInfo) -> Path:
    path = run_suite_file(info, workspace)
    if path is None:
        raise UsageError(f"the suite file of run {info.id} ({info.suite_path!r}) is not found",
                         fix="run from the folder the run was made in, or pass --labels FILE")
    return path


def export_labels(workspace: Workspace, run_id: str, out: Path | None = None) -> Path:
    """Write the suite's labels from the store to the labels file (sealed JSON lines)."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        labels = LabelStore(store).of_suite(info.suite)
    target = out or labels_path(_suite_file_of(workspace, info))
    write_atomic(target, dump_labels(labels, workspace.sealer))
    return target


def import_labels(workspace: Workspace, run_id: str, file: Path | None = None, *,
                  allow_unsealed: bool = False) -> int:
    """Read a labels file into the store (idempotent); returns how many labels changed.

    The file is read (strict, bounded, its seals checked unless ``allow_unsealed``: a file
    made by hand or another tool, taken on purpose) before the store is opened when it is
    named; each label must be of a category of the run's rubric and a case of its suite.
    """
    labels = None if file is None else _read_import(workspace, file, allow_unsealed)
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        source = file or labels_path(_suite_file_of(workspace, info))
        if labels is None:
            labels = _read_import(workspace, source, allow_unsealed)
        rubric = workspace.run_rubric(info)
        cases = _known_cases(store, info, workspace)
        for lb in labels:
            check_label(lb, rubric, str(source))
            if lb.suite == info.suite:
                _check_case(lb, cases, info, str(source))
        foreign = [lb for lb in labels if lb.suite != info.suite]
        if foreign:
            raise UsageError(f"{source}: label of suite {foreign[0].suite!r}, run {info.id} "
                             f"judged {info.suite!r}", fix="import it with a run of its suite")
        return LabelStore(store).save(labels)


def _read_import(workspace: Workspace, file: Path, allow_unsealed: bool) -> list[Label]:
    return read_labels(file, "check the path", None if allow_unsealed else workspace.sealer)


def _known_cases(store: RunStore, info: RunInfo, workspace: Workspace) -> set[str]:
    """The case ids a label of ``info``'s suite may name: the run's, and its suite file's."""
    cases = store.case_ids(info.id)
    suite_file = run_suite_file(info, workspace)
    if suite_file is not None:
        cases.update(c.id for c in open_suite(suite_file).cases())
    return cases


def next_cases(workspace: Workspace, run_id: str, n: int) -> list[tuple[str, str]]:
    """The ``n`` unlabelled cases of the run whose labels would tell most, with why."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        results = list(store.iter_results(info.id))
        labelled = {lb.case for lb in LabelStore(store).of_suite(info.suite)}
    head, other = _headline(info, results)
    return pick_next(head, workspace.run_rubric(info), n, labelled=labelled, other=other)
