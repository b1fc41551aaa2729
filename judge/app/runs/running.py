"""Run a suite: validate, judge, store, summarise, gate — the operation behind ``judge run``.

Everything is validated before anything is created: the suite (every case, against the
rubric), the template, the judge settings. Only then are the cache folder, the store row
and the judges opened. The operation prints nothing: progress and notices go to an
observer the door passes in, and the door renders the returned :class:`RunReport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ...cache.tiers import TieredCache, TierTrust
from ...core.formats.models import CaseResult, RunInfo, RunSettings
from ...core.formats.rubric import Rubric, rubric_hash
from ...core.formats.shards import Shard
from ...core.formats.suite import (
    Case,
    HumanLabel,
    SuiteLine,
    filter_cases,
    lacks_output,
    no_output_warning,
    validate_cases,
)
from ...core.outcomes.miss_reasons import MissReason
from ...core.outcomes.summary import Summary
from ...core.scoring.calibration import check_judge
from ...core.stats.judge_quality import MeasuredAgreement
from ...core.text.errors import ConfigError, JudgeError, SuiteError, UsageError
from ...core.text.frozen import Frozen
from ...engine.judging import prepare
from ...engine.replay import ReplayIndex, code_digest
from ...engine.runner import Breaker, Progress, RunOutcome, RunPlan, execute
from ...render.prompts import PromptRenderer
from ...store.runs import RunStore
from ...system.clock import new_run_id, utc_now
from ...system.resources import KEPT_CLEAN, SuiteSource, line_crc, open_suite
from ..judges.judge_quality import run_quality, suite_labels
from ..judges.prompt_examples import with_label_examples
from ..workspace.lifecycle import owner_here
from ..workspace.workspace import JudgePool, Workspace
from .gate import EXIT_NOT_COMPARED, EXIT_REGRESSION, GateVerdict, gate, headline_results
from .misses import MISSES_EXPLAINED, explain_misses
from .sharding import GroupCheck, gate_group, group_settings

__all__ = [
    "EXIT_CACHE_MISS",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_COMPARED",
    "EXIT_NO_JUDGMENT",
    "EXIT_REGRESSION",
    "EXIT_TERMINATED",
    "NullObserver",
    "RunObserver",
    "RunReport",
    "RunRequest",
    "RunSetup",
    "run_suite",
    "run_suite_async",
    "setup_run",
]

EXIT_CACHE_MISS = 3
EXIT_NO_JUDGMENT = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class RunRequest(Frozen):
    """What to run: a suite file and filters (settings come from the workspace)."""

    suite: Path
    tags: tuple[str, ...] = ()
    complexity: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    check: bool = True
    """Compare with the suite's baseline (record one when there is none; an offline replay
    never records one)."""
    llm: bool = True
    """Judge the cases marked ``judged_by: llm`` (``--no-llm``: only the deterministic ones,
    a choice of one run, not a setting)."""
    across_judges: bool = False
    """Compare with a baseline recorded by another judge too (else refused with the reason)."""
    # -- sharded runs (judge/app/runs/sharding.py) --
    shard: Shard | None = None
    """Judge only this shard of the cases (by a stable hash of the case id)."""
    group: str | None = None
    """The group the shards make one run of; required with ``shard``."""


class RunObserver(Protocol):
    """What a door shows while a run goes: notices and progress (a bar, log lines, SSE)."""

    def notice(self, text: str) -> None:
        """A one-line notice (the default judge was chosen, ...)."""
        ...

    def started(self, progress: Progress, run: RunInfo) -> None:
        """The run is stored and judging starts; ``progress`` is updated live."""
        ...

    def result(self, result: CaseResult) -> None:
        """One judgment finished."""
        ...

    def finished(self) -> None:
        """Judging ended (normally or not)."""
        ...


class NullObserver:
    """Shows nothing."""

    def notice(self, text: str) -> None:
        """Ignore."""

    def started(self, progress: Progress, run: RunInfo) -> None:
        """Ignore."""

    def result(self, result: CaseResult) -> None:
        """Ignore."""

    def finished(self) -> None:
        """Ignore."""


@dataclass(frozen=True)
class RunReport:
    """What a run produced: the stored run, its summaries, the gate's verdict, the exit code."""

    run: RunInfo
    summary: Summary
    summaries: dict[str, Summary]
    interrupted: bool
    llm_cases: int
    offline: bool
    missing: tuple[str, ...] = ()
    """Cases offline replay could not find in the cache."""
    miss_reasons: tuple[MissReason, ...] = ()
    """For the first missed cases, what changed against the nearest cached judgment."""
    quality: MeasuredAgreement | None = None
    """The judge's measured agreement with people's labels (judge.app.judges.judge_quality)."""
    scored_llm: int = 0
    first_failure: str | None = None
    """The first unscored LLM judgment's reason."""
    verdict: GateVerdict | None = None
    notices: tuple[str, ...] = field(default=())
    terminated: bool = False
    """Stopped by SIGTERM (exit 143) rather than Ctrl-C (exit 130)."""
    group: GroupCheck | None = None
    """A sharded run: its group's state, and as one run once complete (``verdict`` is its)."""
    stopped: str | None = None
    """Why the run stopped calling its judge early (the first calls all failed the same
    way: a judge that cannot work); exit 4."""
    shared_tier: TierTrust | None = None
    """The team's shared cache tier this run read, and what its rows were checked for."""

    @property
    def no_judgment(self) -> bool:
        """Every LLM judgment failed (a judge that cannot work)."""
        return bool(self.llm_cases) and not self.offline and self.scored_llm == 0

    @property
    def exit_code(self) -> int:
        """The exit status every door maps the outcome to (documented in ``judge run --help``)."""
        if self.terminated:
            return EXIT_TERMINATED
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.missing:
            return EXIT_CACHE_MISS
        if self.no_judgment:
            return EXIT_NO_JUDGMENT
        return 0 if self.verdict is None else self.verdict.exit_code


@dataclass
class _Selected:
    source: SuiteSource
    rubric: Rubric
    kept: bytearray
    """Per case: judged in the second pass (non-zero; ``KEPT_CLEAN``: its line needs no
    masking) or not."""
    crcs: array[int]
    """Per case: the CRC-32 of its line when it is marked :data:`KEPT_CLEAN`, else 0."""
    count: int
    llm_count: int
    no_output: tuple[str, ...] = ()
    """Warnings about selected cases with no ``output`` (at most one line)."""
    humans: dict[str, HumanLabel] = field(default_factory=dict)
    """People's labels of the selected cases (their ``human:`` fields), by case id."""


def _select(workspace: Workspace, request: RunRequest) -> _Selected:
    """One validating pass over the whole suite (streamed for JSONL), with the filters."""
    # A YAML suite is read from its compiled form in the cache folder when it has one
    # (judge.system.resources.SuiteSource); reading creates nothing.
    s = workspace.settings
    code = code_digest() if s.cache_mode != "off" else None
    source = open_suite(workspace.path(request.suite),
                        compiled_dir=workspace.path(s.cache_dir) / "suites",
                        salt=code.encode() if code is not None else None,
                        values=workspace.secret_pattern)
    try:
        rubric = workspace.rubric(default=source.rubric)
    except ConfigError as exc:
        if workspace.settings.rubric or source.rubric is None:
            raise
        # The rubric was named by the suite: say which file named it.
        raise type(exc)(f"{exc.message} (rubric {source.rubric!r} named by suite "
                        f"{request.suite})", file=exc.file, where=exc.where, fix=exc.fix) \
            from None
    ids, llm = set(request.ids), request.llm

    def wanted(case: Case) -> bool:
        return bool(filter_cases([case], tags=request.tags, complexity=request.complexity,
                                 ids=request.ids)) and (llm or case.judged_by == "deterministic")

    shard = request.shard
    matched = 0  # cases the filters keep before the shard's partition
    count = llm_count = 0
    first_ids: list[str] = []
    found: set[str] = set()
    kept = bytearray()  # one byte per case: judged in the second pass or not (100 KB per 100k)
    # Four bytes per case (400 KB per 100k): a kept line that masking left unchanged is
    # validated again without the secret walk, once its text is known to be the same.
    crcs = array("I")
    any_llm = False
    bare: list[str] = []
    bare_count = 0
    humans: dict[str, HumanLabel] = {}
    for case, line in source.checked():
        validate_cases((case,), rubric, str(request.suite))
        if len(first_ids) < 5:
            first_ids.append(case.id)
        found.update({case.id} & ids)
        any_llm = any_llm or case.judged_by == "llm"
        kept.append(wanted(case))
        matched += kept[-1]
        if kept[-1] and shard is not None and not shard.holds(case.id):
            kept[-1] = False
        if kept[-1] and line is not None and line.clean:
            kept[-1] = KEPT_CLEAN
            crcs.append(line_crc(line.text))
        else:
            crcs.append(0)
        if kept[-1]:
            count += 1
            llm_count += case.judged_by == "llm"
            if case.human is not None:
                humans[case.id] = case.human
            if lacks_output(case):
                bare_count += 1
                bare += [case.id] if len(bare) < 5 else []
    unknown = sorted(ids - found)
    if unknown:
        raise SuiteError(f"no case {unknown[0]!r}", file=str(request.suite),
                         fix="known ids start with: " + ", ".join(first_ids))
    if not matched:
        fix = ("drop --no-llm: every selected case is judged by the LLM" if not llm and any_llm
               else "loosen --tag/--complexity/--case")
        raise UsageError("no case left to run after the filters", fix=fix)
    warning = (no_output_warning(bare, bare_count, str(request.suite)),) if bare_count else ()
    return _Selected(source, rubric, kept, crcs, count, llm_count, warning, humans)


class _Tally:
    """The run store as a run's sink, counting what the report needs as the results go in.

    The same figures as reading the run's results back (the store holds exactly what this
    sink was given, one row per case, judge and sample), without parsing them again.
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.scored = 0
        self.missing: set[str] = set()
        self._missed: list[CaseResult] = []
        self._first: tuple[tuple[str, str, int], str | None] | None = None

    def add_results(self, run_id: str, results: Sequence[CaseResult]) -> None:
        self.store.add_results(run_id, results)
        for r in results:
            if r.status == "cache_miss":
                self.missing.add(r.id)
                self._keep_missed(r)
            if r.judged_by != "llm":
                continue
            if r.status == "scored":
                self.scored += 1
                continue
            # The first in the store's order (case id, model, sample), as a read-back finds.
            key = (r.id, "", 0) if r.judge is None else (r.id, r.judge.model, r.judge.sample)
            if self._first is None or key < self._first[0]:
                self._first = (key, r.reason)

    def _keep_missed(self, result: CaseResult) -> None:
        self._missed.append(result)
        if len(self._missed) > 2 * MISSES_EXPLAINED:
            self._missed = self.missed

    @property
    def missed(self) -> list[CaseResult]:
        """The first :data:`MISSES_EXPLAINED` missed results by case id (bounded memory)."""
        return sorted(self._missed, key=lambda r: r.id)[:MISSES_EXPLAINED]

    @property
    def first(self) -> str | None:
        """The reason of the first LLM-judged result that was not scored."""
        return None if self._first is None else self._first[1]


class _Run:
    """One run from validation to the stored record; holds what the report needs."""

    def __init__(self, workspace: Workspace, request: RunRequest, observer: RunObserver,
                 now: Callable[[], str]) -> None:
        self.ws, self.request, self.observer, self.now = workspace, request, observer, now
        self.sharding = group_settings(request.shard, request.group)
        s = workspace.settings
        self.selected = _select(workspace, request)
        self.needs_judge = self.selected.llm_count > 0
        self.offline = s.cache_mode == "offline"
        self.models, notice = workspace.resolve_models(needs_judge=self.needs_judge,
                                                       offline=self.offline)
        self.notices = (*self.selected.no_output, *((notice,) if notice else ()))
        if s.samples > 1 and s.seed is None:
            raise UsageError("--samples needs a seed: without one every sample is the same "
                             "request and the same cached judgment", fix="pass --seed N")
        # The template is read and checked here, before any folder or row exists.
        self.renderer: PromptRenderer | None = workspace.renderer() if self.needs_judge else None
        self.rubric = self.selected.rubric
        if self.rubric.calibrated is not None and self.needs_judge:
            for model in self.models:  # a calibration maps one judge's scores, no other's
                check_judge(self.rubric.calibrated[2], model, "this run")
        if self.renderer is not None:  # the people's labelled examples, when the rubric asks
            source = self.selected.source
            self.renderer, none = with_label_examples(
                self.renderer, self.rubric, source.id, source.cases(),
                workspace.path(request.suite), workspace.sealer)
            self.notices = (*self.notices, *((none,) if none else ()))
        self.rubric_hash = rubric_hash(self.rubric)
        self.plan = self._plan()
        self.shared_tier: TierTrust | None = None
        if s.cache_mode != "off":
            workspace.check_cache()
        self._render_first()

    def _render_first(self) -> None:
        """Render the first judged case's prompt, before any folder, row or judge exists.

        A template that fails while rendering (a filter on case text, an undefined name, a
        budget) is then bad input that wrote nothing. One prompt, not every case's: a
        template that fails only on a later case fails the run once it is stored.
        """
        if self.renderer is None:
            return
        for item in self._cases():
            case = item if isinstance(item, Case) else item.case()
            if case.judged_by == "llm":
                prepare(case, self.rubric, self.renderer)
                return

    def _plan(self) -> RunPlan:
        s = self.ws.settings
        r = self.renderer
        run = RunInfo(
            id=new_run_id(self.now()), suite=self.selected.source.id,
            suite_path=str(self.request.suite), rubric=self.rubric.id,
            rubric_hash=self.rubric_hash, models=tuple(self.models), seed=s.seed,
            temperature=s.temperature, samples=s.samples,
            panel=s.panel if len(self.models) > 1 else None,
            template_id=r.template_id if r else "none",
            template_hash=r.template_hash if r else "none", created_at=self.now(),
            settings=RunSettings(
                cache_mode=s.cache_mode, concurrency=s.concurrency, output_mode=s.output_mode,
                max_repairs=s.max_repairs, max_tokens=s.max_tokens, cases=self.selected.count,
                llm=self.request.llm, stable_schema=True if s.stable_schema else None,
                sample_aggregate=s.sample_aggregate if s.samples > 1 else None,
                group=self.sharding.group, shard=self.sharding.shard),
            owner=owner_here(),
        )
        return RunPlan(run=run, rubric=self.rubric, rubric_hash=self.rubric_hash,
                       models=tuple(self.models), settings=self.ws.judge_settings(),
                       samples=s.samples, concurrency=s.concurrency, panel=run.panel,
                       sample_aggregate=s.sample_aggregate)

    def _cases(self) -> Iterator[Case | SuiteLine]:
        return self.selected.source.items(self.selected.kept, self.selected.crcs)

    async def judge(self) -> RunReport:
        """Judge, store and gate; the store records the run even when interrupted."""
        for text in self.notices:
            self.observer.notice(text)
        s, plan = self.ws.settings, self.plan
        pool: JudgePool | None = None
        outcome: RunOutcome | None = None
        # The first min(8, concurrency) calls all failing for a configuration reason stop
        # the calls: a judge that cannot work is found before the suite is spent.
        breaker = Breaker(min(8, s.concurrency))
        # The store first: one that cannot be reached (a wrong --store URL) is refused
        # before the cache folder is made.
        with self.ws.open_store(create=True) as store:
            tally = _Tally(store)
            cache = self.ws.open_cache(notice=self.observer.notice)
            if isinstance(cache, TieredCache):
                self.shared_tier = cache.trust()
                if self.shared_tier.notice is not None:  # said once, before any judgment
                    self.observer.notice(self.shared_tier.notice)
            try:
                if cache is not None and cache.mode in ("read-write", "refresh", "offline"):
                    self.selected.source.save_compiled()  # derived, as the replay index is
                index = None if self.renderer is None else ReplayIndex.open(
                    cache, plan.rubric, plan.rubric_hash, template_id=self.renderer.template_id,
                    template_hash=self.renderer.template_hash, settings=plan.settings)
                if not self.offline and self.needs_judge:
                    pool = self.ws.judges.open(self.ws, self.models)
                store.create_run(plan.run)
                per_case = len(self.models) * s.samples if self.renderer is not None else 1
                progress = Progress(total=self.selected.llm_count * per_case
                                    + (self.selected.count - self.selected.llm_count))
                self.observer.started(progress, plan.run)
                try:
                    outcome = await execute(plan, self._cases(), renderer=self.renderer,
                                            cache=cache,
                                            clients=pool.clients if pool else None,
                                            sink=tally, now=self.now, progress=progress,
                                            on_result=self.observer.result, index=index,
                                            breaker=breaker, redact=self.ws.redactor)
                except JudgeError:
                    # A damaged cache file, say: the error names it; the run is not left
                    # "running" for the next command to find, it failed.
                    with contextlib.suppress(JudgeError):
                        store.finish_run(plan.run.id, totals=plan.run.totals, status="failed")
                    raise
                finally:
                    self.observer.finished()
            finally:
                if cache is not None:
                    cache.close()
                if pool is not None:
                    try:
                        await pool.aclose()
                    except asyncio.CancelledError:
                        # Ctrl-C while closing: whatever was judged is stored, so record the
                        # run below rather than leave it "running".
                        pass
            assert outcome is not None
            return self._report(store, tally, outcome, breaker.reason)

    def _report(self, store: RunStore, tally: _Tally, outcome: RunOutcome,
                stopped: str | None = None) -> RunReport:
        run_id = outcome.run.id
        scored, first, missing = tally.scored, tally.first, tally.missing
        status = outcome.run.status
        if status == "complete" and self.selected.llm_count and not self.offline and not scored:
            status = "failed"  # a judge that cannot work: never a baseline, never compared
        run = store.finish_run(run_id, totals=outcome.run.totals, status=status)
        verdict = None
        group: GroupCheck | None = None
        if self.request.group is not None:
            # A shard: the gate is the group's, once its last shard is in.
            group = gate_group(self.ws, store, self.request.group, run.suite,
                               record=self.request.check)
            verdict = group.verdict if self.request.check else None
        elif self.request.check and not outcome.interrupted:
            # An offline replay reproduces judgments; it never makes a baseline.
            verdict = gate(self.ws, run, headline_results(store, run), record=not self.offline,
                           across_judges=self.request.across_judges)
        reasons = self._miss_reasons(run, tally.missed) if missing else ()
        quality = None
        if self.needs_judge and not outcome.interrupted and status == "complete":
            quality = run_quality(self.ws, run, suite_labels(
                self.selected.humans, self.ws.path(self.request.suite), self.rubric,
                self.ws.sealer))
        return RunReport(run=run, summary=outcome.summary, summaries=outcome.summaries,
                         interrupted=outcome.interrupted, llm_cases=self.selected.llm_count,
                         offline=self.offline, missing=tuple(sorted(missing)),
                         miss_reasons=reasons, quality=quality,
                         scored_llm=scored, first_failure=stopped or first, verdict=verdict,
                         notices=self.notices, group=group,
                         stopped=stopped if not scored else None,
                         shared_tier=self.shared_tier)


    def _miss_reasons(self, run: RunInfo, missed: Sequence[CaseResult]) -> tuple[MissReason, ...]:
        """What changed in the first missed requests against the nearest cached judgments."""
        return explain_misses(self.ws, run_id=run.id, suite=run.suite, missed=missed,
                              cases=self._cases(), rubric=self.rubric,
                              rubric_hash=self.rubric_hash, renderer=self.renderer,
                              settings=self.plan.settings)


@dataclass(frozen=True)
class RunSetup:
    """A run validated as :func:`run_suite` validates it, before any folder, row or judge.

    For operations that judge a suite's cases their own way (a provider batch, a canary)
    with exactly the requests a run would make.
    """

    plan: RunPlan
    renderer: PromptRenderer | None
    notices: tuple[str, ...]
    llm_count: int
    _job: _Run = field(repr=False)

    def cases(self) -> Iterator[Case | SuiteLine]:
        """The selected cases, streamed in suite order."""
        return self._job._cases()


def setup_run(workspace: Workspace, request: RunRequest, *,
              now: Callable[[], str] = utc_now) -> RunSetup:
    """Validate ``request`` as a run would; raises ConfigError/UsageError on bad input."""
    job = _Run(workspace, request, NullObserver(), now)
    return RunSetup(plan=job.plan, renderer=job.renderer, notices=job.notices,
                    llm_count=job.selected.llm_count, _job=job)


async def run_suite_async(workspace: Workspace, request: RunRequest, *,
                          observer: RunObserver | None = None,
                          now: Callable[[], str] = utc_now) -> RunReport:
    """Judge a suite in the running event loop (the HTTP API); see :func:`run_suite`."""
    return await _Run(workspace, request, observer or NullObserver(), now).judge()


def run_suite(workspace: Workspace, request: RunRequest, *,
              observer: RunObserver | None = None,
              now: Callable[[], str] = utc_now) -> RunReport:
    """Validate, judge, store, summarise and gate one suite; raises ConfigError on bad input.

    Ctrl-C stores what was judged and returns a report with ``interrupted`` set.
    """
    job = _Run(workspace, request, observer or NullObserver(), now)
    report: list[RunReport] = []
    terminated: list[bool] = []

    async def go() -> None:
        # SIGTERM (CI cancellation, `docker stop`) is handled like Ctrl-C: the run stores
        # what was judged and is marked interrupted. Only the main thread may install it.
        main = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def on_term() -> None:
            terminated.append(True)
            if main is not None:
                main.cancel()

        try:
            loop.add_signal_handler(signal.SIGTERM, on_term)
        except (RuntimeError, ValueError, NotImplementedError):
            pass
        try:
            report.append(await job.judge())
        finally:
            with contextlib.suppress(RuntimeError, ValueError, NotImplementedError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        asyncio.run(go())
    except KeyboardInterrupt:
        # asyncio re-raises Ctrl-C after the run has stored what it judged and finished.
        if not report:
            raise
    if terminated and report:
        return dataclasses.replace(report[0], terminated=True, interrupted=True)
    return report[0]
