"""Bundle items are built without validating them a second time (``model_construct`` where
validation already happened): built items equal validated ones, field for field, over
randomly awkward evidence."""

from __future__ import annotations

import random

from judge.core.formats.evidence import EvidenceBundle, EvidenceItem, build_bundle
from judge.core.formats.rubric import Rubric
from judge.core.formats.suite import Case
from judge.system.resources import load_rubric

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
