"""``judge render``: print exactly what the judge would be sent for one case, with no model call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..app.runs.rendering import RenderRequest, render_case
from ..app.workspace.workspace import Workspace
from ..core.text.canonical import stable_json
from ..core.text.terminal_text import visible

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``render`` to ``app``."""
    app.command("render")(render)


def render(
    suite_file: Annotated[Path, typer.Argument(metavar="SUITE_FILE", help="Suite file.")],
    case_id: Annotated[str, typer.Option("--case", help="Id of the case to render.")],
    rubric: Annotated[str | None, typer.Option(
        help="Rubric id or path (default: the suite's, else task-evaluation).")] = None,
    template: Annotated[str | None, typer.Option(
        help="Prompt template id (prompts/<id>.md.j2; default: setting template, 'judge').")]
    = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print JSON on stdout, nothing else.")] = False,
) -> None:
    """Render one case's judge prompt: the messages, the template hash and the response schema."""
    done = render_case(Workspace.open(), RenderRequest(suite=suite_file, case_id=case_id,
                                                       rubric=rubric, template=template))
    if json_out:
        sys.stdout.write(visible(stable_json(done.public())))
        return
    prompt = done.prompt
    # Plain text, not rich: evidence like "[commits:abc]" would be read as rich markup, and
    # the point of this command is to show the bytes the judge receives, unstyled.
    parts = [f"=== {m['role']} ===\n{m['content']}\n" for m in prompt.messages]
    parts.append(f"=== template ===\n{prompt.template_id} sha256:{prompt.template_hash}\n")
    parts.append(f"=== response schema ===\n{stable_json(done.schema)}")
    sys.stdout.write(visible("\n".join(parts)))
    sys.stdout.flush()
