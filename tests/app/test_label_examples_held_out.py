"""A held-out case is never shown itself or another held-out case.

bench/label_examples.py's k-fold on the task example: each fold of the labelled cases is
judged by the loopback fake judge behind a recording front, with K labelled examples in the
prompt; every prompt as sent is read back to the cases it quotes. The bench's own check
(``check_prompts``) is shown to fail on a leak, and a plainer check beside it reads the
examples section for any held-out case's task or label.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, ROOT

from judge.core.formats.rubric import LabelExamples
from judge.render.prompts import input_text
from judge.system.resources import load_rubric

sys.path.insert(0, str(ROOT / "bench"))
import label_examples as bench  # bench/ is not a package: on the path above

CONFIG = LabelExamples(count=3, folds=5, seed=0)
HEAD = "## Examples scored by people"


def _user(body: dict[str, Any]) -> str:
    text: str = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return text


def test_held_out_prompts_show_training_folds_only(tmp_path: Path) -> None:
    rubric = load_rubric("task-evaluation")
    cases, labels = bench.suite_labels(EXAMPLE_SUITE, rubric)
    folds = bench.folds_of(cases, labels, CONFIG)
    assert sum(map(len, folds.values())) == len(labels) >= 10
    assert sum(1 for ids in folds.values() if ids) >= 3
    checked = 0
    with bench.RecordingFake() as front:
        settings = {"model": [bench.FAKE_MODEL], "api_base": front.api_base}
        for fold, ids in folds.items():
            if not ids:
                continue
            ws = bench.workspace(tmp_path / str(fold), EXAMPLE_SUITE, "task-evaluation",
                                 CONFIG, settings)
            front.bodies.clear()
            results, _ = bench.judge_cases(ws, ids)
            assert sorted(r.id for r in results if r.status == "scored") == sorted(ids)
            bodies = list(front.bodies)
            assert len(bodies) == len(ids)
            report = bench.check_prompts(bodies, cases, labels, rubric, ids, CONFIG)
            assert report == {"prompts": len(ids), "cases": len(ids),
                              "examplesShown": CONFIG.count * len(ids)}
            # A plainer reading: no held-out case's task or label line in any examples part.
            for body in bodies:
                head = _user(body).split("\n## Task\n", 1)[0]
                assert head.startswith(HEAD) and head.count("### Example ") == CONFIG.count
                for other in ids:
                    assert input_text(cases[other].input).splitlines()[0] not in head
                    own = bench.label_line(cases[other], labels[other], rubric)
                    shown = {bench.label_line(cases[e], labels[e], rubric)
                             for e in bench.example_ids(other, labels, CONFIG)}
                    assert own not in head or own in shown  # a coincidence of scores only
            checked += len(ids)
            if fold == 2:  # the check is not vacuous: it catches a leak, two ways
                shown_id = bench.example_ids(ids[0], labels, CONFIG)[0]
                with pytest.raises(AssertionError, match="was shown held-out case"):
                    bench.check_prompts(bodies, cases, labels, rubric, [*ids, shown_id],
                                        CONFIG)
                leaked = copy.deepcopy(bodies)
                for body in leaked:
                    for m in body["messages"]:
                        if m["role"] == "user":
                            case_id = next(c for c in ids if input_text(
                                cases[c].input).splitlines()[0] in m["content"])
                            line = bench.label_line(cases[case_id], labels[case_id], rubric)
                            m["content"] = m["content"].replace(
                                "\n## Task\n", f"\n{line}\n\n## Task\n", 1)
                with pytest.raises(AssertionError, match="own label"):
                    bench.check_prompts(leaked, cases, labels, rubric, ids, CONFIG)
    assert checked == len(labels)
