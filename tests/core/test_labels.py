"""Labels: the file is sorted canonical JSON lines and reads back as written, a repeated key
keeps the last, reviewers' scores average half up into a suite's human labels, α between
reviewers is the krippendorff package's, and `--next` deals across bands."""

from __future__ import annotations

import json
from fractions import Fraction

import krippendorff
import numpy as np
import pytest

from judge.core.formats.labels import (
    Label,
    LabelsError,
    check_label,
    dump_labels,
    human_labels,
    parse_labels,
    pick_next,
    reviewer_alpha,
)
from judge.core.formats.models import CaseResult
from judge.core.scoring.scoring import compute_overall_score
from judge.system.resources import load_rubric


def _label(case: str, cat: str, who: str, score: int | None = None, **kw: object) -> Label:
    return Label.model_validate({"suite": "s", "case": case, "category": cat, "reviewer": who,
                                 "at": "2026-12-02T06:00:00Z", "score": score, **kw})


def test_file_is_sorted_and_round_trips() -> None:
    labels = [_label("b", "taskOutcomeQuality", "zoe", 70), _label("a", "agentPerformance",
                                                                   "ana", 40, note="<b>x")]
    text = dump_labels(labels)
    seals, *lines = text.splitlines()
    assert list(json.loads(seals)) == ["digest"]  # the file's seal first: no secret, a digest
    assert lines[0].startswith('{"agree":null,"at"') and '"case":"a"' in lines[0]
    assert parse_labels(text) == sorted(labels, key=Label.key)
    assert dump_labels(parse_labels(text)) == text  # import then export: the same bytes
    newer = _label("a", "agentPerformance", "ana", 45)
    unsealed = "".join(line + "\n" for line in lines)  # made by hand: no seal
    newer_line = dump_labels([newer]).splitlines()[1]
    assert parse_labels(unsealed + newer_line + "\n")[0] == newer  # the last word wins
    with pytest.raises(LabelsError) as err:
        parse_labels(text + '{"case": 1}\n', "s.labels.jsonl")
    assert err.value.file == "s.labels.jsonl" and err.value.where is not None
    assert err.value.where.startswith("line 4")


def test_labels_are_checked_against_the_rubric() -> None:
    rubric = load_rubric("task-evaluation")
    check_label(_label("a", "agentPerformance", "ana", 40), rubric, "f")
    with pytest.raises(LabelsError, match="unknown category"):
        check_label(_label("a", "nope", "ana", 40), rubric, "f")
    with pytest.raises(LabelsError, match="judged by scores"):
        check_label(_label("a", "agentPerformance", "ana", level="good"), rubric, "f")
    with pytest.raises(LabelsError, match="empty label"):
        check_label(_label("a", "agentPerformance", "ana"), rubric, "f")


def test_human_labels_average_reviewers_half_up_and_alpha_matches_krippendorff() -> None:
    rubric = load_rubric("task-evaluation")
    cat = "agentPerformance"
    grid = {"ana": [10, 50, 80, 30, 91], "bo": [15, 45, 85, 30, None], "cy": [11, 60, 70, 20, 95]}
    labels = [_label(f"c{i}", cat, who, s) for who, row in grid.items()
              for i, s in enumerate(row) if s is not None]
    human = human_labels(labels, rubric)
    assert human["c0"].categories[cat] == 12  # (10+15+11)/3 = 12
    assert human["c4"].categories[cat] == 93  # (91+95)/2 = 93 exactly
    assert human["c1"].categories[cat] == 52  # 155/3 = 51.67
    alpha = reviewer_alpha(labels, rubric)
    data = np.array([[np.nan if v is None else v for v in row] for row in grid.values()],
                    dtype=float)
    assert alpha[cat] == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                          level_of_measurement="interval"))
    assert alpha["processCompliance"] is None


def test_a_case_labelled_in_every_category_gets_the_rubrics_weighted_overall() -> None:
    rubric = load_rubric("task-evaluation")
    scores = dict(zip((c.id for c in rubric.categories), (41, 77, 90, 12, 65, 58),
                      strict=False))
    full = [_label("a", cat, "ana", s) for cat, s in scores.items()]
    part = [_label("b", cat, "ana", s) for cat, s in list(scores.items())[:-1]]
    human = human_labels([*full, *part], rubric)
    weights = {c.id: Fraction(str(c.weight)) for c in rubric.categories}
    exact = sum(scores[c] * w for c, w in weights.items()) / sum(weights.values())
    assert human["a"].overall == int(exact + Fraction(1, 2))  # half up, exact
    assert human["a"].overall == compute_overall_score(scores, rubric)
    assert human["b"].overall is None  # a partly labelled case has no people's overall


def test_next_deals_across_bands_and_puts_judge_disagreement_first() -> None:
    rubric = load_rubric("task-evaluation")

    def res(cid: str, score: int) -> CaseResult:
        from judge.core.scoring.scoring import band_for
        return CaseResult(id=cid, status="scored", overall_score=score,
                          band=band_for(score, rubric.bands))

    results = [res(f"f{i}", 10 + i) for i in range(5)] + [res("e1", 95), res("e2", 91),
                                                          res("s1", 80)]
    other = {"f3": res("f3", 60)}
    picked = pick_next(results, rubric, 4, labelled=["f0"], other=other)
    ids = [c for c, _ in picked]
    assert len(ids) == 4 and "f0" not in ids
    assert {"e1", "e2"} & set(ids) and "s1" in ids and "f3" in ids  # every band sampled
    assert dict(picked)["f3"].startswith("judges differ by")
    assert pick_next(results, rubric, 100) and len(pick_next(results, rubric, 100)) == 8
