"""``judge compare``: how far judges agree, for deciding on a judge, template or rubric swap.

Two or more runs of one suite (another judge model, template or rubric), or one panel run
(``judge run --model A --model B``), are compared judge by judge: κ, ρ, τ, mean absolute and
signed differences per category and overall, the cases whose band flipped, Krippendorff's α
for three or more judges, and each judge against the suite's human labels. The statistics
live in :mod:`judge.agreement`; the store, scipy and scikit-learn load only when the command
runs, so ``judge --help`` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .output import band_style, console, emit_json

if TYPE_CHECKING:
    from ..agreement import Comparison, PairStats
    from ..models import CaseResult, RunInfo
    from ..rubric import Band
    from ..suite import HumanLabel

__all__ = ["compare", "judge_names", "register"]

FLIPS_SHOWN = 20
"""Band flips listed per pair in the human output; the rest are counted."""

_MIN_PREFIX = 8
"""Shortest run-id prefix used in a judge's name."""


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
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL",
        help="Run store URL (default: setting store_url, env JUDGE_STORE_URL, "
             "else sqlite:///.judge/judge.db in the current folder).")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the comparison as JSON on stdout, nothing else.")] = False,
) -> None:
    """Compare judges: agreement per category and overall, band flips, agreement with humans."""
    from ..agreement import compare_runs
    from ..app.workspace import Workspace
    from ..errors import UsageError
    from ..store import RunStore

    ws = Workspace.open(overrides={"store_url": store})
    notes: list[str] = []
    with ws.open_store() as st:
        infos = [st.get_run(r) for r in runs]
        _check_runs(infos)
        judges = [(info, model) for info in infos for model in info.models]
        results = {info.id: list(st.iter_results(info.id)) for info in infos}
    if len(judges) < 2:
        only = infos[0]
        raise UsageError(f"run {only.id} has one judge ({only.models[0]}): nothing to compare",
                         fix="give two runs of the suite (judge compare RUN_A RUN_B), or "
                             "compare a panel run (judge run --model A --model B)")
    names = judge_names(judges)
    for info in infos:
        if info.status != "complete":
            notes.append(f"run {info.id} is {info.status}: its missing cases are counted "
                         f"as missing")
    scales = {info.id: _bands(info, ws.root, notes) for info in infos}
    named = {name: _judge_results(results[info.id], model)
             for name, (info, model) in zip(names, judges, strict=True)}
    human = _human_labels(infos, suite, ws.root, notes)
    comparison = compare_runs(
        named, scales[infos[0].id], human=human,
        judge_bands={name: scales[info.id] for name, (info, _) in zip(names, judges,
                                                                        strict=True)})
    counts = tuple(c.model_copy(update={"runId": info.id, "model": model})
                   for c, (info, model) in zip(comparison.judges, judges, strict=True))
    comparison = comparison.model_copy(update={"judges": counts,
                                               "notes": (*notes, *comparison.notes)})
    if json_out:
        emit_json(comparison.model_dump(mode="json"))
        return
    _print(comparison)


def _check_runs(infos: Sequence[RunInfo]) -> None:
    from ..errors import UsageError

    seen: set[str] = set()
    for info in infos:
        if info.id in seen:
            raise UsageError(f"run {info.id} is given twice", fix="give each run once")
        seen.add(info.id)
    suites = {info.suite for info in infos}
    if len(suites) > 1:
        listed = ", ".join(f"{i.id} judged suite {i.suite!r}" for i in infos)
        raise UsageError(f"the runs are from different suites: {listed}",
                         fix="compare runs of one suite; `judge history SUITE` lists them")


def judge_names(judges: Sequence[tuple[RunInfo, str]]) -> list[str]:
    """Readable, unique names for (run, model) judges.

    The model alone when every judge's model differs; otherwise the shortest unique run-id
    prefix, plus whatever else tells the judges apart (model, rubric, template).
    """
    models = [model for _, model in judges]
    if len(set(models)) == len(models):
        return models
    runs = {info.id: info for info, _ in judges}
    prefix = _short_ids(list(runs))
    rubrics = {(i.rubric, i.rubricHash) for i in runs.values()}
    templates = {(i.templateId, i.templateHash) for i in runs.values()}
    names = []
    for info, model in judges:
        parts = [prefix[info.id]]
        if len(set(models)) > 1:
            parts.append(model)
        if len(rubrics) > 1:
            same_id = len({r for r, _ in rubrics}) == 1
            parts.append(f"{info.rubric}@{info.rubricHash[:8]}" if same_id else info.rubric)
        if len(templates) > 1:
            same_id = len({t for t, _ in templates}) == 1
            parts.append(f"{info.templateId}@{info.templateHash[:8]}" if same_id
                         else info.templateId)
        if len(parts) == 1:
            parts.append(model)
        names.append(":".join(parts))
    if len(set(names)) < len(names):
        return [f"{info.id}:{model}" for info, model in judges]
    return names


def _short_ids(ids: Sequence[str]) -> dict[str, str]:
    """The shortest prefix (at least 8 characters) that tells the run ids apart."""
    longest = max(len(i) for i in ids)
    for length in range(min(_MIN_PREFIX, longest), longest + 1):
        if len({i[:length] for i in ids}) == len(ids):
            return {i: i[:length] for i in ids}
    return {i: i for i in ids}


def _judge_results(results: Sequence[CaseResult], model: str) -> list[CaseResult]:
    """A judge's own results, plus the run's deterministic ones (counted, never compared)."""
    return [r for r in results if r.judge is None or r.judge.model == model]


def _bands(info: RunInfo, workspace: Path, notes: list[str]) -> tuple[Band, ...]:
    """The band scale of the run's rubric (the default scale when the file is gone)."""
    from ..errors import ConfigError
    from ..resources import load_rubric
    from ..rubric import DEFAULT_BANDS, rubric_hash

    try:
        rubric = load_rubric(info.rubric, workspace)
    except ConfigError:
        notes.append(f"rubric {info.rubric!r} of run {info.id} is not found: bands are read "
                     f"on the default scale")
        return DEFAULT_BANDS
    if rubric_hash(rubric) != info.rubricHash:
        notes.append(f"rubric {info.rubric!r} changed since run {info.id}: bands of AI scores "
                     f"are read on the current file's scale")
    return rubric.bands


def _suite_file(infos: Sequence[RunInfo], workspace: Path) -> Path | None:
    for info in infos:
        if not info.suitePath:
            continue
        path = Path(info.suitePath)
        candidates = [path] if path.is_absolute() else [Path.cwd() / path, workspace / path]
        for candidate in candidates:
            if candidate.is_file():
                return candidate
    return None


def _human_labels(infos: Sequence[RunInfo], explicit: Path | None, workspace: Path,
                  notes: list[str]) -> dict[str, HumanLabel]:
    """Human labels by case id from the suite file; a missing default file is a note."""
    from ..errors import ConfigError, UsageError
    from ..resources import open_suite

    suite_id = infos[0].suite
    path = explicit or _suite_file(infos, workspace)
    if path is None:
        notes.append(f"suite file of {suite_id!r} not found: no agreement with human labels "
                     f"(pass --suite FILE)")
        return {}
    try:
        source = open_suite(path)
        if source.id != suite_id:
            raise UsageError(f"suite file {path} is suite {source.id!r}, the runs judged "
                             f"{suite_id!r}", fix="pass the runs' suite with --suite")
        return {c.id: c.human for c in source.cases() if c.human is not None}
    except ConfigError as exc:
        if explicit is not None:
            raise
        notes.append(f"human labels not read: {exc.message}")
        return {}


# -- human output --------------------------------------------------------------------------


def _num(value: float | None, places: int = 2) -> str:
    return "—" if value is None else f"{value:.{places}f}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _stats_table(title: str, rows: Sequence[tuple[str, PairStats]]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    table = Table("scores", "n", "κ", "ρ", "τ", "MAD", "mean diff", "same band",
                  title=escape(title), title_justify="left", title_style="bold")
    for label, s in rows:
        table.add_row(escape(label), str(s.n), _num(s.weightedKappa), _num(s.spearmanRho),
                      _num(s.kendallTau), _num(s.meanAbsDiff, 1), _signed(s.meanDiff),
                      _share(s.exactBandAgreement))
    return table


def _rows(overall: PairStats, ai_all: PairStats, categories: Sequence[Any],
          ) -> list[tuple[str, PairStats]]:
    rows = [("overall (final)", overall), ("all categories (AI)", ai_all)]
    for c in categories:
        rows += [(f"{c.category} (AI)", c.ai), (f"{c.category} (final)", c.final)]
    return rows


def _print_notes(out: Any, rows: Sequence[tuple[str, PairStats]]) -> None:
    from rich.markup import escape

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


def _print(comparison: Comparison) -> None:
    from rich.markup import escape

    out = console()
    out.print("[bold]judges[/]")
    for j in comparison.judges:
        source = f"run {j.runId}" if j.runId else ""
        out.print(f"  {escape(j.name)}  {escape(source)}  {j.scored} scored, {j.unscored} "
                  f"unscored, {j.cacheMiss} cache misses"
                  + (f", {j.deterministic} deterministic (not compared)"
                     if j.deterministic else ""))
    for pair in comparison.pairs:
        out.print()
        skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in pair.skipped.items()
                            if n)
        rows = _rows(pair.overall, pair.aiAll, pair.categories)
        out.print(_stats_table(f"{pair.judgeA} → {pair.judgeB}: {pair.aligned} cases"
                               + (f" ({skipped} left out)" if skipped else ""), rows))
        _print_notes(out, rows)
        flips = pair.bandFlips
        out.print(f"band flips (overall): {len(flips)} of {pair.overall.n} cases")
        for f in flips[:FLIPS_SHOWN]:
            out.print(f"  {escape(f.caseId)}  [{band_style(f.bandA)}]{escape(f.bandA)}[/] → "
                      f"[{band_style(f.bandB)}]{escape(f.bandB)}[/]  "
                      f"({f.overallA} → {f.overallB})")
        if len(flips) > FLIPS_SHOWN:
            out.print(f"  … and {len(flips) - FLIPS_SHOWN} more (--json lists them all)")
        out.print(f"[bold]{escape(pair.verdict)}[/]")
    if comparison.alpha is not None:
        a = comparison.alpha
        from rich.table import Table

        out.print()
        table = Table("scores", "α", title=f"Krippendorff's α ({a.level}), {len(a.judges)} "
                      f"judges", title_justify="left", title_style="bold")
        table.add_row("overall (final)", _num(a.overall))
        table.add_row("all categories (AI)", _num(a.aiAll))
        for cat, values in a.categories.items():
            table.add_row(f"{escape(cat)} (AI)", _num(values.get("ai")))
            table.add_row(f"{escape(cat)} (final)", _num(values.get("final")))
        out.print(table)
        for note in a.notes:
            out.print(f"  [dim]{escape(note)}[/]")
    if comparison.human:
        out.print()
        out.print(f"[bold]against human labels[/] ({comparison.humanLabelled} labelled cases; "
                  f"mean diff = judge − human)")
        for h in comparison.human:
            rows = _rows(h.overall, h.aiAll, h.categories)
            out.print(_stats_table(f"humans → {h.judge}: {h.labelled} cases", rows))
            _print_notes(out, rows)
            out.print(f"[bold]{escape(h.verdict)}[/]")
    for note in comparison.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")
