"""What the report shows of each case as a sample viewer.

Its input, its output and the prompt the judge was sent.

The input and output come from the suite the run judged (secrets already masked when the
suite was loaded), each bounded to :data:`SAMPLE_LIMIT` characters with the evidence
bundle's truncation marker (:func:`judge.core.formats.evidence.truncate`) and its full length said.
The prompt is shown whole, never cut: it is already bounded by the renderer
(``MAX_PROMPT_CHARS``), and a cut prompt would not be the prompt that was sent. Where it comes
from is part of what is shown (:data:`PromptSource`): read back from the run's own cache
entry (the exact messages sent, found by the result's cache key), or re-rendered from the
suite file with the run's template and rubric when their hashes still match the run's (the
cache entry is gone, so it is what the suite would send today), or not available, with the
reason. Every string is escaped by the page's template; nothing here is markup.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..core.formats.evidence import truncate
from ..core.text.frozen import Frozen

__all__ = ["SAMPLE_LIMIT", "CaseSample", "PromptMessage", "PromptSource", "case_sample"]

SAMPLE_LIMIT = 4000
"""Characters of a case's input and of its output shown in the report (marker included)."""

PromptSource = Literal["cache", "rendered", "none"]
"""``cache``: the messages sent, from the run's cache entry; ``rendered``: re-rendered from the
suite with the run's template and rubric (hashes checked); ``none``: not available."""


class PromptMessage(Frozen):
    """One message of the prompt: its role and its text, whole."""

    role: str
    content: str


class CaseSample(Frozen):
    """A case's bounded input and output, and the prompt the judge saw."""

    input: str = ""
    input_chars: int = Field(0, alias="inputChars")
    """Length of the whole input (``input`` holds at most :data:`SAMPLE_LIMIT`)."""
    input_cut: bool = Field(False, alias="inputCut")
    output: str = ""
    output_chars: int = Field(0, alias="outputChars")
    output_cut: bool = Field(False, alias="outputCut")
    prompt: tuple[PromptMessage, ...] = ()
    prompt_source: PromptSource = Field("none", alias="promptSource")
    prompt_note: str = Field("", alias="promptNote")
    """Where the prompt came from, or why there is none, in one sentence."""


def case_sample(input_text: str, output_text: str, prompt: tuple[PromptMessage, ...],
                source: PromptSource, note: str,
                limit: int = SAMPLE_LIMIT) -> CaseSample:
    """The sample of one case: input and output cut to ``limit`` (marker included)."""
    shown_in, cut_in = truncate(input_text, limit)
    shown_out, cut_out = truncate(output_text, limit)
    return CaseSample(input=shown_in, input_chars=len(input_text), input_cut=cut_in,
                      output=shown_out, output_chars=len(output_text), output_cut=cut_out,
                      prompt=prompt if source != "none" else (), prompt_source=source,
                      prompt_note=note)
