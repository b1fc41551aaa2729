"""The runner: judge a suite's cases with one or more judges, concurrently, streaming results.

Memory stays flat on large suites: cases are prepared as they are reached, at most a
bounded number of judgments are in flight, results go to the store in batches and into an
incremental summary. Only model calls wait for the concurrency limit; a cache hit is
resolved at once. Every valid judgment is cached the moment it arrives, so a run stopped by
Ctrl-C (or killed) resumes from the cache at no cost.

Once every judgment of a case is in (each judge x each sample), its aggregates are computed
(:mod:`judge.core.scoring.panel`: a judge's mean or median of its K samples, then the panel over the
judges)
and stored beside the judgments. The run's headline summary counts one result per case:
the panel with two or more judges, else the judge's sample aggregate with ``--samples K``
(K >= 2), else its single judgment; a deterministic case counts as it is.

A judge that cannot work is found before the suite is spent: a :class:`Breaker` (passed in
by the application) watches the calls, and once the first K all failed for a configuration
reason (unknown model, refused key, unreachable host) with none answered, every later call
fails at once with that reason instead of reaching the network.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..cache.disk import JudgmentCache
from ..core.formats.models import CaseResult, JudgeMeta, RunInfo, RunTotals
from ..core.formats.rubric import Rubric
from ..core.formats.suite import Case, SuiteLine
from ..core.outcomes.ledger import JudgeTally, build_ledger, tally
from ..core.outcomes.summary import Summary, SummaryBuilder
from ..core.outcomes.usage import ZERO, Usage
from ..core.scoring.check_signals import deterministic_signals
from ..core.scoring.panel import case_aggregates, headline, member_sample
from ..core.text.errors import PermanentProviderError, ProviderError
from ..llm.client import Completion, JudgeRequest
from ..render.prompts import PromptRenderer
from .judging import (
    Completer,
    ForwardingCompleter,
    JudgeSettings,
    Prepared,
    judge_prepared,
    prepare,
)
from .replay import Replayed, ReplayIndex, line_digest

__all__ = ["Breaker", "LimitedCompleter", "Progress", "ResultSink", "RunOutcome", "RunPlan",
           "execute"]

STORE_BATCH = 256
LOOKUP_BATCH = 256
"""JSONL lines looked up in the replay index at once (two SELECTs a batch)."""


class ResultSink(Protocol):
    """Where results go: the run store, or a test's list."""

    def add_results(self, run_id: str, results: Sequence[CaseResult]) -> None:
        """Persist a batch."""
        ...


@dataclass
class Progress:
    """Live counters for a progress display."""

    total: int = 0
    done: int = 0
    cache_hits: int = 0
    unscored: int = 0
    misses: int = 0
    spent: Usage = ZERO
    """What the judgments asked of a model this run used (cache hits spend nothing)."""
    judgments: int = 0
    """Judgments of LLM-judged cases finished (each judge x sample; aggregates not counted)."""
    judged_anew: int = 0
    """Of those, the ones asked of a model this run (not a cache hit, not an offline miss)."""
    saved_calls: int = 0
    """Calls the cache spared: one per hit plus the repair turns stored with it."""
    started: float = field(default_factory=time.monotonic)
    judges: dict[str, JudgeTally] = field(default_factory=dict)
    """Per judge model, for the call ledger."""

    def add(self, result: CaseResult) -> None:
        """Count a finished judgment."""
        self.done += 1
        tally(self.judges, result)
        self.unscored += result.status == "unscored"
        self.misses += result.status == "cache_miss"
        if result.judged_by == "llm":
            self.judgments += 1
            if result.judge is not None and result.judge.cached:
                self.saved_calls += 1 + result.judge.repair_turns
            elif result.status != "cache_miss":
                self.judged_anew += 1
        if result.judge is not None:
            self.cache_hits += result.judge.cached
            if not result.judge.cached:
                self.spent += Usage.of(result.judge)


@dataclass(frozen=True)
class RunPlan:
    """What to run: one rubric, one or more judge models, the call settings."""

    run: RunInfo
    rubric: Rubric
    rubric_hash: str
    models: tuple[str, ...]
    settings: JudgeSettings
    samples: int = 1
    concurrency: int = 16
    panel: str | None = "median"
    """How two or more judges combine into the panel result (``median`` or ``mean``)."""
    sample_aggregate: str = "mean"
    """How a judge's K samples combine into its aggregate (``mean`` or ``median``)."""


@dataclass
class RunOutcome:
    """What a run produced besides the stored results."""

    run: RunInfo
    summary: Summary
    """The headline: one result per case (see the module docstring)."""
    summaries: dict[str, Summary]
    """Per judge model, with two or more: its sample aggregate with ``--samples K``, else its
    judgment. Empty with one judge (the headline summary is its)."""
    interrupted: bool = False


@dataclass
class _Pending:
    """A judged case waiting for the rest of its judgments before its aggregates."""

    signals: dict[str, int | None]
    expected: int
    judged: dict[tuple[str, int], CaseResult] = field(default_factory=dict)


class Breaker:
    """Stops a run's calls when its first ``limit`` calls all failed for a configuration reason.

    Bounded by design: at most ``limit`` failures plus the calls already in flight reach
    the network. Any answered call, or any failure that is not a configuration error (a
    5xx, a timeout), disarms it for the rest of the run: the judge can work, it is flaky.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.failures = 0
        self.armed = True
        self.reason: str | None = None
        """Why calls stopped (the first failure's message); None while they go."""
        self._first = ""

    def check(self) -> None:
        """Raise the stop reason as a configuration error once tripped."""
        if self.reason is not None:
            raise PermanentProviderError(f"not asked: {self.reason}", configuration=True)

    def answered(self) -> None:
        """A call got an answer: the judge works."""
        self.armed = False

    def failed(self, error: ProviderError) -> None:
        """A call failed; trip once ``limit`` configuration failures came with no answer."""
        if not self.armed or self.reason is not None:
            return
        if not error.configuration:
            self.armed = False
            return
        self.failures += 1
        if self.failures == 1:
            self._first = str(error)
        if self.failures >= self.limit:
            self.reason = (f"the judge cannot work as configured: the first {self.failures} "
                           f"calls failed, the first with {self._first}")


class LimitedCompleter(ForwardingCompleter):
    """A completer whose calls wait for the concurrency limit; cache hits never get here.

    The inner client's own limit (a llama.cpp server's slots) applies below the run's.
    """

    def __init__(self, inner: Completer, limit: asyncio.Semaphore,
                 breaker: Breaker | None = None) -> None:
        super().__init__(inner)
        self.limit = limit
        self.breaker = breaker
        own = inner.max_concurrency
        self.own_limit = asyncio.Semaphore(own) if own is not None and own > 0 else None

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        """The inner completion, once a place under both limits is free (and the breaker)."""
        if self.own_limit is None:
            async with self.limit:
                return await self._watched(request, messages)
        async with self.own_limit, self.limit:
            return await self._watched(request, messages)

    async def _watched(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None) -> Completion:
        breaker = self.breaker
        if breaker is None:
            return await self.inner.complete(request, messages)
        breaker.check()
        try:
            turn = await self.inner.complete(request, messages)
        except ProviderError as exc:
            breaker.failed(exc)
            raise
        breaker.answered()
        return turn


async def execute(plan: RunPlan, cases: Iterable[Case | SuiteLine], *,
                  renderer: PromptRenderer | None, cache: JudgmentCache | None,
                  clients: Mapping[str, Completer] | None,
                  sink: ResultSink, now: Callable[[], str],
                  progress: Progress | None = None,
                  on_result: Callable[[CaseResult], None] | None = None,
                  index: ReplayIndex | None = None, breaker: Breaker | None = None,
                  redact: Callable[[str], str] | None = None) -> RunOutcome:
    """Judge ``cases``; ``clients`` None means offline (cache only, no network).

    With ``index`` (see :mod:`judge.engine.replay`) a judgment it finds is resolved at once,
    without a bundle or a prompt; the rest take the plain path and are recorded in it.
    A :class:`SuiteLine` (a validated JSONL line) is parsed only when the index does not
    answer for all of its judgments. ``breaker`` stops the calls of a judge that cannot
    work; ``redact`` masks secrets in every result's reason before it is kept.
    """
    run = _Run(plan, renderer=renderer, cache=cache, clients=clients, sink=sink, now=now,
               progress=progress or Progress(), on_result=on_result, index=index,
               breaker=breaker, redact=redact)
    return await run.execute(cases)


_Judge = tuple[str, int]
"""The (model, sample) a judgment stands for."""


class _Run:
    """One run's state: limits, summaries, the store's buffer, cases waiting for aggregates.

    One error path: every judgment is a task of one :class:`asyncio.TaskGroup`, and the
    loop that feeds them runs in the group's body. A failure anywhere — a task, the sink, an
    aggregate (a bug there must fail the run, not vanish) — ends the group, which cancels
    what is in flight, and is raised as itself (not as an ExceptionGroup) once what was
    judged is stored. Ctrl-C or a cancellation ends it the same way, and the run is
    returned marked interrupted.
    """

    def __init__(self, plan: RunPlan, *, renderer: PromptRenderer | None,
                 cache: JudgmentCache | None, clients: Mapping[str, Completer] | None,
                 sink: ResultSink, now: Callable[[], str], progress: Progress,
                 on_result: Callable[[CaseResult], None] | None,
                 index: ReplayIndex | None, breaker: Breaker | None = None,
                 redact: Callable[[str], str] | None = None) -> None:
        self.plan = plan
        self.redact = redact
        self.renderer = renderer
        self.cache = cache
        self.clients = clients
        self.sink = sink
        self.now = now
        self.progress = progress
        self.on_result = on_result
        self.index = index
        limit = asyncio.Semaphore(plan.concurrency)
        self.limited = {m: LimitedCompleter(c, limit, breaker) for m, c in clients.items()} \
            if clients else None
        # Bounds the judgments in flight (prepared cases held in memory), not the calls.
        self.window = asyncio.Semaphore(max(64, plan.concurrency * 4))
        template = renderer.source_text if renderer is not None else ""
        self.builder = SummaryBuilder(template)
        # Per-judge summaries only mean something beside another judge's (a panel).
        self.per_model = {m: SummaryBuilder(template) for m in plan.models} \
            if len(plan.models) > 1 else {}
        self.buffer: list[CaseResult] = []
        self.waiting: dict[int, _Pending] = {}
        self.head = headline(plan.models, plan.samples, plan.panel)
        self.member = member_sample(plan.samples)
        self.every: list[_Judge] = [(m, s) for m in plan.models for s in range(plan.samples)]
        self.replayed = 0
        self.started = time.monotonic()

    async def execute(self, cases: Iterable[Case | SuiteLine]) -> RunOutcome:
        """Judge every case, store every result, and sum the run up."""
        interrupted = False
        try:
            async with asyncio.TaskGroup() as group:
                position = 0
                for batch in _batches(cases, LOOKUP_BATCH):
                    looked = self._look_up(batch)
                    for item, (digest, found) in zip(batch, looked, strict=True):
                        await self._case(group, position, item, digest, found)
                        position += 1
        except (asyncio.CancelledError, KeyboardInterrupt):
            interrupted = True
        except BaseExceptionGroup as failed:
            raise _first(failed) from None
        finally:
            self._flush()
            if self.index is not None:
                self.index.flush()
        return self._outcome(interrupted)

    def _look_up(self, batch: Sequence[Case | SuiteLine],
                 ) -> list[tuple[bytes | None, dict[_Judge, Replayed]]]:
        """Each case's digest (None: not indexed) and the judgments the index answers."""
        index = self.index
        if index is None or self.renderer is None:
            return [(None, {}) for _ in batch]
        digests = [line_digest(item.text) if isinstance(item, SuiteLine)
                   else index.case_digest(item) if item.judged_by == "llm" else None
                   for item in batch]
        wanted = [d for d in digests if d is not None]
        answers = iter(index.replay_many(wanted, self.every) if wanted else [])
        return [(d, next(answers) if d is not None else {}) for d in digests]

    async def _case(self, group: asyncio.TaskGroup, position: int, item: Case | SuiteLine,
                    digest: bytes | None, found: dict[_Judge, Replayed]) -> None:
        """Resolve what the index answered at once; start a task for each other judgment."""
        plan, renderer = self.plan, self.renderer
        case, line = (item, None) if isinstance(item, Case) else (None, item)
        if len(found) < len(self.every) and line is not None:
            case = line.case()  # not all in the index: the plain path needs the case
        judged = bool(found) or (renderer is not None and case is not None
                                 and case.judged_by == "llm")
        judges = self.every if judged else [(plan.models[0], 0)]
        if judged and len(judges) > 1:
            signals = next(iter(found.values())).signals if found else \
                deterministic_signals(_known(case), plan.rubric)[0]
            self.waiting[position] = _Pending(signals=signals, expected=len(judges))
        prep = None
        for judge in judges:
            hit = found.get(judge)
            if hit is not None:
                self._deliver(position, judge, hit.result)
                self.replayed += 1
                if self.replayed % 256 == 0:
                    await asyncio.sleep(0)  # let judgments in flight move on
                continue
            if prep is None:
                prep = prepare(_known(case), plan.rubric, renderer)
            await self.window.acquire()
            group.create_task(self._judge(position, judge if judged else None, prep, judge,
                                          digest))

    async def _judge(self, position: int, key: _Judge | None, prep: Prepared, judge: _Judge,
                     digest: bytes | None) -> None:
        """One judgment (a cache hit resolves at once; a call waits for the limit)."""
        model, sample = judge
        try:
            client = self.limited.get(model) if self.limited else None
            remember = None if digest is None or self.index is None else functools.partial(
                self.index.remember, digest, model, sample)
            result = await judge_prepared(prep, self.plan.rubric, self.plan.rubric_hash, model,
                                          self.plan.settings, self.cache, client,
                                          sample=sample, now=self.now(), remember=remember)
        finally:
            self.window.release()
        if result.reason is not None and self.redact is not None:
            result = result.model_copy(update={"reason": self.redact(result.reason)})
        self._deliver(position, key, result)

    def _deliver(self, position: int, key: _Judge | None, result: CaseResult) -> None:
        """Count, keep and announce a result; aggregate its case once all its judgments are in."""
        self.progress.add(result)
        self._keep(result, key)
        if self.on_result is not None:
            self.on_result(result)
        group = self.waiting.get(position)
        if group is not None and key is not None:
            group.judged[key] = result
            if len(group.judged) == group.expected:
                del self.waiting[position]
                assert self.renderer is not None  # only judged cases wait for aggregates
                for agg in _aggregates(self.plan, group, self.renderer):
                    assert agg.judge is not None
                    self._keep(agg, (agg.judge.model, agg.judge.sample))
        if len(self.buffer) >= STORE_BATCH:
            self._flush()

    def _keep(self, result: CaseResult, key: _Judge | None) -> None:
        # ``key`` is the (model, sample) the result stands for; None for a deterministic case.
        self.buffer.append(result)
        if key is None or key == self.head:
            self.builder.add(result)
        if key is not None and key[1] == self.member and key[0] in self.per_model:
            self.per_model[key[0]].add(result)

    def _flush(self) -> None:
        if self.buffer:
            self.sink.add_results(self.plan.run.id, list(self.buffer))
            self.buffer.clear()

    def _outcome(self, interrupted: bool) -> RunOutcome:
        summary = self.builder.build()
        progress, index = self.progress, self.index
        ledger = build_ledger(progress.judges, self.clients)
        totals = RunTotals(
            cases=summary.cases, scored=summary.scored, unscored=summary.unscored,
            cache_misses=summary.cache_misses, cache_hits=progress.cache_hits,
            calls=sum(c.attempts for c in (self.clients or {}).values()),
            prompt_tokens=progress.spent.prompt_tokens,
            completion_tokens=progress.spent.completion_tokens, cost_usd=progress.spent.cost_usd(),
            wall_seconds=round(time.monotonic() - self.started, 3),
            judgments=progress.judgments, judged_anew=progress.judged_anew,
            saved_calls=progress.saved_calls, index_hits=index.found if index is not None else 0,
            cached_tokens=sum(e.cached_tokens for e in ledger.values()),
            cache_write_tokens=sum(e.cache_write_tokens for e in ledger.values()),
            ledger=ledger,
        )
        run = self.plan.run.model_copy(update={
            "totals": totals, "status": "interrupted" if interrupted else "complete"})
        return RunOutcome(run=run, summary=summary,
                          summaries={m: b.build() for m, b in self.per_model.items()},
                          interrupted=interrupted)


def _batches(items: Iterable[Case | SuiteLine], size: int) -> Iterator[list[Case | SuiteLine]]:
    """``items`` in lists of ``size`` (the last may be shorter), streamed."""
    batch: list[Case | SuiteLine] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _first(failed: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first failure of a task group (nested groups opened), raised as itself."""
    first: BaseException = failed
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


def _known(case: Case | None) -> Case:
    assert case is not None  # parsed whenever the index did not answer for every judge
    return case


def _aggregates(plan: RunPlan, group: _Pending, renderer: PromptRenderer) -> list[CaseResult]:
    base = JudgeMeta(model="", temperature=plan.settings.temperature, seed=plan.settings.seed,
                     template_id=renderer.template_id, template_hash=renderer.template_hash,
                     rubric_hash=plan.rubric_hash, cache_key="", cached=False)
    return case_aggregates(group.judged, plan.rubric, group.signals, base, models=plan.models,
                           samples=plan.samples, panel=plan.panel,
                           sample_method=plan.sample_aggregate)
