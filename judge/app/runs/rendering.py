"""What a judge receives for a case: the prompt, the schema and the request, with no model call.

The judge decides more than its name: a ``local/`` judge gets the ``judge-small`` template and
the expected score unless they are set (:data:`judge.app.workspace.settings.LOCAL_DEFAULTS`),
and its server speaks ``json_object`` where a hosted one is sent ``json_schema``. The request
is built by the run's own functions (``judge_request``, ``request_body``), so it is what a
run hands LiteLLM for that judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ...core.formats.conversation import bound_conversation
from ...core.formats.evidence import build_bundle
from ...core.formats.output_schema import output_schema
from ...core.text.errors import UsageError
from ...core.text.frozen import Frozen
from ...engine.judging import judge_request
from ...llm.client import OUTPUT_MODES, request_body, resolve_output_mode
from ...llm.local import served_model
from ...render.prompts import RenderedPrompt
from ..judges.prompt_examples import with_label_examples
from ..workspace.suites import load_checked
from ..workspace.workspace import DEFAULT_LOCAL, Workspace

__all__ = ["JudgeJson", "RenderRequest", "RenderedCase", "RenderedJson", "render_case"]

SHOWN_IDS = 5


class RenderRequest(Frozen):
    """Which case of which suite; rubric and template default to the suite's and settings'.

    The judge is the workspace's first (the local judge when none is set): open the workspace
    with the judge as its ``model`` to render for another, so its defaults apply.
    """

    suite: Path
    case_id: str
    rubric: str | None = None
    template: str | None = None


class JudgeJson(TypedDict):
    """The judge a case was rendered for, and how a run calls it."""

    model: str
    sentAs: str
    """The model name handed to LiteLLM (a ``local/`` judge's server answers to another)."""
    outputMode: str
    """The structured-output mode tried first; a server that refuses it gets the next."""
    fallbacks: list[str]
    scoreMode: str


class RenderedJson(TypedDict):
    """``judge render --json``: the messages as sent, the template, the reply schema."""

    messages: list[dict[str, str]]
    templateId: str
    templateHash: str
    schema: dict[str, Any]
    """The JSON Schema of the reply the judge is asked for, as the request carries it."""
    judge: JudgeJson
    request: dict[str, Any]
    """The rest of what a run hands LiteLLM for the first sample: model, temperature, seed,
    sampling parameters, ``response_format`` (the messages are ``messages``)."""


@dataclass(frozen=True)
class RenderedCase:
    """The messages the judge receives, the template's id and hash, the response schema."""

    prompt: RenderedPrompt
    schema: dict[str, Any]
    judge: JudgeJson
    request: dict[str, Any]

    def public(self) -> RenderedJson:
        """The ``--json`` document."""
        return {"messages": list(self.prompt.messages), "templateId": self.prompt.template_id,
                "templateHash": self.prompt.template_hash, "schema": self.schema,
                "judge": self.judge,
                "request": {k: v for k, v in self.request.items() if k != "messages"}}


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
    return _for_judge(workspace, prompt, output_schema(rubric, bundle.ids() + turns))


def _for_judge(workspace: Workspace, prompt: RenderedPrompt,
               schema: dict[str, Any]) -> RenderedCase:
    """The request the workspace's first judge is sent for ``prompt`` (its first sample)."""
    settings = workspace.judge_settings()
    model = (workspace.settings.models or (DEFAULT_LOCAL,))[0]
    sent_as = served_model(model) if model.startswith("local/") else model
    mode = resolve_output_mode(sent_as, settings.output_mode)
    request = judge_request(prompt, schema, model, settings)
    judge: JudgeJson = {"model": model, "sentAs": sent_as, "outputMode": mode,
                        "fallbacks": list(OUTPUT_MODES[OUTPUT_MODES.index(mode) + 1:]),
                        "scoreMode": settings.score_mode}
    return RenderedCase(prompt=prompt, schema=dict(request.schema or schema), judge=judge,
                        request=request_body(sent_as, request, mode))

