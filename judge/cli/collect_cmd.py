"""``judge collect``: build one case from real artefacts and write it to a suite file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..app.collecting import CollectRequest, CollectResult, collect_case
from ..app.workspace import Workspace

__all__ = ["register"]



def register(app: typer.Typer) -> None:
    """Add ``collect`` to ``app``."""
    app.command("collect")(collect)


def collect(
    case_id: Annotated[str, typer.Option("--id", metavar="CASE_ID",
                                         help="Id of the case (unique in the suite).")],
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="SUITE",
        help="Suite file written (.yaml, .yml or .jsonl), atomically.")],
    git: Annotated[str | None, typer.Option(
        "--git", metavar="REPO[@RANGE]",
        help="Commits of a range or branch (default HEAD), e.g. .@main..HEAD.")] = None,
    junit: Annotated[list[Path] | None, typer.Option(
        "--junit", metavar="FILE", help="JUnit XML test report (repeatable).")] = None,
    gh_pr: Annotated[Path | None, typer.Option(
        "--gh-pr", metavar="FILE", help="JSON of `gh pr view --json ...`.")] = None,
    gh_run: Annotated[Path | None, typer.Option(
        "--gh-run", metavar="FILE", help="JSON of `gh run view --json ...`.")] = None,
    agent_log: Annotated[Path | None, typer.Option(
        "--agent-log", metavar="FILE",
        help="JSONL transcript: OpenAI chat messages or {ts, level, message}.")] = None,
    task: Annotated[Path | None, typer.Option(
        "--task", metavar="FILE",
        help="Task metadata (YAML/JSON: id, title, description, output, tags...).")] = None,
    document: Annotated[list[Path] | None, typer.Option(
        "--document", metavar="FILE", help="A document for the evidence (repeatable).")] =
        None,
    rubric: Annotated[str | None, typer.Option(
        "--rubric", metavar="R",
        help="Rubric id or path: its evidence profile and signal rules "
             "(default: the suite's, else task-evaluation).")] = None,
    append: Annotated[bool, typer.Option(
        "--append", help="Add the case to an existing suite file.")] = False,
) -> None:
    """Collect one case from git, test reports, reviews, CI runs, agent logs and documents.

    Evidence items get citable ids from their source, the caps and limits of the rubric's
    evidence profile, and credentials scrubbed; deterministic signals come from the
    rubric's `signals` rules, and the case records which rule produced each.
    """
    request = CollectRequest(case_id=case_id, suite=output, git=git, junit=tuple(junit or ()),
                             gh_pr=gh_pr, gh_run=gh_run, agent_log=agent_log, task=task,
                             documents=tuple(document or ()), rubric=rubric, append=append)
    result = collect_case(Workspace.open(), request)
    typer.echo(_render(result, output))
    for warning in result.warnings:
        typer.echo(warning, err=True)


def _render(result: CollectResult, shown: Path) -> str:
    verb = "appended case" if result.appended else "wrote case"
    lines = [f"{verb} {result.case.id!r} to {shown} (suite {result.suite_id!r}, "
             f"{result.cases} case{'s' if result.cases != 1 else ''}, rubric {result.rubric!r})"]
    groups = ", ".join(f"{name} {len(items)}" for name, items in result.case.evidence.items())
    lines.append(f"  evidence: {groups or '(none)'}")
    for name, counts in result.capped.items():
        lines.append(f"  {name}: kept {counts['kept']} of {counts['total']} (the profile's cap)")
    for category, outcome in result.signals.items():
        if outcome.value is not None:
            lines.append(f"  signal {category} = {outcome.value} (rule {outcome.rule})")
        else:
            why = "; ".join(outcome.skipped) or "no rule"
            lines.append(f"  signal {category}: none ({why})")
    if result.redactions:
        lines.append(f"  scrubbed {result.redactions} credential"
                     f"{'s' if result.redactions != 1 else ''}")
    if result.rewritten:
        lines.append("  note: the YAML file was rewritten to add the case (its comments are "
                     "gone): `cases` was not its last key")
    return "\n".join(lines)
