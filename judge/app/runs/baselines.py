"""Baselines: check a stored run against its suite's baseline, record one, show and list them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...core.formats.suite import check_suite_id
from ...core.outcomes.baseline import Baseline, baseline_text, parse_baseline
from ...core.text.errors import ConfigError, NoBaselineError
from ...system.baseline_files import (
    baseline_file_text,
    list_baselines,
    load_baseline,
    save_baseline,
)
from ...system.resources import load_suite
from ..workspace.workspace import Workspace
from .gate import (
    GateVerdict,
    gate,
    headline_results,
    make_baseline,
    measured_spreads,
    noise_of_run,
)
from .gate import resolve_threshold as _threshold
from .stored import pick_complete_run

__all__ = [
    "BaselineEntry",
    "BaselineRecord",
    "check_baseline_file",
    "check_run",
    "list_suite_baselines",
    "record_baseline",
    "seal_baseline",
    "show_baseline",
    "suite_id_of",
]


def suite_id_of(value: str) -> str:
    """A suite id as given, or the id of the suite file ``value`` names."""
    if value.endswith((".yaml", ".yml", ".jsonl")) or _is_file(value):
        return load_suite(value).id
    return check_suite_id(value, "--suite")


def _is_file(value: str) -> bool:
    try:
        return Path(value).is_file()
    except OSError:  # a name too long for the file system names no file
        return False


def check_baseline_file(workspace: Workspace, path: Path | None) -> None:
    """Read and validate a ``--baseline FILE`` before the store is opened.

    Missing or malformed, it is refused (exit 2) having written nothing.
    """
    if path is not None and not path.exists():
        raise ConfigError("no such baseline file", file=str(path),
                          fix="check the path, or drop --baseline to use baselines/<suite>.json")
    if path is not None:
        load_baseline(path, sealer=workspace.sealer)


def check_run(workspace: Workspace, run_id: str | None = None, *, suite: str | None = None,
              baseline_file: Path | None = None, across_judges: bool = False) -> GateVerdict:
    """The gate for a stored run (default: the suite's, or the store's, latest complete run).

    A baseline recorded by another judge is compared only with ``across_judges``.
    """
    suite_id = suite_id_of(suite) if suite else None
    check_baseline_file(workspace, baseline_file)
    with workspace.open_store() as store:
        run = pick_complete_run(store, run_id, suite_id)
        results = headline_results(store, run)
    return gate(workspace, run, results, baseline_file=baseline_file,
                across_judges=across_judges)


@dataclass(frozen=True)
class BaselineRecord:
    """A baseline written to ``path``; ``changed`` False when the file already said the same."""

    path: Path
    baseline: Baseline
    changed: bool
    run: str
    replaced_unreadable: str | None = None
    """The error of an unreadable file this baseline replaced, if any."""


def record_baseline(workspace: Workspace, suite: str, run_id: str | None = None) -> BaselineRecord:
    """Record a run (default: the suite's latest complete run) as the suite's baseline.

    A ``--samples K`` run records each case's spread (the judge's measured noise); otherwise
    an existing baseline's spreads are kept, and so is its threshold unless a setting gives one.
    """
    suite_id = suite_id_of(suite)
    path = workspace.baseline_path(suite_id)
    previous: Baseline | None = None
    old_text: str | None = None
    unreadable: str | None = None
    if path.exists():
        try:
            old_text = baseline_file_text(path)
            previous = parse_baseline(old_text, str(path), workspace.sealer)
        except ConfigError as exc:
            unreadable = str(exc)
    with workspace.open_store() as store:
        run = pick_complete_run(store, run_id, suite_id)
        results = headline_results(store, run)
    present = {r.id for r in results}
    spreads = {} if previous is None else {
        case_id: case.spread for case_id, case in previous.cases.items()
        if case.spread is not None and case_id in present}
    spreads.update(measured_spreads(results))
    baseline = make_baseline(run, results, _threshold(workspace, previous), spreads,
                             noise_of_run(workspace, run))
    save_baseline(path, baseline, sealer=workspace.sealer)
    return BaselineRecord(path=path, baseline=baseline,
                    changed=old_text != baseline_text(baseline, workspace.sealer),
                    run=run.id, replaced_unreadable=unreadable)


def seal_baseline(workspace: Workspace, suite: str) -> tuple[Path, Baseline, bool]:
    """Accept a hand edit of the suite's baseline on purpose: write its seals anew.

    Returns the path, the baseline and whether its seals had to change (under the team
    secret the file is sealed with it). The file must still be a valid baseline (its cases
    match its ``baselineId``); only the seals move.
    """
    suite_id = suite_id_of(suite)
    path = workspace.baseline_path(suite_id)
    if not path.exists():
        raise NoBaselineError(f"no baseline for suite {suite_id!r} at {path}",
                              fix=f"record one: `judge baseline record {suite_id}`")
    old = baseline_file_text(path)
    baseline = parse_baseline(old, str(path), check_digest=False)
    new = baseline_text(baseline, workspace.sealer)
    if new != old:
        save_baseline(path, baseline, sealer=workspace.sealer)
    return path, baseline, new != old


def show_baseline(workspace: Workspace, suite: str) -> tuple[Path, Baseline]:
    """The suite's baseline and where it lives; NoBaselineError (a UsageError) if none."""
    suite_id = suite_id_of(suite)
    path = workspace.baseline_path(suite_id)
    if not path.exists():
        raise NoBaselineError(f"no baseline for suite {suite_id!r} at {path}",
                         fix=f"record one: `judge baseline record {suite_id}`")
    return path, load_baseline(path, sealer=workspace.sealer)


@dataclass(frozen=True)
class BaselineEntry:
    """One file of the baselines folder: its baseline, or why it cannot be read."""

    suite: str
    path: Path
    baseline: Baseline | None
    error: str | None = None


def list_suite_baselines(workspace: Workspace) -> list[BaselineEntry]:
    """Every baseline file in the workspace's folder, by suite id."""
    out = []
    for stem, path in list_baselines(workspace.baselines_dir).items():
        try:
            b = load_baseline(path, sealer=workspace.sealer)
        except ConfigError as exc:
            out.append(BaselineEntry(suite=stem, path=path, baseline=None, error=exc.render()))
            continue
        out.append(BaselineEntry(suite=b.suite, path=path, baseline=b))
    return out
