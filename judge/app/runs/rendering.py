"""The exact prompt a case is judged with, and its response schema, with no model call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ...core.formats.conversation import bound_conversation
from ...core.formats.evidence import build_bundle
from ...core.formats.output_schema import output_schema
from ...core.text.errors import UsageError
from ...core.text.frozen import Frozen
from ...render.prompts import RenderedPrompt
from ..judges.prompt_examples import with_label_examples
from ..workspace.suites import load_checked
from ..workspace.workspace import Workspace

__all__ = ["RenderRequest", "RenderedCase", "RenderedJson", "render_case"]

SHOWN_IDS = 5


class RenderRequest(Frozen):
    """Which case of which suite; rubric and template default to the suite's and settings'."""

    suite: Path
    case_id: str
    rubric: str | None = None
    template: str | None = None


class RenderedJson(TypedDict):
    """``judge render --json``: the messages as sent, the template, the reply schema."""

    messages: list[dict[str, str]]
    templateId: str
    templateHash: str
    schema: dict[str, Any]
    """The JSON Schema of the reply the judge is asked for."""


@dataclass(frozen=True)
class RenderedCase:
    """The messages the judge receives, the template's id and hash, the response schema."""

    prompt: RenderedPrompt
    schema: dict[str, Any]

    def public(self) -> RenderedJson:
        """The ``--json`` document."""
        return {"messages": list(self.prompt.messages), "templateId": self.prompt.template_id,
                "templateHash": self.prompt.template_hash, "schema": self.schema}


def render_case(workspace: Workspace, request: RenderRequest) -> RenderedCase:
    """Render one case as ``judge run`` would send it; UsageError listing ids for an unknown one."""
    suite, rubric = load_checked(workspace, request.suite, request.rubric or None)
    case = next((c for c in suite.cases if c.id == request.case_id), None)
    if case is None:
        ids = [c.id for c in suite.cases]
        shown = ", ".join(ids[:SHOWN_IDS]) + (", ..." if len(ids) > SHOWN_IDS else "")
        raise UsageError(f"no case {request.case_id!r} in suite {suite.id!r}",
                         file=str(request.suite),
                         fix=f"use one of: {shown or '(the suite has no cases)'}")
    bundle = build_bundle(case.evidence, rubric.evidence)
    renderer, _ = with_label_examples(workspace.renderer(request.template), rubric, suite.id,
                                      suite.cases, workspace.path(request.suite),
                                      workspace.sealer)
    prompt = renderer.render(rubric, case, bundle)
    turns = bound_conversation(case.conversation).ids() if case.conversation else ()
    return RenderedCase(prompt=prompt, schema=output_schema(rubric, bundle.ids() + turns))

