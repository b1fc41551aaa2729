"""The production monitor as a service: live records in, sampled, judged, a verdict.

Records arrive in batches. Each is sampled by :func:`judge.core.outcomes.monitor.is_sampled` at the
``monitor_rate`` setting with ``monitor_seed`` — the seeded, order-independent draw of
``judge judges monitor`` — and a sampled record, a case like any suite's, is judged with the
suite's rubric by the workspace's judge, through its cache. The verdict is
:func:`judge.core.outcomes.monitor.evaluate` over the last ``monitor_window`` records received, so
the thresholds (warning below 0.85, critical below 0.70) and the sampling are exactly those of
``judge judges monitor`` over a file of the same records. The window lives in memory: a restarted
process starts a new one.

A batch is validated whole before any record is judged: one bad record refuses the batch,
naming its place, and nothing enters the window.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, ValidationError

from ...core.formats.models import CaseResult
from ...core.formats.rubric import format_validation_error
from ...core.formats.suite import Case, as_masked_case, validate_cases
from ...core.outcomes.monitor import MonitorConfig, MonitorStatus, evaluate, is_sampled
from ...core.text.errors import SuiteError
from ...core.text.frozen import FrozenView
from ...system.clock import utc_now
from ..runs.evaluating import evaluate_case
from ..workspace.suites_index import SuiteIndex
from ..workspace.workspace import JudgePool

__all__ = ["IngestReport", "LiveMonitor", "MonitorView", "MonitorWindow", "monitor_config"]


class MonitorWindow(FrozenView):
    """What the verdict covers: the last ``records`` of at most ``capacity`` received."""

    capacity: int
    records: int
    received: int
    """Records received for the suite since the process started."""
    first_received_at: str | None = Field(None, alias="firstReceivedAt")
    last_received_at: str | None = Field(None, alias="lastReceivedAt")


class MonitorView(FrozenView):
    """A suite's monitor: the verdict of ``judge judges monitor`` over its window."""

    suite: str
    monitor: MonitorStatus
    window: MonitorWindow


class IngestReport(FrozenView):
    """One batch: how many came, which were sampled and judged, and the verdict after it."""

    suite: str
    received: int
    sampled: int
    judged: tuple[CaseResult, ...]
    state: MonitorView


def monitor_config(index: SuiteIndex) -> MonitorConfig:
    """The monitor's sampling and thresholds from the workspace settings."""
    s = index.workspace.settings
    return MonitorConfig(sample_rate=s.monitor_rate, seed=s.monitor_seed,
                         min_samples=s.monitor_min_samples)


class _Window:
    def __init__(self, capacity: int) -> None:
        self.records: deque[tuple[str, dict[str, Any]]] = deque(maxlen=capacity)
        self.received = 0


class LiveMonitor:
    """The monitor windows of one workspace's suites."""

    def __init__(self, index: SuiteIndex) -> None:
        self.index = index
        self._windows: dict[str, _Window] = {}

    def _window(self, suite: str) -> _Window:
        capacity = self.index.workspace.settings.monitor_window
        return self._windows.setdefault(suite, _Window(capacity))

    def status(self, suite: str) -> MonitorView:
        """The suite's verdict over its window (``insufficient`` until enough are scored)."""
        entry = self.index.find(suite)
        window = self._windows.get(entry.id) or _Window(
            self.index.workspace.settings.monitor_window)
        config = monitor_config(self.index)
        verdict = evaluate((record for _, record in window.records), config)
        times = [at for at, _ in window.records]
        return MonitorView(suite=entry.id, monitor=verdict, window=MonitorWindow(
            capacity=window.records.maxlen or 0, records=len(window.records),
            received=window.received, first_received_at=times[0] if times else None,
            last_received_at=times[-1] if times else None))

    async def ingest(self, suite: str,
                     records: Sequence[Case | Mapping[str, Any]]) -> IngestReport:
        """Sample ``records`` (cases), judge the sampled ones, add all to the suite's window."""
        entry = self.index.require(suite)
        ws = self.index.workspace
        rubric = ws.rubric(default=entry.rubric)
        cases = _validated(records, ws.secret_pattern)
        validate_cases(cases, rubric, "records")
        config = monitor_config(self.index)
        picked = [c for c in cases if is_sampled({"id": c.id}, config)]
        judged = await self._judge(picked, rubric)
        at = utc_now()
        by_id = {r.id: r for r in judged}
        window = self._window(entry.id)
        for case in cases:
            result = by_id.get(case.id)
            record: dict[str, Any] = {"id": case.id}
            if result is not None:
                record.update(passed=result.passed, overallScore=result.overall_score)
            window.records.append((at, record))
        window.received += len(cases)
        return IngestReport(suite=entry.id, received=len(cases), sampled=len(picked),
                            judged=tuple(judged), state=self.status(entry.id))

    async def _judge(self, cases: Sequence[Case], rubric: Any) -> list[CaseResult]:
        if not cases:
            return []
        ws = self.index.workspace
        offline = ws.settings.cache_mode == "offline"
        needs_judge = any(c.judged_by == "llm" for c in cases)
        models, _ = ws.resolve_models(needs_judge=needs_judge, offline=offline)
        cache = ws.open_cache()
        pool: JudgePool | None = None
        limit = asyncio.Semaphore(ws.settings.concurrency)
        try:
            if needs_judge and not offline:
                pool = ws.judges.open(ws, [models[0]])
            client = pool.clients[models[0]] if pool is not None else None

            async def one(case: Case) -> CaseResult:
                async with limit:
                    return await evaluate_case(ws, case, rubric=rubric, model=models[0],
                                               cache=cache, client=client)

            return list(await asyncio.gather(*(one(c) for c in cases)))
        finally:
            if cache is not None:
                cache.close()
            if pool is not None:
                await pool.aclose()


def _validated(records: Sequence[Case | Mapping[str, Any]],
               values: re.Pattern[str] | None) -> list[Case]:
    cases = []
    seen: set[str] = set()
    for n, record in enumerate(records):
        try:
            case = as_masked_case(record, values)
        except ValidationError as exc:
            place, msg = format_validation_error(exc)
            raise SuiteError(msg, file="records", where=f"records[{n}].{place}",
                             fix="each record is a case: id, input, output, evidence...") \
                from None
        if case.id in seen:
            raise SuiteError(f"duplicate record id {case.id!r}", file="records",
                             where=f"records[{n}].id", fix="give each record its own id")
        seen.add(case.id)
        cases.append(case)
    return cases
