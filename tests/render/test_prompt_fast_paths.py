"""The prepare step's fast paths give what the slow ones give, and only stand in where they can.

The shipped evidence partial is rendered in Python (:func:`judge.render.prompts._evidence_text`)
when every template is shipped and unchanged: compared here with the Jinja render of the
same partial over generated suites and randomly awkward evidence. Bundle items are built
without validating them again: compared with validated ones over the same inputs.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from judge.core.evidence import EvidenceBundle, EvidenceItem, build_bundle
from judge.core.generate import generate_cases
from judge.core.rubric import Rubric
from judge.core.suite import Case
from judge.render.prompts import PromptRenderer, RenderedPrompt
from judge.system.resources import load_rubric, shipped_dir

ALPHABET = ["a", "Z", "7", " ", "  ", "\n", "\r\n", "\t", "`", "```", "#", "[", "]", "=", ";",
            "é", "e\u0301", "\u202e", "\u2028", "\x00", "\x1b", "\x85", "\x9b", "👩\u200d💻", "𠜎",
            "\ufeff", "{{", "}}", "{%", "-", "*", "\\", '"', "|", ":"]


def _text(rng: random.Random, most: int = 30) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, most)))


def _item(rng: random.Random) -> object:
    if rng.random() < 0.15:
        return _text(rng)
    item: dict[str, object] = {}
    for key in rng.sample(["id", "sha", "key", "revision", "title", "subject", "text", "body",
                           "excerpt", "step", "ok", "none", "n", "f", "tags", "nested",
                           _text(rng, 8) or "k"], rng.randint(0, 7)):
        item[key] = rng.choice([_text(rng), _text(rng, 700), rng.randint(-5, 10**6),
                                rng.random(), True, False, None, [_text(rng, 5), 3, {"x": 1}],
                                {"a": _text(rng, 5), "b": {"c": 1.5}}])
    return item


def _case(rng: random.Random, index: int, rubric: Rubric) -> Case:
    groups = [g.name for g in rubric.evidence.groups]
    evidence = {name: [_item(rng) for _ in range(rng.choice([0, 1, 2, 5, 30]))]
                for name in rng.sample(groups, rng.randint(0, len(groups)))}
    return Case(id=f"fuzz-{index}", input=_text(rng, 60) or None, output=_text(rng, 60),
                evidence=evidence)


def _jinja_renderer(monkeypatch: pytest.MonkeyPatch) -> PromptRenderer:
    with monkeypatch.context() as patch:
        patch.setattr(PromptRenderer, "_use_fast_evidence", lambda *_: False)
        renderer = PromptRenderer()
    assert not renderer._fast_evidence
    return renderer


def _render(renderer: PromptRenderer, rubric: Rubric, case: Case) -> RenderedPrompt:
    return renderer.render(rubric, case, build_bundle(case.evidence, rubric.evidence))


@pytest.mark.parametrize("rubric_id", ["task-evaluation", "research-agent"])
def test_the_python_partial_writes_the_templates_bytes(rubric_id: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rubric = load_rubric(rubric_id)
    fast, slow = PromptRenderer(), _jinja_renderer(monkeypatch)
    assert fast._fast_evidence and fast.template_hash == slow.template_hash
    rng = random.Random(19)
    cases = [_case(rng, i, rubric) for i in range(60)]
    if rubric_id == "task-evaluation":
        cases += list(generate_cases("fast-paths", 20, rubric=rubric).cases)
    for case in cases:
        assert _render(fast, rubric, case) == _render(slow, rubric, case), case.id


def test_a_changed_partial_or_any_workspace_template_takes_the_template(tmp_path: Path) -> None:
    # A workspace copy of the partial, one byte changed: its own words are rendered.
    source = (shipped_dir("prompts") / "evidence.md.j2").read_text(encoding="utf-8")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "evidence.md.j2").write_text(source.replace("(none)", "(nothing)"),
                                                        encoding="utf-8")
    renderer = PromptRenderer(workspace=tmp_path)
    assert not renderer._fast_evidence and renderer.sandboxed
    rubric = load_rubric("task-evaluation")
    empty = Case(id="e", output="x")
    assert "(nothing)" in _render(renderer, rubric, empty).messages[1]["content"]
    assert "(none)" in _render(PromptRenderer(), rubric, empty).messages[1]["content"]
    # The pairwise template reads `groups` itself: it keeps the template's partial.
    assert not PromptRenderer("pairwise")._fast_evidence


def test_bundle_items_equal_validated_ones() -> None:
    rubric = load_rubric("task-evaluation")
    rng = random.Random(7)
    items = 0
    for case in [_case(rng, i, rubric) for i in range(60)]:
        bundle = build_bundle(case.evidence, rubric.evidence)
        for item in bundle.items():
            validated = EvidenceItem.model_validate(item.model_dump())
            assert validated == item and item == validated
            assert validated.model_dump_json() == item.model_dump_json()
            assert validated.model_fields_set == item.model_fields_set
            items += 1
        assert EvidenceBundle.model_validate(bundle.model_dump()) == bundle
    assert items > 300
