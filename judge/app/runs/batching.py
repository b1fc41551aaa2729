"""Provider batch mode through the cache: submit a run's cache misses as batch jobs, collect.

``submit_batch`` renders every case exactly as :func:`judge.app.runs.running.run_suite` would
(:func:`judge.app.runs.running.setup_run`, :func:`judge.engine.judging.build_request`,
:func:`judge.cache.entry.cache_key`), sends the judgments the cache cannot answer as provider
batch jobs (one per judge model, split at the provider's file limits) with ``custom_id`` =
the cache key, stores the job in the run store and returns at once.

``collect_batch`` polls; once every provider job has ended it downloads the results and
puts each answer through :func:`judge.engine.judging.exchange`, the loop a live call goes through:
the batch's reply is the first turn, parsed and validated as a live reply is, a repair
turn is a live call, and only a valid verdict is cached, under the key a live call would
use. Then the run finishes on the replay path (``run_suite`` in read-write mode finds the
answers in the cache) and is scored, stored and gated as any run. Items the batch did not
answer (an item error, an expired or cancelled job) are asked live then, or, without live
fallback, left unscored with the reason; an answer still invalid after its repair turns is
left unscored with its reason and never asked again.

Resuming: each step writes the job document whole; the cache is the record of what was
collected (a collected answer is a hit, never written twice); a provider job whose creation
was not recorded is found again by its metadata tag before anything is re-sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...cache.disk import JudgmentCache
from ...cache.entry import cache_key
from ...core.formats.models import CaseResult, JudgeLedger, RunTotals
from ...core.formats.suite import Case
from ...core.outcomes.usage import ZERO, Usage, cost_fraction
from ...core.scoring.replies import parse_verdict
from ...core.text.errors import PermanentProviderError, UsageError
from ...engine.judging import (
    Completer,
    ForwardingCompleter,
    Prepared,
    build_request,
    exchange,
    prepare,
)
from ...llm.batch import (
    BatchClient,
    BatchItem,
    BatchLine,
    BatchState,
    batch_line,
    bind_answers,
    parse_result_lines,
    request_digest,
)
from ...llm.client import Completion, JudgeRequest, ModelSpec
from ...store.batch_jobs import BatchJob, BatchLedger, BatchStore, ProviderJob
from ...system.clock import utc_now
from ..workspace.settings import API_KEY_ENV, Settings
from ..workspace.workspace import JudgePool, Workspace
from .running import RunObserver, RunReport, RunRequest, RunSetup, run_suite, setup_run

__all__ = [
    "EXIT_PENDING",
    "MAX_LINES",
    "BatchCollected",
    "BatchSubmission",
    "batch_status",
    "cancel_batch",
    "collect_batch",
    "submit_batch",
    "wait_batch",
]

EXIT_PENDING = 75
"""``judge runs batch collect``/``wait``: the provider has not finished yet (EX_TEMPFAIL)."""
MAX_LINES = 50_000
"""Lines per provider job (OpenAI's limit per batch file)."""
MAX_BYTES = 190 * 1024 * 1024
"""Bytes per input file, under OpenAI's 200 MB."""
_TAG = "judgeflow_job"
_NOT_SAVED = frozenset({"api_base", "store_url"})
"""Settings left out of a job: a base URL never goes to the store; the store is where it is."""


@dataclass(frozen=True)
class BatchSubmission:
    """What ``judge run --batch`` did: the job (None when the cache answered everything)."""

    job: BatchJob | None
    judgments: int
    cached: int
    notices: tuple[str, ...] = ()

    @property
    def submitted(self) -> int:
        """Judgments sent to the provider."""
        return 0 if self.job is None else len(self.job.keys)


@dataclass(frozen=True)
class BatchCollected:
    """What collecting did: the job as now stored and, once finished, the run's report."""

    job: BatchJob
    report: RunReport | None = None
    """None while a provider job is still running (nothing was collected)."""
    notices: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """The run's exit code once finished, else :data:`EXIT_PENDING` (0: finished before)."""
        if self.report is not None:
            return self.report.exit_code
        return 0 if self.job.status == "finished" else EXIT_PENDING


@dataclass(frozen=True)
class _Judgment:
    prep: Prepared
    model: str
    sample: int
    request: JudgeRequest
    key: str


# -- settings ------------------------------------------------------------------------------


def _job_workspace(ws: Workspace, job: BatchJob) -> Workspace:
    """The collecting workspace with the settings the job was rendered with."""
    current = ws.settings.model_dump(mode="json")
    settings = Settings.model_validate({**current, **job.settings,
                                        **{k: current[k] for k in _NOT_SAVED}})
    sources = {**ws.sources, **dict.fromkeys(job.explicit, "batch job")}
    return dataclasses.replace(ws, settings=settings, sources=sources)


def _check_cache_mode(ws: Workspace) -> None:
    if ws.settings.cache_mode != "read-write":
        raise UsageError(f"--batch fills the cache, but the cache mode is "
                         f"{ws.settings.cache_mode}",
                         fix="drop --cache-mode/--offline (batch mode needs read-write)")


def _clients(ws: Workspace, models: Sequence[str]) -> dict[str, BatchClient]:
    s = ws.settings
    return {m: BatchClient(ModelSpec(name=m, api_base=s.api_base,
                                     api_key=ws.env.get(API_KEY_ENV), timeout=s.timeout))
            for m in models}


# -- rendering -----------------------------------------------------------------------------


def _judgments(setup: RunSetup) -> Iterator[_Judgment]:
    """Every LLM judgment of the run, with the request and key a live call would use."""
    plan = setup.plan
    if setup.renderer is None:
        return
    for item in setup.cases():
        case = item if isinstance(item, Case) else item.case()
        if case.judged_by != "llm":
            continue
        prep = prepare(case, plan.rubric, setup.renderer)
        for model in plan.models:
            for sample in range(plan.samples):
                request = build_request(prep, model, plan.settings, sample)
                yield _Judgment(prep, model, sample, request, cache_key(request.key_material()))


def _valid(cache: JudgmentCache, j: _Judgment, setup: RunSetup) -> bool:
    turns = cache.turns(j.key, count=False)
    if not turns:
        return False
    try:
        parse_verdict(turns[-1].text, setup.plan.rubric, j.prep.citable())
    except Exception:  # an OutputError (or worse): a run would ask again
        return False
    return True


def _chunks(lines: list[BatchLine], keys: list[str]) -> Iterator[tuple[list[BatchLine],
                                                                      list[str]]]:
    start, size = 0, 0
    for i, line in enumerate(lines):
        length = len(str(line))  # close enough to the JSON size for a limit with headroom
        if i > start and (i - start >= MAX_LINES or size + length > MAX_BYTES):
            yield lines[start:i], keys[start:i]
            start, size = i, 0
        size += length
    if start < len(lines):
        yield lines[start:], keys[start:]


# -- submit --------------------------------------------------------------------------------


def submit_batch(ws: Workspace, request: RunRequest, *,
                 now: Callable[[], str] = utc_now) -> BatchSubmission:
    """Render the run, send its cache misses as provider batch jobs, store the job, return."""
    _check_cache_mode(ws)
    setup = setup_run(ws, request, now=now)
    clients = _clients(ws, setup.plan.models)  # a provider without batches fails here
    cache = ws.open_cache()
    assert cache is not None  # read-write
    lines: dict[str, list[BatchLine]] = {m: [] for m in setup.plan.models}
    keys: dict[str, list[str]] = {m: [] for m in setup.plan.models}
    seen: set[str] = set()
    judgments = cached = 0
    try:
        for j in _judgments(setup):
            judgments += 1
            if _valid(cache, j, setup):
                cached += 1
                continue
            if j.key in seen:  # two cases with one prompt: one request, as a live run makes
                continue
            seen.add(j.key)
            client = clients[j.model]
            lines[j.model].append(batch_line(j.key, j.request, client.wire_model,
                                             client.mode(j.request)))
            keys[j.model].append(j.key)
    finally:
        cache.close()
    if not seen:
        return BatchSubmission(None, judgments, cached, (
            *setup.notices, f"all {judgments} judgment(s) are in the cache: nothing to send; "
                            f"`judge run {request.suite}` replays them"))
    explicit = sorted(k for k, v in ws.sources.items() if v != "default" and k not in _NOT_SAVED)
    job_id = f"batch-{now()[:19].replace(':', '').replace('-', '')}-{secrets.token_hex(3)}"
    provider_jobs: list[ProviderJob] = []
    chunks: list[list[BatchLine]] = []
    for model in setup.plan.models:
        for part_lines, part_keys in _chunks(lines[model], keys[model]):
            provider_jobs.append(ProviderJob(model=model, provider=clients[model].provider,
                                             keys=tuple(part_keys),
                                             tag=f"{job_id}/{len(provider_jobs)}"))
            chunks.append(part_lines)
    job = BatchJob(id=job_id, suite=setup.plan.run.suite, created_at=now(),
                   request=request.model_dump(mode="json"),
                   settings=ws.settings.model_dump(mode="json", exclude=set(_NOT_SAVED)),
                   explicit=tuple(explicit),
                   jobs=tuple(provider_jobs), judgments=judgments, cached=cached)
    with ws.open_store(create=True) as store:
        batches = BatchStore(store)
        batches.save(job)  # before anything is sent: a crash from here on is resumable
        job = _send_missing(batches, job, clients, dict(enumerate(chunks)))
    return BatchSubmission(job, judgments, cached, setup.notices)


def _send_missing(batches: BatchStore, job: BatchJob, clients: Mapping[str, BatchClient],
                        chunks: Mapping[int, list[BatchLine]] | None) -> BatchJob:
    """Create the provider jobs not yet recorded (found again by tag first), saving each."""
    for index, pj in enumerate(job.jobs):
        if pj.provider_job_id is not None:
            continue
        client = clients[pj.model]
        state = client.find(_TAG, pj.tag)
        file_id = None
        if state is None:
            lines = (chunks or {}).get(index)
            if lines is None:
                raise _NeedLines(index)
            file_id, state = client.submit(lines, {_TAG: pj.tag})
        job = _with_job(job, index, _updated(pj, state, input_file=file_id))
        batches.save(job)
    if job.status == "submitting":
        job = job.model_copy(update={"status": "submitted"})
        batches.save(job)
    return job


class _NeedLines(Exception):
    """A provider job must be (re)sent and its lines are not at hand: render them."""

    def __init__(self, index: int) -> None:
        self.index = index


def _updated(pj: ProviderJob, state: BatchState, *, input_file: str | None = None) -> ProviderJob:
    return pj.model_copy(update={
        "provider_job_id": state.id, "status": state.status,
        "input_file_id": input_file or pj.input_file_id,
        "output_file_id": state.output_file_id, "error_file_id": state.error_file_id,
        "counts": dict(state.counts), "errors": state.errors})


def _with_job(job: BatchJob, index: int, pj: ProviderJob) -> BatchJob:
    jobs = list(job.jobs)
    jobs[index] = pj
    return job.model_copy(update={"jobs": tuple(jobs)})


# -- status, wait, cancel ------------------------------------------------------------------


def _lines_for(ws: Workspace, job: BatchJob, index: int) -> list[BatchLine]:
    """Render the lines of provider job ``index`` again (a resume after a crash)."""
    pj = job.jobs[index]
    wanted = set(pj.keys)
    setup = setup_run(ws, RunRequest.model_validate(job.request))
    client = _clients(ws, [pj.model])[pj.model]
    found: dict[str, BatchLine] = {}
    for j in _judgments(setup):
        if j.model == pj.model and j.key in wanted and j.key not in found:
            found[j.key] = batch_line(j.key, j.request, client.wire_model,
                                      client.mode(j.request))
    missing = wanted - found.keys()
    if missing:
        raise UsageError(f"batch job {job.id}: {len(missing)} of its judgments no longer "
                         f"render from {job.request.get('suite')} (the suite, rubric or "
                         f"template changed since it was submitted)",
                         fix="submit again: `judge run SUITE --batch`")
    return [found[k] for k in pj.keys]


def _poll(ws: Workspace, batches: BatchStore, job: BatchJob) -> BatchJob:
    clients = _clients(ws, sorted({pj.model for pj in job.jobs}))
    while True:
        try:
            job = _send_missing(batches, job, clients, None)
            break
        except _NeedLines as need:
            job = _send_missing(batches, job, clients,
                                      {need.index: _lines_for(ws, job, need.index)})
    for index, pj in enumerate(job.jobs):
        if pj.provider_job_id is None or pj.status in _DONE:
            continue
        job = _with_job(job, index, _updated(pj, clients[pj.model].retrieve(
            pj.provider_job_id)))
    batches.save(job)
    return job


_DONE = frozenset({"completed", "failed", "expired", "cancelled"})


def _done(job: BatchJob) -> bool:
    return all(pj.status in _DONE for pj in job.jobs)


def batch_status(ws: Workspace, job_id: str | None = None) -> BatchJob:
    """Poll the provider for a job (default: the newest unfinished) and store what it says."""
    with ws.open_store() as store:
        batches = BatchStore(store)
        job = batches.get(job_id)
        if job.status in ("collected", "finished"):
            return job
        return _poll(_job_workspace(ws, job), batches, job)


def cancel_batch(ws: Workspace, job_id: str | None = None) -> BatchJob:
    """Ask the provider to cancel a job's unfinished provider jobs; collect keeps what ended."""
    with ws.open_store() as store:
        batches = BatchStore(store)
        job = batches.get(job_id)
        jws = _job_workspace(ws, job)

        clients = _clients(jws, sorted({pj.model for pj in job.jobs}))
        for index, pj in enumerate(job.jobs):
            if pj.provider_job_id is not None and pj.status not in _DONE:
                job = _with_job(job, index, _updated(pj, clients[pj.model].cancel(
                    pj.provider_job_id)))
        batches.save(job)
        return job


def wait_batch(ws: Workspace, job_id: str | None = None, *, interval: float = 30.0,
               timeout: float | None = None, sleep: Callable[[float], Any] | None = None,
               observer: RunObserver | None = None, live: bool = True,
               on_poll: Callable[[BatchJob], None] | None = None) -> BatchCollected:
    """Poll every ``interval`` seconds until every provider job ended, then collect.

    Past ``timeout`` seconds it returns the job uncollected (exit :data:`EXIT_PENDING`).
    """
    pause = sleep or time.sleep
    deadline = None if timeout is None else time.monotonic() + timeout
    job = batch_status(ws, job_id)
    while job.status == "submitted" and not _done(job):
        if on_poll is not None:
            on_poll(job)
        if deadline is not None and time.monotonic() + interval > deadline:
            return BatchCollected(job)
        pause(interval)
        job = batch_status(ws, job.id)
    return collect_batch(ws, job.id, observer=observer, live=live)


# -- collect -------------------------------------------------------------------------------


class _BatchFirst:
    """A completer whose first turn is the batch's answer; repair turns are live calls."""

    def __init__(self, turn: Completion, live: Completer | None) -> None:
        self.turn, self.live, self.used, self.calls = turn, live, False, 0
        self.engine: Mapping[str, Any] | None = None
        self.max_concurrency: int | None = None
        self.retries = 0

    @property
    def attempts(self) -> int:
        """Live calls made for repair turns (the batch's answer is not a call)."""
        return self.calls

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        if not self.used:
            self.used = True
            return self.turn
        if self.live is None:
            raise PermanentProviderError("no live judge for the repair turn")
        self.calls += 1
        return await self.live.complete(request, messages)


def _download(ws: Workspace, job: BatchJob) -> tuple[dict[str, BatchItem], dict[str, str]]:
    """Each key's bound answer (or why it has none), and the refused answers by custom_id."""
    clients = _clients(ws, sorted({pj.model for pj in job.jobs}))
    items: dict[str, BatchItem] = {}
    refused: dict[str, str] = {}
    for index, pj in enumerate(job.jobs):
        client = clients[pj.model]
        mode = client.mode(JudgeRequest(model=pj.model, messages=(), temperature=0, seed=None,
                                        schema=None, output_mode=ws.settings.output_mode))
        found: list[BatchItem] = []
        for file_id in (pj.error_file_id, pj.output_file_id):
            if file_id:
                found += parse_result_lines(client.download(file_id).splitlines(), mode,
                                            client.price)
        digests: dict[str, str] | None = None

        def sent(cid: str, index: int = index) -> str | None:
            nonlocal digests  # rendered again only when the provider echoes a request
            if digests is None:
                digests = {line["custom_id"]: request_digest(line["body"])
                           for line in _lines_for(ws, job, index)}
            return digests.get(cid)

        bound, refused_here = bind_answers(found, set(pj.keys), client.wire_model, sent)
        items.update(bound)
        for cid, why in refused_here.items():
            refused[cid] = why
            if cid in pj.keys:  # asked live, or left unscored with the reason
                items[cid] = BatchItem(cid, None, f"batch answer refused: {why}")
        if pj.status != "completed":
            reason = f"the provider's batch job ended {pj.status}" + (
                f": {'; '.join(pj.errors)}" if pj.errors else "")
            for key in pj.keys:
                items.setdefault(key, BatchItem(key, None, reason))
    return items, refused


async def _fill_cache(ws: Workspace, job: BatchJob,
                      answers: tuple[Mapping[str, BatchItem], Mapping[str, str]],
                      now: Callable[[], str]) -> BatchJob:
    """Put every batch answer through the live exchange loop into the cache (see module)."""
    items, refused = answers
    setup = setup_run(ws, RunRequest.model_validate(job.request), now=now)
    mine = set(job.keys)
    cache = ws.open_cache()
    assert cache is not None
    pool: JudgePool | None = None
    ledger: dict[str, Any] = {"failed": {}, "invalid": {}, "repairCalls": 0,
                              "refused": dict(refused)}
    answered = ZERO  # what the batch's answers used, at the batch rate
    done: set[str] = set()
    try:
        for j in _judgments(setup):
            if j.key not in mine or j.key in done:
                continue
            done.add(j.key)
            item = items.get(j.key)
            if item is None or item.turn is None:
                if not _valid(cache, j, setup):
                    ledger["failed"][j.key] = (item.error if item is not None and item.error
                                               else "no answer in the batch's result files")
                continue
            if pool is None:
                pool = ws.judges.open(ws, setup.plan.models)
            first = _BatchFirst(item.turn, pool.clients.get(j.model))
            prompt = setup.renderer
            assert prompt is not None
            ids = j.prep.citable()
            done_ex = await exchange(
                j.request, functools.partial(parse_verdict, rubric=setup.plan.rubric,
                                             ids=ids),
                cache=cache, client=first, max_repairs=setup.plan.settings.max_repairs,
                meta={"templateId": prompt.template_id, "templateHash": prompt.template_hash,
                      "rubricId": setup.plan.rubric.id, "rubricHash": setup.plan.rubric_hash,
                      "createdAt": now(), "batchJob": job.id})
            ledger["repairCalls"] += first.calls
            if done_ex.status == "ok":  # cached now, or by an earlier, interrupted collect
                t = item.turn
                answered += Usage(1, t.prompt_tokens or 0, t.completion_tokens or 0,
                                  t.cached_tokens or 0, t.cache_write_tokens or 0,
                                  None if t.cost_usd is None else cost_fraction(t.cost_usd))
            else:
                ledger["invalid"][j.key] = done_ex.reason or "no verdict"
    finally:
        cache.close()
        if pool is not None:
            await pool.aclose()
    ledger.update(answered=answered.judgments, promptTokens=answered.prompt_tokens,
                  completionTokens=answered.completion_tokens,
                  cachedTokens=answered.cached_tokens,
                  cacheWriteTokens=answered.cache_write_tokens, costUsd=answered.cost_usd())
    missing = mine - done
    for key in missing:  # rendered no more (the suite changed): said, never asked
        ledger["failed"][key] = "the judgment no longer renders from the suite"
    return job.model_copy(update={"ledger": BatchLedger.model_validate(ledger),
                                  "status": "collected"})


class _Guarded(ForwardingCompleter):
    """A judge whose calls for some keys are refused with a reason (no request is sent)."""

    def __init__(self, inner: Completer, refused: Mapping[str, str]) -> None:
        super().__init__(inner)
        self.refused = refused

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        reason = self.refused.get(cache_key(request.key_material()))
        if reason is not None:
            raise PermanentProviderError(f"batch: {reason}")
        return await self.inner.complete(request, messages)


@dataclass(frozen=True)
class _GuardedJudges:
    inner: Any
    refused: Mapping[str, str]

    def open(self, workspace: Workspace, models: Sequence[str]) -> JudgePool:
        pool = self.inner.open(workspace, models)
        return _FixedPool({m: _Guarded(c, self.refused) for m, c in pool.clients.items()}, pool)


@dataclass
class _FixedPool:
    clients: Mapping[str, Completer]
    inner: JudgePool

    async def aclose(self) -> None:
        await self.inner.aclose()


def _ledger_totals(totals: RunTotals, results: Iterable[CaseResult], job: BatchJob) -> RunTotals:
    """The run's totals with the batch's answers counted as paid, at the batch rate."""
    ledger = job.ledger or BatchLedger()
    batch_keys = set(job.keys) - set(ledger.failed) - set(ledger.invalid)
    repairs = 0
    every = ZERO
    paid: dict[str, Usage] = {}  # per judge: what its batch-answered judgments cost
    for r in results:
        m = r.judge
        if m is None or m.aggregate is not None or not m.cached or m.cache_key not in batch_keys:
            continue
        repairs += m.repair_turns
        used = Usage.of(m, cached=m.cached_tokens, written=m.cache_write_tokens)
        every += used
        paid[m.model] = paid.get(m.model, ZERO) + used
    n = every.judgments
    judges = {model: _with_batch(entry, paid[model]) if model in paid else entry
              for model, entry in totals.ledger.items()}
    return totals.model_copy(update={
        "cache_hits": totals.cache_hits - n,
        "saved_calls": max(0, totals.saved_calls - n - repairs),
        "judged_anew": totals.judged_anew + n, "calls": totals.calls + ledger.repair_calls,
        "prompt_tokens": totals.prompt_tokens + every.prompt_tokens,
        "completion_tokens": totals.completion_tokens + every.completion_tokens,
        "cached_tokens": totals.cached_tokens + every.cached_tokens,
        "cache_write_tokens": totals.cache_write_tokens + every.cache_write_tokens,
        "cost_usd": (Usage.from_cost(totals.cost_usd) + every).cost_usd(), "batch_calls": n,
        "batch_cost_usd": ledger.cost_usd, "ledger": judges})


def _with_batch(entry: JudgeLedger, p: Usage) -> JudgeLedger:
    """A judge's ledger entry with its batch-answered judgments moved from hits to paid.

    The batch's judgments were counted as cache hits when the run replayed them: they are
    paid (at the batch rate), so they move from ``cacheHits`` to the usage.
    """
    return entry.model_copy(update={
        "cache_hits": max(0, entry.cache_hits - p.judgments),
        "prompt_tokens": entry.prompt_tokens + p.prompt_tokens,
        "completion_tokens": entry.completion_tokens + p.completion_tokens,
        "cached_tokens": entry.cached_tokens + p.cached_tokens,
        "cache_write_tokens": entry.cache_write_tokens + p.cache_write_tokens,
        "cost_usd": (Usage.from_cost(entry.cost_usd) + p).cost_usd()})


def collect_batch(ws: Workspace, job_id: str | None = None, *,
                  observer: RunObserver | None = None, live: bool = True,
                  now: Callable[[], str] = utc_now) -> BatchCollected:
    """Collect a job whose provider jobs ended, then finish its run (scored, stored, gated).

    A job still running is polled and returned uncollected (:data:`EXIT_PENDING`).
    Judgments the batch did not answer are asked live, or with ``live`` False left
    unscored with the reason.
    """
    with ws.open_store() as store:
        batches = BatchStore(store)
        job = batches.get(job_id)
        jws = _job_workspace(ws, job)
        if job.status == "finished":
            return BatchCollected(job, None, (f"batch job {job.id} is finished: run "
                                              f"{job.run_id} (`judge runs show {job.run_id}`)",))
        if job.status != "collected":
            _check_cache_mode(jws)
            job = _poll(jws, batches, job)
            if not _done(job):
                return BatchCollected(job)
            job = asyncio.run(_fill_cache(jws, job, _download(jws, job), now))
            batches.save(job)
    ledger = job.ledger or BatchLedger()
    refused = dict(ledger.invalid)
    if not live:
        refused.update(ledger.failed)
    guarded = dataclasses.replace(jws, judges=_GuardedJudges(jws.judges, refused))
    report = run_suite(guarded, RunRequest.model_validate(job.request), observer=observer,
                       now=now)
    with ws.open_store() as store:
        totals = _ledger_totals(report.run.totals, store.iter_results(report.run.id), job)
        run = store.finish_run(report.run.id, totals=totals, status=report.run.status)
        job = job.model_copy(update={"status": "finished", "run_id": run.id})
        BatchStore(store).save(job)
    return BatchCollected(job, dataclasses.replace(report, run=run))
