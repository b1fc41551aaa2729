"""``judge rescore``: a stored run re-scored under another rubric, with no model call.

The work is :mod:`judge.app.runs.rescoring`; this module parses the flags and renders the
result.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ..app.runs.rescoring import EXACT_NOTE, RescoreReport, rescore_run
from ..app.workspace.workspace import Workspace
from .options import JsonFlag, StoreOption
from .output import console, emit_json, plural, table

__all__ = ["register"]



def register(app: typer.Typer) -> None:
    """Add ``rescore`` to ``app``."""
    app.command("rescore")(rescore)


def rescore(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Stored run id (or a prefix).")],
    rubric: Annotated[str, typer.Option(help="Rubric id or path to score under.")],
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Recompute a stored run's finals under another rubric; stores a new run, calls no model.

    A whole stored run, kept beside the first; `judge rubric score` scores one file of scores
    by hand. A case changed when its status, overall score, band or pass/fail differs (as `judge
    diff` counts between the two runs).
    """
    report = rescore_run(Workspace.open(overrides={"store_url": store}), run_id, rubric)
    if json_out:
        emit_json(report.public())
        return
    out = console()
    source, summary = report.source, report.summary
    out.print(f"re-scored run {escape(source.id)} ({escape(source.rubric)}) under "
              f"[bold]{escape(report.rubric)}[/] as run [bold]{escape(report.run.id)}[/]: "
              f"0 model calls, {plural(report.cases_moved, 'case')} changed score, band or "
              "pass")
    _print_moves(report)
    rate = "—" if summary.pass_rate is None else f"{summary.pass_rate:.0%}"
    out.print(f"pass rate {rate}, mean overall {summary.mean_overall}")
    out.print(EXACT_NOTE, markup=False)


def _print_moves(report: RescoreReport) -> None:
    """The cases that moved, one row each, not only their count."""
    if not report.moves:
        return

    def arrow(pair: tuple[object, object]) -> str:
        a, b = ("—" if v is None else str(v) for v in pair)
        return a if a == b else f"{a} → {b}"

    table(["case", "overall", "band", "pass"],
          [[m.id, arrow(m.overall), arrow(m.band),
            arrow((_pass_word(m.passed[0]), _pass_word(m.passed[1])))] for m in report.moves])


def _pass_word(passed: bool | None) -> str | None:
    """``pass``/``fail`` as ``judge diff`` words them (None: not scored)."""
    return None if passed is None else ("pass" if passed else "fail")
