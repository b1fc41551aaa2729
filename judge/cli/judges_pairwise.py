"""``judge judges pairwise``: judge pairs of outputs in both orders; results and flip rate.

The work is :func:`judge.app.runs.pairwise_run.run_pairwise`; this door parses the flags and
renders the report (a table, or ``--json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from ..app.runs.pairwise_run import DEFAULT_TEMPLATE, PairwiseReport, PairwiseRequest, run_pairwise
from ..app.workspace.workspace import Workspace
from ..core.stats.pairwise import OrderVerdict
from .options import ApiBaseOption, CacheDirOption, CacheModeOption, ConcurrencyOption, SeedOption
from .output import Cell, console, emit_json, err_console, styled, table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``pairwise`` to ``app``."""
    app.command("pairwise")(pairwise)


def pairwise(
    suite: Annotated[Path, typer.Argument(help="Pair suite (.yaml or .jsonl).")],
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Judge model (LiteLLM name).")] = None,
    api_base: ApiBaseOption = None,
    concurrency: ConcurrencyOption = None,
    seed: SeedOption = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Replay from the cache only; never touch the network.")] = False,
    cache_mode: CacheModeOption = None,
    cache_dir: CacheDirOption = None,
    template: Annotated[str, typer.Option(
        help="Prompt template id (prompts/<id>.md.j2).")] = DEFAULT_TEMPLATE,
    output_mode: Annotated[str | None, typer.Option(
        help="How the judge is held to the reply schema: auto (default: by model), "
             "json_schema, json_object (llama.cpp) or prompt (instructions only).")] = None,
    timeout: Annotated[float | None, typer.Option(
        metavar="SECONDS", help="Seconds per model request before it is retried.")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object on stdout, nothing else (progress and notices "
                       "go to stderr).")] = False,
) -> None:
    """Judge every pair of SUITE in both orders; an order-dependent verdict counts as a tie.

    Exit 0: done. 2: bad input (named). 3: offline and judgments missing from the cache.
    """
    overrides: dict[str, Any] = {
        "model": [model] if model else None, "api_base": api_base,
        "concurrency": concurrency, "seed": seed,
        "cache_mode": "offline" if offline else cache_mode, "cache_dir": cache_dir,
        "output_mode": output_mode, "timeout": timeout,
    }
    workspace = Workspace.open(overrides=overrides)
    report = run_pairwise(workspace, PairwiseRequest(suite=suite, template=template))
    if json_out:
        emit_json(report.public())
    else:
        _print(report)
    if report.missing:
        err_console().print(Text.assemble(
            styled(f"offline: {len(report.missing)} pair(s) not in the cache", "red"),
            ": " + ", ".join(report.missing)))
    raise typer.Exit(report.exit_code)


def _cell(v: OrderVerdict) -> Cell:
    if v.status != "judged" or v.winner is None:
        return styled("unscored", "red") if v.status == "unscored" else styled("not cached",
                                                                                "yellow")
    if v.winner == "tie":
        return "tie"
    return f"{v.winner} → {v.outcome}"


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _print(report: PairwiseReport) -> None:
    suite, model, results = report.suite, report.model, report.results
    out = console()
    out.print(f"[bold]pairwise[/]  suite [bold]{escape(suite.id)}[/]  judge {escape(model)}")
    rows: list[list[Cell]] = []
    for r in results:
        result = r.result if r.result is not None else r.status
        flip: Cell = "—" if r.flipped is None else (styled("yes", "yellow") if r.flipped
                                                    else "no")
        human: Cell = "—" if r.preferred is None else Text.assemble(r.preferred, *(
            () if r.agrees is None else ((" ✓", "green"),) if r.agrees else ((" ✗", "red"),)))
        rows.append([r.id, *[_cell(v) for v in r.verdicts], styled(result, "bold"), flip,
                     human])
    table(["pair", "order 1", "order 2", "result", "flip", "human"], rows,
          caption="order 1 shows A as Response 1, order 2 shows B; each cell: the winning "
                  "position → the output shown there")
    for r in results:
        if r.reason:
            out.print(Text.assemble((r.id, "red"), f": {r.reason}"))
    s = report.summary
    out.print(f"pairs {s.pairs}: judged {s.judged}, unscored {s.unscored}"
              + (f", cache misses {s.cache_misses}" if s.cache_misses else ""))
    out.print(f"wins A [bold]{s.wins_a}[/], wins B [bold]{s.wins_b}[/], ties [bold]{s.ties}[/]")
    out.print(f"flip rate [bold]{_pct(s.flip_rate)}[/] ({s.flips} of {s.judged} pairs judged "
              "in both orders)")
    decisive = s.position_one_wins + s.position_two_wins
    out.print(f"position 1 won {s.position_one_wins} of {decisive} decisive verdicts "
              f"({_pct(s.position_one_win_rate)}); {s.position_ties} tie verdicts")
    if s.labelled:
        out.print(f"agreement with humans [bold]{_pct(s.human_agreement)}[/] ({s.agreements} "
                  f"of {s.labelled} labelled pairs)")
    out.print(f"model calls {report.calls}, cache hits {report.cache_hits}", markup=False)
