"""The review loop's operations: the page's data, labels saved, exported, imported, what next.

Every door (``judge review``, ``judge serve``) calls
these; they print nothing.

Labels live in the run store (:class:`judge.store.labels.LabelStore`) and in the labels
file beside the suite (:func:`labels_path`), which ``judge compare`` and ``judge calibrate``
read as the suite's human labels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.labels import (
    Label,
    check_label,
    dump_labels,
    parse_labels,
    pick_next,
    reviewer_alpha,
)
from ..core.models import CaseResult, RunInfo
from ..core.panel import headline_of
from ..core.rubric import Rubric
from ..report.transcripts import transcripts
from ..store.labels import LabelStore
from ..system.atomic_files import write_atomic
from ..system.clock import utc_now
from ..system.resources import open_suite
from .workspace import Workspace

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


def read_labels(path: Path, fix: str) -> list[Label]:
    """The labels of the file at ``path``; UsageError (with ``fix``) when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read labels file {path}: {exc}", fix=fix) from None
    return parse_labels(text, str(path))


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
    """The headline judge's results, and by case the other judge that differs most."""
    model, sample = headline_of(info)
    head = [r for r in results if r.judge is None
            or (r.judge.model == model and r.judge.sample == sample
                and r.judge.aggregate is None)]
    by_id = {r.id: r for r in head}
    other: dict[str, CaseResult] = {}
    for r in results:
        if r.judge is None or r.judge.model == model or r.judge.sample != 0 \
                or r.overall_score is None or r.id not in by_id:
            continue
        mine = by_id[r.id].overall_score
        best = other.get(r.id)
        if mine is not None and (best is None or abs(r.overall_score - mine)
                                 > abs((best.overall_score or 0) - mine)):
            other[r.id] = r
    return head, other


def _scale(rubric: Rubric) -> dict[str, Any]:
    return {"style": rubric.style,
            "bands": [{"name": b.name, "min": b.min, "max": b.max} for b in rubric.bands],
            "levels": [{"name": lv.name, "value": lv.value} for lv in rubric.levels],
            "categories": [{"id": c.id, "definition": c.definition}
                           for c in rubric.categories]}


def review_page_data(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """What the review page shows of a run: the scale, every case, the labels so far."""
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
            "alpha": reviewer_alpha(labels, rubric)}


def save_labels(workspace: Workspace, run_id: str, given: Sequence[dict[str, Any]], *,
                reviewer: str, now: Callable[[], str] = utc_now) -> list[Label]:
    """Store labels the page sent for cases of ``run_id``; each carries who and when."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        rubric = workspace.run_rubric(info)
        at = now()
        labels = []
        for item in given:
            label = Label.model_validate({**item, "suite": info.suite, "reviewer": reviewer,
                                          "at": at, "run": info.id})
            check_label(label, rubric, "<review page>")
            labels.append(label)
        LabelStore(store).save(labels)
    return labels


def _suite_file_of(workspace: Workspace, info: RunInfo) -> Path:
    path = run_suite_file(info, workspace)
    if path is None:
        raise UsageError(f"the suite file of run {info.id} ({info.suite_path!r}) is not found",
                         fix="run from the folder the run was made in, or pass --labels FILE")
    return path


def export_labels(workspace: Workspace, run_id: str, out: Path | None = None) -> Path:
    """Write the suite's labels from the store to the labels file (sorted JSON lines)."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        labels = LabelStore(store).of_suite(info.suite)
    target = out or labels_path(_suite_file_of(workspace, info))
    write_atomic(target, dump_labels(labels))
    return target


def import_labels(workspace: Workspace, run_id: str, file: Path | None = None) -> int:
    """Read a labels file into the store (idempotent); returns how many labels changed."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        source = file or labels_path(_suite_file_of(workspace, info))
        labels = read_labels(source, "check the path")
        rubric = workspace.run_rubric(info)
        for lb in labels:
            check_label(lb, rubric, str(source))
        foreign = [lb for lb in labels if lb.suite != info.suite]
        if foreign:
            raise UsageError(f"{source}: label of suite {foreign[0].suite!r}, run {info.id} "
                             f"judged {info.suite!r}", fix="import it with a run of its suite")
        return LabelStore(store).save(labels)


def next_cases(workspace: Workspace, run_id: str, n: int) -> list[tuple[str, str]]:
    """The ``n`` unlabelled cases of the run whose labels would tell most, with why."""
    with workspace.open_store() as store:
        info = store.get_run(run_id)
        results = list(store.iter_results(info.id))
        labelled = {lb.case for lb in LabelStore(store).of_suite(info.suite)}
    head, other = _headline(info, results)
    return pick_next(head, workspace.run_rubric(info), n, labelled=labelled, other=other)
