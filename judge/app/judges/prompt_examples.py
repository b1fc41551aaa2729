"""Cases the people labelled, shown to the judge as examples (a rubric's ``examples:``).

The suite's people's labels (its cases' ``human:`` fields and its labels file,
``<suite>.labels.jsonl``, as ``judge compare`` reads them) pick, per case, the labelled
examples of :func:`judge.core.formats.label_examples.example_ids` (training folds only); the
renderer shows them through the template's ``examples`` value. The examples are in the
rendered prompt, so in every cache key exactly as rendered.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ...core.formats.label_examples import example_ids
from ...core.formats.rubric import Rubric
from ...core.formats.suite import Case, HumanLabel
from ...core.text.errors import UsageError
from ...core.text.seals import Sealer
from ...render.prompts import ExampleView, PromptRenderer
from .comparing import labels_file_labels

__all__ = ["EXAMPLES_TEMPLATE", "with_label_examples"]

EXAMPLES_TEMPLATE = "judge-examples"
"""The shipped template that shows them (judge.md.j2 with the examples first)."""


def with_label_examples(renderer: PromptRenderer, rubric: Rubric, suite_id: str,
                        suite_cases: Iterable[Case], suite_file: Path, sealer: Sealer,
                        ) -> tuple[PromptRenderer, str | None]:
    """The renderer showing each case its examples, and a notice when there are none.

    UsageError when the rubric asks for examples and the template does not show them (the
    examples would be dropped without a word).
    """
    config = rubric.examples
    if config is None:
        return renderer, None
    if not renderer.shows_examples:
        raise UsageError(f"rubric {rubric.id!r} asks for labelled examples in the prompt "
                         f"(examples:), but template {renderer.template_id!r} does not show "
                         f"them", fix=f"run with --template {EXAMPLES_TEMPLATE} (or a template "
                         f"that includes examples.md.j2), or drop examples: from the rubric")
    cases = {c.id: c for c in suite_cases}
    labels: dict[str, HumanLabel] = {cid: c.human for cid, c in cases.items()
                                     if c.human is not None}
    labels |= labels_file_labels(suite_file, rubric, sealer)
    shown = {cid: label for cid, label in labels.items() if cid in cases and label.categories}
    if not shown:
        return renderer, (f"rubric {rubric.id!r} asks for labelled examples, but suite "
                          f"{suite_id!r} has no case labelled per category: none shown")
    by_case = {cid: tuple(ExampleView.of(cases[e], shown[e], rubric)
                          for e in example_ids(cid, shown, config)) for cid in cases}
    return renderer.with_examples(by_case), None
