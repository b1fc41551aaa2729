"""``judge run``: judge a suite, store the run, summarise, compare with the baseline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .output import band_style, emit_json_streaming, err_console

if TYPE_CHECKING:
    from ..config import Config
    from ..models import RunInfo
    from ..summary import Summary

__all__ = ["EXIT_CACHE_MISS", "EXIT_INTERRUPTED", "EXIT_NO_JUDGMENT", "register"]

EXIT_CACHE_MISS = 3
EXIT_NO_JUDGMENT = 4
DEFAULT_LOCAL = "local/smollm2"
# A provider key in the environment means the user meant a hosted judge: never silently
# fall back to the small local model then.
PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY",
                 "AZURE_API_KEY", "GROQ_API_KEY", "TOGETHERAI_API_KEY", "OPENROUTER_API_KEY",
                 "DEEPSEEK_API_KEY", "COHERE_API_KEY", "JUDGE_API_KEY")
EXIT_INTERRUPTED = 130


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
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Judge SUITE, store the run, print the summary and the baseline comparison."""
    from ..config import load_config

    flags: dict[str, Any] = {
        "rubric": rubric, "model": list(model) if model else None, "api_base": api_base,
        "concurrency": concurrency, "seed": seed, "samples": samples, "panel": panel,
        "cache_mode": "offline" if offline else cache_mode, "cache_dir": cache_dir,
        "store_url": store, "template": template, "output_mode": output_mode,
        "timeout": timeout, "llm": False if no_llm else None,
    }
    config = load_config(Path.cwd(), flags)
    code = run_suite(config, suite, tags=tag or [], complexity=complexity or [],
                     ids=case or [], check=not no_check, json_out=json_out)
    raise typer.Exit(code)


def run_suite(config: Config, suite_path: Path, *, tags: list[str], complexity: list[str],
              ids: list[str], check: bool, json_out: bool) -> int:
    """Everything ``judge run`` does; returns the exit code."""
    import asyncio

    from ..clock import new_run_id, utc_now
    from ..errors import SuiteError, UsageError
    from ..resources import load_rubric, open_suite
    from ..rubric import rubric_hash
    from ..suite import Case, filter_cases, validate_cases

    workspace = config.workspace
    source = open_suite(suite_path)
    rubric = load_rubric(config["rubric"] or source.rubric or "task-evaluation", workspace)

    def wanted(case: Case) -> bool:
        return bool(filter_cases([case], tags=tags, complexity=complexity, ids=ids)) and (
            config["llm"] or case.judged_by == "deterministic")

    # One validating pass over the whole file before anything is judged or written; a JSONL
    # suite streams, so memory does not grow with the number of cases.
    count = llm_count = 0
    first_ids: list[str] = []
    found: set[str] = set()
    kept = bytearray()  # one byte per case: judged in the second pass or not (100 KB per 100k)
    for case in source.cases():
        validate_cases((case,), rubric, str(suite_path))
        if len(first_ids) < 5:
            first_ids.append(case.id)
        if case.id in ids:
            found.add(case.id)
        kept.append(wanted(case))
        if kept[-1]:
            count += 1
            llm_count += case.judged_by == "llm"
    unknown = sorted(set(ids) - found)
    if unknown:
        raise SuiteError(f"no case {unknown[0]!r}", file=str(suite_path),
                         fix="known ids start with: " + ", ".join(first_ids))
    if not count:
        raise UsageError("no case left to run after the filters", fix="loosen --tag/--case")
    needs_judge = llm_count > 0
    mode = config["cache_mode"]
    models, notice = _resolve_models(config, needs_judge, offline=mode == "offline")
    from .run_exec import Execution

    execution = Execution(config=config, suite_id=source.id, suite_path=suite_path,
                          rubric=rubric, rubric_hash=rubric_hash(rubric), models=models,
                          cases=lambda: source.items(kept),
                          case_count=count, llm_count=llm_count,
                          offline=mode == "offline", needs_judge=needs_judge,
                          now=utc_now, run_id=new_run_id(utc_now()))
    if notice:
        err_console().print(notice)
    try:
        outcome = asyncio.run(execution.start())
    except KeyboardInterrupt:
        # asyncio re-raises Ctrl-C after the run has stored what it judged and finished.
        if execution.outcome is None:
            raise
        outcome = execution.outcome
    return _report(execution, outcome, check=check, json_out=json_out)


def _resolve_models(config: Config, needs_judge: bool, *,
                    offline: bool) -> tuple[list[str], str | None]:
    import os

    from ..errors import UsageError

    models = config.models()
    if models or not needs_judge:
        return models or ["none"], None
    if offline:
        # Replaying needs no server: the local judge's cached verdicts replay anywhere.
        return [DEFAULT_LOCAL], f"offline replay of the default judge {DEFAULT_LOCAL}"
    keys = sorted(k for k in PROVIDER_KEYS if os.environ.get(k))
    if keys:
        raise UsageError(f"no judge model configured, but {keys[0]} is set",
                         fix="pass --model (e.g. --model openai/gpt-4o-mini) or set JUDGE_MODEL")
    from ..local import INSTALL_HINT, default_model_notice

    notice = default_model_notice()
    if notice is None:
        raise UsageError("no judge model configured and the local judge is not installed",
                         fix=f"pass --model (e.g. --model openai/gpt-4o-mini), set JUDGE_MODEL, "
                             f"or install the local judge: {INSTALL_HINT}")
    return [DEFAULT_LOCAL], notice


def _report(execution: Any, outcome: Any, *, check: bool, json_out: bool) -> int:
    comparison = execution.compare() if check and not outcome.interrupted else None
    if json_out:
        emit_json_streaming({
            "run": outcome.run.model_dump(mode="json"),
            "summary": outcome.summary.model_dump(mode="json"),
            "summaries": {m: s.model_dump(mode="json") for m, s in outcome.summaries.items()}
            if len(outcome.summaries) > 1 else None,
            "baseline": comparison,
        }, "cases", (r.model_dump(mode="json") for r in execution.results()))
    else:
        _print_summary(execution, outcome.run, outcome.summary, outcome.summaries)
        _print_comparison(comparison)
    if outcome.interrupted:
        err_console().print(f"[yellow]interrupted[/]: kept {outcome.summary.cases} judged "
                            f"case(s) in run {outcome.run.id}; run again to resume from the cache")
        return EXIT_INTERRUPTED
    if outcome.summary.cacheMisses:
        misses = execution.missing_cases()
        err_console().print(
            f"[red]offline: {len(misses)} judgment(s) not in the cache[/]: " + ", ".join(misses))
        return EXIT_CACHE_MISS
    if execution.llm_count and not execution.offline:
        scored, reason = execution.first_failure()
        if scored == 0:
            err_console().print(f"[red]no judgment succeeded[/] ({execution.llm_count} LLM "
                                f"case(s) unscored); the first reason: {reason}")
            return EXIT_NO_JUDGMENT
    if comparison is not None and comparison.get("hasRegression") and \
            execution.config["block_on_regression"]:
        return 1
    return 0


CASE_TABLE_LIMIT = 40


def _print_summary(execution: Any, run: RunInfo, summary: Summary,
                   summaries: dict[str, Summary]) -> None:
    from ..panel import headline_of
    from .output import console

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
        _case_table(execution, run)
    elif summary.failures:
        _failure_table(execution, summary)
    rate = "—" if summary.passRate is None else f"{summary.passRate:.0%}"
    mean = "—" if summary.meanOverall is None else f"{summary.meanOverall:.1f}"
    out.print(f"cases {summary.cases}: scored {summary.scored}, unscored {summary.unscored}"
              + (f", cache misses {summary.cacheMisses}" if summary.cacheMisses else "")
              + f"  ·  pass rate [bold]{rate}[/] ({summary.passed}/{summary.scored}, pass ≥ "
              + f"{execution.rubric.pass_score})  ·  mean overall [bold]{mean}[/]")
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


def cache_line(t: Any) -> str:
    """``cache: 14 of 16 judgments reused (saved 14 calls), 2 judged anew``."""
    reused = t.cacheHits
    line = (f"cache: {reused} of {t.judgments} judgments reused (saved {t.savedCalls} "
            f"call{'s' if t.savedCalls != 1 else ''}), {t.judgedAnew} judged anew")
    missing = t.judgments - reused - t.judgedAnew
    line += f", {missing} not in the cache" if missing > 0 else ""
    hits = getattr(t, "indexHits", 0)
    return line + (f"; {hits} replayed through the index without rendering" if hits else "")


def _case_table(execution: Any, run: RunInfo) -> None:
    from rich.table import Table

    from ..panel import headline_of
    from .output import console

    cats = [c.id for c in execution.rubric.categories]
    head = headline_of(run)
    table = Table("case", *[_short(c) for c in cats], "overall", "band", "pass", "note",
                  caption="per category: deterministic/ai → final", caption_justify="left")
    for r in execution.results():
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


def _failure_table(execution: Any, summary: Summary) -> None:
    from rich.table import Table

    from .output import console

    table = Table("case", "status", "overall", "band", "reason",
                  title=f"failures ({summary.failuresTotal})", title_justify="left")
    for f in summary.failures[:20]:
        reason = f.reason or f"below the pass mark ({execution.rubric.pass_score})"
        table.add_row(f.id, f.status, "—" if f.overallScore is None else str(f.overallScore),
                      f"[{band_style(f.band)}]{f.band or '—'}[/]", reason[:80])
    console().print(table)


def _print_comparison(comparison: dict[str, Any] | None) -> None:
    from .output import console

    if comparison is None:
        return
    out = console()
    if comparison.get("skipped"):
        out.print(f"[yellow]{comparison['skipped']}[/]")
        return
    if comparison.get("baselineRecorded"):
        out.print(f"[cyan]no baseline yet: recorded {comparison.get('baselinePath')}[/]")
        return
    if comparison["hasRegression"]:
        out.print(f"[red]⚠ regression[/] against {comparison['baselineId']}: "
                  f"{comparison['previousScore']} → {comparison['currentScore']} "
                  f"({comparison['scoreDelta']:+})")
        for reason in comparison["blockedReasons"]:
            out.print(f"  [red]•[/] {reason}")
    else:
        out.print(f"[green]✓ no regression[/] against {comparison['baselineId']}: "
                  f"{comparison['previousScore']} → {comparison['currentScore']} "
                  f"({comparison['scoreDelta']:+})")
    for sentence in comparison.get("noiseReasons") or ():
        out.print(f"  ~ {sentence}", markup=False)

