"""``judge render``: print exactly what the judge would be sent for one case, with no model call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..app.runs.rendering import RenderedCase, RenderRequest, render_case
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
        help="Prompt template id (prompts/<id>.md.j2; default: setting template, 'judge'; "
             "local/ judges: judge-small).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", metavar="MODEL",
        help="The judge to render for (default: the first configured, else the local "
             "judge): its template, output mode and request.")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print JSON on stdout, nothing else.")] = False,
) -> None:
    """Show exactly what a judge receives for one case, with no model call.

    The messages, the template (its id and hash), the judge's output mode and score mode, the
    request a run hands LiteLLM (model, sampling, response_format) and the reply schema.
    LiteLLM then adapts the request to the provider (it drops a seed the provider does not
    take). --model renders for that judge: a local/ judge gets its own defaults.
    """
    workspace = Workspace.open(overrides={"model": [model] if model else None,
                                          "template": template})
    done = render_case(workspace, RenderRequest(suite=suite_file, case_id=case_id,
                                                rubric=rubric, template=template))
    if json_out:
        sys.stdout.write(visible(stable_json(done.public())))
        return
    # Plain text, not rich: evidence like "[commits:abc]" would be read as rich markup, and
    # the point of this command is to show the bytes the judge receives, unstyled.
    sys.stdout.write(visible("\n".join(_sections(done, workspace))))
    sys.stdout.flush()


def _sections(done: RenderedCase, workspace: Workspace) -> list[str]:
    """The messages, the template, the judge, the request and the schema, each headed."""
    prompt, judge, data = done.prompt, done.judge, done.public()
    source = workspace.sources.get("template", "default")
    chosen = "" if source in ("default", "flag") else f" ({source})"
    fallback = f" (if refused: {', then '.join(judge['fallbacks'])})" if judge["fallbacks"] \
        else ""
    sent = f" (sent as {judge['sentAs']})" if judge["sentAs"] != judge["model"] else ""
    return [*(f"=== {m['role']} ===\n{m['content']}\n" for m in prompt.messages),
            f"=== template ===\n{prompt.template_id} sha256:{prompt.template_hash}{chosen}\n",
            f"=== judge ===\n{judge['model']}{sent}: output mode {judge['outputMode']}"
            f"{fallback}; score mode {judge['scoreMode']}\n",
            f"=== request (without its messages) ===\n{stable_json(data['request'])}",
            f"=== response schema ===\n{stable_json(done.schema)}"]
