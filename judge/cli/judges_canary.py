"""``judge judges canary SUITE``: re-ask a seeded sample of cached judgments live; 1 on drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..app.judges.canary import CanaryReport, CanaryRequest, run_canary
from ..app.workspace.workspace import Workspace
from .output import Cell, Column, console, emit_json, styled, table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``canary`` to ``app``."""
    app.command("canary")(canary)


def canary(
    suite: Annotated[Path, typer.Argument(help="Suite file whose cached judgments to re-ask.")],
    sample: Annotated[int, typer.Option(min=1, help="Cached judgments to re-ask.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the sample (not the judge's).")] = 0,
    tolerance: Annotated[float | None, typer.Option(
        min=0.0, max=100.0, help="Mean absolute AI-score difference allowed per category, in "
                                 "points (default: the judge's measured noise from a "
                                 "--samples run, else the threshold setting x 100).")] = None,
    model: Annotated[list[str] | None, typer.Option(
        "--model", "-m", help="Judge model (as the suite was judged with).")] = None,
    api_base: Annotated[str | None, typer.Option(help="Base URL of the model server.")] = None,
    rubric: Annotated[str | None, typer.Option(help="Rubric id or path.")] = None,
    judge_seed: Annotated[int | None, typer.Option(
        "--judge-seed", help="The judge seed the suite was judged with (default 42).")] = None,
    template: Annotated[str | None, typer.Option(help="Prompt template id.")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Cache folder.")] = None,
    store: Annotated[str | None, typer.Option(help="Run store URL.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Re-ask a seeded sample of SUITE's cached judgments live and compare the verdicts.

    The cache is never written. The comparison is stored as a run of suite `<id>:canary`.
    Exit 0: no drift. 1: drifted beyond the judge's noise. 2: bad input. 4: nothing compared.
    """
    overrides: dict[str, Any] = {
        "model": list(model) if model else None, "api_base": api_base, "rubric": rubric,
        "seed": judge_seed, "template": template, "cache_dir": cache_dir, "store_url": store}
    report = run_canary(Workspace.open(overrides=overrides),
                        CanaryRequest(suite=suite, sample=sample, seed=seed,
                                      tolerance=tolerance))
    if json_out:
        emit_json({"run": report.run.id, "summary": report.summary.model_dump(mode="json"),
                   "items": [i.model_dump(mode="json") for i in report.items],
                   "exitCode": report.exit_code})
    else:
        _print(report)
    raise typer.Exit(report.exit_code)


def _print(report: CanaryReport) -> None:
    out = console()
    s = report.summary
    rate = "—" if s.exact_match_rate is None else f"{s.exact_match_rate:.0%}"
    out.print(f"[bold]canary {report.run.id}[/]: {s.compared} of {s.sampled} re-asked "
              f"judgment(s) compared, {s.failed} failed · exact match {rate} · band flips "
              f"{s.band_flips}")
    rows: list[list[Cell]] = []
    for c in s.categories:
        rows.append([c.category, f"{c.mean_abs_diff:.2f}", f"{c.mean_diff:+.2f}",
                     str(c.max_abs_diff), f"{c.tolerance.points:g} ({c.tolerance.source})",
                     styled("yes", "red") if c.drifted else styled("no", "green")])
    table(["category", *(Column(n, "right") for n in ("mean |Δ|", "mean Δ", "max |Δ|")),
           "tolerance", "drift"], rows)
    for notice in s.notices:
        out.print(notice, markup=False, style="cyan")
    if s.drifted:
        out.print("[red]⚠ the judge drifted[/]")
        for reason in s.reasons:
            out.print(f"  • {reason}", markup=False)
    elif s.compared:
        out.print("[green]✓ no drift beyond the judge's noise[/]")
