"""``judge judges agreement``: a judge's agreement with people's labels, run by run.

The work is :func:`judge.app.judges.agreement_history.agreement_op`; the statistics and their
intervals are :mod:`judge.core.stats.agreement`'s, the tables reuse ``judge compare``'s renderers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..app.judges.agreement_history import (
    AgreementHistory,
    AgreementRow,
    StatisticMove,
    agreement_op,
)
from ..app.workspace.workspace import Workspace
from ..core.stats.intervals import Interval
from ..core.stats.raters import Correlations, PeopleCategory
from .compare_cmd import print_human_agreement
from .options import GroupByOption, StoreOption, SystemByOption
from .output import (
    Cell,
    Column,
    console,
    emit_json,
    interval_text,
    number_text,
    plural,
    print_detail_hint,
    share_text,
    table,
)

__all__ = ["AGREEMENT_DETAIL", "register"]

AGREEMENT_DETAIL = ("every run's categories, r and τ, confusion matrices, the people beside the "
                    "judge and the largest disagreements")
"""What ``judge judges agreement --detail`` adds."""


def register(app: typer.Typer) -> None:
    """Add ``agreement`` to ``app``."""
    app.command("agreement")(agreement)


def agreement(
    runs: Annotated[list[str] | None, typer.Argument(
        help="Run ids (or unique prefixes) of one suite (default: the suite's newest 20 "
             "runs).", metavar="RUN", show_default=False)] = None,
    labels: Annotated[Path | None, typer.Option(
        "--labels", metavar="FILE",
        help="Labels file (JSON lines, as `judge review RUN --export` writes) instead of "
             "the suite's labels.")] = None,
    suite: Annotated[Path | None, typer.Option(
        "--suite", metavar="FILE",
        help="Suite file with the human labels; without RUN, its stored runs are read.")] = None,
    detail: Annotated[bool, typer.Option(
        "--detail", help=f"Add {AGREEMENT_DETAIL}.")] = False,
    group_by: GroupByOption = None,
    system_by: SystemByOption = None,
    store: StoreOption = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the history as JSON on stdout, nothing else.")] = False,
) -> None:
    """A judge's agreement with people's labels, run by run: the newest verdict first.

    For each run (oldest first), each judge against the people on the overall scores: weighted
    κ on bands, the exact band agreement, MAD and Spearman's ρ, each with a seeded bootstrap
    95 % interval, and how agreement moved between consecutive runs (beyond the earlier run's
    interval or not). --detail adds every category, r and τ (and the group and system levels
    with --group-by/--system-by), the band confusion matrices and the largest disagreements.
    `judge compare` sets judges side by side on the same cases; this follows one over time.
    Without labels: exit 2.
    """
    history = agreement_op(Workspace.open(overrides={"store_url": store}), runs or (),
                           labels_file=labels, suite_file=suite, group_by=group_by,
                           system_by=system_by)
    if json_out:
        emit_json(history.model_dump(mode="json"))
        return
    _print(history, detail)


def _key(row: AgreementRow) -> str:
    return (f"{row.model}  rubric {row.rubric}@{row.rubric_hash[:8]}  "
            f"template {row.template_id}@{row.template_hash[:8]}")


def _pm(value: float | None, interval: Interval | None, places: int = 2) -> str:
    return interval_text(number_text(value, places), interval, places)


def _print_detail(row: AgreementRow) -> None:
    h = row.agreement
    print_human_agreement(
        h, f"people → {row.model} (run {row.run_id}): {plural(h.labelled, 'case')}", row.model,
        row.run_id)
    console().print(h.verdict, markup=False)
    for people in row.people:
        _print_people(people, row.model)


def _rt(c: Correlations) -> list[Cell]:
    return [number_text(c.pearson_r), number_text(c.kendall_tau)]


def _print_people(people: PeopleCategory, judge: str) -> None:
    """The reviewers' own agreement on a category, and the judge among them."""
    pair = people.pairwise
    cells: list[list[Cell]] = [[r.reviewer, str(r.with_judge.n), *_rt(r.with_judge),
                                *_rt(r.with_others), *_rt(r.judge_with_others)]
                               for r in people.by_reviewer]
    cells.append(["mean of pairs", str(pair.n), "", "", *_rt(pair), "", ""])
    table(["reviewer", Column("n", "right"),
           *(Column(n, "right") for n in ("judge r", "judge τ", "rest r", "rest τ",
                                          "judge–rest r", "judge–rest τ"))], cells,
          title=f"people beside {judge}, {people.category}: {len(people.reviewers)} "
                f"reviewers, Krippendorff's α {number_text(people.alpha)} (rest: the other "
                f"reviewers' mean)")
    if people.inside is not None:
        where = "inside" if people.inside else "outside"
        console().print(f"{judge} agrees with the rest of the people {where} the range of "
                        f"the reviewers' own agreement (τ)", markup=False)


def _print(history: AgreementHistory, detail: bool) -> None:
    """The newest run's verdicts and what moved, the table of runs, then the detail."""
    out = console()
    _headline(history)
    cells: list[list[Cell]] = []
    for row in history.rows:
        s = row.agreement.overall
        ci = s.intervals
        cells.append([row.run_id, _key(row), str(row.agreement.labelled),
                      _pm(s.weighted_kappa, ci.weighted_kappa if ci else None),
                      interval_text(share_text(s.exact_band_agreement),
                          ci.exact_band_agreement if ci else None),
                      _pm(s.mean_abs_diff, ci.mean_abs_diff if ci else None, 1),
                      _pm(s.spearman_rho, ci.spearman_rho if ci else None)])
    out.print()
    table(["run", "judge, rubric, template", *(Column(n, "right") for n in (
        "n", "κ", "same band", "MAD", "ρ"))], cells,
        title=f"agreement with people, suite {history.suite} ({history.labelled} labelled "
              f"cases; overall scores, 95 % intervals)")
    for m in _moves(history, detail):
        what = ", ".join(m.changed) or "nothing in the keys"
        beyond = "beyond the earlier interval" if m.beyond_interval else "within the interval"
        out.print(f"{m.from_run} → {m.to_run}: {m.statistic} {m.change:+.2f} ({beyond}; "
                  f"changed: {what})", markup=False)
    if detail:
        for row in history.rows:
            out.print()
            _print_detail(row)
    for note in history.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")
    if not detail:
        print_detail_hint(AGREEMENT_DETAIL)


def _moves(history: AgreementHistory, every: bool) -> list[StatisticMove]:
    """The moves of κ and MAD between runs: all of them, or those beyond the interval."""
    return [m for m in history.movements
            if m.statistic in ("weightedKappa", "meanAbsDiff") and m.change is not None
            and (every or m.beyond_interval)]


def _headline(history: AgreementHistory) -> None:
    """The verdict of each judge of the newest run; then whether agreement moved."""
    out = console()
    newest = history.rows[-1].run_id
    runs = len({row.run_id for row in history.rows})
    for row in history.rows:
        if row.run_id == newest:
            out.print((f"newest run {newest}: " if runs > 1 else "") + row.agreement.verdict,
                      markup=False)
    if runs < 2:
        return
    beyond = _moves(history, every=False)
    out.print(f"{plural(len(beyond), 'move')} of κ or MAD beyond the earlier run's interval "
              f"over {runs} runs" if beyond else
              f"κ and MAD stayed within the earlier run's interval over {runs} runs",
              markup=False)
