"""Commands that need no model: rubric validation and display, scoring a file of scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .output import band_style, console, emit_json

__all__ = ["register"]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout, nothing else.")]


def register(app: typer.Typer) -> None:
    """Add ``rubric validate|show|list`` and ``score`` to ``app``."""
    rubric_app = typer.Typer(help="Validate, list and show rubrics.", no_args_is_help=True)
    rubric_app.command("validate")(rubric_validate)
    rubric_app.command("show")(rubric_show)
    rubric_app.command("list")(rubric_list)
    app.add_typer(rubric_app, name="rubric")
    app.command("score")(score)


def rubric_validate(
    paths: Annotated[list[Path], typer.Argument(help="Rubric files to check.")],
) -> None:
    """Check rubric files; exit 2 naming the file, the field and the fix on the first problem."""
    from ..errors import RubricError
    from ..resources import load_rubric

    failed = 0
    for path in paths:
        try:
            rubric = load_rubric(str(path))
        except RubricError as exc:
            typer.echo(f"✗ {exc.render()}", err=True)
            failed += 1
            continue
        typer.echo(f"✓ {path}: rubric {rubric.id!r}, {len(rubric.categories)} categories")
    if failed:
        raise typer.Exit(2)


def rubric_list(json_out: JsonFlag = False) -> None:
    """List the rubrics visible from this workspace."""
    from ..resources import list_rubrics

    found = {k: str(v) for k, v in list_rubrics(Path.cwd()).items()}
    if json_out:
        emit_json(found)
        return
    for name, path in found.items():
        typer.echo(f"{name}\t{path}")


def rubric_show(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="Rubric id or path.")],
    json_out: JsonFlag = False,
) -> None:
    """Show a rubric: categories, weights, blend, bands and pass mark."""
    from rich.table import Table

    from ..resources import load_rubric
    from ..rubric import rubric_hash

    rubric = load_rubric(rubric_id, Path.cwd())
    if json_out:
        emit_json({**rubric.model_dump(mode="json"), "hash": rubric_hash(rubric)})
        return
    out = console()
    out.print(f"[bold]{rubric.id}[/] — {rubric.title}  (style {rubric.style}, "
              f"pass ≥ {rubric.pass_score}, hash {rubric_hash(rubric)[:12]})")
    if rubric.description:
        out.print(rubric.description)
    table = Table("category", "weight", "blend det/ai", "definition")
    for cat in rubric.categories:
        blend = cat.blend or rubric.blend
        table.add_row(cat.id, f"{cat.weight:g}", f"{blend.deterministic:g}/{blend.ai:g}",
                      cat.definition)
    out.print(table)
    if rubric.levels:
        out.print("levels: " + ", ".join(f"{lv.name}={lv.value:g}" for lv in rubric.levels))
    out.print("bands: " + ", ".join(f"[{band_style(b.name)}]{b.name}[/] {b.min}–{b.max}"
                                    for b in rubric.bands))
    out.print(f"missing inputs: deterministic → {rubric.missing.deterministic}, "
              f"ai → {rubric.missing.ai}; partial → {rubric.partial}")
    out.print("evidence: " + ", ".join(f"{g.name}≤{g.cap}" for g in rubric.evidence.groups))


def score(
    file: Annotated[Path, typer.Argument(help="JSON file of per-category scores.")],
    rubric: Annotated[str | None, typer.Option(help="Rubric id or path.")] = None,
    json_out: JsonFlag = False,
) -> None:
    """Compute final and overall scores from deterministic and AI scores, with no model call."""
    from ..errors import ConfigError
    from ..resources import load_rubric
    from ..scorefile import parse_score_input, score_input

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(file)) from None
    data = parse_score_input(text, str(file))
    rub = load_rubric(rubric or data.rubric or "task-evaluation", Path.cwd())
    result = score_input(data, rub, str(file))
    payload: dict[str, Any] = {
        "rubric": rub.id,
        "status": result.status,
        "overallScore": result.overallScore,
        "band": result.band,
        "passed": result.passed,
        "reason": result.reason,
        "categoryScores": [c.model_dump(mode="json") for c in result.categoryScores],
    }
    if json_out:
        emit_json(payload)
        return
    _print_case(rub.id, payload)


def _print_case(rubric_id: str, payload: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    table = Table("category", "deterministic", "ai", "final", "weight", "band", "rule",
                  title=f"rubric {rubric_id}")
    for c in payload["categoryScores"]:
        def num(v: Any) -> str:
            return "—" if v is None else str(v)
        table.add_row(c["category"], num(c["deterministicScore"]), num(c["aiScore"]),
                      num(c["finalScore"]), f"{c['weight']:g}",
                      f"[{band_style(c['band'])}]{c['band'] or '—'}[/]", c["rule"])
    out.print(table)
    if payload["status"] == "scored":
        verdict = "[green]pass[/]" if payload["passed"] else "[red]fail[/]"
        out.print(f"overall [bold]{payload['overallScore']}[/] "
                  f"[{band_style(payload['band'])}]{payload['band']}[/]  {verdict}")
    else:
        out.print(f"[yellow]unscored[/]: {payload['reason']}")
