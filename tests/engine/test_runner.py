"""The runner in process: hits never wait for the limit, batches, one error path, interruption."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from conftest import EXAMPLE_SUITE, FakeClient

from judge.cache.disk import JudgmentCache
from judge.core.formats.models import CaseResult, RunInfo
from judge.core.formats.rubric import Rubric, rubric_hash
from judge.core.formats.suite import Case
from judge.engine import runner
from judge.engine.judging import JudgeSettings
from judge.engine.runner import RunOutcome, RunPlan, execute
from judge.llm.client import Completion, JudgeRequest
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite

NOW = "2025-01-01T00:00:00Z"
VERDICT = json.dumps({c: {"rationale": "Fine.", "evidence": [], "score": 75}
                      for c in ("agentPerformance", "taskOutcomeQuality", "processCompliance")})


class Model(FakeClient):
    """Answers every call with one verdict; ``gate`` (when set) holds calls until it opens."""

    def __init__(self, gate: asyncio.Event | None = None,
                 fail: BaseException | None = None) -> None:
        self.gate = gate
        self.fail = fail
        self.attempts = 0

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        self.attempts += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return Completion(text=VERDICT, finish_reason="stop", model_reported="fake",
                          prompt_tokens=1, completion_tokens=1, cost_usd=None, latency_ms=0.0,
                          output_mode="prompt")


class Sink:
    """The run store's part the runner uses: a list of the batches it was given."""

    def __init__(self) -> None:
        self.batches: list[list[CaseResult]] = []

    def add_results(self, run_id: str, results: Sequence[CaseResult]) -> None:
        self.batches.append(list(results))

    @property
    def results(self) -> list[CaseResult]:
        return [r for batch in self.batches for r in batch]


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric("task-evaluation")


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return [c for c in load_suite(EXAMPLE_SUITE).cases if c.judged_by == "llm"]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[JudgmentCache]:
    with JudgmentCache(tmp_path / "cache") as store:
        yield store


def _plan(rubric: Rubric, models: tuple[str, ...] = ("m/a",), *,
          concurrency: int = 4) -> RunPlan:
    info = RunInfo(id="run-1", suite="s", rubric=rubric.id, rubric_hash=rubric_hash(rubric),
                   models=models, seed=42, temperature=0.0, template_id="judge",
                   template_hash="t", created_at=NOW, panel="median" if len(models) > 1 else None)
    return RunPlan(run=info, rubric=rubric, rubric_hash=rubric_hash(rubric), models=models,
                   settings=JudgeSettings(output_mode="prompt"), concurrency=concurrency)


async def _execute(plan: RunPlan, cases: Sequence[Case], cache: JudgmentCache, client: Model,
                   sink: Sink, on_result: Callable[[CaseResult], None] | None = None,
                   ) -> RunOutcome:
    return await execute(plan, cases, renderer=PromptRenderer(), cache=cache,
                         clients={m: client for m in plan.models}, sink=sink,
                         now=lambda: NOW, on_result=on_result)


def test_cache_hits_resolve_while_every_call_slot_is_taken(
        rubric: Rubric, cases: list[Case], cache: JudgmentCache) -> None:
    warm, cold = cases[:-1], cases[-1]
    asyncio.run(_execute(_plan(rubric), warm, cache, Model(), Sink()))

    async def go() -> RunOutcome:
        gate = asyncio.Event()
        cached = 0

        def seen(result: CaseResult) -> None:
            nonlocal cached
            cached += bool(result.judge and result.judge.cached)
            if cached == len(warm):
                gate.set()  # every hit resolved while the one call held the only slot

        # The miss comes first and takes the only slot; it is let go only by the hits.
        return await asyncio.wait_for(_execute(_plan(rubric, concurrency=1), [cold, *warm],
                                               cache, Model(gate), Sink(), seen), timeout=30)

    outcome = asyncio.run(go())
    assert outcome.run.totals.cache_hits == len(warm)
    assert outcome.run.totals.calls == 1 and outcome.run.status == "complete"


def test_results_are_stored_in_batches(rubric: Rubric, cases: list[Case], cache: JudgmentCache,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "STORE_BATCH", 3)
    sink = Sink()
    outcome = asyncio.run(_execute(_plan(rubric, ("m/a", "m/b")), cases, cache, Model(), sink))
    # Two judgments and the panel per case; a batch goes as soon as it holds 3 or more.
    assert len(sink.results) == 3 * len(cases)
    assert all(len(batch) >= 3 for batch in sink.batches[:-1])
    assert len(sink.batches) > 1
    assert outcome.run.totals.judgments == 2 * len(cases)


def test_a_bug_in_aggregation_fails_the_run_with_its_own_error(
        rubric: Rubric, cases: list[Case], cache: JudgmentCache,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> list[CaseResult]:
        raise ZeroDivisionError("bug in the panel")

    monkeypatch.setattr(runner, "_aggregates", broken)
    sink = Sink()
    with pytest.raises(ZeroDivisionError, match="bug in the panel"):
        asyncio.run(_execute(_plan(rubric, ("m/a", "m/b")), cases, cache, Model(), sink))
    assert sink.results  # what was judged before the failure is stored


def test_a_failing_call_fails_the_run_with_its_own_error(
        rubric: Rubric, cases: list[Case], cache: JudgmentCache) -> None:
    with pytest.raises(LookupError, match="not a provider error"):
        asyncio.run(_execute(_plan(rubric), cases, cache,
                             Model(fail=LookupError("not a provider error")), Sink()))


def test_cancel_stores_what_was_judged_and_marks_the_run_interrupted(
        rubric: Rubric, cases: list[Case], cache: JudgmentCache) -> None:
    warm = cases[:3]
    asyncio.run(_execute(_plan(rubric), warm, cache, Model(), Sink()))
    sink = Sink()

    async def go() -> RunOutcome:
        gate = asyncio.Event()  # never opens: the calls for the rest hang until cancelled
        tasks: list[asyncio.Task[RunOutcome]] = []
        delivered = 0

        def seen(result: CaseResult) -> None:
            nonlocal delivered
            delivered += 1
            if delivered == len(warm):  # as Ctrl-C would, with calls in flight
                tasks[0].cancel()

        tasks.append(asyncio.create_task(_execute(_plan(rubric, concurrency=1), cases, cache,
                                                  Model(gate), sink, seen)))
        return await tasks[0]

    outcome = asyncio.run(go())
    assert outcome.interrupted and outcome.run.status == "interrupted"
    assert [r.id for r in sink.results] == [c.id for c in warm]
    assert all(r.judge is not None and r.judge.cached for r in sink.results)
