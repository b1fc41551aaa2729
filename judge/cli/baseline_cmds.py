"""``judge baseline record|show|list|seal``: the baseline files (``baselines/<suite>.json``).

Defaults come from the settings (``judge.toml``, ``[tool.judge]``, ``JUDGE_*``):
``store_url``, ``baselines_dir``, ``threshold``; a flag wins over all of them. The gate that
reads these files is ``judge check`` (:mod:`judge.cli.check_cmd`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from ..app.runs.baselines import (
    list_suite_baselines,
    record_baseline,
    seal_baseline,
    show_baseline,
)
from ..app.workspace.workspace import Workspace
from ..core.outcomes.baseline import baseline_text
from .options import (
    RUN_HELP,
    BaselinesDirAlias,
    BaselinesDirOption,
    JsonFlag,
    StoreOption,
    ThresholdOption,
)
from .output import Cell, Column, band_style, console, emit_json, err_console, plural, styled, table

__all__ = ["register"]

SuiteArg = Annotated[str, typer.Argument(
    metavar="SUITE_ID_OR_FILE", help="A suite id, or a suite file whose id is used.")]


def register(app: typer.Typer) -> None:
    """Add the leaves of ``judge baseline`` (record, show, list, seal) to ``app``."""
    app.command("record")(baseline_record)
    app.command("show")(baseline_show)
    app.command("list")(baseline_list)
    app.command("seal")(baseline_seal)


# -- helpers ------------------------------------------------------------------------------

def _workspace(store: str | None = None, directory: str | None = None,
               threshold: float | None = None) -> Workspace:
    return Workspace.open(overrides={"store_url": store, "baselines_dir": directory,
                                     "threshold": threshold})


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# -- baseline record | show | list --------------------------------------------------------

def baseline_record(
    suite: SuiteArg,
    run_id: Annotated[str | None, typer.Option(
        "--from", metavar="RUN",
        help=RUN_HELP + " (default: the suite's latest complete run).")] = None,
    store: StoreOption = None,
    directory: BaselinesDirOption = None,
    dir_alias: BaselinesDirAlias = None,
    threshold: ThresholdOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Record a run's scores as the suite's baseline, writing baselines/<suite>.json atomically.

    One result per case: the run's headline result (the panel with several judges, the median of
    the samples with --samples K, else the first judge's judgment). Only a complete run
    with every case scored can become a baseline.

    A run judged with --samples K records each case's spread (the judge's measured noise),
    so `judge check` reports a drop within it as noise. Otherwise an existing baseline's
    per-case spreads are kept. Its threshold is kept too unless --threshold (or a setting)
    gives one.
    """
    workspace = _workspace(store, directory or dir_alias, threshold)
    done = record_baseline(workspace, suite, run_id)
    if done.replaced_unreadable:
        err_console().print(f"replacing an unreadable baseline: {done.replaced_unreadable}",
                            markup=False)
    baseline = done.baseline
    if json_out:
        emit_json({"path": str(done.path), "changed": done.changed,
                   "baseline": json.loads(baseline_text(baseline, workspace.sealer))})
        return
    note = "" if done.changed else " (unchanged)"
    console().print(
        f"recorded {_shown(done.path)}{note}: baseline {baseline.baseline_id} from run "
        f"{done.run} — {plural(len(baseline.cases), 'case')}, score {baseline.score:.2f}, "
        f"pass rate {baseline.pass_rate:.2%}, threshold {baseline.threshold * 100:g} points",
        markup=False)


def baseline_seal(
    suite: SuiteArg,
    directory: BaselinesDirOption = None,
    dir_alias: BaselinesDirAlias = None,
) -> None:
    """Accept a hand edit of a baseline on purpose: write the seals of its content anew.

    `judge check` refuses a baseline whose digest does not match its content (edited by
    hand after it was recorded), and with JUDGE_CACHE_SECRET set one not sealed with it;
    seal it only when the edit is yours.
    """
    path, baseline, changed = seal_baseline(_workspace(directory=directory or dir_alias), suite)
    note = "sealed" if changed else "already sealed"
    console().print(f"{_shown(path)}: {note} (baseline {baseline.baseline_id}, threshold "
                    f"{baseline.threshold * 100:g} points)", markup=False)


def baseline_show(
    suite: SuiteArg,
    directory: BaselinesDirOption = None,
    dir_alias: BaselinesDirAlias = None,
    json_out: JsonFlag = False,
) -> None:
    """Show a suite's baseline: id, source run, threshold and the per-case scores."""
    workspace = _workspace(directory=directory or dir_alias)
    path, baseline = show_baseline(workspace, suite)
    if json_out:  # as the file says, seals included
        emit_json(json.loads(baseline_text(baseline, workspace.sealer)))
        return
    out = console()
    out.print(Text.assemble((baseline.baseline_id, "bold"), f"  ({_shown(path)})"))
    out.print(f"rubric {baseline.rubric} ({baseline.rubric_hash[:12]}), judges "
              f"{', '.join(baseline.models) or '—'}, from run {baseline.recorded_from or '—'}",
              markup=False)
    out.print(f"score {baseline.score:.2f}, pass rate {baseline.pass_rate:.2%}, "
              f"threshold {baseline.threshold * 100:g} points, "
              f"{plural(len(baseline.cases), 'case')}", markup=False)
    rows: list[list[Cell]] = []
    for case_id, case in baseline.cases.items():
        rows.append([case_id, case.status,
                     "—" if case.overall_score is None else str(case.overall_score),
                     styled(case.band or "—", band_style(case.band)),
                     "—" if case.passed is None else ("yes" if case.passed else "no"),
                     "—" if case.spread is None else str(case.spread)])
    table(["case", "status", Column("score", "right"), "band", "passed",
           Column("spread", "right")], rows)


def baseline_list(
    directory: BaselinesDirOption = None,
    dir_alias: BaselinesDirAlias = None,
    json_out: JsonFlag = False,
) -> None:
    """List the baselines in the folder; an unreadable file is reported and makes exit 2."""
    entries = list_suite_baselines(_workspace(directory=directory or dir_alias))
    rows: list[dict[str, Any]] = []
    for e in entries:
        b = e.baseline
        if b is None:
            rows.append({"suite": e.suite, "path": str(e.path), "error": e.error})
            continue
        rows.append({"suite": b.suite, "path": str(e.path), "baselineId": b.baseline_id,
                     "score": b.score, "passRate": b.pass_rate, "cases": len(b.cases),
                     "threshold": b.threshold, "recordedFrom": b.recorded_from})
    if json_out:
        emit_json(rows)
    else:
        cells: list[list[Cell]] = []
        for row in rows:
            if "error" in row:
                err_console().print(f"✗ {row['error']}", markup=False)
                continue
            cells.append([row["suite"], row["baselineId"], f"{row['score']:.2f}",
                          f"{row['passRate']:.2%}", str(row["cases"]), row["recordedFrom"] or "—"])
        table(["suite", "baseline id", Column("score", "right"), Column("pass rate", "right"),
               Column("cases", "right"), "from run"], cells)
    if any(e.baseline is None for e in entries):
        raise typer.Exit(2)
