"""The runner: judge a suite's cases with one or more judges, concurrently, streaming results.

Memory stays flat on large suites: cases are prepared as they are reached, at most a
bounded number of judgments are in flight, results go to the store in batches and into an
incremental summary. Only model calls wait for the concurrency limit; a cache hit is
resolved at once. Every valid judgment is cached the moment it arrives, so a run stopped by
Ctrl-C (or killed) resumes from the cache at no cost.

Once every judgment of a case is in (each judge x each sample), its aggregates are computed
(:mod:`judge.panel`: a judge's median over its K samples, then the panel over the judges)
and stored beside the judgments. The run's headline summary counts one result per case:
the panel with two or more judges, else the judge's sample aggregate with ``--samples K``
(K >= 2), else its single judgment; a deterministic case counts as it is.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .cache import JudgmentCache
from .checks import deterministic_signals
from .client import JudgeRequest, Turn
from .judging import Completer, JudgeSettings, judge_prepared, prepare
from .ledger import JudgeTally, build_ledger, tally
from .models import CaseResult, JudgeMeta, RunInfo, RunTotals
from .panel import case_aggregates, headline, member_sample
from .prompts import PromptRenderer
from .replay import Replayed, ReplayIndex, line_digest
from .rubric import Rubric
from .suite import Case, SuiteLine
from .summary import Summary, SummaryBuilder

__all__ = ["LimitedCompleter", "Progress", "ResultSink", "RunOutcome", "RunPlan", "execute"]

STORE_BATCH = 256


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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
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
        if result.judgedBy == "llm":
            self.judgments += 1
            if result.judge is not None and result.judge.cached:
                self.saved_calls += 1 + result.judge.repairTurns
            elif result.status != "cache_miss":
                self.judged_anew += 1
        if result.judge is not None:
            self.cache_hits += result.judge.cached
            if not result.judge.cached:
                self.prompt_tokens += result.judge.promptTokens or 0
                self.completion_tokens += result.judge.completionTokens or 0
                if result.judge.costUsd is None:
                    self.cost_known = False
                else:
                    self.cost += result.judge.costUsd


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


class LimitedCompleter:
    """A completer whose calls wait for the concurrency limit; cache hits never get here."""

    def __init__(self, inner: Completer, limit: asyncio.Semaphore) -> None:
        self.inner = inner
        self.limit = limit
        self.engine = getattr(inner, "engine", None)
        own = getattr(inner, "max_concurrency", None)
        self.own_limit = asyncio.Semaphore(own) if isinstance(own, int) and own > 0 else None

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Turn:
        """The inner completion, once a place under both limits is free."""
        if self.own_limit is None:
            async with self.limit:
                return await self.inner.complete(request, messages)
        async with self.own_limit, self.limit:
            return await self.inner.complete(request, messages)


async def execute(plan: RunPlan, cases: Iterable[Case | SuiteLine], *,
                  renderer: PromptRenderer | None, cache: JudgmentCache | None,
                  clients: Mapping[str, Completer] | None,
                  sink: ResultSink, now: Callable[[], str],
                  progress: Progress | None = None,
                  on_result: Callable[[CaseResult], None] | None = None,
                  index: ReplayIndex | None = None) -> RunOutcome:
    """Judge ``cases``; ``clients`` None means offline (cache only, no network).

    With ``index`` (see :mod:`judge.replay`) a judgment it finds is resolved at once,
    without a bundle or a prompt; the rest take the plain path and are recorded in it.
    A :class:`SuiteLine` (a validated JSONL line) is parsed only when the index does not
    answer for all of its judgments.
    """
    limit = asyncio.Semaphore(plan.concurrency)
    limited = {m: LimitedCompleter(c, limit) for m, c in clients.items()} if clients else None
    window = asyncio.Semaphore(max(64, plan.concurrency * 4))
    builder = SummaryBuilder()
    # Per-judge summaries only mean something beside another judge's (a panel).
    per_model = {m: SummaryBuilder() for m in plan.models} if len(plan.models) > 1 else {}
    buffer: list[CaseResult] = []
    pending: set[asyncio.Task[CaseResult]] = set()
    waiting: dict[int, _Pending] = {}
    progress = progress or Progress()
    started = time.monotonic()
    head = headline(plan.models, plan.samples, plan.panel)
    member = member_sample(plan.samples)

    def flush() -> None:
        if buffer:
            sink.add_results(plan.run.id, list(buffer))
            buffer.clear()

    def keep(result: CaseResult, key: tuple[str, int] | None) -> None:
        # ``key`` is the (model, sample) the result stands for; None for a deterministic case.
        buffer.append(result)
        if key is None or key == head:
            builder.add(result)
        if key is not None and key[1] == member and key[0] in per_model:
            per_model[key[0]].add(result)

    def deliver(index: int, key: tuple[str, int] | None, result: CaseResult) -> None:
        progress.add(result)
        keep(result, key)
        if on_result is not None:
            on_result(result)
        group = waiting.get(index)
        if group is not None and key is not None:
            group.judged[key] = result
            if len(group.judged) == group.expected:
                del waiting[index]
                try:
                    assert renderer is not None  # only judged cases wait for aggregates
                    for agg in _aggregates(plan, group, renderer):
                        assert agg.judge is not None
                        keep(agg, (agg.judge.model, agg.judge.sample))
                except Exception as exc:  # a bug here must fail the run, not vanish
                    errors.append(exc)
        if len(buffer) >= STORE_BATCH:
            flush()

    def finished(index: int, key: tuple[str, int] | None,
                 task: asyncio.Task[CaseResult]) -> None:
        pending.discard(task)
        window.release()
        if not task.cancelled() and task.exception() is None:
            deliver(index, key, task.result())

    async def one(prep: Any, model: str, sample: int, digest: bytes | None) -> CaseResult:
        client = limited.get(model) if limited else None
        remember = None if digest is None or index is None else functools.partial(
            index.remember, digest, model, sample)
        return await judge_prepared(prep, plan.rubric, plan.rubric_hash, model, plan.settings,
                                    cache, client, sample=sample, now=now(), remember=remember)

    interrupted = False
    errors: list[BaseException] = []
    try:
        every = [(m, s) for m in plan.models for s in range(plan.samples)]
        replayed = 0
        for position, item in enumerate(cases):
            case, line = (item, None) if isinstance(item, Case) else (None, item)
            found: dict[tuple[str, int], Replayed] = {}
            digest = None
            if index is not None and renderer is not None and (
                    case is None or case.judged_by == "llm"):
                digest = line_digest(line.text) if line is not None else \
                    index.case_digest(_known(case))
                for judge in every:
                    hit = index.replay(digest, *judge)
                    if hit is None:
                        break
                    found[judge] = hit
            if len(found) < len(every) and line is not None:
                case = line.case()  # not all in the index: the plain path needs the case
            judged = bool(found) or (renderer is not None and case is not None
                                     and case.judged_by == "llm")
            judges = every if judged else [(plan.models[0], 0)]
            if judged and len(judges) > 1:
                signals = next(iter(found.values())).signals if found else \
                    deterministic_signals(_known(case), plan.rubric)[0]
                waiting[position] = _Pending(signals=signals, expected=len(judges))
            prep = None
            for model, sample in judges:
                hit = found.get((model, sample))
                if hit is not None:
                    deliver(position, (model, sample), hit.result)
                    replayed += 1
                    if replayed % 256 == 0:
                        await asyncio.sleep(0)  # let judgments in flight move on
                    continue
                if prep is None:
                    prep = prepare(_known(case), plan.rubric, renderer)
                await window.acquire()
                task = asyncio.ensure_future(one(prep, model, sample, digest))
                pending.add(task)
                task.add_done_callback(functools.partial(
                    finished, position, (model, sample) if judged else None))
                task.add_done_callback(lambda t: errors.append(t.exception())  # type: ignore[arg-type]
                                       if not t.cancelled() and t.exception() else None)
            if errors:
                break
        if pending:
            await asyncio.gather(*list(pending), return_exceptions=True)
        if errors:
            raise errors[0]
    except (asyncio.CancelledError, KeyboardInterrupt):
        interrupted = True
        for task in list(pending):
            task.cancel()
        if pending:
            await asyncio.gather(*list(pending), return_exceptions=True)
    finally:
        flush()
        if index is not None:
            index.flush()
    summary = builder.build()
    totals = RunTotals(
        cases=summary.cases, scored=summary.scored, unscored=summary.unscored,
        cacheMisses=summary.cacheMisses, cacheHits=progress.cache_hits,
        calls=sum(getattr(c, "attempts", 0) for c in (clients or {}).values()),
        promptTokens=progress.prompt_tokens, completionTokens=progress.completion_tokens,
        costUsd=round(progress.cost, 10) if progress.cost_known else None,
        wallSeconds=round(time.monotonic() - started, 3),
        judgments=progress.judgments, judgedAnew=progress.judged_anew,
        savedCalls=progress.saved_calls, indexHits=index.found if index is not None else 0,
        ledger=build_ledger(progress.judges, clients),
    )
    run = plan.run.model_copy(update={"totals": totals,
                                      "status": "interrupted" if interrupted else "complete"})
    return RunOutcome(run=run, summary=summary,
                      summaries={m: b.build() for m, b in per_model.items()},
                      interrupted=interrupted)


def _known(case: Case | None) -> Case:
    assert case is not None  # parsed whenever the index did not answer for every judge
    return case


def _aggregates(plan: RunPlan, group: _Pending, renderer: PromptRenderer) -> list[CaseResult]:
    base = JudgeMeta(model="", temperature=plan.settings.temperature, seed=plan.settings.seed,
                     templateId=renderer.template_id, templateHash=renderer.template_hash,
                     rubricHash=plan.rubric_hash, cacheKey="", cached=False)
    return case_aggregates(group.judged, plan.rubric, group.signals, base, models=plan.models,
                           samples=plan.samples, panel=plan.panel)
