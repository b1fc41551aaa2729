"""``judge diff RUN_A RUN_B`` (what moved between two runs) and ``judge stability RUN``.

Both read stored runs only: no model call, no cache. Each run contributes one result per
case, its headline (:func:`judge.panel.headline_of`): the panel with several judges, a
judge's median over its samples with ``--samples K``, else the judge's judgment. The store
(SQLAlchemy) is imported inside the commands, so ``judge --help`` stays light.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .output import band_style, console, emit_json

if TYPE_CHECKING:
    from ..models import CaseResult, RunInfo
    from ..store import RunStore

__all__ = ["RUN_FIELDS", "diff_runs", "register"]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout, nothing else.")]
StoreOption = Annotated[str | None, typer.Option(
    "--store", metavar="URL",
    help="Run store URL (default: setting store_url, env JUDGE_STORE_URL, "
         "else sqlite:///.judge/judge.db in the current folder).")]

RUN_FIELDS = ("suite", "rubric", "rubricHash", "templateId", "templateHash", "models",
              "panel", "seed", "samples", "temperature")
"""What the diff header compares between the two runs."""

RATIONALE_WIDTH = 60


def register(app: typer.Typer) -> None:
    """Add ``diff`` and ``stability`` to ``app``."""
    app.command("diff")(diff)
    app.command("stability")(stability)


def _open(store: str | None) -> RunStore:
    from ..app.workspace import Workspace

    return Workspace.open(overrides={"store_url": store}).open_store()


def _headline(st: RunStore, run: RunInfo) -> list[CaseResult]:
    from ..baseline import pick_primary
    from ..panel import headline_of

    return pick_primary(st.iter_results(run.id), headline_of(run)[0])


# -- diff -----------------------------------------------------------------------------------

def _pair(a: Any, b: Any) -> list[Any]:
    return [a, b]


def _case_diff(a: CaseResult, b: CaseResult) -> dict[str, Any]:
    cats_a = {c.category: c for c in a.categoryScores}
    cats_b = {c.category: c for c in b.categoryScores}
    categories = []
    for name in dict.fromkeys([*cats_a, *cats_b]):
        ca, cb = cats_a.get(name), cats_b.get(name)
        ai = _pair(ca.aiScore if ca else None, cb.aiScore if cb else None)
        final = _pair(ca.finalScore if ca else None, cb.finalScore if cb else None)
        rationale = _pair(ca.rationale if ca else None, cb.rationale if cb else None)
        categories.append({"category": name, "ai": ai, "final": final,
                           "rationale": rationale,
                           "changed": ai[0] != ai[1] or final[0] != final[1]})
    moved = {
        "status": _pair(a.status, b.status),
        "overall": _pair(a.overallScore, b.overallScore),
        "band": _pair(a.band, b.band),
        "passed": _pair(a.passed, b.passed),
    }
    changed = any(v[0] != v[1] for v in moved.values()) or any(c["changed"] for c in categories)
    return {"id": a.id, "changed": changed, **moved,
            "delta": None if a.overallScore is None or b.overallScore is None
            else b.overallScore - a.overallScore,
            "rationaleChanged": any(c["rationale"][0] != c["rationale"][1] for c in categories),
            "categories": categories}


def diff_runs(run_a: RunInfo, results_a: Iterable[CaseResult], run_b: RunInfo,
              results_b: Iterable[CaseResult], *, everything: bool = False) -> dict[str, Any]:
    """What moved from run A to run B, case by case (one result per case on each side).

    A case *changed* when its status, overall score, band, pass, or any category's AI or
    final score differs; a rationale alone does not make a change. ``cases`` lists the
    changed cases (every case shared by both with ``everything``), by case id.
    """
    a_by = {r.id: r for r in results_a}
    b_by = {r.id: r for r in results_b}
    da, db = run_a.model_dump(mode="json"), run_b.model_dump(mode="json")
    differs = {name: _pair(da.get(name), db.get(name)) for name in RUN_FIELDS
               if da.get(name) != db.get(name)}
    shared = sorted(set(a_by) & set(b_by))
    rows = [_case_diff(a_by[i], b_by[i]) for i in shared]
    changed = [r for r in rows if r["changed"]]
    return {
        "a": {"id": run_a.id, **{k: da.get(k) for k in RUN_FIELDS}},
        "b": {"id": run_b.id, **{k: db.get(k) for k in RUN_FIELDS}},
        "differs": differs,
        "compared": len(shared),
        "changed": len(changed),
        "bandChanged": sum(1 for r in rows if r["band"][0] != r["band"][1]),
        "rationaleChanged": sum(1 for r in rows if r["rationaleChanged"]),
        "onlyA": sorted(set(a_by) - set(b_by)),
        "onlyB": sorted(set(b_by) - set(a_by)),
        "cases": rows if everything else changed,
    }


def diff(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="Run id or unique prefix.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="Run id or unique prefix.")],
    show_all: Annotated[bool, typer.Option(
        "--all", help="List every case both runs scored, not only the changed ones.")] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Show per case what moved from RUN_A to RUN_B: overall, band, AI and final scores, rationale.

    The header says what differs between the runs (rubric, template, judges, seed...).
    Cases are aligned by id; calls no model.
    """
    with _open(store) as st:
        info_a, info_b = st.get_run(run_a), st.get_run(run_b)
        report = diff_runs(info_a, _headline(st, info_a), info_b, _headline(st, info_b),
                           everything=show_all)
    if json_out:
        emit_json(report)
        return
    _print_diff(report)


def _short(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef"
                                                           for c in value):
        return value[:12]
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "—"
    return str(value)


def _arrow(pair: Sequence[Any]) -> str:
    a, b = (_short(v) for v in pair)
    return a if a == b else f"{a} → [bold]{b}[/]"


def _cut(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= RATIONALE_WIDTH else flat[:RATIONALE_WIDTH - 1] + "…"


def _print_diff(report: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    a, b = report["a"], report["b"]
    out.print(f"[bold]A[/] {escape(a['id'])}  vs  [bold]B[/] {escape(b['id'])}  "
              f"(suite {escape(str(a['suite']))})")
    if report["differs"]:
        for name, pair in report["differs"].items():
            out.print(f"  {name}: {escape(_short(pair[0]))} → {escape(_short(pair[1]))}")
    else:
        out.print("  same suite, rubric, template, judges and seed")
    if report["cases"]:
        table = Table("case", "overall", "band", "category", "ai", "final", "rationale A",
                      "rationale B", show_lines=False)
        for case in report["cases"]:
            first = True
            bands = case["band"]
            band = (f"[{band_style(bands[0])}]{bands[0] or case['status'][0]}[/]"
                    if bands[0] == bands[1] else
                    f"[{band_style(bands[0])}]{bands[0] or case['status'][0]}[/] → "
                    f"[{band_style(bands[1])}]{bands[1] or case['status'][1]}[/]")
            for cat in case["categories"] or [None]:
                cells = ["", "", "", "", ""] if cat is None else [
                    cat["category"], _arrow(cat["ai"]), _arrow(cat["final"]),
                    escape(_cut(cat["rationale"][0])), escape(_cut(cat["rationale"][1]))]
                table.add_row(escape(case["id"]) if first else "",
                              _arrow(case["overall"]) if first else "",
                              band if first else "", *cells)
                first = False
            table.add_section()
        out.print(table)
    extra = []
    if report["onlyA"]:
        extra.append(f"only in A: {', '.join(report['onlyA'])}")
    if report["onlyB"]:
        extra.append(f"only in B: {', '.join(report['onlyB'])}")
    out.print(f"{report['changed']} of {report['compared']} cases changed "
              f"({report['bandChanged']} changed band, {report['rationaleChanged']} changed "
              f"rationale)" + ("; " + "; ".join(extra) if extra else ""), markup=False)


# -- stability ------------------------------------------------------------------------------

def stability(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id or unique prefix.")],
    show_all: Annotated[bool, typer.Option(
        "--all", help="Also list the stable cases (in JSON: 'judged').")] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """List the cases whose band is not the same in every sample of a --samples K run.

    For each: every sample's band and overall score, and per category the spread (max - min)
    of the AI and final scores. Ends with how many cases are stable and the median spread.
    """
    from ..errors import UsageError
    from ..panel import stability as measure

    with _open(store) as st:
        run = st.get_run(run_id)
        if run.samples < 2:
            raise UsageError(f"run {run.id} judged each case once: stability needs samples",
                             fix="judge the suite with --samples K (K >= 2), e.g. "
                                 "`judge run SUITE --samples 3`")
        report = measure(st.iter_results(run.id), keep_all=show_all)
    if json_out:
        emit_json({"run": run.id, "suite": run.suite, "samples": run.samples,
                   "judges": list(run.models), **report.model_dump(mode="json")})
        return
    _print_stability(run, report, show_all)


def _print_stability(run: RunInfo, report: Any, show_all: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    out.print(f"[bold]run {escape(run.id)}[/]  suite {escape(run.suite)}  "
              f"{run.samples} samples per case  judges {escape(', '.join(run.models))}")
    rows = report.judged if show_all else report.unstable
    if rows:
        categories = list(dict.fromkeys(c for r in rows for c in r.categories))
        table = Table("case", "judge", "bands", "overall", "spread",
                      *[f"{c} ai per sample" for c in categories],
                      title="per sample; spread = max − min" if show_all
                      else "cases whose band is not stable", title_justify="left")
        for r in rows:
            bands = " / ".join(f"[{band_style(b)}]{b}[/]" for b in r.bands)
            cells = []
            for c in categories:
                cat = r.categories.get(c)
                cells.append("—" if cat is None else
                             "/".join(_short(v) for v in cat.ai)
                             + f" (spread {_short(cat.spread)}, final "
                             + f"{_short(cat.finalSpread)})")
            table.add_row(escape(r.id), escape(r.judge), bands,
                          "/".join(_short(v) for v in r.overall), _short(r.spread), *cells)
        out.print(table)
    median = "—" if report.medianSpread is None else f"{report.medianSpread:g}"
    out.print(f"{report.stable} of {report.cases} cases stable; median spread {median} points")
