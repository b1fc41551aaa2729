"""``judge report RUN``: one self-contained HTML page of a stored run (no model, no cache).

Optionally against another run or the suite's baseline (each case's move, band flips and
regressions marked) and with other runs' judges compared (a judge swap). The page inlines
everything, so it opens offline: a CI artifact, a pull-request attachment, an email.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..app.runs.reporting import ReportRequest, build_report
from ..app.workspace.workspace import Workspace
from ..core.text.errors import UsageError
from ..report.html import render_report, write_report
from .options import RUN_HELP, StoreOption
from .output import console, emit_json

__all__ = ["register", "report"]


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)


def report(
    run: Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP + ".")],
    against: Annotated[str | None, typer.Option(
        "--against", metavar="RUN",
        help="Show each case's move from this earlier run to RUN.")] = None,
    baseline: Annotated[bool, typer.Option(
        "--baseline", help="Show each case's move from the suite's baseline to RUN.")] = False,
    compare: Annotated[list[str] | None, typer.Option(
        "--compare", metavar="RUN",
        help="Compare RUN's judges with this run's (repeat for more): agreement, κ, ρ, τ, "
             "band flips.")] = None,
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="FILE", help="Where to write the page.")] = Path(
            "report.html"),
    store: StoreOption = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print where the page went as JSON, nothing else.")] = False,
) -> None:
    """Write an HTML report of RUN: scores, bands, per-category distributions, every case.

    Exit 0: written. 2: bad input (an unknown run, no baseline, --against with --baseline).
    """
    if against is not None and baseline:
        raise UsageError("give --against RUN or --baseline, not both", fix="drop one of them")
    workspace = Workspace.open(overrides={"store_url": store})
    request = ReportRequest(run=run, against=against, baseline=baseline,
                            compare=tuple(compare or ()))
    data = build_report(workspace, request)
    size = write_report(output, render_report(data))
    if json_out:
        emit_json({"path": str(output), "bytes": size, "run": data.run.id,
                   "cases": len(data.cases),
                   "against": data.against.label if data.against else None,
                   "hasRegression": data.against.comparison.has_regression
                   if data.against else None,
                   "judges": [j.name for j in data.agreement.comparison.judges]
                   if data.agreement else list(data.run.models)})
        return
    console().print(f"wrote {output} ({size / 1_000_000:.2f} MB): run {data.run.id}, "
                    f"{len(data.cases)} case(s)")
