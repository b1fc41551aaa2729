"""``judge runs batch status|wait|collect|cancel [JOB]`` and what ``judge run --batch`` prints.

Exit codes: ``collect``/``wait`` exit as the finished run does (0, 1 regression, 4 no
judgment, 5 not compared...), 75 while the provider has not finished; 2 bad input; 1 a
provider error (the job is stored: the same command resumes).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..app.runs.batching import (
    BatchCollected,
    BatchSubmission,
    batch_status,
    cancel_batch,
    collect_batch,
    submit_batch,
    wait_batch,
)
from ..app.runs.running import RunRequest
from ..app.workspace.workspace import Workspace
from ..core.outcomes.usage import cost_text
from ..core.text.terminal_text import visible
from ..store.batch_jobs import BatchJob
from .gate_reports import print_verdict
from .options import JsonFlag
from .output import console, emit_json, err_console

__all__ = ["register", "submit"]

JobArg = Annotated[str | None, typer.Argument(
    metavar="JOB", help="Batch job id or unique prefix (default: the newest unfinished one).")]
ApiBase = Annotated[str | None, typer.Option(
    help="Base URL of the model server (never stored with the job).")]
StoreOption = Annotated[str | None, typer.Option("--store", help="Run store URL.")]
NoLive = Annotated[bool, typer.Option(
    "--no-live", help="Leave judgments the batch did not answer unscored (with the reason) "
                      "instead of asking them live.")]


def register(app: typer.Typer) -> None:
    """Add ``batch status|wait|collect|cancel`` to ``app``."""
    batch_app = typer.Typer(help="Provider batch jobs of `judge run --batch`.",
                            no_args_is_help=True)
    batch_app.command("status")(status)
    batch_app.command("wait")(wait)
    batch_app.command("collect")(collect)
    batch_app.command("cancel")(cancel)
    app.add_typer(batch_app, name="batch")


def _workspace(api_base: str | None, store: str | None) -> Workspace:
    return Workspace.open(overrides={"api_base": api_base, "store_url": store})


def _job_json(job: BatchJob) -> dict[str, Any]:
    """JSON door: the job as ``--json`` prints it (its items counted, not listed)."""
    data = job.model_dump(mode="json", exclude={"jobs", "ledger", "settings"})
    data["jobs"] = [{**pj.model_dump(mode="json", exclude={"keys"}), "keys": len(pj.keys)}
                    for pj in job.jobs]
    if job.ledger is not None:
        ledger = job.ledger.model_dump(mode="json")
        ledger["failed"], ledger["invalid"] = len(job.ledger.failed), len(job.ledger.invalid)
        ledger["refused"] = dict(job.ledger.refused)  # per item, with why
        data["ledger"] = ledger
    return data


def _show_job(job: BatchJob, json_out: bool) -> None:
    """The job as JSON (``--json``) or as lines."""
    if json_out:
        emit_json(_job_json(job))
    else:
        _print_job(job)


def _print_job(job: BatchJob) -> None:
    out = console()
    out.print(f"[bold]batch job {job.id}[/]  suite {job.suite}  {job.status}"
              + (f"  run {job.run_id}" if job.run_id else ""))
    for pj in job.jobs:
        counts = pj.counts
        done = f"{counts.get('completed', 0)}/{counts.get('total', len(pj.keys))}"
        failed = f", {counts['failed']} failed" if counts.get("failed") else ""
        out.print(f"  {pj.model} ({pj.provider}) {pj.provider_job_id or '—'}: {pj.status}, "
                  f"{done} answered{failed}", markup=False)
        for error in pj.errors:
            out.print(f"    error: {error}", markup=False)
    if job.ledger is not None:
        led = job.ledger
        cost = cost_text(led.cost_usd, led.answered)
        out.print(f"  collected: {led.answered} answered at the batch rate ({cost}), "
                  f"{len(led.failed)} unanswered, {len(led.invalid)} invalid after repair, "
                  f"{led.repair_calls} live repair call(s), {len(led.refused)} answer(s) refused")
        for cid, why in sorted(led.refused.items()):
            out.print(f"    refused {visible(cid)[:80]}: {why}", markup=False)


def submit(workspace: Workspace, request: RunRequest, *, json_out: bool) -> int:
    """``judge run --batch``: submit, print the job and the next command; the exit code."""
    done: BatchSubmission = submit_batch(workspace, request)
    for notice in done.notices:
        err_console().print(notice, markup=False)
    nxt = f"judge runs batch wait {done.job.id}" if done.job else f"judge run {request.suite}"
    if json_out:
        emit_json({"job": _job_json(done.job) if done.job else None,
                   "judgments": done.judgments, "cached": done.cached,
                   "submitted": done.submitted, "next": nxt})
        return 0
    if done.job is None:
        return 0
    console().print(f"submitted batch job [bold]{done.job.id}[/]: {done.submitted} of "
                    f"{done.judgments} judgment(s) sent ({done.cached} already cached)")
    _print_job(done.job)
    console().print(f"next: {nxt}   (or `judge runs batch status {done.job.id}`; "
                    f"`judge runs batch collect {done.job.id}` once it is done)", markup=False)
    return 0


def _finish(done: BatchCollected, json_out: bool) -> None:
    report = done.report
    if json_out:
        emit_json({"job": _job_json(done.job),
                   "run": report.run.model_dump(mode="json") if report else None,
                   "baseline": report.verdict.model_dump(mode="json")
                   if report and report.verdict else None,
                   "notices": list(done.notices)})
    else:
        _print_job(done.job)
        for notice in done.notices:
            console().print(notice, markup=False)
        if report is None and done.job.status != "finished":
            err_console().print(f"not finished yet: `judge runs batch wait {done.job.id}`",
                                markup=False)
        elif report is not None:
            t, s = report.run.totals, report.summary
            cost = cost_text(t.cost_usd, t.calls + t.batch_calls)
            batch_cost = cost_text(t.batch_cost_usd, t.batch_calls)
            rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
            console().print(
                f"run {report.run.id}: cases {s.cases}, scored {s.scored}, unscored "
                f"{s.unscored}, pass rate {rate}, mean overall {s.mean_overall}; "
                f"{t.batch_calls} judgment(s) at the batch rate ({batch_cost}), "
                f"{t.calls} live call(s), in all {cost}", markup=False)
            if report.verdict is not None:
                print_verdict(report.verdict)
    raise typer.Exit(done.exit_code)


def status(job: JobArg = None, api_base: ApiBase = None, store: StoreOption = None,
           json_out: JsonFlag = False) -> None:
    """Poll the provider for a batch job and show where it is."""
    found = batch_status(_workspace(api_base, store), job)
    _show_job(found, json_out)


def wait(job: JobArg = None, api_base: ApiBase = None, store: StoreOption = None,
         interval: Annotated[float, typer.Option(min=0.0, help="Seconds between polls.")] = 30.0,
         timeout: Annotated[float | None, typer.Option(
             min=0.0, help="Give up after this many seconds (exit 75).")] = None,
         no_live: NoLive = False, json_out: JsonFlag = False) -> None:
    """Poll until the provider has finished, then collect and finish the run."""
    def polled(current: BatchJob) -> None:
        if not json_out:
            states = ", ".join(f"{pj.status} {pj.counts.get('completed', 0)}/"
                               f"{pj.counts.get('total', len(pj.keys))}" for pj in current.jobs)
            err_console().print(f"batch {current.id}: {states}", markup=False)

    _finish(wait_batch(_workspace(api_base, store), job, interval=interval, timeout=timeout,
                       on_poll=polled, live=not no_live), json_out)


def collect(job: JobArg = None, api_base: ApiBase = None, store: StoreOption = None,
            no_live: NoLive = False, json_out: JsonFlag = False) -> None:
    """Download a finished batch job's answers into the cache, then finish the run.

    The run is scored, stored and compared with the baseline like any `judge run`.
    """
    _finish(collect_batch(_workspace(api_base, store), job, live=not no_live), json_out)


def cancel(job: JobArg = None, api_base: ApiBase = None, store: StoreOption = None,
           json_out: JsonFlag = False) -> None:
    """Cancel a batch job at the provider; `judge runs batch collect` keeps what it answered."""
    found = cancel_batch(_workspace(api_base, store), job)
    _show_job(found, json_out)
