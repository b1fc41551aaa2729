"""``judge run``: judge a suite, store the run, summarise, compare with the baseline."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from rich.table import Table

from ..app.gate import GateVerdict
from ..app.running import RunReport, RunRequest, run_suite
from ..app.runs import iter_results
from ..app.sharding import GroupCheck
from ..app.workspace import Workspace
from ..errors import UsageError
from ..models import CaseResult, RunInfo
from ..panel import headline_of
from ..process import settle_heap, tuned
from ..rubric import Rubric
from ..runner import Progress
from ..shards import Shard
from ..summary import Summary
from .output import band_style, console, emit_json_streaming, err_console

__all__ = ["cache_line", "group_json", "print_group", "register"]


def register(app: typer.Typer) -> None:
    """Add ``run`` to ``app``."""
    app.command("run")(run)


def run(
    suite: Annotated[Path, typer.Argument(help="Suite file (.yaml or .jsonl).")],
    rubric: Annotated[str | None, typer.Option(help="Rubric id or path.")] = None,
    model: Annotated[list[str] | None, typer.Option(
        "--model", "-m", help="Judge model (LiteLLM name); repeat for a panel.")] = None,
    api_base: Annotated[str | None, typer.Option(help="Base URL of the model server.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Model calls in flight.")] = None,
    seed: Annotated[int | None, typer.Option(help="Judge seed (default 42).")] = None,
    samples: Annotated[int | None, typer.Option(
        help="Judge each case K times (seed, seed+1...); the median heads, the spread is kept.")]
    = None,
    panel: Annotated[str | None, typer.Option(
        help="With several --model: combine their AI scores by median (default) or mean.")]
    = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Replay from the cache only; never touch the network.")] = False,
    cache_mode: Annotated[str | None, typer.Option(
        help="read-write | read-only | offline | refresh | off")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Cache folder.")] = None,
    store: Annotated[str | None, typer.Option(help="Run store URL.")] = None,
    template: Annotated[str | None, typer.Option(help="Prompt template id.")] = None,
    output_mode: Annotated[str | None, typer.Option(
        help="auto | json_schema | json_object | prompt")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Only cases with this tag.")] = None,
    complexity: Annotated[list[str] | None, typer.Option(help="Only this complexity.")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", help="Only this case id.")] = None,
    no_llm: Annotated[bool, typer.Option(
        "--no-llm", help="Run only the deterministic cases.")] = False,
    timeout: Annotated[float | None, typer.Option(help="Seconds per model request.")] = None,
    no_check: Annotated[bool, typer.Option(
        "--no-check", help="Skip the baseline comparison.")] = False,
    shard: Annotated[str | None, typer.Option(
        "--shard", metavar="I/N",
        help="Judge only shard I of N (by a stable hash of the case id); needs --group.")]
    = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="NAME",
        help="The group the shards make one run of (e.g. the CI run id); the last shard in "
             "gates the whole group.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Judge SUITE, store the run, print the summary and the baseline comparison.

    Exit 0: done, no regression. 1: a regression while blocking. 2: bad input (named).
    3: offline and judgments missing from the cache (listed). 4: no judgment succeeded
    (the first reason is printed). 130: interrupted (what was judged is stored).
    """
    overrides: dict[str, Any] = {
        "rubric": rubric, "model": list(model) if model else None, "api_base": api_base,
        "concurrency": concurrency, "seed": seed, "samples": samples, "panel": panel,
        "cache_mode": "offline" if offline else cache_mode, "cache_dir": cache_dir,
        "store_url": store, "template": template, "output_mode": output_mode,
        "timeout": timeout, "llm": False if no_llm else None,
    }
    workspace = Workspace.open(overrides=overrides)
    try:
        part = Shard.parse(shard) if shard is not None else None
    except ValueError as exc:
        raise UsageError(str(exc), where="--shard", fix="e.g. --shard 2/3") from None
    request = RunRequest(suite=suite, tags=tuple(tag or ()), complexity=tuple(complexity or ()),
                         ids=tuple(case or ()), check=not no_check, shard=part, group=group)
    report = run_suite(workspace, request, observer=_Display())
    _report(workspace, report, json_out=json_out)
    raise typer.Exit(report.exit_code)


def _report(workspace: Workspace, report: RunReport, *, json_out: bool) -> None:
    verdict = report.verdict
    if json_out:
        emit_json_streaming({
            "run": report.run.model_dump(mode="json"),
            "summary": report.summary.model_dump(mode="json"),
            "summaries": {m: s.model_dump(mode="json") for m, s in report.summaries.items()}
            if len(report.summaries) > 1 else None,
            "baseline": verdict.public() if verdict is not None else None,
            **({"group": group_json(report.group)} if report.group is not None else {}),
        }, "cases", (r.model_dump(mode="json") for r in iter_results(workspace, report.run.id)))
    else:
        rubric = workspace.rubric(report.run.rubric)
        _print_summary(workspace, rubric, report.run, report.summary, report.summaries)
        if report.group is not None:
            print_group(report.group)
        _print_comparison(verdict)
    err = err_console()
    if report.interrupted:
        err.print(f"[yellow]interrupted[/]: kept {report.summary.cases} judged "
                  f"case(s) in run {report.run.id}; run again to resume from the cache")
    elif report.missing:
        err.print(f"[red]offline: {len(report.missing)} judgment(s) not in the cache[/]: "
                  + ", ".join(report.missing))
    elif report.no_judgment:
        why = (f"stopped early, no more calls made: {escape(report.stopped)}" if report.stopped
               else f"the first reason: {escape(report.first_failure or '')}")
        err.print(f"[red]no judgment succeeded[/] ({report.llm_cases} LLM case(s) unscored); "
                  + why, highlight=False)


CASE_TABLE_LIMIT = 40


def _print_summary(workspace: Workspace, rubric: Rubric, run: RunInfo, summary: Summary,
                   summaries: dict[str, Summary]) -> None:
    out = console()
    t = run.totals
    cost = "unknown" if t.costUsd is None else f"${t.costUsd:.4f}"
    head, sample = headline_of(run)
    scored_by = f"  ·  scores from [bold]{head}[/]" if len(run.models) > 1 else ""
    if len(run.models) == 1 and sample < 0:
        scored_by = f"  ·  scores are the median of {run.samples} samples"
    out.print(f"[bold]run {run.id}[/]  suite [bold]{run.suite}[/]  rubric {run.rubric}  "
              f"judge {', '.join(run.models)}  seed {run.seed}{scored_by}")
    if summary.cases <= CASE_TABLE_LIMIT:
        _case_table(workspace, rubric, run)
    elif summary.failures:
        _failure_table(rubric, summary)
    rate = "—" if summary.passRate is None else f"{summary.passRate:.0%}"
    mean = "—" if summary.meanOverall is None else f"{summary.meanOverall:.1f}"
    out.print(f"cases {summary.cases}: scored {summary.scored}, unscored {summary.unscored}"
              + (f", cache misses {summary.cacheMisses}" if summary.cacheMisses else "")
              + f"  ·  pass rate [bold]{rate}[/] ({summary.passed}/{summary.scored}, pass ≥ "
              + f"{rubric.pass_score})  ·  mean overall [bold]{mean}[/]")
    if summary.categoryAverages:
        out.print("category averages: " + ", ".join(
            f"{c} {v:.1f}" for c, v in summary.categoryAverages.items()))
    if summary.bands:
        out.print("bands: " + ", ".join(f"[{band_style(b)}]{b}[/] {n}"
                                        for b, n in summary.bands.items()))
    out.print(f"model calls {t.calls}, cache hits {t.cacheHits}, tokens "
              f"{t.promptTokens}+{t.completionTokens}, cost {cost}, {t.wallSeconds:.1f}s")
    if t.judgments:
        out.print(cache_line(t))
    if len(summaries) > 1:
        for name, s in summaries.items():
            rate = "—" if s.passRate is None else f"{s.passRate:.0%}"
            out.print(f"  judge {name}: mean overall {s.meanOverall}, pass rate {rate}")


def group_json(check: GroupCheck) -> dict[str, Any]:
    """A group's state as JSON: complete or the problems, its shards' runs, its summary."""
    st = check.status
    return {"group": st.group, "suite": st.suite, "shards": st.count, "complete": st.complete,
            "problems": list(st.problems), "runs": [r.id for r in st.runs],
            "summary": check.summary.model_dump(mode="json") if check.summary else None}


def print_group(check: GroupCheck) -> None:
    """One or two lines: the group's shards, and its summary as one run once complete."""
    st, out = check.status, console()
    if not st.complete:
        out.print(f"group {st.group}: " + "; ".join(st.problems), markup=False)
        return
    s = check.summary
    assert s is not None
    rate = "—" if s.passRate is None else f"{s.passRate:.0%}"
    mean = "—" if s.meanOverall is None else f"{s.meanOverall:.1f}"
    out.print(f"[bold]group {st.group}[/] complete: {st.count} shard(s), cases {s.cases}: "
              f"scored {s.scored}, unscored {s.unscored}  ·  pass rate [bold]{rate}[/]  ·  "
              f"mean overall [bold]{mean}[/]")


def cache_line(t: Any) -> str:
    """``cache: 14 of 16 judgments reused (saved 14 calls), 2 judged anew``."""
    reused = t.cacheHits
    line = (f"cache: {reused} of {t.judgments} judgments reused (saved {t.savedCalls} "
            f"call{'s' if t.savedCalls != 1 else ''}), {t.judgedAnew} judged anew")
    missing = t.judgments - reused - t.judgedAnew
    line += f", {missing} not in the cache" if missing > 0 else ""
    hits = getattr(t, "indexHits", 0)
    return line + (f"; {hits} replayed through the index without rendering" if hits else "")


def _case_table(workspace: Workspace, rubric: Rubric, run: RunInfo) -> None:
    cats = [c.id for c in rubric.categories]
    head = headline_of(run)
    table = Table("case", *[_short(c) for c in cats], "overall", "band", "pass", "note",
                  caption="per category: deterministic/ai → final", caption_justify="left")
    for r in iter_results(workspace, run.id):
        if r.judge is not None and (r.judge.model, r.judge.sample) != head:
            continue
        by_cat = {c.category: c for c in r.categoryScores}
        cells = []
        for cat in cats:
            c = by_cat.get(cat)
            if c is None:
                cells.append("—")
                continue
            det = "—" if c.deterministicScore is None else str(c.deterministicScore)
            ai = "—" if c.aiScore is None else str(c.aiScore)
            final = "—" if c.finalScore is None else f"[bold]{c.finalScore}[/]"
            cells.append(f"{det}/{ai}→{final}")
        verdict = "" if r.passed is None else ("[green]✓[/]" if r.passed else "[red]✗[/]")
        note = r.reason or ("" if r.judgedBy == "llm" else "deterministic")
        table.add_row(r.id, *cells, "—" if r.overallScore is None else str(r.overallScore),
                      f"[{band_style(r.band)}]{r.band or r.status}[/]", verdict, note[:60])
    console().print(table)


def _short(category: str) -> str:
    return category if len(category) <= 12 else category[:11] + "…"


def _failure_table(rubric: Rubric, summary: Summary) -> None:
    table = Table("case", "status", "overall", "band", "reason",
                  title=f"failures ({summary.failuresTotal})", title_justify="left")
    for f in summary.failures[:20]:
        reason = f.reason or f"below the pass mark ({rubric.pass_score})"
        table.add_row(f.id, f.status, "—" if f.overallScore is None else str(f.overallScore),
                      f"[{band_style(f.band)}]{f.band or '—'}[/]", reason[:80])
    console().print(table)


def _print_comparison(verdict: GateVerdict | None) -> None:
    if verdict is None:
        return
    out = console()
    if verdict.skipped:
        out.print(f"[yellow]{verdict.skipped}[/]")
        return
    if verdict.baselineRecorded:
        out.print(f"[cyan]no baseline yet: recorded {verdict.baselinePath}[/]")
        return
    c = verdict.comparison
    assert c is not None
    for notice in verdict.notices:
        out.print(f"[cyan]{notice}[/]")
    head = "[red]⚠ regression[/]" if c.hasRegression else "[green]✓ no regression[/]"
    out.print(f"{head} against {c.baselineId}: {c.previousScore} → {c.currentScore} "
              f"({c.scoreDelta:+})")
    for reason in c.blockedReasons:
        out.print(f"  [red]•[/] {reason}", markup=False)
    for sentence in c.noiseReasons:
        out.print(f"  ~ {sentence}", markup=False)


class _Display:
    """Progress on stderr: a rich bar on a terminal, a plain line every few seconds otherwise."""

    def __init__(self) -> None:
        self.progress = Progress()
        self.bar: Any = None
        self.last = time.monotonic()

    def notice(self, text: str) -> None:
        """One line on stderr."""
        err_console().print(text, markup=False)

    def started(self, progress: Progress, run: RunInfo) -> None:
        """Show a bar on a terminal; settle the heap when this process is the CLI's own."""
        self.progress = progress
        if tuned():
            settle_heap()
        if sys.stderr.isatty():
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

    def result(self, result: CaseResult) -> None:
        """Update after one result."""
        if self.bar is not None:
            self.bar.update(self.task, completed=self.progress.done, info=self._info())
            return
        now = time.monotonic()
        if now - self.last >= 5 or self.progress.done == self.progress.total:
            self.last = now
            print(f"judged {self.progress.done}/{self.progress.total} · {self._info()}",
                  file=sys.stderr, flush=True)

    def finished(self) -> None:
        """Stop the bar."""
        if self.bar is not None:
            self.bar.stop()
