"""Stored runs: find one, read its results, list a suite's history (no model, no cache)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import UsageError
from ..models import CaseResult, RunInfo
from ..store import RunStore
from .workspace import Workspace

__all__ = ["get_run", "iter_results", "list_runs", "pick_complete_run"]


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
