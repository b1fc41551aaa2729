"""``judge judges import``: judgments recorded elsewhere, stored as runs of their judges.

The work is :func:`judge.app.judges.importing.import_judgments` (the file's format:
:mod:`judge.core.formats.recorded`); this module parses the flags and prints the runs made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..app.judges.importing import import_judgments
from ..app.workspace.workspace import Workspace
from .options import JsonFlag, StoreOption
from .output import console, emit_json, plural

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``import`` to ``app``."""
    app.command("import")(import_cmd)


def import_cmd(
    file: Annotated[Path, typer.Argument(
        metavar="FILE", help="JSON lines: case, judge, and scores or samples per line.")],
    suite: Annotated[Path, typer.Option(
        "--suite", metavar="FILE", help="The suite the judgments are of (its cases, labels "
                                        "and deterministic signals).")],
    scale: Annotated[str | None, typer.Option(
        metavar="LOW:HIGH", help="The file's score range, mapped onto 0..100 (default "
                                 "0:100; e.g. 1:5 for a 1-5 Likert judge).")] = None,
    aggregate: Annotated[str | None, typer.Option(
        "--aggregate", metavar="mean|median",
        help="How a judge's raw samples combine (default: the mean, as --samples K).")]
    = None,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Import judgments recorded elsewhere as runs of their judges (no model, no cache).

    One line per case and judge: {"case": ID, "judge": NAME, "scores": {CATEGORY: SCORE}}
    or "samples": [{...}, ...] for raw samples. Each judge becomes one complete run of the
    suite, marked imported, that `judge judges agreement`, compare, calibrate and report read
    offline; nothing enters the judgment cache. A bad line: exit 2 naming it, nothing stored.
    """
    workspace = Workspace.open(overrides={"store_url": store, "sample_aggregate": aggregate})
    made = import_judgments(workspace, file, suite, scale=scale)
    if json_out:
        emit_json({"runs": [{"run": m.run.model_dump(mode="json"), "cases": m.cases,
                             "missing": m.missing} for m in made]})
        return
    out = console()
    for m in made:
        missing = f", {plural(m.missing, 'case')} of the suite not in the file" \
            if m.missing else ""
        out.print(f"run [bold]{escape(m.run.id)}[/]: judge {escape(m.run.models[0])}, "
                  f"{plural(m.cases, 'case')} imported{escape(missing)}")
    first = made[0].run.id
    out.print(f"next: judge judges agreement {escape(first)}  ·  judge compare "
              f"{' '.join(escape(m.run.id) for m in made)}", markup=True)
