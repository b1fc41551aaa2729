"""``judge render``: print exactly what the judge would be sent for one case, with no model call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]

SHOWN_IDS = 5


def register(app: typer.Typer) -> None:
    """Add ``render`` to ``app``."""
    app.command("render")(render)


def render(
    suite_file: Annotated[Path, typer.Argument(metavar="SUITE_FILE", help="Suite file.")],
    case_id: Annotated[str, typer.Option("--case", help="Id of the case to render.")],
    rubric: Annotated[str | None, typer.Option(
        help="Rubric id or path (default: the suite's, else task-evaluation).")] = None,
    template: Annotated[str, typer.Option(help="Prompt template id (prompts/<id>.md.j2).")] =
        "judge",
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print JSON on stdout, nothing else.")] = False,
) -> None:
    """Render one case's judge prompt: the messages, the template hash and the response schema."""
    from ..canonical import stable_json
    from ..errors import UsageError
    from ..evidence import build_bundle
    from ..prompts import PromptRenderer
    from ..resources import load_rubric, load_suite
    from ..schema import output_schema
    from ..suite import validate_against_rubric
    from ..visible import visible

    workspace = Path.cwd()
    suite = load_suite(suite_file)
    rub = load_rubric(rubric or suite.rubric or "task-evaluation", workspace)
    validate_against_rubric(suite, rub, str(suite_file))
    case = next((c for c in suite.cases if c.id == case_id), None)
    if case is None:
        ids = [c.id for c in suite.cases]
        shown = ", ".join(ids[:SHOWN_IDS]) + (", ..." if len(ids) > SHOWN_IDS else "")
        raise UsageError(f"no case {case_id!r} in suite {suite.id!r}", file=str(suite_file),
                         fix=f"use one of: {shown or '(the suite has no cases)'}")
    bundle = build_bundle(case.evidence, rub.evidence)
    prompt = PromptRenderer(template, workspace).render(rub, case, bundle)
    schema = output_schema(rub, bundle.ids())
    if json_out:
        sys.stdout.write(visible(stable_json({
            "messages": list(prompt.messages), "templateId": prompt.template_id,
            "templateHash": prompt.template_hash, "schema": schema})))
        return
    # Plain text, not rich: evidence like "[commits:abc]" would be read as rich markup, and
    # the point of this command is to show the bytes the judge receives, unstyled.
    parts = [f"=== {m['role']} ===\n{m['content']}\n" for m in prompt.messages]
    parts.append(f"=== template ===\n{prompt.template_id} sha256:{prompt.template_hash}\n")
    parts.append(f"=== response schema ===\n{stable_json(schema)}")
    sys.stdout.write(visible("\n".join(parts)))
    sys.stdout.flush()
