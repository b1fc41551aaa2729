"""Drift canaries: re-ask a seeded sample of cached judgments live and compare the verdicts.

The sample is drawn (the one seeded source, :mod:`judge.core.stats.seeded`) from the suite's
judgments that are in the cache under the requests a run would make now, so the canary asks
exactly what the cached verdict answered. The fresh call never touches the cache: it goes through
:func:`judge.engine.judging.exchange` with no cache at all (no read, no write), and the cache is
opened read-only only to read the verdicts compared against.

The comparison is stored as a run of its own suite id ``<suite>:canary`` (settings
``kind: canary``), so it has a history and is never taken for the suite's latest run by
the gate or a baseline. Tolerance per category: the judge's measured noise (the mean
spread of the newest complete ``--samples K`` run of the suite with the same judge), else
the ``threshold`` setting in points, else ``--tolerance``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from ...cache.disk import JudgmentCache
from ...cache.entry import cache_key
from ...core.formats.models import CaseResult, RunInfo, RunTotals
from ...core.formats.suite import Case
from ...core.formats.turns import CachedTurn, turn_totals
from ...core.scoring.replies import parse_verdict
from ...core.stats.drift import CanaryItem, DriftSummary, Tolerance, compare_verdicts, summarize
from ...core.stats.judge_health import HealthBuilder
from ...core.stats.seeded import SplitMix64
from ...core.text.errors import OutputError, UsageError
from ...core.text.frozen import Frozen
from ...engine.judging import (
    build_request,
    exchange,
    judge_meta,
    prepare,
    scored_result,
    verdict_reader,
)
from ...store.runs import RunStore
from ...system.clock import new_run_id, utc_now
from ..runs.running import RunRequest, RunSetup, setup_run
from ..workspace.lifecycle import owner_here
from ..workspace.workspace import Workspace

__all__ = ["EXIT_DRIFT", "EXIT_NO_CANARY", "CanaryReport", "CanaryRequest", "run_canary"]

EXIT_DRIFT = 1
EXIT_NO_CANARY = 4
"""No fresh verdict could be compared (nothing cached, or every fresh call failed)."""


class CanaryRequest(Frozen):
    """Which suite, how many cached judgments to re-ask, and the sample's seed."""

    suite: Any
    """The suite file (a path)."""
    sample: int = Field(default=20, ge=1, le=100_000)
    seed: int = 0
    tolerance: float | None = Field(default=None, ge=0, le=100)
    """Points of mean absolute AI-score difference allowed per category (overrides the
    measured noise and the threshold)."""


@dataclass(frozen=True)
class CanaryReport:
    """The canary's items, its verdict, and the run that stores it."""

    run: RunInfo
    items: tuple[CanaryItem, ...]
    summary: DriftSummary
    looked: int
    """Judgments looked up (in the seeded order) to fill the sample from the cached ones."""

    @property
    def exit_code(self) -> int:
        """1 drifted, 4 nothing compared, else 0."""
        if not self.summary.compared:
            return EXIT_NO_CANARY
        return EXIT_DRIFT if self.summary.drifted else 0


@dataclass(frozen=True)
class _Pick:
    case: Case
    model: str
    sample: int


def _candidates(setup: RunSetup) -> list[_Pick]:
    if setup.renderer is None:
        return []
    plan = setup.plan
    picks = []
    for item in setup.cases():
        case = item if isinstance(item, Case) else item.case()
        if case.judged_by == "llm":
            picks += [_Pick(case, m, s) for m in plan.models for s in range(plan.samples)]
    return picks


def _cached_verdict(cache: JudgmentCache, setup: RunSetup, pick: _Pick) -> Any:
    prep = prepare(pick.case, setup.plan.rubric, setup.renderer)
    request = build_request(prep, pick.model, setup.plan.settings, pick.sample)
    key = cache_key(request.key_material())
    turns = cache.turns(key, count=False)
    if not turns:
        return None
    reader = verdict_reader(setup.plan.rubric, prep.citable(), setup.plan.settings)
    try:
        verdict = reader(turns[-1]) if reader is not None else parse_verdict(
            turns[-1].text, setup.plan.rubric, prep.citable())
    except OutputError:
        return None
    return prep, request, key, turns, verdict


def _tolerances(store: RunStore, suite: str, models: tuple[str, ...],
                default: Tolerance) -> dict[str, Tolerance]:
    """Mean per-category spread of the newest complete --samples run with these judges."""
    for run in store.list_runs(suite, limit=200):
        if run.status != "complete" or run.samples < 2 or run.models != models:
            continue
        spreads: dict[str, list[int]] = {}
        for r in store.iter_results(run.id):
            if r.judge is None or r.judge.sample != -1 or r.judge.model != models[0]:
                continue
            for c in r.category_scores:
                if c.spread is not None:
                    spreads.setdefault(c.category, []).append(c.spread)
        if spreads:
            source = f"measured noise (run {run.id}, {run.samples} samples)"
            return {c: Tolerance(points=round(sum(v) / len(v), 2), source=source)
                    for c, v in spreads.items()}
    return {}


def _fingerprint(turns: Sequence[CachedTurn]) -> str | None:
    return turns[-1].system_fingerprint if turns else None


async def _ask(ws: Workspace, setup: RunSetup, chosen: list[Any],
               now: Callable[[], str]) -> tuple[list[CanaryItem], list[CaseResult], int]:
    plan, renderer = setup.plan, setup.renderer
    assert renderer is not None
    pool = ws.judges.open(ws, plan.models)
    limit = asyncio.Semaphore(ws.settings.concurrency)

    async def one(pick: _Pick, found: Any) -> tuple[CanaryItem, CaseResult]:
        prep, request, key, cached_turns, cached = found
        async with limit:
            done = await exchange(request, functools.partial(
                parse_verdict, rubric=plan.rubric, ids=prep.citable()), cache=None,
                client=pool.clients[pick.model], max_repairs=plan.settings.max_repairs,
                meta={}, parse_turn=verdict_reader(plan.rubric, prep.citable(),
                                                   plan.settings))
        meta = judge_meta(pick.model, plan.settings, key, done.turns, cached=False,
                          sample=pick.sample, template_id=renderer.template_id,
                          template_hash=renderer.template_hash, rubric_hash=plan.rubric_hash)
        before = scored_result(prep, plan.rubric, cached, None, None)
        base = {"case": pick.case.id, "model": pick.model, "sample": pick.sample, "key": key,
                "cachedOverall": before.overall_score, "cachedBand": before.band,
                "cachedModel": turn_totals(cached_turns).model_reported,
                "cachedFingerprint": _fingerprint(cached_turns)}
        if done.value is None:
            reason = done.reason or "no verdict"
            result = CaseResult(id=prep.case_id, status="unscored", reason=reason, judge=meta,
                                tags=prep.tags, complexity=prep.complexity)
            return CanaryItem(**base, status="failed", reason=reason), result
        result = scored_result(prep, plan.rubric, done.value, meta, None)
        exact, diffs = compare_verdicts(cached, done.value)
        return CanaryItem(**base, status="compared", exact=exact, diffs=diffs,
                          fresh_overall=result.overall_score, fresh_band=result.band,
                          fresh_model=meta.model_reported,
                          fresh_fingerprint=_fingerprint(done.turns)), result

    try:
        pairs = await asyncio.gather(*(one(p, f) for p, f in chosen))
    finally:
        await pool.aclose()
    calls = sum(int(getattr(c, "attempts", 0)) for c in pool.clients.values())
    return [p[0] for p in pairs], [p[1] for p in pairs], calls


def run_canary(ws: Workspace, request: CanaryRequest, *,
               now: Callable[[], str] = utc_now) -> CanaryReport:
    """Re-ask a seeded sample of cached judgments live, compare, store the comparison."""
    if ws.settings.cache_mode == "off":
        raise UsageError("a canary compares with cached verdicts, but the cache is off",
                         fix="drop --cache-mode off")
    setup = setup_run(ws, RunRequest(suite=request.suite, check=False), now=now)
    cache = ws.open_cache("read-only")
    assert cache is not None
    picks = _candidates(setup)
    order = SplitMix64(request.seed).shuffled(range(len(picks)))
    chosen: list[Any] = []
    looked = 0
    try:
        for index in order:  # in the seeded order, until the sample is full
            if len(chosen) >= request.sample:
                break
            looked += 1
            found = _cached_verdict(cache, setup, picks[index])
            if found is not None:
                chosen.append((picks[index], found))
    finally:
        cache.close()
    if not chosen:
        raise UsageError(f"no judgment of {request.suite} is in the cache under the current "
                         f"settings: nothing to compare with",
                         fix="judge the suite first (`judge run SUITE`) with the same model, "
                             "rubric, template and seed")
    items, results, calls = asyncio.run(_ask(ws, setup, chosen, now))
    plan = setup.plan
    default = Tolerance(points=request.tolerance, source="flag") if request.tolerance is not None \
        else Tolerance(points=round(ws.settings.threshold * 100, 2), source="threshold")
    with ws.open_store(create=True) as store:
        measured = {} if request.tolerance is not None else _tolerances(
            store, plan.run.suite, plan.models, default)
        summary = _with_health(summarize(items, measured, default), results,
                               setup.renderer.source_text if setup.renderer else "")
        run = _store(store, setup, request, summary, results, calls, now)
    return CanaryReport(run=run, items=tuple(items), summary=summary, looked=looked)


def _with_health(summary: DriftSummary, results: list[CaseResult],
                 template_text: str) -> DriftSummary:
    """The summary with the judge-health check over the fresh verdicts (its problems noticed)."""
    health = HealthBuilder(template_text)
    for result in results:
        health.add(result)
    built = health.build()
    notices = tuple(f"judge health: {p}" for p in built.problems) if built else ()
    return summary.model_copy(update={"judge_health": built,
                                      "notices": (*summary.notices, *notices)})


def _store(store: RunStore, setup: RunSetup, request: CanaryRequest, summary: DriftSummary,
           results: list[CaseResult], calls: int, now: Callable[[], str]) -> RunInfo:
    plan = setup.plan
    suite = plan.run.suite
    verdict: Mapping[str, Any] = summary.model_dump(mode="json", exclude={"categories"})
    run = plan.run.model_copy(update={
        "id": new_run_id(now()), "suite": f"{suite}:canary", "created_at": now(),
        "owner": owner_here(),
        "settings": plan.run.settings.model_copy(update={
            "kind": "canary", "canary_of": suite, "sample": request.sample,
            "sample_seed": request.seed, "canary": dict(verdict)})})
    store.create_run(run)
    store.add_results(run.id, results)
    cost = [r.judge.cost_usd for r in results if r.judge is not None]
    totals = RunTotals(
        cases=len({r.id for r in results}), scored=sum(r.status == "scored" for r in results),
        unscored=sum(r.status == "unscored" for r in results), calls=calls,
        prompt_tokens=sum((r.judge.prompt_tokens or 0) for r in results if r.judge),
        completion_tokens=sum((r.judge.completion_tokens or 0) for r in results if r.judge),
        cost_usd=None if any(c is None for c in cost) else round(sum(c or 0 for c in cost), 10),
        judgments=len(results), judged_anew=len(results))
    return store.finish_run(run.id, totals=totals, status="complete")
