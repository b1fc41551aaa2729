"""``judge suite validate|show|generate|schema``: check, look at, make and describe suite files.

No model is called. The work is in :mod:`judge.app.workspace.suites` and
:mod:`judge.app.workspace.schemas`; these commands parse flags and print results. ``judge suite
collect`` is :mod:`judge.cli.suite_collect`'s.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..app.workspace.schemas import SchemaKind, schema_text
from ..app.workspace.suites import (
    DEFAULT_RUBRIC,
    GenerateRequest,
    describe_suite,
    generate_suite,
    validate_suites,
)
from ..app.workspace.workspace import Workspace
from ..core.text.terminal_text import visible
from .options import JsonFlag
from .output import Cell, console, emit_json, plural, table

__all__ = ["register"]

RubricOption = Annotated[str | None, typer.Option(
    help="Rubric id or path (default: the suite's, else task-evaluation).")]
SHOWN_TAGS = 12


def register(app: typer.Typer) -> None:
    """Add the leaves of ``judge suite`` (validate, show, generate, schema) to ``app``."""
    app.command("validate")(suite_validate)
    app.command("show")(suite_show)
    app.command("generate")(suite_generate)
    app.command("schema")(suite_schema)


def suite_schema() -> None:
    """Print the JSON Schema (draft 2020-12) of suite files, for editors and CI.

    Put `# yaml-language-server: $schema=PATH/suite.schema.json` on a suite's first line for
    completion and validation as you type. The checked-in copy is
    docs/schemas/suite.schema.json (`judge suite schema > docs/schemas/suite.schema.json`).
    """
    sys.stdout.write(schema_text(SchemaKind.suite))
    sys.stdout.flush()


def suite_generate(
    suite_id: Annotated[str, typer.Argument(metavar="SUITE_ID",
                                            help="Suite id; the cases are derived from it.")],
    count: Annotated[int, typer.Option(min=1, help="Number of cases.")] = 5,
    rubric: Annotated[str, typer.Option(help="Rubric id or path the cases are for.")] =
        DEFAULT_RUBRIC,
    seed: Annotated[int | None, typer.Option(help="Extra seed: another set for the same id.")] =
        None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o",
        help="Write to this file (atomically) instead of stdout; .jsonl: JSON lines.")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite --output if it exists.")] = False,
) -> None:
    """Generate a reproducible suite of synthetic cases: the same id and seed, the same bytes.

    Written as JSONL when --output ends in .jsonl (the id is then the file's name), else YAML.
    """
    done = generate_suite(Workspace.open(), GenerateRequest(
        suite_id=suite_id, count=count, rubric=rubric, seed=seed, output=output, force=force))
    if output is None:
        typer.echo(done.text, nl=False)
        return
    typer.echo(f"wrote {plural(len(done.suite.cases), 'case')} of suite {done.suite.id!r} to "
               f"{output} ({done.format})", err=True)


def suite_validate(
    paths: Annotated[list[Path], typer.Argument(metavar="FILE", help="Suite files to check.")],
    rubric: RubricOption = None,
) -> None:
    """Check suite files against their rubric; exit 2 naming the file, case and field on error.

    A case with no 'output' (judged by the LLM, or with contains/not_contains checks) is
    accepted with a warning on stderr: the judge sees only its input and evidence.
    """
    checks = validate_suites(Workspace.open(), list(paths), rubric)
    for check in checks:
        if check.error is not None or check.suite is None or check.rubric is None:
            typer.echo(visible(f"✗ {check.error.render() if check.error else check.path}"),
                       err=True)
            continue
        for warning in check.warnings:
            typer.echo(visible(warning), err=True)
        judged, ranked = check.judged_by, check.tags
        shown = ", ".join(f"{tag}({n})" for tag, n in ranked[:SHOWN_TAGS])
        if len(ranked) > SHOWN_TAGS:
            shown += f", +{len(ranked) - SHOWN_TAGS} more"
        # Tags, ids and error texts quote the file: escapes are shown, never obeyed.
        typer.echo(visible(
            f"✓ {check.path}: suite {check.suite.id!r}, rubric {check.rubric.id!r}, "
            f"{plural(len(check.suite.cases), 'case')} ({judged['llm']} llm, "
            f"{judged['deterministic']} deterministic); tags: {shown or '(none)'}"))
    if any(c.error is not None for c in checks):
        raise typer.Exit(2)


def suite_show(
    path: Annotated[Path, typer.Argument(metavar="FILE", help="Suite file.")],
    rubric: RubricOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Show a suite's cases: how judged, complexity, tags, evidence per group, signals."""
    view = describe_suite(Workspace.open(), path, rubric)
    suite, rub, rows = view.suite, view.rubric, view.rows
    if json_out:
        emit_json(view.public())
        return
    out = console()
    judged = Counter(r["judgedBy"] for r in rows)
    out.print(f"[bold]{escape(suite.id)}[/] — rubric {escape(rub.id)}, {plural(len(rows), 'case')} "
              f"({judged['llm']} llm, {judged['deterministic']} deterministic)")
    if suite.description:
        out.print(escape(suite.description))
    groups = rub.evidence.names()
    cats = [c.id for c in rub.categories]
    cells: list[list[Cell]] = []
    for row in view.rows:
        counts = []
        for name in groups:
            c = row["evidence"].get(name)
            counts.append("·" if c is None else
                          f"{c['total']}" + (f"(−{c['dropped']})" if c["dropped"] else ""))
        signals = "/".join(str(row["deterministic"].get(cat, "·")) for cat in cats)
        if not row["deterministic"]:
            signals = f"{row['checks']} checks" if row["checks"] else "—"
        human = row["human"] or {}
        label = str(human.get("overall", human.get("band", "—")))
        by = "det" if row["judgedBy"] == "deterministic" else row["judgedBy"]
        cells.append([row["id"], by, row["complexity"] or "—", ", ".join(row["tags"]) or "—",
                     " ".join(counts), signals, label])
    table(["id", "by", "complexity", "tags", "evidence", "signals", "human"], cells, caption=(
        f"evidence: items per group, in order {' '.join(groups)} (· none, (−n) over the cap); "
        f"signals (deterministic): {'/'.join(cats)} (· none); by: llm or det(erministic)"))
