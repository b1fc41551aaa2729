"""``judge noise``: measure a judge's noise (from a ``--samples K`` run or a probe), show it.

The work is :mod:`judge.app.judges.noise`; the model is :class:`judge.core.stats.noise.NoiseModel`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..app.judges.noise import PROBE_CASES, PROBE_SAMPLES, measure_run_noise, probe_noise
from ..app.workspace.workspace import Workspace
from ..core.stats.noise import NoiseModel
from ..system.noise_files import noise_path
from .options import ApiBaseOption, JsonFlag, SeedOption, StoreOption
from .output import console, emit_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``noise measure`` and ``noise probe`` to ``app``."""
    group = typer.Typer(help="Measure a judge's noise: the spread of its scores between asks.")
    group.command("measure")(measure)
    group.command("probe")(probe)
    app.add_typer(group, name="noise")


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


def measure(
    run: Annotated[str, typer.Argument(help="A stored run judged with --samples K.")],
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Measure the judge's noise from the samples of RUN and store it beside the baselines."""
    workspace = Workspace.open(overrides={"store_url": store})
    model = measure_run_noise(workspace, run)
    path = noise_path(workspace.baselines_dir, model.key)
    if json_out:
        emit_json({**model.model_dump(mode="json"), "path": str(path)})
        return
    _print(model, path)


def probe(
    suite: Annotated[Path, typer.Argument(help="Suite file (.yaml or .jsonl).")],
    cases: Annotated[int, typer.Option(
        metavar="N", help="Cases to re-ask (a seeded choice).")] = PROBE_CASES,
    samples: Annotated[int, typer.Option(
        metavar="K", help="Asks per case (seeds seed..seed+K-1).")] = PROBE_SAMPLES,
    rubric: Annotated[str | None, typer.Option(help="Rubric id or path.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Judge model.")] = None,
    template: Annotated[str | None, typer.Option(help="Prompt template id or path.")] = None,
    api_base: ApiBaseOption = None,
    seed: SeedOption = None,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Re-ask N cases of SUITE K times and store the judge's noise.

    N x (K-1) extra calls on a warm cache; the defaults 10 x 3 cost 20 calls and give 20
    degrees of freedom.
    """
    overrides: dict[str, Any] = {"rubric": rubric, "model": [model] if model else None,
                                 "template": template, "api_base": api_base, "seed": seed,
                                 "store_url": store}
    measured, report = probe_noise(suite, cases=cases, samples=samples, overrides=overrides)
    path = noise_path(Workspace.open(overrides={"store_url": store}).baselines_dir,
                      measured.key)
    if json_out:
        emit_json({**measured.model_dump(mode="json"), "path": str(path),
                   "run": report.run.id})
        return
    _print(measured, path)
