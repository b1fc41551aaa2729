"""``judge rubric validate|list|show|schema|score``: rubric files, and scoring by one.

No model is called. The work is in :mod:`judge.app.workspace.rubrics` and
:mod:`judge.app.workspace.schemas`; these commands parse flags and print results.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from ..app.workspace.rubrics import (
    list_workspace_rubrics,
    score_file,
    show_rubric,
    validate_rubrics,
)
from ..app.workspace.schemas import SchemaKind, schema_text
from ..app.workspace.workspace import Workspace
from .options import JsonFlag
from .output import Cell, Column, band_style, console, emit_json, styled, table

__all__ = ["register"]



def register(app: typer.Typer) -> None:
    """Add the leaves of ``judge rubric`` (validate, list, show, schema, score) to ``app``."""
    app.command("validate")(rubric_validate)
    app.command("list")(rubric_list)
    app.command("show")(rubric_show)
    app.command("schema")(rubric_schema)
    app.command("score")(score)


def rubric_schema() -> None:
    """Print the JSON Schema (draft 2020-12) of rubric files, for editors and CI.

    Put `# yaml-language-server: $schema=PATH/rubric.schema.json` on a rubric's first line
    for completion and validation as you type. The checked-in copy is
    docs/schemas/rubric.schema.json.
    """
    sys.stdout.write(schema_text(SchemaKind.rubric))
    sys.stdout.flush()


def rubric_validate(
    paths: Annotated[list[Path], typer.Argument(help="Rubric files to check.")],
) -> None:
    """Check rubric files; exit 2 naming the file, the field and the fix on the first problem."""
    checks = validate_rubrics(Workspace.open(), list(paths))
    for check in checks:
        if check.rubric is None:
            typer.echo(f"✗ {check.error.render() if check.error else check.path}", err=True)
            continue
        typer.echo(f"✓ {check.path}: rubric {check.rubric.id!r}, "
                   f"{len(check.rubric.categories)} categories")
    if any(c.rubric is None for c in checks):
        raise typer.Exit(2)


def rubric_list(json_out: JsonFlag = False) -> None:
    """List the rubrics visible from this workspace."""
    found = {k: str(v) for k, v in list_workspace_rubrics(Workspace.open()).items()}
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
    rubric, digest = show_rubric(Workspace.open(), rubric_id)
    if json_out:
        emit_json({**rubric.model_dump(mode="json"), "hash": digest})
        return
    out = console()
    out.print(Text.assemble((rubric.id, "bold"), f" — {rubric.title}  (style {rubric.style}, "
                            f"pass ≥ {rubric.pass_score}, hash {digest[:12]})"))
    if rubric.description:
        out.print(rubric.description, markup=False)
    rows: list[list[Cell]] = []
    for cat in rubric.categories:
        blend = cat.blend or rubric.blend
        rows.append([cat.id, f"{cat.weight:g}", f"{blend.deterministic:g}/{blend.ai:g}",
                     " ".join(cat.definition.split())])
    table(["category", Column("weight", "right"), "blend det/ai", "definition"], rows)
    if rubric.levels:
        out.print("levels: " + ", ".join(f"{lv.name}={lv.value:g}" for lv in rubric.levels),
                  markup=False)
    parts: list[Text | str] = ["bands: "]
    for n, b in enumerate(rubric.bands):
        parts += [", "] if n else []
        parts += [styled(b.name, band_style(b.name)), f" {b.min}–{b.max}"]
    out.print(Text.assemble(*parts))
    out.print(f"missing inputs: deterministic → {rubric.missing.deterministic}, "
              f"ai → {rubric.missing.ai}; partial → {rubric.partial}", markup=False)
    out.print("evidence: " + ", ".join(f"{g.name}≤{g.cap}" for g in rubric.evidence.groups),
              markup=False)


def score(
    file: Annotated[Path, typer.Argument(help="JSON file of per-category scores.")],
    rubric: Annotated[str | None, typer.Option(help="Rubric id or path.")] = None,
    json_out: JsonFlag = False,
) -> None:
    """Final and overall scores of a file of deterministic and AI scores, by the rubric.

    Scores one case by hand, no run and no store; `judge rescore` re-scores a whole stored
    run under another rubric.
    """
    done = score_file(Workspace.open(), file, rubric)
    rub, result = done.rubric, done.score
    payload: dict[str, Any] = {
        "rubric": rub.id,
        "status": result.status,
        "overallScore": result.overall_score,
        "band": result.band,
        "passed": result.passed,
        "reason": result.reason,
        "categoryScores": [c.model_dump(mode="json") for c in result.category_scores],
    }
    if json_out:
        emit_json(payload)
        return
    _print_case(rub.id, payload)


def _num(v: Any) -> str:
    return "—" if v is None else str(v)


def _print_case(rubric_id: str, payload: dict[str, Any]) -> None:
    out = console()
    rows: list[list[Cell]] = []
    for c in payload["categoryScores"]:
        rows.append([c["category"], _num(c["deterministicScore"]), _num(c["aiScore"]),
                     _num(c["finalScore"]), f"{c['weight']:g}",
                     styled(c["band"] or "—", band_style(c["band"])), c["rule"]])
    table(["category", *(Column(n, "right") for n in ("deterministic", "ai", "final", "weight")),
           "band", "rule"], rows, title=f"rubric {rubric_id}")
    if payload["status"] == "scored":
        verdict = styled("pass", "green") if payload["passed"] else styled("fail", "red")
        out.print(Text.assemble("overall ", (str(payload["overallScore"]), "bold"), " ",
                                styled(str(payload["band"]), band_style(payload["band"])),
                                "  ", verdict))
    else:
        out.print(Text.assemble(styled("unscored", "yellow"), f": {payload['reason']}"))
