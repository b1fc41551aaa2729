"""Stored runs: find one, read its results, list a suite's history, export (no model, no cache).

Each operation takes a Workspace or a :class:`~judge.app.workspace.store_access.StoreLocation` (what
the ``history``/``show``/``export`` doors open: no cache, no judges) and reads through
:func:`~judge.app.workspace.store_access.reading`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ...core.formats.models import CaseResult, RunInfo
from ...core.text.errors import NoStoreError, UsageError
from ...system.atomic_files import atomic_writer
from ..workspace.store_access import StoreSource, reading
from .exporting import ExportFormat, write_export

if TYPE_CHECKING:
    from ...store.runs import RunStore

__all__ = [
    "RunExportReport",
    "RunHistory",
    "RunPage",
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
    """Stored runs, newest first, and the store they are in (its URL with no password).

    ``absent``: there is no store where it looked (the sentence saying where, and what to do).
    """

    runs: tuple[RunInfo, ...]
    store_url: str
    absent: str | None = None


@dataclass(frozen=True)
class RunPage:
    """A stored run with a page of its case results (only the failing ones when asked).

    ``cases`` are those from the ``offset``-th on, at most ``limit`` (None: all); ``total``
    counts every case the view selects (all, or the failures), so ``more`` are not shown.
    """

    run: RunInfo
    cases: tuple[CaseResult, ...]
    failures_only: bool = False
    offset: int = 0
    limit: int | None = None
    total: int = 0

    @property
    def more(self) -> int:
        """Selected cases after this page."""
        return max(0, self.total - self.offset - len(self.cases))


@dataclass(frozen=True)
class RunExportReport:
    """What an export wrote: the run, how many results, and the file (None: a stream)."""

    run: RunInfo
    count: int
    path: Path | None = None


def is_failure(result: CaseResult) -> bool:
    """A case that failed or was not scored (what ``--failures`` keeps)."""
    return result.status != "scored" or result.passed is False


def get_run(workspace: StoreSource, run_id: str) -> RunInfo:
    """The run with this id or unique prefix; StoreError when unknown."""
    with reading(workspace) as store:
        return store.get_run(run_id)


def iter_results(workspace: StoreSource, run_id: str) -> Iterator[CaseResult]:
    """The run's stored results in case order, streamed (the store closes at the end)."""
    with reading(workspace) as store:
        yield from store.iter_results(run_id)


def list_runs(workspace: StoreSource, suite: str | None = None, *,
              limit: int | None = 20) -> list[RunInfo]:
    """Stored runs, newest first."""
    with reading(workspace) as store:
        return store.list_runs(suite, limit=limit)


def run_history(workspace: StoreSource, suite: str | None = None, *,
                limit: int | None = 20) -> RunHistory:
    """Stored runs (of ``suite``), newest first, with the store's displayable URL.

    No store is no runs, said as such (a listing is not an error), and none is made.
    """
    try:
        with reading(workspace) as store:
            return RunHistory(runs=tuple(store.list_runs(suite, limit=limit)),
                              store_url=store.url)
    except NoStoreError as exc:
        return RunHistory(runs=(), store_url=exc.path, absent=f"{exc.message}; {exc.fix}")


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
                         fix="finish the run, or name a complete one (`judge runs list`)")
    return run


def show_run(workspace: StoreSource, run_id: str, *, failures_only: bool = False,
             offset: int = 0, limit: int | None = None) -> RunPage:
    """The run with this id or prefix and a page of its results, read as a page.

    Only failures with ``failures_only``; from the ``offset``-th, at most ``limit`` (None:
    all). The store returns just that page, so a large run is not read whole.
    """
    if offset < 0 or (limit is not None and limit < 0):
        raise UsageError("offset and limit count cases: 0 or more",
                         fix="pass --offset N and --limit N with N >= 0")
    with reading(workspace) as store:
        run = store.get_run(run_id)
        total = store.result_count(run.id, failures_only=failures_only)
        cases = tuple(store.iter_results(run.id, offset=offset, limit=limit,
                                         failures_only=failures_only))
    return RunPage(run=run, cases=cases, failures_only=failures_only, offset=offset,
                   limit=limit, total=total)


def export_run(workspace: StoreSource, run_id: str, fmt: ExportFormat,
               sink: TextIO | Path) -> RunExportReport:
    """Stream the run's results to ``sink`` (a text stream, or a file written atomically).

    The run is looked up first, so an unknown run creates no file; a file is written beside
    its destination and moved into place whole, so a failed export leaves nothing behind.
    """
    with reading(workspace) as store:
        run = store.get_run(run_id)
        results = store.iter_results(run.id)
        if not isinstance(sink, Path):
            return RunExportReport(run=run, count=write_export(run, results, fmt, sink))
        try:
            with atomic_writer(sink, newline="") as fh:
                count = write_export(run, results, fmt, fh)
        except OSError as exc:
            raise UsageError(f"cannot write: {exc.strerror or exc}", file=str(sink),
                             fix="choose a folder that exists and is writable") from None
    return RunExportReport(run=run, count=count, path=sink)
