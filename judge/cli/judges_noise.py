"""``judge judges noise``: a judge's noise, measured from a ``--samples K`` run or a probe.

``RUN`` measures from the run's samples, stores the noise model for the gate and says how
many cases kept their band in every sample (``--detail`` lists the others); ``--probe
SUITE`` re-asks a seeded few cases of the suite and stores what it measured. The work is
:mod:`judge.app.judges.noise` and :mod:`judge.app.runs.diffing`'s stability; the model is
:class:`judge.core.stats.noise.NoiseModel`. The old ``judge noise measure`` and ``judge
stability`` are kept hidden for one release (:func:`register_old`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from ..app.judges.noise import PROBE_CASES, PROBE_SAMPLES, measure_run_noise, probe_noise
from ..app.runs.diffing import RunStability, run_stability
from ..app.workspace.workspace import Workspace
from ..core.stats.noise import NoiseModel
from ..system.noise_files import noise_path
from .aliases import say_deprecated
from .options import RUN_HELP, ApiBaseOption, JsonFlag, SeedOption, StoreOption
from .output import Cell, band_style, console, emit_json, plural, short_text, styled, table

__all__ = ["register", "register_old"]

PROBE = "Probe (with --probe)"
"""The help panel of the options only a probe reads."""


def register(app: typer.Typer) -> None:
    """Add ``noise`` to ``app``."""
    app.command("noise")(noise)


def register_old(app: typer.Typer) -> None:
    """Add the old ``stability`` and ``noise measure``, hidden, each saying its new name."""
    app.command("stability", hidden=True)(stability)
    group = typer.Typer(help="Old name of `judge judges noise`.", hidden=True)
    group.command("measure")(measure)
    app.add_typer(group, name="noise", hidden=True)


def noise(
    target: Annotated[str, typer.Argument(
        metavar="RUN|SUITE", help="A stored run judged with --samples K; with --probe, a "
                                  "suite file.")],
    probe: Annotated[bool, typer.Option(
        "--probe", help="Re-ask a seeded few cases of the suite SUITE instead, K times each, "
                        "and store the noise measured (N x (K-1) extra calls on a warm "
                        "cache).")] = False,
    cases: Annotated[int, typer.Option(
        metavar="N", help="Cases to re-ask (a seeded choice).",
        rich_help_panel=PROBE)] = PROBE_CASES,
    samples: Annotated[int, typer.Option(
        metavar="K", help="Asks per case (seeds seed..seed+K-1).",
        rich_help_panel=PROBE)] = PROBE_SAMPLES,
    rubric: Annotated[str | None, typer.Option(
        help="Rubric id or path.", rich_help_panel=PROBE)] = None,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Judge model.", rich_help_panel=PROBE)] = None,
    template: Annotated[str | None, typer.Option(
        help="Prompt template id or path.", rich_help_panel=PROBE)] = None,
    api_base: ApiBaseOption = None,
    seed: SeedOption = None,
    detail: Annotated[bool, typer.Option(
        "--detail", help="List the cases whose band differs between samples: each "
                         "sample's band and score, each category's spread.")] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Measure a judge's noise, the spread of its scores between asks, and store it.

    The gate, `judge diff` and the report read the stored noise for this judge, rubric and
    template. From RUN (a --samples K run): no call; it also counts the cases whose band
    differs between samples. With --probe SUITE: 10 cases x 3 asks by default, 20 extra
    calls, 20 degrees of freedom.
    """
    if probe:
        _probe(Path(target), cases=cases, samples=samples, json_out=json_out, overrides={
            "rubric": rubric, "model": [model] if model else None, "template": template,
            "api_base": api_base, "seed": seed, "store_url": store})
        return
    workspace = Workspace.open(overrides={"store_url": store})
    measured = measure_run_noise(workspace, target)
    path = noise_path(workspace.baselines_dir, measured.key)
    stability = run_stability(workspace, target)
    if json_out:
        emit_json({**measured.model_dump(mode="json"), "path": str(path),
                   "stability": stability.public().model_dump(mode="json")})
        return
    _print(measured, path)
    if detail:
        _print_stability(stability, show_all=False, header=False)
    else:
        _stable_line(stability, hint=True)


def _probe(suite: Path, *, cases: int, samples: int, json_out: bool,
           overrides: dict[str, Any]) -> None:
    measured, report = probe_noise(suite, cases=cases, samples=samples, overrides=overrides)
    path = noise_path(Workspace.open(overrides={"store_url": overrides["store_url"]})
                      .baselines_dir, measured.key)
    if json_out:
        emit_json({**measured.model_dump(mode="json"), "path": str(path),
                   "run": report.run.id})
        return
    _print(measured, path)


def _print(model: NoiseModel, path: Path) -> None:
    out = console()
    o = model.overall
    out.print(f"{model.model}  rubric {model.rubric_hash[:12]}  template {model.template_id}@"
              f"{model.template_hash[:12]}", markup=False)
    out.print(f"overall: sd {o.sd:.2f} points an ask (95 % {o.low:.2f}-{o.high:.2f}, {o.df} "
              f"df) over {model.cases} cases, {model.asks} asks; {model.source}", markup=False)
    for name, e in model.ai.items():
        out.print(f"  {name}: AI sd {e.sd:.2f} (95 % {e.low:.2f}-{e.high:.2f})", markup=False)
    out.print(f"stored {path}; used by the gate, `judge diff` and the report for this judge, "
              f"rubric and template (a change of any finds no model)", markup=False)


def _stable_line(measured: RunStability, *, hint: bool = False) -> None:
    report = measured.report
    median = "—" if report.median_spread is None else f"{report.median_spread:g}"
    more = (f"; `--detail` lists the {plural(len(report.unstable), 'other')}"
            if hint and report.unstable else "")
    console().print(f"{report.stable} of {plural(report.cases, 'case')} stable; median spread "
                    f"{median} points{more}", markup=False)


def _print_stability(measured: RunStability, *, show_all: bool, header: bool = True) -> None:
    out = console()
    run, report = measured.run, measured.report
    if header:
        out.print(f"[bold]run {escape(run.id)}[/]  suite {escape(run.suite)}  "
                  f"{run.samples} samples per case  judges {escape(', '.join(run.models))}")
    rows = report.judged if show_all else report.unstable
    if rows:
        categories = list(dict.fromkeys(c for r in rows for c in r.categories))
        cells_rows: list[list[Cell]] = []
        for r in rows:
            parts: list[Text | str] = []
            for n, band in enumerate(r.bands):
                parts += [" / "] if n else []
                parts.append(styled(band, band_style(band)))
            cells = []
            for c in categories:
                cat = r.categories.get(c)
                cells.append("—" if cat is None else
                             "/".join(short_text(v) for v in cat.ai)
                             + f" (spread {short_text(cat.spread)}, final "
                             + f"{short_text(cat.final_spread)})")
            cells_rows.append([r.id, r.judge, Text.assemble(*parts),
                               "/".join(short_text(v) for v in r.overall),
                               short_text(r.spread), *cells])
        table(["case", "judge", "bands", "overall", "spread",
               *[f"{c} ai per sample" for c in categories]], cells_rows,
              title="per sample; spread = max − min" if show_all
              else "cases whose band is not stable")
    _stable_line(measured)


# -- the old spellings, for one release --------------------------------------------------

def measure(
    run: Annotated[str, typer.Argument(help="A stored run judged with --samples K.")],
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Old name of `judge judges noise RUN`: measure and store the judge's noise."""
    say_deprecated(("noise", "measure"), ("judges", "noise"))
    workspace = Workspace.open(overrides={"store_url": store})
    model = measure_run_noise(workspace, run)
    path = noise_path(workspace.baselines_dir, model.key)
    if json_out:
        emit_json({**model.model_dump(mode="json"), "path": str(path)})
        return
    _print(model, path)


def stability(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP + ".")],
    show_all: Annotated[bool, typer.Option(
        "--all", help="Also list the stable cases (in JSON: 'judged').")] = False,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Old name of `judge judges noise RUN --detail`: the cases whose band differs."""
    say_deprecated(("stability",), ("judges", "noise", "--detail"))
    measured = run_stability(Workspace.open(overrides={"store_url": store}), run_id,
                             keep_all=show_all)
    if json_out:
        emit_json(measured.public())
        return
    _print_stability(measured, show_all=show_all)
