"""``judge collect``: build one case from real artefacts and write it to a suite file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..app.admin.collecting import CollectRequest, CollectResult, collect_case
from ..app.admin.collecting_otel import OtelCollectRequest, collect_otel
from ..app.workspace.workspace import Workspace
from ..core.text.errors import UsageError
from .collect_otel import otel_paths, render_otel

__all__ = ["register"]



def register(app: typer.Typer) -> None:
    """Add ``collect`` to ``app``."""
    app.command("collect")(collect)


def collect(
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="SUITE",
        help="Suite file written (.yaml, .yml or .jsonl), atomically.")],
    source: Annotated[list[str] | None, typer.Argument(
        metavar="[otel FILE|DIR...]",
        help="`otel FILE|DIR...`: OpenTelemetry traces (OTLP/JSON), one case a trace.")] =
        None,
    case_id: Annotated[str | None, typer.Option(
        "--id", metavar="CASE_ID", help="Id of the case (unique in the suite).")] = None,
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
    trace: Annotated[list[str] | None, typer.Option(
        "--trace", metavar="TRACE_ID", help="otel: keep this trace (repeatable).")] = None,
    where: Annotated[list[str] | None, typer.Option(
        "--where", metavar="KEY=VALUE",
        help="otel: keep traces with a span having this attribute (repeatable).")] = None,
    id_attr: Annotated[str | None, typer.Option(
        "--id-attr", metavar="KEY",
        help="otel: name each case by this attribute's value (e.g. session.id).")] = None,
    conversation: Annotated[bool, typer.Option(
        "--conversation",
        help="otel: each case also holds the agent's conversation (its last LLM call's "
             "messages and answer) as turns the judge reads and cites.")] = False,
) -> None:
    """Collect one case from git, test reports, reviews, CI runs, agent logs and documents.

    `judge collect otel FILE|DIR -o SUITE` makes a case of every OpenTelemetry trace
    (OTLP/JSON) instead: spans become evidence cited by span id (see --trace, --where,
    --id-attr).

    Evidence items get citable ids from their source, the caps and limits of the rubric's
    evidence profile, and credentials scrubbed; deterministic signals come from the
    rubric's `signals` rules, and the case records which rule produced each.
    """
    if source:
        typer.echo(render_otel(collect_otel(Workspace.open(), OtelCollectRequest(
            paths=otel_paths(source), suite=output, case_id=case_id, id_attr=id_attr,
            traces=tuple(trace or ()), where=tuple(where or ()), rubric=rubric,
            append=append, conversation=conversation)), output))
        return
    if case_id is None:
        raise UsageError("missing option --id", where="--id",
                         fix="name the case: judge collect --id CASE_ID -o SUITE ...")
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
