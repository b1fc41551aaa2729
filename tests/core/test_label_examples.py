"""Which labelled cases a judge is shown: training folds only, spread over the people's scores."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from judge.core.formats.label_examples import example_ids, people_score
from judge.core.formats.rubric import LabelExamples
from judge.core.formats.suite import HumanLabel
from judge.core.scoring.calibration import fold_of


def _labels(n: int) -> dict[str, HumanLabel]:
    return {f"c{i:02d}": HumanLabel(categories={"a": (i * 37) % 101, "b": (i * 53) % 101})
            for i in range(n)}


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8])
def test_a_labelled_case_never_sees_itself_or_its_fold(count: int) -> None:
    labels = _labels(40)
    config = LabelExamples(count=count, folds=5, seed=3)
    for case in labels:
        shown = example_ids(case, labels, config)
        assert len(shown) == count and len(set(shown)) == count
        assert case not in shown
        own = fold_of(case, 5, 3)
        assert all(fold_of(e, 5, 3) != own for e in shown)


def test_the_examples_spread_over_the_scores_and_ignore_order() -> None:
    labels = _labels(30)
    config = LabelExamples(count=3, folds=4, seed=0)
    case = "c07"
    pool = sorted((people_score(h), cid) for cid, h in labels.items()
                  if cid != case and fold_of(cid, 4, 0) != fold_of(case, 4, 0))
    shown = example_ids(case, labels, config)
    assert shown == (pool[0][1], pool[(len(pool) - 1) // 2][1], pool[-1][1]) or \
        shown == (pool[0][1], pool[len(pool) // 2][1], pool[-1][1])
    items = list(labels.items())
    random.Random(1).shuffle(items)
    assert example_ids(case, dict(items), config) == shown  # never depends on order
    # another seed, other folds
    assert any(example_ids(c, labels, LabelExamples(count=3, folds=4, seed=9))
               != example_ids(c, labels, config) for c in labels)


def test_an_unlabelled_case_may_see_any_labelled_case_and_small_pools_give_all() -> None:
    labels = _labels(6)
    every = example_ids("new-case", labels, LabelExamples(count=8, folds=3))
    assert sorted(every) == sorted(labels)
    assert [people_score(labels[e]) for e in every] == sorted(people_score(h)
                                                              for h in labels.values())
    one = example_ids("c00", labels, LabelExamples(count=8, folds=3))
    assert "c00" not in one and all(fold_of(e, 3) != fold_of("c00", 3) for e in one)


def test_people_score_is_the_overall_else_the_mean_of_categories() -> None:
    assert people_score(HumanLabel(overall=71, categories={"a": 10})) == 71
    assert people_score(HumanLabel(categories={"a": 10, "b": 15})) == Fraction(25, 2)
    assert people_score(HumanLabel(passed=True)) is None
