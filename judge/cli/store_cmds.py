"""Commands over stored runs: ``history``, ``show`` and ``export``.

``judge.store`` (and with it SQLAlchemy) is imported inside the commands, so ``judge --help``
never pays for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from .output import band_style, console, emit_json

if TYPE_CHECKING:
    from ..models import CaseResult, RunInfo
    from ..store import RunStore

__all__ = ["ExportFormat", "register"]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout, nothing else.")]
StoreOption = Annotated[str | None, typer.Option(
    "--store", metavar="URL",
    help="Run store URL (default: setting store_url, env JUDGE_STORE_URL, "
         "else sqlite:///.judge/judge.db in the current folder).")]
RunArg = Annotated[str, typer.Argument(help="Run id, or a unique prefix of it.")]


class ExportFormat(StrEnum):
    """What ``judge export`` writes."""

    jsonl = "jsonl"
    csv = "csv"


def register(app: typer.Typer) -> None:
    """Add ``history``, ``show`` and ``export`` to ``app``."""
    app.command("history")(history)
    app.command("show")(show)
    app.command("export")(export)


def history(
    suite: Annotated[str | None, typer.Argument(help="Only runs of this suite.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many.")] = 20,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """List stored runs, newest first."""
    with _open(store) as st:
        runs = st.list_runs(suite, limit=limit)
    if json_out:
        emit_json([r.model_dump(mode="json") for r in runs])
        return
    out = console()
    if not runs:
        out.print(f"no runs{f' of suite {suite!r}' if suite else ''} in {st.url}")
        return
    from rich.markup import escape
    from rich.table import Table

    # The id is shown whole (it is what `judge show` takes, and its time prefix is shared by
    # runs started in the same minute); the creation time is cut to the minute.
    table = Table()
    table.add_column("run", no_wrap=True, min_width=22)
    table.add_column("created (UTC)", no_wrap=True)
    for name in ("suite", "rubric", "judges"):
        table.add_column(name, overflow="ellipsis", no_wrap=True, min_width=10)
    for name in ("cases (scored/unsc./miss)", "cost", "status"):
        table.add_column(name, no_wrap=True)
    for r in runs:
        t = r.totals
        table.add_row(r.id, escape(r.createdAt[:16].replace("T", " ")),
                      escape(r.suite), escape(r.rubric), escape(", ".join(r.models)),
                      f"{t.cases} ({t.scored}/{t.unscored}/{t.cacheMisses})", _cost(t.costUsd),
                      _status(r.status))
    out.print(table)


def show(
    run: RunArg,
    failures: Annotated[bool, typer.Option(
        "--failures", help="Only cases that failed or were not scored.")] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Show a run: its settings, hashes and totals, and a table of its cases."""
    with _open(store) as st:
        info = st.get_run(run)
        cases = [c for c in st.iter_results(info.id) if not failures or _is_failure(c)]
    if json_out:
        emit_json({"run": info.model_dump(mode="json"),
                   "cases": [c.model_dump(mode="json") for c in cases]})
        return
    _print_header(info)
    _print_cases(info, cases, failures)


def export(
    run: RunArg,
    fmt: Annotated[ExportFormat, typer.Option(
        "--format", "-f", case_sensitive=False, help="jsonl: one case result per line; "
        "csv: one row per case, a column per category score.")] = ExportFormat.jsonl,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="File to write (default: stdout).")] = None,
    store: StoreOption = None,
) -> None:
    """Write a run's case results as JSON lines or CSV, streaming them from the store."""
    from ..errors import UsageError

    with _open(store) as st:
        info = st.get_run(run)
        results = st.iter_results(info.id)
        if output is None:
            try:
                _write(info, results, fmt, sys.stdout)
                sys.stdout.flush()
            except BrokenPipeError:
                # The reader (``| head``) went away: stop quietly, as other Unix tools do.
                import os

                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                raise typer.Exit(1) from None
            return
        try:
            with output.open("w", encoding="utf-8", newline="") as fh:
                _write(info, results, fmt, fh)
        except OSError as exc:
            raise UsageError(f"cannot write: {exc.strerror or exc}", file=str(output)) from None


def _open(store: str | None) -> RunStore:
    """The store ``judge run`` writes to: flag, else env, else the workspace's settings."""
    from ..app.workspace import Workspace

    return Workspace.open(overrides={"store_url": store}).open_store()


def _write(info: RunInfo, results: Iterable[CaseResult], fmt: ExportFormat, fh: TextIO) -> None:
    if fmt is ExportFormat.jsonl:
        from ..canonical import canonical_json

        for result in results:
            fh.write(canonical_json(result.model_dump(mode="json")) + "\n")
    else:
        _write_csv(info, results, fh)


def _write_csv(info: RunInfo, results: Iterable[CaseResult], fh: TextIO) -> None:
    """One row per result; category columns come from the first result that has scores.

    Results before that one (unscored cases carry no categories) are held back until it
    arrives, so the stream is only buffered as far as it must be.
    """
    import csv

    writer = csv.writer(fh, lineterminator="\n")
    categories: list[str] | None = None
    held: list[CaseResult] = []

    def start(cats: list[str]) -> None:
        writer.writerow(["run_id", "case_id", "model", "sample", "status", "overallScore",
                         "band", "passed", "reason",
                         *(f"{c}.{part}" for c in cats
                           for part in ("deterministic", "ai", "final", "band"))])
        for r in held:
            writer.writerow(_csv_row(info, r, cats))
        held.clear()

    for result in results:
        if categories is not None:
            writer.writerow(_csv_row(info, result, categories))
            continue
        held.append(result)
        if result.categoryScores:
            categories = [c.category for c in result.categoryScores]
            start(categories)
    if categories is None:
        start([])


def _csv_row(info: RunInfo, r: CaseResult, categories: list[str]) -> list[str]:
    by_cat = {c.category: c for c in r.categoryScores}
    row = [info.id, r.id, r.judge.model if r.judge else "", str(r.judge.sample if r.judge else 0),
           r.status, _cell(r.overallScore), _cell(r.band), _cell(r.passed), _cell(r.reason)]
    for name in categories:
        c = by_cat.get(name)
        row += ["", "", "", ""] if c is None else [
            _cell(c.deterministicScore), _cell(c.aiScore), _cell(c.finalScore), _cell(c.band)]
    return row


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_failure(case: CaseResult) -> bool:
    return case.status != "scored" or case.passed is False


def _cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _status(status: str) -> str:
    style = {"complete": "green", "running": "yellow", "interrupted": "red"}.get(status, "dim")
    return f"[{style}]{status}[/]"


def _print_header(info: RunInfo) -> None:
    from rich.markup import escape

    from ..canonical import canonical_json

    out = console()
    t = info.totals
    tokens = f"{t.promptTokens} prompt + {t.completionTokens} completion"
    lines = [
        f"[bold]run {escape(info.id)}[/]  {_status(info.status)}  created {escape(info.createdAt)}",
        f"suite      {escape(info.suite)}"
        + (f"  ({escape(info.suitePath)})" if info.suitePath else ""),
        f"rubric     {escape(info.rubric)}  hash {info.rubricHash[:12]}",
        f"template   {escape(info.templateId)}  hash {info.templateHash[:12]}",
        f"judges     {escape(', '.join(info.models))}  temperature {info.temperature:g}  "
        f"seed {info.seed}  samples {info.samples}",
        f"cases      {t.cases}: {t.scored} scored, {t.unscored} unscored, "
        f"{t.cacheMisses} cache misses",
        f"calls      {t.calls} paid, {t.cacheHits} cache hits; {tokens} tokens; "
        f"cost {_cost(t.costUsd)}; {t.wallSeconds:.1f} s",
    ]
    if info.settings:
        lines.append(f"settings   {escape(canonical_json(info.settings))}")
    for line in lines:
        out.print(line)


def _print_cases(info: RunInfo, cases: list[CaseResult], failures: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    if not cases:
        out.print("no failing cases" if failures else "no case results stored")
        return
    categories: list[str] = []
    for case in cases:
        for c in case.categoryScores:
            if c.category not in categories:
                categories.append(c.category)
    per_judge = len(info.models) > 1 or info.samples > 1
    head = ["case", *(["judge", "sample"] if per_judge else []), "status", "overall", "band",
            "pass", *categories, "reason"]
    table = Table(*head)
    for case in cases:
        finals = {c.category: c.finalScore for c in case.categoryScores}
        judge = [escape(case.judge.model if case.judge else "—"),
                 str(case.judge.sample if case.judge else 0)] if per_judge else []
        verdict = {True: "[green]pass[/]", False: "[red]fail[/]", None: "—"}[case.passed]
        status = case.status if case.status == "scored" else f"[yellow]{case.status}[/]"
        table.add_row(
            escape(case.id), *judge, status,
            "—" if case.overallScore is None else str(case.overallScore),
            f"[{band_style(case.band)}]{case.band or '—'}[/]", verdict,
            *("—" if finals.get(c) is None else str(finals[c]) for c in categories),
            escape(case.reason or ""))
    out.print(table)
