"""``judge collect otel``: the trace paths read from the command line, the result printed."""

from __future__ import annotations

from pathlib import Path

from ..app.admin.collecting_otel import OtelCollectResult
from ..core.text.errors import UsageError

__all__ = ["otel_paths", "render_otel"]


def otel_paths(source: list[str]) -> tuple[Path, ...]:
    """The paths after ``otel``; UsageError for another source name or none."""
    kind, *paths = source
    if kind != "otel":
        raise UsageError(f"unknown source {kind!r}", where="judge collect",
                         fix="write `judge collect otel FILE|DIR -o SUITE`, or use the "
                             "flags (--git, --junit, --agent-log...) for one case")
    if not paths:
        raise UsageError("no trace file given", where="judge collect otel",
                         fix="write `judge collect otel FILE|DIR -o SUITE`")
    return tuple(Path(p) for p in paths)


def render_otel(result: OtelCollectResult, shown: Path) -> str:
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
