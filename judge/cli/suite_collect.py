"""``judge suite collect``: a case from real artefacts, or ``suite collect otel``: one per trace.

The flags (``--git``, ``--junit``, ``--agent-log``...) collect one case; ``otel FILE|DIR``
makes a case of every OpenTelemetry trace (OTLP/JSON). The work is
:mod:`judge.app.admin.collecting` and :mod:`judge.app.admin.collecting_otel`; this module
parses the flags and prints what was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..app.admin.collecting import CollectRequest, CollectResult, collect_case
from ..app.admin.collecting_otel import OtelCollectRequest, OtelCollectResult, collect_otel
from ..app.workspace.workspace import Workspace
from ..core.text.errors import UsageError

__all__ = ["register"]

OutputOption = Annotated[Path | None, typer.Option(
    "--output", "-o", metavar="SUITE",
    help="Suite file written (.yaml, .yml or .jsonl), atomically.")]
IdOption = Annotated[str | None, typer.Option(
    "--id", metavar="CASE_ID", help="Id of the case (unique in the suite).")]
RubricOption = Annotated[str | None, typer.Option(
    "--rubric", metavar="R",
    help="Rubric id or path: its evidence profile and signal rules "
         "(default: the suite's, else task-evaluation).")]
AppendFlag = Annotated[bool, typer.Option(
    "--append", help="Add the case(s) to an existing suite file.")]


def register(app: typer.Typer) -> None:
    """Add ``collect`` (and its ``otel``) to ``app``."""
    group = typer.Typer(no_args_is_help=False)
    group.callback(invoke_without_command=True)(collect)
    group.command("otel")(otel)
    app.add_typer(group, name="collect")


def collect(
    ctx: typer.Context,
    output: OutputOption = None,
    case_id: IdOption = None,
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
    rubric: RubricOption = None,
    append: AppendFlag = False,
) -> None:
    """Collect one case from git, test reports, reviews, CI runs, agent logs and documents.

    `judge suite collect otel FILE|DIR -o SUITE` makes a case of every OpenTelemetry trace
    instead. Evidence items get citable ids from their source, the caps and limits of the
    rubric's evidence profile, and credentials scrubbed; deterministic signals come from
    the rubric's `signals` rules, and the case records which rule produced each.
    """
    if ctx.invoked_subcommand is not None:
        return
    if output is None:
        raise UsageError("missing option -o / --output", where="--output",
                         fix="name the suite file: judge suite collect --id CASE_ID -o SUITE ...")
    if case_id is None:
        raise UsageError("missing option --id", where="--id",
                         fix="name the case: judge suite collect --id CASE_ID -o SUITE ...")
    request = CollectRequest(case_id=case_id, suite=output, git=git, junit=tuple(junit or ()),
                             gh_pr=gh_pr, gh_run=gh_run, agent_log=agent_log, task=task,
                             documents=tuple(document or ()), rubric=rubric, append=append)
    result = collect_case(Workspace.open(), request)
    typer.echo(_render(result, output))
    for warning in result.warnings:
        typer.echo(warning, err=True)


def otel(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(
        metavar="FILE|DIR", help="OpenTelemetry traces (OTLP/JSON), one case a trace.")],
    output: OutputOption = None,
    case_id: IdOption = None,
    trace: Annotated[list[str] | None, typer.Option(
        "--trace", metavar="TRACE_ID", help="Keep this trace (repeatable).")] = None,
    where: Annotated[list[str] | None, typer.Option(
        "--where", metavar="KEY=VALUE",
        help="Keep traces with a span having this attribute (repeatable).")] = None,
    id_attr: Annotated[str | None, typer.Option(
        "--id-attr", metavar="KEY",
        help="Name each case by this attribute's value (e.g. session.id).")] = None,
    conversation: Annotated[bool, typer.Option(
        "--conversation",
        help="Each case also holds the agent's conversation (its last LLM call's messages "
             "and answer) as turns the judge reads and cites.")] = False,
    rubric: RubricOption = None,
    append: AppendFlag = False,
) -> None:
    """A case of every OpenTelemetry trace (OTLP/JSON): spans become evidence cited by span id.

    --trace, --where and --id-attr pick and name the traces.
    """
    suite: Path | None = output or _before(ctx, "output")
    if suite is None:
        raise UsageError("missing option -o / --output", where="--output",
                         fix="name the suite file: judge suite collect otel FILE|DIR -o SUITE")
    typer.echo(_render_otel(collect_otel(Workspace.open(), OtelCollectRequest(
        paths=tuple(paths), suite=suite, case_id=case_id or _before(ctx, "case_id"),
        id_attr=id_attr, traces=tuple(trace or ()), where=tuple(where or ()),
        rubric=rubric or _before(ctx, "rubric"), append=append or bool(_before(ctx, "append")),
        conversation=conversation)), suite))


def _before(ctx: typer.Context, name: str) -> Any:
    """An option given before ``otel`` (``collect -o SUITE otel DIR``), else None."""
    return ctx.parent.params.get(name) if ctx.parent is not None else None


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


def _render_otel(result: OtelCollectResult, shown: Path) -> str:
    """What was written, a line a case."""
    verb = "appended" if result.appended else "wrote"
    lines = [f"{verb} {len(result.cases)} case{'s' if len(result.cases) != 1 else ''} of "
             f"{result.traces} trace{'s' if result.traces != 1 else ''} to {shown} (suite "
             f"{result.suite_id!r}, {result.total_cases} cases, rubric {result.rubric!r})"]
    for case in result.cases:
        groups = ", ".join(f"{name} {len(items)}" for name, items in case.evidence.items())
        turns = f"; conversation {len(case.conversation)} turns" if case.conversation else ""
        lines.append(f"  {case.id}: {groups or '(no evidence)'}{turns}")
    if result.redactions:
        lines.append(f"  scrubbed {result.redactions} credential"
                     f"{'s' if result.redactions != 1 else ''}")
    return "\n".join(lines)
