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
    AlphaReport,
    Comparison,
    ConfusionMatrix,
    Disagreement,
    HumanAgreement,
    PairComparison,
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
    print_detail_hint,
    share_text,
    styled,
    table,
)

__all__ = ["FLIPS_LISTED", "FLIPS_SHOWN", "NOTES_LISTED", "print_human_agreement", "register"]

FLIPS_SHOWN = 20
"""Band flips listed per pair in the human output; the rest are counted."""
FLIPS_LISTED = 3
"""Band flips named on the summary's line per pair (``--detail`` lists them all)."""
NOTES_LISTED = 3
"""Notes on the summary's rows printed by default (the rest: ``--detail`` and ``--json``)."""


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``app``."""
    app.command("compare")(compare)


def compare(
    runs: Annotated[list[str], typer.Argument(
        help="Runs (ids, unique prefixes, last, last~1…): two or more runs of one suite, or one "
             "panel run.",
        metavar="RUN", show_default=False)],
    suite: Annotated[Path | None, typer.Option(
        "--suite", metavar="FILE",
        help="Suite file with the human labels (default: the runs' suite file, if it is "
             "still there).")] = None,
    group_by: GroupByOption = None,
    system_by: SystemByOption = None,
    store: StoreOption = None,
    detail: Annotated[bool, typer.Option(
        "--detail", help="Every category's table, the band flips, the confusion matrices and "
                         "the largest disagreements with people.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the comparison as JSON on stdout, nothing else.")] = False,
) -> None:
    """How far judges agree, with each other and with people: the verdict first.

    Two or more runs of one suite (another judge, template or rubric), or one panel run:
    κ, r, ρ, τ, the mean differences and the band flips on the overall and AI scores,
    Krippendorff's α for three judges or more, and each judge against the suite's people's
    labels. `judge judges agreement` follows one judge's agreement with people run by run;
    this sets judges side by side on the same cases.
    """
    comparison = compare_runs_op(Workspace.open(overrides={"store_url": store}), runs, suite,
                                 group_by=group_by, system_by=system_by)
    if json_out:
        emit_json(comparison.model_dump(mode="json"))
        return
    _print(comparison, detail)


# -- human output --------------------------------------------------------------------------


def _confusion(title: str, matrix: ConfusionMatrix) -> None:
    cells: list[list[Cell]] = [[label, *(str(n) for n in row)]
                               for label, row in zip(matrix.labels, matrix.counts, strict=True)]
    table(["people", *(Column(label, "right") for label in matrix.labels)], cells, title=title)


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}"


def _stat_cells(label: str, s: PairStats, *, every: bool) -> list[Cell]:
    """A row of statistics with their intervals: κ, ρ, MAD, mean diff, the same band.

    ``every`` adds r and τ, and the same band's interval (the ``--detail`` tables).
    """
    ci = s.intervals or StatIntervals()
    kappa = interval_text(number_text(s.weighted_kappa), ci.weighted_kappa)
    rho = interval_text(number_text(s.spearman_rho), ci.spearman_rho)
    mad = interval_text(number_text(s.mean_abs_diff, 1), ci.mean_abs_diff, 1)
    if not every:
        return [label, str(s.n), kappa, rho, mad, _signed(s.mean_diff),
                share_text(s.exact_band_agreement)]
    return [label, str(s.n), kappa, interval_text(number_text(s.pearson_r), ci.pearson_r), rho,
            interval_text(number_text(s.kendall_tau), ci.kendall_tau), mad,
            _signed(s.mean_diff),
            interval_text(share_text(s.exact_band_agreement), ci.exact_band_agreement)]


def _stats_table(title: str, rows: Sequence[tuple[str, PairStats]]) -> None:
    table(["scores", *(Column(n, "right") for n in ("n", "κ", "r", "ρ", "τ", "MAD",
                                                    "mean diff", "same band"))],
          [_stat_cells(label, s, every=True) for label, s in rows], title=title)
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


def _print_notes(out: Any, rows: Sequence[tuple[str, PairStats]], limit: int = 10) -> None:
    """The rows' notes (an undefined κ, too few cases...), each once, at most ``limit``."""
    seen: list[str] = []
    for label, s in rows:
        for note in s.notes:
            line = f"{label}: {note}"
            if line not in seen:
                seen.append(line)
    for line in seen[:limit]:
        out.print(f"  [dim]{escape(line)}[/]")
    if len(seen) > limit:
        out.print(f"  [dim]… {len(seen) - limit} more notes in --json[/]")


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


def _headline(comparison: Comparison) -> None:
    """The verdicts, one a line: each pair of judges, each judge against the people."""
    out = console()
    for pair in comparison.pairs:
        out.print(f"[bold]{escape(pair.verdict)}[/]")
    for h in comparison.human:
        out.print(h.verdict, markup=False)
    for p in comparison.human_pairs:
        out.print(p.verdict, markup=False)


def _letters(comparison: Comparison) -> dict[str, str]:
    """A short name for each judge (A, B, C...), as the summary's rows use them."""
    return {j.name: chr(ord("A") + n) if n < 26 else str(n + 1)
            for n, j in enumerate(comparison.judges)}


def _judges(comparison: Comparison, letters: dict[str, str] | None = None) -> None:
    """Each judge, its run and what it scored; a count of none is left out."""
    out = console()
    for j in comparison.judges:
        source = f"  run {j.run_id}" if j.run_id else ""
        named = f"{letters[j.name]}  " if letters else ""
        counts = [f"{j.scored} scored"] + [
            f"{n} {what}" for n, what in ((j.unscored, "unscored"),
                                          (j.cache_miss, "cache misses"),
                                          (j.deterministic, "deterministic (not compared)"))
            if n]
        out.print(f"  {named}{j.name}{source}  {', '.join(counts)}", markup=False)


def _summary(comparison: Comparison, letters: dict[str, str]) -> None:
    """The overall and AI rows of every pair and of every judge against the people."""
    rows: list[tuple[str, PairStats]] = []
    for pair in comparison.pairs:
        a, b = letters[pair.judge_a], letters[pair.judge_b]
        rows += [(f"{a} → {b}  overall", pair.overall), (f"{a} → {b}  AI scores", pair.ai_all)]
    for h in comparison.human:
        rows += [(f"people → {letters[h.judge]}  overall", h.overall),
                 (f"people → {letters[h.judge]}  AI scores", h.ai_all)]
    table(["", *(Column(n, "right") for n in ("n", "κ [95 %]", "ρ [95 %]", "MAD [95 %]",
                                              "mean diff", "same band"))],
          [_stat_cells(label, st, every=False) for label, st in rows])
    _print_notes(console(), rows, NOTES_LISTED)
    _summary_lines(comparison, letters)


def _summary_lines(comparison: Comparison, letters: dict[str, str]) -> None:
    """The band flips of each pair, α, and what the people's rows read against."""
    out = console()
    for pair in comparison.pairs:
        flips = pair.band_flips
        shown = ", ".join(f.case_id for f in flips[:FLIPS_LISTED])
        more = f" and {len(flips) - FLIPS_LISTED} more" if len(flips) > FLIPS_LISTED else ""
        out.print(f"band flips {letters[pair.judge_a]} → {letters[pair.judge_b]}: "
                  f"{len(flips)} of {plural(pair.overall.n, 'case')}"
                  + (f" ({shown}{more})" if flips else ""), markup=False)
    if comparison.alpha is not None:
        a = comparison.alpha
        out.print(f"Krippendorff's α ({a.level}), {len(a.judges)} judges: overall "
                  f"{interval_text(number_text(a.overall), a.overall_interval)}, AI scores "
                  f"{number_text(a.ai_all)}", markup=False)
    if comparison.human:
        out.print(f"people: {plural(comparison.human_labelled, 'labelled case')}; mean diff = "
                  "judge − people", markup=False)


def _print(comparison: Comparison, detail: bool) -> None:
    """The verdicts, the judges, then a screen's summary (or with ``detail``, every table)."""
    out = console()
    _headline(comparison)
    out.print()
    letters = None if detail else _letters(comparison)
    out.print("[bold]judges[/]")
    _judges(comparison, letters)
    out.print()
    if letters is None:
        _print_detail(comparison)
    else:
        _summary(comparison, letters)
    for note in comparison.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")
    if letters is not None:
        print_detail_hint("each category, the band flips, the confusion matrices and the "
                          "largest disagreements with people")


def _print_detail(comparison: Comparison) -> None:
    """Every pair's tables and flips, α per category, each judge against the people."""
    for pair in comparison.pairs:
        _pair_detail(pair)
    if comparison.alpha is not None:
        _alpha_detail(comparison.alpha)
    out = console()
    if comparison.human:
        out.print()
        out.print(f"[bold]against human labels[/] ({comparison.human_labelled} labelled cases; "
                  f"mean diff = judge − human)")
        runs = {j.name: j.run_id for j in comparison.judges}
        for h in comparison.human:
            print_human_agreement(h, f"humans → {h.judge}: {plural(h.labelled, 'case')}",
                                  h.judge, runs.get(h.judge))


def _pair_detail(pair: PairComparison) -> None:
    """A pair of judges: every category's row, the notes, every band flip."""
    out = console()
    skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in pair.skipped.items() if n)
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
    out.print()


def _alpha_detail(a: AlphaReport) -> None:
    """Krippendorff's α of three judges or more, per category."""
    out = console()
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
