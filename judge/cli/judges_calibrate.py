"""``judge judges calibrate``: a monotone map from a judge's AI scores to people's labels.

The work is :mod:`judge.app.judges.calibrating`; this module parses the flags and renders the
report. A rubric applies the map it writes with ``calibration: FILE``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..app.judges.calibrating import calibrate, fold_summary
from ..app.workspace.workspace import Workspace
from .options import JsonFlag, StoreOption
from .output import console, emit_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` to ``app``."""
    app.command("calibrate")(calibrate_cmd)


def calibrate_cmd(
    run_ids: Annotated[list[str], typer.Argument(metavar="RUN", help="Stored runs of one judge.")],
    labels: Annotated[Path | None, typer.Option(
        help="A labels file (`judge review --export`; default: the suite's labels, its "
             "human: fields and <suite>.labels.jsonl, as judge judges agreement reads them).")]
    = None,
    suite: Annotated[Path | None, typer.Option(
        "--suite", metavar="FILE",
        help="Suite file with the people's labels (default: the runs' suite file).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Where to write it (default: calibrations/<rubric>.<judge>.json).")] = None,
    folds: Annotated[int, typer.Option(help="Folds of the cross-validation.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the fold assignment.")] = 0,
    judge: Annotated[str | None, typer.Option(
        help="The judge model to calibrate (default: the runs' headline judge).")] = None,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Fit a monotone map from a judge's AI scores to people's labels, per category.

    Reports held-out agreement before and after by k-fold cross-validation and writes a
    versioned calibration file; a rubric applies it with `calibration: FILE`.
    """
    report = calibrate(Workspace.open(overrides={"store_url": store}), run_ids, labels,
                       out=out, folds=folds, seed=seed, judge=judge, suite_file=suite)
    cal = report.calibration
    if json_out:
        emit_json({"file": str(report.path), "skipped": report.skipped,
                   **json.loads(cal.model_dump_json(include={"judge", "rubric",
                                                             "cross_validation"}))})
        return
    out_ = console()
    out_.print(f"calibration of {escape(cal.judge)} on rubric {escape(cal.rubric)} written "
               f"to {escape(str(report.path))}")
    for cat, fold in cal.cross_validation.items():
        out_.print(f"  {escape(cat)}: {fold_summary(fold)}")
    for cat, why in report.skipped.items():
        out_.print(f"  {escape(cat)}: not calibrated ({escape(why)})")
    rel = os.path.relpath(report.path, Path.cwd())
    out_.print(f"apply it: add `calibration: {escape(rel)}` (relative to the rubric file) to "
               f"the rubric, then `judge rescore RUN --rubric RUBRIC`")
