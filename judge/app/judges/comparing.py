"""How far judges agree (``judge compare``): for deciding on a judge, template or rubric swap.

Two or more runs of one suite (another judge model, template or rubric), or one panel run,
are compared judge by judge; the statistics are :func:`judge.core.stats.agreement.compare_runs`.
This operation gathers what they need: each judge's results and name, each run's band scale
(from its rubric), and the suite's human labels, and says in ``notes`` what it could not
find.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...core.formats.labels import human_labels
from ...core.formats.models import CaseResult, RunInfo
from ...core.formats.rubric import DEFAULT_BANDS, Band, Rubric, rubric_hash
from ...core.formats.suite import HumanLabel
from ...core.stats.agreement import Comparison, compare_runs
from ...core.stats.levels import Grouping, case_keys, parse_field
from ...core.text.errors import ConfigError, UsageError
from ...core.text.seals import Sealer
from ...system.resources import open_suite
from ..workspace.workspace import Workspace
from .reviewing import labels_path, read_labels, run_suite_file

__all__ = ["MIN_PREFIX", "compare_runs_op", "judge_names", "judge_results",
           "labels_file_labels", "run_bands", "short_ids", "suite_grouping",
           "suite_human_labels"]

MIN_PREFIX = 8
"""Shortest run-id prefix used in a judge's name."""


def compare_runs_op(workspace: Workspace, run_ids: Sequence[str],
                    suite_file: Path | None = None, *, group_by: str | None = None,
                    system_by: str | None = None) -> Comparison:
    """Compare the judges of the stored runs ``run_ids`` (ids or unique prefixes).

    ``suite_file`` holds the human labels (default: the runs' suite file, when it is still
    there); ``group_by``/``system_by`` name the case fields of the group and system levels
    (:func:`judge.core.stats.levels.parse_field`). A lone judge with people's labels is compared
    with the people; UsageError for a run given twice, runs of different suites, or a lone
    judge without labels.
    """
    with workspace.open_store() as store:
        infos = [store.get_run(r) for r in run_ids]
        _check_runs(infos)
        judges = [(info, model) for info in infos for model in info.models]
        results = {info.id: list(store.iter_results(info.id)) for info in infos}
    notes = [f"run {info.id} is {info.status}: its missing cases are counted as missing"
             for info in infos if info.status != "complete"]
    human = suite_human_labels(infos, suite_file, workspace, notes)
    if len(judges) < 2 and not human:
        only = infos[0]
        raise UsageError(f"run {only.id} has one judge ({only.models[0]}) and its suite no "
                         f"people's labels: nothing to compare",
                         fix="give two runs of the suite (judge compare RUN_A RUN_B), compare "
                             "a panel run (judge run --model A --model B), or label cases "
                             f"(judge review {only.id}) and run judge judges agreement {only.id}")
    names = judge_names(judges)
    scales = {info.id: run_bands(info, workspace, notes) for info in infos}
    named = {name: judge_results(results[info.id], model)
             for name, (info, model) in zip(names, judges, strict=True)}
    comparison = compare_runs(
        named, scales[infos[0].id], human=human, intervals=True,
        judge_bands={name: scales[info.id] for name, (info, _) in zip(names, judges,
                                                                        strict=True)},
        grouping=suite_grouping(infos, suite_file, workspace, group_by, system_by))
    counts = tuple(c.model_copy(update={"run_id": info.id, "model": model})
                   for c, (info, model) in zip(comparison.judges, judges, strict=True))
    return comparison.model_copy(update={"judges": counts,
                                         "notes": (*notes, *comparison.notes)})


def _check_runs(infos: Sequence[RunInfo]) -> None:
    seen: set[str] = set()
    for info in infos:
        if info.id in seen:
            raise UsageError(f"run {info.id} is given twice", fix="give each run once")
        seen.add(info.id)
    suites = {info.suite for info in infos}
    if len(suites) > 1:
        listed = ", ".join(f"{i.id} judged suite {i.suite!r}" for i in infos)
        raise UsageError(f"the runs are from different suites: {listed}",
                         fix="compare runs of one suite; `judge runs list SUITE` lists them")


def judge_names(judges: Sequence[tuple[RunInfo, str]]) -> list[str]:
    """Readable, unique names for (run, model) judges.

    The model alone when every judge's model differs; otherwise the shortest unique run-id
    prefix, plus whatever else tells the judges apart (model, rubric, template).
    """
    models = [model for _, model in judges]
    if len(set(models)) == len(models):
        return models
    runs = {info.id: info for info, _ in judges}
    prefix = short_ids(list(runs))
    rubrics = {(i.rubric, i.rubric_hash) for i in runs.values()}
    templates = {(i.template_id, i.template_hash) for i in runs.values()}
    names = []
    for info, model in judges:
        parts = [prefix[info.id]]
        if len(set(models)) > 1:
            parts.append(model)
        if len(rubrics) > 1:
            same_id = len({r for r, _ in rubrics}) == 1
            parts.append(f"{info.rubric}@{info.rubric_hash[:8]}" if same_id else info.rubric)
        if len(templates) > 1:
            same_id = len({t for t, _ in templates}) == 1
            parts.append(f"{info.template_id}@{info.template_hash[:8]}" if same_id
                         else info.template_id)
        if len(parts) == 1:
            parts.append(model)
        names.append(":".join(parts))
    if len(set(names)) < len(names):
        return [f"{info.id}:{model}" for info, model in judges]
    return names


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """The shortest prefix (at least :data:`MIN_PREFIX` characters) that tells the ids apart."""
    longest = max(len(i) for i in ids)
    for length in range(min(MIN_PREFIX, longest), longest + 1):
        if len({i[:length] for i in ids}) == len(ids):
            return {i: i[:length] for i in ids}
    return {i: i for i in ids}


def judge_results(results: Sequence[CaseResult], model: str) -> list[CaseResult]:
    """A judge's own results, plus the run's deterministic ones (counted, never compared)."""
    return [r for r in results if r.judge is None or r.judge.model == model]


def run_bands(info: RunInfo, workspace: Workspace, notes: list[str]) -> tuple[Band, ...]:
    """The band scale of the run's rubric (the default scale when the file is gone)."""
    try:
        rubric = workspace.run_rubric(info)
    except ConfigError:
        notes.append(f"rubric {info.rubric!r} of run {info.id} is not found: bands are read "
                     f"on the default scale")
        return DEFAULT_BANDS
    if rubric_hash(rubric) != info.rubric_hash:
        notes.append(f"rubric {info.rubric!r} changed since run {info.id}: bands of AI scores "
                     f"are read on the current file's scale")
    return rubric.bands


def suite_human_labels(infos: Sequence[RunInfo], explicit: Path | None, workspace: Workspace,
                       notes: list[str]) -> dict[str, HumanLabel]:
    """The people's labels by case id: the suite's ``human:`` fields and its labels file.

    ``explicit`` names the suite file (default: the runs' own, where it still is); a missing
    default file, or one that does not load, is a note in ``notes``.
    """
    suite_id = infos[0].suite
    path = _suite_path(infos, explicit, workspace)
    if path is None:
        notes.append(f"suite file of {suite_id!r} not found: no agreement with human labels "
                     f"(pass --suite FILE)")
        return {}
    try:
        source = open_suite(path)
        if source.id != suite_id:
            raise UsageError(f"suite file {path} is suite {source.id!r}, the runs judged "
                             f"{suite_id!r}", fix="pass the runs' suite with --suite")
        found = {c.id: c.human for c in source.cases() if c.human is not None}
        return {**found, **_labels_file(path, infos[0], workspace)}
    except ConfigError as exc:
        if explicit is not None:
            raise
        notes.append(f"human labels not read: {exc.message}")
        return {}


def _suite_path(infos: Sequence[RunInfo], explicit: Path | None,
                workspace: Workspace) -> Path | None:
    """The suite file given, else the runs' own where it still is."""
    return explicit or next((there for info in infos
                             if (there := run_suite_file(info, workspace)) is not None), None)


def suite_grouping(infos: Sequence[RunInfo], explicit: Path | None, workspace: Workspace,
                   group_by: str | None, system_by: str | None) -> Grouping | None:
    """Each case's group and system from the runs' suite (None without either field).

    UsageError when a field is named and the suite file is not found, or names another suite.
    """
    if group_by is None and system_by is None:
        return None
    group = parse_field(group_by, "--group-by") if group_by else None
    system = parse_field(system_by, "--system-by") if system_by else None
    path = _suite_path(infos, explicit, workspace)
    if path is None:
        raise UsageError(f"suite file of {infos[0].suite!r} not found: its cases name the "
                         f"groups and systems", fix="pass the suite with --suite FILE")
    source = open_suite(path)
    if source.id != infos[0].suite:
        raise UsageError(f"suite file {path} is suite {source.id!r}, the runs judged "
                         f"{infos[0].suite!r}", fix="pass the runs' suite with --suite")
    return case_keys(source.cases(), group, system)


def _labels_file(suite_file: Path, info: RunInfo, workspace: Workspace) -> dict[str, HumanLabel]:
    """The review page's labels beside the suite (``<suite>.labels.jsonl``), when present.

    They are the suite's human labels too, and win over a case's inline ``human:``.
    """
    if not labels_path(suite_file).exists():
        return {}
    return labels_file_labels(suite_file, workspace.run_rubric(info), workspace.sealer)


def labels_file_labels(suite_file: Path, rubric: Rubric,
                       sealer: Sealer) -> dict[str, HumanLabel]:
    """The people's labels of the labels file beside ``suite_file``, read on ``rubric``.

    Empty when there is no such file; UsageError (or LabelsError) when it cannot be read or
    its seals do not verify.
    """
    path = labels_path(suite_file)
    if not path.exists() and not path.is_symlink():
        return {}
    return human_labels(read_labels(path, "check the file", sealer), rubric)
