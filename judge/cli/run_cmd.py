"""``judge run``: judge a suite, store the run, summarise, compare with the baseline."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any, Final, TypedDict

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from rich.text import Text

from ..app.runs.diffing import diff_runs
from ..app.runs.gate import run_headline
from ..app.runs.running import RunReport, RunRequest, run_suite
from ..app.runs.sharding import GroupCheck
from ..app.runs.stored import iter_results
from ..app.runs.watching import MAX_RERUNS, MAX_WAIT_S, Watcher, watched_files
from ..app.workspace.workspace import Workspace
from ..core.formats.models import CaseResult, RunInfo
from ..core.formats.rubric import Rubric
from ..core.formats.shards import Shard
from ..core.outcomes.miss_reasons import summarise_misses
from ..core.outcomes.summary import Summary
from ..core.outcomes.usage import cost_text
from ..core.scoring.panel import headline_of
from ..core.text.errors import JudgeError, UsageError
from ..engine.runner import Progress
from ..system.resources import open_suite
from ..system.tuning import settle_heap, tuned
from . import print_error
from .diff_cmd import print_diff
from .gate_reports import (
    print_quality,
    print_verdict_body,
    print_verdict_head,
    write_gate_reports,
)
from .options import (
    AcrossJudgesFlag,
    AllowUnsignedShared,
    JunitOption,
    MarkdownOption,
    RequireBaselineFlag,
    SettingFlag,
    StoreOption,
)
from .output import (
    Cell,
    Column,
    band_style,
    console,
    emit_json_streaming,
    err_console,
    ledger_lines,
    plural,
    print_detail_hint,
    styled,
    table,
)
from .runs_batch import submit as submit_batch

__all__ = ["PANELS", "GroupJson", "cache_line", "group_json", "print_group", "register"]


def register(app: typer.Typer) -> None:
    """Add ``run`` to ``app``."""
    app.command("run")(run)


PANELS: Final = {"run": {
    **dict.fromkeys(("model", "api_base", "rubric", "template", "samples", "seed"), "Judge"),
    **dict.fromkeys(("tag", "case", "complexity", "no_llm", "shard", "group"), "Cases"),
    **dict.fromkeys(("offline", "batch", "store", "allow_unsigned_shared"), "Cache and store"),
    **dict.fromkeys(("no_check", "across_judges", "require_baseline", "junit", "markdown"),
                    "Gate"),
    **dict.fromkeys(("detail", "json_out", "watch", "plain", "help"), "Output")}}
"""The sections of ``judge run --help``, by parameter."""


def run(
    suite: Annotated[Path, typer.Argument(help="Suite file (.yaml or .jsonl).")],
    model: Annotated[list[str] | None, typer.Option(
        "--model", "-m",
        help="Judge model (LiteLLM name); repeat for a panel.")] = None,
    api_base: Annotated[str | None, typer.Option(
        metavar="URL",
        help="An OpenAI-compatible server's base URL, with its /v1.")] = None,
    rubric: Annotated[str | None, typer.Option(
        help="Rubric id or path (default: the suite's).")] = None,
    template: Annotated[str | None, typer.Option(
        help="Prompt template id (prompts/ID.md.j2; default: judge).")] = None,
    samples: Annotated[int | None, typer.Option(
        metavar="K", help="Judge each case K times; their mean is its score.")] = None,
    seed: Annotated[int | None, typer.Option(
        metavar="N", help="Judge seed (default 42).")] = None,
    tag: Annotated[list[str] | None, typer.Option(
        metavar="TAG", help="Only cases with this tag (repeatable).")]
    = None,
    case: Annotated[list[str] | None, typer.Option(
        "--case", metavar="ID",
        help="Only the case with this id (repeatable).")] = None,
    complexity: Annotated[list[str] | None, typer.Option(
        metavar="LEVEL",
        help="Only cases of this complexity (simple, medium, complex).")] = None,
    no_llm: Annotated[bool, typer.Option(
        "--no-llm", help="Only the deterministic cases.")] = False,
    shard: Annotated[str | None, typer.Option(
        "--shard", metavar="I/N", help="Only shard I of N of the cases; with --group.")] =
        None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="NAME", help="The shards' group; its last shard gates it.")] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Replay the cache only, never call a model (a miss: exit 3).")] =
        False,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Send the misses as a provider batch job (half price, 24 h).")] =
        False,
    store: StoreOption = None,
    allow_unsigned_shared: AllowUnsignedShared = False,
    no_check: Annotated[bool, typer.Option(
        "--no-check", help="Skip the baseline comparison.")] = False,
    across_judges: AcrossJudgesFlag = False,
    require_baseline: RequireBaselineFlag = False,
    junit: JunitOption = None,
    markdown: MarkdownOption = None,
    detail: Annotated[bool, typer.Option(
        "--detail", help=f"Add {RUN_DETAIL}.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json",
        help="One JSON object on stdout, nothing else (progress on stderr).")] = False,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Re-run on each save (suite, rubric, template); show what moved.")]
    = False,
    watch_runs: Annotated[int, typer.Option(
        "--watch-runs", hidden=True, min=0, help="With --watch: stop after N reruns.")]
    = MAX_RERUNS,
    concurrency: Annotated[int | None, SettingFlag("concurrency")] = None,
    aggregate: Annotated[str | None, SettingFlag("sample_aggregate", "--aggregate")] = None,
    panel: Annotated[str | None, SettingFlag("panel")] = None,
    cache_mode: Annotated[str | None, SettingFlag("cache_mode")] = None,
    cache_dir: Annotated[str | None, SettingFlag("cache_dir")] = None,
    output_mode: Annotated[str | None, SettingFlag("output_mode")] = None,
    stable_schema: Annotated[bool | None, SettingFlag(
        "stable_schema", "--stable-schema/--no-stable-schema")] = None,
    timeout: Annotated[float | None, SettingFlag("timeout")] = None,
) -> None:
    """Judge SUITE, store the run, summarise it, gate it against the baseline.

    --offline replays the cache: no network, no key. A first run records the baseline;
    under CI a missing one fails (exit 5). Concurrency, timeouts, output mode and the rest
    are settings (`judge workspace config`).

    Exit 0 done; 1 a regression; 2 bad input; 3 offline misses (listed); 4 no judgment
    succeeded; 5 not compared (why, and the fix); 130 interrupted (what was judged is kept).
    """
    overrides: dict[str, Any] = {
        "rubric": rubric, "model": list(model) if model else None, "api_base": api_base,
        "concurrency": concurrency, "seed": seed, "samples": samples, "panel": panel,
        "sample_aggregate": aggregate,
        "cache_mode": "offline" if offline else cache_mode, "cache_dir": cache_dir,
        "store_url": store, "template": template, "output_mode": output_mode,
        "stable_schema": stable_schema, "timeout": timeout,
        "cache_allow_unsigned": allow_unsigned_shared or None,
        "across_judges": True if across_judges else None,
        "require_baseline": True if require_baseline else None,
    }
    workspace = Workspace.open(overrides=overrides)
    try:
        part = Shard.parse(shard) if shard is not None else None
    except ValueError as exc:
        raise UsageError(str(exc), where="--shard", fix="e.g. --shard 2/3") from None
    request = RunRequest(suite=suite, tags=tuple(tag or ()), complexity=tuple(complexity or ()),
                         ids=tuple(case or ()), check=not no_check, llm=not no_llm, shard=part,
                         group=group)
    if watch:
        if json_out or batch:
            raise UsageError("--watch prints for people after every save",
                             where="--json" if json_out else "--batch",
                             fix="leave out --watch, or that flag")
        raise typer.Exit(_Watch(overrides, request, watch_runs, detail).loop())
    if batch:
        raise typer.Exit(submit_batch(workspace, request, json_out=json_out))
    report = run_suite(workspace, request, observer=_Display())
    _report(workspace, report, json_out=json_out, detail=detail)
    if report.verdict is not None and (junit or markdown):
        results = (report.group.results if report.group is not None
                   else run_headline(workspace, report.run.id))
        write_gate_reports(report.verdict, results, junit=junit, markdown=markdown,
                           quality=report.quality.said() if report.quality else None)
    raise typer.Exit(report.exit_code)


def _report(workspace: Workspace, report: RunReport, *, json_out: bool, detail: bool) -> None:
    verdict = report.verdict
    if json_out:
        emit_json_streaming({
            "run": report.run.model_dump(mode="json"),
            "summary": report.summary.model_dump(mode="json"),
            "summaries": {m: s.model_dump(mode="json") for m, s in report.summaries.items()}
            if len(report.summaries) > 1 else None,
            "judgeQuality": report.quality.model_dump(mode="json") if report.quality else None,
            "baseline": verdict.model_dump(mode="json") if verdict is not None else None,
            **({"misses": [m.model_dump(mode="json") for m in report.miss_reasons]}
               if report.miss_reasons else {}),
            **({"group": group_json(report.group)} if report.group is not None else {}),
            **({"sharedTier": report.shared_tier.model_dump(mode="json")}
               if report.shared_tier is not None else {}),
        }, "cases", (r.model_dump(mode="json") for r in iter_results(workspace, report.run.id)))
    else:
        _print_run(workspace, report, detail)
    err = err_console()
    if report.interrupted:
        err.print(Text.assemble(styled("interrupted", "yellow"), f": kept "
                                f"{plural(report.summary.cases, 'judged case')} in run "
                                f"{report.run.id}; run again to resume from the cache"))
    elif report.missing:
        err.print(Text.assemble(styled(f"offline: {plural(len(report.missing), 'judgment')} "
                                       "not in the cache", "red"),
                                ": " + ", ".join(report.missing)))
        for line in summarise_misses(report.miss_reasons):
            err.print(f"  {line}", markup=False)
    elif report.no_judgment:
        why = (f"stopped early, no more calls made: {report.stopped}" if report.stopped
               else f"the first reason: {report.first_failure}")
        why, _, fix = why.partition("; fix: ")
        err.print(Text.assemble(styled("no judgment succeeded", "red"),
                                f" ({plural(report.llm_cases, 'LLM case')} unscored); {why}"))
        if fix:
            err.print(f"  fix: {fix}", markup=False)


CASE_TABLE_LIMIT = 40
"""With ``--detail``, runs with more cases print their failures only (`judge runs show RUN`)."""
FAILURES_SHOWN = 20
RUN_DETAIL = ("every case's scores by category, each judge's calls, and the gate's every "
              "reason, noise and case lists")
"""What ``judge run --detail`` adds."""


def _print_run(workspace: Workspace, report: RunReport, detail: bool) -> None:
    """The verdict and the scores first; then the run, its failures, its calls, the gate."""
    rubric, run, summary, verdict = (workspace.rubric(report.run.rubric), report.run,
                                     report.summary, report.verdict)
    if verdict is not None:
        print_verdict_head(verdict)
    _print_scores(rubric, summary)
    if report.group is not None:
        print_group(report.group)
    _print_warnings(summary)
    if report.quality is not None:
        print_quality(report.quality)
    console().print()
    _print_about(run, summary, report.summaries)
    if detail and summary.cases <= CASE_TABLE_LIMIT:
        _case_table(workspace, rubric, run)
    elif summary.failures:
        _failure_table(rubric, summary)
    _print_calls(run, detail)
    if verdict is not None:
        print_verdict_body(verdict, detail=detail)
    if not detail:
        print_detail_hint(RUN_DETAIL)


def _print_scores(rubric: Rubric, summary: Summary) -> None:
    """``16 cases: scored 16, unscored 0 · pass rate 50% (…) · mean overall 58.2``."""
    rate = "—" if summary.pass_rate is None else f"{summary.pass_rate:.0%}"
    mean = "—" if summary.mean_overall is None else f"{summary.mean_overall:.1f}"
    unjudged = summary.cases - summary.scored
    console().print(
        f"{plural(summary.cases, 'case')}: scored {summary.scored}, unscored {summary.unscored}"
        + (f", cache misses {summary.cache_misses}" if summary.cache_misses else "")
        + f"  ·  pass rate [bold]{rate}[/] ({summary.passed} of {summary.cases} passed"
        + (f", {unjudged} not judged" if unjudged else "")
        + f"; pass ≥ {rubric.pass_score})  ·  mean overall [bold]{mean}[/]")


def _print_warnings(summary: Summary) -> None:
    """A degenerate judge, said where a reader of the scores is still looking."""
    health = summary.judge_health
    if health is None or not health.degenerate:
        return
    out = console()
    out.print(styled("⚠ the judge looks degenerate: its AI scores carry little or no "
                     "information", "yellow"))
    for problem in health.problems:
        out.print(styled(f"  - {problem}", "yellow"))


def _print_about(run: RunInfo, summary: Summary, summaries: dict[str, Summary]) -> None:
    """The run's id, suite, rubric, judges and seed; each judge of a panel; the averages."""
    out = console()
    head, sample = headline_of(run)
    scored_by = f"  ·  scores from [bold]{escape(str(head))}[/]" if len(run.models) > 1 else ""
    if len(run.models) == 1 and sample < 0:
        method = run.settings.sample_aggregate or "median"
        scored_by = f"  ·  scores are the {method} of {run.samples} samples"
    out.print(f"[bold]run {escape(run.id)}[/]  suite [bold]{escape(run.suite)}[/]  rubric "
              f"{escape(run.rubric)}  judge {escape(', '.join(run.models))}  seed {run.seed}"
              f"{scored_by}")
    for name, s in summaries.items() if len(summaries) > 1 else ():
        rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
        out.print(f"  judge {name}: mean overall {s.mean_overall}, pass rate {rate}",
                  markup=False)
    if summary.category_averages:
        out.print("category averages: " + ", ".join(
            f"{c} {v:.1f}" for c, v in summary.category_averages.items()), markup=False)
    if summary.bands:
        out.print(Text.assemble("bands: ", *_band_counts(summary.bands)))


def _print_calls(run: RunInfo, detail: bool) -> None:
    """The calls, tokens, cost and time; with ``detail`` each judge's ledger; the cache."""
    out, t = console(), run.totals
    out.print(f"model calls {t.calls}, cache hits {t.cache_hits}, tokens "
              f"{t.prompt_tokens}+{t.completion_tokens}, {cost_text(t.cost_usd, t.calls)}, "
              f"{t.wall_seconds:.1f}s", markup=False)
    for line in ledger_lines(t.ledger) if detail else ():
        out.print(f"  {line}", markup=False)
    if t.judgments:
        out.print(cache_line(t), markup=False)


def _band_counts(bands: dict[str, int]) -> list[Text | str]:
    parts: list[Text | str] = []
    for n, (band, count) in enumerate(bands.items()):
        parts += [", "] if n else []
        parts += [Text(band, style=band_style(band)), f" {count}"]
    return parts


class GroupJson(TypedDict):
    """A group of shards' runs as ``--json`` shows it."""

    group: str
    suite: str | None
    shards: int
    complete: bool
    problems: list[str]
    runs: list[str]
    summary: dict[str, Any] | None
    """The group's summary as one run, once complete."""


def group_json(check: GroupCheck) -> GroupJson:
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
    rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
    mean = "—" if s.mean_overall is None else f"{s.mean_overall:.1f}"
    out.print(f"[bold]group {st.group}[/] complete: {st.count} shard(s), cases {s.cases}: "
              f"scored {s.scored}, unscored {s.unscored}  ·  pass rate [bold]{rate}[/]  ·  "
              f"mean overall [bold]{mean}[/]")


def cache_line(t: Any) -> str:
    """``cache: 14 of 16 judgments reused (saved 14 calls), 2 judged anew``."""
    reused = t.cache_hits
    line = (f"cache: {reused} of {t.judgments} judgments reused (saved {t.saved_calls} "
            f"call{'s' if t.saved_calls != 1 else ''}), {t.judged_anew} judged anew")
    missing = t.judgments - reused - t.judged_anew
    line += f", {missing} not in the cache" if missing > 0 else ""
    hits = getattr(t, "index_hits", 0)
    return line + (f"; {hits} replayed through the index without rendering" if hits else "")


def _case_table(workspace: Workspace, rubric: Rubric, run: RunInfo) -> None:
    cats = [c.id for c in rubric.categories]
    head = headline_of(run)
    rows: list[list[Cell]] = []
    for r in iter_results(workspace, run.id):
        if r.judge is not None and (r.judge.model, r.judge.sample) != head:
            continue
        by_cat = {c.category: c for c in r.category_scores}
        cells: list[Cell] = []
        for cat in cats:
            c = by_cat.get(cat)
            if c is None:
                cells.append("—")
                continue
            det = "—" if c.deterministic_score is None else str(c.deterministic_score)
            ai = "—" if c.ai_score is None else str(c.ai_score)
            final = "—" if c.final_score is None else str(c.final_score)
            cells.append(Text.assemble(f"{det}/{ai}→", (final, "bold")))
        verdict: Cell = "" if r.passed is None else (
            styled("✓", "green") if r.passed else styled("✗", "red"))
        note = r.reason or ("" if r.judged_by == "llm" else "deterministic")
        rows.append([r.id, *cells, "—" if r.overall_score is None else str(r.overall_score),
                     styled(r.band or r.status, band_style(r.band)), verdict, note])
    table(["case", *cats, Column("overall", "right"), "band", "pass", "note"], rows,
          caption="per category: deterministic/ai → final")


def _failure_table(rubric: Rubric, summary: Summary) -> None:
    rows: list[list[Cell]] = []
    for f in summary.failures[:FAILURES_SHOWN]:
        reason = f.reason or f"below the pass mark ({rubric.pass_score})"
        rows.append([f.id, f.status, "—" if f.overall_score is None else str(f.overall_score),
                     styled(f.band or "—", band_style(f.band)), reason])
    more = summary.failures_total - len(rows)
    table(["case", "status", Column("overall", "right"), "band", "reason"], rows,
          title=f"failures ({summary.failures_total})",
          caption=f"… and {more} more: judge runs show RUN --failures" if more > 0 else None)


class _Watch:
    """``--watch``: run, then re-run on each save and print what moved against the last run.

    Each rerun opens the workspace anew (a saved ``judge.toml`` counts) and goes through
    :func:`run_suite` as a plain run does, so only the cases whose prompt changed miss the
    cache. A bad edit prints the usual error (the file, the place, the fix) and nothing is
    written; the watch goes on, and the next diff is against the last run that worked.
    Bounded: ``watching.MAX_RERUNS`` reruns, ``watching.MAX_WAIT_S`` without a save.
    """

    def __init__(self, overrides: dict[str, Any], request: RunRequest, max_runs: int,
                 detail: bool) -> None:
        self.overrides, self.request, self.max_runs = overrides, request, max_runs
        self.detail = detail
        self.root = Path.cwd()
        self.rubrics: list[str | None] = [overrides.get("rubric")]
        self.previous: RunInfo | None = None
        self.watcher = Watcher(files=lambda: watched_files(self.root, self.request.suite,
                                                           self.rubrics))

    def loop(self) -> int:
        """Exit 0 when Ctrl-C ends the wait or a bound is reached; 130 when it ends a run."""
        err = err_console()
        for rerun in range(self.max_runs + 1):
            self.watcher.mark()  # before the run: a save while it runs re-runs at once
            try:
                if self.once():
                    return 130
            except KeyboardInterrupt:  # outside the run proper (opening, printing)
                return 130
            if rerun == self.max_runs:
                break
            err.print(f"watching {plural(len(self.watcher.last), 'file')}: save one to re-run "
                      "(Ctrl-C ends)", markup=False)
            try:
                changed = self.watcher.wait()
            except KeyboardInterrupt:
                return 0
            if not changed:
                err.print(f"no save in {MAX_WAIT_S / 3600:g} h: the watch ends", markup=False)
                return 0
            err.print("saved: " + ", ".join(self._shown(p) for p in changed) + "; re-running",
                      markup=False)
        return 0

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)

    def once(self) -> bool:
        """One run and its diff against the previous one; True when Ctrl-C interrupted it."""
        try:
            workspace = Workspace.open(overrides=self.overrides)
            self.rubrics[1:] = [workspace.settings.rubric, _suite_rubric(self.request.suite)]
            report = run_suite(workspace, self.request, observer=_Display())
        except JudgeError as exc:
            print_error(exc)
            return False
        _report(workspace, report, json_out=False, detail=self.detail)
        if self.previous is not None and not report.interrupted:
            console().print(f"what moved since run {self.previous.id}:", markup=False)
            print_diff(diff_runs(workspace, self.previous.id, report.run.id), self.detail)
        if not report.interrupted:
            self.previous = report.run
        return report.interrupted


def _suite_rubric(suite: Path) -> str | None:
    """The rubric the suite file names, if it can be read (the run names any error)."""
    try:
        return open_suite(suite).rubric
    except (JudgeError, OSError):
        return None


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
        cost = cost_text(p.spent.cost_usd(), p.judged_anew)
        return (f"hits {p.cache_hits} · unscored {p.unscored} · tokens {p.spent.tokens} · "
                f"{cost}")

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
