"""``judge review`` (the review page, labels, what next) and ``judge calibrate``.

``judge calibrate`` fits a monotone map from a judge's AI scores to people's labels.

The work is :mod:`judge.app.judges.reviewing` and :mod:`judge.app.judges.calibrating`; this module
parses the flags and renders the results. ``judge review RUN`` serves the workspace on 127.0.0.1
with a fresh review token, which only reads and labels that run (every other route needs
``JUDGE_SERVER_TOKEN``; without it they are closed), and prints the page's address; the
token rides in the address's fragment, which the browser never sends.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..app.judges.calibrating import calibrate, fold_summary
from ..app.judges.reviewing import export_labels, import_labels, next_cases
from ..app.workspace.bind import TOKEN_ENV
from ..app.workspace.workspace import Workspace
from ..report.review_page import REVIEW_PORT, review_link
from .options import JsonFlag, StoreOption
from .output import console, emit_json, plural, table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``review`` and ``calibrate`` to ``app``."""
    app.command("review")(review)
    app.command("calibrate")(calibrate_cmd)


def review(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Stored run id (or a prefix).")],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free one).")] = REVIEW_PORT,
    export: Annotated[bool, typer.Option(
        "--export", help="Write the labels from the store to the labels file and exit.")] = False,
    import_file: Annotated[Path | None, typer.Option(
        "--import", help="Read a labels file into the store (idempotent) and exit.")] = None,
    allow_unsealed: Annotated[bool, typer.Option(
        "--allow-unsealed", help="With --import: take a labels file whose seal is missing or "
        "does not match (made by hand or by another tool), on purpose.")] = False,
    out: Annotated[Path | None, typer.Option(
        help="With --export: the file (default: <suite>.labels.jsonl beside the suite).")] = None,
    next_n: Annotated[int | None, typer.Option(
        "--next", help="Print the N unlabelled cases whose labels would tell most.")] = None,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Review a run's verdicts in the browser; export, import labels; what to label next."""
    workspace = Workspace.open(overrides={"store_url": store})
    if export:
        path = export_labels(workspace, run_id, out)
        console().print(f"labels written to {escape(str(path))}")
        return
    if import_file is not None:
        changed = import_labels(workspace, run_id, import_file, allow_unsealed=allow_unsealed)
        console().print(f"{plural(changed, 'label')} changed in the store")
        return
    if next_n is not None:
        picked = next_cases(workspace, run_id, next_n)
        if json_out:
            emit_json([{"case": c, "why": w} for c, w in picked])
            return
        table(["case", "why"], [[c, w] for c, w in picked])
        return
    _serve_review(workspace, run_id, port)


def _serve_review(workspace: Workspace, run_id: str, port: int) -> None:
    from ..server.security import ReviewGrant
    from ..server.serving import serve

    with workspace.open_store() as store:
        run = store.get_run(run_id)
    if port == 0:  # a free port now, so the address printed is the one served
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
    grant = ReviewGrant(run.id, secrets.token_urlsafe(24))
    typer.echo(f"review page: {review_link(run.id, port=port)}#token={grant.token}", err=True)
    serve(workspace.root, "127.0.0.1", port, env=workspace.env,
          token=workspace.env.get(TOKEN_ENV) or None, review=grant)


def calibrate_cmd(
    run_ids: Annotated[list[str], typer.Argument(metavar="RUN", help="Stored runs of one judge.")],
    labels: Annotated[Path | None, typer.Option(
        help="A labels file (`judge review --export`; default: the suite's labels, its "
             "human: fields and <suite>.labels.jsonl, as judge agreement reads them).")]
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
