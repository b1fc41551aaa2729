"""``judge diff RUN_A RUN_B``: what moved between two runs, case by case.

The work is :mod:`judge.app.runs.diffing`; this module parses the flags and renders the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from ..app.runs.diffing import CaseDiff, RunDiff, diff_runs
from ..app.workspace.workspace import Workspace
from .options import RUN_HELP, JsonFlag, StoreOption
from .output import (
    SECTION,
    Cell,
    band_style,
    console,
    emit_json,
    plain_output,
    plural,
    print_detail_hint,
    short_text,
    styled,
    table,
)

__all__ = ["CASES_SHOWN", "DIFF_DETAIL", "RATIONALE_WIDTH", "print_diff", "register"]


RATIONALE_WIDTH = 60
"""Characters of a rationale shown in the table (``--json`` has them whole)."""
CASES_SHOWN = 20
"""Changed cases listed without ``--detail``; the rest are counted."""
DIFF_DETAIL = "each changed case's category scores and rationales"
"""What ``judge diff --detail`` adds."""


def register(app: typer.Typer) -> None:
    """Add ``diff`` to ``app``."""
    app.command("diff")(diff)


def diff(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help=RUN_HELP + ".")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help=RUN_HELP + ".")],
    show_all: Annotated[bool, typer.Option(
        "--all", help="List every case both runs scored, not only the changed ones.")] = False,
    store: StoreOption = None,
    detail: Annotated[bool, typer.Option("--detail", help=f"Add {DIFF_DETAIL}.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Show per case what moved from RUN_A to RUN_B: overall, band, pass, AI and final scores.

    A case changed when its status, overall score, band or pass/fail differs (as `judge
    rescore` counts). The header says what differs between the runs (rubric, template,
    judges, seed...). Cases are aligned by id; calls no model.
    """
    report = diff_runs(Workspace.open(overrides={"store_url": store}), run_a, run_b,
                       everything=show_all)
    if json_out:
        emit_json(report.model_dump(mode="json"))
        return
    print_diff(report, detail)


# -- rendering ------------------------------------------------------------------------------

def _arrow(pair: Sequence[Any]) -> Cell:
    a, b = (short_text(v) for v in pair)
    return a if a == b else Text.assemble(f"{a} → ", (b, "bold"))


def _cut(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= RATIONALE_WIDTH else flat[:RATIONALE_WIDTH - 1] + "…"


def _band(band: str | None, status: str) -> Text:
    return styled(band or status, band_style(band))


def _verdict(passed: bool | None) -> Text:
    return Text("—") if passed is None else (styled("pass", "green") if passed
                                             else styled("fail", "red"))


def _outcome(case: CaseDiff) -> tuple[Cell, Cell]:
    """The band and pass cells: one value, or A → B."""
    (band_a, band_b), (status_a, status_b) = case.band, case.status
    band: Cell = _band(band_a, status_a) if (band_a, status_a) == (band_b, status_b) else \
        Text.assemble(_band(band_a, status_a), " → ", _band(band_b, status_b))
    pass_a, pass_b = case.passed
    verdict: Cell = _verdict(pass_a) if pass_a == pass_b else \
        Text.assemble(_verdict(pass_a), " → ", _verdict(pass_b))
    return band, verdict


def print_diff(report: RunDiff, detail: bool = False) -> None:
    """``judge diff``'s view: the counts and the noise first, the runs, then the changed cases.

    By default a line per changed case (overall, band, pass; at most :data:`CASES_SHOWN`);
    with ``detail`` every category's AI and final scores and rationales, and the cases whose
    rationale changed.
    """
    _print_counts(report)
    console().print(_noise_summary(report), markup=False)
    _print_runs(report)
    if report.cases:
        (_detail_table if detail else _case_table)(report)
    if detail:
        _print_rationale_cases(report)
    elif report.cases or report.rationale_cases:
        print_detail_hint(DIFF_DETAIL)


def _print_counts(report: RunDiff) -> None:
    extra = []
    if report.category_only and len(report.cases) < report.compared:
        extra.append(f"{report.category_only} more moved only a category score (--all lists "
                     f"them)")
    if report.only_a:
        extra.append(f"only in A: {', '.join(report.only_a)}")
    if report.only_b:
        extra.append(f"only in B: {', '.join(report.only_b)}")
    console().print(f"{report.changed} of {plural(report.compared, 'case')} changed "
                    f"({report.band_changed} changed band, {report.rationale_changed} changed "
                    f"rationale)" + ("; " + "; ".join(extra) if extra else ""), markup=False)


def _print_runs(report: RunDiff) -> None:
    """The two runs, and what differs between them (rubric, template, judges, seed...)."""
    out, a, b = console(), report.a, report.b
    out.print(f"[bold]A[/] {escape(a.id)}  vs  [bold]B[/] {escape(b.id)}  "
              f"(suite {escape(a.suite)})")
    if report.differs:
        for name, pair in report.differs.items():
            out.print(f"  {name}: {short_text(pair[0])} → {short_text(pair[1])}", markup=False)
    else:
        out.print("  same suite, rubric, template, judges and seed")


def _case_table(report: RunDiff) -> None:
    """A line per changed case, the first :data:`CASES_SHOWN`."""
    rows: list[list[Cell]] = [[case.id, _moved(case), *_outcome(case)]
                              for case in report.cases[:CASES_SHOWN]]
    more = len(report.cases) - len(rows)
    table(["case", "overall", "band", "pass"], rows,
          caption=f"… and {more} more (--json, or --detail)" if more > 0 else None)


def _detail_table(report: RunDiff) -> None:
    """Every listed case with its categories' AI and final scores and rationales."""
    rows: list[list[Cell] | None] = []
    for case in report.cases:
        band, verdict = _outcome(case)
        head: list[Cell] = [case.id, _moved(case), band, verdict]
        for cat in case.categories or [None]:
            cells: list[Cell] = ["", "", "", "", ""] if cat is None else [
                cat.category, _arrow(cat.ai), _arrow(cat.final),
                _cut(cat.rationale[0]), _cut(cat.rationale[1])]
            rows.append([*head, *cells])
            # Plain lines repeat the id (a grep finds every line of a case); the table
            # leaves it to the first line of the case's section.
            head = [case.id, "", "", ""] if plain_output() else ["", "", "", ""]
        rows.append(SECTION)
    table(["case", "overall", "band", "pass", "category", "ai", "final", "rationale A",
           "rationale B"], rows[:-1])


def _moved(case: CaseDiff) -> Cell:
    """The overall arrow, marked with whether the judge's noise explains the movement."""
    arrow = _arrow(case.overall)
    move = case.movement
    if move is None or move.delta == 0:
        return arrow
    mark = {"exact": "exact", "unknown": "noise ?"}.get(move.noise)
    if mark is None:
        mark = f"{move.noise} noise ±{move.explained:.0f}" if move.explained is not None \
            else move.noise
    return Text.assemble(arrow, f" ({mark})")


def _noise_summary(report: RunDiff) -> str:
    """The count of moved scores beyond and within the judge's noise, and the noise assumed."""
    parts = [f"{report.beyond_noise} moved beyond the judge's noise",
             f"{report.within_noise} within it"]
    if report.exact_moves:
        parts.append(f"{report.exact_moves} exact (same judgment both sides)")
    if report.unknown_noise:
        parts.append(f"{report.unknown_noise} re-asked with no noise estimate (measure one: "
                     f"`judge judges noise --probe SUITE`)")
    sources = {s for s in report.noise_sources if s}
    tail = f" (BH at 5 %; noise: {'; '.join(sorted(sources))})" if sources else ""
    return "overall scores: " + ", ".join(parts) + tail


def _print_rationale_cases(report: RunDiff) -> None:
    """The cases the rationale count counts, with their categories."""
    if report.rationale_cases:
        listed = ", ".join(f"{case} ({', '.join(cats)})"
                           for case, cats in report.rationale_cases.items())
        console().print(f"changed rationale: {listed}", markup=False)
