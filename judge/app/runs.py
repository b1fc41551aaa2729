"""Stored runs: find one, read its results, list a suite's history, export (no model, no cache)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import UsageError
from ..files import atomic_writer
from ..models import CaseResult, RunInfo
from ..store import RunStore
from .exporting import ExportFormat, write_export
from .workspace import Workspace

__all__ = [
    "ExportReport",
    "RunHistory",
    "RunView",
    "export_run",
    "get_run",
    "is_failure",
    "iter_results",
    "list_runs",
    "pick_complete_run",
    "run_history",
    "show_run",
]


@dataclass(frozen=True)
class RunHistory:
    """Stored runs, newest first, and the store they are in (its URL with no password)."""

    runs: tuple[RunInfo, ...]
    store_url: str


@dataclass(frozen=True)
class RunView:
    """A stored run with its case results (only the failing ones when asked)."""

    run: RunInfo
    cases: tuple[CaseResult, ...]
    failures_only: bool = False


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: the run, how many results, and the file (None: a stream)."""

    run: RunInfo
    count: int
    path: Path | None = None


def is_failure(result: CaseResult) -> bool:
    """A case that failed or was not scored (what ``--failures`` keeps)."""
    return result.status != "scored" or result.passed is False


def get_run(workspace: Workspace, run_id: str) -> RunInfo:
    """The run with this id or unique prefix; StoreError when unknown."""
    with workspace.open_store() as store:
        return store.get_run(run_id)


def iter_results(workspace: Workspace, run_id: str) -> Iterator[CaseResult]:
    """The run's stored results in case order, streamed (the store closes at the end)."""
    with workspace.open_store() as store:
        yield from store.iter_results(run_id)


def list_runs(workspace: Workspace, suite: str | None = None, *,
              limit: int | None = 20) -> list[RunInfo]:
    """Stored runs, newest first."""
    with workspace.open_store() as store:
        return store.list_runs(suite, limit=limit)


def run_history(workspace: Workspace, suite: str | None = None, *,
                limit: int | None = 20) -> RunHistory:
    """Stored runs (of ``suite``), newest first, with the store's displayable URL."""
    with workspace.open_store() as store:
        return RunHistory(runs=tuple(store.list_runs(suite, limit=limit)), store_url=store.url)


def pick_complete_run(store: RunStore, run_id: str | None, suite: str | None) -> RunInfo:
    """The named run, or the newest complete run (of ``suite``); it must be complete."""
    if run_id:
        run = store.get_run(run_id)
        if suite is not None and run.suite != suite:
            raise UsageError(f"run {run.id} judged suite {run.suite!r}, not {suite!r}",
                             fix="name a run of that suite, or drop the suite")
    else:
        latest = store.latest_run(suite, status="complete")
        if latest is None:
            what = f" of suite {suite!r}" if suite else ""
            raise UsageError(f"no complete run{what} in {store.url}",
                             fix="judge the suite first (`judge run SUITE`), or name a run")
        run = latest
    if run.status != "complete":
        raise UsageError(f"run {run.id} is {run.status}: a baseline or a gate needs a "
                         f"complete run, or cases would silently go missing",
                         fix="finish the run, or name a complete one (`judge history`)")
    return run


def show_run(workspace: Workspace, run_id: str, *, failures_only: bool = False) -> RunView:
    """The run with this id or prefix and its results (only failures with ``failures_only``)."""
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        cases = tuple(c for c in store.iter_results(run.id)
                      if not failures_only or is_failure(c))
    return RunView(run=run, cases=cases, failures_only=failures_only)


def export_run(workspace: Workspace, run_id: str, fmt: ExportFormat,
               sink: TextIO | Path) -> ExportReport:
    """Stream the run's results to ``sink`` (a text stream, or a file written atomically).

    The run is looked up first, so an unknown run creates no file; a file is written beside
    its destination and moved into place whole, so a failed export leaves nothing behind.
    """
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        results = store.iter_results(run.id)
        if not isinstance(sink, Path):
            return ExportReport(run=run, count=write_export(run, results, fmt, sink))
        try:
            with atomic_writer(sink, newline="") as fh:
                count = write_export(run, results, fmt, fh)
        except OSError as exc:
            raise UsageError(f"cannot write: {exc.strerror or exc}", file=str(sink),
                             fix="choose a folder that exists and is writable") from None
    return ExportReport(run=run, count=count, path=sink)
