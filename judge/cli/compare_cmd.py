"""``judge compare``: how far judges agree, for deciding on a judge, template or rubric swap.

The work is :func:`judge.app.judges.comparing.compare_runs_op` (the statistics are in
:mod:`judge.core.stats.agreement`); this module parses the flags and renders the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from ..app.judges.comparing import compare_runs_op
from ..app.workspace.workspace import Workspace
from ..core.stats.agreement import (
    Comparison,
    ConfusionMatrix,
    Disagreement,
    HumanAgreement,
    PairStats,
    StatIntervals,
)
from ..core.stats.levels import CorrelationIntervals
from ..report.review_page import review_link
from .options import GroupByOption, StoreOption, SystemByOption
from .output import (
    Cell,
    Column,
    band_style,
    console,
    emit_json,
    interval_text,
    number_text,
    plural,
    share_text,
    styled,
    table,
)

__all__ = ["FLIPS_SHOWN", "register"]

FLIPS_SHOWN = 20
"""Band flips listed per pair in the human output; the rest are counted."""


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``app``."""
    app.command("compare")(compare)


def compare(
    runs: Annotated[list[str], typer.Argument(
        help="Run ids (or unique prefixes): two or more runs of one suite, or one panel run.",
        metavar="RUN", show_default=False)],
    suite: Annotated[Path | None, typer.Option(
        "--suite", metavar="FILE",
        help="Suite file with the human labels (default: the runs' suite file, if it is "
             "still there).")] = None,
    group_by: GroupByOption = None,
    system_by: SystemByOption = None,
    store: StoreOption = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the comparison as JSON on stdout, nothing else.")] = False,
) -> None:
    """Compare judges: agreement per category and overall, band flips, agreement with humans.

    Two or more runs of one suite (another judge model, template or rubric), or one panel
    run (`judge run --model A --model B`), judge by judge: κ, r, ρ, τ, mean absolute and
    signed differences per category and overall, the cases whose band flipped,
    Krippendorff's α for three or more judges, and each judge against the suite's human
    labels. One labelled run: its judge against the people (as `judge judges agreement RUN`).
    """
    comparison = compare_runs_op(Workspace.open(overrides={"store_url": store}), runs, suite,
                                 group_by=group_by, system_by=system_by)
    if json_out:
        emit_json(comparison.model_dump(mode="json"))
        return
    _print(comparison)


# -- human output --------------------------------------------------------------------------


def _confusion(title: str, matrix: ConfusionMatrix) -> None:
    cells: list[list[Cell]] = [[label, *(str(n) for n in row)]
                               for label, row in zip(matrix.labels, matrix.counts, strict=True)]
    table(["people", *(Column(label, "right") for label in matrix.labels)], cells, title=title)


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}"


def _stats_table(title: str, rows: Sequence[tuple[str, PairStats]]) -> None:
    cells: list[list[Cell]] = []
    for label, s in rows:
        ci = s.intervals or StatIntervals()
        cells.append([label, str(s.n),
                      interval_text(number_text(s.weighted_kappa), ci.weighted_kappa),
                      interval_text(number_text(s.pearson_r), ci.pearson_r),
                      interval_text(number_text(s.spearman_rho), ci.spearman_rho),
                      interval_text(number_text(s.kendall_tau), ci.kendall_tau),
                      interval_text(number_text(s.mean_abs_diff, 1), ci.mean_abs_diff, 1),
                      _signed(s.mean_diff),
                      interval_text(share_text(s.exact_band_agreement), ci.exact_band_agreement)])
    table(["scores", *(Column(n, "right") for n in ("n", "κ", "r", "ρ", "τ", "MAD",
                                                    "mean diff", "same band"))],
          cells, title=title)
    _levels_table(title, rows)


def _levels_table(title: str, rows: Sequence[tuple[str, PairStats]]) -> None:
    """The group and system levels of each row that has them (named fields given)."""
    cells: list[list[Cell]] = []
    for label, s in rows:
        found = s.levels
        if found is None:
            continue
        for name, level, field in (("group", found.group, found.group_by),
                                   ("system", found.system, found.system_by)):
            if level is None:
                continue
            ci = level.intervals or CorrelationIntervals()
            used = f"{level.n}" + (f" (+{level.skipped} skipped)" if level.skipped else "")
            cells.append([label, f"{name} ({field})", used,
                          interval_text(number_text(level.pearson_r), ci.pearson_r),
                          interval_text(number_text(level.spearman_rho), ci.spearman_rho),
                          interval_text(number_text(level.kendall_tau), ci.kendall_tau)])
    if cells:
        table(["scores", "level", Column("n", "right"),
               *(Column(n, "right") for n in ("r", "ρ", "τ"))], cells,
              title=f"{title}: group and system levels (n: groups used, or systems)")


def _rows(overall: PairStats, ai_all: PairStats, categories: Sequence[Any],
          ) -> list[tuple[str, PairStats]]:
    rows = [("overall (final)", overall), ("all categories (AI)", ai_all)]
    for c in categories:
        rows += [(f"{c.category} (AI)", c.ai), (f"{c.category} (final)", c.final)]
    return rows


def _print_notes(out: Any, rows: Sequence[tuple[str, PairStats]]) -> None:
    seen: list[str] = []
    for label, s in rows:
        for note in s.notes:
            line = f"{label}: {note}"
            if line not in seen:
                seen.append(line)
    for line in seen[:10]:
        out.print(f"  [dim]{escape(line)}[/]")
    if len(seen) > 10:
        out.print(f"  [dim]… {len(seen) - 10} more notes in --json[/]")


def print_human_agreement(h: HumanAgreement, title: str, judge: str,
                          run_id: str | None = None) -> None:
    """One judge against the people: statistics, band confusion matrices, disagreements.

    ``judge compare`` and ``judge judges agreement`` print it alike. With ``run_id``, each
    disagreement carries the address of its case on the run's review page.
    """
    out = console()
    rows = _rows(h.overall, h.ai_all, h.categories)
    _stats_table(title, rows)
    _print_notes(out, rows)
    if h.confusion is not None:
        _confusion(f"bands, people (rows) → {judge} (columns), overall", h.confusion)
    for cat, matrix in h.category_confusion.items():
        _confusion(f"bands, people → {judge}, {cat} (AI)", matrix)
    if h.disagreements:
        print_disagreements(h.disagreements, run_id)


def print_disagreements(found: Sequence[Disagreement], run_id: str | None) -> None:
    """The largest disagreements, one a line, each with its case's review-page address.

    The address works while ``judge review RUN`` serves the run on its default port.
    """
    out = console()
    where = ("; the address opens the case on the review page while "
             f"`judge review {run_id}` runs") if run_id else ""
    out.print(f"largest disagreements (case, category, people → judge{where}):",
              markup=False, highlight=False)
    for d in found[:FLIPS_SHOWN]:
        link = f"  {review_link(run_id, d.case_id, d.category)}" if run_id else ""
        out.print(f"  {d.case_id}  {d.category}  {d.human}→{d.judge}{link}", markup=False,
                  highlight=False, soft_wrap=True)
    if len(found) > FLIPS_SHOWN:
        out.print(f"  … and {len(found) - FLIPS_SHOWN} more (--json lists them all)")


def _print(comparison: Comparison) -> None:
    out = console()
    out.print("[bold]judges[/]")
    for j in comparison.judges:
        source = f"run {j.run_id}" if j.run_id else ""
        out.print(f"  {escape(j.name)}  {escape(source)}  {j.scored} scored, {j.unscored} "
                  f"unscored, {j.cache_miss} cache misses"
                  + (f", {j.deterministic} deterministic (not compared)"
                     if j.deterministic else ""))
    for pair in comparison.pairs:
        out.print()
        skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in pair.skipped.items()
                            if n)
        rows = _rows(pair.overall, pair.ai_all, pair.categories)
        _stats_table(f"{pair.judge_a} → {pair.judge_b}: {plural(pair.aligned, 'case')}"
                     + (f" ({skipped} left out)" if skipped else ""), rows)
        _print_notes(out, rows)
        flips = pair.band_flips
        out.print(f"band flips (overall): {len(flips)} of {plural(pair.overall.n, 'case')}")
        for f in flips[:FLIPS_SHOWN]:
            out.print(Text.assemble(f"  {f.case_id}  ", styled(f.band_a, band_style(f.band_a)),
                                    " → ", styled(f.band_b, band_style(f.band_b)),
                                    f"  ({f.overall_a} → {f.overall_b})"))
        if len(flips) > FLIPS_SHOWN:
            out.print(f"  … and {len(flips) - FLIPS_SHOWN} more (--json lists them all)")
        out.print(f"[bold]{escape(pair.verdict)}[/]")
    if comparison.alpha is not None:
        a = comparison.alpha
        out.print()
        cells: list[list[Cell]] = [
            ["overall (final)", interval_text(number_text(a.overall), a.overall_interval)],
            ["all categories (AI)", number_text(a.ai_all)]]
        for cat, values in a.categories.items():
            cells.append([f"{cat} (AI)", number_text(values.get("ai"))])
            cells.append([f"{cat} (final)", number_text(values.get("final"))])
        table(["scores", Column("α", "right")], cells,
              title=f"Krippendorff's α ({a.level}), {len(a.judges)} judges")
        for note in a.notes:
            out.print(f"  [dim]{escape(note)}[/]")
    if comparison.human:
        out.print()
        out.print(f"[bold]against human labels[/] ({comparison.human_labelled} labelled cases; "
                  f"mean diff = judge − human)")
        runs = {j.name: j.run_id for j in comparison.judges}
        for h in comparison.human:
            print_human_agreement(h, f"humans → {h.judge}: {plural(h.labelled, 'case')}",
                                  h.judge, runs.get(h.judge))
            out.print(f"[bold]{escape(h.verdict)}[/]")
        for p in comparison.human_pairs:
            out.print(p.verdict, markup=False)
    for note in comparison.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")
