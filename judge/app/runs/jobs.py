"""Runs going on inside a long-lived process (the HTTP API): start, watch, cancel, stop all.

Each run is :func:`judge.app.runs.running.run_suite_async` in the process's own event loop, with
the runner, progress, cache and store of ``judge run``; this module only keeps the books.
One run per suite at a time: a second start names the active one (:class:`RunActiveError`).
A cancel is the same event as Ctrl-C in the CLI: what was judged is stored, the run is
recorded ``interrupted``, and a later run resumes from the cache. :meth:`RunJobs.stop`
(SIGTERM) refuses new runs, cancels the active ones and waits until each is stored.

A run is cancelled at most once: a second cancel could land while the runner awaits the
judgments it is cancelling, and leave the run ``running`` in the store.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol

from pydantic import Field

from ...core.formats.models import CaseResult, RunInfo
from ...core.outcomes.summary import Summary, SummaryBuilder
from ...core.text.errors import JudgeError, RunActiveError
from ...core.text.frozen import FrozenView
from ...engine.runner import Progress
from ..workspace.workspace import Workspace
from .gate import headline_results
from .running import RunReport, RunRequest, run_suite_async

__all__ = [
    "ActiveRun",
    "JobState",
    "ProgressView",
    "RunJobs",
    "RunListener",
    "RunView",
    "StoppingError",
    "stored_view",
]

JobState = Literal["running", "complete", "interrupted", "failed"]
"""``failed``: a judge that cannot work — every LLM judgment failed (the CLI's exit 4); the
run itself is stored complete, with each case unscored and its reason."""

_EVENT_GAP = 0.05
"""Seconds between two progress snapshots sent to one watcher (coalesced in between)."""


class StoppingError(JudgeError):
    """The process is shutting down and starts no new run."""


class ProgressView(FrozenView):
    """A run's live counters."""

    total: int
    done: int
    cache_hits: int = Field(alias="cacheHits")
    unscored: int
    cache_misses: int = Field(alias="cacheMisses")
    judgments: int
    judged_anew: int = Field(alias="judgedAnew")
    prompt_tokens: int = Field(alias="promptTokens")
    completion_tokens: int = Field(alias="completionTokens")
    cost_usd: float | None = Field(alias="costUsd")
    elapsed_seconds: float = Field(alias="elapsedSeconds")

    @classmethod
    def of(cls, p: Progress, elapsed: float | None = None) -> ProgressView:
        """A snapshot of ``p`` (``elapsed``: the run's own wall time, once it ended)."""
        return cls(total=p.total, done=p.done, cache_hits=p.cache_hits, unscored=p.unscored,
                   cache_misses=p.misses, judgments=p.judgments, judged_anew=p.judged_anew,
                   prompt_tokens=p.spent.prompt_tokens,
                   completion_tokens=p.spent.completion_tokens, cost_usd=p.spent.cost_usd(),
                   elapsed_seconds=round(time.monotonic() - p.started if elapsed is None
                                        else elapsed, 3))


class RunView(FrozenView):
    """A run as a door shows it: state, progress, and once it ended its summary and verdict."""

    id: str
    suite: str
    status: JobState
    active: bool
    """Still judging in this process."""
    run: RunInfo
    progress: ProgressView | None = None
    summary: Summary | None = None
    regression: dict[str, Any] | None = None
    """The gate's verdict in its wire form (:class:`judge.app.runs.gate.GateVerdict`'s serializer,
    as ``judge check --json`` prints it): what was compared, or why nothing was. None while
    running, for a run with the check off, or for a run this process did not make (reading
    a run never records a baseline)."""
    exit_code: int | None = Field(None, alias="exitCode")
    """The exit status ``judge run`` gives the same outcome (None while running)."""
    reason: str | None = None
    """Why the run failed: the first unscored judgment's reason."""
    missing: tuple[str, ...] = ()
    """Offline: the cases whose judgments are not in the cache."""
    notices: tuple[str, ...] = ()


class RunListener(Protocol):
    """Told about every judgment and every finished run (metrics, logs)."""

    def result(self, run: RunInfo, result: CaseResult) -> None:
        """One judgment finished."""
        ...

    def finished(self, view: RunView) -> None:
        """A run ended (complete, interrupted or failed)."""
        ...


class ActiveRun:
    """One run started by :class:`RunJobs`: live until it ends, then its report."""

    def __init__(self, suite: str, listeners: Sequence[RunListener]) -> None:
        self.suite = suite
        self.run: RunInfo | None = None
        self.progress = Progress()
        self.report: RunReport | None = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False
        self.listeners = listeners
        self.notices: list[str] = []
        self.started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._version = 0
        self._tick = asyncio.Event()

    def mark_changed(self) -> None:
        """Wake every watcher of :meth:`changes`."""
        self._version += 1
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    # -- what doors read ---------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """The run ended (or never started)."""
        return self.task is not None and self.task.done()

    def view(self) -> RunView:
        """The run now."""
        assert self.run is not None  # a view exists only once the run is stored
        report = self.report
        if report is None:
            # Still judging; or it ended by an error of ours (a bug, the store gone).
            status: JobState = "failed" if self.done else "running"
            return RunView(id=self.run.id, suite=self.run.suite, status=status,
                           active=not self.done, run=self.run,
                           progress=ProgressView.of(self.progress),
                           reason=None if self.error is None else str(self.error),
                           notices=tuple(self.notices))
        status = ("interrupted" if report.interrupted else
                  "failed" if report.no_judgment else "complete")
        return RunView(
            id=report.run.id, suite=report.run.suite, status=status, active=False,
            run=report.run, summary=report.summary,
            progress=ProgressView.of(self.progress, report.run.totals.wall_seconds),
            regression=report.verdict.model_dump(mode="json")
            if report.verdict is not None else None,
            exit_code=report.exit_code,
            reason=report.first_failure if report.no_judgment else None,
            missing=report.missing, notices=report.notices)

    async def changes(self) -> AsyncIterator[RunView]:
        """The view after each change (snapshots coalesced), the last one once the run ended."""
        seen = -1
        while True:
            tick = self._tick
            if self._version != seen or self.done:
                seen = self._version
                yield self.view()
                if self.done:
                    return
                await asyncio.sleep(_EVENT_GAP)
                continue
            await tick.wait()

    async def wait(self) -> RunView:
        """The view once the run ended."""
        assert self.task is not None
        await asyncio.shield(self.task)
        return self.view()


class RunJobs:
    """The runs of one process: at most one per suite, the last ``keep`` finished ones kept."""

    def __init__(self, listeners: Sequence[RunListener] = (), *, keep: int = 100) -> None:
        self.listeners = tuple(listeners)
        self.keep = keep
        self.stopping = False
        self._by_suite: dict[str, ActiveRun] = {}
        self._by_run: OrderedDict[str, ActiveRun] = OrderedDict()

    async def start(self, workspace: Workspace, request: RunRequest, suite: str) -> ActiveRun:
        """Validate and start a run of ``suite``; returns once it is stored (its id known).

        Bad input raises here (ConfigError with file and place), before anything is stored.
        """
        if self.stopping:
            raise StoppingError("the server is shutting down: no new run starts")
        busy = self._by_suite.get(suite)
        if busy is not None:
            name = busy.run.id if busy.run is not None else "(starting)"
            raise RunActiveError(f"run {name} of suite {suite!r} is already active",
                                 run=name, suite=suite)
        job = ActiveRun(suite, self.listeners)
        self._by_suite[suite] = job  # reserved before any await: a second start sees it
        job.task = asyncio.ensure_future(self._go(job, workspace, request))
        await asyncio.shield(job.started)
        return job

    async def _go(self, job: ActiveRun, workspace: Workspace, request: RunRequest) -> None:
        observer = _Observer(job)
        try:
            job.report = await run_suite_async(workspace, request, observer=observer)
        except BaseException as exc:
            job.error = exc
            if job.run is not None and isinstance(exc, Exception):
                # An error of ours after the run was stored: the store says failed too,
                # never "running" while this process reports it failed.
                await asyncio.to_thread(_mark_failed, workspace, job.run.id)
            if not job.started.done():
                job.started.set_exception(
                    exc if isinstance(exc, Exception)
                    else StoppingError("the server is shutting down: the run did not start"))
                job.started.exception()  # retrieved here: the starter re-raises it
            if not isinstance(exc, Exception):
                raise
        finally:
            self._by_suite.pop(job.suite, None)
            if job.run is not None:
                self._by_run[job.run.id] = job
                self._by_run.move_to_end(job.run.id)
                while len(self._by_run) > self.keep and self._oldest_finished():
                    pass
                view = job.view()
                for listener in self.listeners:
                    listener.finished(view)
            job.mark_changed()

    def _oldest_finished(self) -> bool:
        for run_id, job in self._by_run.items():
            if job.done:
                del self._by_run[run_id]
                return True
        return False

    def get(self, run_id: str) -> ActiveRun | None:
        """The run with this exact id, active or recently finished in this process."""
        found = self._by_run.get(run_id)
        if found is not None:
            return found
        return next((j for j in self._by_suite.values()
                     if j.run is not None and j.run.id == run_id), None)

    def active(self) -> list[ActiveRun]:
        """The runs judging now."""
        return [j for j in self._by_suite.values() if j.run is not None]

    def cancel(self, run_id: str) -> ActiveRun | None:
        """Ask an active run to stop (stored ``interrupted``); None when it is not active here."""
        job = self.get(run_id)
        if job is None or job.done:
            return None
        self._cancel(job)
        return job

    @staticmethod
    def _cancel(job: ActiveRun) -> None:
        if job.task is not None and not job.task.done() and not job.cancelled:
            job.cancelled = True
            job.task.cancel()

    async def stop(self) -> None:
        """Start no new run, cancel the active ones and wait until each is stored."""
        self.stopping = True
        jobs = list(self._by_suite.values())
        for job in jobs:
            self._cancel(job)
        tasks = [j.task for j in jobs if j.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


class _Observer:
    """The :class:`judge.app.runs.running.RunObserver` a job gives the runner."""

    def __init__(self, job: ActiveRun) -> None:
        self.job = job

    def notice(self, text: str) -> None:
        self.job.notices.append(text)

    def started(self, progress: Progress, run: RunInfo) -> None:
        job = self.job
        job.progress, job.run = progress, run
        if not job.started.done():
            job.started.set_result(None)
        job.mark_changed()

    def result(self, result: CaseResult) -> None:
        job = self.job
        if job.run is not None:
            for listener in job.listeners:
                listener.result(job.run, result)
        job.mark_changed()

    def finished(self) -> None:
        pass


def _mark_failed(workspace: Workspace, run_id: str) -> None:
    """Record a run that ended by an error of ours as ``failed``, unless it was recorded."""
    try:
        with workspace.open_store() as store:
            run = store.get_run(run_id)
            if run.status == "running":
                store.finish_run(run_id, totals=run.totals, status="failed")
    except JudgeError:
        pass  # the store itself is what failed: nothing more can be recorded


def stored_view(workspace: Workspace, run_id: str) -> RunView:
    """A stored run as a view: its status and the summary of its headline results.

    Reading never gates (a gate may record a baseline), so ``regression`` is None here.
    """
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        builder = SummaryBuilder()
        for result in headline_results(store, run):
            builder.add(result)
    summary = builder.build()
    return RunView(id=run.id, suite=run.suite, status=run.status, active=False, run=run,
                   summary=summary if run.status != "running" else None)
