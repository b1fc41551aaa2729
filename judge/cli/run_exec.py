"""Wiring of one ``judge run``: cache, store, judge clients, progress, baseline comparison."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..models import CaseResult, RunInfo
from ..rubric import Rubric
from ..runner import Progress, RunOutcome
from ..suite import Case, SuiteLine

if TYPE_CHECKING:
    from ..judging import JudgeSettings

__all__ = ["Execution"]


@dataclass
class Execution:
    """One run from start to report; holds what the report needs afterwards."""

    config: Config
    suite_id: str
    suite_path: Path
    rubric: Rubric
    rubric_hash: str
    models: list[str]
    cases: Callable[[], Iterator[Case | SuiteLine]]
    """Streams the cases to judge (filters applied): a large suite is never all in memory."""
    case_count: int
    llm_count: int
    offline: bool
    needs_judge: bool
    now: Callable[[], str]
    run_id: str
    outcome: RunOutcome | None = None
    store: Any = None
    _stops: list[Callable[[], None]] = field(default_factory=list)

    def _path(self, value: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() else self.config.workspace / path

    def _clients(self) -> dict[str, Any]:
        from ..client import LiteLLMClient, ModelSpec

        clients: dict[str, Any] = {}
        for name in self.models:
            call_name, api_base, engine, own = name, self.config["api_base"], None, None
            if name.startswith("local/"):
                from ..local import engine_info, ensure_server

                server = ensure_server(name, self.config.workspace)
                call_name, api_base, engine = server.litellm_model, server.api_base, \
                    engine_info(name)
                self._stops.append(server.release)
                own = 1  # llama-cpp-python's server generates one completion at a time
            clients[name] = LiteLLMClient(ModelSpec(
                name=call_name, api_base=api_base, api_key=os.environ.get("JUDGE_API_KEY"),
                output_mode=self.config["output_mode"], timeout=self.config["timeout"],
                max_attempts=self.config["max_attempts"], engine=engine,
                max_concurrency=own))
        return clients

    def _plan(self, template_id: str, template_hash: str) -> Any:
        from ..runner import RunPlan

        c = self.config
        if c["samples"] > 1 and c["seed"] is None:
            from ..errors import UsageError

            raise UsageError("--samples needs a seed: without one every sample is the same "
                             "request and the same cached judgment", fix="pass --seed N")
        settings = judge_settings(c)
        run = RunInfo(
            id=self.run_id, suite=self.suite_id, suitePath=str(self.suite_path),
            rubric=self.rubric.id, rubricHash=self.rubric_hash, models=tuple(self.models),
            seed=c["seed"], temperature=c["temperature"], samples=c["samples"],
            panel=c["panel"] if len(self.models) > 1 else None,
            templateId=template_id, templateHash=template_hash, createdAt=self.now(),
            settings={"cacheMode": c["cache_mode"], "concurrency": c["concurrency"],
                      "outputMode": c["output_mode"], "maxRepairs": c["max_repairs"],
                      "maxTokens": c["max_tokens"], "cases": self.case_count,
                      "llm": c["llm"]},
        )
        return RunPlan(run=run, rubric=self.rubric, rubric_hash=self.rubric_hash,
                       models=tuple(self.models), settings=settings, samples=c["samples"],
                       concurrency=c["concurrency"], panel=run.panel)

    async def start(self) -> RunOutcome:
        """Judge, store and summarise; the store records the run even when interrupted."""
        from ..cache import JudgmentCache
        from ..prompts import PromptRenderer
        from ..replay import ReplayIndex
        from ..runner import execute
        from ..store import RunStore

        c = self.config
        renderer = PromptRenderer(c["template"], c.workspace) if self.needs_judge else None
        cache = None if c["cache_mode"] == "off" else JudgmentCache(self._path(c["cache_dir"]),
                                                                    c["cache_mode"])
        plan = self._plan(renderer.template_id if renderer else "none",
                          renderer.template_hash if renderer else "none")
        index = None if renderer is None else ReplayIndex.open(
            cache, plan.rubric, plan.rubric_hash, template_id=renderer.template_id,
            template_hash=renderer.template_hash, settings=plan.settings)
        self.store = RunStore(c["store_url"], workspace=c.workspace)
        clients = None if self.offline or not self.needs_judge else self._clients()
        self.store.create_run(plan.run)
        per_case = len(self.models) * c["samples"] if renderer is not None else 1
        progress = Progress(total=self.llm_count * per_case
                            + (self.case_count - self.llm_count))
        display = _Display(progress)
        _settle_heap()
        try:
            self.outcome = await execute(plan, self.cases(), renderer=renderer, cache=cache,
                                         clients=clients, sink=self.store, now=self.now,
                                         progress=progress, on_result=display.tick, index=index)
        finally:
            display.close()
            for stop in self._stops:
                stop()
            if cache is not None:
                cache.close()
            if clients:
                from ..client import aclose_clients, quiet_exit

                try:
                    await aclose_clients()
                except asyncio.CancelledError:
                    # Ctrl-C while closing: whatever was judged is stored, so record the
                    # run below rather than leave it "running" (asyncio re-raises Ctrl-C).
                    pass
                quiet_exit()
        self.store.finish_run(plan.run.id, totals=self.outcome.run.totals,
                              status=self.outcome.run.status)
        return self.outcome

    def results(self) -> Iterator[CaseResult]:
        """The run's stored results, in case order."""
        assert self.outcome is not None
        return self.store.iter_results(self.outcome.run.id)  # type: ignore[no-any-return]

    def first_failure(self) -> tuple[int, str | None]:
        """How many LLM judgments were scored, and the first failure's reason."""
        scored, reason = 0, None
        for r in self.results():
            if r.judgedBy != "llm":
                continue
            if r.status == "scored":
                scored += 1
            elif reason is None:
                reason = r.reason
        return scored, reason

    def missing_cases(self) -> list[str]:
        """Ids of cases that offline replay could not find in the cache."""
        return sorted({r.id for r in self.results() if r.status == "cache_miss"})

    def compare(self) -> dict[str, Any] | None:
        """Compare with the suite's baseline; record one when there is none."""
        from ..baseline import build_baseline, compare, pick_primary
        from ..baselines_io import baseline_path, load_baseline, save_baseline
        from ..panel import headline_of

        assert self.outcome is not None
        c = self.config
        path = baseline_path(c.workspace / c["baselines_dir"], self.suite_id)
        # The headline result per case: the panel, a judge's sample aggregate, or its judgment.
        primary = pick_primary(self.results(), headline_of(self.outcome.run)[0])
        if not path.exists():
            s = self.outcome.summary
            if s.cacheMisses or s.unscored:
                # A baseline recorded from a run that could not judge everything would hide
                # those cases from the gate forever: wait for a clean run.
                return {"baselineRecorded": False, "hasRegression": False,
                        "skipped": f"no baseline recorded: {s.unscored} unscored and "
                                   f"{s.cacheMisses} missing case(s) in this run"}
            spreads = {r.id: r.spread for r in primary if r.spread is not None}
            try:
                baseline = build_baseline(self.suite_id, self.rubric.id, self.rubric_hash,
                                          tuple(self.models), primary,
                                          run_id=self.outcome.run.id, threshold=c["threshold"],
                                          spreads=spreads)
            except ValueError:
                return None  # no scored case: such a baseline could never catch a regression
            save_baseline(path, baseline)
            return {"baselineRecorded": True, "baselinePath": str(path),
                    "baselineId": baseline.baselineId, "hasRegression": False}
        comparison = compare(load_baseline(path), primary, threshold=c["threshold"])
        return {**comparison.model_dump(mode="json"), "baselineRecorded": False,
                "baselinePath": str(path)}


def judge_settings(config: Config) -> JudgeSettings:
    """The call settings a run's config gives (part of every cache key)."""
    from ..judging import JudgeSettings

    return JudgeSettings(temperature=config["temperature"], seed=config["seed"],
                         output_mode=config["output_mode"], max_repairs=config["max_repairs"],
                         params={"max_tokens": config["max_tokens"]})


def _settle_heap() -> None:
    """Move what set-up built (modules, models, the rubric) out of the collector's sight.

    A run allocates and drops small objects by the million. With the default thresholds
    the cyclic collector runs every 700 allocations and its full passes rescan every
    long-lived object: measured, 35-40 % of a replay's time. Freezing the set-up heap and
    collecting young objects less often keeps that to a few percent; memory stays bounded
    because the run streams (nothing it allocates lives long).
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


class _Display:
    """Progress on stderr: a rich bar on a terminal, a plain line every few seconds otherwise."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.bar: Any = None
        self.last = time.monotonic()
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            from .output import err_console

            self.bar = Bar(TextColumn("judging"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[info]}"), TimeRemainingColumn(),
                           console=err_console(), transient=True)
            self.task = self.bar.add_task("run", total=progress.total, info="")
            self.bar.start()

    def _info(self) -> str:
        p = self.progress
        cost = f"${p.cost:.4f}" if p.cost_known else "cost unknown"
        return (f"hits {p.cache_hits} · unscored {p.unscored} · tokens "
                f"{p.prompt_tokens + p.completion_tokens} · {cost}")

    def tick(self, result: CaseResult) -> None:
        """Update after one result."""
        if self.bar is not None:
            self.bar.update(self.task, completed=self.progress.done, info=self._info())
            return
        now = time.monotonic()
        if now - self.last >= 5 or self.progress.done == self.progress.total:
            self.last = now
            print(f"judged {self.progress.done}/{self.progress.total} · {self._info()}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop the bar."""
        if self.bar is not None:
            self.bar.stop()
