"""``judge runs list|show|export``: the stored runs, one, and its cases as a file.

The work is :mod:`judge.app.runs.stored`; this module parses the flags and renders the result.
These commands only read the store, so they open a
:class:`~judge.app.workspace.store_access.StoreLocation`, not the whole workspace: their start-up
stays light (``bench/shards.py`` measures it).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from ..app.runs.exporting import ExportFormat
from ..app.runs.stored import RunPage, export_run, run_history, show_run
from ..app.workspace.store_access import StoreLocation
from ..core.formats.models import RunInfo, RunTotals
from ..core.outcomes.usage import cost_text
from ..core.text.canonical import canonical_json
from .aliases import say_deprecated
from .options import JsonFlag, RunArg, StoreOption
from .output import (
    Cell,
    Column,
    band_style,
    console,
    emit_json,
    interval_text,
    ledger_lines,
    number_text,
    styled,
    table,
)

if TYPE_CHECKING:
    from ..app.judges.agreement_history import RunAgreement

__all__ = ["register", "register_old"]


SHOW_LIMIT = 50
"""Cases ``judge runs show`` prints unless told otherwise (``--limit``, ``--all``)."""


def register(app: typer.Typer) -> None:
    """Add ``list``, ``show`` and ``export`` to ``app``."""
    app.command("list")(runs_list)
    app.command("show")(show)
    app.command("export")(export)


def register_old(app: typer.Typer) -> None:
    """Add the old ``history`` (with its ``--agreement``), hidden, saying its new names."""
    app.command("history", hidden=True)(history)


def _workspace(store: str | None) -> StoreLocation:
    """The current folder's store location; ``--store`` over the ``store_url`` setting."""
    return StoreLocation.open(overrides={"store_url": store})


def runs_list(
    suite: Annotated[str | None, typer.Argument(help="Only runs of this suite.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many.")] = 20,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """List stored runs, newest first: suite, rubric, judges, cases, cost and status.

    A judge's agreement with people's labels, run by run: `judge judges agreement`.
    """
    found = run_history(_workspace(store), suite, limit=limit)
    if found.absent is not None:
        _say_absent(found.absent, json_out=json_out)
        return
    _print_runs(found.runs, found.store_url, suite, None, json_out=json_out)


def _say_absent(sentence: str, *, json_out: bool) -> None:
    """No store where it looked: no runs (``[]`` with ``--json``), said on stderr then."""
    if json_out:
        emit_json([])
        typer.echo(sentence, err=True)
    else:
        console().print(Text(sentence))


def history(
    suite: Annotated[str | None, typer.Argument(help="Only runs of this suite.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many.")] = 20,
    agreement: Annotated[bool, typer.Option(
        "--agreement", help="Add each run's agreement with the people's labels in the store "
                            "(now `judge judges agreement`).")] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Old name of `judge runs list` (and, with --agreement, of `judge judges agreement`)."""
    say_deprecated(("history", "--agreement") if agreement else ("history",),
                   ("judges", "agreement") if agreement else ("runs", "list"))
    found = run_history(_workspace(store), suite, limit=limit)
    if found.absent is not None:
        _say_absent(found.absent, json_out=json_out)
        return
    people = _agreement(store, found.runs) if agreement else None
    _print_runs(found.runs, found.store_url, suite, people, json_out=json_out)


def _print_runs(runs: Sequence[RunInfo], store_url: str, suite: str | None,
                people: dict[str, RunAgreement | None] | None, *, json_out: bool) -> None:
    if json_out:
        emit_json([{**r.model_dump(mode="json"),
                    **({"agreement": None if (a := people.get(r.id)) is None
                        else a.model_dump(mode="json")} if people is not None else {})}
                   for r in runs])
        return
    out = console()
    if not runs:
        out.print(f"no runs{f' of suite {suite!r}' if suite else ''} in {store_url}")
        return
    rows: list[list[Cell]] = []
    for r in runs:
        t = r.totals
        rows.append([r.id, r.created_at[:16].replace("T", " "), r.suite, r.rubric,
                     ", ".join(r.models), f"{t.cases} ({t.scored}/{t.unscored}/{t.cache_misses})",
                     cost_text(t.cost_usd, t.calls + t.batch_calls), _status(r.status),
                     *(_agreement_cells(people.get(r.id)) if people is not None else [])])
    # The id is shown whole: it is what `judge runs show` takes, and its time prefix is shared by
    # runs started in the same minute. The creation time is cut to the minute.
    table(["run", "created (UTC)", "suite", "rubric", "judges",
           "cases (scored/unscored/missing)", "cost", "status",
           *((Column("people κ [95 %]", "right"), Column("MAD [95 %]", "right"),
              Column("labelled", "right")) if people is not None else ())], rows)
    if people is not None and not any(people.values()):
        out.print("no run above has people's labels in the store: label cases with "
                  "`judge review RUN`, or load a labels file with `judge review RUN --import "
                  "FILE`", markup=False)


def _agreement(store: str | None, runs: Sequence[RunInfo]) -> dict[str, RunAgreement | None]:
    # The workspace (rubrics) is opened only for --agreement: plain history stays light.
    from ..app.judges.agreement_history import stored_agreement
    from ..app.workspace.workspace import Workspace

    return stored_agreement(Workspace.open(overrides={"store_url": store}), runs)


def _agreement_cells(a: RunAgreement | None) -> list[Cell]:
    if a is None:
        return ["—", "—", "—"]
    ci = a.intervals
    return [interval_text(number_text(a.weighted_kappa), ci.weighted_kappa if ci else None),
            interval_text(number_text(a.mean_abs_diff, 1), ci.mean_abs_diff if ci else None, 1),
            f"{a.n} of {a.labelled}"]


def show(
    run: RunArg,
    failures: Annotated[bool, typer.Option(
        "--failures", help="Only cases that failed or were not scored.")] = False,
    limit: Annotated[int, typer.Option(
        "--limit", "-n", min=0, help=f"At most this many cases (default {SHOW_LIMIT}).")
    ] = SHOW_LIMIT,
    offset: Annotated[int, typer.Option(
        "--offset", min=0, help="Skip this many cases first (the next page: --offset 50).")
    ] = 0,
    every: Annotated[bool, typer.Option(
        "--all", help="Every case (`judge runs export` streams them as JSON lines or CSV).")
    ] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Show a run: its settings, hashes and totals, and a page of its cases.

    The cases come in case-id order, 50 at a time: --offset pages on, --limit sets the
    page size, --all shows every one. --json holds the same page, with total, offset,
    limit and more saying what else there is.
    """
    view = show_run(_workspace(store), run, failures_only=failures, offset=offset,
                    limit=None if every else limit)
    if json_out:
        emit_json({"run": view.run.model_dump(mode="json"),
                   "cases": [c.model_dump(mode="json") for c in view.cases],
                   "total": view.total, "offset": view.offset, "limit": view.limit,
                   "more": view.more})
        return
    _print_header(view.run)
    _print_cases(view)
    _print_more(view)


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
    ws = _workspace(store)
    if output is not None:
        export_run(ws, run, fmt, output)
        return
    # A reader that goes away (``| head``) ends the command quietly with 141: judge.cli.main.
    export_run(ws, run, fmt, sys.stdout)
    sys.stdout.flush()


# -- rendering ------------------------------------------------------------------------------

def _status(status: str) -> Text:
    return styled(status, {"complete": "green", "running": "yellow",
                           "interrupted": "red"}.get(status, "dim"))


def _batch_text(t: RunTotals) -> str:
    """`` + 14 batch calls ($0.0018)``: the judgments a provider batch answered, if any."""
    if not t.batch_calls:
        return ""
    cost = cost_text(t.batch_cost_usd, t.batch_calls)
    return f" + {t.batch_calls} batch calls ({cost})"


def _print_header(info: RunInfo) -> None:
    out = console()
    t = info.totals
    tokens = f"{t.prompt_tokens} prompt + {t.completion_tokens} completion"
    out.print(Text.assemble((f"run {info.id}", "bold"), "  ", _status(info.status),
                            f"  created {info.created_at}"))
    lines = [
        f"suite      {info.suite}" + (f"  ({info.suite_path})" if info.suite_path else ""),
        f"rubric     {info.rubric}  hash {info.rubric_hash[:12]}",
        f"template   {info.template_id}  hash {info.template_hash[:12]}",
        f"judges     {', '.join(info.models)}  temperature {info.temperature:g}  "
        f"seed {info.seed}  samples {info.samples}",
        f"cases      {t.cases}: {t.scored} scored, {t.unscored} unscored, "
        f"{t.cache_misses} cache misses",
        f"calls      {t.calls} model calls{_batch_text(t)}, {t.cache_hits} cache hits; "
        f"{tokens} tokens; {cost_text(t.cost_usd, t.calls + t.batch_calls)}; "
        f"{t.wall_seconds:.1f} s",
        *(f"           {line}" for line in ledger_lines(t.ledger)),
    ]
    settings = info.settings.model_dump(mode="json")
    if settings:
        lines.append(f"settings   {canonical_json(settings)}")
    out.print("\n".join(lines), markup=False)  # one call: rich's cost is per call


def _print_more(view: RunPage) -> None:
    """Say how many cases the page leaves out, and how to see them."""
    if not view.more or not view.cases:
        return
    what = "failing cases" if view.failures_only else "cases"
    first, last = view.offset + 1, view.offset + len(view.cases)
    size = "" if view.limit in (None, SHOW_LIMIT) else f" --limit {view.limit}"
    again = f"judge runs show {view.run.id}{' --failures' if view.failures_only else ''}{size}"
    console().print(f"{what} {first}-{last} of {view.total}; {view.more} more: "
                    f"`{again} --offset {last}` for the next page, `--all` for every one",
                    markup=False)


def _print_cases(view: RunPage) -> None:
    out = console()
    info, cases = view.run, view.cases
    if not cases:
        if view.total:
            what = "failing cases" if view.failures_only else "cases"
            out.print(f"{view.total} {what}; none on this page (from case "
                      f"{view.offset + 1}, at most {view.limit})", markup=False)
            return
        out.print("no failing cases" if view.failures_only else "no case results stored")
        return
    categories: list[str] = []
    for case in cases:
        for c in case.category_scores:
            if c.category not in categories:
                categories.append(c.category)
    per_judge = len(info.models) > 1 or info.samples > 1
    head: list[str | Column] = [
        "case", *(["judge", "sample"] if per_judge else []), "status",
        Column("overall", "right"), "band", "pass",
        *(Column(c, "right") for c in categories), "reason"]
    rows: list[list[Cell]] = []
    for case in cases:
        finals = {c.category: c.final_score for c in case.category_scores}
        judge = [case.judge.model if case.judge else "—",
                 str(case.judge.sample if case.judge else 0)] if per_judge else []
        verdict: Cell = "—" if case.passed is None else (
            styled("pass", "green") if case.passed else styled("fail", "red"))
        status = case.status if case.status == "scored" else styled(case.status, "yellow")
        rows.append([
            case.id, *judge, status,
            "—" if case.overall_score is None else str(case.overall_score),
            styled(case.band or "—", band_style(case.band)), verdict,
            *("—" if finals.get(c) is None else str(finals[c]) for c in categories),
            case.reason or ""])
    table(head, rows)
