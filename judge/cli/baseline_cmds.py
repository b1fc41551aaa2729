"""Baselines and gates: ``baseline record|show|list``, ``check`` (the regression gate), ``monitor``.

The store (SQLAlchemy) and the config loader are imported inside the commands, so
``judge --help`` does not pay for them. Defaults come from the settings (``judge.toml``,
``[tool.judge]``, ``JUDGE_*``): ``store_url``, ``baselines_dir``, ``threshold``,
``block_on_regression``; a flag wins over all of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.text import Text

from ..app.judges.judge_quality import run_quality
from ..app.judges.monitor_file import monitor_file
from ..app.runs.baselines import (
    check_run,
    list_suite_baselines,
    record_baseline,
    seal_baseline,
    show_baseline,
)
from ..app.runs.gate import GateVerdict, run_headline
from ..app.runs.sharding import GroupCheck, check_group
from ..app.runs.stored import get_run
from ..app.workspace.workspace import Workspace
from ..core.formats.models import CaseResult
from ..core.formats.rubric import format_validation_error
from ..core.outcomes.baseline import baseline_text
from ..core.outcomes.monitor import MonitorConfig
from ..core.text.errors import UsageError
from .gate_reports import print_verdict, write_gate_reports
from .options import (
    AcrossJudgesFlag,
    JsonFlag,
    JunitOption,
    MarkdownOption,
    RequireBaselineFlag,
    StoreOption,
)
from .output import Cell, Column, band_style, console, emit_json, err_console, plural, styled, table
from .run_cmd import group_json, print_group

__all__ = ["register"]

DirOption = Annotated[str | None, typer.Option(
    "--baselines-dir", metavar="DIR",
    help="Baselines folder (default: setting baselines_dir, env JUDGE_BASELINES_DIR, else "
         "'baselines' in the current folder).")]
DirAlias = Annotated[str | None, typer.Option("--dir", hidden=True,
                                              help="Old name of --baselines-dir.")]
ThresholdOption = Annotated[float | None, typer.Option(
    "--threshold", min=0.0, max=1.0, metavar="T",
    help="Largest allowed drop as a fraction of 0..100 (0.05 = 5 points).")]
SuiteArg = Annotated[str, typer.Argument(
    metavar="SUITE_ID_OR_FILE", help="A suite id, or a suite file whose id is used.")]

_STATUS_STYLES = {"healthy": "green", "warning": "yellow", "critical": "red",
                  "insufficient": "dim"}


def register(app: typer.Typer) -> None:
    """Add ``baseline record|show|list|seal``, ``check`` and ``monitor`` to ``app``."""
    baseline_app = typer.Typer(help="Record, show and list baselines (baselines/<suite>.json).",
                               no_args_is_help=True)
    baseline_app.command("record")(baseline_record)
    baseline_app.command("show")(baseline_show)
    baseline_app.command("list")(baseline_list)
    baseline_app.command("seal")(baseline_seal)
    app.add_typer(baseline_app, name="baseline")
    app.command("check")(check)
    app.command("monitor")(monitor)


# -- helpers ------------------------------------------------------------------------------

def _workspace(store: str | None = None, directory: str | None = None,
               threshold: float | None = None, block: bool | None = None, *,
               across: bool = False, require: bool = False) -> Workspace:
    return Workspace.open(overrides={"store_url": store, "baselines_dir": directory,
                                     "threshold": threshold, "block_on_regression": block,
                                     "across_judges": True if across else None,
                                     "require_baseline": True if require else None})


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
        help="Run id or unique prefix (default: the suite's latest complete run).")] = None,
    store: StoreOption = None,
    directory: DirOption = None,
    dir_alias: DirAlias = None,
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
    directory: DirOption = None,
    dir_alias: DirAlias = None,
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
    directory: DirOption = None,
    dir_alias: DirAlias = None,
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
    directory: DirOption = None,
    dir_alias: DirAlias = None,
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


# -- check --------------------------------------------------------------------------------

def check(
    run_id: Annotated[str | None, typer.Argument(
        metavar="RUN", help="Run id or unique prefix (default: the latest complete run).")] = None,
    suite: Annotated[str | None, typer.Option(
        "--suite", metavar="SUITE_ID_OR_FILE",
        help="Use this suite's latest complete run.")] = None,
    baseline_file: Annotated[Path | None, typer.Option(
        "--baseline", metavar="FILE",
        help="Baseline file (default: baselines/<suite>.json).")] = None,
    threshold: ThresholdOption = None,
    block: Annotated[bool | None, typer.Option(
        "--block/--no-block",
        help="Exit 1 on a regression (default: setting block_on_regression, on).")] = None,
    store: StoreOption = None,
    directory: DirOption = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="NAME",
        help="Gate a sharded group (judge run --shard I/N --group NAME) as one run.")] = None,
    dir_alias: DirAlias = None,
    json_out: JsonFlag = False,
    across_judges: AcrossJudgesFlag = False,
    require_baseline: RequireBaselineFlag = False,
    junit: JunitOption = None,
    markdown: MarkdownOption = None,
) -> None:
    """Compare a run with its suite's baseline: the regression gate.

    With no baseline yet at the default place, one is recorded from this run when every
    case of it is scored (exit 0: first baseline recorded, nothing compared); where a
    baseline is required (CI set, or --require-baseline) a missing one fails (exit 5),
    naming the file to commit.

    Threshold precedence: --threshold > JUDGE_THRESHOLD > judge.toml / [tool.judge] >
    the baseline file's own threshold > 0.05.

    Exit 0: no regression, or --no-block, or a first baseline recorded. Exit 1: a
    regression while blocking (or, with --group, an incomplete group).

    Exit 2: bad input (unknown run, malformed or missing --baseline file).

    Exit 5: not compared although a comparison was due: the baseline is another judge's,
    rubric's or template's (unless --across-judges), no case in common, the run has
    judgments missing from an offline replay, or a required baseline is missing.
    """
    workspace = _workspace(store, directory or dir_alias, threshold, block,
                           across=across_judges, require=require_baseline)
    verdict, results, found = _gated(workspace, group, run_id, suite, baseline_file)
    _show_verdict(verdict, found, json_out=json_out)
    quality = (run_quality(workspace, get_run(workspace, verdict.run))
               if markdown is not None and found is None else None)
    write_gate_reports(verdict, results, junit=junit, markdown=markdown,
                       quality=quality.said() if quality else None)
    raise typer.Exit(verdict.exit_code if found is None else found.exit_code)


def _gated(workspace: Workspace, group: str | None, run_id: str | None, suite: str | None,
           baseline_file: Path | None,
           ) -> tuple[GateVerdict, tuple[CaseResult, ...], GroupCheck | None]:
    """The verdict, the results it compared, and the group's state with ``--group``."""
    if group is None:
        verdict = check_run(workspace, run_id, suite=suite, baseline_file=baseline_file)
        return verdict, tuple(run_headline(workspace, verdict.run)), None
    if run_id is not None:
        raise UsageError("--group gates the group's runs: a RUN is not taken with it",
                         fix="drop RUN, or drop --group")
    found = check_group(workspace, group, suite=suite, baseline_file=baseline_file)
    return found.verdict, found.results, found


def _show_verdict(verdict: GateVerdict, found: GroupCheck | None, *, json_out: bool) -> None:
    """The verdict as JSON (notices on stderr), or for a person (a group's state first)."""
    if json_out:
        for notice in verdict.notices:
            err_console().print(notice, markup=False)
        emit_json({**verdict.model_dump(mode="json"),
                   **({"group": group_json(found)} if found is not None else {})})
        return
    if found is not None:
        print_group(found)
    if found is None or found.status.complete:
        print_verdict(verdict)


# -- monitor ------------------------------------------------------------------------------

def monitor(
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl",
                                         help="Judged live records, one JSON object a line.")],
    rate: Annotated[float, typer.Option("--rate", min=0.0, max=1.0,
                                        help="Fraction of records to sample.")] = 0.1,
    seed: Annotated[int, typer.Option("--seed", help="Sampling seed.")] = 0,
    warning: Annotated[float, typer.Option("--warning", min=0.0, max=1.0,
                                           help="Warn below this pass rate.")] = 0.85,
    critical: Annotated[float, typer.Option("--critical", min=0.0, max=1.0,
                                            help="Critical below this pass rate.")] = 0.70,
    pass_score: Annotated[int, typer.Option(
        "--pass-score", min=0, max=100,
        help="A record without 'passed' passes at this overallScore.")] = 60,
    min_samples: Annotated[int, typer.Option(
        "--min-samples", min=1, help="Scored samples needed for a verdict.")] = 20,
    json_out: JsonFlag = False,
) -> None:
    """Production monitor: sample judged records and check the pass rate.

    Sampling hashes the seed with each record's id (or its JSON): a record is sampled the
    same way on every run and in any order.

    A record passes by its 'passed' field, else by overallScore >= --pass-score; with
    neither it is unscored.

    Exit 0: healthy, warning (printed in yellow) or insufficient samples. Exit 1: critical.

    Exit 2: a malformed line (named) or bad options.
    """
    try:
        config = MonitorConfig(sample_rate=rate, seed=seed, warning_below=warning,
                               critical_below=critical, pass_score=pass_score,
                               min_samples=min_samples)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise UsageError(msg, where=where, fix="--critical must not exceed --warning") from None
    status = monitor_file(Workspace.open(), file, config)
    if json_out:
        emit_json(status.model_dump(mode="json"))
    else:
        style = _STATUS_STYLES[status.status]
        rate_text = "—" if status.pass_rate is None else f"{status.pass_rate:.2%}"
        out = console()
        out.print(Text.assemble((status.status, style), f"  pass rate {rate_text} "
                                f"(warning below {status.warning_below:.0%}, critical below "
                                f"{status.critical_below:.0%})"))
        out.print(f"seen {status.seen}, sampled {status.sampled} (rate {status.sample_rate:g}, "
                  f"seed {status.seed}): {status.passed} passed, {status.failed} failed, "
                  f"{status.unscored} unscored")
        if status.status == "insufficient":
            out.print(f"[dim]fewer than {status.min_samples} scored samples: no verdict yet[/]")
    if status.status == "critical":
        raise typer.Exit(1)
