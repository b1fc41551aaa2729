"""Pairwise judging: every pair of a suite in both orders; results and the flip rate.

Each order of each pair is one judge request through the same client, cache and repair
turn as ``judge run``: temperature and seed from the settings, structured output (the
verdict schema of :mod:`judge.core.stats.pairwise`), the cache keyed by the request's hash, only
valid verdicts cached, one bounded repair turn, and an order left unscored with its reason when
the judge still fails. The aggregation (a flip is a tie) is :mod:`judge.core.stats.pairwise`'s.

Results are returned, not stored: the run store's rows are per-category scores under a
rubric, which a pair's A / B / tie result is not.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ...cache.disk import JudgmentCache
from ...core.formats.evidence import EvidenceBundle
from ...core.formats.limits import MAX_SUITE_CHARS
from ...core.formats.turns import turn_totals
from ...core.outcomes.usage import ZERO, Usage
from ...core.stats.pairwise import (
    ORDERS,
    Order,
    OrderVerdict,
    Pair,
    PairResult,
    PairSuite,
    PairSummary,
    combine,
    order_outcome,
    pair_bundle,
    parse_pair_suite,
    parse_pair_verdict,
    shown,
    summarize,
    verdict_schema,
)
from ...core.text.errors import SuiteError, UsageError
from ...core.text.frozen import Frozen
from ...engine.judging import Completer, JudgeSettings, exchange
from ...engine.runner import LimitedCompleter
from ...llm.client import JudgeRequest
from ...render.prompts import PromptRenderer, RenderedPrompt
from ...system.clock import utc_now
from ...system.input_files import read_input
from ...system.resources import suite_file_id
from ..workspace.workspace import JudgePool, Workspace

__all__ = [
    "DEFAULT_TEMPLATE",
    "EXIT_CACHE_MISS",
    "PairTotals",
    "PairwiseJson",
    "PairwiseReport",
    "PairwiseRequest",
    "judge_pairs",
    "load_pair_suite",
    "run_pairwise",
]

DEFAULT_TEMPLATE = "pairwise"
EXIT_CACHE_MISS = 3


class PairwiseRequest(Frozen):
    """What to judge: a pair suite file and the prompt template (settings: the workspace's)."""

    suite: Path
    template: str = DEFAULT_TEMPLATE


class PairTotals(TypedDict):
    """What a pairwise run asked of the judge and paid."""

    calls: int
    cacheHits: int
    promptTokens: int
    completionTokens: int
    costUsd: float | None


class PairwiseJson(TypedDict):
    """A pairwise run's ``--json`` document."""

    suite: str
    model: str
    templateId: str
    templateHash: str
    temperature: float
    seed: int | None
    pairs: list[dict[str, Any]]
    """Each pair's result, as its model writes it."""
    summary: dict[str, Any]
    totals: PairTotals


@dataclass(frozen=True)
class PairwiseReport:
    """The pairs' results, their summary and what it cost; ``public()`` is the JSON document."""

    suite: PairSuite
    model: str
    template_id: str
    template_hash: str
    settings: JudgeSettings
    results: tuple[PairResult, ...]
    summary: PairSummary
    calls: int
    """Requests sent on the wire (retries included)."""

    @property
    def cache_hits(self) -> int:
        """Orders answered from the cache."""
        return sum(v.cached for r in self.results for v in r.verdicts)

    @property
    def missing(self) -> tuple[str, ...]:
        """Pairs offline replay could not find in the cache."""
        return tuple(r.id for r in self.results if r.status == "cache_miss")

    @property
    def exit_code(self) -> int:
        """0, or 3 when offline replay missed judgments."""
        return EXIT_CACHE_MISS if self.summary.cache_misses else 0

    def public(self) -> PairwiseJson:
        """The document every door prints for ``--json``."""
        fresh = [v for r in self.results for v in r.verdicts
                 if v.status != "cache_miss" and not v.cached]
        used = sum((Usage.of(v) for v in fresh), ZERO)
        return {
            "suite": self.suite.id,
            "model": self.model,
            "templateId": self.template_id,
            "templateHash": self.template_hash,
            "temperature": self.settings.temperature,
            "seed": self.settings.seed,
            "pairs": [r.model_dump(mode="json") for r in self.results],
            "summary": self.summary.model_dump(mode="json"),
            "totals": {
                "calls": self.calls,
                "cacheHits": self.cache_hits,
                "promptTokens": used.prompt_tokens,
                "completionTokens": used.completion_tokens,
                "costUsd": used.cost_usd(),
            },
        }


def load_pair_suite(path: Path, shown_as: str | None = None,
                    values: re.Pattern[str] | None = None) -> PairSuite:
    """Read and validate a pair suite; the id defaults to the file's stem (or its folder's).

    Errors name the file as ``shown_as`` (what the user typed), else ``path``. Secrets in
    its text are masked (``values``: the credentials the caller holds, besides the shapes).
    """
    name = shown_as or str(path)
    text = read_input(path, SuiteError, 4 * MAX_SUITE_CHARS)
    return parse_pair_suite(text, name, default_id=suite_file_id(path), values=values)


def run_pairwise(workspace: Workspace, request: PairwiseRequest, *,
                 now: Callable[[], str] = utc_now) -> PairwiseReport:
    """Judge every pair of the suite in both orders with the workspace's one judge model.

    Offline (cache mode ``offline``) opens no judge: a miss is a ``cache_miss`` order.
    """
    suite = load_pair_suite(workspace.path(request.suite), str(request.suite),
                            workspace.secret_pattern)
    models = workspace.settings.models
    if len(models) != 1:
        raise UsageError("pairwise judging takes one judge model" if models
                         else "no judge model configured",
                         fix="pass --model (e.g. --model openai/gpt-4o-mini) or set JUDGE_MODEL")
    name = models[0]
    renderer = workspace.renderer(request.template)
    settings = workspace.judge_settings()
    offline = workspace.settings.cache_mode == "offline"

    async def judge_all() -> tuple[list[PairResult], int]:
        pool: JudgePool | None = None
        cache = workspace.open_cache()
        try:
            pool = None if offline else workspace.judges.open(workspace, [name])
            client = pool.clients[name] if pool is not None else None
            results = await judge_pairs(suite, renderer=renderer, model=name,
                                        settings=settings, cache=cache, client=client,
                                        now=now, concurrency=workspace.settings.concurrency)
            return results, int(getattr(client, "attempts", 0))
        finally:
            if cache is not None:
                cache.close()
            if pool is not None:
                await pool.aclose()  # inside this loop: no unclosed sockets at exit

    results, calls = asyncio.run(judge_all())
    return PairwiseReport(suite=suite, model=name, template_id=renderer.template_id,
                          template_hash=renderer.template_hash, settings=settings,
                          results=tuple(results), summary=summarize(results), calls=calls)


# --- judging --------------------------------------------------------------------------------


async def judge_pairs(suite: PairSuite, *, renderer: PromptRenderer, model: str,
                      settings: JudgeSettings, cache: JudgmentCache | None,
                      client: Completer | None, now: Callable[[], str],
                      concurrency: int = 16) -> list[PairResult]:
    """Judge every pair in both orders; ``client`` None means offline (cache only)."""
    limited = LimitedCompleter(client, asyncio.Semaphore(max(1, concurrency))) if client else None
    schema = verdict_schema()

    async def one(pair: Pair) -> PairResult:
        bundle = pair_bundle(pair)
        prompts = {order: _render(renderer, suite, pair, order, bundle) for order in ORDERS}
        verdicts = await asyncio.gather(*(
            _judge_order(order, prompts[order], model=model, settings=settings, schema=schema,
                         cache=cache, client=limited, now=now) for order in ORDERS))
        return combine(pair, verdicts)

    return list(await asyncio.gather(*(one(pair) for pair in suite.cases)))


def _render(renderer: PromptRenderer, suite: PairSuite, pair: Pair, order: Order,
            bundle: EvidenceBundle | None) -> RenderedPrompt:
    first, second = shown(pair, order)
    return renderer.render_pair(pair.input, first, second, bundle=bundle,
                                criteria=suite.criteria)


async def _judge_order(order: Order, prompt: RenderedPrompt, *, model: str,
                       settings: JudgeSettings, schema: dict[str, Any],
                       cache: JudgmentCache | None, client: Completer | None,
                       now: Callable[[], str]) -> OrderVerdict:
    """One order of one pair, through the same exchange as every rubric judgment."""
    request = JudgeRequest(model=model, messages=prompt.messages,
                           temperature=settings.temperature, seed=settings.seed,
                           schema=schema, output_mode=settings.output_mode,
                           params=settings.params)
    done = await exchange(request, parse_pair_verdict, cache=cache, client=client,
                          max_repairs=settings.max_repairs,
                          meta={"templateId": prompt.template_id,
                                "templateHash": prompt.template_hash, "mode": "pairwise",
                                "createdAt": now()})
    t = turn_totals(done.turns)  # no turns (a miss): every total None, as the defaults
    verdict = OrderVerdict(
        order=order, first="A" if order == 1 else "B", cache_key=done.key, status="cache_miss",
        reason=done.reason, cached=done.cached, repair_turns=t.repair_turns,
        output_mode=t.output_mode, prompt_tokens=t.prompt_tokens,
        completion_tokens=t.completion_tokens, cost_usd=t.cost_usd, latency_ms=t.latency_ms,
        finish_reason=t.finish_reason, model_reported=t.model_reported)
    if done.status == "cache_miss":
        return verdict
    if done.value is None:
        return verdict.model_copy(update={"status": "unscored"})
    return verdict.model_copy(update={
        "status": "judged", "winner": done.value.winner,
        "outcome": order_outcome(order, done.value.winner),
        "rationale": done.value.rationale})
